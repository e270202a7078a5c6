/* SPDX-License-Identifier: MIT */
/*
 * certs.h -- the small X.509 certificate authority of "berthctl dev-init".
 *
 * dev-init needs a CA, a server certificate for berthd and one client
 * certificate per principal, all created in memory (OpenSSL 3) and then
 * published atomically by the caller.  Every key is ECDSA on NIST P-256
 * (FIPS 186-4); every certificate is X.509 v3 (RFC 5280) with a random
 * 128-bit positive serial number and is signed with ECDSA-with-SHA256.
 *
 *   CA      subject CN as given, self-signed; basicConstraints critical
 *           CA:TRUE pathlen:0; keyUsage critical keyCertSign, cRLSign;
 *           subjectKeyIdentifier.
 *   server  CN "localhost"; subjectAltName DNS:localhost, IP:127.0.0.1,
 *           IP:::1; extendedKeyUsage serverAuth.
 *   client  CN the principal; extendedKeyUsage clientAuth.
 *
 * Both leaf kinds also carry basicConstraints critical CA:FALSE, keyUsage
 * critical digitalSignature, subjectKeyIdentifier and
 * authorityKeyIdentifier (the CA's key id).
 *
 * Functions return 0 or a negative errno (-ENOMEM, -EINVAL, -EIO for an
 * OpenSSL failure, whose reason is put into @reterr) and never leave
 * anything on OpenSSL's error queue.  No state is shared; all functions are
 * thread-safe.
 */
#ifndef BERTHCTL_DEVCERTS_H
#define BERTHCTL_DEVCERTS_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <berth/cleanup.h>
#include <berth/error.h>

/** Characters of a certificate fingerprint (hex SHA-256 of the DER), without NUL. */
#define BCTL_FINGERPRINT_HEX_LEN 64
/** Longest subject common name, in characters (RFC 5280 ub-common-name). */
#define BCTL_DEVCERT_CN_MAX 64

/** X509_free() / EVP_PKEY_free() on scope exit: _cleanup_(X509_freep) X509 *x = NULL; */
BERTH_DEFINE_CLEANUP(X509 *, X509_free)
BERTH_DEFINE_CLEANUP(EVP_PKEY *, EVP_PKEY_free)

/**
 * struct bctl_cert_validity - a certificate's validity period.
 * @not_before: first second of validity, seconds since the epoch.
 * @not_after:  last second of validity, seconds since the epoch.
 */
struct bctl_cert_validity {
    int64_t not_before;
    int64_t not_after;
};

/** The two kinds of end-entity certificate dev-init makes. */
enum bctl_leaf_kind {
    BCTL_LEAF_SERVER, /**< TLS server: CN localhost, the loopback SANs, serverAuth */
    BCTL_LEAF_CLIENT, /**< TLS client: CN the principal, clientAuth */
};

/**
 * bctl_devcert_key_new() - generate a new EC P-256 key pair from OpenSSL's
 * CSPRNG.
 * @ret: receives the key; release it with EVP_PKEY_free().
 * Return: 0 or -EIO.
 */
int bctl_devcert_key_new(EVP_PKEY **ret, struct berth_error *reterr);

/**
 * bctl_devcert_ca_new() - make the self-signed CA certificate for @key.
 * @cn:       subject common name, 1 to BCTL_DEVCERT_CN_MAX characters of UTF-8.
 * @key:      the CA's key pair (it signs the certificate).
 * @validity: the validity period.
 * @ret:      receives the certificate; release it with X509_free().
 * Return: 0, -EINVAL (bad arguments), -ENOMEM or -EIO.
 */
int bctl_devcert_ca_new(const char *cn, EVP_PKEY *key, const struct bctl_cert_validity *validity, X509 **ret,
                        struct berth_error *reterr);

/**
 * bctl_devcert_leaf_new() - make a server or client certificate for the
 * public half of @key, issued and signed by the CA.
 * @kind:     BCTL_LEAF_SERVER (the subject is always CN "localhost") or
 *            BCTL_LEAF_CLIENT.
 * @cn:       the client's common name (its principal, cut to fit), 1 to
 *            BCTL_DEVCERT_CN_MAX characters of UTF-8; ignored for a server
 *            certificate (may be NULL).
 * @key:      the subject's key pair (only its public half is used).
 * @ca:       the CA certificate made by bctl_devcert_ca_new().
 * @ca_key:   the CA's key pair.
 * @validity: the validity period.
 * @ret:      receives the certificate; release it with X509_free().
 * Return: 0, -EINVAL, -ENOMEM or -EIO.
 */
int bctl_devcert_leaf_new(enum bctl_leaf_kind kind, const char *cn, EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key,
                          const struct bctl_cert_validity *validity, X509 **ret, struct berth_error *reterr);

/**
 * bctl_devcert_cert_pem() - the certificate as one PEM block
 * ("-----BEGIN CERTIFICATE-----").
 * @ret:     receives malloc'd NUL-terminated text; free(3) it.
 * @ret_len: receives its length without the NUL.
 * Return: 0, -EINVAL, -ENOMEM or -EIO.
 */
int bctl_devcert_cert_pem(X509 *cert, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * bctl_devcert_key_pem() - the private key as one unencrypted PKCS#8 PEM
 * block ("-----BEGIN PRIVATE KEY-----").  OpenSSL's intermediate buffers are
 * wiped when released.
 * @ret:     receives malloc'd NUL-terminated text holding the secret;
 *           release it with berth_secret_free(*ret, *ret_len).
 * @ret_len: receives its length without the NUL.
 * Return: 0, -EINVAL, -ENOMEM or -EIO.
 */
int bctl_devcert_key_pem(EVP_PKEY *key, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * bctl_devcert_fingerprint() - the lowercase hex SHA-256 of the
 * certificate's DER encoding (what the host policy lists, and what
 * "openssl x509 -outform DER | sha256sum" prints).
 * @out: receives BCTL_FINGERPRINT_HEX_LEN characters and a NUL.
 * Return: 0, -EINVAL or -EIO.
 */
int bctl_devcert_fingerprint(X509 *cert, char out[BCTL_FINGERPRINT_HEX_LEN + 1], struct berth_error *reterr);

#endif /* BERTHCTL_DEVCERTS_H */
