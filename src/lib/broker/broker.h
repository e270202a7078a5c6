/* SPDX-License-Identifier: MIT */
/*
 * broker.h -- the broker: authenticated job submission, durable receipts,
 * dispatch to runtime backends, reconcile, signed results.
 *
 * Everything a caller may do is an operation here that takes the caller's
 * client-certificate fingerprint (lowercase hex SHA-256 of the leaf DER) and
 * fills a struct berth_reply with an HTTP status, an error code and a JSON
 * body; berthd only carries bytes.  Every operation reads the current host
 * policy (policy.h) and rechecks the caller's grant, retries and
 * collection included.
 *
 * Job identity is the request key (principal, canonical scope, job id).  A
 * submission is recorded, with its signed receipt, in a journal transaction
 * before anything runs; berth_broker_submit_batch() accepts many
 * submissions in one transaction (one fsync) and its replies are valid only
 * once it returns.  Backends are called only from berth_broker_reconcile()
 * and berth_broker_dispatch(), which must be driven by one thread at a time
 * (the "worker"); they record intent before every backend call and check
 * the expected revision after it, so a late writer never overwrites newer
 * state, and a job id is never started twice: start is issued only after
 * "claimed" is durable, and runtime plugins keep a tombstone per id.
 *
 * Every function is thread-safe: the broker serialises journal access with
 * its own mutex and never holds it across a backend call.
 *
 * A full state filesystem degrades the broker; it never stops it.  When a
 * write fails for space (-ENOSPC or -EDQUOT: a journal commit, or staging
 * an image below stage_directory), the broker is "storage degraded" until
 * berth_journal_check_space() finds room again (tried from reconcile
 * passes with backoff, 250 ms doubling to 30 s; journal.h).  While degraded:
 *   - reads are served as always (inspect, result, capabilities, pools,
 *     audit, job counts), and an identical retry of an accepted job still
 *     gets its stored receipt;
 *   - a new submission or pool registration is refused with 503
 *     "storage_full", its message saying when to retry; nothing of it is
 *     recorded (the log says "accepted" only after a commit succeeded);
 *   - a cancellation is still recorded, and so is the move to "reaping"
 *     that stops a sandbox: they run with BERTH_JOURNAL_USE_RESERVE, so the
 *     first one on a full filesystem releases the journal's space reserve;
 *     every other write is held back until the reserve is re-created, so
 *     the freed space is theirs (dozens of cancellations per MiB);
 *   - a job that finished keeps its signed result in memory ("unrecorded");
 *     once space returns it is recorded with the same bytes, exactly once
 *     (the transition names the revision it expects), then the backend
 *     reaps it.  If berthd stops first, nothing is lost: the job is still
 *     open in the journal and the backend still holds its outcome, so the
 *     next start's reconcile records it;
 *   - dispatch starts nothing while the journal is full (a claim could
 *     not be recorded); staging retries back off (same schedule) and log
 *     one line when they start failing and one when they work again.
 * Only a journal that cannot be trusted stops the worker: -EIO (a read or
 * an fsync failed) and -EBADMSG (corruption) from reconcile or dispatch.
 *
 * Sweeps.  Every reconcile pass visits one page of at most
 * BERTH_JOBSTORE_PAGE_MAX (256) open jobs, from a cursor kept across passes
 * (jobstore.h, berth_jobstore_page_open()); a page shorter than that ends
 * a round and the cursor starts again.  For each accepted, claimed or
 * running job nobody has cancelled, the pass rechecks
 *   - the grant: the host policy in force now (reloaded when its file
 *     changed; a missing, malformed or expired policy grants nothing) has
 *     a subject, valid now, that lists the certificate fingerprint the job
 *     was submitted with, for the job's principal and scope, and still
 *     allows its pool, its image and its limits;
 *   - the qualification, for a backend with require_qualification: the
 *     qualification the receipt names passed, has not expired, and binds
 *     the runtime binary, configuration and kernel of the qualification
 *     berthd offers for the backend now (qualification.h).
 * A job that fails either is cancelled by berthd (recorded as a priority
 * write with a job.cancel_requested audit event by "berthd"), stopped and
 * reaped like a caller's cancellation; its signed result has status
 * "cancelled" and reason "revoked" (the grant) or "qualification_expired".
 * Dispatch rechecks both before it claims a queued job and again just
 * before start(), so a queued job whose qualification expired is never
 * started on it; it is cancelled, not held: its receipt binds the
 * qualification it was accepted under, and a later qualification is not
 * the one the receipt names (reference: "Before dispatch, the launcher ...
 * enforces ... runtime qualification expiry"; sweeps "cancel and reap work
 * that no longer qualifies").  A job that cannot be judged now (out of
 * memory, a backend whose capabilities fail) is left alone and counted as
 * an error of its round.
 *
 * Admission: a new broker refuses new submissions with 503 "starting"
 * (identical retries of accepted jobs still get their receipts) and
 * dispatch starts nothing, until a whole round of reconcile pages has
 * completed without error; from then on admission stays open (a journal
 * that cannot be trusted stops berthd instead).  See
 * berth_broker_admitting().
 */
#ifndef BERTH_BROKER_H
#define BERTH_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h>

#include "audit.h"
#include "journal.h"
#include "jobstore.h"
#include "log.h"
#include "names.h"
#include "policy.h"
#include "sign.h"

/** Default admission limits (DESIGN.md section 4). */
#define BERTH_BROKER_DEFAULT_MAX_ACTIVE 16
#define BERTH_BROKER_DEFAULT_MAX_RETAINED 10000

/** Largest caller-supplied document other than a job (pool manifests), bytes. */
#define BERTH_BROKER_DOC_MAX (256 * 1024)

/**
 * struct berth_reply - what an operation answers.
 * @status:  HTTP status code (200, 201, 202, 400, 403, 404, 409, 413, 500, 503).
 * @error:   NULL on success, else a stable error code ("denied", "malformed",
 *           "conflict", "not_found", "full" (the journal holds its limit of
 *           jobs), "starting" (the startup reconcile has not completed:
 *           retry), "storage_full" (the state filesystem is out of space or
 *           quota; the message says "retry in N s"), "busy", ...).
 * @message: human-readable; never holds secrets or host paths.
 * @body:    success body (owned), or NULL.
 * @text:    alternative raw body (owned, @text_len bytes), e.g. audit lines.
 * @principal: who was authenticated (empty when nobody), for request logs.
 * @retry_after_s: for a 503 the client may retry, its Retry-After in seconds
 *           (RFC 9110 section 10.2.3, delay-seconds); 0 for none.
 */
struct berth_reply {
    int status;
    const char *error;
    char message[256];
    json_t *body;
    char *text;
    size_t text_len;
    char principal[BERTH_PRINCIPAL_MAX + 1];
    unsigned retry_after_s;
};

/** berth_reply_clear() - release @r's body and text and zero it. */
void berth_reply_clear(struct berth_reply *r);

/** berth_reply_json() - the JSON a client receives: @body, or {"error", "message"}; a new reference. */
json_t *berth_reply_json(const struct berth_reply *r);

/**
 * struct berth_broker_backend - a configured runtime backend.
 * @name:     the backend name pools refer to (a berth_backend_name_valid() name).
 * @plugin, @plugin_version: the runtime binding recorded in receipts.
 * @ops, @state: the loaded runtime plugin instance.
 * @require_qualification: placement refuses it without a current qualification.
 * @config, @plugin_sha256: what its qualification is bound to (qualification.h).
 */
struct berth_broker_backend {
    const char *name;
    const char *plugin;
    const char *plugin_version;
    const struct berth_runtime_ops_v1 *ops;
    void *state;
    bool require_qualification;
    const json_t *config;      /* the backend's "config" in berthd.json, or NULL (qualification.h) */
    const char *plugin_sha256; /* the plugin file's digest (qualification.h) */
};

/**
 * struct berth_broker_params - what berth_broker_new() needs.  Pointers are
 * borrowed and must outlive the broker, except @backends (copied shallowly:
 * the strings and plugin instances stay the caller's).
 * @name:          the broker name written into receipts and results.
 * @max_active:    jobs not yet terminal, at most (>= 1).
 * @max_retained:  jobs recorded, at most (>= 1); a full journal refuses
 *                 new work and never deletes a job to make room.
 * @image_ops, @image_state: the image source, or NULL: when set, a new
 *                 job's image must resolve in it (else 400 image_unknown,
 *                 nothing recorded); runtime backends stage from it.
 * @stage_ops, @stage_state: a second instance of the image source, called
 *                 only by dispatch (the worker thread), so staging never
 *                 waits for admission's resolve() or blocks it; or NULL:
 *                 then start() receives no "rootfs".
 * @stage_directory: where dispatch stages each job's image before start()
 *                 (with @stage_ops; absolute, private, owned by berthd):
 *                 DIR/<run_id>/rootfs (0755 in a 0700 directory), complete
 *                 once DIR/<run_id>/staged exists; its path reaches start()
 *                 as the dispatch document's "rootfs".  Removed after the
 *                 job's result is recorded and the backend reaped it.
 * @wake:          optional; called (from any thread) after new work or a
 *                 cancellation was recorded, to wake the worker.
 * @fault:         optional test hook, called at named points
 *                 ("submit-before-commit", "submit-after-commit",
 *                 "dispatch-after-claim", "dispatch-after-start"); only
 *                 builds with --enable-fault-injection pass one.
 */
struct berth_broker_params {
    const char *name;
    struct berth_journal *journal;
    const struct berth_signing_key *key;
    const struct berth_audit_key *audit_key;
    struct berth_policy_source *policy;
    const struct berth_broker_backend *backends;
    size_t n_backends;
    const struct berth_image_source_ops_v1 *image_ops; /* optional: the image source ... */
    void *image_state;                                 /* ... and its instance */
    const struct berth_image_source_ops_v1 *stage_ops; /* optional: the stager instance ... */
    void *stage_state;                                 /* ... its state */
    const char *stage_directory;                       /* ... and where it stages */
    int64_t max_active;
    int64_t max_retained;
    const struct berth_logger *logger;
    void (*wake)(void *userdata);
    void (*fault)(void *userdata, const char *point);
    void *userdata;
};

struct berth_broker;

/**
 * berth_broker_new() - open the pool registry on the journal and prepare.
 * No backend is called.  When the journal has a space reserve configured
 * that is not whole (berth_journal_set_reserve() found no room), the broker
 * starts storage degraded.  Return: 0; -EINVAL; registry errors; -ENOMEM.
 */
int berth_broker_new(const struct berth_broker_params *p, struct berth_broker **ret, struct berth_error *reterr);

/** berth_broker_free() - release; accepts NULL.  The journal stays open. */
void berth_broker_free(struct berth_broker *b);

/**
 * struct berth_submission - one job submission of a batch.
 * @fingerprint: the caller's certificate fingerprint (64 lowercase hex).
 * @body, @len:  the job document as received.
 * @reply:       filled by berth_broker_submit_batch(): 201 with the receipt
 *               (new), 200 with the stored receipt (identical retry), 400,
 *               403, 409 (same id, different digest; nothing recorded),
 *               413, 503 (starting, full, storage_full or busy, journal
 *               failure, no backend).
 * @note:        the broker's own (the log line of an acceptance, written
 *               once its commit succeeded); callers leave it alone.
 */
struct berth_submission {
    const char *fingerprint;
    const char *body;
    size_t len;
    struct berth_reply reply;
    char note[256];
};

/**
 * berth_broker_submit_batch() - check, place, sign and record @n
 * submissions in one journal transaction, committed once.  A refusal of one
 * does not affect the others; a failed commit turns every acceptance into
 * 503.  Placement refusals are recorded in the audit chain.
 * Return: 0 (each reply says what happened); -EINVAL.
 */
int berth_broker_submit_batch(struct berth_broker *b, struct berth_submission *v, size_t n);

/**
 * berth_broker_inspect() - the caller's job @job_id: 200 {id, state,
 * revision, cancel_requested, backend, accepted_at, deadline, receipt}, 403,
 * 404.
 */
void berth_broker_inspect(struct berth_broker *b, const char *fingerprint, const char *job_id,
                          struct berth_reply *reply);

/**
 * berth_broker_cancel() - record the intent to cancel (before any backend
 * is asked to stop) and wake the worker: 202 {id, state, cancel_requested};
 * a job already terminal is left as it is (202 with its state); 403, 404;
 * 503 storage_full only when the filesystem is full and the journal's
 * space reserve is used up or absent (a priority write, see above).
 */
void berth_broker_cancel(struct berth_broker *b, const char *fingerprint, const char *job_id,
                         struct berth_reply *reply);

/**
 * berth_broker_result() - the signed result, only from a terminal journal
 * record: 200 {result envelope}, 202 {id, state} while pending, 403, 404.
 */
void berth_broker_result(struct berth_broker *b, const char *fingerprint, const char *job_id,
                         struct berth_reply *reply);

/**
 * berth_broker_capabilities() - 200 {broker, key_id, public_key (base64url),
 * principal, scope, pools (granted), images (granted), limits (ceiling),
 * backends {name: capabilities}}; 403.
 */
void berth_broker_capabilities(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply);

/**
 * berth_broker_pool_register() - admin only: register or update the pool
 * manifest @body: 201 {name, pool_hash, outcome "registered"|"updated"},
 * 200 (unchanged), 400, 403, 503 storage_full (while degraded, or when the
 * commit fails for space: nothing recorded).
 */
void berth_broker_pool_register(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                                struct berth_reply *reply);

/**
 * berth_broker_pool_register_trusted() - register @body as the operator
 * (berthd's pools directory): no policy check, recorded with @actor.
 * @ret_outcome: optional; receives "unchanged", "registered" or "updated".
 * Return: 0; -EBADMSG (not a valid manifest, reterr says why); -EFBIG;
 * -ENOSPC or -EDQUOT (a changed pool could not be recorded for space:
 * storage is degraded, the recorded version stays); journal errors.
 */
int berth_broker_pool_register_trusted(struct berth_broker *b, const char *body, size_t len, const char *actor,
                                       const char **ret_outcome, struct berth_error *reterr);

/**
 * berth_broker_pool_list() - 200 {pools: [{name, pool_hash,
 * backend_allowlist}]}: every active pool for an admin, the granted ones
 * otherwise; 403.
 * berth_broker_pool_show() - 200 {the normalised manifest with pool_hash};
 * 403; 404 (absent, or not granted to a non-admin).
 */
void berth_broker_pool_list(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply);
void berth_broker_pool_show(struct berth_broker *b, const char *fingerprint, const char *name,
                            struct berth_reply *reply);

/**
 * berth_broker_audit() - admin only: the audit events after sequence
 * @after, as canonical JSON lines in @reply->text (at most @max_events);
 * 403.
 */
void berth_broker_audit(struct berth_broker *b, const char *fingerprint, uint64_t after, size_t max_events,
                        struct berth_reply *reply);

/**
 * berth_broker_job_counts() - jobs per state (for metrics).
 * Return: 0 or a journal error.
 */
int berth_broker_job_counts(struct berth_broker *b, int64_t counts[BERTH_JOB_STATE_COUNT], struct berth_error *reterr);

/**
 * struct berth_broker_health - the broker's condition, for /v1/health and
 * /metrics (see "A full state filesystem" above).
 * @degraded:       the state filesystem is out of space or quota.
 * @reason:         "storage_full" while @degraded, else NULL (static).
 * @message:        for clients: what still works; no host path, no secret.
 * @since_ns:       CLOCK_REALTIME ns since when it is degraded (0: it is not).
 * @retry_in_ns:    until the next check whether space returned (0: due).
 * @space_failures: writes that failed for space since the broker started
 *                  (journal transactions and stagings).
 * @unrecorded:     signed results waiting in memory for the journal.
 * @reserve_bytes:  the journal's space reserve as configured (0: none) ...
 * @reserve_held:   ... and whether it is whole on disk now.
 * @starting:       admission has not opened yet (berth_broker_admitting()).
 */
struct berth_broker_health {
    bool degraded;
    const char *reason;
    char message[256];
    int64_t since_ns;
    int64_t retry_in_ns;
    uint64_t space_failures;
    uint64_t unrecorded;
    uint64_t reserve_bytes;
    bool reserve_held;
    bool starting;
};

/**
 * berth_broker_health() - fill @ret with the broker's condition.  Reads no
 * journal row and writes nothing, so it answers on a full disk.  Any thread.
 * Return: 0; -EINVAL (NULL argument).
 */
int berth_broker_health(struct berth_broker *b, struct berth_broker_health *ret);

/**
 * berth_broker_stop() - ask running and future reconcile and dispatch passes
 * to stop between jobs (berthd's shutdown).  Any thread; idempotent.
 */
void berth_broker_stop(struct berth_broker *b);

/**
 * struct berth_pass_stats - what one reconcile or dispatch pass did (each
 * pass adds to the counts).
 * @visited: open jobs a reconcile pass looked at (at most one page).
 * @more:    the last reconcile page was full: the round goes on.
 * @swept:   jobs berthd cancelled because they no longer qualify.
 */
struct berth_pass_stats {
    unsigned started, finished, cancelled, expired, failed, errors;
    unsigned visited, swept;
    bool more;
};

/**
 * berth_broker_admitting() - whether new submissions are accepted: false
 * until a whole round of reconcile pages completed without error (see
 * "Sweeps" above), then true.  Any thread.  False for NULL.
 */
bool berth_broker_admitting(struct berth_broker *b);

/** What the front door does with a verified client certificate. */
enum berth_front_door {
    BERTH_DOOR_OPEN,   /* listed, or no usable policy (the broker's refusal says why) */
    BERTH_DOOR_HEALTH, /* not listed; the policy serves unlisted clients /v1/health only */
    BERTH_DOOR_CLOSED, /* not listed: close the connection */
};

/**
 * berth_broker_front_door() - judge @fingerprint (64 lowercase hex) by the
 * host policy in force now (policy.h, "unlisted_clients").  Any thread: the
 * policy source is read under the broker's lock, as the worker's sweeps
 * read it.
 */
enum berth_front_door berth_broker_front_door(struct berth_broker *b, const char *fingerprint);

/** berth_broker_policy_reloads() - berth_policy_reloads() under the broker's lock; any thread. */
uint64_t berth_broker_policy_reloads(struct berth_broker *b);

/**
 * berth_broker_refresh_backends() - ask every backend for its capabilities
 * (plugin calls: worker thread only) and use them for placement.  A
 * backend that fails is offered with no capabilities, so placement skips it.
 * A backend's qualification is always berthd's own, from the journal
 * (qualification.h); what the plugin reports about it is replaced, and a
 * backend for which the replacement cannot be made is offered as one that
 * failed.
 * Return: 0; -ENOMEM (nothing changed: the last offers stand).
 */
int berth_broker_refresh_backends(struct berth_broker *b);

/**
 * berth_broker_reconcile() - one pass over the next page of unfinished
 * jobs (worker thread only): cancel those that no longer qualify (see
 * "Sweeps"), expire or cancel accepted jobs past their deadline or with a
 * cancellation recorded, ask backends about claimed and running ones,
 * cancel those past their deadline or cancelled, and record signed terminal
 * results; @stats->more says whether the round goes on.  Never starts a
 * job.  @stats may be NULL.  First, when storage
 * is degraded and a check is due, it checks whether space returned, and
 * then records the unrecorded results (counted in @stats when recorded).
 * Return: 0; -EIO or -EBADMSG (the journal cannot be trusted: the caller
 * stops).  A backend error is logged and retried on the next pass, never
 * turned into a result; a write that fails for space degrades storage and
 * is retried, as the header says.
 */
int berth_broker_reconcile(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr);

/**
 * berth_broker_dispatch() - start accepted jobs (worker thread only;
 * nothing before admission opens): recheck the job qualifies (see
 * "Sweeps"), record "claimed", stage, recheck, call the backend's start
 * with the dispatch document {schema_version, receipt, job, effective},
 * record "running".  A claimed
 * job whose start was cut short is started again (start is idempotent).
 * Staging failures back off (see above).
 * Return: 0; -EIO or -EBADMSG, as berth_broker_reconcile().
 */
int berth_broker_dispatch(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr);

#endif /* BERTH_BROKER_H */
