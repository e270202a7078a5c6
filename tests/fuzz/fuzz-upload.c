/* SPDX-License-Identifier: MIT */
/*
 * fuzz-upload.c -- libFuzzer target for berthd's evidence upload request
 * (src/berthd/upload-request.c) and the parsers it uses: Content-Range
 * (content-range.c), query strings (query.c) and UUIDs (uuid.c).
 *
 * The input is a request as a client sends it.  Its head is framed by
 * http-framing.c (as berthd does first); a POST, PATCH or PUT is then
 * judged as the upload operation it is, from its query string,
 * Content-Range and Content-Length.  The input as one string also goes to
 * each parser alone.  Beyond "no crash" it checks:
 *   - an accepted request: a commit and a monolithic upload have a valid
 *     digest, the media type is valid, a range lies within 2^53 - 1, starts
 *     at or before its end and is exactly as long as the body; a POST that
 *     starts a session has no body;
 *   - a refusal is 400 "malformed" (or 503 "busy") with a printable message;
 *   - Content-Range: what is accepted is the canonical form, so a range
 *     from 0 prints back as the input (berthd_range_format());
 *   - a query string: each value decoded holds only visible ASCII and is
 *     at most BERTHD_QUERY_VALUE_MAX bytes;
 *   - a UUID accepted is 36 bytes of lowercase hex and dashes, version 4.
 * A violated property aborts, which libFuzzer reports as a crash.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "content-range.h"
#include "http-framing.h"
#include "query.h"
#include "upload-request.h"
#include "uuid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct berthd_http_limits lim = {
    .max_header_bytes = 4096,
    .max_fields = 16,
    .max_body_bytes = (uint64_t)1 << 40,
};

static void check_message(const char *m)
{
    if (!m[0])
        abort();
    for (; *m; m++)
        if ((unsigned char)*m < 0x20 || (unsigned char)*m > 0x7e)
            abort();
}

static void check_request(const struct berthd_upload_request *rq, uint64_t len)
{
    if (rq->length != len || !berthd_media_type_valid(rq->media_type))
        abort();
    if ((rq->op == BERTHD_UPLOAD_COMMIT || rq->monolithic) && !rq->has_digest)
        abort();
    if (rq->has_digest && (strlen(rq->digest) != 71 || strncmp(rq->digest, "sha256:", 7) != 0))
        abort();
    if (rq->op == BERTHD_UPLOAD_START && !rq->monolithic && len != 0)
        abort();
    if (rq->has_range && (rq->op == BERTHD_UPLOAD_START || rq->start > rq->end || rq->end > BERTHD_RANGE_POS_MAX ||
                          rq->end - rq->start + 1 != len))
        abort();
}

/* The request's head, framed, judged as an upload operation. */
static void fuzz_request(const char *buf, size_t size)
{
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};
    struct berthd_upload_request rq;
    enum berthd_upload_op op;
    const char *q;
    int r;

    if (berthd_http_parse_head(buf, size, &lim, &head, &why) != 1)
        return;
    switch (head.method) {
    case BERTHD_HTTP_POST: op = BERTHD_UPLOAD_START; break;
    case BERTHD_HTTP_PATCH: op = BERTHD_UPLOAD_CHUNK; break;
    case BERTHD_HTTP_PUT: op = BERTHD_UPLOAD_COMMIT; break;
    default: berthd_http_head_clear(&head); return;
    }
    q = strchr(head.target, '?');
    r = berthd_upload_request_parse(op, q ? q + 1 : NULL, head.has_content_range ? head.content_range : NULL,
                                    head.content_length, &rq, &why);
    if (r == 0)
        check_request(&rq, head.content_length);
    else if (r == -EBADMSG && why.status == 400 && strcmp(why.code, "malformed") == 0)
        check_message(why.message);
    else if (!(r == -ENOMEM && why.status == 503))
        abort();
    berthd_http_head_clear(&head);
}

/* The input as one string, to each parser. */
static void fuzz_parsers(const char *text)
{
    static const char *const keys[] = {"after", "digest", "limit", "media_type", NULL};
    char *values[4], why[160], back[BERTHD_RANGE_BUFSZ];
    uint64_t start, end;
    size_t i, j;

    if (berthd_content_range_parse(text, &start, &end) == 0) {
        if (start > end || end > BERTHD_RANGE_POS_MAX)
            abort();
        if (start == 0 && (berthd_range_format(end + 1, back) < 0 || strcmp(back, text) != 0))
            abort();
    }
    if (berthd_query_parse(text, keys, values, why, sizeof(why)) == 0) {
        for (i = 0; i < 4; i++) {
            for (j = 0; values[i] && values[i][j]; j++)
                if ((unsigned char)values[i][j] < 0x21 || (unsigned char)values[i][j] > 0x7e)
                    abort();
            if (values[i] && j > BERTHD_QUERY_VALUE_MAX)
                abort();
        }
        berthd_query_free(keys, values);
    } else {
        for (i = 0; i < 4; i++)
            if (values[i])
                abort();
    }
    if (berthd_uuid_valid(text)) {
        if (strlen(text) != BERTHD_UUID_LEN || text[14] != '4')
            abort();
        for (i = 0; text[i]; i++)
            if (!strchr("0123456789abcdef-", text[i]))
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;

    fuzz_request((const char *)data, size);
    text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_parsers(text);
    free(text);
    return 0;
}
