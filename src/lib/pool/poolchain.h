/* SPDX-License-Identifier: MIT */
/*
 * poolchain.h -- the pool registry as a projection of the audit chain.
 *
 * Replaying the pool events of an audit chain, in order, rebuilds which
 * pools are active (by name) and re-checks every record:
 *
 *   pool.registered        {name, pool_hash, manifest}: the manifest is
 *                          normalised and hashes to pool_hash; the name is
 *                          not active
 *   pool.updated           {name, pool_hash, prev_pool_hash, manifest}: the
 *                          name is active at prev_pool_hash; the hash changes
 *   pool.retired           {name, pool_hash}: the name is active at pool_hash
 *   pool.placed            {pool, pool_hash, overrides, backends, receipt,
 *                          placement_hash}: the pool is active at pool_hash,
 *                          and merging the overrides and placing on the
 *                          recorded backends at the event's time gives
 *                          exactly the recorded receipt and its hash
 *   pool.override_refused  {pool, pool_hash, overrides, overrides_hash,
 *                          reason, refused_field, actor}: the merge refuses
 *                          the overrides for exactly that reason and field
 *   pool.placement_refused {pool, pool_hash, overrides, backends, reason,
 *                          overrides_hash, effective_manifest_hash,
 *                          selector_inputs}: placement on the recorded
 *                          backends keeps no candidate, for exactly the
 *                          recorded reasons
 *   pool.worker_enrolled   a valid self-signed enrolment into a known pool
 *   pool.claim_receipt     a claim signed by a worker enrolled in that pool
 *                          (under the name it enrolled with),
 *                          for a placement recorded in that pool, of a job
 *                          id not claimed in that pool before (schema 1) or
 *                          of a run id never claimed before (schema 2,
 *                          enrol.h); a "broker" claim of schema 2 is
 *                          signed by the broker's receipt key, checked when
 *                          the projection has it
 *                          (berth_pool_chain_set_broker_key())
 *   pool.warm_attached     {pool, slot_id, slot_hash, dispatch_hash, run_id}:
 *                          two equal hashes
 *   pool.warm_quarantine   {pool, slot_id, slot_hash, dispatch_hash, reason}:
 *                          two different hashes when the reason is
 *                          "manifest" (or absent); "qualification" and
 *                          "runtime" quarantine a slot whose hash matched
 *
 * Events of other subsystems are skipped; an unknown pool.* type is an
 * error.  Not thread-safe; one chain per thread.
 */
#ifndef BERTH_POOLCHAIN_H
#define BERTH_POOLCHAIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "audit.h"
#include "pool.h"
#include "sign.h"

struct berth_pool_chain;

/** berth_pool_chain_new() - an empty projection.  Return: 0 or -ENOMEM. */
int berth_pool_chain_new(struct berth_pool_chain **ret);

/** berth_pool_chain_free() - release; accepts NULL. */
void berth_pool_chain_free(struct berth_pool_chain *c);

/**
 * berth_pool_chain_check() - apply one event (the callback shape of
 * berth_audit_verify() and berth_audit_replay(); @userdata is the chain).
 * Return: 0 or -EBADMSG with reterr saying which rule the event breaks.
 */
int berth_pool_chain_check(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr);

/** berth_pool_chain_count() - number of active pools. */
size_t berth_pool_chain_count(const struct berth_pool_chain *c);

/** berth_pool_chain_at() - the @i-th active pool, in name order, or NULL. */
const struct berth_pool *berth_pool_chain_at(const struct berth_pool_chain *c, size_t i);

/** berth_pool_chain_find() - the active pool called @name, or NULL. */
const struct berth_pool *berth_pool_chain_find(const struct berth_pool_chain *c, const char *name);

/** berth_pool_chain_known() - whether a pool with @pool_hash was ever registered. */
bool berth_pool_chain_known(const struct berth_pool_chain *c, const char *pool_hash);

/**
 * berth_pool_chain_credentials() - the names in any active pool's
 * credential_env_allowlist (a borrowed JSON array).
 */
const json_t *berth_pool_chain_credentials(const struct berth_pool_chain *c);

/**
 * berth_pool_chain_enrolled() - whether the worker key @keyid is enrolled
 * in the pool @pool_hash.
 */
bool berth_pool_chain_enrolled(const struct berth_pool_chain *c, const char *pool_hash, const char *keyid);

/**
 * berth_pool_chain_enrolled_key() - the public key of the worker key
 * @keyid enrolled in the pool @pool_hash into @ret_public_key, and the
 * worker name it enrolled under into *@ret_worker_name (borrowed from @c,
 * valid until its next change; may be NULL).
 * Return: 0; -ENOENT (not enrolled there).
 */
int berth_pool_chain_enrolled_key(const struct berth_pool_chain *c, const char *pool_hash, const char *keyid,
                                  uint8_t ret_public_key[BERTH_ED25519_PUBLIC_LEN], const char **ret_worker_name);

/**
 * berth_pool_chain_placement() - the pool_hash a placement was recorded in,
 * or NULL when @placement_hash was never recorded.
 */
const char *berth_pool_chain_placement(const struct berth_pool_chain *c, const char *placement_hash);

/** berth_pool_chain_claimed() - whether @job_id was claimed in the pool @pool_hash. */
bool berth_pool_chain_claimed(const struct berth_pool_chain *c, const char *pool_hash, const char *job_id);

/**
 * berth_pool_chain_set_broker_key() - check the signatures of the broker's
 * own claims with @public_key (the broker's receipt public key, from the
 * verifier's own configuration).  Without it their form is checked, and
 * they are counted as unchecked.
 */
void berth_pool_chain_set_broker_key(struct berth_pool_chain *c, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN]);

/**
 * berth_pool_chain_set_projection() - use @c as the running projection of a
 * broker, not as a verifier: the run ids of claims of schema 2 (one per
 * job) are not remembered, so that its memory does not grow with the jobs
 * ever run; every other rule is checked as before.  The journal's jobs
 * table keeps run ids unique; a verifier (berth_registry_verify(), berthctl
 * audit verify) remembers them and refuses a run claimed twice.
 */
void berth_pool_chain_set_projection(struct berth_pool_chain *c);

/**
 * berth_pool_chain_broker_claims() - how many claims of the broker's own
 * were applied, and how many of them without their signature checked.
 */
void berth_pool_chain_broker_claims(const struct berth_pool_chain *c, size_t *ret_claims, size_t *ret_unchecked);

/** berth_pool_chain_stats() - events applied, placements and enrolments seen. */
void berth_pool_chain_stats(const struct berth_pool_chain *c, size_t *ret_events, size_t *ret_placements,
                            size_t *ret_enrolments, size_t *ret_claims);

#endif /* BERTH_POOLCHAIN_H */
