/* SPDX-License-Identifier: MIT */
/* certs.c -- dev-init's certificate authority; see certs.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certs.h"
#include "encoding.h"
#include "macro.h"
#include "utf8.h"

/* Bytes of a serial number: 128 random bits (RFC 5280 allows up to 20 octets). */
#define SERIAL_BYTES 16

BERTH_DEFINE_CLEANUP(BIO *, BIO_free)
BERTH_DEFINE_CLEANUP(BIGNUM *, BN_free)
BERTH_DEFINE_CLEANUP(X509_EXTENSION *, X509_EXTENSION_free)

/*
 * Record an OpenSSL failure: "@what failed: <OpenSSL's reason>" as -EIO,
 * and empty the error queue so nothing stale is reported later.
 */
static int ossl_error(struct berth_error *reterr, const char *what)
{
    unsigned long e = ERR_peek_last_error();
    char reason[256] = "";

    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    if (reason[0])
        return berth_error_set(reterr, -EIO, "%s failed: %s", what, reason);
    return berth_error_set(reterr, -EIO, "%s failed", what);
}

/* A common name OpenSSL will accept: 1..BCTL_DEVCERT_CN_MAX characters of UTF-8. */
static bool cn_valid(const char *cn)
{
    size_t len, pos = 0, chars = 0;
    uint32_t cp;

    if (!cn || !cn[0])
        return false;
    len = strlen(cn);
    while (pos < len) {
        if (berth_utf8_decode(cn, len, &pos, &cp) < 0)
            return false;
        chars++;
    }
    return chars <= BCTL_DEVCERT_CN_MAX;
}

/* Give @x a random positive serial number of SERIAL_BYTES bytes. */
static int set_random_serial(X509 *x, struct berth_error *reterr)
{
    _cleanup_(BN_freep) BIGNUM *bn = NULL;
    unsigned char raw[SERIAL_BYTES];

    if (RAND_bytes(raw, sizeof(raw)) != 1)
        return ossl_error(reterr, "generating a serial number");
    bn = BN_bin2bn(raw, sizeof(raw), NULL);
    if (!bn)
        return ossl_error(reterr, "generating a serial number");
    /* Zero is not a valid serial number; 2^-128 is unlikely, but cheap to handle. */
    if (BN_is_zero(bn) && BN_one(bn) != 1)
        return ossl_error(reterr, "generating a serial number");
    if (!BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
        return ossl_error(reterr, "setting the serial number");
    return 0;
}

/*
 * A new, unsigned v3 certificate for @key with subject CN=@cn, issued by
 * @issuer (NULL: by itself), valid for @validity.
 */
static int cert_new(const char *cn, EVP_PKEY *key, const X509_NAME *issuer, const struct bctl_cert_validity *validity,
                    X509 **ret, struct berth_error *reterr)
{
    _cleanup_(X509_freep) X509 *x = NULL;
    X509_NAME *subject;
    int r;

    x = X509_new();
    if (!x)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (X509_set_version(x, X509_VERSION_3) != 1)
        return ossl_error(reterr, "setting the certificate version");
    if ((r = set_random_serial(x, reterr)) < 0)
        return r;
    subject = X509_get_subject_name(x);
    if (!subject || X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) != 1)
        return ossl_error(reterr, "setting the subject name");
    if (X509_set_issuer_name(x, issuer ? issuer : subject) != 1)
        return ossl_error(reterr, "setting the issuer name");
    if (!ASN1_TIME_set(X509_getm_notBefore(x), (time_t)validity->not_before) ||
        !ASN1_TIME_set(X509_getm_notAfter(x), (time_t)validity->not_after))
        return ossl_error(reterr, "setting the validity period");
    if (X509_set_pubkey(x, key) != 1)
        return ossl_error(reterr, "setting the public key");
    *ret = TAKE_PTR(x);
    return 0;
}

/* Add the extension @nid with the openssl.cnf-style @value (x509v3_config(5)) to @x. */
static int add_ext(X509 *x, X509V3_CTX *ctx, int nid, const char *value, struct berth_error *reterr)
{
    _cleanup_(X509_EXTENSION_freep) X509_EXTENSION *ext = NULL;

    ext = X509V3_EXT_conf_nid(NULL, ctx, nid, value);
    if (!ext)
        return ossl_error(reterr, OBJ_nid2sn(nid));
    if (X509_add_ext(x, ext, -1) != 1)
        return ossl_error(reterr, OBJ_nid2sn(nid));
    return 0;
}

/* Sign @x with @key and ECDSA-with-SHA256. */
static int sign_cert(X509 *x, EVP_PKEY *key, struct berth_error *reterr)
{
    if (X509_sign(x, key, EVP_sha256()) <= 0)
        return ossl_error(reterr, "signing the certificate");
    return 0;
}

int bctl_devcert_key_new(EVP_PKEY **ret, struct berth_error *reterr)
{
    EVP_PKEY *key;

    if (!ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    if (!key)
        return ossl_error(reterr, "generating an EC P-256 key");
    *ret = key;
    return 0;
}

int bctl_devcert_ca_new(const char *cn, EVP_PKEY *key, const struct bctl_cert_validity *validity, X509 **ret,
                        struct berth_error *reterr)
{
    _cleanup_(X509_freep) X509 *x = NULL;
    X509V3_CTX ctx;
    int r;

    if (!cn_valid(cn) || !key || !validity || !ret || validity->not_before > validity->not_after)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = cert_new(cn, key, NULL, validity, &x, reterr)) < 0)
        return r;
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", reterr)) < 0 ||
        (r = add_ext(x, &ctx, NID_key_usage, "critical,keyCertSign,cRLSign", reterr)) < 0 ||
        (r = add_ext(x, &ctx, NID_subject_key_identifier, "hash", reterr)) < 0 || (r = sign_cert(x, key, reterr)) < 0)
        return r;
    *ret = TAKE_PTR(x);
    return 0;
}

int bctl_devcert_leaf_new(enum bctl_leaf_kind kind, const char *cn, EVP_PKEY *key, X509 *ca, EVP_PKEY *ca_key,
                          const struct bctl_cert_validity *validity, X509 **ret, struct berth_error *reterr)
{
    _cleanup_(X509_freep) X509 *x = NULL;
    X509V3_CTX ctx;
    int r;

    if (kind == BCTL_LEAF_SERVER)
        cn = "localhost";
    if ((kind != BCTL_LEAF_SERVER && kind != BCTL_LEAF_CLIENT) || !cn_valid(cn) || !key || !ca || !ca_key ||
        !validity || !ret || validity->not_before > validity->not_after)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = cert_new(cn, key, X509_get_subject_name(ca), validity, &x, reterr)) < 0)
        return r;
    X509V3_set_ctx(&ctx, ca, x, NULL, NULL, 0);
    if ((r = add_ext(x, &ctx, NID_basic_constraints, "critical,CA:FALSE", reterr)) < 0 ||
        (r = add_ext(x, &ctx, NID_key_usage, "critical,digitalSignature", reterr)) < 0 ||
        (r = add_ext(x, &ctx, NID_subject_key_identifier, "hash", reterr)) < 0 ||
        (r = add_ext(x, &ctx, NID_authority_key_identifier, "keyid:always", reterr)) < 0)
        return r;
    if (kind == BCTL_LEAF_SERVER) {
        if ((r = add_ext(x, &ctx, NID_ext_key_usage, "serverAuth", reterr)) < 0 ||
            (r = add_ext(x, &ctx, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1,IP:::1", reterr)) < 0)
            return r;
    } else if ((r = add_ext(x, &ctx, NID_ext_key_usage, "clientAuth", reterr)) < 0) {
        return r;
    }
    if ((r = sign_cert(x, ca_key, reterr)) < 0)
        return r;
    *ret = TAKE_PTR(x);
    return 0;
}

/*
 * Copy what @bio holds into a malloc'd NUL-terminated buffer.  The copy is
 * made with the length known up front, so no intermediate buffer of the
 * caller's ever holds part of a secret.
 */
static int bio_copy(BIO *bio, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    char *data = NULL, *out;
    long n;

    n = BIO_get_mem_data(bio, &data);
    if (n <= 0 || !data)
        return berth_error_set(reterr, -EIO, "OpenSSL wrote no PEM data");
    out = malloc((size_t)n + 1);
    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    memcpy(out, data, (size_t)n);
    out[n] = '\0';
    *ret = out;
    *ret_len = (size_t)n;
    return 0;
}

int bctl_devcert_cert_pem(X509 *cert, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_(BIO_freep) BIO *bio = NULL;

    if (!cert || !ret || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    bio = BIO_new(BIO_s_mem());
    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (PEM_write_bio_X509(bio, cert) != 1)
        return ossl_error(reterr, "writing the certificate PEM");
    return bio_copy(bio, ret, ret_len, reterr);
}

int bctl_devcert_key_pem(EVP_PKEY *key, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_(BIO_freep) BIO *bio = NULL;

    if (!key || !ret || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* A secure-memory BIO: its buffer is cleared when it grows and when freed. */
    bio = BIO_new(BIO_s_secmem());
    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (PEM_write_bio_PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL) != 1)
        return ossl_error(reterr, "writing the private key PEM");
    return bio_copy(bio, ret, ret_len, reterr);
}

int bctl_devcert_fingerprint(X509 *cert, char out[BCTL_FINGERPRINT_HEX_LEN + 1], struct berth_error *reterr)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    if (!cert || !out)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (X509_digest(cert, EVP_sha256(), md, &n) != 1 || n * 2 != BCTL_FINGERPRINT_HEX_LEN)
        return ossl_error(reterr, "hashing the certificate");
    berth_hex_encode(md, n, out);
    return 0;
}
