/* SPDX-License-Identifier: MIT */
/* test-openssl-error.c -- OpenSSL's reason as a berth error (openssl-error.h). */
#include "testutil.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "openssl-error.h"

/* A real OpenSSL failure: a PEM read of bytes that hold no PEM. */
static void fail_a_pem_read(void)
{
    BIO *bio = BIO_new_mem_buf("not PEM", -1);
    ck_assert_ptr_nonnull(bio);
    ck_assert_ptr_null(PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL));
    BIO_free(bio);
    ck_assert_uint_ne(ERR_peek_last_error(), 0);
}

START_TEST(reason_recorded_and_queue_emptied)
{
    struct berth_error err = BERTH_ERROR_INIT;

    fail_a_pem_read();
    ck_assert_int_eq(berth_openssl_error(&err, EBADMSG, "the key"), -EBADMSG);
    ck_assert_int_eq(err.code, -EBADMSG);
    ck_assert_msg(strncmp(err.message, "the key: error:", 15) == 0, "message: %s", err.message);
    ck_assert_msg(strlen(err.message) > 15, "no reason: %s", err.message);
    ck_assert_uint_eq(ERR_peek_last_error(), 0);
}
END_TEST

START_TEST(empty_queue_and_null_reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;

    ERR_clear_error();
    ck_assert_int_eq(berth_openssl_error(&err, -EIO, "nothing failed"), -EIO);
    ck_assert_str_eq(err.message, "nothing failed");
    fail_a_pem_read();
    ck_assert_int_eq(berth_openssl_error(NULL, -EPROTO, "ignored"), -EPROTO);
    ck_assert_uint_eq(ERR_peek_last_error(), 0);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("openssl-error");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, reason_recorded_and_queue_emptied);
    tcase_add_test(tc, empty_queue_and_null_reterr);
    suite_add_tcase(s, tc);
    return s;
}

TEST_MAIN()
