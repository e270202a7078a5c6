/* SPDX-License-Identifier: MIT */
/*
 * test-broker.c -- the broker end to end below HTTP (broker.h): a real
 * journal file, a real policy file, real signatures, and the scripted
 * runtime plugin loaded through the real plugin loader.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>

#include "broker.h"
#include "host-table.h"
#include "jobtest.h"
#include "jsonobj.h"
#include "macro.h"
#include "loader.h"
#include "pooltest.h"
#include "qualification.h"
#include "receipt.h"
#include "scripttest.h"

#define FP_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define FP_X "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

#define FAR_FUTURE "4102444800000000000"

#define SUBJECT(principal, fp, pools, admin)                                                                           \
    "{\"principal\":\"" principal "\",\"scope\":[\"team\"],\"fingerprints\":[\"" fp "\"],\"pools\":" pools ","         \
    "\"images\":[\"" SAMPLE_IMAGE "\"],\"limits\":" SAMPLE_LIMITS ",\"not_before\":\"0\",\"not_after\":\"" FAR_FUTURE  \
    "\",\"admin\":" admin "}"

#define POLICY_AB                                                                                                      \
    "{\"schema_version\":1,\"not_before\":\"0\",\"not_after\":\"" FAR_FUTURE "\",\"subjects\":[" SUBJECT(              \
        "alice", FP_A, "[\"sample\"]", "true") "," SUBJECT("bob", FP_B, "[\"other\"]", "false") "]}"

#define POLICY_B_ONLY                                                                                                  \
    "{\"schema_version\":1,\"not_before\":\"0\",\"not_after\":\"" FAR_FUTURE                                           \
    "\",\"subjects\":[" SUBJECT("bob", FP_B, "[\"other\"]", "false") "]}"

#define SCRIPT_POOL                                                                                                    \
    "{\"schema_version\":1,\"name\":\"sample\",\"backend_allowlist\":[\"script\"],"                                    \
    "\"template\":{\"env\":{},\"timeout_seconds\":600},\"exposed_fields\":[],"                                         \
    "\"capability_ceiling\":[\"exec\",\"file_rw\"],\"network_egress_class\":\"none\","                                 \
    "\"credential_env_allowlist\":[]}"

static char *dir, *state_dir, *policy_path;
static struct berth_journal *journal;
static struct berth_signing_key *key;
static struct berth_audit_key audit_key;
static struct berth_policy_source *policy;
static struct berth_host_instance host;
static struct berth_plugin_handle *plugin;
static struct berth_broker *broker;
static int64_t max_active = 16, max_retained = 100;
static bool require_qualification;
static const char *script_config = ""; /* more members of the scripted runtime's configuration */
static int wakes;
static int retry_lines, recovery_lines; /* log lines of per-job backend call retries (broker-retry.c) */

/* Broker log lines go to the test's stderr (the .log file under make check). */
static void log_sink(void *userdata, int level, const char *line)
{
    (void)userdata, (void)level;
    fprintf(stderr, "broker: %s\n", line);
    if (strstr(line, "will retry with backoff"))
        retry_lines++;
    if (strstr(line, "works again"))
        recovery_lines++;
}

static const struct berth_logger logger = {.sink = log_sink, .max_level = BERTH_LOG_DEBUG};

static void wake(void *userdata)
{
    (void)userdata;
    wakes++;
}

static void write_policy(const char *text)
{
    char *tmp = test_path(dir, "policy.tmp");
    test_write_file(tmp, text, strlen(text), 0600);
    ck_assert_int_eq(rename(tmp, policy_path), 0);
    free(tmp);
}

/* A new broker, before its startup reconcile: admission is closed. */
static void open_broker_starting(void)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_plugin_info *info = berth_plugin_get_info(plugin);
    const struct berth_broker_backend be = {
        .name = "script",
        .plugin = info->name,
        .plugin_version = info->version,
        .ops = berth_plugin_runtime_ops(plugin),
        .state = berth_plugin_state(plugin),
        .require_qualification = require_qualification,
    };
    const struct berth_broker_params p = {
        .name = "test-broker",
        .journal = journal,
        .key = key,
        .audit_key = &audit_key,
        .policy = policy,
        .backends = &be,
        .n_backends = 1,
        .max_active = max_active,
        .max_retained = max_retained,
        .wake = wake,
        .logger = &logger,
    };

    ck_assert_msg(berth_broker_new(&p, &broker, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_broker_refresh_backends(broker), 0);
}

/* A new broker after its startup reconcile (one round of pages). */
static void open_broker(void)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {.more = true};

    open_broker_starting();
    while (st.more)
        ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert(berth_broker_admitting(broker));
}

static void load_plugin(void)
{
    char config[512];

    snprintf(config, sizeof(config), "{\"state_directory\":\"%s\"%s}", state_dir, script_config);
    plugin = test_load_script(&host, config);
}

static void setup(void)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply reply = {0};

    retry_lines = recovery_lines = 0;

    dir = test_private_dir();
    state_dir = test_path(dir, "script");
    ck_assert_int_eq(mkdir(state_dir, 0700), 0);
    policy_path = test_path(dir, "policy.json");
    write_policy(POLICY_AB);
    journal = test_journal_open(dir);
    ck_assert_int_eq(berth_signing_key_generate(&key, &err), 0);
    test_audit_key(&audit_key, 7);
    ck_assert_int_eq(berth_policy_source_new(policy_path, &policy), 0);
    load_plugin();
    open_broker();
    berth_broker_pool_register(broker, FP_A, SCRIPT_POOL, strlen(SCRIPT_POOL), &reply);
    ck_assert_msg(reply.status == 201, "%d %s", reply.status, reply.message);
    berth_reply_clear(&reply);
    wakes = 0;
}

static void teardown(void)
{
    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    berth_policy_source_free(policy);
    berth_signing_key_free(key);
    berth_journal_close(journal);
    test_rm_rf(dir);
    free(policy_path);
    free(state_dir);
    free(dir);
    max_active = 16;
    max_retained = 100;
    require_qualification = false;
    script_config = "";
}

/* A job @id in pool "sample" running @argv (a JSON array). */
static char *job_doc(const char *id, const char *argv, long long wall_ns)
{
    char *doc = NULL;

    ck_assert_int_gt(asprintf(&doc,
                              "{\"schema_version\":1,\"id\":\"%s\",\"pool\":\"sample\",\"image\":\"" SAMPLE_IMAGE
                              "\",\"argv\":%s,\"limits\":{\"cpu_millis\":1000,\"memory_bytes\":268435456,"
                              "\"pids\":64,\"scratch_bytes\":67108864,\"wall_time_ns\":%lld,\"output_bytes\":1024,"
                              "\"artifact_bytes\":1048576}}",
                              id, argv, wall_ns),
                     0);
    return doc;
}

static struct berth_reply submit(const char *fp, const char *doc)
{
    struct berth_submission s = {.fingerprint = fp, .body = doc, .len = strlen(doc)};

    ck_assert_int_eq(berth_broker_submit_batch(broker, &s, 1), 0);
    return s.reply;
}

static void expect_status(struct berth_reply *r, int status, const char *error)
{
    ck_assert_msg(r->status == status, "status %d, wanted %d (%s: %s)", r->status, status, r->error ? r->error : "-",
                  r->message);
    if (error)
        ck_assert_str_eq(r->error, error);
    else
        ck_assert_ptr_null(r->error);
}

static void passes(void)
{
    struct berth_error err = BERTH_ERROR_INIT;

    ck_assert_msg(berth_broker_dispatch(broker, NULL, &err) == 0, "%s", err.message);
    ck_assert_msg(berth_broker_reconcile(broker, NULL, &err) == 0, "%s", err.message);
}

/* How many lines of the plugin's calls.log equal @line. */
static int calls(const char *line)
{
    char *path = test_path(state_dir, "calls.log"), buf[65536], *p, *save = NULL;
    int n = 0;

    if (access(path, F_OK) == 0) {
        test_read_file(path, buf, sizeof(buf));
        for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
            n += streq(p, line);
    }
    free(path);
    return n;
}

static const char *run_id_of(const json_t *receipt_env)
{
    return json_string_value(json_object_get(json_object_get(receipt_env, "receipt"), "run_id"));
}

START_TEST(submit_run_collect)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("j1", "[\"echo\",\"hi\",\"there\"]", 60000000000LL);
    _cleanup_free_ char *other = job_doc("j1", "[\"echo\",\"bye\"]", 60000000000LL);
    struct berth_job *job = NULL;
    struct berth_reply r, again, res = {0}, ins = {0};
    const json_t *body = NULL;
    char line[128];
    int64_t accepted = 0, deadline = 0;

    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    ck_assert_int_eq(wakes, 1);
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), 0);
    ck_assert_msg(berth_receipt_verify(r.body, berth_signing_key_public(key), job, &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "principal")), "alice");
    ck_assert_str_eq(json_string_value(json_object_get(body, "backend")), "script");
    ck_assert_str_eq(json_string_value(json_object_get(body, "pool")), "sample");
    ck_assert_int_eq(berth_json_ns_value(json_object_get(body, "accepted_at"), &accepted), 0);
    ck_assert_int_eq(berth_json_ns_value(json_object_get(body, "deadline"), &deadline), 0);
    ck_assert_int_eq(deadline - accepted, 60000000000LL); /* min(60 s wall, 600 s pool, 60 s grant) */
    /* Nothing ran yet: the receipt was recorded first. */
    snprintf(line, sizeof(line), "start %s new", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 0);

    /* Identical retry: the same receipt, byte for byte. */
    again = submit(FP_A, doc);
    expect_status(&again, 200, NULL);
    ck_assert(json_equal(again.body, r.body));
    berth_reply_clear(&again);
    /* Same id, different document: conflict, nothing recorded. */
    again = submit(FP_A, other);
    expect_status(&again, 409, "conflict");
    berth_reply_clear(&again);

    berth_broker_result(broker, FP_A, "j1", &res);
    expect_status(&res, 202, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(res.body, "state")), "accepted");
    berth_reply_clear(&res);

    passes();
    ck_assert_int_eq(calls(line), 1);
    berth_broker_inspect(broker, FP_A, "j1", &ins);
    expect_status(&ins, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(ins.body, "state")), "exited");
    ck_assert(json_equal(json_object_get(ins.body, "receipt"), r.body));
    berth_reply_clear(&ins);
    berth_broker_result(broker, FP_A, "j1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_msg(berth_result_verify(res.body, berth_signing_key_public(key), job, r.body, &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "exited");
    ck_assert_int_eq(json_integer_value(json_object_get(body, "exit_code")), 0);
    ck_assert_str_eq(json_string_value(json_object_get(body, "stdout")), "aGkgdGhlcmUK"); /* "hi there\n" */
    berth_reply_clear(&res);
    /* More passes never start it again. */
    passes();
    passes();
    ck_assert_int_eq(calls(line), 1);
    snprintf(line, sizeof(line), "start %s again", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 0);
    /* Another principal cannot see it. */
    berth_broker_inspect(broker, FP_B, "j1", &ins);
    expect_status(&ins, 404, "not_found");
    berth_reply_clear(&ins);
    berth_job_free(job);
    berth_reply_clear(&r);
}
END_TEST

START_TEST(batch_outcomes)
{
    _cleanup_free_ char *a = job_doc("a", "[\"echo\"]", 1000000000LL), *b = job_doc("b", "[\"echo\"]", 1000000000LL),
                        *toolong = job_doc("c", "[\"echo\"]", 120000000000LL);
    char *big = malloc(BERTH_JOB_MAX + 10);
    struct berth_submission v[7] = {
        {.fingerprint = FP_A, .body = a},
        {.fingerprint = FP_A, .body = a}, /* the same job twice in one batch */
        {.fingerprint = FP_A, .body = "{\"schema_version\":1"},
        {.fingerprint = FP_X, .body = b},       /* nobody */
        {.fingerprint = FP_B, .body = b},       /* bob may not use pool sample */
        {.fingerprint = FP_A, .body = toolong}, /* above the grant's wall time */
        {.fingerprint = FP_A, .body = big},
    };
    int64_t counts[BERTH_JOB_STATE_COUNT];
    size_t i;

    memset(big, ' ', BERTH_JOB_MAX + 10);
    for (i = 0; i < 6; i++)
        v[i].len = strlen(v[i].body);
    v[6].len = BERTH_JOB_MAX + 10;
    ck_assert_int_eq(berth_broker_submit_batch(broker, v, 7), 0);
    expect_status(&v[0].reply, 201, NULL);
    expect_status(&v[1].reply, 200, NULL);
    ck_assert(json_equal(v[0].reply.body, v[1].reply.body));
    expect_status(&v[2].reply, 400, "malformed");
    expect_status(&v[3].reply, 403, "denied");
    ck_assert_str_eq(v[3].reply.message, "the client certificate is not in the host policy");
    expect_status(&v[4].reply, 403, "denied");
    ck_assert_str_eq(v[4].reply.message, "pool sample is not granted to bob");
    expect_status(&v[5].reply, 403, "denied");
    ck_assert_str_eq(v[5].reply.message, "limits.wall_time_ns is above the grant's ceiling");
    expect_status(&v[6].reply, 413, "too_large");
    ck_assert_int_eq(berth_broker_job_counts(broker, counts, NULL), 0);
    ck_assert_int_eq(counts[BERTH_JOB_ACCEPTED], 1);
    for (i = 0; i < 7; i++)
        berth_reply_clear(&v[i].reply);
    free(big);
}
END_TEST

static void submit_expect(const char *id, int status, const char *error)
{
    _cleanup_free_ char *doc = job_doc(id, "[\"echo\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc);

    expect_status(&r, status, error);
    berth_reply_clear(&r);
}

START_TEST(admission)
{
    berth_broker_free(broker);
    max_active = 2;
    max_retained = 3;
    open_broker();
    submit_expect("n0", 201, NULL);
    submit_expect("n1", 201, NULL);
    submit_expect("n2", 503, "busy"); /* two active of two */
    passes();                         /* n0 and n1 finish */
    submit_expect("n2", 201, NULL);
    submit_expect("n3", 503, "full"); /* three retained of three; nothing is deleted */
    submit_expect("n0", 200, NULL);   /* an identical retry still gets its receipt */
}
END_TEST

START_TEST(cancel_before_start)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("c1", "[\"sleep\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), c = {0}, res = {0};
    const json_t *body;
    struct berth_job *job = NULL;
    char line[128];

    expect_status(&r, 201, NULL);
    berth_broker_cancel(broker, FP_A, "c1", &c);
    expect_status(&c, 202, NULL);
    ck_assert(json_is_true(json_object_get(c.body, "cancel_requested")));
    ck_assert_int_eq(wakes, 2);
    berth_reply_clear(&c);
    /* Reconcile alone settles it; dispatch never starts it. */
    ck_assert_int_eq(berth_broker_reconcile(broker, NULL, &err), 0);
    ck_assert_int_eq(berth_broker_dispatch(broker, NULL, &err), 0);
    snprintf(line, sizeof(line), "start %s new", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 0);
    berth_broker_result(broker, FP_A, "c1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), 0);
    ck_assert_int_eq(berth_result_verify(res.body, berth_signing_key_public(key), job, r.body, &body, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "cancelled");
    ck_assert(json_is_null(json_object_get(body, "started_at")));
    berth_job_free(job);
    berth_reply_clear(&res);
    berth_reply_clear(&r);
}
END_TEST

START_TEST(cancel_running)
{
    _cleanup_free_ char *doc = job_doc("c2", "[\"sleep\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), c = {0}, res = {0}, ins = {0};
    char line[128];

    expect_status(&r, 201, NULL);
    passes();
    berth_broker_inspect(broker, FP_A, "c2", &ins);
    ck_assert_str_eq(json_string_value(json_object_get(ins.body, "state")), "running");
    berth_reply_clear(&ins);
    berth_broker_result(broker, FP_A, "c2", &res);
    expect_status(&res, 202, NULL);
    berth_reply_clear(&res);
    berth_broker_cancel(broker, FP_A, "c2", &c);
    expect_status(&c, 202, NULL);
    berth_reply_clear(&c);
    passes();
    snprintf(line, sizeof(line), "cancel %s", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 1);
    berth_broker_result(broker, FP_A, "c2", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "status")), "cancelled");
    berth_reply_clear(&res);
    /* Cancelling a finished job changes nothing. */
    berth_broker_cancel(broker, FP_A, "c2", &c);
    expect_status(&c, 202, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(c.body, "state")), "cancelled");
    berth_reply_clear(&c);
    berth_reply_clear(&r);
}
END_TEST

/* Proof of teardown (plugin.h, cancel): a finished job whose backend cannot
 * prove its teardown stays reaping with no result, and is asked again with
 * back-off; once released it gets its own outcome. */
START_TEST(unproven_teardown)
{
    _cleanup_free_ char *doc = job_doc("t1", "[\"leftover\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), res = {0}, ins = {0};
    char line[128], *released = NULL;
    int fd;

    expect_status(&r, 201, NULL);
    passes();
    passes();
    berth_broker_inspect(broker, FP_A, "t1", &ins);
    ck_assert_str_eq(json_string_value(json_object_get(ins.body, "state")), "reaping");
    berth_reply_clear(&ins);
    berth_broker_result(broker, FP_A, "t1", &res);
    expect_status(&res, 202, NULL);
    berth_reply_clear(&res);
    /* Back-off: the second pass right after the first did not ask again. */
    snprintf(line, sizeof(line), "cancel %s", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 1);
    ck_assert_int_gt(asprintf(&released, "%s/%s.released", state_dir, run_id_of(r.body)), 0);
    fd = open(released, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    close(fd);
    free(released);
    usleep(1100000); /* the first back-off step (1 s) */
    passes();
    ck_assert_int_eq(calls(line), 2);
    berth_broker_result(broker, FP_A, "t1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "status")), "exited");
    berth_reply_clear(&res);
    berth_reply_clear(&r);
}
END_TEST

START_TEST(deadline)
{
    /* d1 has 500 ms: ample for the first pass to start it even in a
     * sanitizer build on a loaded machine (checked below, so that the test
     * cannot pass by accident); d2 has 20 ms and no pass runs before it is
     * past its deadline. */
    _cleanup_free_ char *doc = job_doc("d1", "[\"sleep\"]", 500000000LL);
    _cleanup_free_ char *late = job_doc("d2", "[\"sleep\"]", 20000000LL);
    struct berth_reply r = submit(FP_A, doc), r2, res = {0}, ins = {0};
    struct timespec ts = {0, 600000000};

    expect_status(&r, 201, NULL);
    passes(); /* started */
    berth_broker_inspect(broker, FP_A, "d1", &ins);
    expect_status(&ins, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(ins.body, "state")), "running");
    berth_reply_clear(&ins);
    r2 = submit(FP_A, late);
    expect_status(&r2, 201, NULL);
    nanosleep(&ts, NULL);
    passes(); /* d1 past its deadline while running; d2 past it before starting */
    berth_broker_result(broker, FP_A, "d1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "status")), "expired");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "reason")), "deadline");
    berth_reply_clear(&res);
    berth_broker_result(broker, FP_A, "d2", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "reason")),
                     "deadline_before_start");
    berth_reply_clear(&res);
    berth_reply_clear(&r);
    berth_reply_clear(&r2);
}
END_TEST

START_TEST(start_refused_and_flaky)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *refuse = job_doc("s1", "[\"refuse\"]", 60000000000LL);
    _cleanup_free_ char *flaky = job_doc("s2", "[\"flaky\"]", 60000000000LL);
    struct berth_reply a = submit(FP_A, refuse), b = submit(FP_A, flaky), res = {0}, ins = {0};
    struct berth_pass_stats st = {0};
    char line[128];

    expect_status(&a, 201, NULL);
    expect_status(&b, 201, NULL);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.failed, 1);
    ck_assert_int_eq(st.errors, 1);
    ck_assert_int_eq(st.started, 0);
    berth_broker_result(broker, FP_A, "s1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "reason")),
                     "start_refused");
    berth_reply_clear(&res);
    berth_broker_inspect(broker, FP_A, "s2", &ins);
    ck_assert_str_eq(json_string_value(json_object_get(ins.body, "state")), "claimed");
    berth_reply_clear(&ins);
    ck_assert_int_eq(retry_lines, 1);
    /* Reconcile leaves a claim the backend never saw to dispatch, which
     * retries after a backoff (250 ms first): not on the very next pass. */
    ck_assert_int_eq(berth_broker_reconcile(broker, NULL, &err), 0);
    memset(&st, 0, sizeof(st));
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.started, 0);
    snprintf(line, sizeof(line), "start %s new", run_id_of(b.body));
    ck_assert_int_eq(calls(line), 0);
    nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.started, 1);
    snprintf(line, sizeof(line), "start %s flaked", run_id_of(b.body));
    ck_assert_int_eq(calls(line), 1);
    snprintf(line, sizeof(line), "start %s new", run_id_of(b.body));
    ck_assert_int_eq(calls(line), 1);
    /* One line when it began failing, one when it worked again. */
    ck_assert_int_eq(retry_lines, 1);
    ck_assert_int_eq(recovery_lines, 1);
    berth_reply_clear(&a);
    berth_reply_clear(&b);
}
END_TEST

START_TEST(output_bound)
{
    _cleanup_free_ char *doc = job_doc("o1", "[\"spew\",\"5000\"]", 60000000000LL); /* output_bytes is 1024 */
    struct berth_reply r = submit(FP_A, doc), res = {0};
    const json_t *body;

    expect_status(&r, 201, NULL);
    passes();
    berth_broker_result(broker, FP_A, "o1", &res);
    expect_status(&res, 200, NULL);
    body = json_object_get(res.body, "result");
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(body, "reason")), "output_limit");
    ck_assert_str_eq(json_string_value(json_object_get(body, "stdout")), "");
    berth_reply_clear(&res);
    berth_reply_clear(&r);
}
END_TEST

START_TEST(grants_rechecked)
{
    _cleanup_free_ char *doc = job_doc("g1", "[\"echo\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), x = {0};

    expect_status(&r, 201, NULL);
    /* The fingerprint is removed: every operation on the job is refused, retries included. */
    write_policy(POLICY_B_ONLY);
    berth_broker_inspect(broker, FP_A, "g1", &x);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    berth_broker_result(broker, FP_A, "g1", &x);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    berth_broker_cancel(broker, FP_A, "g1", &x);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    x = submit(FP_A, doc);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    /* A missing policy denies everyone, and says nothing about where it lives. */
    ck_assert_int_eq(unlink(policy_path), 0);
    berth_broker_capabilities(broker, FP_B, &x);
    expect_status(&x, 403, "denied");
    ck_assert_ptr_null(strstr(x.message, dir));
    berth_reply_clear(&x);
    write_policy(POLICY_AB);
    berth_broker_inspect(broker, FP_A, "g1", &x);
    expect_status(&x, 200, NULL);
    berth_reply_clear(&x);
    berth_reply_clear(&r);
}
END_TEST

/* A broker killed between "claimed" and start(): the next one starts the job, once. */
START_TEST(restart)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("k1", "[\"echo\",\"x\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), res = {0};
    struct berth_job_record rec = {0};
    char line[128];

    expect_status(&r, 201, NULL);
    ck_assert_int_eq(berth_jobstore_find_run(journal, run_id_of(r.body), &rec, &err), 0);
    ck_assert_int_eq(berth_jobstore_transition(journal, rec.run_id, rec.revision, BERTH_JOB_CLAIMED, NULL, 1, &err), 0);
    berth_job_record_clear(&rec);
    /* "Crash": everything is closed and opened again. */
    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    berth_journal_close(journal);
    journal = test_journal_open(dir);
    load_plugin();
    open_broker();
    ck_assert_int_eq(berth_broker_reconcile(broker, NULL, &err), 0); /* startup: never starts */
    snprintf(line, sizeof(line), "start %s new", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 0);
    passes();
    passes();
    ck_assert_int_eq(calls(line), 1);
    berth_broker_result(broker, FP_A, "k1", &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "stdout")), "eAo");
    berth_reply_clear(&res);
    berth_reply_clear(&r);
}
END_TEST

START_TEST(pools_and_audit)
{
    struct berth_reply x = {0};

    berth_broker_pool_register(broker, FP_B, SCRIPT_POOL, strlen(SCRIPT_POOL), &x);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    berth_broker_pool_register(broker, FP_A, SCRIPT_POOL, strlen(SCRIPT_POOL), &x);
    expect_status(&x, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "outcome")), "unchanged");
    berth_reply_clear(&x);
    berth_broker_pool_register(broker, FP_A, "{\"name\":1}", 10, &x);
    expect_status(&x, 400, "malformed");
    berth_reply_clear(&x);
    berth_broker_pool_list(broker, FP_A, &x);
    expect_status(&x, 200, NULL);
    ck_assert_int_eq(json_array_size(json_object_get(x.body, "pools")), 1);
    berth_reply_clear(&x);
    berth_broker_pool_list(broker, FP_B, &x); /* bob is granted "other" only */
    ck_assert_int_eq(json_array_size(json_object_get(x.body, "pools")), 0);
    berth_reply_clear(&x);
    berth_broker_pool_show(broker, FP_B, "sample", &x);
    expect_status(&x, 404, "not_found");
    berth_reply_clear(&x);
    berth_broker_pool_show(broker, FP_A, "sample", &x);
    expect_status(&x, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "name")), "sample");
    berth_reply_clear(&x);
    berth_broker_audit(broker, FP_B, 0, 100, &x);
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);
    {
        _cleanup_free_ char *doc = job_doc("au", "[\"echo\"]", 60000000000LL);
        struct berth_reply r = submit(FP_A, doc);
        berth_reply_clear(&r);
    }
    berth_broker_audit(broker, FP_A, 0, 100, &x);
    expect_status(&x, 200, NULL);
    ck_assert_ptr_nonnull(strstr(x.text, "\"type\":\"pool.registered\""));
    ck_assert_ptr_nonnull(strstr(x.text, "\"type\":\"pool.placed\""));
    ck_assert_ptr_nonnull(strstr(x.text, "\"type\":\"job.accepted\""));
    berth_reply_clear(&x);
    berth_broker_audit(broker, FP_A, 1, 1, &x); /* one event after seq 1 */
    expect_status(&x, 200, NULL);
    ck_assert_ptr_nonnull(strstr(x.text, "\"seq\":2"));
    ck_assert_ptr_null(strchr(strchr(x.text, '\n') + 1, '\n'));
    berth_reply_clear(&x);
    berth_broker_capabilities(broker, FP_A, &x);
    expect_status(&x, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "key_id")), berth_signing_key_id(key));
    ck_assert_ptr_nonnull(json_object_get(json_object_get(x.body, "backends"), "script"));
    berth_reply_clear(&x);
}
END_TEST

/* A pool's max_concurrency holds further jobs back in "accepted" until a slot frees. */
START_TEST(pool_concurrency)
{
    static const char one_at_a_time[] =
        "{\"schema_version\":1,\"name\":\"sample\",\"backend_allowlist\":[\"script\"],"
        "\"template\":{\"env\":{},\"timeout_seconds\":600},\"exposed_fields\":[],\"max_concurrency\":1,"
        "\"capability_ceiling\":[\"exec\",\"file_rw\"],\"network_egress_class\":\"none\","
        "\"credential_env_allowlist\":[]}";
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *a = job_doc("q1", "[\"sleep\"]", 60000000000LL),
                        *b = job_doc("q2", "[\"sleep\"]", 60000000000LL);
    struct berth_reply x = {0}, ra, rb;
    struct berth_pass_stats st = {0};

    berth_broker_pool_register(broker, FP_A, one_at_a_time, strlen(one_at_a_time), &x);
    expect_status(&x, 201, NULL);
    berth_reply_clear(&x);
    ra = submit(FP_A, a);
    rb = submit(FP_A, b);
    expect_status(&ra, 201, NULL);
    expect_status(&rb, 201, NULL);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.started, 1);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.started, 1); /* still one: q2 waits */
    berth_broker_inspect(broker, FP_A, "q2", &x);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "state")), "accepted");
    berth_reply_clear(&x);
    berth_broker_cancel(broker, FP_A, "q1", &x);
    berth_reply_clear(&x);
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_int_eq(st.cancelled, 1);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_int_eq(st.started, 2);
    berth_broker_inspect(broker, FP_A, "q2", &x);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "state")), "running");
    berth_reply_clear(&x);
    berth_reply_clear(&ra);
    berth_reply_clear(&rb);
}
END_TEST

/* jansson's @fail_at-th allocation fails (counting from 0), the others do
 * not.  Allocations of json_loadb() are left alone: jansson's parser itself
 * does not survive a failed allocation (2.14 writes out of bounds), and what
 * is tested is berth's handling of a failure around it. */
static long allocs, fail_at = -1;
static bool in_loadb;

static void *failing_malloc(size_t n)
{
    if (in_loadb)
        return malloc(n);
    return allocs++ == fail_at ? NULL : malloc(n);
}

/* Preempts jansson's json_loadb() for libberth, which is linked into this
 * program: marks the allocations of a parse. */
json_t *json_loadb(const char *buffer, size_t buflen, size_t flags, json_error_t *error)
{
    json_t *(*real)(const char *, size_t, size_t, json_error_t *);
    json_t *v;

    *(void **)&real = dlsym(RTLD_NEXT, "json_loadb");
    ck_assert_ptr_nonnull(real);
    in_loadb = true;
    v = real(buffer, buflen, flags, error);
    in_loadb = false;
    return v;
}

/* The backend "script" is offered unqualified, and a job that needs a
 * qualified backend is not placed.  @n numbers the probe job. */
static void expect_unqualified(long n)
{
    struct berth_reply x = {0}, r;
    const json_t *q;
    char id[32];
    _cleanup_free_ char *doc = NULL;

    berth_broker_capabilities(broker, FP_A, &x);
    expect_status(&x, 200, NULL);
    q = json_object_get(json_object_get(json_object_get(x.body, "backends"), "script"), "qualification");
    ck_assert_msg(json_is_string(q) && streq(json_string_value(q), "unqualified"),
                  "the plugin's own qualification is offered (allocation %ld failed)", fail_at);
    berth_reply_clear(&x);
    snprintf(id, sizeof(id), "self-q-%ld", n);
    doc = job_doc(id, "[\"echo\"]", 60000000000LL);
    r = submit(FP_A, doc);
    ck_assert_msg(r.status == 503 && streq_ptr(r.error, "no_backend"),
                  "a job was placed on a self-qualified backend: %d %s (allocation %ld failed)", r.status,
                  r.error ? r.error : "-", fail_at);
    berth_reply_clear(&r);
}

/* A plugin never qualifies itself: whatever its capabilities() say about
 * qualification is replaced by berthd's own record (here: none), and when
 * memory runs out at any one of a refresh's allocations the claim is still
 * never offered to placement. */
START_TEST(self_qualification_ignored)
{
    long rounds = 0;

    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    require_qualification = true;
    script_config = ",\"qualification\":{\"id\":\"qfake\",\"expires_ns\":\"" FAR_FUTURE "\"}";
    load_plugin();
    open_broker();
    expect_unqualified(rounds++);
    for (fail_at = 0;; fail_at++) {
        int r;

        allocs = 0;
        json_set_alloc_funcs(failing_malloc, free);
        r = berth_broker_refresh_backends(broker);
        json_set_alloc_funcs(malloc, free);
        ck_assert_msg(r == 0 || r == -ENOMEM, "refresh: %d", r);
        expect_unqualified(rounds++);
        if (allocs <= fail_at)
            break; /* nothing failed: every allocation of a refresh has been failed once */
    }
    fail_at = -1;
    ck_assert_int_gt(rounds, 10);
}
END_TEST

/* ---- a full state filesystem: the journal on a real 2 MiB tmpfs (root) ---- */

/* setup(), then the journal moved onto the (emptied) tmpfs with a 256 KiB reserve. */
static void full_setup(void)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply reply = {0};
    _cleanup_free_ char *jdir = test_path(test_fs(), "state");

    setup();
    berth_broker_free(broker);
    berth_journal_close(journal);
    ck_assert_int_eq(mkdir(jdir, 0700), 0);
    journal = test_journal_open(jdir);
    ck_assert_msg(berth_journal_set_reserve(journal, 256 * 1024, &err) == 0, "%s", err.message);
    open_broker();
    berth_broker_pool_register(broker, FP_A, SCRIPT_POOL, strlen(SCRIPT_POOL), &reply);
    ck_assert_msg(reply.status == 201, "%d %s", reply.status, reply.message);
    berth_reply_clear(&reply);
}

static struct berth_broker_health health(void)
{
    struct berth_broker_health h;

    ck_assert_int_eq(berth_broker_health(broker, &h), 0);
    return h;
}

static const char *state_of(const char *id)
{
    static char state[32];
    struct berth_reply r = {0};

    berth_broker_inspect(broker, FP_A, id, &r);
    expect_status(&r, 200, NULL);
    snprintf(state, sizeof(state), "%s", json_string_value(json_object_get(r.body, "state")));
    berth_reply_clear(&r);
    return state;
}

/* job.finished events of run @run in the audit chain. */
static int finished_events(const char *run)
{
    struct berth_reply r = {0};
    char *line, *save = NULL;
    int n = 0;

    berth_broker_audit(broker, FP_A, 0, 100000, &r);
    expect_status(&r, 200, NULL);
    for (line = strtok_r(r.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        n += strstr(line, "\"type\":\"job.finished\"") && strstr(line, run);
    berth_reply_clear(&r);
    return n;
}

START_TEST(full_disk_degrades)
{
    _cleanup_free_ char *hold = job_doc("h", "[\"hold\"]", 60000000000LL),
                        *victim = job_doc("v", "[\"sleep\"]", 60000000000LL),
                        *late = job_doc("n", "[\"echo\"]", 60000000000LL), *filler = test_path(test_fs(), "filler");
    struct berth_reply h = submit(FP_A, hold), v = submit(FP_A, victim), r = {0};
    char line[128], *release = NULL;
    struct berth_broker_health st;
    int i;

    expect_status(&h, 201, NULL);
    expect_status(&v, 201, NULL);
    passes();
    ck_assert_str_eq(state_of("h"), "running");
    ck_assert_str_eq(state_of("v"), "running");
    st = health();
    ck_assert(!st.degraded && st.reserve_held && st.reserve_bytes == 256 * 1024);
    test_fill(test_fs(), "filler");

    /* A new job: its commit fails for space; refused, nothing recorded. */
    r = submit(FP_A, late);
    expect_status(&r, 503, "storage_full");
    ck_assert_ptr_nonnull(strstr(r.message, "retry in "));
    berth_reply_clear(&r);
    berth_broker_inspect(broker, FP_A, "n", &r);
    expect_status(&r, 404, "not_found");
    berth_reply_clear(&r);
    st = health();
    ck_assert(st.degraded);
    ck_assert_str_eq(st.reason, "storage_full");
    ck_assert_uint_eq(st.space_failures, 1);

    /* The held job finishes: the pass goes on without error, the result waits in memory. */
    ck_assert_int_gt(asprintf(&release, "%s/%s.release", state_dir, run_id_of(h.body)), 0);
    test_write_file(release, "", 0, 0600);
    passes();
    ck_assert_uint_eq(health().unrecorded, 1);
    ck_assert_str_eq(state_of("h"), "running");
    /* A cancellation of it (the reserve makes room) moves its record on meanwhile. */
    berth_broker_cancel(broker, FP_A, "h", &r);
    expect_status(&r, 202, NULL);
    berth_reply_clear(&r);
    ck_assert(!health().reserve_held);
    /* The other one is cancelled and stopped, and its result waits too. */
    berth_broker_cancel(broker, FP_A, "v", &r);
    expect_status(&r, 202, NULL);
    berth_reply_clear(&r);
    passes();
    passes();
    snprintf(line, sizeof(line), "cancel %s", run_id_of(v.body));
    ck_assert_int_eq(calls(line), 1);
    ck_assert_str_eq(state_of("v"), "reaping");
    ck_assert_uint_eq(health().unrecorded, 2);
    snprintf(line, sizeof(line), "reap %s", run_id_of(h.body));
    ck_assert_int_eq(calls(line), 0); /* nothing is reaped before its result is durable */

    /* Space returns: within the backoff both are recorded, each once. */
    ck_assert_int_eq(unlink(filler), 0);
    for (i = 0; i < 200 && health().degraded; i++) {
        usleep(100 * 1000);
        passes();
    }
    st = health();
    ck_assert_msg(!st.degraded, "still degraded after 20 s");
    ck_assert(st.reserve_held);
    ck_assert_uint_eq(st.unrecorded, 0);
    ck_assert_str_eq(state_of("h"), "exited"); /* its own outcome, recorded over the newer revision */
    ck_assert_str_eq(state_of("v"), "cancelled");
    ck_assert_int_eq(finished_events(run_id_of(h.body)), 1);
    ck_assert_int_eq(finished_events(run_id_of(v.body)), 1);
    ck_assert_int_eq(calls(line), 1);
    berth_broker_result(broker, FP_A, "h", &r);
    expect_status(&r, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r.body, "result"), "stdout")),
                     "cmVsZWFzZWQK"); /* "released\n" */
    berth_reply_clear(&r);
    passes();
    ck_assert_int_eq(finished_events(run_id_of(h.body)), 1);
    r = submit(FP_A, late);
    expect_status(&r, 201, NULL);
    berth_reply_clear(&r);
    free(release);
    berth_reply_clear(&h);
    berth_reply_clear(&v);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Sweeps (broker.h): grants and qualifications rechecked, paged. */

/* The signed result of run @run_id, read from the journal (its caller may
 * be revoked), verified; its "result" body is returned (a new reference). */
static json_t *journal_result(const char *run_id, const char *doc, const json_t *receipt)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job_record rec = {0};
    struct berth_job *job = NULL;
    const json_t *body = NULL;
    json_t *env, *ret;

    ck_assert_int_eq(berth_jobstore_find_run(journal, run_id, &rec, &err), 0);
    ck_assert_msg(berth_job_state_terminal(rec.state), "job %s is %s", run_id, berth_job_state_names[rec.state]);
    env = test_json(rec.result);
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), 0);
    ck_assert_msg(berth_result_verify(env, berth_signing_key_public(key), job, receipt, &body, &err) == 0, "%s",
                  err.message);
    ret = json_incref((json_t *)body);
    json_decref(env);
    berth_job_free(job);
    berth_job_record_clear(&rec);
    return ret;
}

static void expect_cancelled(const char *run_id, const char *doc, const json_t *receipt, const char *reason)
{
    json_t *body = journal_result(run_id, doc, receipt);

    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "cancelled");
    ck_assert_str_eq(json_string_value(json_object_get(body, "reason")), reason);
    json_decref(body);
}

/* Admission stays closed until the startup reconcile completed: new jobs
 * get 503 "starting", health says so, dispatch starts nothing. */
START_TEST(admission_waits_for_startup_pass)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("s1", "[\"echo\"]", 60000000000LL);
    struct berth_pass_stats st = {0};
    struct berth_broker_health h;
    struct berth_reply r;

    berth_broker_free(broker);
    open_broker_starting();
    ck_assert(!berth_broker_admitting(broker));
    ck_assert_int_eq(berth_broker_health(broker, &h), 0);
    ck_assert(h.starting);
    r = submit(FP_A, doc);
    expect_status(&r, 503, "starting");
    berth_reply_clear(&r);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_uint_eq(st.started, 0);
    ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert(!st.more);
    ck_assert(berth_broker_admitting(broker));
    ck_assert_int_eq(berth_broker_health(broker, &h), 0);
    ck_assert(!h.starting);
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    berth_reply_clear(&r);
}
END_TEST

/* The submitter's fingerprint is removed from the policy file mid-job: the
 * next reconcile pass cancels the running job and a queued one (never
 * started), and their signed results say "revoked". */
START_TEST(revoked_mid_job)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("v1", "[\"sleep\"]", 60000000000LL);
    _cleanup_free_ char *queued = job_doc("v2", "[\"sleep\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc), q = {0};
    struct berth_job_record rec = {0};
    struct berth_pass_stats st = {0};
    char line[128];

    expect_status(&r, 201, NULL);
    passes();
    ck_assert_int_eq(berth_jobstore_find_run(journal, run_id_of(r.body), &rec, &err), 0);
    ck_assert_int_eq(rec.state, BERTH_JOB_RUNNING);
    ck_assert_str_eq(rec.fingerprint, FP_A);
    berth_job_record_clear(&rec);
    q = submit(FP_A, queued);
    expect_status(&q, 201, NULL);
    /* Nothing changed yet: a pass leaves both alone. */
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.swept, 0);
    write_policy(POLICY_B_ONLY);
    ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.swept, 2);
    expect_cancelled(run_id_of(r.body), doc, r.body, "revoked");
    expect_cancelled(run_id_of(q.body), queued, q.body, "revoked");
    snprintf(line, sizeof(line), "cancel %s", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 1);
    snprintf(line, sizeof(line), "start %s new", run_id_of(q.body));
    ck_assert_int_eq(calls(line), 0);
    berth_reply_clear(&q);
    berth_reply_clear(&r);
}
END_TEST

/* A grant that no longer allows the job's image revokes it, too. */
START_TEST(revoked_by_narrower_grant)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = job_doc("v3", "[\"sleep\"]", 60000000000LL);
    struct berth_reply r = submit(FP_A, doc);
    char policy_text[4096];

    expect_status(&r, 201, NULL);
    passes();
    snprintf(policy_text, sizeof(policy_text),
             "{\"schema_version\":1,\"not_before\":\"0\",\"not_after\":\"" FAR_FUTURE "\",\"subjects\":["
             "{\"principal\":\"alice\",\"scope\":[\"team\"],\"fingerprints\":[\"" FP_A "\"],\"pools\":[\"sample\"],"
             "\"images\":[],\"limits\":" SAMPLE_LIMITS ",\"not_before\":\"0\",\"not_after\":\"" FAR_FUTURE "\","
             "\"admin\":true}]}");
    write_policy(policy_text);
    ck_assert_msg(berth_broker_reconcile(broker, NULL, &err) == 0, "%s", err.message);
    expect_cancelled(run_id_of(r.body), doc, r.body, "revoked");
    berth_reply_clear(&r);
}
END_TEST

#define QUAL_RUNTIME_SHA256 "sha256:1234567890123456789012345678901234567890123456789012345678901234"
#define QUAL_RUNTIME ",\"runtime\":{\"path\":\"/usr/bin/fake\",\"version\":\"1\",\"sha256\":\"" QUAL_RUNTIME_SHA256 "\"}"

/* Record a passed qualification of backend "script" as berthd computes
 * its binding, valid until @expires_ns. */
static void store_qualification(int64_t qualified_ns, int64_t expires_ns)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *caps = NULL, *body = NULL, *env = NULL, *probes = json_array();
    _cleanup_free_ char *text = NULL;
    char digest[BERTH_DIGEST_BUFSZ];
    size_t len = 0;

    ck_assert_int_eq(berth_plugin_runtime_ops(plugin)->capabilities(berth_plugin_state(plugin), &text, &len, &err), 0);
    caps = test_json(text);
    ck_assert_int_eq(berth_qualification_config_digest(NULL, NULL, caps, digest, &err), 0);
    body = berth_qualification_body("test-broker", "script", "runtime-script", "1.0.0", digest, QUAL_RUNTIME_SHA256,
                                    true, caps, probes, qualified_ns, expires_ns - qualified_ns);
    ck_assert_ptr_nonnull(body);
    /* Both take references of their own: probes and body stay ours to release. */
    ck_assert_int_eq(berth_qualification_seal(key, body, &env, &err), 0);
    ck_assert_msg(berth_qualification_store(journal, env, &err) == 0, "%s", err.message);
}

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A qualification expires while jobs queue: dispatch starts none of them
 * on it (each is cancelled with "qualification_expired"), and the running
 * job is cancelled by the next reconcile pass with the same reason. */
START_TEST(qualification_expires_while_queued)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *d1 = job_doc("q1", "[\"sleep\"]", 60000000000LL);
    _cleanup_free_ char *d2 = job_doc("q2", "[\"echo\"]", 60000000000LL);
    _cleanup_free_ char *d3 = job_doc("q3", "[\"echo\"]", 60000000000LL);
    struct berth_reply r1, r2, r3, x = {0};
    struct berth_pass_stats st = {0};
    const json_t *qual;
    int64_t expires = now_ns() + 1500000000LL;
    char line[128];

    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    require_qualification = true;
    script_config = QUAL_RUNTIME;
    load_plugin();
    store_qualification(now_ns() - 1000000000LL, expires);
    open_broker();
    berth_broker_capabilities(broker, FP_A, &x);
    qual = json_object_get(json_object_get(json_object_get(x.body, "backends"), "script"), "qualification");
    ck_assert_msg(json_is_object(qual), "the backend is not qualified");
    berth_reply_clear(&x);
    r1 = submit(FP_A, d1);
    expect_status(&r1, 201, NULL);
    ck_assert_int_eq(berth_broker_dispatch(broker, &st, &err), 0);
    ck_assert_uint_eq(st.started, 1);
    r2 = submit(FP_A, d2);
    expect_status(&r2, 201, NULL);
    r3 = submit(FP_A, d3);
    expect_status(&r3, 201, NULL);
    ck_assert(json_is_string(json_object_get(json_object_get(json_object_get(r2.body, "receipt"), "runtime"),
                                             "qualification")));
    while (now_ns() <= expires)
        usleep(50000);
    /* Dispatch first, with the offers of before the expiry: it checks the record's expiry itself. */
    memset(&st, 0, sizeof(st));
    ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.started, 0);
    ck_assert_uint_eq(st.swept, 2);
    snprintf(line, sizeof(line), "start %s new", run_id_of(r2.body));
    ck_assert_int_eq(calls(line), 0);
    snprintf(line, sizeof(line), "start %s new", run_id_of(r3.body));
    ck_assert_int_eq(calls(line), 0);
    expect_cancelled(run_id_of(r2.body), d2, r2.body, "qualification_expired");
    expect_cancelled(run_id_of(r3.body), d3, r3.body, "qualification_expired");
    /* The running one: the next reconcile pass. */
    ck_assert_int_eq(berth_broker_refresh_backends(broker), 0);
    ck_assert_msg(berth_broker_reconcile(broker, NULL, &err) == 0, "%s", err.message);
    expect_cancelled(run_id_of(r1.body), d1, r1.body, "qualification_expired");
    berth_reply_clear(&r1);
    berth_reply_clear(&r2);
    berth_reply_clear(&r3);
}
END_TEST

#define PAGED_JOBS 300

/* More open jobs than a page: a pass visits at most 256 of them and the
 * cursor covers every one over successive passes (here: all of them are
 * revoked, 256 by the first pass, the rest by the second). */
START_TEST(paged_passes)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_submission *v = calloc(PAGED_JOBS, sizeof(*v));
    char *docs[PAGED_JOBS];
    struct berth_pass_stats st = {0};
    int64_t counts[BERTH_JOB_STATE_COUNT];
    size_t i;

    ck_assert_ptr_nonnull(v);
    berth_broker_free(broker);
    max_active = max_retained = PAGED_JOBS + 10;
    open_broker();
    for (i = 0; i < PAGED_JOBS; i++) {
        char id[32];
        snprintf(id, sizeof(id), "p%03zu", i);
        docs[i] = job_doc(id, "[\"sleep\"]", 60000000000LL);
        v[i] = (struct berth_submission){.fingerprint = FP_A, .body = docs[i], .len = strlen(docs[i])};
    }
    ck_assert_int_eq(berth_broker_submit_batch(broker, v, PAGED_JOBS), 0);
    for (i = 0; i < PAGED_JOBS; i++) {
        expect_status(&v[i].reply, 201, NULL);
        berth_reply_clear(&v[i].reply);
    }
    /* A round over unchanged jobs: 256, then the rest. */
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.visited, 256);
    ck_assert(st.more);
    memset(&st, 0, sizeof(st));
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.visited, PAGED_JOBS - 256);
    ck_assert(!st.more);
    /* Revoked: each pass cancels at most a page. */
    write_policy(POLICY_B_ONLY);
    memset(&st, 0, sizeof(st));
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.visited, 256);
    ck_assert_uint_eq(st.swept, 256);
    ck_assert_int_eq(berth_broker_job_counts(broker, counts, &err), 0);
    ck_assert_int_eq(counts[BERTH_JOB_CANCELLED], 256);
    ck_assert_int_eq(counts[BERTH_JOB_ACCEPTED], PAGED_JOBS - 256);
    memset(&st, 0, sizeof(st));
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.swept, PAGED_JOBS - 256);
    ck_assert(!st.more);
    ck_assert_int_eq(berth_broker_job_counts(broker, counts, &err), 0);
    ck_assert_int_eq(counts[BERTH_JOB_CANCELLED], PAGED_JOBS);
    for (i = 0; i < PAGED_JOBS; i++)
        free(docs[i]);
    free(v);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("broker");
    TCase *tc = test_case(s, "broker");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, submit_run_collect);
    tcase_add_test(tc, batch_outcomes);
    tcase_add_test(tc, admission);
    tcase_add_test(tc, cancel_before_start);
    tcase_add_test(tc, cancel_running);
    tcase_add_test(tc, unproven_teardown);
    tcase_add_test(tc, deadline);
    tcase_add_test(tc, start_refused_and_flaky);
    tcase_add_test(tc, output_bound);
    tcase_add_test(tc, grants_rechecked);
    tcase_add_test(tc, restart);
    tcase_add_test(tc, pools_and_audit);
    tcase_add_test(tc, pool_concurrency);
    tc = test_case(s, "sweeps");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, admission_waits_for_startup_pass);
    tcase_add_test(tc, revoked_mid_job);
    tcase_add_test(tc, revoked_by_narrower_grant);
    tcase_add_test(tc, qualification_expires_while_queued);
    tcase_add_test(tc, paged_passes);
    /* Alone in its case: it runs about a hundred refreshes. */
    tc = test_case(s, "self-qualification");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, self_qualification_ignored);
    tc = test_tmpfs_case(s, "full filesystem", "2m");
    if (tc) {
        tcase_add_checked_fixture(tc, full_setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, full_disk_degrades);
    }
    return s;
}

TEST_MAIN()
