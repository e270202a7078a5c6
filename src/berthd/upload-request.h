/* SPDX-License-Identifier: MIT */
/*
 * upload-request.h -- what one evidence upload request asks for, from its
 * method, query string, Content-Range and body length, before any session
 * or store is looked at (docs/evidence.md, "Uploads").  The shape is the
 * OCI distribution spec's chunked blob upload:
 *
 *   POST  /v1/evidence/uploads[?size=N]           start a session
 *   POST  /v1/evidence/uploads?digest=D[&media_type=T][&size=N]
 *                                                 monolithic: the body is
 *                                                 the whole object
 *   PATCH /v1/evidence/uploads/<uuid>             a chunk, Content-Range
 *                                                 "<start>-<end>" optional
 *   PUT   /v1/evidence/uploads/<uuid>?digest=D[&media_type=T]
 *                                                 commit, with an optional
 *                                                 last chunk as body
 *
 * Every refusal is 400 "malformed" with one sentence naming the rule:
 *   - a query parameter the operation does not take, twice, or malformed
 *     (query.h);
 *   - digest not "sha256:" and 64 lowercase hex digits;
 *   - media_type not a type "/" subtype of RFC 6838 section 4.2
 *     restricted-names (at most 127 bytes each, no parameters);
 *   - size not a decimal number 0..2^53-1 without leading zeros, or, on a
 *     monolithic POST, not the body's length;
 *   - media_type without digest on a POST (the media type comes with the
 *     digest, at commit);
 *   - a body or a Content-Range on a POST that starts a session;
 *   - a Content-Range on a monolithic POST;
 *   - a Content-Range that is not content-range.h's form, on an empty body,
 *     or whose length (end - start + 1) is not the body's length.
 * Whether a chunk starts at the session's offset (416 otherwise) is the
 * caller's to check.
 *
 * Pure functions; thread-safe.
 */
#ifndef BERTHD_UPLOAD_REQUEST_H
#define BERTHD_UPLOAD_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include <berth/plugin.h>

#include "http-framing.h"

/** Longest media type accepted: two RFC 6838 restricted-names and the "/". */
#define BERTHD_MEDIA_TYPE_MAX 255
/** The media type of an upload that names none. */
#define BERTHD_MEDIA_TYPE_DEFAULT "application/octet-stream"

/** What the request does. */
enum berthd_upload_op {
    BERTHD_UPLOAD_START,  /* POST: a session, or with ?digest= a monolithic upload */
    BERTHD_UPLOAD_CHUNK,  /* PATCH */
    BERTHD_UPLOAD_COMMIT, /* PUT */
};

/**
 * struct berthd_upload_request - a parsed upload request.
 * @monolithic:  a POST with a digest: the body is the whole object.
 * @has_digest:  @digest holds "sha256:<hex>" (a commit always has one).
 * @media_type:  as given, or BERTHD_MEDIA_TYPE_DEFAULT.
 * @has_size:    @size is the declared length of the whole object (POST).
 * @has_range:   a Content-Range was sent: the chunk is bytes @start to
 *               @end (inclusive) of the object.
 * @length:      the body's length, bytes: the chunk (PATCH, PUT) or the
 *               object (monolithic POST).
 */
struct berthd_upload_request {
    enum berthd_upload_op op;
    bool monolithic;
    bool has_digest;
    char digest[BERTH_DIGEST_BUFSZ];
    char media_type[BERTHD_MEDIA_TYPE_MAX + 1];
    bool has_size;
    uint64_t size;
    bool has_range;
    uint64_t start, end;
    uint64_t length;
};

/**
 * berthd_upload_request_parse() - judge one upload request.
 * @op:            which one (the route).
 * @query:         the bytes after "?" (NUL-terminated), or NULL.
 * @content_range: the Content-Range value, or NULL when none was sent.
 * @body_len:      the request body's length, bytes.
 * @ret:           filled on 0.
 * @why:           on -EBADMSG: status 400, code "malformed", the rule.
 * Return: 0; -EBADMSG; -ENOMEM (*@why 503 busy); -EINVAL (a NULL @ret or
 * @why, an unknown @op).
 */
int berthd_upload_request_parse(enum berthd_upload_op op, const char *query, const char *content_range,
                                uint64_t body_len, struct berthd_upload_request *ret, struct berthd_http_refusal *why);

/**
 * berthd_media_type_valid() - whether @text is type "/" subtype, each an
 * RFC 6838 section 4.2 restricted-name of 1 to 127 bytes.  False for NULL.
 */
bool berthd_media_type_valid(const char *text);

#endif
