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
 * or, since berthd records a claim for every run, one of schema version 2,
 * which binds the run and says who claimed it:
 *
 *   {"claimant": "broker" | "worker", "created_ns":"<ns>",
 *    "job_digest":"sha256:...", "job_id":..., "keyid":...,
 *    "kind":"pool.claim", "lease_revision": N (>= 1), "placement_hash":...,
 *    "pool_hash":..., "receipt_digest":"sha256:...", "run_id":...,
 *    "schema_version":2, "worker_name":...}
 *
 * A "broker" claim is signed with the broker's receipt key (keyid is its
 * key id, worker_name the broker's name): berthd ran the job on its own
 * host.  A "worker" claim is signed by a worker enrolled in the pool.
 * lease_revision is the job's revision in the broker's journal that the
 * claim takes over (jobstore.h): a claim of an older revision is refused.
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
 * struct berth_claim_params - what a claim of schema version 2 binds
 * (strings borrowed).  @worker_name: the worker's name, or the broker's for
 * a "broker" claim (berth_worker_name_valid() either way).
 */
struct berth_claim_params {
    bool by_broker;
    const char *pool_hash, *worker_name, *job_id, *job_digest, *receipt_digest, *run_id, *placement_hash;
    int64_t lease_revision;
    int64_t created_ns;
};

/**
 * berth_claim2_create() - sign with @key a claim of schema version 2.
 * @ret_details: receives {"claim": ..., "signature": ...}.
 * Return: 0; -EINVAL (a malformed member: hashes and digests, names, a run
 * id that is no job id, a revision below 1); -ENOMEM.
 */
int berth_claim2_create(const struct berth_signing_key *key, const struct berth_claim_params *p, json_t **ret_details,
                        struct berth_error *reterr);

/**
 * berth_claim_version() - the schema_version of the claim in @details (1 or
 * 2), or -EBADMSG when it has none of those.
 */
int berth_claim_version(const json_t *details);

/**
 * berth_enrolment_verify() - check {"enrolment", "signature"} details: exact
 * members and formats, keyid = thumbprint(public_key), a valid signature by
 * that key.  @ret_public_key receives the key.
 * Return: 0 or -EBADMSG naming what is wrong.
 */
int berth_enrolment_verify(const json_t *details, uint8_t ret_public_key[BERTH_ED25519_PUBLIC_LEN],
                           struct berth_error *reterr);

/**
 * berth_claim_verify() - check {"claim", "signature"} details of schema
 * version 1 or 2 (exact members and formats for its version) against
 * @public_key: the enrolled worker's (the caller looks it up by the claim's
 * pool_hash and keyid), or the broker's for a "broker" claim, whose keyid
 * must then be that key's id.  @public_key NULL checks the form of a
 * "broker" claim without its signature (a verifier without the broker's
 * key); any other claim needs its key.  Return: 0 or -EBADMSG.
 */
int berth_claim_verify(const json_t *details, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                       struct berth_error *reterr);

#endif /* BERTH_ENROL_H */
