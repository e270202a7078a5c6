/* SPDX-License-Identifier: MIT */
/* test-error.c -- <berth/error.h> and <berth/cleanup.h>. */
#include "testutil.h"

#include <berth/cleanup.h>
#include <berth/error.h>

START_TEST(set_and_prefix)
{
    struct berth_error e = BERTH_ERROR_INIT;

    ck_assert_int_eq(berth_error_set(&e, -ENOENT, "no %s", "file"), -ENOENT);
    ck_assert_int_eq(e.code, -ENOENT);
    ck_assert_str_eq(e.message, "no file");
    ck_assert_int_eq(berth_error_set(&e, EPERM, "positive"), -EPERM); /* stored negative */
    ck_assert_int_eq(e.code, -EPERM);
    ck_assert_int_eq(berth_error_set(&e, 0, "zero"), -EIO); /* a failure always fails */
    ck_assert_int_eq(berth_error_set(NULL, -EINVAL, "nowhere"), -EINVAL);
    berth_error_set(&e, -EPERM, "mode is 0644");
    berth_error_prefix(&e, "reading %s", "key.pem");
    ck_assert_str_eq(e.message, "reading key.pem: mode is 0644");
    ck_assert_int_eq(e.code, -EPERM);
    berth_error_clear(&e);
    ck_assert_int_eq(e.code, 0);
    ck_assert_str_eq(e.message, "");
    berth_error_prefix(&e, "context");
    ck_assert_str_eq(e.message, "context");
    berth_error_prefix(NULL, "ignored");
    berth_error_clear(NULL);
}
END_TEST

START_TEST(control_characters)
{
    struct berth_error e = BERTH_ERROR_INIT;

    berth_error_set(&e, -EINVAL, "key \"%s\" is bad", "a\nb\x1b[31m\x7f\xc3\xa9");
    ck_assert_str_eq(e.message, "key \"a?b?[31m?\xc3\xa9\" is bad"); /* UTF-8 kept */
    berth_error_prefix(&e, "file\t%s", "x");
    ck_assert_str_eq(e.message, "file?x: key \"a?b?[31m?\xc3\xa9\" is bad");
    berth_error_sanitize(NULL);
}
END_TEST

/* Truncation inside a multi-byte character leaves valid UTF-8. */
START_TEST(utf8_truncation)
{
    struct berth_error e = BERTH_ERROR_INIT;
    char text[BERTH_ERROR_MESSAGE_MAX + 8], copy[16];

    memset(text, 'a', BERTH_ERROR_MESSAGE_MAX - 2);
    strcpy(text + BERTH_ERROR_MESSAGE_MAX - 2, "\xe2\x82\xac"); /* the euro sign straddles the end */
    berth_error_set(&e, -EINVAL, "%s", text);
    ck_assert_uint_eq(strlen(e.message), BERTH_ERROR_MESSAGE_MAX - 2);
    ck_assert_int_eq(e.message[strlen(e.message) - 1], 'a');
    strcpy(copy, "ok \xc3\xa9");
    berth_error_sanitize(copy); /* complete: untouched */
    ck_assert_str_eq(copy, "ok \xc3\xa9");
    strcpy(copy, "cut \xf0\x9f\x98");
    berth_error_sanitize(copy);
    ck_assert_str_eq(copy, "cut ");
}
END_TEST

START_TEST(truncation)
{
    struct berth_error e = BERTH_ERROR_INIT;
    char big[2 * BERTH_ERROR_MESSAGE_MAX];

    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    berth_error_set(&e, -E2BIG, "%s", big);
    ck_assert_uint_eq(strlen(e.message), BERTH_ERROR_MESSAGE_MAX - 1);
    berth_error_prefix(&e, "%s", big);
    ck_assert_uint_eq(strlen(e.message), BERTH_ERROR_MESSAGE_MAX - 1);
}
END_TEST

static int cleanup_scope(int *ret_fd_seen, char **ret_taken)
{
    _cleanup_close_ int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    _cleanup_free_ char *kept = strdup("kept");
    _cleanup_free_ char *freed = strdup("freed");

    *ret_fd_seen = fd;
    *ret_taken = TAKE_PTR(kept);
    ck_assert_ptr_null(kept);
    return freed ? 0 : -1;
}

START_TEST(cleanup_helpers)
{
    char *taken = NULL;
    int fd = -1, fd2;

    ck_assert_int_eq(cleanup_scope(&fd, &taken), 0);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fcntl(fd, F_GETFD), -1); /* closed when the scope ended */
    ck_assert_int_eq(errno, EBADF);
    ck_assert_str_eq(taken, "kept"); /* survived: ownership was taken */
    free(taken);

    {
        _cleanup_close_ int inner = open("/dev/null", O_RDONLY | O_CLOEXEC);
        fd2 = TAKE_FD(inner);
        ck_assert_int_eq(inner, -1);
    }
    ck_assert_int_ge(fcntl(fd2, F_GETFD), 0); /* still open: taken */
    close(fd2);

    {
        int bogus = 1000000;
        errno = ENOSPC;
        berth_closep(&bogus);            /* close fails with EBADF ... */
        ck_assert_int_eq(errno, ENOSPC); /* ... but errno is preserved */
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("error");
    TCase *tc = test_case(s, "error");

    tcase_add_test(tc, set_and_prefix);
    tcase_add_test(tc, control_characters);
    tcase_add_test(tc, truncation);
    tcase_add_test(tc, utf8_truncation);
    tcase_add_test(tc, cleanup_helpers);
    return s;
}

TEST_MAIN()
