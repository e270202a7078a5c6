/* SPDX-License-Identifier: MIT */
/* test-receipt.c -- signed receipts and results (receipt.h). */
#include "testutil.h"

#include "canon.h"
#include "digest.h"
#include "envelope.h"
#include "job.h"
#include "jobtest.h"
#include "jsonobj.h"
#include "macro.h"
#include "receipt.h"
#include "sign.h"

struct fixture {
    struct berth_signing_key *key;
    struct berth_job *job;
    json_t *scope;
};

static void setup(struct fixture *f)
{
    struct berth_error err = BERTH_ERROR_INIT;

    memset(f, 0, sizeof(*f));
    ck_assert_int_eq(berth_signing_key_generate(&f->key, &err), 0);
    ck_assert_msg(berth_job_parse(SAMPLE_JOB, strlen(SAMPLE_JOB), &f->job, &err) == 0, "%s", err.message);
    f->scope = json_pack("[s, s]", "team-a", "ci");
    ck_assert_ptr_nonnull(f->scope);
}

static void teardown(struct fixture *f)
{
    berth_signing_key_free(f->key);
    berth_job_free(f->job);
    json_decref(f->scope);
}

static json_t *make_receipt(const struct fixture *f, const char *qualification)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_receipt_params p = {
        .broker = "host-1",
        .job = f->job,
        .run_id = "r0123456789abcdef0123456789abcdef",
        .who = {.principal = "alice", .scope = f->scope},
        .pool = "sample",
        .placement_hash = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        .backend = "fixture",
        .plugin = "fixture-runtime",
        .plugin_version = "1.0.0",
        .qualification = qualification,
        .accepted_at = 1700000000000000000LL,
        .deadline = 1700000060000000000LL,
    };
    json_t *env = NULL;

    ck_assert_msg(berth_receipt_create(f->key, &p, &env, &err) == 0, "%s", err.message);
    return env;
}

START_TEST(receipt_round_trip)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    const json_t *body = NULL;
    json_t *env;
    int64_t deadline = 0;

    setup(&f);
    env = make_receipt(&f, NULL);
    ck_assert_msg(berth_receipt_verify(env, berth_signing_key_public(f.key), f.job, &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "kind")), "berth.receipt");
    ck_assert_str_eq(json_string_value(json_object_get(body, "job_id")), "job-1");
    ck_assert_str_eq(json_string_value(json_object_get(body, "job_digest")), f.job->digest);
    ck_assert_str_eq(json_string_value(json_object_get(body, "run_id")), "r0123456789abcdef0123456789abcdef");
    ck_assert_str_eq(json_string_value(json_object_get(body, "backend")), "fixture");
    ck_assert_str_eq(json_string_value(json_object_get(body, "key_id")), berth_signing_key_id(f.key));
    ck_assert(json_is_null(json_object_get(json_object_get(body, "runtime"), "qualification")));
    ck_assert_int_eq(berth_json_ns_value(json_object_get(body, "deadline"), &deadline), 0);
    ck_assert_int_eq(deadline, 1700000060000000000LL);
    /* Without a job, the signature and shape are still checked. */
    ck_assert_int_eq(berth_receipt_verify(env, berth_signing_key_public(f.key), NULL, NULL, &err), 0);
    json_decref(env);
    env = make_receipt(&f, "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    ck_assert_int_eq(berth_receipt_verify(env, berth_signing_key_public(f.key), f.job, &body, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "runtime"), "qualification")),
                     "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    json_decref(env);
    teardown(&f);
}
END_TEST

START_TEST(receipt_refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *other = NULL;
    struct berth_job *job2 = NULL;
    struct fixture f;
    json_t *env, *body, *copy;

    setup(&f);
    env = make_receipt(&f, NULL);
    /* Another key. */
    ck_assert_int_eq(berth_signing_key_generate(&other, &err), 0);
    ck_assert_int_eq(berth_receipt_verify(env, berth_signing_key_public(other), f.job, NULL, &err), -EBADMSG);
    /* Another job with the same id: the digest differs. */
    ck_assert_int_eq(berth_job_parse(SAMPLE_JOB_ID("job-2"), strlen(SAMPLE_JOB_ID("job-2")), &job2, &err), 0);
    ck_assert_int_eq(berth_receipt_verify(env, berth_signing_key_public(f.key), job2, NULL, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "for another job"));
    /* A tampered body. */
    copy = json_deep_copy(env);
    body = json_object_get(copy, "receipt");
    json_object_set_new(body, "deadline", json_string("1800000000000000000"));
    ck_assert_int_eq(berth_receipt_verify(copy, berth_signing_key_public(f.key), f.job, NULL, &err), -EBADMSG);
    json_decref(copy);
    /* An extra member next to the signature. */
    copy = json_deep_copy(env);
    json_object_set_new(copy, "note", json_string("x"));
    ck_assert_int_eq(berth_receipt_verify(copy, berth_signing_key_public(f.key), f.job, NULL, &err), -EBADMSG);
    json_decref(copy);
    /* A result envelope is not a receipt. */
    copy = json_pack("{s:O, s:O}", "result", json_object_get(env, "receipt"), "signature",
                     json_object_get(env, "signature"));
    ck_assert_int_eq(berth_receipt_verify(copy, berth_signing_key_public(f.key), f.job, NULL, &err), -EBADMSG);
    json_decref(copy);
    berth_signing_key_free(other);
    berth_job_free(job2);
    json_decref(env);
    teardown(&f);
}
END_TEST

START_TEST(receipt_bad_arguments)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    struct berth_receipt_params p = {0};
    json_t *env = NULL;

    setup(&f);
    p.broker = "b";
    p.job = f.job;
    p.run_id = "r1";
    p.who.principal = "alice";
    p.who.scope = f.scope;
    p.pool = "sample";
    p.placement_hash = "sha256:x";
    p.backend = "fixture";
    p.plugin = "p";
    p.plugin_version = "1";
    p.accepted_at = 10;
    p.deadline = 9; /* before acceptance */
    ck_assert_int_eq(berth_receipt_create(f.key, &p, &env, &err), -EINVAL);
    ck_assert_ptr_null(env);
    teardown(&f);
}
END_TEST

static json_t *make_result(const struct fixture *f, const json_t *receipt, const char *out, const char *errtext)
{
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *outputs =
        json_pack("[{s:s, s:s, s:i, s:s}]", "id", "summary", "digest",
                  "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "size", 5, "media_type",
                  "text/plain");
    const struct berth_result_params p = {
        .broker = "host-1",
        .job = f->job,
        .receipt = receipt,
        .status = BERTH_RESULT_EXITED,
        .has_exit_code = true,
        .exit_code = 3,
        .out = out,
        .out_len = strlen(out),
        .err = errtext,
        .err_len = strlen(errtext),
        .outputs = outputs,
        .started_at = 1700000001000000000LL,
        .finished_at = 1700000002000000000LL,
    };
    json_t *env = NULL;

    ck_assert_msg(berth_result_create(f->key, &p, &env, &err) == 0, "%s", err.message);
    json_decref(outputs);
    return env;
}

START_TEST(result_round_trip)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    const json_t *body = NULL;
    json_t *receipt, *result;
    char rd[BERTH_DIGEST_BUFSZ];

    setup(&f);
    receipt = make_receipt(&f, NULL);
    result = make_result(&f, receipt, "hello\n", "");
    ck_assert_msg(berth_result_verify(result, berth_signing_key_public(f.key), f.job, receipt, &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "exited");
    ck_assert_int_eq(json_integer_value(json_object_get(body, "exit_code")), 3);
    ck_assert_str_eq(json_string_value(json_object_get(body, "stdout")), "aGVsbG8K"); /* base64url("hello\n") */
    ck_assert_str_eq(json_string_value(json_object_get(body, "stderr")), "");
    ck_assert(json_is_null(json_object_get(body, "reason")));
    ck_assert(json_is_null(json_object_get(body, "output_error")));
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(body, "outputs"), 0), "media_type")),
                     "text/plain");
    ck_assert_int_eq(berth_digest_json(receipt, rd, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(body, "receipt_digest")), rd);
    json_decref(result);
    json_decref(receipt);
    teardown(&f);
}
END_TEST

START_TEST(result_refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    json_t *receipt, *receipt2, *result, *copy;
    struct berth_result_params p = {0};
    char *big;

    setup(&f);
    receipt = make_receipt(&f, NULL);
    receipt2 = make_receipt(&f, "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
    result = make_result(&f, receipt, "out", "err");
    /* Bound to its own receipt. */
    ck_assert_int_eq(berth_result_verify(result, berth_signing_key_public(f.key), f.job, receipt2, NULL, &err),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "receipt_digest"));
    /* A status from outside the set, re-signed would still fail shape; tampering fails the signature. */
    copy = json_deep_copy(result);
    json_object_set_new(json_object_get(copy, "result"), "status", json_string("exited-ok"));
    ck_assert_int_eq(berth_result_verify(copy, berth_signing_key_public(f.key), f.job, receipt, NULL, &err), -EBADMSG);
    json_decref(copy);
    /* More output than the job allows is refused at creation. */
    big = malloc((size_t)f.job->limits.output_bytes + 1);
    memset(big, 'x', (size_t)f.job->limits.output_bytes + 1);
    p.broker = "host-1";
    p.job = f.job;
    p.receipt = receipt;
    p.status = BERTH_RESULT_FAILED;
    p.out = big;
    p.out_len = (size_t)f.job->limits.output_bytes + 1;
    p.finished_at = 1;
    p.started_at = -1;
    copy = NULL;
    ck_assert_int_eq(berth_result_create(f.key, &p, &copy, &err), -EFBIG);
    ck_assert_ptr_null(copy);
    /* Exactly the limit is fine, and a never-started job has started_at null. */
    p.out_len = (size_t)f.job->limits.output_bytes;
    ck_assert_int_eq(berth_result_create(f.key, &p, &copy, &err), 0);
    ck_assert(json_is_null(json_object_get(json_object_get(copy, "result"), "started_at")));
    ck_assert_int_eq(berth_result_verify(copy, berth_signing_key_public(f.key), f.job, receipt, NULL, &err), 0);
    json_decref(copy);
    free(big);
    json_decref(result);
    json_decref(receipt);
    json_decref(receipt2);
    teardown(&f);
}
END_TEST

/* Re-sign @body (a result body, changed by the caller) and verify it against @f's job. */
static int resign_verify(const struct fixture *f, json_t *body, const json_t *receipt, struct berth_error *err)
{
    json_t *env = NULL;
    int r;

    ck_assert_int_eq(berth_envelope_seal(f->key, "result", body, &env, err), 0);
    r = berth_result_verify(env, berth_signing_key_public(f->key), f->job, receipt, NULL, err);
    json_decref(env);
    return r;
}

/* A warm start: the result carries the slot, and its shape is checked. */
START_TEST(result_warm)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    json_t *receipt, *result, *body, *warm;
    const json_t *got = NULL;
    struct berth_result_params p = {0};

    setup(&f);
    receipt = make_receipt(&f, NULL);
    warm = json_pack("{s:s, s:s, s:s}", "slot_id", "s0123456789abcdef0123456789abcdef", "slot_hash",
                     "1111111111111111111111111111111111111111111111111111111111111111", "provision_ns", "195000000");
    p = (struct berth_result_params){.broker = "host-1", .job = f.job, .receipt = receipt,
                                     .status = BERTH_RESULT_EXITED, .started_at = 1, .finished_at = 2, .warm = warm};
    ck_assert_msg(berth_result_create(f.key, &p, &result, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_result_verify(result, berth_signing_key_public(f.key), f.job, receipt, &got, &err), 0);
    ck_assert(json_equal(json_object_get(got, "warm"), warm));
    body = json_deep_copy(json_object_get(result, "result"));
    json_decref(result);
    /* A slot id that is not one, an unknown member, a missing time: refused. */
    json_object_set_new(json_object_get(body, "warm"), "slot_id", json_string("../x"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "malformed slot id"));
    json_object_set_new(json_object_get(body, "warm"), "slot_id", json_string("s0123456789abcdef0123456789abcdef"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), 0);
    json_object_set_new(json_object_get(body, "warm"), "reused", json_true());
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_del(json_object_get(body, "warm"), "reused");
    json_object_del(json_object_get(body, "warm"), "provision_ns");
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    /* create refuses a malformed one too. */
    json_object_set_new(warm, "slot_hash", json_string("short"));
    ck_assert_int_eq(berth_result_create(f.key, &p, &result, &err), -EINVAL);
    json_decref(body);
    json_decref(warm);
    json_decref(receipt);
    teardown(&f);
}
END_TEST

START_TEST(result_outputs)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct fixture f;
    json_t *receipt, *result, *body, *out0, *oe;
    struct berth_result_params p = {0};

    setup(&f);
    receipt = make_receipt(&f, NULL);
    result = make_result(&f, receipt, "", "");
    body = json_deep_copy(json_object_get(result, "result"));
    out0 = json_array_get(json_object_get(body, "outputs"), 0);
    /* The signed body as made verifies once re-signed: the checks below are the outputs'. */
    ck_assert_msg(resign_verify(&f, body, receipt, &err) == 0, "%s", err.message);
    /* An output the job does not declare. */
    json_object_set_new(out0, "id", json_string("other"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "declares no output other"));
    json_object_set_new(out0, "id", json_string("summary"));
    /* Another media type than the declared one. */
    json_object_set_new(out0, "media_type", json_string("application/json"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "media type"));
    json_object_set_new(out0, "media_type", json_string("text/plain"));
    /* Over its max_bytes (4096). */
    json_object_set_new(out0, "size", json_integer(4097));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "max_bytes"));
    json_object_set_new(out0, "size", json_integer(5));
    /* Listed twice. */
    json_array_append(json_object_get(body, "outputs"), out0);
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "repeats"));
    json_array_remove(json_object_get(body, "outputs"), 1);
    /* An unknown member of an entry. */
    json_object_set_new(out0, "path", json_string("/tmp/outputs/summary.txt"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_del(out0, "path");
    /* An output_error with an output listed, or on an exited result. */
    json_object_set_new(body, "output_error", json_pack("{s:s, s:s}", "id", "summary", "problem", "symlink"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_array_clear(json_object_get(body, "outputs"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_set_new(body, "status", json_string("failed"));
    json_object_set_new(body, "reason", json_string("output_invalid"));
    ck_assert_msg(resign_verify(&f, body, receipt, &err) == 0, "%s", err.message);
    /* A problem outside the set, an undeclared id, an extra member. */
    oe = json_object_get(body, "output_error");
    json_object_set_new(oe, "problem", json_string("cosmic_rays"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_set_new(oe, "problem", json_string("digest_mismatch"));
    json_object_set_new(oe, "id", json_string("nope"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_set_new(oe, "id", json_string("summary"));
    json_object_set_new(oe, "detail", json_string("x"));
    ck_assert_int_eq(resign_verify(&f, body, receipt, &err), -EBADMSG);
    json_object_del(oe, "detail");
    /* A result signed before outputs existed has no output_error: null. */
    json_object_del(body, "output_error");
    ck_assert_msg(resign_verify(&f, body, receipt, &err) == 0, "%s", err.message);
    /* Creation refuses an output_error with a status other than failed, or with outputs. */
    p.broker = "host-1";
    p.job = f.job;
    p.receipt = receipt;
    p.status = BERTH_RESULT_EXITED;
    p.finished_at = 1;
    p.started_at = -1;
    {
        json_t *env = NULL, *e = json_pack("{s:s, s:s}", "id", "summary", "problem", "missing");
        p.output_error = e;
        ck_assert_int_eq(berth_result_create(f.key, &p, &env, &err), -EINVAL);
        p.status = BERTH_RESULT_FAILED;
        p.reason = "output_invalid";
        ck_assert_int_eq(berth_result_create(f.key, &p, &env, &err), 0);
        ck_assert(json_equal(json_object_get(json_object_get(env, "result"), "output_error"), e));
        ck_assert_int_eq(berth_result_verify(env, berth_signing_key_public(f.key), f.job, receipt, NULL, &err), 0);
        json_decref(env);
        json_decref(e);
    }
    json_decref(body);
    json_decref(result);
    json_decref(receipt);
    teardown(&f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("receipt");
    TCase *tc = test_case(s, "receipt");

    tcase_add_test(tc, receipt_round_trip);
    tcase_add_test(tc, result_warm);
    tcase_add_test(tc, receipt_refusals);
    tcase_add_test(tc, receipt_bad_arguments);
    tcase_add_test(tc, result_round_trip);
    tcase_add_test(tc, result_refusals);
    tcase_add_test(tc, result_outputs);
    return s;
}

TEST_MAIN()
