/* SPDX-License-Identifier: MIT */
/* test-job.c -- sealed job documents (job.h). */
#include "testutil.h"

#include "canon.h"
#include "digest.h"
#include "job.h"
#include "jobtest.h"
#include "macro.h"

static struct berth_job *parse_ok(const char *doc)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job *job = NULL;

    ck_assert_msg(berth_job_parse(doc, strlen(doc), &job, &err) == 0, "%s", err.message);
    return job;
}

START_TEST(sample)
{
    struct berth_job *job = parse_ok(SAMPLE_JOB);
    _cleanup_free_ char *canon = NULL;
    char d[BERTH_DIGEST_BUFSZ];

    ck_assert_str_eq(job->id, "job-1");
    ck_assert_str_eq(job->pool, "sample");
    ck_assert_str_eq(job->image, SAMPLE_IMAGE);
    ck_assert_ptr_null(job->overrides);
    ck_assert_int_eq(job->limits.wall_time_ns, 60000000000LL);
    ck_assert_int_eq(job->limits.output_bytes, 65536);
    ck_assert_int_eq(berth_json_canonicalize(SAMPLE_JOB, strlen(SAMPLE_JOB), 1 << 20, &canon, NULL, NULL), 0);
    ck_assert_int_eq(berth_digest_bytes(canon, strlen(canon), d), 0);
    ck_assert_str_eq(job->digest, d); /* the digest of the canonical form */
    berth_job_free(job);
}
END_TEST

/* Replace @from by @to in the sample and expect a refusal naming @needle. */
static void refused(const char *from, const char *to, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job *job = NULL;
    char doc[8192];
    const char *at = strstr(SAMPLE_JOB, from);

    ck_assert_msg(at, "sample lacks %s", from);
    snprintf(doc, sizeof(doc), "%.*s%s%s", (int)(at - SAMPLE_JOB), SAMPLE_JOB, to, at + strlen(from));
    ck_assert_msg(berth_job_parse(doc, strlen(doc), &job, &err) == -EBADMSG, "accepted: %s", doc);
    ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
    ck_assert_ptr_null(job);
}

START_TEST(refusals)
{
    refused("\"schema_version\":1", "\"schema_version\":2", "job.schema_version must be 1");
    refused("\"schema_version\":1,", "\"schema_version\":1,\"privileged\":true,", "job: unknown member \"privileged\"");
    refused("\"id\":\"job-1\"", "\"id\":\"job/1\"", "job.id must be 1 to 128");
    refused("\"id\":\"job-1\",", "", "job.id is missing");
    /* job.pool follows the pool name rule; it used to follow the job id
     * rule, which lets upper case and 64 to 128 bytes through. */
    refused("\"pool\":\"sample\"", "\"pool\":\"Sample\"",
            "job.pool must name a pool (1 to 63 of [a-z0-9._-], starting with a letter or digit)");
    refused("\"pool\":\"sample\"", "\"pool\":\"_sample\"", "job.pool must name a pool");
    refused("\"image\":\"" SAMPLE_IMAGE "\"", "\"image\":\"busybox:latest\"",
            "job.image must be an OCI manifest digest");
    refused("[\"/bin/echo\",\"hello\"]", "[]", "job.argv must list 1 to 256 strings");
    refused("[\"/bin/echo\",\"hello\"]", "[\"\"]", "job.argv[0] must not be empty");
    refused("[\"/bin/echo\",\"hello\"]", "[\"/bin/echo\",7]", "job.argv[1] must be a string");
    refused("\"/inputs/data.csv\"", "\"/etc/passwd\"", "job.inputs[0].path must be a path under /inputs/");
    refused("\"/inputs/data.csv\"", "\"/inputs/../etc/passwd\"", "must be a path under /inputs/");
    refused("\"/inputs/data.csv\"", "\"/inputs/\"", "must be a path under /inputs/");
    refused("\"size\":12", "\"size\":-1", "job.inputs[0].ref.size is -1");
    refused("\"digest\":\"sha256:0123", "\"digest\":\"md5:0123", "job.inputs[0].ref.digest must be sha256");
    refused("\"/tmp/outputs/summary.txt\"", "\"/workspace/summary.txt\"", "must be a path under /tmp/outputs/");
    refused("\"media_type\":\"text/plain\"", "\"media_type\":\"plain\"", "media_type must be a media type");
    refused("\"max_bytes\":4096", "\"max_bytes\":2000000", "max_bytes is more than limits.artifact_bytes");
    refused("\"wall_time_ns\":60000000000", "\"wall_time_ns\":0", "job.limits.wall_time_ns is 0, outside");
    refused("\"output_bytes\":65536", "\"output_bytes\":2000000", "job.limits.output_bytes is 2000000");
    refused("\"pids\":64,", "", "job.limits.pids is missing");
    refused("\"pool\":\"sample\",", "\"pool\":\"sample\",\"overrides\":[],", "job.overrides must be an object");
    refused("\"pool\":\"sample\",", "\"pool\":\"sample\",\"network\":\"open\",", "unknown member \"network\"");
}
END_TEST

START_TEST(lists)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job *job = NULL;
    char doc[16384], outputs[8192];
    size_t n = 0;
    int i;

    /* 17 outputs: one too many. */
    n = (size_t)snprintf(outputs, sizeof(outputs), "[");
    for (i = 0; i < 17; i++)
        n += (size_t)snprintf(outputs + n, sizeof(outputs) - n,
                              "%s{\"id\":\"o%d\",\"path\":\"/tmp/outputs/o%d\",\"media_type\":\"text/plain\","
                              "\"max_bytes\":1}",
                              i ? "," : "", i, i);
    snprintf(outputs + n, sizeof(outputs) - n, "]");
    snprintf(doc, sizeof(doc),
             "{\"schema_version\":1,\"id\":\"j\",\"pool\":\"p\",\"image\":\"" SAMPLE_IMAGE "\",\"argv\":[\"x\"],"
             "\"outputs\":%s,\"limits\":" SAMPLE_LIMITS "}",
             outputs);
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "job.outputs must be an array of at most 16 outputs"));
    /* A repeated output id. */
    snprintf(
        doc, sizeof(doc),
        "{\"schema_version\":1,\"id\":\"j\",\"pool\":\"p\",\"image\":\"" SAMPLE_IMAGE "\",\"argv\":[\"x\"],"
        "\"outputs\":[{\"id\":\"a\",\"path\":\"/tmp/outputs/a\",\"media_type\":\"t/p\",\"max_bytes\":1},"
        "{\"id\":\"a\",\"path\":\"/tmp/outputs/b\",\"media_type\":\"t/p\",\"max_bytes\":1}],\"limits\":" SAMPLE_LIMITS
        "}");
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "repeats the id or path of job.outputs[0]"));
    /* Too big a document. */
    {
        char *big = malloc(BERTH_JOB_MAX + 2);
        memset(big, ' ', BERTH_JOB_MAX + 1);
        big[0] = '{';
        big[BERTH_JOB_MAX] = '}';
        ck_assert_int_eq(berth_job_parse(big, BERTH_JOB_MAX + 1, &job, &err), -EFBIG);
        free(big);
    }
}
END_TEST

START_TEST(limits_ceiling)
{
    struct berth_job *job = parse_ok(SAMPLE_JOB);
    struct berth_limits ceiling = job->limits;
    const char *name = NULL;

    ck_assert(berth_limits_within(&job->limits, &ceiling, &name));
    ceiling.pids = 63;
    ck_assert(!berth_limits_within(&job->limits, &ceiling, &name));
    ck_assert_str_eq(name, "pids");
    berth_job_free(job);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("job");
    TCase *tc = test_case(s, "job");

    tcase_add_test(tc, sample);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, lists);
    tcase_add_test(tc, limits_ceiling);
    return s;
}

TEST_MAIN()
