/* SPDX-License-Identifier: MIT */
/* test-host.c -- the host table lent to plugins (plugin/host-table.h, <berth/plugin.h>). */
#include "testutil.h"

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

static Suite *make_suite(void)
{
    Suite *s = suite_create("host");
    TCase *tc = test_case(s, "host");

    tcase_add_test(tc, identity_and_log);
    tcase_add_test(tc, clocks);
    tcase_add_test(tc, json_and_digest);
    tcase_add_test(tc, files);
    return s;
}

TEST_MAIN()
