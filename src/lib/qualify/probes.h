/* SPDX-License-Identifier: MIT */
/*
 * probes.h -- live qualification probes: real jobs in real sandboxes of one
 * runtime backend, through the backend's own start/inspect/cancel/reap, each
 * checking one isolation property.  The probe program is berth-probe
 * (src/probe/), statically linked and alone in a read-only root filesystem.
 *
 * Probes (name: what passes):
 *   rootfs-read-only         "/" is mounted ro and a create in it fails
 *   identity                 uid/gid not 0, no capability
 *   scratch-limit            /tmp stops with ENOSPC at limits.scratch_bytes
 *   network                  only lo; TCP connect to a listener on the host's
 *                            127.0.0.1 and a DNS query to a UDP socket on the
 *                            host's 127.0.0.1 both fail, and neither host
 *                            socket sees anything
 *   pids-limit               a fork bomb stops with EAGAIN below 4 x limits.pids
 *   descendant-reaped        a job that leaves a detached child and exits 0:
 *                            afterwards no process of it is left on the host
 *   cancel-kills-descendants cancel of a running job with a child: reported
 *                            cancelled, nothing of it left
 *   output-limit             a job flooding stdout: failed/output_limit with
 *                            exactly limits.output_bytes kept
 *   deadline                 a job ignoring SIGTERM past its deadline:
 *                            expired, nothing of it left
 *   inputs-read-only         an input staged as berthd stages it (inputs_dir)
 *                            is readable at its nested /inputs/... path;
 *                            writing it, creating beside it or in /inputs,
 *                            removing and renaming it fail inside, and the
 *                            staged file is intact on the host
 *   outputs-limit            a declared output written inside is captured
 *                            exactly (inspect's digest and size,
 *                            open_output's bytes), and writing past
 *                            artifact_bytes fails inside with ENOSPC
 * The last two are not_applicable when the backend's capabilities() does
 * not name "inputs" / "outputs".  The input is staged in @work_dir.
 * A backend bound to a containment (@containment, plugin.h
 * host->containment) is also held to three probes of its units, each on a
 * job that ignores SIGTERM and has a child; they are not_applicable
 * without one:
 *   containment-payload      while it runs, the job's unit (status()
 *                            "cgroup") holds exactly one process in its
 *                            "supervisor" group (the job's supervisor) and
 *                            at least one in "payload", and every host
 *                            process that names the job is in the unit
 *   containment-supervisor-lost  SIGKILL to the supervisor: the job is
 *                            reported failed, and nothing of it is left,
 *                            in the unit or anywhere on the host
 *   containment-drain        destroy() (cgroup.kill) of the running job's
 *                            unit returns 0, and nothing of it is left
 * "Nothing of it left" scans /proc for the job's unique token and run id.
 */
#ifndef BERTH_PROBES_H
#define BERTH_PROBES_H

#include <stdbool.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h>

#include "sign.h"

/**
 * struct berth_qualify_params - what berth_qualify_probes() needs (borrowed).
 * @backend:  the backend's name (for messages).
 * @ops, @state: the backend's runtime ops and instance; only this thread may
 *            call the instance meanwhile.
 * @probe:    absolute path of berth-probe: a trusted file
 *            (berth_trusted_file_check(), fsutil.h).
 * @work_dir: an existing private directory (0700) for the probe rootfs;
 *            what the run creates there is removed.
 * @progress: optional; called after each probe with its name, outcome
 *            ("pass", "fail", "not_applicable") and detail.
 */
struct berth_qualify_params {
    const char *backend;
    const struct berth_runtime_ops_v1 *ops;
    void *state;
    const char *probe;
    const char *work_dir;
    void (*progress)(void *userdata, const char *name, const char *outcome, const char *detail);
    void *userdata;
    /* Optional: sign each probe job's receipt with @key as broker @broker
     * (a runtime that verifies receipts, such as runtime-oci with
     * broker_public_key, refuses unsigned ones); NULL: an unsigned receipt. */
    const struct berth_signing_key *key;
    const char *broker;
    /* Optional: the containment bound to the backend (the table and state
     * host->containment hands the backend), for the containment probes;
     * NULL: the backend has none. */
    const struct berth_containment_ops_v1 *containment;
    void *containment_state;
};

/**
 * berth_qualify_probes() - run every probe, one job at a time.
 * @ret_probes: receives [{name, outcome, detail}] in the order above.
 * @ret_passed: true when no probe failed.
 * @ret_probe_sha256: the digest of the probe program that ran.
 * Return: 0 (whatever the probes found); -EINVAL; the refusals of
 * berth_trusted_file_check() (-EPERM, -EBADFD, -EMLINK, -ELOOP, -EAGAIN:
 * the probe program is not trusted); -errno when the probe rootfs or the
 * host listeners cannot be set up (nothing was run); -ENOMEM (an outcome
 * could not be recorded: no record is made of a run whose list of outcomes
 * is incomplete).  Takes
 * minutes at most: each probe job is bounded by its own deadline.
 */
int berth_qualify_probes(const struct berth_qualify_params *p, json_t **ret_probes, bool *ret_passed,
                         char ret_probe_sha256[BERTH_DIGEST_BUFSZ], struct berth_error *reterr);

#endif /* BERTH_PROBES_H */
