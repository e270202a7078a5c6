/* SPDX-License-Identifier: MIT */
/* test-jobstore.c -- durable job records and their state machine (jobstore.h). */
#include "testutil.h"

#include "digest.h"
#include "jobprune.h"
#include "jobstore.h"
#include "journal.h"
#include "macro.h"
#include "pooltest.h"

static char *dir;
static struct berth_journal *j;

static void setup(void)
{
    dir = test_tmpdir();
    ck_assert_int_eq(chmod(dir, 0700), 0);
    j = test_journal_open(dir);
}

static void teardown(void)
{
    berth_journal_close(j);
    test_rm_rf(dir);
    free(dir);
}

/* The broker key id run ids are derived with in these tests. */
#define KEY_ID "C0zNG5QDFhp7xoc-pnJ3y1P3y9_x1uxaNbuK51PzV1g"

/* A record for job @id of alice; the strings are static. */
static struct berth_job_record record(const char *id, char run_id[BERTH_RUN_ID_LEN + 1])
{
    struct berth_job_record rec = {0};

    ck_assert_int_eq(berth_run_id(KEY_ID, "alice", "[\"team\"]", id, run_id), 0);
    rec.principal = (char *)"alice";
    rec.scope = (char *)"[\"team\"]";
    rec.job_id = (char *)id;
    rec.run_id = run_id;
    rec.job_digest = (char *)"sha256:1111111111111111111111111111111111111111111111111111111111111111";
    rec.job = (char *)"{}";
    rec.receipt = (char *)"{\"receipt\":{}}";
    rec.backend = (char *)"fixture";
    rec.effective = (char *)"{\"template\":{}}";
    rec.pool = (char *)"sample";
    rec.fingerprint = (char *)"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    rec.accepted_at = 100;
    rec.deadline = 200;
    return rec;
}

START_TEST(run_ids)
{
    char a[BERTH_RUN_ID_LEN + 1], b[BERTH_RUN_ID_LEN + 1], c[BERTH_RUN_ID_LEN + 1];

    ck_assert_int_eq(berth_run_id(KEY_ID, "alice", "[\"team\"]", "job-1", a), 0);
    ck_assert_int_eq(strlen(a), BERTH_RUN_ID_LEN);
    ck_assert_int_eq(a[0], 'r');
    ck_assert_int_eq(berth_run_id(KEY_ID, "alice", "[\"team\"]", "job-1", b), 0);
    ck_assert_str_eq(a, b);
    /* The separator keeps ("ab","c") and ("a","bc") apart. */
    ck_assert_int_eq(berth_run_id(KEY_ID, "alice", "[\"team\"]", "job-2", c), 0);
    ck_assert_str_ne(a, c);
    ck_assert_int_eq(berth_run_id(KEY_ID, "alicex", "[\"team\"]", "job-1", c), 0);
    ck_assert_str_ne(a, c);
    ck_assert_int_eq(berth_run_id(KEY_ID, "alic", "e[\"team\"]", "job-1", c), 0);
    ck_assert_str_ne(a, c);
    /* Another broker (another receipt key) on the same host: another run id
     * for the same principal, scope and job id. */
    ck_assert_int_eq(berth_run_id("another-broker-key-id", "alice", "[\"team\"]", "job-1", c), 0);
    ck_assert_str_ne(a, c);
    ck_assert_int_eq(berth_run_id(NULL, "alice", "x", "y", c), -EINVAL);
    ck_assert_int_eq(berth_run_id(KEY_ID, NULL, "x", "y", c), -EINVAL);
}
END_TEST

START_TEST(insert_find)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char run_id[BERTH_RUN_ID_LEN + 1];
    struct berth_job_record rec = record("job-1", run_id), got;

    ck_assert_msg(berth_jobstore_insert(j, &rec, 16, 100, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_jobstore_find(j, "alice", "[\"team\"]", "job-1", &got, &err), 0);
    ck_assert_str_eq(got.run_id, run_id);
    ck_assert_int_eq(got.state, BERTH_JOB_ACCEPTED);
    ck_assert_int_eq(got.revision, 1);
    ck_assert_int_eq(got.deadline, 200);
    ck_assert(!got.cancel_requested);
    ck_assert_ptr_null(got.result);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_find_run(j, run_id, &got, &err), 0);
    ck_assert_str_eq(got.job_id, "job-1");
    berth_job_record_clear(&got);
    /* Same request key again: refused, the first stays. */
    ck_assert_int_eq(berth_jobstore_insert(j, &rec, 16, 100, &err), -EEXIST);
    /* Another principal's job of the same id is its own job. */
    ck_assert_int_eq(berth_jobstore_find(j, "bob", "[\"team\"]", "job-1", &got, &err), -ENOENT);
    ck_assert_int_eq(berth_jobstore_find_run(j, "r00000000000000000000000000000000", &got, &err), -ENOENT);
}
END_TEST

START_TEST(admission_limits)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char ids[5][BERTH_RUN_ID_LEN + 1], name[16];
    int64_t counts[BERTH_JOB_STATE_COUNT];
    int i;

    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "job-%d", i);
        struct berth_job_record rec = record(strdup(name), ids[i]);
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 3, 4, &err), 0);
        free(rec.job_id);
    }
    {
        struct berth_job_record rec = record("job-3", ids[3]);
        /* Three active of three. */
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 3, 4, &err), -EAGAIN);
        ck_assert_ptr_nonnull(strstr(err.message, "3 jobs are active"));
        /* One finishes: room again. */
        ck_assert_int_eq(berth_jobstore_transition(j, ids[0], 1, BERTH_JOB_CANCELLED, "{}", 300, &err), 0);
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 3, 4, &err), 0);
    }
    {
        struct berth_job_record rec = record("job-4", ids[4]);
        ck_assert_int_eq(berth_jobstore_transition(j, ids[1], 1, BERTH_JOB_EXPIRED, "{}", 300, &err), 0);
        /* Four retained of four: full, and nothing is deleted to make room. */
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 3, 4, &err), -EOVERFLOW);
        ck_assert_ptr_nonnull(strstr(err.message, "no unfinished job is ever deleted"));
    }
    ck_assert_int_eq(berth_jobstore_counts(j, counts, &err), 0);
    ck_assert_int_eq(counts[BERTH_JOB_ACCEPTED], 2);
    ck_assert_int_eq(counts[BERTH_JOB_CANCELLED], 1);
    ck_assert_int_eq(counts[BERTH_JOB_EXPIRED], 1);
}
END_TEST

START_TEST(state_machine)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char run_id[BERTH_RUN_ID_LEN + 1];
    struct berth_job_record rec = record("job-1", run_id), got;

    ck_assert_int_eq(berth_jobstore_insert(j, &rec, 16, 100, &err), 0);
    /* Wrong expected revision. */
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 2, BERTH_JOB_CLAIMED, NULL, 110, &err), -ESTALE);
    /* Not a forward edge. */
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 1, BERTH_JOB_EXITED, NULL, 110, &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cannot move from accepted to exited"));
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 1, BERTH_JOB_CLAIMED, NULL, 110, &err), 0);
    /* A lease is recorded at the revision of the claim, renewed in place, and kept. */
    ck_assert_int_eq(berth_jobstore_set_lease(j, run_id, 1, "{\"worker\":\"w1\"}", &err), -ESTALE);
    ck_assert_int_eq(berth_jobstore_set_lease(j, run_id, 2, "{\"worker\":\"w1\"}", &err), 0);
    ck_assert_int_eq(berth_jobstore_set_lease(j, run_id, 2, "{\"worker\":\"w1\",\"n\":2}", &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run_id, &got, &err), 0);
    ck_assert_str_eq(got.lease, "{\"worker\":\"w1\",\"n\":2}");
    ck_assert_int_eq(got.revision, 2);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 2, BERTH_JOB_RUNNING, NULL, 120, &err), 0);
    /* A warm start is recorded at the revision of the move to running, and kept. */
    ck_assert_int_eq(berth_jobstore_set_warm(j, run_id, 2, "{\"slot_id\":\"s1\"}", &err), -ESTALE);
    ck_assert_int_eq(berth_jobstore_set_warm(j, run_id, 3, "{\"slot_id\":\"s1\"}", &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run_id, &got, &err), 0);
    ck_assert_str_eq(got.warm, "{\"slot_id\":\"s1\"}");
    ck_assert_int_eq(got.revision, 3);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 3, BERTH_JOB_ACCEPTED, NULL, 130, &err), -EINVAL);
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 3, BERTH_JOB_FINALIZING, NULL, 130, &err), 0);
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 4, BERTH_JOB_EXITED, "{\"result\":1}", 140, &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run_id, &got, &err), 0);
    ck_assert_int_eq(got.state, BERTH_JOB_EXITED);
    ck_assert_int_eq(got.revision, 5);
    ck_assert_str_eq(got.result, "{\"result\":1}");
    ck_assert_int_eq(got.updated_at, 140);
    ck_assert_str_eq(got.warm, "{\"slot_id\":\"s1\"}");
    berth_job_record_clear(&got);
    /* Terminal is final. */
    ck_assert_int_eq(berth_jobstore_transition(j, run_id, 5, BERTH_JOB_FAILED, NULL, 150, &err), -EINVAL);
    /* A cancel request on a terminal job changes nothing. */
    ck_assert_int_eq(berth_jobstore_request_cancel(j, run_id, NULL, 160, &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run_id, &got, &err), 0);
    ck_assert_int_eq(got.revision, 5);
    ck_assert(!got.cancel_requested);
    berth_job_record_clear(&got);
    ck_assert(berth_job_state_terminal(BERTH_JOB_EXPIRED));
    ck_assert(!berth_job_state_terminal(BERTH_JOB_REAPING));
    ck_assert(!berth_job_transition_allowed(BERTH_JOB_STATE_COUNT, BERTH_JOB_ACCEPTED));
    /* A job being stopped that ended on its own first keeps its outcome;
     * a deadline that passed before start expires a claimed job. */
    ck_assert(berth_job_transition_allowed(BERTH_JOB_REAPING, BERTH_JOB_EXITED));
    ck_assert(berth_job_transition_allowed(BERTH_JOB_CLAIMED, BERTH_JOB_EXPIRED));
    ck_assert(!berth_job_transition_allowed(BERTH_JOB_REAPING, BERTH_JOB_RUNNING));
    ck_assert(!berth_job_transition_allowed(BERTH_JOB_CLAIMED, BERTH_JOB_EXITED));
}
END_TEST

static int collect(void *userdata, const struct berth_job_record *rec)
{
    char *seen = userdata;
    strcat(seen, rec->job_id);
    strcat(seen, rec->cancel_requested ? "!" : ";");
    return 0;
}

START_TEST(cancel_and_open)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char a[BERTH_RUN_ID_LEN + 1], b[BERTH_RUN_ID_LEN + 1], c[BERTH_RUN_ID_LEN + 1], seen[128] = "";
    struct berth_job_record ra = record("a", a), rb = record("b", b), rc = record("c", c), got;

    rb.accepted_at = 50; /* listed first */
    ck_assert_int_eq(berth_jobstore_insert(j, &ra, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &rb, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &rc, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_transition(j, c, 1, BERTH_JOB_FAILED, "{}", 110, &err), 0);
    /* The intent is recorded once and bumps the revision. */
    ck_assert_int_eq(berth_jobstore_request_cancel(j, a, NULL, 120, &err), 0);
    ck_assert_int_eq(berth_jobstore_request_cancel(j, a, NULL, 130, &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, a, &got, &err), 0);
    ck_assert(got.cancel_requested);
    ck_assert_int_eq(got.revision, 2);
    ck_assert_int_eq(got.state, BERTH_JOB_ACCEPTED);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_foreach_open(j, collect, seen, &err), 0);
    ck_assert_str_eq(seen, "b;a!");
    ck_assert_int_eq(berth_jobstore_request_cancel(j, "r-none", NULL, 1, &err), -ENOENT);
}
END_TEST

/* berthd's own cancellation keeps its reason; the first reason stays. */
START_TEST(cancel_reason)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char a[BERTH_RUN_ID_LEN + 1], b[BERTH_RUN_ID_LEN + 1];
    struct berth_job_record ra = record("a", a), rb = record("b", b), got;

    ck_assert_int_eq(berth_jobstore_insert(j, &ra, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &rb, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_request_cancel(j, a, "revoked", 120, &err), 0);
    ck_assert_int_eq(berth_jobstore_request_cancel(j, a, "qualification_expired", 130, &err), 0);
    ck_assert_int_eq(berth_jobstore_request_cancel(j, b, NULL, 120, &err), 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, a, &got, &err), 0);
    ck_assert(got.cancel_requested);
    ck_assert_str_eq(got.cancel_reason, "revoked");
    ck_assert_str_eq(got.fingerprint, ra.fingerprint);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_find_run(j, b, &got, &err), 0);
    ck_assert(got.cancel_requested);
    ck_assert_ptr_null(got.cancel_reason);
    berth_job_record_clear(&got);
    rb.fingerprint = NULL;
    ck_assert_int_eq(berth_jobstore_insert(j, &rb, 16, 100, &err), -EINVAL);
}
END_TEST

struct page_seen {
    char (*ids)[16];
    size_t n;
};

static int page_collect(void *userdata, const struct berth_job_record *rec)
{
    struct page_seen *p = userdata;

    snprintf(p->ids[p->n++], sizeof(p->ids[0]), "%s", rec->job_id);
    return 0;
}

#define PAGED_OPEN 600

/* Keyset pages of open records: at most the limit each, in (accepted_at,
 * run_id) order, every open record exactly once, terminal ones never, on
 * the partial index. */
START_TEST(paged_open)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job_cursor cursor = {0};
    struct page_seen seen = {.ids = calloc(PAGED_OPEN + 64, sizeof(*seen.ids))};
    static char runs[PAGED_OPEN + 40][BERTH_RUN_ID_LEN + 1];
    static char ids[PAGED_OPEN + 40][16];
    size_t i, count = 0, pages = 0, total = PAGED_OPEN + 40;
    sqlite3_stmt *q = NULL;
    bool uses_index = false;

    ck_assert_ptr_nonnull(seen.ids);
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    for (i = 0; i < total; i++) {
        struct berth_job_record rec;
        snprintf(ids[i], sizeof(ids[i]), "j%04zu", i);
        rec = record(ids[i], runs[i]);
        rec.accepted_at = 1000 + (int64_t)(i / 3); /* ties on accepted_at: run_id orders them */
        ck_assert_msg(berth_jobstore_insert(j, &rec, 100000, 100000, &err) == 0, "%s", err.message);
    }
    /* Every 16th record is terminal: never in a page. */
    for (i = 0; i < total; i += 16)
        ck_assert_int_eq(berth_jobstore_transition(j, runs[i], 1, BERTH_JOB_FAILED, "{}", 5, &err), 0);
    ck_assert_int_eq(berth_journal_commit(j, &err), 0);

    do {
        size_t before = seen.n;
        ck_assert_msg(berth_jobstore_page_open(j, &cursor, BERTH_JOBSTORE_PAGE_MAX, page_collect, &seen, &count,
                                               &err) == 0,
                      "%s", err.message);
        ck_assert_uint_le(count, BERTH_JOBSTORE_PAGE_MAX);
        ck_assert_uint_eq(count, seen.n - before);
        pages++;
        ck_assert_uint_lt(pages, 10);
    } while (count == BERTH_JOBSTORE_PAGE_MAX);
    ck_assert_uint_eq(seen.n, total - (total + 15) / 16);
    ck_assert_uint_eq(pages, (seen.n + BERTH_JOBSTORE_PAGE_MAX) / BERTH_JOBSTORE_PAGE_MAX);
    /* Exactly the open ones, each once, oldest first (accepted_at = 1000 + n / 3 for "jn"). */
    {
        static bool got[PAGED_OPEN + 40];
        long last = -1;
        for (i = 0; i < seen.n; i++) {
            long n = strtol(seen.ids[i] + 1, NULL, 10);
            ck_assert(n >= 0 && n < (long)total && n % 16 != 0 && !got[n]);
            got[n] = true;
            ck_assert_int_ge(n / 3, last);
            last = n / 3;
        }
    }
    /* The cursor went past the end: a further page is empty until it is reset. */
    ck_assert_int_eq(berth_jobstore_page_open(j, &cursor, 5, page_collect, &seen, &count, &err), 0);
    ck_assert_uint_eq(count, 0);
    ck_assert_int_eq(berth_jobstore_page_open(j, &cursor, 0, page_collect, &seen, &count, &err), -EINVAL);
    ck_assert_int_eq(berth_jobstore_page_open(j, &cursor, BERTH_JOBSTORE_PAGE_MAX + 1, page_collect, &seen, &count, &err),
                     -EINVAL);
    /* The page query runs on the partial index. */
    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j),
                                        "EXPLAIN QUERY PLAN SELECT run_id FROM jobs INDEXED BY jobs_open_order "
                                        "WHERE state NOT IN ('exited','failed','cancelled','expired') "
                                        "AND (accepted_at, run_id) > (?, ?) ORDER BY accepted_at, run_id LIMIT 256",
                                        -1, &q, NULL),
                     SQLITE_OK);
    while (sqlite3_step(q) == SQLITE_ROW)
        if (strstr((const char *)sqlite3_column_text(q, 3), "jobs_open_order"))
            uses_index = true;
    sqlite3_finalize(q);
    ck_assert(uses_index);
    free(seen.ids);
}
END_TEST

/* Records survive closing and reopening the journal (a restart). */
START_TEST(durable)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char run_id[BERTH_RUN_ID_LEN + 1];
    struct berth_job_record rec = record("job-1", run_id), got;

    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &rec, 16, 100, &err), 0);
    ck_assert_int_eq(berth_journal_commit(j, &err), 0);
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    {
        struct berth_job_record r2 = record("job-2", (char[BERTH_RUN_ID_LEN + 1]){0});
        ck_assert_int_eq(berth_jobstore_insert(j, &r2, 16, 100, &err), 0);
    }
    berth_journal_rollback(j);
    berth_journal_close(j);
    j = test_journal_open(dir);
    ck_assert_int_eq(berth_jobstore_find(j, "alice", "[\"team\"]", "job-1", &got, &err), 0);
    ck_assert_str_eq(got.receipt, "{\"receipt\":{}}");
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_find(j, "alice", "[\"team\"]", "job-2", &got, &err), -ENOENT);
}
END_TEST

/* Move @run (revision 1, accepted) to failed with @result at @when. */
static void finish_at(const char *run, const char *result, int64_t when)
{
    struct berth_error err = BERTH_ERROR_INIT;

    ck_assert_msg(berth_jobstore_transition(j, run, 1, BERTH_JOB_FAILED, result, when, &err) == 0, "%s",
                  err.message);
}

/* Retention: a terminal record is replaced by its identity tombstone, which
 * keeps the receipt byte for byte, the final state and the result digest,
 * no longer counts against max_retained, and fences the key and the run id
 * for ever. */
START_TEST(prune_tombstone)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char run1[BERTH_RUN_ID_LEN + 1], run2[BERTH_RUN_ID_LEN + 1], run3[BERTH_RUN_ID_LEN + 1];
    char digest[BERTH_DIGEST_BUFSZ];
    const char *result = "{\"result\":{\"outputs\":[],\"status\":\"exited\"},\"signature\":\"x\"}";
    struct berth_job_record r1 = record("job-1", run1), r2 = record("job-2", run2), r3 = record("job-3", run3), got;
    struct berth_job_tombstone t = {0}, t2 = {0};
    struct berth_prune_cursor cursor = {0};
    struct page_seen seen = {.ids = calloc(8, sizeof(*seen.ids))};
    size_t count = 9;

    ck_assert_ptr_nonnull(seen.ids);
    r1.receipt = (char *)"{\"receipt\":{\"run_id\":\"exact bytes\"},\"signature\":\"s\"}";
    ck_assert_int_eq(berth_jobstore_insert(j, &r1, 16, 2, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &r2, 16, 2, &err), 0);
    /* Two of two retained: full. */
    ck_assert_int_eq(berth_jobstore_insert(j, &r3, 16, 2, &err), -EOVERFLOW);

    /* Not terminal yet: nothing expires, and it cannot be pruned. */
    ck_assert_int_eq(berth_jobstore_page_expired(j, 1000, &cursor, 8, page_collect, &seen, &count, &err), 0);
    ck_assert_uint_eq(count, 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run1, &got, &err), 0);
    ck_assert_int_eq(berth_jobstore_prune(j, &got, 2000, NULL, &err), -EINVAL);
    berth_job_record_clear(&got);

    finish_at(run1, result, 500);
    finish_at(run2, result, 700);
    /* The cutoff is inclusive: finished at 500, expired at 500, not at 499. */
    ck_assert_int_eq(berth_jobstore_page_expired(j, 499, &cursor, 8, page_collect, &seen, &count, &err), 0);
    ck_assert_uint_eq(count, 0);
    ck_assert_int_eq(berth_jobstore_page_expired(j, 500, &cursor, 8, page_collect, &seen, &count, &err), 0);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(seen.ids[0], "job-1");
    ck_assert_int_eq(cursor.finished_at, 500);
    ck_assert_str_eq(cursor.run_id, run1);
    /* The cursor moved past job-1: the next page holds job-2 only. */
    ck_assert_int_eq(berth_jobstore_page_expired(j, 1000, &cursor, 8, page_collect, &seen, &count, &err), 0);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(seen.ids[1], "job-2");
    ck_assert_int_eq(berth_jobstore_page_expired(j, 1000, &cursor, 0, page_collect, &seen, &count, &err), -EINVAL);

    /* A stale read (revision 1; the record is at 2) prunes nothing. */
    ck_assert_int_eq(berth_jobstore_find_run(j, run1, &got, &err), 0);
    got.revision = 1;
    ck_assert_int_eq(berth_jobstore_prune(j, &got, 2000, NULL, &err), -ESTALE);
    got.revision = 2;
    ck_assert_msg(berth_jobstore_prune(j, &got, 2000, &t, &err) == 0, "%s", err.message);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_jobstore_find_run(j, run1, &got, &err), -ENOENT);
    ck_assert_int_eq(berth_jobstore_find(j, "alice", "[\"team\"]", "job-1", &got, &err), -ENOENT);

    ck_assert_int_eq(berth_jobstore_find_tombstone(j, "alice", "[\"team\"]", "job-1", &t2, &err), 0);
    ck_assert_str_eq(t2.receipt, r1.receipt);
    ck_assert_str_eq(t2.run_id, run1);
    ck_assert_str_eq(t2.job_digest, r1.job_digest);
    ck_assert_str_eq(t2.principal, "alice");
    ck_assert_str_eq(t2.scope, "[\"team\"]");
    ck_assert_int_eq(t2.state, BERTH_JOB_FAILED);
    ck_assert_int_eq(berth_digest_bytes(result, strlen(result), digest), 0);
    ck_assert_str_eq(t2.result_digest, digest);
    ck_assert_int_eq(t2.finished_at, 500);
    ck_assert_int_eq(t2.pruned_at, 2000);
    ck_assert_str_eq(t.result_digest, t2.result_digest);
    berth_job_tombstone_clear(&t);
    berth_job_tombstone_clear(&t2);
    ck_assert_int_eq(berth_jobstore_find_tombstone(j, "alice", "[\"team\"]", "job-2", &t2, &err), -ENOENT);
    ck_assert_int_eq(berth_jobstore_find_tombstone(j, "bob", "[\"team\"]", "job-1", &t2, &err), -ENOENT);

    /* The tombstone does not count: one retained of two, room for job-3. */
    ck_assert_msg(berth_jobstore_insert(j, &r3, 16, 2, &err) == 0, "%s", err.message);
    /* The pruned key is fenced for ever, as is its run id under another key. */
    ck_assert_int_eq(berth_jobstore_insert(j, &r1, 16, 100, &err), -EEXIST);
    ck_assert_ptr_nonnull(strstr(err.message, "pruned"));
    ck_assert_int_eq(berth_jobstore_tombstoned(j, "alice", "[\"team\"]", "job-1", "r-other", &err), 1);
    ck_assert_int_eq(berth_jobstore_tombstoned(j, "nobody", "[]", "none", run1, &err), 1);
    ck_assert_int_eq(berth_jobstore_tombstoned(j, "alice", "[\"team\"]", "job-2", run2, &err), 0);
    {
        struct berth_job_record again = record("job-9", (char[BERTH_RUN_ID_LEN + 1]){0});
        again.run_id = run1;
        ck_assert_int_eq(berth_jobstore_insert(j, &again, 16, 100, &err), -EEXIST);
    }
    /* Pruned twice: the second finds no record. */
    got = r1;
    got.state = BERTH_JOB_FAILED;
    got.revision = 2;
    got.result = (char *)result;
    ck_assert_int_eq(berth_jobstore_prune(j, &got, 3000, NULL, &err), -ESTALE);
    free(seen.ids);
}
END_TEST

/* The journal's job counts (format 6, kept by triggers) against a count of
 * the rows themselves. */
static void assert_counts_match(int64_t retained, int64_t open)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t kept_retained = -1, kept_open = -1, rows = -1, open_rows = -1;

    ck_assert_int_eq(berth_journal_query_int(j, "SELECT retained FROM job_counts WHERE id = 1", NULL, 0, "t",
                                             &kept_retained, &err),
                     0);
    ck_assert_int_eq(berth_journal_query_int(j, "SELECT open FROM job_counts WHERE id = 1", NULL, 0, "t", &kept_open,
                                             &err),
                     0);
    ck_assert_int_eq(berth_journal_query_int(j, "SELECT count(*) FROM jobs", NULL, 0, "t", &rows, &err), 0);
    ck_assert_int_eq(berth_journal_query_int(j,
                                             "SELECT count(*) FROM jobs WHERE state NOT IN "
                                             "('exited','failed','cancelled','expired')",
                                             NULL, 0, "t", &open_rows, &err),
                     0);
    ck_assert_int_eq(rows, retained);
    ck_assert_int_eq(open_rows, open);
    ck_assert_int_eq(kept_retained, retained);
    ck_assert_int_eq(kept_open, open);
}

/* Admission reads the counts the triggers keep, not the rows: they follow
 * every insert, move between open and terminal, prune and rolled-back
 * write, and survive a reopen. */
START_TEST(counts_follow_rows)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char runs[4][BERTH_RUN_ID_LEN + 1];
    const char *names[4] = {"c-0", "c-1", "c-2", "c-3"};
    struct berth_job_record got;

    assert_counts_match(0, 0);
    for (int i = 0; i < 3; i++) {
        struct berth_job_record rec = record(names[i], runs[i]);
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 16, 16, &err), 0);
    }
    assert_counts_match(3, 3);
    /* Open to open changes nothing; open to terminal moves one. */
    ck_assert_int_eq(berth_jobstore_transition(j, runs[0], 1, BERTH_JOB_CLAIMED, NULL, 150, &err), 0);
    assert_counts_match(3, 3);
    ck_assert_int_eq(berth_jobstore_transition(j, runs[0], 2, BERTH_JOB_FAILED, "{}", 160, &err), 0);
    ck_assert_int_eq(berth_jobstore_transition(j, runs[1], 1, BERTH_JOB_CANCELLED, "{}", 170, &err), 0);
    assert_counts_match(3, 1);
    /* A write rolled back leaves the counts as they were. */
    {
        struct berth_job_record rec = record(names[3], runs[3]);
        ck_assert_int_eq(berth_journal_begin(j, &err), 0);
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 16, 16, &err), 0);
        berth_journal_rollback(j);
    }
    assert_counts_match(3, 1);
    /* A pruned job leaves the count; its tombstone is not a job. */
    ck_assert_int_eq(berth_jobstore_find_run(j, runs[0], &got, &err), 0);
    ck_assert_msg(berth_jobstore_prune(j, &got, 2000, NULL, &err) == 0, "%s", err.message);
    berth_job_record_clear(&got);
    assert_counts_match(2, 1);
    /* An admission refused for the limit counts from them: one open of one. */
    {
        struct berth_job_record rec = record(names[3], runs[3]);
        ck_assert_int_eq(berth_jobstore_insert(j, &rec, 1, 16, &err), -EAGAIN);
        ck_assert_ptr_nonnull(strstr(err.message, "1 jobs are active"));
    }
    berth_journal_close(j);
    j = test_journal_open(dir);
    assert_counts_match(2, 1);
}
END_TEST

/* The figures of "berthctl journal stats". */
START_TEST(stats)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char run1[BERTH_RUN_ID_LEN + 1], run2[BERTH_RUN_ID_LEN + 1], run3[BERTH_RUN_ID_LEN + 1];
    struct berth_job_record r1 = record("job-1", run1), r2 = record("job-2", run2), r3 = record("job-3", run3), got;
    struct berth_journal_stats st;

    ck_assert_int_eq(berth_journal_stats(j, 0, &st, &err), 0);
    ck_assert_int_eq(st.tombstones, 0);
    ck_assert_int_eq(st.oldest_finished, 0);
    ck_assert_int_eq(st.first_outputs_after, 0);
    ck_assert_int_gt(st.bytes, 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &r1, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &r2, 16, 100, &err), 0);
    ck_assert_int_eq(berth_jobstore_insert(j, &r3, 16, 100, &err), 0);
    finish_at(run1, "{\"result\":{\"outputs\":[]}}", 300);
    finish_at(run2, "{\"result\":{\"outputs\":[{\"id\":\"report\"}]}}", 400);
    ck_assert_int_eq(berth_journal_stats(j, 0, &st, &err), 0);
    ck_assert_int_eq(st.counts[BERTH_JOB_FAILED], 2);
    ck_assert_int_eq(st.counts[BERTH_JOB_ACCEPTED], 1);
    ck_assert_int_eq(st.oldest_finished, 300);
    /* Only job-2 has outputs; finished after 400 none. */
    ck_assert_int_eq(st.first_outputs_after, 400);
    ck_assert_int_eq(berth_journal_stats(j, 400, &st, &err), 0);
    ck_assert_int_eq(st.first_outputs_after, 0);
    ck_assert_int_eq(berth_jobstore_find_run(j, run1, &got, &err), 0);
    ck_assert_int_eq(berth_jobstore_prune(j, &got, 900, NULL, &err), 0);
    berth_job_record_clear(&got);
    ck_assert_int_eq(berth_journal_stats(j, 0, &st, &err), 0);
    ck_assert_int_eq(st.tombstones, 1);
    ck_assert_int_eq(st.counts[BERTH_JOB_FAILED], 1);
    ck_assert_int_eq(st.oldest_finished, 400);
    ck_assert_int_ge(st.bytes, st.free_bytes);
    ck_assert_int_eq(berth_journal_stats(NULL, 0, &st, &err), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("jobstore");
    TCase *tc = test_case(s, "jobstore");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, run_ids);
    tcase_add_test(tc, insert_find);
    tcase_add_test(tc, admission_limits);
    tcase_add_test(tc, state_machine);
    tcase_add_test(tc, cancel_and_open);
    tcase_add_test(tc, cancel_reason);
    tcase_add_test(tc, paged_open);
    tcase_add_test(tc, durable);
    tcase_add_test(tc, prune_tombstone);
    tcase_add_test(tc, counts_follow_rows);
    tcase_add_test(tc, stats);
    return s;
}

TEST_MAIN()
