/* SPDX-License-Identifier: MIT */
/* sign.c -- Ed25519 keys, signatures and key ids, by libsodium; see sign.h
 * (their PEM files are keypem.c's). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "digest.h"
#include "encoding.h"
#include "fsutil.h"
#include "macro.h"
#include "sign.h"


struct berth_signing_key {
    uint8_t sk[crypto_sign_SECRETKEYBYTES]; /* libsodium layout: seed || public key */
    uint8_t pk[BERTH_ED25519_PUBLIC_LEN];
    char keyid[BERTH_KEY_ID_LEN + 1];
};

void berth_secret_free(char *buf, size_t len)
{
    if (!buf)
        return;
    sodium_memzero(buf, len);
    free(buf);
}

int berth_public_key_to_b64url(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char out[BERTH_PUBLIC_KEY_B64_LEN + 1])
{
    if (!pub || !out)
        return -EINVAL;
    return berth_base64url_encode(pub, BERTH_ED25519_PUBLIC_LEN, out, BERTH_PUBLIC_KEY_B64_LEN + 1);
}

int berth_public_key_from_b64url(const char *text, uint8_t pub[BERTH_ED25519_PUBLIC_LEN])
{
    size_t n = 0;

    if (!text || !pub || strlen(text) != BERTH_PUBLIC_KEY_B64_LEN)
        return -EINVAL;
    if (berth_base64url_decode(text, BERTH_PUBLIC_KEY_B64_LEN, pub, BERTH_ED25519_PUBLIC_LEN, &n) < 0 ||
        n != BERTH_ED25519_PUBLIC_LEN)
        return -EINVAL;
    return 0;
}

int berth_public_key_id(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char out[BERTH_KEY_ID_LEN + 1])
{
    char x[BERTH_PUBLIC_KEY_B64_LEN + 1], jwk[128];
    uint8_t hash[BERTH_SHA256_LEN];
    int n, r;

    if (!pub || !out)
        return -EINVAL;
    r = berth_public_key_to_b64url(pub, x);
    if (r < 0)
        return r;
    /* RFC 7638 section 3.2: required members only, lexicographic order, no
     * whitespace.  For an OKP key those are crv, kty, x (RFC 8037 sec. 2). */
    n = snprintf(jwk, sizeof(jwk), "{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"%s\"}", x);
    r = berth_sha256(jwk, (size_t)n, hash);
    if (r < 0)
        return r;
    return berth_base64url_encode(hash, sizeof(hash), out, BERTH_KEY_ID_LEN + 1);
}

int berth_signing_key_from_seed(const uint8_t seed[BERTH_ED25519_SEED_LEN], struct berth_signing_key **ret,
                                struct berth_error *reterr)
{
    struct berth_signing_key *k;
    int r;

    if (!seed || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (sodium_init() < 0)
        return berth_error_set(reterr, -EIO, "libsodium failed to initialise");
    k = sodium_malloc(sizeof(*k));
    if (!k)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (crypto_sign_seed_keypair(k->pk, k->sk, seed) != 0) {
        sodium_free(k);
        return berth_error_set(reterr, -EIO, "deriving the Ed25519 key pair failed");
    }
    r = berth_public_key_id(k->pk, k->keyid);
    if (r < 0) {
        sodium_free(k);
        return berth_error_set(reterr, r, "computing the key id failed");
    }
    *ret = k;
    return 0;
}

int berth_signing_key_generate(struct berth_signing_key **ret, struct berth_error *reterr)
{
    uint8_t seed[BERTH_ED25519_SEED_LEN];
    int r;

    if (!ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (sodium_init() < 0)
        return berth_error_set(reterr, -EIO, "libsodium failed to initialise");
    randombytes_buf(seed, sizeof(seed));
    r = berth_signing_key_from_seed(seed, ret, reterr);
    sodium_memzero(seed, sizeof(seed));
    return r;
}

void berth_signing_key_free(struct berth_signing_key *key)
{
    if (key)
        sodium_free(key); /* wipes before releasing */
}

const uint8_t *berth_signing_key_public(const struct berth_signing_key *key)
{
    return key ? key->pk : NULL;
}

const uint8_t *berth_signing_key_seed(const struct berth_signing_key *key)
{
    return key ? key->sk : NULL; /* libsodium's secret key starts with the RFC 8032 seed */
}

const char *berth_signing_key_id(const struct berth_signing_key *key)
{
    return key ? key->keyid : NULL;
}

int berth_sign(const struct berth_signing_key *key, const void *msg, size_t len,
               uint8_t sig[BERTH_ED25519_SIGNATURE_LEN])
{
    if (!key || !sig || (!msg && len > 0))
        return -EINVAL;
    if (crypto_sign_detached(sig, NULL, msg ? msg : (const void *)"", len, key->sk) != 0)
        return -EIO;
    return 0;
}

int berth_verify(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const void *msg, size_t len,
                 const uint8_t sig[BERTH_ED25519_SIGNATURE_LEN])
{
    if (!pub || !sig || (!msg && len > 0))
        return -EINVAL;
    if (sodium_init() < 0)
        return -EIO;
    if (crypto_sign_verify_detached(sig, msg ? msg : (const void *)"", len, pub) != 0)
        return -EBADMSG;
    return 0;
}
