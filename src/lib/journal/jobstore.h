/* SPDX-License-Identifier: MIT */
/*
 * jobstore.h -- durable job records in the journal.
 *
 * A job is keyed by who submitted it (principal and canonical scope) and its
 * id; it also has a run id, unique across the journal, that the runtime
 * sees.  Its state only moves forward:
 *
 *   accepted -> claimed -> running -> finalizing -> exited | failed
 *                                                 | cancelled | expired
 *   with reaping for cleanup that has not been confirmed yet:
 *   accepted  -> claimed | cancelled | expired | failed
 *   claimed   -> running | reaping | failed | expired (the deadline passed before start)
 *   running   -> finalizing | reaping
 *   finalizing-> exited | failed | cancelled | expired
 *   reaping   -> exited (it ended on its own before the stop) | cancelled | expired | failed
 *
 * Every transition names the revision it expects and bumps it, so a late
 * writer cannot overwrite newer state (-ESTALE).  Terminal records keep
 * their signed result.  Admission limits are checked in the transaction that
 * inserts.  All functions run in the caller's journal transaction when one
 * is open.  Not thread-safe (a journal is used by one thread).
 */
#ifndef BERTH_JOBSTORE_H
#define BERTH_JOBSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "journal.h"

enum berth_job_state {
    BERTH_JOB_ACCEPTED,
    BERTH_JOB_CLAIMED,
    BERTH_JOB_RUNNING,
    BERTH_JOB_FINALIZING,
    BERTH_JOB_REAPING,
    BERTH_JOB_EXITED,
    BERTH_JOB_FAILED,
    BERTH_JOB_CANCELLED,
    BERTH_JOB_EXPIRED,
    BERTH_JOB_STATE_COUNT,
};
extern const char *const berth_job_state_names[BERTH_JOB_STATE_COUNT];

/** berth_job_state_terminal() - exited, failed, cancelled or expired. */
bool berth_job_state_terminal(enum berth_job_state s);

/** berth_job_transition_allowed() - whether @from may move to @to (table above). */
bool berth_job_transition_allowed(enum berth_job_state from, enum berth_job_state to);

/**
 * struct berth_job_record - one row.  Strings and JSON are owned by the
 * record; free with berth_job_record_clear().
 * @scope: canonical JSON text of the scope array.
 * @job, @receipt, @result: canonical JSON text (result NULL until terminal).
 * @effective: canonical JSON of the effective manifest placement chose.
 * @pool: the pool the job was placed in.
 * @fingerprint: the submitter's certificate fingerprint (64 lowercase hex),
 *           "" for records older than journal format 4.
 * @cancel_reason: NULL when a cancellation was asked for by a caller (or
 *           none was), else the short code of why berthd cancels the job
 *           itself ("revoked", "qualification_expired"); the signed result
 *           carries it as its reason.
 */
struct berth_job_record {
    char *principal;
    char *scope;
    char *job_id;
    char *run_id;
    char *job_digest;
    char *job;
    char *receipt;
    char *backend;
    char *effective;
    char *pool;
    enum berth_job_state state;
    int64_t revision;
    int64_t accepted_at;
    int64_t deadline;
    bool cancel_requested;
    char *result;
    int64_t updated_at;
    char *fingerprint;
    char *cancel_reason;
    char *warm; /* the warm slot it started in (berth_jobstore_set_warm()), or NULL: cold, or not started */
    char *lease; /* a remote worker's lease (berth_jobstore_set_lease()), or NULL: a job of this host */
};

void berth_job_record_clear(struct berth_job_record *rec);

/**
 * berth_job_record_copy() - fill @dst with a deep copy of @src (every
 * string duplicated; @dst's old contents are not released).
 * Return: 0; -ENOMEM (@dst is left empty).
 */
int berth_job_record_copy(struct berth_job_record *dst, const struct berth_job_record *src);

/** Bytes whose hex follows the "r" of a run id. */
#define BERTH_RUN_ID_BYTES 16
/** Characters of a run id, "r" and BERTH_HEX_LEN(BERTH_RUN_ID_BYTES) lowercase hex, without NUL. */
#define BERTH_RUN_ID_LEN (1 + 2 * BERTH_RUN_ID_BYTES)

/**
 * berth_run_id() - the run id of a job at one broker: "r" followed by the
 * first 32 hex digits of SHA-256 over @broker_key_id (the broker's receipt
 * key id, RFC 7638), @principal, @scope (canonical) and @job_id, joined by
 * NUL bytes.  The same job at the same broker always gets the same run id
 * (a retry finds its job); two brokers on one host never share one, so
 * host-wide names a runtime derives from it (gVisor's control socket, a
 * container id) cannot collide between installations.  @out holds
 * BERTH_RUN_ID_LEN + 1 bytes.  Return: 0, -EINVAL for a NULL argument, or
 * -EIO.
 */
int berth_run_id(const char *broker_key_id, const char *principal, const char *scope, const char *job_id,
                 char out[BERTH_RUN_ID_LEN + 1]);

/**
 * berth_jobstore_find() - the record with this key.
 * Return: 0; -ENOENT; journal errors.
 */
int berth_jobstore_find(struct berth_journal *j, const char *principal, const char *scope, const char *job_id,
                        struct berth_job_record *ret, struct berth_error *reterr);

/** berth_jobstore_find_run() - the record with this run id (-ENOENT if none). */
int berth_jobstore_find_run(struct berth_journal *j, const char *run_id, struct berth_job_record *ret,
                            struct berth_error *reterr);

/**
 * berth_jobstore_insert() - add a new record in state accepted, revision 1
 * (@rec->fingerprint required; @rec->cancel_reason ignored),
 * unless that would pass @max_active non-terminal records (-EAGAIN) or
 * @max_retained records in all (-EOVERFLOW; nothing is deleted to make
 * room: only retention prunes terminal records, jobprune.h; tombstones do
 * not count; -ENOSPC and -EDQUOT mean a full filesystem, journal.h).
 * -EEXIST when the key or run id exists, as a record or as the tombstone
 * of a pruned one.  The two counts are read from the journal's job_counts
 * row (format 6, kept by triggers), so the check costs the same however
 * many jobs are queued.
 */
int berth_jobstore_insert(struct berth_journal *j, const struct berth_job_record *rec, int64_t max_active,
                          int64_t max_retained, struct berth_error *reterr);

/**
 * berth_jobstore_transition() - move the record with @run_id from revision
 * @expected_revision to @to, storing @result (canonical JSON text, may be
 * NULL) and @now_ns.  Return: 0; -ESTALE (the record moved on: revision or
 * state differ); -EINVAL (transition not allowed); -ENOENT; journal errors.
 */
int berth_jobstore_transition(struct berth_journal *j, const char *run_id, int64_t expected_revision,
                              enum berth_job_state to, const char *result, int64_t now_ns, struct berth_error *reterr);

/**
 * berth_jobstore_set_warm() - record that run @run_id, now at revision
 * @expected_revision, was started in a warm slot: @warm is canonical JSON
 * {slot_id, slot_hash, provision_ns} (docs/warm-slots.md), stored as given
 * and returned in struct berth_job_record.warm; the revision does not
 * change.  Called in the transaction that records the start.
 * Return: 0; -ESTALE (the record moved on); -EINVAL; journal errors.
 */
int berth_jobstore_set_warm(struct berth_journal *j, const char *run_id, int64_t expected_revision, const char *warm,
                            struct berth_error *reterr);

/**
 * berth_jobstore_set_lease() - record the lease of the remote worker that
 * holds run @run_id, now at revision @expected_revision: @lease is
 * canonical JSON {worker, keyid, claim_digest, expires_ns}
 * (docs/workers.md), stored as given and returned in struct
 * berth_job_record.lease; the revision does not change.  Called in the
 * transaction that records the claim, and again when a heartbeat renews it.
 * Return: 0; -ESTALE (the record moved on); -EINVAL; journal errors.
 */
int berth_jobstore_set_lease(struct berth_journal *j, const char *run_id, int64_t expected_revision, const char *lease,
                             struct berth_error *reterr);

/**
 * berth_jobstore_request_cancel() - mark the record cancel_requested (and bump
 * its revision) unless it is terminal or marked already.
 * @reason: NULL for a caller's cancellation, else berthd's own reason code
 *          (stored as cancel_reason; the first cancellation's reason stays).
 * Return: 0, -ENOENT, journal errors.
 */
int berth_jobstore_request_cancel(struct berth_journal *j, const char *run_id, const char *reason, int64_t now_ns,
                                  struct berth_error *reterr);

/**
 * berth_jobstore_foreach_open() - call @fn with every non-terminal record,
 * oldest first (the record is cleared after the call).
 */
int berth_jobstore_foreach_open(struct berth_journal *j, int (*fn)(void *userdata, const struct berth_job_record *rec),
                                void *userdata, struct berth_error *reterr);

/** Largest page berth_jobstore_page_open() returns. */
#define BERTH_JOBSTORE_PAGE_MAX 256

/**
 * struct berth_job_cursor - a position in the keyset order of open records,
 * (accepted_at, run_id) ascending.  All zero (run_id "") is the start.
 */
struct berth_job_cursor {
    int64_t accepted_at;
    char run_id[BERTH_RUN_ID_LEN + 1];
};

/**
 * berth_jobstore_page_open() - call @fn with at most @limit non-terminal
 * records that come after @cursor in (accepted_at, run_id) order, oldest
 * first, and move @cursor to the last one visited.  A keyset query on the
 * partial index jobs_open_order: its cost grows with the page, not with the
 * records before the cursor or the terminal ones.  Records inserted behind
 * the cursor are visited after it comes round again (the caller resets it
 * to the start when a page comes back short).
 * @limit:      1..BERTH_JOBSTORE_PAGE_MAX.
 * @ret_count:  how many records @fn was called with (may be NULL).
 * Return: 0 (a page shorter than @limit means the end was reached);
 * -EINVAL; -EBADMSG (a damaged record); @fn's error; journal errors.
 * @cursor is moved past every record @fn was called with, even on error.
 */
int berth_jobstore_page_open(struct berth_journal *j, struct berth_job_cursor *cursor, size_t limit,
                             int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata,
                             size_t *ret_count, struct berth_error *reterr);

/**
 * berth_jobstore_page_queued() - as berth_jobstore_page_open(), but only the
 * records waiting to be started: state "accepted" or "claimed", oldest
 * first.  The same keyset query on jobs_open_order: its cost grows with the
 * page and the jobs that run (claimed or later), not with the queue before
 * the cursor.  Arguments, cursor and returns as berth_jobstore_page_open().
 */
int berth_jobstore_page_queued(struct berth_journal *j, struct berth_job_cursor *cursor, size_t limit,
                               int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata,
                               size_t *ret_count, struct berth_error *reterr);

/**
 * berth_jobstore_count_active() - call @fn once per pool with how many of its
 * records hold or may hold a sandbox (claimed, running, reaping,
 * finalizing); pools with none are not reported.  @pool is borrowed for
 * the call.  On the partial index jobs_open: the cost grows with those
 * records, not with the accepted ones.
 * Return: 0; -EINVAL; @fn's error; journal errors.
 */
int berth_jobstore_count_active(struct berth_journal *j, int (*fn)(void *userdata, const char *pool, int64_t count),
                                void *userdata, struct berth_error *reterr);

/**
 * struct berth_prune_cursor - a position in the keyset order of terminal
 * records, (finished_at, run_id) ascending.  All zero is the start.
 */
struct berth_prune_cursor {
    int64_t finished_at;
    char run_id[BERTH_RUN_ID_LEN + 1];
};

/**
 * berth_jobstore_page_expired() - call @fn with at most @limit terminal
 * records that finished at or before @cutoff_ns and come after @cursor in
 * (finished_at, run_id) order, oldest first, moving @cursor to the last one
 * visited.  A keyset query on the partial index jobs_terminal_order: its
 * cost grows with the page, not with the journal.  The finished time of a
 * terminal record is its updated_at (jobprune.h, retention).
 * @limit:     1..BERTH_JOBSTORE_PAGE_MAX.
 * @ret_count: how many records @fn was called with (may be NULL).
 * Return: 0 (a page shorter than @limit means the end was reached);
 * -EINVAL; -EBADMSG (a damaged record); @fn's error; journal errors.
 */
int berth_jobstore_page_expired(struct berth_journal *j, int64_t cutoff_ns, struct berth_prune_cursor *cursor,
                                size_t limit, int (*fn)(void *userdata, const struct berth_job_record *rec),
                                void *userdata, size_t *ret_count, struct berth_error *reterr);

/** berth_jobstore_counts() - records per state (array of BERTH_JOB_STATE_COUNT). */
int berth_jobstore_counts(struct berth_journal *j, int64_t counts[BERTH_JOB_STATE_COUNT], struct berth_error *reterr);

#endif /* BERTH_JOBSTORE_H */
