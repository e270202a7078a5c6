/* SPDX-License-Identifier: MIT */
/*
 * client.h -- berthctl's HTTPS client for berthd (libcurl).
 *
 * The client configuration (client.json, docs/berthd.md) names the broker
 * URL, the pinned broker public key, the client certificate and key and
 * the CA bundle.  Those files are read through the core's no-follow
 * helpers and handed to libcurl as memory blobs; TLS 1.3 is required, only
 * https is spoken, redirects are refused, and every reply body is bounded.
 */
#ifndef BERTHCTL_CLIENT_H
#define BERTHCTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "berthctl.h"
#include "digest.h"
#include "sign.h"

#define BCTL_CLIENT_CONFIG_MAX (64 * 1024)
#define BCTL_REPLY_MAX (8 * 1024 * 1024) /**< largest reply body accepted, bytes */

struct bctl_client;

/**
 * bctl_client_open() - read the client configuration (g->config, else
 * $BERTH_CLIENT_CONFIG) and prepare a connection.  Prints the error.
 * Return: an exit code (BCTL_EXIT_OK with *@ret set).
 */
int bctl_client_open(const struct bctl_globals *g, const char *verb, struct bctl_client **ret);

/** bctl_client_free() - close; accepts NULL. */
void bctl_client_free(struct bctl_client *c);

/** bctl_client_broker_key() - the pinned broker public key. */
const uint8_t *bctl_client_broker_key(const struct bctl_client *c);

/**
 * bctl_client_request() - one HTTPS request on the kept-alive connection.
 * @method: "GET" or "POST"; @path: "/v1/..." (already safe for a URL);
 * @body, @len: request body for POST (may be NULL).
 * @ret_status: the HTTP status.  @ret_body: the reply parsed as JSON (a new
 * reference), or NULL when it is not JSON.
 * @ret_text, @ret_text_len: optional; the raw reply (malloc'd).
 * Return: 0 when a reply arrived (whatever its status); -EIO with @reterr
 * saying why otherwise (connection, TLS, timeout, redirect, oversize).
 */
int bctl_client_request(struct bctl_client *c, const char *method, const char *path, const char *body, size_t len,
                        long *ret_status, json_t **ret_body, char **ret_text, size_t *ret_text_len,
                        struct berth_error *reterr);

/**
 * bctl_client_set_wait() - the next requests may take @wait_ns (>= 0) more
 * than the configured timeout_ns before they fail: a long poll
 * (GET .../result?wait_ns=N) is answered only at its bound.  0 restores
 * the configured timeout.
 */
void bctl_client_set_wait(struct bctl_client *c, int64_t wait_ns);

/**
 * bctl_client_send() - bctl_client_request() with any method ("GET",
 * "POST", "PUT", "PATCH", "DELETE"), more request header lines @headers
 * ("Name: value" strings, NULL-terminated, or NULL) and the body's
 * @content_type (used when @body is not NULL).  A method other than GET
 * always sends a body (empty when @body is NULL).
 */
int bctl_client_send(struct bctl_client *c, const char *method, const char *path, const char *const *headers,
                     const char *content_type, const char *body, size_t len, long *ret_status, json_t **ret_body,
                     char **ret_text, size_t *ret_text_len, struct berth_error *reterr);

/**
 * bctl_client_download() - GET @path and, when the broker answers 200,
 * write the body to @fd as it arrives (never all in memory), adding it to
 * @hash (may be NULL).  Any other status's body (at most 64 KiB) is parsed
 * as JSON into *@ret_error (NULL when it is not JSON) and nothing is
 * written.  Instead of the client's timeout, only a transfer that moves no
 * byte for that long fails.
 * @max_bytes: a longer body fails the transfer (-EIO).
 * @ret_bytes: bytes written to @fd.
 * Return: 0 when a reply arrived whole (whatever its status; a body cut
 * short of its Content-Length is -EIO); -EIO; the write(2) error of @fd;
 * -ENOMEM.  On failure some bytes may have been written to @fd.
 */
int bctl_client_download(struct bctl_client *c, const char *path, int fd, uint64_t max_bytes,
                         struct berth_sha256 *hash, uint64_t *ret_bytes, long *ret_status, json_t **ret_error,
                         struct berth_error *reterr);

/**
 * bctl_client_fail() - print the error of a non-success reply
 * ("berthctl VERB: 403 denied: message") and return BCTL_EXIT_FAIL.
 */
int bctl_client_fail(const char *verb, long status, const json_t *body);

#endif
