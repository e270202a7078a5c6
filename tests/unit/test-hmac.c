/* SPDX-License-Identifier: MIT */
/* test-hmac.c -- HMAC-SHA256 (hmac.h) against RFC 4231 test cases 1, 2, 3 and 6. */
#include "testutil.h"

#include "encoding.h"
#include "hmac.h"

static void assert_mac(const uint8_t *key, size_t keylen, const void *msg, size_t len, const char *want_hex)
{
    uint8_t mac[BERTH_HMAC_SHA256_LEN];
    char hex[2 * BERTH_HMAC_SHA256_LEN + 1];

    ck_assert_int_eq(berth_hmac_sha256(key, keylen, msg, len, mac), 0);
    berth_hex_encode(mac, sizeof(mac), hex);
    ck_assert_str_eq(hex, want_hex);
    ck_assert_int_eq(berth_hmac_sha256_verify(key, keylen, msg, len, mac), 0);
}

START_TEST(rfc4231)
{
    uint8_t key[131], data[50];

    memset(key, 0x0b, 20);
    assert_mac(key, 20, "Hi There", 8, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    assert_mac((const uint8_t *)"Jefe", 4, "what do ya want for nothing?", 28,
               "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    memset(key, 0xaa, 20);
    memset(data, 0xdd, 50);
    assert_mac(key, 20, data, 50, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
    memset(key, 0xaa, 131);
    assert_mac(key, 131, "Test Using Larger Than Block-Size Key - Hash Key First", 54,
               "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}
END_TEST

START_TEST(verify_rejects)
{
    /* Non-zero last byte: HMAC pads short keys with zeros, so a key ending in
     * zero bytes equals its truncation. */
    const uint8_t key[32] = {1, 2, 3, [31] = 9};
    uint8_t mac[BERTH_HMAC_SHA256_LEN];

    ck_assert_int_eq(berth_hmac_sha256(key, sizeof(key), "event", 5, mac), 0);
    ck_assert_int_eq(berth_hmac_sha256_verify(key, sizeof(key), "event", 5, mac), 0);
    ck_assert_int_eq(berth_hmac_sha256_verify(key, sizeof(key), "evenT", 5, mac), -EBADMSG);
    mac[31] ^= 1;
    ck_assert_int_eq(berth_hmac_sha256_verify(key, sizeof(key), "event", 5, mac), -EBADMSG);
    mac[31] ^= 1;
    ck_assert_int_eq(berth_hmac_sha256_verify(key, 31, "event", 5, mac), -EBADMSG);
    ck_assert_int_eq(berth_hmac_sha256(key, 0, "event", 5, mac), -EINVAL);
    ck_assert_int_eq(berth_hmac_sha256(NULL, 32, "event", 5, mac), -EINVAL);
    ck_assert_int_eq(berth_hmac_sha256(key, 32, NULL, 5, mac), -EINVAL);
    ck_assert_int_eq(berth_hmac_sha256(key, 32, NULL, 0, mac), 0);
    ck_assert_int_eq(berth_hmac_sha256_verify(key, 32, "x", 1, NULL), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("hmac");
    TCase *tc = test_case(s, "hmac");

    tcase_add_test(tc, rfc4231);
    tcase_add_test(tc, verify_rejects);
    return s;
}

TEST_MAIN()
