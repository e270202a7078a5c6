/* SPDX-License-Identifier: MIT */
/*
 * http-framing.c -- strict HTTP/1.1 request framing around picohttpparser;
 * the rules and their statuses are listed in http-framing.h.
 *
 * The head: this file checks the request line itself (picohttpparser takes
 * runs of spaces, any version "HTTP/1.x" and any non-control target), then
 * lets the parser split the field lines and walks them in order, checking
 * what it leaves open (bare LF line ends, obs-fold) and the framing fields.
 * When the parser refuses a line, field_line_error() names the rule that
 * line breaks, so the refusal says why.
 *
 * The chunked body: every framing line (chunk-size line, trailer field line)
 * is collected here, checked against RFC 9112 7.1's grammar (the parser skips
 * chunk extensions and trailer lines unchecked) and only then handed to
 * phr_decode_chunked(), which stays the decoder of record: it reads the
 * chunk size, counts the data and finds the end.  Chunk data goes straight
 * into the caller's buffer and through the decoder there, never more than
 * the chunk holds, so the decoder never runs past a line this file has not
 * checked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http-framing.h"

/* ------------------------------------------------------------------------ */
/* Refusals                                                                  */

static int refuse(struct berthd_http_refusal *why, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(struct berthd_http_refusal *why, int status, const char *code, const char *fmt, ...)
{
    va_list ap;

    why->status = status;
    why->code = code;
    va_start(ap, fmt);
    vsnprintf(why->message, sizeof(why->message), fmt, ap);
    va_end(ap);
    return -EBADMSG;
}

#define MALFORMED(why, ...) refuse((why), 400, "malformed", __VA_ARGS__)

static int no_memory(struct berthd_http_refusal *why)
{
    refuse(why, 503, "busy", "out of memory; retry later");
    return -ENOMEM;
}

static int invalid(struct berthd_http_refusal *why, const char *what)
{
    if (why)
        refuse(why, 500, "internal", "%s", what);
    return -EINVAL;
}

/* ------------------------------------------------------------------------ */
/* Characters (ASCII only, whatever the locale)                              */

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alnum(unsigned char c)
{
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static bool is_hex(unsigned char c)
{
    return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* tchar, RFC 9110 5.6.2. */
static bool is_tchar(unsigned char c)
{
    return is_alnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A byte of origin-form other than "%": RFC 3986 pchar, "/" and "?". */
static bool is_target_char(unsigned char c)
{
    return is_alnum(c) || (c && strchr("-._~!$&'()*+,;=:@/?", c));
}

/* A field value byte, RFC 9110 5.5: VCHAR, SP, HTAB, obs-text. */
static bool is_field_vchar(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* @n bytes at @p equal the lower-case @lit, ASCII case folded. */
static bool span_ieq(const char *p, size_t n, const char *lit)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!lit[i] || (c >= 'A' && c <= 'Z' ? c | 0x20 : c) != (unsigned char)lit[i])
            return false;
    }
    return lit[n] == '\0';
}

/* @n bytes at @p equal @lit exactly (methods are case-sensitive, RFC 9110 9.1). */
static bool span_eq(const char *p, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(p, lit, n) == 0;
}

static size_t skip_ows(const char *p, size_t i, size_t end)
{
    while (i < end && (p[i] == ' ' || p[i] == '\t'))
        i++;
    return i;
}

static size_t skip_token(const char *p, size_t i, size_t end)
{
    while (i < end && is_tchar((unsigned char)p[i]))
        i++;
    return i;
}

/* ------------------------------------------------------------------------ */
/* Field lines                                                               */

static const char obs_fold[] = "starts with whitespace: obs-fold is refused (RFC 9112 5.2)";

/*
 * The first rule the field line at @p breaks (RFC 9110 5.1 and 5.5,
 * RFC 9112 2.2, 5.1 and 5.2), looking at @n bytes; NULL when it breaks none
 * as far as it goes, with *@ret_len its length with the CRLF, or 0 when its
 * end is not within @n.  The rules are those picohttpparser applies, in its
 * order, so a line it refused is named here by the byte it refused.
 */
static const char *field_line_error(const char *p, size_t n, size_t *ret_len)
{
    size_t i;

    *ret_len = 0;
    if (n == 0)
        return NULL;
    if (p[0] == ' ' || p[0] == '\t')
        return obs_fold;
    if (p[0] == '\n')
        return "is a bare LF (RFC 9112 2.2)";
    if (p[0] == '\r' && n > 1 && p[1] != '\n')
        return "has a bare CR (RFC 9112 2.2)";
    i = skip_token(p, 0, n);
    if (i == n)
        return NULL;
    if (p[i] != ':') {
        if (p[i] == ' ' || p[i] == '\t')
            return "has whitespace between the field name and the colon (RFC 9112 5.1)";
        if (p[i] == '\r' || p[i] == '\n')
            return "has no colon (RFC 9112 5)";
        return "has a field name that is not a token (RFC 9110 5.1)";
    }
    if (i == 0)
        return "has an empty field name (RFC 9110 5.1)";
    for (i++; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (is_field_vchar(c))
            continue;
        if (c == '\r') {
            if (i + 1 == n)
                return NULL;
            if (p[i + 1] != '\n')
                return "has a bare CR (RFC 9112 2.2)";
            *ret_len = i + 2;
            return NULL;
        }
        if (c == '\n')
            return "ends in a bare LF (RFC 9112 2.2)";
        if (c == '\0')
            return "has a NUL in its value (RFC 9110 5.5)";
        return "has a control character in its value (RFC 9110 5.5)";
    }
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* The request line, RFC 9112 3                                              */

struct request_line {
    size_t method_off, method_len;
    size_t target_off, target_len;
    int minor;
    size_t end;     /* the first byte after its CRLF */
    bool in_target; /* with 0: the bytes ran out inside the request-target */
};

static int version_error(struct berthd_http_refusal *why, char want, char got)
{
    if (want == '\r' && got == '\n')
        return MALFORMED(why, "the request line ends in a bare LF (RFC 9112 2.2)");
    if (want == '\n')
        return MALFORMED(why, "the request line has a bare CR (RFC 9112 2.2)");
    return MALFORMED(why, "the HTTP-version is not \"HTTP/\" DIGIT \".\" DIGIT followed by CRLF (RFC 9112 2.3)");
}

/* "HTTP/" DIGIT "." DIGIT CRLF from @p; 'd' stands for a DIGIT. */
static const char version_shape[] = "HTTP/d.d\r\n";

/*
 * Frame the request line at the start of @buf (@len bytes, the window).
 * Return: 1 with *@rl filled, 0 when more bytes are needed (rl->in_target
 * says where), -EBADMSG with *@why.
 */
static int parse_request_line(const char *buf, size_t len, struct request_line *rl, struct berthd_http_refusal *why)
{
    size_t p = 0, i;
    int major = 0;

    memset(rl, 0, sizeof(*rl));
    if (len == 0)
        return 0;
    /* RFC 9112 2.2: one empty line before the request line is ignored. */
    if (buf[0] == '\n')
        return MALFORMED(why, "a bare LF before the request line (RFC 9112 2.2)");
    if (buf[0] == '\r') {
        if (len < 2)
            return 0;
        if (buf[1] != '\n')
            return MALFORMED(why, "a bare CR before the request line (RFC 9112 2.2)");
        p = 2;
    }
    rl->method_off = p;
    p = skip_token(buf, p, len);
    if (p == len)
        return 0;
    rl->method_len = p - rl->method_off;
    if (rl->method_len == 0 || buf[p] != ' ')
        return MALFORMED(why, "the request line does not start with a method token and one SP (RFC 9112 3)");
    rl->target_off = ++p;
    rl->in_target = true;
    if (p == len)
        return 0;
    if (buf[p] != '/') {
        if (span_eq(buf + rl->method_off, rl->method_len, "CONNECT"))
            return refuse(why, 501, "not_implemented", "CONNECT is not implemented: berthd is not a proxy");
        if (buf[p] == '*')
            return MALFORMED(why, "an asterisk-form request-target; only origin-form is accepted (RFC 9112 3.2)");
        return MALFORMED(why, "the request-target is not in origin-form (\"/\" path [\"?\" query]); absolute-form "
                              "and authority-form are refused (RFC 9112 3.2)");
    }
    while (p < len && buf[p] != ' ') {
        unsigned char c = (unsigned char)buf[p];

        if (c == '%') {
            for (i = 1; i <= 2; i++) {
                if (p + i == len)
                    return 0;
                if (!is_hex((unsigned char)buf[p + i]))
                    return MALFORMED(why, "a \"%%\" in the request-target is not followed by two hex digits "
                                          "(RFC 3986 2.1)");
            }
            p += 3;
            continue;
        }
        if (!is_target_char(c)) {
            if (c == '\r' || c == '\n')
                return MALFORMED(why, "the request line ends before its HTTP-version (RFC 9112 3)");
            return MALFORMED(why, "the request-target holds a byte RFC 3986 does not allow in origin-form "
                                  "(RFC 9112 3.2)");
        }
        p++;
    }
    if (p == len)
        return 0;
    rl->target_len = p - rl->target_off;
    rl->in_target = false;
    p++;
    for (i = 0; version_shape[i]; i++, p++) {
        char want = version_shape[i];
        unsigned char got;

        if (p == len)
            return 0;
        got = (unsigned char)buf[p];
        if (want == 'd' ? !is_digit(got) : got != (unsigned char)want)
            return version_error(why, want, (char)got);
        if (want == 'd' && i == 5)
            major = got - '0';
        else if (want == 'd')
            rl->minor = got - '0';
    }
    if (major != 1 || rl->minor > 1)
        return refuse(why, 505, "version_not_supported", "berthd speaks HTTP/1.0 and HTTP/1.1 only");
    rl->end = p;
    return 1;
}

/* ------------------------------------------------------------------------ */
/* The field lines picohttpparser split, in order                            */

struct field_state {
    int minor;
    unsigned hosts;
    bool have_cl, have_te, close, keep_alive, expect_continue, have_range;
    char range[BERTHD_HTTP_CONTENT_RANGE_MAX + 1];
    size_t expect_line; /* the first field line with another expectation, 0: none */
    uint64_t content_length;
};

/* Connection = #connection-option, a token each (RFC 9110 7.6.1 and 5.6.1). */
static bool connection_options(const char *v, size_t n, struct field_state *st)
{
    size_t i = 0, start;

    for (;;) {
        i = skip_ows(v, i, n);
        start = i;
        i = skip_token(v, i, n);
        if (span_ieq(v + start, i - start, "close"))
            st->close = true;
        else if (span_ieq(v + start, i - start, "keep-alive"))
            st->keep_alive = true;
        i = skip_ows(v, i, n);
        if (i == n)
            return true;
        if (v[i] != ',')
            return false;
        i++;
    }
}

static int content_length(const struct phr_header *h, size_t line, struct field_state *st,
                          struct berthd_http_refusal *why)
{
    uint64_t v = 0;
    size_t i;

    if (st->have_cl)
        return MALFORMED(why, "field line %zu repeats Content-Length (RFC 9110 8.6)", line);
    if (st->have_te)
        return MALFORMED(why, "field line %zu: Content-Length with Transfer-Encoding (RFC 9112 6.3)", line);
    if (h->value_len == 0)
        return MALFORMED(why, "field line %zu: Content-Length is not 1*DIGIT (RFC 9110 8.6)", line);
    for (i = 0; i < h->value_len; i++) {
        unsigned char c = (unsigned char)h->value[i];

        if (!is_digit(c))
            return MALFORMED(why, "field line %zu: Content-Length is not 1*DIGIT (RFC 9110 8.6)", line);
        if (v > (UINT64_MAX - (uint64_t)(c - '0')) / 10)
            return MALFORMED(why, "field line %zu: Content-Length is larger than 2^64-1", line);
        v = v * 10 + (uint64_t)(c - '0');
    }
    st->have_cl = true;
    st->content_length = v;
    return 0;
}

static int transfer_encoding(const struct phr_header *h, size_t line, struct field_state *st,
                             struct berthd_http_refusal *why)
{
    if (st->minor == 0)
        return MALFORMED(why, "field line %zu: Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)", line);
    if (st->have_te)
        return MALFORMED(why, "field line %zu repeats Transfer-Encoding (RFC 9112 6.1)", line);
    if (st->have_cl)
        return MALFORMED(why, "field line %zu: Transfer-Encoding with Content-Length (RFC 9112 6.3)", line);
    if (!span_ieq(h->value, h->value_len, "chunked"))
        return MALFORMED(why,
                         "field line %zu: Transfer-Encoding is not exactly \"chunked\", the only coding berthd "
                         "accepts (RFC 9112 6.1)",
                         line);
    st->have_te = true;
    return 0;
}

/* Check field line @line (1-based), which picohttpparser split into @h and
 * which starts at *@pos in @buf; advance *@pos past it. */
static int check_field(const char *buf, size_t *pos, const struct phr_header *h, size_t line, struct field_state *st,
                       struct berthd_http_refusal *why)
{
    const char *end;

    if (!h->name)
        return MALFORMED(why, "field line %zu %s", line, obs_fold);
    /* The parser trimmed trailing OWS from the value and ends lines at LF. */
    end = h->value + h->value_len;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end == '\n')
        return MALFORMED(why, "field line %zu ends in a bare LF (RFC 9112 2.2)", line);
    *pos = (size_t)(end + 2 - buf);

    if (span_ieq(h->name, h->name_len, "content-length"))
        return content_length(h, line, st, why);
    if (span_ieq(h->name, h->name_len, "transfer-encoding"))
        return transfer_encoding(h, line, st, why);
    if (span_ieq(h->name, h->name_len, "host")) {
        if (st->hosts++)
            return MALFORMED(why, "field line %zu is a second Host (RFC 9112 3.2)", line);
    } else if (span_ieq(h->name, h->name_len, "connection")) {
        if (!connection_options(h->value, h->value_len, st))
            return MALFORMED(why, "field line %zu: Connection is not a list of tokens (RFC 9110 7.6.1)", line);
    } else if (span_ieq(h->name, h->name_len, "content-range")) {
        if (st->have_range)
            return MALFORMED(why, "field line %zu repeats Content-Range", line);
        if (h->value_len > BERTHD_HTTP_CONTENT_RANGE_MAX)
            return MALFORMED(why, "field line %zu: Content-Range is longer than %d bytes", line,
                             BERTHD_HTTP_CONTENT_RANGE_MAX);
        st->have_range = true;
        memcpy(st->range, h->value, h->value_len);
        st->range[h->value_len] = '\0';
    } else if (span_ieq(h->name, h->name_len, "expect")) {
        if (!span_ieq(h->value, h->value_len, "100-continue")) {
            if (!st->expect_line)
                st->expect_line = line;
        } else if (st->minor == 1) {
            st->expect_continue = true;
        }
    }
    return 0;
}

/* The verdict on the line the parser refused, field line @line at @p. */
static int refused_line(const char *p, size_t n, size_t line, bool fields_full, const struct berthd_http_limits *lim,
                        struct berthd_http_refusal *why)
{
    const char *rule;
    size_t len;

    /* The parser looks for the final CRLF before it counts the lines. */
    if (p[0] != '\r' && fields_full)
        return refuse(why, 431, "headers_too_large", "more than %zu field lines (http.max_header_fields)",
                      lim->max_fields);
    rule = field_line_error(p, n, &len);
    if (rule)
        return MALFORMED(why, "field line %zu %s", line, rule);
    /* Not reached unless the parser and field_line_error() disagree (the
     * fuzz target looks for this sentence). */
    return MALFORMED(why, "field line %zu is malformed (the parser refused it)", line);
}

static int need_more(size_t len, const struct berthd_http_limits *lim, bool in_target, struct berthd_http_refusal *why)
{
    if (len <= lim->max_header_bytes)
        return 0;
    if (in_target)
        return refuse(why, 414, "uri_too_long", "the request-target does not fit in http.max_header_bytes (%zu bytes)",
                      lim->max_header_bytes);
    return refuse(why, 431, "headers_too_large", "the header block is larger than http.max_header_bytes (%zu bytes)",
                  lim->max_header_bytes);
}

int berthd_http_parse_head(const char *buf, size_t len, const struct berthd_http_limits *lim,
                           struct berthd_http_head *ret_head, struct berthd_http_refusal *why)
{
    struct phr_header fields[BERTHD_HTTP_MAX_FIELDS_LIMIT];
    struct request_line rl;
    struct field_state st = {0};
    const char *method, *path;
    size_t method_len, path_len, nf, win, pos, i;
    int minor, pr, r;
    char *target;

    if (!buf || !lim || !ret_head || !why)
        return invalid(why, "berthd_http_parse_head: a NULL argument");
    if (lim->max_fields == 0 || lim->max_fields > BERTHD_HTTP_MAX_FIELDS_LIMIT || lim->max_header_bytes == 0 ||
        lim->max_header_bytes > (size_t)INT32_MAX)
        return invalid(why, "berthd_http_parse_head: limits out of range");

    /* Nothing past max_header_bytes is looked at: an error inside the
     * window wins over the size, whatever follows. */
    win = len < lim->max_header_bytes ? len : lim->max_header_bytes;
    r = parse_request_line(buf, win, &rl, why);
    if (r < 0)
        return r;
    if (r == 0)
        return need_more(len, lim, rl.in_target, why);

    nf = lim->max_fields;
    pr = phr_parse_request(buf, win, &method, &method_len, &path, &path_len, &minor, fields, &nf, 0);
    st.minor = rl.minor;
    pos = rl.end;
    for (i = 0; i < nf; i++) {
        r = check_field(buf, &pos, &fields[i], i + 1, &st, why);
        if (r < 0)
            return r;
    }
    if (pr == -1)
        return refused_line(buf + pos, win - pos, nf + 1, nf == lim->max_fields, lim, why);
    if (pr == -2)
        return need_more(len, lim, false, why);
    if (buf[pos] == '\n')
        return MALFORMED(why, "the header block ends in a bare LF (RFC 9112 2.2)");

    if (st.minor == 1 && st.hosts == 0)
        return MALFORMED(why, "an HTTP/1.1 request without Host (RFC 9112 3.2)");
    if (st.have_cl && st.content_length > lim->max_body_bytes)
        return refuse(why, 413, "too_large", "the body is larger than http.max_body_bytes (%llu bytes)",
                      (unsigned long long)lim->max_body_bytes);
    if (st.expect_line)
        return refuse(why, 417, "expectation_failed",
                      "field line %zu: the only expectation berthd meets is 100-continue (RFC 9110 10.1.1)",
                      st.expect_line);

    target = strndup(buf + rl.target_off, rl.target_len);
    if (!target)
        return no_memory(why);
    *ret_head = (struct berthd_http_head){
        .method = BERTHD_HTTP_OTHER,
        .target = target,
        .minor_version = rl.minor,
        .keep_alive = !st.close && (rl.minor == 1 || st.keep_alive),
        .chunked = st.have_te,
        .content_length = st.have_cl ? st.content_length : 0,
        .expect_continue = st.expect_continue,
        .has_content_range = st.have_range,
        .head_len = (size_t)pr,
    };
    memcpy(ret_head->content_range, st.range, sizeof(st.range));
    snprintf(ret_head->method_name, sizeof(ret_head->method_name), "%.*s", (int)rl.method_len, buf + rl.method_off);
    if (span_eq(buf + rl.method_off, rl.method_len, "GET"))
        ret_head->method = BERTHD_HTTP_GET;
    else if (span_eq(buf + rl.method_off, rl.method_len, "POST"))
        ret_head->method = BERTHD_HTTP_POST;
    else if (span_eq(buf + rl.method_off, rl.method_len, "PUT"))
        ret_head->method = BERTHD_HTTP_PUT;
    else if (span_eq(buf + rl.method_off, rl.method_len, "PATCH"))
        ret_head->method = BERTHD_HTTP_PATCH;
    else if (span_eq(buf + rl.method_off, rl.method_len, "DELETE"))
        ret_head->method = BERTHD_HTTP_DELETE;
    return 1;
}

void berthd_http_head_clear(struct berthd_http_head *head)
{
    if (!head)
        return;
    free(head->target);
    memset(head, 0, sizeof(*head));
}

/* ------------------------------------------------------------------------ */
/* Chunked bodies, RFC 9112 7.1                                              */

enum {
    CHUNK_SIZE_LINE, /* collecting a chunk-size line */
    CHUNK_DATA,      /* in chunk data: pico.bytes_left_in_chunk to go */
    CHUNK_DATA_CRLF, /* the CRLF after chunk data: line_len of it seen */
    CHUNK_TRAILER,   /* collecting a trailer field line or the final CRLF */
    CHUNK_DONE,
    CHUNK_REFUSED,
};

/* As many hex digits as picohttpparser reads into its size_t. */
#define CHUNK_SIZE_DIGITS_MAX (sizeof(size_t) * 2)

/* The end of the quoted-string at @p[@i] (RFC 9110 5.6.4), 0 if it is none. */
static size_t quoted_string_end(const char *p, size_t i, size_t end)
{
    for (i++; i < end; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '"')
            return i + 1;
        if (c == '\\' && ++i == end)
            return 0;
        if (!is_field_vchar((unsigned char)p[i]))
            return 0;
    }
    return 0;
}

/*
 * The first rule the chunk-size line @p (@n bytes, ending in LF) breaks,
 * NULL for none:  chunk-size [ chunk-ext ] CRLF, with
 *   chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )
 *   chunk-ext-name = token, chunk-ext-val = token / quoted-string.
 */
static const char *chunk_line_error(const char *p, size_t n)
{
    size_t end, i, j;

    if (n < 2 || p[n - 2] != '\r')
        return "ends in a bare LF (RFC 9112 2.2)";
    end = n - 2;
    for (i = 0; i < end && is_hex((unsigned char)p[i]); i++)
        ;
    if (i == 0)
        return "does not start with a hexadecimal chunk size (RFC 9112 7.1)";
    if (i > CHUNK_SIZE_DIGITS_MAX)
        return "has a chunk size of more than 16 hex digits";
    while (i < end) {
        j = skip_ows(p, i, end);
        if (j == end || p[j] != ';')
            return "has something other than chunk extensions after the chunk size (RFC 9112 7.1.1)";
        i = skip_ows(p, j + 1, end);
        j = skip_token(p, i, end);
        if (j == i)
            return "has a chunk extension whose name is not a token (RFC 9112 7.1.1)";
        i = j;
        j = skip_ows(p, i, end);
        if (j == end || p[j] != '=')
            continue;
        i = skip_ows(p, j + 1, end);
        j = i < end && p[i] == '"' ? quoted_string_end(p, i, end) : skip_token(p, i, end);
        if (j == 0 || j == i)
            return "has a chunk extension value that is neither a token nor a quoted-string (RFC 9112 7.1.1)";
        i = j;
    }
    return NULL;
}

void berthd_http_chunked_init(struct berthd_http_chunked *c, uint64_t max_body_bytes)
{
    memset(c, 0, sizeof(*c));
    c->pico.consume_trailer = 1;
    c->max_body_bytes = max_body_bytes;
    c->state = CHUNK_SIZE_LINE;
}

static int too_large(const struct berthd_http_chunked *c, struct berthd_http_refusal *why)
{
    return refuse(why, 413, "too_large", "the chunked body is larger than http.max_body_bytes (%llu bytes)",
                  (unsigned long long)c->max_body_bytes);
}

/* Hand the checked framing line to the decoder: 1 the body is complete, 0 not yet. */
static int decode_line(struct berthd_http_chunked *c, struct berthd_http_refusal *why)
{
    size_t n = c->line_len;
    ssize_t r = phr_decode_chunked(&c->pico, c->line, &n);

    if (r == -1)
        return MALFORMED(why, "over 100 KiB of chunk framing make up more than 80%% of the body's bytes");
    return r >= 0;
}

/* Chunk data from @in (@avail bytes, at least 1): into @body, through the decoder. */
static int take_data(struct berthd_http_chunked *c, const char *in, size_t avail, struct berth_buf *body,
                     size_t *ret_taken, struct berthd_http_refusal *why)
{
    size_t n = avail < c->pico.bytes_left_in_chunk ? avail : c->pico.bytes_left_in_chunk;
    size_t old = body->len, decoded = n;
    int r;

    r = berth_buf_append(body, in, n);
    if (r == -EFBIG)
        return too_large(c, why);
    if (r < 0)
        return no_memory(why);
    /* Within the chunk, the decoder keeps the bytes where they are. */
    if (phr_decode_chunked(&c->pico, body->data + old, &decoded) == -1 || decoded != n)
        return MALFORMED(why, "over 100 KiB of chunk framing make up more than 80%% of the body's bytes");
    c->decoded += n;
    if (c->pico.bytes_left_in_chunk == 0)
        c->state = CHUNK_DATA_CRLF;
    *ret_taken = n;
    return 0;
}

/* The framing line in c->line is complete: 1 the body is complete, 0 go on. */
static int end_of_line(struct berthd_http_chunked *c, struct berthd_http_refusal *why)
{
    const char *rule;
    size_t len;
    int r;

    if (c->state == CHUNK_SIZE_LINE) {
        c->chunks++;
        rule = chunk_line_error(c->line, c->line_len);
        if (rule)
            return MALFORMED(why, "chunk line %u %s", c->chunks, rule);
        r = decode_line(c, why);
        if (r < 0)
            return r;
        if (c->pico.bytes_left_in_chunk == 0) {
            c->state = CHUNK_TRAILER; /* the last chunk: the trailer section follows */
            return 0;
        }
        if (c->pico.bytes_left_in_chunk > c->max_body_bytes - c->decoded)
            return too_large(c, why);
        c->state = CHUNK_DATA;
        return 0;
    }
    /* CHUNK_TRAILER */
    if (c->line_len == 2 && c->line[0] == '\r') {
        r = decode_line(c, why);
        return r < 0 ? r : 1;
    }
    c->trailers++;
    rule = field_line_error(c->line, c->line_len, &len);
    if (rule)
        return MALFORMED(why, "trailer field line %u %s", c->trailers, rule);
    c->trailer_bytes += c->line_len;
    if (c->trailer_bytes > BERTHD_HTTP_TRAILER_MAX)
        return refuse(why, 431, "headers_too_large", "the trailer section is larger than %d bytes",
                      BERTHD_HTTP_TRAILER_MAX);
    return decode_line(c, why);
}

/* The next byte of the CRLF after chunk data. */
static int data_crlf(struct berthd_http_chunked *c, char byte, struct berthd_http_refusal *why)
{
    if (byte != (c->line_len == 0 ? '\r' : '\n'))
        return MALFORMED(why, "the data of chunk %u is not followed by CRLF (RFC 9112 7.1)", c->chunks);
    c->line[c->line_len++] = byte;
    if (c->line_len < 2)
        return 0;
    c->state = CHUNK_SIZE_LINE;
    return decode_line(c, why); /* 0: a chunk line comes next */
}

int berthd_http_chunked_feed(struct berthd_http_chunked *c, const char *in, size_t len, struct berth_buf *body,
                             size_t *ret_used, struct berthd_http_refusal *why)
{
    size_t i = 0, n = 0;
    const char *nl;
    int r = 0;

    if (!c || (!in && len) || !body || !ret_used || !why)
        return invalid(why, "berthd_http_chunked_feed: a NULL argument");
    if (c->state == CHUNK_REFUSED)
        return invalid(why, "berthd_http_chunked_feed: the body was refused before");
    if (c->state == CHUNK_DONE) {
        *ret_used = 0;
        return 1;
    }
    while (i < len) {
        if (c->state == CHUNK_DATA) {
            r = take_data(c, in + i, len - i, body, &n, why);
            if (r < 0)
                break;
            i += n;
            continue;
        }
        if (c->state == CHUNK_DATA_CRLF) {
            r = data_crlf(c, in[i++], why);
            if (r < 0)
                break;
            if (c->state == CHUNK_SIZE_LINE)
                c->line_len = 0;
            continue;
        }
        nl = memchr(in + i, '\n', len - i);
        n = nl ? (size_t)(nl - (in + i)) + 1 : len - i;
        if (n > sizeof(c->line) - c->line_len) {
            r = MALFORMED(why, "a %s line is longer than %zu bytes", c->state == CHUNK_TRAILER ? "trailer" : "chunk",
                          sizeof(c->line));
            break;
        }
        memcpy(c->line + c->line_len, in + i, n);
        c->line_len += n;
        i += n;
        if (!nl)
            break;
        r = end_of_line(c, why);
        c->line_len = 0;
        if (r < 0)
            break;
        if (r == 1) {
            c->state = CHUNK_DONE;
            *ret_used = i;
            return 1;
        }
    }
    if (r < 0) {
        c->state = CHUNK_REFUSED;
        return r;
    }
    *ret_used = len;
    return 0;
}
