/* SPDX-License-Identifier: MIT */
/*
 * conn.h -- one client connection of berthd: TLS over a libevent
 * bufferevent, HTTP/1.1 requests framed strictly (http-framing.h), one at a
 * time, and their replies.
 *
 * A connection moves through these phases, each with its own deadline (all
 * CLOCK_MONOTONIC, all absolute unless said otherwise; bytes that arrive do
 * not move an absolute deadline):
 *
 *   handshake  until the TLS handshake is complete: http.handshake_timeout_ns
 *              from the accept.
 *   waiting    for the first byte of a request: the first request's whole
 *              header block is due http.header_timeout_ns after the handshake;
 *              a later request must begin within http.idle_timeout_ns of the
 *              previous reply.
 *   head       the header block is due http.header_timeout_ns after the
 *              request's first byte (after the handshake for the first).
 *   body       the whole request is due http.request_timeout_ns after its
 *              first byte.
 *              In head and body, a gap of http.inactivity_timeout_ns with no
 *              byte at all also closes the connection.
 *   busy       the request is being answered; no deadline (the reply is the
 *              daemon's to give).  Bytes of a pipelined next request wait.
 *   sending    a reply body streamed from a file (berthd_conn_reply_fd()):
 *              it is read in pieces as the client takes it, so at most
 *              about 512 KiB of it is buffered; when the client takes
 *              nothing for http.inactivity_timeout_ns the connection closes
 *              (the client sees a body shorter than its Content-Length).
 *   linger     after a reply that closes the connection: the reply is flushed,
 *              TLS close_notify sent and the write side shut; what the client
 *              still sends is read and discarded for up to one second, so
 *              that the kernel does not answer it with a reset that destroys
 *              the reply in flight (RFC 9112 section 9.6).
 *
 * A framing refusal (http-framing.h) is passed to the owner, which answers
 * it; that reply always closes the connection.  A connection closed by a
 * deadline gets no reply; the owner is told why (refusals.h).
 *
 * The owner sees a connection through struct berthd_conn_ops.  Every
 * callback runs on the event loop thread; a callback may call
 * berthd_conn_reply() and berthd_conn_close() on its own connection, and
 * berthd_conn_close() on any other.  Not thread-safe.
 */
#ifndef BERTHD_CONN_H
#define BERTHD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "berthd-config.h"
#include "http-framing.h"
#include "refusals.h"

struct berthd_conn;

/**
 * struct berthd_conn_request - a complete request, valid until the reply.
 * @head:     its head: method, target, version.
 * @body:     the decoded body, NUL-terminated ("" when there is none).
 * @body_len: its length in bytes, without the NUL.
 * @start:    CLOCK_MONOTONIC ns when it began (for logs and metrics), -1
 *            when the clock could not be read.
 */
struct berthd_conn_request {
    const struct berthd_http_head *head;
    const char *body;
    size_t body_len;
    int64_t start;
};

/**
 * struct berthd_conn_ops - what the owner of a connection is told.
 * @secured:  the TLS handshake is complete; return false to close the
 *            connection at once (no reply).  @ssl is borrowed.
 * @request:  a complete request: the owner must answer it with exactly one
 *            berthd_conn_reply(), now or later.
 * @refused:  the request's framing was refused (@why): the owner must answer
 *            with berthd_conn_reply() before it returns; the connection
 *            closes after that reply whatever it says.
 * @dropped:  the connection is being closed by a deadline or a TLS failure
 *            before it was served (@why).
 * @closed:   the connection is going away: forget it.  Called exactly once;
 *            the connection is freed after the callback returns, later, on
 *            the loop.
 */
struct berthd_conn_ops {
    bool (*secured)(struct berthd_conn *c, SSL *ssl, void *arg);
    void (*request)(struct berthd_conn *c, const struct berthd_conn_request *rq, void *arg);
    void (*refused)(struct berthd_conn *c, const struct berthd_http_refusal *why, void *arg);
    void (*dropped)(struct berthd_conn *c, enum berthd_refusal why, void *arg);
    void (*closed)(struct berthd_conn *c, void *arg);
};

/**
 * struct berthd_conn_graveyard - closed connections waiting to be freed on
 * the next turn of the loop (outside their own callbacks).  The owner of the
 * connections owns it.
 */
struct berthd_conn_graveyard {
    struct berthd_conn *head;
    struct event *ev;
};

/** berthd_conn_graveyard_init() - prepare @g on @base.  Return: 0; -ENOMEM. */
int berthd_conn_graveyard_init(struct berthd_conn_graveyard *g, struct event_base *base);

/** berthd_conn_graveyard_clear() - free every connection in @g and @g's event. */
void berthd_conn_graveyard_clear(struct berthd_conn_graveyard *g);

/**
 * berthd_conn_new() - start serving the accepted socket @fd: a TLS server
 * handshake with @ctx, then requests under the limits and deadlines of @cfg.
 * @cfg, @graveyard, @ops and @arg are borrowed and must outlive the
 * connection; once closed, it is freed through @graveyard.
 * Return: 0 with *@ret set (the connection owns @fd from then on); -ENOMEM,
 * and @fd is closed.
 */
int berthd_conn_new(struct event_base *base, evutil_socket_t fd, SSL_CTX *ctx, const struct berthd_config *cfg,
                    struct berthd_conn_graveyard *graveyard, const struct berthd_conn_ops *ops, void *arg,
                    struct berthd_conn **ret);

/**
 * berthd_conn_reply() - answer the request in progress (or refused):
 * status line, Date, Content-Type (@content_type), Content-Length (@len
 * bytes of @body), Cache-Control: no-store, X-Content-Type-Options: nosniff,
 * "Retry-After: N" (RFC 9110 section 10.2.3, delay-seconds) when
 * @retry_after_s is not 0, and "Connection: close" when the connection
 * closes after it.  A reply to HEAD carries no body.
 * @close: close after this reply even if the request allowed keep-alive.
 * Does nothing on a connection that has no request to answer.
 */
void berthd_conn_reply(struct berthd_conn *c, int status, const char *content_type, const char *body, size_t len,
                       unsigned retry_after_s, bool close);

/**
 * berthd_conn_reply_extra() - berthd_conn_reply() with more header lines:
 * @extra_headers is NULL or "Name: value" CRLF lines (printable ASCII, at
 * most 512 bytes; anything else is a programming error and closes the
 * connection without a reply), sent after the standard ones.
 */
void berthd_conn_reply_extra(struct berthd_conn *c, int status, const char *content_type, const char *body, size_t len,
                             unsigned retry_after_s, bool close, const char *extra_headers);

/**
 * berthd_conn_reply_fd() - answer with the first @size bytes of the file
 * @fd as the body, streamed: read with pread(2) from offset 0 in pieces
 * of 256 KiB while less than 512 KiB wait to be sent (so a 1 GiB body
 * costs no more memory than a small one), headers as berthd_conn_reply()
 * plus @extra_headers (as berthd_conn_reply_extra()).  The connection owns
 * @fd from the call on and closes it when the body is sent or the
 * connection closes.  If the file yields fewer bytes than @size, or the
 * client takes nothing for http.inactivity_timeout_ns, the connection is
 * closed mid-body.  A reply to HEAD sends no body.  Like
 * berthd_conn_reply(), it does nothing (but close @fd) on a connection
 * with no request to answer.
 * @released: optional; called with @arg once, right after @fd is closed
 *            (the body sent, or the connection closed), so that the owner
 *            can count what is in flight.
 */
void berthd_conn_reply_fd(struct berthd_conn *c, int status, const char *content_type, int fd, uint64_t size,
                          const char *extra_headers, void (*released)(void *arg), void *arg);

/**
 * berthd_conn_close() - close @c now, without a reply (eviction, shutdown).
 * Its @closed callback runs before this returns.
 */
void berthd_conn_close(struct berthd_conn *c);

/**
 * berthd_conn_close_when_idle() - shutting down: close @c now when it has no
 * request in progress, else after the reply to the one it has.
 */
void berthd_conn_close_when_idle(struct berthd_conn *c);

/** berthd_conn_ssl() - @c's TLS object (borrowed; valid while @c is). */
SSL *berthd_conn_ssl(const struct berthd_conn *c);

/** berthd_conn_free() - free @c at once, calling nothing (the server is freed). */
void berthd_conn_free(struct berthd_conn *c);

#endif
