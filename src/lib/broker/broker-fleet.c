/* SPDX-License-Identifier: MIT */
/*
 * broker-fleet.c -- what berthd knows of its remote workers (docs/workers.md):
 * who polled lately and what each can take, the runs queued for them, and
 * the "workers" offer placement reads.  In memory only: the journal holds
 * the runs and their leases, so a restarted berthd rebuilds the queue from
 * its first reconcile round and learns the workers again from their polls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"

/* How long an offer stays held for the worker it was made to, ns. */
#define OFFER_HOLD_NS (5LL * 1000 * 1000 * 1000)

int broker_fleet_init(struct berth_broker *b)
{
    struct broker_fleet *f = &b->fleet;
    int r;

    memset(f, 0, sizeof(*f));
    r = pthread_mutex_init(&f->lock, NULL);
    if (r != 0)
        return -r;
    atomic_init(&f->generation, 1);
    if (berth_now_ns(CLOCK_REALTIME, &f->started_ns, NULL) < 0)
        f->started_ns = 0;
    f->initialized = true;
    return 0;
}

static void worker_clear(struct broker_fleet_worker *w)
{
    json_decref(w->capabilities);
    json_decref(w->egress_classes);
    json_decref(w->pools);
    memset(w, 0, sizeof(*w));
}

void broker_fleet_free(struct berth_broker *b)
{
    struct broker_fleet *f = &b->fleet;
    size_t i;

    if (!f->initialized)
        return;
    for (i = 0; i < f->n; i++)
        worker_clear(&f->w[i]);
    free(f->w);
    free(f->q);
    pthread_mutex_destroy(&f->lock);
    memset(f, 0, sizeof(*f));
}

bool broker_is_remote(const struct berth_job_record *rec)
{
    return rec && streq_ptr(rec->backend, BERTH_WORKERS_BACKEND);
}

uint64_t berth_broker_offer_generation(struct berth_broker *b)
{
    return b ? atomic_load(&b->fleet.generation) : 0;
}

/* Something a parked poll may want changed: tell berthd. */
static void offers_changed(struct berth_broker *b)
{
    atomic_fetch_add(&b->fleet.generation, 1);
    if (b->p.on_offer)
        b->p.on_offer(b->p.userdata);
}

void broker_fleet_kick(struct berth_broker *b)
{
    offers_changed(b);
}

/* The entry of worker @name (fleet lock held), or NULL. */
static struct broker_fleet_worker *find_worker(struct broker_fleet *f, const char *name)
{
    size_t i;

    for (i = 0; i < f->n; i++)
        if (streq(f->w[i].name, name))
            return &f->w[i];
    return NULL;
}

/* Whether @w is live at CLOCK_MONOTONIC @mono. */
static bool worker_live(const struct berth_broker *b, const struct broker_fleet_worker *w, int64_t mono)
{
    return w->seen > 0 && mono - w->seen <= b->p.worker_lease_ns;
}

/* Whether @w may be given work at CLOCK_REALTIME @now. */
static bool worker_qualified(const struct berth_broker *b, const struct broker_fleet_worker *w, int64_t now)
{
    return !b->p.workers_require_qualification || (w->qualified && w->qualification_expires_ns > now);
}

int broker_fleet_seen(struct berth_broker *b, const struct broker_fleet_worker *seen, bool again)
{
    struct broker_fleet *f = &b->fleet;
    struct broker_fleet_worker *w;
    bool was_live, changed;
    int64_t mono = broker_mono_now();

    pthread_mutex_lock(&f->lock);
    w = find_worker(f, seen->name);
    if (!w) {
        if (f->n == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 8;
            struct broker_fleet_worker *v = reallocarray(f->w, cap, sizeof(*v));
            if (!v) {
                pthread_mutex_unlock(&f->lock);
                return -ENOMEM;
            }
            f->w = v;
            f->cap = cap;
        }
        w = &f->w[f->n++];
        memset(w, 0, sizeof(*w));
    }
    was_live = worker_live(b, w, mono);
    changed = !was_live || w->slots != seen->slots || w->busy != seen->busy || w->qualified != seen->qualified ||
              !json_equal(w->pools, seen->pools);
    {
        /* A parked poll asked again: reports since it was sent freed slots. */
        unsigned busy = again && w->name[0] && w->busy < seen->busy ? w->busy : seen->busy;
        worker_clear(w);
        *w = *seen;
        w->busy = busy;
    }
    w->capabilities = json_incref(seen->capabilities);
    w->egress_classes = json_incref(seen->egress_classes);
    w->pools = json_incref(seen->pools);
    w->seen = mono ? mono : 1;
    pthread_mutex_unlock(&f->lock);
    if (changed)
        atomic_fetch_add(&f->generation, 1);
    return 0;
}

bool broker_fleet_qualified(struct berth_broker *b, const char *name, int64_t now)
{
    struct broker_fleet *f = &b->fleet;
    struct broker_fleet_worker *w;
    bool q;

    pthread_mutex_lock(&f->lock);
    w = find_worker(f, name);
    q = w && worker_qualified(b, w, now);
    pthread_mutex_unlock(&f->lock);
    return q;
}

void broker_fleet_touch(struct berth_broker *b, const char *name, int busy_delta)
{
    struct broker_fleet *f = &b->fleet;
    struct broker_fleet_worker *w;
    int64_t mono = broker_mono_now();

    pthread_mutex_lock(&f->lock);
    w = find_worker(f, name);
    if (w) {
        if (w->seen > 0)
            w->seen = mono ? mono : w->seen;
        if (busy_delta > 0 && w->busy < w->slots)
            w->busy++;
        else if (busy_delta < 0 && w->busy > 0)
            w->busy--;
    }
    pthread_mutex_unlock(&f->lock);
    /* The room placement sees changed (no parked poll needs to know). */
    if (busy_delta)
        atomic_fetch_add(&f->generation, 1);
}

/* ------------------------------------------------------------------------ */
/* The queue                                                                 */

static ssize_t find_queued(const struct broker_fleet *f, const char *run_id)
{
    size_t i;

    for (i = 0; i < f->nq; i++)
        if (streq(f->q[i].run_id, run_id))
            return (ssize_t)i;
    return -1;
}

int broker_fleet_enqueue(struct berth_broker *b, const char *run_id, const char *pool, const char *pool_hash,
                         int64_t accepted_at)
{
    struct broker_fleet *f = &b->fleet;
    size_t i;

    if (!run_id || strlen(run_id) > BERTH_RUN_ID_LEN || !pool || strlen(pool) > BERTH_POOL_NAME_MAX || !pool_hash ||
        strlen(pool_hash) != BERTH_HASH_HEX_LEN)
        return -EINVAL;
    pthread_mutex_lock(&f->lock);
    if (find_queued(f, run_id) >= 0) {
        pthread_mutex_unlock(&f->lock);
        return 0;
    }
    if (f->nq == f->capq) {
        size_t cap = f->capq ? f->capq * 2 : 64;
        struct broker_fleet_job *v = reallocarray(f->q, cap, sizeof(*v));
        if (!v) {
            pthread_mutex_unlock(&f->lock);
            return -ENOMEM;
        }
        f->q = v;
        f->capq = cap;
    }
    /* Oldest first: a run found again by a reconcile round (after a
     * restart) goes behind the older ones, not to the end. */
    for (i = f->nq; i > 0 && f->q[i - 1].accepted_at > accepted_at; i--)
        ;
    memmove(&f->q[i + 1], &f->q[i], (f->nq - i) * sizeof(*f->q));
    memset(&f->q[i], 0, sizeof(f->q[i]));
    snprintf(f->q[i].run_id, sizeof(f->q[i].run_id), "%s", run_id);
    snprintf(f->q[i].pool, sizeof(f->q[i].pool), "%s", pool);
    snprintf(f->q[i].pool_hash, sizeof(f->q[i].pool_hash), "%s", pool_hash);
    f->q[i].accepted_at = accepted_at;
    f->nq++;
    pthread_mutex_unlock(&f->lock);
    offers_changed(b);
    return 1;
}

void broker_fleet_dequeue(struct berth_broker *b, const char *run_id)
{
    struct broker_fleet *f = &b->fleet;
    ssize_t i;

    pthread_mutex_lock(&f->lock);
    i = find_queued(f, run_id);
    if (i >= 0) {
        memmove(&f->q[i], &f->q[i + 1], (f->nq - (size_t)i - 1) * sizeof(*f->q));
        f->nq--;
    }
    pthread_mutex_unlock(&f->lock);
}

void broker_fleet_release(struct berth_broker *b, const char *run_id)
{
    struct broker_fleet *f = &b->fleet;
    ssize_t i;

    pthread_mutex_lock(&f->lock);
    i = find_queued(f, run_id);
    if (i >= 0) {
        f->q[i].offered_to[0] = '\0';
        f->q[i].offered_until = 0;
    }
    pthread_mutex_unlock(&f->lock);
    if (i >= 0)
        offers_changed(b);
}

/* Whether the JSON array of pool hashes @pools holds @hash. */
static bool holds(const json_t *pools, const char *hash)
{
    const json_t *v;
    size_t i;

    json_array_foreach(pools, i, v) if (streq_ptr(json_string_value(v), hash)) return true;
    return false;
}

size_t broker_fleet_take(struct berth_broker *b, const char *name,
                         bool (*offerable)(void *userdata, const char *pool, const char *pool_hash), void *userdata,
                         size_t max, char (*ret_runs)[BERTH_RUN_ID_LEN + 1])
{
    struct broker_fleet *f = &b->fleet;
    int64_t mono = broker_mono_now();
    size_t i, n = 0;

    pthread_mutex_lock(&f->lock);
    for (i = 0; i < f->nq && n < max; i++) {
        struct broker_fleet_job *q = &f->q[i];

        /* Offered already (to this worker too: its claim is on its way):
         * offered again once the hold ends without a claim. */
        if ((q->offered_to[0] && q->offered_until > mono) || !offerable(userdata, q->pool, q->pool_hash))
            continue;
        snprintf(q->offered_to, sizeof(q->offered_to), "%s", name);
        q->offered_until = mono + OFFER_HOLD_NS;
        snprintf(ret_runs[n], BERTH_RUN_ID_LEN + 1, "%s", q->run_id);
        n++;
    }
    pthread_mutex_unlock(&f->lock);
    return n;
}

/* ------------------------------------------------------------------------ */
/* The offer placement reads                                                 */

/* The strings both arrays hold (@acc NULL: all of @next), as a new array. */
static json_t *intersect(const json_t *acc, const json_t *next)
{
    json_t *out = json_array(), *v;
    size_t i;

    if (!out)
        return NULL;
    json_array_foreach(next, i, v)
    {
        if (!json_is_string(v) || (acc && !holds(acc, json_string_value(v))))
            continue;
        if (json_array_append(out, v) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

bool broker_pool_lists_workers(const struct berth_pool *pool)
{
    size_t i;

    for (i = 0; i < pool->n_backends; i++)
        if (streq(pool->backends[i], BERTH_WORKERS_BACKEND))
            return true;
    return false;
}

json_t *broker_fleet_offer(struct berth_broker *b, int64_t now)
{
    struct broker_fleet *f = &b->fleet;
    const struct berth_pool_chain *chain = berth_registry_chain(b->reg);
    _cleanup_json_ json_t *caps = NULL, *egress = NULL, *pools = json_array(), *why = json_object(), *offer = NULL;
    int64_t mono = broker_mono_now(), qual_end = 0;
    size_t i, k, live = 0;
    bool any_pool = false;

    if (!pools || !why)
        return NULL;
    pthread_mutex_lock(&f->lock);
    for (i = 0; i < f->n; i++) {
        const struct broker_fleet_worker *w = &f->w[i];
        json_t *c, *e;
        /* A worker that takes work of no pool (not enrolled) offers nothing. */
        if (!worker_live(b, w, mono) || json_array_size(w->pools) == 0)
            continue;
        live++;
        if (!worker_qualified(b, w, now))
            continue; /* its pools say workers_unqualified */
        c = intersect(caps, w->capabilities);
        e = intersect(egress, w->egress_classes);
        json_decref(caps);
        json_decref(egress);
        caps = c;
        egress = e;
        if (!caps || !egress)
            break;
        if (w->qualified && w->qualification_expires_ns > qual_end)
            qual_end = w->qualification_expires_ns;
    }
    for (k = 0; k < berth_pool_chain_count(chain); k++) {
        const struct berth_pool *pool = berth_pool_chain_at(chain, k);
        const char *reason = "no_enrolled_worker";
        int64_t room = 0;
        if (!broker_pool_lists_workers(pool))
            continue;
        any_pool = true;
        for (i = 0; i < f->n; i++) {
            const struct broker_fleet_worker *w = &f->w[i];
            if (!worker_live(b, w, mono) || !holds(w->pools, pool->pool_hash))
                continue;
            if (!worker_qualified(b, w, now)) {
                if (streq(reason, "no_enrolled_worker"))
                    reason = "workers_unqualified";
                continue;
            }
            reason = "workers_busy";
            room += (int64_t)w->slots - (int64_t)w->busy;
        }
        /* A run offered to a worker is in that worker's busy count (from its
         * next poll or its claim): only the runs nobody holds take room. */
        for (i = 0; i < f->nq; i++)
            if (streq(f->q[i].pool_hash, pool->pool_hash) &&
                !(f->q[i].offered_to[0] && f->q[i].offered_until > mono))
                room--;
        if (streq(reason, "workers_busy") && room > 0)
            reason = NULL;
        if (reason ? json_object_set_new(why, pool->pool_hash, json_string(reason)) < 0
                   : json_array_append_new(pools, json_string(pool->pool_hash)) < 0) {
            pthread_mutex_unlock(&f->lock);
            return NULL;
        }
    }
    pthread_mutex_unlock(&f->lock);
    if (!any_pool)
        return NULL;
    offer = json_pack("{s:o, s:o, s:o, s:b, s:O, s:O}", "capabilities", caps ? json_incref(caps) : json_array(),
                      "egress_classes", egress ? json_incref(egress) : json_array(), "qualification",
                      qual_end > 0 ? json_pack("{s:s, s:o}", "id", "workers", "expires_ns", berth_json_ns(qual_end))
                                   : json_string("unqualified"),
                      "require_qualification", b->p.workers_require_qualification, "pools", pools,
                      "pools_unavailable", why);
    if (offer && live == 0 && json_object_set_new(offer, "unavailable", json_string("no_live_worker")) < 0)
        return NULL;
    return TAKE_PTR(offer);
}

int broker_fleet_refresh_offers(struct berth_broker *b, int64_t now)
{
    struct berth_error err = BERTH_ERROR_INIT;
    uint64_t gen = atomic_load(&b->fleet.generation);
    _cleanup_json_ json_t *doc = NULL, *offer = NULL;
    struct berth_backend_set *set = NULL;
    int64_t mono = broker_mono_now();
    int r;

    /* Liveness runs out with time alone: look again at least once a second. */
    if (gen == b->fleet.offered_generation && mono - b->fleet.offered_mono < 1000000000LL)
        return 0;
    offer = broker_fleet_offer(b, now);
    doc = json_deep_copy(b->offers->doc);
    if (!doc)
        return -ENOMEM;
    if (offer ? json_object_set(doc, BERTH_WORKERS_BACKEND, offer) < 0
              : (json_object_del(doc, BERTH_WORKERS_BACKEND), false))
        return -ENOMEM;
    r = berth_backend_set_from_json(doc, &set, &err);
    if (r < 0 && r != -ENOMEM) {
        /* Placement must not go on from a stale offer: without one, no job goes to the workers now. */
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "the workers' offer is unusable, so it is withdrawn: %s",
                   err.message);
        json_object_del(doc, BERTH_WORKERS_BACKEND);
        r = berth_backend_set_from_json(doc, &set, NULL);
    }
    if (r < 0)
        return r;
    berth_backend_set_free(b->offers);
    b->offers = set;
    b->fleet.offered_generation = gen;
    b->fleet.offered_mono = mono;
    return 0;
}
