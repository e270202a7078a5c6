/* SPDX-License-Identifier: MIT */
/* test-jsonobj.c -- strict member access and nanosecond strings (jsonobj.h). */
#include "testutil.h"

#include "jsonobj.h"
#include "macro.h"

START_TEST(members)
{
    static const char *const allowed[] = {"a", "b", NULL};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *o = json_pack("{s:s, s:i}", "a", "x", "b", 5), *bad = json_pack("{s:i}", "c", 1);
    const char *s = "unset";
    int64_t n = 7;

    ck_assert_int_eq(berth_json_only_members(o, "doc", allowed, &err), 0);
    ck_assert_int_eq(berth_json_only_members(bad, "doc", allowed, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "doc: unknown member \"c\"");
    ck_assert_int_eq(berth_json_only_members(json_object_get(o, "b"), "doc", allowed, &err), -EBADMSG);

    ck_assert_int_eq(berth_json_string_member(o, "doc", "a", true, &s, &err), 0);
    ck_assert_str_eq(s, "x");
    ck_assert_int_eq(berth_json_string_member(o, "doc", "b", true, &s, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "doc.b must be a string");
    ck_assert_int_eq(berth_json_string_member(o, "doc", "z", true, &s, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "doc.z is missing");
    ck_assert_int_eq(berth_json_string_member(o, "doc", "z", false, &s, &err), 0);
    ck_assert_ptr_null(s);

    ck_assert_int_eq(berth_json_int_member(o, "doc", "b", true, 0, 10, &n, &err), 0);
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(berth_json_int_member(o, "doc", "b", true, 6, 10, &n, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "doc.b is 5, outside 6..10");
    n = 42;
    ck_assert_int_eq(berth_json_int_member(o, "doc", "z", false, 0, 10, &n, &err), 0);
    ck_assert_int_eq(n, 42); /* default kept */
    ck_assert_int_eq(berth_json_int_member(o, "doc", "a", false, 0, 10, &n, &err), -EBADMSG);
}
END_TEST

START_TEST(nanoseconds)
{
    _cleanup_json_ json_t *now = berth_json_ns(1796342400123456789LL), *zero = berth_json_ns(0);
    static const char *const bad[] = {
        "", "01", "-1", "+1", "1.0", "1e3", "9223372036854775808", "12345678901234567890", " 1"};
    int64_t v = 0;
    size_t i;

    ck_assert_str_eq(json_string_value(now), "1796342400123456789");
    ck_assert_int_eq(berth_json_ns_value(now, &v), 0);
    ck_assert_int_eq(v, 1796342400123456789LL);
    ck_assert_int_eq(berth_json_ns_value(zero, &v), 0);
    ck_assert_int_eq(v, 0);
    ck_assert_ptr_null(berth_json_ns(-1));
    for (i = 0; i < ELEMENTSOF(bad); i++) {
        _cleanup_json_ json_t *s = json_string(bad[i]);
        ck_assert_msg(berth_json_ns_value(s, &v) == -EBADMSG, "accepted \"%s\"", bad[i]);
    }
    {
        _cleanup_json_ json_t *max = json_string("9223372036854775807"), *num = json_integer(5);
        ck_assert_int_eq(berth_json_ns_value(max, &v), 0);
        ck_assert_int_eq(v, INT64_MAX);
        ck_assert_int_eq(berth_json_ns_value(num, &v), -EBADMSG); /* a number is not the encoding */
    }
}
END_TEST

/* Base64url members: decoded into a fresh buffer; absent is no bytes; anything else is refused. */
START_TEST(base64url)
{
    json_t *v = json_string("aGkK"), *bad = json_string("aGk+"), *num = json_integer(1);
    uint8_t *out = NULL;
    size_t len = 99;

    ck_assert_int_eq(berth_json_b64_value(v, &out, &len), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_mem_eq(out, "hi\n", 3);
    ck_assert_int_eq(out[3], 0);
    free(out);
    ck_assert_int_eq(berth_json_b64_value(NULL, &out, &len), 0);
    ck_assert_ptr_null(out);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(berth_json_b64_value(bad, &out, &len), -EBADMSG); /* '+' is base64, not base64url */
    ck_assert_ptr_null(out);
    ck_assert_int_eq(berth_json_b64_value(num, &out, &len), -EBADMSG);
    json_decref(v);
    json_decref(bad);
    json_decref(num);
}
END_TEST

START_TEST(hex)
{
    ck_assert(berth_is_hex("00ff", 4));
    ck_assert(!berth_is_hex("00FF", 4));
    ck_assert(!berth_is_hex("00f", 4));
    ck_assert(!berth_is_hex("00ff0", 4));
    ck_assert(!berth_is_hex(NULL, 0));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("jsonobj");
    TCase *tc = test_case(s, "jsonobj");

    tcase_add_test(tc, members);
    tcase_add_test(tc, nanoseconds);
    tcase_add_test(tc, hex);
    tcase_add_test(tc, base64url);
    return s;
}

TEST_MAIN()
