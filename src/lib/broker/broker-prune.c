/* SPDX-License-Identifier: MIT */
/*
 * broker-prune.c -- retention: the reconcile loop prunes terminal jobs
 * whose retention passed into identity tombstones, a bounded batch per
 * pass, each one chained in the audit log (broker.h, "Retention"), and the
 * answers the broker gives about a pruned job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "clock.h"
#include "digest.h"
#include "jsonobj.h"
#include "macro.h"
#include "reserve.h"

/* Jobs pruned per reconcile pass, at most: one journal transaction of this
 * many deletions and audit events, and as many forget() calls, keeps a
 * pass short; a backlog is worked off over the following passes. */
#define BROKER_PRUNE_BATCH 32

void broker_pruned_reply(const struct berth_job_tombstone *t, struct berth_reply *reply)
{
    json_decref(reply->body);
    reply->status = 410;
    reply->error = "pruned";
    snprintf(reply->message, sizeof(reply->message),
             "job %s finished (%s) and was pruned after its retention; its signed result is no longer kept "
             "(result digest %s)",
             t->job_id, berth_job_state_names[t->state], t->result_digest);
    reply->body = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "error", "pruned", "message", reply->message, "id",
                            t->job_id, "state", berth_job_state_names[t->state], "result_digest", t->result_digest,
                            "finished_at", berth_json_ns(t->finished_at), "pruned_at", berth_json_ns(t->pruned_at));
    if (!reply->body) {
        reply->status = 500;
        reply->error = "internal";
        snprintf(reply->message, sizeof(reply->message), "out of memory");
    }
}

/* Let @rec's backend drop its tombstone of the job (worker thread, lock
 * not held).  Return: 0 when the backend holds nothing of it any more (or
 * keeps a tombstone it cannot drop: a 1.0 plugin without forget, or a
 * backend no longer configured); -EAGAIN while an earlier failure backs
 * off; the plugin's error otherwise (logged once per failing period). */
static int forget_runtime(struct berth_broker *b, const struct berth_job_record *rec)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);
    struct berth_error err = BERTH_ERROR_INIT;
    int r;

    if (!be || !be->ops->forget)
        return 0;
    if (!broker_retry_due(b, rec->run_id, BROKER_OP_FORGET))
        return -EAGAIN;
    r = be->ops->forget(be->state, rec->run_id, &err);
    if (r == -EBUSY && be->ops->reap) {
        /* Its reap after the result was recorded did not happen or failed: now. */
        int rr = be->ops->reap(be->state, rec->run_id, &err);
        if (rr == 0 || rr == -ENOENT) {
            err = (struct berth_error)BERTH_ERROR_INIT;
            r = be->ops->forget(be->state, rec->run_id, &err);
        }
    }
    if (r == 0 || r == -ENOENT) {
        broker_retry_succeeded(b, rec, BROKER_OP_FORGET, be->name);
        return 0;
    }
    broker_retry_failed(b, rec, BROKER_OP_FORGET, be->name, &err);
    return r;
}

/* What one prune transaction writes (broker_journal_write()). */
struct prune_write {
    struct berth_broker *b;
    struct broker_snapshot *page;
    const bool *forgotten; /* per page entry: the backend holds nothing of it */
    bool *pruned;          /* per page entry: pruned by this transaction */
    int64_t now;
};

/* The job.pruned event's members besides the job's identity; NULL when out of memory. */
static json_t *pruned_event(const struct berth_broker *b, const struct berth_job_record *rec,
                            const struct berth_job_tombstone *t)
{
    char receipt_digest[BERTH_DIGEST_BUFSZ];

    if (berth_digest_bytes(rec->receipt, strlen(rec->receipt), receipt_digest) < 0)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o}", "state", berth_job_state_names[t->state], "result_digest",
                     t->result_digest, "receipt_digest", receipt_digest, "finished_at", berth_json_ns(t->finished_at),
                     "pruned_at", berth_json_ns(t->pruned_at), "retention_ns", berth_json_ns(b->p.jobs_retention_ns));
}

static int prune_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct prune_write *w = userdata;
    size_t i;
    int r;

    for (i = 0; i < w->page->n; i++) {
        const struct berth_job_record *rec = &w->page->v[i];
        struct berth_error err = BERTH_ERROR_INIT;
        struct berth_job_tombstone t = {0};

        w->pruned[i] = false;
        if (!w->forgotten[i])
            continue;
        if ((r = berth_journal_savepoint(j, reterr)) < 0)
            return r;
        r = berth_jobstore_prune(j, rec, w->now, &t, &err);
        if (r == 0) {
            json_t *extra = pruned_event(w->b, rec, &t);
            r = extra ? broker_audit(w->b, "job.pruned", rec, "berthd", extra, &err)
                      : berth_error_set(&err, -ENOMEM, "out of memory");
        }
        berth_job_tombstone_clear(&t);
        if (r == 0) {
            if ((r = berth_journal_release(j, reterr)) < 0)
                return r;
            w->pruned[i] = true;
            continue;
        }
        /* A failing journal or a full one ends the transaction; anything
         * else is this job's problem only (a later round tries again). */
        if (r == -EIO || r == -EBADMSG || berth_space_error(r))
            return berth_error_set(reterr, r, "%s", err.message);
        berth_journal_rollback_to(j, NULL);
        berth_logf(w->b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot be pruned: %s", rec->job_id,
                   rec->run_id, err.message);
    }
    return 0;
}

/* Evidence retention: the store prunes what expired, each removal audited
 * (broker-evidence.c, under the evidence lock, never the broker's). */
static int prune_evidence(struct berth_broker *b, int64_t now, struct berth_pass_stats *stats,
                          struct berth_error *reterr)
{
    unsigned n = 0;

    (void)stats, (void)reterr;
    return broker_evidence_prune(b, now, &n);
}

int broker_prune_pass(struct berth_broker *b, int64_t now, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_snapshot page = {0};
    bool forgotten[BROKER_PRUNE_BATCH] = {0}, pruned[BROKER_PRUNE_BATCH] = {0};
    struct prune_write w = {.b = b, .page = &page, .forgotten = forgotten, .pruned = pruned, .now = now};
    size_t i, n = 0, todo = 0;
    int r;

    if (b->p.jobs_retention_ns <= 0 || now <= b->p.jobs_retention_ns)
        return prune_evidence(b, now, stats, reterr);
    pthread_mutex_lock(&b->lock);
    r = broker_storage_degraded(b) ? 1
                                   : berth_jobstore_page_expired(b->p.journal, now - b->p.jobs_retention_ns,
                                                                 &b->prune.cursor, BROKER_PRUNE_BATCH,
                                                                 broker_snap_one, &page, &n, &err);
    pthread_mutex_unlock(&b->lock);
    if (r == 1) /* pruning waits for space like every ordinary write */
        return 0;
    if (r < 0) {
        broker_snapshot_clear(&page);
        if (r == -EIO || r == -EBADMSG)
            return berth_error_set(reterr, r, "%s", err.message);
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "retention: cannot read the expired jobs: %s", err.message);
        return 0;
    }
    if (n < BROKER_PRUNE_BATCH) /* the end of this round: the next pass starts at the oldest again */
        memset(&b->prune.cursor, 0, sizeof(b->prune.cursor));
    for (i = 0; i < page.n && !atomic_load(&b->stopping); i++)
        if ((forgotten[i] = forget_runtime(b, &page.v[i]) == 0))
            todo++;
    if (todo > 0) {
        err = (struct berth_error)BERTH_ERROR_INIT;
        pthread_mutex_lock(&b->lock);
        r = broker_journal_write(b, false, prune_write, &w, "pruning jobs", &err);
        pthread_mutex_unlock(&b->lock);
        if (r == -EIO || r == -EBADMSG) {
            broker_snapshot_clear(&page);
            return berth_error_set(reterr, r, "%s", err.message);
        }
        if (r < 0 && !berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "retention: pruning failed: %s", err.message);
        for (i = 0; r == 0 && i < page.n; i++) {
            if (!pruned[i])
                continue;
            berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s of %s: pruned (%s, finished %lld s ago)",
                       page.v[i].job_id, page.v[i].run_id, page.v[i].principal,
                       berth_job_state_names[page.v[i].state],
                       (long long)((now - page.v[i].updated_at) / BERTH_NS_PER_SEC));
            broker_retry_forget(b, page.v[i].run_id);
            broker_unstage(b, &page.v[i]); /* left behind when its reap was refused */
            if (stats)
                stats->pruned++;
        }
    }
    broker_snapshot_clear(&page);
    return prune_evidence(b, now, stats, reterr);
}

void berth_broker_journal_stats(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal_stats st;
    struct broker_caller caller;
    json_t *jobs = NULL, *body = NULL;
    int64_t now = 0, retained = 0, outputs_after;
    size_t i;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_authenticate(b, fingerprint, &caller, reply) < 0)
        goto out;
    if (!caller.subject->admin) {
        broker_fail(reply, 403, "denied", "journal statistics need an admin grant");
        goto out;
    }
    if ((r = berth_now_ns(CLOCK_REALTIME, &now, &err)) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    outputs_after = b->p.outputs_retention_ns > 0 && now > b->p.outputs_retention_ns ? now - b->p.outputs_retention_ns
                                                                                     : 0;
    if ((r = berth_journal_stats(b->p.journal, outputs_after, &st, &err)) < 0) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "journal statistics: %s", err.message);
        broker_fail(reply, 503, "journal", "the journal statistics could not be read");
        goto out;
    }
    jobs = json_object();
    for (i = 0; jobs && i < BERTH_JOB_STATE_COUNT; i++) {
        retained += st.counts[i];
        if (json_object_set_new(jobs, berth_job_state_names[i], json_integer(st.counts[i])) < 0) {
            json_decref(jobs);
            jobs = NULL;
        }
    }
    /* Evidence figures are added after the broker's lock is released (below). */
    body = jobs ? json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:{s:o, s:o}, s:{s:o?, s:o?}, s:n}", "jobs", jobs,
                            "retained", (json_int_t)retained, "max_retained", (json_int_t)b->p.max_retained,
                            "tombstones", (json_int_t)st.tombstones, "journal_bytes", (json_int_t)st.bytes,
                            "journal_free_bytes", (json_int_t)st.free_bytes, "retention", "jobs_ns",
                            berth_json_ns(b->p.jobs_retention_ns), "outputs_ns", berth_json_ns(b->p.outputs_retention_ns),
                            "next_expiry", "jobs",
                            st.oldest_finished && b->p.jobs_retention_ns > 0
                                ? berth_json_ns(st.oldest_finished + b->p.jobs_retention_ns)
                                : NULL,
                            "outputs",
                            st.first_outputs_after && b->p.outputs_retention_ns > 0
                                ? berth_json_ns(st.first_outputs_after + b->p.outputs_retention_ns)
                                : NULL,
                            "evidence")
                : NULL;
    if (!body) {
        broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    reply->status = 200;
    reply->body = body;
out:
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
    /* The store's usage({}), never waiting for the evidence lock (null while a commit holds it). */
    if (reply->status == 200 && reply->body && b->p.evidence_ops) {
        json_t *usage = broker_evidence_usage_now(b);
        if (usage)
            json_object_set_new(reply->body, "evidence", usage);
    }
}
