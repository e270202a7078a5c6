/* SPDX-License-Identifier: MIT */
/* gzframe.c -- one gzip member and nothing after it; see gzframe.h. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/param.h>
#include <zlib.h>

#include "gzframe.h"
#include "macro.h"
#include "refusal.h"

#define SCRATCH ((size_t)64 << 10)
#define GZIP_ID1 0x1f
#define GZIP_ID2 0x8b

struct berth_gzframe {
    z_stream z;
    bool z_ready;           /* inflateInit2() succeeded */
    bool ended;             /* the first member's trailer was read */
    unsigned char after[2]; /* the first bytes after the member */
    size_t n_after;         /* how many of them were seen */
    unsigned char *scratch; /* inflate output, discarded */
    int error;              /* the refusal, once failed */
    struct berth_error failure;
};

int berth_gzframe_new(struct berth_gzframe **ret)
{
    struct berth_gzframe *g;

    if (!ret)
        return -EINVAL;
    g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    g->scratch = malloc(SCRATCH);
    /* windowBits 15 + 16: a gzip wrapper only (RFC 1952), never zlib or raw. */
    if (!g->scratch || inflateInit2(&g->z, 15 + 16) != Z_OK) {
        berth_gzframe_free(g);
        return -ENOMEM;
    }
    g->z_ready = true;
    *ret = g;
    return 0;
}

void berth_gzframe_free(struct berth_gzframe *g)
{
    if (!g)
        return;
    if (g->z_ready)
        inflateEnd(&g->z);
    free(g->scratch);
    free(g);
}

static int fail(struct berth_gzframe *g, int r, struct berth_error *reterr)
{
    g->error = r;
    if (reterr)
        g->failure = *reterr;
    return r;
}

/* The verdict on the bytes seen after the member (at least one). */
static int refuse_after(struct berth_gzframe *g, struct berth_error *reterr)
{
    if (g->after[0] == GZIP_ID1 && g->n_after == 2 && g->after[1] == GZIP_ID2)
        return fail(g,
                    berth_image_refuse(reterr, BERTH_IMAGE_GZIP_MEMBERS, "a second gzip member at offset %llu",
                                       (unsigned long long)g->z.total_in),
                    reterr);
    return fail(g,
                berth_image_refuse(reterr, BERTH_IMAGE_GZIP_TRAILING_DATA, "bytes after the gzip member at offset %llu",
                                   (unsigned long long)g->z.total_in),
                reterr);
}

int berth_gzframe_feed(struct berth_gzframe *g, const void *data, size_t len, struct berth_error *reterr)
{
    const unsigned char *p = data;

    if (!g || (!data && len > 0))
        return -EINVAL;
    if (g->error) {
        if (reterr)
            *reterr = g->failure;
        return g->error;
    }
    while (len > 0) {
        size_t n = MIN(len, (size_t)UINT_MAX);
        int zr;

        if (g->ended) {
            while (len > 0 && g->n_after < sizeof(g->after)) {
                g->after[g->n_after++] = *p++;
                len--;
            }
            /* Decided once both bytes are there, or one that starts no header. */
            if (g->n_after == sizeof(g->after) || g->after[0] != GZIP_ID1)
                return refuse_after(g, reterr);
            return 0;
        }
        g->z.next_in = (unsigned char *)p;
        g->z.avail_in = (uInt)n;
        do {
            g->z.next_out = g->scratch;
            g->z.avail_out = (uInt)SCRATCH;
            zr = inflate(&g->z, Z_NO_FLUSH);
            if (zr == Z_MEM_ERROR)
                return -ENOMEM;
            if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
                return fail(g,
                            berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "gzip: %s",
                                               g->z.msg ? g->z.msg : "corrupt stream"),
                            reterr);
        } while (zr != Z_STREAM_END && (g->z.avail_in > 0 || g->z.avail_out == 0));
        if (zr == Z_STREAM_END)
            g->ended = true;
        p += n - g->z.avail_in;
        len -= n - g->z.avail_in;
    }
    return 0;
}

int berth_gzframe_finish(struct berth_gzframe *g, uint64_t expanded, struct berth_error *reterr)
{
    if (!g)
        return -EINVAL;
    if (g->error) {
        if (reterr)
            *reterr = g->failure;
        return g->error;
    }
    if (g->n_after > 0)
        return refuse_after(g, reterr);
    if (!g->ended)
        return fail(g, berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "gzip: the member has no trailer"),
                    reterr);
    if ((uint64_t)g->z.total_out != expanded)
        return fail(g,
                    berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID,
                                       "gzip: two decoders disagree (%llu and %llu bytes)",
                                       (unsigned long long)g->z.total_out, (unsigned long long)expanded),
                    reterr);
    return 0;
}
