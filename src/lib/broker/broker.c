/* SPDX-License-Identifier: MIT */
/* broker.c -- the broker's caller-facing operations; see broker.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker-internal.h"
#include "buf.h"
#include "canon.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
#include "receipt.h"
#include "reserve.h"

void berth_reply_clear(struct berth_reply *r)
{
    if (!r)
        return;
    json_decref(r->body);
    free(r->text);
    memset(r, 0, sizeof(*r));
}

json_t *berth_reply_json(const struct berth_reply *r)
{
    if (r->body)
        return json_incref(r->body);
    return json_pack("{s:s, s:s}", "error", r->error ? r->error : "internal", "message", r->message);
}

void broker_fail(struct berth_reply *reply, int status, const char *code, const char *fmt, ...)
{
    va_list ap;

    json_decref(reply->body);
    reply->body = NULL;
    reply->status = status;
    reply->error = code;
    va_start(ap, fmt);
    vsnprintf(reply->message, sizeof(reply->message), fmt, ap);
    va_end(ap);
}

void broker_succeed(struct berth_reply *reply, int status, json_t *body)
{
    json_decref(reply->body);
    reply->body = body;
    reply->status = body ? status : 500;
    reply->error = body ? NULL : "internal";
    if (!body)
        snprintf(reply->message, sizeof(reply->message), "out of memory");
}

void berth_broker_stop(struct berth_broker *b)
{
    if (b)
        atomic_store(&b->stopping, true);
}

void broker_fault(struct berth_broker *b, const char *point)
{
    if (b->p.fault)
        b->p.fault(b->p.userdata, point);
}

const struct berth_broker_backend *broker_backend(const struct berth_broker *b, const char *name)
{
    size_t i;

    for (i = 0; name && i < b->p.n_backends; i++)
        if (streq(b->backends[i].name, name))
            return &b->backends[i];
    return NULL;
}

int berth_broker_new(const struct berth_broker_params *p, struct berth_broker **ret, struct berth_error *reterr)
{
    struct berth_broker *b;
    int r;

    if (!p || !p->name || !p->journal || !p->key || !p->audit_key || !p->policy || (p->n_backends && !p->backends) ||
        p->max_active < 1 || p->max_retained < 1 || (p->evidence_ops && p->evidence_max_object_bytes < 1) ||
        p->worker_lease_ns < 0 || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid broker parameters");
    b = calloc(1, sizeof(*b));
    if (!b)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    broker_events_init(&b->events);
    b->p = *p;
    if (b->p.worker_lease_ns == 0)
        b->p.worker_lease_ns = BERTH_WORKER_LEASE_DEFAULT_NS;
    b->backends = calloc(p->n_backends ? p->n_backends : 1, sizeof(*b->backends));
    b->caps_errors = calloc(p->n_backends ? p->n_backends : 1, sizeof(*b->caps_errors));
    b->caps_unavailable = calloc(p->n_backends ? p->n_backends : 1, sizeof(*b->caps_unavailable));
    if (!b->backends || !b->caps_errors || !b->caps_unavailable || berth_backend_set_empty(&b->offers) < 0 ||
        !(b->capabilities = json_object()) || !(b->worker_outputs = json_object())) {
        berth_broker_free(b);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (p->n_backends)
        memcpy(b->backends, p->backends, p->n_backends * sizeof(*b->backends));
    b->p.backends = b->backends;
    if (p->evidence_ops && (!p->inputs_directory || p->inputs_directory[0] != '/')) {
        berth_broker_free(b);
        return berth_error_set(reterr, -EINVAL, "an evidence store needs an absolute inputs_directory");
    }
    pthread_mutex_init(&b->lock, NULL);
    pthread_mutex_init(&b->evidence_lock, NULL);
    r = berth_registry_open(p->journal, &b->reg, reterr);
    if (r < 0) {
        pthread_mutex_destroy(&b->lock);
        pthread_mutex_destroy(&b->evidence_lock);
        b->reg = NULL;
        berth_broker_free(b);
        return r;
    }
    broker_storage_init(b);
    atomic_init(&b->sweep.admitting, false);
    atomic_init(&b->sweep.cycle_error, false);
    if (broker_warm_init(b) < 0 || broker_fleet_init(b) < 0) {
        berth_broker_free(b);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if ((r = broker_roots_open(b, reterr)) < 0) {
        berth_broker_free(b);
        return r;
    }
    if (broker_serial_wrap(b) < 0 || (r = broker_starts_init(b)) < 0 || broker_warm_start(b) < 0) {
        berth_broker_free(b);
        return berth_error_set(reterr, -ENOMEM, "cannot start the start or refill threads: out of memory or threads");
    }
    *ret = b;
    return 0;
}

void berth_broker_free(struct berth_broker *b)
{
    if (!b)
        return;
    broker_starts_free(b); /* no start runs after this */
    broker_warm_free(b);   /* nor a refill */
    broker_fleet_free(b);
    broker_roots_free(b);
    broker_serial_free(b);
    if (b->reg) {
        berth_registry_free(b->reg);
        pthread_mutex_destroy(&b->lock);
        pthread_mutex_destroy(&b->evidence_lock);
    }
    broker_storage_free(b);
    broker_events_free(&b->events);
    broker_retries_free(&b->retries);
    berth_backend_set_free(b->offers);
    json_decref(b->capabilities);
    json_decref(b->worker_outputs);
    free(b->backends);
    free(b->caps_errors);
    free(b->caps_unavailable);
    free(b);
}

void broker_caller_clear(struct broker_caller *c)
{
    free(c->scope);
    memset(c, 0, sizeof(*c));
}

int broker_authenticate(struct berth_broker *b, const char *fingerprint, struct broker_caller *c,
                        struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_policy *policy = NULL;
    const char *why = "the client certificate is not in the host policy";
    int64_t now;
    int r;

    memset(c, 0, sizeof(*c));
    if (!fingerprint || !berth_is_hex(fingerprint, BERTH_FINGERPRINT_LEN)) {
        broker_fail(reply, 403, "denied", "no verified client certificate");
        return -EACCES;
    }
    /* The policy is judged at the current time: without one, nothing is allowed. */
    if ((r = berth_now_ns(CLOCK_REALTIME, &now, &err)) < 0) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "request refused: %s", err.message);
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        return r;
    }
    r = berth_policy_current(b->p.policy, now, &policy, &err);
    if (r < 0) {
        /* The detail names the policy file: it goes to the log, not the caller. */
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "request denied: %s", err.message);
        broker_fail(reply, r == -ENOMEM ? 500 : 403, r == -ENOMEM ? "internal" : "denied",
                    r == -ENOMEM ? "out of memory" : "the host policy denies every request at the moment");
        return -EACCES;
    }
    c->subject = berth_policy_subject(policy, fingerprint, now, &why);
    if (!c->subject) {
        broker_fail(reply, 403, "denied", "%s", why);
        return -EACCES;
    }
    if (berth_json_serialize(c->subject->scope, 0, &c->scope, NULL, NULL) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    snprintf(reply->principal, sizeof(reply->principal), "%s", c->subject->principal);
    return 0;
}

/* Whether the job @job may run for @subject now; fills @reply when not. */
static bool granted(const struct berth_subject *s, const struct berth_job *job, struct berth_reply *reply)
{
    char gap[sizeof(reply->message)];

    if (!broker_grant_gap(s, job, gap, sizeof(gap)))
        return true;
    broker_fail(reply, 403, "denied", "%s", gap);
    return false;
}

/* With an image source, a new job's image must resolve in it (a retry of
 * an accepted job is answered from the journal and never gets here). */
static bool image_present(struct berth_broker *b, const struct berth_job *job, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *summary = NULL;
    size_t len = 0;
    int r;

    if (!b->p.image_ops)
        return true;
    r = b->p.image_ops->resolve(b->p.image_state, job->image, &summary, &len, &err);
    free(summary);
    if (r == -ENOENT) {
        broker_fail(reply, 400, "image_unknown", "image %s is not in this host's image store", job->image);
        return false;
    }
    if (r == -EBADMSG || r == -EFBIG) {
        broker_fail(reply, 400, "image_refused", "image %s: %s", job->image, err.message);
        return false;
    }
    if (r < 0) {
        broker_fail(reply, 503, "image_store", "the image store cannot serve image %s now", job->image);
        return false;
    }
    return true;
}

int broker_audit(struct berth_broker *b, const char *type, const struct berth_job_record *rec, const char *actor,
                 json_t *extra, struct berth_error *reterr)
{
    _cleanup_json_ json_t *details = NULL, *scope = NULL;
    int64_t now;
    int r;

    if ((r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0) {
        json_decref(extra);
        return r;
    }
    scope = json_loads(rec->scope, 0, NULL);
    details = json_pack("{s:s, s:s, s:s, s:O?, s:s, s:s}", "job_id", rec->job_id, "run_id", rec->run_id, "principal",
                        rec->principal, "scope", scope, "job_digest", rec->job_digest, "backend", rec->backend);
    if (!details || (extra && json_object_update(details, extra) < 0)) {
        json_decref(extra);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    json_decref(extra);
    return berth_audit_append(b->p.journal, b->p.audit_key, now, type, actor, details, NULL, reterr);
}

/* Deadline: accepted_at + min(job wall time, pool timeout, grant ceiling). */
static int64_t deadline_for(const struct berth_job *job, const json_t *effective, const struct berth_subject *s,
                            int64_t accepted)
{
    int64_t wall = job->limits.wall_time_ns;
    json_int_t timeout = json_integer_value(json_object_get(json_object_get(effective, "template"), "timeout_seconds"));

    if (timeout > 0 && timeout * 1000000000LL < wall)
        wall = timeout * 1000000000LL;
    if (s->limits.wall_time_ns < wall)
        wall = s->limits.wall_time_ns;
    return accepted + wall;
}

/* The stored receipt of @rec as JSON (a new reference), or NULL. */
static json_t *stored_json(const char *text)
{
    return text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
}

/* Accept one submission inside the batch transaction.  Returns 1 when
 * something was written that must be committed, 0 when not, <0 when the
 * step must be undone. */
static int submit_one(struct berth_broker *b, struct berth_submission *s, const struct broker_input_check *ic,
                      int64_t now, struct berth_error *err)
{
    struct broker_caller caller = {0};
    struct broker_job_ref ref = {0};
    struct berth_job *job = NULL;
    struct berth_job_record old = {0}, rec = {0};
    struct berth_placement_result placed = {0};
    struct berth_receipt_params rp;
    const struct berth_broker_backend *be;
    /* The remote workers: no plugin of this host (docs/workers.md). */
    static const struct berth_broker_backend workers = {
        .name = BERTH_WORKERS_BACKEND, .plugin = "berth-worker", .plugin_version = PACKAGE_VERSION};
    const char *chosen;
    _cleanup_free_ char *job_text = NULL, *receipt_text = NULL, *effective_text = NULL;
    json_t *receipt = NULL;
    char run_id[BERTH_RUN_ID_LEN + 1];
    unsigned needs = 0;
    int r;

    if (broker_authenticate(b, s->fingerprint, &caller, &s->reply) < 0)
        return 0;
    if (s->len > BERTH_JOB_MAX) {
        broker_fail(&s->reply, 413, "too_large", "a job document is at most %d bytes", BERTH_JOB_MAX);
        r = 0;
        goto out;
    }
    r = broker_submission_job(s, &ref, err);
    job = ref.job;
    if (r < 0) {
        if (r == -ENOMEM)
            broker_fail(&s->reply, 500, "internal", "out of memory");
        else
            broker_fail(&s->reply, 400, "malformed", "%s", err->message);
        r = 0;
        goto out;
    }
    if (!granted(caller.subject, job, &s->reply)) {
        r = 0;
        goto out;
    }
    if ((r = berth_run_id(berth_signing_key_id(b->p.key), caller.subject->principal, caller.scope, job->id, run_id)) <
        0) {
        broker_fail(&s->reply, 500, "internal", "cannot derive the run id");
        r = 0;
        goto out;
    }
    r = berth_jobstore_find(b->p.journal, caller.subject->principal, caller.scope, job->id, &old, err);
    if (r == -ENOENT) {
        /* A pruned job answers from its tombstone: the same receipt, the same conflict. */
        struct berth_job_tombstone t = {0};
        r = berth_jobstore_find_tombstone(b->p.journal, caller.subject->principal, caller.scope, job->id, &t, err);
        if (r == 0) {
            old.job_digest = TAKE_PTR(t.job_digest);
            old.receipt = TAKE_PTR(t.receipt);
        }
        berth_job_tombstone_clear(&t);
    }
    if (r == 0) {
        if (streq(old.job_digest, job->digest))
            broker_succeed(&s->reply, 200, stored_json(old.receipt));
        else
            broker_fail(&s->reply, 409, "conflict", "job %s was already submitted with another digest (%s)", job->id,
                        old.job_digest);
        r = 0;
        goto out;
    }
    if (r != -ENOENT) {
        broker_fail(&s->reply, 503, "journal", "the journal cannot be read");
        r = -EIO;
        goto out;
    }
    /* The workers' offer is as fresh as their last polls, for the needs
     * checked next and for placement. */
    if (broker_fleet_refresh_offers(b, now) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "the workers' offer was not refreshed: out of memory");
    /* Refused for good (400) before a refusal that a retry may pass (503). */
    if (!broker_jobio_admissible(b, job, &caller, ic, &needs, &s->reply)) {
        r = 0;
        goto out;
    }
    /* Until the startup reconcile has checked every open job, nothing new. */
    if (!berth_broker_admitting(b)) {
        broker_fail(&s->reply, 503, "starting",
                    "the broker is still checking the jobs of its last run (startup reconcile); retry in a moment");
        s->reply.retry_after_s = 1;
        r = 0;
        goto out;
    }
    /* A new job on a full state filesystem: refused before anything is written. */
    if (broker_storage_degraded(b)) {
        broker_storage_refuse(b, &s->reply);
        r = 0;
        goto out;
    }
    if (!image_present(b, job, &s->reply)) {
        r = 0;
        goto out;
    }

    /* Placement records its decision in the audit chain, refusals too. */
    r = berth_registry_place_job(b->reg, b->p.audit_key, job->pool, job->overrides, needs, b->offers,
                                 caller.subject->principal, now, &placed, err);
    if (r == -EPERM) {
        if (placed.refusal.reason == BERTH_REFUSAL_NO_BACKEND)
            broker_fail(&s->reply, 503, "no_backend", "no backend of pool %s can run this job now", job->pool);
        else if (placed.refusal.reason == BERTH_REFUSAL_REFUSED_ENV)
            broker_fail(&s->reply, 403, "refused_env", "pool %s refuses %s: %s", job->pool, placed.refusal.field,
                        placed.refusal.detail);
        else
            broker_fail(&s->reply, 403, "override_refused", "pool %s refuses the overrides: %s (%s)", job->pool,
                        berth_refusal_names[placed.refusal.reason], placed.refusal.field);
        r = 1; /* keep the recorded refusal */
        goto out;
    }
    if (r == -ENOENT) {
        broker_fail(&s->reply, 503, "no_pool", "pool %s is not registered on this broker", job->pool);
        r = 0;
        goto out;
    }
    if (r < 0) {
        broker_journal_failed(b, r, err, &s->reply, "the placement could not be recorded");
        goto out;
    }
    chosen = json_string_value(json_object_get(placed.receipt, "chosen_backend"));
    be = streq_ptr(chosen, BERTH_WORKERS_BACKEND) ? &workers : broker_backend(b, chosen);
    if (!be) {
        broker_fail(&s->reply, 503, "no_backend", "the chosen backend is not configured");
        r = -ENOENT;
        goto out;
    }
    rp = (struct berth_receipt_params){
        .broker = b->p.name,
        .job = job,
        .run_id = run_id,
        .who = {.principal = caller.subject->principal, .scope = caller.subject->scope},
        .pool = job->pool,
        .placement_hash = placed.placement_hash,
        .backend = be->name,
        .plugin = be->plugin,
        .plugin_version = be->plugin_version,
        .qualification = NULL,
        .accepted_at = now,
        .deadline = deadline_for(job, placed.effective, caller.subject, now),
    };
    {
        const json_t *q = json_object_get(json_object_get(b->capabilities, be->name), "qualification");
        const json_t *qid = json_object_get(q, "id");
        if (json_is_string(qid))
            rp.qualification = json_string_value(qid);
        r = berth_receipt_create(b->p.key, &rp, &receipt, err);
    }
    if (r < 0 || (!ref.text && berth_json_serialize(job->doc, 0, &job_text, NULL, err) < 0) ||
        berth_json_serialize(receipt, 0, &receipt_text, NULL, err) < 0 ||
        berth_json_serialize(placed.effective, 0, &effective_text, NULL, err) < 0) {
        broker_fail(&s->reply, 500, "internal", "the receipt could not be made");
        r = r < 0 ? r : -ENOMEM;
        goto out;
    }
    rec = (struct berth_job_record){
        .principal = (char *)caller.subject->principal,
        .scope = caller.scope,
        .job_id = (char *)job->id,
        .run_id = run_id,
        .job_digest = job->digest,
        .job = (char *)(ref.text ? ref.text : job_text),
        .receipt = receipt_text,
        .backend = (char *)be->name,
        .effective = effective_text,
        .pool = (char *)job->pool,
        .fingerprint = (char *)s->fingerprint,
        .accepted_at = now,
        .deadline = rp.deadline,
    };
    r = berth_jobstore_insert(b->p.journal, &rec, b->p.max_active, b->p.max_retained, err);
    if (r == -EOVERFLOW) {
        broker_fail(&s->reply, 503, "full", "the journal is full: it holds its limit of jobs");
        goto out;
    }
    if (r == -EAGAIN) {
        broker_fail(&s->reply, 503, "busy", "too many jobs are active; retry later");
        goto out;
    }
    if (r < 0) {
        broker_journal_failed(b, r, err, &s->reply, "the job could not be recorded");
        goto out;
    }
    r = broker_audit(b, "job.accepted", &rec, caller.subject->principal,
                     json_pack("{s:s, s:s, s:o}", "pool", job->pool, "placement_hash", placed.placement_hash,
                               "deadline", berth_json_ns(rp.deadline)),
                     err);
    if (r < 0) {
        broker_journal_failed(b, r, err, &s->reply, "the job could not be recorded");
        goto out;
    }
    broker_succeed(&s->reply, 201, json_incref(receipt));
    if (be == &workers) {
        snprintf(s->remote_run, sizeof(s->remote_run), "%s", run_id);
        snprintf(s->remote_pool, sizeof(s->remote_pool), "%s", job->pool);
        snprintf(s->remote_pool_hash, sizeof(s->remote_pool_hash), "%s",
                 json_string_value(json_object_get(placed.effective, "pool_hash")) ?: "");
        s->remote_accepted_at = now;
    }
    /* Logged by berth_broker_submit_batch() once the commit succeeded. */
    snprintf(s->note, sizeof(s->note), "job %s run %s of %s: accepted on backend %s, deadline in %lld ms", job->id,
             run_id, caller.subject->principal, be->name, (long long)((rp.deadline - now) / 1000000));
    r = 1;
out:
    json_decref(receipt);
    berth_placement_result_clear(&placed);
    berth_job_record_clear(&old);
    broker_job_ref_clear(&ref);
    broker_caller_clear(&caller);
    return r;
}

int berth_broker_submit_batch(struct berth_broker *b, struct berth_submission *v, size_t n)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_input_check *ic;
    bool wrote = false, new_work = false;
    int64_t now = 0;
    size_t i;
    int r, clock_r;

    if (!b || (n && !v))
        return -EINVAL;
    ic = calloc(n ? n : 1, sizeof(*ic));
    for (i = 0; i < n; i++) {
        memset(&v[i].reply, 0, sizeof(v[i].reply));
        v[i].note[0] = '\0';
        v[i].remote_run[0] = '\0';
        /* The evidence store is asked before the broker lock is taken. */
        if (ic)
            broker_inputs_precheck(b, &v[i], &ic[i]);
    }
    pthread_mutex_lock(&b->lock);
    /* Every job of the batch is accepted at the same time. */
    clock_r = berth_now_ns(CLOCK_REALTIME, &now, &err);
    if (clock_r < 0)
        berth_logf(b->p.logger, BERTH_LOG_ERR, "submissions refused: %s", err.message);
    r = clock_r < 0 ? clock_r : berth_journal_begin(b->p.journal, &err);
    for (i = 0; i < n; i++) {
        size_t mark = berth_registry_pending_mark(b->reg);

        if (clock_r < 0) {
            broker_fail(&v[i].reply, 500, "internal", "the broker cannot read the system clock");
            continue;
        }
        if (r < 0) {
            broker_fail(&v[i].reply, 503, "journal", "the journal is unavailable");
            continue;
        }
        if (berth_journal_savepoint(b->p.journal, &err) < 0) {
            broker_fail(&v[i].reply, 503, "journal", "the journal is unavailable");
            continue;
        }
        err = (struct berth_error)BERTH_ERROR_INIT;
        if (!ic) {
            broker_fail(&v[i].reply, 500, "internal", "out of memory");
            continue;
        }
        int s = submit_one(b, &v[i], &ic[i], now, &err);
        if (s < 0) {
            if (err.message[0])
                berth_logf(b->p.logger, BERTH_LOG_ERR, "submission failed: %s", err.message);
            berth_journal_rollback_to(b->p.journal, NULL);
            berth_registry_pending_truncate(b->reg, mark);
        } else {
            berth_journal_release(b->p.journal, NULL);
            wrote |= s > 0;
            new_work |= v[i].reply.status == 201;
        }
    }
    if (r == 0 && wrote) {
        broker_fault(b, "submit-before-commit");
        r = berth_journal_commit(b->p.journal, &err);
        if (r < 0) {
            bool space = berth_space_error(r);

            /* A full filesystem is logged once, by the degraded state, not per batch. */
            if (space)
                broker_storage_failed(b, &err);
            else
                berth_logf(b->p.logger, BERTH_LOG_ERR, "journal commit failed: %s", err.message);
            berth_registry_pending_truncate(b->reg, 0);
            for (i = 0; i < n; i++) {
                if (v[i].reply.status >= 300 && v[i].reply.status != 503)
                    continue;
                if (space)
                    broker_storage_refuse(b, &v[i].reply);
                else
                    broker_fail(&v[i].reply, 503, "journal", "the journal could not commit; nothing was recorded");
            }
        } else {
            if (berth_registry_apply_pending(b->reg, &err) < 0)
                berth_logf(b->p.logger, BERTH_LOG_ERR, "%s", err.message);
            for (i = 0; i < n; i++) {
                if (v[i].reply.status == 201 && v[i].note[0])
                    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "%s", v[i].note);
                /* Offered to the workers now; a reconcile round queues it too (after a restart). */
                if (v[i].reply.status == 201 && v[i].remote_run[0])
                    (void)broker_fleet_enqueue(b, v[i].remote_run, v[i].remote_pool, v[i].remote_pool_hash,
                                               v[i].remote_accepted_at);
            }
        }
        broker_fault(b, "submit-after-commit");
    } else if (r == 0) {
        berth_journal_rollback(b->p.journal);
    }
    pthread_mutex_unlock(&b->lock);
    for (i = 0; ic && i < n; i++)
        broker_input_check_clear(&ic[i]);
    free(ic);
    if (new_work && r == 0 && b->p.wake)
        b->p.wake(b->p.userdata);
    return 0;
}

int broker_find_job(struct berth_broker *b, const char *fingerprint, const char *job_id, struct broker_caller *caller,
                    struct berth_job_record *rec, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job *job = NULL;
    int r;

    if (broker_authenticate(b, fingerprint, caller, reply) < 0)
        return -EACCES;
    r = berth_jobstore_find(b->p.journal, caller->subject->principal, caller->scope, job_id, rec, &err);
    if (r == -ENOENT) {
        struct berth_job_tombstone t = {0};
        r = berth_jobstore_find_tombstone(b->p.journal, caller->subject->principal, caller->scope, job_id, &t, &err);
        if (r == 0)
            broker_pruned_reply(&t, reply);
        else if (r == -ENOENT)
            broker_fail(reply, 404, "not_found", "no job %s", job_id);
        else
            broker_fail(reply, 503, "journal", "the journal cannot be read");
        berth_job_tombstone_clear(&t);
        return r == 0 ? -EIDRM : r;
    }
    if (r < 0) {
        broker_fail(reply, 503, "journal", "the journal cannot be read");
        return r;
    }
    /* The grant is rechecked for every operation on a job, not only at submission. */
    r = berth_job_parse(rec->job, strlen(rec->job), &job, &err);
    if (r < 0) {
        broker_fail(reply, 500, "internal", "the stored job is damaged");
        berth_job_record_clear(rec);
        return r;
    }
    if (!granted(caller->subject, job, reply)) {
        berth_job_free(job);
        berth_job_record_clear(rec);
        return -EACCES;
    }
    berth_job_free(job);
    return 0;
}

static json_t *job_view(const struct berth_job_record *rec)
{
    return json_pack("{s:s, s:s, s:I, s:b, s:s, s:o, s:o, s:o}", "id", rec->job_id, "state",
                     berth_job_state_names[rec->state], "revision", (json_int_t)rec->revision, "cancel_requested",
                     rec->cancel_requested, "backend", rec->backend, "accepted_at", berth_json_ns(rec->accepted_at),
                     "deadline", berth_json_ns(rec->deadline), "receipt", stored_json(rec->receipt));
}

void berth_broker_inspect(struct berth_broker *b, const char *fingerprint, const char *job_id,
                          struct berth_reply *reply)
{
    struct broker_caller caller;
    struct berth_job_record rec = {0};

    pthread_mutex_lock(&b->lock);
    if (broker_find_job(b, fingerprint, job_id, &caller, &rec, reply) == 0)
        broker_succeed(reply, 200, job_view(&rec));
    pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
}

/* What a cancellation writes, in one transaction (broker_journal_write()). */
struct cancel_write {
    struct berth_broker *b;
    const struct berth_job_record *rec;
    const char *actor, *reason;
    int64_t now;
};

static int cancel_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct cancel_write *c = userdata;
    json_t *extra = NULL;
    int r = berth_jobstore_request_cancel(j, c->rec->run_id, c->reason, c->now, reterr);

    if (r == 0 && c->reason && !(extra = json_pack("{s:s}", "reason", c->reason)))
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    return r < 0 ? r : broker_audit(c->b, "job.cancel_requested", c->rec, c->actor, extra, reterr);
}

int broker_record_cancel(struct berth_broker *b, const struct berth_job_record *rec, const char *actor,
                         const char *reason, int64_t now, struct berth_error *reterr)
{
    struct cancel_write cw = {.b = b, .rec = rec, .actor = actor, .reason = reason, .now = now};

    /* A priority write: it may use the journal's space reserve on a full filesystem. */
    return broker_journal_write(b, true, cancel_write, &cw, "a cancellation", reterr);
}

void berth_broker_cancel(struct berth_broker *b, const char *fingerprint, const char *job_id, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller;
    struct berth_job_record rec = {0};
    bool wake = false;
    int64_t now;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_find_job(b, fingerprint, job_id, &caller, &rec, reply) == 0) {
        if (berth_job_state_terminal(rec.state) || rec.cancel_requested) {
            broker_succeed(reply, 202,
                    json_pack("{s:s, s:s, s:b}", "id", rec.job_id, "state", berth_job_state_names[rec.state],
                              "cancel_requested", rec.cancel_requested));
        } else if ((r = berth_now_ns(CLOCK_REALTIME, &now, &err)) < 0 ||
                   (r = broker_record_cancel(b, &rec, caller.subject->principal, NULL, now, &err)) < 0) {
            if (!berth_space_error(r))
                berth_logf(b->p.logger, BERTH_LOG_ERR, "recording the cancellation of %s failed: %s", rec.run_id,
                           err.message);
            broker_journal_failed(b, r, &err, reply, "the cancellation could not be recorded");
        } else {
            berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s of %s: cancellation requested in state %s",
                       rec.job_id, rec.run_id, rec.principal, berth_job_state_names[rec.state]);
            broker_succeed(reply, 202,
                    json_pack("{s:s, s:s, s:b}", "id", rec.job_id, "state", berth_job_state_names[rec.state],
                              "cancel_requested", 1));
            /* The worker stops it now, not at its next reconcile pass. */
            if (rec.backend)
                broker_events_add(b, rec.backend, rec.run_id);
            wake = true;
        }
    }
    pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
    if (wake && b->p.wake)
        b->p.wake(b->p.userdata);
}

void berth_broker_result(struct berth_broker *b, const char *fingerprint, const char *job_id, struct berth_reply *reply)
{
    struct broker_caller caller;
    struct berth_job_record rec = {0};

    pthread_mutex_lock(&b->lock);
    if (broker_find_job(b, fingerprint, job_id, &caller, &rec, reply) == 0) {
        if (berth_job_state_terminal(rec.state) && rec.result)
            broker_succeed(reply, 200, stored_json(rec.result));
        else
            broker_succeed(reply, 202, json_pack("{s:s, s:s}", "id", rec.job_id, "state", berth_job_state_names[rec.state]));
    }
    pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
}

void berth_broker_capabilities(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply)
{
    struct broker_caller caller;
    char pub[BERTH_PUBLIC_KEY_B64_LEN + 1];
    const struct berth_limits *l;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) == 0) {
        l = &caller.subject->limits;
        berth_public_key_to_b64url(berth_signing_key_public(b->p.key), pub);
        broker_succeed(reply, 200,
                json_pack("{s:i, s:s, s:s, s:s, s:s, s:O, s:O, s:O, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:O, s:b}",
                          "schema_version", 1, "broker", b->p.name, "key_id", berth_signing_key_id(b->p.key),
                          "public_key", pub, "principal", caller.subject->principal, "scope", caller.subject->scope,
                          "pools", caller.subject->pools, "images", caller.subject->images, "limits", "cpu_millis",
                          (json_int_t)l->cpu_millis, "memory_bytes", (json_int_t)l->memory_bytes, "pids",
                          (json_int_t)l->pids, "scratch_bytes", (json_int_t)l->scratch_bytes, "wall_time_ns",
                          (json_int_t)l->wall_time_ns, "output_bytes", (json_int_t)l->output_bytes, "artifact_bytes",
                          (json_int_t)l->artifact_bytes, "backends", b->capabilities, "admin", caller.subject->admin));
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
}

static const char *const register_outcomes[] = {"unchanged", "registered", "updated"};

static bool require_admin(const struct broker_caller *c, struct berth_reply *reply)
{
    if (c->subject->admin)
        return true;
    broker_fail(reply, 403, "denied", "this operation needs an admin grant");
    return false;
}

void berth_broker_pool_register(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                                struct berth_reply *reply)
{
    const char *const *outcomes = register_outcomes;
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller;
    struct berth_pool *pool = NULL;
    enum berth_register_outcome outcome = BERTH_REGISTER_UNCHANGED;
    int64_t now;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) < 0 || !require_admin(&caller, reply))
        goto out;
    r = berth_pool_parse(body, len, &pool, &err);
    if (r == -EFBIG) {
        broker_fail(reply, 413, "too_large", "a pool manifest is at most %d bytes", BERTH_POOL_MANIFEST_MAX);
        goto out;
    }
    if (r < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        goto out;
    }
    if (broker_storage_degraded(b)) {
        broker_storage_refuse(b, reply);
        goto out;
    }
    r = berth_now_ns(CLOCK_REALTIME, &now, &err);
    if (r == 0)
        r = berth_registry_register(b->reg, b->p.audit_key, pool, caller.subject->principal, now, &outcome, &err);
    if (r < 0) {
        if (!berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "registering pool %s failed: %s", pool->name, err.message);
        broker_journal_failed(b, r, &err, reply, "the pool could not be recorded");
        goto out;
    }
    if (outcome != BERTH_REGISTER_UNCHANGED)
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "pool %s %s by %s: %s", pool->name, outcomes[outcome],
                   caller.subject->principal, pool->pool_hash);
    broker_succeed(
        reply, outcome == BERTH_REGISTER_UNCHANGED ? 200 : 201,
        json_pack("{s:s, s:s, s:s}", "name", pool->name, "pool_hash", pool->pool_hash, "outcome", outcomes[outcome]));
out:
    pthread_mutex_unlock(&b->lock);
    berth_pool_free(pool);
    broker_caller_clear(&caller);
}

int berth_broker_pool_register_trusted(struct berth_broker *b, const char *body, size_t len, const char *actor,
                                       const char **ret_outcome, struct berth_error *reterr)
{
    enum berth_register_outcome outcome = BERTH_REGISTER_UNCHANGED;
    struct berth_pool *pool = NULL;
    int64_t now;
    int r;

    if (!b || !body || !actor)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_pool_parse(body, len, &pool, reterr);
    if (r == 0)
        r = berth_now_ns(CLOCK_REALTIME, &now, reterr);
    if (r < 0) {
        berth_pool_free(pool);
        return r;
    }
    pthread_mutex_lock(&b->lock);
    r = berth_registry_register(b->reg, b->p.audit_key, pool, actor, now, &outcome, reterr);
    if (berth_space_error(r))
        broker_storage_failed(b, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == 0 && outcome != BERTH_REGISTER_UNCHANGED)
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "pool %s %s by %s: %s", pool->name, register_outcomes[outcome], actor,
                   pool->pool_hash);
    if (r == 0 && ret_outcome)
        *ret_outcome = register_outcomes[outcome];
    berth_pool_free(pool);
    return r;
}

/* {name, pool_hash, backend_allowlist} of @p, or NULL when out of memory. */
static json_t *pool_summary(const struct berth_pool *p)
{
    json_t *allow = json_array();
    size_t i;

    for (i = 0; allow && i < p->n_backends; i++)
        if (json_array_append_new(allow, json_string(p->backends[i])) < 0) {
            json_decref(allow);
            return NULL; /* never a shorter allowlist than the pool's */
        }
    return json_pack("{s:s, s:s, s:o}", "name", p->name, "pool_hash", p->pool_hash, "backend_allowlist", allow);
}

void berth_broker_pool_list(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply)
{
    const struct berth_pool_chain *chain;
    struct broker_caller caller;
    json_t *list;
    size_t i;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) == 0) {
        chain = berth_registry_chain(b->reg);
        list = json_array();
        for (i = 0; list && i < berth_pool_chain_count(chain); i++) {
            const struct berth_pool *p = berth_pool_chain_at(chain, i);
            if ((caller.subject->admin || berth_subject_allows_pool(caller.subject, p->name)) &&
                json_array_append_new(list, pool_summary(p)) < 0) {
                json_decref(list);
                list = NULL; /* an incomplete list would be an answer: broker_succeed() replies 500 */
            }
        }
        broker_succeed(reply, 200, list ? json_pack("{s:o}", "pools", list) : NULL);
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
}

void berth_broker_pool_show(struct berth_broker *b, const char *fingerprint, const char *name,
                            struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller;
    struct berth_pool *pool = NULL;
    json_t *doc;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) == 0) {
        /* A worker reads the pools it serves (it enrols into their manifests). */
        if (!caller.subject->admin && !berth_subject_allows_pool(caller.subject, name) &&
            !berth_subject_serves_pool(caller.subject, name)) {
            broker_fail(reply, 404, "not_found", "no pool %s", name);
        } else if ((r = berth_registry_get(b->reg, name, &pool, &err)) == -ENOENT) {
            broker_fail(reply, 404, "not_found", "no pool %s", name);
        } else if (r < 0) {
            broker_fail(reply, 503, "journal", "the pool could not be read");
        } else {
            json_t *warm = broker_warm_pool_json(b, name);
            doc = json_deep_copy(pool->manifest);
            if (doc && (json_object_set_new(doc, "pool_hash", json_string(pool->pool_hash)) < 0 ||
                        (warm && json_object_set_new(doc, "warm", TAKE_PTR(warm)) < 0))) {
                json_decref(doc);
                doc = NULL; /* broker_succeed() replies 500 */
            }
            json_decref(warm);
            broker_succeed(reply, 200, doc);
        }
    }
    pthread_mutex_unlock(&b->lock);
    berth_pool_free(pool);
    broker_caller_clear(&caller);
}

struct audit_collect {
    struct berth_buf buf;
    size_t left;
};

static int audit_line(void *userdata, uint64_t seq, const char *line, size_t len)
{
    struct audit_collect *c = userdata;

    (void)seq;
    if (c->left == 0)
        return -ECANCELED; /* enough for one reply; the client asks again with a later seq */
    c->left--;
    if (berth_buf_append(&c->buf, line, len) < 0 || berth_buf_putc(&c->buf, '\n') < 0)
        return -ENOMEM;
    return 0;
}

void berth_broker_audit(struct berth_broker *b, const char *fingerprint, uint64_t after, size_t max_events,
                        struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct audit_collect c = {.buf = BERTH_BUF_INIT(0), .left = max_events};
    struct broker_caller caller;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) == 0 && require_admin(&caller, reply)) {
        r = berth_audit_foreach(b->p.journal, after, audit_line, &c, &err);
        if (r < 0 && r != -ECANCELED) {
            broker_fail(reply, 503, "journal", "the audit chain could not be read");
        } else {
            reply->status = 200;
            reply->text = berth_buf_steal(&c.buf, &reply->text_len);
            if (!reply->text)
                broker_fail(reply, 500, "internal", "out of memory");
        }
    }
    pthread_mutex_unlock(&b->lock);
    berth_buf_free(&c.buf);
    broker_caller_clear(&caller);
}

int berth_broker_run_state(struct berth_broker *b, const char *run_id, enum berth_job_state *ret,
                           struct berth_error *reterr)
{
    struct berth_job_record rec = {0};
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_find_run(b->p.journal, run_id, &rec, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == 0)
        *ret = rec.state;
    berth_job_record_clear(&rec);
    return r;
}

int berth_broker_job_counts(struct berth_broker *b, int64_t counts[BERTH_JOB_STATE_COUNT], struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_counts(b->p.journal, counts, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}
