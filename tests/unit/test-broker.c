/* SPDX-License-Identifier: MIT */
/*
 * test-broker.c -- the broker end to end below HTTP (broker.h): a real
 * journal file, a real policy file, real signatures, and the scripted
 * runtime plugin loaded through the real plugin loader.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

#include "broker.h"
#include "canon.h"
#include "digest.h"
#include "host-table.h"
#include "jobtest.h"
#include "jsonobj.h"
#include "macro.h"
#include "loader.h"
#include "poolchain.h"
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
static unsigned start_concurrency; /* 0: starts run on the dispatching thread */
static int64_t jobs_retention_ns; /* 0: nothing is pruned */
static bool require_qualification;
static const char *script_config = ""; /* more members of the scripted runtime's configuration */
static int wakes;
static int retry_lines, recovery_lines; /* log lines of per-job backend call retries (broker-retry.c) */
#define OUTPUTS_RETENTION_NS (7LL * 24 * 3600 * 1000000000LL)
/* The evidence-sqlite plugin, for the inputs and outputs cases (jobio_setup()); NULL otherwise. */
static struct berth_host_instance evidence_host;
static struct berth_plugin_handle *evidence;
static char *inputs_dir;

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

/* The broker's fault hook: at "dispatch-before-start" of any job, cancel
 * job @cancel_at_start of FP_A (once), as a caller would at that moment. */
static const char *cancel_at_start;
static int cancels_at_start;

static void fault_hook(void *userdata, const char *point)
{
    struct berth_reply c = {0};

    (void)userdata;
    if (!cancel_at_start || strcmp(point, "dispatch-before-start") != 0)
        return;
    berth_broker_cancel(broker, FP_A, cancel_at_start, &c);
    ck_assert_msg(c.status == 202, "cancel at start: %d %s", c.status, c.message);
    berth_reply_clear(&c);
    cancel_at_start = NULL;
    cancels_at_start++;
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
        .start_concurrency = start_concurrency,
        .jobs_retention_ns = jobs_retention_ns,
        .outputs_retention_ns = OUTPUTS_RETENTION_NS,
        .wake = wake,
        .fault = fault_hook,
        .logger = &logger,
        .evidence_ops = evidence ? berth_plugin_evidence_store_ops(evidence) : NULL,
        .evidence_state = evidence ? berth_plugin_state(evidence) : NULL,
        .evidence_max_object_bytes = evidence ? 64 * 1024 * 1024 : 0,
        .inputs_directory = evidence ? inputs_dir : NULL,
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
    berth_plugin_unload(evidence);
    evidence = NULL;
    free(inputs_dir);
    inputs_dir = NULL;
    berth_policy_source_free(policy);
    berth_signing_key_free(key);
    berth_journal_close(journal);
    test_rm_rf(dir);
    free(policy_path);
    free(state_dir);
    free(dir);
    max_active = 16;
    max_retained = 100;
    start_concurrency = 0;
    jobs_retention_ns = 0;
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

/* Whether submit() parses the document ahead, as berthd's front threads do. */
static bool ahead;

static struct berth_reply submit(const char *fp, const char *doc)
{
    struct berth_submission s = {.fingerprint = fp, .body = doc, .len = strlen(doc)};
    struct berth_parsed_job *p = NULL;

    if (ahead) {
        ck_assert_int_eq(berth_parsed_job_new(doc, s.len, &p), 0);
        s.parsed = p;
    }
    ck_assert_int_eq(berth_broker_submit_batch(broker, &s, 1), 0);
    berth_parsed_job_free(p);
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

/* How many lines of the plugin's calls.log start with @prefix and end with
 * @suffix (@exact: are @prefix itself). */
static int calls_where(const char *prefix, const char *suffix, bool exact)
{
    char *path = test_path(state_dir, "calls.log"), buf[65536], *p, *save = NULL;
    int n = 0;

    if (access(path, F_OK) == 0) {
        test_read_file(path, buf, sizeof(buf));
        for (p = strtok_r(buf, "\n", &save); p; p = strtok_r(NULL, "\n", &save)) {
            size_t len = strlen(p), sl = strlen(suffix);
            if (exact)
                n += streq(p, prefix);
            else
                n += strncmp(p, prefix, strlen(prefix)) == 0 && len >= sl && streq(p + len - sl, suffix);
        }
    }
    free(path);
    return n;
}

/* How many lines of calls.log equal @line. */
static int calls(const char *line)
{
    return calls_where(line, "", true);
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
    /* Every transition bumped the revision, finalizing included (recorded
     * with the terminal state, in one transaction): accepted 1, claimed 2,
     * running 3, finalizing 4, exited 5. */
    ck_assert_int_eq(json_integer_value(json_object_get(ins.body, "revision")), 5);
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

/* A job parsed ahead (berth_parsed_job_new(), berthd's front threads) is
 * answered as the same bytes parsed in the batch, and the batch takes the
 * job from it. */
START_TEST(parsed_ahead)
{
    _cleanup_free_ char *a = job_doc("pa", "[\"echo\"]", 1000000000LL), *b = job_doc("pb", "[\"echo\"]", 1000000000LL),
                        *c = job_doc("pc", "[\"echo\"]", 1000000000LL);
    const char *malformed = "{\"schema_version\":1,\"id\":7}";
    struct berth_parsed_job *p = NULL;
    struct berth_reply here, there;
    char *big = calloc(1, BERTH_JOB_MAX + 2);

    /* A refusal: the same status and message. */
    here = submit(FP_A, malformed);
    ahead = true;
    there = submit(FP_A, malformed);
    expect_status(&here, 400, "malformed");
    expect_status(&there, 400, "malformed");
    ck_assert_str_eq(here.message, there.message);
    berth_reply_clear(&here);
    berth_reply_clear(&there);
    /* Accepted parsed ahead; its identical retry, parsed in the batch, gets the same receipt. */
    there = submit(FP_A, a);
    ahead = false;
    here = submit(FP_A, a);
    expect_status(&there, 201, NULL);
    expect_status(&here, 200, NULL);
    ck_assert(json_equal(here.body, there.body));
    berth_reply_clear(&here);
    berth_reply_clear(&there);
    /* The batch uses the parse ahead, not its own: body pb with pc parsed records pc. */
    {
        struct berth_submission s = {.fingerprint = FP_A, .body = b, .len = strlen(b)};

        ck_assert_int_eq(berth_parsed_job_new(c, strlen(c), &p), 0);
        s.parsed = p;
        ck_assert_int_eq(berth_broker_submit_batch(broker, &s, 1), 0);
        expect_status(&s.reply, 201, NULL);
        berth_reply_clear(&s.reply);
        berth_parsed_job_free(p);
    }
    here = submit(FP_A, c);
    expect_status(&here, 200, NULL);
    berth_reply_clear(&here);
    here = submit(FP_A, b);
    expect_status(&here, 201, NULL);
    berth_reply_clear(&here);
    /* What it does not parse. */
    p = NULL;
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', BERTH_JOB_MAX + 1);
    ck_assert_int_eq(berth_parsed_job_new(big, BERTH_JOB_MAX + 1, &p), -EFBIG);
    ck_assert_int_eq(berth_parsed_job_new(NULL, 0, &p), -EINVAL);
    ck_assert_int_eq(berth_parsed_job_new(a, strlen(a), NULL), -EINVAL);
    ck_assert_ptr_null(p);
    berth_parsed_job_free(NULL);
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

/* More queued jobs than one journal page: one dispatch pass reads them
 * page by page and starts each exactly once; the next pass starts none. */
START_TEST(dispatch_pages)
{
    const unsigned n = BERTH_JOBSTORE_PAGE_MAX + 44;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {0};
    struct berth_reply x = {0};
    unsigned i;

    berth_broker_free(broker);
    max_active = n;
    max_retained = 2 * n;
    open_broker();
    for (i = 0; i < n; i++) {
        char id[16];
        snprintf(id, sizeof(id), "p%u", i);
        _cleanup_free_ char *doc = job_doc(id, "[\"sleep\"]", 60000000000LL);
        x = submit(FP_A, doc);
        expect_status(&x, 201, NULL);
        berth_reply_clear(&x);
    }
    ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.started, n);
    ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.started, n); /* none started twice */
    berth_broker_inspect(broker, FP_A, "p299", &x);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "state")), "running");
    berth_reply_clear(&x);
}
END_TEST

/* How many of the jobs t0..t(@n-1) are in @state or in @or_state (NULL:
 * none), each read once (start threads move jobs meanwhile). */
static unsigned count_state2(unsigned n, const char *state, const char *or_state)
{
    unsigned i, k = 0;

    for (i = 0; i < n; i++) {
        struct berth_reply x = {0};
        const char *st;
        char id[16];

        snprintf(id, sizeof(id), "t%u", i);
        berth_broker_inspect(broker, FP_A, id, &x);
        expect_status(&x, 200, NULL);
        st = json_string_value(json_object_get(x.body, "state"));
        k += streq(st, state) || streq_ptr(st, or_state);
        berth_reply_clear(&x);
    }
    return k;
}

static unsigned count_state(unsigned n, const char *state)
{
    return count_state2(n, state, NULL);
}

/* Dispatch passes (with start threads, the starts of one pass land in a
 * later one) until @want jobs were started in all, at most ~10 s; then
 * more passes, which must start none.  Returns the jobs started. */
static unsigned dispatch_until(unsigned want, unsigned n)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {0};
    unsigned i;

    for (i = 0; i < 5000 && st.started < want; i++) {
        ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
        /* Claimed or running: never more than the pool allows. */
        ck_assert_uint_le(count_state2(n, "claimed", "running"), 2);
        ck_assert_int_eq(usleep(2000), 0);
    }
    for (i = 0; i < 20; i++) {
        ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
        ck_assert_int_eq(usleep(2000), 0);
    }
    return (unsigned)st.started;
}

/* With start threads, a pool's max_concurrency still bounds what runs:
 * four start threads, a pool of two, eight queued jobs -- two start (each
 * exactly once), and a third only when one of them ended. */
START_TEST(threaded_starts_bounded)
{
    static const char two[] =
        "{\"schema_version\":1,\"name\":\"sample\",\"backend_allowlist\":[\"script\"],"
        "\"template\":{\"env\":{},\"timeout_seconds\":600},\"exposed_fields\":[],\"max_concurrency\":2,"
        "\"capability_ceiling\":[\"exec\",\"file_rw\"],\"network_egress_class\":\"none\","
        "\"credential_env_allowlist\":[]}";
    const unsigned n = 8;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {0};
    struct berth_reply x = {0};
    unsigned i, started;
    char id[16];

    berth_broker_free(broker);
    start_concurrency = 4;
    open_broker();
    berth_broker_pool_register(broker, FP_A, two, strlen(two), &x);
    expect_status(&x, 201, NULL);
    berth_reply_clear(&x);
    for (i = 0; i < n; i++) {
        snprintf(id, sizeof(id), "t%u", i);
        _cleanup_free_ char *doc = job_doc(id, "[\"sleep\"]", 60000000000LL);
        x = submit(FP_A, doc);
        expect_status(&x, 201, NULL);
        berth_reply_clear(&x);
    }
    started = dispatch_until(2, n);
    ck_assert_uint_eq(started, 2);
    ck_assert_uint_eq(count_state(n, "running"), 2);
    ck_assert_uint_eq(count_state(n, "accepted"), n - 2);
    /* One of them ends: exactly one more starts. */
    berth_broker_cancel(broker, FP_A, "t0", &x);
    berth_reply_clear(&x);
    for (i = 0; i < 1000 && !st.cancelled; i++) {
        ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
        ck_assert_int_eq(usleep(2000), 0);
    }
    ck_assert_int_eq(st.cancelled, 1);
    started = dispatch_until(1, n);
    ck_assert_uint_eq(started, 1);
    ck_assert_uint_eq(count_state(n, "running"), 2);
    ck_assert_uint_eq(count_state(n, "accepted"), n - 3);
    /* Each start was the only one of its job. */
    ck_assert_int_eq(calls_where("start ", " new", false), 3);
    ck_assert_int_eq(calls_where("start ", "", false), 3);
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
    ck_assert_int_eq(berth_qualification_config_digest(NULL, NULL, caps, NULL, digest, &err), 0);
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

/* ---------------------------------------------------------------------- */
/* Inputs and outputs, with the real evidence-sqlite plugin. */

/* The broker of setup(), reopened with an evidence store and an inputs directory. */
static void jobio_setup(void)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *store = NULL, *config = NULL;

    setup();
    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    script_config = ",\"needs\":[\"inputs\",\"outputs\"]";
    load_plugin();
    store = test_path(dir, "evidence");
    inputs_dir = test_path(dir, "inputs");
    ck_assert_int_eq(mkdir(inputs_dir, 0700), 0);
    ck_assert_int_gt(asprintf(&config, "{\"directory\":\"%s\"}", store), 0);
    {
        const struct berth_plugin_load_options o = {
            .dir = getenv("BERTH_EVIDENCE_PLUGIN_DIR"),
            .file = "evidence-sqlite.so",
            .kind = BERTH_PLUGIN_EVIDENCE_STORE,
            .host = berth_host_instance_init(&evidence_host, "evidence", NULL),
            .config = config,
            .config_len = strlen(config),
        };
        ck_assert_ptr_nonnull(o.dir);
        ck_assert_msg(berth_plugin_load(&o, &evidence, NULL, &err) == 0, "%s", err.message);
    }
    open_broker();
    wakes = 0;
}

/* A job @id in pool "sample" running @argv with @extra members (",\"inputs\":[...]" and so on). */
static char *jobio_doc(const char *id, const char *argv, const char *extra)
{
    char *doc = NULL;

    ck_assert_int_gt(asprintf(&doc,
                              "{\"schema_version\":1,\"id\":\"%s\",\"pool\":\"sample\",\"image\":\"" SAMPLE_IMAGE
                              "\",\"argv\":%s%s,\"limits\":{\"cpu_millis\":1000,\"memory_bytes\":268435456,"
                              "\"pids\":64,\"scratch_bytes\":67108864,\"wall_time_ns\":60000000000,"
                              "\"output_bytes\":1024,\"artifact_bytes\":1048576}}",
                              id, argv, extra),
                     0);
    return doc;
}

/* The key of @digest for @principal in scope ["team"]. */
static char *evidence_key(const char *principal, const char *digest)
{
    char *ekey = NULL;

    ck_assert_int_gt(
        asprintf(&ekey, "{\"digest\":\"%s\",\"principal\":\"%s\",\"scope\":[\"team\"]}", digest, principal), 0);
    return ekey;
}

/* Store @text for @principal; *@ret_digest its digest. */
static void store_put(const char *principal, const char *text, char ret_digest[BERTH_DIGEST_BUFSZ])
{
    const struct berth_evidence_store_ops_v1 *ops = berth_plugin_evidence_store_ops(evidence);
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "upload"), *meta = NULL, *ref = NULL;
    size_t ref_len = 0;
    int fd;

    ck_assert_int_eq(berth_digest_bytes(text, strlen(text), ret_digest), 0);
    test_write_file(path, text, strlen(text), 0600);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_gt(asprintf(&meta,
                              "{\"digest\":\"%s\",\"media_type\":\"text/plain\",\"principal\":\"%s\","
                              "\"scope\":[\"team\"],\"size\":%zu}",
                              ret_digest, principal, strlen(text)),
                     0);
    ck_assert_msg(ops->put(berth_plugin_state(evidence), meta, strlen(meta), fd, &ref, &ref_len, &err) == 0, "%s",
                  err.message);
    close(fd);
    unlink(path);
}

/* ",\"inputs\":[{\"path\":\"/inputs/data\",\"ref\":{digest, size}}]" */
static char *input_member(const char *digest, size_t size)
{
    char *m = NULL;

    ck_assert_int_gt(asprintf(&m, ",\"inputs\":[{\"path\":\"/inputs/data\",\"ref\":{\"digest\":\"%s\",\"size\":%zu}}]",
                              digest, size),
                     0);
    return m;
}

/* Submit @doc as @fp and expect a refusal @status @error that recorded nothing. */
static void refused_unrecorded(const char *fp, const char *doc, int status, const char *error)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t counts[BERTH_JOB_STATE_COUNT], total = 0;
    struct berth_reply r = submit(fp, doc);
    size_t i;

    expect_status(&r, status, error);
    ck_assert_ptr_null(r.body); /* no receipt */
    berth_reply_clear(&r);
    ck_assert_int_eq(berth_broker_job_counts(broker, counts, &err), 0);
    for (i = 0; i < BERTH_JOB_STATE_COUNT; i++)
        total += counts[i];
    ck_assert_int_eq(total, 0); /* the journal has no row */
}

/* The signed result body of @id (a new reference), checked against @doc. */
static json_t *result_body(const char *id, const char *doc)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply res = {0}, ins = {0};
    struct berth_job *job = NULL;
    const json_t *body = NULL;
    json_t *copy;

    berth_broker_result(broker, FP_A, id, &res);
    expect_status(&res, 200, NULL);
    berth_broker_inspect(broker, FP_A, id, &ins);
    ck_assert_int_eq(berth_job_parse(doc, strlen(doc), &job, &err), 0);
    ck_assert_msg(berth_result_verify(res.body, berth_signing_key_public(key), job,
                                      json_object_get(ins.body, "receipt"), &body, &err) == 0,
                  "%s", err.message);
    copy = json_deep_copy(body);
    berth_job_free(job);
    berth_reply_clear(&res);
    berth_reply_clear(&ins);
    return copy;
}

START_TEST(jobio_admission)
{
    char digest[BERTH_DIGEST_BUFSZ], bobs[BERTH_DIGEST_BUFSZ];
    _cleanup_free_ char *absent = NULL, *wrong_size = NULL, *foreign = NULL, *good = NULL;
    _cleanup_free_ char *d1 = NULL, *d2 = NULL, *d3 = NULL, *d4 = NULL;
    struct berth_reply r;

    store_put("alice", "hello input\n", digest);
    store_put("bob", "bob's own\n", bobs);
    /* Absent: never stored. */
    absent = input_member("sha256:0000000000000000000000000000000000000000000000000000000000000000", 3);
    d1 = jobio_doc("absent", "[\"cat-input\",\"0\"]", absent);
    refused_unrecorded(FP_A, d1, 400, "input_unknown");
    /* The store is asked about the job parsed ahead alike (berthd's front threads). */
    ahead = true;
    refused_unrecorded(FP_A, d1, 400, "input_unknown");
    ahead = false;
    /* Another principal's object is absent for alice (and not told apart). */
    foreign = input_member(bobs, strlen("bob's own\n"));
    d2 = jobio_doc("foreign", "[\"cat-input\",\"0\"]", foreign);
    refused_unrecorded(FP_A, d2, 400, "input_unknown");
    /* Its size differs from the stored object's. */
    wrong_size = input_member(digest, 5);
    d3 = jobio_doc("size", "[\"cat-input\",\"0\"]", wrong_size);
    refused_unrecorded(FP_A, d3, 400, "input_refused");
    /* Deleted: refused for good. */
    {
        const struct berth_evidence_store_ops_v1 *ops = berth_plugin_evidence_store_ops(evidence);
        struct berth_error err = BERTH_ERROR_INIT;
        char gone[BERTH_DIGEST_BUFSZ], *ekey, *m, *d;
        store_put("alice", "soon gone\n", gone);
        ekey = NULL;
        ck_assert_int_gt(
            asprintf(&ekey, "{\"actor\":\"alice\",\"digest\":\"%s\",\"principal\":\"alice\",\"scope\":[\"team\"]}",
                     gone),
            0);
        ck_assert_msg(ops->remove(berth_plugin_state(evidence), ekey, strlen(ekey), "test", &err) == 0, "%s",
                      err.message);
        m = input_member(gone, strlen("soon gone\n"));
        d = jobio_doc("gone", "[\"cat-input\",\"0\"]", m);
        refused_unrecorded(FP_A, d, 400, "input_refused");
        free(ekey);
        free(m);
        free(d);
    }
    /* Present, owned, the right size: accepted. */
    good = input_member(digest, strlen("hello input\n"));
    d4 = jobio_doc("good", "[\"cat-input\",\"0\"]", good);
    r = submit(FP_A, d4);
    expect_status(&r, 201, NULL);
    /* Its placement names the needs. */
    berth_reply_clear(&r);
}
END_TEST

/* A job reading input @digest (@size bytes) is refused inputs_unsupported, one writing an output outputs_unsupported. */
static void io_unsupported(const char *digest, size_t size)
{
    _cleanup_free_ char *in = input_member(digest, size), *d1 = NULL, *d2 = NULL;

    d1 = jobio_doc("in", "[\"cat-input\",\"0\"]", in);
    refused_unrecorded(FP_A, d1, 400, "inputs_unsupported");
    d2 = jobio_doc("out", "[\"outputs\",\"r=x\"]",
                   ",\"outputs\":[{\"id\":\"r\",\"path\":\"/tmp/outputs/r\",\"media_type\":\"text/plain\","
                   "\"max_bytes\":64}]");
    refused_unrecorded(FP_A, d2, 400, "outputs_unsupported");
}

/* A backend that reports neither need: a job with inputs or outputs is refused for good. */
START_TEST(jobio_no_capable_backend)
{
    char digest[BERTH_DIGEST_BUFSZ];

    berth_broker_free(broker);
    berth_plugin_unload(plugin);
    script_config = "";
    load_plugin();
    open_broker();
    store_put("alice", "data\n", digest);
    io_unsupported(digest, 5);
}
END_TEST

/* Without an evidence store (the plain setup), as before issue 16: refused. */
START_TEST(jobio_without_store)
{
    io_unsupported("sha256:0000000000000000000000000000000000000000000000000000000000000000", 3);
}
END_TEST

START_TEST(jobio_stage_input)
{
    char digest[BERTH_DIGEST_BUFSZ], path[4096], buf[64];
    _cleanup_free_ char *in = NULL, *doc = NULL;
    _cleanup_json_ json_t *body = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply r;
    struct stat st;
    const char *run;

    store_put("alice", "line one\nline two\n", digest);
    in = input_member(digest, strlen("line one\nline two\n"));
    doc = jobio_doc("reads", "[\"cat-input\",\"0\"]", in);
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    run = run_id_of(r.body);
    /* A staging cut short before (a crash): an untrusted leftover, replaced. */
    snprintf(path, sizeof(path), "%s/%s", inputs_dir, run);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/%s/0", inputs_dir, run);
    test_write_file(path, "forged\n", 7, 0644);
    ck_assert_msg(berth_broker_dispatch(broker, NULL, &err) == 0, "%s", err.message);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_int_eq(st.st_mode & 07777, 0444);
    ck_assert_int_eq(st.st_size, 18);
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "line one\nline two\n");
    snprintf(path, sizeof(path), "%s/%s", inputs_dir, run);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 07777, 0700);
    ck_assert_msg(berth_broker_reconcile(broker, NULL, &err) == 0, "%s", err.message);
    body = result_body("reads", doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "exited");
    ck_assert_str_eq(json_string_value(json_object_get(body, "stdout")), "bGluZSBvbmUKbGluZSB0d28K");
    /* Reaped: its staged inputs are gone. */
    ck_assert_int_eq(lstat(path, &st), -1);
    ck_assert_int_eq(errno, ENOENT);
    berth_reply_clear(&r);
}
END_TEST

/* Deleted between admission and dispatch: the job fails, nothing runs. */
START_TEST(jobio_input_gone_at_dispatch)
{
    const struct berth_evidence_store_ops_v1 *ops;
    char digest[BERTH_DIGEST_BUFSZ], line[160];
    _cleanup_free_ char *in = NULL, *doc = NULL, *ekey = NULL;
    _cleanup_json_ json_t *body = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply r;

    store_put("alice", "short-lived\n", digest);
    in = input_member(digest, strlen("short-lived\n"));
    doc = jobio_doc("late", "[\"cat-input\",\"0\"]", in);
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    ops = berth_plugin_evidence_store_ops(evidence);
    ck_assert_int_gt(
        asprintf(&ekey, "{\"actor\":\"alice\",\"digest\":\"%s\",\"principal\":\"alice\",\"scope\":[\"team\"]}", digest),
        0);
    ck_assert_int_eq(ops->remove(berth_plugin_state(evidence), ekey, strlen(ekey), "test", &err), 0);
    passes();
    body = result_body("late", doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(body, "reason")), "input_unavailable");
    snprintf(line, sizeof(line), "start %s new", run_id_of(r.body));
    ck_assert_int_eq(calls(line), 0);
    berth_reply_clear(&r);
}
END_TEST

#define ONE_OUTPUT(id, media)                                                                                          \
    ",\"outputs\":[{\"id\":\"" id "\",\"path\":\"/tmp/outputs/" id "\",\"media_type\":\"" media "\",\"max_bytes\":64}" \
                                                                                                "]"

START_TEST(jobio_capture)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_evidence_store_ops_v1 *ops;
    char digest[BERTH_DIGEST_BUFSZ];
    _cleanup_free_ char *doc = NULL, *ekey = NULL, *st = NULL;
    _cleanup_json_ json_t *body = NULL, *stat = NULL;
    const json_t *out;
    struct berth_reply r;
    size_t len = 0;
    int64_t until = 0;

    doc = jobio_doc("writes", "[\"outputs\",\"report={\\\"lines\\\":2}\"]", ONE_OUTPUT("report", "application/json"));
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    passes();
    body = result_body("writes", doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "exited");
    ck_assert(json_is_null(json_object_get(body, "output_error")));
    ck_assert_int_eq(json_array_size(json_object_get(body, "outputs")), 1);
    out = json_array_get(json_object_get(body, "outputs"), 0);
    ck_assert_int_eq(berth_digest_bytes("{\"lines\":2}", 11, digest), 0);
    ck_assert_str_eq(json_string_value(json_object_get(out, "id")), "report");
    ck_assert_str_eq(json_string_value(json_object_get(out, "digest")), digest);
    ck_assert_int_eq(json_integer_value(json_object_get(out, "size")), 11);
    ck_assert_str_eq(json_string_value(json_object_get(out, "media_type")), "application/json");
    /* In the store, owned by the job's principal and scope, kept for the outputs retention (7 days). */
    ops = berth_plugin_evidence_store_ops(evidence);
    ekey = evidence_key("alice", digest);
    ck_assert_msg(ops->stat(berth_plugin_state(evidence), ekey, strlen(ekey), &st, &len, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_json_parse(st, len, 65536, &stat, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(stat, "media_type")), "application/json");
    ck_assert_int_eq(berth_json_ns_value(json_object_get(stat, "retain_until"), &until), 0);
    ck_assert_int_gt(until, now_ns() + OUTPUTS_RETENTION_NS - 60 * 1000000000LL);
    ck_assert_int_le(until, now_ns() + OUTPUTS_RETENTION_NS);
    /* Served to its owner, grant rechecked; to nobody else. */
    {
        struct berth_job_output o;
        struct berth_reply g = {0};
        char buf[64] = "";
        berth_broker_job_output(broker, FP_A, "writes", "report", &o, &g);
        expect_status(&g, 200, NULL);
        ck_assert_int_ge(o.fd, 0);
        ck_assert_int_eq(o.size, 11);
        ck_assert_str_eq(o.digest, digest);
        ck_assert_str_eq(o.media_type, "application/json");
        ck_assert_int_eq(read(o.fd, buf, sizeof(buf)), 11);
        ck_assert_str_eq(buf, "{\"lines\":2}");
        close(o.fd);
        berth_reply_clear(&g);
        berth_broker_job_output(broker, FP_A, "writes", "other", &o, &g);
        expect_status(&g, 404, "not_found");
        ck_assert_int_eq(o.fd, -1);
        berth_reply_clear(&g);
        berth_broker_job_output(broker, FP_B, "writes", "report", &o, &g);
        expect_status(&g, 404, "not_found");
        berth_reply_clear(&g);
        write_policy(POLICY_B_ONLY);
        berth_broker_job_output(broker, FP_A, "writes", "report", &o, &g);
        expect_status(&g, 403, "denied");
        berth_reply_clear(&g);
    }
    berth_reply_clear(&r);
}
END_TEST

/* Submit @argv declaring output "report", run it, and expect output_invalid with @problem. */
static void expect_output_invalid(const char *id, const char *argv, const char *problem)
{
    _cleanup_free_ char *doc = jobio_doc(id, argv, ONE_OUTPUT("report", "text/plain"));
    _cleanup_json_ json_t *body = NULL;
    const json_t *oe;
    struct berth_reply r = submit(FP_A, doc);

    expect_status(&r, 201, NULL);
    berth_reply_clear(&r);
    passes();
    body = result_body(id, doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "failed");
    ck_assert_str_eq(json_string_value(json_object_get(body, "reason")), "output_invalid");
    ck_assert_int_eq(json_array_size(json_object_get(body, "outputs")), 0);
    oe = json_object_get(body, "output_error");
    ck_assert_str_eq(json_string_value(json_object_get(oe, "id")), "report");
    ck_assert_str_eq(json_string_value(json_object_get(oe, "problem")), problem);
}

START_TEST(jobio_output_invalid)
{
    /* The runtime's own findings, passed on. */
    expect_output_invalid("sym", "[\"outputs\",\"report!symlink\"]", "symlink");
    expect_output_invalid("link", "[\"outputs\",\"report!hard_link\"]", "hard_link");
    expect_output_invalid("big", "[\"outputs\",\"report!too_large\"]", "too_large");
    expect_output_invalid("fifo", "[\"outputs\",\"report!not_regular\"]", "not_regular");
    expect_output_invalid("gone", "[\"outputs\",\"report!missing\"]", "missing");
    /* berthd's: not listed at all, bytes that are not the reported digest, more than max_bytes. */
    expect_output_invalid("unlisted", "[\"outputs\"]", "missing");
    expect_output_invalid("lie", "[\"outputs\",\"report~hello\"]", "digest_mismatch");
    expect_output_invalid(
        "over", "[\"outputs\",\"report=0123456789012345678901234567890123456789012345678901234567890123456789\"]",
        "too_large");
}
END_TEST

/* A second output that fails: the first, already in the store, is not listed. */
START_TEST(jobio_nothing_half_captured)
{
    _cleanup_free_ char *doc = NULL;
    _cleanup_json_ json_t *body = NULL;
    struct berth_reply r;

    doc = jobio_doc("half", "[\"outputs\",\"a=fine\",\"b~bad\"]",
                    ",\"outputs\":[{\"id\":\"a\",\"path\":\"/tmp/outputs/a\",\"media_type\":\"text/plain\","
                    "\"max_bytes\":64},{\"id\":\"b\",\"path\":\"/tmp/outputs/b\",\"media_type\":\"text/plain\","
                    "\"max_bytes\":64}]");
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    passes();
    body = result_body("half", doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "reason")), "output_invalid");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "output_error"), "id")), "b");
    ck_assert_int_eq(json_array_size(json_object_get(body, "outputs")), 0);
    berth_reply_clear(&r);
}
END_TEST

/* open_output() busy: retried with the per-job backoff, then captured; one result. */
START_TEST(jobio_capture_retried)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *doc = NULL, *unbusy = NULL;
    _cleanup_json_ json_t *body = NULL;
    struct berth_reply r, res = {0};
    char name[96];

    doc = jobio_doc("busy", "[\"outputs\",\"report^late\"]", ONE_OUTPUT("report", "text/plain"));
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    passes();
    berth_broker_result(broker, FP_A, "busy", &res);
    expect_status(&res, 202, NULL); /* no result while the capture cannot be made */
    berth_reply_clear(&res);
    ck_assert_int_eq(retry_lines, 1);
    snprintf(name, sizeof(name), "%s.unbusy", run_id_of(r.body));
    unbusy = test_path(state_dir, name);
    test_write_file(unbusy, "", 0, 0600);
    usleep(300 * 1000); /* past the first backoff (250 ms) */
    ck_assert_msg(berth_broker_reconcile(broker, NULL, &err) == 0, "%s", err.message);
    body = result_body("busy", doc);
    ck_assert_str_eq(json_string_value(json_object_get(body, "status")), "exited");
    ck_assert_int_eq(json_array_size(json_object_get(body, "outputs")), 1);
    ck_assert_int_eq(recovery_lines, 1);
    berth_reply_clear(&r);
}
END_TEST

/* ---- retention (broker.h, "Retention") ---------------------------------- */

/* Whether the scripted runtime holds a file "<run><suffix>". */
static bool script_has(const char *run, const char *suffix)
{
    char name[256];
    _cleanup_free_ char *path = NULL;

    snprintf(name, sizeof(name), "%s%s", run, suffix);
    path = test_path(state_dir, name);
    return access(path, F_OK) == 0;
}

/* Wait (at most 10 s) for the scripted runtime's file "<run><suffix>". */
static void await_script_file(const char *run, const char *suffix)
{
    int i;

    for (i = 0; i < 10000 && !script_has(run, suffix); i++)
        ck_assert_int_eq(usleep(1000), 0);
    ck_assert_msg(script_has(run, suffix), "no %s%s", run, suffix);
}

/* Let the scripted runtime's start() of @run return. */
static void script_go(const char *run)
{
    char name[256];
    _cleanup_free_ char *path = NULL;

    snprintf(name, sizeof(name), "%s.go", run);
    path = test_path(state_dir, name);
    test_write_file(path, "", 0, 0600);
}

/* Dispatch and reconcile passes until @want jobs were cancelled (at most 10 s). */
static void passes_until_cancelled(int want)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {0};
    int i;

    for (i = 0; i < 5000 && (int)st.cancelled < want; i++) {
        ck_assert_msg(berth_broker_dispatch(broker, &st, &err) == 0, "%s", err.message);
        ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
        ck_assert_int_eq(usleep(2000), 0);
    }
    ck_assert_int_eq((int)st.cancelled, want);
}

static void expect_result_status(const char *id, const char *status)
{
    struct berth_reply res = {0};

    berth_broker_result(broker, FP_A, id, &res);
    expect_status(&res, 200, NULL);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(res.body, "result"), "status")), status);
    berth_reply_clear(&res);
}

/* A cancellation while the backend's start() runs on a start thread: it is
 * recorded at once, nothing stops the job while its start is under way,
 * and once start() returned the job is stopped, reaped and recorded
 * cancelled -- started once, stopped once, never left running. */
START_TEST(cancel_during_start)
{
    _cleanup_free_ char *doc = job_doc("cs", "[\"slow-start\"]", 60000000000LL);
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply r = {0}, c = {0};
    char line[192];
    const char *run;

    berth_broker_free(broker);
    start_concurrency = 1;
    open_broker();
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    run = run_id_of(r.body);
    ck_assert_msg(berth_broker_dispatch(broker, NULL, &err) == 0, "%s", err.message);
    await_script_file(run, ".starting");

    berth_broker_cancel(broker, FP_A, "cs", &c);
    expect_status(&c, 202, NULL);
    ck_assert(json_is_true(json_object_get(c.body, "cancel_requested")));
    ck_assert_str_eq(json_string_value(json_object_get(c.body, "state")), "claimed");
    berth_reply_clear(&c);
    /* Its start is under way: passes leave it alone. */
    passes();
    passes();
    snprintf(line, sizeof(line), "cancel %s", run);
    ck_assert_int_eq(calls(line), 0);
    ck_assert_str_eq(state_of("cs"), "claimed");

    script_go(run);
    passes_until_cancelled(1);
    expect_result_status("cs", "cancelled");
    snprintf(line, sizeof(line), "start %s", run);
    ck_assert_int_eq(calls_where(line, "", false), 1);
    ck_assert_int_eq(calls_where(line, " new", false), 1);
    snprintf(line, sizeof(line), "cancel %s", run);
    ck_assert_int_eq(calls(line), 1);
    snprintf(line, sizeof(line), "reap %s", run);
    ck_assert_int_eq(calls(line), 1);
    ck_assert_int_eq(finished_events(run), 1);
    berth_reply_clear(&r);
}
END_TEST

/* A job cancelled while its root and inputs were staged (the cancellation
 * arrives at the broker's "dispatch-before-start" point, from its start
 * thread) is never started: reconcile settles it, cancelled, unstarted. */
START_TEST(cancel_during_staging)
{
    _cleanup_free_ char *doc = job_doc("cg", "[\"sleep\"]", 60000000000LL);
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_reply r = {0};
    char line[192];

    berth_broker_free(broker);
    start_concurrency = 1;
    open_broker();
    cancel_at_start = "cg";
    r = submit(FP_A, doc);
    expect_status(&r, 201, NULL);
    ck_assert_msg(berth_broker_dispatch(broker, NULL, &err) == 0, "%s", err.message);
    passes_until_cancelled(1);
    ck_assert_int_eq(cancels_at_start, 1);
    expect_result_status("cg", "cancelled");
    snprintf(line, sizeof(line), "start %s", run_id_of(r.body));
    ck_assert_int_eq(calls_where(line, "", false), 0);
    ck_assert_int_eq(finished_events(run_id_of(r.body)), 1);
    berth_reply_clear(&r);
}
END_TEST

/* Close the broker and open it again with retention @ns (its startup reconcile runs). */
static void reopen_with_retention(int64_t ns)
{
    berth_broker_free(broker);
    jobs_retention_ns = ns;
    open_broker();
}

/* Events of @type naming @run in the audit chain, which must verify. */
static int audit_events(const char *type, const char *run)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool_chain *chain = NULL;
    struct berth_audit_summary sum = {0};
    struct berth_reply x = {0};
    char want[64], *line, *save = NULL;
    int n = 0;

    berth_broker_audit(broker, FP_A, 0, 100000, &x);
    expect_status(&x, 200, NULL);
    ck_assert_int_eq(berth_pool_chain_new(&chain), 0);
    ck_assert_msg(berth_audit_verify(x.text, x.text_len, &audit_key, NULL, berth_pool_chain_check, chain, &sum, &err) ==
                      0,
                  "%s", err.message);
    berth_pool_chain_free(chain);
    snprintf(want, sizeof(want), "\"type\":\"%s\"", type);
    for (line = strtok_r(x.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        n += strstr(line, want) && strstr(line, run);
    berth_reply_clear(&x);
    return n;
}

static struct berth_reply journal_stats(const char *fp)
{
    struct berth_reply x = {0};

    berth_broker_journal_stats(broker, fp, &x);
    return x;
}

/* Terminal jobs are pruned once their retention passed: the runtime forgets
 * them, each removal is chained in the audit log, the journal no longer
 * counts them against max_retained, and what is left answers for them: an
 * identical retry gets the same receipt bytes and never runs, a changed one
 * conflicts, inspect, result and cancel say 410 pruned. */
START_TEST(retention_prunes)
{
    _cleanup_free_ char *d1 = job_doc("p1", "[\"echo\",\"one\"]", 60000000000LL),
                        *d1b = job_doc("p1", "[\"echo\",\"changed\"]", 60000000000LL),
                        *d2 = job_doc("p2", "[\"echo\"]", 60000000000LL), *d3 = job_doc("p3", "[\"exit\",\"3\"]", 60000000000LL),
                        *receipt1 = NULL, *again1 = NULL;
    char digest1[BERTH_DIGEST_BUFSZ], line[128], run1[BERTH_RUN_ID_LEN + 1];
    struct berth_reply r1, r, x = {0};
    struct berth_pass_stats st = {0};
    struct berth_error err = BERTH_ERROR_INIT;

    berth_broker_free(broker);
    max_active = 3;
    max_retained = 3;
    jobs_retention_ns = 3600LL * 1000000000; /* an hour: nothing expires yet */
    open_broker();
    r1 = submit(FP_A, d1);
    expect_status(&r1, 201, NULL);
    snprintf(run1, sizeof(run1), "%s", run_id_of(r1.body));
    ck_assert_int_eq(berth_json_serialize(r1.body, 0, &receipt1, NULL, &err), 0);
    r = submit(FP_A, d2);
    expect_status(&r, 201, NULL);
    berth_reply_clear(&r);
    r = submit(FP_A, d3);
    expect_status(&r, 201, NULL);
    berth_reply_clear(&r);
    passes();
    submit_expect("p4", 503, "full"); /* three finished jobs of three */
    ck_assert_int_eq(berth_broker_reconcile(broker, &st, &err), 0);
    ck_assert_uint_eq(st.pruned, 0);
    berth_broker_result(broker, FP_A, "p1", &x);
    expect_status(&x, 200, NULL);
    ck_assert_int_eq(berth_digest_json(x.body, digest1, &err), 0);
    berth_reply_clear(&x);
    x = journal_stats(FP_A);
    expect_status(&x, 200, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(x.body, "retained")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(x.body, "tombstones")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(x.body, "jobs"), "exited")), 3);
    ck_assert(json_is_string(json_object_get(json_object_get(x.body, "next_expiry"), "jobs")));
    ck_assert(json_is_null(json_object_get(json_object_get(x.body, "next_expiry"), "outputs")));
    ck_assert(json_is_null(json_object_get(x.body, "evidence")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(x.body, "retention"), "jobs_ns")),
                     "3600000000000");
    berth_reply_clear(&x);

    /* A restart with a retention of 1 ns: the startup reconcile prunes all three. */
    reopen_with_retention(1);
    snprintf(line, sizeof(line), "forget %s", run1);
    ck_assert_int_eq(calls(line), 1);
    ck_assert(!script_has(run1, ".job") && !script_has(run1, ".reaped"));
    ck_assert_int_eq(audit_events("job.pruned", run1), 1);
    x = journal_stats(FP_A);
    expect_status(&x, 200, NULL);
    ck_assert_int_eq(json_integer_value(json_object_get(x.body, "retained")), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(x.body, "tombstones")), 3);
    ck_assert(json_is_null(json_object_get(json_object_get(x.body, "next_expiry"), "jobs")));
    berth_reply_clear(&x);
    x = journal_stats(FP_B); /* bob is no admin */
    expect_status(&x, 403, "denied");
    berth_reply_clear(&x);

    /* Room again: the journal is no longer full. */
    submit_expect("p4", 201, NULL);
    /* An identical retry of the pruned job: its receipt, byte for byte, and it never runs. */
    r = submit(FP_A, d1);
    expect_status(&r, 200, NULL);
    ck_assert_int_eq(berth_json_serialize(r.body, 0, &again1, NULL, &err), 0);
    ck_assert_str_eq(again1, receipt1);
    berth_reply_clear(&r);
    passes();
    passes();
    snprintf(line, sizeof(line), "start %s new", run1);
    ck_assert_int_eq(calls(line), 1);
    snprintf(line, sizeof(line), "start %s again", run1);
    ck_assert_int_eq(calls(line), 0);
    ck_assert(!script_has(run1, ".job"));
    /* A changed job with the same id conflicts, as it did before pruning. */
    r = submit(FP_A, d1b);
    expect_status(&r, 409, "conflict");
    berth_reply_clear(&r);

    /* Collection: 410 pruned, with the final state and the result digest. */
    berth_broker_result(broker, FP_A, "p1", &x);
    expect_status(&x, 410, "pruned");
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "state")), "exited");
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "result_digest")), digest1);
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "error")), "pruned");
    berth_reply_clear(&x);
    berth_broker_result(broker, FP_A, "p3", &x);
    expect_status(&x, 410, "pruned");
    ck_assert_str_eq(json_string_value(json_object_get(x.body, "state")), "exited");
    berth_reply_clear(&x);
    berth_broker_inspect(broker, FP_A, "p1", &x);
    expect_status(&x, 410, "pruned");
    berth_reply_clear(&x);
    berth_broker_cancel(broker, FP_A, "p1", &x);
    expect_status(&x, 410, "pruned");
    berth_reply_clear(&x);
    /* Another principal's view is unchanged: no such job. */
    berth_broker_inspect(broker, FP_B, "p1", &x);
    expect_status(&x, 404, "not_found");
    berth_reply_clear(&x);
    berth_reply_clear(&r1);
}
END_TEST

/* A job the runtime has not reaped is reaped, then forgotten, then pruned;
 * pruning is bounded per pass and works a backlog off over passes. */
START_TEST(retention_bounded_and_reaps)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pass_stats st = {0};
    char id[16], line[128], first[BERTH_RUN_ID_LEN + 1] = "";
    int i;

    berth_broker_free(broker);
    max_active = 64;
    open_broker();
    for (i = 0; i < 40; i++) {
        _cleanup_free_ char *doc = NULL;
        struct berth_reply r;
        snprintf(id, sizeof(id), "b%02d", i);
        doc = job_doc(id, "[\"echo\"]", 60000000000LL);
        r = submit(FP_A, doc);
        expect_status(&r, 201, NULL);
        if (i == 0)
            snprintf(first, sizeof(first), "%s", run_id_of(r.body));
        berth_reply_clear(&r);
    }
    passes();
    /* As if the reap after its result had failed: forget says -EBUSY until it is reaped. */
    {
        char name[64];
        _cleanup_free_ char *path = NULL;
        snprintf(name, sizeof(name), "%s.reaped", first);
        path = test_path(state_dir, name);
        ck_assert_int_eq(unlink(path), 0);
    }
    berth_broker_free(broker);
    jobs_retention_ns = 1;
    open_broker_starting();
    ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.pruned, 32); /* one batch per pass */
    memset(&st, 0, sizeof(st));
    ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.pruned, 8);
    snprintf(line, sizeof(line), "reap %s", first);
    ck_assert_int_eq(calls(line), 2); /* after its result, and again before forget */
    snprintf(line, sizeof(line), "forget %s", first);
    ck_assert_int_eq(calls(line), 2); /* -EBUSY, then forgotten */
    ck_assert(!script_has(first, ".job"));
    ck_assert_int_eq(audit_events("job.pruned", first), 1);
    {
        struct berth_reply x = journal_stats(FP_A);
        ck_assert_int_eq(json_integer_value(json_object_get(x.body, "tombstones")), 40);
        ck_assert_int_eq(json_integer_value(json_object_get(x.body, "retained")), 0);
        berth_reply_clear(&x);
    }
    memset(&st, 0, sizeof(st));
    ck_assert_msg(berth_broker_reconcile(broker, &st, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(st.pruned, 0);
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
    tcase_add_test(tc, parsed_ahead);
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
    tcase_add_test(tc, dispatch_pages);
    tcase_add_test(tc, threaded_starts_bounded);
    tcase_add_test(tc, cancel_during_start);
    tcase_add_test(tc, cancel_during_staging);
    tc = test_case(s, "sweeps");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, admission_waits_for_startup_pass);
    tcase_add_test(tc, revoked_mid_job);
    tcase_add_test(tc, revoked_by_narrower_grant);
    tcase_add_test(tc, qualification_expires_while_queued);
    tcase_add_test(tc, paged_passes);
    tc = test_case(s, "inputs and outputs");
    tcase_add_checked_fixture(tc, jobio_setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, jobio_admission);
    tcase_add_test(tc, jobio_no_capable_backend);
    tcase_add_test(tc, jobio_stage_input);
    tcase_add_test(tc, jobio_input_gone_at_dispatch);
    tcase_add_test(tc, jobio_capture);
    tcase_add_test(tc, jobio_output_invalid);
    tcase_add_test(tc, jobio_nothing_half_captured);
    tcase_add_test(tc, jobio_capture_retried);
    tc = test_case(s, "inputs and outputs without a store");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, jobio_without_store);
    tcase_add_test(tc, retention_prunes);
    tcase_add_test(tc, retention_bounded_and_reaps);
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
