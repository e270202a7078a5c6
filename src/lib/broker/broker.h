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
 * once it returns.  Backends are called only from berth_broker_reconcile(),
 * berth_broker_handle_events() and berth_broker_dispatch(), which must be
 * driven by one thread at a time (the "worker"), and from the start threads
 * dispatch hands claimed jobs to (@start_concurrency); a job being started
 * is left alone by the worker until its start returned, and a runtime
 * plugin that does not declare BERTH_RUNTIME_CONCURRENT is called one
 * thread at a time (<berth/plugin.h>, "Threading").  They record intent
 * before every backend call and check the expected revision after it, so a
 * late writer never overwrites newer state, and a job id is never started
 * twice: start is issued only after "claimed" is durable, and runtime plugins keep a tombstone per id.
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
 * Retention.  Every reconcile pass also prunes, oldest first, at most
 * BROKER_PRUNE_BATCH (32) terminal jobs whose finished time (when their
 * signed result was recorded) plus @jobs_retention_ns has passed, from a
 * cursor kept across passes, so a pass stays short whatever the backlog.
 * For each job the backend first drops its own tombstone (the runtime op
 * forget; a job it has not reaped yet is reaped first; a 1.0 plugin
 * without forget keeps its tombstone), then one journal transaction
 * replaces each job record by its identity tombstone (jobprune.h) with a
 * "job.pruned" audit event by "berthd" ({state, result_digest,
 * receipt_digest, finished_at, pruned_at, retention_ns} besides the job's
 * identity).  A job whose backend cannot forget it now stays, is retried
 * with backoff on a later round, and never blocks the others.  A crash
 * between the two steps leaves a terminal record whose backend tombstone
 * is gone: it is never dispatched again (only accepted jobs are), and the
 * next round prunes it (forget answers -ENOENT).  Tombstones are kept for
 * ever and do not count against @max_retained, so a busy broker never
 * stays full: an identical retry of a pruned job gets its receipt back
 * (200, the same bytes) and never runs, a changed job with the same id
 * gets 409 conflict, and inspect, result and cancel of a pruned job answer
 * 410 "pruned" with its final state and result digest
 * (broker_pruned_reply()).  Pruning is an ordinary write: it waits while
 * storage is degraded.
 *
 * Inputs and outputs (docs/evidence.md).  A new job's inputs must be in
 * the evidence store under the caller's own key with the size their refs
 * name (else 400 input_unknown / input_refused), looked up before the
 * batch takes the broker lock; a job with inputs (outputs) needs an
 * evidence store and a backend of its pool reporting "inputs" ("outputs")
 * (else 400 inputs_unsupported / outputs_unsupported), and placement
 * chooses only such a backend.  Dispatch stages each input, verified,
 * below inputs_directory (broker-inputs.c); reconcile captures the
 * declared outputs of an exited job into the store before its result is
 * signed (broker-outputs.c), retrying transient failures with the per-job
 * backoff; an invalid output gives status "failed", reason
 * "output_invalid" and the result's output_error.
 *
 * Events (DESIGN.md section 5a).  A runtime plugin of ABI 1.1 may say
 * that one of its jobs changed (plugin.h, host->job_changed, which berthd
 * routes to berth_broker_job_changed()); a cancellation says the same of
 * its own job.  The job goes into a bounded queue (BROKER_EVENTS_MAX
 * entries, coalesced per job) and the worker is woken; the worker's
 * berth_broker_handle_events() then reconciles each queued job at once,
 * as a reconcile pass would (inspect, proof of teardown, outputs, the
 * signed result, recorded exactly once: every move names the revision it
 * expects), and the broker tells @on_result.  A notification is only a
 * hint: a lost one (the queue full, a plugin of ABI 1.0 that never sends
 * any) costs the time until the next reconcile pass, which keeps visiting
 * every open job.  A submission's commit wakes the worker, which
 * dispatches at once.
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
 * @config, @plugin_sha256, @containment: what its qualification is bound to
 *        (qualification.h, berth_qualification_config_digest()).
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
    const json_t *containment; /* the bound containment's identity, or NULL (qualification.h) */
};

/** Warm targets a configuration may declare, and slots a host may hold, at most. */
#define BERTH_WARM_TARGETS_MAX 16
#define BERTH_WARM_SLOTS_MAX 64

/**
 * struct berth_warm_target - one shape of job berthd keeps warm slots for
 * (docs/warm-slots.md, berthd.json(5) "warm"): a job of pool @pool whose
 * image is @image, whose limits are @limits (the seven job limits, JSON
 * equal) and whose effective manifest is the pool's merged with
 * @overrides, without inputs or outputs.
 * @min_ready: ready slots kept; @max_ready: kept while jobs of this shape
 *             went cold for lack of a slot in the last minute.
 * @memory_bytes: @limits' memory_bytes, counted against the host bound.
 */
struct berth_warm_target {
    const char *pool;
    const char *image;
    const json_t *overrides; /* NULL: none */
    const json_t *limits;
    int64_t min_ready, max_ready;
    int64_t memory_bytes;
};

/**
 * struct berth_broker_params - what berth_broker_new() needs.  Pointers are
 * borrowed and must outlive the broker, except @backends (copied shallowly:
 * the strings and plugin instances stay the caller's).
 * @name:          the broker name written into receipts and results.
 * @max_active:    jobs not yet terminal, at most (>= 1).
 * @max_retained:  jobs recorded, at most (>= 1); a full journal refuses
 *                 new work and never deletes a job to make room.
 * @start_concurrency: how many starts (staging and the backend's start) run
 *                 at once, each on its own thread, besides each pool's
 *                 max_concurrency; 0 runs every start on the thread that
 *                 calls berth_broker_dispatch() (one at a time).
 * @image_ops, @image_state: the image source, or NULL: when set, a new
 *                 job's image must resolve in it (else 400 image_unknown,
 *                 nothing recorded); runtime backends stage from it.
 * @stage_ops, @stage_state: a second instance of the image source, called
 *                 only by dispatch's starts (one at a time), so staging never
 *                 waits for admission's resolve() or blocks it; or NULL:
 *                 then start() receives no "rootfs".
 * @stage_directory: with @stage_ops: absolute, private, owned by berthd.
 *                 Each image is staged once into its root cache,
 *                 DIR/roots (rootcache.h: one sealed entry per image
 *                 digest, checked on every use); a job's start holds its
 *                 image's entry, whose rootfs path reaches start() as the
 *                 dispatch document's "rootfs", and records the hold as
 *                 DIR/<run_id>/root (the digest; 0600 in a 0700
 *                 directory).  The hold ends, and DIR/<run_id> is removed,
 *                 after the job's result is recorded and the backend
 *                 reaped it.
 * @root_cache_bytes: the bound on the cached roots' bytes: roots no job
 *                 holds are evicted, least recently used first, while the
 *                 cache holds more (0: a root goes when its last job does).
 * @evidence_ops, @evidence_state: the evidence store, or NULL
 *                 (broker-evidence.h): every call into it takes the
 *                 broker's evidence lock.
 * @evidence_max_object_bytes: the largest object it takes (berthd.json
 *                 evidence.config.max_object_bytes), >= 1 with a store.
 * @evidence_spool_directory: optional; absolute, private: where unnamed
 *                 files (O_TMPFILE) for uploads and downloads are made when
 *                 the store's upload() cannot make them.
 * @inputs_directory: where dispatch stages each job's inputs (absolute,
 *                 private 0700, owned by berthd): DIR/<run_id>/ (0700)
 *                 holds one 0444 file per input, named by its index in
 *                 job.inputs, complete once DIR/<run_id>/staged exists; its
 *                 path reaches start() as the dispatch document's
 *                 "inputs_dir".  Removed after the job's result is recorded
 *                 and the backend reaped it.  Required with @evidence_ops.
 * @jobs_retention_ns: how long a terminal job is kept after it finished
 *                 before it is pruned (see "Retention"); 0: never pruned.
 * @outputs_retention_ns: how long the captured outputs of a job are kept
 *                 after it finished (their evidence objects' retain_until);
 *                 0: until deleted.  Reported by berth_broker_journal_stats().
 * @wake:          optional; called (from any thread) after new work or a
 *                 cancellation was recorded, or a job was notified
 *                 (berth_broker_job_changed()), to wake the worker.
 * @on_result:     optional; called on the worker thread right after the
 *                 signed terminal result of the job (@principal, @job_id:
 *                 the caller's own id) was committed, so that
 *                 berth_broker_result() returns it from now on; it must
 *                 be quick and must not call into the broker.
 * @worker_lease_ns: how long a remote worker's lease holds without a
 *                 heartbeat (docs/workers.md); a worker is live for as
 *                 long after its last call; 0: BERTH_WORKER_LEASE_DEFAULT_NS.
 * @workers_require_qualification: offer work only to workers whose last
 *                 poll carried a current qualification of their runtime.
 * @blob_ops, @blob_state: a third instance of the image source, for
 *                 berth_broker_image_blob() (ABI 1.5 open_blob); NULL:
 *                 workers cannot fetch images from this broker.
 * @on_offer:      optional; called (from any thread, quickly, without
 *                 calling into the broker) when
 *                 berth_broker_offer_generation() changed.
 * @fault:         optional test hook, called at named points
 *                 ("submit-before-commit", "submit-after-commit",
 *                 "dispatch-after-claim", "dispatch-before-start" (a
 *                 claimed job's root and inputs are staged, its record
 *                 not yet re-read; no broker lock is held there),
 *                 "dispatch-after-start",
 *                 "event-before-commit": a notified job is terminal and
 *                 its result is about to be signed and recorded); only
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
    uint64_t root_cache_bytes;                         /* ... and how much of unused roots it keeps */
    const struct berth_evidence_store_ops_v1 *evidence_ops; /* optional: the evidence store ... */
    void *evidence_state;                                   /* ... its instance */
    int64_t evidence_max_object_bytes;                      /* ... the largest object it takes */
    const char *evidence_spool_directory;                   /* ... and where berthd's own unnamed files go */
    const char *inputs_directory;                           /* where inputs are staged */
    int64_t max_active;
    int64_t max_retained;
    unsigned start_concurrency; /* starts under way at once, on their own threads; 0: on the dispatching thread */
    int64_t jobs_retention_ns;
    int64_t outputs_retention_ns;
    const struct berth_warm_target *warm; /* warm targets (docs/warm-slots.md), @n_warm of them */
    size_t n_warm;
    int64_t warm_max_slots;        /* slots the host holds at most (0: no warm slots) */
    int64_t warm_max_memory_bytes; /* and the sum of their memory_bytes at most */
    int64_t warm_max_age_ns;       /* a slot unclaimed this long is retired */
    const struct berth_logger *logger;
    void (*wake)(void *userdata);
    void (*fault)(void *userdata, const char *point);
    void (*on_result)(void *userdata, const char *principal, const char *job_id);
    int64_t worker_lease_ns;            /* a remote worker's lease term (> 0) */
    bool workers_require_qualification; /* workers take work only while qualified */
    const struct berth_image_source_ops_v1 *blob_ops; /* optional: an image source instance for blobs ... */
    void *blob_state;                                 /* ... and its state */
    void (*on_offer)(void *userdata);   /* optional: berth_broker_offer_generation() changed (any thread) */
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
 * struct berth_parsed_job - a submission's job document parsed ahead of its
 * batch, off the thread that runs the batch (berthd: on the front thread
 * that read the request).  Opaque; made by berth_parsed_job_new().
 */
struct berth_parsed_job;

/**
 * berth_parsed_job_new() - parse the @len bytes at @body as
 * berth_job_parse() does and keep the outcome, a job or the refusal with
 * its message, for a struct berth_submission of the same bytes.  A
 * document of more than BERTH_JOB_MAX bytes is not parsed: the batch
 * refuses it (413) without this.
 * @ret: receives the new object, freed with berth_parsed_job_free().
 * Return: 0 (whatever the document held); -EINVAL (NULL @body or @ret);
 * -EFBIG (larger than BERTH_JOB_MAX); -ENOMEM.
 * Thread safety: touches nothing shared; call it on any thread.  The
 * object may be handed to another thread (through a queue that orders
 * memory, as a mutex does) and is then that thread's.
 */
int berth_parsed_job_new(const char *body, size_t len, struct berth_parsed_job **ret);

/** berth_parsed_job_free() - release; accepts NULL. */
void berth_parsed_job_free(struct berth_parsed_job *p);

/**
 * struct berth_submission - one job submission of a batch.
 * @fingerprint: the caller's certificate fingerprint (64 lowercase hex).
 * @body, @len:  the job document as received.
 * @parsed:      NULL, or exactly @body parsed ahead (berth_parsed_job_new()
 *               of the same bytes); borrowed for the call.  The batch then
 *               does not parse @body again; replies are the same either way.
 * @reply:       filled by berth_broker_submit_batch(): 201 with the receipt
 *               (new), 200 with the stored receipt (identical retry, also
 *               of a pruned job: its tombstone keeps the receipt), 400,
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
    const struct berth_parsed_job *parsed;
    struct berth_reply reply;
    char note[256];
    /* Filled by the broker: an accepted run placed on the remote workers,
     * queued for them once the batch commits ("" otherwise). */
    char remote_run[BERTH_RUN_ID_LEN + 1];
    char remote_pool[BERTH_POOL_NAME_MAX + 1];
    char remote_pool_hash[BERTH_SHA256_HEX_LEN + 1];
    int64_t remote_accepted_at;
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
 * 404, 410 pruned (see "Retention").
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
 * record: 200 {result envelope}, 202 {id, state} while pending, 403, 404,
 * 410 {"error": "pruned", "message", "id", "state", "result_digest",
 * "finished_at", "pruned_at"} when retention pruned the job.
 */
void berth_broker_result(struct berth_broker *b, const char *fingerprint, const char *job_id,
                         struct berth_reply *reply);

/** Longest media type of a declared output, bytes (job.h bounds it). */
#define BERTH_BROKER_MEDIA_TYPE_MAX 255

/**
 * struct berth_job_output - a captured output, ready to send.
 * @fd:         a new unnamed file (O_RDWR | O_CLOEXEC) holding exactly the
 *              output's verified bytes from offset 0; the caller owns it.
 *              -1 when nothing was found.
 * @size:       its length, bytes.
 * @digest:     its digest, as the signed result lists it.
 * @media_type: its declared media type.
 */
struct berth_job_output {
    int fd;
    uint64_t size;
    char digest[BERTH_DIGEST_BUFSZ];
    char media_type[BERTH_BROKER_MEDIA_TYPE_MAX + 1];
};

/**
 * berth_broker_job_output() - the caller's captured output @output_id of
 * job @job_id (its grant rechecked, as for every job operation), copied
 * from the evidence store -- which verifies length and digest on the way --
 * into a private unnamed file, so that it can be sent at the client's pace
 * without holding the evidence lock, and is known whole before the first
 * byte goes out.  Blocks for as long as the copy takes: never call it on
 * an event loop.
 * @ret: filled on 200 (@ret->fd >= 0), else @ret->fd is -1.
 * @reply: 200 (no body: the content is @ret), 202 {id, state} (no result
 * yet), 403, 404 not_found (no such job, or its signed result lists no
 * output @output_id), 410 gone (the output aged out of the store, or was
 * deleted), 500 corrupt (the store holds other bytes than the signed
 * result names), 501 not_implemented (no evidence store), 503
 * evidence_store.
 */
void berth_broker_job_output(struct berth_broker *b, const char *fingerprint, const char *job_id,
                             const char *output_id, struct berth_job_output *ret, struct berth_reply *reply);

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
 * berth_broker_pool_show() - 200 {the normalised manifest with pool_hash,
 * and, when this host keeps warm slots for the pool, "warm": one entry per
 * warm target {image, limits, overrides, min_ready, max_ready, slots:
 * {ready, provisioning, claiming}, hits, misses, quarantined, provisioned}
 * (counts since berthd started; docs/warm-slots.md)}; 403; 404 (absent, or
 * not granted to a non-admin).
 */
void berth_broker_pool_list(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply);
void berth_broker_pool_show(struct berth_broker *b, const char *fingerprint, const char *name,
                            struct berth_reply *reply);

/**
 * berth_broker_worker_enrol() - a remote worker's enrolment
 * (docs/workers.md): @body is its own signed {"enrolment", "signature"}
 * (enrol.h, at most 16 KiB).  The caller must be a subject that "serves"
 * pools (policy.h), the enrolment's worker_name its principal, its
 * pool_hash the current manifest of an active pool the caller serves; it
 * is recorded as pool.worker_enrolled and holds until that pool's manifest
 * changes.  201 {"worker", "pool", "pool_hash", "keyid"}; 400 malformed
 * (not JSON, or the signature does not verify); 403 not_a_worker or
 * denied; 409 stale_pool (no active pool has that manifest now); 413; 503
 * (the journal, or a full state filesystem).
 */
void berth_broker_worker_enrol(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply);

/*
 * Remote work (docs/workers.md).  A pool whose allowlist names the backend
 * BERTH_WORKERS_BACKEND places jobs on the enrolled workers: such a job is
 * never started by this host.  It waits, accepted, until a worker that
 * polls is offered it and claims it with its own signed claim; the worker
 * then holds a lease on it, renewed by heartbeats, and ends it with its
 * signed report, from which berthd signs the result.  A lease that runs
 * out is fenced by a reconcile pass (or by the worker's next call): the
 * job fails with reason "worker_lost" (cancelled when a cancellation was
 * asked for, expired past its deadline) and is never run again; whatever
 * the worker says about it afterwards is refused with 409 "fenced".
 *
 * Every call takes the worker's certificate fingerprint: the caller must
 * be a subject that serves pools (policy.h), and acts under its principal,
 * which is its worker name.  Bodies are JSON, at most 64 KiB but for a
 * report (BERTH_WORKER_REPORT_BODY_MAX).
 */

/** A remote worker's lease term unless the broker is told otherwise: 30 s. */
#define BERTH_WORKER_LEASE_DEFAULT_NS (30LL * 1000 * 1000 * 1000)

/** The backend name a pool lists to place jobs on remote workers. */
#define BERTH_WORKERS_BACKEND "workers"
/** Most offers one poll returns. */
#define BERTH_WORKER_OFFERS_MAX 8
/** Largest report request: the signed report and stdout and stderr (base64url), bytes (http.max_body_bytes bounds it too). */
#define BERTH_WORKER_REPORT_BODY_MAX (1536 * 1024 + 64 * 1024)

/**
 * berth_broker_worker_poll() - a worker says it is alive and asks for work.
 * @body: {"keyid": its key id, "slots": 1..1024 runs it takes at once,
 *        "busy": 0..slots runs it holds now, "capabilities": [...],
 *        "egress_classes": [...] (its runtime's, plugin.h, at most 32
 *        each), "qualification": its signed qualification record of its
 *        runtime (qualification.h, signed with its enrolled key) or null}.
 * The worker is live from now until its next call or lease_ns later; the
 * pools it takes work of are the active pools whose allowlist names
 * BERTH_WORKERS_BACKEND, that its subject serves and whose current
 * manifest it enrolled into with @keyid (for new runs: "pools"); a queued
 * run placed under an earlier manifest is offered to the workers enrolled
 * into that one.
 * 200 {"lease_ns", "pools": [the names], "offers": [{"job_id", "run_id",
 * "revision", "job", "receipt", "effective", "job_digest",
 * "receipt_digest", "placement_hash", "pool_hash", "deadline"}]}: at most
 * min(slots - busy, BERTH_WORKER_OFFERS_MAX) queued jobs of those pools,
 * oldest first, each held for this worker for a few seconds (offers may
 * be empty: the caller may wait, berth_broker_offer_generation()); 400
 * malformed; 403 not_a_worker; 413.  @again: the same poll asked again
 * (a parked long poll): its "busy" is from when it was sent, and only the
 * reports since then lowered it, so the lower count stands.
 */
void berth_broker_worker_poll(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                              bool again, struct berth_reply *reply);

/**
 * berth_broker_offer_generation() - a counter that changes whenever work
 * is queued for workers, a worker's offer hold runs out or a claim is
 * refused; a parked poll asks again when it changed.  Any thread.
 */
uint64_t berth_broker_offer_generation(struct berth_broker *b);

/**
 * berth_broker_worker_claim() - a worker claims an offered run: @body is
 * its signed claim of schema version 2 (enrol.h, claimant "worker"),
 * whose lease_revision must be the record's revision + 1.  berthd checks
 * the claim against the record (job, receipt and placement, pool_hash),
 * the signature against the key the caller enrolled into the manifest the
 * run was placed under, the job's deadline and grant, and the worker's
 * qualification (when workers require one); then records the move to
 * claimed, the lease and the claim (pool.claim_receipt) in one
 * transaction (the manifest may be one the pool had before an update:
 * the one the run was placed under).  201 {"run_id", "revision", "claim_digest", "expires_ns",
 * "lease_ns"}, also for the same claim sent again while it holds the run
 * (its first answer was lost); 400 malformed (also a signature that does not verify);
 * 403 not_a_worker, denied (not its name, or a pool it does not serve);
 * 404 (no such run); 409 taken (claimed, or not a worker's run any more),
 * stale_pool (the pool is retired, or the key is not enrolled into the run's manifest),
 * unqualified, deadline, refused (the grant ended: berthd cancels it);
 * 503 (journal, storage).
 */
void berth_broker_worker_claim(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply);

/**
 * berth_broker_worker_lease() - a heartbeat: @body {"run_id",
 * "claim_digest", "state": "starting" | "running"}.  Renews the lease
 * (lease_ns from now); "running" records a claimed run's start.  200
 * {"revision", "expires_ns", "lease_ns", "cancel": bool, "reason": why
 * the run must stop, or null}; 400; 403; 404; 409 fenced (the lease is
 * not the caller's claim any more, ran out, or the run has ended).
 */
void berth_broker_worker_lease(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                               struct berth_reply *reply);

/**
 * berth_broker_worker_report() - how a claimed run ended: @body
 * {"report": the worker's signed report (report.h), "stdout", "stderr":
 * base64url}.  The report must answer the caller's current lease (its
 * claim digest and run), be signed by the key that claimed it, bind those
 * bytes, fit the job's output_bytes and list no output (outputs are not
 * offered to workers yet).  berthd signs the result, naming the worker,
 * its claim and its report (receipt.h), and records it.  An identical
 * report of a run already recorded from it gets the same answer.
 * 200 {"result": the signed result}; 400; 403; 404; 409 fenced; 413;
 * 503.
 */
void berth_broker_worker_report(struct berth_broker *b, const char *fingerprint, const char *body, size_t len,
                                struct berth_reply *reply);

/**
 * berth_broker_image_blob() - a blob of image @image for a worker that
 * holds the lease on run @run_id, a run of that image: the manifest, its
 * config or one of its layers, as the image source stores it (plugin.h,
 * open_blob).
 * 0 with *@ret_fd (the caller reads and closes it) and *@ret_size bytes;
 * else @reply says why (403 not_a_worker or denied: no run of that image
 * is leased to the caller; 404; 501 the image source cannot serve blobs)
 * and a negative errno is returned.  Calls the image source: not on the
 * event loop.
 */
int berth_broker_image_blob(struct berth_broker *b, const char *fingerprint, const char *image, const char *blob,
                            const char *run_id, int *ret_fd, uint64_t *ret_size, struct berth_reply *reply);

/**
 * berth_broker_audit() - admin only: the audit events after sequence
 * @after, as canonical JSON lines in @reply->text (at most @max_events);
 * 403.
 */
void berth_broker_audit(struct berth_broker *b, const char *fingerprint, uint64_t after, size_t max_events,
                        struct berth_reply *reply);

/**
 * berth_broker_root_cache() - admin only: the root cache (rootcache.h),
 * after removing every root no job holds when @prune: 200 with the
 * document of berth_rootcache_list() ({"max_bytes", "bytes", "roots":
 * [{"digest", "entries", "bytes", "jobs", "created_ns", "last_used_ns",
 * "verified"}]}) plus, when @prune, "removed" and "removed_bytes"; 403 for
 * a caller without an admin grant; 404 "no_root_cache" when the broker
 * stages no images.  Thread-safe; a prune removes trees on the calling
 * thread.
 */
void berth_broker_root_cache(struct berth_broker *b, const char *fingerprint, bool prune, struct berth_reply *reply);

/**
 * berth_broker_journal_stats() - admin only: 200 {"jobs": {state: count},
 * "retained" (job records, what max_retained limits), "max_retained",
 * "tombstones" (pruned jobs), "journal_bytes" (the journal file in pages),
 * "journal_free_bytes" (of which free for reuse), "retention": {"jobs_ns",
 * "outputs_ns"} (ns strings, "0" for never), "next_expiry": {"jobs",
 * "outputs"} (ns strings or null: when the oldest terminal job is due for
 * pruning, which may be in the past while pruning catches up, and when the
 * next captured outputs expire), "evidence": null (no evidence store, or
 * its lock is held by a commit at this moment: the call never waits for
 * it) or {"objects", "bytes", "tombstones"}}; 403; 503 journal.
 */
void berth_broker_journal_stats(struct berth_broker *b, const char *fingerprint, struct berth_reply *reply);

/**
 * berth_broker_job_counts() - jobs per state (for metrics).
 * Return: 0 or a journal error.
 */
int berth_broker_job_counts(struct berth_broker *b, int64_t counts[BERTH_JOB_STATE_COUNT], struct berth_error *reterr);

/**
 * berth_broker_run_state() - the state of the job with run id @run_id in
 * *@ret (for the containment scans of berthd, fence.h).
 * Return: 0; -ENOENT no such job (never recorded, or pruned); a journal
 * error.  Thread-safe (takes the broker's lock).
 */
int berth_broker_run_state(struct berth_broker *b, const char *run_id, enum berth_job_state *ret,
                           struct berth_error *reterr);

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
 * @reconcile_passes: reconcile passes run since the broker started.
 * @job_events:     job notifications received (berth_broker_job_changed(),
 *                  cancellations) ...
 * @job_events_lost: ... and of them dropped because the queue was full.
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
    uint64_t reconcile_passes;
    uint64_t job_events;
    uint64_t job_events_lost;
    /* Warm slots (docs/warm-slots.md), per warm target (the order of
     * p.warm; @ready, @provisioning and @claiming count its slots now,
     * the rest since the start) and in total since the start. */
    size_t n_warm;
    struct {
        const char *pool, *image; /* borrowed from the parameters */
        uint64_t ready, provisioning, claiming;
        uint64_t hits, misses, quarantined;
    } warm[BERTH_WARM_TARGETS_MAX];
    uint64_t warm_hits, warm_misses, warm_quarantined, warm_provisioned, warm_provision_failed, warm_lost;
    int64_t warm_provision_ns_last; /* the last slot's provisioning, ns (0: none yet) */
    int64_t warm_refill_ns_last;    /* from a claim to the next slot ready, ns (0: none yet) */
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
 * @pruned:  terminal jobs pruned for retention (see "Retention").
 */
struct berth_pass_stats {
    unsigned started, finished, cancelled, expired, failed, errors;
    unsigned visited, swept, pruned;
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

/**
 * berth_broker_job_changed() - backend @backend says that its job @run_id
 * (the id start() received) may have changed (see "Events"): queue a look
 * at it and wake the worker.  Any thread; takes only the small queue lock
 * and the wake hook, never the broker's lock, never calls a plugin, never
 * fails (an invalid argument, or a full queue, drops the call; the reconcile
 * timer still visits the job).
 */
void berth_broker_job_changed(struct berth_broker *b, const char *backend, const char *run_id);

/** berth_broker_events_pending() - whether notified jobs wait for berth_broker_handle_events(); any thread. */
bool berth_broker_events_pending(struct berth_broker *b);

/**
 * berth_broker_handle_events() - worker thread only: reconcile now each job
 * notified since the last call (see "Events"): only open jobs of the
 * notifying backend that have reached it (an accepted one only when a
 * cancellation was recorded), counted in @stats (may be NULL) as a pass
 * counts them.  Return: 0; 1 when notifications were dropped for room
 * since the last call (the caller should run a whole reconcile round
 * soon); -EIO or -EBADMSG (the journal cannot be trusted, as
 * berth_broker_reconcile()); -EINVAL.
 */
int berth_broker_handle_events(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr);

#endif /* BERTH_BROKER_H */
