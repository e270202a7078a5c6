/* SPDX-License-Identifier: MIT */
/*
 * broker-dispatch.c -- the dispatch pass (berth_broker_dispatch(), broker.h):
 * claims queued jobs page by page, oldest first, within each pool's
 * max_concurrency and the free start slots, and hands each claimed job to
 * a start (broker-starts.c).  Nothing in it grows with the queue: the
 * pools' sandboxes are counted on the journal's index of open jobs (the
 * jobs that run, not the queued ones), a pass reads at most
 * DISPATCH_PAGES_MAX pages and none at all while every start slot is busy,
 * and the broker lock is held for one page at a time.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "broker-internal.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"

/* Pages one pass reads at most; the next pass goes on where it stopped. */
#define DISPATCH_PAGES_MAX 4

/* Whether a pool's max_concurrency leaves room for one more sandbox; @in_use
 * counts, per pool, the jobs that hold or may hold one. */
static bool pool_has_room(const json_t *limits, json_t *in_use, const char *pool)
{
    json_int_t limit = json_integer_value(json_object_get(limits, pool));
    json_int_t used = json_integer_value(json_object_get(in_use, pool));

    return limit <= 0 || used < limit;
}

/* Count one more sandbox of @pool in @in_use.  -ENOMEM: the count did not
 * grow, so the caller must not start anything on it. */
static int pool_take(json_t *in_use, const char *pool)
{
    return json_object_set_new(in_use, pool, json_integer(json_integer_value(json_object_get(in_use, pool)) + 1)) < 0
               ? -ENOMEM
               : 0;
}

static int count_one(void *userdata, const char *pool, int64_t count)
{
    return json_object_set_new(userdata, pool, json_integer(count)) < 0 ? -ENOMEM : 0;
}

/* Each limited pool's max_concurrency into @limits and its sandboxes into
 * @in_use.  0; -ENOMEM (then nothing may start); journal errors. */
static int count_pools(struct berth_broker *b, json_t *limits, json_t *in_use, struct berth_error *reterr)
{
    const struct berth_pool_chain *chain;
    size_t i;
    int r = 0;

    pthread_mutex_lock(&b->lock);
    chain = berth_registry_chain(b->reg);
    for (i = 0; r == 0 && i < berth_pool_chain_count(chain); i++) {
        const struct berth_pool *p = berth_pool_chain_at(chain, i);
        if (p->max_concurrency > 0 && json_object_set_new(limits, p->name, json_integer(p->max_concurrency)) < 0)
            r = -ENOMEM;
    }
    if (r == 0)
        r = berth_jobstore_count_active(b->p.journal, count_one, in_use, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int take_queued_page(struct berth_broker *b, struct broker_snapshot *s, size_t *ret_n,
                            struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_page_queued(b->p.journal, &b->starts.cursor, BERTH_JOBSTORE_PAGE_MAX, broker_snap_one, s,
                                   ret_n, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == -ENOMEM)
        berth_error_set(reterr, r, "out of memory");
    return r;
}

/* Whether dispatch leaves @rec alone now: its result waits for space, or its start is under way. */
static bool leave_alone(struct berth_broker *b, const struct berth_job_record *rec)
{
    bool has;

    pthread_mutex_lock(&b->lock);
    has = broker_unrecorded_has(b, rec->run_id);
    pthread_mutex_unlock(&b->lock);
    return has || broker_starts_busy(b, rec->run_id);
}

int berth_broker_dispatch(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    _cleanup_json_ json_t *limits = json_object(), *in_use = json_object();
    bool counted = true, staging = false, end = false, claimed = false;
    size_t room, pages, n = 0, i, waiting = 0;
    int64_t now;
    int r;

    if (!b)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!limits || !in_use)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = broker_starts_collect(b, stats, reterr)) < 0)
        return r;
    /* A full journal starts nothing: no claim can be recorded, and a job
     * claimed before waits, so that nothing runs that the journal could
     * not follow (and start() is not retried on every pass meanwhile). */
    if (broker_storage_journal_full(b))
        return 0;
    /* Nothing starts before the startup reconcile has checked every open job. */
    if (!berth_broker_admitting(b))
        return 0;
    /* Every start slot busy: nothing to read (a start that returns wakes the worker). */
    room = broker_starts_room(b);
    if (room == 0)
        return 0;
    /* Without the whole of limits and in_use a pool's max_concurrency could
     * be passed: the pass then starts nothing (the next pass tries again). */
    r = count_pools(b, limits, in_use, reterr);
    if (r == -ENOMEM) {
        counted = false;
        r = 0;
    }
    if (r == 0)
        r = berth_now_ns(CLOCK_REALTIME, &now, reterr);
    for (pages = 0; r == 0 && counted && room > 0 && pages < DISPATCH_PAGES_MAX && !atomic_load(&b->stopping);
         pages++) {
        struct broker_snapshot s = {0};

        r = take_queued_page(b, &s, &n, reterr);
        end = r == 0 && n < BERTH_JOBSTORE_PAGE_MAX;
        for (i = 0; r == 0 && counted && room > 0 && i < s.n && !atomic_load(&b->stopping); i++) {
            struct berth_error err = BERTH_ERROR_INIT;
            struct berth_job_record *rec = &s.v[i];
            int rr;

            if (leave_alone(b, rec))
                continue;
            if (rec->state == BERTH_JOB_ACCEPTED) {
                if (!pool_has_room(limits, in_use, rec->pool)) {
                    waiting++;
                    continue; /* waits for a slot in its pool; its deadline still runs */
                }
                if (pool_take(in_use, rec->pool) < 0) {
                    counted = false;
                    break;
                }
            }
            rr = broker_dispatch_claim(b, rec, now, stats, &staging, &err);
            if (rr != 1 && rec->state == BERTH_JOB_ACCEPTED)
                waiting++;
            if (rr == 1) {
                claimed = true;
                rr = broker_starts_hand(b, rec, stats, &err);
                if (rr == 0 && room != SIZE_MAX)
                    room--;
            }
            if (rr == -EIO || rr == -EBADMSG)
                r = berth_error_set(reterr, rr, "%s", err.message);
            else if (rr < 0 && stats)
                stats->errors++;
        }
        broker_snapshot_clear(&s);
        if (end)
            break;
    }
    /* The next pass starts again from the oldest job, unless this one
     * stopped at its page bound with start slots to spare: then it goes on
     * behind the jobs this one looked at (a full pool's queue must not hide
     * the jobs of other pools behind it). */
    if (end || room == 0 || r < 0 || !counted)
        memset(&b->starts.cursor, 0, sizeof(b->starts.cursor));
    else if (claimed && stats)
        stats->more = true;
    /* A whole pass with nobody waiting for staging: its backoff starts afresh. */
    if (r == 0 && counted && end && !staging && !atomic_load(&b->stopping))
        broker_stage_idle(b);
    if (!counted) {
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "out of memory counting pool sandboxes: this pass starts nothing");
        if (stats)
            stats->errors++;
    }
    /* Warm slots are refilled only behind the queue: a job that waits, or
     * a page bound that left jobs unread, comes first. */
    if (r == 0 && counted)
        broker_warm_pass(b, waiting + (end ? 0 : 1) + (room == 0 ? 1 : 0), limits, in_use);
    return r;
}
