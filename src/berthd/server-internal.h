/* SPDX-License-Identifier: MIT */
/*
 * server-internal.h -- what server.c (the listener, admission, connection
 * lifecycle) and api.c (routes, replies, the submission batch) share.
 * Not installed; not thread-safe: everything runs on the event loop thread.
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
#include "broker.h"
#include "conn.h"
#include "log.h"
#include "metrics.h"
#include "policy.h"
#include "refusals.h"
#include "server.h"
#include "slots.h"

/**
 * struct client - one connection as the server sees it.
 * @slot:        its admission entry (first member: a slot is a client).
 * @conn:        the connection.
 * @health_only: an unlisted certificate admitted by "unlisted_clients":
 *               "health"; it is served /v1/health and nothing else.
 */
struct client {
    struct berthd_slot slot;
    struct berthd_server *srv;
    struct berthd_conn *conn;
    bool health_only;
};

/* A submission waiting for the next batch; @client is NULL once its connection is gone. */
struct pending {
    struct client *client;
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
    char *body;
    size_t len;
    int64_t start; /* CLOCK_MONOTONIC ns, -1 if unreadable */
    char path[64];
    char method[16];
};

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
    struct berthd_conn_ops ops;
    struct berthd_conn_graveyard graveyard;
    bool paused, shutting_down;
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct event *batch_ev, *shutdown_ev;
    int port;
};

/** berthd_api_request() - answer @rq on @cl (conn.h's request callback). */
void berthd_api_request(struct berthd_conn *conn, const struct berthd_conn_request *rq, void *arg);

/** berthd_api_refused() - answer a framing refusal on @cl (conn.h's refused callback). */
void berthd_api_refused(struct berthd_conn *conn, const struct berthd_http_refusal *why, void *arg);

/** berthd_api_batch() - commit and answer the queued submissions (the batch event). */
void berthd_api_batch(evutil_socket_t fd, short what, void *arg);

/** berthd_api_forget() - @cl is going away: its queued submissions are no longer answered. */
void berthd_api_forget(struct berthd_server *srv, struct client *cl);

#endif
