/* SPDX-License-Identifier: MIT */
/* query.c -- strict query strings; see query.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"

static int refuse(char *why, size_t why_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;

    if (why && why_size) {
        va_start(ap, fmt);
        vsnprintf(why, why_size, fmt, ap);
        va_end(ap);
    }
    return -EBADMSG;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Decode the @n bytes at @p into a new string; -EBADMSG with a reason in @err. */
static int decode(const char *p, size_t n, char **ret, const char **err)
{
    char *out = malloc(n + 1);
    size_t i, o = 0;

    if (!out)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];

        if (c == '%') {
            int hi = i + 2 < n ? hex_value(p[i + 1]) : -1, lo = i + 2 < n ? hex_value(p[i + 2]) : -1;

            if (hi < 0 || lo < 0) {
                free(out);
                *err = "has a \"%\" not followed by two hex digits";
                return -EBADMSG;
            }
            c = (unsigned char)(hi << 4 | lo);
            i += 2;
        }
        if (c < 0x21 || c > 0x7e) {
            free(out);
            *err = "decodes to a byte that is not visible ASCII";
            return -EBADMSG;
        }
        if (o == BERTHD_QUERY_VALUE_MAX) {
            free(out);
            *err = "is longer than 512 bytes";
            return -EBADMSG;
        }
        out[o++] = (char)c;
    }
    out[o] = '\0';
    *ret = out;
    return 0;
}

void berthd_query_free(const char *const *allowed, char **values)
{
    size_t i;

    for (i = 0; allowed && values && allowed[i]; i++) {
        free(values[i]);
        values[i] = NULL;
    }
}

static bool key_char(char c)
{
    return (c >= 'a' && c <= 'z') || c == '_';
}

int berthd_query_parse(const char *query, const char *const *allowed, char **ret_values, char *why, size_t why_size)
{
    size_t n_allowed = 0, params = 0, i;
    const char *p = query;
    int r = 0;

    if (!allowed || !ret_values)
        return -EINVAL;
    while (allowed[n_allowed])
        n_allowed++;
    if (n_allowed > BERTHD_QUERY_PARAMS_MAX)
        return -EINVAL;
    for (i = 0; i < n_allowed; i++)
        ret_values[i] = NULL;
    if (!query || !*query)
        return 0;
    if (strlen(query) > BERTHD_QUERY_MAX)
        return refuse(why, why_size, "the query string is longer than %d bytes", BERTHD_QUERY_MAX);
    for (;;) {
        const char *amp = strchr(p, '&'), *end = amp ? amp : p + strlen(p), *eq = memchr(p, '=', (size_t)(end - p));
        const char *err = NULL;
        size_t klen, k;

        if (++params > BERTHD_QUERY_PARAMS_MAX) {
            r = refuse(why, why_size, "the query string has more than %d parameters", BERTHD_QUERY_PARAMS_MAX);
            break;
        }
        if (!eq || eq == p) {
            r = refuse(why, why_size, "query parameter %zu is not key=value", params);
            break;
        }
        klen = (size_t)(eq - p);
        for (k = 0; k < klen && key_char(p[k]); k++)
            ;
        for (i = 0; k == klen && i < n_allowed; i++)
            if (strlen(allowed[i]) == klen && memcmp(allowed[i], p, klen) == 0)
                break;
        if (k != klen || i == n_allowed) {
            r = refuse(why, why_size, "query parameter %zu is not one this resource takes", params);
            break;
        }
        if (ret_values[i]) {
            r = refuse(why, why_size, "the query parameter %s is given twice", allowed[i]);
            break;
        }
        r = decode(eq + 1, (size_t)(end - eq - 1), &ret_values[i], &err);
        if (r == -EBADMSG)
            refuse(why, why_size, "the value of the query parameter %s %s", allowed[i], err);
        if (r < 0 || !amp)
            break;
        p = amp + 1;
    }
    if (r < 0)
        berthd_query_free(allowed, ret_values);
    return r;
}
