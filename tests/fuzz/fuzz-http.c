/* SPDX-License-Identifier: MIT */
/*
 * fuzz-http.c -- libFuzzer target for berthd's strict HTTP/1.1 framing
 * (src/berthd/http-framing.c) and the picohttpparser it wraps.
 *
 * The input is what a client sends on a connection: a head, then a body
 * and maybe more.  It checks, beyond "no crash":
 *   - the verdict on the whole input equals the verdict when the input
 *     arrives in two pieces, split at a point taken from the input (the
 *     first piece needs more bytes, or gives the same verdict): the same
 *     status, code and message, or the same head;
 *   - a refusal has one of the documented statuses and codes, a printable
 *     message, and never the sentence http-framing.c uses when the parser
 *     refused a line that its own rules found nothing wrong with;
 *   - an accepted head is no longer than the input or max_header_bytes, has
 *     CRLF line ends only and no control byte but CR, LF and HTAB, an
 *     origin-form target, version 1.0 or 1.1, and a Content-Length within
 *     max_body_bytes;
 *   - a chunked body decodes to the same bytes, the same verdict and the
 *     same number of used bytes whole and in two pieces; the used bytes are
 *     never more than were fed, the decoded length never more than
 *     max_body_bytes.
 * A violated property aborts, which libFuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-framing.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small limits, so that the fuzzer reaches them. */
static const struct berthd_http_limits lim = {
    .max_header_bytes = 2048,
    .max_fields = 16,
    .max_body_bytes = 4096,
};

static void check_refusal(const struct berthd_http_refusal *why)
{
    static const struct {
        int status;
        const char *code;
    } known[] = {
        {400, "malformed"},
        {413, "too_large"},
        {414, "uri_too_long"},
        {417, "expectation_failed"},
        {431, "headers_too_large"},
        {501, "not_implemented"},
        {505, "version_not_supported"},
    };
    size_t i;
    bool ok = false;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        ok |= why->status == known[i].status && strcmp(why->code, known[i].code) == 0;
    if (!ok || !why->message[0] || strstr(why->message, "(the parser refused it)"))
        abort();
    for (i = 0; why->message[i]; i++)
        if (why->message[i] < 0x20 || why->message[i] > 0x7e)
            abort(); /* request bytes echoed */
}

static void check_head(const uint8_t *data, size_t size, const struct berthd_http_head *h)
{
    size_t i;

    if (h->head_len > size || h->head_len > lim.max_header_bytes || h->head_len < 16)
        abort();
    for (i = 0; i < h->head_len; i++) {
        uint8_t c = data[i];
        if (c == '\n' && (i == 0 || data[i - 1] != '\r'))
            abort(); /* a bare LF */
        if (c == '\r' && (i + 1 == h->head_len || data[i + 1] != '\n'))
            abort(); /* a bare CR */
        if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') || c == 0x7f)
            abort();
    }
    if (memcmp(data + h->head_len - 4, "\r\n\r\n", 4) != 0 || h->target[0] != '/' ||
        (h->minor_version != 0 && h->minor_version != 1) || h->content_length > lim.max_body_bytes ||
        (h->chunked && h->content_length))
        abort();
}

static bool same_refusal(const struct berthd_http_refusal *a, const struct berthd_http_refusal *b)
{
    return a->status == b->status && strcmp(a->code, b->code) == 0 && strcmp(a->message, b->message) == 0;
}

static bool same_head(const struct berthd_http_head *a, const struct berthd_http_head *b)
{
    return a->method == b->method && strcmp(a->method_name, b->method_name) == 0 && strcmp(a->target, b->target) == 0 &&
           a->minor_version == b->minor_version && a->keep_alive == b->keep_alive && a->chunked == b->chunked &&
           a->content_length == b->content_length && a->expect_continue == b->expect_continue &&
           a->has_content_range == b->has_content_range && strcmp(a->content_range, b->content_range) == 0 &&
           a->head_len == b->head_len;
}

struct decoded {
    int r;
    size_t used;
    struct berthd_http_refusal why;
    struct berth_buf body;
};

/* Decode @len bytes at @in fed as [0, @split) then the rest. */
static void decode(const char *in, size_t len, size_t split, struct decoded *d)
{
    struct berthd_http_chunked c;
    size_t used = 0;

    memset(d, 0, sizeof(*d));
    berthd_http_chunked_init(&c, lim.max_body_bytes);
    d->r = berthd_http_chunked_feed(&c, in, split, &d->body, &used, &d->why);
    if (d->r >= 0 && used > split)
        abort();
    d->used = used;
    if (d->r == 0) {
        if (used != split)
            abort();
        d->r = berthd_http_chunked_feed(&c, in + split, len - split, &d->body, &used, &d->why);
        if (d->r >= 0 && used > len - split)
            abort();
        d->used += used;
    }
    if (d->r < 0)
        check_refusal(&d->why);
    if (d->body.len > lim.max_body_bytes || (d->r == 0 && d->used != len))
        abort();
}

static void check_chunked(const char *in, size_t len, size_t split)
{
    struct decoded whole, pieces;

    decode(in, len, len, &whole);
    decode(in, len, split, &pieces);
    if (whole.r != pieces.r || whole.body.len != pieces.body.len ||
        (whole.body.len && memcmp(whole.body.data, pieces.body.data, whole.body.len) != 0))
        abort();
    if (whole.r < 0 && !same_refusal(&whole.why, &pieces.why))
        abort();
    if (whole.r == 1 && whole.used != pieces.used)
        abort();
    berth_buf_free(&whole.body);
    berth_buf_free(&pieces.body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct berthd_http_head whole = {0}, pieces = {0};
    struct berthd_http_refusal wwhy = {0}, pwhy = {0};
    size_t split, rest;
    int r, q;

    if (size == 0)
        return 0;
    split = ((size_t)data[size - 1] * 131 + data[0]) % (size + 1);
    r = berthd_http_parse_head(buf, size, &lim, &whole, &wwhy);
    q = berthd_http_parse_head(buf, split, &lim, &pieces, &pwhy);
    if (q == 0)
        q = berthd_http_parse_head(buf, size, &lim, &pieces, &pwhy);
    if (q != r || (r < 0 && !same_refusal(&wwhy, &pwhy)) || (r == 1 && !same_head(&whole, &pieces)))
        abort();
    if (r == 0 && size > lim.max_header_bytes)
        abort();
    if (r < 0)
        check_refusal(&wwhy);
    if (r == 1) {
        check_head(data, size, &whole);
        rest = size - whole.head_len;
        if (whole.chunked)
            check_chunked(buf + whole.head_len, rest, ((size_t)data[size / 2] * 257 + size) % (rest + 1));
    }
    berthd_http_head_clear(&whole);
    berthd_http_head_clear(&pieces);
    return 0;
}
