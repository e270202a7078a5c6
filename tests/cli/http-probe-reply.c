/* SPDX-License-Identifier: MIT */
/* http-probe-reply.c -- HTTP/1.1 response framing for http-probe; see http-probe-reply.h. */
#include <string.h>
#include <strings.h>

#include "http-probe-reply.h"

void probe_replies_init(struct probe_replies *r)
{
    memset(r, 0, sizeof(*r));
    r->state = PROBE_REPLY_STATUS;
}

static void finish(struct probe_replies *r)
{
    r->complete++;
    r->state = PROBE_REPLY_STATUS;
}

/* "HTTP/1.x NNN" followed by a space or the end: the status, else -1. */
static int status_of(const char *line)
{
    int status = 0;

    if (strncmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' || line[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++) {
        if (line[i] < '0' || line[i] > '9')
            return -1;
        status = status * 10 + (line[i] - '0');
    }
    return line[12] == ' ' || line[12] == '\0' ? status : -1;
}

/* The value of @line if it is the field @name (case-insensitive), else NULL. */
static const char *field_value(const char *line, const char *name)
{
    size_t n = strlen(name);

    if (strncasecmp(line, name, n) != 0 || line[n] != ':')
        return NULL;
    line += n + 1;
    return line + strspn(line, " \t");
}

/* A decimal or (@base 16) hex number at the start of @text, up to @stop or
 * the end; false when there is none or it overflows. */
static bool number_of(const char *text, int base, const char *stop, uint64_t *ret)
{
    uint64_t v = 0;
    const char *p;

    for (p = text; *p && !strchr(stop, *p); p++) {
        int d;
        if (*p >= '0' && *p <= '9')
            d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
            return false;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    if (p == text)
        return false;
    *ret = v;
    return true;
}

static void end_of_fields(struct probe_replies *r)
{
    if (r->status < 200)
        r->state = PROBE_REPLY_STATUS; /* an interim response: the final one follows */
    else if (r->status == 204 || r->status == 304)
        finish(r);
    else if (r->chunked)
        r->state = PROBE_REPLY_CHUNK_SIZE;
    else if (r->has_length && r->length == 0)
        finish(r);
    else if (r->has_length) {
        r->state = PROBE_REPLY_BODY;
        r->left = r->length;
    } else
        r->state = PROBE_REPLY_UNTIL_CLOSE;
}

static void line_done(struct probe_replies *r, probe_status_cb *on_status, void *arg)
{
    const char *line = r->line, *v;
    uint64_t n;

    switch (r->state) {
    case PROBE_REPLY_STATUS:
        if (!*line)
            return; /* an empty line between responses */
        r->status = status_of(line);
        if (on_status)
            on_status(r->status < 0 ? PROBE_REPLY_UNFRAMED : r->status, arg);
        if (r->status < 0) {
            r->state = PROBE_REPLY_IGNORE;
            return;
        }
        r->chunked = r->has_length = false;
        r->state = PROBE_REPLY_FIELDS;
        return;
    case PROBE_REPLY_FIELDS:
        if (!*line)
            end_of_fields(r);
        else if ((v = field_value(line, "Content-Length")) && number_of(v, 10, " \t", &n)) {
            r->has_length = true;
            r->length = n;
        } else if ((v = field_value(line, "Transfer-Encoding")))
            r->chunked = strcasestr(v, "chunked") != NULL;
        return;
    case PROBE_REPLY_CHUNK_SIZE:
        if (!number_of(line, 16, "; \t", &n))
            r->state = PROBE_REPLY_IGNORE;
        else if (n == 0)
            r->state = PROBE_REPLY_TRAILERS;
        else {
            r->state = PROBE_REPLY_CHUNK_DATA;
            r->left = n;
        }
        return;
    case PROBE_REPLY_CHUNK_CRLF: r->state = PROBE_REPLY_CHUNK_SIZE; return;
    case PROBE_REPLY_TRAILERS:
        if (!*line)
            finish(r);
        return;
    default: return;
    }
}

unsigned probe_replies_feed(struct probe_replies *r, const char *data, size_t len, probe_status_cb *on_status,
                            void *arg)
{
    size_t i = 0;

    while (i < len) {
        switch (r->state) {
        case PROBE_REPLY_BODY:
        case PROBE_REPLY_CHUNK_DATA: {
            uint64_t take = r->left < len - i ? r->left : len - i;
            i += take;
            r->left -= take;
            if (r->left == 0) {
                if (r->state == PROBE_REPLY_BODY)
                    finish(r);
                else
                    r->state = PROBE_REPLY_CHUNK_CRLF;
            }
            break;
        }
        case PROBE_REPLY_UNTIL_CLOSE:
        case PROBE_REPLY_IGNORE: i = len; break;
        default: {
            char c = data[i++];
            if (c != '\n') {
                if (r->line_len < sizeof(r->line) - 1)
                    r->line[r->line_len++] = c;
                break;
            }
            if (r->line_len > 0 && r->line[r->line_len - 1] == '\r')
                r->line_len--;
            r->line[r->line_len] = '\0';
            r->line_len = 0;
            line_done(r, on_status, arg);
            break;
        }
        }
    }
    return r->complete;
}
