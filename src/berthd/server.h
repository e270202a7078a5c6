/* SPDX-License-Identifier: MIT */
/*
 * server.h -- berthd's HTTPS front end: a libevent listener, TLS over
 * bufferevent_openssl, strict HTTP/1.1 framing (http-framing.h), one event
 * loop thread.
 *
 * Admission (slots.h): at most http.max_connections connections, of which
 * at most http.max_unauthenticated have not yet completed their handshake
 * and at most http.max_per_source of those come from one address; at most
 * http.max_per_principal per client certificate.  While http.max_connections
 * are open the listener pauses and new connections wait in the kernel's
 * backlog.  A certificate that the host policy does not list is closed right
 * after the handshake (policy.h, "unlisted_clients").  Every deadline of a
 * connection is in conn.h; connections closed without being served are
 * counted and logged as a summary per http.refusal_log_interval_ns
 * (refusals.h).
 *
 * Every request re-reads the client certificate's fingerprint and checks
 * its validity period; the broker checks the current host policy.  Job
 * submissions are queued and handled by a low-priority event after all
 * ready I/O: every submission that arrived meanwhile shares one journal
 * transaction and one fsync (group commit), and each reply is sent only
 * after that commit.
 */
#ifndef BERTHD_SERVER_H
#define BERTHD_SERVER_H

#include <stdbool.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "berthd-config.h"
#include "broker.h"
#include "log.h"
#include "policy.h"

struct berthd_server;

/** The event loop's priorities (main.c initialises them): 0 signals, 1 I/O, 2 the submission batch. */
#define BERTHD_PRIORITIES 3

/**
 * berthd_server_new() - bind the listening socket (address and port of
 * @cfg) on @base and prepare to serve.  All pointers are borrowed.
 * Return: 0; -EADDRINUSE and other bind errors; -ENOMEM.
 */
int berthd_server_new(struct event_base *base, SSL_CTX *ctx, const struct berthd_config *cfg,
                      struct berth_broker *broker, struct berth_policy_source *policy,
                      const struct berth_logger *logger, struct berthd_server **ret, struct berth_error *reterr);

/**
 * berthd_server_result_recorded() - the broker recorded the signed result
 * of @principal's job @job_id: wake the long polls waiting for it
 * (api-wait.c).  Any thread (the broker's on_result hook); quick.
 */
void berthd_server_result_recorded(struct berthd_server *srv, const char *principal, const char *job_id);

/**
 * berthd_server_offers_changed() - the broker's offers to remote workers
 * changed (berth_broker_offer_generation()): every parked poll asks again.
 * Any thread; @srv may be NULL (nothing happens).
 */
void berthd_server_offers_changed(struct berthd_server *srv);

/** berthd_server_port() - the bound port (useful when the config said 0). */
int berthd_server_port(const struct berthd_server *srv);

/**
 * berthd_server_shutdown() - stop accepting, answer queued submissions,
 * close idle connections, tell others to close after their reply, and exit
 * the event loop once every connection is gone or @cfg's
 * shutdown_timeout_ns has passed.
 */
void berthd_server_shutdown(struct berthd_server *srv);

/** berthd_server_free() - close every connection and free; accepts NULL. */
void berthd_server_free(struct berthd_server *srv);

#endif
