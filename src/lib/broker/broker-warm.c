/* SPDX-License-Identifier: MIT */
/*
 * broker-warm.c -- warm slots (docs/warm-slots.md): sandboxes a runtime
 * created ahead of time for one shape of job (struct berth_warm_target),
 * each handed to exactly one job of that shape.
 *
 * - Start-up: every slot a backend holds is from an earlier run (berthd
 *   keeps no slot across a restart) and is destroyed before admission
 *   opens (broker_warm_sweep()).
 * - Refill (the refill thread, woken by each dispatch pass through
 *   broker_warm_pass()): lost and retired slots are discarded; then, when
 *   no accepted job waits and the bounds leave room (warm.max_slots,
 *   warm.max_memory_bytes, the pool's max_concurrency counting its jobs
 *   and slots), one slot is provisioned per pass; while a pool's jobs
 *   and slots pass its max_concurrency, its newest slots yield (are
 *   retired), since a job is never held back by a slot.  A provisioning is a
 *   runtime's whole create (about 200 ms on runsc): on the worker it would
 *   hold back every result recorded behind it, the warm job's first.
 * - Claim (broker_warm_claim(), the start path): a job of a target's shape
 *   takes a ready slot.  The attach is recorded in the pool chain first
 *   (pool.warm_attached); a slot whose effective_manifest_hash, or whose
 *   qualification, differs from the job's, or that the runtime refuses
 *   (its pin changed), is quarantined (pool.warm_quarantine), destroyed,
 *   and the job starts cold.
 *
 * The slot list is under warm.lock, which is never held across a plugin
 * call or together with the broker lock: a slot being claimed or destroyed
 * is marked (claiming) and left alone by everyone else.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "encoding.h"
#include "jsonobj.h"
#include "macro.h"
#include "override.h"
#include "pool.h"

#define NS_PER_S INT64_C(1000000000)
/* A target keeps max_ready slots this long after a job went cold for want of one. */
#define WARM_DEMAND_NS (60 * NS_PER_S)
/* The refill lists the backends' slots and re-derives the targets'
 * manifests at most this often (a lost or retired slot waits this long). */
#define WARM_RECONCILE_NS (NS_PER_S / 4)

int broker_warm_init(struct berth_broker *b)
{
    struct broker_warm *w = &b->warm;

    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    pthread_rwlock_init(&w->list_lock, NULL);
    berth_backoff_init(&w->backoff, NS_PER_S / 4, 30 * NS_PER_S);
    w->last_miss = calloc(b->p.n_warm ? b->p.n_warm : 1, sizeof(*w->last_miss));
    w->tally = calloc(b->p.n_warm ? b->p.n_warm : 1, sizeof(*w->tally));
    w->provisioning = -1;
    atomic_init(&w->changed, false);
    atomic_init(&w->swept, false); /* also without targets: slots an earlier configuration left are destroyed */
    return w->last_miss && w->tally ? 0 : -ENOMEM;
}

static int discard(struct berth_broker *b, const struct berth_broker_backend *be, const char *slot_id,
                   const char *why);

static void slot_clear(struct broker_warm_slot *s)
{
    free(s->qualification);
    free(s->rootfs);
    memset(s, 0, sizeof(*s));
}

void broker_warm_free(struct berth_broker *b)
{
    struct broker_warm *w = &b->warm;
    size_t i;

    if (!w->last_miss)
        return; /* never initialized */
    if (w->threaded) {
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL); /* after the provisioning under way, if any */
        w->threaded = false;
    }
    json_decref(w->pend_limits);
    json_decref(w->pend_in_use);
    /* A clean stop destroys the slots it made (no start thread runs now);
     * after a crash the next start-up does (broker_warm_sweep()). */
    for (i = 0; i < w->n; i++) {
        if (!w->v[i].claiming)
            (void)discard(b, &b->backends[w->v[i].backend], w->v[i].slot_id, "berthd stops");
        slot_clear(&w->v[i]);
    }
    free(w->v);
    free(w->last_miss);
    free(w->tally);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    pthread_rwlock_destroy(&w->list_lock);
    memset(w, 0, sizeof(*w));
}

/* Index of @slot_id in the list (warm.lock held), or -1. */
static ssize_t slot_index(const struct broker_warm *w, const char *slot_id)
{
    size_t i;

    for (i = 0; i < w->n; i++)
        if (streq(w->v[i].slot_id, slot_id))
            return (ssize_t)i;
    return -1;
}

/* Drop @slot_id from the list and release its root (warm.lock not held). */
static void slot_drop(struct berth_broker *b, const char *slot_id)
{
    struct broker_warm *w = &b->warm;
    ssize_t i;

    pthread_mutex_lock(&w->lock);
    i = slot_index(w, slot_id);
    if (i >= 0) {
        slot_clear(&w->v[i]);
        w->v[i] = w->v[w->n - 1];
        w->n--;
    }
    pthread_mutex_unlock(&w->lock);
    if (b->roots)
        berth_rootcache_release(b->roots, slot_id);
}

/* Destroy slot @slot_id of backend @be; 0 when it is gone (also: it was
 * already), else the plugin's error, logged. */
static int discard(struct berth_broker *b, const struct berth_broker_backend *be, const char *slot_id,
                   const char *why)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r = be->ops->discard(be->state, slot_id, &err);

    if (r == -ENOENT)
        r = 0;
    if (r < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s: warm slot %s (%s) cannot be destroyed yet: %s",
                   be->name, slot_id, why, err.message);
    else
        berth_logf(b->p.logger, BERTH_LOG_INFO, "backend %s: warm slot %s destroyed (%s)", be->name, slot_id, why);
    return r;
}

static bool warm_capable(const struct berth_broker_backend *be)
{
    return be->ops && be->ops->provision && be->ops->claim && be->ops->discard && be->ops->slots;
}

/* The slots() listing of @be (a new reference), or NULL (logged). */
static json_t *listing(struct berth_broker *b, const struct berth_broker_backend *be)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    json_t *doc, *slots;

    if (be->ops->slots(be->state, &text, &len, &err) < 0) {
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s: its warm slots cannot be listed: %s", be->name,
                   err.message);
        return NULL;
    }
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    slots = json_incref(json_object_get(doc, "slots"));
    json_decref(doc);
    if (!json_is_array(slots)) {
        json_decref(slots);
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s: its warm slot listing is malformed", be->name);
        return NULL;
    }
    return slots;
}

bool broker_warm_sweep(struct berth_broker *b)
{
    bool clean = true;
    size_t i, k;

    if (atomic_load(&b->warm.swept))
        return true;
    for (i = 0; i < b->p.n_backends; i++) {
        const struct berth_broker_backend *be = &b->backends[i];
        _cleanup_json_ json_t *slots = NULL;

        if (!warm_capable(be))
            continue;
        slots = listing(b, be);
        if (!slots) {
            /* Without warm targets a listing that fails does not hold admission back. */
            if (b->p.n_warm && b->p.warm_max_slots)
                clean = false;
            continue;
        }
        for (k = 0; k < json_array_size(slots); k++) {
            const char *id = json_string_value(json_object_get(json_array_get(slots, k), "slot_id"));
            if (id && discard(b, be, id, "left by an earlier run") < 0 && b->p.n_warm && b->p.warm_max_slots)
                clean = false;
        }
    }
    atomic_store(&b->warm.swept, clean);
    return clean;
}

/* The effective manifest of target @t now, its hash and the backend
 * placement chooses for it (lock not held; takes it). */
static int target_shape(struct berth_broker *b, const struct berth_warm_target *t, json_t **ret_effective,
                        char hash[BERTH_HASH_HEX_LEN + 1], size_t *ret_backend, struct berth_error *reterr)
{
    _cleanup_pool_ struct berth_pool *pool = NULL;
    struct berth_effective *e = NULL;
    struct berth_refusal refusal = {0};
    _cleanup_json_ json_t *receipt = NULL, *inputs = NULL, *empty = json_object();
    char placement_hash[BERTH_HASH_HEX_LEN + 1];
    const char *chosen;
    int64_t now = 0;
    size_t i;
    int r;

    if (!empty)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    pthread_mutex_lock(&b->lock);
    r = berth_registry_get(b->reg, t->pool, &pool, reterr);
    if (r == 0)
        r = berth_pool_merge(pool, t->overrides ? t->overrides : empty,
                             berth_pool_chain_credentials(berth_registry_chain(b->reg)), &e, &refusal, reterr);
    if (r == 0)
        r = berth_now_ns(CLOCK_REALTIME, &now, reterr);
    if (r == 0)
        r = berth_place(pool, e, b->offers, now, &receipt, placement_hash, &refusal, &inputs, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == 0) {
        memcpy(hash, e->effective_hash, BERTH_HASH_HEX_LEN + 1);
        *ret_effective = json_incref(e->json);
    }
    berth_effective_free(e);
    if (r < 0)
        return r;
    chosen = json_string_value(json_object_get(receipt, "chosen_backend"));
    for (i = 0; chosen && i < b->p.n_backends; i++)
        if (streq(b->backends[i].name, chosen)) {
            *ret_backend = i;
            return 0;
        }
    json_decref(*ret_effective);
    *ret_effective = NULL;
    return berth_error_set(reterr, -ENOENT, "placement chose backend %s, which is not configured",
                           chosen ? chosen : "(none)");
}

/* The qualification id the capabilities of backend @i report, or NULL (lock held). */
static const char *qualification_of(const struct berth_broker *b, size_t i)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(b->capabilities, b->backends[i].name), "qualification"), "id"));
}

/* Provision one slot of target @ti (worker thread, no lock held). */
static int provision(struct berth_broker *b, size_t ti, struct berth_error *reterr)
{
    const struct berth_warm_target *t = &b->p.warm[ti];
    struct broker_warm *w = &b->warm;
    _cleanup_json_ json_t *effective = NULL, *slot = NULL;
    _cleanup_free_ char *rootfs = NULL, *text = NULL, *qual = NULL;
    struct broker_warm_slot *s;
    char hash[BERTH_HASH_HEX_LEN + 1], id[34];
    uint8_t raw[16];
    int64_t now = 0, t0 = 0, t1 = 0;
    size_t be_i = 0, len = 0;
    int r;

    if ((r = target_shape(b, t, &effective, hash, &be_i, reterr)) < 0)
        return r;
    if (!warm_capable(&b->backends[be_i]))
        return berth_error_set(reterr, -EOPNOTSUPP, "backend %s has no warm slots (runtime ABI 1.2)",
                               b->backends[be_i].name);
    if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
        return berth_error_set(reterr, -EIO, "getrandom failed");
    id[0] = 's';
    berth_hex_encode(raw, sizeof(raw), id + 1);
    if ((r = broker_stage_slot(b, id, t->image, effective, &rootfs, reterr)) < 0)
        return r;
    pthread_mutex_lock(&b->lock);
    qual = qualification_of(b, be_i) ? strdup(qualification_of(b, be_i)) : NULL;
    pthread_mutex_unlock(&b->lock);
    (void)berth_now_ns(CLOCK_REALTIME, &now, NULL);
    slot = json_pack("{s:i, s:s, s:s, s:s, s:O, s:O, s:s, s:o}", "schema_version", 1, "slot_id", id, "pool", t->pool,
                     "image", t->image, "effective", effective, "limits", t->limits, "rootfs", rootfs, "not_after",
                     berth_json_ns(now + b->p.warm_max_age_ns));
    if (!slot || berth_json_serialize(slot, 0, &text, &len, reterr) < 0) {
        berth_rootcache_release(b->roots, id);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    (void)berth_now_ns(CLOCK_MONOTONIC, &t0, NULL);
    r = b->backends[be_i].ops->provision(b->backends[be_i].state, text, len, reterr);
    (void)berth_now_ns(CLOCK_MONOTONIC, &t1, NULL);
    if (r < 0) {
        berth_rootcache_release(b->roots, id);
        return r;
    }
    pthread_mutex_lock(&w->lock);
    if (w->n == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 8;
        struct broker_warm_slot *v = realloc(w->v, cap * sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&w->lock);
            (void)discard(b, &b->backends[be_i], id, "out of memory");
            berth_rootcache_release(b->roots, id);
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        }
        w->v = v;
        w->cap = cap;
    }
    s = &w->v[w->n++];
    memset(s, 0, sizeof(*s));
    memcpy(s->slot_id, id, sizeof(id));
    memcpy(s->hash, hash, sizeof(hash));
    s->target = ti;
    s->backend = be_i;
    s->qualification = TAKE_PTR(qual);
    s->rootfs = TAKE_PTR(rootfs);
    s->provision_ns = t1 - t0;
    s->not_after = now + b->p.warm_max_age_ns;
    w->provisioned++;
    w->tally[ti].provisioned++;
    w->provision_ns_last = t1 - t0;
    if (w->refill_from) {
        w->refill_ns_last = t1 - w->refill_from;
        w->refill_from = 0;
    }
    pthread_mutex_unlock(&w->lock);
    berth_logf(b->p.logger, BERTH_LOG_INFO, "pool %s: warm slot %s ready on backend %s in %" PRId64 " ms", t->pool, id,
               b->backends[be_i].name, (t1 - t0) / 1000000);
    return 0;
}

/* Discard this run's slots that the backends report lost (dead, retired)
 * and any slot a backend holds that is not in the list. */
static void reconcile_slots(struct berth_broker *b)
{
    struct broker_warm *w = &b->warm;
    size_t i, k;

    for (i = 0; i < b->p.n_backends; i++) {
        const struct berth_broker_backend *be = &b->backends[i];
        _cleanup_json_ json_t *slots = NULL;

        if (!warm_capable(be))
            continue;
        pthread_rwlock_wrlock(&w->list_lock);
        slots = listing(b, be);
        pthread_rwlock_unlock(&w->list_lock);
        if (!slots)
            continue;
        for (k = 0; k < json_array_size(slots); k++) {
            const json_t *e = json_array_get(slots, k);
            const char *id = json_string_value(json_object_get(e, "slot_id"));
            const char *state = json_string_value(json_object_get(e, "state"));
            const char *reason = json_string_value(json_object_get(e, "reason"));
            ssize_t at;
            bool ours, busy = false, doomed = false;

            if (!id || !state)
                continue;
            pthread_mutex_lock(&w->lock);
            at = slot_index(w, id);
            ours = at >= 0;
            if (ours) {
                busy = w->v[at].claiming;
                doomed = streq(state, "lost") || w->v[at].not_after == 0;
                if (!busy && doomed)
                    w->v[at].claiming = true; /* ours to destroy now */
            }
            pthread_mutex_unlock(&w->lock);
            /* Not in the list: left by a claim whose outcome was uncertain, or a failed provisioning. */
            if (busy || (ours && !doomed))
                continue;
            if (discard(b, be, id, reason ? reason : "lost") == 0) {
                pthread_mutex_lock(&w->lock);
                if (ours)
                    w->lost++;
                w->discarded++;
                pthread_mutex_unlock(&w->lock);
                if (ours)
                    slot_drop(b, id);
            } else if (ours) {
                pthread_mutex_lock(&w->lock);
                if ((at = slot_index(w, id)) >= 0)
                    w->v[at].claiming = false;
                pthread_mutex_unlock(&w->lock);
            }
        }
    }
}

/* Retire the slots of an older manifest than their target's now: quarantined
 * in the chain, never handed out, destroyed by the next reconcile_slots(). */
static void retire_stale(struct berth_broker *b, const char current[][BERTH_HASH_HEX_LEN + 1])
{
    struct broker_warm *w = &b->warm;
    struct berth_error err = BERTH_ERROR_INIT;
    struct {
        char slot_id[34], hash[BERTH_HASH_HEX_LEN + 1];
        size_t target;
    } stale[BERTH_WARM_SLOTS_MAX];
    size_t n_stale = 0, i;

    pthread_mutex_lock(&w->lock);
    for (i = 0; i < w->n && n_stale < BERTH_WARM_SLOTS_MAX; i++) {
        struct broker_warm_slot *c = &w->v[i];
        if (c->claiming || c->not_after == 0 || c->target >= BERTH_WARM_TARGETS_MAX || !current[c->target][0] ||
            streq(c->hash, current[c->target]))
            continue;
        c->not_after = 0;
        memcpy(stale[n_stale].slot_id, c->slot_id, sizeof(c->slot_id));
        memcpy(stale[n_stale].hash, c->hash, sizeof(c->hash));
        stale[n_stale].target = c->target;
        n_stale++;
        w->quarantined++;
        w->tally[c->target].quarantined++;
    }
    pthread_mutex_unlock(&w->lock);
    for (i = 0; i < n_stale; i++) {
        int64_t now = 0;
        int rr;
        pthread_mutex_lock(&b->lock);
        rr = berth_now_ns(CLOCK_REALTIME, &now, &err);
        if (rr == 0)
            rr = berth_registry_warm_quarantine(b->reg, b->p.audit_key, b->p.warm[stale[i].target].pool,
                                                stale[i].slot_id, stale[i].hash, current[stale[i].target],
                                                "manifest", "berthd", now, &err);
        pthread_mutex_unlock(&b->lock);
        if (rr < 0)
            berth_logf(b->p.logger, BERTH_LOG_ERR, "warm slot %s: its quarantine is not recorded: %s",
                       stale[i].slot_id, err.message);
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "pool %s: warm slot %s quarantined (manifest): the pool changed",
                   b->p.warm[stale[i].target].pool, stale[i].slot_id);
    }
}

/* Whether a start is under way: its job may be about to claim a slot that
 * the counts see twice (as the job's sandbox and as a ready slot). */
static bool starts_busy(struct berth_broker *b)
{
    bool busy;

    if (b->p.start_concurrency == 0)
        return false; /* starts run on the dispatching thread, which is not in one now */
    pthread_mutex_lock(&b->starts.lock);
    busy = b->starts.n_busy > 0;
    pthread_mutex_unlock(&b->starts.lock);
    return busy;
}

/* Slots count against their pool's max_concurrency, and they yield to
 * jobs: while a pool's open jobs (@in_use) and its ready slots pass its
 * limit (@limits), the surplus slots are retired (destroyed by the next
 * listing, which this asks for; no chain event: nothing differed).  A job
 * never waits for a slot to go: dispatch counts jobs only.  Returns
 * whether it retired any. */
static bool yield_to_jobs(struct berth_broker *b, const json_t *limits, const json_t *in_use)
{
    struct broker_warm *w = &b->warm;
    char retired[BERTH_WARM_SLOTS_MAX][34];
    size_t n_retired = 0, ti, tj, i;

    if (starts_busy(b))
        return false; /* the next pass, when the start has claimed or gone cold */
    pthread_mutex_lock(&w->lock);
    for (ti = 0; ti < b->p.n_warm; ti++) {
        const char *pool = b->p.warm[ti].pool;
        json_int_t limit = json_integer_value(json_object_get(limits, pool));
        int64_t excess = -limit;
        bool seen = false;

        for (tj = 0; tj < ti && !seen; tj++)
            seen = streq(b->p.warm[tj].pool, pool);
        if (limit <= 0 || seen)
            continue; /* unlimited, or this pool was done with an earlier target */
        excess += json_integer_value(json_object_get(in_use, pool));
        for (i = 0; i < w->n; i++)
            if (!w->v[i].claiming && w->v[i].not_after > 0 && streq(b->p.warm[w->v[i].target].pool, pool))
                excess++;
        /* The newest slots first: the list's end. */
        for (i = w->n; excess > 0 && i-- > 0;) {
            struct broker_warm_slot *c = &w->v[i];
            if (c->claiming || c->not_after == 0 || !streq(b->p.warm[c->target].pool, pool))
                continue;
            c->not_after = 0;
            excess--;
            if (n_retired < BERTH_WARM_SLOTS_MAX)
                memcpy(retired[n_retired++], c->slot_id, sizeof(c->slot_id));
        }
    }
    pthread_mutex_unlock(&w->lock);
    for (i = 0; i < n_retired; i++)
        berth_logf(b->p.logger, BERTH_LOG_INFO, "warm slot %s yields to the jobs of its pool (max_concurrency)",
                   retired[i]);
    if (n_retired)
        atomic_store(&w->changed, true);
    return n_retired > 0;
}

/* One refill pass (see broker_warm_pass()); true when it made a slot, or
 * retired one that the next pass destroys. */
static bool refill(struct berth_broker *b, size_t waiting, const json_t *limits, const json_t *in_use)
{
    struct broker_warm *w = &b->warm;
    struct berth_error err = BERTH_ERROR_INIT;
    char (*current)[BERTH_HASH_HEX_LEN + 1] = w->current; /* written by this thread only */
    int64_t mono = 0, memory = 0;
    size_t ti, i, total;
    ssize_t want = -1;
    int r;

    if (!b->p.n_warm || b->p.warm_max_slots == 0 || !atomic_load(&w->swept) || atomic_load(&b->stopping))
        return false;
    (void)berth_now_ns(CLOCK_MONOTONIC, &mono, NULL);
    if (!w->reconciled || mono - w->reconciled >= WARM_RECONCILE_NS || atomic_exchange(&w->changed, false)) {
        w->reconciled = mono;
        reconcile_slots(b);
        /* Each target's manifest now: a slot of an older one (the pool was
         * updated) does not count as ready and is retired. */
        for (ti = 0; ti < b->p.n_warm && ti < BERTH_WARM_TARGETS_MAX; ti++) {
            _cleanup_json_ json_t *effective = NULL;
            size_t be_i;
            if (target_shape(b, &b->p.warm[ti], &effective, current[ti], &be_i, &err) < 0)
                current[ti][0] = '\0';
        }
        retire_stale(b, (const char(*)[BERTH_HASH_HEX_LEN + 1])current);
    }
    if (yield_to_jobs(b, limits, in_use))
        return true;
    if (waiting > 0 || broker_storage_degraded(b))
        return false; /* queued jobs first: a slot never takes a job's place */
    if (!berth_backoff_due(&w->backoff, mono))
        return false;
    pthread_mutex_lock(&w->lock);
    total = w->n;
    for (i = 0; i < w->n; i++)
        memory += b->p.warm[w->v[i].target].memory_bytes;
    for (ti = 0; want < 0 && ti < b->p.n_warm; ti++) {
        const struct berth_warm_target *t = &b->p.warm[ti];
        int64_t level = w->last_miss[ti] && mono - w->last_miss[ti] < WARM_DEMAND_NS ? t->max_ready : t->min_ready;
        int64_t ready = 0, pool_slots = 0;
        json_int_t limit = json_integer_value(json_object_get(limits, t->pool));

        for (i = 0; i < w->n; i++) {
            if (w->v[i].target == ti && streq(w->v[i].hash, current[ti]))
                ready++;
            if (streq(b->p.warm[w->v[i].target].pool, t->pool))
                pool_slots++;
        }
        if (ready >= level || (int64_t)total >= b->p.warm_max_slots ||
            memory + t->memory_bytes > b->p.warm_max_memory_bytes)
            continue;
        if (limit > 0 && json_integer_value(json_object_get(in_use, t->pool)) + pool_slots >= limit)
            continue; /* the pool's max_concurrency counts its slots */
        want = (ssize_t)ti;
    }
    if (want >= 0)
        w->provisioning = want;
    pthread_mutex_unlock(&w->lock);
    if (want < 0)
        return false;
    r = provision(b, (size_t)want, &err);
    pthread_mutex_lock(&w->lock);
    w->provisioning = -1;
    if (r < 0) {
        w->provision_failed++;
        if (berth_backoff_failed(&w->backoff, mono))
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "pool %s: a warm slot cannot be provisioned: %s",
                       b->p.warm[want].pool, err.message);
    } else if (berth_backoff_succeeded(&w->backoff)) {
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "pool %s: warm slots are provisioned again", b->p.warm[want].pool);
    }
    pthread_mutex_unlock(&w->lock);
    return r == 0;
}

static void *refill_main(void *userdata)
{
    struct berth_broker *b = userdata;
    struct broker_warm *w = &b->warm;

    for (;;) {
        json_t *limits, *in_use;
        size_t waiting;
        bool made;

        pthread_mutex_lock(&w->lock);
        while (!w->stop && !w->pending)
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->stop) {
            pthread_mutex_unlock(&w->lock);
            return NULL;
        }
        w->pending = false;
        waiting = w->pend_waiting;
        limits = TAKE_PTR(w->pend_limits);
        in_use = TAKE_PTR(w->pend_in_use);
        pthread_mutex_unlock(&w->lock);
        made = refill(b, waiting, limits, in_use);
        json_decref(limits);
        json_decref(in_use);
        /* The counts are older than the slot: the worker's next pass hands
         * fresh ones (and dispatches what arrived meanwhile first). */
        if (made && b->p.wake)
            b->p.wake(b->p.userdata);
    }
}

int broker_warm_start(struct berth_broker *b)
{
    struct broker_warm *w = &b->warm;
    int r;

    if (!b->p.n_warm || b->p.warm_max_slots == 0 || b->p.start_concurrency == 0)
        return 0;
    r = pthread_create(&w->thread, NULL, refill_main, b);
    if (r != 0)
        return -r;
    w->threaded = true;
    return 0;
}

void broker_warm_pass(struct berth_broker *b, size_t waiting, const json_t *limits, const json_t *in_use)
{
    struct broker_warm *w = &b->warm;
    json_t *l, *u;

    if (!b->p.n_warm || b->p.warm_max_slots == 0)
        return;
    if (!w->threaded) {
        (void)refill(b, waiting, limits, in_use);
        return;
    }
    l = json_deep_copy(limits);
    u = json_deep_copy(in_use);
    if (!l || !u) {
        json_decref(l);
        json_decref(u);
        return; /* out of memory: no refill this pass */
    }
    pthread_mutex_lock(&w->lock);
    json_decref(w->pend_limits);
    json_decref(w->pend_in_use);
    w->pend_limits = l;
    w->pend_in_use = u;
    w->pend_waiting = waiting;
    w->pending = true;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/* The target @rec's job has the shape of (its pool, image and limits; no
 * inputs or outputs), or -1. */
static ssize_t target_of(const struct berth_broker *b, const struct berth_job_record *rec, const json_t *job)
{
    const char *image = json_string_value(json_object_get(job, "image"));
    size_t i;

    if (json_array_size(json_object_get(job, "inputs")) > 0 || json_array_size(json_object_get(job, "outputs")) > 0 ||
        !image)
        return -1;
    for (i = 0; i < b->p.n_warm; i++) {
        const struct berth_warm_target *t = &b->p.warm[i];
        const json_t *ov = json_object_get(job, "overrides");
        bool same_overrides = t->overrides ? (ov ? json_equal(t->overrides, ov) : json_object_size(t->overrides) == 0)
                                           : (!ov || json_object_size(ov) == 0);
        if (streq(t->pool, rec->pool) && streq(t->image, image) &&
            json_equal(t->limits, json_object_get(job, "limits")) && same_overrides)
            return (ssize_t)i;
    }
    return -1;
}

/* Quarantine slot @s (a copy; marked claiming) for @reason (NULL: its
 * manifest, recorded by berth_registry_warm_attach() already), then destroy
 * it.  A quarantine that cannot be recorded is logged: the slot is
 * destroyed all the same and the job starts cold. */
static void quarantine(struct berth_broker *b, const struct broker_warm_slot *s, const struct berth_job_record *rec,
                       const char *dispatch_hash, const char *reason)
{
    const struct berth_broker_backend *be = &b->backends[s->backend];
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t now = 0;
    ssize_t at;
    int r = 0;

    if (reason) {
        pthread_mutex_lock(&b->lock);
        r = berth_now_ns(CLOCK_REALTIME, &now, &err);
        if (r == 0)
            r = berth_registry_warm_quarantine(b->reg, b->p.audit_key, rec->pool, s->slot_id, s->hash, dispatch_hash,
                                               reason, "berthd", now, &err);
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
            berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: the quarantine of warm slot %s is not recorded: %s",
                       rec->job_id, rec->run_id, s->slot_id, err.message);
    }
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s: warm slot %s quarantined (%s): the job starts cold",
               rec->job_id, rec->run_id, s->slot_id, reason ? reason : "manifest");
    pthread_mutex_lock(&b->warm.lock);
    b->warm.quarantined++;
    b->warm.tally[s->target].quarantined++;
    /* Never handed out again; reconcile_slots() destroys it if this discard cannot. */
    if ((at = slot_index(&b->warm, s->slot_id)) >= 0)
        b->warm.v[at].not_after = 0;
    pthread_mutex_unlock(&b->warm.lock);
    if (discard(b, be, s->slot_id, "quarantined") == 0) {
        slot_drop(b, s->slot_id);
        return;
    }
    pthread_mutex_lock(&b->warm.lock);
    if ((at = slot_index(&b->warm, s->slot_id)) >= 0)
        b->warm.v[at].claiming = false;
    pthread_mutex_unlock(&b->warm.lock);
}

int broker_warm_claim(struct berth_broker *b, const struct berth_job_record *rec, const json_t *job, const char *doc,
                      size_t len, json_t **ret_warm, struct berth_error *reterr)
{
    struct broker_warm *w = &b->warm;
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_warm_slot s = {0};
    _cleanup_json_ json_t *effective = NULL, *receipt = NULL;
    char dispatch_hash[BERTH_HASH_HEX_LEN + 1];
    const char *qual;
    ssize_t ti = target_of(b, rec, job), pick = -1;
    const struct berth_broker_backend *be;
    int64_t now = 0, mono = 0;
    size_t i;
    int r;

    *ret_warm = NULL;
    if (ti < 0 || b->p.warm_max_slots == 0)
        return 0;
    effective = json_loads(rec->effective, JSON_REJECT_DUPLICATES, NULL);
    receipt = json_loads(rec->receipt, JSON_REJECT_DUPLICATES, NULL);
    if (!effective || !receipt || berth_hash_hex_json(effective, dispatch_hash, &err) < 0)
        return 0; /* the cold start judges the damaged record */
    /* A slot of the job's manifest first; else one of an older manifest,
     * which the attach check quarantines. */
    pthread_mutex_lock(&w->lock);
    for (i = 0; i < w->n; i++) {
        struct broker_warm_slot *c = &w->v[i];
        if (c->target == (size_t)ti && !c->claiming && c->not_after > 0 &&
            streq(b->backends[c->backend].name, rec->backend) && (pick < 0 || streq(c->hash, dispatch_hash))) {
            pick = (ssize_t)i;
            if (streq(c->hash, dispatch_hash))
                break;
        }
    }
    if (pick < 0) {
        (void)berth_now_ns(CLOCK_MONOTONIC, &mono, NULL);
        w->misses++;
        w->tally[ti].misses++;
        w->last_miss[ti] = mono;
    } else {
        w->v[pick].claiming = true;
        s = w->v[pick]; /* the strings stay the list's: it is marked, nobody frees them */
        if (!w->refill_from)
            (void)berth_now_ns(CLOCK_MONOTONIC, &w->refill_from, NULL);
    }
    pthread_mutex_unlock(&w->lock);
    if (pick < 0)
        return 0;
    be = &b->backends[s.backend];
    /* The receipt's qualification must be the one the slot was made under. */
    qual = json_string_value(
        json_object_get(json_object_get(json_object_get(receipt, "receipt"), "runtime"), "qualification"));
    if (streq(s.hash, dispatch_hash) && !streq(qual ? qual : "", s.qualification ? s.qualification : "")) {
        quarantine(b, &s, rec, dispatch_hash, "qualification");
        return 0;
    }
    pthread_mutex_lock(&b->lock);
    r = berth_now_ns(CLOCK_REALTIME, &now, reterr);
    if (r == 0)
        r = berth_registry_warm_attach(b->reg, b->p.audit_key, rec->pool, s.slot_id, s.hash, dispatch_hash,
                                       rec->run_id, "berthd", now, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == 0) {
        quarantine(b, &s, rec, dispatch_hash, NULL);
        return 0;
    }
    if (r < 0) {
        pthread_mutex_lock(&w->lock);
        ssize_t at = slot_index(w, s.slot_id);
        if (at >= 0)
            w->v[at].claiming = false;
        pthread_mutex_unlock(&w->lock);
        return 0; /* the attach is not recorded: the slot stays, the job goes cold */
    }
    /* Not while the worker lists the slots: runtime-oci's slots() locks
     * each slot shared, and a claim that meets that lock is refused. */
    pthread_rwlock_rdlock(&w->list_lock);
    r = be->ops->claim(be->state, s.slot_id, doc, len, &err);
    pthread_rwlock_unlock(&w->list_lock);
    /* -ESTALE: the runtime says the slot does not fit; -EPERM: the runtime
     * no longer passes its pin, so the slot's sandbox is of a runtime that
     * is not the pinned one any more.  Either way it is destroyed, and the
     * cold start decides (and refuses the job too after -EPERM). */
    if (r == -ESTALE || r == -EPERM) {
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s: backend %s refused warm slot %s: %s", rec->job_id,
                   rec->run_id, be->name, s.slot_id, err.message);
        quarantine(b, &s, rec, dispatch_hash, "runtime");
        return 0;
    }
    if (r == 1 || r == -EBADMSG || r == -EKEYREJECTED || r == -ETIME) {
        /* The slot is untouched: it stays for another job. */
        pthread_mutex_lock(&w->lock);
        ssize_t at = slot_index(w, s.slot_id);
        if (at >= 0)
            w->v[at].claiming = false;
        pthread_mutex_unlock(&w->lock);
        if (r == 1)
            return 2;
        berth_error_set(reterr, r, "%s", err.message);
        return r;
    }
    if (r < 0) {
        /* Uncertain (the slot may be the job's now): it leaves the list, and
         * a later start() of the job finds it started or starts it cold. */
        slot_drop(b, s.slot_id);
        return berth_error_set(reterr, r, "claiming warm slot %s: %s", s.slot_id, err.message);
    }
    *ret_warm = json_pack("{s:s, s:s, s:o}", "slot_id", s.slot_id, "slot_hash", s.hash, "provision_ns",
                          berth_json_ns(s.provision_ns));
    pthread_mutex_lock(&w->lock);
    w->hits++;
    w->tally[s.target].hits++;
    pthread_mutex_unlock(&w->lock);
    slot_drop(b, s.slot_id);
    return 1;
}

bool broker_warm_slot_changed(struct berth_broker *b, const char *backend, const char *id)
{
    struct broker_warm *w = &b->warm;
    bool ours = false;
    ssize_t at;

    if (!w->last_miss || id[0] != 's')
        return false; /* run ids start with "r" */
    pthread_mutex_lock(&w->lock);
    at = slot_index(w, id);
    ours = at >= 0 && streq(b->backends[w->v[at].backend].name, backend);
    pthread_mutex_unlock(&w->lock);
    if (ours)
        atomic_store(&w->changed, true);
    return ours;
}

void broker_warm_health(struct berth_broker *b, struct berth_broker_health *h)
{
    struct broker_warm *w = &b->warm;
    size_t i;

    if (!w->last_miss)
        return;
    h->n_warm = b->p.n_warm < BERTH_WARM_TARGETS_MAX ? b->p.n_warm : BERTH_WARM_TARGETS_MAX;
    for (i = 0; i < h->n_warm; i++) {
        h->warm[i].pool = b->p.warm[i].pool;
        h->warm[i].image = b->p.warm[i].image;
    }
    pthread_mutex_lock(&w->lock);
    for (i = 0; i < w->n; i++) {
        if (w->v[i].target >= h->n_warm)
            continue;
        if (w->v[i].claiming || w->v[i].not_after == 0)
            h->warm[w->v[i].target].claiming++;
        else
            h->warm[w->v[i].target].ready++;
    }
    for (i = 0; i < h->n_warm; i++) {
        h->warm[i].provisioning = w->provisioning == (ssize_t)i;
        h->warm[i].hits = w->tally[i].hits;
        h->warm[i].misses = w->tally[i].misses;
        h->warm[i].quarantined = w->tally[i].quarantined;
    }
    h->warm_hits = w->hits;
    h->warm_misses = w->misses;
    h->warm_quarantined = w->quarantined;
    h->warm_provisioned = w->provisioned;
    h->warm_provision_failed = w->provision_failed;
    h->warm_lost = w->lost;
    h->warm_provision_ns_last = w->provision_ns_last;
    h->warm_refill_ns_last = w->refill_ns_last;
    pthread_mutex_unlock(&w->lock);
}

json_t *broker_warm_pool_json(struct berth_broker *b, const char *pool)
{
    struct broker_warm *w = &b->warm;
    _cleanup_json_ json_t *targets = json_array();
    size_t ti, i;
    int r = 0;

    if (!targets || !w->last_miss)
        return NULL;
    pthread_mutex_lock(&w->lock);
    for (ti = 0; r == 0 && ti < b->p.n_warm; ti++) {
        const struct berth_warm_target *t = &b->p.warm[ti];
        uint64_t ready = 0, claiming = 0;

        if (!streq(t->pool, pool))
            continue;
        for (i = 0; i < w->n; i++) {
            if (w->v[i].target != ti)
                continue;
            if (w->v[i].claiming || w->v[i].not_after == 0)
                claiming++;
            else
                ready++;
        }
        r = json_array_append_new(
            targets,
            json_pack("{s:s, s:O, s:o, s:I, s:I, s:{s:I, s:I, s:I}, s:I, s:I, s:I, s:I}", "image", t->image, "limits",
                      t->limits, "overrides", t->overrides ? json_deep_copy(t->overrides) : json_object(), "min_ready",
                      (json_int_t)t->min_ready, "max_ready", (json_int_t)t->max_ready, "slots", "ready",
                      (json_int_t)ready, "provisioning", (json_int_t)(w->provisioning == (ssize_t)ti), "claiming",
                      (json_int_t)claiming, "hits", (json_int_t)w->tally[ti].hits, "misses",
                      (json_int_t)w->tally[ti].misses, "quarantined", (json_int_t)w->tally[ti].quarantined,
                      "provisioned", (json_int_t)w->tally[ti].provisioned));
    }
    pthread_mutex_unlock(&w->lock);
    if (r < 0 || json_array_size(targets) == 0)
        return NULL;
    return TAKE_PTR(targets);
}
