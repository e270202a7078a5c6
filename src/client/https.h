/* SPDX-License-Identifier: MIT */
/*
 * https.h -- the HTTPS client of berth's programs (berthctl, berth-worker)
 * for berthd's API, over libcurl.  Not installed; not part of libberth,
 * which does no network I/O (DESIGN.md).
 *
 * The client configuration (client.json, docs/berthd.md):
 *   {"schema_version": 1, "url": "https://HOST:PORT", "broker_public_key":
 *    "<43 base64url>", "certificate": PATH, "private_key": PATH, "ca": PATH,
 *    "timeout_ns": N (optional, 1 ms to 1 h, default 30 s)}
 * Those files are read through the core's no-follow helpers (the private
 * key: the caller's, mode 0600 or stricter) and handed to libcurl as memory
 * blobs; TLS 1.3 is required, the server's name and certificate are
 * verified against the CA bundle, only https is spoken, no proxy is used,
 * redirects are refused, and every reply body is bounded.
 *
 * One struct berth_https is one kept-alive connection: use it from one
 * thread at a time (distinct clients may be used concurrently).
 */
#ifndef BERTH_HTTPS_H
#define BERTH_HTTPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "digest.h"
#include "sign.h"

#define BERTH_HTTPS_CONFIG_MAX (64 * 1024)
#define BERTH_HTTPS_REPLY_MAX (8 * 1024 * 1024) /**< largest reply body accepted, bytes */

struct berth_https;

/**
 * berth_https_open() - read the client configuration at the absolute @path
 * and prepare a connection (nothing is sent yet).
 * Return: 0; -EBADMSG (the configuration is invalid: reterr names the
 * member); the errors of reading it or its certificate, key and CA files
 * (-ENOENT, -EPERM, ...); -EIO (libcurl cannot be set up); -ENOMEM.
 */
int berth_https_open(const char *path, struct berth_https **ret, struct berth_error *reterr);

/** berth_https_free() - close the connection and wipe the key; accepts NULL. */
void berth_https_free(struct berth_https *c);

/** berth_https_broker_key() - the pinned broker public key (32 bytes). */
const uint8_t *berth_https_broker_key(const struct berth_https *c);

/**
 * berth_https_request() - berth_https_send() with a JSON body
 * ("application/json") and no extra headers.
 */
int berth_https_request(struct berth_https *c, const char *method, const char *path, const char *body, size_t len,
                        long *ret_status, json_t **ret_body, char **ret_text, size_t *ret_text_len,
                        struct berth_error *reterr);

/**
 * berth_https_set_wait() - the next requests may take @wait_ns (>= 0,
 * nanoseconds) more than the configured timeout_ns before they fail: a
 * long poll is answered only at its bound.  0 restores the configured
 * timeout.
 */
void berth_https_set_wait(struct berth_https *c, int64_t wait_ns);

/**
 * berth_https_send() - one HTTPS request on the kept-alive connection.
 * @method: "GET", "POST", "PUT", "PATCH" or "DELETE" (a method other than
 * GET always sends a body, empty when @body is NULL); @path: "/v1/..."
 * (already safe for a URL); @headers: more request header lines ("Name:
 * value", NULL-terminated) or NULL; @content_type: of @body, when not NULL.
 * @ret_status: the HTTP status.  @ret_body: optional; the reply parsed as
 * JSON (a new reference), or NULL when it is not JSON.  @ret_text,
 * @ret_text_len: optional; the raw reply (malloc'd).
 * Return: 0 when a reply arrived (whatever its status); -EIO with @reterr
 * saying why otherwise (connection, TLS, timeout, redirect, a reply over
 * BERTH_HTTPS_REPLY_MAX); -ENOMEM.
 */
int berth_https_send(struct berth_https *c, const char *method, const char *path, const char *const *headers,
                     const char *content_type, const char *body, size_t len, long *ret_status, json_t **ret_body,
                     char **ret_text, size_t *ret_text_len, struct berth_error *reterr);

/**
 * berth_https_download() - GET @path and, when the broker answers 200,
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
int berth_https_download(struct berth_https *c, const char *path, int fd, uint64_t max_bytes,
                         struct berth_sha256 *hash, uint64_t *ret_bytes, long *ret_status, json_t **ret_error,
                         struct berth_error *reterr);

/**
 * berth_https_error() - @reterr set to the error of a non-success reply,
 * "STATUS CODE: message" from berthd's error body ({"error", "message"}),
 * else "the broker answered STATUS".  Return: -EPROTO.
 */
int berth_https_error(long status, const json_t *body, struct berth_error *reterr);

#endif /* BERTH_HTTPS_H */
