/* SPDX-License-Identifier: MIT */
/*
 * oci.h -- what the runtime-oci plugin's files share: the instance, a parsed
 * dispatch document, and the steps start() (runtime-oci.c) and the warm
 * slot ops (slots.c) have in common.  Not installed.  The functions follow
 * the plugin's conventions: 0 or a negative errno with reterr set.
 */
#ifndef BERTH_OCI_H
#define BERTH_OCI_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/plugin.h>

#include "digest.h"
#include "job.h"
#include "ocicfg.h"

#define OCI_VERSION_MAX 256

struct oci {
    const struct berth_host *host;
    struct oci_config cfg;
    char *jobs_dir, *root_dir, *slots_dir, *bundles_dir;
    int jobsfd, slotsfd, bundlesfd, lockfd; /* lockfd: the state directory, flock()ed for this instance's life */
    bool locked;
    char version[OCI_VERSION_MAX];
    char shim_sha256[BERTH_DIGEST_BUFSZ]; /* bound into qualifications (capabilities().shim_sha256) */
    struct oci_watch *watch;              /* tells berthd when a job's result appears (watch.h), or NULL */
    /* The containment bound to this backend (plugin.h, host->containment),
     * or NULL: each job then runs in a unit of its own (contained.c). */
    const struct berth_containment_ops_v1 *cops;
    void *cstate;
    /* The sealed copy of the runtime every shim gets (oci_runtime_copy()):
     * -1 until it is made, and for good with a large runtime or
     * "sealed_copy": false; copy_off once this host refused an executable
     * memfd. */
    int copy_fd;
    bool copy_off;
    int64_t copy_retry_at; /* CLOCK_MONOTONIC ns: no new try before (after a failure) */
    /* The ops run on several threads at once (BERTH_RUNTIME_CONCURRENT):
     * this lock guards what they share and change -- locked, version,
     * cfg.pin_cache, copy_fd, copy_off and copy_retry_at.  Everything else
     * of the instance is set by init and only read afterwards, and each
     * job's own files are changed only by the op berthd runs for that job
     * (never two at once for one job). */
    pthread_mutex_t lock;
};

struct dispatch {
    const char *text; /* the document as berthd sent it (borrowed) */
    size_t len;
    json_t *doc;
    const char *run_id;
    int64_t deadline;
    struct berth_job *job;
    const json_t *effective;
    const char *rootfs;
    struct oci_pin_cache pin_seen; /* the runtime as start() checked it */
};

/* Whether @id is a run id ("r" and 32 lowercase hex digits). */
bool oci_run_id_ok(const char *id);
/* The instance's state-directory lock (ocicfg.h: one backend per directory). */
int oci_take_state_lock(struct oci *o, struct berth_error *reterr);
/* The runtime binary against its pin; @ret_seen: its identity as checked. */
int oci_runtime_pin_check(struct oci *o, struct oci_pin_cache *ret_seen, struct berth_error *reterr);
/* Hand @doc (consumed) to the caller as JSON text. */
int oci_give_json(json_t *doc, char **ret_json, size_t *ret_len, struct berth_error *reterr);
/* Parse and check a dispatch document (plugin.h, start); -EBADMSG, -EKEYREJECTED. */
int oci_dispatch_parse(const struct oci *o, const char *text, size_t len, struct dispatch *d,
                       struct berth_error *reterr);
void oci_dispatch_clear(struct dispatch *d);
/* What start() and claim() check first: oci_dispatch_parse(), the state
 * lock, the job id not started before (returns 1 then), the deadline
 * (-ETIME) and the runtime's pin (-EPERM).  @d needs oci_dispatch_clear(). */
int oci_dispatch_admit(struct oci *o, const char *text, size_t len, struct dispatch *d, struct berth_error *reterr);
/* Write the bundle, shim.json, the control FIFO and (with @outputs bytes) the
 * outputs mount point into the new directory @jobfd (@jobdir).  @slot_init
 * NULL: a job's directory, d->text is written as dispatch.json; otherwise a
 * warm slot's (jobdir.h): the bundle in slot form binding @slot_init, and
 * d->text is written as slot.json. */
int oci_prepare(struct oci *o, const struct dispatch *d, int jobfd, const char *jobdir, uint64_t outputs,
                const char *slot_init, struct berth_error *reterr);
/* Run berth-oci-shim @mode @jobdir (@syncfd its fd 3, or -1); its exit status or -errno. */
int oci_run_shim(struct oci *o, const char *mode, const char *jobdir, int syncfd, struct berth_error *reterr);
/* Read the shim's one line on @fd within the start timeout: 0 when it is
 * @want, 1 when it is OCI_SHIM_SYNC_FAILED; -EIO, -ETIMEDOUT otherwise. */
int oci_await_shim(struct oci *o, int fd, const char *jobdir, const char *want, struct berth_error *reterr);
/* oci_await_shim() that also asks @alive(@userdata, @id) every 250 ms
 * while the shim is silent, and stops waiting (-EIO) once it returns 0:
 * what was to run the shim is gone, and no answer can come any more. */
int oci_await_shim_until(struct oci *o, int fd, const char *jobdir, const char *want,
                         int (*alive)(void *userdata, const char *id), void *userdata, const char *id,
                         struct berth_error *reterr);
/* Remove a directory under @parentfd named @name that ran nothing (its outputs tmpfs first). */
void oci_unclaim(int parentfd, int dirfd, const char *dir, const char *name);
/* Write @line to the FIFO @fd (a shim's control FIFO) with SIGPIPE blocked
 * in this thread: 0 or -errno (-EPIPE when its reader is gone). */
int oci_fifo_say(int fd, const char *line);
/* 1 when a shim holds the lock of the directory @dirfd, 0 when none does. */
int oci_shim_alive(int dirfd);
bool oci_has_result(int dirfd);
/* `berth-oci-shim cleanup` for the job @job_id (directory @jobfd) that has
 * no shim and no result, after its unit was fenced and drained when it is
 * a contained job's (nothing when a result appeared meanwhile). */
int oci_settle_orphan(struct oci *o, int jobfd, const char *job_id, struct berth_error *reterr);
/* Proof of teardown of the job or slot directory @dirfd (plugin.h, cancel):
 * -EBUSY until proven.  @whole: its shim has exited too (reap, discard);
 * otherwise a shim that only deletes the container after an early result
 * is not waited for (runtime-oci.c). */
int oci_prove_teardown(struct oci *o, int dirfd, const char *job_id, bool whole, struct berth_error *reterr);
/* The container id (and cgroup name) of the directory @dirfd: its "slot"
 * file when it was a warm slot, else @job_id.  @buf: 64 bytes. */
const char *oci_container_id(int dirfd, const char *job_id, char buf[64]);
/* Remove STATE/bundles/@slot_id, a slot's bundle (absent: 0). */
int oci_remove_bundle(struct oci *o, const char *slot_id, struct berth_error *reterr);

/* Jobs in a unit of the bound containment (docs/containment.md), in contained.c. */
/* Take the containment bound to the instance, if any (init): 0, or -errno. */
int oci_contained_bind(struct oci *o, struct berth_error *reterr);
/* Start the prepared job @d in its unit (start() of a contained backend):
 * 0 started, or failed with its result written; -EPERM refused (nothing
 * ran and the job directory is gone); -errno otherwise (see start()). */
int oci_contained_start(struct oci *o, const struct dispatch *d, int jobfd, const char *jobdir,
                        struct berth_error *reterr);
/* Whether the job directory @jobfd is a contained job's: whether its job
 * runs in a unit is decided when it starts, never by the configuration of
 * the moment (jobs outlive a berthd restart, the configuration may not). */
bool oci_job_contained(int jobfd);
/* Whether the unit of @job_id holds nothing and has nothing queued (status):
 * 1 quiet, 0 not, -EBUSY the backend has no containment (any more), or the
 * containment's error. */
int oci_contained_quiet(struct oci *o, const char *job_id, struct berth_error *reterr);
/* Fence and drain the unit of @job_id before its orphaned job is settled:
 * 0 proven gone; -EAGAIN not proven (reterr says why). */
int oci_contained_fence(struct oci *o, const char *job_id, struct berth_error *reterr);
/* Proof that the unit of @job_id holds nothing any more (its shim ended):
 * 0; -EBUSY not proven now (the manager cannot tell, or the backend lost its
 * containment). */
int oci_contained_prove(struct oci *o, const char *job_id, struct berth_error *reterr);
/* Add what capabilities() says of the containment to @caps: "containment"
 * (the manager's own capabilities), or "unavailable" when it cannot be
 * reached.  0 or -ENOMEM. */
int oci_contained_capabilities(struct oci *o, json_t *caps);

/* The warm slot ops (plugin.h, ABI 1.2), in slots.c. */
int oci_provision(void *state, const char *slot, size_t slot_len, struct berth_error *reterr);
int oci_claim(void *state, const char *slot_id, const char *dispatch, size_t dispatch_len, struct berth_error *reterr);
int oci_discard(void *state, const char *slot_id, struct berth_error *reterr);
int oci_slots(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);

#endif /* BERTH_OCI_H */
