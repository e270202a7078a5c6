/* SPDX-License-Identifier: MIT */
/* worker.c -- the backend thread; see worker.h. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "worker.h"

/* Add what one pass did to the startup totals and open for business once admission opened. */
static void note_startup(struct berthd_worker *w, const struct berth_pass_stats *st)
{
    w->recovered.finished += st->finished;
    w->recovered.cancelled += st->cancelled;
    w->recovered.expired += st->expired;
    w->recovered.failed += st->failed;
    w->recovered.visited += st->visited;
    w->recovered.swept += st->swept;
    if (berth_broker_admitting(w->broker)) {
        w->ready = true;
        if (w->on_ready)
            w->on_ready(w->userdata, &w->recovered);
    }
}

static void *worker_main(void *userdata)
{
    struct berthd_worker *w = userdata;
    bool again = false;      /* the last turn changed something: dispatch looks again at once */
    bool round_on = true;    /* a reconcile round goes on (a full page, or the startup round) */
    int64_t next_pass = 0;   /* CLOCK_MONOTONIC: the next reconcile pass is due */

    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;
        struct berth_pass_stats st = {0};
        bool pass;
        int64_t now = 0;
        int r;

        pthread_mutex_lock(&w->lock);
        if (!w->woken && !w->stop && !again && !round_on && !berth_broker_events_pending(w->broker)) {
            /* The condition variable waits on CLOCK_MONOTONIC (berthd_worker_start). */
            struct timespec until = berth_timespec_of_ns(next_pass);
            while (!w->woken && !w->stop)
                if (pthread_cond_timedwait(&w->cond, &w->lock, &until) == ETIMEDOUT)
                    break;
        }
        w->woken = false;
        if (w->stop) {
            pthread_mutex_unlock(&w->lock);
            break;
        }
        pthread_mutex_unlock(&w->lock);

        /* Notified jobs first: a finished job's result is recorded now, not at the next pass. */
        r = berth_broker_handle_events(w->broker, &st, &err);
        if (r > 0)
            round_on = true; /* notifications were lost: look at every job */
        (void)berth_now_ns(CLOCK_MONOTONIC, &now, NULL);
        pass = r >= 0 && (round_on || now >= next_pass);
        if (pass) {
            if ((r = berth_broker_refresh_backends(w->broker)) < 0)
                berth_logf(w->logger, BERTH_LOG_WARNING,
                           "backend capabilities were not refreshed, the last ones stand: %s", strerror(-r));
            r = berth_broker_reconcile(w->broker, &st, &err);
            next_pass = berth_deadline_ns(CLOCK_MONOTONIC, w->interval_ns);
            round_on = st.more;
        }
        if (r >= 0)
            r = berth_broker_dispatch(w->broker, &st, &err);
        if (r < 0) {
            /* Only -EIO and -EBADMSG get here: a full filesystem degrades (broker.h), it never stops berthd. */
            berth_logf(w->logger, BERTH_LOG_ERR, "the journal cannot be trusted (%s), so berthd stops: %s",
                       r == -EBADMSG ? "corrupt" : "an I/O error", err.message);
            w->failure = r;
            if (w->on_failure)
                w->on_failure(w->userdata);
            break;
        }
        if (!w->ready && pass)
            note_startup(w, &st);
        /* Something moved: a pool may have room now, or a start may be retried. */
        again = st.started || st.finished || st.cancelled || st.expired || st.failed || st.swept;
        if (again || st.more)
            berth_logf(w->logger, BERTH_LOG_DEBUG,
                       "pass: %u started, %u exited, %u cancelled, %u expired, %u failed, %u backend errors",
                       st.started, st.finished, st.cancelled, st.expired, st.failed, st.errors);
    }
    return NULL;
}

int berthd_worker_start(struct berthd_worker *w)
{
    pthread_condattr_t attr;
    int r;

    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &attr);
    pthread_condattr_destroy(&attr);
    w->woken = w->stop = w->ready = false;
    memset(&w->recovered, 0, sizeof(w->recovered));
    r = pthread_create(&w->thread, NULL, worker_main, w);
    if (r != 0) {
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        return -r;
    }
    w->running = true;
    return 0;
}

void berthd_worker_wake(void *userdata)
{
    struct berthd_worker *w = userdata;

    if (!w || !w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->woken = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

void berthd_worker_stop(struct berthd_worker *w)
{
    if (!w->running)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    w->running = false;
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
}
