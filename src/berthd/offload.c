/* SPDX-License-Identifier: MIT */
/* offload.c -- a helper thread for the event loop; see offload.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "offload.h"

struct berthd_offload {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool stop;
    struct berthd_offload_task *queue, **queue_tail; /* to run, in order */
    struct berthd_offload_task *finished;            /* ran, waiting for done() (any order) */
    struct event *ev;
};

static void *worker(void *arg)
{
    struct berthd_offload *o = arg;
    struct berthd_offload_task *t;

    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->stop && !o->queue)
            pthread_cond_wait(&o->cond, &o->lock);
        if (o->stop)
            break;
        t = o->queue;
        o->queue = t->next;
        if (!o->queue)
            o->queue_tail = &o->queue;
        pthread_mutex_unlock(&o->lock);
        t->run(t);
        t->ran = true;
        pthread_mutex_lock(&o->lock);
        t->next = o->finished;
        o->finished = t;
        event_active(o->ev, EV_TIMEOUT, 0);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

/* The loop: done() of what finished. */
static void finished_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_offload *o = arg;
    struct berthd_offload_task *t, *next;

    (void)fd, (void)what;
    pthread_mutex_lock(&o->lock);
    t = o->finished;
    o->finished = NULL;
    pthread_mutex_unlock(&o->lock);
    for (; t; t = next) {
        next = t->next;
        t->done(t);
    }
}

int berthd_offload_new(struct event_base *base, int priority, struct berthd_offload **ret)
{
    struct berthd_offload *o = calloc(1, sizeof(*o));
    int r;

    if (!o)
        return -ENOMEM;
    o->queue_tail = &o->queue;
    o->ev = event_new(base, -1, 0, finished_cb, o);
    if (!o->ev || event_priority_set(o->ev, priority) < 0) {
        if (o->ev)
            event_free(o->ev);
        free(o);
        return -ENOMEM;
    }
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->cond, NULL);
    r = pthread_create(&o->thread, NULL, worker, o);
    if (r != 0) {
        pthread_mutex_destroy(&o->lock);
        pthread_cond_destroy(&o->cond);
        event_free(o->ev);
        free(o);
        return -r;
    }
    *ret = o;
    return 0;
}

void berthd_offload_submit(struct berthd_offload *o, struct berthd_offload_task *t)
{
    t->ran = false;
    t->next = NULL;
    pthread_mutex_lock(&o->lock);
    *o->queue_tail = t;
    o->queue_tail = &t->next;
    pthread_cond_signal(&o->cond);
    pthread_mutex_unlock(&o->lock);
}

void berthd_offload_free(struct berthd_offload *o)
{
    struct berthd_offload_task *t, *next;

    if (!o)
        return;
    pthread_mutex_lock(&o->lock);
    o->stop = true;
    pthread_cond_signal(&o->cond);
    pthread_mutex_unlock(&o->lock);
    pthread_join(o->thread, NULL);
    finished_cb(-1, 0, o);
    for (t = o->queue; t; t = next) {
        next = t->next;
        t->done(t);
    }
    event_free(o->ev);
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->cond);
    free(o);
}
