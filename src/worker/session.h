/* SPDX-License-Identifier: MIT */
/*
 * session.h -- one worker thread's connection to berthd (docs/workers.md):
 * the worker's calls, each a JSON POST (or a blob download) over the
 * client configuration's mTLS connection (https.h).  One session per
 * thread; a session is not thread-safe.
 */
#ifndef BERTH_WORKER_SESSION_H
#define BERTH_WORKER_SESSION_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "https.h"

struct worker_session {
    struct berth_https *https;
};

/** worker_session_open() - open a connection as @client_path configures it.  Return: 0 or berth_https_open()'s errors. */
int worker_session_open(const char *client_path, struct worker_session *s, struct berth_error *reterr);

/** worker_session_close() - close it; accepts a zeroed session. */
void worker_session_close(struct worker_session *s);

/**
 * worker_session_post() - POST @body (serialized canonically) to @path and
 * wait up to @wait_ns (nanoseconds, >= 0) longer than the configured
 * timeout for the answer (a long poll).  *@ret_status: the HTTP status;
 * *@ret_reply: its JSON body (a new reference, or NULL when it is none).
 * Return: 0 when berthd answered (any status); -EIO (no answer: berthd
 * unreachable, TLS, timeout; reterr says why); -ENOMEM.
 */
int worker_session_post(struct worker_session *s, const char *path, const json_t *body, int64_t wait_ns,
                        long *ret_status, json_t **ret_reply, struct berth_error *reterr);

#endif /* BERTH_WORKER_SESSION_H */
