/* SPDX-License-Identifier: MIT */
/*
 * http-framing.h -- strict HTTP/1.1 framing of one request: its header block
 * and, when chunked, its body.
 *
 * picohttpparser (src/third_party/picohttpparser) tokenises; this module adds
 * the rules of RFC 9112 sections 2-7 and RFC 9110 section 5 that the parser
 * leaves to its caller, and decides the verdict.  A refusal is final: the
 * caller answers with the status it names and closes the connection, so that
 * no byte after a refused request is ever read as a next request.
 *
 * Every refusal, with its status and the short code for the JSON error body:
 *
 *   Line endings (RFC 9112 2.2)
 *     400 malformed      a bare LF (not after CR) or a bare CR (not before LF)
 *                        anywhere in the header block, a chunk line or a
 *                        trailer line
 *   Request line (RFC 9112 3)
 *     400 malformed      method not a token (RFC 9110 9.1); not exactly one SP
 *                        between method, request-target and HTTP-version
 *     400 malformed      request-target not in origin-form ("/" path ["?"
 *                        query]): absolute-form, authority-form and
 *                        asterisk-form are refused (RFC 9112 3.2)
 *     400 malformed      a request-target byte outside RFC 3986's pchar, "/"
 *                        and "?", or "%" not followed by two hex digits
 *     501 not_implemented CONNECT with a target that is not origin-form
 *                        (berthd is no proxy; RFC 9110 9.3.6)
 *     400 malformed      HTTP-version not "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3)
 *     505 version_not_supported  any version but HTTP/1.0 and HTTP/1.1
 *     414 uri_too_long   the request line still in its request-target when
 *                        more than max_header_bytes bytes have arrived
 *   Field lines (RFC 9112 5, RFC 9110 5)
 *     400 malformed      obs-fold: a line starting with SP or HTAB (RFC 9112 5.2)
 *     400 malformed      whitespace between a field name and its colon
 *                        (RFC 9112 5.1); an empty name, a name that is not a
 *                        token (RFC 9110 5.1), a line without a colon
 *     400 malformed      NUL, another control character but HTAB, or DEL in a
 *                        field value (RFC 9110 5.5)
 *     431 headers_too_large  more than max_fields field lines; no complete
 *                        header block within max_header_bytes (RFC 6585 5)
 *   Framing fields (RFC 9112 6)
 *     400 malformed      Content-Length not 1*DIGIT (a sign, spaces, a list
 *                        "5, 5"), over 2^64-1, or in two field lines, even if
 *                        equal (RFC 9110 8.6, RFC 9112 6.3)
 *     400 malformed      Transfer-Encoding other than exactly "chunked"
 *                        (case-insensitive): "gzip, chunked", "chunked,
 *                        chunked", "identity"; in two field lines; on
 *                        HTTP/1.0.  berthd implements no other coding and
 *                        treats every other value as broken framing (the
 *                        issue's rule), not as 501 (RFC 9112 6.1's SHOULD)
 *     400 malformed      both Transfer-Encoding and Content-Length (the
 *                        request-smuggling shape, RFC 9112 6.3 item 3)
 *     413 too_large      Content-Length over max_body_bytes
 *   Other fields
 *     400 malformed      no Host on HTTP/1.1, or more than one Host field line
 *                        (RFC 9112 3.2); its value is not checked further
 *     400 malformed      Content-Range in two field lines, or a value longer
 *                        than BERTHD_HTTP_CONTENT_RANGE_MAX bytes; its value
 *                        is only carried (content-range.h parses it)
 *     400 malformed      Connection not a comma-separated list of tokens
 *                        (RFC 9110 7.6.1)
 *     417 expectation_failed  an Expect value other than "100-continue"
 *                        (RFC 9110 10.1.1); 100-continue on HTTP/1.0 is ignored
 *   Chunked body (RFC 9112 7.1)
 *     400 malformed      chunk-size not 1*HEXDIG ("+5", " 5", "0x5") or longer
 *                        than 16 hex digits
 *     400 malformed      a chunk extension not of the form *( BWS ";" BWS
 *                        token [ BWS "=" BWS ( token / quoted-string ) ] ):
 *                        well-formed extensions are parsed and ignored
 *                        (RFC 9112 7.1.1)
 *     400 malformed      a chunk line of more than BERTHD_HTTP_CHUNK_LINE_MAX
 *                        bytes; chunk data not followed by CRLF
 *     400 malformed      a trailer field line breaking the field-line rules
 *                        above; well-formed trailer fields are parsed and
 *                        discarded (RFC 9112 7.1.2)
 *     431 headers_too_large  a trailer section of more than
 *                        BERTHD_HTTP_TRAILER_MAX bytes
 *     400 malformed      more than 100 KiB of chunk framing that is more
 *                        than 80% of the bytes received (picohttpparser's
 *                        guard against framing floods)
 *     413 too_large      the decoded body would pass max_body_bytes (refused
 *                        at the chunk-size line, before the chunk is read)
 *   Not a verdict on the request
 *     503 busy           out of memory (-ENOMEM)
 *     500 internal       invalid arguments (-EINVAL), a programming error
 *
 * Verdicts are positional: the first broken rule in byte order decides, and
 * the checks that need the whole header block (a missing Host, then 413 for
 * Content-Length, then 417) come after every line passed.  So feeding a
 * request in pieces of any size gives the verdict, status, code and message
 * that the whole request gives.  Methods: GET, POST, PUT, PATCH (RFC 5789)
 * and DELETE are routed; every other token (HEAD, OPTIONS, TRACE, CONNECT
 * with an origin-form target, unknown ones) is framed by the same rules and
 * then reported as BERTHD_HTTP_OTHER, which berthd answers with a close: 405
 * on a route (404 elsewhere) for a method RFC 9110 defines, 501 for CONNECT
 * and unknown methods (api.c).
 *
 * Pure functions over caller-owned memory; no global state.  Thread-safe
 * for distinct arguments.
 */
#ifndef BERTHD_HTTP_FRAMING_H
#define BERTHD_HTTP_FRAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "picohttpparser.h"

/** Largest max_fields accepted (berthd.json http.max_header_fields is 8-256). */
#define BERTHD_HTTP_MAX_FIELDS_LIMIT 256
/** Longest chunk-size line or trailer field line, bytes, its CRLF included. */
#define BERTHD_HTTP_CHUNK_LINE_MAX 1024
/** Largest trailer section, bytes: its field lines, the final CRLF excluded. */
#define BERTHD_HTTP_TRAILER_MAX 8192

/**
 * struct berthd_http_limits - bounds of one request.
 * @max_header_bytes: the whole header block, request line and final CRLF
 *                    CRLF included, bytes; at least 1.
 * @max_fields:       field lines, 1 to BERTHD_HTTP_MAX_FIELDS_LIMIT
 *                    (berthd.json http.max_header_fields, default 64).
 * @max_body_bytes:   the body after chunked decoding, bytes.
 */
struct berthd_http_limits {
    size_t max_header_bytes;
    size_t max_fields;
    uint64_t max_body_bytes;
};

/** Longest Content-Range value carried, bytes ("bytes 0-N/M" fits many times over). */
#define BERTHD_HTTP_CONTENT_RANGE_MAX 96

/** The methods berthd routes; everything else is BERTHD_HTTP_OTHER. */
enum berthd_http_method {
    BERTHD_HTTP_GET,
    BERTHD_HTTP_POST,
    BERTHD_HTTP_PUT,
    BERTHD_HTTP_PATCH,
    BERTHD_HTTP_DELETE,
    BERTHD_HTTP_OTHER,
};

/**
 * struct berthd_http_head - a framed request head.
 * @method:          GET, POST, PUT, PATCH, DELETE or OTHER (methods are
 *                   case-sensitive: "get" is OTHER).
 * @method_name:     the method as sent (a token, so safe to log), cut to 15 bytes.
 * @target:          malloc'd, NUL-terminated request-target in origin-form:
 *                   starts with "/", may hold "?" and a query, only RFC 3986
 *                   characters; owned by the head (berthd_http_head_clear()).
 * @minor_version:   0 or 1 (HTTP/1.0, HTTP/1.1).
 * @keep_alive:      false when the connection closes after the reply: any
 *                   "Connection: close", or HTTP/1.0 without "keep-alive".
 * @chunked:         Transfer-Encoding: chunked (then @content_length is 0).
 * @content_length:  the body's length in bytes when !@chunked; 0 when
 *                   neither field is present (RFC 9112 6.3 item 7).
 * @expect_continue: "Expect: 100-continue" on HTTP/1.1.
 * @has_content_range: a Content-Range field was sent; @content_range holds
 *                   its value (NUL-terminated, OWS trimmed, otherwise as sent:
 *                   only field-value bytes, RFC 9110 5.5), "" without one.
 * @head_len:        bytes of the header block, one ignored leading CRLF
 *                   (RFC 9112 2.2) and the final CRLF CRLF included; the body
 *                   or the next request starts there.
 */
struct berthd_http_head {
    enum berthd_http_method method;
    char method_name[16];
    char *target;
    int minor_version;
    bool keep_alive;
    bool chunked;
    uint64_t content_length;
    bool expect_continue;
    bool has_content_range;
    char content_range[BERTHD_HTTP_CONTENT_RANGE_MAX + 1];
    size_t head_len;
};

/**
 * struct berthd_http_refusal - why a request was refused.
 * @status:  the HTTP status to answer (the list at the top of this file).
 * @code:    static short machine code for the JSON error body: "malformed",
 *           "headers_too_large", "uri_too_long", "too_large",
 *           "expectation_failed", "not_implemented", "version_not_supported",
 *           "busy" or "internal".
 * @message: one NUL-terminated English sentence naming the rule broken and
 *           where (line numbers, never request bytes), printable ASCII only.
 */
struct berthd_http_refusal {
    int status;
    const char *code;
    char message[160];
};

/**
 * berthd_http_parse_head() - frame the header block at the start of @buf.
 * @buf: the bytes received so far on the connection for this request, from
 *       its first byte (at most one CRLF before the request line is
 *       ignored); it may hold more than the head (the body, a pipelined
 *       request), which is not looked at.
 * @len: bytes at @buf.  Passing more than @lim->max_header_bytes is how the
 *       caller learns that a head did not fit (431 or 414): max_header_bytes
 *       + 1 is enough.
 * @lim: the bounds; @lim->max_fields 1 to BERTHD_HTTP_MAX_FIELDS_LIMIT.
 * @ret_head: filled on 1 only (overwritten: clear a previous head first).
 * @why: filled on every negative return, untouched otherwise.
 *
 * Re-parses from the first byte on each call (cost linear in @len), so it
 * may be called again whenever more bytes arrive; the verdict on a prefix is
 * either "need more" or the verdict on any longer buffer (see the top).
 *
 * Return: 1 a complete head was framed into *@ret_head; 0 more bytes are
 * needed (never when @len > @lim->max_header_bytes); -EBADMSG refused, see
 * *@why (4xx or 5xx from the list at the top); -ENOMEM (*@why 503 busy);
 * -EINVAL a NULL argument or limits out of range (*@why 500 internal, when
 * @why is not NULL).
 */
int berthd_http_parse_head(const char *buf, size_t len, const struct berthd_http_limits *lim,
                           struct berthd_http_head *ret_head, struct berthd_http_refusal *why);

/** berthd_http_head_clear() - free @head's target and zero it; NULL is fine. */
void berthd_http_head_clear(struct berthd_http_head *head);

/**
 * struct berthd_http_chunked - an incremental chunked-body decoder
 * (RFC 9112 7.1) around picohttpparser's phr_decode_chunked().
 *
 * Set up with berthd_http_chunked_init(); the members are private.  It owns
 * no memory (no clean-up needed) and holds at most one framing line
 * (BERTHD_HTTP_CHUNK_LINE_MAX bytes) of the input between calls.
 */
struct berthd_http_chunked {
    struct phr_chunked_decoder pico;
    uint64_t max_body_bytes;
    uint64_t decoded;
    size_t trailer_bytes;
    unsigned chunks, trailers;
    int state;
    size_t line_len;
    char line[BERTHD_HTTP_CHUNK_LINE_MAX];
};

/**
 * berthd_http_chunked_init() - start decoding one chunked body.
 * @max_body_bytes: the largest decoded body, bytes (413 beyond).
 */
void berthd_http_chunked_init(struct berthd_http_chunked *c, uint64_t max_body_bytes);

/**
 * berthd_http_chunked_feed() - decode the next @len raw bytes at @in.
 * @c:    a decoder from berthd_http_chunked_init().
 * @in:   the bytes that follow those of the previous call (the first call
 *        gets the bytes right after the head); not modified.
 * @body: the decoded data is appended (buf.h); its own bound, when smaller
 *        than max_body_bytes, also answers 413.
 * @ret_used: on 0, set to @len; on 1, the bytes of @in that belonged to the
 *        body and its trailer section: the rest of @in is the next request's.
 * @why:  filled on every negative return.
 *
 * Return: 0 all of @in was consumed and more is needed; 1 the body is
 * complete (a further call returns 1 again with *@ret_used 0); -EBADMSG
 * refused (*@why: 400, 413 or 431 from the list at the top; the decoder must
 * not be fed again: that gives -EINVAL); -ENOMEM appending to @body failed
 * (*@why 503 busy); -EINVAL a NULL argument or a decoder that refused
 * before (*@why 500 internal, when @why is not NULL).  @body may have grown
 * before a refusal.
 */
int berthd_http_chunked_feed(struct berthd_http_chunked *c, const char *in, size_t len, struct berth_buf *body,
                             size_t *ret_used, struct berthd_http_refusal *why);

#endif /* BERTHD_HTTP_FRAMING_H */
