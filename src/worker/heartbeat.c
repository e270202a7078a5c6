/* SPDX-License-Identifier: MIT */
/*
 * heartbeat.c -- the thread that keeps the worker's leases (docs/workers.md):
 * every third of the lease term, and at once when a run started, it sends
 * each claimed run's heartbeat (POST /v1/workers/leases).  berthd's answer
 * may ask for the run to stop ("cancel": a cancellation, a deadline); a 409
 * means the lease is no longer the worker's (fenced): the run is stopped
 * and reports nothing.  Transport failures are retried on the next round:
 * only berthd decides that a lease ran out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonobj.h"
#include "macro.h"
#include "session.h"
#include "worker.h"

/* What one heartbeat needs, copied out of the run under the lock. */
struct beat {
    struct worker_run *run;
    char run_id[BERTH_RUN_ID_LEN + 1];
    char claim_digest[BERTH_DIGEST_BUFSZ];
    bool running;
};

void worker_heartbeat_kick(struct worker *w)
{
    w->beat_now = true;
    pthread_cond_broadcast(&w->cond);
}

/* Whether run @run of @run_id (lock held) is still in the table. */
static bool held(struct worker *w, const struct worker_run *run, const char *run_id)
{
    for (int64_t i = 0; i < w->cfg.slots; i++)
        if (w->runs[i] == run && streq(run->run_id, run_id))
            return true;
    return false;
}

/* One heartbeat, and what berthd said of it (the lock is taken for that). */
static void beat(struct worker *w, struct worker_session *s, const struct beat *b, bool *failing)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *body = NULL, *reply = NULL;
    long status = 0;
    int r;

    body = json_pack("{s:s, s:s, s:s}", "run_id", b->run_id, "claim_digest", b->claim_digest, "state",
                     b->running ? "running" : "starting");
    if (!body)
        return;
    r = worker_session_post(s, "/v1/workers/leases", body, 0, &status, &reply, &err);
    if (r < 0) {
        if (!*failing)
            berth_logf(&w->logger, BERTH_LOG_WARNING, "heartbeats go unanswered (trying on): %s", err.message);
        *failing = true;
        return;
    }
    if (*failing)
        berth_logf(&w->logger, BERTH_LOG_NOTICE, "heartbeats are answered again");
    *failing = false;
    pthread_mutex_lock(&w->lock);
    if (held(w, b->run, b->run_id)) {
        if (status == 200) {
            const json_t *ns = json_object_get(reply, "lease_ns");
            int64_t lease = 0;
            if (ns && berth_json_ns_value(ns, &lease) == 0 && lease > 0)
                atomic_store(&w->lease_ns, lease);
            if (b->running)
                b->run->announced = true;
            if (json_is_true(json_object_get(reply, "cancel")) && !b->run->cancel) {
                b->run->cancel = true;
                snprintf(b->run->cancel_reason, sizeof(b->run->cancel_reason), "%s",
                         json_string_value(json_object_get(reply, "reason")) ?: "cancelled");
                pthread_cond_broadcast(&w->cond);
            }
        } else if ((status == 409 && streq_ptr(json_string_value(json_object_get(reply, "error")), "fenced")) ||
                   status == 404) {
            /* Fenced, or a run berthd does not know (any more): not the worker's to run. */
            b->run->fenced = true;
            pthread_cond_broadcast(&w->cond);
        } else {
            berth_https_error(status, reply, &err);
            berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: heartbeat refused: %s", b->run_id, err.message);
        }
    }
    pthread_mutex_unlock(&w->lock);
}

static void *heartbeat_main(void *arg)
{
    struct worker *w = arg;
    struct berth_error err = BERTH_ERROR_INIT;
    struct worker_session s = {0};
    struct beat *beats = calloc((size_t)w->cfg.slots, sizeof(*beats));
    bool failing = false, open = false;
    int64_t last = 0, next = 0, retry = 0;

    if (!beats) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "the heartbeat thread is out of memory: leases will lapse");
        return NULL;
    }
    for (;;) {
        size_t n = 0, i;
        bool all;

        pthread_mutex_lock(&w->lock);
        for (;;) {
            /* A third of the lease after the last round, of the lease berthd
             * names now: its first answer may shorten the default. */
            next = retry ? retry : last ? last + atomic_load(&w->lease_ns) / 3 : 0;
            if (atomic_load(&w->quitting) || w->beat_now || worker_mono_now() >= next)
                break;
            /* Looked at again at least every second, so a shorter lease counts at once. */
            worker_wait_until(w, next < worker_mono_now() + 1000000000LL ? next : worker_mono_now() + 1000000000LL);
        }
        if (atomic_load(&w->quitting)) {
            pthread_mutex_unlock(&w->lock);
            break;
        }
        /* A round for every lease when one is due, else only for runs that just started. */
        all = worker_mono_now() >= next;
        w->beat_now = false;
        for (int64_t k = 0; k < w->cfg.slots; k++) {
            struct worker_run *run = w->runs[k];
            if (!run || !run->claimed || run->fenced || run->done || (!all && (!run->started || run->announced)))
                continue;
            beats[n] = (struct beat){.run = run, .running = run->started};
            snprintf(beats[n].run_id, sizeof(beats[n].run_id), "%s", run->run_id);
            snprintf(beats[n].claim_digest, sizeof(beats[n].claim_digest), "%s", run->claim_digest);
            n++;
        }
        pthread_mutex_unlock(&w->lock);
        if (all) {
            last = worker_mono_now();
            retry = 0; /* a failed round is tried again in a second */
        }
        if (n && !open) {
            if (worker_session_open(w->cfg.client, &s, &err) < 0) {
                berth_logf(&w->logger, BERTH_LOG_ERR, "heartbeats: %s", err.message);
                retry = worker_mono_now() + 1000000000LL;
                continue;
            }
            open = true;
        }
        for (i = 0; i < n; i++)
            beat(w, &s, &beats[i], &failing);
        /* Unanswered (berthd or the network away): the round again in a second. */
        if (failing)
            retry = worker_mono_now() + 1000000000LL;
    }
    if (open)
        worker_session_close(&s);
    free(beats);
    return NULL;
}

int worker_heartbeat_start(struct worker *w)
{
    int r = pthread_create(&w->heartbeat, NULL, heartbeat_main, w);

    if (r != 0)
        return -r;
    w->heartbeat_started = true;
    return 0;
}

void worker_heartbeat_stop(struct worker *w)
{
    if (!w->heartbeat_started)
        return;
    pthread_mutex_lock(&w->lock);
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->heartbeat, NULL);
    w->heartbeat_started = false;
}
