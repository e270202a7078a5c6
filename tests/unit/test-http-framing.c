/* SPDX-License-Identifier: MIT */
/*
 * test-http-framing.c -- berthd's strict HTTP/1.1 framing (http-framing.h).
 *
 * Every rule both ways: the accepted shape and each refused shape with its
 * exact status and code.  Every head is also parsed prefix by prefix, as a
 * client sending one byte at a time would deliver it, and every chunked
 * body is fed whole, byte by byte and in odd pieces: the verdict (status,
 * code and message), the head, the decoded body and the bytes used must be
 * the same each time.
 */
#include "testutil.h"

#include "http-framing.h"
#include "macro.h"

static const struct berthd_http_limits limits = {
    .max_header_bytes = 16384,
    .max_fields = 64,
    .max_body_bytes = 1 << 20,
};

static void same_refusal(const struct berthd_http_refusal *a, const struct berthd_http_refusal *b)
{
    ck_assert_int_eq(a->status, b->status);
    ck_assert_str_eq(a->code, b->code);
    ck_assert_str_eq(a->message, b->message);
}

static void same_head(const struct berthd_http_head *a, const struct berthd_http_head *b)
{
    ck_assert_int_eq(a->method, b->method);
    ck_assert_str_eq(a->method_name, b->method_name);
    ck_assert_str_eq(a->target, b->target);
    ck_assert_int_eq(a->minor_version, b->minor_version);
    ck_assert_int_eq(a->keep_alive, b->keep_alive);
    ck_assert_int_eq(a->chunked, b->chunked);
    ck_assert_uint_eq(a->content_length, b->content_length);
    ck_assert_int_eq(a->expect_continue, b->expect_continue);
    ck_assert_uint_eq(a->head_len, b->head_len);
}

/*
 * Parse @len bytes at @buf whole, then its prefixes in order (every one up
 * to 4 KiB, a sample beyond): each prefix must need more bytes until the
 * first one with a verdict, which must be the whole buffer's.
 */
static int parse(const char *buf, size_t len, const struct berthd_http_limits *lim, struct berthd_http_head *head,
                 struct berthd_http_refusal *why)
{
    int r = berthd_http_parse_head(buf, len, lim, head, why);
    size_t n, step = len <= 4096 ? 1 : len / 1024;

    for (n = 0; n <= len; n += (n + step < len ? step : 1)) {
        struct berthd_http_head h = {0};
        struct berthd_http_refusal w = {0};
        int q = berthd_http_parse_head(buf, n, lim, &h, &w);

        if (q == 0) {
            ck_assert_msg(n < len || r == 0, "the whole buffer needs more, yet gave %d", r);
            continue;
        }
        ck_assert_msg(q == r, "prefix of %zu bytes: %d (%s), whole %zu bytes: %d", n, q, q < 0 ? w.message : "", len,
                      r);
        if (q < 0)
            same_refusal(&w, why);
        else
            same_head(&h, head);
        berthd_http_head_clear(&h);
        break;
    }
    return r;
}

/* @req (a C string) is accepted; *@head is filled. */
static void accepted_lim(const char *req, const struct berthd_http_limits *lim, struct berthd_http_head *head)
{
    struct berthd_http_refusal why = {0};
    int r = parse(req, strlen(req), lim, head, &why);

    ck_assert_msg(r == 1, "refused (%d, %d %s): %s", r, why.status, why.message, req);
}

static void accepted(const char *req, struct berthd_http_head *head)
{
    accepted_lim(req, &limits, head);
}

/* @len bytes at @req are refused with @status and @code; returns the refusal. */
static struct berthd_http_refusal refused_bytes(const char *req, size_t len, const struct berthd_http_limits *lim,
                                                int status, const char *code)
{
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};
    int r = parse(req, len, lim, &head, &why);

    ck_assert_msg(r == -EBADMSG, "not refused (%d): %.*s", r, (int)len, req);
    ck_assert_msg(why.status == status, "status %d, not %d (%s): %.*s", why.status, status, why.message, (int)len, req);
    ck_assert_str_eq(why.code, code);
    ck_assert_uint_gt(strlen(why.message), 10);
    return why;
}

static struct berthd_http_refusal refused(const char *req, int status)
{
    static const char *const codes[600] = {
        [400] = "malformed",
        [413] = "too_large",
        [414] = "uri_too_long",
        [417] = "expectation_failed",
        [431] = "headers_too_large",
        [501] = "not_implemented",
        [505] = "version_not_supported",
    };

    return refused_bytes(req, strlen(req), &limits, status, codes[status]);
}

/* refused() whose message holds @part. */
static void refused_saying(const char *req, int status, const char *part)
{
    struct berthd_http_refusal why = refused(req, status);

    ck_assert_msg(strstr(why.message, part), "\"%s\" does not say \"%s\"", why.message, part);
}

#define GET_HOST "GET / HTTP/1.1\r\nHost: berth\r\n"

/* ------------------------------------------------------------------------ */
/* Accepted heads                                                            */

START_TEST(post_jobs)
{
    static const char req[] = "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:8443\r\nUser-Agent: curl/7.88.1\r\n"
                              "Accept: */*\r\nContent-Type: application/json\r\nContent-Length: 17\r\n\r\n"
                              "{\"id\":\"job-0001\"}";
    struct berthd_http_head head = {0};

    accepted(req, &head);
    ck_assert_int_eq(head.method, BERTHD_HTTP_POST);
    ck_assert_str_eq(head.method_name, "POST");
    ck_assert_str_eq(head.target, "/v1/jobs");
    ck_assert_int_eq(head.minor_version, 1);
    ck_assert(head.keep_alive);
    ck_assert(!head.chunked);
    ck_assert_uint_eq(head.content_length, 17);
    ck_assert(!head.expect_continue);
    ck_assert_uint_eq(head.head_len, strlen(req) - 17);
    berthd_http_head_clear(&head);
    ck_assert_ptr_null(head.target);
    berthd_http_head_clear(&head);
    berthd_http_head_clear(NULL);
}
END_TEST

START_TEST(get_with_query)
{
    struct berthd_http_head head = {0};

    accepted("GET /v1/jobs/job-1/result?after=5&wait=%20x HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    ck_assert_int_eq(head.method, BERTHD_HTTP_GET);
    ck_assert_str_eq(head.target, "/v1/jobs/job-1/result?after=5&wait=%20x");
    ck_assert_uint_eq(head.content_length, 0);
    berthd_http_head_clear(&head);
    /* Every RFC 3986 character origin-form allows. */
    accepted("GET /azAZ09-._~!$&'()*+,;=:@/?a/?b%7e HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(field_values)
{
    struct berthd_http_head head = {0};

    /* OWS around values, HTAB inside, obs-text, an empty value, an empty Host. */
    accepted("GET / HTTP/1.1\r\nHost:\r\nX-A: \t a\tb \t\r\nX-B: caf\xc3\xa9\r\nX-C:\r\nX-D: \"q\" (c)\r\n\r\n", &head);
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(http10)
{
    struct berthd_http_head head = {0};

    accepted("GET /v1/health HTTP/1.0\r\n\r\n", &head); /* no Host needed */
    ck_assert_int_eq(head.minor_version, 0);
    ck_assert(!head.keep_alive);
    berthd_http_head_clear(&head);
    accepted("GET / HTTP/1.0\r\nHost: b\r\nConnection: Keep-Alive\r\n\r\n", &head);
    ck_assert(head.keep_alive);
    berthd_http_head_clear(&head);
    accepted("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", &head);
    ck_assert(!head.keep_alive);
    berthd_http_head_clear(&head);
    refused("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400);
}
END_TEST

START_TEST(connection)
{
    struct berthd_http_head head = {0};

    accepted(GET_HOST "Connection: CLOSE\r\n\r\n", &head);
    ck_assert(!head.keep_alive);
    berthd_http_head_clear(&head);
    accepted(GET_HOST "Connection: keep-alive, Upgrade\r\n\r\n", &head);
    ck_assert(head.keep_alive);
    berthd_http_head_clear(&head);
    accepted(GET_HOST "Connection: , te ,, close ,\r\nConnection: keep-alive\r\n\r\n", &head);
    ck_assert(!head.keep_alive);
    berthd_http_head_clear(&head);
    accepted(GET_HOST "Connection: closed\r\n\r\n", &head); /* not the token close */
    ck_assert(head.keep_alive);
    berthd_http_head_clear(&head);
    refused(GET_HOST "Connection: cl ose\r\n\r\n", 400);
    refused(GET_HOST "Connection: close;x\r\n\r\n", 400);
    refused(GET_HOST "Connection: \"close\"\r\n\r\n", 400);
}
END_TEST

/* Content-Range is carried for the upload parser, once, bounded. */
START_TEST(content_range)
{
    struct berthd_http_head head = {0};
    char req[512];

    accepted("PATCH /u HTTP/1.1\r\nHost: b\r\nContent-Range:  0-1023 \r\nContent-Length: 0\r\n\r\n", &head);
    ck_assert(head.has_content_range);
    ck_assert_str_eq(head.content_range, "0-1023");
    berthd_http_head_clear(&head);
    accepted("PATCH /u HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    ck_assert(!head.has_content_range);
    ck_assert_str_eq(head.content_range, "");
    berthd_http_head_clear(&head);
    accepted("PATCH /u HTTP/1.1\r\nHost: b\r\ncontent-range: \r\n\r\n", &head);
    ck_assert(head.has_content_range);
    ck_assert_str_eq(head.content_range, "");
    berthd_http_head_clear(&head);
    refused_saying("PATCH /u HTTP/1.1\r\nHost: b\r\nContent-Range: 0-1\r\nContent-Range: 0-1\r\n\r\n", 400,
                   "field line 3 repeats Content-Range");
    snprintf(req, sizeof(req), "PATCH /u HTTP/1.1\r\nHost: b\r\nContent-Range: %0*d\r\n\r\n",
             BERTHD_HTTP_CONTENT_RANGE_MAX + 1, 0);
    refused_saying(req, 400, "Content-Range is longer than 96 bytes");
    snprintf(req, sizeof(req), "PATCH /u HTTP/1.1\r\nHost: b\r\nContent-Range: %0*d\r\n\r\n",
             BERTHD_HTTP_CONTENT_RANGE_MAX, 0);
    accepted(req, &head);
    ck_assert_uint_eq(strlen(head.content_range), BERTHD_HTTP_CONTENT_RANGE_MAX);
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(methods)
{
    static const char *const other[] = {"HEAD", "OPTIONS", "TRACE", "CONNECT", "get", "put", "Patch", "BREW"};
    static const struct {
        const char *name;
        enum berthd_http_method method;
    } routed[] = {{"GET", BERTHD_HTTP_GET},
                  {"POST", BERTHD_HTTP_POST},
                  {"PUT", BERTHD_HTTP_PUT},
                  {"PATCH", BERTHD_HTTP_PATCH},
                  {"DELETE", BERTHD_HTTP_DELETE}};
    struct berthd_http_head head = {0};
    char req[128];
    size_t i;

    for (i = 0; i < ELEMENTSOF(routed); i++) {
        snprintf(req, sizeof(req), "%s /v1/evidence HTTP/1.1\r\nHost: b\r\n\r\n", routed[i].name);
        accepted(req, &head);
        ck_assert_int_eq(head.method, routed[i].method);
        ck_assert_str_eq(head.method_name, routed[i].name);
        berthd_http_head_clear(&head);
    }
    for (i = 0; i < ELEMENTSOF(other); i++) {
        snprintf(req, sizeof(req), "%s /v1/jobs HTTP/1.1\r\nHost: b\r\n\r\n", other[i]);
        accepted(req, &head);
        ck_assert_int_eq(head.method, BERTHD_HTTP_OTHER);
        ck_assert_str_eq(head.method_name, other[i]);
        berthd_http_head_clear(&head);
    }
    /* Still framed by the same rules. */
    refused("DELETE / HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400);
    accepted("ABCDEFGHIJKLMNOPQRSTUVWXYZ / HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    ck_assert_str_eq(head.method_name, "ABCDEFGHIJKLMNO"); /* cut for logs */
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(leading_empty_line)
{
    struct berthd_http_head head = {0};
    static const char req[] = "\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n";

    accepted(req, &head);
    ck_assert_uint_eq(head.head_len, strlen(req));
    berthd_http_head_clear(&head);
    refused("\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n", 400);
    refused("\nGET / HTTP/1.1\r\nHost: b\r\n\r\n", 400);
    refused("\rGET / HTTP/1.1\r\nHost: b\r\n\r\n", 400);
}
END_TEST

START_TEST(incomplete)
{
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};
    static const char req[] = GET_HOST "X-A: b\r\n";

    ck_assert_int_eq(berthd_http_parse_head("", 0, &limits, &head, &why), 0);
    ck_assert_int_eq(berthd_http_parse_head(req, strlen(req), &limits, &head, &why), 0);
    ck_assert_int_eq(berthd_http_parse_head(req, strlen(req) - 1, &limits, &head, &why), 0);
    ck_assert_ptr_null(head.target); /* untouched */
    ck_assert_int_eq(why.status, 0);
}
END_TEST

START_TEST(pipelined_after_content_length)
{
    static const char req[] = "POST /v1/jobs HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n\r\nhello"
                              "GET /v1/health HTTP/1.1\r\nHost: b\r\n\r\n";
    struct berthd_http_head head = {0}, next = {0};
    size_t second;

    accepted(req, &head);
    ck_assert_uint_eq(head.content_length, 5);
    second = head.head_len + 5;
    ck_assert_mem_eq(req + head.head_len, "hello", 5);
    accepted(req + second, &next);
    ck_assert_str_eq(next.target, "/v1/health");
    ck_assert_uint_eq(second + next.head_len, strlen(req));
    berthd_http_head_clear(&head);
    berthd_http_head_clear(&next);
}
END_TEST

START_TEST(invalid_arguments)
{
    struct berthd_http_limits lim = limits;
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};

    ck_assert_int_eq(berthd_http_parse_head(NULL, 0, &limits, &head, &why), -EINVAL);
    ck_assert_int_eq(why.status, 500);
    ck_assert_int_eq(berthd_http_parse_head("", 0, &limits, &head, NULL), -EINVAL);
    lim.max_fields = 0;
    ck_assert_int_eq(berthd_http_parse_head("", 0, &lim, &head, &why), -EINVAL);
    lim.max_fields = BERTHD_HTTP_MAX_FIELDS_LIMIT + 1;
    ck_assert_int_eq(berthd_http_parse_head("", 0, &lim, &head, &why), -EINVAL);
    lim.max_fields = BERTHD_HTTP_MAX_FIELDS_LIMIT;
    ck_assert_int_eq(berthd_http_parse_head("", 0, &lim, &head, &why), 0);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Line endings, obs-fold, field syntax                                      */

START_TEST(bare_lf)
{
    refused_saying("GET / HTTP/1.1\nHost: b\r\n\r\n", 400, "bare LF");
    refused_saying("GET / HTTP/1.1\r\nHost: b\nX-A: c\r\n\r\n", 400, "field line 1 ends in a bare LF");
    refused_saying("GET / HTTP/1.1\r\nHost: b\r\nX-A:\n\r\n", 400, "field line 2 ends in a bare LF");
    refused_saying("GET / HTTP/1.1\r\nHost: b\r\n\n", 400, "header block ends in a bare LF");
    refused_saying("GET / HTTP/1.1\nHost: b\n\n", 400, "bare LF");
    refused_saying("GET / HTTP/1.1\r\nHost: b\r\n\nGET / HTTP/1.1\r\n\r\n", 400, "bare LF");
}
END_TEST

START_TEST(bare_cr)
{
    refused_saying("GET / HTTP/1.1\rHost: b\r\n\r\n", 400, "bare CR");
    refused_saying(GET_HOST "X-A: a\rb\r\n\r\n", 400, "field line 2 has a bare CR");
    refused_saying(GET_HOST "\rX\r\n\r\n", 400, "bare CR");
    refused_saying(GET_HOST "X-A\r: b\r\n\r\n", 400, "field line 2 has no colon");
}
END_TEST

START_TEST(obs_fold)
{
    refused_saying(GET_HOST "X-A: b\r\n c\r\n\r\n", 400, "field line 3 starts with whitespace: obs-fold");
    refused_saying(GET_HOST "X-A: b\r\n\tc\r\n\r\n", 400, "field line 3 starts with whitespace: obs-fold");
    /* The first field line too (picohttpparser reports that one differently). */
    refused_saying("GET / HTTP/1.1\r\n Host: b\r\n\r\n", 400, "field line 1 starts with whitespace: obs-fold");
}
END_TEST

START_TEST(field_names)
{
    refused_saying("GET / HTTP/1.1\r\nHost : b\r\n\r\n", 400, "whitespace between the field name and the colon");
    refused_saying("GET / HTTP/1.1\r\nHost\t: b\r\n\r\n", 400, "whitespace between the field name and the colon");
    refused_saying(GET_HOST ": b\r\n\r\n", 400, "empty field name");
    refused_saying(GET_HOST "X(A): b\r\n\r\n", 400, "not a token");
    refused_saying(GET_HOST "X-\xc3\xa9: b\r\n\r\n", 400, "not a token");
    refused_saying(GET_HOST "X-A b\r\n\r\n", 400, "whitespace between");
    refused_saying(GET_HOST "X-A\r\n\r\n", 400, "has no colon");
}
END_TEST

START_TEST(smuggling)
{
    /* The shape: TE with a space before the colon, framed by CL,
     * the body holding a second request. */
    static const char req[] = "POST /v1/health HTTP/1.1\r\nHost: b\r\nTransfer-Encoding : chunked\r\n"
                              "Content-Length: 62\r\n\r\n0\r\n\r\nPOST /v1/jobs HTTP/1.1\r\nHost: b\r\n"
                              "Content-Length: 2\r\n\r\n{}";

    refused_saying(req, 400, "field line 2 has whitespace between the field name and the colon");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n", 400,
                   "whitespace");
}
END_TEST

START_TEST(control_characters)
{
    static const char nul[] = GET_HOST "X-A: a\0b\r\n\r\n";
    struct berthd_http_refusal why;
    char req[64];
    int c;

    why = refused_bytes(nul, sizeof(nul) - 1, &limits, 400, "malformed");
    ck_assert_str_eq(why.message, "field line 2 has a NUL in its value (RFC 9110 5.5)");
    for (c = 1; c < 0x20; c++) {
        if (c == '\t' || c == '\r' || c == '\n')
            continue;
        snprintf(req, sizeof(req), GET_HOST "X-A: a%cb\r\n\r\n", c);
        refused_saying(req, 400, "control character");
    }
    refused_saying(GET_HOST "X-A: a\x7f\r\n\r\n", 400, "control character");
    refused_saying(GET_HOST "Host-\x01: a\r\n\r\n", 400, "not a token");
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Limits                                                                    */

/* A head with Host and @extra more field lines; free() it. */
static char *head_with_fields(size_t extra)
{
    struct berth_buf b = BERTH_BUF_INIT(0);
    char line[32];
    size_t i;

    ck_assert_int_eq(berth_buf_append(&b, GET_HOST, strlen(GET_HOST)), 0);
    for (i = 0; i < extra; i++) {
        snprintf(line, sizeof(line), "X-%zu: v\r\n", i);
        ck_assert_int_eq(berth_buf_append(&b, line, strlen(line)), 0);
    }
    ck_assert_int_eq(berth_buf_append(&b, "\r\n", 2), 0);
    return berth_buf_steal(&b, NULL);
}

START_TEST(field_count)
{
    struct berthd_http_limits lim = limits;
    struct berthd_http_head head = {0};
    char *req;

    req = head_with_fields(63); /* 64 in all */
    accepted(req, &head);
    berthd_http_head_clear(&head);
    free(req);
    req = head_with_fields(64);
    refused_saying(req, 431, "more than 64 field lines");
    free(req);
    req = head_with_fields(999);
    refused_saying(req, 431, "more than 64 field lines");
    free(req);
    lim.max_fields = 8;
    req = head_with_fields(7);
    accepted_lim(req, &lim, &head);
    berthd_http_head_clear(&head);
    free(req);
    req = head_with_fields(8);
    refused_bytes(req, strlen(req), &lim, 431, "headers_too_large");
    free(req);
    /* A broken line beyond the count is not looked at. */
    refused_saying(GET_HOST "X-1: a\r\nX-2: b\r\nX-3: c\r\nX-4: d\r\nX-5: e\r\nX-6: f\r\nX-7: g\r\n (fold)\r\n\r\n",
                   400, "obs-fold");
}
END_TEST

START_TEST(header_bytes)
{
    struct berthd_http_limits lim = limits;
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};
    size_t big = 20 * 1024, len;
    char *req = malloc(big + 64);

    ck_assert_ptr_nonnull(req);
    /* A 20 KiB field. */
    len = (size_t)sprintf(req, GET_HOST "X-Big: ");
    memset(req + len, 'v', big);
    strcpy(req + len + big, "\r\n\r\n");
    refused_saying(req, 431, "larger than http.max_header_bytes (16384 bytes)");
    /* Still incomplete at the limit: 431 as soon as one byte more is there. */
    ck_assert_int_eq(berthd_http_parse_head(req, limits.max_header_bytes, &limits, &head, &why), 0);
    ck_assert_int_eq(berthd_http_parse_head(req, limits.max_header_bytes + 1, &limits, &head, &why), -EBADMSG);
    ck_assert_int_eq(why.status, 431);
    /* A head of exactly max_header_bytes fits; one byte more does not. */
    lim.max_header_bytes = strlen(GET_HOST "X-A: 12345\r\n\r\n");
    accepted_lim(GET_HOST "X-A: 12345\r\n\r\n", &lim, &head);
    ck_assert_uint_eq(head.head_len, lim.max_header_bytes);
    berthd_http_head_clear(&head);
    refused_bytes(GET_HOST "X-A: 123456\r\n\r\n", lim.max_header_bytes + 1, &lim, 431, "headers_too_large");
    /* A target that does not fit: 414. */
    len = (size_t)sprintf(req, "GET /");
    memset(req + len, 'a', big);
    strcpy(req + len + big, " HTTP/1.1\r\nHost: b\r\n\r\n");
    refused_saying(req, 414, "request-target");
    free(req);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* The request line                                                          */

START_TEST(request_line)
{
    refused_saying("GE(T / HTTP/1.1\r\nHost: b\r\n\r\n", 400, "method token");
    refused_saying(" GET / HTTP/1.1\r\nHost: b\r\n\r\n", 400, "method token");
    refused_saying("GET  / HTTP/1.1\r\nHost: b\r\n\r\n", 400, "origin-form");
    refused_saying("GET /  HTTP/1.1\r\nHost: b\r\n\r\n", 400, "HTTP-version");
    refused_saying("GET / HTTP/1.1 \r\nHost: b\r\n\r\n", 400, "HTTP-version");
    refused_saying("GET /\r\nHost: b\r\n\r\n", 400, "ends before its HTTP-version");
    refused_saying("GET\r\n\r\n", 400, "method token");
}
END_TEST

START_TEST(request_target)
{
    struct berthd_http_head head = {0};

    refused_saying("GET http://b/v1/health HTTP/1.1\r\nHost: b\r\n\r\n", 400, "origin-form");
    refused_saying("GET b:8443 HTTP/1.1\r\nHost: b\r\n\r\n", 400, "origin-form");
    refused_saying("OPTIONS * HTTP/1.1\r\nHost: b\r\n\r\n", 400, "asterisk-form");
    refused_saying("GET /a\"b HTTP/1.1\r\nHost: b\r\n\r\n", 400, "RFC 3986");
    refused_saying("GET /a#frag HTTP/1.1\r\nHost: b\r\n\r\n", 400, "RFC 3986");
    refused_saying("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: b\r\n\r\n", 400, "RFC 3986");
    refused_saying("GET /a\\b HTTP/1.1\r\nHost: b\r\n\r\n", 400, "RFC 3986");
    refused_saying("GET /a\x01 HTTP/1.1\r\nHost: b\r\n\r\n", 400, "RFC 3986");
    refused_saying("GET /%zz HTTP/1.1\r\nHost: b\r\n\r\n", 400, "two hex digits");
    refused_saying("GET /%4 HTTP/1.1\r\nHost: b\r\n\r\n", 400, "two hex digits");
    accepted("GET /%4a%4B HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    ck_assert_str_eq(head.target, "/%4a%4B");
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(connect)
{
    refused_saying("CONNECT b:443 HTTP/1.1\r\nHost: b:443\r\n\r\n", 501, "CONNECT");
    /* Before any framing rule after the target. */
    refused("CONNECT b:443 HTTP/1.1\r\nHost : b\r\n\r\n", 501);
}
END_TEST

START_TEST(version)
{
    struct berthd_http_head head = {0};

    refused("GET / HTTP/1.2\r\nHost: b\r\n\r\n", 505);
    refused("GET / HTTP/2.0\r\nHost: b\r\n\r\n", 505);
    refused("GET / HTTP/0.9\r\nHost: b\r\n\r\n", 505);
    refused("GET / HTTP/1.10\r\nHost: b\r\n\r\n", 400);
    refused("GET / HTTP/1\r\nHost: b\r\n\r\n", 400);
    refused("GET / http/1.1\r\nHost: b\r\n\r\n", 400);
    refused("GET / HTTP/1.1x\r\nHost: b\r\n\r\n", 400);
    refused("GET / HTTP/11\r\nHost: b\r\n\r\n", 400);
    accepted("GET / HTTP/1.1\r\nHost: b\r\n\r\n", &head);
    ck_assert_int_eq(head.minor_version, 1);
    berthd_http_head_clear(&head);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Framing fields                                                            */

START_TEST(content_length)
{
    struct berthd_http_limits lim = limits;
    struct berthd_http_head head = {0};
    char req[256];

    accepted("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 007\r\n\r\n", &head);
    ck_assert_uint_eq(head.content_length, 7);
    berthd_http_head_clear(&head);
    accepted("POST / HTTP/1.1\r\nHost: b\r\ncontent-length:  5 \t\r\n\r\n", &head); /* OWS is not the value */
    ck_assert_uint_eq(head.content_length, 5);
    berthd_http_head_clear(&head);
    accepted("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n", &head);
    ck_assert_uint_eq(head.content_length, 0);
    berthd_http_head_clear(&head);
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: +5\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: -1\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 5, 5\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 5 5\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 0x5\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length:\r\n\r\n", 400, "1*DIGIT");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
                   "field line 3 repeats Content-Length");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 18446744073709551616\r\n\r\n", 400, "2^64-1");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 18446744073709551615\r\n\r\n", 413, "max_body_bytes");
    lim.max_body_bytes = 100;
    accepted_lim("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 100\r\n\r\n", &lim, &head);
    berthd_http_head_clear(&head);
    snprintf(req, sizeof(req), "POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 101\r\n\r\n");
    refused_bytes(req, strlen(req), &lim, 413, "too_large");
}
END_TEST

START_TEST(transfer_encoding)
{
    struct berthd_http_head head = {0};

    accepted("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n", &head);
    ck_assert(head.chunked);
    ck_assert_uint_eq(head.content_length, 0);
    berthd_http_head_clear(&head);
    accepted("POST / HTTP/1.1\r\nHost: b\r\ntransfer-encoding:   Chunked  \r\n\r\n", &head);
    ck_assert(head.chunked);
    berthd_http_head_clear(&head);
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400, "exactly");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked, chunked\r\n\r\n", 400, "exactly");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: identity\r\n\r\n", 400, "exactly");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400, "exactly");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                   400, "repeats Transfer-Encoding");
    refused_saying("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400,
                   "Content-Length with Transfer-Encoding");
    refused_saying("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
                   "Transfer-Encoding with Content-Length");
}
END_TEST

START_TEST(host)
{
    refused_saying("GET / HTTP/1.1\r\n\r\n", 400, "without Host");
    refused_saying("GET / HTTP/1.1\r\nX-Host: b\r\n\r\n", 400, "without Host");
    refused_saying("GET / HTTP/1.1\r\nHost: b\r\nhost: b\r\n\r\n", 400, "field line 2 is a second Host");
    /* A missing Host is a framing error: it comes before 413 and 417. */
    refused("POST / HTTP/1.1\r\nContent-Length: 99999999\r\nExpect: x\r\n\r\n", 400);
}
END_TEST

START_TEST(expect)
{
    struct berthd_http_head head = {0};

    accepted("POST / HTTP/1.1\r\nHost: b\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", &head);
    ck_assert(head.expect_continue);
    berthd_http_head_clear(&head);
    accepted("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", &head); /* ignored */
    ck_assert(!head.expect_continue);
    berthd_http_head_clear(&head);
    refused_saying(GET_HOST "Expect: 200-ok\r\n\r\n", 417, "field line 2");
    refused(GET_HOST "Expect: 100-continue, x\r\n\r\n", 417);
    refused(GET_HOST "Expect:\r\n\r\n", 417);
    /* Framing comes first, wherever the line is. */
    refused(GET_HOST "Expect: 200-ok\r\nX-A : b\r\n\r\n", 400);
}
END_TEST

/* ------------------------------------------------------------------------ */
/* Chunked bodies                                                            */

struct fed {
    int r;
    struct berthd_http_refusal why;
    struct berth_buf body;
    size_t used; /* bytes of the input used in all */
};

/* Feed @len bytes at @raw in pieces of @step bytes (0: whole). */
static struct fed feed(const char *raw, size_t len, uint64_t max, size_t body_max, size_t step)
{
    struct berthd_http_chunked c;
    struct fed f = {.body = BERTH_BUF_INIT(body_max)};
    size_t off = 0;

    berthd_http_chunked_init(&c, max);
    do {
        size_t n = step && len - off > step ? step : len - off, used = 99999;

        f.r = berthd_http_chunked_feed(&c, raw + off, n, &f.body, &used, &f.why);
        if (f.r < 0)
            break;
        ck_assert_uint_le(used, n);
        if (f.r == 0)
            ck_assert_uint_eq(used, n);
        f.used += used;
        off += n;
    } while (f.r == 0 && off < len);
    return f;
}

/* The same verdict, body and use whole, byte by byte and in odd pieces. */
static struct fed feed_checked(const char *raw, size_t len, uint64_t max)
{
    static const size_t steps[] = {1, 2, 3, 7, 64};
    struct fed whole = feed(raw, len, max, 0, 0);
    size_t i;

    for (i = 0; i < ELEMENTSOF(steps); i++) {
        struct fed f = feed(raw, len, max, 0, steps[i]);

        ck_assert_int_eq(f.r, whole.r);
        if (f.r < 0) {
            same_refusal(&f.why, &whole.why);
        } else {
            ck_assert_uint_eq(f.used, whole.used);
            ck_assert_uint_eq(f.body.len, whole.body.len);
            if (f.body.len)
                ck_assert_mem_eq(f.body.data, whole.body.data, f.body.len);
        }
        berth_buf_free(&f.body);
    }
    return whole;
}

/* @raw (a C string) decodes completely to @want using all of it. */
static void decodes(const char *raw, const char *want)
{
    struct fed f = feed_checked(raw, strlen(raw), 1 << 20);

    ck_assert_msg(f.r == 1, "refused or incomplete (%d: %s): %s", f.r, f.r < 0 ? f.why.message : "", raw);
    ck_assert_uint_eq(f.used, strlen(raw));
    ck_assert_uint_eq(f.body.len, strlen(want));
    ck_assert(f.body.len == 0 || memcmp(f.body.data, want, f.body.len) == 0);
    berth_buf_free(&f.body);
}

static void chunk_refused_len(const char *raw, size_t len, uint64_t max, int status, const char *part)
{
    struct fed f = feed_checked(raw, len, max);

    ck_assert_msg(f.r == -EBADMSG, "not refused (%d): %s", f.r, raw);
    ck_assert_int_eq(f.why.status, status);
    ck_assert_msg(strstr(f.why.message, part), "\"%s\" does not say \"%s\"", f.why.message, part);
    berth_buf_free(&f.body);
}

static void chunk_refused(const char *raw, int status, const char *part)
{
    chunk_refused_len(raw, strlen(raw), 1 << 20, status, part);
}

START_TEST(chunked_decode)
{
    decodes("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world");
    decodes("0\r\n\r\n", "");
    decodes("A\r\n0123456789\r\na\r\nabcdefghij\r\n0000\r\n\r\n", "0123456789abcdefghij");
    decodes("0005\r\nhello\r\n0\r\n\r\n", "hello");
    decodes("3\r\na\r\n\r\n0\r\n\r\n", "a\r\n"); /* data is data */
}
END_TEST

START_TEST(chunked_pipelined)
{
    static const char raw[] = "5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: b\r\n\r\n";
    size_t body_len = strlen("5\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n");
    struct berthd_http_head head = {0};
    struct fed f = feed_checked(raw, strlen(raw), 1 << 20);

    ck_assert_int_eq(f.r, 1);
    ck_assert_uint_eq(f.used, body_len);
    ck_assert_str_eq(f.body.data, "hello");
    accepted(raw + f.used, &head);
    ck_assert_str_eq(head.target, "/v1/health");
    berthd_http_head_clear(&head);
    berth_buf_free(&f.body);
}
END_TEST

START_TEST(chunked_after_head)
{
    /* A whole request as it arrives: head, chunked body, the next head. */
    static const char req[] = "POST /v1/jobs HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "2\r\n{}\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n";
    struct berthd_http_head head = {0};
    struct berthd_http_refusal why = {0};
    struct berthd_http_chunked c;
    struct berth_buf body = BERTH_BUF_INIT(0);
    size_t used = 0;

    accepted(req, &head);
    ck_assert(head.chunked);
    berthd_http_chunked_init(&c, 100);
    ck_assert_int_eq(berthd_http_chunked_feed(&c, req + head.head_len, strlen(req) - head.head_len, &body, &used, &why),
                     1);
    ck_assert_uint_eq(used, strlen("2\r\n{}\r\n0\r\n\r\n"));
    ck_assert_str_eq(body.data, "{}");
    /* Done: a further call uses nothing. */
    ck_assert_int_eq(berthd_http_chunked_feed(&c, "x", 1, &body, &used, &why), 1);
    ck_assert_uint_eq(used, 0);
    berth_buf_free(&body);
    berthd_http_head_clear(&head);
}
END_TEST

START_TEST(chunk_size)
{
    /* Debian's libh2o 0.13 copy of picohttpparser read this as the last chunk. */
    chunk_refused("0x5\r\nhello\r\n0\r\n\r\n", 400, "chunk line 1 has something other than chunk extensions");
    chunk_refused("+5\r\nhello\r\n0\r\n\r\n", 400, "hexadecimal chunk size");
    chunk_refused(" 5\r\nhello\r\n0\r\n\r\n", 400, "hexadecimal chunk size");
    chunk_refused("5 \r\nhello\r\n0\r\n\r\n", 400, "chunk line 1 has something other");
    chunk_refused("\r\nhello\r\n0\r\n\r\n", 400, "hexadecimal chunk size");
    chunk_refused("g\r\n", 400, "hexadecimal chunk size");
    chunk_refused("5\r\nhello\r\n-0\r\n\r\n", 400, "chunk line 2 does not start");
    /* Overflow: 17 digits is refused; 16 fit and are over any limit. */
    chunk_refused("10000000000000000\r\n", 400, "more than 16 hex digits");
    chunk_refused("00000000000000005\r\nhello\r\n0\r\n\r\n", 400, "more than 16 hex digits");
    chunk_refused("FFFFFFFFFFFFFFFF\r\n", 413, "max_body_bytes");
}
END_TEST

START_TEST(chunk_extensions)
{
    /* Well-formed extensions are parsed and ignored. */
    decodes("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello");
    decodes("5 ; a = b\t;\tc ;d=\"q \\\" ;x\"\r\nhello\r\n0\r\n\r\n", "hello");
    decodes("5;a=\"caf\xc3\xa9\"\r\nhello\r\n0\r\n\r\n", "hello");
    chunk_refused("5;\r\nhello\r\n0\r\n\r\n", 400, "name is not a token");
    chunk_refused("5;=b\r\nhello\r\n0\r\n\r\n", 400, "name is not a token");
    chunk_refused("5;a=\r\nhello\r\n0\r\n\r\n", 400, "neither a token nor a quoted-string");
    chunk_refused("5;a=\"open\r\nhello\r\n0\r\n\r\n", 400, "neither a token nor a quoted-string");
    chunk_refused("5;a=\"x\x01\"\r\nhello\r\n0\r\n\r\n", 400, "neither a token nor a quoted-string");
    chunk_refused("5;a=b c\r\nhello\r\n0\r\n\r\n", 400, "something other than chunk extensions");
    chunk_refused("5;a \r\nhello\r\n0\r\n\r\n", 400, "something other than chunk extensions");
}
END_TEST

START_TEST(chunk_line_endings)
{
    static const char nul_ext[] = "5;a\0b\r\nhello\r\n0\r\n\r\n";

    chunk_refused_len(nul_ext, sizeof(nul_ext) - 1, 1 << 20, 400, "something other than chunk extensions");
    chunk_refused("5\nhello\r\n0\r\n\r\n", 400, "chunk line 1 ends in a bare LF");
    chunk_refused("5\r\nhelloX\r\n0\r\n\r\n", 400, "data of chunk 1 is not followed by CRLF");
    chunk_refused("5\r\nhello\n0\r\n\r\n", 400, "data of chunk 1 is not followed by CRLF");
    chunk_refused("5\r\nhello\r\r\n0\r\n\r\n", 400, "data of chunk 1 is not followed by CRLF");
    chunk_refused("5\r\nhello\r\n0\n\r\n", 400, "chunk line 2 ends in a bare LF");
    chunk_refused("5\r\nhello\r\n0\r\n\n", 400, "trailer field line 1 is a bare LF");
    chunk_refused("5\r\nhello\r\n0\r\n\rX\r\n", 400, "bare CR");
}
END_TEST

START_TEST(trailers)
{
    static const char nul[] = "0\r\nX-A: a\0b\r\n\r\n";
    struct berth_buf big = BERTH_BUF_INIT(0);
    char line[64];
    int i;

    decodes("5\r\nhello\r\n0\r\nX-Sum: abc\r\nX-B:\r\n\r\n", "hello"); /* discarded */
    chunk_refused("0\r\nX-A: b\r\n c\r\n\r\n", 400, "trailer field line 2 starts with whitespace: obs-fold");
    chunk_refused("0\r\n X-A: b\r\n\r\n", 400, "trailer field line 1 starts with whitespace: obs-fold");
    chunk_refused("0\r\nX-A : b\r\n\r\n", 400, "whitespace between the field name and the colon");
    chunk_refused("0\r\nX-A: b\n\r\n", 400, "trailer field line 1 ends in a bare LF");
    chunk_refused("0\r\nX-A b\r\n\r\n", 400, "whitespace between");
    chunk_refused("0\r\nX-A\x7f: b\r\n\r\n", 400, "not a token");
    chunk_refused("0\r\nX-A: \x7f\r\n\r\n", 400, "control character");
    chunk_refused_len(nul, sizeof(nul) - 1, 1 << 20, 400, "trailer field line 1 has a NUL in its value");
    /* The trailer section is bounded. */
    ck_assert_int_eq(berth_buf_append(&big, "0\r\n", 3), 0);
    for (i = 0; i < 200; i++) {
        snprintf(line, sizeof(line), "X-%03d: %040d\r\n", i, i);
        ck_assert_int_eq(berth_buf_append(&big, line, strlen(line)), 0);
    }
    ck_assert_int_eq(berth_buf_append(&big, "\r\n", 2), 0);
    chunk_refused(big.data, 431, "trailer section is larger than 8192 bytes");
    berth_buf_free(&big);
}
END_TEST

START_TEST(chunked_limit)
{
    struct fed f;

    decodes("5\r\nhello\r\n0\r\n\r\n", "hello");
    f = feed_checked("5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", strlen("5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n"), 10);
    ck_assert_int_eq(f.r, 1);
    ck_assert_uint_eq(f.body.len, 10);
    berth_buf_free(&f.body);
    /* Refused at the size line of the chunk that would pass the limit:
     * nothing of it is buffered. */
    f = feed("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", strlen("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), 10, 0, 0);
    ck_assert_int_eq(f.r, -EBADMSG);
    ck_assert_int_eq(f.why.status, 413);
    ck_assert_str_eq(f.why.code, "too_large");
    ck_assert_uint_eq(f.body.len, 5);
    berth_buf_free(&f.body);
    chunk_refused_len("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", strlen("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"), 10,
                      413, "max_body_bytes (10 bytes)");
    /* The body buffer's own, smaller bound answers 413 too. */
    f = feed("5\r\nhello\r\n0\r\n\r\n", strlen("5\r\nhello\r\n0\r\n\r\n"), 100, 3, 0);
    ck_assert_int_eq(f.r, -EBADMSG);
    ck_assert_int_eq(f.why.status, 413);
    berth_buf_free(&f.body);
}
END_TEST

START_TEST(chunk_line_bounds)
{
    struct berth_buf raw = BERTH_BUF_INIT(0);
    int i;

    /* A chunk line of BERTHD_HTTP_CHUNK_LINE_MAX bytes fits; one more does not. */
    ck_assert_int_eq(berth_buf_append(&raw, "5;a=", 4), 0);
    for (i = 0; i < BERTHD_HTTP_CHUNK_LINE_MAX - 6; i++)
        ck_assert_int_eq(berth_buf_putc(&raw, 'x'), 0);
    ck_assert_int_eq(berth_buf_append(&raw, "\r\nhello\r\n0\r\n\r\n", 14), 0);
    decodes(raw.data, "hello");
    berth_buf_free(&raw);
    ck_assert_int_eq(berth_buf_append(&raw, "5;a=", 4), 0);
    for (i = 0; i < BERTHD_HTTP_CHUNK_LINE_MAX - 5; i++)
        ck_assert_int_eq(berth_buf_putc(&raw, 'x'), 0);
    ck_assert_int_eq(berth_buf_append(&raw, "\r\nhello\r\n0\r\n\r\n", 14), 0);
    chunk_refused(raw.data, 400, "a chunk line is longer than 1024 bytes");
    berth_buf_free(&raw);
}
END_TEST

START_TEST(chunk_overhead)
{
    /* picohttpparser's guard: 1-byte chunks under 1000-byte extensions. */
    struct berth_buf raw = BERTH_BUF_INIT(0);
    char ext[1001];
    int i;

    memset(ext, 'e', sizeof(ext) - 1);
    ext[sizeof(ext) - 1] = '\0';
    for (i = 0; i < 200; i++) {
        ck_assert_int_eq(berth_buf_append(&raw, "1;", 2), 0);
        ck_assert_int_eq(berth_buf_append(&raw, ext, strlen(ext)), 0);
        ck_assert_int_eq(berth_buf_append(&raw, "\r\nX\r\n", 5), 0);
    }
    ck_assert_int_eq(berth_buf_append(&raw, "0\r\n\r\n", 5), 0);
    chunk_refused(raw.data, 400, "100 KiB of chunk framing");
    berth_buf_free(&raw);
}
END_TEST

START_TEST(chunked_misuse)
{
    struct berthd_http_chunked c;
    struct berthd_http_refusal why = {0};
    struct berth_buf body = BERTH_BUF_INIT(0);
    size_t used = 7;

    berthd_http_chunked_init(&c, 100);
    ck_assert_int_eq(berthd_http_chunked_feed(&c, NULL, 0, &body, &used, &why), 0);
    ck_assert_uint_eq(used, 0);
    ck_assert_int_eq(berthd_http_chunked_feed(NULL, "0", 1, &body, &used, &why), -EINVAL);
    ck_assert_int_eq(berthd_http_chunked_feed(&c, "x\r\n", 3, &body, &used, &why), -EBADMSG);
    ck_assert_int_eq(why.status, 400);
    ck_assert_int_eq(berthd_http_chunked_feed(&c, "0\r\n\r\n", 5, &body, &used, &why), -EINVAL);
    ck_assert_int_eq(why.status, 500);
    berth_buf_free(&body);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("http-framing");
    TCase *tc = test_case(s, "head");

    tcase_add_test(tc, post_jobs);
    tcase_add_test(tc, get_with_query);
    tcase_add_test(tc, field_values);
    tcase_add_test(tc, http10);
    tcase_add_test(tc, connection);
    tcase_add_test(tc, methods);
    tcase_add_test(tc, content_range);
    tcase_add_test(tc, leading_empty_line);
    tcase_add_test(tc, incomplete);
    tcase_add_test(tc, pipelined_after_content_length);
    tcase_add_test(tc, invalid_arguments);
    tc = test_case(s, "syntax");
    tcase_add_test(tc, bare_lf);
    tcase_add_test(tc, bare_cr);
    tcase_add_test(tc, obs_fold);
    tcase_add_test(tc, field_names);
    tcase_add_test(tc, smuggling);
    tcase_add_test(tc, control_characters);
    tc = test_case(s, "limits");
    tcase_add_test(tc, field_count);
    tcase_add_test(tc, header_bytes);
    tc = test_case(s, "request-line");
    tcase_add_test(tc, request_line);
    tcase_add_test(tc, request_target);
    tcase_add_test(tc, connect);
    tcase_add_test(tc, version);
    tc = test_case(s, "framing-fields");
    tcase_add_test(tc, content_length);
    tcase_add_test(tc, transfer_encoding);
    tcase_add_test(tc, host);
    tcase_add_test(tc, expect);
    tc = test_case(s, "chunked");
    tcase_add_test(tc, chunked_decode);
    tcase_add_test(tc, chunked_pipelined);
    tcase_add_test(tc, chunked_after_head);
    tcase_add_test(tc, chunk_size);
    tcase_add_test(tc, chunk_extensions);
    tcase_add_test(tc, chunk_line_endings);
    tcase_add_test(tc, trailers);
    tcase_add_test(tc, chunked_limit);
    tcase_add_test(tc, chunk_line_bounds);
    tcase_add_test(tc, chunk_overhead);
    tcase_add_test(tc, chunked_misuse);
    return s;
}

TEST_MAIN()
