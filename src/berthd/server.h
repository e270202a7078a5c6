/* SPDX-License-Identifier: MIT */
/*
 * server.h -- berthd's HTTPS front end: libevent evhttp over
 * bufferevent_openssl, one event loop thread.
 *
 * Connections are counted; past http.max_connections a new connection is
 * closed at once and the listener pauses until one closes.  A connection
 * that sends nothing for http.header_timeout_ns is closed (libevent's
 * read timeout); the first request on a connection must be complete within
 * http.request_timeout_ns of the accept (TLS handshake included), each
 * later one within http.idle_timeout_ns of the previous reply (a watchdog
 * timer per connection), so neither a silent nor a trickling client holds
 * a connection for long.  Request headers are bounded by
 * http.max_header_bytes and bodies by http.max_body_bytes (larger: 413).
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

/**
 * berthd_server_new() - bind the listening socket (address and port of
 * @cfg) on @base and prepare to serve.  All pointers are borrowed.
 * Return: 0; -EADDRINUSE and other bind errors; -ENOMEM.
 */
int berthd_server_new(struct event_base *base, SSL_CTX *ctx, const struct berthd_config *cfg,
                      struct berth_broker *broker, struct berth_policy_source *policy,
                      const struct berth_logger *logger, struct berthd_server **ret, struct berth_error *reterr);

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
