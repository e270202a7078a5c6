/* SPDX-License-Identifier: MIT */
/* jobstore.c -- durable job records; see jobstore.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digest.h"
#include "encoding.h"
#include "jobprune.h"
#include "jobstore.h"
#include "macro.h"
#include "names.h"

const char *const berth_job_state_names[BERTH_JOB_STATE_COUNT] = {
    "accepted", "claimed", "running", "finalizing", "reaping", "exited", "failed", "cancelled", "expired",
};

#define B(s) (1u << BERTH_JOB_##s)
static const unsigned allowed_next[BERTH_JOB_STATE_COUNT] = {
    [BERTH_JOB_ACCEPTED] = B(CLAIMED) | B(CANCELLED) | B(EXPIRED) | B(FAILED),
    [BERTH_JOB_CLAIMED] = B(RUNNING) | B(REAPING) | B(FAILED) | B(EXPIRED),
    [BERTH_JOB_RUNNING] = B(FINALIZING) | B(REAPING),
    [BERTH_JOB_FINALIZING] = B(EXITED) | B(FAILED) | B(CANCELLED) | B(EXPIRED),
    [BERTH_JOB_REAPING] = B(EXITED) | B(CANCELLED) | B(EXPIRED) | B(FAILED),
};
#undef B

bool berth_job_state_terminal(enum berth_job_state s)
{
    return s == BERTH_JOB_EXITED || s == BERTH_JOB_FAILED || s == BERTH_JOB_CANCELLED || s == BERTH_JOB_EXPIRED;
}

bool berth_job_transition_allowed(enum berth_job_state from, enum berth_job_state to)
{
    return (unsigned)from < BERTH_JOB_STATE_COUNT && (unsigned)to < BERTH_JOB_STATE_COUNT &&
           (allowed_next[from] & (1u << to));
}

void berth_job_record_clear(struct berth_job_record *rec)
{
    if (!rec)
        return;
    free(rec->principal);
    free(rec->scope);
    free(rec->job_id);
    free(rec->run_id);
    free(rec->job_digest);
    free(rec->job);
    free(rec->receipt);
    free(rec->backend);
    free(rec->result);
    free(rec->effective);
    free(rec->pool);
    free(rec->fingerprint);
    free(rec->cancel_reason);
    free(rec->warm);
    free(rec->lease);
    memset(rec, 0, sizeof(*rec));
}

int berth_job_record_copy(struct berth_job_record *dst, const struct berth_job_record *src)
{
    char **const fields[] = {&dst->principal, &dst->scope,       &dst->job_id,        &dst->run_id,    &dst->job_digest,
                             &dst->job,       &dst->receipt,     &dst->backend,       &dst->effective, &dst->pool,
                             &dst->result,    &dst->fingerprint, &dst->cancel_reason, &dst->warm,      &dst->lease};
    size_t i;

    *dst = *src; /* the scalars; every string is replaced below */
    for (i = 0; i < ELEMENTSOF(fields); i++) {
        const char *s = *fields[i];
        *fields[i] = s ? strdup(s) : NULL;
        if (s && !*fields[i]) {
            while (++i < ELEMENTSOF(fields))
                *fields[i] = NULL; /* still the source's: not ours to free */
            berth_job_record_clear(dst);
            return -ENOMEM;
        }
    }
    return 0;
}

int berth_run_id(const char *broker_key_id, const char *principal, const char *scope, const char *job_id,
                 char out[BERTH_RUN_ID_LEN + 1])
{
    struct berth_sha256 *ctx = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    int r;

    if (!broker_key_id || !principal || !scope || !job_id)
        return -EINVAL;
    r = berth_sha256_new(&ctx);
    if (r < 0)
        return r;
    r = berth_sha256_update(ctx, broker_key_id, strlen(broker_key_id) + 1);
    if (r == 0)
        r = berth_sha256_update(ctx, principal, strlen(principal) + 1);
    if (r == 0)
        r = berth_sha256_update(ctx, scope, strlen(scope) + 1);
    if (r == 0)
        r = berth_sha256_update(ctx, job_id, strlen(job_id));
    if (r == 0)
        r = berth_sha256_final(ctx, raw);
    berth_sha256_free(ctx);
    if (r < 0)
        return r;
    out[0] = 'r';
    berth_hex_encode(raw, BERTH_RUN_ID_BYTES, out + 1);
    return 0;
}

#define COLUMNS                                                                                                        \
    "principal, scope, job_id, run_id, job_digest, job, receipt, backend, state, revision, accepted_at, deadline, "    \
    "cancel_requested, result, updated_at, effective, pool, fingerprint, cancel_reason, warm, lease"

static int read_row(sqlite3_stmt *st, struct berth_job_record *rec)
{
    const char *state = (const char *)sqlite3_column_text(st, 8);
    int idx = berth_name_index(berth_job_state_names, BERTH_JOB_STATE_COUNT, state);

    memset(rec, 0, sizeof(*rec));
    rec->principal = berth_journal_column_text(st, 0);
    rec->scope = berth_journal_column_text(st, 1);
    rec->job_id = berth_journal_column_text(st, 2);
    rec->run_id = berth_journal_column_text(st, 3);
    rec->job_digest = berth_journal_column_text(st, 4);
    rec->job = berth_journal_column_text(st, 5);
    rec->receipt = berth_journal_column_text(st, 6);
    rec->backend = berth_journal_column_text(st, 7);
    rec->state = (enum berth_job_state)(idx < 0 ? 0 : idx);
    rec->revision = sqlite3_column_int64(st, 9);
    rec->accepted_at = sqlite3_column_int64(st, 10);
    rec->deadline = sqlite3_column_int64(st, 11);
    rec->cancel_requested = sqlite3_column_int(st, 12) != 0;
    rec->result = berth_journal_column_text(st, 13);
    rec->updated_at = sqlite3_column_int64(st, 14);
    rec->effective = berth_journal_column_text(st, 15);
    rec->pool = berth_journal_column_text(st, 16);
    rec->fingerprint = berth_journal_column_text(st, 17);
    rec->cancel_reason = berth_journal_column_text(st, 18);
    rec->warm = berth_journal_column_text(st, 19);
    rec->lease = berth_journal_column_text(st, 20);
    if (idx < 0 || !rec->principal || !rec->scope || !rec->job_id || !rec->run_id || !rec->job_digest || !rec->job ||
        !rec->receipt || !rec->backend || !rec->effective || !rec->pool || !rec->fingerprint ||
        (sqlite3_column_type(st, 18) != SQLITE_NULL && !rec->cancel_reason) ||
        (sqlite3_column_type(st, 19) != SQLITE_NULL && !rec->warm) ||
        (sqlite3_column_type(st, 20) != SQLITE_NULL && !rec->lease)) {
        berth_job_record_clear(rec);
        return idx < 0 ? -EBADMSG : -ENOMEM;
    }
    return 0;
}

static int find_one(struct berth_journal *j, const char *sql, const struct berth_sql_value *args, size_t nargs,
                    struct berth_job_record *ret, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (berth_journal_prepare(j, sql, "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading jobs", reterr);
    if ((r = berth_journal_bind(j, st, args, nargs, "reading jobs", reterr)) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        r = read_row(st, ret);
        if (r < 0)
            r = berth_error_set(reterr, r, "a stored job record is damaged");
    } else if (rc == SQLITE_DONE) {
        r = berth_error_set(reterr, -ENOENT, "no such job");
    } else {
        r = berth_journal_error(j, "reading jobs", reterr);
    }
    berth_journal_finish(j, st);
    return r;
}

int berth_jobstore_find(struct berth_journal *j, const char *principal, const char *scope, const char *job_id,
                        struct berth_job_record *ret, struct berth_error *reterr)
{
    const struct berth_sql_value args[] = {BERTH_SQL_TEXT(principal), BERTH_SQL_TEXT(scope), BERTH_SQL_TEXT(job_id)};

    if (!j || !principal || !scope || !job_id || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    return find_one(j, "SELECT " COLUMNS " FROM jobs WHERE principal = ? AND scope = ? AND job_id = ?", args,
                    ELEMENTSOF(args), ret, reterr);
}

int berth_jobstore_find_run(struct berth_journal *j, const char *run_id, struct berth_job_record *ret,
                            struct berth_error *reterr)
{
    const struct berth_sql_value args[] = {BERTH_SQL_TEXT(run_id)};

    if (!j || !run_id || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    return find_one(j, "SELECT " COLUMNS " FROM jobs WHERE run_id = ?", args, ELEMENTSOF(args), ret, reterr);
}

static int count(struct berth_journal *j, const char *sql, int64_t *ret, struct berth_error *reterr)
{
    return berth_journal_query_int(j, sql, NULL, 0, "counting jobs", ret, reterr);
}

int berth_jobstore_insert(struct berth_journal *j, const struct berth_job_record *rec, int64_t max_active,
                          int64_t max_retained, struct berth_error *reterr)
{
    int64_t active = 0, retained = 0;
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (!j || !rec || !rec->principal || !rec->scope || !rec->job_id || !rec->run_id || !rec->job_digest || !rec->job ||
        !rec->receipt || !rec->backend || !rec->effective || !rec->pool || !rec->fingerprint)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* The triggers of format 6 keep these; counting rows would cost as much as the queue is long. */
    if ((r = count(j, "SELECT open FROM job_counts WHERE id = 1", &active, reterr)) < 0 ||
        (r = count(j, "SELECT retained FROM job_counts WHERE id = 1", &retained, reterr)) < 0)
        return r;
    if ((r = berth_jobstore_tombstoned(j, rec->principal, rec->scope, rec->job_id, rec->run_id, reterr)) < 0)
        return r;
    if (r > 0)
        return berth_error_set(reterr, -EEXIST, "job %s was recorded and pruned; it is never recorded again",
                               rec->job_id);
    if (retained >= max_retained)
        return berth_error_set(reterr, -EOVERFLOW,
                               "the journal holds %lld jobs, its limit; no unfinished job is ever deleted to "
                               "make room (finished ones are pruned once their retention passes)",
                               (long long)retained);
    if (active >= max_active)
        return berth_error_set(reterr, -EAGAIN, "%lld jobs are active, the limit", (long long)active);
    if (berth_journal_prepare(j,
                              "INSERT INTO jobs (" COLUMNS ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'accepted', 1, ?, ?, 0, "
                              "NULL, ?, ?, ?, ?, NULL, NULL, NULL)",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "recording a job", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "recording a job", reterr, BERTH_SQL_TEXT(rec->principal), BERTH_SQL_TEXT(rec->scope),
                           BERTH_SQL_TEXT(rec->job_id), BERTH_SQL_TEXT(rec->run_id), BERTH_SQL_TEXT(rec->job_digest),
                           BERTH_SQL_TEXT(rec->job), BERTH_SQL_TEXT(rec->receipt), BERTH_SQL_TEXT(rec->backend),
                           BERTH_SQL_INT(rec->accepted_at), BERTH_SQL_INT(rec->deadline),
                           BERTH_SQL_INT(rec->accepted_at), BERTH_SQL_TEXT(rec->effective), BERTH_SQL_TEXT(rec->pool),
                           BERTH_SQL_TEXT(rec->fingerprint));
    if (r < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    if (rc == SQLITE_CONSTRAINT || (rc & 0xff) == SQLITE_CONSTRAINT)
        return berth_error_set(reterr, -EEXIST, "job %s is already recorded", rec->job_id);
    return rc == SQLITE_DONE ? 0 : berth_journal_error(j, "recording a job", reterr);
}

/* Run the prepared, bound UPDATE @st of one row (run @run_id at revision
 * @expected_revision) and finalize it; -ESTALE when no row matched. */
static int step_row_update(struct berth_journal *j, sqlite3_stmt *st, int bound, const char *what, const char *run_id,
                           int64_t expected_revision, struct berth_error *reterr)
{
    int rc;

    if (bound < 0) {
        berth_journal_finish(j, st);
        return bound;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    if (rc != SQLITE_DONE)
        return berth_journal_error(j, what, reterr);
    if (sqlite3_changes(berth_journal_db(j)) != 1)
        return berth_error_set(reterr, -ESTALE, "job run %s moved on from revision %lld", run_id,
                               (long long)expected_revision);
    return 0;
}

static int update(struct berth_journal *j, const char *run_id, int64_t expected_revision, const char *state,
                  const char *result, bool cancel, const char *cancel_reason, int64_t now_ns,
                  struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int r;

    if (berth_journal_prepare(j,
                              "UPDATE jobs SET state = ?, result = coalesce(?, result), revision = revision + 1, "
                              "cancel_requested = cancel_requested OR ?, cancel_reason = coalesce(cancel_reason, ?), "
                              "updated_at = ? WHERE run_id = ? AND revision = ?",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "updating a job", reterr);
    /* A NULL result binds NULL: coalesce() keeps the stored one. */
    r = BERTH_JOURNAL_BIND(j, st, "updating a job", reterr, BERTH_SQL_TEXT(state), BERTH_SQL_TEXT(result),
                           BERTH_SQL_INT(cancel), BERTH_SQL_TEXT(cancel_reason), BERTH_SQL_INT(now_ns),
                           BERTH_SQL_TEXT(run_id), BERTH_SQL_INT(expected_revision));
    return step_row_update(j, st, r, "updating a job", run_id, expected_revision, reterr);
}

int berth_jobstore_transition(struct berth_journal *j, const char *run_id, int64_t expected_revision,
                              enum berth_job_state to, const char *result, int64_t now_ns, struct berth_error *reterr)
{
    struct berth_job_record cur;
    int r;

    if (!j || !run_id || (unsigned)to >= BERTH_JOB_STATE_COUNT)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_jobstore_find_run(j, run_id, &cur, reterr);
    if (r < 0)
        return r;
    if (cur.revision != expected_revision) {
        berth_job_record_clear(&cur);
        return berth_error_set(reterr, -ESTALE, "job run %s is at revision %lld, not %lld", run_id,
                               (long long)cur.revision, (long long)expected_revision);
    }
    if (!berth_job_transition_allowed(cur.state, to)) {
        r = berth_error_set(reterr, -EINVAL, "job run %s cannot move from %s to %s", run_id,
                            berth_job_state_names[cur.state], berth_job_state_names[to]);
        berth_job_record_clear(&cur);
        return r;
    }
    berth_job_record_clear(&cur);
    return update(j, run_id, expected_revision, berth_job_state_names[to], result, false, NULL, now_ns, reterr);
}

int berth_jobstore_set_warm(struct berth_journal *j, const char *run_id, int64_t expected_revision, const char *warm,
                            struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int r;

    if (!j || !run_id || !warm)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j, "UPDATE jobs SET warm = ? WHERE run_id = ? AND revision = ?", "preparing a statement",
                              &st, NULL) < 0)
        return berth_journal_error(j, "recording a warm start", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "recording a warm start", reterr, BERTH_SQL_TEXT(warm), BERTH_SQL_TEXT(run_id),
                           BERTH_SQL_INT(expected_revision));
    return step_row_update(j, st, r, "recording a warm start", run_id, expected_revision, reterr);
}

int berth_jobstore_set_lease(struct berth_journal *j, const char *run_id, int64_t expected_revision, const char *lease,
                             struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int r;

    if (!j || !run_id || !lease)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j, "UPDATE jobs SET lease = ? WHERE run_id = ? AND revision = ?", "preparing a statement",
                              &st, NULL) < 0)
        return berth_journal_error(j, "recording a lease", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "recording a lease", reterr, BERTH_SQL_TEXT(lease), BERTH_SQL_TEXT(run_id),
                           BERTH_SQL_INT(expected_revision));
    return step_row_update(j, st, r, "recording a lease", run_id, expected_revision, reterr);
}

int berth_jobstore_request_cancel(struct berth_journal *j, const char *run_id, const char *reason, int64_t now_ns,
                                  struct berth_error *reterr)
{
    struct berth_job_record cur;
    int r;

    if (!j || !run_id)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_jobstore_find_run(j, run_id, &cur, reterr);
    if (r < 0)
        return r;
    if (!berth_job_state_terminal(cur.state) && !cur.cancel_requested)
        r = update(j, run_id, cur.revision, berth_job_state_names[cur.state], NULL, true, reason, now_ns, reterr);
    berth_job_record_clear(&cur);
    return r;
}

int berth_jobstore_foreach_open(struct berth_journal *j, int (*fn)(void *userdata, const struct berth_job_record *rec),
                                void *userdata, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r = 0;

    if (!j || !fn)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j,
                              "SELECT " COLUMNS
                              " FROM jobs WHERE state NOT IN ('exited','failed','cancelled','expired') "
                              "ORDER BY accepted_at, run_id",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading jobs", reterr);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct berth_job_record rec;
        r = read_row(st, &rec);
        if (r < 0) {
            r = berth_error_set(reterr, r, "a stored job record is damaged");
            break;
        }
        r = fn(userdata, &rec);
        berth_job_record_clear(&rec);
        if (r < 0)
            break;
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "reading jobs", reterr);
    berth_journal_finish(j, st);
    return r;
}

int berth_jobstore_counts(struct berth_journal *j, int64_t counts[BERTH_JOB_STATE_COUNT], struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, idx;

    if (!j || !counts)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    memset(counts, 0, sizeof(int64_t) * BERTH_JOB_STATE_COUNT);
    if (berth_journal_prepare(j, "SELECT state, count(*) FROM jobs GROUP BY state", "preparing a statement", &st,
                              NULL) < 0)
        return berth_journal_error(j, "counting jobs", reterr);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        idx = berth_name_index(berth_job_state_names, BERTH_JOB_STATE_COUNT, (const char *)sqlite3_column_text(st, 0));
        if (idx >= 0)
            counts[idx] = sqlite3_column_int64(st, 1);
    }
    berth_journal_finish(j, st);
    return rc == SQLITE_DONE ? 0 : berth_journal_error(j, "counting jobs", reterr);
}

/* One keyset page: @sql selects COLUMNS with the parameters @args, then
 * the cursor (@ts, @run_id) and the limit; @ts_col is the column the order
 * starts with (10 accepted_at, 14 updated_at).  The cursor moves past every
 * record @fn is called with, even on error. */
static int page(struct berth_journal *j, const char *sql, const struct berth_sql_value *args, size_t nargs, int ts_col,
                int64_t *ts, char run_id[BERTH_RUN_ID_LEN + 1], size_t limit,
                int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata, size_t *ret_count,
                struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    size_t n = 0;
    int rc = SQLITE_DONE, r;

    if (berth_journal_prepare(j, sql, "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading a page of jobs", reterr);
    r = berth_journal_bind(j, st, args, nargs, "reading a page of jobs", reterr);
    /* The cursor and the limit follow @args (berth_journal_bind() numbers from 1). */
    if (r == 0) {
        int base = (int)nargs;
        if (sqlite3_bind_int64(st, base + 1, *ts) != SQLITE_OK ||
            sqlite3_bind_text(st, base + 2, run_id, -1, SQLITE_TRANSIENT) != SQLITE_OK ||
            sqlite3_bind_int64(st, base + 3, (sqlite3_int64)limit) != SQLITE_OK)
            r = berth_journal_error(j, "reading a page of jobs", reterr);
    }
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct berth_job_record rec;
        r = read_row(st, &rec);
        if (r < 0) {
            r = berth_error_set(reterr, r, "a stored job record is damaged");
            break;
        }
        *ts = sqlite3_column_int64(st, ts_col);
        snprintf(run_id, BERTH_RUN_ID_LEN + 1, "%s", rec.run_id);
        n++;
        r = fn(userdata, &rec);
        berth_job_record_clear(&rec);
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "reading a page of jobs", reterr);
    berth_journal_finish(j, st);
    if (ret_count)
        *ret_count = n;
    return r;
}

/* One page of open jobs oldest first, after @cursor; @also narrows the
 * states further (an SQL condition, or "" for every open job). */
static int page_open_order(struct berth_journal *j, const char *also, struct berth_job_cursor *cursor, size_t limit,
                           int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata,
                           size_t *ret_count, struct berth_error *reterr)
{
    char sql[512];

    if (!j || !cursor || !fn || limit < 1 || limit > BERTH_JOBSTORE_PAGE_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* The WHERE clause repeats the partial index's, so that SQLite uses it. */
    if ((size_t)snprintf(sql, sizeof(sql),
                         "SELECT " COLUMNS " FROM jobs INDEXED BY jobs_open_order "
                         "WHERE state NOT IN ('exited','failed','cancelled','expired') %s"
                         "AND (accepted_at, run_id) > (?, ?) ORDER BY accepted_at, run_id LIMIT ?",
                         also) >= sizeof(sql))
        return berth_error_set(reterr, -EINVAL, "query too long");
    return page(j, sql, NULL, 0, 10, &cursor->accepted_at, cursor->run_id, limit, fn, userdata, ret_count, reterr);
}

int berth_jobstore_page_open(struct berth_journal *j, struct berth_job_cursor *cursor, size_t limit,
                             int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata,
                             size_t *ret_count, struct berth_error *reterr)
{
    return page_open_order(j, "", cursor, limit, fn, userdata, ret_count, reterr);
}

int berth_jobstore_page_queued(struct berth_journal *j, struct berth_job_cursor *cursor, size_t limit,
                               int (*fn)(void *userdata, const struct berth_job_record *rec), void *userdata,
                               size_t *ret_count, struct berth_error *reterr)
{
    return page_open_order(j, "AND state IN ('accepted','claimed') ", cursor, limit, fn, userdata, ret_count, reterr);
}

int berth_jobstore_count_active(struct berth_journal *j, int (*fn)(void *userdata, const char *pool, int64_t count),
                                void *userdata, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_DONE, r = 0;

    if (!j || !fn)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* The WHERE clause repeats the partial index's, so that SQLite uses it. */
    if (berth_journal_prepare(j,
                              "SELECT pool, count(*) FROM jobs INDEXED BY jobs_open "
                              "WHERE state NOT IN ('exited','failed','cancelled','expired') "
                              "AND state IN ('claimed','running','reaping','finalizing') GROUP BY pool",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "counting active jobs", reterr);
    while (r == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *pool = (const char *)sqlite3_column_text(st, 0);
        r = fn(userdata, pool ? pool : "", sqlite3_column_int64(st, 1));
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "counting active jobs", reterr);
    berth_journal_finish(j, st);
    return r;
}

int berth_jobstore_page_expired(struct berth_journal *j, int64_t cutoff_ns, struct berth_prune_cursor *cursor,
                                size_t limit, int (*fn)(void *userdata, const struct berth_job_record *rec),
                                void *userdata, size_t *ret_count, struct berth_error *reterr)
{
    const struct berth_sql_value args[] = {BERTH_SQL_INT(cutoff_ns)};

    if (!j || !cursor || !fn || limit < 1 || limit > BERTH_JOBSTORE_PAGE_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    return page(j,
                "SELECT " COLUMNS " FROM jobs INDEXED BY jobs_terminal_order "
                "WHERE state IN ('exited','failed','cancelled','expired') AND updated_at <= ? "
                "AND (updated_at, run_id) > (?, ?) ORDER BY updated_at, run_id LIMIT ?",
                args, ELEMENTSOF(args), 14, &cursor->finished_at, cursor->run_id, limit, fn, userdata, ret_count,
                reterr);
}
