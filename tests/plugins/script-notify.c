/* SPDX-License-Identifier: MIT */
/* script-notify.c -- the scripted runtime's notifier thread; see script-notify.h. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "script-notify.h"

#define DUE_MAX 1024

struct due {
    char run_id[129];
    int64_t at;
};

struct script_notify {
    const struct berth_host *host;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* CLOCK_REALTIME, the default */
    bool stop;
    struct due v[DUE_MAX];
    size_t n;
};

static int64_t realtime_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *notify_main(void *arg)
{
    struct script_notify *n = arg;

    pthread_mutex_lock(&n->lock);
    while (!n->stop) {
        int64_t now = realtime_ns(), next = INT64_MAX;
        size_t i = 0;

        while (i < n->n) {
            if (n->v[i].at <= now) {
                char id[sizeof(n->v[i].run_id)];
                snprintf(id, sizeof(id), "%s", n->v[i].run_id);
                n->v[i] = n->v[--n->n];
                /* The call never calls back into the plugin, so the lock may stay held. */
                n->host->job_changed(n->host, id);
                continue;
            }
            if (n->v[i].at < next)
                next = n->v[i].at;
            i++;
        }
        if (next == INT64_MAX) {
            pthread_cond_wait(&n->cond, &n->lock);
        } else {
            struct timespec until = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
            pthread_cond_timedwait(&n->cond, &n->lock, &until);
        }
    }
    pthread_mutex_unlock(&n->lock);
    return NULL;
}

int script_notify_start(const struct berth_host *host, struct script_notify **ret)
{
    struct script_notify *n;
    int r;

    *ret = NULL;
    if (!BERTH_HOST_HAS(host, job_changed) || !host->job_changed)
        return 0;
    n = calloc(1, sizeof(*n));
    if (!n)
        return -ENOMEM;
    n->host = host;
    pthread_mutex_init(&n->lock, NULL);
    pthread_cond_init(&n->cond, NULL);
    r = pthread_create(&n->thread, NULL, notify_main, n);
    if (r != 0) {
        pthread_cond_destroy(&n->cond);
        pthread_mutex_destroy(&n->lock);
        free(n);
        return -r;
    }
    *ret = n;
    return 0;
}

void script_notify_at(struct script_notify *n, const char *run_id, int64_t due_ns)
{
    size_t i;

    if (!n || !run_id || strlen(run_id) >= sizeof(n->v[0].run_id))
        return;
    pthread_mutex_lock(&n->lock);
    for (i = 0; i < n->n && strcmp(n->v[i].run_id, run_id) != 0; i++)
        ;
    if (i < DUE_MAX) {
        snprintf(n->v[i].run_id, sizeof(n->v[i].run_id), "%s", run_id);
        n->v[i].at = due_ns;
        if (i == n->n)
            n->n++;
        pthread_cond_signal(&n->cond);
    }
    pthread_mutex_unlock(&n->lock);
}

void script_notify_stop(struct script_notify *n)
{
    if (!n)
        return;
    pthread_mutex_lock(&n->lock);
    n->stop = true;
    pthread_cond_signal(&n->cond);
    pthread_mutex_unlock(&n->lock);
    pthread_join(n->thread, NULL);
    pthread_cond_destroy(&n->cond);
    pthread_mutex_destroy(&n->lock);
    free(n);
}
