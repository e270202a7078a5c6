/* SPDX-License-Identifier: MIT */
/* test-clock.c -- the clock readers, deadlines and conversions (clock.h). */
#include "testutil.h"

#include "clock.h"

/* A clock id no kernel has: clock_gettime(2) fails with EINVAL. */
#define NO_CLOCK ((clockid_t)0x7ffffff0)

START_TEST(readings)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t rt = 0, m1 = 0, m2 = 0, untouched = 77;

    ck_assert_int_eq(berth_now_ns(CLOCK_REALTIME, &rt, &err), 0);
    ck_assert_int_gt(rt, 1600000000LL * BERTH_NS_PER_SEC); /* after September 2020 */
    ck_assert_int_eq(berth_now_ns(CLOCK_MONOTONIC, &m1, NULL), 0);
    ck_assert_int_eq(berth_now_ns(CLOCK_MONOTONIC, &m2, NULL), 0);
    ck_assert_int_ge(m2, m1);
    ck_assert_int_eq(berth_now_ns(CLOCK_REALTIME, NULL, &err), -EINVAL);

    /* A clock that cannot be read: an error naming it, the out-parameter untouched. */
    err = (struct berth_error)BERTH_ERROR_INIT;
    ck_assert_int_eq(berth_now_ns(NO_CLOCK, &untouched, &err), -EINVAL);
    ck_assert_int_eq(err.code, -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "cannot read the clock"));
    ck_assert_int_eq(untouched, 77);
}
END_TEST

START_TEST(deadlines)
{
    int64_t now = test_now_ns(CLOCK_MONOTONIC), d;

    d = berth_deadline_ns(CLOCK_MONOTONIC, 3600 * BERTH_NS_PER_SEC);
    ck_assert_int_ge(d, now + 3600 * BERTH_NS_PER_SEC);
    ck_assert(!berth_deadline_passed(CLOCK_MONOTONIC, d));
    ck_assert(berth_deadline_passed(CLOCK_MONOTONIC, now - 1));
    ck_assert_int_eq(berth_deadline_ns(CLOCK_MONOTONIC, INT64_MAX), INT64_MAX); /* saturates */
    ck_assert(!berth_deadline_passed(CLOCK_MONOTONIC, INT64_MAX));
    ck_assert_int_ge(berth_deadline_ns(CLOCK_MONOTONIC, -5), now); /* a negative delay is none */

    /* On a clock that cannot be read every deadline has passed, even the furthest. */
    ck_assert_int_eq(berth_deadline_ns(NO_CLOCK, BERTH_NS_PER_SEC), 0);
    ck_assert(berth_deadline_passed(NO_CLOCK, INT64_MAX));
}
END_TEST

START_TEST(conversions)
{
    struct timespec ts = berth_timespec_of_ns(3 * BERTH_NS_PER_SEC + 456789);
    struct timeval tv = berth_timeval_of_ns(3 * BERTH_NS_PER_SEC + 456789);

    ck_assert_int_eq(ts.tv_sec, 3);
    ck_assert_int_eq(ts.tv_nsec, 456789);
    ck_assert_int_eq(tv.tv_sec, 3);
    ck_assert_int_eq(tv.tv_usec, 456); /* rounded down */
    ts = berth_timespec_of_ns(-1);
    tv = berth_timeval_of_ns(-1);
    ck_assert_int_eq(ts.tv_sec, 0);
    ck_assert_int_eq(ts.tv_nsec, 0);
    ck_assert_int_eq(tv.tv_sec, 0);
    ck_assert_int_eq(tv.tv_usec, 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("clock");
    TCase *tc = test_case(s, "clock");

    tcase_add_test(tc, readings);
    tcase_add_test(tc, deadlines);
    tcase_add_test(tc, conversions);
    return s;
}

TEST_MAIN()
