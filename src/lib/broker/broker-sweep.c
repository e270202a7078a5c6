/* SPDX-License-Identifier: MIT */
/*
 * broker-sweep.c -- whether an open job still qualifies to run: the
 * caller's current grant and the backend's qualification, rechecked by
 * every reconcile pass and again at dispatch (broker.h, "Sweeps").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"
#include "reserve.h"

const char *broker_grant_gap(const struct berth_subject *s, const struct berth_job *job, char *buf, size_t size)
{
    const char *name = NULL;

    if (!berth_subject_allows_pool(s, job->pool))
        snprintf(buf, size, "pool %s is not granted to %s", job->pool, s->principal);
    else if (!berth_subject_allows_image(s, job->image))
        snprintf(buf, size, "image %s is not granted to %s", job->image, s->principal);
    else if (!berth_limits_within(&job->limits, &s->limits, &name))
        snprintf(buf, size, "limits.%s is above the grant's ceiling", name);
    else
        return NULL;
    return buf;
}

/* The subject of @p that covers @rec's submitter now, or NULL (*@why says
 * why).  The submitter is the certificate fingerprint recorded with the
 * job; a record from before fingerprints were recorded ("") is matched by
 * its principal.  Either way the principal and scope must be the job's. */
static const struct berth_subject *record_subject(const struct berth_policy *p, const struct berth_job_record *rec,
                                                  int64_t now, const char **why)
{
    const struct berth_subject *s = NULL;
    _cleanup_free_ char *scope = NULL;
    size_t i;

    *why = "the submitter's certificate is no longer in the host policy";
    if (rec->fingerprint[0]) {
        s = berth_policy_subject(p, rec->fingerprint, now, why);
    } else {
        for (i = 0; !s && i < p->n_subjects; i++)
            if (streq(p->subjects[i].principal, rec->principal))
                s = berth_policy_subject(p, json_string_value(json_array_get(p->subjects[i].fingerprints, 0)), now,
                                         why);
    }
    if (!s)
        return NULL;
    if (!streq(s->principal, rec->principal) || berth_json_serialize(s->scope, 0, &scope, NULL, NULL) < 0 ||
        !streq(scope, rec->scope)) {
        *why = "the submitter's certificate now belongs to another principal or scope";
        return NULL;
    }
    return s;
}

/* What the verdict reads of a record, parsed before the broker lock is
 * taken (parsing is most of a verdict's cost, and submissions wait for
 * that lock): the job, or the error parsing it gave (@job_r, reported only
 * where the verdict needs the job), and the receipt, for a backend that
 * requires qualification. */
struct sweep_parsed {
    struct berth_job *job;
    int job_r;
    json_t *receipt;
};

/* The grant half (lock held): 0 with *@ret_reason "revoked" or left alone. */
static int grant_verdict(struct berth_broker *b, const struct berth_job_record *rec, const struct sweep_parsed *in,
                         int64_t now, const char **ret_reason, char *why, size_t why_size, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_policy *policy = NULL;
    const struct berth_subject *s;
    const char *gap;
    int r;

    r = berth_policy_current(b->p.policy, now, &policy, &err);
    if (r == -ENOMEM)
        return berth_error_set(reterr, r, "out of memory reading the host policy");
    if (r < 0) {
        /* A missing, malformed or expired policy denies everything: the job too. */
        snprintf(why, why_size, "the host policy denies everything: %s", err.message);
        *ret_reason = "revoked";
        return 0;
    }
    s = record_subject(policy, rec, now, &gap);
    if (!s) {
        snprintf(why, why_size, "%s", gap);
        *ret_reason = "revoked";
        return 0;
    }
    if (!in->job)
        return in->job_r == -ENOMEM ? berth_error_set(reterr, -ENOMEM, "out of memory")
                                    : berth_error_set(reterr, -EUCLEAN, "the stored job is damaged");
    if ((gap = broker_grant_gap(s, in->job, why, why_size)))
        *ret_reason = "revoked";
    return 0;
}

/* The qualification half (lock held).  Only a backend that requires
 * qualification is judged: the job's receipt names the qualification it
 * was accepted under; that record must have passed, must not have
 * expired, and must bind the same runtime binary, configuration and
 * kernel as the qualification berthd offers for the backend now (a
 * re-qualification of the same binding keeps a job; an upgrade, a changed
 * configuration, a failed re-run or time end it). */
static int qualification_verdict(struct berth_broker *b, const struct berth_job_record *rec,
                                 const struct sweep_parsed *in, int64_t now, const char **ret_reason, char *why,
                                 size_t why_size, struct berth_error *reterr)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);
    struct berth_qualification_binding mine, cur;
    const json_t *offer;
    const char *qid, *cur_id;
    int r;

    if (!be || !be->require_qualification)
        return 0;
    if (!in->receipt)
        return berth_error_set(reterr, -EUCLEAN, "the stored receipt is damaged");
    qid = json_string_value(
        json_object_get(json_object_get(json_object_get(in->receipt, "receipt"), "runtime"), "qualification"));
    offer = json_object_get(json_object_get(b->capabilities, be->name), "qualification");
    cur_id = json_string_value(json_object_get(offer, "id"));
    if (!cur_id && b->caps_errors[be - b->backends][0])
        return berth_error_set(reterr, -EAGAIN, "backend %s does not answer capabilities: its qualification is unknown",
                               be->name);
    *ret_reason = "qualification_expired";
    if (!qid) {
        snprintf(why, why_size, "it was accepted under no qualification of backend %s", be->name);
        return 0;
    }
    if (!cur_id) {
        snprintf(why, why_size, "backend %s has no current qualification", be->name);
        return 0;
    }
    r = berth_qualification_lookup(b->p.journal, qid, &mine, reterr);
    if (r == -ENOENT) {
        snprintf(why, why_size, "its qualification %s is not recorded", qid);
        return 0;
    }
    if (r == 0 && (!mine.passed || mine.expires_ns <= now || !streq(mine.backend, be->name))) {
        snprintf(why, why_size, "its qualification %s expired", qid);
        return 0;
    }
    if (r == 0 && !streq(qid, cur_id)) {
        r = berth_qualification_lookup(b->p.journal, cur_id, &cur, reterr);
        if (r == 0 && (!streq(cur.runtime_sha256, mine.runtime_sha256) ||
                       !streq(cur.config_digest, mine.config_digest) || !streq(cur.kernel, mine.kernel))) {
            snprintf(why, why_size, "backend %s now runs another runtime, configuration or kernel than %s qualified",
                     be->name, qid);
            return 0;
        }
    }
    if (r < 0)
        return r == -ENOENT ? berth_error_set(reterr, -EAGAIN, "the current qualification vanished") : r;
    *ret_reason = NULL;
    return 0;
}

int broker_sweep_verdict(struct berth_broker *b, const struct berth_job_record *rec, int64_t now,
                         const char **ret_reason, char *why, size_t why_size, struct berth_error *reterr)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend); /* the table never changes */
    struct sweep_parsed in = {0};
    const char *reason = NULL;
    int r;

    in.job_r = berth_job_parse(rec->job, strlen(rec->job), &in.job, NULL);
    if (be && be->require_qualification)
        in.receipt = json_loads(rec->receipt, JSON_REJECT_DUPLICATES, NULL);
    pthread_mutex_lock(&b->lock);
    r = grant_verdict(b, rec, &in, now, &reason, why, why_size, reterr);
    if (r == 0 && !reason)
        r = qualification_verdict(b, rec, &in, now, &reason, why, why_size, reterr);
    pthread_mutex_unlock(&b->lock);
    berth_job_free(in.job);
    json_decref(in.receipt);
    if (r == 0)
        *ret_reason = reason;
    return r;
}

int broker_sweep_job(struct berth_broker *b, struct berth_job_record *rec, int64_t now, struct berth_pass_stats *stats,
                     struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *reason = NULL;
    char why[384] = "";
    int r;

    if (rec->cancel_requested ||
        (rec->state != BERTH_JOB_ACCEPTED && rec->state != BERTH_JOB_CLAIMED && rec->state != BERTH_JOB_RUNNING))
        return 0; /* being stopped or finished already */
    r = broker_sweep_verdict(b, rec, now, &reason, why, sizeof(why), &err);
    if (r == -EIO || r == -EBADMSG) /* the journal cannot be trusted */
        return berth_error_set(reterr, r, "%s", err.message);
    if (r < 0)
        goto undecided;
    if (!reason)
        return 0;
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s of %s no longer qualifies (%s): %s", rec->job_id,
               rec->run_id, rec->principal, reason, why);
    pthread_mutex_lock(&b->lock);
    r = broker_record_cancel(b, rec, "berthd", reason, now, &err);
    pthread_mutex_unlock(&b->lock);
    if (r < 0) {
        if (r != -ESTALE && !berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: recording its cancellation failed: %s",
                       rec->job_id, rec->run_id, err.message);
        atomic_store(&b->sweep.cycle_error, true);
        return r == -EIO || r == -EBADMSG ? berth_error_set(reterr, r, "%s", err.message) : 0;
    }
    free(rec->cancel_reason);
    rec->cancel_reason = strdup(reason);
    rec->cancel_requested = true;
    rec->revision++;
    if (stats)
        stats->swept++;
    return rec->cancel_reason ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
undecided:
    /* Retried on the next pass; the startup pass is not complete without it. */
    berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot tell whether it still qualifies: %s",
               rec->job_id, rec->run_id, err.message);
    atomic_store(&b->sweep.cycle_error, true);
    if (stats)
        stats->errors++;
    return 1;
}

bool berth_broker_admitting(struct berth_broker *b)
{
    return b && atomic_load(&b->sweep.admitting);
}

void broker_sweep_cycle_end(struct berth_broker *b)
{
    memset(&b->sweep.cursor, 0, sizeof(b->sweep.cursor));
    /* The warm slots of an earlier run are destroyed before admission opens. */
    if (!atomic_load(&b->sweep.cycle_error) && !atomic_load(&b->sweep.admitting) && broker_warm_sweep(b)) {
        berth_logf(b->p.logger, BERTH_LOG_INFO, "admission opens: the startup pass checked every open job (%zu)",
                   b->sweep.cycle_visited);
        atomic_store(&b->sweep.admitting, true);
    }
    atomic_store(&b->sweep.cycle_error, false);
    b->sweep.cycle_visited = 0;
}

enum berth_front_door berth_broker_front_door(struct berth_broker *b, const char *fingerprint)
{
    const struct berth_policy *policy = NULL;
    enum berth_front_door door = BERTH_DOOR_OPEN;
    int64_t now;

    pthread_mutex_lock(&b->lock);
    /* A policy that cannot be read lets the connection through to the
     * broker, whose refusal says what is wrong with the policy. */
    if (berth_now_ns(CLOCK_REALTIME, &now, NULL) == 0 && berth_policy_current(b->p.policy, now, &policy, NULL) == 0 &&
        policy && !berth_policy_lists(policy, fingerprint))
        door = policy->unlisted_health ? BERTH_DOOR_HEALTH : BERTH_DOOR_CLOSED;
    pthread_mutex_unlock(&b->lock);
    return door;
}

uint64_t berth_broker_policy_reloads(struct berth_broker *b)
{
    uint64_t n;

    pthread_mutex_lock(&b->lock);
    n = berth_policy_reloads(b->p.policy);
    pthread_mutex_unlock(&b->lock);
    return n;
}
