/* SPDX-License-Identifier: MIT */
/* digest.c -- SHA-256 digests; see digest.h. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "canon.h"
#include "digest.h"
#include "encoding.h"
#include "macro.h"

struct berth_sha256 {
    EVP_MD_CTX *md;
};

int berth_sha256(const void *data, size_t len, uint8_t out[BERTH_SHA256_LEN])
{
    unsigned int n = 0;

    if (!out || (!data && len > 0))
        return -EINVAL;
    if (EVP_Digest(data ? data : "", len, out, &n, EVP_sha256(), NULL) != 1 || n != BERTH_SHA256_LEN)
        return -EIO;
    return 0;
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

int berth_sha256_new(struct berth_sha256 **ret)
{
    struct berth_sha256 *c;

    if (!ret)
        return -EINVAL;
    c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->md = EVP_MD_CTX_new();
    if (!c->md) {
        free(c);
        return -ENOMEM;
    }
    if (EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        berth_sha256_free(c);
        return -EIO;
    }
    *ret = c;
    return 0;
}

int berth_sha256_update(struct berth_sha256 *ctx, const void *data, size_t len)
{
    if (!ctx || (!data && len > 0))
        return -EINVAL;
    if (len == 0)
        return 0;
    return EVP_DigestUpdate(ctx->md, data, len) == 1 ? 0 : -EIO;
}

int berth_sha256_final(struct berth_sha256 *ctx, uint8_t out[BERTH_SHA256_LEN])
{
    unsigned int n = 0;

    if (!ctx || !out)
        return -EINVAL;
    if (EVP_DigestFinal_ex(ctx->md, out, &n) != 1 || n != BERTH_SHA256_LEN)
        return -EIO;
    return 0;
}

void berth_sha256_free(struct berth_sha256 *ctx)
{
    if (!ctx)
        return;
    EVP_MD_CTX_free(ctx->md);
    free(ctx);
}
