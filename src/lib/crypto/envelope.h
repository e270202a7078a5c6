/* SPDX-License-Identifier: MIT */
/*
 * envelope.h -- Ed25519-signed JSON documents.
 *
 * A signed document travels as an envelope
 *
 *   {"<member>": <body>, "signature": "<unpadded base64url, 86 chars>"}
 *
 * where the signature (RFC 8032 Ed25519) covers the canonical JSON of
 * <body> exactly.  Receipts, results, worker enrolments and claims all use
 * it.  Thread-safe.
 */
#ifndef BERTH_ENVELOPE_H
#define BERTH_ENVELOPE_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "sign.h"

#define BERTH_SIGNATURE_B64_LEN 86 /**< base64url characters of an Ed25519 signature */

/**
 * berth_envelope_seal() - sign @body with @key and wrap it as @member.
 * @ret: receives the envelope (a new reference; @body is referenced, not copied).
 * Return: 0, the errors of berth_json_serialize(), -EIO, -ENOMEM.
 */
int berth_envelope_seal(const struct berth_signing_key *key, const char *member, json_t *body, json_t **ret,
                        struct berth_error *reterr);

/**
 * berth_envelope_open() - check that @env is exactly {@member, "signature"}
 * with a signature by @pub over the canonical body.
 * @ret_body: optional; receives the body (borrowed from @env).
 * Return: 0; -EBADMSG (shape, encoding, or a signature that does not verify,
 * reterr says which).
 */
int berth_envelope_open(const json_t *env, const char *member, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN],
                        const json_t **ret_body, struct berth_error *reterr);

#endif /* BERTH_ENVELOPE_H */
