/* SPDX-License-Identifier: MIT */
/*
 * sha256-impl.h -- what an implementation of SHA-256 gives digest.c, which
 * checks the arguments of the berth_sha256*() functions (digest.h) and
 * calls these: sha256-openssl.c and sha256-lazy.c each define all of
 * them, and a program links one (digest.h says which).  Arguments are
 * valid when these are called: @data is non-NULL (possibly with @len 0),
 * @ctx is one that sha256_impl_new() returned.  Each returns 0, or -ENOMEM
 * or -EIO.
 */
#ifndef BERTH_SHA256_IMPL_H
#define BERTH_SHA256_IMPL_H

#include <stddef.h>
#include <stdint.h>

struct berth_sha256;

int sha256_impl_oneshot(const void *data, size_t len, uint8_t out[32]);
int sha256_impl_new(struct berth_sha256 **ret);
int sha256_impl_update(struct berth_sha256 *ctx, const void *data, size_t len);
int sha256_impl_final(struct berth_sha256 *ctx, uint8_t out[32]);
void sha256_impl_free(struct berth_sha256 *ctx);

#endif
