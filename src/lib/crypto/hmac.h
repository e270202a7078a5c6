/* SPDX-License-Identifier: MIT */
/*
 * hmac.h -- HMAC-SHA256 (RFC 2104 with SHA-256; test vectors RFC 4231).
 *
 * Used for the audit chain's MACs.  Implemented with libsodium's
 * crypto_auth_hmacsha256 streaming API, which accepts keys of any length.
 * Pure and thread-safe.
 */
#ifndef BERTH_HMAC_H
#define BERTH_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define BERTH_HMAC_SHA256_LEN 32 /**< bytes of a MAC */

/**
 * berth_hmac_sha256() - MAC of @len bytes at @msg under @key.
 * @key, @keylen: the key; @keylen >= 1 (callers that own keys use 32 bytes).
 * Return: 0, -EINVAL (NULL pointers with non-zero lengths, empty key), -EIO
 * when libsodium cannot initialise.
 */
int berth_hmac_sha256(const uint8_t *key, size_t keylen, const void *msg, size_t len,
                      uint8_t out[BERTH_HMAC_SHA256_LEN]);

/**
 * berth_hmac_sha256_verify() - check @mac in constant time.
 * Return: 0 when it matches, -EBADMSG when not, or an error of
 * berth_hmac_sha256().
 */
int berth_hmac_sha256_verify(const uint8_t *key, size_t keylen, const void *msg, size_t len,
                             const uint8_t mac[BERTH_HMAC_SHA256_LEN]);

#endif /* BERTH_HMAC_H */
