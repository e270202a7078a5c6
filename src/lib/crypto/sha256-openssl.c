/* SPDX-License-Identifier: MIT */
/*
 * sha256-openssl.c -- SHA-256 (FIPS 180-4) by OpenSSL's EVP interface, which
 * uses the CPU's SHA extensions where there are some: the implementation of
 * every long-lived berth program (digest.h, sha256-impl.h).
 */
#include <errno.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "sha256-impl.h"

struct berth_sha256 {
    EVP_MD_CTX *md;
};

int sha256_impl_oneshot(const void *data, size_t len, uint8_t out[32])
{
    unsigned int n = 0;

    return EVP_Digest(data, len, out, &n, EVP_sha256(), NULL) == 1 && n == 32 ? 0 : -EIO;
}

int sha256_impl_new(struct berth_sha256 **ret)
{
    struct berth_sha256 *c = calloc(1, sizeof(*c));

    if (!c || !(c->md = EVP_MD_CTX_new())) {
        free(c);
        return -ENOMEM;
    }
    if (EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
        sha256_impl_free(c);
        return -EIO;
    }
    *ret = c;
    return 0;
}

int sha256_impl_update(struct berth_sha256 *ctx, const void *data, size_t len)
{
    return EVP_DigestUpdate(ctx->md, data, len) == 1 ? 0 : -EIO;
}

int sha256_impl_final(struct berth_sha256 *ctx, uint8_t out[32])
{
    unsigned int n = 0;

    return EVP_DigestFinal_ex(ctx->md, out, &n) == 1 && n == 32 ? 0 : -EIO;
}

void sha256_impl_free(struct berth_sha256 *ctx)
{
    EVP_MD_CTX_free(ctx->md);
    free(ctx);
}
