/* SPDX-License-Identifier: MIT */
/*
 * keypem.c -- Ed25519 keys as PEM files, by OpenSSL: PKCS#8 private keys and
 * SubjectPublicKeyInfo public keys (RFC 8410); see sign.h.  Apart from
 * sign.c so that a program that only signs and verifies (berth-oci-shim)
 * does not link OpenSSL.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sodium.h>

#include "fsutil.h"
#include "macro.h"
#include "sign.h"

static inline void bio_freep(BIO **b)
{
    if (*b)
        BIO_free(*b);
}
static inline void evp_pkey_freep(EVP_PKEY **k)
{
    if (*k)
        EVP_PKEY_free(*k);
}
static inline void openssl_freep(void *p)
{
    OPENSSL_free(*(void **)p);
}

/* Read exactly one PEM block named @want from @pem, allowing only whitespace
 * around it.  Returns the DER in *ret_der (OPENSSL_free it). */
static int pem_single_block(const char *pem, size_t len, const char *want, unsigned char **ret_der, long *ret_len,
                            struct berth_error *reterr)
{
    _cleanup_(bio_freep) BIO *bio = NULL;
    _cleanup_(openssl_freep) char *name = NULL;
    _cleanup_(openssl_freep) char *header = NULL;
    unsigned char *der = NULL;
    char rest[256];
    long dlen = 0;
    size_t i;
    int n;

    for (i = 0; i < len && isspace((unsigned char)pem[i]); i++)
        ;
    if (len - i < 11 || memcmp(pem + i, "-----BEGIN ", 11) != 0)
        return berth_error_set(reterr, -EBADMSG, "not a PEM file (expected \"-----BEGIN %s-----\")", want);
    if (len > INT32_MAX)
        return berth_error_set(reterr, -EBADMSG, "PEM text too large");
    bio = BIO_new_mem_buf(pem + i, (int)(len - i));
    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (PEM_read_bio(bio, &name, &header, &der, &dlen) != 1)
        return berth_error_set(reterr, -EBADMSG, "malformed PEM block");
    if (!streq(name, want) || (header && *header)) {
        OPENSSL_clear_free(der, (size_t)dlen); /* it may be another private key */
        return berth_error_set(reterr, -EBADMSG, "PEM block is \"%s\"%s, expected an unencrypted \"%s\"", name,
                               header && *header ? " with headers" : "", want);
    }
    /* Only whitespace may follow the block. */
    while ((n = BIO_read(bio, rest, sizeof(rest))) > 0)
        for (int j = 0; j < n; j++)
            if (!isspace((unsigned char)rest[j])) {
                OPENSSL_clear_free(der, (size_t)dlen);
                return berth_error_set(reterr, -EBADMSG, "unexpected data after the PEM block");
            }
    *ret_der = der;
    *ret_len = dlen;
    return 0;
}

int berth_signing_key_from_pem(const char *pem, size_t len, struct berth_signing_key **ret, struct berth_error *reterr)
{
    _cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
    struct berth_signing_key *k = NULL;
    PKCS8_PRIV_KEY_INFO *p8;
    unsigned char *der = NULL;
    const unsigned char *p;
    uint8_t seed[BERTH_ED25519_SEED_LEN], pub[BERTH_ED25519_PUBLIC_LEN];
    size_t n = sizeof(seed), pn = sizeof(pub);
    long dlen = 0;
    int r;

    if (!pem || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = pem_single_block(pem, len, "PRIVATE KEY", &der, &dlen, reterr);
    if (r < 0)
        return r;
    p = der;
    p8 = d2i_PKCS8_PRIV_KEY_INFO(NULL, &p, dlen);
    if (!p8 || p != der + dlen) {
        PKCS8_PRIV_KEY_INFO_free(p8);
        OPENSSL_clear_free(der, (size_t)dlen);
        return berth_error_set(reterr, -EBADMSG, "malformed PKCS#8 structure");
    }
    pkey = EVP_PKCS82PKEY(p8);
    PKCS8_PRIV_KEY_INFO_free(p8);
    OPENSSL_clear_free(der, (size_t)dlen);
    if (!pkey)
        return berth_error_set(reterr, -EBADMSG, "unreadable PKCS#8 private key");
    if (!EVP_PKEY_is_a(pkey, "ED25519"))
        return berth_error_set(reterr, -EBADMSG, "private key is %s, expected Ed25519",
                               EVP_PKEY_get0_type_name(pkey) ? EVP_PKEY_get0_type_name(pkey) : "unknown");
    if (EVP_PKEY_get_raw_private_key(pkey, seed, &n) != 1 || n != sizeof(seed) ||
        EVP_PKEY_get_raw_public_key(pkey, pub, &pn) != 1 || pn != sizeof(pub)) {
        sodium_memzero(seed, sizeof(seed));
        return berth_error_set(reterr, -EBADMSG, "cannot extract the Ed25519 key");
    }
    r = berth_signing_key_from_seed(seed, &k, reterr);
    sodium_memzero(seed, sizeof(seed));
    if (r < 0)
        return r;
    /* Both libraries derived the public key from the same seed; a
     * disagreement would mean one of them reads the key differently. */
    if (memcmp(berth_signing_key_public(k), pub, sizeof(pub)) != 0) {
        berth_signing_key_free(k);
        return berth_error_set(reterr, -EBADMSG, "public key in the file does not match the private key");
    }
    *ret = k;
    return 0;
}

/* Copy a memory BIO's contents into a malloc'd NUL-terminated buffer. */
static int bio_to_string(BIO *bio, char **ret, size_t *ret_len)
{
    char *data = NULL, *out;
    long n = BIO_get_mem_data(bio, &data);

    if (n <= 0 || !data)
        return -EIO;
    out = malloc((size_t)n + 1);
    if (!out)
        return -ENOMEM;
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    *ret = out;
    if (ret_len)
        *ret_len = (size_t)n;
    return 0;
}

int berth_signing_key_to_pem(const struct berth_signing_key *key, char **ret, size_t *ret_len,
                             struct berth_error *reterr)
{
    _cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
    _cleanup_(bio_freep) BIO *bio = NULL;
    int r;

    if (!key || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* The first 32 bytes of libsodium's secret key are the RFC 8032 seed. */
    pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, berth_signing_key_seed(key), BERTH_ED25519_SEED_LEN);
    if (!pkey)
        return berth_error_set(reterr, -EIO, "OpenSSL cannot hold the Ed25519 key");
    bio = BIO_new(BIO_s_secmem());
    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL) != 1)
        return berth_error_set(reterr, -EIO, "writing the PKCS#8 PEM failed");
    r = bio_to_string(bio, ret, ret_len);
    if (r < 0)
        return berth_error_set(reterr, r, "writing the PKCS#8 PEM failed");
    return 0;
}

int berth_signing_key_load(const char *path, struct berth_signing_key **ret, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = BERTH_SIGNING_KEY_FILE_MAX,
        .one_link = 1,
    };
    char *pem = NULL;
    size_t len = 0;
    int r;

    if (!path || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_read_file_at(AT_FDCWD, path, &expect, &pem, &len, reterr);
    if (r < 0)
        return r;
    r = berth_signing_key_from_pem(pem, len, ret, reterr);
    berth_secret_free(pem, len);
    if (r < 0)
        berth_error_prefix(reterr, "%s", path);
    return r;
}

int berth_signing_key_save(const struct berth_signing_key *key, const char *path, struct berth_error *reterr)
{
    char *pem = NULL;
    size_t len = 0;
    int r;

    r = berth_signing_key_to_pem(key, &pem, &len, reterr);
    if (r < 0)
        return r;
    r = berth_publish_path(path, pem, len, 0600, 0, reterr);
    berth_secret_free(pem, len);
    return r;
}

int berth_public_key_to_pem(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char **ret, size_t *ret_len,
                            struct berth_error *reterr)
{
    _cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
    _cleanup_(bio_freep) BIO *bio = NULL;
    int r;

    if (!pub || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, pub, BERTH_ED25519_PUBLIC_LEN);
    if (!pkey)
        return berth_error_set(reterr, -EIO, "OpenSSL cannot hold the Ed25519 public key");
    bio = BIO_new(BIO_s_mem());
    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (PEM_write_bio_PUBKEY(bio, pkey) != 1)
        return berth_error_set(reterr, -EIO, "writing the public key PEM failed");
    r = bio_to_string(bio, ret, ret_len);
    if (r < 0)
        return berth_error_set(reterr, r, "writing the public key PEM failed");
    return 0;
}

int berth_public_key_from_pem(const char *pem, size_t len, uint8_t pub[BERTH_ED25519_PUBLIC_LEN],
                              struct berth_error *reterr)
{
    _cleanup_(evp_pkey_freep) EVP_PKEY *pkey = NULL;
    _cleanup_(openssl_freep) unsigned char *der = NULL;
    const unsigned char *p;
    size_t n = BERTH_ED25519_PUBLIC_LEN;
    long dlen = 0;
    int r;

    if (!pem || !pub)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = pem_single_block(pem, len, "PUBLIC KEY", &der, &dlen, reterr);
    if (r < 0)
        return r;
    p = der;
    pkey = d2i_PUBKEY(NULL, &p, dlen);
    if (!pkey || p != der + dlen)
        return berth_error_set(reterr, -EBADMSG, "malformed SubjectPublicKeyInfo");
    if (!EVP_PKEY_is_a(pkey, "ED25519"))
        return berth_error_set(reterr, -EBADMSG, "public key is %s, expected Ed25519",
                               EVP_PKEY_get0_type_name(pkey) ? EVP_PKEY_get0_type_name(pkey) : "unknown");
    if (EVP_PKEY_get_raw_public_key(pkey, pub, &n) != 1 || n != BERTH_ED25519_PUBLIC_LEN)
        return berth_error_set(reterr, -EBADMSG, "cannot extract the Ed25519 public key");
    return 0;
}
