/* SPDX-License-Identifier: MIT */
/* tarforge.c -- test-only raw tar writer; see tarforge.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tarforge.h"

#define BLOCK 512

static void need(struct tarforge *t, size_t n)
{
    if (t->len + n <= t->cap)
        return;
    while (t->len + n > t->cap)
        t->cap = t->cap ? t->cap * 2 : 4096;
    t->data = realloc(t->data, t->cap);
    if (!t->data)
        abort();
}

void tf_raw(struct tarforge *t, const void *data, size_t len)
{
    need(t, len);
    memcpy(t->data + t->len, data, len);
    t->len += len;
}

static void pad(struct tarforge *t)
{
    size_t n = (BLOCK - t->len % BLOCK) % BLOCK;

    need(t, n);
    memset(t->data + t->len, 0, n);
    t->len += n;
}

static void octal(unsigned char *f, size_t width, uint64_t v)
{
    char tmp[32];

    snprintf(tmp, sizeof(tmp), "%0*llo", (int)(width - 1), (unsigned long long)v);
    memcpy(f, tmp, width - 1);
    f[width - 1] = '\0';
}

void tf_member(struct tarforge *t, const struct tf_member *m)
{
    unsigned char h[BLOCK] = {0};
    unsigned sum = 0;
    unsigned mode = m->mode ? m->mode : (m->type == '5' ? 0755 : 0644);

    strncpy((char *)h, m->name, 100);
    octal(h + 100, 8, mode);
    octal(h + 108, 8, 1000);
    octal(h + 116, 8, 1000);
    octal(h + 124, 12, m->size_field ? (uint64_t)m->size_field : m->size);
    octal(h + 136, 12, 1700000000);
    h[156] = (unsigned char)m->type;
    if (m->linkname)
        strncpy((char *)h + 157, m->linkname, 100);
    if (m->gnu)
        memcpy(h + 257, "ustar  ", 8);
    else
        memcpy(h + 257,
               "ustar\0"
               "00",
               8);
    memcpy(h + 265, "user", 4);
    memcpy(h + 297, "group", 5);
    if (m->prefix)
        strncpy((char *)h + 345, m->prefix, 155);
    memset(h + 148, ' ', 8);
    for (size_t i = 0; i < BLOCK; i++)
        sum += h[i];
    if (m->bad_checksum)
        sum += 1;
    octal(h + 148, 7, sum);
    h[155] = ' ';
    tf_raw(t, h, BLOCK);
    if (m->size) {
        tf_raw(t, m->data, m->size);
        pad(t);
    }
}

void tf_file(struct tarforge *t, const char *name, unsigned mode, const char *content)
{
    tf_member(t, &(struct tf_member){
                     .name = name, .type = '0', .mode = mode, .data = content, .size = content ? strlen(content) : 0});
}

void tf_dir(struct tarforge *t, const char *name, unsigned mode)
{
    tf_member(t, &(struct tf_member){.name = name, .type = '5', .mode = mode});
}

void tf_symlink(struct tarforge *t, const char *name, const char *target)
{
    tf_member(t, &(struct tf_member){.name = name, .type = '2', .mode = 0777, .linkname = target});
}

void tf_hardlink(struct tarforge *t, const char *name, const char *target)
{
    tf_member(t, &(struct tf_member){.name = name, .type = '1', .linkname = target});
}

/* Append one "<len> <key>=<value>\n" record, len counting itself. */
static void record(struct tarforge *body, const char *key, const void *value, size_t vlen)
{
    size_t base = strlen(key) + vlen + 3, len = base + 1;
    char num[32];

    while (len != base + (size_t)snprintf(num, sizeof(num), "%zu", len))
        len = base + (size_t)snprintf(num, sizeof(num), "%zu", len);
    snprintf(num, sizeof(num), "%zu ", len);
    tf_raw(body, num, strlen(num));
    tf_raw(body, key, strlen(key));
    tf_raw(body, "=", 1);
    tf_raw(body, value, vlen);
    tf_raw(body, "\n", 1);
}

static void pax_body(struct tarforge *t, char type, struct tarforge *body)
{
    tf_member(t, &(struct tf_member){.name = type == 'g' ? "pax_global_header" : "PaxHeaders/entry",
                                     .type = type,
                                     .data = body->data,
                                     .size = body->len});
    tf_free(body);
}

void tf_pax(struct tarforge *t, char type, const char *const *records, size_t n)
{
    struct tarforge body = {0};

    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(records[i], '=');
        char key[256];
        if (!eq || (size_t)(eq - records[i]) >= sizeof(key))
            abort();
        memcpy(key, records[i], (size_t)(eq - records[i]));
        key[eq - records[i]] = '\0';
        record(&body, key, eq + 1, strlen(eq + 1));
    }
    pax_body(t, type, &body);
}

void tf_pax_raw(struct tarforge *t, const char *key, const void *value, size_t vlen)
{
    struct tarforge body = {0};

    record(&body, key, value, vlen);
    pax_body(t, 'x', &body);
}

void tf_gnu_long(struct tarforge *t, char type, const char *name)
{
    tf_member(t, &(struct tf_member){
                     .name = "././@LongLink", .type = type, .data = name, .size = strlen(name) + 1, .gnu = true});
}

void tf_end(struct tarforge *t)
{
    need(t, 2 * BLOCK);
    memset(t->data + t->len, 0, 2 * BLOCK);
    t->len += 2 * BLOCK;
}

void tf_free(struct tarforge *t)
{
    free(t->data);
    t->data = NULL;
    t->len = t->cap = 0;
}

static void deflate_some(z_stream *z, struct tarforge *out, const void *data, size_t len, int flush)
{
    unsigned char buf[65536];

    z->next_in = (unsigned char *)data;
    z->avail_in = (uInt)len;
    do {
        z->next_out = buf;
        z->avail_out = sizeof(buf);
        if (deflate(z, flush) == Z_STREAM_ERROR)
            abort();
        tf_raw(out, buf, sizeof(buf) - z->avail_out);
    } while (z->avail_out == 0 || z->avail_in > 0);
}

void tf_gzip_bomb(const void *prefix, size_t plen, uint64_t zeros, unsigned char **ret, size_t *ret_len)
{
    static const unsigned char zero[1 << 20];
    struct tarforge out = {0};
    z_stream z = {0};

    /* windowBits 15 + 16: a gzip wrapper (RFC 1952). */
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    deflate_some(&z, &out, prefix, plen, Z_NO_FLUSH);
    while (zeros > 0) {
        size_t n = zeros < sizeof(zero) ? (size_t)zeros : sizeof(zero);
        deflate_some(&z, &out, zero, n, Z_NO_FLUSH);
        zeros -= n;
    }
    deflate_some(&z, &out, NULL, 0, Z_FINISH);
    deflateEnd(&z);
    *ret = out.data;
    *ret_len = out.len;
}

void tf_gzip(const void *data, size_t len, unsigned char **ret, size_t *ret_len)
{
    tf_gzip_bomb(data, len, 0, ret, ret_len);
}
