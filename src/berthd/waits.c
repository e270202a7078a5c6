/* SPDX-License-Identifier: MIT */
/* waits.c -- parked long-poll requests; see waits.h. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "macro.h"
#include "waits.h"

struct berthd_wait {
    struct berthd_waits *ws;
    struct event *ev;
    berthd_wait_fn *fn;
    void *arg;
    char *principal, *job_id;
    struct berthd_wait *prev, *next;
};

struct berthd_waits {
    pthread_mutex_t lock; /* the list; event_active() is called under it, so a wait is never freed under a wake */
    struct berthd_wait *head;
    size_t n, max_total, max_per_principal;
};

int berthd_waits_new(size_t max_total, size_t max_per_principal, struct berthd_waits **ret)
{
    struct berthd_waits *ws = calloc(1, sizeof(*ws));

    if (!ws)
        return -ENOMEM;
    pthread_mutex_init(&ws->lock, NULL);
    ws->max_total = max_total ? max_total : BERTHD_WAITS_MAX_TOTAL;
    ws->max_per_principal = max_per_principal ? max_per_principal : BERTHD_WAITS_MAX_PER_PRINCIPAL;
    *ret = ws;
    return 0;
}

void berthd_waits_free(struct berthd_waits *ws)
{
    if (!ws)
        return;
    pthread_mutex_destroy(&ws->lock);
    free(ws);
}

static void wait_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_wait *w = arg;

    (void)fd;
    w->fn(w, (what & EV_READ) != 0, w->arg);
}

static void wait_free(struct berthd_wait *w)
{
    if (w->ev)
        event_free(w->ev);
    free(w->principal);
    free(w->job_id);
    free(w);
}

int berthd_waits_add(struct berthd_waits *ws, struct event_base *base, const char *principal, const char *job_id,
                     int64_t timeout_ns, berthd_wait_fn *fn, void *arg, struct berthd_wait **ret)
{
    struct berthd_wait *w, *o;
    struct timeval tv;
    size_t mine = 0;
    int r = 0;

    if (!ws || !base || !principal || !job_id || timeout_ns <= 0 || !fn || !ret)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->ws = ws;
    w->fn = fn;
    w->arg = arg;
    w->principal = strdup(principal);
    w->job_id = strdup(job_id);
    w->ev = event_new(base, -1, 0, wait_cb, w);
    if (!w->principal || !w->job_id || !w->ev) {
        wait_free(w);
        return -ENOMEM;
    }
    tv = berth_timeval_of_ns(timeout_ns);
    pthread_mutex_lock(&ws->lock);
    for (o = ws->head; o; o = o->next)
        mine += streq(o->principal, principal);
    if (ws->n >= ws->max_total)
        r = -EAGAIN;
    else if (mine >= ws->max_per_principal)
        r = -EUSERS;
    else if (event_add(w->ev, &tv) < 0)
        r = -ENOMEM;
    if (r == 0) {
        w->next = ws->head;
        if (ws->head)
            ws->head->prev = w;
        ws->head = w;
        ws->n++;
    }
    pthread_mutex_unlock(&ws->lock);
    if (r < 0) {
        wait_free(w);
        return r;
    }
    *ret = w;
    return 0;
}

int berthd_wait_rearm(struct berthd_wait *w, int64_t timeout_ns)
{
    struct timeval tv = berth_timeval_of_ns(timeout_ns > 0 ? timeout_ns : 1);

    return event_add(w->ev, &tv) < 0 ? -ENOMEM : 0;
}

void berthd_waits_remove(struct berthd_waits *ws, struct berthd_wait *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&ws->lock);
    if (w->prev)
        w->prev->next = w->next;
    else
        ws->head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    ws->n--;
    pthread_mutex_unlock(&ws->lock);
    wait_free(w); /* event_free() also drops an activation queued by a wake */
}

void berthd_waits_wake(struct berthd_waits *ws, const char *principal, const char *job_id)
{
    struct berthd_wait *w;

    if (!ws || !principal || !job_id)
        return;
    pthread_mutex_lock(&ws->lock);
    for (w = ws->head; w; w = w->next)
        if (streq(w->job_id, job_id) && streq(w->principal, principal))
            event_active(w->ev, EV_READ, 0);
    pthread_mutex_unlock(&ws->lock);
}

void berthd_waits_wake_all(struct berthd_waits *ws)
{
    struct berthd_wait *w;

    if (!ws)
        return;
    pthread_mutex_lock(&ws->lock);
    for (w = ws->head; w; w = w->next)
        event_active(w->ev, EV_READ, 0);
    pthread_mutex_unlock(&ws->lock);
}

size_t berthd_waits_count(struct berthd_waits *ws)
{
    size_t n;

    if (!ws)
        return 0;
    pthread_mutex_lock(&ws->lock);
    n = ws->n;
    pthread_mutex_unlock(&ws->lock);
    return n;
}
