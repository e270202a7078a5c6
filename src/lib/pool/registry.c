/* SPDX-License-Identifier: MIT */
/* registry.c -- pool operations on a journal; see registry.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "canon.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "registry.h"

/* An event recorded inside the caller's transaction, applied after it commits. */
struct pending_event {
    uint64_t seq;
    int64_t time_ns;
    char *type, *actor;
    json_t *details;
};

/* A stored pool body this registry parsed and checked, and the pool it
 * holds (memo_body()). */
struct body_memo {
    char *body;
    size_t len;
    struct berth_pool *pool;
    uint64_t used; /* memo_clock when last used: the least recent goes first */
};
#define BODY_MEMO_MAX 8

struct berth_registry {
    struct berth_journal *j;
    struct berth_pool_chain *chain;
    bool broken;   /* a committed event could not be applied: the projection is stale */
    bool borrowed; /* the current operation runs inside the caller's transaction */
    struct pending_event *pending;
    size_t n_pending, cap_pending;
    struct body_memo memo[BODY_MEMO_MAX];
    uint64_t memo_clock;
};

static inline void chain_freep(struct berth_pool_chain **c)
{
    berth_pool_chain_free(*c);
}
#define _cleanup_chain_ BERTH_CLEANUP(chain_freep)

int berth_registry_open(struct berth_journal *j, struct berth_registry **ret, struct berth_error *reterr)
{
    struct berth_registry *reg;
    int r;

    if (!j || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    reg = calloc(1, sizeof(*reg));
    if (!reg || berth_pool_chain_new(&reg->chain) < 0) {
        free(reg);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    reg->j = j;
    berth_pool_chain_set_projection(reg->chain);
    /* Only pool events change the projection (berth_pool_chain_check()). */
    r = berth_audit_replay_types(j, "pool.", berth_pool_chain_check, reg->chain, reterr);
    if (r < 0) {
        berth_registry_free(reg);
        return r;
    }
    *ret = reg;
    return 0;
}

void berth_registry_free(struct berth_registry *reg)
{
    if (!reg)
        return;
    berth_registry_pending_truncate(reg, 0);
    free(reg->pending);
    for (size_t i = 0; i < BODY_MEMO_MAX; i++) {
        berth_pool_free(reg->memo[i].pool);
        free(reg->memo[i].body);
    }
    berth_pool_chain_free(reg->chain);
    free(reg);
}

const struct berth_pool_chain *berth_registry_chain(const struct berth_registry *reg)
{
    return reg ? reg->chain : NULL;
}

/* BEGIN a write, or join the caller's open transaction; refuse when an
 * earlier apply failed. */
static int begin(struct berth_registry *reg, struct berth_error *reterr)
{
    if (reg->broken)
        return berth_error_set(reterr, -EIO, "the pool registry is out of date; reopen the journal");
    reg->borrowed = berth_journal_in_transaction(reg->j);
    return reg->borrowed ? 0 : berth_journal_begin(reg->j, reterr);
}

/* Undo what this operation wrote: its own transaction, never the caller's
 * (the caller rolls back, or truncates to a savepoint, itself). */
static void abort_txn(struct berth_registry *reg)
{
    if (!reg->borrowed)
        berth_journal_rollback(reg->j);
}

static int apply(struct berth_registry *reg, uint64_t seq, int64_t time_ns, const char *type, const char *actor,
                 const json_t *details, struct berth_error *reterr)
{
    struct berth_audit_event ev = {
        .seq = seq,
        .time_ns = time_ns,
        .type = type,
        .actor = actor,
        .details = details,
    };
    int r;

    r = berth_pool_chain_check(reg->chain, &ev, reterr);
    if (r < 0) {
        reg->broken = true;
        berth_error_prefix(reterr, "event %llu was recorded but cannot be applied to the pool registry",
                           (unsigned long long)seq);
        if (reterr)
            reterr->code = -EIO;
        return -EIO;
    }
    return 0;
}

size_t berth_registry_pending_mark(const struct berth_registry *reg)
{
    return reg ? reg->n_pending : 0;
}

void berth_registry_pending_truncate(struct berth_registry *reg, size_t mark)
{
    if (!reg)
        return;
    while (reg->n_pending > mark) {
        struct pending_event *e = &reg->pending[--reg->n_pending];
        free(e->type);
        free(e->actor);
        json_decref(e->details);
    }
}

int berth_registry_apply_pending(struct berth_registry *reg, struct berth_error *reterr)
{
    size_t i;
    int r = 0;

    if (!reg)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    for (i = 0; i < reg->n_pending && r == 0; i++)
        r = apply(reg, reg->pending[i].seq, reg->pending[i].time_ns, reg->pending[i].type, reg->pending[i].actor,
                  reg->pending[i].details, reterr);
    berth_registry_pending_truncate(reg, 0);
    return r;
}

static int queue_pending(struct berth_registry *reg, uint64_t seq, int64_t time_ns, const char *type, const char *actor,
                         json_t *details, struct berth_error *reterr)
{
    struct pending_event *e;

    if (reg->n_pending == reg->cap_pending) {
        size_t cap = reg->cap_pending ? reg->cap_pending * 2 : 8;
        struct pending_event *v = reallocarray(reg->pending, cap, sizeof(*v));
        if (!v)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        reg->pending = v;
        reg->cap_pending = cap;
    }
    e = &reg->pending[reg->n_pending];
    e->seq = seq;
    e->time_ns = time_ns;
    e->type = strdup(type);
    e->actor = strdup(actor);
    e->details = json_incref(details);
    if (!e->type || !e->actor) {
        free(e->type);
        free(e->actor);
        json_decref(details);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    reg->n_pending++;
    return 0;
}

/* COMMIT, then apply the committed event to the projection; inside the
 * caller's transaction, queue it for berth_registry_apply_pending(). */
static int commit_apply(struct berth_registry *reg, uint64_t seq, int64_t time_ns, const char *type, const char *actor,
                        json_t *details, struct berth_error *reterr)
{
    int r;

    if (reg->borrowed)
        return queue_pending(reg, seq, time_ns, type, actor, details, reterr);
    r = berth_journal_commit(reg->j, reterr);
    if (r < 0)
        return r;
    return apply(reg, seq, time_ns, type, actor, details, reterr);
}

/* The stored body for @hash: 1 and *ret_body (malloc'd), or 0 when absent. */
static int read_body(struct berth_journal *j, const char *hash, char **ret_body, size_t *ret_len,
                     struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r = 0;

    if (berth_journal_prepare(j, "SELECT body FROM pool_bodies WHERE pool_hash = ?", "preparing a statement", &st,
                              NULL) < 0)
        return berth_journal_error(j, "reading pool manifests", reterr);
    if ((r = BERTH_JOURNAL_BIND(j, st, "reading pool manifests", reterr, BERTH_SQL_TEXT(hash))) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        int n = sqlite3_column_bytes(st, 0);
        const void *b = sqlite3_column_blob(st, 0);
        char *copy = malloc((size_t)n + 1);
        if (!copy) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
        } else {
            if (n > 0)
                memcpy(copy, b, (size_t)n);
            copy[n] = '\0';
            *ret_body = copy;
            *ret_len = (size_t)n;
            r = 1;
        }
    } else if (rc != SQLITE_DONE) {
        r = berth_journal_error(j, "reading pool manifests", reterr);
    }
    berth_journal_finish(j, st);
    return r;
}

/* Parse the stored bytes @body of @hash and check that they hash to it, in
 * canonical form. */
static int check_body(const char *hash, const char *body, size_t len, struct berth_pool **ret,
                      struct berth_error *reterr)
{
    _cleanup_free_ char *canon = NULL;
    size_t canon_len = 0;
    int r;

    r = berth_pool_parse(body, len, ret, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "the stored manifest body %s is damaged", hash);
        return r == -ENOMEM ? r : -EBADMSG;
    }
    if (!streq((*ret)->pool_hash, hash)) {
        berth_error_set(reterr, -EBADMSG, "the stored manifest body %s is damaged: it hashes to %s", hash,
                        (*ret)->pool_hash);
        berth_pool_free(*ret);
        *ret = NULL;
        return -EBADMSG;
    }
    /* Content-addressed means these exact bytes, not an equivalent document. */
    if (berth_json_serialize((*ret)->manifest, 0, &canon, &canon_len, reterr) < 0 || canon_len != len ||
        memcmp(canon, body, len) != 0) {
        berth_error_set(reterr, -EBADMSG, "the stored manifest body %s is damaged: it is not in canonical form", hash);
        berth_pool_free(*ret);
        *ret = NULL;
        return -EBADMSG;
    }
    return 0;
}

/* read_body(), where a missing body is damage: 0 and *ret_body, or -errno. */
static int read_stored(struct berth_journal *j, const char *hash, char **ret_body, size_t *ret_len,
                       struct berth_error *reterr)
{
    int r = read_body(j, hash, ret_body, ret_len, reterr);

    if (r == 0)
        return berth_error_set(reterr, -EBADMSG, "the manifest body %s is missing from the journal", hash);
    return r < 0 ? r : 0;
}

/* Read the stored body of @hash, parse it and check it (check_body()). */
static int load_body(struct berth_journal *j, const char *hash, struct berth_pool **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *body = NULL;
    size_t len = 0;
    int r = read_stored(j, hash, &body, &len, reterr);

    return r < 0 ? r : check_body(hash, body, len, ret, reterr);
}

/* The pool stored under @hash, for a placement: read from the journal every
 * time, but parsed and checked again only when its bytes differ from those
 * of a body this registry checked before (content-addressed: the same bytes
 * under the same key are the same pool).  *@ret is borrowed, valid until the
 * next call. */
static int memo_body(struct berth_registry *reg, const char *hash, const struct berth_pool **ret,
                     struct berth_error *reterr)
{
    _cleanup_free_ char *body = NULL;
    struct body_memo *m, *victim = &reg->memo[0];
    struct berth_pool *pool = NULL;
    size_t len = 0;
    int r;

    if ((r = read_stored(reg->j, hash, &body, &len, reterr)) < 0)
        return r;
    for (m = reg->memo; m < reg->memo + BODY_MEMO_MAX; m++) {
        if (m->pool && m->len == len && streq(m->pool->pool_hash, hash) && memcmp(m->body, body, len) == 0) {
            m->used = ++reg->memo_clock;
            *ret = m->pool;
            return 0;
        }
        if (!m->pool || (victim->pool && m->used < victim->used))
            victim = m;
    }
    if ((r = check_body(hash, body, len, &pool, reterr)) < 0)
        return r;
    berth_pool_free(victim->pool);
    free(victim->body);
    victim->body = TAKE_PTR(body);
    victim->len = len;
    victim->pool = pool;
    victim->used = ++reg->memo_clock;
    *ret = pool;
    return 0;
}

static int store_body(struct berth_journal *j, const struct berth_pool *pool, struct berth_error *reterr)
{
    _cleanup_free_ char *bytes = NULL, *existing = NULL;
    sqlite3_stmt *st = NULL;
    size_t len = 0, elen = 0;
    int r, rc;

    r = berth_json_serialize(pool->manifest, 0, &bytes, &len, reterr);
    if (r < 0)
        return r;
    r = read_body(j, pool->pool_hash, &existing, &elen, reterr);
    if (r < 0)
        return r;
    if (r == 1) /* content-addressed: the same key must hold the same bytes */
        return elen == len && memcmp(existing, bytes, len) == 0
                   ? 0
                   : berth_error_set(reterr, -EBADMSG, "the stored manifest body %s is damaged", pool->pool_hash);
    if (berth_journal_prepare(j, "INSERT INTO pool_bodies (pool_hash, body) VALUES (?, ?)", "preparing a statement",
                              &st, NULL) < 0)
        return berth_journal_error(j, "storing a pool manifest", reterr);
    if ((r = BERTH_JOURNAL_BIND(j, st, "storing a pool manifest", reterr, BERTH_SQL_TEXT(pool->pool_hash),
                                BERTH_SQL_TEXTN(bytes, (int)len))) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    return rc == SQLITE_DONE ? 0 : berth_journal_error(j, "storing a pool manifest", reterr);
}

/* Append one event inside the open transaction. */
static int record(struct berth_journal *j, const struct berth_audit_key *key, int64_t now_ns, const char *type,
                  const char *actor, const json_t *details, uint64_t *ret_seq, struct berth_error *reterr)
{
    if (!details)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_audit_append(j, key, now_ns, type, actor, details, ret_seq, reterr);
}

/* Record one event in the open transaction, commit, apply; rolls back on
 * failure.  Takes the reference to @details. */
static int record_commit(struct berth_registry *reg, const struct berth_audit_key *key, int64_t now_ns,
                         const char *type, const char *actor, json_t *details, uint64_t *ret_seq,
                         struct berth_error *reterr)
{
    uint64_t seq = 0;
    int r;

    r = record(reg->j, key, now_ns, type, actor, details, &seq, reterr);
    if (r < 0)
        abort_txn(reg);
    else
        r = commit_apply(reg, seq, now_ns, type, actor, details, reterr);
    json_decref(details);
    if (r == 0 && ret_seq)
        *ret_seq = seq;
    return r;
}

/* BEGIN and find the active pool @name (-ENOENT, rolled back, when absent). */
static int begin_with_pool(struct berth_registry *reg, const char *name, const struct berth_pool **ret_pool,
                           struct berth_error *reterr)
{
    int r;

    if ((r = begin(reg, reterr)) < 0)
        return r;
    *ret_pool = berth_pool_chain_find(reg->chain, name);
    if (!*ret_pool) {
        abort_txn(reg);
        return berth_error_set(reterr, -ENOENT, "no active pool is called %s", name);
    }
    return 0;
}

int berth_registry_register(struct berth_registry *reg, const struct berth_audit_key *key,
                            const struct berth_pool *pool, const char *actor, int64_t now_ns,
                            enum berth_register_outcome *ret_outcome, struct berth_error *reterr)
{
    const struct berth_pool *cur;
    json_t *details;
    int r;

    if (!reg || !key || !pool)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    cur = berth_pool_chain_find(reg->chain, pool->name);
    if (cur && streq(cur->pool_hash, pool->pool_hash)) {
        if (ret_outcome)
            *ret_outcome = BERTH_REGISTER_UNCHANGED;
        return 0;
    }
    if ((r = begin(reg, reterr)) < 0)
        return r;
    if ((r = store_body(reg->j, pool, reterr)) < 0) {
        abort_txn(reg);
        return r;
    }
    if (cur)
        details = json_pack("{s:s, s:s, s:s, s:O}", "name", pool->name, "pool_hash", pool->pool_hash, "prev_pool_hash",
                            cur->pool_hash, "manifest", pool->manifest);
    else
        details =
            json_pack("{s:s, s:s, s:O}", "name", pool->name, "pool_hash", pool->pool_hash, "manifest", pool->manifest);
    /* cur belongs to the projection, which the apply may change: decide first. */
    if (ret_outcome)
        *ret_outcome = cur ? BERTH_REGISTER_UPDATED : BERTH_REGISTER_NEW;
    return record_commit(reg, key, now_ns, cur ? "pool.updated" : "pool.registered", actor, details, NULL, reterr);
}

int berth_registry_retire(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                          const char *actor, int64_t now_ns, struct berth_error *reterr)
{
    const struct berth_pool *cur;
    int r;

    if (!reg || !key || !name)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = begin_with_pool(reg, name, &cur, reterr)) < 0)
        return r;
    return record_commit(reg, key, now_ns, "pool.retired", actor,
                         json_pack("{s:s, s:s}", "name", cur->name, "pool_hash", cur->pool_hash), NULL, reterr);
}

int berth_registry_get(struct berth_registry *reg, const char *name, struct berth_pool **ret,
                       struct berth_error *reterr)
{
    const struct berth_pool *cur;

    if (!reg || !name || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    cur = berth_pool_chain_find(reg->chain, name);
    if (!cur)
        return berth_error_set(reterr, -ENOENT, "no active pool is called %s", name);
    return load_body(reg->j, cur->pool_hash, ret, reterr);
}

void berth_placement_result_clear(struct berth_placement_result *res)
{
    if (!res)
        return;
    json_decref(res->receipt);
    json_decref(res->selector_inputs);
    json_decref(res->effective);
    memset(res, 0, sizeof(*res));
}

int berth_registry_place(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const json_t *overrides, const struct berth_backend_set *backends, const char *actor,
                         int64_t now_ns, struct berth_placement_result *res, struct berth_error *reterr)
{
    return berth_registry_place_job(reg, key, name, overrides, 0, backends, actor, now_ns, res, reterr);
}

int berth_registry_place_job(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                             const json_t *overrides, unsigned needs, const struct berth_backend_set *backends,
                             const char *actor, int64_t now_ns, struct berth_placement_result *res,
                             struct berth_error *reterr)
{
    const struct berth_pool *pool = NULL, *cur;
    struct berth_effective *e = NULL;
    const char *type = NULL;
    json_t *details = NULL, *backends_doc;
    int r, decision;

    if (!reg || !key || !name || !res)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    memset(res, 0, sizeof(*res));
    /* The manifest from the content-addressed table (checked again unless
     * its bytes are those of one already checked). */
    if (!(cur = berth_pool_chain_find(reg->chain, name)))
        return berth_error_set(reterr, -ENOENT, "no active pool is called %s", name);
    if ((r = memo_body(reg, cur->pool_hash, &pool, reterr)) < 0)
        return r;
    if ((r = berth_overrides_hash(overrides, res->overrides_hash, reterr)) < 0)
        return r;

    /* The decision, then the event that records it: with everything the
     * decision depended on, so that verification can re-derive it. */
    backends_doc = backends ? json_incref(backends->doc) : json_object();
    decision = berth_pool_merge(pool, overrides, berth_pool_chain_credentials(reg->chain), &e, &res->refusal, reterr);
    if (decision == -EPERM) {
        type = "pool.override_refused";
        details = json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:s}", "pool", pool->name, "pool_hash", pool->pool_hash,
                            "overrides", overrides ? json_deep_copy(overrides) : json_object(), "overrides_hash",
                            res->overrides_hash, "reason", berth_refusal_names[res->refusal.reason], "refused_field",
                            res->refusal.field, "actor", actor);
    } else if (decision == 0) {
        e->needs = needs;
        decision = berth_place(pool, e, backends, now_ns, &res->receipt, res->placement_hash, &res->refusal,
                               &res->selector_inputs, reterr);
        if (decision == -EPERM) {
            type = "pool.placement_refused";
            details = json_pack("{s:s, s:s, s:O, s:O, s:s, s:s, s:s, s:O}", "pool", pool->name, "pool_hash",
                                pool->pool_hash, "overrides", e->overrides, "backends", backends_doc, "reason",
                                "no_backend", "overrides_hash", e->overrides_hash, "effective_manifest_hash",
                                e->effective_hash, "selector_inputs", res->selector_inputs);
        } else if (decision == 0) {
            type = "pool.placed";
            res->effective = json_incref(e->json);
            details = json_pack("{s:s, s:s, s:O, s:O, s:O, s:s}", "pool", pool->name, "pool_hash", pool->pool_hash,
                                "overrides", e->overrides, "backends", backends_doc, "receipt", res->receipt,
                                "placement_hash", res->placement_hash);
        }
        if (details && needs &&
            json_object_set_new(details, "job_needs",
                                berth_name_set_json(needs, berth_job_need_names, BERTH_NEED_COUNT)) < 0) {
            json_decref(details);
            details = NULL;
        }
    }
    json_decref(backends_doc);
    berth_effective_free(e);
    if (!type) {
        r = decision;
    } else if ((r = begin(reg, reterr)) < 0) {
        json_decref(details);
    } else {
        r = record_commit(reg, key, now_ns, type, actor, details, &res->seq, reterr);
    }
    if (r < 0) {
        berth_placement_result_clear(res);
        return r;
    }
    if (decision == -EPERM) {
        res->refused = true;
        return -EPERM;
    }
    return 0;
}

int berth_registry_enrol(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const struct berth_signing_key *worker, const char *worker_name, const char *actor,
                         int64_t now_ns, json_t **ret_details, struct berth_error *reterr)
{
    const struct berth_pool *cur;
    json_t *details = NULL;
    int r;

    if (!reg || !key || !name || !worker)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = begin_with_pool(reg, name, &cur, reterr)) < 0)
        return r;
    if ((r = berth_enrolment_create(worker, cur->pool_hash, worker_name, now_ns, &details, reterr)) < 0) {
        abort_txn(reg);
        return r;
    }
    if (ret_details)
        *ret_details = json_incref(details);
    r = record_commit(reg, key, now_ns, "pool.worker_enrolled", actor, details, NULL, reterr);
    if (r < 0 && ret_details) {
        json_decref(*ret_details);
        *ret_details = NULL;
    }
    return r;
}

int berth_registry_record_enrolment(struct berth_registry *reg, const struct berth_audit_key *key,
                                    const json_t *details, const char *actor, int64_t now_ns, const char **ret_pool,
                                    struct berth_error *reterr)
{
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    const struct berth_pool *cur = NULL;
    const char *hash;
    size_t i;
    int r;

    if (!reg || !key || !details || !actor)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_enrolment_verify(details, pub, reterr)) < 0)
        return r;
    hash = json_string_value(json_object_get(json_object_get(details, "enrolment"), "pool_hash"));
    if ((r = begin(reg, reterr)) < 0)
        return r;
    for (i = 0; !cur && i < berth_pool_chain_count(reg->chain); i++)
        if (streq(berth_pool_chain_at(reg->chain, i)->pool_hash, hash))
            cur = berth_pool_chain_at(reg->chain, i);
    if (!cur) {
        abort_txn(reg);
        return berth_error_set(reterr, -ESTALE,
                               "pool_hash %.16s... is the manifest of no active pool now: read the pool again and "
                               "enrol into its current manifest",
                               hash);
    }
    if (ret_pool)
        *ret_pool = cur->name;
    return record_commit(reg, key, now_ns, "pool.worker_enrolled", actor, json_deep_copy(details), NULL, reterr);
}

int berth_registry_claim(struct berth_registry *reg, const struct berth_audit_key *key, const char *name,
                         const struct berth_signing_key *worker, const char *worker_name, const char *job_id,
                         const char *placement_hash, const char *actor, int64_t now_ns, json_t **ret_details,
                         struct berth_error *reterr)
{
    const struct berth_pool *cur;
    const char *placed_in;
    json_t *details = NULL;
    int r;

    if (!reg || !key || !name || !worker)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    cur = berth_pool_chain_find(reg->chain, name);
    if (!cur)
        return berth_error_set(reterr, -ENOENT, "no active pool is called %s", name);
    if (!berth_pool_chain_enrolled(reg->chain, cur->pool_hash, berth_signing_key_id(worker)))
        return berth_error_set(reterr, -EPERM, "worker key %s is not enrolled in pool %s", berth_signing_key_id(worker),
                               name);
    if (berth_pool_chain_claimed(reg->chain, cur->pool_hash, job_id))
        return berth_error_set(reterr, -EEXIST, "job %s was already claimed in pool %s", job_id, name);
    placed_in = berth_pool_chain_placement(reg->chain, placement_hash);
    if (!placed_in || !streq(placed_in, cur->pool_hash))
        return berth_error_set(reterr, -EPERM, "placement %s was not recorded in pool %s",
                               placement_hash ? placement_hash : "(none)", name);
    if ((r = berth_claim_create(worker, cur->pool_hash, worker_name, job_id, placement_hash, now_ns, &details,
                                reterr)) < 0)
        return r;
    if ((r = begin(reg, reterr)) < 0) {
        json_decref(details);
        return r;
    }
    if (ret_details)
        *ret_details = json_incref(details);
    r = record_commit(reg, key, now_ns, "pool.claim_receipt", actor, details, NULL, reterr);
    if (r < 0 && ret_details) {
        json_decref(*ret_details);
        *ret_details = NULL;
    }
    return r;
}

static bool warm_args_valid(const char *pool, const char *slot_id, const char *slot_hash, const char *dispatch_hash)
{
    return pool && berth_worker_name_valid(slot_id) && berth_is_hex(slot_hash, BERTH_HASH_HEX_LEN) &&
           berth_is_hex(dispatch_hash, BERTH_HASH_HEX_LEN);
}

static int warm_record(struct berth_registry *reg, const struct berth_audit_key *key, const char *type, json_t *details,
                       const char *actor, int64_t now_ns, struct berth_error *reterr)
{
    int r;

    if (!details)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = begin(reg, reterr)) < 0) {
        json_decref(details);
        return r;
    }
    return record_commit(reg, key, now_ns, type, actor, details, NULL, reterr);
}

int berth_registry_warm_attach(struct berth_registry *reg, const struct berth_audit_key *key, const char *pool,
                               const char *slot_id, const char *slot_hash, const char *dispatch_hash,
                               const char *run_id, const char *actor, int64_t now_ns, struct berth_error *reterr)
{
    int r;

    if (!reg || !key || !run_id || !warm_args_valid(pool, slot_id, slot_hash, dispatch_hash))
        return berth_error_set(reterr, -EINVAL,
                               "a pool, a slot id, a run id and two hex effective_manifest_hash "
                               "values are required");
    if (streq(slot_hash, dispatch_hash)) {
        r = warm_record(reg, key, "pool.warm_attached",
                        json_pack("{s:s, s:s, s:s, s:s, s:s}", "pool", pool, "slot_id", slot_id, "slot_hash", slot_hash,
                                  "dispatch_hash", dispatch_hash, "run_id", run_id),
                        actor, now_ns, reterr);
        return r < 0 ? r : 1;
    }
    r = warm_record(reg, key, "pool.warm_quarantine",
                    json_pack("{s:s, s:s, s:s, s:s, s:s}", "pool", pool, "slot_id", slot_id, "slot_hash", slot_hash,
                              "dispatch_hash", dispatch_hash, "reason", "manifest"),
                    actor, now_ns, reterr);
    return r < 0 ? r : 0;
}

int berth_registry_warm_quarantine(struct berth_registry *reg, const struct berth_audit_key *key, const char *pool,
                                   const char *slot_id, const char *slot_hash, const char *dispatch_hash,
                                   const char *reason, const char *actor, int64_t now_ns, struct berth_error *reterr)
{
    if (!reg || !key || !reason || !warm_args_valid(pool, slot_id, slot_hash, dispatch_hash) ||
        (!streq(reason, "qualification") && !streq(reason, "runtime") &&
         !(streq(reason, "manifest") && !streq(slot_hash, dispatch_hash))))
        return berth_error_set(reterr, -EINVAL, "a pool, a slot id, two hex hashes and a reason are required");
    return warm_record(reg, key, "pool.warm_quarantine",
                       json_pack("{s:s, s:s, s:s, s:s, s:s}", "pool", pool, "slot_id", slot_id, "slot_hash", slot_hash,
                                 "dispatch_hash", dispatch_hash, "reason", reason),
                       actor, now_ns, reterr);
}

int berth_registry_verify(struct berth_journal *j, const struct berth_audit_key *key,
                          const struct berth_audit_anchor *anchor, struct berth_verify_report *report,
                          struct berth_error *reterr)
{
    return berth_registry_verify_keyed(j, key, anchor, NULL, report, reterr);
}

int berth_registry_verify_keyed(struct berth_journal *j, const struct berth_audit_key *key,
                                const struct berth_audit_anchor *anchor, const uint8_t *broker_key,
                                struct berth_verify_report *report, struct berth_error *reterr)
{
    _cleanup_chain_ struct berth_pool_chain *chain = NULL;
    struct berth_buf export = BERTH_BUF_INIT(0);
    struct berth_verify_report rep = {0};
    sqlite3_stmt *st = NULL;
    size_t i;
    int r, rc;

    if (!j || !key)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_pool_chain_new(&chain) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (broker_key)
        berth_pool_chain_set_broker_key(chain, broker_key);

    r = berth_audit_export_checked(j, &export, reterr);
    if (r == 0) {
        struct berth_audit_summary sum;
        r = berth_audit_verify(export.data, export.len, key, anchor, berth_pool_chain_check, chain, &sum, reterr);
        rep.events = sum.count;
        rep.bad_seq = sum.bad_seq;
        memcpy(rep.head_mac, sum.head_mac, sizeof(rep.head_mac));
    }
    berth_buf_free(&export);
    if (r < 0)
        goto out;

    /* Every stored body hashes to its key ... */
    if (berth_journal_prepare(j, "SELECT pool_hash FROM pool_bodies ORDER BY pool_hash", "preparing a statement", &st,
                              NULL) < 0) {
        r = berth_journal_error(j, "reading pool manifests", reterr);
        goto out;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        _cleanup_pool_ struct berth_pool *p = NULL;
        const char *h = (const char *)sqlite3_column_text(st, 0);
        r = load_body(j, h ? h : "", &p, reterr);
        if (r < 0)
            break;
        rep.bodies++;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "reading pool manifests", reterr);
    berth_journal_finish(j, st);
    if (r < 0)
        goto out;

    /* ... and every active pool's body is stored. */
    rep.pools = berth_pool_chain_count(chain);
    for (i = 0; i < rep.pools; i++) {
        _cleanup_pool_ struct berth_pool *p = NULL;
        r = load_body(j, berth_pool_chain_at(chain, i)->pool_hash, &p, reterr);
        if (r < 0)
            goto out;
    }
    berth_pool_chain_stats(chain, NULL, &rep.placements, &rep.enrolments, &rep.claims);
    berth_pool_chain_broker_claims(chain, &rep.broker_claims, &rep.broker_unchecked);
out:
    if (report)
        *report = rep;
    return r;
}
