/* SPDX-License-Identifier: MIT */
/*
 * api-workers.c -- the routes of remote workers (docs/workers.md): polls,
 * claims, heartbeats and reports.  A poll with ?wait_ns=N that finds no
 * work is parked (waits.h, keyed by the worker's principal) and asked
 * again whenever the broker says its offers changed
 * (berth_broker_offer_generation()), until it gets work, its bound passes
 * or berthd shuts down: the event loop never blocks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "macro.h"
#include "server-internal.h"
#include "waits.h"

#define POLL_KEY "offers" /* the "job id" every parked poll of a worker waits under */

/* A parked poll (loop thread only, listed in srv->polls). */
struct parked_poll {
    struct berthd_server *srv;
    struct client *cl;
    struct berthd_wait *w;
    char fp[BERTH_FINGERPRINT_LEN + 1];
    char *body;
    size_t len;
    char method[16];
    char path[64];
    int64_t start;    /* CLOCK_MONOTONIC ns of the request, for logs */
    int64_t deadline; /* CLOCK_MONOTONIC ns: answer with no offer then */
    struct parked_poll *prev, *next;
};

static void unlink_poll(struct parked_poll *p)
{
    struct berthd_server *srv = p->srv;

    if (p->prev)
        p->prev->next = p->next;
    else
        srv->polls = p->next;
    if (p->next)
        p->next->prev = p->prev;
    berthd_waits_remove(srv->poll_waits, p->w);
    p->w = NULL;
}

static void poll_free(struct parked_poll *p)
{
    free(p->body);
    free(p);
}

/* Whether a poll's reply carries work (or is no poll result at all). */
static bool final(const struct berth_reply *r)
{
    return r->status != 200 || json_array_size(json_object_get(r->body, "offers")) > 0;
}

/* Answer @p with what a poll says now, and forget it. */
static void answer(struct parked_poll *p, struct berth_reply *r)
{
    struct berthd_server *srv = p->srv;

    unlink_poll(p); /* first: sending may close the connection, whose forget must not find it */
    berthd_api_send(srv, p->cl, p->method, r, p->start, p->path, NULL);
    berth_reply_clear(r);
    poll_free(p);
}

static void woken_cb(struct berthd_wait *w, bool woken, void *arg)
{
    struct parked_poll *p = arg;
    struct berthd_server *srv = p->srv;
    struct berth_reply r = {0};
    int64_t now = 0;

    (void)w;
    (void)woken;
    berth_broker_worker_poll(srv->broker, p->fp, p->body, p->len, true, &r);
    if (!final(&r) && !srv->shutting_down && berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0 && now < p->deadline &&
        berthd_wait_rearm(p->w, p->deadline - now) == 0) {
        berth_reply_clear(&r);
        return;
    }
    answer(p, &r);
}

bool berthd_worker_poll_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_server *srv = rq->srv;
    struct parked_poll *p;
    uint64_t generation;
    int64_t wait_ns, now;
    int rc;

    if (berthd_parse_wait_ns(rq->query, &wait_ns, r) < 0)
        return true;
    generation = berth_broker_offer_generation(srv->broker);
    berth_broker_worker_poll(srv->broker, rq->fp, rq->in->body, rq->in->body_len, false, r);
    if (wait_ns == 0 || final(r) || srv->shutting_down || berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0)
        return true;
    p = calloc(1, sizeof(*p));
    if (!p || !(p->body = malloc(rq->in->body_len + 1))) {
        free(p);
        return true; /* answered at once, as without wait_ns */
    }
    memcpy(p->body, rq->in->body, rq->in->body_len);
    p->len = rq->in->body_len;
    p->srv = srv;
    p->cl = rq->cl;
    p->start = rq->start;
    p->deadline = now + wait_ns;
    snprintf(p->fp, sizeof(p->fp), "%s", rq->fp);
    snprintf(p->method, sizeof(p->method), "%s", rq->in->head->method_name);
    snprintf(p->path, sizeof(p->path), "%s", rq->shown);
    rc = berthd_waits_add(srv->poll_waits, srv->base, r->principal, POLL_KEY, wait_ns, woken_cb, p, &p->w);
    if (rc < 0) {
        /* Too many parked polls: this one is answered now, with no offer. */
        poll_free(p);
        return true;
    }
    p->next = srv->polls;
    if (srv->polls)
        srv->polls->prev = p;
    srv->polls = p;
    /* Work may have been queued between the poll and the registration. */
    if (berth_broker_offer_generation(srv->broker) != generation) {
        berth_reply_clear(r);
        berth_broker_worker_poll(srv->broker, rq->fp, rq->in->body, rq->in->body_len, true, r);
        if (final(r)) {
            unlink_poll(p);
            poll_free(p);
            return true;
        }
    }
    berth_reply_clear(r);
    return false;
}

void berthd_server_offers_changed(struct berthd_server *srv)
{
    if (srv && srv->poll_waits)
        berthd_waits_wake_all(srv->poll_waits);
}

void berthd_worker_polls_forget(struct berthd_server *srv, struct client *cl)
{
    struct parked_poll *p, *next;

    for (p = srv->polls; p; p = next) {
        next = p->next;
        if (p->cl == cl) {
            unlink_poll(p);
            poll_free(p);
        }
    }
}

void berthd_worker_polls_answer_all(struct berthd_server *srv)
{
    while (srv->polls) {
        struct parked_poll *p = srv->polls;
        struct berth_reply r = {0};

        berth_broker_worker_poll(srv->broker, p->fp, p->body, p->len, true, &r);
        answer(p, &r);
    }
}

void berthd_worker_polls_drop_all(struct berthd_server *srv)
{
    while (srv->polls) {
        struct parked_poll *p = srv->polls;
        unlink_poll(p);
        poll_free(p);
    }
}

int berthd_worker_polls_render(struct berthd_server *srv, struct berth_buf *out)
{
    char text[256];
    int n = snprintf(text, sizeof(text),
                     "# HELP berth_worker_polls Polls of remote workers parked until work comes (wait_ns).\n"
                     "# TYPE berth_worker_polls gauge\nberth_worker_polls %zu\n",
                     berthd_waits_count(srv->poll_waits));
    return n > 0 && (size_t)n < sizeof(text) ? berth_buf_append(out, text, (size_t)n) : -ENOMEM;
}

bool berthd_worker_claim_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_worker_claim(rq->srv->broker, rq->fp, rq->in->body, rq->in->body_len, r);
    return true;
}

bool berthd_worker_lease_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_worker_lease(rq->srv->broker, rq->fp, rq->in->body, rq->in->body_len, r);
    return true;
}

bool berthd_worker_report_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_worker_report(rq->srv->broker, rq->fp, rq->in->body, rq->in->body_len, r);
    return true;
}
