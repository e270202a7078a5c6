/* SPDX-License-Identifier: MIT */
/* test-buf.c -- bounded growable buffer (buf.h). */
#include "testutil.h"

#include "buf.h"

START_TEST(append_and_steal)
{
    struct berth_buf b = BERTH_BUF_INIT(0);
    char big[1000];
    size_t len = 0;
    char *out;
    int i;

    memset(big, 'x', sizeof(big));
    ck_assert_int_eq(berth_buf_append(&b, "ab", 2), 0);
    ck_assert_int_eq(berth_buf_putc(&b, 'c'), 0);
    ck_assert_str_eq(b.data, "abc");
    for (i = 0; i < 100; i++) /* forces several reallocations */
        ck_assert_int_eq(berth_buf_append(&b, big, sizeof(big)), 0);
    ck_assert_uint_eq(b.len, 3 + 100 * sizeof(big));
    ck_assert_int_eq(b.data[b.len], '\0');
    out = berth_buf_steal(&b, &len);
    ck_assert_uint_eq(len, 100003);
    ck_assert_mem_eq(out, "abcxxx", 6);
    ck_assert_ptr_null(b.data);
    ck_assert_uint_eq(b.len, 0);
    free(out);
}
END_TEST

START_TEST(bound)
{
    struct berth_buf b = BERTH_BUF_INIT(5);

    ck_assert_int_eq(berth_buf_append(&b, "12345", 5), 0);
    ck_assert_int_eq(berth_buf_putc(&b, '6'), -EFBIG);
    ck_assert_int_eq(berth_buf_append(&b, "", 0), 0);
    ck_assert_str_eq(b.data, "12345"); /* nothing partial was appended */
    berth_buf_free(&b);
    ck_assert_ptr_null(b.data);
    ck_assert_int_eq(berth_buf_append(&b, "123456", 6), -EFBIG);
}
END_TEST

START_TEST(steal_empty)
{
    struct berth_buf b = BERTH_BUF_INIT(0);
    size_t len = 99;
    char *out = berth_buf_steal(&b, &len);

    ck_assert_ptr_nonnull(out);
    ck_assert_str_eq(out, "");
    ck_assert_uint_eq(len, 0);
    free(out);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("buf");
    TCase *tc = test_case(s, "buf");

    tcase_add_test(tc, append_and_steal);
    tcase_add_test(tc, bound);
    tcase_add_test(tc, steal_empty);
    return s;
}

TEST_MAIN()
