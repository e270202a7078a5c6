/* SPDX-License-Identifier: MIT */
/* jobprune.c -- pruning terminal jobs into identity tombstones; see jobprune.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "jobprune.h"
#include "macro.h"
#include "names.h"

#define TOMBSTONE_COLUMNS                                                                                              \
    "principal, scope, job_id, run_id, job_digest, receipt, state, result_digest, finished_at, pruned_at"

void berth_job_tombstone_clear(struct berth_job_tombstone *t)
{
    if (!t)
        return;
    free(t->principal);
    free(t->scope);
    free(t->job_id);
    free(t->run_id);
    free(t->job_digest);
    free(t->receipt);
    free(t->result_digest);
    memset(t, 0, sizeof(*t));
}

static int read_tombstone(sqlite3_stmt *st, struct berth_job_tombstone *t)
{
    int idx = berth_name_index(berth_job_state_names, BERTH_JOB_STATE_COUNT, (const char *)sqlite3_column_text(st, 6));

    memset(t, 0, sizeof(*t));
    t->principal = berth_journal_column_text(st, 0);
    t->scope = berth_journal_column_text(st, 1);
    t->job_id = berth_journal_column_text(st, 2);
    t->run_id = berth_journal_column_text(st, 3);
    t->job_digest = berth_journal_column_text(st, 4);
    t->receipt = berth_journal_column_text(st, 5);
    t->state = (enum berth_job_state)(idx < 0 ? 0 : idx);
    t->result_digest = berth_journal_column_text(st, 7);
    t->finished_at = sqlite3_column_int64(st, 8);
    t->pruned_at = sqlite3_column_int64(st, 9);
    if (idx < 0 || !berth_job_state_terminal(t->state)) {
        berth_job_tombstone_clear(t);
        return -EBADMSG;
    }
    /* The columns are NOT NULL: a missing string is a failed strdup(). */
    if (!t->principal || !t->scope || !t->job_id || !t->run_id || !t->job_digest || !t->receipt || !t->result_digest) {
        berth_job_tombstone_clear(t);
        return -ENOMEM;
    }
    return 0;
}

int berth_jobstore_find_tombstone(struct berth_journal *j, const char *principal, const char *scope, const char *job_id,
                                  struct berth_job_tombstone *ret, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (!j || !principal || !scope || !job_id || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j,
                              "SELECT " TOMBSTONE_COLUMNS " FROM job_tombstones "
                              "WHERE principal = ? AND scope = ? AND job_id = ?",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading job tombstones", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "reading job tombstones", reterr, BERTH_SQL_TEXT(principal), BERTH_SQL_TEXT(scope),
                           BERTH_SQL_TEXT(job_id));
    if (r == 0) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            r = read_tombstone(st, ret);
            if (r < 0)
                r = berth_error_set(reterr, r, r == -ENOMEM ? "out of memory" : "a job tombstone is damaged");
        } else if (rc == SQLITE_DONE) {
            r = berth_error_set(reterr, -ENOENT, "no pruned job %s", job_id);
        } else {
            r = berth_journal_error(j, "reading job tombstones", reterr);
        }
    }
    berth_journal_finish(j, st);
    return r;
}

int berth_jobstore_tombstoned(struct berth_journal *j, const char *principal, const char *scope, const char *job_id,
                              const char *run_id, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (!j || !principal || !scope || !job_id || !run_id)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j,
                              "SELECT EXISTS (SELECT 1 FROM job_tombstones WHERE principal = ? AND scope = ? AND "
                              "job_id = ?) OR EXISTS (SELECT 1 FROM job_tombstones WHERE run_id = ?)",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading job tombstones", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "reading job tombstones", reterr, BERTH_SQL_TEXT(principal), BERTH_SQL_TEXT(scope),
                           BERTH_SQL_TEXT(job_id), BERTH_SQL_TEXT(run_id));
    if (r == 0) {
        rc = sqlite3_step(st);
        r = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) != 0
                             : berth_journal_error(j, "reading job tombstones", reterr);
    }
    berth_journal_finish(j, st);
    return r;
}

/* Run @sql, bound with @args, which must change exactly one row: -ESTALE when it changed none. */
static int change_one(struct berth_journal *j, const char *sql, const struct berth_sql_value *args, size_t nargs,
                      const char *what, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (berth_journal_prepare(j, sql, "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, what, reterr);
    r = berth_journal_bind(j, st, args, nargs, what, reterr);
    if (r < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    if ((rc & 0xff) == SQLITE_CONSTRAINT)
        return berth_error_set(reterr, -EEXIST, "%s: a tombstone of that job exists", what);
    if (rc != SQLITE_DONE)
        return berth_journal_error(j, what, reterr);
    if (sqlite3_changes(berth_journal_db(j)) != 1)
        return berth_error_set(reterr, -ESTALE, "%s: the job record moved on", what);
    return 0;
}

int berth_jobstore_prune(struct berth_journal *j, const struct berth_job_record *rec, int64_t now_ns,
                         struct berth_job_tombstone *ret_tombstone, struct berth_error *reterr)
{
    char digest[BERTH_DIGEST_BUFSZ];
    const char *state;
    int r;

    if (!j || !rec || !rec->run_id || !rec->principal || !rec->scope || !rec->job_id || !rec->job_digest ||
        !rec->receipt || !rec->result || !berth_job_state_terminal(rec->state))
        return berth_error_set(reterr, -EINVAL, "only a terminal job with a signed result can be pruned");
    if ((r = berth_digest_bytes(rec->result, strlen(rec->result), digest)) < 0)
        return berth_error_set(reterr, r, "cannot digest the result of job %s", rec->job_id);
    state = berth_job_state_names[rec->state];
    /* The tombstone is copied from the row itself, which must still be the
     * terminal record that was read: same run id, revision and state. */
    {
        const struct berth_sql_value args[] = {BERTH_SQL_TEXT(digest), BERTH_SQL_INT(now_ns),
                                               BERTH_SQL_TEXT(rec->run_id), BERTH_SQL_INT(rec->revision),
                                               BERTH_SQL_TEXT(state)};
        r = change_one(j,
                       "INSERT INTO job_tombstones (" TOMBSTONE_COLUMNS ") "
                       "SELECT principal, scope, job_id, run_id, job_digest, receipt, state, ?, updated_at, ? "
                       "FROM jobs WHERE run_id = ? AND revision = ? AND state = ? AND result IS NOT NULL",
                       args, ELEMENTSOF(args), "recording a job tombstone", reterr);
    }
    if (r == 0) {
        const struct berth_sql_value args[] = {BERTH_SQL_TEXT(rec->run_id), BERTH_SQL_INT(rec->revision)};
        r = change_one(j, "DELETE FROM jobs WHERE run_id = ? AND revision = ?", args, ELEMENTSOF(args), "pruning a job",
                       reterr);
    }
    if (r < 0 || !ret_tombstone)
        return r;
    return berth_jobstore_find_tombstone(j, rec->principal, rec->scope, rec->job_id, ret_tombstone, reterr);
}

/* One integer from @sql bound with @args. */
static int query_int(struct berth_journal *j, const char *sql, const struct berth_sql_value *args, size_t nargs,
                     int64_t *ret, struct berth_error *reterr)
{
    return berth_journal_query_int(j, sql, args, nargs, "reading journal statistics", ret, reterr);
}

int berth_journal_stats(struct berth_journal *j, int64_t outputs_after_ns, struct berth_journal_stats *ret,
                        struct berth_error *reterr)
{
    const struct berth_sql_value after[] = {BERTH_SQL_INT(outputs_after_ns)};
    int64_t pages = 0, page_size = 0, free_pages = 0;
    int r;

    if (!j || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    memset(ret, 0, sizeof(*ret));
    if ((r = berth_jobstore_counts(j, ret->counts, reterr)) < 0 ||
        (r = query_int(j, "SELECT count(*) FROM job_tombstones", NULL, 0, &ret->tombstones, reterr)) < 0 ||
        (r = query_int(j, "PRAGMA page_count", NULL, 0, &pages, reterr)) < 0 ||
        (r = query_int(j, "PRAGMA page_size", NULL, 0, &page_size, reterr)) < 0 ||
        (r = query_int(j, "PRAGMA freelist_count", NULL, 0, &free_pages, reterr)) < 0 ||
        (r = query_int(j,
                       "SELECT coalesce(min(updated_at), 0) FROM jobs INDEXED BY jobs_terminal_order "
                       "WHERE state IN ('exited','failed','cancelled','expired')",
                       NULL, 0, &ret->oldest_finished, reterr)) < 0 ||
        (r = query_int(j,
                       "SELECT coalesce(min(updated_at), 0) FROM jobs INDEXED BY jobs_terminal_order "
                       "WHERE state IN ('exited','failed','cancelled','expired') AND updated_at > ? "
                       "AND json_valid(result) AND json_array_length(result, '$.result.outputs') > 0",
                       after, ELEMENTSOF(after), &ret->first_outputs_after, reterr)) < 0)
        return r;
    ret->bytes = pages * page_size;
    ret->free_bytes = free_pages * page_size;
    return 0;
}
