/* SPDX-License-Identifier: MIT */
/*
 * worker.h -- the thread that talks to backends (broker.h).  Each turn it
 * first reconciles the jobs plugins notified (berth_broker_handle_events():
 * a finished job's result is recorded at once); then, every interval,
 * refreshes backend capabilities and runs a reconcile pass (the safety net
 * that still visits every open job, and the only look at jobs of plugins
 * that never notify); then dispatches.  A submission's commit, a
 * cancellation and a notification wake it at once, so dispatch follows the
 * commit that accepted a job without waiting for the interval.  Besides
 * the broker's start threads (start_concurrency: they stage and start the
 * jobs dispatch claimed), it is the only thread that calls runtime plugins
 * (the containment scan, fence.h, calls containment instances through
 * their bindings).  Its
 * first passes are the startup reconcile: while a round of reconcile pages
 * goes on (a full page), the next pass runs at once, and on_ready is called when admission opens.
 */
#ifndef BERTHD_WORKER_H
#define BERTHD_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "broker.h"

struct berthd_worker {
    struct berth_broker *broker;
    const struct berth_logger *logger;
    int64_t interval_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool woken, stop, running;
    int failure; /* the journal cannot be trusted (-EIO, -EBADMSG): the worker stopped, the daemon must stop */
    void (*on_failure)(void *userdata);
    /* Called once, from the worker thread, when the startup reconcile has
     * completed and admission opened (berth_broker_admitting()), with what
     * the startup passes recorded. */
    void (*on_ready)(void *userdata, const struct berth_pass_stats *recovered);
    struct berth_pass_stats recovered; /* summed over the passes until then */
    bool ready;
    void *userdata;
};

/** berthd_worker_start() - start the thread.  Return: 0 or a negative errno. */
int berthd_worker_start(struct berthd_worker *w);

/** berthd_worker_wake() - run a pass now (any thread; the broker's wake hook). */
void berthd_worker_wake(void *userdata);

/** berthd_worker_stop() - finish the current pass and join the thread. */
void berthd_worker_stop(struct berthd_worker *w);

#endif
