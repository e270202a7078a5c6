/* SPDX-License-Identifier: MIT */
/* test-report.c -- a remote worker's signed report, and the result's chain to it (report.h). */
#include "testutil.h"

#include "canon.h"
#include "digest.h"
#include "enrol.h"
#include "envelope.h"
#include "job.h"
#include "jobtest.h"
#include "jsonobj.h"
#include "macro.h"
#include "receipt.h"
#include "report.h"
#include "sign.h"

#define RUN "r0123456789abcdef0123456789abcdef"
#define HASH "1111111111111111111111111111111111111111111111111111111111111111"

struct fixture {
    struct berth_signing_key *broker, *worker, *stranger;
    struct berth_job *job;
    json_t *scope, *receipt, *claim, *report, *worker_member;
    char claim_digest[BERTH_DIGEST_BUFSZ];
};

static json_t *sign_claim(const struct fixture *f, const struct berth_signing_key *key, const char *job_id,
                          const char *name)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char rd[BERTH_DIGEST_BUFSZ];
    json_t *env = NULL;
    const struct berth_claim_params p = {
        .pool_hash = HASH, .worker_name = name, .job_id = job_id, .job_digest = f->job->digest,
        .receipt_digest = rd, .run_id = RUN, .placement_hash = HASH, .lease_revision = 2, .created_ns = 5};

    ck_assert_int_eq(berth_digest_json(f->receipt, rd, &err), 0);
    ck_assert_msg(berth_claim2_create(key, &p, &env, &err) == 0, "%s", err.message);
    return env;
}

/* The report of the run: exited 3, "hi\n" on stdout, nothing on stderr. */
static json_t *sign_report(const struct fixture *f, const struct berth_signing_key *key, const char *claim_digest,
                           const char *out)
{
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *env = NULL;
    const struct berth_report_params p = {
        .worker_name = "worker-1", .job_id = f->job->id, .run_id = RUN, .job_digest = f->job->digest,
        .claim_digest = claim_digest, .status = BERTH_RESULT_EXITED, .has_exit_code = true, .exit_code = 3,
        .out = out, .out_len = strlen(out), .err = "", .err_len = 0, .started_at = 10, .finished_at = 20};

    ck_assert_msg(berth_report_create(key, &p, &env, &err) == 0, "%s", err.message);
    return env;
}

static void setup(struct fixture *f)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_receipt_params rp = {
        .broker = "host-1", .run_id = RUN, .pool = "sample", .placement_hash = HASH, .backend = "workers",
        .plugin = "berth-worker", .plugin_version = "1", .accepted_at = 1, .deadline = 100};
    struct berth_receipt_params p = rp;

    memset(f, 0, sizeof(*f));
    ck_assert_int_eq(berth_signing_key_generate(&f->broker, &err), 0);
    ck_assert_int_eq(berth_signing_key_generate(&f->worker, &err), 0);
    ck_assert_int_eq(berth_signing_key_generate(&f->stranger, &err), 0);
    ck_assert_msg(berth_job_parse(SAMPLE_JOB, strlen(SAMPLE_JOB), &f->job, &err) == 0, "%s", err.message);
    f->scope = json_pack("[s]", "team-a");
    p.job = f->job;
    p.who.principal = "alice";
    p.who.scope = f->scope;
    ck_assert_msg(berth_receipt_create(f->broker, &p, &f->receipt, &err) == 0, "%s", err.message);
    f->claim = sign_claim(f, f->worker, f->job->id, "worker-1");
    ck_assert_int_eq(berth_digest_json(f->claim, f->claim_digest, &err), 0);
    f->report = sign_report(f, f->worker, f->claim_digest, "hi\n");
    f->worker_member = berth_result_worker_json("worker-1", berth_signing_key_public(f->worker), f->claim, f->report);
    ck_assert_ptr_nonnull(f->worker_member);
}

static void teardown(struct fixture *f)
{
    berth_signing_key_free(f->broker);
    berth_signing_key_free(f->worker);
    berth_signing_key_free(f->stranger);
    berth_job_free(f->job);
    json_decref(f->scope);
    json_decref(f->receipt);
    json_decref(f->claim);
    json_decref(f->report);
    json_decref(f->worker_member);
}

/* The result params that say what the report says. */
static struct berth_result_params params(const struct fixture *f)
{
    return (struct berth_result_params){
        .broker = "host-1", .job = f->job, .receipt = f->receipt, .status = BERTH_RESULT_EXITED,
        .has_exit_code = true, .exit_code = 3, .out = "hi\n", .out_len = 3, .err = "", .err_len = 0,
        .started_at = 10, .finished_at = 20, .worker = f->worker_member};
}

/* Re-sign @body (changed by the caller) with the broker key and verify it. */
static int resign_verify(const struct fixture *f, json_t *body, struct berth_error *err)
{
    json_t *env = NULL;
    int r;

    ck_assert_int_eq(berth_envelope_seal(f->broker, "result", body, &env, err), 0);
    r = berth_result_verify(env, berth_signing_key_public(f->broker), f->job, f->receipt, NULL, err);
    json_decref(env);
    return r;
}

START_TEST(report_round_trip)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    const json_t *body = NULL;

    setup(&f);
    ck_assert_msg(berth_report_verify(f.report, berth_signing_key_public(f.worker), &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "kind")), "worker.report");
    ck_assert_str_eq(json_string_value(json_object_get(body, "claim_digest")), f.claim_digest);
    ck_assert_int_eq(json_integer_value(json_object_get(body, "stdout_size")), 3);
    ck_assert_int_eq(berth_report_binds_output(body, "hi\n", 3, "", 0, &err), 0);
    /* Other bytes than the ones signed. */
    ck_assert_int_eq(berth_report_binds_output(body, "ho\n", 3, "", 0, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "stdout_digest"));
    ck_assert_int_eq(berth_report_binds_output(body, "hi\n", 3, "x", 1, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "stderr is 1 bytes"));
    /* Another key: its key id is not the report's. */
    ck_assert_int_eq(berth_report_verify(f.report, berth_signing_key_public(f.stranger), NULL, &err), -EBADMSG);
    teardown(&f);
}
END_TEST

START_TEST(report_refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    struct berth_report_params p = {.worker_name = "worker-1", .job_id = "job-1", .run_id = RUN,
                                    .claim_digest = NULL, .status = BERTH_RESULT_EXITED, .finished_at = 1};
    json_t *env = NULL, *copy;

    setup(&f);
    p.job_digest = f.job->digest;
    p.claim_digest = f.claim_digest;
    /* Bad arguments. */
    p.has_exit_code = true;
    p.exit_code = 256;
    ck_assert_int_eq(berth_report_create(f.worker, &p, &env, &err), -EINVAL);
    p.exit_code = 0;
    p.reason = "Not A Code";
    ck_assert_int_eq(berth_report_create(f.worker, &p, &env, &err), -EINVAL);
    p.reason = NULL;
    p.worker_name = "..";
    ck_assert_int_eq(berth_report_create(f.worker, &p, &env, &err), -EINVAL);
    p.worker_name = "worker-1";
    p.claim_digest = "sha256:short";
    ck_assert_int_eq(berth_report_create(f.worker, &p, &env, &err), -EINVAL);
    ck_assert_ptr_null(env);
    /* A member more, re-signed by the worker: refused by its shape. */
    copy = json_deep_copy(json_object_get(f.report, "report"));
    json_object_set_new(copy, "extra", json_true());
    ck_assert_int_eq(berth_envelope_seal(f.worker, "report", copy, &env, &err), 0);
    ck_assert_int_eq(berth_report_verify(env, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "extra"));
    json_decref(env);
    /* A status outside the set. */
    json_object_del(copy, "extra");
    json_object_set_new(copy, "status", json_string("succeeded"));
    ck_assert_int_eq(berth_envelope_seal(f.worker, "report", copy, &env, &err), 0);
    ck_assert_int_eq(berth_report_verify(env, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    json_decref(env);
    /* One byte changed after signing. */
    json_decref(copy);
    copy = json_deep_copy(f.report);
    json_object_set_new(json_object_get(copy, "report"), "exit_code", json_integer(0));
    ck_assert_int_eq(berth_report_verify(copy, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    json_decref(copy);
    teardown(&f);
}
END_TEST

START_TEST(result_names_the_worker)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    struct berth_result_params p;
    json_t *result = NULL;
    const json_t *body = NULL;

    setup(&f);
    p = params(&f);
    ck_assert_msg(berth_result_create(f.broker, &p, &result, &err) == 0, "%s", err.message);
    ck_assert_msg(berth_result_verify(result, berth_signing_key_public(f.broker), f.job, f.receipt, &body, &err) == 0,
                  "%s", err.message);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "worker"), "name")), "worker-1");
    ck_assert(json_equal(json_object_get(json_object_get(body, "worker"), "claim"), f.claim));
    json_decref(result);
    /* berthd cannot sign a result that says something else than the report. */
    p.exit_code = 0;
    ck_assert_int_eq(berth_result_create(f.broker, &p, &result, &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "exit_code"));
    p = params(&f);
    p.out = "hello\n";
    p.out_len = 6;
    ck_assert_int_eq(berth_result_create(f.broker, &p, &result, &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "stdout"));
    p = params(&f);
    p.status = BERTH_RESULT_FAILED;
    ck_assert_int_eq(berth_result_create(f.broker, &p, &result, &err), -EINVAL);
    teardown(&f);
}
END_TEST

/* Each link of the chain, broken in a result the broker re-signs: refused. */
START_TEST(result_chain_links)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    struct berth_result_params p;
    json_t *result = NULL, *body, *w, *other;
    char digest[BERTH_DIGEST_BUFSZ];

    setup(&f);
    p = params(&f);
    ck_assert_int_eq(berth_result_create(f.broker, &p, &result, &err), 0);
    body = json_deep_copy(json_object_get(result, "result"));
    json_decref(result);
    ck_assert_int_eq(resign_verify(&f, body, &err), 0);
    w = json_object_get(body, "worker");

    /* The claim signed by a stranger's key, under the worker's public key. */
    other = sign_claim(&f, f.stranger, f.job->id, "worker-1");
    json_object_set(w, "claim", other);
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    json_decref(other);
    /* A claim of another job by the worker. */
    other = sign_claim(&f, f.worker, "job-2", "worker-1");
    json_object_set(w, "claim", other);
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "another run"));
    json_decref(other);
    /* A claim under another name. */
    other = sign_claim(&f, f.worker, f.job->id, "worker-2");
    json_object_set(w, "claim", other);
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "not a claim by worker worker-1"));
    json_decref(other);
    json_object_set(w, "claim", f.claim);
    ck_assert_int_eq(resign_verify(&f, body, &err), 0);

    /* A report of another claim: it does not answer this one. */
    ck_assert_int_eq(berth_digest_bytes("x", 1, digest), 0);
    other = sign_report(&f, f.worker, digest, "hi\n");
    json_object_set(w, "report", other);
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "does not answer"));
    json_decref(other);
    /* A report signed by the stranger. */
    other = sign_report(&f, f.stranger, f.claim_digest, "hi\n");
    json_object_set(w, "report", other);
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    json_decref(other);
    json_object_set(w, "report", f.report);
    ck_assert_int_eq(resign_verify(&f, body, &err), 0);

    /* The result's stdout changed (and re-signed by the broker): not the worker's bytes. */
    json_object_set_new(body, "stdout", json_string("aGVsbG8K"));
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "stdout"));
    json_object_set_new(body, "stdout", json_string("aGkK"));
    ck_assert_int_eq(resign_verify(&f, body, &err), 0);
    /* An unknown member in "worker". */
    json_object_set_new(w, "host", json_string("h"));
    ck_assert_int_eq(resign_verify(&f, body, &err), -EBADMSG);
    json_decref(body);
    teardown(&f);
}
END_TEST

/* A report's output_error: with a failed status and no outputs only; a
 * result saying another output_error than the report is refused. */
START_TEST(report_output_error)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    _cleanup_json_ json_t *oe = json_pack("{s:s, s:s}", "id", "report", "problem", "symlink");
    json_t *env = NULL, *copy, *result = NULL;
    const json_t *body = NULL;
    struct berth_report_params p;
    struct berth_result_params rp;

    setup(&f);
    p = (struct berth_report_params){
        .worker_name = "worker-1", .job_id = f.job->id, .run_id = RUN, .job_digest = f.job->digest,
        .claim_digest = f.claim_digest, .status = BERTH_RESULT_FAILED, .has_exit_code = true, .exit_code = 3,
        .reason = "output_invalid", .out = "hi\n", .out_len = 3, .err = "", .err_len = 0, .output_error = oe,
        .started_at = 10, .finished_at = 20};
    ck_assert_msg(berth_report_create(f.worker, &p, &env, &err) == 0, "%s", err.message);
    ck_assert_msg(berth_report_verify(env, berth_signing_key_public(f.worker), &body, &err) == 0, "%s", err.message);
    ck_assert(json_equal(json_object_get(body, "output_error"), oe));
    /* The same with "exited": an output_error goes only with a failure. */
    copy = json_deep_copy(body);
    json_decref(env);
    json_object_set_new(copy, "status", json_string("exited"));
    ck_assert_int_eq(berth_envelope_seal(f.worker, "report", copy, &env, &err), 0);
    ck_assert_int_eq(berth_report_verify(env, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "has failed"));
    json_decref(env);
    /* A problem nobody knows. */
    json_object_set_new(copy, "status", json_string("failed"));
    json_object_set_new(json_object_get(copy, "output_error"), "problem", json_string("cosmic_ray"));
    ck_assert_int_eq(berth_envelope_seal(f.worker, "report", copy, &env, &err), 0);
    ck_assert_int_eq(berth_report_verify(env, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    json_decref(env);
    /* Without the member at all (a report of before): refused. */
    json_object_del(copy, "output_error");
    ck_assert_int_eq(berth_envelope_seal(f.worker, "report", copy, &env, &err), 0);
    ck_assert_int_eq(berth_report_verify(env, berth_signing_key_public(f.worker), NULL, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "output_error"));
    json_decref(env);
    json_decref(copy);
    /* The report says no output_error: a result body that names one is not
     * the report's (the chain alone, every other member as reported). */
    rp = params(&f);
    ck_assert_int_eq(berth_result_create(f.broker, &rp, &result, &err), 0);
    copy = json_deep_copy(json_object_get(result, "result"));
    ck_assert_int_eq(berth_result_worker_verify(copy, json_object_get(copy, "worker"), &err), 0);
    json_object_set(copy, "output_error", oe);
    ck_assert_int_eq(berth_result_worker_verify(copy, json_object_get(copy, "worker"), &err), -EBADMSG);
    ck_assert_msg(strstr(err.message, "output_error is not the worker's report's"), "%s", err.message);
    json_decref(copy);
    json_decref(result);
    teardown(&f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("report");
    TCase *tc = test_case(s, "report");

    tcase_add_test(tc, report_round_trip);
    tcase_add_test(tc, report_refusals);
    tcase_add_test(tc, result_names_the_worker);
    tcase_add_test(tc, result_chain_links);
    tcase_add_test(tc, report_output_error);
    return s;
}

TEST_MAIN()
