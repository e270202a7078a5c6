/* SPDX-License-Identifier: MIT */
/* digest.c -- SHA-256 digests; see digest.h.  The hash itself is
 * sha256-openssl.c's or sha256-lazy.c's (digest.h says which links where). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "canon.h"
#include "digest.h"
#include "encoding.h"
#include "fsutil.h"
#include "macro.h"
#include "sha256-impl.h"

int berth_sha256(const void *data, size_t len, uint8_t out[BERTH_SHA256_LEN])
{
    if (!out || (!data && len > 0))
        return -EINVAL;
    return sha256_impl_oneshot(data ? data : (const void *)"", len, out);
}

int berth_sha256_new(struct berth_sha256 **ret)
{
    return ret ? sha256_impl_new(ret) : -EINVAL;
}

int berth_sha256_update(struct berth_sha256 *ctx, const void *data, size_t len)
{
    if (!ctx || (!data && len > 0))
        return -EINVAL;
    return len == 0 ? 0 : sha256_impl_update(ctx, data, len);
}

int berth_sha256_final(struct berth_sha256 *ctx, uint8_t out[BERTH_SHA256_LEN])
{
    return ctx && out ? sha256_impl_final(ctx, out) : -EINVAL;
}

void berth_sha256_free(struct berth_sha256 *ctx)
{
    if (ctx)
        sha256_impl_free(ctx);
}

void berth_digest_format(const uint8_t raw[BERTH_SHA256_LEN], char out[BERTH_DIGEST_BUFSZ])
{
    memcpy(out, BERTH_DIGEST_PREFIX, sizeof(BERTH_DIGEST_PREFIX) - 1);
    berth_hex_encode(raw, BERTH_SHA256_LEN, out + sizeof(BERTH_DIGEST_PREFIX) - 1);
}

int berth_digest_bytes(const void *data, size_t len, char out[BERTH_DIGEST_BUFSZ])
{
    uint8_t raw[BERTH_SHA256_LEN];
    int r;

    r = berth_sha256(data, len, raw);
    if (r < 0)
        return r;
    berth_digest_format(raw, out);
    return 0;
}

int berth_digest_fd(int fd, char out[BERTH_DIGEST_BUFSZ])
{
    struct berth_sha256 *ctx = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    char buf[65536];
    int r;

    if (fd < 0 || !out)
        return -EINVAL;
    r = berth_sha256_new(&ctx);
    if (r < 0)
        return r;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = -errno;
            break;
        }
        if (n == 0) {
            r = berth_sha256_final(ctx, raw);
            break;
        }
        r = berth_sha256_update(ctx, buf, (size_t)n);
        if (r < 0)
            break;
    }
    berth_sha256_free(ctx);
    if (r == 0)
        berth_digest_format(raw, out);
    return r;
}

/* Reads and writes of berth_sha256_copy(): big enough that the system calls
 * cost little next to hashing (tests/bench/bench-disk-limit). */
#define COPY_CHUNK (1024 * 1024)

int berth_sha256_copy(int src_fd, uint64_t offset, int dst_fd, uint64_t max_bytes, uint8_t ret_raw[BERTH_SHA256_LEN],
                      uint64_t *ret_len, struct berth_error *reterr)
{
    _cleanup_free_ uint8_t *buf = NULL;
    struct berth_sha256 *ctx = NULL;
    uint64_t total = 0;
    int r = 0;

    if (src_fd < 0 || dst_fd < -1 || !ret_raw || !ret_len || offset > INT64_MAX || max_bytes >= INT64_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    buf = malloc(COPY_CHUNK);
    if (!buf || berth_sha256_new(&ctx) < 0) {
        berth_sha256_free(ctx);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    while (total <= max_bytes) {
        uint64_t want = max_bytes + 1 - total;
        ssize_t n = pread(src_fd, buf, want < COPY_CHUNK ? (size_t)want : COPY_CHUNK, (off_t)(offset + total));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = berth_error_set(reterr, -errno, "reading: %s", strerror(errno));
            break;
        }
        if (n == 0)
            break;
        if (total + (uint64_t)n > max_bytes) {
            n = (ssize_t)(max_bytes - total); /* the rest is the byte too many */
            total = max_bytes + 1;
        } else {
            total += (uint64_t)n;
        }
        if ((r = berth_sha256_update(ctx, buf, (size_t)n)) < 0) {
            r = berth_error_set(reterr, r, "hashing failed");
            break;
        }
        if (dst_fd >= 0 && n > 0 && (r = berth_write_all(dst_fd, buf, (size_t)n)) < 0) {
            r = berth_error_set(reterr, r, "writing: %s", strerror(-r));
            break;
        }
    }
    if (r == 0 && total <= max_bytes && (r = berth_sha256_final(ctx, ret_raw)) < 0)
        r = berth_error_set(reterr, r, "hashing failed");
    berth_sha256_free(ctx);
    if (r == 0)
        *ret_len = total;
    return r;
}

int berth_digest_fd_matches(int fd, uint64_t size, const char *digest, struct berth_error *reterr)
{
    uint8_t want[BERTH_SHA256_LEN], raw[BERTH_SHA256_LEN];
    uint64_t len = 0;
    int r;

    if (fd < 0 || !digest || berth_digest_parse(digest, want) < 0)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_sha256_copy(fd, 0, -1, size, raw, &len, reterr)) < 0)
        return r;
    if (len != size)
        return berth_error_set(reterr, -EBADMSG, "%s bytes, not %llu", len > size ? "more" : "fewer",
                               (unsigned long long)size);
    if (memcmp(raw, want, sizeof(raw)) != 0) {
        char got[BERTH_DIGEST_BUFSZ];
        berth_digest_format(raw, got);
        return berth_error_set(reterr, -EBADMSG, "its digest is %s, not %s", got, digest);
    }
    if (lseek(fd, 0, SEEK_SET) < 0)
        return berth_error_set(reterr, -errno, "%m");
    return 0;
}

int berth_digest_json(const json_t *value, char out[BERTH_DIGEST_BUFSZ], struct berth_error *reterr)
{
    _cleanup_free_ char *bytes = NULL;
    size_t len = 0;
    int r;

    r = berth_json_serialize(value, 0, &bytes, &len, reterr);
    if (r < 0)
        return r;
    r = berth_digest_bytes(bytes, len, out);
    if (r < 0)
        return berth_error_set(reterr, r, "SHA-256 failed");
    return 0;
}

int berth_digest_parse(const char *text, uint8_t raw[BERTH_SHA256_LEN])
{
    const size_t plen = sizeof(BERTH_DIGEST_PREFIX) - 1;

    if (!text || !raw)
        return -EINVAL;
    if (strncmp(text, BERTH_DIGEST_PREFIX, plen) != 0 || strlen(text) != BERTH_DIGEST_STRLEN)
        return -EINVAL;
    return berth_hex_decode(text + plen, BERTH_SHA256_HEX_LEN, raw, BERTH_SHA256_LEN);
}
