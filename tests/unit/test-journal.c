/* SPDX-License-Identifier: MIT */
/* test-journal.c -- the SQLite journal: safe open, lock, format, migration (journal.h). */
#include "pooltest.h"

#include <sqlite3.h>

static char *dir;

static void setup(void)
{
    dir = test_private_dir();
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
}

static int open_at(const char *path, unsigned flags, struct berth_journal **j, struct berth_error *err)
{
    return berth_journal_open(path, flags, j, err);
}

/* Run SQL on a file with plain SQLite, behind the journal's back. */
static void raw_sql(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    sqlite3_close(db);
}

START_TEST(create_and_reopen)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "journal.db"), *lock = test_path(dir, "journal.db.lock"),
                        *shm = test_path(dir, "journal.db-shm");
    struct berth_journal *j = NULL;
    struct stat st;
    sqlite3_stmt *q;

    ck_assert_int_eq(open_at(path, 0, &j, &err), -ENOENT); /* no silent creation */
    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &j, &err), 0);
    ck_assert_str_eq(berth_journal_path(j), path);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_int_eq(stat(lock, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_int_eq(access(shm, F_OK), -1); /* exclusive WAL: no shared-memory file */

    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), BERTH_JOURNAL_FORMAT);
    sqlite3_finalize(q);
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "PRAGMA journal_mode", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "wal");
    sqlite3_finalize(q);

    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert(berth_journal_in_transaction(j));
    ck_assert_int_eq(
        sqlite3_exec(berth_journal_db(j), "INSERT INTO pool_bodies VALUES (printf('%064d', 1), 'x')", NULL, NULL, NULL),
        SQLITE_OK);
    ck_assert_int_eq(berth_journal_commit(j, &err), 0);
    ck_assert(!berth_journal_in_transaction(j));
    berth_journal_close(j);

    /* Reopened: same data, the lock file stays. */
    ck_assert_int_eq(open_at(path, 0, &j, &err), 0);
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT count(*) FROM pool_bodies", -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 1);
    sqlite3_finalize(q);
    berth_journal_close(j);
    ck_assert_int_eq(access(lock, F_OK), 0);
    berth_journal_close(NULL);
}
END_TEST

START_TEST(exclusive)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "journal.db");
    struct berth_journal *a = NULL, *b = NULL;

    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &a, &err), 0);
    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &b, &err), -EBUSY);
    ck_assert_ptr_nonnull(strstr(err.message, "is in use by another process"));
    ck_assert_ptr_null(b);
    berth_journal_close(a);
    ck_assert_int_eq(open_at(path, 0, &b, &err), 0); /* released with the handle */
    berth_journal_close(b);
}
END_TEST

START_TEST(rollback)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "journal.db");
    struct berth_journal *j = NULL;
    sqlite3_stmt *q;

    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &j, &err), 0);
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(
        sqlite3_exec(berth_journal_db(j), "INSERT INTO pool_bodies VALUES (printf('%064d', 1), 'x')", NULL, NULL, NULL),
        SQLITE_OK);
    berth_journal_rollback(j);
    berth_journal_rollback(j); /* harmless without a transaction */
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT count(*) FROM pool_bodies", -1, &q, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    ck_assert_int_eq(berth_journal_commit(j, &err), -EIO); /* nothing to commit */
    berth_journal_close(j);
}
END_TEST

/* berth_journal_bind(): every kind of value, and a failing bind is an error with its parameter. */
START_TEST(bind)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = test_journal_open(dir);
    sqlite3_stmt *q;

    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT ?, ?, ?, ?, typeof(?)", -1, &q, NULL), SQLITE_OK);
    ck_assert_msg(BERTH_JOURNAL_BIND(j, q, "test", &err, BERTH_SQL_INT(-5), BERTH_SQL_TEXT("abc"),
                                     BERTH_SQL_TEXTN("abcdef", 2), BERTH_SQL_TEXT(NULL), BERTH_SQL_NULL) == 0,
                  "%s", err.message);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int64(q, 0), -5);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 1), "abc");
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 2), "ab");
    ck_assert_int_eq(sqlite3_column_type(q, 3), SQLITE_NULL);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 4), "null");
    sqlite3_finalize(q);

    /* One value more than the statement has parameters. */
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT ?", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(BERTH_JOURNAL_BIND(j, q, "reading x", &err, BERTH_SQL_INT(1), BERTH_SQL_INT(2)), -EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "reading x: parameter 2: "));
    ck_assert_int_eq(berth_journal_bind(j, q, NULL, 1, "x", NULL), -EINVAL);
    sqlite3_finalize(q);
    berth_journal_close(j);
}
END_TEST

/* Prepared statements kept on the handle (berth_journal_prepare()). */
START_TEST(statement_cache)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = test_journal_open(dir);
    sqlite3_stmt *a = NULL, *b = NULL, *c = NULL;
    char sql[64];
    int i;

    /* Handed back, the same statement comes again, reset and unbound. */
    ck_assert_int_eq(berth_journal_prepare(j, "SELECT ?", "test", &a, &err), 0);
    ck_assert_int_eq(sqlite3_bind_int(a, 1, 7), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(a), SQLITE_ROW);
    berth_journal_finish(j, a);
    ck_assert_int_eq(berth_journal_prepare(j, "SELECT ?", "test", &b, &err), 0);
    ck_assert_ptr_eq(a, b);
    ck_assert_int_eq(sqlite3_step(b), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_type(b, 0), SQLITE_NULL);

    /* Still in use: the same text gets a statement of its own. */
    ck_assert_int_eq(berth_journal_prepare(j, "SELECT ?", "test", &c, &err), 0);
    ck_assert_ptr_ne(b, c);
    berth_journal_finish(j, c); /* finalized (ASan sees a leak otherwise) */
    berth_journal_finish(j, b);
    berth_journal_finish(j, NULL);

    /* A statement left mid-way and then finished holds no read open: a
     * write transaction and its commit go through. */
    ck_assert_int_eq(berth_journal_prepare(j, "SELECT 1 UNION ALL SELECT 2", "test", &a, &err), 0);
    ck_assert_int_eq(sqlite3_step(a), SQLITE_ROW);
    berth_journal_finish(j, a);
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(sqlite3_exec(berth_journal_db(j), "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
    ck_assert_msg(berth_journal_commit(j, &err) == 0, "%s", err.message);

    /* More texts than the cache holds: the oldest make room, all work. */
    for (i = 0; i < 200; i++) {
        snprintf(sql, sizeof(sql), "SELECT %d", i);
        ck_assert_int_eq(berth_journal_prepare(j, sql, "test", &a, &err), 0);
        ck_assert_int_eq(sqlite3_step(a), SQLITE_ROW);
        ck_assert_int_eq(sqlite3_column_int(a, 0), i);
        berth_journal_finish(j, a);
    }

    /* SQL that does not compile, or is no statement. */
    ck_assert_int_eq(berth_journal_prepare(j, "SELEKT 1", "reading y", &a, &err), -EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "reading y: "));
    ck_assert_ptr_null(a);
    ck_assert_int_eq(berth_journal_prepare(j, "  -- nothing", "reading z", &a, &err), -EINVAL);
    ck_assert_int_eq(berth_journal_prepare(j, NULL, "x", &a, &err), -EINVAL);
    berth_journal_close(j); /* finalizes what it kept */
}
END_TEST

START_TEST(unsafe_places)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "journal.db"), *open_dir = test_path(dir, "open"),
                        *in_open = test_path(dir, "open/journal.db"), *lnk = test_path(dir, "link"),
                        *via_link = test_path(dir, "link/journal.db"), *hard = test_path(dir, "hard.db");
    struct berth_journal *j = NULL;

    ck_assert_int_eq(open_at("relative.db", BERTH_JOURNAL_CREATE, &j, &err), -EINVAL);
    /* Names SQLite or berth use for a journal's companions. */
    {
        static const char *const reserved[] = {"j.db-wal", "j.db-shm", "j.db-journal", "j.db.lock"};
        for (size_t i = 0; i < 4; i++) {
            _cleanup_free_ char *p = test_path(dir, reserved[i]);
            ck_assert_int_eq(open_at(p, BERTH_JOURNAL_CREATE, &j, &err), -EINVAL);
            ck_assert_ptr_nonnull(strstr(err.message, "a journal name may not end in"));
        }
    }

    ck_assert_int_eq(mkdir(open_dir, 0755), 0);
    ck_assert_int_eq(open_at(in_open, BERTH_JOURNAL_CREATE, &j, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "must be private (chmod 0700"));
    ck_assert_int_eq(access(in_open, F_OK), -1); /* nothing created */

    ck_assert_int_eq(symlink(dir, lnk), 0);
    ck_assert_int_eq(open_at(via_link, BERTH_JOURNAL_CREATE, &j, &err), -ELOOP);

    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &j, &err), 0);
    berth_journal_close(j);
    j = NULL;
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(open_at(path, 0, &j, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "has mode 0644, expected 0600"));
    ck_assert_int_eq(chmod(path, 0600), 0);
    ck_assert_int_eq(link(path, hard), 0);
    ck_assert_int_eq(open_at(path, 0, &j, &err), -EMLINK);
    ck_assert_int_eq(unlink(hard), 0);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(symlink("elsewhere.db", path), 0);
    ck_assert_int_eq(open_at(path, BERTH_JOURNAL_CREATE, &j, &err), -ELOOP);
    ck_assert_ptr_null(j);
}
END_TEST

START_TEST(foreign_and_newer)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *foreign = test_path(dir, "foreign.db"), *newer = test_path(dir, "newer.db"),
                        *junk = test_path(dir, "junk.db");
    struct berth_journal *j = NULL;
    char garbage[4096];

    raw_sql(foreign, "CREATE TABLE t (x)");
    ck_assert_int_eq(chmod(foreign, 0600), 0);
    ck_assert_int_eq(open_at(foreign, 0, &j, &err), -EMEDIUMTYPE);
    ck_assert_ptr_nonnull(strstr(err.message, "another application"));

    ck_assert_int_eq(open_at(newer, BERTH_JOURNAL_CREATE, &j, &err), 0);
    berth_journal_close(j);
    raw_sql(newer, "PRAGMA user_version = 99");
    ck_assert_int_eq(open_at(newer, 0, &j, &err), -EPROTONOSUPPORT);
    ck_assert_ptr_nonnull(strstr(err.message, "has journal format 99; this berth understands formats up to 8"));

    raw_sql(newer, "PRAGMA user_version = -1");
    ck_assert_int_eq(open_at(newer, 0, &j, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "invalid journal format -1"));

    memset(garbage, 'g', sizeof(garbage));
    test_write_file(junk, garbage, sizeof(garbage), 0600);
    ck_assert_int_eq(open_at(junk, 0, &j, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "is not a usable berth journal"));
}
END_TEST

/* A journal written by format 1 (audit chain and pool bodies only) is
 * migrated forward on open: the jobs table appears and nothing is lost. */
START_TEST(migrate_from_format_1)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "old.db");
    struct berth_journal *j = NULL;
    sqlite3_stmt *q = NULL;

    raw_sql(path, "PRAGMA journal_mode=WAL;"
                  "CREATE TABLE audit_events (seq INTEGER PRIMARY KEY CHECK (seq > 0), type TEXT NOT NULL,"
                  " mac TEXT NOT NULL CHECK (length(mac) = 64), line TEXT NOT NULL) STRICT;"
                  "CREATE TABLE pool_bodies (pool_hash TEXT PRIMARY KEY CHECK (length(pool_hash) = 64),"
                  " body TEXT NOT NULL) STRICT;"
                  "INSERT INTO pool_bodies VALUES ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',"
                  " '{\"kept\":true}');"
                  "PRAGMA application_id = 1651668072; PRAGMA user_version = 1;");
    ck_assert_int_eq(chmod(path, 0600), 0);
    ck_assert_msg(open_at(path, 0, &j, &err) == 0, "%s", err.message);
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), BERTH_JOURNAL_FORMAT);
    sqlite3_finalize(q);
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT body FROM pool_bodies", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_str_eq((const char *)sqlite3_column_text(q, 0), "{\"kept\":true}");
    sqlite3_finalize(q);
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT count(*) FROM jobs", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    ck_assert_int_eq(sqlite3_column_int(q, 0), 0);
    sqlite3_finalize(q);
    berth_journal_close(j);
}
END_TEST

/* The value of the one-column, one-row query @sql on @path, read with plain SQLite. */
static int raw_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int v;

    ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
    ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK, "%s", sqlite3_errmsg(db));
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return v;
}

/* A journal of format 4, as that berth left it: a format-5 journal less
 * what migration 5 added (migrations only add), with a finished job. */
static void make_format_4(const char *path)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = NULL;

    ck_assert_msg(open_at(path, BERTH_JOURNAL_CREATE, &j, &err) == 0, "%s", err.message);
    berth_journal_close(j);
    raw_sql(path, "ALTER TABLE jobs DROP COLUMN lease; ALTER TABLE jobs DROP COLUMN warm;"
                  "DROP TRIGGER job_counts_insert; DROP TRIGGER job_counts_delete; DROP TRIGGER job_counts_state;"
                  "DROP TABLE job_counts; DROP TABLE job_tombstones; DROP INDEX jobs_terminal_order;"
                  "INSERT INTO jobs (principal, scope, job_id, run_id, job_digest, pool, job, receipt, effective,"
                  " backend, state, revision, accepted_at, deadline, result, updated_at)"
                  " VALUES ('alice', '[]', 'old-job', 'r1', 'sha256:1', 'p', '{}', '{\"receipt\":{}}', '{}', 'b',"
                  " 'exited', 3, 10, 20, '{\"result\":{}}', 15),"
                  " ('alice', '[]', 'open-job', 'r2', 'sha256:2', 'p', '{}', '{\"receipt\":{}}', '{}', 'b',"
                  " 'running', 2, 11, 21, NULL, 16);"
                  "PRAGMA user_version = 4;");
}

/* Format 4 -> 8 on open, in one transaction: the tombstone table and the
 * expiry index appear (5), the job counts hold what the jobs table holds
 * (6), the warm column is there and NULL (7: every old job started cold),
 * the lease column too (8: every old job ran on this host), every job
 * stays as it was. */
START_TEST(migrate_from_format_4)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "four.db");
    struct berth_journal *j = NULL;

    make_format_4(path);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'job_tombstones'"), 0);
    ck_assert_msg(open_at(path, 0, &j, &err) == 0, "%s", err.message);
    berth_journal_close(j);
    ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), BERTH_JOURNAL_FORMAT);
    ck_assert_int_eq(BERTH_JOURNAL_FORMAT, 8);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM jobs WHERE warm IS NULL"), 2);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM jobs WHERE lease IS NULL"), 2);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM job_tombstones"), 0);
    ck_assert_int_eq(raw_int(path, "SELECT retained FROM job_counts WHERE id = 1"), 2);
    ck_assert_int_eq(raw_int(path, "SELECT open FROM job_counts WHERE id = 1"), 1);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'jobs_terminal_order'"), 1);
    ck_assert_int_eq(raw_int(path, "SELECT revision FROM jobs WHERE run_id = 'r1' AND state = 'exited' AND "
                                   "updated_at = 15 AND result = '{\"result\":{}}'"),
                     3);
}
END_TEST

/* A migration that fails leaves the old format whole: here a format-4
 * journal already holds a table of the name migration 5 creates. */
START_TEST(migrate_failure_changes_nothing)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "four.db");
    struct berth_journal *j = NULL;

    make_format_4(path);
    raw_sql(path, "CREATE TABLE job_tombstones (x)");
    ck_assert_int_eq(open_at(path, 0, &j, &err), -EIO);
    ck_assert_ptr_nonnull(strstr(err.message, "migrating the journal to format 5"));
    ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 4);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'jobs_terminal_order'"), 0);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM jobs"), 2);
    ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema WHERE name = 'job_counts'"), 0);
}
END_TEST

/* ---- a full filesystem: a real 2 MiB tmpfs, as root ------------------------ */

static int exec_sql(struct berth_journal *j, const char *sql, struct berth_error *reterr)
{
    if (sqlite3_exec(berth_journal_db(j), sql, NULL, NULL, NULL) != SQLITE_OK)
        return berth_journal_error(j, "the test's SQL", reterr);
    return 0;
}

/* Insert one row of 4000 random bytes; counts its calls in *@userdata. */
static int insert_row(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    (*(int *)userdata)++;
    return exec_sql(j, "INSERT INTO t (v) VALUES (randomblob(4000))", reterr);
}

static int make_table(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    (void)userdata;
    return exec_sql(j, "CREATE TABLE t (v BLOB)", reterr);
}

static int64_t rows(struct berth_journal *j)
{
    sqlite3_stmt *q;
    int64_t n;

    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT count(*) FROM t", -1, &q, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
    n = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

START_TEST(full_filesystem)
{
    const char *full = test_fs();
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *reserve = test_path(full, "journal.db.reserve"), *filler = test_path(full, "filler");
    struct berth_journal *j = test_journal_open(full);
    int calls = 0, i, fit;
    struct stat st;

    ck_assert_int_eq(berth_journal_transact(j, 0, make_table, NULL, &err), 0);
    ck_assert_int_eq(berth_journal_set_reserve(j, 256 * 1024, &err), 0);
    ck_assert_int_eq(stat(reserve, &st), 0);
    ck_assert_int_eq(st.st_size, 256 * 1024);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert(berth_journal_reserve_held(j));
    for (i = 0; i < 10; i++)
        ck_assert_int_eq(berth_journal_transact(j, 0, insert_row, &calls, &err), 0);
    ck_assert_int_eq(berth_journal_check_space(j, &err), 0);
    test_fill(full, "filler");

    /* An ordinary write fails for space; the journal is what the last commit left. */
    calls = 0;
    ck_assert_int_eq(berth_journal_transact(j, 0, insert_row, &calls, &err), -ENOSPC);
    ck_assert_int_eq(calls, 1);
    ck_assert(!berth_journal_in_transaction(j));
    ck_assert_int_eq(rows(j), 10);
    ck_assert(berth_journal_reserve_held(j)); /* only a priority write may use it */
    ck_assert_int_eq(berth_journal_check_space(j, &err), -ENOSPC);

    /* A priority write releases the reserve and gets through on the second try. */
    calls = 0;
    ck_assert_int_eq(berth_journal_transact(j, BERTH_JOURNAL_USE_RESERVE, insert_row, &calls, &err), 0);
    ck_assert_int_eq(calls, 2);
    ck_assert_int_eq(rows(j), 11);
    ck_assert(!berth_journal_reserve_held(j));
    ck_assert_int_eq(access(reserve, F_OK), -1);
    /* The freed 256 KiB hold more such writes; then the failure is final. */
    for (fit = 0; berth_journal_transact(j, BERTH_JOURNAL_USE_RESERVE, insert_row, &calls, &err) == 0; fit++)
        ck_assert_int_lt(fit, 1000);
    ck_assert_int_ge(fit, 10);
    ck_assert_int_eq(berth_journal_transact(j, BERTH_JOURNAL_USE_RESERVE, insert_row, &calls, &err), -ENOSPC);
    ck_assert_int_eq(rows(j), 11 + fit);
    /* No room to re-create the reserve: space has not returned. */
    ck_assert_int_eq(berth_journal_check_space(j, &err), -ENOSPC);
    ck_assert(!berth_journal_reserve_held(j));

    /* Closed and opened again on the full filesystem: it opens, and holds every committed row. */
    berth_journal_close(j);
    j = test_journal_open(full);
    ck_assert_int_eq(rows(j), 11 + fit);
    ck_assert_int_eq(berth_journal_set_reserve(j, 256 * 1024, &err), -ENOSPC);
    ck_assert(!berth_journal_reserve_held(j));

    /* Space returns: the check re-creates the reserve, writes work again. */
    ck_assert_int_eq(unlink(filler), 0);
    ck_assert_int_eq(berth_journal_check_space(j, &err), 0);
    ck_assert(berth_journal_reserve_held(j));
    ck_assert_int_eq(berth_journal_transact(j, 0, insert_row, &calls, &err), 0);
    ck_assert_int_eq(rows(j), 12 + fit);
    /* Size 0 gives the reserve up. */
    ck_assert_int_eq(berth_journal_set_reserve(j, 0, &err), 0);
    ck_assert_int_eq(access(reserve, F_OK), -1);
    ck_assert_int_eq(berth_journal_check_space(j, &err), 0); /* the probe alone */
    berth_journal_close(j);
}
END_TEST

START_TEST(transact_arguments)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = test_journal_open(dir);
    int calls = 0;

    ck_assert_int_eq(berth_journal_transact(j, 0, NULL, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_journal_transact(j, 0x80, make_table, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(berth_journal_transact(j, 0, make_table, NULL, &err), -EINVAL); /* one is open */
    berth_journal_rollback(j);
    ck_assert_int_eq(berth_journal_transact(j, 0, make_table, NULL, &err), 0);
    /* An error of @fn rolls back and is returned; without a reserve nothing is retried. */
    ck_assert_int_eq(berth_journal_transact(j, BERTH_JOURNAL_USE_RESERVE, make_table, NULL, &err), -EIO);
    ck_assert_int_eq(berth_journal_transact(j, BERTH_JOURNAL_USE_RESERVE, insert_row, &calls, &err), 0);
    ck_assert_int_eq(calls, 1);
    ck_assert_int_eq(berth_journal_set_reserve(j, BERTH_JOURNAL_RESERVE_MAX + 1, &err), -EINVAL);
    ck_assert(!berth_journal_reserve_held(j));
    berth_journal_close(j);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("journal");
    TCase *tc = test_case(s, "journal");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, create_and_reopen);
    tcase_add_test(tc, exclusive);
    tcase_add_test(tc, rollback);
    tcase_add_test(tc, bind);
    tcase_add_test(tc, statement_cache);
    tcase_add_test(tc, unsafe_places);
    tcase_add_test(tc, foreign_and_newer);
    tcase_add_test(tc, migrate_from_format_1);
    tcase_add_test(tc, migrate_from_format_4);
    tcase_add_test(tc, migrate_failure_changes_nothing);
    tcase_add_test(tc, transact_arguments);
    tc = test_tmpfs_case(s, "full filesystem", "2m");
    if (tc)
        tcase_add_test(tc, full_filesystem);
    return s;
}

TEST_MAIN()
