/* SPDX-License-Identifier: MIT */
/*
 * registry.h -- pool operations on a journal: register, retire, place,
 * enrol, claim, quarantine, verify.
 *
 * The registry is not a table: it is the projection of the audit chain
 * (poolchain.h).  berth_registry_open() rebuilds it by replaying the
 * journal's events once, with every pool rule; each operation then commits
 * its event and applies that one event to the projection, so an operation
 * costs the same however long the chain is.  The journal is exclusively
 * locked by this process, so nothing else can append behind the projection's
 * back.  Manifest bodies are also kept in a content-addressed table keyed by
 * pool_hash and re-hashed whenever they are loaded.  Every write happens in
 * one journal transaction together with the audit event that records it, so
 * a crash leaves either both or neither.
 *
 * @actor arguments name who acted (a principal, or "local:<user>" for
 * offline berthctl) and @now_ns is the event time in nanoseconds.  None of
 * these functions is thread-safe (a journal is used by one thread).
 */
#ifndef BERTH_REGISTRY_H
#define BERTH_REGISTRY_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "audit.h"
#include "journal.h"
#include "override.h"
#include "placement.h"
#include "pool.h"
#include "poolchain.h"
#include "sign.h"

/** What berth_registry_register() did. */
enum berth_register_outcome {
    BERTH_REGISTER_UNCHANGED, /**< same name and hash: nothing recorded */
    BERTH_REGISTER_NEW,       /**< pool.registered */
    BERTH_REGISTER_UPDATED,   /**< pool.updated, with prev_pool_hash */
};

/** A journal and the pool projection of its chain. */
struct berth_registry;

/**
 * berth_registry_open() - replay the journal's events into a new projection
 * (every pool rule is checked; MACs are not: berth_registry_verify() proves
 * the chain).  @j is borrowed and must outlive the registry.
 * Return: 0, -EBADMSG (a stored event breaks the pool rules), -ENOMEM,
 * journal errors.
 */
int berth_registry_open(struct berth_journal *j, struct berth_registry **ret, struct berth_error *reterr);

/*
 * Transactions.  Every recording operation below normally runs in its own
 * write transaction and applies its event to the projection once that has
 * committed.  When the caller already holds a transaction open on the
 * journal (berth_journal_begin()), the operation joins it instead: it never
 * commits or rolls back, and its event waits in a pending list.  After the
 * caller commits it calls berth_registry_apply_pending(); after a rollback,
 * berth_registry_pending_truncate(reg, 0) (or to a mark taken before a
 * savepoint that was rolled back).  Until then the projection does not show
 * the pending events.
 */

/** berth_registry_pending_mark() - how many events are pending (a mark for truncate). */
size_t berth_registry_pending_mark(const struct berth_registry *reg);

/** berth_registry_pending_truncate() - forget pending events after @mark (rolled back). */
void berth_registry_pending_truncate(struct berth_registry *reg, size_t mark);

/**
 * berth_registry_apply_pending() - apply the pending events, in order, after
 * the caller's transaction committed; the list is emptied either way.
 * Return: 0; -EIO when an event cannot be applied (the registry is then
 * marked out of date and refuses further writes: reopen it).
 */
int berth_registry_apply_pending(struct berth_registry *reg, struct berth_error *reterr);

/** berth_registry_free() - release the projection (not the journal); accepts NULL. */
void berth_registry_free(struct berth_registry *reg);

/** berth_registry_chain() - the current projection (borrowed). */
const struct berth_pool_chain *berth_registry_chain(const struct berth_registry *reg);

/**
 * berth_registry_register() - register @pool under its name, or update the
 * pool of that name, or do nothing when it is already active unchanged.
 * Return: 0; journal and audit errors; -EIO when the committed event could
 * not be applied to the projection (reopen the registry).
 */
int berth_registry_register(struct berth_registry *reg, const struct berth_audit_key *key,
                            const struct berth_pool *pool, const char *actor, int64_t now_ns,
                            enum berth_register_outcome *ret_outcome, struct berth_error *reterr);

/**
 * berth_registry_retire() - record pool.retired for the active pool @name.
 * Return: 0; -ENOENT when no pool of that name is active.
 */
int berth_registry_retire(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                          const char *actor, int64_t now_ns, struct berth_error *reterr);

/**
 * berth_registry_get() - the active pool @name with its manifest loaded from
 * the content-addressed table and re-hashed.
 * @ret: receives a new struct berth_pool (berth_pool_free() it).
 * Return: 0; -ENOENT (no such pool); -EBADMSG (the stored body is missing or
 * does not hash to its key).
 */
int berth_registry_get(struct berth_registry *reg, const char *name, struct berth_pool **ret,
                       struct berth_error *reterr);

/**
 * struct berth_placement_result - what berth_registry_place() decided.
 * @receipt, @placement_hash: set when placed.
 * @effective: the effective manifest (override.h), set when placed.
 * @refusal:  set when refused (override refusal or no_backend).
 * @selector_inputs: the candidates, when refused with no_backend.
 * @overrides_hash: always set once the overrides were read.
 */
struct berth_placement_result {
    json_t *receipt;
    json_t *effective;
    char placement_hash[BERTH_HASH_HEX_LEN + 1];
    bool refused;
    struct berth_refusal refusal;
    json_t *selector_inputs;
    char overrides_hash[BERTH_HASH_HEX_LEN + 1];
    uint64_t seq;
};

/** berth_placement_result_clear() - release what a result holds. */
void berth_placement_result_clear(struct berth_placement_result *res);

/**
 * berth_registry_place() - merge @overrides (NULL for none) into the active
 * pool @name, place it on @backends, and record the outcome in the chain:
 * pool.placed, pool.override_refused or pool.placement_refused.  No
 * sandbox is created here.
 * Return: 0 placed; -EPERM refused (recorded; @res->refusal says why);
 * -ENOENT no such pool (nothing recorded); journal and audit errors.
 */
int berth_registry_place(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const json_t *overrides, const struct berth_backend_set *backends, const char *actor,
                         int64_t now_ns, struct berth_placement_result *res, struct berth_error *reterr);

/**
 * berth_registry_place_job() - berth_registry_place() for a job that
 * @needs (bits of enum berth_job_need, placement.h) more of its backend:
 * only a backend reporting every need is chosen, and the needs are recorded
 * in the event ("job_needs") and the placement receipt.  @needs 0 is
 * exactly berth_registry_place().
 */
int berth_registry_place_job(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                             const json_t *overrides, unsigned needs, const struct berth_backend_set *backends,
                             const char *actor, int64_t now_ns, struct berth_placement_result *res,
                             struct berth_error *reterr);

/**
 * berth_registry_enrol() - sign with @worker and record the enrolment of
 * @worker_name into the active pool @name (pool.worker_enrolled).
 * @ret_details: optional; receives the recorded details.
 * Return: 0; -ENOENT; -EINVAL (bad worker name); journal and audit errors.
 */
int berth_registry_enrol(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const struct berth_signing_key *worker, const char *worker_name, const char *actor,
                         int64_t now_ns, json_t **ret_details, struct berth_error *reterr);

/**
 * berth_registry_record_enrolment() - record a worker's own signed
 * enrolment @details ({"enrolment", "signature"}, enrol.h) as
 * pool.worker_enrolled, when it verifies and names the current manifest
 * (pool_hash) of an active pool.  The enrolment holds while that manifest
 * is the pool's: an update of the pool needs a new one.
 * @ret_pool: optional; the pool's name (borrowed from the registry, valid
 * until its next change).
 * Return: 0; -EBADMSG (the enrolment does not verify); -ESTALE (its
 * pool_hash is no active pool's current manifest); -EINVAL; journal and
 * audit errors.  Not thread-safe (the caller serializes the registry).
 */
int berth_registry_record_enrolment(struct berth_registry *reg, const struct berth_audit_key *key,
                                    const json_t *details, const char *actor, int64_t now_ns, const char **ret_pool,
                                    struct berth_error *reterr);

/**
 * berth_registry_claim() - sign with @worker and record its claim of @job_id
 * placed by @placement_hash in the active pool @name (pool.claim_receipt).
 * The worker must be enrolled in that pool and the placement recorded there.
 * Return: 0; -ENOENT (pool); -EPERM (worker not enrolled, or placement not
 * recorded for this pool); -EEXIST (the job id was already claimed in this
 * pool: a job runs once); -EINVAL; journal and audit errors.
 */
int berth_registry_claim(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const struct berth_signing_key *worker, const char *worker_name, const char *job_id,
                         const char *placement_hash, const char *actor, int64_t now_ns, json_t **ret_details,
                         struct berth_error *reterr);

/**
 * berth_registry_warm_attach() - the warm-slot predicate (docs/warm-slots.md):
 * a slot of pool @pool provisioned for @slot_hash (an
 * effective_manifest_hash, 64 hex digits) attaches to the dispatch of run
 * @run_id only when @dispatch_hash is equal.  Either way the decision is
 * recorded in the chain before the slot is used or destroyed:
 * pool.warm_attached {pool, slot_id, slot_hash, dispatch_hash, run_id}, or
 * pool.warm_quarantine {pool, slot_id, slot_hash, dispatch_hash, reason:
 * "manifest"}; after a quarantine the slot must be destroyed unused and
 * the dispatch go cold.
 * Return: 1 attach; 0 quarantined (recorded); -EINVAL (a malformed id or
 * hash); journal errors.
 */
int berth_registry_warm_attach(struct berth_registry *reg, const struct berth_audit_key *key, const char *pool,
                               const char *slot_id, const char *slot_hash, const char *dispatch_hash,
                               const char *run_id, const char *actor, int64_t now_ns, struct berth_error *reterr);

/**
 * berth_registry_warm_quarantine() - record pool.warm_quarantine {pool,
 * slot_id, slot_hash, dispatch_hash, reason} for a slot that may not take
 * a dispatch: "qualification" (the job's receipt names another
 * qualification than the slot was provisioned under), "runtime" (the
 * runtime refused the claim: its pin or the slot's binding changed), or
 * "manifest" with two different hashes (berthd retires a slot of an older
 * manifest; @dispatch_hash is then the hash a job of its target has now).
 * The slot must be destroyed unused.  Return: 0; -EINVAL; journal errors.
 */
int berth_registry_warm_quarantine(struct berth_registry *reg, const struct berth_audit_key *key, const char *pool,
                                   const char *slot_id, const char *slot_hash, const char *dispatch_hash,
                                   const char *reason, const char *actor, int64_t now_ns, struct berth_error *reterr);

/** What berth_registry_verify() checked. */
struct berth_verify_report {
    uint64_t events;
    size_t pools, bodies, placements, enrolments, claims;
    size_t broker_claims, broker_unchecked; /**< claims of the broker's own; of those, signatures not checked */
    uint64_t bad_seq;  /**< first bad event, 0 when the chain verified */
    char head_mac[BERTH_AUDIT_MAC_HEX_LEN + 1]; /**< the last event's mac: with @events, an anchor for next time */
};

/**
 * berth_registry_verify() - prove the journal: check every stored row's
 * index columns against its event, re-check the whole MAC chain
 * (berth_audit_verify()) including the optional @anchor, replay the pool
 * projection with every rule of poolchain.h, re-hash every stored manifest
 * body and require its bytes to be the canonical normalised manifest, and
 * check that every active pool's body is stored.
 * Return: 0; -EBADMSG with reterr naming the first failure (and
 * @report->bad_seq when it is an event); journal errors.
 */
int berth_registry_verify(struct berth_journal *j, const struct berth_audit_key *key,
                          const struct berth_audit_anchor *anchor, struct berth_verify_report *report,
                          struct berth_error *reterr);

/**
 * berth_registry_verify_keyed() - berth_registry_verify() that also checks
 * the signature of every claim of the broker's own (enrol.h) with
 * @broker_key, the broker's receipt public key (NULL: their form only, and
 * they are counted in @report's broker_unchecked).
 */
int berth_registry_verify_keyed(struct berth_journal *j, const struct berth_audit_key *key,
                                const struct berth_audit_anchor *anchor, const uint8_t *broker_key,
                                struct berth_verify_report *report, struct berth_error *reterr);

#endif /* BERTH_REGISTRY_H */
