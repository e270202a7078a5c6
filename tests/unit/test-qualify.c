/* SPDX-License-Identifier: MIT */
/*
 * test-qualify.c -- one backend's qualification sequence (qualify/qualify.h)
 * on the scripted runtime plugin (tests/plugins/runtime-script.c), loaded
 * through the real loader, with a real journal and a real signing key.  The
 * scripted "sandboxes" run nothing, so every probe that needs the probe
 * program fails: the run is recorded as failed, which is what berthd and
 * berthctl must do with a failed run too.
 */
#include "testutil.h"

#include "canon.h"
#include "digest.h"
#include "host-table.h"
#include "jsonobj.h"
#include "loader.h"
#include "macro.h"
#include "pooltest.h"
#include "qualification.h"
#include "qualify.h"
#include "scripttest.h"

#define RUNTIME_SHA256 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define NOW_NS 1800000000000000000LL /* the clock the records see */
#define DAY_NS (86400LL * 1000000000LL)

static char *dir, *state_dir, *probe, *work_dir;
static struct berth_journal *journal;
static struct berth_signing_key *key;
static struct berth_host_instance host;
static struct berth_plugin_handle *plugin;
static json_t *config;

/* What the callbacks saw. */
static struct {
    int begin, progress;
    char last_probe[64];
} calls;

/* The routine's arguments, as setup() leaves them: reuse allowed. */
static struct berth_qualify_backend_params qp;

static int64_t fixed_now(void)
{
    return NOW_NS;
}

static void on_begin(void *userdata, const json_t *caps)
{
    ck_assert_ptr_eq(userdata, &calls);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(caps, "runtime"), "sha256")), RUNTIME_SHA256);
    calls.begin++;
}

static void on_progress(void *userdata, const char *name, const char *outcome, const char *detail)
{
    (void)userdata, (void)outcome, (void)detail;
    snprintf(calls.last_probe, sizeof(calls.last_probe), "%s", name);
    calls.progress++;
}

/* Load runtime-script with @runtime (JSON, or NULL for none) in its config. */
static void load_plugin(const char *runtime)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;

    config = json_pack("{s:s}", "state_directory", state_dir);
    ck_assert_ptr_nonnull(config);
    if (runtime)
        ck_assert_int_eq(json_object_set_new(config, "runtime", test_json(runtime)), 0);
    ck_assert_int_eq(berth_json_serialize(config, 0, &text, NULL, &err), 0);
    plugin = test_load_script(&host, text);
}

static void setup(void)
{
    struct berth_error err = BERTH_ERROR_INIT;

    dir = test_private_dir();
    state_dir = test_path(dir, "script");
    ck_assert_int_eq(mkdir(state_dir, 0700), 0);
    probe = test_path(dir, "berth-probe");
    test_write_file(probe, "#!/bin/false\n", 13, 0755);
    journal = test_journal_open(dir);
    ck_assert_int_eq(berth_signing_key_generate(&key, &err), 0);
    ck_assert_msg(berth_qualify_work_dir(dir, &work_dir, &err) == 0, "%s", err.message);
    load_plugin("{\"path\":\"/usr/bin/scripted\",\"version\":\"scripted 1\",\"sha256\":\"" RUNTIME_SHA256 "\"}");
    memset(&calls, 0, sizeof(calls));
    qp = (struct berth_qualify_backend_params){
        .broker = "test-broker",
        .backend = "script",
        .plugin = plugin,
        .config = config,
        .probe = probe,
        .work_dir = work_dir,
        .key = key,
        .journal = journal,
        .validity_ns = 7 * DAY_NS,
        .now_ns = fixed_now,
        .reuse_current = true,
        .begin = on_begin,
        .progress = on_progress,
        .userdata = &calls,
    };
}

static void teardown(void)
{
    berth_plugin_unload(plugin);
    json_decref(config);
    berth_journal_close(journal);
    berth_signing_key_free(key);
    test_rm_rf(dir);
    free(dir);
    free(state_dir);
    free(probe);
    free(work_dir);
}

/* The config_digest the record must carry. */
static void expected_digest(char out[BERTH_DIGEST_BUFSZ])
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *caps = NULL;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    ck_assert_int_eq(berth_plugin_runtime_ops(plugin)->capabilities(berth_plugin_state(plugin), &text, &len, &err), 0);
    caps = test_json(text);
    ck_assert_int_eq(berth_qualification_config_digest(config, berth_plugin_get_info(plugin)->sha256, caps, NULL, out,
                                                       &err),
                     0);
}

static int current(char id[BERTH_QUALIFICATION_ID_LEN + 1])
{
    struct berth_error err = BERTH_ERROR_INIT;
    char digest[BERTH_DIGEST_BUFSZ], kernel[256];
    int64_t expires = 0;

    expected_digest(digest);
    berth_kernel_release(kernel, sizeof(kernel));
    return berth_qualification_current(journal, "script", RUNTIME_SHA256, digest, kernel, NOW_NS, id, &expires, &err);
}

/* Every probe runs through the backend and fails (nothing runs the probe
 * program); the signed failed record is in the journal. */
START_TEST(records_a_failed_run)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_qualify_outcome out;
    const json_t *body = NULL;
    char digest[BERTH_DIGEST_BUFSZ], probe_digest[BERTH_DIGEST_BUFSZ], id[BERTH_QUALIFICATION_ID_LEN + 1];
    _cleanup_close_ int pfd = open(probe, O_RDONLY | O_CLOEXEC);

    ck_assert_msg(berth_qualify_backend(&qp, &out, &err) == 0, "%s", err.message);
    ck_assert(!out.reused);
    ck_assert(!out.passed);
    ck_assert_int_eq(calls.begin, 1);
    ck_assert_int_eq(calls.progress, 14);
    ck_assert_str_eq(calls.last_probe, "containment-drain");
    ck_assert_uint_eq(json_array_size(out.probes), 14);
    /* The scripted backend names neither "inputs" nor "outputs", and has no containment. */
    for (size_t i = 9; i < 14; i++)
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(out.probes, i), "outcome")),
                         "not_applicable");
    ck_assert_int_eq(out.expires_ns, NOW_NS + 7 * DAY_NS);

    /* The record: signed by the key, bound to this runtime, configuration,
     * plugin and probe program, at the clock's time. */
    ck_assert_msg(berth_qualification_verify(out.envelope, berth_signing_key_public(key), &body, &err) == 0, "%s",
                  err.message);
    ck_assert_str_eq(json_string_value(json_object_get(body, "id")), out.id);
    ck_assert_str_eq(json_string_value(json_object_get(body, "broker")), "test-broker");
    ck_assert_str_eq(json_string_value(json_object_get(body, "backend")), "script");
    ck_assert_str_eq(json_string_value(json_object_get(body, "plugin")), "runtime-script");
    ck_assert_str_eq(json_string_value(json_object_get(body, "plugin_version")), "1.0.0");
    ck_assert(json_is_false(json_object_get(body, "passed")));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(body, "runtime"), "sha256")), RUNTIME_SHA256);
    ck_assert_str_eq(json_string_value(json_object_get(body, "isolation")), "none");
    ck_assert_str_eq(json_string_value(json_object_get(body, "qualified_at")), "1800000000000000000");
    ck_assert_str_eq(json_string_value(json_object_get(body, "expires_at")), "1800604800000000000");
    expected_digest(digest);
    ck_assert_str_eq(json_string_value(json_object_get(body, "config_digest")), digest);
    ck_assert_int_ge(pfd, 0);
    ck_assert_int_eq(berth_digest_fd(pfd, probe_digest), 0);
    ck_assert_str_eq(json_string_value(json_object_get(body, "probe_sha256")), probe_digest);
    ck_assert(json_equal(json_object_get(body, "probes"), out.probes));

    /* Stored: the same id is refused a second time, and a failed record is
     * no qualification. */
    ck_assert_int_eq(berth_qualification_store(journal, out.envelope, &err), -EEXIST);
    ck_assert_int_eq(current(id), -ENOENT);
    berth_qualify_outcome_clear(&out);
    ck_assert_ptr_null(out.envelope);
}
END_TEST

/* berthd's reuse: a current qualification means nothing runs; berthctl's
 * re-run runs anyway, and its failure ends the qualification. */
START_TEST(reuses_a_current_qualification)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_qualify_outcome out;
    _cleanup_json_ json_t *caps = NULL, *probes = json_array(), *body = NULL, *env = NULL;
    _cleanup_free_ char *text = NULL, *calls_log = test_path(state_dir, "calls.log");
    char digest[BERTH_DIGEST_BUFSZ], id[BERTH_QUALIFICATION_ID_LEN + 1];
    size_t len = 0;

    /* A passed record of this very configuration, from an hour ago. */
    ck_assert_int_eq(berth_plugin_runtime_ops(plugin)->capabilities(berth_plugin_state(plugin), &text, &len, &err), 0);
    caps = test_json(text);
    expected_digest(digest);
    body = berth_qualification_body("test-broker", "script", "runtime-script", "1.0.0", digest, RUNTIME_SHA256, true,
                                    caps, probes, NOW_NS - 3600LL * 1000000000LL, DAY_NS);
    ck_assert_ptr_nonnull(body);
    ck_assert_int_eq(berth_qualification_seal(key, body, &env, &err), 0);
    ck_assert_int_eq(berth_qualification_store(journal, env, &err), 0);
    ck_assert_int_eq(current(id), 0);

    ck_assert_msg(berth_qualify_backend(&qp, &out, &err) == 0, "%s", err.message);
    ck_assert(out.reused);
    ck_assert(out.passed);
    ck_assert_str_eq(out.id, id);
    ck_assert_int_eq(out.expires_ns, NOW_NS - 3600LL * 1000000000LL + DAY_NS);
    ck_assert_ptr_null(out.probes);
    ck_assert_ptr_null(out.envelope);
    ck_assert_int_eq(calls.begin, 0);
    ck_assert_int_eq(calls.progress, 0);
    ck_assert_int_ne(access(calls_log, F_OK), 0); /* no job was started */

    qp.reuse_current = false;
    ck_assert_msg(berth_qualify_backend(&qp, &out, &err) == 0, "%s", err.message);
    ck_assert(!out.reused);
    ck_assert(!out.passed);
    ck_assert_int_eq(calls.begin, 1);
    ck_assert_int_eq(access(calls_log, F_OK), 0);
    ck_assert_int_eq(current(id), -ENOENT);
    berth_qualify_outcome_clear(&out);
}
END_TEST

/* What cannot be qualified is refused before any probe job, with nothing recorded. */
START_TEST(refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_qualify_outcome out;
    _cleanup_free_ char *calls_log = test_path(state_dir, "calls.log"), *gw = test_path(dir, "gw"),
                        *gw_probe = test_path(gw, "berth-probe");

    ck_assert_int_eq(berth_qualify_backend(NULL, &out, &err), -EINVAL);
    qp.validity_ns = 0;
    ck_assert_int_eq(berth_qualify_backend(&qp, &out, &err), -EINVAL);
    qp.validity_ns = DAY_NS;
    qp.now_ns = NULL;
    ck_assert_int_eq(berth_qualify_backend(&qp, &out, &err), -EINVAL);
    qp.now_ns = fixed_now;

    /* The probe program decides the verdict: an untrusted one runs nothing. */
    ck_assert_int_eq(mkdir(gw, 0775), 0);
    ck_assert_int_eq(chmod(gw, 0775), 0);
    test_write_file(gw_probe, "#!/bin/false\n", 13, 0755);
    qp.probe = gw_probe;
    ck_assert_int_eq(berth_qualify_backend(&qp, &out, &err), -EPERM);
    ck_assert_msg(strstr(err.message, "cannot run the probes: probe: ") && strstr(err.message, "has mode 0775"), "%s",
                  err.message);
    ck_assert_int_eq(calls.begin, 1); /* the probes were about to run */
    ck_assert_int_eq(calls.progress, 0);
    ck_assert_int_ne(access(calls_log, F_OK), 0);
    qp.probe = probe;
    calls.begin = 0;

    /* A backend that does not name its runtime binary cannot be qualified. */
    berth_plugin_unload(plugin);
    json_decref(config);
    load_plugin(NULL);
    qp.plugin = plugin;
    qp.config = config;
    ck_assert_int_eq(berth_qualify_backend(&qp, &out, &err), -EBADMSG);
    ck_assert_msg(strstr(err.message, "no runtime.sha256 and isolation"), "%s", err.message);
    ck_assert_int_eq(calls.begin, 0);
    ck_assert_int_ne(access(calls_log, F_OK), 0);
    ck_assert_ptr_null(out.envelope);
}
END_TEST

START_TEST(work_dir_rules)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *sub = test_path(dir, "sub"), *link = test_path(dir, "link"), *path = NULL, *want = NULL;
    struct stat st;

    /* Created private when missing, accepted as it is when it is. */
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_msg(berth_qualify_work_dir(sub, &path, &err) == 0, "%s", err.message);
    want = test_path(sub, "qualify");
    ck_assert_str_eq(path, want);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0700);
    free(path);
    path = NULL;
    ck_assert_int_eq(berth_qualify_work_dir(sub, &path, &err), 0);
    free(path);
    path = NULL;

    /* Open to others, or not a directory: refused. */
    ck_assert_int_eq(chmod(want, 0755), 0);
    ck_assert_int_eq(berth_qualify_work_dir(sub, &path, &err), -EPERM);
    ck_assert_msg(strstr(err.message, "must be a directory owned by uid"), "%s", err.message);
    ck_assert_int_eq(rmdir(want), 0);
    test_write_file(want, "", 0, 0600);
    ck_assert_int_eq(berth_qualify_work_dir(sub, &path, &err), -EPERM);
    ck_assert_int_eq(unlink(want), 0);
    /* A symlink on the way: refused, and nothing is created through it. */
    ck_assert_int_eq(symlink(sub, link), 0);
    ck_assert_int_eq(berth_qualify_work_dir(link, &path, &err), -ELOOP);
    ck_assert_int_ne(access(want, F_OK), 0);
    ck_assert_int_eq(berth_qualify_work_dir("relative", &path, &err), -EINVAL);
    ck_assert_ptr_null(path);
}
END_TEST

/* The config digest binds the containment: none keeps the digest a backend
 * always had; each containment plugin or config gives another. */
START_TEST(config_digest_binds_the_containment)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *caps = test_json("{\"shim_sha256\": \"sha256:5h1m\"}");
    _cleanup_json_ json_t *cfg = test_json("{\"state_directory\": \"/x\"}");
    _cleanup_json_ json_t *c1 = test_json("{\"plugin_sha256\": \"sha256:c1\", \"config\": {}}");
    _cleanup_json_ json_t *c2 = test_json("{\"plugin_sha256\": \"sha256:c2\", \"config\": {}}");
    _cleanup_json_ json_t *c3 = test_json("{\"plugin_sha256\": \"sha256:c1\", \"config\": {\"drain_timeout_ns\": 1}}");
    _cleanup_json_ json_t *plain = test_json("{\"config\": {\"state_directory\": \"/x\"}, \"plugin_sha256\": "
                                             "\"sha256:p\", \"shim_sha256\": \"sha256:5h1m\"}");
    _cleanup_json_ json_t *with = json_deep_copy(plain);
    char none[BERTH_DIGEST_BUFSZ], want[BERTH_DIGEST_BUFSZ], d1[BERTH_DIGEST_BUFSZ], d2[BERTH_DIGEST_BUFSZ],
        d3[BERTH_DIGEST_BUFSZ];

    ck_assert_int_eq(berth_qualification_config_digest(cfg, "sha256:p", caps, NULL, none, &err), 0);
    ck_assert_int_eq(berth_digest_json(plain, want, &err), 0);
    ck_assert_str_eq(none, want);
    ck_assert_int_eq(berth_qualification_config_digest(cfg, "sha256:p", caps, c1, d1, &err), 0);
    ck_assert_int_eq(json_object_set(with, "containment", c1), 0);
    ck_assert_int_eq(berth_digest_json(with, want, &err), 0);
    ck_assert_str_eq(d1, want);
    ck_assert_int_eq(berth_qualification_config_digest(cfg, "sha256:p", caps, c2, d2, &err), 0);
    ck_assert_int_eq(berth_qualification_config_digest(cfg, "sha256:p", caps, c3, d3, &err), 0);
    ck_assert_str_ne(d1, none);
    ck_assert_str_ne(d2, d1);
    ck_assert_str_ne(d3, d1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("qualify");
    TCase *tc = test_case(s, "qualify");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, records_a_failed_run);
    tcase_add_test(tc, reuses_a_current_qualification);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, work_dir_rules);
    tcase_add_test(tc, config_digest_binds_the_containment);
    return s;
}

TEST_MAIN()
