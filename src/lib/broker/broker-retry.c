/* SPDX-License-Identifier: MIT */
/*
 * broker-retry.c -- backoff for a backend call that fails for one job
 * (start, inspect, cancel, which is also the proof of teardown): the call
 * is tried again 250 ms later, then doubling to 30 s, and the log gets one
 * line when the job's calls start failing and one when they work again,
 * never one per reconcile pass.  A failed reap of a finished job is kept
 * here too (from 1 s, doubling to 5 min): its entries are the reaps the
 * reconcile pass still owes.
 * Keyed by run id and operation; an entry exists only while it fails.
 */
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "clock.h"
#include "macro.h"

static const char *const op_names[] = {
    [BROKER_OP_START] = "start",
    [BROKER_OP_INSPECT] = "inspect",
    [BROKER_OP_CANCEL] = "cancel",
    [BROKER_OP_FORGET] = "forget",
    [BROKER_OP_CAPTURE] = "output capture",
    [BROKER_OP_REAP] = "reap",
};

/* A reap that fails is asked again after 1 s, doubling to 5 min: its job
 * has its result, and a plugin's reap may wait seconds for its sandbox's
 * supervisor, on the worker thread. */
#define REAP_BACKOFF_INITIAL_NS (1LL * 1000 * 1000 * 1000)
#define REAP_BACKOFF_MAX_NS (300LL * 1000 * 1000 * 1000)

/* The entry of @run_id and @op, or NULL (lock held). */
static struct broker_retry *find(struct broker_retries *t, const char *run_id, enum broker_op op)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (t->v[i].op == op && streq(t->v[i].run_id, run_id))
            return &t->v[i];
    return NULL;
}

bool broker_retry_due(struct berth_broker *b, const char *run_id, enum broker_op op)
{
    const struct broker_retry *e;
    bool due;

    pthread_mutex_lock(&b->lock);
    e = find(&b->retries, run_id, op);
    due = !e || berth_backoff_due(&e->backoff, broker_mono_now());
    pthread_mutex_unlock(&b->lock);
    return due;
}

void broker_retry_failed(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                         const char *backend, const struct berth_error *err)
{
    struct broker_retries *t = &b->retries;
    struct broker_retry *e;
    bool began = true;

    pthread_mutex_lock(&b->lock);
    e = find(t, rec->run_id, op);
    if (!e && t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 8;
        struct broker_retry *v = reallocarray(t->v, cap, sizeof(*v));
        if (v) {
            t->v = v;
            t->cap = cap;
        }
    }
    if (!e && t->n < t->cap && strlen(rec->run_id) < sizeof(e->run_id)) {
        e = &t->v[t->n++];
        memset(e, 0, sizeof(*e));
        memcpy(e->run_id, rec->run_id, strlen(rec->run_id) + 1);
        e->op = op;
        if (op == BROKER_OP_REAP)
            berth_backoff_init(&e->backoff, REAP_BACKOFF_INITIAL_NS, REAP_BACKOFF_MAX_NS);
        else
            berth_backoff_init(&e->backoff, BERTH_BACKOFF_INITIAL_NS, BERTH_BACKOFF_MAX_NS);
    }
    /* Without an entry (out of memory) the call is retried every pass and
     * each failure is logged: noisy, never silent. */
    if (e)
        began = berth_backoff_failed(&e->backoff, broker_mono_now());
    pthread_mutex_unlock(&b->lock);
    if (!began)
        return;
    /* A cancel that fails is a teardown not proven (plugin.h): the job gets no terminal result yet. */
    if (op == BROKER_OP_CANCEL)
        berth_logf(b->p.logger, BERTH_LOG_WARNING,
                   "job %s run %s: teardown not proven by backend %s, so no result yet; will retry with backoff (up "
                   "to %lld s): %s",
                   rec->job_id, rec->run_id, backend, BERTH_BACKOFF_MAX_NS / BERTH_NS_PER_SEC, err->message);
    else
        berth_logf(b->p.logger, BERTH_LOG_WARNING,
                   "job %s run %s: backend %s %s failed, will retry with backoff (up to %lld s): %s", rec->job_id,
                   rec->run_id, backend, op_names[op],
                   (op == BROKER_OP_REAP ? REAP_BACKOFF_MAX_NS : BERTH_BACKOFF_MAX_NS) / BERTH_NS_PER_SEC,
                   err->message);
}

/* Remove entry @e of @t (lock held). */
static void drop(struct broker_retries *t, struct broker_retry *e)
{
    *e = t->v[--t->n];
}

void broker_retry_succeeded(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                            const char *backend)
{
    struct broker_retry *e;
    bool was_failing = false;

    pthread_mutex_lock(&b->lock);
    if ((e = find(&b->retries, rec->run_id, op))) {
        was_failing = berth_backoff_failing(&e->backoff);
        drop(&b->retries, e);
    }
    pthread_mutex_unlock(&b->lock);
    if (was_failing)
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s: backend %s %s works again", rec->job_id,
                   rec->run_id, backend, op_names[op]);
}

void broker_retry_forget(struct berth_broker *b, const char *run_id)
{
    struct broker_retries *t = &b->retries;
    size_t i = 0;

    pthread_mutex_lock(&b->lock);
    while (i < t->n) {
        if (streq(t->v[i].run_id, run_id))
            drop(t, &t->v[i]);
        else
            i++;
    }
    pthread_mutex_unlock(&b->lock);
}

uint64_t broker_retry_failures(struct berth_broker *b, const char *run_id, enum broker_op op)
{
    const struct broker_retry *e;
    uint64_t n;

    pthread_mutex_lock(&b->lock);
    e = find(&b->retries, run_id, op);
    n = e ? e->backoff.failures : 0;
    pthread_mutex_unlock(&b->lock);
    return n;
}

size_t broker_retry_reaps_due(struct berth_broker *b, char (*ret)[BERTH_RUN_ID_LEN + 1], size_t max)
{
    const struct broker_retries *t = &b->retries;
    int64_t now = broker_mono_now();
    size_t i, n = 0;

    pthread_mutex_lock(&b->lock);
    for (i = 0; i < t->n && n < max; i++)
        if (t->v[i].op == BROKER_OP_REAP && berth_backoff_due(&t->v[i].backoff, now))
            memcpy(ret[n++], t->v[i].run_id, sizeof(ret[0]));
    pthread_mutex_unlock(&b->lock);
    return n;
}

void broker_retries_free(struct broker_retries *t)
{
    free(t->v);
    memset(t, 0, sizeof(*t));
}
