/* SPDX-License-Identifier: MIT */
/*
 * test-runtime-oci.c -- the real runtime-oci plugin, loaded by the core's
 * loader, driving real crun: start() is idempotent per run id (a retry after
 * a lost reply starts nothing, before and after the job finished and after
 * reap), inspect reports the outcome, a reaped job is gone for inspect
 * but still refused by start, and forget (retention) drops a reaped job's
 * tombstone only.  Its watcher (ABI 1.1, watch.h) notifies the job's end
 * through the host table, and unloading leaves no descriptor and no
 * thread behind.  Root only (skips with 77 otherwise); the
 * rootfs is berth-probe alone.
 */
#include <check.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "canon.h"
#include "digest.h"
#include "host-table.h"
#include "log.h"
#include "macro.h"
#include "loader.h"
#include "testutil.h"

#define RUN_ID "r0123456789abcdef0123456789abcdef"

static char *dir;
static struct test_log logged;
static const struct berth_logger logger = {.sink = test_log_sink, .userdata = &logged, .max_level = BERTH_LOG_DEBUG};

static char *pin_json(const char *path)
{
    char cmd[512], sha[BERTH_SHA256_HEX_LEN + 1] = "", *out = NULL;
    struct stat st;
    FILE *f;

    ck_assert_int_eq(stat(path, &st), 0);
    snprintf(cmd, sizeof(cmd), "sha256sum <%s", path);
    f = popen(cmd, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fscanf(f, "%64s", sha), 1);
    pclose(f);
    ck_assert_int_gt(asprintf(&out, "{\"path\":\"%s\",\"sha256\":\"sha256:%s\",\"size\":%lld,\"mode\":\"%04o\"}", path,
                              sha, (long long)st.st_size, (unsigned)(st.st_mode & 07777)),
                     0);
    return out;
}

static char *dispatch(const char *rootfs, const char *script_arg)
{
    char *doc = NULL;
    int64_t now = test_now_ns(CLOCK_REALTIME);
    ck_assert_int_gt(
        asprintf(&doc,
                 "{\"schema_version\":1,\"receipt\":{\"receipt\":{\"run_id\":\"" RUN_ID "\",\"deadline\":\"%lld\"}},"
                 "\"job\":{\"schema_version\":1,\"id\":\"idem\",\"pool\":\"p\",\"image\":\"sha256:"
                 "0000000000000000000000000000000000000000000000000000000000000000\",\"argv\":[\"/probe\",\"%s\"],"
                 "\"limits\":{\"cpu_millis\":1000,\"memory_bytes\":268435456,\"pids\":64,\"scratch_bytes\":1048576,"
                 "\"wall_time_ns\":60000000000,\"output_bytes\":65536,\"artifact_bytes\":0}},"
                 "\"effective\":{\"pool_hash\":\"00\",\"template\":{\"env\":{},\"root\":\"/\",\"timeout_seconds\":600},"
                 "\"backend_override\":null,\"network_egress_class\":\"none\",\"credential_env\":[]},"
                 "\"rootfs\":\"%s\"}",
                 (long long)(now + 60 * BERTH_NS_PER_SEC), script_arg, rootfs),
        0);
    return doc;
}

/* The host table's job_changed calls for RUN_ID (any thread). */
static pthread_mutex_t notified_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned notified;

static void count_notify(void *userdata, const char *instance, const char *job_id)
{
    (void)userdata;
    ck_assert_str_eq(instance, "crun");
    pthread_mutex_lock(&notified_lock);
    notified += strcmp(job_id, RUN_ID) == 0;
    pthread_mutex_unlock(&notified_lock);
}

static unsigned notified_now(void)
{
    unsigned n;

    pthread_mutex_lock(&notified_lock);
    n = notified;
    pthread_mutex_unlock(&notified_lock);
    return n;
}

/* Open descriptors (less the one counting them) and threads of this process. */
static int open_fds(void)
{
    return test_count_entries("/proc/self/fd") - 1;
}

/* Poll inspect until a terminal state; returns the document. */
static json_t *await(const struct berth_runtime_ops_v1 *ops, void *state)
{
    for (int i = 0; i < 1200; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        char *text = NULL;
        size_t len = 0;
        json_t *doc;
        const char *s;

        ck_assert_msg(ops->inspect(state, RUN_ID, &text, &len, &err) == 0, "inspect: %s", err.message);
        doc = json_loadb(text, len, 0, NULL);
        free(text);
        ck_assert_ptr_nonnull(doc);
        s = json_string_value(json_object_get(doc, "state"));
        if (strcmp(s, "running") != 0 && strcmp(s, "starting") != 0)
            return doc;
        json_decref(doc);
        usleep(50000);
    }
    ck_abort_msg("the job never finished");
    return NULL;
}

START_TEST(start_is_idempotent)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance host;
    struct berth_plugin_handle *h = NULL;
    const struct berth_runtime_ops_v1 *ops;
    char *plugins = test_path(dir, "plugins"), *rootfs = test_path(dir, "rootfs"), *probe, *so, *config = NULL,
         *pin = pin_json("/usr/bin/crun"), *doc = dispatch(rootfs, "identity"), *text = NULL;
    const char *src = getenv("BERTH_RUNTIME_PLUGIN_DIR"), *shim = getenv("BERTH_OCI_SHIM"),
               *probe_src = getenv("BERTH_PROBE");
    json_t *out;
    size_t len = 0;
    int fds = open_fds(), threads = test_count_entries("/proc/self/task");

    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(shim);
    ck_assert_ptr_nonnull(probe_src);
    ck_assert_int_eq(mkdir(plugins, 0755), 0);
    so = test_path(src, "runtime-oci.so");
    {
        char *to = test_path(plugins, "runtime-oci.so");
        test_copy_file(so, to, 0755);
        free(to);
    }
    ck_assert_int_eq(mkdir(rootfs, 0755), 0);
    for (const char *const *d = (const char *const[]){"proc", "dev", "sys", "tmp", NULL}; *d; d++) {
        char *p = test_path(rootfs, *d);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        free(p);
    }
    probe = test_path(rootfs, "probe");
    test_copy_file(probe_src, probe, 0755);
    ck_assert_int_gt(asprintf(&config,
                              "{\"runtime\":%s,\"isolation\":\"native\",\"state_directory\":\"%s/state\","
                              "\"shim\":\"%s\",\"unmount\":[\"/sys/fs/cgroup/unified\"]}",
                              pin, dir, shim),
                     0);
    {
        const struct berth_plugin_load_options o = {
            .dir = plugins,
            .file = "runtime-oci.so",
            .kind = BERTH_PLUGIN_RUNTIME,
            .host = berth_host_instance_init(&host, "crun", &logger),
            .config = config,
            .config_len = strlen(config),
        };
        ck_assert_msg(berth_plugin_load(&o, &h, NULL, &err) == 0, "load: %s", err.message);
        berth_host_instance_set_notify(&host, count_notify, NULL);
    }
    ops = berth_plugin_runtime_ops(h);

    /* Never seen: inspect is sure. */
    ck_assert_int_eq(ops->inspect(berth_plugin_state(h), RUN_ID, &text, &len, &err), -ENOENT);
    /* The first start runs it; the retry after a "lost reply" starts nothing. */
    ck_assert_msg(ops->start(berth_plugin_state(h), doc, strlen(doc), &err) == 0, "start: %s", err.message);
    ck_assert_int_eq(ops->start(berth_plugin_state(h), doc, strlen(doc), &err), 1);
    out = await(ops, berth_plugin_state(h));
    ck_assert_str_eq(json_string_value(json_object_get(out, "state")), "exited");
    ck_assert_int_eq(json_integer_value(json_object_get(out, "exit_code")), 0);
    json_decref(out);
    /* The watcher told the core (it may be a moment behind inspect). */
    for (int i = 0; i < 200 && notified_now() == 0; i++)
        usleep(50000);
    ck_assert_uint_ge(notified_now(), 1);
    /* Finished: still never started again. */
    ck_assert_int_eq(ops->start(berth_plugin_state(h), doc, strlen(doc), &err), 1);
    /* Not reaped yet: the tombstone cannot be forgotten (retention). */
    ck_assert_int_eq(ops->forget(berth_plugin_state(h), RUN_ID, &err), -EBUSY);
    ck_assert_msg(ops->reap(berth_plugin_state(h), RUN_ID, &err) == 0, "reap: %s", err.message);
    /* Reaped: released for inspect and cancel, refused for start (the tombstone). */
    ck_assert_int_eq(ops->inspect(berth_plugin_state(h), RUN_ID, &text, &len, &err), -ENOENT);
    ck_assert_int_eq(ops->cancel(berth_plugin_state(h), RUN_ID, &err), -ENOENT);
    ck_assert_int_eq(ops->start(berth_plugin_state(h), doc, strlen(doc), &err), 1);
    /* Nothing of the container is left in the runtime's state. */
    {
        char *root = NULL;
        struct stat st;
        ck_assert_int_gt(asprintf(&root, "%s/state/root/" RUN_ID, dir), 0);
        ck_assert_int_ne(stat(root, &st), 0);
        free(root);
    }
    /* Retention: forget drops the reaped job directory, the tombstone, once. */
    {
        char *jobdir = NULL;
        struct stat st;
        ck_assert_int_gt(asprintf(&jobdir, "%s/state/jobs/" RUN_ID, dir), 0);
        ck_assert_int_eq(stat(jobdir, &st), 0);
        ck_assert_msg(ops->forget(berth_plugin_state(h), RUN_ID, &err) == 0, "forget: %s", err.message);
        ck_assert_int_ne(stat(jobdir, &st), 0);
        ck_assert_int_eq(errno, ENOENT);
        ck_assert_int_eq(ops->forget(berth_plugin_state(h), RUN_ID, &err), -ENOENT);
        ck_assert_int_eq(ops->forget(berth_plugin_state(h), "../escape", &err), -ENOENT);
        free(jobdir);
    }
    berth_plugin_unload(h);
    /* fini joined the watcher thread and closed its descriptors. */
    ck_assert_int_eq(open_fds(), fds);
    ck_assert_int_eq(test_count_entries("/proc/self/task"), threads);
    free(plugins);
    free(rootfs);
    free(probe);
    free(so);
    free(config);
    free(pin);
    free(doc);
}
END_TEST

static void setup(void)
{
    dir = test_tmpdir();
    ck_assert_int_eq(chmod(dir, 0700), 0);
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("runtime-oci");
    TCase *tc = test_case(s, "plugin");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, start_is_idempotent);
    return s;
}

int main(void)
{
    SRunner *sr;
    int failed;

    if (geteuid() != 0 || access("/usr/bin/crun", X_OK) != 0) {
        printf("SKIP: runtime-oci needs root and /usr/bin/crun (apt-get install crun)\n");
        return 77;
    }
    sr = srunner_create(make_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
