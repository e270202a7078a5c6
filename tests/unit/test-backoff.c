/* SPDX-License-Identifier: MIT */
/* test-backoff.c -- capped exponential backoff and its state changes (backoff.h). */
#include "testutil.h"

#include "backoff.h"

#define MS (1000LL * 1000)
#define S (1000 * MS)

START_TEST(doubles_to_the_cap_and_resets)
{
    static const int64_t waits[] = {250 * MS, 500 * MS, 1 * S, 2 * S, 4 * S, 8 * S, 16 * S, 30 * S, 30 * S, 30 * S};
    struct berth_backoff b;
    int64_t now = 1000 * S;
    size_t i;

    berth_backoff_init(&b, BERTH_BACKOFF_INITIAL_NS, BERTH_BACKOFF_MAX_NS);
    ck_assert(berth_backoff_due(&b, 0)); /* working: always due */
    ck_assert(!berth_backoff_failing(&b));
    ck_assert_int_eq(berth_backoff_wait_ns(&b, now), 0);
    for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
        /* Only the first failure of a period is a change worth a log line. */
        ck_assert(berth_backoff_failed(&b, now) == (i == 0));
        ck_assert(berth_backoff_failing(&b));
        ck_assert_int_eq(berth_backoff_wait_ns(&b, now), waits[i]);
        ck_assert(!berth_backoff_due(&b, now));
        ck_assert(!berth_backoff_due(&b, now + waits[i] - 1));
        ck_assert(berth_backoff_due(&b, now + waits[i]));
        now += waits[i];
    }
    ck_assert_uint_eq(b.failures, sizeof(waits) / sizeof(waits[0]));
    ck_assert_int_eq(b.since_ns, 1000 * S);
    /* A success ends the period once, and the next failure starts from the beginning. */
    ck_assert(berth_backoff_succeeded(&b));
    ck_assert(!berth_backoff_succeeded(&b));
    ck_assert(berth_backoff_due(&b, 0));
    ck_assert_uint_eq(b.failures, 0);
    ck_assert(berth_backoff_failed(&b, now));
    ck_assert_int_eq(berth_backoff_wait_ns(&b, now), 250 * MS);
}
END_TEST

START_TEST(bounds_are_corrected_and_nothing_overflows)
{
    struct berth_backoff b;
    int i;

    berth_backoff_init(&b, 0, -5);
    ck_assert_int_eq(b.initial_ns, 1);
    ck_assert_int_eq(b.max_ns, 1);
    berth_backoff_init(&b, 3 * S, 1 * S);
    ck_assert_int_eq(b.max_ns, 3 * S);

    berth_backoff_init(&b, 1, INT64_MAX);
    for (i = 0; i < 100; i++)
        berth_backoff_failed(&b, 0);
    ck_assert_int_eq(b.delay_ns, INT64_MAX);
    ck_assert(!berth_backoff_due(&b, INT64_MAX - 1));
    /* The next try saturates instead of wrapping into the past. */
    berth_backoff_failed(&b, INT64_MAX - 10);
    ck_assert_int_eq(b.next_ns, INT64_MAX);
    ck_assert(!berth_backoff_due(&b, INT64_MAX - 1));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("backoff");
    TCase *tc = test_case(s, "backoff");

    tcase_add_test(tc, doubles_to_the_cap_and_resets);
    tcase_add_test(tc, bounds_are_corrected_and_nothing_overflows);
    return s;
}

TEST_MAIN()
