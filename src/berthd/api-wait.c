/* SPDX-License-Identifier: MIT */
/*
 * api-wait.c -- GET /v1/jobs/{job}/result, with its long poll: with
 * ?wait_ns=N (0 to BERTHD_WAIT_MAX_NS) a request for a result that is not
 * signed yet is parked (waits.h) instead of answered 202 at once, and is
 * answered the moment the broker records the result (200), or at its bound
 * with the 202 it would have had, or at once when berthd shuts down.  The
 * event loop never blocks: a parked request is an event.  See docs/api.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "macro.h"
#include "query.h"
#include "server-internal.h"
#include "waits.h"

/* A parked request (loop thread only, listed in srv->parked). */
struct parked {
    struct berthd_server *srv;
    struct client *cl;
    struct berthd_wait *w;
    char fp[BERTH_FINGERPRINT_LEN + 1];
    char job_id[BERTH_JOB_ID_MAX + 1];
    char method[16];
    char path[64];
    int64_t start;    /* CLOCK_MONOTONIC ns of the request, for logs */
    int64_t deadline; /* CLOCK_MONOTONIC ns: answer 202 then */
    struct parked *prev, *next;
};

static void unlink_parked(struct parked *p)
{
    struct berthd_server *srv = p->srv;

    if (p->prev)
        p->prev->next = p->next;
    else
        srv->parked = p->next;
    if (p->next)
        p->next->prev = p->prev;
    berthd_waits_remove(srv->waits, p->w);
    p->w = NULL;
}

/* Answer @p with what the broker says now (its result, or 202), and forget it. */
static void answer(struct parked *p)
{
    struct berthd_server *srv = p->srv;
    struct berth_reply r = {0};

    unlink_parked(p); /* first: sending may close the connection, whose forget must not find it */
    berth_broker_result(srv->broker, p->fp, p->job_id, &r);
    berthd_api_send(srv, p->cl, p->method, &r, p->start, p->path, NULL);
    berth_reply_clear(&r);
    free(p);
}

static void woken_cb(struct berthd_wait *w, bool woken, void *arg)
{
    struct parked *p = arg;
    struct berthd_server *srv = p->srv;
    struct berth_reply r = {0};
    int64_t now = 0;

    (void)w;
    if (woken && !srv->shutting_down && berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0 && now < p->deadline) {
        /* A hint: another scope's job of the same id, or a result pruned at once. */
        berth_broker_result(srv->broker, p->fp, p->job_id, &r);
        bool pending = r.status == 202;
        berth_reply_clear(&r);
        if (pending && berthd_wait_rearm(p->w, p->deadline - now) == 0)
            return;
    }
    answer(p);
}

int berthd_parse_wait_ns(const char *query, int64_t *ret, struct berth_reply *r)
{
    static const char *const allowed[] = {"wait_ns", NULL};
    char *values[ELEMENTSOF(allowed)] = {NULL};
    char why[160];
    const char *v;
    char *end = NULL;
    long long n;
    int rc;

    *ret = 0;
    rc = berthd_query_parse(query, allowed, values, why, sizeof(why));
    if (rc < 0) {
        r->status = rc == -EBADMSG ? 400 : 503;
        r->error = rc == -EBADMSG ? "malformed" : "busy";
        snprintf(r->message, sizeof(r->message), "%s", rc == -EBADMSG ? why : "out of memory; retry later");
        return -EBADMSG;
    }
    v = values[0];
    if (v) {
        errno = 0;
        n = (*v >= '0' && *v <= '9') ? strtoll(v, &end, 10) : -1;
        if (errno || n < 0 || *end || n > BERTHD_WAIT_MAX_NS) {
            berthd_query_free(allowed, values);
            r->status = 400;
            r->error = "malformed";
            snprintf(r->message, sizeof(r->message),
                     "wait_ns must be a whole number of nanoseconds from 0 to %lld (60 s)",
                     (long long)BERTHD_WAIT_MAX_NS);
            return -EBADMSG;
        }
        *ret = n;
    }
    berthd_query_free(allowed, values);
    return 0;
}

bool berthd_result_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_server *srv = rq->srv;
    struct parked *p;
    int64_t wait_ns, now;
    int rc;

    if (berthd_parse_wait_ns(rq->query, &wait_ns, r) < 0)
        return true;
    berth_broker_result(srv->broker, rq->fp, rq->param, r);
    if (wait_ns == 0 || r->status != 202 || srv->shutting_down || berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0)
        return true;
    p = calloc(1, sizeof(*p));
    if (!p)
        return true; /* answered at once, as without wait_ns */
    p->srv = srv;
    p->cl = rq->cl;
    p->start = rq->start;
    p->deadline = now + wait_ns;
    snprintf(p->fp, sizeof(p->fp), "%s", rq->fp);
    snprintf(p->job_id, sizeof(p->job_id), "%s", rq->param);
    snprintf(p->method, sizeof(p->method), "%s", rq->in->head->method_name);
    snprintf(p->path, sizeof(p->path), "%s", rq->shown);
    rc = berthd_waits_add(srv->waits, srv->base, r->principal, rq->param, wait_ns, woken_cb, p, &p->w);
    if (rc == -EUSERS || rc == -EAGAIN) {
        char principal[sizeof(r->principal)];

        free(p);
        snprintf(principal, sizeof(principal), "%s", r->principal);
        berth_reply_clear(r);
        snprintf(r->principal, sizeof(r->principal), "%s", principal);
        r->status = 429;
        r->error = "too_many_waits";
        r->retry_after_s = 1;
        snprintf(r->message, sizeof(r->message),
                 rc == -EUSERS ? "this principal already has %d results waited for; wait for one of them first"
                               : "berthd holds %d waiting requests; retry later",
                 rc == -EUSERS ? BERTHD_WAITS_MAX_PER_PRINCIPAL : BERTHD_WAITS_MAX_TOTAL);
        return true;
    }
    if (rc < 0) {
        free(p);
        return true;
    }
    p->next = srv->parked;
    if (srv->parked)
        srv->parked->prev = p;
    srv->parked = p;
    /* The result may have been recorded between the read above and the registration. */
    berth_reply_clear(r);
    berth_broker_result(srv->broker, rq->fp, rq->param, r);
    if (r->status != 202) {
        unlink_parked(p);
        free(p);
        return true;
    }
    berth_reply_clear(r);
    return false;
}

void berthd_result_waits_forget(struct berthd_server *srv, struct client *cl)
{
    struct parked *p, *next;

    for (p = srv->parked; p; p = next) {
        next = p->next;
        if (p->cl == cl) {
            unlink_parked(p);
            free(p);
        }
    }
}

void berthd_result_waits_answer_all(struct berthd_server *srv)
{
    while (srv->parked)
        answer(srv->parked);
}

void berthd_result_waits_drop_all(struct berthd_server *srv)
{
    while (srv->parked) {
        struct parked *p = srv->parked;
        unlink_parked(p);
        free(p);
    }
}

void berthd_server_result_recorded(struct berthd_server *srv, const char *principal, const char *job_id)
{
    if (srv)
        berthd_waits_wake(srv->waits, principal, job_id);
}

int berthd_result_waits_render(struct berthd_server *srv, struct berth_buf *out)
{
    char text[256];
    int n = snprintf(text, sizeof(text),
                     "# HELP berth_result_waits Result requests parked by a long poll (wait_ns).\n"
                     "# TYPE berth_result_waits gauge\nberth_result_waits %zu\n",
                     berthd_waits_count(srv->waits));

    if (n < 0 || (size_t)n >= sizeof(text))
        return -EINVAL;
    return berth_buf_append(out, text, (size_t)n);
}
