/* SPDX-License-Identifier: MIT */
/*
 * broker-events.c -- job notifications from runtime plugins (plugin.h,
 * host->job_changed) and from the broker itself (a cancellation): a
 * bounded, coalescing queue any thread adds to, drained by the worker,
 * which looks at each job at once instead of at the next reconcile pass.
 * See broker.h ("Events").
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker-internal.h"
#include "clock.h"
#include "enrol.h"
#include "macro.h"

void broker_events_init(struct broker_events *e)
{
    memset(e, 0, sizeof(*e));
    pthread_mutex_init(&e->lock, NULL);
    atomic_init(&e->received, 0);
    atomic_init(&e->lost, 0);
    atomic_init(&e->passes, 0);
}

void broker_events_free(struct broker_events *e)
{
    pthread_mutex_destroy(&e->lock);
    free(e->v);
    e->v = NULL;
    e->n = e->cap = 0;
}

/* Queue @run_id of @backend (lock held): 0 (queued, or queued already); -ENOSPC (full). */
static int queue_one(struct broker_events *e, const char *backend, const char *run_id)
{
    size_t i;

    for (i = 0; i < e->n; i++)
        if (streq(e->v[i].run_id, run_id) && streq(e->v[i].backend, backend))
            return 0; /* coalesced: the worker has not looked yet */
    if (e->n == BROKER_EVENTS_MAX)
        return -ENOSPC;
    if (e->n == e->cap) {
        size_t cap = e->cap ? e->cap * 2 : 16;
        struct broker_event *v = reallocarray(e->v, cap, sizeof(*v));
        if (!v)
            return -ENOSPC;
        e->v = v;
        e->cap = cap;
    }
    snprintf(e->v[e->n].backend, sizeof(e->v[e->n].backend), "%s", backend);
    snprintf(e->v[e->n].run_id, sizeof(e->v[e->n].run_id), "%s", run_id);
    e->n++;
    return 0;
}

void broker_events_add(struct berth_broker *b, const char *backend, const char *run_id)
{
    struct broker_events *e = &b->events;
    int r;

    pthread_mutex_lock(&e->lock);
    r = queue_one(e, backend, run_id);
    if (r < 0)
        e->overflow = true; /* the next drain asks for a whole reconcile round instead */
    pthread_mutex_unlock(&e->lock);
    atomic_fetch_add(&e->received, 1);
    if (r < 0)
        atomic_fetch_add(&e->lost, 1);
}

void broker_events_recheck(struct berth_broker *b, const char *backend, const char *run_id)
{
    struct broker_events *e = &b->events;

    pthread_mutex_lock(&e->lock);
    if (queue_one(e, backend, run_id) < 0)
        e->overflow = true;
    pthread_mutex_unlock(&e->lock);
}

void berth_broker_job_changed(struct berth_broker *b, const char *backend, const char *run_id)
{
    if (!b || !backend || strlen(backend) > BERTH_BACKEND_NAME_MAX || !berth_job_id_valid(run_id) ||
        strlen(run_id) > BERTH_JOB_ID_MAX)
        return;
    /* A warm slot of this run that ended idle: the refill looks at the slots now. */
    if (broker_warm_slot_changed(b, backend, run_id)) {
        if (b->p.wake)
            b->p.wake(b->p.userdata);
        return;
    }
    broker_events_add(b, backend, run_id);
    if (b->p.wake)
        b->p.wake(b->p.userdata);
}

bool berth_broker_events_pending(struct berth_broker *b)
{
    bool pending;

    if (!b)
        return false;
    pthread_mutex_lock(&b->events.lock);
    pending = b->events.n > 0 || b->events.overflow;
    pthread_mutex_unlock(&b->events.lock);
    return pending;
}

/* Look at one notified job now: the open record of @ev's run, from @ev's
 * backend, which no result waits for already. */
static int handle_one(struct berth_broker *b, const struct broker_event *ev, struct berth_pass_stats *stats,
                      struct berth_error *reterr)
{
    struct berth_job_record rec = {0};
    struct berth_error err = BERTH_ERROR_INIT;
    bool waiting;
    int64_t now;
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_find_run(b->p.journal, ev->run_id, &rec, &err);
    waiting = broker_unrecorded_has(b, ev->run_id); /* its result waits for space already */
    pthread_mutex_unlock(&b->lock);
    if (r == -ENOENT)
        return 0; /* not a job of ours (or pruned): nothing to look at */
    if (r < 0) {
        berth_job_record_clear(&rec);
        return r == -EIO || r == -EBADMSG ? berth_error_set(reterr, r, "%s", err.message) : 0;
    }
    /* Accepted jobs are dispatch's; a plugin speaks only for its own jobs. */
    if (berth_job_state_terminal(rec.state) || !streq_ptr(rec.backend, ev->backend) ||
        (rec.state == BERTH_JOB_ACCEPTED && !rec.cancel_requested) || waiting) {
        berth_job_record_clear(&rec);
        return 0;
    }
    r = berth_now_ns(CLOCK_REALTIME, &now, &err);
    if (r == 0)
        r = broker_reconcile_job(b, &rec, now, "event-before-commit", stats, &err);
    berth_job_record_clear(&rec);
    if (r == -EIO || r == -EBADMSG)
        return berth_error_set(reterr, r, "%s", err.message);
    if (r < 0 && stats)
        stats->errors++;
    return 0;
}

int berth_broker_handle_events(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    struct broker_event *v;
    size_t n, i;
    bool overflow;
    int r = 0;

    if (!b)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    pthread_mutex_lock(&b->events.lock);
    v = TAKE_PTR(b->events.v);
    n = b->events.n;
    overflow = b->events.overflow;
    b->events.n = b->events.cap = 0;
    b->events.overflow = false;
    pthread_mutex_unlock(&b->events.lock);
    for (i = 0; r == 0 && i < n && !atomic_load(&b->stopping); i++)
        r = handle_one(b, &v[i], stats, reterr);
    free(v);
    if (r < 0)
        return r;
    return overflow ? 1 : 0;
}

void broker_result_recorded(struct berth_broker *b, const struct berth_job_record *rec)
{
    if (b->p.on_result)
        b->p.on_result(b->p.userdata, rec->principal, rec->job_id);
}
