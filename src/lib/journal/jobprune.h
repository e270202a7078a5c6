/* SPDX-License-Identifier: MIT */
/*
 * jobprune.h -- retention of job records: pruning terminal jobs and the
 * identity tombstones they leave (journal format 5).
 *
 * A terminal job whose retention has passed is pruned: its row in jobs
 * goes, and one row in job_tombstones keeps what the broker needs to stay
 * idempotent for ever -- who submitted it (principal, canonical scope), its
 * job id and run id, its job digest, its signed receipt (the exact
 * canonical bytes), its final state, the digest of its signed result and
 * when it finished and was pruned.  Nothing else of it is kept: not the
 * job document, not the result, not its output.
 *
 * The request key (principal, scope, job id) and the run id of a tombstone
 * can never be recorded again (berth_jobstore_insert() answers -EEXIST),
 * so a pruned job never runs twice; the broker answers an identical retry
 * with the tombstone's receipt and a changed one with a conflict.
 * Tombstones do not count against max_retained (jobstore.h); they are never
 * removed.
 *
 * Retention counts from a job's finished time: the updated_at of its
 * terminal record, the moment its signed result was recorded (a terminal
 * record never changes again).  All functions run in the caller's journal
 * transaction when one is open.  Not thread-safe (a journal is used by one
 * thread).
 */
#ifndef BERTH_JOBPRUNE_H
#define BERTH_JOBPRUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>

#include "jobstore.h"
#include "journal.h"

/**
 * struct berth_job_tombstone - what is left of a pruned job.  Strings are
 * owned; free with berth_job_tombstone_clear().
 * @scope:         canonical JSON text of the scope array.
 * @receipt:       the signed receipt envelope, canonical JSON text, byte
 *                 for byte as the job record held it.
 * @state:         the final state (terminal).
 * @result_digest: "sha256:<hex>" of the signed result's canonical text.
 * @finished_at:   when the terminal state was recorded (ns since the epoch).
 * @pruned_at:     when the job was pruned.
 */
struct berth_job_tombstone {
    char *principal;
    char *scope;
    char *job_id;
    char *run_id;
    char *job_digest;
    char *receipt;
    enum berth_job_state state;
    char *result_digest;
    int64_t finished_at;
    int64_t pruned_at;
};

/** berth_job_tombstone_clear() - release @t's strings and zero it; accepts NULL. */
void berth_job_tombstone_clear(struct berth_job_tombstone *t);

/**
 * berth_jobstore_find_tombstone() - the tombstone of the pruned job with
 * this request key.
 * Return: 0 (@ret filled); -ENOENT (no job of that key was pruned);
 * -EINVAL (NULL argument); -EBADMSG (a damaged row); -ENOMEM; journal errors.
 */
int berth_jobstore_find_tombstone(struct berth_journal *j, const char *principal, const char *scope,
                                  const char *job_id, struct berth_job_tombstone *ret, struct berth_error *reterr);

/**
 * berth_jobstore_tombstoned() - whether the request key or @run_id belongs
 * to a pruned job.  Return: 1 yes, 0 no, or a journal error.
 */
int berth_jobstore_tombstoned(struct berth_journal *j, const char *principal, const char *scope, const char *job_id,
                              const char *run_id, struct berth_error *reterr);

/**
 * berth_jobstore_prune() - replace the terminal record @rec (as read: its
 * run id and revision must still match) by its tombstone, pruned at
 * @now_ns.  Call it in a transaction, with the job's audit event.
 * @ret_tombstone: optional; filled with the tombstone written (the caller
 *                 clears it).
 * Return: 0; -EINVAL (NULL argument, @rec not terminal or without a
 * result); -ESTALE (the record is gone or moved on); -EEXIST (a tombstone
 * of that key or run id exists); -ENOMEM; journal errors.
 */
int berth_jobstore_prune(struct berth_journal *j, const struct berth_job_record *rec, int64_t now_ns,
                         struct berth_job_tombstone *ret_tombstone, struct berth_error *reterr);

/**
 * struct berth_journal_stats - the figures of "berthctl journal stats".
 * @counts:        job records per state.
 * @tombstones:    pruned jobs.
 * @bytes:         the journal file's size in pages (page_count * page_size).
 * @free_bytes:    of those, pages free for reuse (freelist), which pruning
 *                 makes: SQLite reuses them before the file grows.
 * @oldest_finished: the finished time of the oldest terminal record, 0 when
 *                 there is none (its expiry is this plus the job retention).
 * @first_outputs_after: the finished time of the oldest terminal record
 *                 whose signed result lists outputs and that finished after
 *                 the @outputs_after_ns given, 0 when there is none.
 */
struct berth_journal_stats {
    int64_t counts[BERTH_JOB_STATE_COUNT];
    int64_t tombstones;
    int64_t bytes, free_bytes;
    int64_t oldest_finished;
    int64_t first_outputs_after;
};

/**
 * berth_journal_stats() - fill @ret (read only; one pass of a few indexed
 * queries).
 * @outputs_after_ns: see @first_outputs_after.
 * Return: 0; -EINVAL; journal errors.
 */
int berth_journal_stats(struct berth_journal *j, int64_t outputs_after_ns, struct berth_journal_stats *ret,
                        struct berth_error *reterr);

#endif /* BERTH_JOBPRUNE_H */
