/* SPDX-License-Identifier: MIT */
/* watch.c -- runtime-oci's job-exit notifications; see watch.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "job.h"
#include "jobdir.h"
#include "macro.h"
#include "watch.h"

#define WATCH_MAX 65536 /* jobs watched at once, at most; more are polled */

struct watched {
    int wd;
    char run_id[BERTH_JOB_ID_MAX + 1];
};

struct oci_watch {
    const struct berth_host *host;
    int ifd, stopfd;
    pthread_t thread;
    pthread_mutex_t lock; /* @v, @n, @cap and the watches of @ifd */
    struct watched *v;
    size_t n, cap;
};

/* The entry of @wd (lock held), or NULL. */
static struct watched *find(struct oci_watch *w, int wd)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->v[i].wd == wd)
            return &w->v[i];
    return NULL;
}

static void drop(struct oci_watch *w, struct watched *e)
{
    *e = w->v[--w->n];
}

/* Read what inotify has and notify the jobs whose result appeared. */
static void drain(struct oci_watch *w)
{
    char buf[16 * (sizeof(struct inotify_event) + NAME_MAX + 1)] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t len;

    while ((len = read(w->ifd, buf, sizeof(buf))) > 0) {
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            struct watched *e;

            p += sizeof(*ev) + ev->len;
            pthread_mutex_lock(&w->lock);
            e = find(w, ev->wd);
            if (e && (ev->mask & IN_IGNORED)) {
                drop(w, e); /* the directory went (forget) or the watch was removed */
            } else if (e && ev->len && streq(ev->name, OCI_JOB_RESULT)) {
                /* job_changed never calls back into the plugin: the lock may stay held. */
                w->host->job_changed(w->host, e->run_id);
                (void)inotify_rm_watch(w->ifd, e->wd); /* its IN_IGNORED drops the entry */
            }
            pthread_mutex_unlock(&w->lock);
        }
    }
}

static void *watch_main(void *arg)
{
    struct oci_watch *w = arg;

    for (;;) {
        struct pollfd p[2] = {{.fd = w->ifd, .events = POLLIN}, {.fd = w->stopfd, .events = POLLIN}};

        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[1].revents)
            break;
        if (p[0].revents & POLLIN)
            drain(w);
        else if (p[0].revents)
            break; /* POLLERR on an inotify descriptor: nothing more will come; berthd polls */
    }
    return NULL;
}

int oci_watch_start(const struct berth_host *host, struct oci_watch **ret, struct berth_error *reterr)
{
    struct oci_watch *w;
    int r;

    *ret = NULL;
    if (!BERTH_HOST_HAS(host, job_changed) || !host->job_changed)
        return 0;
    w = calloc(1, sizeof(*w));
    if (!w)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    w->host = host;
    w->stopfd = -1;
    w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->ifd < 0 || (w->stopfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        r = berth_error_set(reterr, -errno, "cannot watch job directories: %m");
        goto fail;
    }
    pthread_mutex_init(&w->lock, NULL);
    r = pthread_create(&w->thread, NULL, watch_main, w);
    if (r != 0) {
        pthread_mutex_destroy(&w->lock);
        r = berth_error_set(reterr, -r, "cannot start the job watcher: %s", strerror(r));
        goto fail;
    }
    *ret = w;
    return 0;
fail:
    if (w->ifd >= 0)
        close(w->ifd);
    if (w->stopfd >= 0)
        close(w->stopfd);
    free(w);
    return r;
}

void oci_watch_job(struct oci_watch *w, int jobfd, const char *run_id)
{
    char path[64];
    int wd;

    if (!w || jobfd < 0 || !run_id || strlen(run_id) > BERTH_JOB_ID_MAX)
        return;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", jobfd);
    pthread_mutex_lock(&w->lock);
    wd = inotify_add_watch(w->ifd, path, IN_MOVED_TO | IN_CREATE | IN_ONLYDIR);
    /* One watch per directory (inode): a warm slot's, armed under its slot
     * id, becomes its job's when claim() renames it and arms it again. */
    struct watched *known = wd >= 0 ? find(w, wd) : NULL;
    if (known)
        snprintf(known->run_id, sizeof(known->run_id), "%s", run_id);
    if (wd >= 0 && !known) {
        if (w->n == w->cap && w->cap < WATCH_MAX) {
            size_t cap = w->cap ? w->cap * 2 : 16;
            struct watched *v = reallocarray(w->v, cap, sizeof(*v));
            if (v) {
                w->v = v;
                w->cap = cap;
            }
        }
        if (w->n < w->cap) {
            w->v[w->n].wd = wd;
            snprintf(w->v[w->n].run_id, sizeof(w->v[w->n].run_id), "%s", run_id);
            w->n++;
        } else {
            (void)inotify_rm_watch(w->ifd, wd); /* no room: the reconcile timer finds it */
            wd = -1;
        }
    }
    /* A result published before the watch existed gets no event: say so now. */
    if (wd >= 0 && faccessat(jobfd, OCI_JOB_RESULT, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        w->host->job_changed(w->host, run_id);
        (void)inotify_rm_watch(w->ifd, wd);
    }
    pthread_mutex_unlock(&w->lock);
}

void oci_watch_stop(struct oci_watch *w)
{
    uint64_t one = 1;

    if (!w)
        return;
    if (write(w->stopfd, &one, sizeof(one)) != sizeof(one))
        pthread_cancel(w->thread); /* cannot happen with an eventfd counter this small */
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->lock);
    close(w->ifd);
    close(w->stopfd);
    free(w->v);
    free(w);
}
