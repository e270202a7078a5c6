/* SPDX-License-Identifier: MIT */
/* test-host.c -- the host table lent to plugins (plugin/host-table.h, <berth/plugin.h>). */
#include "testutil.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "host-table.h"
#include "macro.h"

START_TEST(identity_and_log)
{
    struct test_log c = {0};
    const struct berth_logger logger = {test_log_sink, &c, BERTH_LOG_DEBUG};
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "runsc", &logger);

    ck_assert_uint_eq(h->struct_size, sizeof(struct berth_host));
    ck_assert_uint_eq(h->abi_version, BERTH_PLUGIN_ABI_VERSION);
    ck_assert_str_eq(h->instance, "runsc");
    h->log(h, BERTH_LOG_WARNING, "probe %d failed", 3);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(c.level, BERTH_LOG_WARNING);
    ck_assert_str_eq(c.line, "runsc: probe 3 failed");
    h->log(h, 0, "emergency?"); /* clamped: plugins cannot raise above err */
    ck_assert_int_eq(c.level, BERTH_LOG_ERR);
    h->log(h, 99, "chatty");
    ck_assert_int_eq(c.level, BERTH_LOG_DEBUG);

    h = berth_host_instance_init(&inst, NULL, NULL);
    ck_assert_str_eq(h->instance, "");
    h->log(h, BERTH_LOG_ERR, "discarded without a logger");
    ck_assert_int_eq(c.calls, 3);
}
END_TEST

START_TEST(clocks)
{
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "x", NULL);
    int64_t rt = h->now_ns(h, BERTH_CLOCK_REALTIME), m1, m2;
    int64_t now = (int64_t)time(NULL) * 1000000000LL;

    ck_assert_int_ge(rt, now - 5000000000LL);
    ck_assert_int_le(rt, now + 5000000000LL);
    m1 = h->now_ns(h, BERTH_CLOCK_MONOTONIC);
    m2 = h->now_ns(h, BERTH_CLOCK_MONOTONIC);
    ck_assert_int_gt(m1, 0);
    ck_assert_int_ge(m2, m1);
    ck_assert_int_eq(h->now_ns(h, 7), -EINVAL);
}
END_TEST

START_TEST(json_and_digest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "x", NULL);
    _cleanup_free_ char *out = NULL;
    char d[BERTH_DIGEST_BUFSZ];
    size_t len = 0;

    ck_assert_int_eq(h->canonicalize(h, "{ \"b\":1, \"a\":2 }", 16, 64, &out, &len, &err), 0);
    ck_assert_str_eq(out, "{\"a\":2,\"b\":1}");
    ck_assert_int_eq(h->canonicalize(h, "{\"a\":1.5}", 9, 64, &out, &len, &err), -EBADMSG);
    ck_assert_int_eq(h->canonicalize(h, "{\"a\":1}", 7, 6, &out, &len, &err), -EFBIG);
    ck_assert_int_eq(h->digest(h, "abc", 3, d), 0);
    ck_assert_str_eq(d, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}
END_TEST

START_TEST(files)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "x", NULL);
    _cleanup_free_ char *dir = test_tmpdir(), *buf = NULL, *link = test_path(dir, "l");
    _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const struct berth_file_expect e = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = 16,
        .one_link = 1,
    };
    size_t len = 0;
    int fd;

    ck_assert_int_eq(h->publish_file(h, dfd, "state.json", "{}", 2, 0600, 0, &err), 0);
    ck_assert_int_eq(h->publish_file(h, dfd, "state.json", "[]", 2, 0600, 0, &err), -EEXIST);
    ck_assert_int_eq(h->read_file(h, dfd, "state.json", &e, &buf, &len, &err), 0);
    ck_assert_str_eq(buf, "{}");
    ck_assert_int_eq(h->read_file(h, AT_FDCWD, "/etc/hostname", &e, &buf, &len, &err), -EXDEV);
    ck_assert_int_eq(symlink("state.json", link), 0);
    ck_assert_int_eq(h->read_file(h, dfd, "l", &e, &buf, &len, &err), -ELOOP);
    fd = h->open_beneath(h, dfd, "state.json", O_RDONLY, 0, &err);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(h->open_beneath(h, dfd, "../x", O_RDONLY, 0, &err), -EXDEV);
    test_rm_rf(dir);
}
END_TEST

/* A containment "plugin" in the test itself: every op checks that no other
 * op of the instance runs at the same time (plugin.h promises one call at a
 * time), stays inside a little while to give an overlap the chance to
 * happen, and counts its calls. */
struct fake_containment {
    atomic_int inside, overlaps, calls;
};

static int fake_enter(void *state)
{
    struct fake_containment *f = state;
    const struct timespec pause = {0, 200 * 1000};

    if (atomic_fetch_add(&f->inside, 1) != 0)
        atomic_fetch_add(&f->overlaps, 1);
    nanosleep(&pause, NULL);
    atomic_fetch_sub(&f->inside, 1);
    atomic_fetch_add(&f->calls, 1);
    return 0;
}

static int fake_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    (void)reterr;
    fake_enter(state);
    *ret_json = strdup("{\"manager\":\"fake\"}");
    *ret_len = strlen(*ret_json);
    return 0;
}

static int fake_kill(void *state, const char *job_id, int signo, struct berth_error *reterr)
{
    fake_enter(state);
    if (signo < 1 || signo > 64)
        return berth_error_set(reterr, -EINVAL, "signal %d of %s", signo, job_id);
    return 0;
}

static int fake_destroy(void *state, const char *job_id, struct berth_error *reterr)
{
    fake_enter(state);
    return berth_error_set(reterr, -ETIMEDOUT, "%s: processes remain", job_id);
}

/* Without units, as an ABI 1.0 table. */
static const struct berth_containment_ops_v1 fake_ops = {
    .capabilities = fake_capabilities,
    .kill = fake_kill,
    .destroy = fake_destroy,
};

START_TEST(containment_unbound)
{
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "runsc", NULL);
    const struct berth_containment_ops_v1 *ops = NULL;
    size_t size = 0;
    void *state = NULL;

    ck_assert(BERTH_HOST_HAS(h, containment));
    ck_assert_int_eq(h->containment(h, &ops, &size, &state), -ENOENT);
    ck_assert_ptr_null(ops);
    ck_assert_int_eq(h->containment(h, NULL, &size, &state), -EINVAL);
    ck_assert_int_eq(h->containment(h, &ops, NULL, &state), -EINVAL);
    ck_assert_int_eq(h->containment(h, &ops, &size, NULL), -EINVAL);
}
END_TEST

/* The bound containment reaches the plugin through the core's table: errors and
 * results pass through, missing ops stay NULL. */
START_TEST(containment_forwards)
{
    struct fake_containment f = {0};
    struct berth_containment_binding b;
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "runsc", NULL);
    const struct berth_containment_ops_v1 *ops = NULL, *again = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    size_t size = 0, len = 0;
    void *state = NULL, *state2 = NULL;
    char *json = NULL;

    berth_containment_binding_init(&b, &fake_ops, &f);
    berth_host_instance_set_containment(&inst, &b);
    ck_assert_int_eq(h->containment(h, &ops, &size, &state), 0);
    ck_assert_uint_ge(size, BERTH_CONTAINMENT_OPS_V1_0_SIZE);
    ck_assert_uint_eq(size, sizeof(struct berth_containment_ops_v1));
    ck_assert_ptr_ne(ops, &fake_ops); /* the core's own table, not the plugin's */
    ck_assert_ptr_ne(state, &f);
    ck_assert_int_eq(h->containment(h, &again, &size, &state2), 0);
    ck_assert_ptr_eq(again, ops);
    ck_assert_ptr_eq(state2, state);
    ck_assert_ptr_null(ops->create);
    ck_assert_ptr_null(ops->attach);
    ck_assert_ptr_null(ops->status);
    ck_assert_ptr_null(ops->units);
    ck_assert_int_eq(ops->capabilities(state, &json, &len, &err), 0);
    ck_assert_str_eq(json, "{\"manager\":\"fake\"}");
    ck_assert_uint_eq(len, strlen(json));
    free(json);
    ck_assert_int_eq(ops->kill(state, "job-1", 65, &err), -EINVAL);
    ck_assert_str_eq(err.message, "signal 65 of job-1");
    ck_assert_int_eq(ops->kill(state, "job-1", 9, &err), 0);
    ck_assert_int_eq(ops->destroy(state, "job-2", &err), -ETIMEDOUT);
    ck_assert_str_eq(err.message, "job-2: processes remain");
    ck_assert_int_eq(f.calls, 4);
}
END_TEST

struct caller {
    const struct berth_containment_ops_v1 *ops;
    void *state;
};

static void *call_many(void *arg)
{
    struct caller *c = arg;
    struct berth_error err = BERTH_ERROR_INIT;

    for (int i = 0; i < 50; i++) {
        char *json = NULL;
        size_t len = 0;

        if (i % 2 == 0 && c->ops->capabilities(c->state, &json, &len, &err) == 0)
            free(json);
        else
            (void)c->ops->kill(c->state, "job-1", 9, &err);
    }
    return NULL;
}

/* Calls from several threads at once reach the plugin one at a time. */
START_TEST(containment_serializes)
{
    struct fake_containment f = {0};
    struct berth_containment_binding b;
    struct berth_host_instance inst;
    const struct berth_host *h = berth_host_instance_init(&inst, "runsc", NULL);
    struct caller c;
    size_t size;
    pthread_t t[4];

    berth_containment_binding_init(&b, &fake_ops, &f);
    berth_host_instance_set_containment(&inst, &b);
    ck_assert_int_eq(h->containment(h, &c.ops, &size, &c.state), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, call_many, &c), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_int_eq(f.calls, 200);
    ck_assert_int_eq(f.overlaps, 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("host");
    TCase *tc = test_case(s, "host");

    tcase_add_test(tc, identity_and_log);
    tcase_add_test(tc, clocks);
    tcase_add_test(tc, json_and_digest);
    tcase_add_test(tc, files);
    tcase_add_test(tc, containment_unbound);
    tcase_add_test(tc, containment_forwards);
    tcase_add_test(tc, containment_serializes);
    return s;
}

TEST_MAIN()
