/* SPDX-License-Identifier: MIT */
/* upload-request.c -- one evidence upload request, judged; see upload-request.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "content-range.h"
#include "digest.h"
#include "macro.h"
#include "query.h"
#include "upload-request.h"

#define RESTRICTED_NAME_MAX 127

static int refuse(struct berthd_http_refusal *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int refuse(struct berthd_http_refusal *why, const char *fmt, ...)
{
    va_list ap;

    why->status = 400;
    why->code = "malformed";
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof(why->message), fmt, ap);
    va_end(ap);
    return -EBADMSG;
}

static bool alnum(char c)
{
    return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

/* The length of the restricted-name at @p (RFC 6838 4.2), 0 when there is none. */
static size_t restricted_name(const char *p)
{
    size_t n = 0;

    if (!alnum(p[0]))
        return 0;
    while (p[n] && (alnum(p[n]) || strchr("!#$&-^_.+", p[n])))
        n++;
    return n <= RESTRICTED_NAME_MAX ? n : 0;
}

bool berthd_media_type_valid(const char *text)
{
    size_t n;

    if (!text || !(n = restricted_name(text)) || text[n] != '/')
        return false;
    text += n + 1;
    n = restricted_name(text);
    return n && text[n] == '\0';
}

static bool digest_valid(const char *s)
{
    uint8_t raw[BERTH_SHA256_LEN];

    return berth_digest_parse(s, raw) == 0;
}

/* A decimal 0..2^53-1, no sign, no leading zero. */
static bool size_value(const char *s, uint64_t *ret)
{
    uint64_t v = 0;
    size_t i;

    if (!s[0] || (s[0] == '0' && s[1]) || strlen(s) > 16)
        return false;
    for (i = 0; s[i]; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > BERTHD_RANGE_POS_MAX)
        return false;
    *ret = v;
    return true;
}

/* The query members of @op: digest, media_type, and for a POST size. */
static int take_query(const char *query, struct berthd_upload_request *rq, struct berthd_http_refusal *why)
{
    static const char *const post_keys[] = {"digest", "media_type", "size", NULL};
    static const char *const put_keys[] = {"digest", "media_type", NULL};
    static const char *const patch_keys[] = {NULL};
    const char *const *keys = rq->op == BERTHD_UPLOAD_START ? post_keys
                              : rq->op == BERTHD_UPLOAD_COMMIT ? put_keys
                                                               : patch_keys;
    char *v[ELEMENTSOF(post_keys)] = {0};
    char msg[sizeof(why->message)] = "";
    int r;

    r = berthd_query_parse(query, keys, v, msg, sizeof(msg));
    if (r == -ENOMEM) {
        why->status = 503;
        why->code = "busy";
        snprintf(why->message, sizeof(why->message), "out of memory; retry later");
        return r;
    }
    if (r < 0)
        return refuse(why, "%s", msg);
    r = 0;
    if (keys[0] && v[0]) {
        if (!digest_valid(v[0]))
            r = refuse(why, "digest must be sha256: and 64 lowercase hex digits");
        else {
            rq->has_digest = true;
            snprintf(rq->digest, sizeof(rq->digest), "%s", v[0]);
        }
    }
    if (r == 0 && keys[0] && v[1]) {
        if (!berthd_media_type_valid(v[1]))
            r = refuse(why, "media_type must be a type/subtype such as text/plain (RFC 6838 4.2; no parameters)");
        else
            snprintf(rq->media_type, sizeof(rq->media_type), "%s", v[1]);
    }
    if (r == 0 && rq->op == BERTHD_UPLOAD_START && v[2]) {
        if (!size_value(v[2], &rq->size))
            r = refuse(why, "size must be a decimal byte count (0 to 2^53-1, no leading zeros)");
        rq->has_size = r == 0;
    }
    if (r == 0 && rq->op == BERTHD_UPLOAD_START && v[1] && !v[0])
        r = refuse(why, "media_type is given with the digest: on a monolithic POST or at commit");
    berthd_query_free(keys, v);
    return r;
}

int berthd_upload_request_parse(enum berthd_upload_op op, const char *query, const char *content_range,
                                uint64_t body_len, struct berthd_upload_request *ret, struct berthd_http_refusal *why)
{
    struct berthd_upload_request rq = {.op = op, .length = body_len};
    int r;

    if (!ret || !why || (op != BERTHD_UPLOAD_START && op != BERTHD_UPLOAD_CHUNK && op != BERTHD_UPLOAD_COMMIT))
        return -EINVAL;
    snprintf(rq.media_type, sizeof(rq.media_type), "%s", BERTHD_MEDIA_TYPE_DEFAULT);
    if ((r = take_query(query, &rq, why)) < 0)
        return r;
    if (op == BERTHD_UPLOAD_COMMIT && !rq.has_digest)
        return refuse(why, "a commit (PUT) needs ?digest=sha256:<hex> of the whole object");
    if (op == BERTHD_UPLOAD_START) {
        rq.monolithic = rq.has_digest;
        if (content_range)
            return refuse(why, "a POST takes no Content-Range: send chunks with PATCH");
        if (!rq.monolithic && body_len)
            return refuse(why, "a POST without ?digest= starts an upload and takes no body; a monolithic upload "
                               "names its digest");
        if (rq.monolithic && rq.has_size && rq.size != body_len)
            return refuse(why, "size is %llu but the body holds %llu bytes", (unsigned long long)rq.size,
                          (unsigned long long)body_len);
    } else if (content_range) {
        if (berthd_content_range_parse(content_range, &rq.start, &rq.end) < 0)
            return refuse(why, "Content-Range must be <start>-<end>, the chunk's first and last byte (decimal, "
                               "inclusive)");
        if (body_len == 0)
            return refuse(why, "a Content-Range names at least one byte, but the body is empty");
        if (rq.end - rq.start + 1 != body_len)
            return refuse(why, "the Content-Range names %llu bytes but the body holds %llu",
                          (unsigned long long)(rq.end - rq.start + 1), (unsigned long long)body_len);
        rq.has_range = true;
    }
    *ret = rq;
    return 0;
}
