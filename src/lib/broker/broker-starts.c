/* SPDX-License-Identifier: MIT */
/*
 * broker-starts.c -- starts under way at once: the dispatch pass claims a
 * job (durably, on its own thread) and hands it here; one of
 * p.start_concurrency threads stages it and calls the backend's start.  A
 * job is "busy" from the hand-over until its start returned: reconcile and
 * dispatch leave a busy job alone, so nothing stops, inspects or starts it
 * again while its start runs.  See broker-internal.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "macro.h"

static void busy_drop(struct broker_starts *s, const char *run_id)
{
    size_t i;

    for (i = 0; i < s->n_busy; i++)
        if (streq(s->busy[i], run_id)) {
            memmove(&s->busy[i], &s->busy[i + 1], (s->n_busy - i - 1) * sizeof(s->busy[0]));
            s->n_busy--;
            return;
        }
}

static void stats_add(struct berth_pass_stats *to, const struct berth_pass_stats *from)
{
    to->started += from->started;
    to->finished += from->finished;
    to->cancelled += from->cancelled;
    to->expired += from->expired;
    to->failed += from->failed;
    to->errors += from->errors;
    to->swept += from->swept;
}

static void *start_main(void *userdata)
{
    struct berth_broker *b = userdata;
    struct broker_starts *s = &b->starts;

    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;
        struct berth_pass_stats st = {0};
        struct berth_job_record rec;
        int r;

        pthread_mutex_lock(&s->lock);
        while (!s->stop && s->n_queue == 0)
            pthread_cond_wait(&s->cond, &s->lock);
        if (s->stop) {
            pthread_mutex_unlock(&s->lock);
            break;
        }
        rec = s->queue[0];
        memmove(&s->queue[0], &s->queue[1], (s->n_queue - 1) * sizeof(s->queue[0]));
        s->n_queue--;
        pthread_mutex_unlock(&s->lock);

        r = broker_dispatch_start(b, &rec, &st, &err);

        pthread_mutex_lock(&s->lock);
        busy_drop(s, rec.run_id);
        stats_add(&s->done, &st);
        if ((r == -EIO || r == -EBADMSG) && !s->failure) {
            s->failure = r;
            snprintf(s->failure_message, sizeof(s->failure_message), "%s", err.message);
        } else if (r < 0) {
            s->done.errors++;
        }
        pthread_mutex_unlock(&s->lock);
        /* The job may have ended while it was busy, and its notification
         * was skipped then: look at it again on the worker's next turn. */
        if (r == 0)
            broker_events_recheck(b, rec.backend, rec.run_id);
        berth_job_record_clear(&rec);
        /* A slot is free and the job's state changed: the next pass at once. */
        if (b->p.wake)
            b->p.wake(b->p.userdata);
    }
    return NULL;
}

int broker_starts_init(struct berth_broker *b)
{
    struct broker_starts *s = &b->starts;
    size_t n = b->p.start_concurrency;
    int r;

    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    pthread_mutex_init(&s->stage_lock, NULL);
    s->initialized = true;
    if (n == 0)
        return 0;
    s->threads = calloc(n, sizeof(*s->threads));
    s->queue = calloc(n, sizeof(*s->queue));
    s->busy = calloc(n, sizeof(*s->busy));
    if (!s->threads || !s->queue || !s->busy)
        return -ENOMEM;
    for (; s->n_threads < n; s->n_threads++) {
        r = pthread_create(&s->threads[s->n_threads], NULL, start_main, b);
        if (r != 0)
            return -r;
    }
    return 0;
}

void broker_starts_free(struct berth_broker *b)
{
    struct broker_starts *s = &b->starts;
    size_t i;

    if (!s->initialized)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    for (i = 0; i < s->n_threads; i++)
        pthread_join(s->threads[i], NULL);
    for (i = 0; i < s->n_queue; i++)
        berth_job_record_clear(&s->queue[i]);
    free(s->threads);
    free(s->queue);
    free(s->busy);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->stage_lock);
    memset(s, 0, sizeof(*s));
}

size_t broker_starts_room(struct berth_broker *b)
{
    struct broker_starts *s = &b->starts;
    size_t room;

    if (b->p.start_concurrency == 0)
        return SIZE_MAX;
    pthread_mutex_lock(&s->lock);
    room = s->n_threads - s->n_busy;
    pthread_mutex_unlock(&s->lock);
    return room;
}

bool broker_starts_busy(struct berth_broker *b, const char *run_id)
{
    struct broker_starts *s = &b->starts;
    bool busy = false;
    size_t i;

    if (b->p.start_concurrency == 0)
        return false;
    pthread_mutex_lock(&s->lock);
    for (i = 0; !busy && i < s->n_busy; i++)
        busy = streq(s->busy[i], run_id);
    pthread_mutex_unlock(&s->lock);
    return busy;
}

int broker_starts_hand(struct berth_broker *b, struct berth_job_record *rec, struct berth_pass_stats *stats,
                       struct berth_error *reterr)
{
    struct broker_starts *s = &b->starts;
    int r = 0;

    if (b->p.start_concurrency == 0)
        return broker_dispatch_start(b, rec, stats, reterr);
    pthread_mutex_lock(&s->lock);
    if (s->n_busy == s->n_threads) {
        r = berth_error_set(reterr, -EAGAIN, "every start thread is busy");
    } else if (berth_job_record_copy(&s->queue[s->n_queue], rec) < 0) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    } else {
        snprintf(s->busy[s->n_busy++], sizeof(s->busy[0]), "%s", rec->run_id);
        s->n_queue++;
        pthread_cond_signal(&s->cond);
    }
    pthread_mutex_unlock(&s->lock);
    return r;
}

int broker_starts_collect(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    struct broker_starts *s = &b->starts;
    int r;

    pthread_mutex_lock(&s->lock);
    if (stats)
        stats_add(stats, &s->done);
    memset(&s->done, 0, sizeof(s->done));
    r = s->failure;
    if (r < 0)
        berth_error_set(reterr, r, "%s", s->failure_message);
    pthread_mutex_unlock(&s->lock);
    return r;
}

void broker_starts_stage_lock(struct berth_broker *b)
{
    pthread_mutex_lock(&b->starts.stage_lock);
}

void broker_starts_stage_unlock(struct berth_broker *b)
{
    pthread_mutex_unlock(&b->starts.stage_lock);
}
