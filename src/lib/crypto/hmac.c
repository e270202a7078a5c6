/* SPDX-License-Identifier: MIT */
/* hmac.c -- HMAC-SHA256 via libsodium; see hmac.h. */
#include <errno.h>

#include <sodium.h>

#include "hmac.h"

int berth_hmac_sha256(const uint8_t *key, size_t keylen, const void *msg, size_t len,
                      uint8_t out[BERTH_HMAC_SHA256_LEN])
{
    crypto_auth_hmacsha256_state st;

    if (!key || keylen == 0 || !out || (!msg && len > 0))
        return -EINVAL;
    if (sodium_init() < 0)
        return -EIO;
    crypto_auth_hmacsha256_init(&st, key, keylen);
    if (len > 0)
        crypto_auth_hmacsha256_update(&st, msg, len);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
    return 0;
}

int berth_hmac_sha256_verify(const uint8_t *key, size_t keylen, const void *msg, size_t len,
                             const uint8_t mac[BERTH_HMAC_SHA256_LEN])
{
    uint8_t want[BERTH_HMAC_SHA256_LEN];
    int r;

    if (!mac)
        return -EINVAL;
    r = berth_hmac_sha256(key, keylen, msg, len, want);
    if (r < 0)
        return r;
    r = sodium_memcmp(want, mac, sizeof(want)) == 0 ? 0 : -EBADMSG;
    sodium_memzero(want, sizeof(want));
    return r;
}
