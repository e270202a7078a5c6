/* SPDX-License-Identifier: MIT */
/*
 * tls.h -- berthd's TLS server context and client identities.
 *
 * TLS 1.3 only (RFC 8446), a client certificate is required and verified
 * against the configured CA bundle (chains of at most 16 certificates),
 * no session tickets and no session cache (every connection is a full
 * handshake, so a revoked identity cannot resume), ALPN "http/1.1".
 */
#ifndef BERTHD_TLS_H
#define BERTHD_TLS_H

#include <stdbool.h>

#include <openssl/ssl.h>

#include <berth/error.h>

#include "policy.h" /* BERTH_FINGERPRINT_LEN: the fingerprints the host policy names */

/**
 * berthd_tls_context() - build the server context from PEM files.
 * @certificate: server certificate chain (leaf first); read as a public file.
 * @private_key: its key; read as a secret file (owner only).
 * @client_ca:   CA bundle for client certificates; read as a public file.
 * Return: 0 with *@ret set (SSL_CTX_free() it); -EBADMSG (unreadable PEM,
 * key does not match); -ENOMEM; file errors.
 */
int berthd_tls_context(const char *certificate, const char *private_key, const char *client_ca, SSL_CTX **ret,
                       struct berth_error *reterr);

/**
 * berthd_tls_peer() - the verified client certificate of @ssl: its
 * fingerprint (lowercase hex SHA-256 of the leaf's DER) and whether it is
 * currently inside its validity period.
 * Return: 0; -ENOKEY when there is no verified client certificate.
 */
int berthd_tls_peer(SSL *ssl, char fingerprint[BERTH_FINGERPRINT_LEN + 1], bool *ret_valid_now);

#endif
