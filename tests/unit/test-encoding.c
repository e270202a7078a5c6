/* SPDX-License-Identifier: MIT */
/* test-encoding.c -- hex and base64url (encoding.h); vectors from RFC 4648 section 10. */
#include "testutil.h"

#include "encoding.h"

START_TEST(hex)
{
    const uint8_t bytes[] = {0x00, 0x01, 0xab, 0xff};
    uint8_t back[4];
    char text[9];

    berth_hex_encode(bytes, sizeof(bytes), text);
    ck_assert_str_eq(text, "0001abff");
    ck_assert_int_eq(berth_hex_decode(text, 8, back, 4), 0);
    ck_assert_mem_eq(back, bytes, 4);
    ck_assert_int_eq(berth_hex_decode("0001ABFF", 8, back, 4), -EINVAL); /* one spelling only */
    ck_assert_int_eq(berth_hex_decode("0001abf", 7, back, 4), -EINVAL);
    ck_assert_int_eq(berth_hex_decode("0001abfg", 8, back, 4), -EINVAL);
    ck_assert_int_eq(berth_hex_decode("0001abff00", 10, back, 4), -EINVAL);
    berth_hex_encode(bytes, 0, text);
    ck_assert_str_eq(text, "");
}
END_TEST

START_TEST(base64url_vectors)
{
    static const struct {
        const char *in, *out;
    } v[] = {
        {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},          {"foo", "Zm9v"},
        {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"},
    };
    uint8_t back[16];
    char text[32];
    size_t i, n;

    for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        size_t len = strlen(v[i].in);
        ck_assert_uint_eq(BERTH_BASE64URL_LEN(len), strlen(v[i].out));
        ck_assert_int_eq(berth_base64url_encode((const uint8_t *)v[i].in, len, text, sizeof(text)), 0);
        ck_assert_str_eq(text, v[i].out);
        ck_assert_int_eq(berth_base64url_decode(v[i].out, strlen(v[i].out), back, sizeof(back), &n), 0);
        ck_assert_uint_eq(n, len);
        ck_assert_mem_eq(back, v[i].in, len);
    }
}
END_TEST

START_TEST(base64url_alphabet)
{
    const uint8_t bytes[] = {0xfb, 0xff, 0xbf};
    uint8_t back[8];
    char text[8];
    size_t n;

    ck_assert_int_eq(berth_base64url_encode(bytes, 3, text, sizeof(text)), 0);
    ck_assert_str_eq(text, "-_-_");
    ck_assert_int_eq(berth_base64url_decode("-_-_", 4, back, sizeof(back), &n), 0);
    ck_assert_mem_eq(back, bytes, 3);
    ck_assert_int_eq(berth_base64url_encode(bytes, 3, text, 4), -EINVAL); /* no room for NUL */
}
END_TEST

START_TEST(base64url_strict)
{
    uint8_t back[8];
    size_t n = 77;

    ck_assert_int_eq(berth_base64url_decode("Zg==", 4, back, sizeof(back), &n), -EINVAL); /* padding */
    ck_assert_int_eq(berth_base64url_decode("+/+/", 4, back, sizeof(back), &n), -EINVAL); /* standard alphabet */
    ck_assert_int_eq(berth_base64url_decode("Zm 9v", 5, back, sizeof(back), &n), -EINVAL);
    ck_assert_int_eq(berth_base64url_decode("Zm9\n", 4, back, sizeof(back), &n), -EINVAL);
    ck_assert_int_eq(berth_base64url_decode("Zh", 2, back, sizeof(back), &n), -EINVAL);    /* non-zero spare bits */
    ck_assert_int_eq(berth_base64url_decode("Zm9vY", 5, back, sizeof(back), &n), -EINVAL); /* impossible length */
    ck_assert_int_eq(berth_base64url_decode("Zm9vYmFy", 8, back, 5, &n), -ENOBUFS);
    ck_assert_uint_eq(n, 77); /* untouched on failure */
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("encoding");
    TCase *tc = test_case(s, "encoding");

    tcase_add_test(tc, hex);
    tcase_add_test(tc, base64url_vectors);
    tcase_add_test(tc, base64url_alphabet);
    tcase_add_test(tc, base64url_strict);
    return s;
}

TEST_MAIN()
