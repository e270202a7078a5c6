/* SPDX-License-Identifier: MIT */
/*
 * broker-lease.c -- the leases of remote runs (docs/workers.md): a worker's
 * heartbeats renew its lease, its signed report ends the run, and a lease
 * that runs out is fenced (broker.h, "Remote work").  The lease lives in
 * the job's record (jobstore.h) as canonical JSON
 *
 *   {"claim": the worker's signed claim, "claim_digest", "expires_ns",
 *    "keyid", "worker"}
 *
 * so that a restarted berthd knows every lease; it then gives each one at
 * least a full term from its own start, since no worker could reach it
 * while it was down.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "digest.h"
#include "encoding.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
#include "reserve.h"
#include "report.h"

#define HEARTBEAT_MAX (4 * 1024) /* a heartbeat body, bytes */

int broker_lease_parse(struct berth_broker *b, const struct berth_job_record *rec, json_t **ret_doc,
                       int64_t *ret_expires)
{
    json_t *doc = rec->lease ? json_loads(rec->lease, JSON_REJECT_DUPLICATES, NULL) : NULL;
    int64_t expires = 0, floor = b->fleet.started_ns + b->p.worker_lease_ns;

    if (!doc || !json_is_object(json_object_get(doc, "claim")) ||
        !json_is_string(json_object_get(doc, "claim_digest")) || !json_is_string(json_object_get(doc, "worker")) ||
        !json_is_string(json_object_get(doc, "keyid")) ||
        berth_json_ns_value(json_object_get(doc, "expires_ns"), &expires) < 0) {
        json_decref(doc);
        *ret_doc = NULL;
        return -EBADMSG;
    }
    *ret_doc = doc;
    *ret_expires = expires > floor ? expires : floor;
    return 0;
}

int broker_remote_reconcile(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                            struct berth_pass_stats *stats, struct berth_error *reterr)
{
    _cleanup_json_ json_t *lease = NULL, *effective = NULL;
    int64_t expires = 0;
    int r;

    if (rec->state == BERTH_JOB_ACCEPTED) {
        /* Queued for the workers by its submission; after a restart, by the
         * startup round (before admission opens, no claim can have taken
         * it off the queue since this page was read; later pages read
         * records that may be claimed by now, so they queue nothing). */
        if (berth_broker_admitting(b))
            return 0;
        effective = json_loads(rec->effective, JSON_REJECT_DUPLICATES, NULL);
        r = broker_fleet_enqueue(b, rec->run_id, rec->pool, json_string_value(json_object_get(effective, "pool_hash")),
                                 rec->accepted_at);
        if (r < 0)
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot queue it for the workers: %s",
                       rec->job_id, rec->run_id, r == -ENOMEM ? "out of memory" : "its stored manifest is damaged");
        return 0;
    }
    /* A lease that cannot be read holds nothing: the run is fenced as lost. */
    if (broker_lease_parse(b, rec, &lease, &expires) == 0 && now <= expires)
        return 0;
    r = broker_remote_fence(b, rec, now, stats, reterr);
    return r == -ESTALE ? 0 : r;
}

/* ------------------------------------------------------------------------ */
/* Heartbeats                                                                */

static const char *const heartbeat_members[] = {"claim_digest", "run_id", "state", NULL};

/* Lock held: read run @run_id for @caller's lease @claim_digest into @rec,
 * its lease into *@ret_lease and expiry into *@ret_expires.  0 when the
 * lease is the caller's and the run is open; else @reply says why (404,
 * 409 fenced, 503) and a negative errno is returned.  -ETIMEDOUT: the
 * lease ran out (@rec filled: the caller fences it). */
static int find_lease(struct berth_broker *b, const struct broker_caller *caller, const char *run_id,
                      const char *claim_digest, int64_t now, struct berth_job_record *rec, json_t **ret_lease,
                      int64_t *ret_expires, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r;

    *ret_lease = NULL;
    r = run_id && berth_job_id_valid(run_id) ? berth_jobstore_find_run(b->p.journal, run_id, rec, &err) : -ENOENT;
    if (r == -ENOENT || (r == 0 && !broker_is_remote(rec))) {
        broker_fail(reply, 404, "not_found", "no run %s of the workers", run_id ? run_id : "(none)");
        return -ENOENT;
    }
    if (r < 0) {
        broker_fail(reply, 503, "journal", "the journal cannot be read");
        return r;
    }
    if (broker_lease_parse(b, rec, ret_lease, ret_expires) < 0 ||
        !streq_ptr(json_string_value(json_object_get(*ret_lease, "worker")), caller->subject->principal) ||
        !streq_ptr(json_string_value(json_object_get(*ret_lease, "claim_digest")), claim_digest)) {
        broker_fail(reply, 409, "fenced", "run %s is not held by this claim of %s", run_id,
                    caller->subject->principal);
        return -EPERM;
    }
    if (berth_job_state_terminal(rec->state)) {
        broker_fail(reply, 409, "fenced", "run %s has ended: it is %s", run_id, berth_job_state_names[rec->state]);
        return -EPERM;
    }
    if (now > *ret_expires) {
        broker_fail(reply, 409, "fenced", "the lease of run %s ran out: the run is fenced and never run again",
                    run_id);
        return -ETIMEDOUT;
    }
    return 0;
}

/* The end of a heartbeat or a report (lock not held): fence @rec when the
 * call found its lease ran out (@fence), and release what the call held. */
static void request_end(struct berth_broker *b, struct berth_job_record *rec, bool fence, int64_t now,
                        struct broker_caller *caller)
{
    if (fence) {
        struct berth_error err = BERTH_ERROR_INIT;
        (void)broker_remote_fence(b, rec, now, NULL, &err);
    }
    berth_job_record_clear(rec);
    broker_caller_clear(caller);
}

struct lease_write {
    const struct berth_job_record *rec;
    const char *lease;
};

static int lease_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct lease_write *w = userdata;

    return berth_jobstore_set_lease(j, w->rec->run_id, w->rec->revision, w->lease, reterr);
}

/* @lease with expires_ns @expires, as canonical JSON in *@ret. */
static int renewed(json_t *lease, int64_t expires, char **ret)
{
    if (json_object_set_new(lease, "expires_ns", berth_json_ns(expires)) < 0)
        return -ENOMEM;
    return berth_json_serialize(lease, 0, ret, NULL, NULL);
}

void berth_broker_worker_lease(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL, *lease = NULL;
    _cleanup_free_ char *text = NULL;
    struct broker_caller caller;
    struct berth_job_record rec = {0}, cur = {0};
    const char *run_id = NULL, *digest = NULL, *state = NULL, *why = NULL;
    char name[BERTH_PRINCIPAL_MAX + 1] = "";
    int64_t now = 0, expires = 0;
    bool locked = true, fence = false;
    struct lease_write w = {.rec = &rec};
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_worker_request(b, fingerprint, body, len, HEARTBEAT_MAX, "a heartbeat", &caller, &doc, reply) < 0)
        goto out;
    snprintf(name, sizeof(name), "%s", caller.subject->principal);
    if ((r = berth_json_only_members(doc, "heartbeat", heartbeat_members, &err)) < 0 ||
        (r = berth_json_string_member(doc, "heartbeat", "run_id", true, &run_id, &err)) < 0 ||
        (r = berth_json_string_member(doc, "heartbeat", "claim_digest", true, &digest, &err)) < 0 ||
        (r = berth_json_string_member(doc, "heartbeat", "state", true, &state, &err)) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        goto out;
    }
    if (!streq(state, "starting") && !streq(state, "running")) {
        broker_fail(reply, 400, "malformed", "heartbeat.state must be \"starting\" or \"running\"");
        goto out;
    }
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    r = find_lease(b, &caller, run_id, digest, now, &rec, &lease, &expires, reply);
    if (r == -ETIMEDOUT)
        fence = true;
    if (r < 0)
        goto out;
    why = rec.cancel_requested ? (rec.cancel_reason ? rec.cancel_reason : "cancelled")
          : now > rec.deadline ? "deadline"
                               : NULL;
    /* A run that must stop gets no more time: its worker reports it within
     * the lease it holds, or the lease runs out and the run is fenced. */
    if (!why)
        expires = now + b->p.worker_lease_ns;
    if (renewed(lease, expires, &text) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    if (streq(state, "running") && rec.state == BERTH_JOB_CLAIMED) {
        /* Its start, and the lease, in one transaction (move_full() takes the lock). */
        pthread_mutex_unlock(&b->lock);
        locked = false;
        r = broker_remote_started(b, &rec, text, &err);
        pthread_mutex_lock(&b->lock);
        locked = true;
        if (berth_space_error(r)) {
            /* No room to record the start now: the lease alone is renewed (a
             * priority write), so that a full disk never fences a healthy run. */
            r = berth_jobstore_find_run(b->p.journal, rec.run_id, &cur, &err);
            if (r == 0 && cur.revision == rec.revision && cur.state == rec.state) {
                w.lease = text;
                r = broker_journal_write(b, true, lease_write, &w, "renewing a lease", &err);
            } else if (r == 0) {
                r = -ESTALE;
            }
        }
    } else if (!streq_ptr(rec.lease, text)) {
        /* A renewal keeps the revision: it is not a change of the run. */
        w.lease = text;
        r = broker_journal_write(b, true, lease_write, &w, "renewing a lease", &err);
    } else {
        r = 0; /* nothing changes */
    }
    if (r == -ESTALE) {
        broker_fail(reply, 409, "stale", "run %s moved on meanwhile; send the heartbeat again", run_id);
        goto out;
    }
    if (r < 0) {
        if (!berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "run %s: renewing the lease of %s failed: %s", run_id, name,
                       err.message);
        if (!locked) {
            pthread_mutex_lock(&b->lock);
            locked = true;
        }
        broker_journal_failed(b, r, &err, reply, "the lease could not be renewed");
        goto out;
    }
    broker_fleet_touch(b, name, 0);
    broker_succeed(reply, 200,
                   json_pack("{s:I, s:o, s:o, s:b, s:s?}", "revision", (json_int_t)rec.revision, "expires_ns",
                             berth_json_ns(expires), "lease_ns", berth_json_ns(b->p.worker_lease_ns), "cancel",
                             why != NULL, "reason", why));
out:
    if (locked)
        pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&cur);
    request_end(b, &rec, fence, now, &caller);
}

/* ------------------------------------------------------------------------ */
/* Reports                                                                   */

static const char *const report_request_members[] = {"report", "stderr", "stdout", NULL};

/* The stored result of terminal @rec, when it was signed from the report
 * @report: 200 with it in @reply (an identical report sent again), else
 * false. */
static bool answered_before(const struct berth_job_record *rec, const json_t *report, struct berth_reply *reply)
{
    json_t *result = rec->result ? json_loads(rec->result, JSON_REJECT_DUPLICATES, NULL) : NULL;
    const json_t *mine = json_object_get(json_object_get(json_object_get(result, "result"), "worker"), "report");

    if (!mine || !json_equal(mine, report)) {
        json_decref(result);
        return false;
    }
    broker_succeed(reply, 200, json_pack("{s:o}", "result", result));
    return true;
}

/* Whether a report that names no output_error lists every declared
 * output when it exited, and none otherwise; -EBADMSG says which. */
static int outputs_incomplete(const struct berth_job *job, const json_t *report, const char *status,
                              struct berth_error *reterr)
{
    const json_t *declared = json_object_get(job->doc, "outputs"), *listed = json_object_get(report, "outputs");

    if (!json_is_null(json_object_get(report, "output_error")))
        return 0; /* berth_result_outputs_check(): failed, and lists none */
    if (!streq_ptr(status, "exited")) {
        if (json_array_size(listed) > 0)
            return berth_error_set(reterr, -EBADMSG, "a run that did not exit on its own keeps no outputs");
        return 0;
    }
    if (json_array_size(listed) != json_array_size(declared))
        return berth_error_set(reterr, -EBADMSG, "it lists %zu output(s) of the %zu declared, and no output_error",
                               json_array_size(listed), json_array_size(declared));
    return 0;
}

/* Lock held: check @report_env of @rec against its lease @lease and the
 * caller; fill @o (borrowing from @report_env and the buffers) and the
 * worker member *@ret_worker.  0, else @reply says why. */
static int check_report(struct berth_broker *b, const struct broker_caller *caller, const struct berth_job_record *rec,
                        const json_t *lease, const json_t *report_env, const uint8_t *out, size_t out_len,
                        const uint8_t *errb, size_t err_len, struct broker_remote_outcome *o, json_t **ret_worker,
                        struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const json_t *claim_env = json_object_get(lease, "claim"), *claim = json_object_get(claim_env, "claim");
    const json_t *report = NULL, *v;
    struct berth_job *job = NULL;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    const char *status;
    int64_t output_bytes;
    int idx;

    if (berth_pool_chain_enrolled_key(berth_registry_chain(b->reg),
                                      json_string_value(json_object_get(claim, "pool_hash")),
                                      json_string_value(json_object_get(lease, "keyid")), pub, NULL) < 0) {
        broker_fail(reply, 409, "fenced", "the key that claimed run %s is not enrolled in its pool", rec->run_id);
        return -EPERM;
    }
    {
        _cleanup_free_ char *text = NULL;
        if (berth_json_serialize(report_env, BERTH_REPORT_MAX, &text, NULL, &err) < 0) {
            broker_fail(reply, 413, "too_large", "a report is at most %d bytes of canonical JSON", BERTH_REPORT_MAX);
            return -EFBIG;
        }
    }
    if (berth_report_verify(report_env, pub, &report, &err) < 0) {
        broker_fail(reply, 400, "malformed", "the report does not verify: %s", err.message);
        return -EBADMSG;
    }
    if (!streq_ptr(json_string_value(json_object_get(report, "worker_name")), caller->subject->principal) ||
        !streq_ptr(json_string_value(json_object_get(report, "run_id")), rec->run_id) ||
        !streq_ptr(json_string_value(json_object_get(report, "job_id")), rec->job_id) ||
        !streq_ptr(json_string_value(json_object_get(report, "job_digest")), rec->job_digest)) {
        broker_fail(reply, 400, "malformed", "the report is not %s's report of run %s", caller->subject->principal,
                    rec->run_id);
        return -EBADMSG;
    }
    if (berth_report_binds_output(report, out, out_len, errb, err_len, &err) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        return -EBADMSG;
    }
    if (berth_job_parse(rec->job, strlen(rec->job), &job, &err) < 0) {
        broker_fail(reply, 500, "internal", "the stored job of run %s is damaged", rec->run_id);
        return -EBADMSG;
    }
    output_bytes = job->limits.output_bytes;
    status = json_string_value(json_object_get(report, "status"));
    /* Outputs as a local run's result would list them: declared ones,
     * with their media types, within their bounds, each once; and, as for a
     * local run, only a run that exited on its own keeps them. */
    if (berth_result_outputs_check(json_object_get(report, "outputs"), json_object_get(report, "output_error"), status,
                                   job, &err) < 0 ||
        outputs_incomplete(job, report, status, &err) < 0) {
        berth_job_free(job);
        broker_fail(reply, 400, "malformed", "report of run %s: %s", rec->run_id, err.message);
        return -EBADMSG;
    }
    berth_job_free(job);
    if (out_len + err_len > (size_t)output_bytes) {
        broker_fail(reply, 400, "output_limit", "stdout and stderr are %zu bytes, more than the job's output_bytes %lld",
                    out_len + err_len, (long long)output_bytes);
        return -EFBIG;
    }
    idx = berth_name_index(berth_result_status_names, 4, status);
    *o = (struct broker_remote_outcome){
        .to = idx == BERTH_RESULT_EXITED     ? BERTH_JOB_EXITED
              : idx == BERTH_RESULT_CANCELLED ? BERTH_JOB_CANCELLED
              : idx == BERTH_RESULT_EXPIRED   ? BERTH_JOB_EXPIRED
                                              : BERTH_JOB_FAILED,
        .reason = json_string_value(json_object_get(report, "reason")),
        .out = out,
        .out_len = out_len,
        .err = errb,
        .err_len = err_len,
        .outputs = json_object_get(report, "outputs"),
        .output_error = json_is_null(json_object_get(report, "output_error")) ? NULL
                                                                              : json_object_get(report, "output_error"),
        .started_at = -1,
    };
    v = json_object_get(report, "exit_code");
    if (json_is_integer(v)) {
        o->has_exit_code = true;
        o->exit_code = (int)json_integer_value(v);
    }
    v = json_object_get(report, "started_at");
    if (!json_is_null(v) && berth_json_ns_value(v, &o->started_at) < 0)
        o->started_at = -1;
    (void)berth_json_ns_value(json_object_get(report, "finished_at"), &o->finished_at);
    *ret_worker = berth_result_worker_json(caller->subject->principal, pub, claim_env, report_env);
    if (!*ret_worker) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    o->worker = *ret_worker;
    return 0;
}

void berth_broker_worker_report(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                                struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL, *lease = NULL, *worker = NULL;
    _cleanup_free_ uint8_t *out = NULL, *errb = NULL;
    struct broker_caller caller;
    struct berth_job_record rec = {0};
    struct broker_remote_outcome o;
    const json_t *report_env;
    const char *run_id, *digest;
    char name[BERTH_PRINCIPAL_MAX + 1] = "";
    size_t out_len = 0, err_len = 0;
    int64_t now = 0, expires = 0;
    bool fence = false;
    int r, tries;

    pthread_mutex_lock(&b->lock);
    if (broker_worker_request(b, fingerprint, body, len, BERTH_WORKER_REPORT_BODY_MAX, "a report", &caller, &doc,
                              reply) < 0)
        goto out;
    snprintf(name, sizeof(name), "%s", caller.subject->principal);
    if ((r = berth_json_only_members(doc, "report request", report_request_members, &err)) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        goto out;
    }
    if (!json_is_string(json_object_get(doc, "stdout")) || !json_is_string(json_object_get(doc, "stderr")) ||
        berth_json_b64_value(json_object_get(doc, "stdout"), &out, &out_len) < 0 ||
        berth_json_b64_value(json_object_get(doc, "stderr"), &errb, &err_len) < 0) {
        broker_fail(reply, 400, "malformed", "stdout and stderr must be base64url strings");
        goto out;
    }
    report_env = json_object_get(doc, "report");
    run_id = json_string_value(json_object_get(json_object_get(report_env, "report"), "run_id"));
    digest = json_string_value(json_object_get(json_object_get(report_env, "report"), "claim_digest"));
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    /* A result signed from this run's report waits in memory for journal
     * space (broker.h): the report is not taken again. */
    if (run_id && broker_unrecorded_has(b, run_id)) {
        broker_succeed(reply, 202, json_pack("{s:s}", "run_id", run_id));
        goto out;
    }
    for (tries = 0;; tries++) {
        r = find_lease(b, &caller, run_id, digest, now, &rec, &lease, &expires, reply);
        if (r == -EPERM && berth_job_state_terminal(rec.state) && answered_before(&rec, report_env, reply))
            goto out; /* the same report again: its acknowledgement was lost */
        if (r == -ETIMEDOUT)
            fence = true;
        if (r < 0)
            goto out;
        if (!worker && check_report(b, &caller, &rec, lease, report_env, out, out_len, errb, err_len, &o, &worker,
                                    reply) < 0)
            goto out;
        o.worker = worker;
        pthread_mutex_unlock(&b->lock);
        /* No result names an output the store does not hold (the worker uploads first). */
        r = broker_outputs_stored(b, &rec, o.outputs, reply);
        if (r == 0)
            r = broker_remote_finish(b, &rec, &o, &err);
        pthread_mutex_lock(&b->lock);
        if (reply->status) /* refused by the store check */
            goto out;
        if (r != -ESTALE || tries == 3)
            break;
        /* A heartbeat or a cancellation moved the record meanwhile: read it again. */
        berth_job_record_clear(&rec);
        json_decref(lease);
        lease = NULL;
        berth_reply_clear(reply);
    }
    if (r == -EINVAL) {
        broker_fail(reply, 400, "malformed", "the report cannot be signed as a result: %s", err.message);
        goto out;
    }
    if (r < 0) {
        broker_journal_failed(b, r, &err, reply, "the result could not be recorded");
        goto out;
    }
    broker_fleet_touch(b, name, -1);
    berth_job_record_clear(&rec);
    if (berth_jobstore_find_run(b->p.journal, run_id, &rec, &err) == 0 && rec.result)
        broker_succeed(reply, 200,
                       json_pack("{s:o}", "result", json_loads(rec.result, JSON_REJECT_DUPLICATES, NULL)));
    else
        /* Kept in memory for want of space (broker.h): recorded later, as signed. */
        broker_succeed(reply, 202, json_pack("{s:s}", "run_id", run_id));
out:
    pthread_mutex_unlock(&b->lock);
    request_end(b, &rec, fence, now, &caller);
}

/* ------------------------------------------------------------------------ */
/* Image blobs                                                               */

int broker_held_run(struct berth_broker *b, const struct broker_caller *caller, const char *run_id, int64_t now,
                    struct berth_job_record *rec, json_t **ret_job)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *lease = NULL;
    int64_t expires = 0;

    *ret_job = NULL;
    if (!run_id || !berth_job_id_valid(run_id) || berth_jobstore_find_run(b->p.journal, run_id, rec, &err) < 0)
        return -EACCES;
    if (broker_is_remote(rec) && !berth_job_state_terminal(rec->state) &&
        broker_lease_parse(b, rec, &lease, &expires) == 0 && now <= expires &&
        streq_ptr(json_string_value(json_object_get(lease, "worker")), caller->subject->principal))
        *ret_job = json_loads(rec->job, JSON_REJECT_DUPLICATES, NULL);
    return *ret_job ? 0 : -EACCES;
}

int berth_broker_image_blob(struct berth_broker *b, const char *fingerprint, const char *image, const char *blob,
                            const char *run_id, int *ret_fd, uint64_t *ret_size, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *job = NULL;
    struct broker_caller caller;
    struct berth_job_record rec = {0};
    int64_t now = 0;
    int r = -EACCES;

    *ret_fd = -1;
    pthread_mutex_lock(&b->lock);
    if (broker_authenticate_worker(b, fingerprint, &caller, reply) < 0)
        goto out;
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    /* Only the image of a run the caller holds the lease of. */
    if (broker_held_run(b, &caller, run_id, now, &rec, &job) < 0 ||
        !streq_ptr(json_string_value(json_object_get(job, "image")), image)) {
        broker_fail(reply, 403, "denied", "%s holds no lease on a run of image %s", caller.subject->principal, image);
        r = -EACCES;
        goto out;
    }
    pthread_mutex_unlock(&b->lock);
    if (!b->p.blob_ops || !b->p.blob_ops->open_blob) {
        broker_fail(reply, 501, "not_supported", "this broker's image source cannot hand out blobs (plugin ABI 1.5)");
        r = -EOPNOTSUPP;
    } else {
        r = b->p.blob_ops->open_blob(b->p.blob_state, image, blob, ret_fd, ret_size, &err);
        if (r == -ENOENT || r == -EINVAL)
            broker_fail(reply, 404, "not_found", "%s", err.message);
        else if (r < 0)
            broker_fail(reply, 503, "image_source", "the image source failed: %s", err.message);
    }
    pthread_mutex_lock(&b->lock);
out:
    pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
    return r;
}
