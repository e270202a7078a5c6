/* SPDX-License-Identifier: MIT */
/* poolchain.c -- replaying and checking pool events; see poolchain.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "override.h"
#include "placement.h"
#include "poolchain.h"

struct berth_pool_chain {
    struct berth_pool **pools; /* every manifest ever registered, owned */
    size_t n_pools, cap_pools;
    json_t *by_hash;    /* pool_hash -> index into pools */
    json_t *active;     /* name -> pool_hash */
    json_t *placements; /* placement_hash -> pool_hash */
    json_t *enrolled;   /* "pool_hash/keyid" -> {public_key (base64url), worker_name} */
    json_t *claims;     /* "pool_hash/job_id" -> true */
    json_t *credentials;
    const struct berth_pool **sorted; /* active pools by name */
    size_t events, n_placements, n_enrolments, n_claims;
    size_t n_broker_claims, n_broker_unchecked; /* claims of schema 2 by the broker; of those, not signature-checked */
    bool has_broker_key;
    uint8_t broker_key[BERTH_ED25519_PUBLIC_LEN];
    bool projection; /* berth_pool_chain_set_projection(): run ids of claims are not remembered */
};

static const char *const registered_members[] = {"manifest", "name", "pool_hash", NULL};
static const char *const updated_members[] = {"manifest", "name", "pool_hash", "prev_pool_hash", NULL};
static const char *const retired_members[] = {"name", "pool_hash", NULL};
static const char *const placed_members[] = {
    "backends", "job_needs", "overrides", "placement_hash", "pool", "pool_hash", "receipt", NULL,
};
static const char *const override_refused_members[] = {
    "actor", "overrides", "overrides_hash", "pool", "pool_hash", "reason", "refused_field", NULL,
};
static const char *const placement_refused_members[] = {
    "backends", "effective_manifest_hash", "job_needs", "overrides", "overrides_hash", "pool", "pool_hash",
    "reason",   "selector_inputs",         NULL,
};
static const char *const quarantine_members[] = {"dispatch_hash", "pool", "reason", "slot_hash", "slot_id", NULL};
static const char *const attached_members[] = {"dispatch_hash", "pool", "run_id", "slot_hash", "slot_id", NULL};

int berth_pool_chain_new(struct berth_pool_chain **ret)
{
    struct berth_pool_chain *c = calloc(1, sizeof(*c));

    if (!c)
        return -ENOMEM;
    c->by_hash = json_object();
    c->active = json_object();
    c->placements = json_object();
    c->enrolled = json_object();
    c->claims = json_object();
    c->credentials = json_array();
    c->sorted = calloc(1, sizeof(*c->sorted));
    if (!c->by_hash || !c->active || !c->placements || !c->enrolled || !c->claims || !c->credentials || !c->sorted) {
        berth_pool_chain_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

void berth_pool_chain_free(struct berth_pool_chain *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->n_pools; i++)
        berth_pool_free(c->pools[i]);
    free(c->pools);
    free(c->sorted);
    json_decref(c->by_hash);
    json_decref(c->active);
    json_decref(c->placements);
    json_decref(c->enrolled);
    json_decref(c->claims);
    json_decref(c->credentials);
    free(c);
}

static const struct berth_pool *by_hash(const struct berth_pool_chain *c, const char *hash)
{
    const json_t *idx = hash ? json_object_get(c->by_hash, hash) : NULL;
    return idx ? c->pools[json_integer_value(idx)] : NULL;
}

const struct berth_pool *berth_pool_chain_find(const struct berth_pool_chain *c, const char *name)
{
    const json_t *h = name ? json_object_get(c->active, name) : NULL;
    return h ? by_hash(c, json_string_value(h)) : NULL;
}

bool berth_pool_chain_known(const struct berth_pool_chain *c, const char *pool_hash)
{
    return by_hash(c, pool_hash) != NULL;
}

size_t berth_pool_chain_count(const struct berth_pool_chain *c)
{
    return json_object_size(c->active);
}

const struct berth_pool *berth_pool_chain_at(const struct berth_pool_chain *c, size_t i)
{
    return i < json_object_size(c->active) ? c->sorted[i] : NULL;
}

bool berth_pool_chain_enrolled(const struct berth_pool_chain *c, const char *pool_hash, const char *keyid)
{
    char key[BERTH_HASH_HEX_LEN + BERTH_KEY_ID_LEN + 2];

    if (!pool_hash || !keyid)
        return false;
    snprintf(key, sizeof(key), "%s/%s", pool_hash, keyid);
    return json_object_get(c->enrolled, key) != NULL;
}

int berth_pool_chain_enrolled_key(const struct berth_pool_chain *c, const char *pool_hash, const char *keyid,
                                  uint8_t ret_public_key[BERTH_ED25519_PUBLIC_LEN], const char **ret_worker_name)
{
    char key[BERTH_HASH_HEX_LEN + BERTH_KEY_ID_LEN + 2];
    const json_t *e;

    if (!pool_hash || !keyid || strlen(keyid) != BERTH_KEY_ID_LEN)
        return -ENOENT;
    snprintf(key, sizeof(key), "%s/%s", pool_hash, keyid);
    e = json_object_get(c->enrolled, key);
    if (!e || berth_public_key_from_b64url(json_string_value(json_object_get(e, "public_key")), ret_public_key) < 0)
        return -ENOENT;
    if (ret_worker_name)
        *ret_worker_name = json_string_value(json_object_get(e, "worker_name"));
    return 0;
}

bool berth_pool_chain_claimed(const struct berth_pool_chain *c, const char *pool_hash, const char *job_id)
{
    char key[BERTH_HASH_HEX_LEN + 130];

    if (!pool_hash || !job_id)
        return false;
    snprintf(key, sizeof(key), "%s/%s", pool_hash, job_id);
    return json_object_get(c->claims, key) != NULL;
}

const char *berth_pool_chain_placement(const struct berth_pool_chain *c, const char *placement_hash)
{
    return placement_hash ? json_string_value(json_object_get(c->placements, placement_hash)) : NULL;
}

const json_t *berth_pool_chain_credentials(const struct berth_pool_chain *c)
{
    return c->credentials;
}

void berth_pool_chain_set_broker_key(struct berth_pool_chain *c, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN])
{
    memcpy(c->broker_key, public_key, BERTH_ED25519_PUBLIC_LEN);
    c->has_broker_key = true;
}

void berth_pool_chain_set_projection(struct berth_pool_chain *c)
{
    c->projection = true;
}

void berth_pool_chain_broker_claims(const struct berth_pool_chain *c, size_t *ret_claims, size_t *ret_unchecked)
{
    *ret_claims = c->n_broker_claims;
    *ret_unchecked = c->n_broker_unchecked;
}

void berth_pool_chain_stats(const struct berth_pool_chain *c, size_t *ret_events, size_t *ret_placements,
                            size_t *ret_enrolments, size_t *ret_claims)
{
    if (ret_events)
        *ret_events = c->events;
    if (ret_placements)
        *ret_placements = c->n_placements;
    if (ret_enrolments)
        *ret_enrolments = c->n_enrolments;
    if (ret_claims)
        *ret_claims = c->n_claims;
}

static int cmp_pool(const void *a, const void *b)
{
    return strcmp((*(const struct berth_pool *const *)a)->name, (*(const struct berth_pool *const *)b)->name);
}

/* Rebuild the sorted view and the credential names after active changed. */
static int refresh(struct berth_pool_chain *c)
{
    size_t n = json_object_size(c->active), i = 0, k;
    const struct berth_pool **sorted = calloc(n ? n : 1, sizeof(*sorted));
    const char *name;
    json_t *h;

    if (!sorted)
        return -ENOMEM;
    json_object_foreach(c->active, name, h) sorted[i++] = by_hash(c, json_string_value(h));
    if (n > 1)
        qsort(sorted, n, sizeof(*sorted), cmp_pool);
    free(c->sorted);
    c->sorted = sorted;
    /* Credential names: from every manifest ever registered, so that
     * retiring or updating a pool never makes a name a non-credential. */
    json_array_clear(c->credentials);
    for (i = 0; i < c->n_pools; i++)
        for (k = 0; k < c->pools[i]->n_credential_allowlist; k++)
            if (json_array_append_new(c->credentials, json_string(c->pools[i]->credential_allowlist[k])) < 0)
                return -ENOMEM;
    return 0;
}

/* Parse an event's manifest and remember it under its hash. */
static int add_manifest(struct berth_pool_chain *c, const json_t *manifest, const char *name, const char *hash,
                        struct berth_error *reterr)
{
    struct berth_pool *p = NULL;
    int r;

    r = berth_pool_from_json(manifest, &p, reterr);
    if (r < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    if (!streq(p->pool_hash, hash) || !streq(p->name, name) || !json_equal(p->manifest, manifest)) {
        berth_pool_free(p);
        return berth_error_set(reterr, -EBADMSG, "the manifest is not the normalised manifest of pool %s with hash %s",
                               name, hash);
    }
    if (by_hash(c, hash)) {
        berth_pool_free(p);
        return 0;
    }
    if (c->n_pools == c->cap_pools) {
        size_t cap = c->cap_pools ? 2 * c->cap_pools : 8;
        struct berth_pool **v = realloc(c->pools, cap * sizeof(*v));
        if (!v) {
            berth_pool_free(p);
            return -ENOMEM;
        }
        c->pools = v;
        c->cap_pools = cap;
    }
    c->pools[c->n_pools] = p;
    if (json_object_set_new(c->by_hash, hash, json_integer((json_int_t)c->n_pools)) < 0)
        return -ENOMEM;
    c->n_pools++;
    return 0;
}

/* Exact members, a hex pool_hash, and (when @name_key) the pool's name. */
static int get_strings(const json_t *d, const char *const *members, const char *name_key, const char **name,
                       const char **hash, struct berth_error *reterr)
{
    int r;

    if ((r = berth_json_only_members(d, "details", members, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "pool_hash", true, hash, reterr)) < 0)
        return r;
    if (name_key && (r = berth_json_string_member(d, "details", name_key, true, name, reterr)) < 0)
        return r;
    if (!berth_is_hex(*hash, BERTH_HASH_HEX_LEN))
        return berth_error_set(reterr, -EBADMSG, "details.pool_hash is not a hex SHA-256");
    return 0;
}

static int check_registered(struct berth_pool_chain *c, const json_t *d, bool update, struct berth_error *reterr)
{
    const char *name = NULL, *hash = NULL, *prev = NULL;
    const json_t *cur;
    int r;

    if ((r = get_strings(d, update ? updated_members : registered_members, "name", &name, &hash, reterr)) < 0)
        return r;
    cur = json_object_get(c->active, name);
    if (update) {
        if ((r = berth_json_string_member(d, "details", "prev_pool_hash", true, &prev, reterr)) < 0)
            return r;
        if (!cur || !streq(json_string_value(cur), prev))
            return berth_error_set(reterr, -EBADMSG, "pool %s is not active at prev_pool_hash", name);
        if (streq(prev, hash))
            return berth_error_set(reterr, -EBADMSG, "an update of pool %s that does not change it", name);
    } else if (cur) {
        return berth_error_set(reterr, -EBADMSG, "pool %s is registered again while active", name);
    }
    r = add_manifest(c, json_object_get(d, "manifest"), name, hash, reterr);
    if (r < 0)
        return r;
    if (json_object_set_new(c->active, name, json_string(hash)) < 0)
        return -ENOMEM;
    return refresh(c);
}

static int check_retired(struct berth_pool_chain *c, const json_t *d, struct berth_error *reterr)
{
    const char *name = NULL, *hash = NULL;
    const json_t *cur;
    int r;

    if ((r = get_strings(d, retired_members, "name", &name, &hash, reterr)) < 0)
        return r;
    cur = json_object_get(c->active, name);
    if (!cur || !streq(json_string_value(cur), hash))
        return berth_error_set(reterr, -EBADMSG, "pool %s is not active at that hash", name);
    if (json_object_del(c->active, name) < 0)
        return -ENOMEM;
    return refresh(c);
}

static bool string_member_is(const json_t *o, const char *key, const char *want)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && want && streq(v, want);
}

/* The pool an event names: active under @name at @hash when it happened. */
static const struct berth_pool *active_pool(const struct berth_pool_chain *c, const char *name, const char *hash,
                                            struct berth_error *reterr)
{
    const json_t *cur = json_object_get(c->active, name);
    const struct berth_pool *pool = by_hash(c, hash);

    if (!cur || !streq(json_string_value(cur), hash) || !pool) {
        berth_error_set(reterr, -EBADMSG, "pool %s is not active at pool_hash", name);
        return NULL;
    }
    return pool;
}

/*
 * pool.placed, pool.placement_refused and pool.override_refused record
 * everything their decision depended on -- the pool, the overrides, the
 * backends placement saw, and (as the event time) the time it judged
 * qualifications at -- so the decision is re-derived here and must come out
 * byte for byte the same.
 */
static int rederive(struct berth_pool_chain *c, const struct berth_audit_event *ev, const char *kind,
                    struct berth_error *reterr)
{
    const json_t *d = ev->details, *overrides = json_object_get(d, "overrides");
    const bool placed = streq(kind, "placed"), no_backend = streq(kind, "placement_refused");
    struct berth_backend_set *set = NULL;
    struct berth_effective *e = NULL;
    const struct berth_pool *pool;
    json_t *receipt = NULL, *inputs = NULL;
    char ph[BERTH_HASH_HEX_LEN + 1], oh[BERTH_HASH_HEX_LEN + 1];
    const char *name = NULL, *hash = NULL;
    struct berth_refusal rf;
    int r, decision;

    if ((r = get_strings(d,
                         placed       ? placed_members
                         : no_backend ? placement_refused_members
                                      : override_refused_members,
                         "pool", &name, &hash, reterr)) < 0)
        return r;
    if (!(pool = active_pool(c, name, hash, reterr)))
        return -EBADMSG;
    if (!overrides)
        return berth_error_set(reterr, -EBADMSG, "details.overrides is missing");
    if ((r = berth_overrides_hash(overrides, oh, reterr)) < 0)
        return r;
    if (!placed && !string_member_is(d, "overrides_hash", oh))
        return berth_error_set(reterr, -EBADMSG, "overrides_hash does not hash the overrides");

    decision = berth_pool_merge(pool, overrides, c->credentials, &e, &rf, reterr);
    if (decision != -EPERM && decision < 0)
        return decision;
    if (streq(kind, "override_refused")) {
        berth_effective_free(e);
        if (decision != -EPERM || !string_member_is(d, "reason", berth_refusal_names[rf.reason]) ||
            !string_member_is(d, "refused_field", rf.field))
            return berth_error_set(reterr, -EBADMSG, "the overrides are not refused for that reason and field");
        if (!json_is_string(json_object_get(d, "actor")))
            return berth_error_set(reterr, -EBADMSG, "details.actor must be a string");
        return 0;
    }
    if (decision == -EPERM)
        return berth_error_set(reterr, -EBADMSG, "the recorded overrides are refused (%s: %s)",
                               berth_refusal_names[rf.reason], rf.field);
    r = 0;
    if (json_object_get(d, "job_needs"))
        r = berth_name_set_parse(json_object_get(d, "job_needs"), "details.job_needs", berth_job_need_names,
                                 BERTH_NEED_COUNT, &e->needs, NULL, reterr);
    if (r == 0)
        r = berth_backend_set_from_json(json_object_get(d, "backends"), &set, reterr);
    if (r == 0) {
        decision = berth_place(pool, e, set, ev->time_ns, &receipt, ph, &rf, &inputs, reterr);
        if (placed) {
            if (decision != 0 || !json_equal(receipt, json_object_get(d, "receipt")) ||
                !string_member_is(d, "placement_hash", ph))
                r = berth_error_set(reterr, -EBADMSG,
                                    "the receipt does not follow from the pool, overrides and backends");
        } else if (decision != -EPERM || !json_equal(inputs, json_object_get(d, "selector_inputs")) ||
                   !string_member_is(d, "reason", "no_backend") ||
                   !string_member_is(d, "effective_manifest_hash", e->effective_hash)) {
            r = berth_error_set(reterr, -EBADMSG, "the refusal does not follow from the pool, overrides and backends");
        }
    }
    json_decref(receipt);
    json_decref(inputs);
    berth_backend_set_free(set);
    berth_effective_free(e);
    if (r < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    if (placed) {
        if (json_object_set_new(c->placements, ph, json_string(hash)) < 0)
            return -ENOMEM;
        c->n_placements++;
    }
    return 0;
}

static int check_enrolled(struct berth_pool_chain *c, const json_t *d, struct berth_error *reterr)
{
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    const json_t *e = json_object_get(d, "enrolment");
    const char *hash, *keyid;
    char key[BERTH_HASH_HEX_LEN + BERTH_KEY_ID_LEN + 2];
    int r;

    r = berth_enrolment_verify(d, pub, reterr);
    if (r < 0)
        return r;
    hash = json_string_value(json_object_get(e, "pool_hash"));
    keyid = json_string_value(json_object_get(e, "keyid"));
    if (!berth_pool_chain_known(c, hash))
        return berth_error_set(reterr, -EBADMSG, "enrolment into a pool that was never registered");
    snprintf(key, sizeof(key), "%s/%s", hash, keyid);
    if (json_object_set_new(c->enrolled, key,
                            json_pack("{s:O, s:O}", "public_key", json_object_get(e, "public_key"), "worker_name",
                                      json_object_get(e, "worker_name"))) < 0)
        return -ENOMEM;
    c->n_enrolments++;
    return 0;
}

/*
 * A claim: a worker's, signed by a key enrolled in its pool; or (schema 2)
 * the broker's own, signed by the broker's receipt key, checked when the
 * verifier was given that key (berth_pool_chain_set_broker_key()).  Either
 * claims a placement recorded in that pool, and nothing is claimed twice:
 * a job id in its pool (schema 1), a run id anywhere (schema 2).
 */
static int check_claim(struct berth_pool_chain *c, const json_t *d, struct berth_error *reterr)
{
    const json_t *claim = json_object_get(d, "claim"), *placed;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    const char *hash = json_string_value(json_object_get(claim, "pool_hash"));
    const char *keyid = json_string_value(json_object_get(claim, "keyid"));
    const char *ph = json_string_value(json_object_get(claim, "placement_hash"));
    int version = berth_claim_version(d);
    bool by_broker = version == 2 && streq_ptr(json_string_value(json_object_get(claim, "claimant")), "broker");
    char key[BERTH_HASH_HEX_LEN + 140];
    int r;

    if (!hash || !keyid || strlen(keyid) != BERTH_KEY_ID_LEN)
        return berth_error_set(reterr, -EBADMSG, "the claim lacks pool_hash or keyid");
    if (by_broker) {
        r = berth_claim_verify(d, c->has_broker_key ? c->broker_key : NULL, reterr);
    } else {
        const char *enrolled_as = NULL;
        if (berth_pool_chain_enrolled_key(c, hash, keyid, pub, &enrolled_as) < 0)
            return berth_error_set(reterr, -EBADMSG, "claim by key %s, which is not enrolled in that pool", keyid);
        /* A key enrolls under one name: its claims are that worker's. */
        if (!streq_ptr(json_string_value(json_object_get(claim, "worker_name")), enrolled_as))
            return berth_error_set(reterr, -EBADMSG, "claim by key %s under another name than it enrolled with (%s)",
                                   keyid, enrolled_as ? enrolled_as : "?");
        r = berth_claim_verify(d, pub, reterr);
    }
    if (r < 0)
        return r;
    placed = ph ? json_object_get(c->placements, ph) : NULL;
    if (!placed || !streq(json_string_value(placed), hash))
        return berth_error_set(reterr, -EBADMSG, "claim of a placement that was not recorded in that pool");
    if (version == 2) {
        const char *run = json_string_value(json_object_get(claim, "run_id"));
        snprintf(key, sizeof(key), "run:%s", run);
        if (json_object_get(c->claims, key))
            return berth_error_set(reterr, -EBADMSG, "run %s was already claimed", run);
        if (c->projection) {
            c->n_claims++;
            c->n_broker_claims += by_broker;
            c->n_broker_unchecked += by_broker && !c->has_broker_key;
            return 0;
        }
    } else {
        const char *job = json_string_value(json_object_get(claim, "job_id"));
        if (berth_pool_chain_claimed(c, hash, job))
            return berth_error_set(reterr, -EBADMSG, "job %s was already claimed in that pool", job);
        snprintf(key, sizeof(key), "%s/%s", hash, job);
    }
    if (json_object_set_new(c->claims, key, json_true()) < 0)
        return -ENOMEM;
    c->n_claims++;
    if (by_broker) {
        c->n_broker_claims++;
        if (!c->has_broker_key)
            c->n_broker_unchecked++;
    }
    return 0;
}

/* The members both warm events share: a slot id and two hashes; *@ret_equal whether the hashes are equal. */
static int check_warm_hashes(const json_t *d, bool *ret_equal, struct berth_error *reterr)
{
    const char *id = NULL, *a = NULL, *b = NULL, *pool = NULL;
    int r;

    if ((r = berth_json_string_member(d, "details", "slot_id", true, &id, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "slot_hash", true, &a, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "dispatch_hash", true, &b, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "pool", false, &pool, reterr)) < 0)
        return r;
    if (!berth_worker_name_valid(id) || !berth_is_hex(a, BERTH_HASH_HEX_LEN) || !berth_is_hex(b, BERTH_HASH_HEX_LEN))
        return berth_error_set(reterr, -EBADMSG, "malformed slot_id or hashes");
    *ret_equal = streq(a, b);
    return 0;
}

/* pool.warm_quarantine: a slot destroyed unused.  For its manifest (the
 * reason of events without one), the two hashes differ; for another
 * reason ("qualification", "runtime") they may be equal. */
static int check_quarantine(const json_t *d, struct berth_error *reterr)
{
    const char *reason = NULL;
    bool equal = false;
    int r;

    if ((r = berth_json_only_members(d, "details", quarantine_members, reterr)) < 0 ||
        (r = check_warm_hashes(d, &equal, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "reason", false, &reason, reterr)) < 0)
        return r;
    if (reason && !streq(reason, "manifest") && !streq(reason, "qualification") && !streq(reason, "runtime"))
        return berth_error_set(reterr, -EBADMSG, "unknown quarantine reason %s", reason);
    if ((!reason || streq(reason, "manifest")) && equal)
        return berth_error_set(reterr, -EBADMSG, "a slot quarantined although its hash matched");
    return 0;
}

/* pool.warm_attached: a slot given to a run; only ever with equal hashes. */
static int check_attached(const json_t *d, struct berth_error *reterr)
{
    const char *run_id = NULL;
    bool equal = false;
    int r;

    if ((r = berth_json_only_members(d, "details", attached_members, reterr)) < 0 ||
        (r = check_warm_hashes(d, &equal, reterr)) < 0 ||
        (r = berth_json_string_member(d, "details", "run_id", true, &run_id, reterr)) < 0)
        return r;
    if (!equal)
        return berth_error_set(reterr, -EBADMSG, "a slot attached although its hash differs from the dispatch's");
    return 0;
}

int berth_pool_chain_check(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr)
{
    struct berth_pool_chain *c = userdata;
    const json_t *d = ev->details;
    int r;

    c->events++;
    if (strncmp(ev->type, "pool.", 5) != 0)
        return 0;
    if (streq(ev->type, "pool.registered"))
        r = check_registered(c, d, false, reterr);
    else if (streq(ev->type, "pool.updated"))
        r = check_registered(c, d, true, reterr);
    else if (streq(ev->type, "pool.retired"))
        r = check_retired(c, d, reterr);
    else if (streq(ev->type, "pool.placed"))
        r = rederive(c, ev, "placed", reterr);
    else if (streq(ev->type, "pool.override_refused"))
        r = rederive(c, ev, "override_refused", reterr);
    else if (streq(ev->type, "pool.placement_refused"))
        r = rederive(c, ev, "placement_refused", reterr);
    else if (streq(ev->type, "pool.worker_enrolled"))
        r = check_enrolled(c, d, reterr);
    else if (streq(ev->type, "pool.claim_receipt"))
        r = check_claim(c, d, reterr);
    else if (streq(ev->type, "pool.warm_quarantine"))
        r = check_quarantine(d, reterr);
    else if (streq(ev->type, "pool.warm_attached"))
        r = check_attached(d, reterr);
    else
        r = berth_error_set(reterr, -EBADMSG, "unknown pool event type %s", ev->type);
    if (r == -ENOMEM)
        return berth_error_set(reterr, r, "out of memory");
    if (r < 0) {
        berth_error_prefix(reterr, "%s", ev->type);
        if (reterr)
            reterr->code = -EBADMSG;
        return -EBADMSG;
    }
    return 0;
}
