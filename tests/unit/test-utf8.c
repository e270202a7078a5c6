/* SPDX-License-Identifier: MIT */
/* test-utf8.c -- strict UTF-8 and UTF-16 ordering (utf8.h). */
#include "testutil.h"

#include "utf8.h"

static void assert_decodes(const char *s, size_t len, uint32_t want)
{
    size_t pos = 0;
    uint32_t cp = 0;

    ck_assert_int_eq(berth_utf8_decode(s, len, &pos, &cp), 0);
    ck_assert_uint_eq(cp, want);
    ck_assert_uint_eq(pos, len);
}

static void assert_invalid(const char *s, size_t len)
{
    size_t pos = 0, bad = 99;
    uint32_t cp = 0;

    ck_assert_int_eq(berth_utf8_decode(s, len, &pos, &cp), -EILSEQ);
    ck_assert_uint_eq(pos, 0);
    ck_assert(!berth_utf8_valid(s, len, &bad));
    ck_assert_uint_eq(bad, 0);
}

START_TEST(decode_valid)
{
    assert_decodes("A", 1, 0x41);
    assert_decodes("\xc2\x80", 2, 0x80);
    assert_decodes("\xdf\xbf", 2, 0x7ff);
    assert_decodes("\xe0\xa0\x80", 3, 0x800);
    assert_decodes("\xed\x9f\xbf", 3, 0xd7ff);
    assert_decodes("\xee\x80\x80", 3, 0xe000);
    assert_decodes("\xef\xbf\xbf", 3, 0xffff);
    assert_decodes("\xf0\x90\x80\x80", 4, 0x10000);
    assert_decodes("\xf4\x8f\xbf\xbf", 4, 0x10ffff);
}
END_TEST

START_TEST(decode_invalid)
{
    assert_invalid("\x80", 1);             /* lone continuation */
    assert_invalid("\xc0\x80", 2);         /* overlong NUL */
    assert_invalid("\xc1\xbf", 2);         /* overlong */
    assert_invalid("\xe0\x80\x80", 3);     /* overlong */
    assert_invalid("\xf0\x80\x80\x80", 4); /* overlong */
    assert_invalid("\xed\xa0\x80", 3);     /* U+D800 */
    assert_invalid("\xed\xbf\xbf", 3);     /* U+DFFF */
    assert_invalid("\xf4\x90\x80\x80", 4); /* U+110000 */
    assert_invalid("\xf8\x88\x80\x80\x80", 5);
    assert_invalid("\xff", 1);
    assert_invalid("\xe2\x82", 2);     /* truncated */
    assert_invalid("\xe2\x28\xa1", 3); /* bad continuation */
}
END_TEST

START_TEST(valid_reports_offset)
{
    size_t bad = 0;

    ck_assert(berth_utf8_valid("", 0, &bad));
    ck_assert(berth_utf8_valid("h\xc3\xa9llo \xf0\x9f\x98\x80", 11, NULL));
    ck_assert(!berth_utf8_valid("abc\xc3", 4, &bad));
    ck_assert_uint_eq(bad, 3);
    ck_assert(!berth_utf8_valid("ok\xc3\xa9\xed\xa0\x80", 7, &bad));
    ck_assert_uint_eq(bad, 4);
}
END_TEST

#define CMP(a, b) berth_utf16_compare((a), sizeof(a) - 1, (b), sizeof(b) - 1)

START_TEST(utf16_order)
{
    ck_assert_int_eq(CMP("", ""), 0);
    ck_assert_int_lt(CMP("", "a"), 0);
    ck_assert_int_lt(CMP("a", "ab"), 0);
    ck_assert_int_gt(CMP("b", "ab"), 0);
    ck_assert_int_eq(CMP("\xc3\xa9", "\xc3\xa9"), 0);
    ck_assert_int_lt(CMP("\x7f", "\xc2\x80"), 0);
    /* U+10000 is D800 DC00 in UTF-16: before U+E000 and U+FFFF, although its
     * code point is larger (RFC 8785 section 3.2.3). */
    ck_assert_int_lt(CMP("\xf0\x90\x80\x80", "\xee\x80\x80"), 0);
    ck_assert_int_lt(CMP("\xf0\x90\x80\x80", "\xef\xbf\xbf"), 0);
    ck_assert_int_gt(CMP("\xf0\x90\x80\x80", "\xed\x9f\xbf"), 0); /* after U+D7FF */
    /* Two astral characters compare by their surrogates. */
    ck_assert_int_lt(CMP("\xf0\x9f\x98\x80", "\xf0\x9f\x98\x81"), 0);
    ck_assert_int_lt(CMP("\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"), 0);
    /* After a common ASCII prefix, the same rules. */
    ck_assert_int_lt(CMP("key\xf0\x90\x80\x80", "key\xee\x80\x80"), 0);
    ck_assert_int_gt(CMP("key\xf0\x90\x80\x80", "key\xed\x9f\xbf"), 0);
    ck_assert_int_lt(CMP("key", "key\xc3\xa9"), 0);
    ck_assert_int_gt(CMP("key\xc3\xa9", "key"), 0);
    ck_assert_int_lt(CMP("key\x7f", "key\xc2\x80"), 0);
    ck_assert_int_gt(CMP("keyb", "keya\xc3\xa9"), 0);
    ck_assert_int_lt(CMP("ke", "key"), 0);
    ck_assert_int_eq(CMP("key", "key"), 0);
    ck_assert_int_gt(CMP("key\xff", "key\xef\xbf\xbf"), 0);
    /* Invalid bytes still give a total order. */
    ck_assert_int_gt(CMP("\xff", "\xef\xbf\xbf"), 0);
    ck_assert_int_eq(CMP("\xff", "\xff"), 0);
}
END_TEST

START_TEST(lossy)
{
    char *out = NULL;

    ck_assert_int_eq(berth_utf8_lossy("plain \xc3\xa9", &out), 0);
    ck_assert_str_eq(out, "plain \xc3\xa9");
    free(out);
    ck_assert_int_eq(berth_utf8_lossy("bad\xff.so\xed\xa0\x80", &out), 0);
    ck_assert_str_eq(out, "bad\xef\xbf\xbd.so\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    ck_assert(berth_utf8_valid(out, strlen(out), NULL));
    free(out);
    ck_assert_int_eq(berth_utf8_lossy(NULL, &out), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("utf8");
    TCase *tc = test_case(s, "utf8");

    tcase_add_test(tc, decode_valid);
    tcase_add_test(tc, decode_invalid);
    tcase_add_test(tc, valid_reports_offset);
    tcase_add_test(tc, utf16_order);
    tcase_add_test(tc, lossy);
    return s;
}

TEST_MAIN()
