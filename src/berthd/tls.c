/* SPDX-License-Identifier: MIT */
/* tls.c -- berthd's TLS server context; see tls.h. */
#include <errno.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "berthd-config.h"
#include "digest.h"
#include "encoding.h"
#include "macro.h"
#include "sign.h"
#include "openssl-error.h"
#include "tls.h"

#define PEM_MAX (1024 * 1024)

static const unsigned char alpn_http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

static int select_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                       unsigned int inlen, void *arg)
{
    (void)ssl, (void)arg;
    if (SSL_select_next_proto((unsigned char **)out, outlen, alpn_http11, sizeof(alpn_http11), in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* only HTTP/1.1 is spoken here */
    return SSL_TLSEXT_ERR_OK;
}

/* Load every certificate of a PEM bundle into @store and @names. */
static int load_ca(SSL_CTX *ctx, const char *text, size_t len, struct berth_error *reterr)
{
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
    X509 *x;
    int n = 0, r = 0;

    if (!bio || !names) {
        BIO_free(bio);
        sk_X509_NAME_free(names);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        X509_NAME *name = X509_NAME_dup(X509_get_subject_name(x));
        if (!name || X509_STORE_add_cert(store, x) != 1 || !sk_X509_NAME_push(names, name)) {
            X509_NAME_free(name);
            X509_free(x);
            r = berth_openssl_error(reterr, -EBADMSG, "the client CA bundle");
            break;
        }
        X509_free(x);
        n++;
    }
    ERR_clear_error(); /* the loop ends with "no start line" */
    BIO_free(bio);
    if (r == 0 && n == 0)
        r = berth_error_set(reterr, -EBADMSG, "the client CA bundle holds no certificate");
    if (r < 0) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return r;
    }
    SSL_CTX_set_client_CA_list(ctx, names); /* takes ownership */
    return 0;
}

static int load_chain(SSL_CTX *ctx, const char *text, size_t len, struct berth_error *reterr)
{
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    X509 *leaf, *x;
    int r = 0;

    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1)
        r = berth_openssl_error(reterr, -EBADMSG, "the server certificate");
    X509_free(leaf);
    while (r == 0 && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
            X509_free(x);
            r = berth_openssl_error(reterr, -EBADMSG, "the server certificate chain");
        }
    }
    ERR_clear_error();
    BIO_free(bio);
    return r;
}

static int load_key(SSL_CTX *ctx, char *text, size_t len, struct berth_error *reterr)
{
    BIO *bio = BIO_new_mem_buf(text, (int)len);
    EVP_PKEY *pkey;
    int r = 0;

    if (!bio)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)"");
    if (!pkey || SSL_CTX_use_PrivateKey(ctx, pkey) != 1)
        r = berth_openssl_error(reterr, -EBADMSG, "the server private key");
    else if (SSL_CTX_check_private_key(ctx) != 1)
        r = berth_openssl_error(reterr, -EBADMSG, "the server private key does not match its certificate");
    EVP_PKEY_free(pkey);
    BIO_free(bio);
    return r;
}

int berthd_tls_context(const char *certificate, const char *private_key, const char *client_ca, SSL_CTX **ret,
                       struct berth_error *reterr)
{
    _cleanup_free_ char *chain = NULL, *ca = NULL;
    char *key = NULL;
    size_t chain_len = 0, ca_len = 0, key_len = 0;
    SSL_CTX *ctx;
    int r;

    if ((r = berthd_read_public_file(certificate, PEM_MAX, &chain, &chain_len, reterr)) < 0 ||
        (r = berthd_read_public_file(client_ca, PEM_MAX, &ca, &ca_len, reterr)) < 0 ||
        (r = berthd_read_secret_file(private_key, PEM_MAX, &key, &key_len, reterr)) < 0)
        return r;
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        berth_secret_free(key, key_len);
        return berth_openssl_error(reterr, -ENOMEM, "creating the TLS context");
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_verify_depth(ctx, 16);
    SSL_CTX_set_alpn_select_cb(ctx, select_alpn, NULL);
    r = load_chain(ctx, chain, chain_len, reterr);
    if (r == 0)
        r = load_key(ctx, key, key_len, reterr);
    if (r == 0)
        r = load_ca(ctx, ca, ca_len, reterr);
    berth_secret_free(key, key_len);
    if (r < 0) {
        SSL_CTX_free(ctx);
        return r;
    }
    *ret = ctx;
    return 0;
}

int berthd_tls_peer(SSL *ssl, char fingerprint[BERTH_FINGERPRINT_LEN + 1], bool *ret_valid_now)
{
    X509 *leaf = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
    unsigned char *der = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    int len;

    if (!leaf || SSL_get_verify_result(ssl) != X509_V_OK)
        return -ENOKEY;
    len = i2d_X509(leaf, &der);
    if (len <= 0)
        return -ENOKEY;
    berth_sha256(der, (size_t)len, raw);
    OPENSSL_free(der);
    berth_hex_encode(raw, sizeof(raw), fingerprint);
    fingerprint[BERTH_FINGERPRINT_LEN] = '\0';
    if (ret_valid_now)
        *ret_valid_now =
            X509_cmp_current_time(X509_get0_notBefore(leaf)) < 0 && X509_cmp_current_time(X509_get0_notAfter(leaf)) > 0;
    return 0;
}
