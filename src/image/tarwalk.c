/* SPDX-License-Identifier: MIT */
/* tarwalk.c -- lockstep observer of raw tar headers; see tarwalk.h. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/param.h>

#include "macro.h"
#include "refusal.h"
#include "tarwalk.h"
#include "utf8.h"

#define BLOCK 512

enum tw_state {
    TW_HEADER, /* collecting a 512-byte header */
    TW_SKIP,   /* skipping member data and padding */
    TW_META,   /* collecting a PAX 'x' or GNU 'L'/'K' body, then its padding */
    TW_END,    /* after the first zero block: only zero bytes may follow */
    TW_FAILED, /* refused; every further call refuses */
};

struct berth_tarwalk {
    enum tw_state state;
    unsigned char hdr[BLOCK];
    size_t hdr_len;
    uint64_t skip;      /* TW_SKIP: bytes left; TW_META: padding left after the body */
    char meta_type;     /* 'x', 'L' or 'K' */
    char *meta;         /* TW_META: the body being collected */
    size_t meta_len;    /* bytes collected */
    size_t meta_size;   /* bytes expected */
    bool have_pax;      /* a PAX header precedes the next entry */
    char *pax_path;     /* its "path" (NUL-free), or NULL */
    char *pax_linkpath; /* its "linkpath" (NUL-free), or NULL */
    bool pax_size_set;
    uint64_t pax_size;
    char *long_name; /* GNU 'L' body up to its first NUL, or NULL */
    char *long_link; /* GNU 'K' */
    int error;       /* the refusal, once failed */
    struct berth_error failure;
    uint64_t offset;                    /* stream bytes observed so far */
    uint64_t end_zeros;                 /* TW_END: zero bytes seen after the first zero block */
    uint64_t chain_start;               /* where the current member's first header began */
    struct berth_tarwalk_member *queue; /* members seen, not yet taken */
    size_t q_head, q_len, q_cap;
};

int berth_tarwalk_new(struct berth_tarwalk **ret)
{
    struct berth_tarwalk *w;

    if (!ret)
        return -EINVAL;
    w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->state = TW_HEADER;
    *ret = w;
    return 0;
}

static void pending_reset(struct berth_tarwalk *w)
{
    free(w->pax_path);
    free(w->pax_linkpath);
    free(w->long_name);
    free(w->long_link);
    w->pax_path = w->pax_linkpath = w->long_name = w->long_link = NULL;
    w->have_pax = w->pax_size_set = false;
    w->pax_size = 0;
}

void berth_tarwalk_free(struct berth_tarwalk *w)
{
    if (!w)
        return;
    pending_reset(w);
    free(w->meta);
    free(w->queue);
    free(w);
}

/* Queue a finished member for berth_tarwalk_next_member(). */
static int enqueue(struct berth_tarwalk *w, uint64_t size)
{
    if (w->q_head > 0 && w->q_head == w->q_len) {
        w->q_head = w->q_len = 0;
    }
    if (w->q_len == w->q_cap) {
        size_t cap = w->q_cap ? w->q_cap * 2 : 16;
        struct berth_tarwalk_member *q = realloc(w->queue, cap * sizeof(*q));
        if (!q)
            return -ENOMEM;
        w->queue = q;
        w->q_cap = cap;
    }
    w->queue[w->q_len++] = (struct berth_tarwalk_member){.offset = w->chain_start, .size = size};
    return 0;
}

int berth_tarwalk_next_member(struct berth_tarwalk *w, struct berth_tarwalk_member *ret)
{
    if (!w || !ret)
        return -EINVAL;
    if (w->q_head == w->q_len)
        return -ENOENT;
    *ret = w->queue[w->q_head++];
    return 0;
}

/* Parse an octal numeric field (leading spaces, digits, then NUL/space or the end). */
static int parse_octal(const unsigned char *f, size_t n, uint64_t *ret)
{
    uint64_t v = 0;
    size_t i = 0;

    while (i < n && f[i] == ' ')
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++) {
        if (v > (UINT64_MAX >> 3))
            return -ERANGE;
        v = (v << 3) | (uint64_t)(f[i] - '0');
    }
    for (; i < n; i++)
        if (f[i] != ' ' && f[i] != '\0')
            return -EINVAL;
    *ret = v;
    return 0;
}

/* The size field: octal, or GNU base-256 (first byte 0x80, positive only). */
static int parse_size(const unsigned char *f, uint64_t *ret)
{
    uint64_t v = 0;

    if (!(f[0] & 0x80))
        return parse_octal(f, 12, ret);
    if (f[0] != 0x80)
        return -EINVAL; /* negative, or bits above 88 */
    for (size_t i = 1; i < 12; i++) {
        if (v > (UINT64_MAX >> 8))
            return -ERANGE;
        v = (v << 8) | f[i];
    }
    *ret = v;
    return 0;
}

static bool checksum_ok(const unsigned char *h)
{
    uint64_t stored;
    unsigned long usum = 0;
    long ssum = 0;

    if (parse_octal(h + 148, 8, &stored) < 0)
        return false;
    for (size_t i = 0; i < BLOCK; i++) {
        unsigned char c = (i >= 148 && i < 156) ? ' ' : h[i];
        usum += c;
        ssum += (signed char)c;
    }
    return stored == usum || (ssum >= 0 && stored == (uint64_t)ssum);
}

static bool block_is_zero(const unsigned char *h)
{
    for (size_t i = 0; i < BLOCK; i++)
        if (h[i])
            return false;
    return true;
}

static uint64_t padded(uint64_t n)
{
    return (n + (BLOCK - 1)) & ~(uint64_t)(BLOCK - 1);
}

/* A fixed-size header field as a string (up to its first NUL). */
static size_t field_len(const unsigned char *f, size_t n)
{
    const unsigned char *z = memchr(f, '\0', n);
    return z ? (size_t)(z - f) : n;
}

static bool ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return false;
    return true;
}

/* Whether ustar name[100] (and, for POSIX ustar, prefix[155]) could hold @p exactly. */
static bool fits_ustar(const char *p, bool has_prefix)
{
    size_t len = strlen(p);

    if (!ascii(p))
        return false;
    if (len <= 100)
        return true;
    if (!has_prefix || len > 155 + 1 + 100)
        return false;
    for (size_t i = 0; i < len; i++)
        if (p[i] == '/' && i <= 155 && len - i - 1 <= 100 && len - i - 1 > 0)
            return true;
    return false;
}

/* Equal, ignoring trailing slashes (a directory is written "d" or "d/"). */
static bool same_name(const char *a, size_t alen, const char *b, size_t blen)
{
    while (alen > 0 && a[alen - 1] == '/')
        alen--;
    while (blen > 0 && b[blen - 1] == '/')
        blen--;
    return alen == blen && memcmp(a, b, alen) == 0;
}

static int fail(struct berth_tarwalk *w, int r, struct berth_error *reterr)
{
    w->state = TW_FAILED;
    w->error = r;
    if (reterr)
        w->failure = *reterr;
    return r;
}

/* The PAX and GNU names must agree with the ustar fields that could have held them. */
static int check_names(struct berth_tarwalk *w, bool posix, struct berth_error *reterr)
{
    const unsigned char *h = w->hdr;
    char ustar[256 + 1];
    size_t nlen = field_len(h, 100), plen = posix ? field_len(h + 345, 155) : 0, ulen = 0;

    if (plen > 0) {
        memcpy(ustar, h + 345, plen);
        ustar[plen] = '/';
        ulen = plen + 1;
    }
    memcpy(ustar + ulen, h, nlen);
    ulen += nlen;
    ustar[ulen] = '\0';

    /* A PAX header and a GNU long name never both name one entry (refused
     * as "mixed-long-names" when the second one arrives). */
    if (w->pax_path && fits_ustar(w->pax_path, posix) && !same_name(w->pax_path, strlen(w->pax_path), ustar, ulen))
        return berth_image_refuse(reterr, BERTH_IMAGE_NAME_MISMATCH, "PAX path \"%.100s\" but ustar name \"%s\"",
                                  w->pax_path, ustar);
    if (w->pax_linkpath && fits_ustar(w->pax_linkpath, false) &&
        !same_name(w->pax_linkpath, strlen(w->pax_linkpath), (const char *)h + 157, field_len(h + 157, 100)))
        return berth_image_refuse(reterr, BERTH_IMAGE_NAME_MISMATCH, "PAX linkpath and ustar linkname differ");
    return 0;
}

static bool has_prefix(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

static int pax_value_path(const char *value, size_t vlen, char **ret, struct berth_error *reterr)
{
    char *copy;

    if (memchr(value, '\0', vlen))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "NUL byte in a PAX path");
    if (!berth_utf8_valid(value, vlen, NULL))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "PAX path is not UTF-8");
    if (*ret)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "PAX path record repeated");
    copy = strndup(value, vlen);
    if (!copy)
        return -ENOMEM;
    *ret = copy;
    return 0;
}

/* One "key=value" PAX record (POSIX pax, "pax Extended Header"). */
static int pax_record(struct berth_tarwalk *w, const char *key, size_t klen, const char *value, size_t vlen,
                      struct berth_error *reterr)
{
    if (klen == 4 && memcmp(key, "path", 4) == 0)
        return pax_value_path(value, vlen, &w->pax_path, reterr);
    if (klen == 8 && memcmp(key, "linkpath", 8) == 0)
        return pax_value_path(value, vlen, &w->pax_linkpath, reterr);
    if (klen == 4 && memcmp(key, "size", 4) == 0) {
        uint64_t v = 0;
        if (vlen == 0 || vlen > 19)
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "bad PAX size");
        for (size_t i = 0; i < vlen; i++) {
            if (value[i] < '0' || value[i] > '9')
                return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "bad PAX size");
            v = v * 10 + (uint64_t)(value[i] - '0');
        }
        w->pax_size = v;
        w->pax_size_set = true;
        return 0;
    }
    if (klen == 15 && memcmp(key, "SCHILY.filetype", 15) == 0) {
        /* star's file type record: libarchive 3.6 ignores it, a later one may not. */
        if (vlen == 6 && memcmp(value, "socket", 6) == 0)
            return berth_image_refuse(reterr, BERTH_IMAGE_SOCKET, "PAX SCHILY.filetype socket");
        if (vlen == 4 && memcmp(value, "fifo", 4) == 0)
            return berth_image_refuse(reterr, BERTH_IMAGE_FIFO, "PAX SCHILY.filetype fifo");
        if ((vlen == 8 && memcmp(value, "blockdev", 8) == 0) || (vlen == 7 && memcmp(value, "chardev", 7) == 0))
            return berth_image_refuse(reterr, BERTH_IMAGE_DEVICE_NODE, "PAX SCHILY.filetype device");
        return 0;
    }
    if (has_prefix(key, klen, "GNU.sparse.") || (klen == 15 && memcmp(key, "SCHILY.realsize", 15) == 0) ||
        (klen == 13 && memcmp(key, "SUN.holesdata", 13) == 0))
        return berth_image_refuse(reterr, BERTH_IMAGE_SPARSE_FILE, "PAX sparse file record");
    if (has_prefix(key, klen, "SCHILY.xattr.") || has_prefix(key, klen, "LIBARCHIVE.xattr.") ||
        has_prefix(key, klen, "SCHILY.acl.") || has_prefix(key, klen, "RHT.security."))
        return berth_image_refuse(reterr, BERTH_IMAGE_XATTR, "PAX extended attribute or ACL record");
    return 0;
}

/* Parse the collected PAX body: records "<len> <key>=<value>\n", len counting itself. */
static int pax_parse(struct berth_tarwalk *w, struct berth_error *reterr)
{
    const char *p = w->meta, *end = w->meta + w->meta_len;

    while (p < end) {
        size_t len = 0, i = 0, avail = (size_t)(end - p);
        const char *rec, *eq, *key;
        int r;

        while (i < avail && p[i] >= '0' && p[i] <= '9' && i < 8)
            len = len * 10 + (size_t)(p[i++] - '0');
        if (i == 0 || i >= avail || p[i] != ' ' || len > avail || len < i + 3 || p[len - 1] != '\n')
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "malformed PAX record");
        rec = p + i + 1;
        key = rec;
        eq = memchr(rec, '=', (size_t)(p + len - 1 - rec));
        /* libarchive 3.6 stops at (and only warns about) a NUL in a key or a
         * record of 1,000,000 bytes or more: refuse both, so that the two
         * readers can never apply different records. */
        if (!eq || eq == key || memchr(key, '\0', (size_t)(eq - key)) || len >= 1000000)
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "malformed PAX record");
        r = pax_record(w, key, (size_t)(eq - key), eq + 1, (size_t)(p + len - 1 - (eq + 1)), reterr);
        if (r < 0)
            return r;
        p += len;
    }
    return 0;
}

static int meta_done(struct berth_tarwalk *w, struct berth_error *reterr)
{
    char **slot;
    size_t n;

    if (w->meta_type == 'x')
        return pax_parse(w, reterr);
    slot = w->meta_type == 'L' ? &w->long_name : &w->long_link;
    n = strnlen(w->meta, w->meta_len);
    if (n == 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "empty GNU long name");
    *slot = strndup(w->meta, n);
    return *slot ? 0 : -ENOMEM;
}

static int header(struct berth_tarwalk *w, struct berth_error *reterr)
{
    const unsigned char *h = w->hdr;
    char type = (char)h[156];
    bool posix = memcmp(h + 257, "ustar\0", 6) == 0;
    uint64_t size;
    int r;

    if (block_is_zero(h)) {
        if (w->have_pax || w->long_name || w->long_link)
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "extended header without its entry");
        /* libarchive ends the archive at the first zero block (and skips a
         * second one); GNU tar -i reads on.  So everything after it must be
         * zero, and the marker needs both blocks (POSIX pax, ustar format):
         * checked in berth_tarwalk_feed() and berth_tarwalk_finish(). */
        w->state = TW_END;
        return 0;
    }
    if (!checksum_ok(h))
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "tar header checksum mismatch");
    if (parse_size(h + 124, &size) < 0 || size > INT64_MAX)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "bad tar size field");

    switch (type) {
    case 'g': return berth_image_refuse(reterr, BERTH_IMAGE_PAX_GLOBAL, "PAX global extended header");
    case 'S': return berth_image_refuse(reterr, BERTH_IMAGE_SPARSE_FILE, "GNU sparse file");
    case 'x':
    case 'L':
    case 'K':
        if ((type == 'x' && w->have_pax) || (type == 'L' && w->long_name) || (type == 'K' && w->long_link))
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "repeated '%c' header", type);
        /* Readers disagree on which of the two names wins (libarchive: the
         * PAX one; others: the last one read): one entry gets one kind. */
        if (type == 'x' ? (w->long_name || w->long_link) : w->have_pax)
            return berth_image_refuse(reterr, BERTH_IMAGE_MIXED_LONG_NAMES,
                                      "a PAX header and a GNU '%c' header for one entry",
                                      type == 'x' ? (w->long_name ? 'L' : 'K') : type);
        if (size > BERTH_TARWALK_META_MAX)
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "'%c' header over 1 MiB", type);
        if (type == 'x')
            w->have_pax = true;
        free(w->meta);
        w->meta = malloc(size + 1);
        if (!w->meta)
            return -ENOMEM;
        w->meta_type = type;
        w->meta_len = 0;
        w->meta_size = (size_t)size;
        w->skip = padded(size) - size;
        w->state = TW_META;
        if (size == 0) {
            r = meta_done(w, reterr);
            if (r < 0)
                return r;
            w->state = TW_HEADER;
        }
        return 0;
    case '7':
        /* POSIX reserves '7' for a file with an implementation-defined
         * high-performance attribute, read as regular where unsupported:
         * GNU tar and libarchive extract it, containerd and moby refuse it. */
        return berth_image_refuse(reterr, BERTH_IMAGE_UNSUPPORTED_ENTRY, "contiguous file (tar type flag '7')");
    case '0':
    case '\0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6': break;
    default: return berth_image_refuse(reterr, BERTH_IMAGE_UNSUPPORTED_ENTRY, "tar type flag 0x%02x", h[156]);
    }

    if (w->pax_size_set)
        size = w->pax_size;
    if (type == '0' || type == '\0') {
        /* libarchive turns a regular member whose name (PAX path, else GNU
         * long name, else prefix/name) ends in "/" into a directory and
         * reads its data as headers: refuse, whichever field says it. */
        size_t nlen = field_len(h, 100), plen = posix ? field_len(h + 345, 155) : 0;
        const char *eff = w->pax_path ? w->pax_path : w->long_name;
        bool slash = eff ? (eff[0] && eff[strlen(eff) - 1] == '/') : (nlen > 0 ? h[nlen - 1] == '/' : plen > 0);
        if (size > 0 && slash)
            return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "regular member named as a directory");
    } else if (size != 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "type '%c' member with data", type);
    r = check_names(w, posix, reterr);
    if (r < 0)
        return r;
    r = enqueue(w, size);
    if (r < 0)
        return r;
    pending_reset(w);
    w->skip = padded(size);
    w->state = w->skip > 0 ? TW_SKIP : TW_HEADER; /* a stream may end right here */
    return 0;
}

int berth_tarwalk_feed(struct berth_tarwalk *w, const void *data, size_t len, struct berth_error *reterr)
{
    const unsigned char *p = data;
    int r;

    if (!w || (!data && len > 0))
        return -EINVAL;
    if (w->state == TW_FAILED) {
        if (reterr)
            *reterr = w->failure;
        return w->error;
    }
    while (len > 0) {
        size_t n;

        switch (w->state) {
        case TW_HEADER:
            if (w->hdr_len == 0 && !w->have_pax && !w->long_name && !w->long_link)
                w->chain_start = w->offset; /* the first header of a member's chain */
            n = MIN(len, (size_t)BLOCK - w->hdr_len);
            memcpy(w->hdr + w->hdr_len, p, n);
            w->hdr_len += n;
            if (w->hdr_len == BLOCK) {
                w->hdr_len = 0;
                r = header(w, reterr);
                if (r < 0)
                    return fail(w, r, reterr);
            }
            break;
        case TW_SKIP:
            n = (size_t)MIN((uint64_t)len, w->skip);
            w->skip -= n;
            if (w->skip == 0)
                w->state = TW_HEADER;
            break;
        case TW_META:
            n = MIN(len, w->meta_size - w->meta_len);
            memcpy(w->meta + w->meta_len, p, n);
            w->meta_len += n;
            if (w->meta_len == w->meta_size) {
                w->meta[w->meta_len] = '\0';
                r = meta_done(w, reterr);
                if (r < 0)
                    return fail(w, r, reterr);
                free(w->meta);
                w->meta = NULL;
                w->state = w->skip > 0 ? TW_SKIP : TW_HEADER;
            }
            break;
        case TW_END:
            for (n = 0; n < len; n++)
                if (p[n])
                    return fail(w,
                                berth_image_refuse(reterr, BERTH_IMAGE_TAR_TRAILING_DATA,
                                                   "non-zero byte at offset %llu, after the end of the archive",
                                                   (unsigned long long)(w->offset + n)),
                                reterr);
            w->end_zeros += n;
            break;
        default: return -EINVAL;
        }
        p += n;
        len -= n;
        w->offset += n;
    }
    return 0;
}

int berth_tarwalk_finish(struct berth_tarwalk *w, struct berth_error *reterr)
{
    if (!w)
        return -EINVAL;
    if (w->state == TW_FAILED) {
        if (reterr)
            *reterr = w->failure;
        return w->error;
    }
    if (w->state == TW_END && w->end_zeros >= BLOCK)
        return 0;
    if (w->state == TW_END)
        return fail(w,
                    berth_image_refuse(reterr, BERTH_IMAGE_TAR_END_MISSING, "one zero block where two end the archive"),
                    reterr);
    if (w->state == TW_HEADER && w->hdr_len == 0 && !w->have_pax && !w->long_name && !w->long_link)
        return fail(w, berth_image_refuse(reterr, BERTH_IMAGE_TAR_END_MISSING, "no end-of-archive marker"), reterr);
    return fail(w, berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "tar stream truncated"), reterr);
}
