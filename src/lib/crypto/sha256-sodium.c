/* SPDX-License-Identifier: MIT */
/*
 * sha256-sodium.c -- SHA-256 (FIPS 180-4) by libsodium's crypto_hash_sha256:
 * the implementation of berth-oci-shim, a process started for every job,
 * which then neither loads nor initialises OpenSSL (digest.h,
 * sha256-impl.h).  The same digests as sha256-openssl.c (test-digest and
 * test-digest-sodium check both against the FIPS 180-4 examples); slower
 * on long input, which the shim hashes only for a job's declared outputs.
 */
#include <errno.h>
#include <stdlib.h>

#include <sodium.h>

#include "sha256-impl.h"

struct berth_sha256 {
    crypto_hash_sha256_state st;
};

int sha256_impl_oneshot(const void *data, size_t len, uint8_t out[32])
{
    if (sodium_init() < 0)
        return -EIO;
    return crypto_hash_sha256(out, data, len) == 0 ? 0 : -EIO;
}

int sha256_impl_new(struct berth_sha256 **ret)
{
    struct berth_sha256 *c;

    if (sodium_init() < 0)
        return -EIO;
    if (!(c = calloc(1, sizeof(*c))))
        return -ENOMEM;
    if (crypto_hash_sha256_init(&c->st) != 0) {
        free(c);
        return -EIO;
    }
    *ret = c;
    return 0;
}

int sha256_impl_update(struct berth_sha256 *ctx, const void *data, size_t len)
{
    return crypto_hash_sha256_update(&ctx->st, data, len) == 0 ? 0 : -EIO;
}

int sha256_impl_final(struct berth_sha256 *ctx, uint8_t out[32])
{
    return crypto_hash_sha256_final(&ctx->st, out) == 0 ? 0 : -EIO;
}

void sha256_impl_free(struct berth_sha256 *ctx)
{
    free(ctx);
}
