/* SPDX-License-Identifier: MIT */
/*
 * broker-remote.c -- remote workers (docs/workers.md): the subjects of the
 * host policy that "serve" pools enrol into them with their own Ed25519
 * identity; see broker.h, "Remote workers".
 */
#include <errno.h>
#include <string.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
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
    if (broker_authenticate(b, fingerprint, &caller, reply) < 0)
        goto out;
    if (!caller.subject->serves || json_array_size(caller.subject->serves) == 0) {
        broker_fail(reply, 403, "not_a_worker", "%s serves no pool: the host policy names none in its \"serves\"",
                    caller.subject->principal);
        goto out;
    }
    if (len > ENROLMENT_MAX) {
        broker_fail(reply, 413, "too_large", "an enrolment is at most %d bytes", ENROLMENT_MAX);
        goto out;
    }
    if (berth_json_parse(body, len, ENROLMENT_MAX, &doc, &err) < 0 || berth_enrolment_verify(doc, pub, &err) < 0) {
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
