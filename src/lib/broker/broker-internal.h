/* SPDX-License-Identifier: MIT */
/* broker-internal.h -- what broker.c and broker-worker.c share; not installed. */
#ifndef BERTH_BROKER_INTERNAL_H
#define BERTH_BROKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "backoff.h"
#include "broker.h"
#include "placement.h"
#include "registry.h"

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
enum broker_op { BROKER_OP_START, BROKER_OP_INSPECT, BROKER_OP_CANCEL };

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

/* The reconcile sweeps (broker-sweep.c); worker thread only, but for
 * @admitting, which any thread reads. */
struct broker_sweep {
    struct berth_job_cursor cursor; /* where the next reconcile page starts */
    bool cycle_error;               /* this round of pages left a job undecided */
    size_t cycle_visited;           /* jobs this round of pages visited */
    atomic_bool admitting;          /* a whole round completed without error: new jobs are accepted */
};

struct berth_broker {
    struct berth_broker_params p;
    struct berth_broker_backend *backends;
    pthread_mutex_t lock; /* journal, registry, policy source, backend set */
    struct berth_registry *reg;
    struct berth_backend_set *offers; /* from the last capabilities refresh */
    json_t *capabilities;             /* {backend: capabilities()} from that refresh */
    atomic_bool stopping;             /* berth_broker_stop() was called */
    char (*caps_errors)[512];         /* per backend: the last capabilities() error logged, "" when fine */
    struct broker_storage storage;    /* under the lock */
    struct broker_retries retries;    /* under the lock */
    struct broker_sweep sweep;
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

/* Remove @rec's staged rootfs, if any (best effort; logged). */
void broker_unstage(struct berth_broker *b, const struct berth_job_record *rec);

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
 * due; a failure @r of staging @image for @rec (logged when staging starts
 * failing; a space error degrades storage until a staging works); a
 * success; and "no job waits for staging" (a pass found none: the backoff
 * and a space failure are forgotten). */
bool broker_stage_due(struct berth_broker *b);
void broker_stage_failed(struct berth_broker *b, const struct berth_job_record *rec, const char *image, int r,
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
 * doubling to 30 s; logged when this begins a failing period. */
void broker_retry_failed(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                         const char *backend, const struct berth_error *err);

/* @op of @rec worked: its backoff is forgotten, logged when it was failing. */
void broker_retry_succeeded(struct berth_broker *b, const struct berth_job_record *rec, enum broker_op op,
                            const char *backend);

/* @run_id is terminal: forget its retries. */
void broker_retry_forget(struct berth_broker *b, const char *run_id);

void broker_retries_free(struct broker_retries *t);

/* Call the fault hook. */
void broker_fault(struct berth_broker *b, const char *point);

#endif
