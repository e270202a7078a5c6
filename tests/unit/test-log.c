/* SPDX-License-Identifier: MIT */
/* test-log.c -- the logging hook (log.h). */
#include "testutil.h"

#include "log.h"

START_TEST(levels_and_filtering)
{
    struct test_log c = {0};
    struct berth_logger l = {test_log_sink, &c, BERTH_LOG_INFO};

    berth_logf(&l, BERTH_LOG_NOTICE, "job %s accepted", "j1");
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(c.level, BERTH_LOG_NOTICE);
    ck_assert_str_eq(c.line, "job j1 accepted");
    berth_logf(&l, BERTH_LOG_DEBUG, "dropped");
    ck_assert_int_eq(c.calls, 1);
    berth_logf(NULL, BERTH_LOG_ERR, "no logger, no crash");
    l.sink = NULL;
    berth_logf(&l, BERTH_LOG_ERR, "no sink, no crash");
    ck_assert_int_eq(c.calls, 1);
}
END_TEST

START_TEST(one_line_bounded)
{
    struct test_log c = {0};
    struct berth_logger l = {test_log_sink, &c, BERTH_LOG_DEBUG};
    char long_arg[3000];

    berth_logf(&l, BERTH_LOG_ERR, "first\nforged: second\rthird\x1b[31m\x7f");
    ck_assert_str_eq(c.line, "first forged: second third [31m ");
    memset(long_arg, 'y', sizeof(long_arg) - 1);
    long_arg[sizeof(long_arg) - 1] = '\0';
    berth_logf(&l, BERTH_LOG_ERR, "%s", long_arg);
    ck_assert_uint_eq(strlen(c.line), BERTH_LOG_LINE_MAX);
}
END_TEST

START_TEST(names)
{
    ck_assert_str_eq(berth_log_level_name(BERTH_LOG_ERR), "err");
    ck_assert_str_eq(berth_log_level_name(BERTH_LOG_WARNING), "warning");
    ck_assert_str_eq(berth_log_level_name(BERTH_LOG_NOTICE), "notice");
    ck_assert_str_eq(berth_log_level_name(BERTH_LOG_INFO), "info");
    ck_assert_str_eq(berth_log_level_name(BERTH_LOG_DEBUG), "debug");
    ck_assert_str_eq(berth_log_level_name(42), "unknown");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("log");
    TCase *tc = test_case(s, "log");

    tcase_add_test(tc, levels_and_filtering);
    tcase_add_test(tc, one_line_bounded);
    tcase_add_test(tc, names);
    return s;
}

TEST_MAIN()
