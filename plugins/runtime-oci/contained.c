/* SPDX-License-Identifier: MIT */
/*
 * contained.c -- runtime-oci jobs in a unit of the containment bound to the
 * backend (plugin.h, host->containment; docs/containment.md).
 *
 * start() prepares the job directory as for any job, then asks the
 * containment to create the job's unit with the command
 * `berth-oci-shim contained JOBDIR`: the shim is the unit's supervisor, not
 * a child of berthd, and puts every runtime process it runs in the unit's
 * payload group.  It answers on the job directory's "sync" FIFO, whose
 * reading end start() opened before the unit existed.  What follows is as
 * for any job (inspect, cancel and reap read the job directory), with two
 * differences: a job whose shim is gone without a result is settled only
 * after the containment fenced and drained its unit (destroy), and the
 * proof of teardown is the containment's word that the unit's cgroup is
 * empty, never the runtime's.
 *
 * The unit is named by the run id (the containment job id), so berthd's
 * recovery scans find it and leave it alone while the job is not terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "clock.h"
#include "fsutil.h"
#include "jobdir.h"
#include "jsonobj.h"
#include "macro.h"
#include "oci.h"
#include "watch.h"

#define STATUS_MAX (64 * 1024)
#define QUIET_WAIT_NS (3LL * BERTH_NS_PER_SEC) /* for the manager to stop a unit whose shim ended */

int oci_contained_bind(struct oci *o, struct berth_error *reterr)
{
    const struct berth_containment_ops_v1 *ops = NULL;
    size_t size = 0;
    void *state = NULL;
    int r;

    if (!BERTH_HOST_HAS(o->host, containment) || !o->host->containment)
        return 0;
    r = o->host->containment(o->host, &ops, &size, &state);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return berth_error_set(reterr, r, "cannot take the backend's containment: %s", strerror(-r));
    if (size < BERTH_CONTAINMENT_OPS_V1_0_SIZE || !ops->capabilities || !ops->create || !ops->status ||
        !ops->destroy)
        return berth_error_set(reterr, -EPROTO, "the backend's containment lacks an operation runtime-oci needs");
    o->cops = ops;
    o->cstate = state;
    return 0;
}

bool oci_job_contained(int jobfd)
{
    /* oci_prepare() makes the sync FIFO for a contained job only. */
    return faccessat(jobfd, OCI_JOB_SYNC, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The unit's status: 1 when it holds nothing and nothing is queued for it
 * (inactive or failed, or unknown to the manager), 0 when it may still hold
 * or start processes, -errno when the containment cannot tell. */
static int unit_quiet(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const char *active;
    size_t len = 0;
    int r;

    if ((r = o->cops->status(o->cstate, job_id, &text, &len, reterr)) < 0 ||
        (r = berth_json_parse(text, len, STATUS_MAX, &doc, reterr)) < 0)
        return r;
    active = json_string_value(json_object_get(doc, "active_state"));
    if (!active || !json_is_boolean(json_object_get(doc, "populated")) ||
        !json_is_boolean(json_object_get(doc, "job_pending")))
        return berth_error_set(reterr, -EBADMSG, "the containment's status of %s lacks a member", job_id);
    return !json_is_true(json_object_get(doc, "populated")) && !json_is_true(json_object_get(doc, "job_pending")) &&
           (streq(active, "inactive") || streq(active, "failed"));
}

int oci_contained_quiet(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    if (!o->cops)
        return berth_error_set(reterr, -EBUSY,
                               "job %s was started in a unit of a containment this backend no longer has: restore "
                               "the backend's \"containment\" so that its end can be proven",
                               job_id);
    return unit_quiet(o, job_id, reterr);
}

/* oci_await_shim()'s look at the unit while the shim has not answered:
 * 0 once the unit is over (the launch failed before the shim spoke). */
static int unit_alive(void *userdata, const char *job_id)
{
    return unit_quiet(userdata, job_id, NULL) != 1;
}

/* A job that never ran but whose id is taken (a unit of that name is there
 * already): its result says so, and the proof of teardown fences the unit. */
static int record_conflict(struct oci *o, int jobfd, const char *run_id, const struct berth_error *why,
                           struct berth_error *reterr)
{
    char text[160];
    int n;

    o->host->log(o->host, BERTH_LOG_ERR, "job %s: its unit cannot be created: %s", run_id, why->message);
    n = snprintf(text, sizeof(text),
                 "{\"exit_code\":null,\"finished_at\":null,\"outputs\":[],\"reason\":\"unit_conflict\","
                 "\"started_at\":null,\"state\":\"failed\"}");
    return berth_publish_at(jobfd, OCI_JOB_RESULT, text, (size_t)n, 0600, 0, reterr);
}

int oci_contained_start(struct oci *o, const struct dispatch *d, int jobfd, const char *jobdir,
                        struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int syncfd = -1;
    _cleanup_free_ char *spec = NULL, *handle = NULL;
    size_t len = 0, hlen = 0;
    int r;

    /* The reading end first: the shim's open for writing then never fails
     * for want of a reader, and a shim that ends without a word is seen as
     * end of file. */
    syncfd = openat(jobfd, OCI_JOB_SYNC, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (syncfd < 0) {
        r = berth_error_set(reterr, -errno, "cannot open %s/%s: %m", jobdir, OCI_JOB_SYNC);
        oci_unclaim(o->jobsfd, jobfd, jobdir, d->run_id);
        return r;
    }
    if ((r = berth_json_emit(json_pack("{s:s, s:[s, s, s]}", "job_id", d->run_id, "argv", o->cfg.shim, "contained",
                                       jobdir),
                             &spec, &len, reterr)) < 0) {
        oci_unclaim(o->jobsfd, jobfd, jobdir, d->run_id);
        return r;
    }
    r = o->cops->create(o->cstate, spec, len, &handle, &hlen, &err);
    switch (r) {
    case 0:
        break;
    case -ENOENT: /* the unit's definition is not installed */
    case -EPERM:  /* the unit is not the one shipped, or masked */
    case -EBADMSG:
    case -EINVAL:
        /* Nothing started and nothing will: berthd fails the job. */
        oci_unclaim(o->jobsfd, jobfd, jobdir, d->run_id);
        return berth_error_set(reterr, -EPERM, "the containment refused the job's unit: %s", err.message);
    case -ECONNREFUSED:
    case -EACCES:
    case -EBUSY:
        /* The manager cannot be reached (or is not who it should be), or
         * refused to queue the start for now: nothing started; berthd
         * tries again later. */
        oci_unclaim(o->jobsfd, jobfd, jobdir, d->run_id);
        return berth_error_set(reterr, r, "the containment cannot start the job's unit: %s", err.message);
    case -EEXIST:
        if ((r = record_conflict(o, jobfd, d->run_id, &err, reterr)) < 0)
            return r;
        oci_watch_job(o->watch, jobfd, d->run_id);
        return 0;
    default:
        /* Uncertain (the manager's start job timed out or failed, or the
         * unit ran and something failed after): the unit may run the shim.
         * The id stays taken; berthd's retry finds it started and follows
         * it: inspect reports it starting while its unit is active or has
         * a start queued, and a shim that never takes the job is settled
         * once the unit is quiet, after it was fenced (oci_settle_orphan). */
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s: its unit may or may not have started: %s", d->run_id,
                     err.message);
        oci_watch_job(o->watch, jobfd, d->run_id);
        return berth_error_set(reterr, r, "%s", err.message);
    }
    r = oci_await_shim_until(o, syncfd, jobdir, OCI_SHIM_SYNC_STARTED, unit_alive, o, d->run_id, reterr);
    if (r == 1)
        r = 0; /* failed before it started: result.json says why */
    if (r == 0) {
        _cleanup_json_ json_t *h = NULL;
        const char *unit = NULL;
        if (berth_json_parse(handle, hlen, STATUS_MAX, &h, NULL) == 0)
            unit = json_string_value(json_object_get(h, "unit"));
        o->host->log(o->host, BERTH_LOG_INFO, "job %s started by %s in %s", d->run_id, o->cfg.pin.path,
                     unit ? unit : "its unit");
    }
    else if (r == -ETIMEDOUT)
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s: no answer from the shim in its unit within the start "
                     "timeout; it keeps the job and may still start it", d->run_id);
    oci_watch_job(o->watch, jobfd, d->run_id);
    return r;
}

int oci_contained_fence(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r;

    if (!o->cops)
        return oci_contained_quiet(o, job_id, reterr); /* says why it cannot */
    r = o->cops->destroy(o->cstate, job_id, &err);

    if (r == 0 || r == -ENOENT)
        return 0;
    return berth_error_set(reterr, -EAGAIN, "job %s: its unit is not proven gone yet: %s", job_id, err.message);
}

int oci_contained_prove(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, QUIET_WAIT_NS);
    useconds_t nap_us = 500;
    int r;

    /* The shim has ended: the manager stops the unit and its cgroup
     * empties on its own, usually within milliseconds. */
    for (;;) {
        r = oci_contained_quiet(o, job_id, reterr);
        if (r == 1)
            return 0;
        if (r < 0) {
            /* The manager cannot tell (or cannot be reached): no proof, and
             * no fence either; asked again later, without waiting now. */
            if (reterr)
                reterr->code = -EBUSY;
            return -EBUSY;
        }
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            break;
        usleep(nap_us);
        nap_us = nap_us < 50000 ? nap_us * 2 : 50000;
    }
    /* Still populated, or still stopping: fence and drain it. */
    if ((r = oci_contained_fence(o, job_id, reterr)) < 0) {
        if (reterr)
            reterr->code = -EBUSY;
        return -EBUSY;
    }
    o->host->log(o->host, BERTH_LOG_WARNING, "job %s: its unit did not empty on its own; fenced and drained", job_id);
    return 0;
}

int oci_contained_capabilities(struct oci *o, json_t *caps)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    json_t *doc = NULL;
    size_t len = 0;

    if (o->cops->capabilities(o->cstate, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, STATUS_MAX, &doc, &err) < 0 || !json_is_object(doc)) {
        json_decref(doc);
        /* Placement skips the backend with this reason (plugin.h, capabilities). */
        return json_object_set_new(caps, "unavailable", json_string("containment_unreachable")) < 0 ||
                       json_object_set_new(caps, "containment", json_pack("{s:s}", "error", err.message)) < 0
                   ? -ENOMEM
                   : 0;
    }
    return json_object_set_new(caps, "containment", doc) < 0 ? -ENOMEM : 0;
}
