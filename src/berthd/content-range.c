/* SPDX-License-Identifier: MIT */
/* content-range.c -- an upload chunk's byte range; see content-range.h. */
#include <errno.h>
#include <stdio.h>

#include "content-range.h"

/* Digits in 2^53 - 1. */
#define POS_DIGITS_MAX 16

/* One position at *@p: 1 to 16 digits, no leading zero; *@p moves past it. */
static int position(const char **p, uint64_t *ret)
{
    const char *s = *p;
    uint64_t v = 0;
    size_t n = 0;

    while (s[n] >= '0' && s[n] <= '9') {
        if (n == POS_DIGITS_MAX)
            return -EBADMSG;
        v = v * 10 + (uint64_t)(s[n] - '0');
        n++;
    }
    if (n == 0 || (n > 1 && s[0] == '0') || v > BERTHD_RANGE_POS_MAX)
        return -EBADMSG;
    *p = s + n;
    *ret = v;
    return 0;
}

int berthd_content_range_parse(const char *text, uint64_t *ret_start, uint64_t *ret_end)
{
    uint64_t start, end;
    const char *p = text;

    if (!text || !ret_start || !ret_end)
        return -EINVAL;
    if (position(&p, &start) < 0 || *p++ != '-' || position(&p, &end) < 0 || *p != '\0' || start > end)
        return -EBADMSG;
    *ret_start = start;
    *ret_end = end;
    return 0;
}

int berthd_range_format(uint64_t offset, char buf[BERTHD_RANGE_BUFSZ])
{
    if (!buf || offset == 0 || offset > BERTHD_RANGE_POS_MAX + 1)
        return -EINVAL;
    snprintf(buf, BERTHD_RANGE_BUFSZ, "0-%llu", (unsigned long long)(offset - 1));
    return 0;
}
