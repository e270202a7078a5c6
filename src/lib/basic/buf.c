/* SPDX-License-Identifier: MIT */
/* buf.c -- bounded growable buffer; see buf.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

static size_t buf_limit(const struct berth_buf *b)
{
    return b->max ? b->max : SIZE_MAX / 2;
}

int berth_buf_append(struct berth_buf *b, const void *p, size_t n)
{
    size_t need, cap;
    char *d;

    if (n > buf_limit(b) - b->len)
        return -EFBIG;
    need = b->len + n + 1;
    if (need > b->cap) {
        cap = b->cap ? b->cap : 256;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        d = realloc(b->data, cap);
        if (!d)
            return -ENOMEM;
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int berth_buf_putc(struct berth_buf *b, char c)
{
    return berth_buf_append(b, &c, 1);
}

char *berth_buf_steal(struct berth_buf *b, size_t *ret_len)
{
    char *d = b->data;
    size_t len = b->len;

    if (!d) {
        d = calloc(1, 1);
        if (!d)
            return NULL;
        len = 0;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    if (ret_len)
        *ret_len = len;
    return d;
}

void berth_buf_free(struct berth_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
