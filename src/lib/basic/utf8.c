/* SPDX-License-Identifier: MIT */
/* utf8.c -- strict UTF-8 (RFC 3629) and UTF-16 ordering; see utf8.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int berth_utf8_decode(const char *s, size_t len, size_t *pos, uint32_t *ret_cp)
{
    const unsigned char *p = (const unsigned char *)s + *pos;
    size_t avail = len - *pos;
    uint32_t cp, min;
    size_t n, i;

    if (*pos >= len)
        return -EILSEQ;
    if (p[0] < 0x80) {
        *ret_cp = p[0];
        *pos += 1;
        return 0;
    } else if ((p[0] & 0xe0) == 0xc0) {
        n = 2, cp = p[0] & 0x1f, min = 0x80;
    } else if ((p[0] & 0xf0) == 0xe0) {
        n = 3, cp = p[0] & 0x0f, min = 0x800;
    } else if ((p[0] & 0xf8) == 0xf0) {
        n = 4, cp = p[0] & 0x07, min = 0x10000;
    } else {
        return -EILSEQ;
    }
    if (avail < n)
        return -EILSEQ;
    for (i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return -EILSEQ;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -EILSEQ;
    *ret_cp = cp;
    *pos += n;
    return 0;
}

bool berth_utf8_valid(const char *s, size_t len, size_t *ret_bad)
{
    size_t pos = 0;
    uint32_t cp;

    while (pos < len) {
        /* Fast path for ASCII runs. */
        if ((unsigned char)s[pos] < 0x80) {
            pos++;
            continue;
        }
        if (berth_utf8_decode(s, len, &pos, &cp) < 0) {
            if (ret_bad)
                *ret_bad = pos;
            return false;
        }
    }
    return true;
}

int berth_utf8_lossy(const char *s, char **ret)
{
    size_t len, pos = 0, n = 0;
    uint32_t cp;
    char *out;

    if (!s || !ret)
        return -EINVAL;
    len = strlen(s);
    out = malloc(3 * len + 1); /* each byte becomes at most U+FFFD, 3 bytes */
    if (!out)
        return -ENOMEM;
    while (pos < len) {
        size_t start = pos;
        if (berth_utf8_decode(s, len, &pos, &cp) == 0) {
            memcpy(out + n, s + start, pos - start);
            n += pos - start;
        } else {
            memcpy(out + n, "\xef\xbf\xbd", 3);
            n += 3;
            pos = start + 1;
        }
    }
    out[n] = '\0';
    *ret = out;
    return 0;
}

/* Next UTF-16 code unit of a UTF-8 string; *pending holds a low surrogate
 * still owed from the previous astral character.  Returns -1 at the end and
 * 0x10000 + byte for an invalid byte (above every real unit). */
static int32_t next_unit(const char *s, size_t len, size_t *pos, uint32_t *pending)
{
    uint32_t cp;

    if (*pending) {
        cp = *pending;
        *pending = 0;
        return (int32_t)cp;
    }
    if (*pos >= len)
        return -1;
    if (berth_utf8_decode(s, len, pos, &cp) < 0)
        return (int32_t)(0x10000 + (unsigned char)s[(*pos)++]);
    if (cp < 0x10000)
        return (int32_t)cp;
    cp -= 0x10000;
    *pending = 0xdc00 + (cp & 0x3ff);
    return (int32_t)(0xd800 + (cp >> 10));
}

int berth_utf16_compare(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t pa = 0, pb = 0, n = alen < blen ? alen : blen;
    uint32_t qa = 0, qb = 0;

    /* The common ASCII prefix: one code unit per byte.  It ends at a
     * character boundary of both, where the general walk below takes over. */
    while (pa < n && a[pa] == b[pa] && (unsigned char)a[pa] < 0x80)
        pa++;
    if (pa == n)
        return alen == blen ? 0 : alen < blen ? -1 : 1;
    if ((unsigned char)a[pa] < 0x80 && (unsigned char)b[pa] < 0x80)
        return (unsigned char)a[pa] < (unsigned char)b[pa] ? -1 : 1;
    pb = pa;
    for (;;) {
        int32_t ua = next_unit(a, alen, &pa, &qa);
        int32_t ub = next_unit(b, blen, &pb, &qb);

        if (ua != ub)
            return ua < ub ? -1 : 1;
        if (ua < 0)
            return 0;
    }
}
