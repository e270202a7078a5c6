/* SPDX-License-Identifier: MIT */
/*
 * http-probe-reply.h -- where the HTTP/1.1 responses in a byte stream from
 * a server begin and end, for http-probe (tests/cli/http-probe.c).
 *
 * The probe needs to know how many responses came back on one connection
 * and with which status, so that a second response (a smuggled or pipelined
 * request that was served) is seen as such.  This is the framing of RFC 9112
 * section 6.3 for responses, from the client's side: a status line, field
 * lines up to an empty line, then a body of Content-Length bytes, or chunked
 * (section 7.1, chunk extensions and trailers skipped), or none for 1xx, 204
 * and 304, or else everything up to the end of the connection.  Field lines
 * other than Content-Length and Transfer-Encoding are skipped unparsed; a
 * bare LF ends a line too.  A response to HEAD is not recognised as such
 * (the probe does not know what it sent), so its declared length is read as
 * a body.  Bytes where a status line should be that do not start one
 * ("HTTP/1.x NNN") are reported once, and everything after them is ignored.
 *
 * Not thread-safe per object; no allocation.
 */
#ifndef BERTH_HTTP_PROBE_REPLY_H
#define BERTH_HTTP_PROBE_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bytes of one status or field line kept (longer lines are cut, not refused). */
#define PROBE_REPLY_LINE_MAX 1024

/** Status passed to the callback for bytes that start no response. */
#define PROBE_REPLY_UNFRAMED (-1)

enum probe_reply_state {
    PROBE_REPLY_STATUS,      /* before a status line */
    PROBE_REPLY_FIELDS,      /* in the field lines */
    PROBE_REPLY_BODY,        /* @left bytes of a Content-Length body to go */
    PROBE_REPLY_CHUNK_SIZE,  /* before a chunk-size line */
    PROBE_REPLY_CHUNK_DATA,  /* @left bytes of chunk data to go */
    PROBE_REPLY_CHUNK_CRLF,  /* the line end after chunk data */
    PROBE_REPLY_TRAILERS,    /* trailer lines after the last chunk */
    PROBE_REPLY_UNTIL_CLOSE, /* a body that ends with the connection */
    PROBE_REPLY_IGNORE,      /* not HTTP: the rest is ignored */
};

/*
 * struct probe_replies - the framing state of one connection; zero it (or
 * use probe_replies_init()) before the first byte.
 * @complete: responses read to their end so far.
 * @status:   the status of the response being read (or last read), 0 before
 *            the first status line.
 */
struct probe_replies {
    enum probe_reply_state state;
    char line[PROBE_REPLY_LINE_MAX];
    size_t line_len;
    uint64_t left;
    bool chunked, has_length;
    uint64_t length;
    int status;
    unsigned complete;
};

/** Callback for each status line: @status is 100..999 or PROBE_REPLY_UNFRAMED. */
typedef void probe_status_cb(int status, void *arg);

/** probe_replies_init() - a connection's framing before its first byte. */
void probe_replies_init(struct probe_replies *r);

/**
 * probe_replies_feed() - take the next @len bytes at @data from the server.
 * @on_status: called (with @arg) for every status line, as soon as it is
 *             complete, before this function returns; may be NULL.
 * Return: the number of complete responses so far (r->complete).
 */
unsigned probe_replies_feed(struct probe_replies *r, const char *data, size_t len, probe_status_cb *on_status,
                            void *arg);

#endif /* BERTH_HTTP_PROBE_REPLY_H */
