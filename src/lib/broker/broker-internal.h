/* SPDX-License-Identifier: MIT */
/* broker-internal.h -- what broker.c and broker-worker.c share; not installed. */
#ifndef BERTH_BROKER_INTERNAL_H
#define BERTH_BROKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backoff.h"
#include "broker.h"
#include "job.h"
#include "jobprune.h"
#include "placement.h"
#include "registry.h"
#include "rootcache.h"

/* A signed terminal result the journal could not take for lack of space,
 * kept until it can (broker-storage.c). */
struct broker_unrecorded {
    struct berth_job_record rec; /* as the journal has it: the state and revision the record expects */
    enum berth_job_state to;     /* the terminal state */
    char *result;                /* canonical JSON of the signed result, recorded byte for byte */
    json_t *audit;               /* extra members of its job.finished event */
    bool reached;                /* the backend may hold something of the job: reap it afterwards */
};

/* The state filesystem's condition (broker.h, "A full state filesystem").
 * Degraded while either flag is set. */
struct broker_storage {
    bool journal_full;          /* a journal write failed for space: other writes are held back */
    bool stage_full;            /* the last staging failed for space */
    int64_t since_ns;           /* CLOCK_REALTIME: when the degraded state began (0: not degraded) */
    struct berth_backoff check; /* berth_journal_check_space() tries, CLOCK_MONOTONIC */
    struct berth_backoff stage; /* staging retries, CLOCK_MONOTONIC */
    uint64_t space_failures;    /* writes that failed for space, ever */
    struct broker_unrecorded *unrecorded;
    size_t n_unrecorded, cap_unrecorded;
};

/* A backend call that fails for one job, retried with backoff (broker-retry.c). */
enum broker_op {
    BROKER_OP_START,
    BROKER_OP_INSPECT,
    BROKER_OP_CANCEL,
    BROKER_OP_FORGET,
    BROKER_OP_CAPTURE,
    BROKER_OP_REAP, /* of a terminal job: its entries are the reaps still owed (broker_retry_reaps()) */
};

struct broker_retry {
    char run_id[BERTH_RUN_ID_LEN + 1];
    enum broker_op op;
    struct berth_backoff backoff; /* CLOCK_MONOTONIC */
};

/* The calls failing now: an entry per job and operation while it fails. */
struct broker_retries {
    struct broker_retry *v;
    size_t n, cap;
};

/* Copies of job records read under the lock, worked on without it (broker-worker.c). */
struct broker_snapshot {
    struct berth_job_record *v;
    size_t n, cap;
};

/* A jobstore callback: append a copy of @rec to the struct broker_snapshot @userdata; 0 or -ENOMEM. */
int broker_snap_one(void *userdata, const struct berth_job_record *rec);

/* Release the copies and zero @s. */
void broker_snapshot_clear(struct broker_snapshot *s);

/* Retention (broker-prune.c); worker thread only. */
struct broker_prune {
    struct berth_prune_cursor cursor; /* where the next prune page starts */
};

/* The reconcile sweeps (broker-sweep.c); worker thread only, but for
 * @admitting, which any thread reads. */
struct broker_sweep {
    struct berth_job_cursor cursor; /* where the next reconcile page starts */
    atomic_bool cycle_error;        /* this round of pages left a job undecided (set from any thread that judges a job) */
    size_t cycle_visited;           /* jobs this round of pages visited */
    atomic_bool admitting;          /* a whole round completed without error: new jobs are accepted */
};

/* Jobs notified as changed (broker-events.c), waiting for the worker to
 * look at them; coalesced per job, at most BROKER_EVENTS_MAX. */
#define BROKER_EVENTS_MAX 4096

struct broker_event {
    char backend[BERTH_BACKEND_NAME_MAX + 1];
    char run_id[BERTH_JOB_ID_MAX + 1];
};

struct broker_events {
    pthread_mutex_t lock; /* only @v, @n, @cap, @overflow; never held while another lock is taken */
    struct broker_event *v;
    size_t n, cap;
    bool overflow;            /* one was dropped for room: the worker runs a whole reconcile round */
    atomic_uint_fast64_t received; /* notifications, ever (metrics) */
    atomic_uint_fast64_t lost;     /* of which dropped for room */
    atomic_uint_fast64_t passes;   /* reconcile passes, ever (metrics) */
};
/* Starts under way on their own threads (broker-starts.c); under its own lock. */
struct broker_starts {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_mutex_t stage_lock; /* one staging at a time: the image source is one plugin instance */
    pthread_t *threads;
    size_t n_threads;              /* p.start_concurrency; 0: starts run on the dispatching thread */
    struct berth_job_record *queue; /* handed over, not yet taken by a thread (at most n_threads) */
    size_t n_queue;
    char (*busy)[BERTH_RUN_ID_LEN + 1]; /* queued or being started (at most n_threads) */
    size_t n_busy;
    bool stop, initialized;
    int failure; /* -EIO or -EBADMSG a start met: the next dispatch pass returns it */
    char failure_message[512];
    struct berth_pass_stats done; /* what the starts recorded since the last pass collected it */
    struct berth_job_cursor cursor; /* where the next dispatch pass goes on (broker-dispatch.c; dispatching thread) */
};

/* Warm slots (broker-warm.c, docs/warm-slots.md): the slots this berthd
 * provisioned and has not handed to a job or destroyed yet. */
struct broker_warm_slot {
    char slot_id[34];
    size_t target;    /* index into p.warm */
    size_t backend;   /* index into backends */
    char hash[65];    /* the effective_manifest_hash it was provisioned for */
    char *qualification; /* the backend's qualification id then, or NULL */
    char *rootfs;
    int64_t provision_ns, not_after;
    bool claiming;    /* a start thread is claiming or discarding it */
};

struct broker_warm {
    pthread_mutex_t lock; /* this struct; never held across a plugin call; may be taken inside the broker's @lock, never the reverse */
    pthread_rwlock_t list_lock; /* claims (read) never run while the worker lists the slots (write) */
    struct broker_warm_slot *v;
    size_t n, cap;
    atomic_bool swept;    /* the slots of an earlier run are destroyed (written by the worker thread) */
    int64_t *last_miss;   /* per target: CLOCK_MONOTONIC of the last cold start for want of a slot */
    uint64_t hits, misses, quarantined, provisioned, provision_failed, lost, discarded;
    int64_t provision_ns_last, refill_ns_last; /* the last provisioning; claim to refilled */
    int64_t refill_from;  /* CLOCK_MONOTONIC of a claim not yet refilled, 0 when none */
    struct berth_backoff backoff; /* provisioning failures, CLOCK_MONOTONIC */
    struct broker_warm_tally {
        uint64_t hits, misses, quarantined, provisioned;
    } *tally;             /* per target, since the start */
    ssize_t provisioning; /* the target a slot is being provisioned for, -1 none */
    int64_t reconciled;   /* CLOCK_MONOTONIC of the last slots() listing (refill side) */
    atomic_bool changed;  /* a slot was notified (job_changed): list the slots on the next pass */
    char current[BERTH_WARM_TARGETS_MAX][65]; /* each target's effective_manifest_hash then, "" unknown */
    /* The refill thread (with start threads): the worker hands it each
     * pass's counts (under @lock) and never waits for a provisioning. */
    pthread_t thread;
    pthread_cond_t cond;
    bool threaded, stop, pending;
    size_t pend_waiting;
    json_t *pend_limits, *pend_in_use;
};

/* One runtime instance's calls, serialized (broker-serial.c). */
struct broker_serial;

/* A remote worker as its last poll described it (broker-fleet.c). */
struct broker_fleet_worker {
    char name[BERTH_PRINCIPAL_MAX + 1];
    char keyid[BERTH_KEY_ID_LEN + 1];
    int64_t seen;            /* CLOCK_MONOTONIC of its last call; live for worker_lease_ns after */
    unsigned slots, busy;    /* runs it takes at once, and holds (its poll, then claims and reports) */
    json_t *capabilities;    /* its runtime's capabilities and egress classes (arrays of strings) */
    json_t *egress_classes;
    json_t *pools;           /* the pool hashes it takes work of (its poll's pools, enrolled and served) */
    bool qualified;          /* its last poll carried a passed qualification, signed by its key ... */
    int64_t qualification_expires_ns; /* ... until then (CLOCK_REALTIME) */
};

/* A run queued for the workers, not claimed yet (broker-fleet.c). */
struct broker_fleet_job {
    char run_id[BERTH_RUN_ID_LEN + 1];
    char pool[BERTH_POOL_NAME_MAX + 1];     /* its pool's name ... */
    char pool_hash[BERTH_HASH_HEX_LEN + 1]; /* ... and the manifest it was placed under */
    int64_t accepted_at;
    char offered_to[BERTH_PRINCIPAL_MAX + 1]; /* the worker it is offered to, "" none ... */
    int64_t offered_until;                    /* ... until then (CLOCK_MONOTONIC) */
};

struct broker_fleet {
    pthread_mutex_t lock; /* this struct but @offered_*; may be taken inside the broker's lock, never the reverse */
    bool initialized;
    struct broker_fleet_worker *w;
    size_t n, cap;
    struct broker_fleet_job *q;
    size_t nq, capq;
    int64_t started_ns;                /* CLOCK_REALTIME when this broker started: leases get a term from then */
    atomic_uint_fast64_t generation;   /* berth_broker_offer_generation() */
    uint64_t offered_generation;       /* under the broker's lock: the generation b->offers was made at ... */
    int64_t offered_mono;              /* ... and when */
};

struct berth_broker {
    struct berth_broker_params p;
    struct berth_broker_backend *backends;
    pthread_mutex_t lock; /* journal, registry, policy source, backend set */
    pthread_mutex_t evidence_lock; /* every evidence-store call (broker-evidence.h); taken before @lock, never inside it */
    struct berth_registry *reg;
    struct berth_backend_set *offers; /* from the last capabilities refresh */
    json_t *capabilities;             /* {backend: capabilities()} from that refresh */
    atomic_bool stopping;             /* berth_broker_stop() was called */
    char (*caps_errors)[512];         /* per backend: the last capabilities() error logged, "" when fine */
    char (*caps_unavailable)[64];     /* per backend: the "unavailable" reason last logged, "" when available */
    struct broker_storage storage;    /* under the lock */
    struct broker_retries retries;    /* under the lock */
    struct broker_sweep sweep;
    struct broker_prune prune;
    struct broker_events events;
    struct broker_starts starts;
    struct broker_serial **serial; /* per backend: its call lock, or NULL when its plugin declares concurrent calls safe */
    struct berth_rootcache *roots; /* with a stager: one sealed root per image (broker-roots.c), else NULL */
    struct broker_warm warm;
    struct broker_fleet fleet;
    json_t *worker_outputs; /* under @lock: {"<run>/<output>": digest} stored from workers (broker-runio.c) */
};

/* The authenticated caller, resolved under the lock. */
struct broker_caller {
    const struct berth_subject *subject; /* borrowed from the current policy */
    char *scope;                         /* canonical JSON of subject->scope */
};

void broker_caller_clear(struct broker_caller *c);

/* Resolve @fingerprint against the current policy (lock held); fills
 * @reply with 403 and returns -EACCES when denied. */
int broker_authenticate(struct berth_broker *b, const char *fingerprint, struct broker_caller *c,
                        struct berth_reply *reply);

/* broker_authenticate(), and the subject must serve pools (a remote
 * worker, broker-remote.c): else 403 not_a_worker and -EACCES. */
int broker_authenticate_worker(struct berth_broker *b, const char *fingerprint, struct broker_caller *caller,
                               struct berth_reply *reply);

/* Lock held: a worker's request: broker_authenticate_worker(), then @body
 * (@len bytes, at most @max: else 413, @what naming it) parsed strictly
 * into *@ret_doc (else 400).  0, or -EACCES, -EFBIG, -EBADMSG with
 * @reply filled. */
int broker_worker_request(struct berth_broker *b, const char *fingerprint, const char *body, size_t len, size_t max,
                          const char *what, struct broker_caller *caller, json_t **ret_doc, struct berth_reply *reply);

/* Look up the caller's job @job_id and recheck its grant (lock held): 0
 * with @caller and @rec filled (the caller clears both); else @reply says
 * why (403, 404, 503) and a negative errno is returned. */
int broker_find_job(struct berth_broker *b, const char *fingerprint, const char *job_id, struct broker_caller *caller,
                    struct berth_job_record *rec, struct berth_reply *reply);

/* Whether @s covers @job (pool, image, limits): NULL, or @buf (@size
 * bytes) holding what it lacks (broker-sweep.c). */
const char *broker_grant_gap(const struct berth_subject *s, const struct berth_job *job, char *buf, size_t size);

/* Record the intent to cancel @rec (lock held): a priority write with its
 * job.cancel_requested audit event by @actor; @reason NULL for a caller's
 * cancellation, else berthd's own reason code (the result's reason). */
int broker_record_cancel(struct berth_broker *b, const struct berth_job_record *rec, const char *actor,
                         const char *reason, int64_t now, struct berth_error *reterr);

/* --- broker-sweep.c: does an open job still qualify? (lock not held) --- */

/* 0 with *@ret_reason NULL (it does) or "revoked" / "qualification_expired"
 * and @why (@why_size bytes) saying what changed; -EIO or -EBADMSG (the
 * journal); other errors: undecided now (-ENOMEM, -EAGAIN: a backend's
 * capabilities are unknown, -EUCLEAN: a damaged stored job or receipt). */
int broker_sweep_verdict(struct berth_broker *b, const struct berth_job_record *rec, int64_t now,
                         const char **ret_reason, char *why, size_t why_size, struct berth_error *reterr);

/* Judge an accepted, claimed or running @rec that nobody cancelled yet and
 * record berthd's cancellation when it no longer qualifies (@rec follows:
 * cancel_requested, cancel_reason, revision).  An undecided job is logged
 * and counted, and keeps the round from opening admission.
 * Return: 0 (judged: @rec->cancel_requested says how); 1 (undecided);
 * -EIO or -EBADMSG. */
int broker_sweep_job(struct berth_broker *b, struct berth_job_record *rec, int64_t now, struct berth_pass_stats *stats,
                     struct berth_error *reterr);

/* A round of reconcile pages reached the end: the cursor starts again, and
 * admission opens when the round had no error. */
void broker_sweep_cycle_end(struct berth_broker *b);

/* --- broker-prune.c: retention (worker thread, lock not held) --- */

/* Prune at most BROKER_PRUNE_BATCH terminal jobs whose retention passed
 * (broker.h, "Retention"), then expired evidence.  Return: 0 (failures of
 * one job are logged and retried on a later round); -EIO or -EBADMSG (the
 * journal cannot be trusted). */
int broker_prune_pass(struct berth_broker *b, int64_t now, struct berth_pass_stats *stats, struct berth_error *reterr);

/* --- broker-evidence.c: the evidence store for the broker's own passes --- */

/* Evidence retention (worker thread; takes the evidence lock when it is
 * free -- else nothing until the next pass -- then the broker's inside
 * it): the store's prune(@now, BERTH_EVIDENCE_PAGE_MAX),
 * then one "evidence.pruned" audit event by "berthd" per object it removed
 * ({digest, principal, scope, size}), in one journal transaction.  Nothing
 * while journal writes are held back.  A store or journal failure is
 * logged and tried again on the next pass.  *@ret_pruned: how many.
 * Return: 0. */
int broker_evidence_prune(struct berth_broker *b, int64_t now, unsigned *ret_pruned);

/* The whole store's usage({}) {objects, bytes, tombstones} (a new
 * reference), or NULL: no store, an ABI 1.0 one, a failure, or the
 * evidence lock is held now (a commit runs): never waits for it, so any
 * thread may call it, the broker's lock held or not. */
json_t *broker_evidence_usage_now(struct berth_broker *b);

/* Fill @reply with 410 "pruned" for the tombstone @t (lock held or not). */
void broker_pruned_reply(const struct berth_job_tombstone *t, struct berth_reply *reply);

/* --- broker-events.c: job notifications --- */

void broker_events_init(struct broker_events *e);
void broker_events_free(struct broker_events *e);

/* Queue a look at run @run_id of @backend (any thread; no wake). */
void broker_events_add(struct berth_broker *b, const char *backend, const char *run_id);

/* The same, for the broker's own follow-up (a start that just returned:
 * a notification that came while the job was busy was skipped), not
 * counted as a notification in the metrics. */
void broker_events_recheck(struct berth_broker *b, const char *backend, const char *run_id);

/* A terminal result of @rec is durable now: tell whoever waits for it (p.on_result). */
void broker_result_recorded(struct berth_broker *b, const struct berth_job_record *rec);

/* Worker thread, lock not held: reconcile the one open record @rec now, as
 * a reconcile pass would (broker-worker.c); @fault, when not NULL, is the
 * fault point hit right before a terminal result of it is signed and
 * recorded.  Return: 0; -EIO or -EBADMSG; other errors are this job's. */
int broker_reconcile_job(struct berth_broker *b, struct berth_job_record *rec, int64_t now, const char *fault,
                         struct berth_pass_stats *stats, struct berth_error *reterr);

/* Fill @reply with a success: @status and @body (consumed; NULL: 500, out of memory). */
void broker_succeed(struct berth_reply *reply, int status, json_t *body);

/* Fill @reply with an error. */
void broker_fail(struct berth_reply *reply, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The backend named @name, or NULL. */
const struct berth_broker_backend *broker_backend(const struct berth_broker *b, const char *name);

/* Append a job.* audit event in the open transaction. */
int broker_audit(struct berth_broker *b, const char *type, const struct berth_job_record *rec, const char *actor,
                 json_t *extra, struct berth_error *reterr);

/* Stage @rec's @image below stage_directory (broker-stage.c) unless staged
 * already; *@ret_rootfs = its absolute path, or NULL without a stager.
 * -EBADMSG: the image source refused it (reterr starts with the reason code);
 * other errors may pass. */
int broker_stage(struct berth_broker *b, const struct berth_job_record *rec, const char *image, char **ret_rootfs,
                 struct berth_error *reterr);

/* Hold the cached root of @image for the warm slot @slot_id (released with
 * berth_rootcache_release(b->roots, slot_id)); *@ret_rootfs its path.
 * -EOPNOTSUPP without a stager; else broker_stage()'s errors. */
int broker_stage_slot(struct berth_broker *b, const char *slot_id, const char *image, const json_t *effective,
                      char **ret_rootfs, struct berth_error *reterr);

/* Remove @rec's staged rootfs and inputs, if any (best effort; logged). */
void broker_unstage(struct berth_broker *b, const struct berth_job_record *rec);

/* The root cache below the stage directory (broker-roots.c): STAGE/roots,
 * and STAGE/<run_id>/root naming the image digest whose root the run
 * holds. */
#define BROKER_ROOTS_DIR "roots"
#define BROKER_ROOT_FILE "root"

/* Open the root cache (none without a stager) and hold again the roots the
 * runs of the stage directory hold.  0 or -errno. */
int broker_roots_open(struct berth_broker *b, struct berth_error *reterr);

/* Free the cache's memory (its directory stays). */
void broker_roots_free(struct berth_broker *b);

/* Write @digest atomically as @dirfd's BROKER_ROOT_FILE (0600; a temporary
 * renamed into place, no fsync: see broker-roots.c).  0 or -errno. */
int broker_roots_record(int dirfd, const char *digest, struct berth_error *reterr);

/* Remove @name (a directory) below @dirfd with everything in it; 0 (also
 * when it is absent) or -errno (broker-stage.c). */
int broker_remove_dir_at(int dirfd, const char *name, struct berth_error *reterr);

/* --- broker-jobio.c: evidence store calls, each under @evidence_lock ---
 * (lock not held: a long put must not stall admission).  The store's own
 * return codes pass (plugin.h); -EOPNOTSUPP without a store. */

/* The canonical key {"digest", "principal", "scope"} of an object; @scope
 * is the canonical JSON text of the scope array.  0 or -ENOMEM. */
int broker_evidence_key(const char *digest, const char *principal, const char *scope, char **ret, size_t *ret_len,
                        struct berth_error *reterr);

int broker_evidence_stat(struct berth_broker *b, const char *key, size_t key_len, json_t **ret,
                         struct berth_error *reterr);
int broker_evidence_get(struct berth_broker *b, const char *key, size_t key_len, int out_fd, uint64_t max_bytes,
                        struct berth_error *reterr);
/* @meta as the store's put() takes it; *@ret_ref the reference it returned. */
int broker_evidence_put(struct berth_broker *b, const json_t *meta, int data_fd, json_t **ret_ref,
                        struct berth_error *reterr);

/* --- broker-parsed.c: a submission's job, parsed ahead or here --- */

/* A submission's job: @job, borrowed from the submission's parse ahead
 * (then @text is its canonical form) or @owned, parsed here (@text NULL). */
struct broker_job_ref {
    struct berth_job *job;
    const char *text;
    struct berth_job *owned;
};

/* Fill @ref with submission @s's job: berth_job_parse()'s return and
 * error, whether it was parsed ahead (struct berth_parsed_job) or now.
 * Release with broker_job_ref_clear() whatever it returned. */
int broker_submission_job(const struct berth_submission *s, struct broker_job_ref *ref, struct berth_error *reterr);
void broker_job_ref_clear(struct broker_job_ref *ref);

/* --- broker-inputs.c: a job's inputs, from admission to staging --- */

/* What the evidence store said about one submission's inputs, looked up
 * before the batch takes the broker lock (berth_broker_submit_batch()). */
struct broker_input_check {
    bool checked;                           /* its inputs were looked up, for this identity: */
    char principal[BERTH_PRINCIPAL_MAX + 1];
    char *scope;                            /* canonical JSON */
    int status;                             /* 0: every input is there; else the refusal: */
    const char *code;
    char message[256];
};

/* Look up the inputs of submission @s (lock not held; takes it briefly to
 * authenticate).  Leaves @ic unchecked when there is nothing to look up
 * (no inputs, no store, a document or caller that submit refuses anyway). */
void broker_inputs_precheck(struct berth_broker *b, const struct berth_submission *s, struct broker_input_check *ic);

void broker_input_check_clear(struct broker_input_check *ic);

/* Lock held, in submit: whether the new @job's inputs and outputs can be
 * honoured (an evidence store, @ic found every input for @caller, and a
 * backend of its pool reports the needs); fills @reply (400
 * inputs_unsupported, outputs_unsupported, input_unknown, input_refused;
 * 503 evidence_store, no_backend, busy) when not.  *@ret_needs: the
 * job's needs (enum berth_job_need bits) for placement. */
bool broker_jobio_admissible(struct berth_broker *b, const struct berth_job *job, const struct broker_caller *caller,
                             const struct broker_input_check *ic, unsigned *ret_needs, struct berth_reply *reply);

/* Stage @job's inputs for @rec below inputs_directory (see broker.h)
 * unless staged already; *@ret_dir = the directory, or NULL when the job
 * has none.  -EBADMSG: an input's bytes are not its digest (the job
 * fails: input_invalid); -ENOENT, -EIDRM: an input is gone from the store
 * (the job fails: input_unavailable); other errors are the host's
 * (retried with the staging backoff). */
int broker_stage_inputs(struct berth_broker *b, const struct berth_job_record *rec, const json_t *job, char **ret_dir,
                        struct berth_error *reterr);

/* Remove @rec's staged inputs, if any (best effort; logged). */
void broker_unstage_inputs(struct berth_broker *b, const struct berth_job_record *rec);

/* --- broker-outputs.c: declared outputs into the evidence store --- */

/* Capture the declared outputs of @rec, which @inspect (the backend's
 * inspect document) reports exited: each through open_output() into the
 * store, owned by the job's principal and scope.  0 with *@ret_outputs
 * the result's outputs (a new reference) and *@ret_error NULL, or -- an
 * output is invalid -- *@ret_outputs [] and *@ret_error {id, problem};
 * -EAGAIN with @reterr: a transient failure (the store is busy or full,
 * the backend cannot answer now), retried with the per-job backoff. */
int broker_capture_outputs(struct berth_broker *b, const struct berth_broker_backend *be,
                           const struct berth_job_record *rec, const json_t *inspect, json_t **ret_outputs,
                           json_t **ret_error, struct berth_error *reterr);

/* The store's put() document of an output of @rec: its owner (principal,
 * scope), @digest, @size bytes, @media_type, kept until @retain_until (ns
 * since the epoch; 0: until deleted).  A new reference, NULL out of memory. */
json_t *broker_output_meta(const struct berth_job_record *rec, const char *digest, int64_t size, const char *media_type,
                           int64_t retain_until);

/* When an output stored at @now is let go (outputs_retention_ns); 0: never. */
int64_t broker_outputs_retain_until(const struct berth_broker *b, int64_t now);

/* --- broker-runio.c: the inputs and outputs of a worker's run --- */

/* Lock NOT held (it takes the evidence lock): whether each of @outputs, a
 * worker's report's list, is in the evidence store under @rec's owner with
 * its digest, size and media type, as the worker uploaded it.  0; else
 * @reply says which is missing (409 output_missing) or that the store
 * failed (503), and a negative errno is returned. */
int broker_outputs_stored(struct berth_broker *b, const struct berth_job_record *rec, const json_t *outputs,
                          struct berth_reply *reply);

/* Lock NOT held: forget which outputs run @run_id's worker stored (the run
 * ended: reported or fenced). */
void broker_runio_forget(struct berth_broker *b, const char *run_id);

/* Whether a store error @r of an output's put() may pass when tried again
 * (busy, full, short of memory; -EIO), as berthd's own capture judges it. */
bool broker_output_transient(int r);

/* Any thread, evidence lock not held: a new unnamed file for an upload
 * (the store's upload(), or the spool directory).  0; else @reply says why. */
int broker_evidence_scratch(struct berth_broker *b, int *ret_fd, struct berth_reply *reply);

/* --- broker-storage.c: a full state filesystem (lock held unless said) --- */

/* CLOCK_MONOTONIC now, for the backoffs; 0 if it cannot be read, which
 * clock.h says does not happen on Linux. */
int64_t broker_mono_now(void);

/* Set up @b->storage: degraded from the start when the journal's reserve
 * is configured but could not be made. */
void broker_storage_init(struct berth_broker *b);

/* Release what @b->storage holds. */
void broker_storage_free(struct berth_broker *b);

/* Whether storage is degraded (new jobs and pools are refused). */
bool broker_storage_degraded(const struct berth_broker *b);

/* Whether journal writes other than priority ones are held back now (takes the lock). */
bool broker_storage_journal_full(struct berth_broker *b);

/* Count a journal write that failed for space (@err says what and why):
 * journal writes other than priority ones are held back from now on until
 * broker_storage_check() finds space; logged once when it begins. */
void broker_storage_failed(struct berth_broker *b, const struct berth_error *err);

/* Staging retries (worker thread; each takes the lock): whether a try is
 * due; a failure @r of staging @what ("image sha256:...", "its inputs") for @rec (logged when staging starts
 * failing; a space error degrades storage until a staging works); a
 * success; and "no job waits for staging" (a pass found none: the backoff
 * and a space failure are forgotten). */
bool broker_stage_due(struct berth_broker *b);
void broker_stage_failed(struct berth_broker *b, const struct berth_job_record *rec, const char *what, int r,
                         const struct berth_error *err);
void broker_stage_succeeded(struct berth_broker *b, const struct berth_job_record *rec);
void broker_stage_idle(struct berth_broker *b);

/* Run @fn in a journal transaction of its own (what: for messages).  A
 * @priority write (a cancellation, a move to reaping) may use the space
 * reserve; any other is refused with -ENOSPC, without touching the journal,
 * while storage is degraded.  A space failure degrades storage. */
int broker_journal_write(struct berth_broker *b, bool priority,
                         int (*fn)(struct berth_journal *j, void *userdata, struct berth_error *reterr), void *userdata,
                         const char *what, struct berth_error *reterr);

/* 503 "storage_full" with a "retry in N s" hint. */
void broker_storage_refuse(struct berth_broker *b, struct berth_reply *reply);

/* A failed journal write @r of an operation: storage_full when @r is a
 * space error (counted, degrading), else 503 "journal" with @message. */
void broker_journal_failed(struct berth_broker *b, int r, const struct berth_error *err, struct berth_reply *reply,
                           const char *message);

/* Worker thread, lock not held: when degraded and a check is due, check
 * whether space returned.  Return: true when storage is usable now. */
bool broker_storage_check(struct berth_broker *b);

/* Keep a copy of a result the journal could not take (takes the lock); 0 or -ENOMEM. */
int broker_unrecorded_keep(struct berth_broker *b, const struct berth_job_record *rec, enum berth_job_state to,
                           const char *result, const json_t *audit, bool reached);

/* Whether a result of run @run_id is waiting in memory. */
bool broker_unrecorded_has(const struct berth_broker *b, const char *run_id);

/* Move the oldest kept result into @ret (the caller clears it with
 * broker_unrecorded_clear()); false when there is none. */
bool broker_unrecorded_take(struct berth_broker *b, struct broker_unrecorded *ret);

void broker_unrecorded_clear(struct broker_unrecorded *u);

/* --- broker-retry.c: per-job backend call retries (each takes the lock) --- */

/* Whether @op of @run_id is due: always unless it failed and its backoff
 * wait has not passed. */
bool broker_retry_due(struct berth_broker *b, const char *run_id, enum broker_op op);

/* @op of @rec on @backend failed with @err: the next try waits 250 ms,
 * doubling to 30 s (a reap: 1 s, doubling to 5 min); logged when this
 * begins a failing period. */
void broker_retry_failed(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                         const char *backend, const struct berth_error *err);

/* @op of @rec worked: its backoff is forgotten, logged when it was failing. */
void broker_retry_succeeded(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                            const char *backend);

/* @run_id is terminal: forget its retries. */
void broker_retry_forget(struct berth_broker *b, const char *run_id);

/* How many times in a row @op of @run_id failed (0: it is not failing). */
uint64_t broker_retry_failures(struct berth_broker *b, const char *run_id, enum broker_op op);

/* The run ids (at most @max, into @ret, each BERTH_RUN_ID_LEN + 1 bytes)
 * whose reap failed and is due again; their count. */
size_t broker_retry_reaps_due(struct berth_broker *b, char (*ret)[BERTH_RUN_ID_LEN + 1], size_t max);

void broker_retries_free(struct broker_retries *t);

/* --- dispatch (broker-worker.c, broker-dispatch.c, broker-starts.c) --- */

/* The claim half of dispatching @rec (accepted or claimed), on the
 * dispatching thread: recheck it, record its claim (the journal holds the
 * claim before any start: a job never starts twice).  1: claimed and its
 * start is due (hand it to broker_dispatch_start()); 0: not now (*@staging
 * is set when it waits for staging); -EIO/-EBADMSG. */
int broker_dispatch_claim(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                          struct berth_pass_stats *stats, bool *staging, struct berth_error *reterr);

/* The start half: stage @rec's image and inputs, call the backend's start
 * and record "running".  Any thread; never two for one job (the busy set of
 * broker-starts.c).  0, or -EIO/-EBADMSG. */
int broker_dispatch_start(struct berth_broker *b, struct berth_job_record *rec, struct berth_pass_stats *stats,
                          struct berth_error *reterr);

/* Start the start threads (p.start_concurrency of them; none for 0).  0 or a negative errno. */
int broker_starts_init(struct berth_broker *b);

/* Stop and join them; a job handed over but not taken stays claimed (the next daemon starts it). */
void broker_starts_free(struct berth_broker *b);

/* How many more jobs broker_starts_hand() takes now (SIZE_MAX without start threads). */
size_t broker_starts_room(struct berth_broker *b);

/* Whether @run_id is handed over or being started (reconcile and dispatch leave it alone). */
bool broker_starts_busy(struct berth_broker *b, const char *run_id);

/* Start the claimed @rec: on a start thread (a copy is taken), or at once
 * on this thread without start threads.  0, -ENOMEM (not handed over: it
 * stays claimed and is tried again), or broker_dispatch_start()'s error. */
int broker_starts_hand(struct berth_broker *b, struct berth_job_record *rec, struct berth_pass_stats *stats,
                       struct berth_error *reterr);

/* Add what the start threads recorded since the last call to @stats and
 * return the journal failure one of them met (-EIO/-EBADMSG, @reterr says
 * it), else 0. */
int broker_starts_collect(struct berth_broker *b, struct berth_pass_stats *stats, struct berth_error *reterr);

void broker_starts_stage_lock(struct berth_broker *b);
void broker_starts_stage_unlock(struct berth_broker *b);

/* Give every backend whose plugin does not declare BERTH_RUNTIME_CONCURRENT
 * a wrapper that serializes its calls (b->backends[i].ops and .state then
 * point into it).  0 or -ENOMEM. */
int broker_serial_wrap(struct berth_broker *b);
void broker_serial_free(struct berth_broker *b);

/* --- broker-warm.c: warm slots (docs/warm-slots.md) --- */

int broker_warm_init(struct berth_broker *b);
void broker_warm_free(struct berth_broker *b);

/* Worker thread, lock not held, before admission opens: destroy every slot
 * the backends hold (none is this run's yet).  Return: true once none is
 * left (admission may open), false to try again on the next pass. */
bool broker_warm_sweep(struct berth_broker *b);

/* Start the refill thread when there are warm targets and start threads
 * (after broker_starts_init(); with start_concurrency 0 the refill runs on
 * the dispatching thread).  0 or a negative errno. */
int broker_warm_start(struct berth_broker *b);

/* Worker thread, lock not held, after a dispatch pass that left @waiting
 * accepted jobs queued: discard lost and retired slots, then provision at
 * most one slot towards the targets when no job waits and the host and
 * pool bounds leave room (@in_use: sandboxes per pool, @limits: each
 * limited pool's max_concurrency).  With a refill thread this only hands
 * it copies of the counts and returns: a provisioning (a runtime's whole
 * create) never delays the worker recording results; after each slot it
 * made the thread wakes the worker, whose next pass asks for the next. */
void broker_warm_pass(struct berth_broker *b, size_t waiting, const json_t *limits, const json_t *in_use);

/* Any thread, lock not held, in broker_dispatch_start() right before a cold
 * start: start @rec (its dispatch document @doc) in a ready slot of its
 * shape, recording the attach (or the quarantine) first.  Return: 1 started
 * warm, *@ret_warm the record's warm member (a new reference); 2 the
 * backend had started the job already; 0 start it cold; start's refusals
 * (-EBADMSG, -EKEYREJECTED, -ETIME, -EPERM); another negative errno when
 * it is uncertain whether it started (retried as a start is). */
int broker_warm_claim(struct berth_broker *b, const struct berth_job_record *rec, const json_t *job, const char *doc,
                      size_t len, json_t **ret_warm, struct berth_error *reterr);

/* Whether @id is a warm slot backend @backend holds for this run; then the
 * next refill pass lists the slots at once (the notification of a slot
 * whose sandbox died idle, or that was destroyed).  Any thread, including
 * a plugin's inside job_changed; takes only warm.lock. */
bool broker_warm_slot_changed(struct berth_broker *b, const char *backend, const char *id);

/* Fill the warm members of @h (any thread; takes warm.lock). */
void broker_warm_health(struct berth_broker *b, struct berth_broker_health *h);

/* The "warm" member of pool @pool's berth_broker_pool_show() reply (a new
 * reference), NULL when this host has no warm target for it or out of
 * memory.  Any thread; takes warm.lock (the broker lock may be held). */
json_t *broker_warm_pool_json(struct berth_broker *b, const char *pool);

/* --- broker-fleet.c: remote workers (docs/workers.md) --- */

int broker_fleet_init(struct berth_broker *b);
void broker_fleet_free(struct berth_broker *b);

/* Whether @rec is placed on the remote workers (backend BERTH_WORKERS_BACKEND). */
bool broker_is_remote(const struct berth_job_record *rec);

/* Record what worker @seen->name said in its poll (copied; its JSON
 * members are referenced): live from now.  @again: a parked poll asked
 * again (its busy count is no newer than what berthd knows: the lower
 * stands).  0 or -ENOMEM. */
int broker_fleet_seen(struct berth_broker *b, const struct broker_fleet_worker *seen, bool again);

/* Whether worker @name may be given work at CLOCK_REALTIME @now (its qualification, when required). */
bool broker_fleet_qualified(struct berth_broker *b, const char *name, int64_t now);

/* Worker @name called (a heartbeat, a claim; a report: @busy_delta -1, a
 * slot it frees before its next poll says so): live from now. */
void broker_fleet_touch(struct berth_broker *b, const char *name, int busy_delta);

/* Queue run @run_id of pool @pool, placed under its manifest @pool_hash,
 * for the workers (nothing when queued already).  1 queued now, 0 queued
 * before, -ENOMEM, -EINVAL. */
int broker_fleet_enqueue(struct berth_broker *b, const char *run_id, const char *pool, const char *pool_hash,
                         int64_t accepted_at);

/* Run @run_id is claimed or over: off the queue. */
void broker_fleet_dequeue(struct berth_broker *b, const char *run_id);

/* The offer of run @run_id ended without a claim (a refused one): offer it again. */
void broker_fleet_release(struct berth_broker *b, const char *run_id);

/* Hold for worker @name, and copy into @ret_runs, at most @max queued runs
 * for which @offerable(@userdata, pool name, pool hash) says yes, oldest
 * first, that are not held now (for any worker: one offered to @name
 * before is not offered again while its claim may be on its way).  Called
 * with the broker's lock held (@offerable may read the registry and the
 * policy).  Return: how many. */
size_t broker_fleet_take(struct berth_broker *b, const char *name,
                         bool (*offerable)(void *userdata, const char *pool, const char *pool_hash), void *userdata,
                         size_t max, char (*ret_runs)[BERTH_RUN_ID_LEN + 1]);

/* Lock held: the "workers" offer of the backend set (placement.h) at
 * CLOCK_REALTIME @now, or NULL when no active pool lists workers (or out
 * of memory). */
json_t *broker_fleet_offer(struct berth_broker *b, int64_t now);

/* Lock held: put a fresh "workers" offer into b->offers when the fleet
 * changed or a second passed.  0 or a negative errno (the old set stays). */
int broker_fleet_refresh_offers(struct berth_broker *b, int64_t now);

/* berth_broker_offer_generation() changes now (a parked poll looks again). */
void broker_fleet_kick(struct berth_broker *b);

/* --- broker-worker.c: the outcome of a remote run --- */

/* What a worker's verified report says of @rec (the fields of its
 * result); strings and JSON borrowed. */
struct broker_remote_outcome {
    enum berth_job_state to;  /* exited, failed, cancelled or expired */
    bool has_exit_code;
    int exit_code;
    const char *reason;
    const uint8_t *out, *err;
    size_t out_len, err_len;
    const json_t *outputs;
    const json_t *output_error; /* {id, problem}, or NULL */
    int64_t started_at, finished_at;
    const json_t *worker;     /* the result's "worker" member (report.h) */
};

/* Any thread, lock not held: sign and record @rec's result from the
 * worker's report @o (a claimed record moves to running first).  0;
 * -ESTALE (the record moved on: the caller re-reads it); -EINVAL (the
 * result would not say what the report says); journal errors. */
int broker_remote_finish(struct berth_broker *b, struct berth_job_record *rec, const struct broker_remote_outcome *o,
                         struct berth_error *reterr);

/* Any thread, lock not held: fence @rec, whose lease ran out: failed
 * ("worker_lost"), cancelled when a cancellation was asked for, expired
 * past its deadline.  0, -ESTALE, journal errors. */
int broker_remote_fence(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                        struct berth_pass_stats *stats, struct berth_error *reterr);

/* Any thread, lock not held: record claimed @rec's move to running and its
 * renewed lease @lease (canonical JSON) in one transaction.  0, -ESTALE,
 * journal errors. */
int broker_remote_started(struct berth_broker *b, struct berth_job_record *rec, const char *lease,
                          struct berth_error *reterr);

/* --- broker-lease.c: leases of remote runs --- */

/* Whether @pool's backend_allowlist names the workers (broker-fleet.c). */
bool broker_pool_lists_workers(const struct berth_pool *pool);

/* Lock held: whether @caller (an authenticated worker) holds the lease of
 * run @run_id now: the run is remote, not ended, its lease names the
 * caller and has not run out at @now.  0 with @rec filled (the caller
 * clears it either way) and *@ret_job the parsed stored job (a new
 * reference); -EACCES otherwise (nothing tells which). */
int broker_held_run(struct berth_broker *b, const struct broker_caller *caller, const char *run_id, int64_t now,
                    struct berth_job_record *rec, json_t **ret_job);

/* Parse the lease of @rec: its claim envelope (borrowed from *@ret_doc,
 * which the caller releases), claim digest, worker and expiry (CLOCK_REALTIME,
 * moved to at least a full term after this broker started).  0 or -EBADMSG. */
int broker_lease_parse(struct berth_broker *b, const struct berth_job_record *rec, json_t **ret_doc,
                       int64_t *ret_expires);

/* Reconcile open remote @rec (worker thread): queue it while accepted (in
 * the startup round only: afterwards its submission queued it), fence it
 * once its lease ran out.  Return: 0; -EIO/-EBADMSG. */
int broker_remote_reconcile(struct berth_broker *b, struct berth_job_record *rec, int64_t now,
                            struct berth_pass_stats *stats, struct berth_error *reterr);

/* Call the fault hook. */
void broker_fault(struct berth_broker *b, const char *point);

#endif
