/* SPDX-License-Identifier: MIT */
/*
 * front.h -- berthd's front threads (http.threads): each runs, on an event
 * loop of its own, the TLS handshakes, TLS records, HTTP framing and
 * deadlines of the connections handed to it (conn.h).  Everything else --
 * admission, routing, the API, the broker, metrics, the waits and upload
 * tables -- stays on the main loop (server.c, api*.c), which sees each
 * connection as a struct berthd_fconn handle and talks to it by message.
 *
 * Messages: the main loop posts to a front thread (a new connection, a
 * reply, a close), a front thread posts to the main loop (handshake done,
 * a request, a refusal answered, a drop, closed).  Each direction is one
 * queue under a mutex with an event that wakes its loop (libevent with
 * evthread_use_pthreads()); both queues are first in, first out, so the
 * main loop sees a connection's events in the order they happened, and a
 * front thread runs the main loop's commands to it in the order they were
 * posted.  What each message carries is copied: no thread reads another's
 * memory except through a queue.
 *
 * A handle's lifetime: made by berthd_front_accept() on the main loop,
 * which refers to it until it calls berthd_fconn_release(); the front
 * thread frees it once the connection is closed and the release arrived.
 * After the closed callback no other callback for it comes.
 *
 * Thread safety: every function here is for the main loop thread; every
 * callback of struct berthd_front_ops runs on it but @prepare.  The front threads touch
 * only their own loop, their connections and the queues.
 */
#ifndef BERTHD_FRONT_H
#define BERTHD_FRONT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "berthd-config.h"
#include "buf.h"
#include "conn.h"
#include "policy.h"
#include "refusals.h"

struct berthd_front;
struct berthd_fconn;

/**
 * struct berthd_front_request - a complete request, copied off its front
 * thread; valid until the main loop answers it (berthd_fconn_reply() or
 * _reply_fd() free it) or the connection's closed callback returns.
 * @in:          what conn.h passes (its @head points to @head here).
 * @head:        the head; its target is owned.
 * @peer_ok:     the client certificate's fingerprint could be read
 *               (berthd_tls_peer()) when the request arrived ...
 * @peer_valid:  ... and it is inside its validity period.
 * @fingerprint: that fingerprint (lowercase hex) when @peer_ok.
 * @prepared:    NULL, or what the @prepare operation made of the request on
 *               its front thread; the main loop may take it (setting it
 *               NULL), else it is released with the request by
 *               @prepared_free.
 */
struct berthd_front_request {
    struct berthd_conn_request in;
    struct berthd_http_head head;
    char *body;
    bool peer_ok, peer_valid;
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
    void *prepared;
    void (*prepared_free)(void *prepared);
};

/**
 * struct berthd_front_ops - what the main loop is told; @arg is the one
 * given to berthd_front_accept().
 * @secured:  the handshake is complete; @fingerprint is the client
 *            certificate's, or NULL when it could not be read.  To refuse
 *            it, call berthd_fconn_close().  Requests may already be on
 *            their way: they arrive after this call.
 * @request:  a complete request: answer it with exactly one
 *            berthd_fconn_reply() or _reply_fd(), now or later.
 * @refused:  a framing refusal (@why) was answered by the front thread
 *            (the reply closes the connection); for metrics and the log.
 *            @start: CLOCK_MONOTONIC ns of the refusal, -1 if unreadable.
 * @dropped:  closed by a deadline or a TLS failure before it was served.
 * @closed:   the connection is gone: release the handle.
 * @prepare:  optional, and the exception: called on the FRONT thread with
 *            each complete request before it is posted, to do work that
 *            needs nothing but the request (berthd: parse a submitted job)
 *            off the main loop.  It may set @rq->prepared and
 *            @rq->prepared_free and must touch nothing shared.
 */
struct berthd_front_ops {
    void (*secured)(void *arg, const char *fingerprint);
    void (*request)(void *arg, struct berthd_front_request *rq);
    void (*refused)(void *arg, const struct berthd_http_refusal *why, int64_t start);
    void (*dropped)(void *arg, enum berthd_refusal why);
    void (*closed)(void *arg);
    void (*prepare)(struct berthd_front_request *rq);
};

/**
 * berthd_front_new() - start @n front threads (1..BERTH_BERTHD_FRONT_THREADS_MAX),
 * each with its own event loop; callbacks arrive on @base's loop at
 * @priority.  @ctx, @cfg and @ops are borrowed and must outlive the front.
 * Return: 0; -EINVAL; -ENOMEM; the pthread_create(3) error.
 */
int berthd_front_new(struct event_base *base, int priority, unsigned n, SSL_CTX *ctx, const struct berthd_config *cfg,
                     const struct berthd_front_ops *ops, struct berthd_front **ret);

/** berthd_front_threads() - how many front threads run. */
unsigned berthd_front_threads(const struct berthd_front *f);

/** berthd_front_render() - the berth_front_threads gauge, appended to @out.  Return: 0; -ENOMEM. */
int berthd_front_render(const struct berthd_front *f, struct berth_buf *out);

/**
 * berthd_front_accept() - serve the accepted socket @fd on the next front
 * thread in turn; callbacks for it get @arg.  The handle is the caller's
 * until berthd_fconn_release().  Return: the handle; NULL on -ENOMEM, and
 * @fd is closed.
 */
struct berthd_fconn *berthd_front_accept(struct berthd_front *f, evutil_socket_t fd, void *arg);

/**
 * berthd_fconn_reply() - answer @rq (which this frees) on @c: as
 * berthd_conn_reply_extra(), the arguments copied.
 */
void berthd_fconn_reply(struct berthd_fconn *c, struct berthd_front_request *rq, int status, const char *content_type,
                        const char *body, size_t len, unsigned retry_after_s, bool close, const char *extra_headers);

/**
 * berthd_fconn_reply_fd() - answer @rq (which this frees) on @c with a file
 * body: as berthd_conn_reply_fd(); @fd is the connection's from the call
 * on; @released, when not NULL, is called with @arg on the main loop once
 * the connection closed @fd (never once the front is stopped).
 */
void berthd_fconn_reply_fd(struct berthd_fconn *c, struct berthd_front_request *rq, int status,
                           const char *content_type, int fd, uint64_t size, const char *extra_headers,
                           void (*released)(void *arg), void *arg);

/** berthd_fconn_close() - close @c without a reply; its closed callback comes later. */
void berthd_fconn_close(struct berthd_fconn *c);

/** berthd_fconn_close_when_idle() - as berthd_conn_close_when_idle(). */
void berthd_fconn_close_when_idle(struct berthd_fconn *c);

/** berthd_fconn_release() - the main loop no longer refers to @c (after its closed callback, or at teardown). */
void berthd_fconn_release(struct berthd_fconn *c);

/** berthd_front_request_free() - free @rq (accepts NULL). */
void berthd_front_request_free(struct berthd_front_request *rq);

/**
 * berthd_front_stop() - stop every front thread and join it: each frees its
 * connections at once, calling nothing (berthd_conn_free()).  Afterwards no
 * callback comes, and the handles must not be used (release is not needed).
 */
void berthd_front_stop(struct berthd_front *f);

/** berthd_front_free() - stop if not yet, drop every message not yet handled, free; accepts NULL. */
void berthd_front_free(struct berthd_front *f);

#endif
