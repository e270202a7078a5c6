/* SPDX-License-Identifier: MIT */
/*
 * broker-worker.c -- the broker's side that talks to backends: capability
 * refresh, dispatch and reconcile.  See broker.h.
 *
 * Pattern for every step: with the lock held, record the intent (a state
 * transition checked against the revision this pass read); release the
 * lock; call the backend; take the lock again and record what it said,
 * again checked against the revision.  A transition that finds a newer
 * revision (-ESTALE: a cancellation arrived meanwhile) is dropped and the
 * job is looked at again on the next pass.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "encoding.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
#include "qualification.h"
#include "receipt.h"
#include "reserve.h"

#define CAPABILITIES_MAX (64 * 1024)
#define INSPECT_MAX (4 * 1024 * 1024)
#define REAP_TRIES 12                              /* owed reaps: 1 s doubling to 5 min, about 30 min in all */
#define REAP_PASS_BUDGET_NS (1000LL * 1000 * 1000) /* owed reaps begun in one pass, for at most this long */

static const char *const inspect_states[] = {"starting", "running", "exited", "failed", "cancelled", "expired"};
#define INSPECT_FIRST_TERMINAL 2

/* A backend is qualified while the newest journal record for its runtime
 * binary, configuration and this kernel passed and has not expired
 * (qualification.h); whatever the plugin claims about qualification itself
 * is replaced.  When the replacement cannot be made, @doc is not usable:
 * -ENOMEM with @reterr, and the caller offers the backend as if its
 * capabilities had failed (nothing, unqualified), so a plugin's own claim
 * never reaches placement. */
static int overlay_qualification(struct berth_broker *b, const struct berth_broker_backend *be, json_t *doc,
                                 struct berth_error *reterr)
{
    const char *sha = json_string_value(json_object_get(json_object_get(doc, "runtime"), "sha256"));
    char id[BERTH_QUALIFICATION_ID_LEN + 1], kernel[256], config_digest[BERTH_DIGEST_BUFSZ];
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t expires = 0, now;
    json_t *q;
    int r = -ENOENT;

    berth_kernel_release(kernel, sizeof(kernel));
    if (sha && (r = berth_qualification_config_digest(be->config, be->plugin_sha256, doc, be->containment,
                                                       config_digest, &err)) == 0 &&
        (r = berth_now_ns(CLOCK_REALTIME, &now, &err)) == 0) {
        pthread_mutex_lock(&b->lock);
        r = berth_qualification_current(b->p.journal, be->name, sha, config_digest, kernel, now, id, &expires, &err);
        pthread_mutex_unlock(&b->lock);
    }
    if (r < 0 && r != -ENOENT)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s: cannot read its qualifications: %s", be->name,
                   err.message);
    q = r == 0 ? json_pack("{s:s, s:o}", "id", id, "expires_ns", berth_json_ns(expires)) : json_string("unqualified");
    if (json_object_set_new(doc, "qualification", q) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory recording berthd's qualification of the backend");
    return 0;
}

/* A 1.0 plugin has no open_output(): whatever it claims, it cannot hand
 * outputs over, so its "outputs" is not offered to placement. */
static int drop_unbacked_needs(const struct berth_broker_backend *be, json_t *doc, struct berth_error *reterr)
{
    json_t *caps = json_object_get(doc, "capabilities"), *v;
    size_t i;

    if (be->ops->open_output || !json_is_array(caps))
        return 0;
    json_array_foreach(caps, i, v)
    {
        if (json_is_string(v) && streq(json_string_value(v), "outputs"))
            return json_array_remove(caps, i) < 0 ? berth_error_set(reterr, -ENOMEM, "out of memory") : 0;
    }
    return 0;
}

/* A backend whose capabilities say it is "unavailable" (plugin.h) gets no
 * work: say so when that starts, changes or ends, not on every pass. */
static void note_unavailable(struct berth_broker *b, size_t i, const json_t *doc)
{
    const char *why = json_string_value(json_object_get(doc, "unavailable"));
    const char *detail = json_string_value(json_object_get(json_object_get(doc, "containment"), "error"));

    if (streq(b->caps_unavailable[i], why ? why : ""))
        return;
    if (why)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s is unavailable (%s%s%s): placement skips it",
                   b->backends[i].name, why, detail ? ": " : "", detail ? detail : "");
    else
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "backend %s is available again", b->backends[i].name);
    snprintf(b->caps_unavailable[i], sizeof(b->caps_unavailable[i]), "%s", why ? why : "");
}

int berth_broker_refresh_backends(struct berth_broker *b)
{
    _cleanup_json_ json_t *caps = json_object(), *set_doc = json_object();
    struct berth_backend_set *set = NULL;
    size_t i;

    if (!caps || !set_doc)
        return -ENOMEM;
    for (i = 0; i < b->p.n_backends; i++) {
        const struct berth_broker_backend *be = &b->backends[i];
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *text = NULL;
        json_t *doc = NULL, *offer;
        size_t len = 0;
        int r;

        r = be->ops->capabilities ? be->ops->capabilities(be->state, &text, &len, &err) : -ENOSYS;
        if (r >= 0)
            r = berth_json_parse(text, len, CAPABILITIES_MAX, &doc, &err);
        if (r >= 0 && !json_is_object(doc))
            r = berth_error_set(&err, -EBADMSG, "not a JSON object");
        if (r >= 0)
            r = overlay_qualification(b, be, doc, &err);
        if (r >= 0)
            r = drop_unbacked_needs(be, doc, &err);
        /* A malformed "unavailable" is this backend's fault alone: it would
         * make the whole backend set unreadable to placement. */
        if (r >= 0 && json_object_get(doc, "unavailable") &&
            !berth_reason_code_valid(json_string_value(json_object_get(doc, "unavailable"))))
            r = berth_error_set(&err, -EBADMSG, "capabilities: unavailable is not a reason code of [a-z_]");
        if (r < 0) {
            /* Logged when it starts failing or fails differently, not on every pass. */
            if (!err.message[0])
                berth_error_set(&err, r, "%s", strerror(-r));
            if (strcmp(b->caps_errors[i], err.message) != 0) {
                berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend %s: capabilities failed, so it gets no work: %s",
                           be->name, err.message);
                snprintf(b->caps_errors[i], sizeof(b->caps_errors[i]), "%s", err.message);
            }
            json_decref(doc);
            doc = json_pack("{s:[], s:[], s:s}", "capabilities", "egress_classes", "qualification", "unqualified");
        } else {
            if (b->caps_errors[i][0])
                berth_logf(b->p.logger, BERTH_LOG_NOTICE, "backend %s: capabilities answer again", be->name);
            b->caps_errors[i][0] = '\0';
        }
        note_unavailable(b, i, doc);
        offer = json_pack("{s:O*, s:O*, s:O*, s:b, s:O*}", "capabilities", json_object_get(doc, "capabilities"),
                          "egress_classes", json_object_get(doc, "egress_classes"), "qualification",
                          json_object_get(doc, "qualification"), "require_qualification", be->require_qualification,
                          "unavailable", json_object_get(doc, "unavailable"));
        /* What clients see says when a backend runs without qualification (development). */
        if (!doc || !offer ||
            json_object_set_new(doc, "require_qualification", json_boolean(be->require_qualification)) < 0) {
            json_decref(offer);
            json_decref(doc);
            return -ENOMEM;
        }
        if (json_object_set_new(set_doc, be->name, offer) < 0) {
            json_decref(doc);
            return -ENOMEM;
        }
        if (json_object_set_new(caps, be->name, doc) < 0)
            return -ENOMEM;
    }
    {
        struct berth_error err = BERTH_ERROR_INIT;
        if (berth_backend_set_from_json(set_doc, &set, &err) < 0) {
            /* A plugin reported something placement cannot read: offer nothing. */
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "backend capabilities unusable: %s", err.message);
            if (berth_backend_set_empty(&set) < 0)
                return -ENOMEM;
        }
    }
    pthread_mutex_lock(&b->lock);
    berth_backend_set_free(b->offers);
    b->offers = set;
    b->fleet.offered_generation = 0; /* the workers' offer goes in again before the next placement */
    json_decref(b->capabilities);
    b->capabilities = json_incref(caps);
    pthread_mutex_unlock(&b->lock);
    return 0;
}

/* ---------------------------------------------------------------------- */

int broker_snap_one(void *userdata, const struct berth_job_record *rec)
{
    struct broker_snapshot *s = userdata;

    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct berth_job_record *v = reallocarray(s->v, cap, sizeof(*v));
        if (!v)
            return -ENOMEM;
        s->v = v;
        s->cap = cap;
    }
    if (berth_job_record_copy(&s->v[s->n], rec) < 0)
        return -ENOMEM;
    s->n++;
    return 0;
}

void broker_snapshot_clear(struct broker_snapshot *s)
{
    size_t i;

    for (i = 0; i < s->n; i++)
        berth_job_record_clear(&s->v[i]);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

/* The next reconcile page from the sweep cursor; *@ret_n = its length. */
static int take_page(struct berth_broker *b, struct broker_snapshot *s, size_t *ret_n, struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_page_open(b->p.journal, &b->sweep.cursor, BERTH_JOBSTORE_PAGE_MAX, broker_snap_one, s, ret_n, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r == -ENOMEM)
        berth_error_set(reterr, r, "out of memory");
    return r;
}

/* ---------------------------------------------------------------------- */

/* A backend's report on one job (the inspect document, plugin.h). */
struct outcome {
    json_t *doc;
    int state; /* index into inspect_states */
    bool has_exit_code;
    int exit_code;
    const char *reason;
    uint8_t *out, *err;
    size_t out_len, err_len;
    json_t *captured;     /* the outputs berthd captured (capture()), or NULL: none */
    json_t *output_error; /* {id, problem} when a declared output is invalid, or NULL */
    int64_t started_at, finished_at;
    const json_t *worker; /* a remote run: the result's "worker" member (borrowed), else NULL */
};

static void outcome_clear(struct outcome *o)
{
    json_decref(o->doc);
    json_decref(o->captured);
    json_decref(o->output_error);
    free(o->out);
    free(o->err);
    memset(o, 0, sizeof(*o));
}

static int parse_outcome(const char *text, size_t len, struct outcome *o, struct berth_error *reterr)
{
    const json_t *v;
    const char *state = NULL;
    int r;

    memset(o, 0, sizeof(*o));
    o->started_at = -1;
    r = berth_json_parse(text, len, INSPECT_MAX, &o->doc, reterr);
    if (r < 0)
        return r;
    if ((r = berth_json_string_member(o->doc, "inspect", "state", true, &state, reterr)) < 0 ||
        (!json_is_null(json_object_get(o->doc, "reason")) &&
         (r = berth_json_string_member(o->doc, "inspect", "reason", false, &o->reason, reterr)) < 0))
        goto fail;
    for (o->state = 0; o->state < (int)ELEMENTSOF(inspect_states); o->state++)
        if (streq(state, inspect_states[o->state]))
            break;
    if (o->state == (int)ELEMENTSOF(inspect_states)) {
        r = berth_error_set(reterr, -EBADMSG, "inspect.state \"%s\" is not a known state", state);
        goto fail;
    }
    v = json_object_get(o->doc, "exit_code");
    if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 255) {
        o->has_exit_code = true;
        o->exit_code = (int)json_integer_value(v);
    }
    if (berth_json_b64_value(json_object_get(o->doc, "stdout"), &o->out, &o->out_len) < 0 ||
        berth_json_b64_value(json_object_get(o->doc, "stderr"), &o->err, &o->err_len) < 0) {
        r = berth_error_set(reterr, -EBADMSG, "inspect.stdout and inspect.stderr must be base64url");
        goto fail;
    }
    v = json_object_get(o->doc, "started_at");
    if (v && !json_is_null(v) && berth_json_ns_value(v, &o->started_at) < 0)
        o->started_at = -1;
    v = json_object_get(o->doc, "finished_at");
    if (!v || berth_json_ns_value(v, &o->finished_at) < 0)
        o->finished_at = 0;
    return 0;
fail:
    outcome_clear(o);
    return r < 0 ? r : -EBADMSG;
}

/* Ask the backend about @rec.  0 with @o filled; -ENOENT confirmed absent;
 * other errors (backed off and logged once per failing period, broker-retry.c). */
static int inspect(struct berth_broker *b, const struct berth_broker_backend *be, const struct berth_job_record *rec,
                   struct outcome *o)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    r = be->ops->inspect(be->state, rec->run_id, &text, &len, &err);
    if (r >= 0)
        r = parse_outcome(text, len, o, &err);
    else if (r == -ENOENT)
        return r;
    if (r < 0) {
        broker_retry_failed(b, rec, BROKER_OP_INSPECT, be->name, &err);
        return r == -ENOENT ? -EIO : r;
    }
    broker_retry_succeeded(b, rec, BROKER_OP_INSPECT, be->name);
    return 0;
}

/* One transition and its audit event (broker_journal_write()); with
 * @through, two in the same transaction: to @through first, without an
 * audit event, then to @to. */
struct move_write {
    struct berth_broker *b;
    const struct berth_job_record *rec;
    bool has_through;
    enum berth_job_state through;
    enum berth_job_state to;
    const char *result, *audit_type;
    json_t *audit_extra;
    const char *warm; /* with the move to running: the warm slot it started in */
    const char *lease; /* with the move: a remote run's lease (jobstore.h) */
    const json_t *claim; /* with the move to claimed: the claim receipt recorded with it (pool.claim_receipt) */
    int64_t now;
};

static int move_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct move_write *m = userdata;
    int64_t revision = m->rec->revision;
    int r = 0;

    if (m->has_through && (r = berth_jobstore_transition(j, m->rec->run_id, revision++, m->through, NULL, m->now,
                                                         reterr)) < 0)
        return r;
    r = berth_jobstore_transition(j, m->rec->run_id, revision, m->to, m->result, m->now, reterr);
    if (r == 0 && m->warm)
        r = berth_jobstore_set_warm(j, m->rec->run_id, revision + 1, m->warm, reterr);
    if (r == 0 && m->lease)
        r = berth_jobstore_set_lease(j, m->rec->run_id, revision + 1, m->lease, reterr);
    if (r == 0 && m->audit_type)
        r = broker_audit(m->b, m->audit_type, m->rec, "berthd", json_incref(m->audit_extra), reterr);
    if (r == 0 && m->claim)
        r = berth_audit_append(j, m->b->p.audit_key, m->now, "pool.claim_receipt", "berthd", m->claim, NULL, reterr);
    return r;
}

/* The claim receipt (enrol.h, schema 2) of @rec's move to claimed on this
 * host, signed with the broker's receipt key: every run is attributable to
 * the host that ran it, a local one as well as a worker's. */
static int local_claim(struct berth_broker *b, const struct berth_job_record *rec, int64_t now, json_t **ret,
                       struct berth_error *reterr)
{
    _cleanup_json_ json_t *receipt = NULL, *effective = NULL;
    char receipt_digest[BERTH_DIGEST_BUFSZ];
    struct berth_claim_params p = {.by_broker = true,
                                   .worker_name = b->p.name,
                                   .job_id = rec->job_id,
                                   .job_digest = rec->job_digest,
                                   .receipt_digest = receipt_digest,
                                   .run_id = rec->run_id,
                                   .lease_revision = rec->revision + 1,
                                   .created_ns = now};
    int r;

    if (berth_digest_bytes(rec->receipt, strlen(rec->receipt), receipt_digest) < 0 ||
        !(receipt = json_loads(rec->receipt, 0, NULL)) || !(effective = json_loads(rec->effective, 0, NULL)))
        return berth_error_set(reterr, -EBADMSG, "job %s run %s: its stored receipt or manifest is damaged",
                               rec->job_id, rec->run_id);
    p.placement_hash = json_string_value(json_object_get(json_object_get(receipt, "receipt"), "placement_hash"));
    p.pool_hash = json_string_value(json_object_get(effective, "pool_hash"));
    r = berth_claim2_create(b->p.key, &p, ret, reterr);
    return r == -EINVAL ? berth_error_set(reterr, -EBADMSG, "job %s run %s cannot be claimed: %s", rec->job_id,
                                          rec->run_id, reterr ? reterr->message : "a malformed record")
                        : r;
}

/* Record @to, after @through when not NULL (lock held inside); on success @rec follows.  The move to
 * reaping, which comes before a sandbox is stopped, is a priority write
 * (it may use the space reserve); while storage is degraded every other
 * move fails at once with -ENOSPC.  A space failure is logged once, by the
 * degraded state, not here. */
static int move_steps(struct berth_broker *b, struct berth_job_record *rec, const enum berth_job_state *through,
                      enum berth_job_state to, const char *result, const char *audit_type, json_t *audit_extra,
                      const char *warm, const char *lease, struct berth_error *reterr)
{
    struct move_write m = {.b = b,
                           .rec = rec,
                           .has_through = through != NULL,
                           .through = through ? *through : to,
                           .to = to,
                           .result = result,
                           .audit_type = audit_type,
                           .audit_extra = audit_extra,
                           .warm = warm,
                           .lease = lease};
    _cleanup_json_ json_t *claim = NULL;
    char what[64];
    int r;

    snprintf(what, sizeof(what), "recording a job %s", berth_job_state_names[to]);
    pthread_mutex_lock(&b->lock);
    r = berth_now_ns(CLOCK_REALTIME, &m.now, reterr);
    /* Claimed here: the broker's signed claim goes into the chain with it
     * (a worker's claim is recorded by broker-remote.c, never here). */
    if (r == 0 && to == BERTH_JOB_CLAIMED && rec->state == BERTH_JOB_ACCEPTED && !broker_is_remote(rec) &&
        (r = local_claim(b, rec, m.now, &claim, reterr)) == 0)
        m.claim = claim;
    if (r == 0)
        r = broker_journal_write(b, to == BERTH_JOB_REAPING, move_write, &m, what, reterr);
    pthread_mutex_unlock(&b->lock);
    json_decref(audit_extra);
    if (r < 0) {
        if (r != -ESTALE && !berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: recording %s failed: %s", rec->job_id, rec->run_id,
                       berth_job_state_names[to], reterr->message);
        return r;
    }
    if (through) {
        berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s of %s: %s -> %s", rec->job_id, rec->run_id,
                   rec->principal, berth_job_state_names[rec->state], berth_job_state_names[*through]);
        rec->state = *through;
        rec->revision++;
    }
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "job %s run %s of %s: %s -> %s%s", rec->job_id, rec->run_id,
               rec->principal, berth_job_state_names[rec->state], berth_job_state_names[to], warm ? " (warm)" : "");
    rec->state = to;
    rec->revision++;
    if (lease) {
        char *copy = strdup(lease);
        if (copy) {
            free(rec->lease);
            rec->lease = copy;
        }
    }
    return 0;
}

static int move_full(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state to, const char *result,
                     const char *audit_type, json_t *audit_extra, const char *warm, const char *lease,
                     struct berth_error *reterr)
{
    return move_steps(b, rec, NULL, to, result, audit_type, audit_extra, warm, lease, reterr);
}

/* Record @through and then @to in one transaction (see move_full()); either
 * both are recorded or neither. */
static int move_through(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state through,
                        enum berth_job_state to, const char *result, const char *audit_type, json_t *audit_extra,
                        struct berth_error *reterr)
{
    return move_steps(b, rec, &through, to, result, audit_type, audit_extra, NULL, NULL, reterr);
}

/* Record @to (see move_full()), with the warm slot it started in. */
static int move_warm(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state to, const char *result,
                     const char *audit_type, json_t *audit_extra, const char *warm, struct berth_error *reterr)
{
    return move_full(b, rec, to, result, audit_type, audit_extra, warm, NULL, reterr);
}

/* Record @to (see move_full()), without a warm slot. */
static int move(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state to, const char *result,
                const char *audit_type, json_t *audit_extra, struct berth_error *reterr)
{
    return move_full(b, rec, to, result, audit_type, audit_extra, NULL, NULL, reterr);
}

static const enum berth_result_status status_of_state[] = {
    [BERTH_JOB_EXITED] = BERTH_RESULT_EXITED,
    [BERTH_JOB_FAILED] = BERTH_RESULT_FAILED,
    [BERTH_JOB_CANCELLED] = BERTH_RESULT_CANCELLED,
    [BERTH_JOB_EXPIRED] = BERTH_RESULT_EXPIRED,
};

/* Let @be reap terminal @rec, then remove its staged image.  A reap that
 * fails is asked again with backoff (reap_owed(), each reconcile pass), at
 * most REAP_TRIES times (about half an hour), then left to retention's
 * prune, which reaps too; the staged image stays until a reap worked: the
 * sandbox may still use it.  A backend no longer configured (or without
 * reap) holds nothing. */
static void reap_recorded(struct berth_broker *b, const struct berth_broker_backend *be,
                          const struct berth_job_record *rec)
{
    if (be && be->ops->reap) {
        struct berth_error err = BERTH_ERROR_INIT;
        int rr = be->ops->reap(be->state, rec->run_id, &err);
        if (rr < 0 && rr != -ENOENT) {
            broker_retry_failed(b, rec, BROKER_OP_REAP, be->name, &err);
            if (broker_retry_failures(b, rec->run_id, BROKER_OP_REAP) >= REAP_TRIES) {
                berth_logf(b->p.logger, BERTH_LOG_WARNING,
                           "job %s run %s: backend %s reap failed %d times; left to retention's prune: %s",
                           rec->job_id, rec->run_id, be->name, REAP_TRIES, err.message);
                broker_retry_forget(b, rec->run_id);
            }
            return;
        }
        broker_retry_succeeded(b, rec, BROKER_OP_REAP, be->name);
    } else {
        broker_retry_forget(b, rec->run_id);
    }
    broker_unstage(b, rec);
}

/* @rec's terminal state is durable: count it, let the backend reap the job
 * (when @reached: it may hold something of it) and remove its staged image. */
static void after_recorded(struct berth_broker *b, const struct berth_job_record *rec, bool reached,
                           struct berth_pass_stats *stats)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);

    broker_retry_forget(b, rec->run_id);
    if (broker_is_remote(rec))
        broker_fleet_dequeue(b, rec->run_id); /* a queued run that ended before a worker claimed it */
    if (stats) {
        if (rec->state == BERTH_JOB_CANCELLED)
            stats->cancelled++;
        else if (rec->state == BERTH_JOB_EXPIRED)
            stats->expired++;
        else if (rec->state == BERTH_JOB_FAILED)
            stats->failed++;
        else
            stats->finished++;
    }
    /* Releasing the sandbox is best effort and the plugin keeps its tombstone. */
    if (reached)
        reap_recorded(b, be, rec);
    else
        broker_unstage(b, rec);
}

/* Reaps that failed after their job's result was recorded (a plugin may
 * record the result before its sandbox's supervisor is done, runtime-oci's
 * early result), due again after their backoff: at most 16 a pass, and
 * none after REAP_PASS_BUDGET_NS of them (a plugin's reap may wait seconds
 * for a supervisor, on the thread that records results). */
static void reap_owed(struct berth_broker *b)
{
    char ids[16][BERTH_RUN_ID_LEN + 1];
    size_t n = broker_retry_reaps_due(b, ids, ELEMENTSOF(ids)), i;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, REAP_PASS_BUDGET_NS);

    for (i = 0; i < n && !atomic_load(&b->stopping) && !berth_deadline_passed(CLOCK_MONOTONIC, until); i++) {
        struct berth_job_record rec = {0};
        struct berth_error err = BERTH_ERROR_INIT;
        int r;

        pthread_mutex_lock(&b->lock);
        r = berth_jobstore_find_run(b->p.journal, ids[i], &rec, &err);
        pthread_mutex_unlock(&b->lock);
        if (r == 0 && berth_job_state_terminal(rec.state))
            reap_recorded(b, broker_backend(b, rec.backend), &rec);
        else if (r == 0 || r == -ENOENT)
            broker_retry_forget(b, ids[i]); /* pruned (prune reaps it), or not terminal after all */
        berth_job_record_clear(&rec);
    }
}

/* Record the signed @result of @rec as @to (through finalizing when the
 * record is still running), then after_recorded().  When the journal has no
 * space, the result is kept in memory instead (0; logged unless @again, a
 * retry of a result kept already) and recorded later, byte for byte, by
 * record_unrecorded().  Other errors are move()'s. */
static int record_result(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state to,
                         const char *result, json_t *audit, bool reached, bool again, struct berth_pass_stats *stats,
                         struct berth_error *reterr)
{
    int r;

    /* From running, through finalizing in the same transaction: one commit
     * (one fsync) less before the client has its result.  Nothing happens
     * between the two; when the pair fails, the job is still running, as
     * when the move to finalizing failed on its own. */
    if (rec->state == BERTH_JOB_RUNNING)
        r = move_through(b, rec, BERTH_JOB_FINALIZING, to, result, "job.finished", json_incref(audit), reterr);
    else
        r = move(b, rec, to, result, "job.finished", json_incref(audit), reterr);
    if (r == 0) {
        broker_result_recorded(b, rec); /* before the reap, which may take seconds */
        after_recorded(b, rec, reached, stats);
        return 0;
    }
    if (!berth_space_error(r))
        return r;
    r = broker_unrecorded_keep(b, rec, to, result, audit, reached);
    if (r < 0) {
        /* The job stays open in the journal and its backend keeps the outcome: a later pass asks again. */
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: out of memory keeping its unrecorded result",
                   rec->job_id, rec->run_id);
        return r;
    }
    if (!again)
        berth_logf(b->p.logger, BERTH_LOG_NOTICE,
                   "job %s run %s of %s: %s, but the journal has no space: the signed result is kept in memory and "
                   "recorded when space returns",
                   rec->job_id, rec->run_id, rec->principal, berth_job_state_names[to]);
    return 0;
}

/* Sign and record the terminal result @to for @rec, from @o (may be NULL:
 * the job never ran or nothing is known), then let the backend reap it. */
static int finish(struct berth_broker *b, struct berth_job_record *rec, enum berth_job_state to,
                  const struct outcome *o, const char *reason, struct berth_pass_stats *stats,
                  struct berth_error *reterr)
{
    struct berth_job *job = NULL;
    _cleanup_json_ json_t *receipt = NULL, *result = NULL, *audit = NULL, *warm = NULL;
    _cleanup_free_ char *text = NULL;
    struct berth_result_params rp;
    bool reached = rec->state != BERTH_JOB_ACCEPTED; /* the backend may hold something of it */
    int64_t finished_at = o && o->finished_at > 0 ? o->finished_at : 0;
    int r;

    /* A backend that did not say when the job finished: it is now. */
    if (finished_at == 0 && (r = berth_now_ns(CLOCK_REALTIME, &finished_at, reterr)) < 0)
        return r;
    r = berth_job_parse(rec->job, strlen(rec->job), &job, reterr);
    if (r < 0)
        return r;
    receipt = json_loads(rec->receipt, JSON_REJECT_DUPLICATES, NULL);
    warm = rec->warm ? json_loads(rec->warm, JSON_REJECT_DUPLICATES, NULL) : NULL;
    rp = (struct berth_result_params){
        .broker = b->p.name,
        .job = job,
        .receipt = receipt,
        .status = status_of_state[to],
        .has_exit_code = o && o->has_exit_code,
        .exit_code = o ? o->exit_code : 0,
        .reason = reason ? reason : (o ? o->reason : NULL),
        .out = o ? o->out : NULL,
        .out_len = o ? o->out_len : 0,
        .err = o ? o->err : NULL,
        .err_len = o ? o->err_len : 0,
        .outputs = o ? o->captured : NULL, /* never the plugin's own list */
        .output_error = o ? o->output_error : NULL,
        .started_at = o ? o->started_at : -1,
        .finished_at = finished_at,
        .warm = warm,
        .worker = o ? o->worker : NULL,
    };
    if (rp.output_error) {
        rp.status = BERTH_RESULT_FAILED;
        rp.reason = "output_invalid";
    }
    r = receipt ? berth_result_create(b->p.key, &rp, &result, reterr) : -EBADMSG;
    if (r == -EFBIG && rp.worker) {
        /* A worker's report is recorded as it was signed, or not at all. */
        berth_job_free(job);
        return -EINVAL;
    }
    if (r == -EFBIG) {
        /* More output than the job allowed: the backend broke its bound. */
        rp.status = BERTH_RESULT_FAILED;
        rp.reason = "output_limit";
        rp.out = rp.err = NULL;
        rp.out_len = rp.err_len = 0;
        r = berth_result_create(b->p.key, &rp, &result, reterr);
    }
    if (r == 0)
        r = berth_json_serialize(result, 0, &text, NULL, reterr);
    berth_job_free(job);
    if (r < 0) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: cannot make its result: %s", rec->job_id, rec->run_id,
                   reterr->message);
        return r == -EINVAL && rp.worker ? -EINVAL : r;
    }
    audit = json_pack("{s:s, s:s?}", "status", berth_result_status_names[rp.status], "reason", rp.reason);
    if (!audit)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return record_result(b, rec, rp.status == BERTH_RESULT_FAILED ? BERTH_JOB_FAILED : to, text, audit, reached, false,
                         stats, reterr);
}

/* The record of kept result @u moved on from the revision it expects (a
 * cancellation was recorded meanwhile): take the new revision when the job
 * is still in the same state (0), or say why the result is dropped:
 * -EALREADY (a terminal result is recorded), -ESTALE (another state:
 * reconcile decides again from the backend, which still has the job). */
static int rebase(struct berth_broker *b, struct broker_unrecorded *u, struct berth_error *reterr)
{
    struct berth_job_record cur = {0};
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_find_run(b->p.journal, u->rec.run_id, &cur, reterr);
    pthread_mutex_unlock(&b->lock);
    if (r < 0)
        return r;
    if (berth_job_state_terminal(cur.state)) {
        r = -EALREADY;
    } else if (cur.state != u->rec.state) {
        r = -ESTALE;
    } else {
        u->rec.revision = cur.revision;
        u->rec.cancel_requested = cur.cancel_requested;
    }
    berth_job_record_clear(&cur);
    return r;
}

/* Once storage is usable again, record the results kept in memory, oldest
 * first, until one fails for space again.  Return: 0; -EIO or -EBADMSG. */
static int record_unrecorded(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    if (!broker_storage_check(b))
        return 0;
    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;
        struct broker_unrecorded u;
        bool got;
        int r;

        pthread_mutex_lock(&b->lock);
        got = !broker_storage_degraded(b) && broker_unrecorded_take(b, &u);
        pthread_mutex_unlock(&b->lock);
        if (!got)
            return 0;
        r = record_result(b, &u.rec, u.to, u.result, u.audit, u.reached, true, stats, &err);
        if (r == -ESTALE && (r = rebase(b, &u, &err)) == 0) {
            berth_logf(b->p.logger, BERTH_LOG_INFO,
                       "job %s run %s: its record moved on to revision %lld meanwhile; the kept result goes on it",
                       u.rec.job_id, u.rec.run_id, (long long)u.rec.revision);
            r = record_result(b, &u.rec, u.to, u.result, u.audit, u.reached, true, stats, &err);
        }
        if (r == -EALREADY || r == -ESTALE)
            berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: its kept result is dropped: %s", u.rec.job_id,
                       u.rec.run_id,
                       r == -EALREADY ? "a result is recorded already" : "the job moved on; reconcile asks again");
        else if (r == -EIO || r == -EBADMSG)
            berth_error_set(reterr, r, "%s", err.message);
        else if (r < 0)
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: recording its kept result failed: %s",
                       u.rec.job_id, u.rec.run_id, err.message);
        broker_unrecorded_clear(&u);
        if (r == -EIO || r == -EBADMSG)
            return r;
    }
}

/* Whether run @run_id has a result waiting in memory (passes leave it alone). */
static bool unrecorded(struct berth_broker *b, const char *run_id)
{
    bool has;

    pthread_mutex_lock(&b->lock);
    has = broker_unrecorded_has(b, run_id);
    pthread_mutex_unlock(&b->lock);
    return has;
}

/* Proof of teardown (plugin.h: cancel returns 0 only once every process of
 * the job is gone): ask @be to stop @rec and prove it.  0 proven; -ENOENT
 * the backend confirms it never had or has released the job; -EBUSY not
 * proven (or not due: an unproven teardown is asked again after its
 * backoff, broker-retry.c). */
static int teardown(struct berth_broker *b, const struct berth_broker_backend *be, const struct berth_job_record *rec)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r;

    if (!broker_retry_due(b, rec->run_id, BROKER_OP_CANCEL))
        return -EBUSY;
    r = be->ops->cancel(be->state, rec->run_id, &err);
    if (r < 0 && r != -ENOENT) {
        broker_retry_failed(b, rec, BROKER_OP_CANCEL, be->name, &err);
        return -EBUSY;
    }
    broker_retry_succeeded(b, rec, BROKER_OP_CANCEL, be->name);
    return r < 0 ? r : 0;
}

static const enum berth_job_state terminal_of[] = {
    0, 0, BERTH_JOB_EXITED, BERTH_JOB_FAILED, BERTH_JOB_CANCELLED, BERTH_JOB_EXPIRED};

/* Before a result is signed from @o: when the job exited, capture its
 * declared outputs into @o (broker-outputs.c).  0 (captured, or an output
 * judged invalid); -EAGAIN: not now (a transient failure, retried after
 * the per-job backoff; the job keeps its state). */
static int capture(struct berth_broker *b, const struct berth_broker_backend *be, const struct berth_job_record *rec,
                   struct outcome *o)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (terminal_of[o->state] != BERTH_JOB_EXITED)
        return 0; /* only a job that finished on its own has outputs to keep */
    if (!broker_retry_due(b, rec->run_id, BROKER_OP_CAPTURE))
        return -EAGAIN;
    if (broker_capture_outputs(b, be, rec, o->doc, &o->captured, &o->output_error, &err) < 0) {
        broker_retry_failed(b, rec, BROKER_OP_CAPTURE, be->name, &err);
        return -EAGAIN;
    }
    broker_retry_succeeded(b, rec, BROKER_OP_CAPTURE, be->name);
    return 0;
}

/* A job being stopped: ask the backend to cancel, then record the outcome.
 * A job that ended on its own meanwhile (exited, or failed for its own
 * reason) keeps that outcome; one the stop ended is cancelled (a cancel was
 * requested), expired (its deadline passed) or failed/lost. */
static int reap(struct berth_broker *b, const struct berth_broker_backend *be, struct berth_job_record *rec,
                int64_t now, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    struct outcome o = {0};
    enum berth_job_state to;
    const char *reason = NULL;
    int r;

    r = teardown(b, be, rec);
    if (r == -EBUSY) {
        if (stats)
            stats->errors++;
        return 0;
    }
    r = r == -ENOENT ? -ENOENT : inspect(b, be, rec, &o);
    if (r == 0 && (terminal_of[o.state] == BERTH_JOB_EXITED ||
                   (terminal_of[o.state] == BERTH_JOB_FAILED && !streq_ptr(o.reason, "supervisor_lost") &&
                    !(rec->cancel_requested && streq_ptr(o.reason, "runtime_lost"))))) {
        to = terminal_of[o.state]; /* it ended on its own before the stop reached it */
        if (capture(b, be, rec, &o) < 0) {
            outcome_clear(&o);
            if (stats)
                stats->errors++;
            return 0;
        }
    } else if (rec->cancel_requested) {
        to = BERTH_JOB_CANCELLED;
        reason = rec->cancel_reason ? rec->cancel_reason : "cancelled";
    } else if (now > rec->deadline) {
        to = BERTH_JOB_EXPIRED;
        reason = "deadline";
    } else {
        to = BERTH_JOB_FAILED;
        reason = "lost";
    }
    r = finish(b, rec, to, r == 0 ? &o : NULL, reason, stats, reterr);
    outcome_clear(&o);
    return r;
}

/* ---------------------------------------------------------------------- */
/* Remote runs (docs/workers.md): their worker drives them; berthd records. */

int broker_remote_finish(struct berth_broker *b, struct berth_job_record *rec, const struct broker_remote_outcome *ro,
                         struct berth_error *reterr)
{
    struct outcome o = {
        .has_exit_code = ro->has_exit_code,
        .exit_code = ro->exit_code,
        .reason = ro->reason,
        .out = (uint8_t *)ro->out,
        .out_len = ro->out_len,
        .err = (uint8_t *)ro->err,
        .err_len = ro->err_len,
        .captured = (json_t *)ro->outputs,
        .output_error = (json_t *)ro->output_error,
        .started_at = ro->started_at,
        .finished_at = ro->finished_at,
        .worker = ro->worker,
    };
    int r = 0;

    if (rec->state == BERTH_JOB_CLAIMED)
        r = move(b, rec, BERTH_JOB_RUNNING, NULL, "job.started", NULL, reterr);
    /* The outcome's buffers are the caller's: finish() only reads them. */
    if (r == 0)
        r = finish(b, rec, ro->to, &o, NULL, NULL, reterr);
    if (r == 0)
        broker_runio_forget(b, rec->run_id);
    return r;
}

int broker_remote_fence(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                        struct berth_pass_stats *stats, struct berth_error *reterr)
{
    enum berth_job_state to = rec->cancel_requested ? BERTH_JOB_CANCELLED
                              : now > rec->deadline ? BERTH_JOB_EXPIRED
                                                    : BERTH_JOB_FAILED;
    int r = 0;

    /* A claimed run goes to cancelled only through reaping (jobstore.h). */
    if (rec->state == BERTH_JOB_CLAIMED && to == BERTH_JOB_CANCELLED)
        r = move(b, rec, BERTH_JOB_REAPING, NULL, NULL, NULL, reterr);
    if (r == 0)
        r = finish(b, rec, to, NULL, "worker_lost", stats, reterr);
    if (r == 0) {
        broker_runio_forget(b, rec->run_id);
        berth_logf(b->p.logger, BERTH_LOG_WARNING,
                   "job %s run %s: the lease of its worker ran out: fenced (%s, worker_lost); it is never run again",
                   rec->job_id, rec->run_id, berth_job_state_names[to]);
    }
    return r;
}

int broker_remote_started(struct berth_broker *b, struct berth_job_record *rec, const char *lease,
                          struct berth_error *reterr)
{
    return move_full(b, rec, BERTH_JOB_RUNNING, NULL, "job.started", NULL, NULL, lease, reterr);
}

/* Reconcile one open job; @fault (or NULL) is hit right before the
 * terminal result of a job found finished is signed and recorded. */
static int reconcile_one(struct berth_broker *b, struct berth_job_record *rec, int64_t now, const char *fault,
                         struct berth_pass_stats *stats, struct berth_error *reterr)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);
    struct outcome o = {0};
    bool stop = rec->cancel_requested || now > rec->deadline;
    int r;

    if (broker_is_remote(rec) && rec->state != BERTH_JOB_ACCEPTED)
        return broker_remote_reconcile(b, rec, now, stats, reterr);

    if (rec->state == BERTH_JOB_ACCEPTED) {
        /* Never started: decide without any backend. */
        if (rec->cancel_requested)
            return finish(b, rec, BERTH_JOB_CANCELLED, NULL,
                          rec->cancel_reason ? rec->cancel_reason : "cancelled_before_start", stats, reterr);
        if (now > rec->deadline)
            return finish(b, rec, BERTH_JOB_EXPIRED, NULL, "deadline_before_start", stats, reterr);
        if (broker_is_remote(rec))
            return broker_remote_reconcile(b, rec, now, stats, reterr);
        return 0;
    }
    if (!be) {
        /* Its backend is no longer configured: nothing can stop or ask it. */
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: backend %s is not configured; left %s", rec->job_id,
                   rec->run_id, rec->backend, berth_job_state_names[rec->state]);
        return 0;
    }
    /* A job whose inspect failed is asked again after its backoff, unless
     * it is to be stopped: a stop never waits for a backoff. */
    if (!stop && rec->state != BERTH_JOB_REAPING && !broker_retry_due(b, rec->run_id, BROKER_OP_INSPECT))
        return 0;
    if (rec->state == BERTH_JOB_CLAIMED) {
        r = inspect(b, be, rec, &o);
        outcome_clear(&o);
        if (r == -ENOENT && !stop)
            return 0; /* never reached the backend: dispatch starts it */
        if (r < 0 && r != -ENOENT)
            return 0;
        if (stop)
            r = move(b, rec, BERTH_JOB_REAPING, NULL, NULL, NULL, reterr);
        else
            r = move(b, rec, BERTH_JOB_RUNNING, NULL, "job.started", NULL, reterr);
        if (r < 0)
            return r == -ESTALE ? 0 : r;
    }
    if (rec->state == BERTH_JOB_REAPING)
        return reap(b, be, rec, now, stats, reterr);

    /* running or finalizing: has it finished?  Asked first even when it is to
     * be stopped, so that a job that ended in time keeps its own outcome. */
    r = inspect(b, be, rec, &o);
    if (r == -ENOENT) {
        if (rec->state == BERTH_JOB_FINALIZING)
            return finish(b, rec, BERTH_JOB_FAILED, NULL, "lost", stats, reterr);
        r = move(b, rec, BERTH_JOB_REAPING, NULL, NULL, NULL, reterr);
        return r < 0 ? (r == -ESTALE ? 0 : r) : reap(b, be, rec, now, stats, reterr);
    }
    if (r < 0 && stats)
        stats->errors++;
    if (r == 0 && o.state >= INSPECT_FIRST_TERMINAL) {
        /* An output capture that failed is tried again after its backoff. */
        if (!broker_retry_due(b, rec->run_id, BROKER_OP_CAPTURE)) {
            outcome_clear(&o);
            return 0;
        }
        /* A terminal result only once the backend proved that nothing of
         * the job runs; until then a running job is reaping (and a
         * finalizing one stays so), asked again after its backoff. */
        if (teardown(b, be, rec) == -EBUSY) {
            outcome_clear(&o);
            if (rec->state != BERTH_JOB_RUNNING)
                return 0;
            r = move(b, rec, BERTH_JOB_REAPING, NULL, NULL, NULL, reterr);
            return r == -ESTALE ? 0 : r;
        }
        /* Outputs are read once nothing of the job can write them any more. */
        if (capture(b, be, rec, &o) < 0) {
            outcome_clear(&o);
            if (stats)
                stats->errors++;
            return 0;
        }
        if (fault)
            broker_fault(b, fault);
        /* finish() signs the result first: it is kept even when it cannot be recorded. */
        r = finish(b, rec, terminal_of[o.state], &o, NULL, stats, reterr);
    } else if (stop && rec->state == BERTH_JOB_RUNNING) {
        outcome_clear(&o);
        r = move(b, rec, BERTH_JOB_REAPING, NULL, NULL, NULL, reterr);
        if (r == 0)
            return reap(b, be, rec, now, stats, reterr);
    } else {
        r = 0;
    }
    outcome_clear(&o);
    return r == -ESTALE ? 0 : r;
}

int berth_broker_reconcile(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr)
{
    struct broker_snapshot s = {0};
    int64_t now;
    size_t i, n = 0;
    int r;

    if (!b)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    atomic_fetch_add(&b->events.passes, 1);
    r = record_unrecorded(b, stats, reterr);
    if (r == 0)
        r = take_page(b, &s, &n, reterr);
    if (r == 0)
        r = berth_now_ns(CLOCK_REALTIME, &now, reterr);
    b->sweep.cycle_visited += n;
    if (stats) {
        stats->visited += (unsigned)n;
        stats->more = n == BERTH_JOBSTORE_PAGE_MAX;
    }
    for (i = 0; r == 0 && i < s.n && !atomic_load(&b->stopping); i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        int rr;

        if (unrecorded(b, s.v[i].run_id) || broker_starts_busy(b, s.v[i].run_id))
            continue; /* its result waits for space, or its start is under way (asked on a later pass) */
        rr = broker_sweep_job(b, &s.v[i], now, stats, &err);
        if (rr >= 0) /* an undecided job is still reconciled */
            rr = reconcile_one(b, &s.v[i], now, NULL, stats, &err);
        /* A journal that cannot be trusted stops the pass; anything else (a
         * full filesystem included) is this job's problem only. */
        if (rr == -EIO || rr == -EBADMSG) {
            r = berth_error_set(reterr, rr, "%s", err.message);
        } else if (rr < 0 && stats) {
            stats->errors++;
        }
    }
    broker_snapshot_clear(&s);
    if (r < 0 || atomic_load(&b->stopping))
        atomic_store(&b->sweep.cycle_error, true); /* the round is not whole */
    else if (n < BERTH_JOBSTORE_PAGE_MAX)
        broker_sweep_cycle_end(b);
    if (r == 0 && !atomic_load(&b->stopping))
        reap_owed(b);
    if (r == 0 && !atomic_load(&b->stopping))
        r = broker_prune_pass(b, now, stats, reterr);
    return r;
}

int broker_reconcile_job(struct berth_broker *b, struct berth_job_record *rec, int64_t now, const char *fault,
                         struct berth_pass_stats *stats, struct berth_error *reterr)
{
    /* A start under way owns the job until it returns (broker-starts.c),
     * which then asks for this look again. */
    if (broker_starts_busy(b, rec->run_id))
        return 0;
    return reconcile_one(b, rec, now, fault, stats, reterr);
}

/* Dispatch's recheck of a queued job (accepted or claimed): 1 when it no
 * longer qualifies and berthd recorded its cancellation (an accepted one is
 * finished at once: it never reached the backend; a claimed one is
 * reaped by reconcile), 0 when it may go on, or -EIO/-EBADMSG.  A job that
 * cannot be judged now waits (1: it is not started on this pass). */
static int dispatch_refused(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                            struct berth_pass_stats *stats, struct berth_error *reterr)
{
    int r = broker_sweep_job(b, rec, now, stats, reterr);

    if (r != 0)
        return r; /* undecided (1) or the journal */
    if (!rec->cancel_requested)
        return 0;
    if (rec->state == BERTH_JOB_ACCEPTED) {
        r = finish(b, rec, BERTH_JOB_CANCELLED, NULL, rec->cancel_reason, stats, reterr);
        if (r < 0)
            return r == -ESTALE ? 1 : r;
    }
    return 1;
}

/* Whether claimed @rec is still as the dispatch pass read it: 0 when it is;
 * 1 when its record moved on meanwhile (a cancellation, or another state:
 * reconcile looks at it next, and it is not started); -EIO/-EBADMSG. */
static int claim_unchanged(struct berth_broker *b, const struct berth_job_record *rec, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job_record cur = {0};
    int r;

    pthread_mutex_lock(&b->lock);
    r = berth_jobstore_find_run(b->p.journal, rec->run_id, &cur, &err);
    pthread_mutex_unlock(&b->lock);
    if (r == 0)
        r = cur.state != rec->state || cur.revision != rec->revision || cur.cancel_requested ? 1 : 0;
    else if (r == -EIO || r == -EBADMSG)
        r = berth_error_set(reterr, r, "%s", err.message);
    else
        r = 1; /* gone, or unreadable now: not started on this pass */
    berth_job_record_clear(&cur);
    return r;
}

/* The document a runtime's start() receives (plugin.h). */
static int dispatch_doc(const struct berth_job_record *rec, const json_t *job, const char *rootfs,
                        const char *inputs_dir, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;

    doc = json_pack("{s:i, s:o, s:O, s:o, s:s*, s:s*}", "schema_version", 1, "receipt",
                    json_loads(rec->receipt, JSON_REJECT_DUPLICATES, NULL), "job", job, "effective",
                    json_loads(rec->effective, JSON_REJECT_DUPLICATES, NULL), "rootfs", rootfs, "inputs_dir",
                    inputs_dir);
    if (!doc)
        return berth_error_set(reterr, -EBADMSG, "the stored job, receipt or manifest is damaged");
    return berth_json_serialize(doc, 0, ret, ret_len, reterr);
}

int broker_dispatch_claim(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                          struct berth_pass_stats *stats, bool *staging, struct berth_error *reterr)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);
    int r;

    if (rec->cancel_requested || now > rec->deadline || !be)
        return 0; /* reconcile's business */
    if (rec->state != BERTH_JOB_ACCEPTED && rec->state != BERTH_JOB_CLAIMED)
        return 0;
    if ((r = dispatch_refused(b, rec, now, stats, reterr)) != 0)
        return r < 0 ? r : 0;
    if (rec->state == BERTH_JOB_ACCEPTED) {
        r = move(b, rec, BERTH_JOB_CLAIMED, NULL, NULL, NULL, reterr);
        if (r < 0)
            return r == -ESTALE ? 0 : r;
        broker_fault(b, "dispatch-after-claim");
    } else if (rec->state != BERTH_JOB_CLAIMED) {
        return 0;
    }
    /* Staging that failed for a reason of the host (space, I/O, memory) is
     * retried with backoff, for every job alike: one line when it starts
     * failing, one when it works again. */
    if (!broker_retry_due(b, rec->run_id, BROKER_OP_START))
        return 0; /* its start failed: tried again after its backoff */
    *staging = true;
    return broker_stage_due(b) ? 1 : 0;
}

int broker_dispatch_start(struct berth_broker *b, struct berth_job_record *rec, struct berth_pass_stats *stats,
                          struct berth_error *reterr)
{
    const struct berth_broker_backend *be = broker_backend(b, rec->backend);
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = NULL, *rootfs = NULL, *inputs_dir = NULL, *warm_text = NULL;
    _cleanup_json_ json_t *job = NULL, *warm = NULL;
    json_t *started = NULL;
    const char *image;
    size_t len = 0;
    int64_t now;
    int r;

    if (!be)
        return 0;
    job = json_loads(rec->job, JSON_REJECT_DUPLICATES, NULL);
    image = json_string_value(json_object_get(job, "image"));
    if (!image)
        return finish(b, rec, BERTH_JOB_FAILED, NULL, "damaged_record", stats, reterr);
    /* A cached root, or one staging at a time (broker-stage.c). */
    r = broker_stage(b, rec, image, &rootfs, &err);
    if (r == -EBADMSG) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: image %s refused at staging: %s", rec->job_id,
                   rec->run_id, image, err.message);
        return finish(b, rec, BERTH_JOB_FAILED, NULL, "image_refused", stats, reterr);
    }
    if (r == 0) {
        r = broker_stage_inputs(b, rec, job, &inputs_dir, &err);
        /* Bytes that are not their digest, or an input gone from the store: it cannot run as accepted. */
        if (r == -EBADMSG || r == -ENOENT || r == -EIDRM) {
            berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: its inputs cannot be staged: %s", rec->job_id,
                       rec->run_id, err.message);
            return finish(b, rec, BERTH_JOB_FAILED, NULL, r == -EBADMSG ? "input_invalid" : "input_unavailable", stats,
                          reterr);
        }
    }
    if (r < 0) {
        char what[BERTH_DIGEST_BUFSZ + 16];
        snprintf(what, sizeof(what), rootfs || !b->p.stage_ops ? "its inputs" : "image %s", image);
        broker_stage_failed(b, rec, what, r, &err);
        if (stats)
            stats->errors++;
        return 0;
    }
    broker_stage_succeeded(b, rec);
    r = dispatch_doc(rec, job, rootfs, inputs_dir, &doc, &len, reterr);
    if (r < 0)
        return finish(b, rec, BERTH_JOB_FAILED, NULL, "damaged_record", stats, reterr);
    broker_fault(b, "dispatch-before-start");
    /* Staging takes time: the job may have been cancelled, or its
     * qualification or grant may have ended meanwhile. */
    if ((r = claim_unchanged(b, rec, reterr)) != 0 || (r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0 ||
        (r = dispatch_refused(b, rec, now, stats, reterr)) != 0)
        return r < 0 ? r : 0;
    r = broker_warm_claim(b, rec, job, doc, len, &warm, &err);
    if (r == 0)
        r = be->ops->start(be->state, doc, len, &err);
    else if (r > 0)
        r = 0; /* started in a warm slot (1), or before (2) */
    if (r == -EBADMSG || r == -EKEYREJECTED || r == -ETIME || r == -EPERM) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "job %s run %s: backend %s refused to start it: %s", rec->job_id,
                   rec->run_id, be->name, err.message);
        if (r == -ETIME)
            return finish(b, rec, BERTH_JOB_EXPIRED, NULL, "deadline", stats, reterr);
        return finish(b, rec, BERTH_JOB_FAILED, NULL, r == -EPERM ? "backend_refused" : "start_refused", stats, reterr);
    }
    if (r < 0) {
        /* Uncertain: the claim stays; reconcile asks, dispatch retries (start is idempotent). */
        broker_retry_failed(b, rec, BROKER_OP_START, be->name, &err);
        if (stats)
            stats->errors++;
        return 0;
    }
    broker_retry_succeeded(b, rec, BROKER_OP_START, be->name);
    broker_fault(b, "dispatch-after-start");
    if (warm && (berth_json_serialize(warm, 0, &warm_text, NULL, reterr) < 0 ||
                 !(started = json_pack("{s:O}", "warm", warm))))
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: out of memory recording its warm slot", rec->job_id,
                   rec->run_id);
    r = move_warm(b, rec, BERTH_JOB_RUNNING, NULL, "job.started", TAKE_PTR(started), warm_text, reterr);
    if (r == 0 && warm_text) {
        free(rec->warm);
        rec->warm = TAKE_PTR(warm_text);
    }
    if (r == 0 && stats)
        stats->started++;
    return r == -ESTALE ? 0 : r;
}
