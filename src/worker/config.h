/* SPDX-License-Identifier: MIT */
/*
 * config.h -- berth-worker's configuration (berth-worker(8),
 * docs/workers.md):
 *
 *   {"schema_version": 1,
 *    "name": "worker-1",                  the worker's name: its principal in
 *                                         berthd's host policy (a subject that
 *                                         "serves" pools)
 *    "client": "/etc/berth-worker/client.json",   how to reach berthd: the
 *                                         client configuration berthctl reads
 *                                         too (https.h): URL, pinned broker
 *                                         key, client certificate, key, CA
 *    "identity": "/etc/berth-worker/identity.key",  the worker's Ed25519
 *                                         install identity (berthctl keygen):
 *                                         it signs enrolments, claims, reports
 *                                         and its qualification
 *    -- for "berth-worker run" --
 *    "state_directory": "/var/lib/berth-worker",  private (0700): its image
 *                                         store, staged roots, the runs it
 *                                         holds, its qualification journal
 *    "runtime": {"plugin": "runtime-oci", "sha256": ..., "config": {...},
 *                "containment": {...}},   the runtime backend that runs its
 *                                         jobs, as a member of berthd.json's
 *                                         "backends" (berthd.json(5))
 *    "slots": 2,                          runs at once (1 to 1024, default 1)
 *    "plugin_directory": "/usr/lib/berth/plugins",  where runtime-oci and
 *                                         image-oci-local are (default: the
 *                                         installed one)
 *    "qualify": true,                     run the runtime's live
 *                                         qualification at startup (default
 *                                         true; berthd gives work only to
 *                                         qualified workers unless its
 *                                         workers.require_qualification is
 *                                         false)
 *    "probe": "/usr/libexec/berth/berth-probe",   the probe program (default:
 *                                         the installed one)
 *    "root_cache_bytes": N}               staged roots kept for reuse, bytes
 *                                         (default 4 GiB; rootcache.h)
 *
 * The file is read through the core's no-follow helpers: a regular file
 * with one link, owned by root or the caller, writable by no one else, at
 * most 64 KiB of strict JSON (no unknown member, no duplicate key).
 */
#ifndef BERTH_WORKER_CONFIG_H
#define BERTH_WORKER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "berthd-config.h"

#define BERTH_WORKER_CONFIG_MAX (64 * 1024)
#define BERTH_WORKER_SLOTS_MAX 1024

struct worker_config {
    json_t *doc; /* owns the strings below */
    const char *name, *client, *identity;
    const char *state_directory;  /* NULL when absent */
    const char *plugin_directory; /* the installed one when absent */
    const char *probe;            /* the installed one when absent */
    struct berthd_backend_config runtime; /* plugin NULL when absent */
    int64_t slots;
    int64_t root_cache_bytes;
    bool qualify;
};

/**
 * worker_config_load() - read and check the configuration at the absolute
 * @path.  Return: 0; -EBADMSG (reterr names the member and the rule); the
 * errors of reading the file; -ENOMEM.
 */
int worker_config_load(const char *path, struct worker_config *ret, struct berth_error *reterr);

/**
 * worker_config_runnable() - whether @c has what "berth-worker run" needs
 * (state_directory and runtime).  Return: 0 or -EBADMSG naming what lacks.
 */
int worker_config_runnable(const struct worker_config *c, struct berth_error *reterr);

/** worker_config_clear() - release what worker_config_load() filled; accepts a zeroed one. */
void worker_config_clear(struct worker_config *c);

#endif /* BERTH_WORKER_CONFIG_H */
