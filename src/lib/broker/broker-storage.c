/* SPDX-License-Identifier: MIT */
/*
 * broker-storage.c -- the broker on a full state filesystem: the degraded
 * state, the check that space returned, staging retries, the results kept
 * in memory until the journal can take them, and berth_broker_health().
 * See broker.h ("A full state filesystem") and journal.h (the space
 * reserve).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker-internal.h"
#include "clock.h"
#include "macro.h"
#include "reserve.h"

int64_t broker_mono_now(void)
{
    int64_t now = 0;

    return berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0 ? now : 0;
}

static bool degraded(const struct broker_storage *s)
{
    return s->journal_full || s->stage_full;
}

/* Keep since_ns in step with the flags (lock held). */
static void note_since(struct broker_storage *s)
{
    if (!degraded(s))
        s->since_ns = 0;
    else if (s->since_ns == 0 && berth_now_ns(CLOCK_REALTIME, &s->since_ns, NULL) < 0)
        s->since_ns = 0;
}

static void journal_full(struct berth_broker *b, const char *cause)
{
    struct broker_storage *s = &b->storage;

    if (s->journal_full)
        return;
    s->journal_full = true;
    note_since(s);
    berth_backoff_init(&s->check, BERTH_BACKOFF_INITIAL_NS, BERTH_BACKOFF_MAX_NS);
    (void)berth_backoff_failed(&s->check, broker_mono_now()); /* the first check is one initial wait away */
    berth_logf(b->p.logger, BERTH_LOG_WARNING,
               "storage degraded: %s; reads and cancellations are still served, new jobs are refused (503 "
               "storage_full) and finished jobs' results are kept in memory until space returns; checking for "
               "space with backoff",
               cause);
}

void broker_storage_init(struct berth_broker *b)
{
    uint64_t size = berth_journal_reserve_size(b->p.journal);
    char cause[128];

    memset(&b->storage, 0, sizeof(b->storage));
    berth_backoff_init(&b->storage.check, BERTH_BACKOFF_INITIAL_NS, BERTH_BACKOFF_MAX_NS);
    berth_backoff_init(&b->storage.stage, BERTH_BACKOFF_INITIAL_NS, BERTH_BACKOFF_MAX_NS);
    if (size > 0 && !berth_journal_reserve_held(b->p.journal)) {
        snprintf(cause, sizeof(cause), "the journal's space reserve of %llu bytes could not be made",
                 (unsigned long long)size);
        journal_full(b, cause);
    }
}

void broker_unrecorded_clear(struct broker_unrecorded *u)
{
    berth_job_record_clear(&u->rec);
    free(u->result);
    json_decref(u->audit);
    memset(u, 0, sizeof(*u));
}

void broker_storage_free(struct berth_broker *b)
{
    size_t i;

    for (i = 0; i < b->storage.n_unrecorded; i++)
        broker_unrecorded_clear(&b->storage.unrecorded[i]);
    free(b->storage.unrecorded);
    b->storage.unrecorded = NULL;
    b->storage.n_unrecorded = b->storage.cap_unrecorded = 0;
}

bool broker_storage_degraded(const struct berth_broker *b)
{
    return degraded(&b->storage);
}

bool broker_storage_journal_full(struct berth_broker *b)
{
    bool full;

    pthread_mutex_lock(&b->lock);
    full = b->storage.journal_full;
    pthread_mutex_unlock(&b->lock);
    return full;
}

void broker_storage_failed(struct berth_broker *b, const struct berth_error *err)
{
    b->storage.space_failures++;
    journal_full(b, err && err->message[0] ? err->message : "a journal write failed for lack of space");
}

int broker_journal_write(struct berth_broker *b, bool priority,
                         int (*fn)(struct berth_journal *j, void *userdata, struct berth_error *reterr), void *userdata,
                         const char *what, struct berth_error *reterr)
{
    bool held;
    char cause[256];
    int r;

    if (!priority && b->storage.journal_full)
        return berth_error_set(reterr, -ENOSPC, "%s: held back while the state filesystem is full", what);
    held = priority && berth_journal_reserve_held(b->p.journal);
    r = berth_journal_transact(b->p.journal, priority ? BERTH_JOURNAL_USE_RESERVE : 0, fn, userdata, reterr);
    if (held && !berth_journal_reserve_held(b->p.journal)) {
        /* The first try failed for space; the reserve made room for the second. */
        b->storage.space_failures++;
        snprintf(cause, sizeof(cause), "the journal's filesystem is full (its space reserve was released for %s)",
                 what);
        journal_full(b, cause);
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "the journal's space reserve was released for %s: %s", what,
                   r == 0 ? "recorded" : reterr->message);
    }
    if (berth_space_error(r))
        broker_storage_failed(b, reterr);
    return r;
}

/* Whole seconds until the next try of what keeps storage degraded, at least 1. */
static long long retry_seconds(const struct broker_storage *s)
{
    int64_t wait = berth_backoff_wait_ns(s->journal_full ? &s->check : &s->stage, broker_mono_now());

    return wait <= BERTH_NS_PER_SEC ? 1 : (long long)((wait + BERTH_NS_PER_SEC - 1) / BERTH_NS_PER_SEC);
}

void broker_storage_refuse(struct berth_broker *b, struct berth_reply *reply)
{
    long long secs = retry_seconds(&b->storage);

    broker_fail(reply, 503, "storage_full",
                "berthd's state filesystem is full: nothing new can be recorded now (reads and cancellations "
                "still work); retry in %lld s",
                secs);
    reply->retry_after_s = (unsigned)secs;
}

void broker_journal_failed(struct berth_broker *b, int r, const struct berth_error *err, struct berth_reply *reply,
                           const char *message)
{
    if (berth_space_error(r)) {
        if (!b->storage.journal_full) /* broker_journal_write() counted it already otherwise */
            broker_storage_failed(b, err);
        broker_storage_refuse(b, reply);
    } else {
        broker_fail(reply, 503, "journal", "%s", message);
    }
}

bool broker_storage_check(struct berth_broker *b)
{
    struct broker_storage *s = &b->storage;
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t now = broker_mono_now(), wall = 0;
    bool usable;

    pthread_mutex_lock(&b->lock);
    if (s->journal_full && berth_backoff_due(&s->check, now)) {
        if (berth_journal_check_space(b->p.journal, &err) == 0) {
            if (s->since_ns <= 0 || berth_now_ns(CLOCK_REALTIME, &wall, NULL) < 0 || wall < s->since_ns)
                wall = s->since_ns;
            berth_logf(b->p.logger, BERTH_LOG_NOTICE,
                       "storage space is back after %lld s: the journal's space reserve is whole; %zu result%s "
                       "kept in memory will be recorded now",
                       (long long)((wall - s->since_ns) / BERTH_NS_PER_SEC), s->n_unrecorded,
                       s->n_unrecorded == 1 ? "" : "s");
            s->journal_full = false;
            note_since(s);
            (void)berth_backoff_succeeded(&s->check);
        } else {
            /* Still full (or the check itself failed): no line per try. */
            (void)berth_backoff_failed(&s->check, now);
        }
    }
    usable = !s->journal_full;
    pthread_mutex_unlock(&b->lock);
    return usable;
}

bool broker_stage_due(struct berth_broker *b)
{
    bool due;

    pthread_mutex_lock(&b->lock);
    due = berth_backoff_due(&b->storage.stage, broker_mono_now());
    pthread_mutex_unlock(&b->lock);
    return due;
}

void broker_stage_failed(struct berth_broker *b, const struct berth_job_record *rec, const char *what, int r,
                         const struct berth_error *err)
{
    struct broker_storage *s = &b->storage;

    pthread_mutex_lock(&b->lock);
    if (berth_space_error(r)) {
        s->space_failures++;
        s->stage_full = true;
        note_since(s);
    }
    if (berth_backoff_failed(&s->stage, broker_mono_now()))
        berth_logf(b->p.logger, BERTH_LOG_WARNING,
                   "job %s run %s: staging %s failed, will retry with backoff (up to %lld s)%s: %s", rec->job_id,
                   rec->run_id, what, (long long)(s->stage.max_ns / BERTH_NS_PER_SEC),
                   berth_space_error(r) ? "; storage degraded, new jobs are refused until a staging works" : "",
                   err->message);
    pthread_mutex_unlock(&b->lock);
}

void broker_stage_succeeded(struct berth_broker *b, const struct berth_job_record *rec)
{
    struct broker_storage *s = &b->storage;

    pthread_mutex_lock(&b->lock);
    s->stage_full = false;
    note_since(s);
    if (berth_backoff_succeeded(&s->stage))
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s: staging works again", rec->job_id, rec->run_id);
    pthread_mutex_unlock(&b->lock);
}

void broker_stage_idle(struct berth_broker *b)
{
    struct broker_storage *s = &b->storage;

    pthread_mutex_lock(&b->lock);
    s->stage_full = false;
    note_since(s);
    if (berth_backoff_succeeded(&s->stage))
        berth_logf(b->p.logger, BERTH_LOG_INFO, "staging: no job waits for it any more; the next one starts afresh");
    pthread_mutex_unlock(&b->lock);
}

int broker_unrecorded_keep(struct berth_broker *b, const struct berth_job_record *rec, enum berth_job_state to,
                           const char *result, const json_t *audit, bool reached)
{
    struct broker_storage *s = &b->storage;
    struct broker_unrecorded u = {.to = to, .reached = reached};

    if (berth_job_record_copy(&u.rec, rec) < 0 || !(u.result = strdup(result)) ||
        (audit && !(u.audit = json_deep_copy(audit)))) {
        broker_unrecorded_clear(&u);
        return -ENOMEM;
    }
    pthread_mutex_lock(&b->lock);
    if (s->n_unrecorded == s->cap_unrecorded) {
        size_t cap = s->cap_unrecorded ? s->cap_unrecorded * 2 : 8;
        struct broker_unrecorded *v = reallocarray(s->unrecorded, cap, sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&b->lock);
            broker_unrecorded_clear(&u);
            return -ENOMEM;
        }
        s->unrecorded = v;
        s->cap_unrecorded = cap;
    }
    s->unrecorded[s->n_unrecorded++] = u;
    pthread_mutex_unlock(&b->lock);
    return 0;
}

bool broker_unrecorded_has(const struct berth_broker *b, const char *run_id)
{
    size_t i;

    for (i = 0; i < b->storage.n_unrecorded; i++)
        if (streq(b->storage.unrecorded[i].rec.run_id, run_id))
            return true;
    return false;
}

bool broker_unrecorded_take(struct berth_broker *b, struct broker_unrecorded *ret)
{
    struct broker_storage *s = &b->storage;

    if (s->n_unrecorded == 0)
        return false;
    *ret = s->unrecorded[0];
    memmove(s->unrecorded, s->unrecorded + 1, (s->n_unrecorded - 1) * sizeof(*s->unrecorded));
    s->n_unrecorded--;
    return true;
}

int berth_broker_health(struct berth_broker *b, struct berth_broker_health *ret)
{
    const struct broker_storage *s;

    if (!b || !ret)
        return -EINVAL;
    s = &b->storage;
    memset(ret, 0, sizeof(*ret));
    pthread_mutex_lock(&b->lock);
    ret->degraded = degraded(s);
    ret->since_ns = s->since_ns;
    ret->space_failures = s->space_failures;
    ret->unrecorded = s->n_unrecorded;
    ret->reserve_bytes = berth_journal_reserve_size(b->p.journal);
    ret->reserve_held = berth_journal_reserve_held(b->p.journal);
    ret->starting = !atomic_load(&b->sweep.admitting);
    ret->reconcile_passes = atomic_load(&b->events.passes);
    ret->job_events = atomic_load(&b->events.received);
    ret->job_events_lost = atomic_load(&b->events.lost);
    broker_warm_health(b, ret);
    if (ret->degraded) {
        ret->reason = "storage_full";
        ret->retry_in_ns = berth_backoff_wait_ns(s->journal_full ? &s->check : &s->stage, broker_mono_now());
        snprintf(ret->message, sizeof(ret->message),
                 "the state filesystem is full%s: reads and cancellations are served, new jobs are refused; %llu "
                 "finished job%s result%s wait%s in memory",
                 s->journal_full ? "" : " for staging images", (unsigned long long)ret->unrecorded,
                 ret->unrecorded == 1 ? "'s" : "s'", ret->unrecorded == 1 ? "" : "s", ret->unrecorded == 1 ? "s" : "");
    }
    pthread_mutex_unlock(&b->lock);
    return 0;
}
