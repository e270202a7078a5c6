/* SPDX-License-Identifier: MIT */
/*
 * server-internal.h -- what server.c (the listener, admission, connection
 * lifecycle) and api.c (routes, replies, the submission batch) share.
 * Not installed; not thread-safe: everything here runs on the main event
 * loop thread.  The front threads (front.h) hold only the connections'
 * TLS and framing, and reach this through messages.
 */
#ifndef BERTHD_SERVER_INTERNAL_H
#define BERTHD_SERVER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <openssl/ssl.h>

#include "berthd-config.h"
#include "buf.h"
#include "broker.h"
#include "conn.h"
#include "front.h"
#include "log.h"
#include "metrics.h"
#include "offload.h"
#include "policy.h"
#include "refusals.h"
#include "server.h"
#include "slots.h"
#include "uploads.h"
#include "waits.h"

/**
 * struct client - one connection as the server sees it.
 * @slot:        its admission entry (first member: a slot is a client).
 * @conn:        the connection, on its front thread (front.h).
 * @rq:          the request being answered, NULL when none (one at a time).
 * @health_only: an unlisted certificate admitted by "unlisted_clients":
 *               "health"; it is served /v1/health and nothing else.
 * @detached:    refused or evicted: out of the slots and forgotten, its
 *               close under way; it waits for the front's closed callback.
 * @prev, @next: every client of the server, detached or not.
 */
struct client {
    struct berthd_slot slot;
    struct berthd_server *srv;
    struct berthd_fconn *conn;
    struct berthd_front_request *rq;
    bool health_only, detached;
    struct client *prev, *next;
};

/* A submission waiting for the next batch; @client is NULL once its connection is gone. */
struct pending {
    struct client *client;
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
    char *body;
    size_t len;
    struct berth_parsed_job *parsed; /* @body parsed on its front thread, or NULL */
    int64_t start;                   /* CLOCK_MONOTONIC ns, -1 if unreadable */
    char path[64];
    char method[16];
};

struct evidence_task;
struct parked_poll;

struct berthd_server {
    struct event_base *base;
    struct evconnlistener *listener;
    SSL_CTX *ctx;
    const struct berthd_config *cfg;
    struct berth_broker *broker;
    struct berth_policy_source *policy;
    const struct berth_logger *logger;
    struct berthd_metrics metrics;
    struct berthd_refusals refusals;
    struct berthd_slots slots;
    struct berthd_front_ops ops;
    struct berthd_front *front;      /* the front threads (front.h) */
    struct client *clients;          /* every client, for the teardown */
    bool paused, shutting_down;
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct event *batch_ev, *shutdown_ev;
    int port;
    struct berthd_offload *offload;  /* the evidence helper thread (api-evidence.c) */
    struct evidence_task *tasks;     /* its tasks not yet done, to forget their clients */
    struct berthd_uploads uploads;   /* evidence upload sessions */
    struct event *uploads_ev;        /* their expiry, periodic */
    unsigned downloads;              /* evidence downloads being copied or sent */
    unsigned blob_downloads;         /* image blobs being sent to workers (their own budget) */
    bool freeing;                    /* berthd_server_free() runs: nothing is answered any more */
    struct berthd_waits *waits;      /* parked long polls of results (waits.h) ... */
    struct parked *parked;           /* ... and their requests (api-wait.c) */
    struct berthd_waits *poll_waits; /* parked polls of remote workers ... */
    struct parked_poll *polls;       /* ... and their requests (api-workers.c) */
};

/* One request on its way through the route table. */
struct request {
    struct berthd_server *srv;
    struct client *cl;
    const struct berthd_conn_request *in;
    const char *query; /* after the '?', or NULL */
    const char *fp;    /* the client certificate's fingerprint */
    const char *param;  /* the {job}, {pool}, {upload} or {digest} segment of the path */
    const char *param2; /* a second one: the {output} of /v1/jobs/{job}/outputs/{output} */
    const char *shown; /* the path as logs show it */
    int64_t start;     /* CLOCK_MONOTONIC ns, -1 if unreadable */
};

/* A route's handler fills @r, which is then sent; it returns false instead
 * when it has taken the reply over (a submission waits for its batch, an
 * evidence operation for the helper thread). */
typedef bool route_handler(struct request *rq, struct berth_reply *r);

/* The evidence routes (api-evidence.c, docs/evidence.md). */
route_handler berthd_evidence_list_handler, berthd_evidence_start_handler, berthd_evidence_status_handler,
    berthd_evidence_chunk_handler, berthd_evidence_commit_handler, berthd_evidence_cancel_handler,
    berthd_evidence_get_handler, berthd_evidence_delete_handler, berthd_job_output_handler;

/* GET /v1/jobs/{job}/result, with its long poll ?wait_ns=N (api-wait.c). */
route_handler berthd_result_handler;

/**
 * berthd_parse_wait_ns() - ?wait_ns=N of a long poll (@query, the only
 * key it may have): *@ret 0 when absent, else 0 to BERTHD_WAIT_MAX_NS.
 * Return: 0; -EBADMSG with @r filled (400, or 503 out of memory).
 */
int berthd_parse_wait_ns(const char *query, int64_t *ret, struct berth_reply *r);

/* GET /v1/images/{image}/blobs/{blob}?run=RUN (api-evidence.c: the helper thread). */
route_handler berthd_image_blob_handler;

/* A worker's inputs and outputs of a run it holds (api-evidence.c, docs/workers.md):
 * GET /v1/workers/runs/{run}/inputs/{digest}, POST /v1/workers/runs/{run}/outputs/{output},
 * PATCH, PUT and DELETE /v1/workers/uploads/{upload}. */
route_handler berthd_run_input_handler, berthd_run_output_start_handler, berthd_run_output_chunk_handler,
    berthd_run_output_commit_handler, berthd_run_output_cancel_handler;

/* Parked polls one worker may have at once (a worker parks one; more are answered at once). */
#define BERTHD_WORKER_POLLS_PER_WORKER 2

/* The remote workers' routes (api-workers.c, docs/workers.md): POST
 * /v1/workers/poll (with its long poll ?wait_ns=N), /claims, /leases, /reports. */
route_handler berthd_worker_poll_handler, berthd_worker_claim_handler, berthd_worker_lease_handler,
    berthd_worker_report_handler;

/** berthd_worker_polls_forget() - @cl is going away: its parked polls are dropped unanswered. */
void berthd_worker_polls_forget(struct berthd_server *srv, struct client *cl);

/** berthd_worker_polls_answer_all() - shutdown: answer every parked poll now. */
void berthd_worker_polls_answer_all(struct berthd_server *srv);

/** berthd_worker_polls_drop_all() - the server is freed: drop every parked poll unanswered. */
void berthd_worker_polls_drop_all(struct berthd_server *srv);

/** berthd_worker_polls_render() - the berth_worker_polls gauge, appended to @out.  Return: 0; -ENOMEM. */
int berthd_worker_polls_render(struct berthd_server *srv, struct berth_buf *out);

/** berthd_result_waits_forget() - @cl is going away: its parked requests are dropped unanswered. */
void berthd_result_waits_forget(struct berthd_server *srv, struct client *cl);

/** berthd_result_waits_answer_all() - shutdown: answer every parked request now with what it has. */
void berthd_result_waits_answer_all(struct berthd_server *srv);

/** berthd_result_waits_render() - the berth_result_waits gauge, appended to @out.  Return: 0; -ENOMEM. */
int berthd_result_waits_render(struct berthd_server *srv, struct berth_buf *out);

/** berthd_result_waits_drop_all() - the server is freed: drop every parked request unanswered. */
void berthd_result_waits_drop_all(struct berthd_server *srv);

/** berthd_evidence_init() - the helper thread and the expiry of upload sessions.  Return: 0 or -errno. */
int berthd_evidence_init(struct berthd_server *srv);

/** berthd_evidence_forget() - @cl is going away: its evidence tasks are no longer answered. */
void berthd_evidence_forget(struct berthd_server *srv, struct client *cl);

/** berthd_evidence_free() - join the helper thread (its task finishes), drop every session. */
void berthd_evidence_free(struct berthd_server *srv);

/**
 * berthd_api_send() - send @reply (JSON) on @cl, with @extra_headers (conn.h)
 * when it succeeded, then count and log it as every reply is.
 */
void berthd_api_send(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                     int64_t start, const char *path, const char *extra_headers);

/**
 * berthd_api_send_fd() - answer @cl with @reply's status and the first
 * @size bytes of @fd as an application/octet-stream body, streamed
 * (berthd_conn_reply_fd(), which owns @fd and calls @released), then count
 * and log it.
 */
void berthd_api_send_fd(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                        int fd, uint64_t size, int64_t start, const char *path, const char *extra_headers,
                        void (*released)(void *arg), void *arg);

/**
 * berthd_api_prepare() - front.h's prepare operation, on a FRONT thread:
 * a submission (POST /v1/jobs) of at most 16 KiB from a verified
 * certificate gets its job parsed there (struct berth_parsed_job), so that
 * the batch on the main loop does not parse it again.  Touches nothing but
 * @rq.
 */
void berthd_api_prepare(struct berthd_front_request *rq);

/** berthd_api_request() - answer @rq (now @cl->rq) on @cl (front.h's request callback). */
void berthd_api_request(struct client *cl, struct berthd_front_request *rq);

/**
 * berthd_api_refused() - count and log a framing refusal that @cl's front
 * thread answered (front.h's refused callback); @start as front.h says.
 */
void berthd_api_refused(struct client *cl, const struct berthd_http_refusal *why, int64_t start);

/** berthd_api_batch() - commit and answer the queued submissions (the batch event). */
void berthd_api_batch(evutil_socket_t fd, short what, void *arg);

/** berthd_api_forget() - @cl is going away: its queued submissions are no longer answered. */
void berthd_api_forget(struct berthd_server *srv, struct client *cl);

#endif
