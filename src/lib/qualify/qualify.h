/* SPDX-License-Identifier: MIT */
/*
 * qualify.h -- the qualification of one runtime backend, from start to end.
 *
 * berthd at startup ("qualify_at_startup") and "berthctl qualify" both run
 * this sequence, and only this one:
 *
 *   1. the backend's capabilities(): they must name the runtime binary
 *      (runtime.sha256) and the isolation, or nothing can be qualified;
 *   2. its config_digest (qualification.h): its configuration, the plugin
 *      file's and the shim's digests;
 *   3. optionally, the journal's current qualification for that runtime,
 *      configuration and kernel: when there is one, nothing else happens;
 *   4. the live probes (probes.h), in real sandboxes of the backend;
 *   5. the record of the run, passed or failed, signed with the broker's
 *      receipt key (berth_qualification_seal());
 *   6. stored in the journal (berth_qualification_store()).  A failed run
 *      is recorded too: the newest record decides, so it ends an earlier
 *      qualification of the same configuration.
 */
#ifndef BERTH_QUALIFY_H
#define BERTH_QUALIFY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "journal.h"
#include "loader.h"
#include "qualification.h"
#include "sign.h"

/**
 * struct berth_qualify_backend_params - what berth_qualify_backend() needs.
 * Everything is borrowed for the duration of the call.
 * @broker:     the broker name recorded in the qualification.
 * @backend:    the backend's name (a berth_backend_name_valid() name).
 * @plugin:     the backend's runtime plugin, loaded and initialised
 *              (berth_plugin_load() without BERTH_PLUGIN_LOAD_PEEK); its
 *              name, version and file digest go into the record.
 * @config:     the backend's "config" object as the plugin was initialised
 *              with it, or NULL for {}; it is bound into config_digest.
 * @containment: the identity of the containment bound to the backend
 *              (berthd_backend_instance.containment_identity), or NULL for
 *              none; bound into config_digest as well.
 * @containment_ops, @containment_state: the containment bound to the
 *              backend, as its host->containment() hands it over
 *              (berthd_backend_instance.binding), for the containment
 *              probes (probes.h); NULL when it has none.
 * @probe:      absolute path of the probe program (berth-probe): a trusted
 *              file (berth_trusted_file_check()).
 * @work_dir:   an existing private directory for the probe rootfs
 *              (berth_qualify_work_dir()).
 * @key:        the broker's receipt key, which signs the record.
 * @journal:    where the record is stored (and a current one looked up).
 * @validity_ns: how long a passed qualification holds, in nanoseconds (> 0).
 * @now_ns:     the wall clock (CLOCK_REALTIME, nanoseconds since the epoch,
 *              or a negative errno when it cannot be read, as
 *              berth_realtime_ns()): read for the current-qualification
 *              check and, after the probes, for qualified_at (an unreadable
 *              clock then fails the call with that errno).
 * @reuse_current: when true and the backend already holds a current
 *              qualification, return it and run nothing (berthd at
 *              startup); when false, always run the probes (berthctl
 *              qualify, a deliberate re-run).
 * @begin:      optional; called once the capabilities were read and just
 *              before the probes run, with the capabilities document
 *              (borrowed, valid during the call).
 * @progress:   optional; called after each probe (see probes.h).
 * @userdata:   handed to @begin and @progress.
 */
struct berth_qualify_backend_params {
    const char *broker;
    const char *backend;
    const struct berth_plugin_handle *plugin;
    const json_t *config;
    const json_t *containment;
    const struct berth_containment_ops_v1 *containment_ops;
    void *containment_state;
    const char *probe;
    const char *work_dir;
    const struct berth_signing_key *key;
    struct berth_journal *journal;
    int64_t validity_ns;
    int64_t (*now_ns)(void);
    bool reuse_current;
    void (*begin)(void *userdata, const json_t *caps);
    void (*progress)(void *userdata, const char *name, const char *outcome, const char *detail);
    void *userdata;
};

/**
 * struct berth_qualify_outcome - what berth_qualify_backend() did.
 * @reused:     a current qualification was found (@reuse_current): no probe
 *              ran and nothing was recorded; @probes and @envelope are NULL.
 * @passed:     the qualification holds: every probe passed (or @reused).
 * @id:         the qualification's id ("q" + 32 hex), the reused one or the
 *              new record's.
 * @expires_ns: when it expires (for a failed run: when it would have).
 * @probes:     after a run: [{name, outcome, detail}] (probes.h); owned.
 * @envelope:   after a run: the signed record as stored; owned.
 * Release with berth_qualify_outcome_clear().
 */
struct berth_qualify_outcome {
    bool reused;
    bool passed;
    char id[BERTH_QUALIFICATION_ID_LEN + 1];
    int64_t expires_ns;
    json_t *probes;
    json_t *envelope;
};

/**
 * berth_qualify_backend() - run the sequence at the top of this header for
 * one backend.
 * @ret: receives the outcome on success (and is zeroed on failure).
 *
 * Messages say which step failed ("capabilities: ...", "cannot run the
 * probes: ...", "cannot record the qualification: ...").  Takes seconds to
 * minutes when the probes run (each probe job is bounded by its deadline).
 *
 * Return: 0 whether or not the probes passed (@ret says); -EINVAL (a
 * missing argument); the error of capabilities(); -EAGAIN (capabilities
 * say the backend is "unavailable", plugin.h: nothing is run or
 * recorded); -EBADMSG (capabilities
 * that are not a JSON object or name no runtime.sha256 and isolation);
 * journal errors reading a current qualification; the errors of
 * berth_qualify_probes() (nothing was recorded; with -ENOMEM for a lost
 * outcome the probes did run); the errors of
 * berth_qualification_seal() and berth_qualification_store() (the probes
 * ran but nothing was recorded); -ENOMEM.
 *
 * Thread safety: the plugin instance and the journal are used from the
 * calling thread only; no other thread may use them meanwhile.
 */
int berth_qualify_backend(const struct berth_qualify_backend_params *p, struct berth_qualify_outcome *ret,
                          struct berth_error *reterr);

/** berth_qualify_outcome_clear() - release @o's documents and zero it; accepts NULL. */
void berth_qualify_outcome_clear(struct berth_qualify_outcome *o);

/**
 * berth_qualify_work_dir() - the probes' work directory of a state
 * directory: @state_directory/qualify, created with mode 0700 when missing.
 * It must be a directory owned by the effective uid that grants group and
 * others nothing, reached with no symlink on its path (it is created and
 * opened through a descriptor of @state_directory).
 * @state_directory: absolute path of an existing directory.
 * @ret_path: receives the directory's path (malloc'd; the caller frees it).
 * Return: 0; -EPERM (it exists but is not such a directory: reterr says
 * what it must be); -ELOOP (a symlink on the path); -EINVAL; -ENOMEM; the
 * errno of opening @state_directory or of mkdirat(2).  Thread-safe.
 */
int berth_qualify_work_dir(const char *state_directory, char **ret_path, struct berth_error *reterr);

#endif /* BERTH_QUALIFY_H */
