/* SPDX-License-Identifier: MIT */
/*
 * broker-remote.c -- remote workers (docs/workers.md): the subjects of the
 * host policy that "serve" pools enrol into them with their own Ed25519
 * identity; see broker.h, "Remote workers".
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "digest.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "poolchain.h"
#include "qualification.h"
#include "reserve.h"

#define ENROLMENT_MAX (16 * 1024) /* a request body, bytes */

/* The active pool whose current manifest is @pool_hash, or NULL (lock held). */
static const struct berth_pool *pool_by_hash(struct berth_broker *b, const char *pool_hash)
{
    const struct berth_pool_chain *chain = berth_registry_chain(b->reg);
    size_t i;

    for (i = 0; pool_hash && i < berth_pool_chain_count(chain); i++)
        if (streq(berth_pool_chain_at(chain, i)->pool_hash, pool_hash))
            return berth_pool_chain_at(chain, i);
    return NULL;
}

int broker_authenticate_worker(struct berth_broker *b, const char *fingerprint, struct broker_caller *caller,
                               struct berth_reply *reply)
{
    if (broker_authenticate(b, fingerprint, caller, reply) < 0)
        return -EACCES;
    if (!caller->subject->serves || json_array_size(caller->subject->serves) == 0) {
        broker_fail(reply, 403, "not_a_worker", "%s serves no pool: the host policy names none in its \"serves\"",
                    caller->subject->principal);
        return -EACCES;
    }
    return 0;
}

int broker_worker_request(struct berth_broker *b, const char *fingerprint, const char *body, size_t len, size_t max,
                          const char *what, struct broker_caller *caller, json_t **ret_doc, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;

    *ret_doc = NULL;
    if (broker_authenticate_worker(b, fingerprint, caller, reply) < 0)
        return -EACCES;
    if (len > max) {
        broker_fail(reply, 413, "too_large", "%s is at most %zu bytes", what, max);
        return -EFBIG;
    }
    if (berth_json_parse(body, len, max, ret_doc, &err) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        return -EBADMSG;
    }
    return 0;
}

void berth_broker_worker_enrol(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL;
    struct broker_caller caller;
    const struct berth_pool *pool;
    const json_t *e;
    const char *name = NULL;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    int64_t now;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_worker_request(b, fingerprint, body, len, ENROLMENT_MAX, "an enrolment", &caller, &doc, reply) < 0)
        goto out;
    if (berth_enrolment_verify(doc, pub, &err) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        goto out;
    }
    e = json_object_get(doc, "enrolment");
    /* The certificate says who the worker is: it enrols under that name only. */
    if (!streq(json_string_value(json_object_get(e, "worker_name")), caller.subject->principal)) {
        broker_fail(reply, 403, "denied", "an enrolment's worker_name must be the caller's principal, %s",
                    caller.subject->principal);
        goto out;
    }
    pool = pool_by_hash(b, json_string_value(json_object_get(e, "pool_hash")));
    if (!pool) {
        broker_fail(reply, 409, "stale_pool",
                    "the enrolment's pool_hash is the manifest of no active pool now: read the pool again and "
                    "enrol into its current manifest");
        goto out;
    }
    if (!berth_subject_serves_pool(caller.subject, pool->name)) {
        broker_fail(reply, 403, "denied", "%s may not serve pool %s (the host policy's \"serves\")",
                    caller.subject->principal, pool->name);
        goto out;
    }
    if (broker_storage_degraded(b)) {
        broker_storage_refuse(b, reply);
        goto out;
    }
    r = berth_now_ns(CLOCK_REALTIME, &now, &err);
    if (r == 0)
        r = berth_registry_record_enrolment(b->reg, b->p.audit_key, doc, caller.subject->principal, now, &name, &err);
    if (r < 0) {
        if (!berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "recording the enrolment of %s failed: %s",
                       caller.subject->principal, err.message);
        broker_journal_failed(b, r, &err, reply, "the enrolment could not be recorded");
        goto out;
    }
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "worker %s (key %s) enrolled into pool %s at %s",
               caller.subject->principal, json_string_value(json_object_get(e, "keyid")), name, pool->pool_hash);
    broker_succeed(reply, 201,
                   json_pack("{s:s, s:s, s:s, s:s}", "worker", caller.subject->principal, "pool", name, "pool_hash",
                             json_string_value(json_object_get(e, "pool_hash")), "keyid",
                             json_string_value(json_object_get(e, "keyid"))));
out:
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
}

/* ------------------------------------------------------------------------ */
/* Polls                                                                     */

#define WORKER_BODY_MAX (64 * 1024)  /* a poll, claim or heartbeat body, bytes */
#define WORKER_SLOTS_MAX 1024
#define WORKER_NAMES_MAX 32          /* capabilities and egress classes a poll lists, each */

static const char *const poll_members[] = {"busy",  "capabilities", "egress_classes", "keyid", "qualification",
                                           "slots", NULL};

/* An array of at most WORKER_NAMES_MAX strings of at most 64 bytes. */
static bool name_list(const json_t *v)
{
    const json_t *e;
    size_t i;

    if (!json_is_array(v) || json_array_size(v) > WORKER_NAMES_MAX)
        return false;
    json_array_foreach(v, i, e) if (!json_is_string(e) || json_string_length(e) == 0 || json_string_length(e) > 64)
        return false;
    return true;
}

/* The names of @v (a name_list()) that @names (@n of them, or a second
 * table @more of @n_more) knows, as a new array: a name berthd does not
 * know (a newer runtime's) is of no use to placement, and would make the
 * whole offer unreadable to it. */
static json_t *known_names(const json_t *v, const char *const *names, size_t n, const char *const *more,
                           size_t n_more)
{
    json_t *out = json_array(), *e;
    size_t i;

    json_array_foreach(v, i, e)
    {
        const char *name = json_string_value(e);
        if (!out)
            return NULL;
        if ((berth_name_index(names, n, name) >= 0 || (more && berth_name_index(more, n_more, name) >= 0)) &&
            json_array_append(out, e) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

/* Lock held: the active pools that place on workers, that @caller serves
 * and whose current manifest the key @keyid enrolled into under the
 * caller's name: their hashes into @hashes and names into @names; the
 * key into @pub (*@ret_has_key false when it is enrolled nowhere now). */
static int worker_pools(struct berth_broker *b, const struct broker_caller *caller, const char *keyid, json_t *hashes,
                        json_t *names, uint8_t pub[BERTH_ED25519_PUBLIC_LEN], bool *ret_has_key)
{
    const struct berth_pool_chain *chain = berth_registry_chain(b->reg);
    size_t i;

    *ret_has_key = false;
    for (i = 0; i < berth_pool_chain_count(chain); i++) {
        const struct berth_pool *pool = berth_pool_chain_at(chain, i);
        const char *enrolled_as = NULL;
        uint8_t k[BERTH_ED25519_PUBLIC_LEN];

        if (!broker_pool_lists_workers(pool) || !berth_subject_serves_pool(caller->subject, pool->name) ||
            berth_pool_chain_enrolled_key(chain, pool->pool_hash, keyid, k, &enrolled_as) < 0 ||
            !streq_ptr(enrolled_as, caller->subject->principal))
            continue;
        if (json_array_append_new(hashes, json_string(pool->pool_hash)) < 0 ||
            json_array_append_new(names, json_string(pool->name)) < 0)
            return -ENOMEM;
        memcpy(pub, k, sizeof(k));
        *ret_has_key = true;
    }
    return 0;
}

/* Lock held: whether the key @keyid of @caller may take a run of @pool
 * placed under its manifest @pool_hash: the pool is active and places on
 * workers, the caller serves it, and the key enrolled into that manifest
 * (the pool's current one, or the one the run was placed under before an
 * update) under the caller's name; the key then into @pub. */
static bool may_take(struct berth_broker *b, const struct broker_caller *caller, const char *keyid, const char *pool,
                     const char *pool_hash, uint8_t pub[BERTH_ED25519_PUBLIC_LEN])
{
    const struct berth_pool_chain *chain = berth_registry_chain(b->reg);
    const struct berth_pool *p = berth_pool_chain_find(chain, pool);
    const char *enrolled_as = NULL;

    return p && broker_pool_lists_workers(p) && berth_subject_serves_pool(caller->subject, pool) &&
           berth_pool_chain_enrolled_key(chain, pool_hash, keyid, pub, &enrolled_as) == 0 &&
           streq_ptr(enrolled_as, caller->subject->principal);
}

struct offerable {
    struct berth_broker *b;
    const struct broker_caller *caller;
    const char *keyid;
};

static bool offerable(void *userdata, const char *pool, const char *pool_hash)
{
    struct offerable *o = userdata;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];

    return may_take(o->b, o->caller, o->keyid, pool, pool_hash, pub);
}

/* Whether @q (a poll's "qualification") is a passed, current qualification
 * signed by @pub; *@ret_expires when it is. */
static bool qualification_holds(const json_t *q, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], int64_t now,
                                int64_t *ret_expires)
{
    const json_t *body = NULL;
    int64_t expires = 0;

    if (!q || json_is_null(q) || berth_qualification_verify(q, pub, &body, NULL) < 0)
        return false;
    if (!json_is_true(json_object_get(body, "passed")) ||
        berth_json_ns_value(json_object_get(body, "expires_at"), &expires) < 0 || expires <= now)
        return false;
    *ret_expires = expires;
    return true;
}

/* The offer of run @run_id (lock held): a new object, or NULL when the run
 * is not a queued worker's run any more (then it leaves the queue). */
static json_t *offer_of(struct berth_broker *b, const char *run_id)
{
    struct berth_job_record rec = {0};
    _cleanup_json_ json_t *job = NULL, *receipt = NULL, *effective = NULL;
    char receipt_digest[BERTH_DIGEST_BUFSZ];
    json_t *o = NULL;

    if (berth_jobstore_find_run(b->p.journal, run_id, &rec, NULL) < 0)
        goto gone;
    if (rec.state != BERTH_JOB_ACCEPTED || !broker_is_remote(&rec) || rec.cancel_requested)
        goto gone;
    job = json_loads(rec.job, JSON_REJECT_DUPLICATES, NULL);
    receipt = json_loads(rec.receipt, JSON_REJECT_DUPLICATES, NULL);
    effective = json_loads(rec.effective, JSON_REJECT_DUPLICATES, NULL);
    if (!job || !receipt || !effective ||
        berth_digest_bytes(rec.receipt, strlen(rec.receipt), receipt_digest) < 0)
        goto gone;
    o = json_pack("{s:s, s:s, s:I, s:O, s:O, s:O, s:s, s:s, s:O*, s:O*, s:o}", "job_id", rec.job_id, "run_id",
                  rec.run_id, "revision", (json_int_t)rec.revision, "job", job, "receipt", receipt, "effective",
                  effective, "job_digest", rec.job_digest, "receipt_digest", receipt_digest, "placement_hash",
                  json_object_get(json_object_get(receipt, "receipt"), "placement_hash"), "pool_hash",
                  json_object_get(effective, "pool_hash"), "deadline", berth_json_ns(rec.deadline));
    berth_job_record_clear(&rec);
    return o;
gone:
    berth_job_record_clear(&rec);
    broker_fleet_dequeue(b, run_id);
    return NULL;
}

void berth_broker_worker_poll(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                              bool again, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL, *hashes = json_array(), *names = json_array(), *offers = json_array();
    _cleanup_json_ json_t *caps = NULL, *egress = NULL;
    struct broker_fleet_worker seen = {0};
    struct broker_caller caller;
    char runs[BERTH_WORKER_OFFERS_MAX][BERTH_RUN_ID_LEN + 1];
    const char *keyid = NULL;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    int64_t slots = 0, busy = 0, now = 0;
    bool has_key = false;
    size_t i, n;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_worker_request(b, fingerprint, body, len, WORKER_BODY_MAX, "a poll", &caller, &doc, reply) < 0)
        goto out;
    if (!hashes || !names || !offers) {
        broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    if ((r = berth_json_only_members(doc, "poll", poll_members, &err)) < 0 ||
        (r = berth_json_string_member(doc, "poll", "keyid", true, &keyid, &err)) < 0 ||
        (r = berth_json_int_member(doc, "poll", "slots", true, 1, WORKER_SLOTS_MAX, &slots, &err)) < 0 ||
        (r = berth_json_int_member(doc, "poll", "busy", true, 0, WORKER_SLOTS_MAX, &busy, &err)) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        goto out;
    }
    if (strlen(keyid) != BERTH_KEY_ID_LEN || busy > slots || !name_list(json_object_get(doc, "capabilities")) ||
        !name_list(json_object_get(doc, "egress_classes")) || !json_object_get(doc, "qualification")) {
        broker_fail(reply, 400, "malformed",
                    "a poll needs a key id, busy <= slots, capabilities and egress_classes (at most %d names of "
                    "at most 64 bytes each) and a qualification (or null)",
                    WORKER_NAMES_MAX);
        goto out;
    }
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0 ||
        worker_pools(b, &caller, keyid, hashes, names, pub, &has_key) < 0) {
        broker_fail(reply, 500, "internal", "out of memory, or the clock cannot be read");
        goto out;
    }
    snprintf(seen.name, sizeof(seen.name), "%s", caller.subject->principal);
    snprintf(seen.keyid, sizeof(seen.keyid), "%s", keyid);
    seen.slots = (unsigned)slots;
    seen.busy = (unsigned)busy;
    caps = known_names(json_object_get(doc, "capabilities"), berth_capability_names, BERTH_CAP_COUNT,
                       berth_job_need_names, BERTH_NEED_COUNT);
    egress = known_names(json_object_get(doc, "egress_classes"), berth_egress_names, BERTH_EGRESS_COUNT, NULL, 0);
    if (!caps || !egress) {
        broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    seen.capabilities = caps;
    seen.egress_classes = egress;
    seen.pools = hashes;
    seen.qualified = has_key && qualification_holds(json_object_get(doc, "qualification"), pub, now,
                                                     &seen.qualification_expires_ns);
    if (broker_fleet_seen(b, &seen, again) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    /* No work for a worker that may not take it now. */
    n = 0;
    if (broker_fleet_qualified(b, seen.name, now)) {
        struct offerable o = {.b = b, .caller = &caller, .keyid = keyid};
        size_t room = (size_t)(slots - busy);
        n = broker_fleet_take(b, seen.name, offerable, &o, room < BERTH_WORKER_OFFERS_MAX ? room : BERTH_WORKER_OFFERS_MAX,
                              runs);
    }
    for (i = 0; i < n; i++) {
        json_t *o = offer_of(b, runs[i]);
        if (o && json_array_append_new(offers, o) < 0) {
            broker_fail(reply, 500, "internal", "out of memory");
            goto out;
        }
    }
    broker_succeed(reply, 200,
                   json_pack("{s:o, s:O, s:O}", "lease_ns", berth_json_ns(b->p.worker_lease_ns), "pools", names,
                             "offers", offers));
out:
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
}

/* ------------------------------------------------------------------------ */
/* Claims                                                                    */

struct claim_write {
    struct berth_broker *b;
    const struct berth_job_record *rec;
    const json_t *claim;
    const char *lease;
    const char *actor;
    int64_t now;
};

static int claim_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct claim_write *w = userdata;
    int r = berth_jobstore_transition(j, w->rec->run_id, w->rec->revision, BERTH_JOB_CLAIMED, NULL, w->now, reterr);

    if (r == 0)
        r = berth_jobstore_set_lease(j, w->rec->run_id, w->rec->revision + 1, w->lease, reterr);
    if (r == 0)
        r = berth_audit_append(j, w->b->p.audit_key, w->now, "pool.claim_receipt", w->actor, w->claim, NULL, reterr);
    return r;
}

/* The member @key of the claim body @c equals the string @want. */
static bool claim_says(const json_t *c, const char *key, const char *want)
{
    return want && streq_ptr(json_string_value(json_object_get(c, key)), want);
}

/* Lock held: whether @rec is held by this very claim @doc of @caller (a
 * claim sent again after its answer was lost): then @reply gets the same
 * answer as the first time, with the lease as it stands. */
static bool claimed_before(struct berth_broker *b, const struct broker_caller *caller, const json_t *doc,
                           const struct berth_job_record *rec, int64_t now, struct berth_reply *reply)
{
    _cleanup_json_ json_t *lease = NULL;
    char digest[BERTH_DIGEST_BUFSZ];
    int64_t expires = 0;

    if (!broker_is_remote(rec) || berth_job_state_terminal(rec->state) ||
        broker_lease_parse(b, rec, &lease, &expires) < 0 || now > expires || berth_digest_json(doc, digest, NULL) < 0 ||
        !streq_ptr(json_string_value(json_object_get(lease, "claim_digest")), digest) ||
        !streq_ptr(json_string_value(json_object_get(lease, "worker")), caller->subject->principal))
        return false;
    broker_succeed(reply, 201,
                   json_pack("{s:s, s:I, s:s, s:o, s:o}", "run_id", rec->run_id, "revision",
                             (json_int_t)rec->revision, "claim_digest", digest, "expires_ns", berth_json_ns(expires),
                             "lease_ns", berth_json_ns(b->p.worker_lease_ns)));
    return true;
}

/* Lock held: check worker @caller's claim @doc of @rec (the record it names).
 * 0 with the lease to record in *@ret_lease and the claim's digest in
 * @claim_digest; 1 when this claim holds the run already (@reply has the
 * answer); else @reply says why. */
static int check_claim(struct berth_broker *b, const struct broker_caller *caller, const json_t *doc,
                       const struct berth_job_record *rec, int64_t now, char **ret_lease,
                       char claim_digest[BERTH_DIGEST_BUFSZ], struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const json_t *c = json_object_get(doc, "claim");
    _cleanup_json_ json_t *receipt = NULL, *effective = NULL, *lease = NULL;
    const struct berth_pool *pool;
    const char *pool_hash = json_string_value(json_object_get(c, "pool_hash"));
    char receipt_digest[BERTH_DIGEST_BUFSZ];
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];

    if (!broker_is_remote(rec) || rec->state != BERTH_JOB_ACCEPTED) {
        if (claimed_before(b, caller, doc, rec, now, reply))
            return 1;
        broker_fail(reply, 409, "taken", "run %s is %s%s", rec->run_id, berth_job_state_names[rec->state],
                    broker_is_remote(rec) ? "" : ", and not a run of the workers");
        return -EBUSY;
    }
    receipt = json_loads(rec->receipt, JSON_REJECT_DUPLICATES, NULL);
    effective = json_loads(rec->effective, JSON_REJECT_DUPLICATES, NULL);
    if (!receipt || !effective || berth_digest_bytes(rec->receipt, strlen(rec->receipt), receipt_digest) < 0) {
        broker_fail(reply, 500, "internal", "the stored receipt of run %s is damaged", rec->run_id);
        return -EBADMSG;
    }
    if (!claim_says(c, "claimant", "worker") || !claim_says(c, "job_id", rec->job_id) ||
        !claim_says(c, "job_digest", rec->job_digest) || !claim_says(c, "receipt_digest", receipt_digest) ||
        !claim_says(c, "placement_hash",
                    json_string_value(json_object_get(json_object_get(receipt, "receipt"), "placement_hash"))) ||
        !claim_says(c, "pool_hash", json_string_value(json_object_get(effective, "pool_hash")))) {
        broker_fail(reply, 400, "malformed",
                    "the claim is not a worker's claim of run %s as offered (job, digests, placement or pool_hash "
                    "differ)",
                    rec->run_id);
        return -EBADMSG;
    }
    if (json_integer_value(json_object_get(c, "lease_revision")) != rec->revision + 1) {
        broker_fail(reply, 409, "taken", "the claim takes over revision %lld; run %s is at revision %lld",
                    (long long)json_integer_value(json_object_get(c, "lease_revision")) - 1, rec->run_id,
                    (long long)rec->revision);
        return -EBUSY;
    }
    pool = berth_pool_chain_find(berth_registry_chain(b->reg), rec->pool);
    if (!pool || !broker_pool_lists_workers(pool)) {
        broker_fail(reply, 409, "stale_pool", "pool %s is retired, or no longer places on workers", rec->pool);
        return -ESTALE;
    }
    if (!berth_subject_serves_pool(caller->subject, pool->name)) {
        broker_fail(reply, 403, "denied", "%s may not serve pool %s (the host policy's \"serves\")",
                    caller->subject->principal, pool->name);
        return -EACCES;
    }
    /* The manifest the run was placed under: the pool's current one, or an
     * earlier one the key enrolled into before an update. */
    if (!may_take(b, caller, json_string_value(json_object_get(c, "keyid")), rec->pool, pool_hash, pub)) {
        broker_fail(reply, 409, "stale_pool", "%s has not enrolled key %s into the manifest run %s was placed under",
                    caller->subject->principal, json_string_value(json_object_get(c, "keyid")), rec->run_id);
        return -ESTALE;
    }
    if (berth_claim_verify(doc, pub, &err) < 0) {
        broker_fail(reply, 400, "malformed", "the claim does not verify: %s", err.message);
        return -EBADMSG;
    }
    if (now > rec->deadline) {
        broker_fail(reply, 409, "deadline", "run %s is past its deadline", rec->run_id);
        return -ETIME;
    }
    if (!broker_fleet_qualified(b, caller->subject->principal, now)) {
        broker_fail(reply, 409, "unqualified",
                    "%s has no current qualification of its runtime (its last poll carried none)",
                    caller->subject->principal);
        return -EPERM;
    }
    if (berth_digest_json(doc, claim_digest, &err) < 0 ||
        !(lease = json_pack("{s:O, s:s, s:o, s:s, s:s}", "claim", doc, "claim_digest", claim_digest, "expires_ns",
                            berth_json_ns(now + b->p.worker_lease_ns), "keyid",
                            json_string_value(json_object_get(c, "keyid")), "worker", caller->subject->principal)) ||
        berth_json_serialize(lease, 0, ret_lease, NULL, &err) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    return 0;
}

void berth_broker_worker_claim(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *lease = NULL;
    struct broker_caller caller;
    struct berth_job_record rec = {0};
    char claim_digest[BERTH_DIGEST_BUFSZ], name[BERTH_PRINCIPAL_MAX + 1];
    const char *run_id;
    struct claim_write w = {.b = b};
    int64_t now = 0;
    int r;

    pthread_mutex_lock(&b->lock);
    if (broker_worker_request(b, fingerprint, body, len, WORKER_BODY_MAX, "a claim", &caller, &doc, reply) < 0)
        goto out;
    snprintf(name, sizeof(name), "%s", caller.subject->principal);
    if (berth_claim_version(doc) != 2) {
        broker_fail(reply, 400, "malformed", "a claim is a signed claim of schema version 2 (enrol.h)");
        goto out;
    }
    if (!claim_says(json_object_get(doc, "claim"), "worker_name", caller.subject->principal)) {
        broker_fail(reply, 403, "denied", "a claim's worker_name must be the caller's principal, %s",
                    caller.subject->principal);
        goto out;
    }
    run_id = json_string_value(json_object_get(json_object_get(doc, "claim"), "run_id"));
    r = run_id && berth_job_id_valid(run_id) ? berth_jobstore_find_run(b->p.journal, run_id, &rec, &err) : -ENOENT;
    if (r == -ENOENT) {
        broker_fail(reply, 404, "not_found", "no run %s", run_id ? run_id : "(none)");
        goto out;
    }
    if (r < 0) {
        broker_fail(reply, 503, "journal", "the journal cannot be read");
        goto out;
    }
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    if ((r = check_claim(b, &caller, doc, &rec, now, &lease, claim_digest, reply)) != 0) {
        if (r > 0)
            broker_fleet_touch(b, name, 0);
        goto out;
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);

    /* The submitter's grant is rechecked (the lock is not held there):
     * a run it no longer may run is cancelled, and not claimed. */
    r = broker_sweep_job(b, &rec, now, NULL, &err);
    if (r == 0 && rec.cancel_requested) {
        broker_fail(reply, 409, "refused", "run %s no longer qualifies (%s): berthd cancels it", rec.run_id,
                    rec.cancel_reason ? rec.cancel_reason : "cancelled");
        broker_fleet_dequeue(b, rec.run_id);
        berth_job_record_clear(&rec);
        return;
    }
    if (r != 0) {
        broker_fail(reply, 503, "busy", "the grant of run %s cannot be judged now; retry", rec.run_id);
        broker_fleet_release(b, rec.run_id);
        berth_job_record_clear(&rec);
        return;
    }
    pthread_mutex_lock(&b->lock);
    /* The policy, the pool and the worker's qualification may have changed
     * while the lock was free: all of it is checked again. */
    free(lease);
    lease = NULL;
    if (broker_authenticate_worker(b, fingerprint, &caller, reply) < 0 ||
        check_claim(b, &caller, doc, &rec, now, &lease, claim_digest, reply) != 0)
        goto out;
    w.rec = &rec;
    w.claim = doc;
    w.lease = lease;
    w.actor = name;
    w.now = now;
    if (broker_storage_degraded(b)) {
        broker_storage_refuse(b, reply);
        goto out;
    }
    r = broker_journal_write(b, false, claim_write, &w, "recording a worker's claim", &err);
    if (r == -ESTALE) {
        broker_fail(reply, 409, "taken", "run %s moved on meanwhile (claimed, or cancelled)", rec.run_id);
        goto out;
    }
    if (r < 0) {
        if (!berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: recording the claim of %s failed: %s", rec.job_id,
                       rec.run_id, name, err.message);
        broker_journal_failed(b, r, &err, reply, "the claim could not be recorded");
        goto out;
    }
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s of %s: accepted -> claimed by worker %s", rec.job_id,
               rec.run_id, rec.principal, name);
    broker_fleet_dequeue(b, rec.run_id);
    /* Its busy count is its own: the next poll counts this run (the offer it
     * was made is held until then, out of the room placement sees). */
    broker_fleet_touch(b, name, 0);
    broker_succeed(reply, 201,
                   json_pack("{s:s, s:I, s:s, s:o, s:o}", "run_id", rec.run_id, "revision",
                             (json_int_t)rec.revision + 1, "claim_digest", claim_digest, "expires_ns",
                             berth_json_ns(now + b->p.worker_lease_ns), "lease_ns",
                             berth_json_ns(b->p.worker_lease_ns)));
out:
    pthread_mutex_unlock(&b->lock);
    if (reply->status >= 400 && rec.run_id && reply->status != 404)
        broker_fleet_release(b, rec.run_id);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
}
