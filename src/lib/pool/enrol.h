/* SPDX-License-Identifier: MIT */
/*
 * enrol.h -- worker enrolment and claim receipts.
 *
 * A worker holds an Ed25519 install identity (sign.h).  It joins a pool by
 * signing an enrolment receipt
 *
 *   {"created_ns":"<ns>", "keyid":..., "kind":"pool.enrolment",
 *    "pool_hash":..., "public_key":"<base64url>", "schema_version":1,
 *    "worker_name":...}
 *
 * and takes work by signing a claim receipt
 *
 *   {"created_ns":"<ns>", "job_id":..., "keyid":..., "kind":"pool.claim",
 *    "placement_hash":..., "pool_hash":..., "schema_version":1,
 *    "worker_name":...}
 *
 * Each is sealed in an envelope (envelope.h), {"enrolment"|"claim": receipt,
 * "signature": sig}, and recorded so in the audit chain (pool.worker_enrolled,
 * pool.claim_receipt).  keyid is the RFC 7638 thumbprint of public_key.
 * Thread-safe.
 */
#ifndef BERTH_ENROL_H
#define BERTH_ENROL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "envelope.h"
#include "sign.h"

/** Worker names and job ids: 1..128 bytes of [A-Za-z0-9._-], not all dots. */
bool berth_worker_name_valid(const char *name);
bool berth_job_id_valid(const char *id);

/**
 * berth_enrolment_create() - sign an enrolment of @worker into the pool
 * @pool_hash under the name @worker_name at @created_ns.
 * @ret_details: receives {"enrolment": ..., "signature": ...}.
 * Return: 0, -EINVAL (bad names or hash), -ENOMEM.
 */
int berth_enrolment_create(const struct berth_signing_key *worker, const char *pool_hash, const char *worker_name,
                           int64_t created_ns, json_t **ret_details, struct berth_error *reterr);

/**
 * berth_claim_create() - sign @worker's claim of @job_id placed by
 * @placement_hash in @pool_hash.  Arguments and errors as above.
 */
int berth_claim_create(const struct berth_signing_key *worker, const char *pool_hash, const char *worker_name,
                       const char *job_id, const char *placement_hash, int64_t created_ns, json_t **ret_details,
                       struct berth_error *reterr);

/**
 * berth_enrolment_verify() - check {"enrolment", "signature"} details: exact
 * members and formats, keyid = thumbprint(public_key), a valid signature by
 * that key.  @ret_public_key receives the key.
 * Return: 0 or -EBADMSG naming what is wrong.
 */
int berth_enrolment_verify(const json_t *details, uint8_t ret_public_key[BERTH_ED25519_PUBLIC_LEN],
                           struct berth_error *reterr);

/**
 * berth_claim_verify() - check {"claim", "signature"} details against the
 * enrolled @public_key (the caller looks it up by the claim's pool_hash and
 * keyid).  Return: 0 or -EBADMSG.
 */
int berth_claim_verify(const json_t *details, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                       struct berth_error *reterr);

#endif /* BERTH_ENROL_H */
