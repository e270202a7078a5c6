/* SPDX-License-Identifier: MIT */
/* test-canon.c -- strict JSON parsing and canonical serialisation (canon.h). */
#include "testutil.h"

#include <stdint.h>

#include "buf.h"
#include "canon.h"
#include "jsonobj.h"
#include "macro.h"

#define MAX ((size_t)1 << 20)

/* Canonicalise @in; assert success and that the output is @want. */
static void assert_canon(const char *in, size_t in_len, const char *want)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *out = NULL;
    size_t out_len = 0;
    int r;

    r = berth_json_canonicalize(in, in_len, MAX, &out, &out_len, &err);
    ck_assert_msg(r == 0, "canonicalize failed (%d): %s", r, err.message);
    ck_assert_uint_eq(out_len, strlen(want));
    ck_assert_mem_eq(out, want, out_len);
    ck_assert_int_eq(out[out_len], '\0');
}

/* Assert @in is refused with @code and a message containing @needle. */
static void assert_refused(const char *in, size_t in_len, int code, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *out = (char *)"untouched";
    size_t out_len = 12345;
    int r;

    r = berth_json_canonicalize(in, in_len, MAX, &out, &out_len, &err);
    ck_assert_msg(r == code, "input %.60s: expected %d, got %d (%s)", in, code, r, err.message);
    ck_assert_int_eq(err.code, code);
    ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"", err.message, needle);
    ck_assert_str_eq(out, "untouched"); /* ret_ untouched on failure */
    ck_assert_uint_eq(out_len, 12345);
}

#define CANON(in, want) assert_canon((in), sizeof(in) - 1, (want))
#define REFUSED(in, needle) assert_refused((in), sizeof(in) - 1, -EBADMSG, (needle))

START_TEST(whitespace_and_order)
{
    CANON("{\n  \"b\" : [ 1 , 2 ],\n\t\"a\" : { \"y\": null, \"x\": true }\n}\n",
          "{\"a\":{\"x\":true,\"y\":null},\"b\":[1,2]}");
    CANON("  [ ]  ", "[]");
    CANON("{}", "{}");
    CANON("\"s\"", "\"s\"");
    CANON("false", "false");
    CANON("-42", "-42");
}
END_TEST

/* RFC 8785 section 3.2.3: keys sort by UTF-16 code units, so the emoji
 * (surrogates D83D DE00) sorts before U+FB33, unlike code-point order. */
START_TEST(rfc8785_key_order)
{
    CANON("{\"\\u20ac\":\"Euro Sign\",\"\\r\":\"Carriage Return\",\"\\ufb33\":\"Hebrew Letter Dalet With Dagesh\","
          "\"1\":\"One\",\"\\ud83d\\ude00\":\"Emoji: Grinning Face\",\"\\u0080\":\"Control\",\"\\u00f6\":\"Latin Small "
          "Letter O With Diaeresis\"}",
          "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":\"Latin Small Letter O "
          "With Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\","
          "\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}");
    /* Prefixes sort first. */
    CANON("{\"ab\":1,\"a\":2,\"\":3}", "{\"\":3,\"a\":2,\"ab\":1}");
}
END_TEST

/* RFC 8785 section 3.2.2.2 string example. */
START_TEST(rfc8785_string_escapes)
{
    CANON("\"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\"",
          "\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"");
    /* Every required short escape, other controls as lowercase \u00XX, DEL literal. */
    CANON("\"\\b\\f\\n\\r\\t\\u0001\\u001F\\u000b\\u007f\"", "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u000b\x7f\"");
    /* A surrogate pair becomes the literal character. */
    CANON("\"\\uD83D\\uDE00\"", "\"\xf0\x9f\x98\x80\"");
}
END_TEST

START_TEST(integers)
{
    CANON("[0,-1,9007199254740991,-9007199254740991]", "[0,-1,9007199254740991,-9007199254740991]");
    REFUSED("9007199254740992", "outside");
    REFUSED("[-9007199254740992]", "$[0]: integer -9007199254740992 is outside");
    REFUSED("{\"a\":{\"b\":[1,99999999999999999]}}", "$.a.b[1]");
    REFUSED("123456789012345678901234567890", "byte 30: integer is outside +/-(2^53-1)");
    REFUSED("1.0", "byte 0: number '1.0' is not an integer");
    REFUSED("[1,2.5]", "byte 3: number '2.5'");
    REFUSED("1e2", "number '1e2'");
    REFUSED("1E2", "number '1E2'");
    REFUSED("-0", "byte 0: -0 is not allowed");
    REFUSED("[-0]", "byte 1: -0");
    REFUSED("-0.0", "not an integer");
    REFUSED("01", "invalid token");
    REFUSED("+1", "invalid token");
    /* Digits inside strings are not numbers. */
    CANON("\"1.5e3 -0\"", "\"1.5e3 -0\"");
}
END_TEST

START_TEST(refusals)
{
    REFUSED("{\"a\":1,\"a\":2}", "byte 10: duplicate object key");
    REFUSED("{\"x\":{\"a\":1,\"\\u0061\":2}}", "duplicate object key");
    REFUSED("\"\\ud800\"", "invalid Unicode");
    REFUSED("\"\\udc00\"", "invalid Unicode");
    REFUSED("\"\\ud800x\"", "invalid Unicode");
    REFUSED("\"a\\u0000b\"", "byte 10: a NUL character (\\u0000) is not allowed");
    REFUSED("\xef\xbb\xbf{}", "byte 0: a byte order mark is not allowed");
    REFUSED("{} x", "byte 4: end of file expected");
    REFUSED("{}{}", "end of file expected");
    REFUSED("", "byte 0");
    REFUSED("   ", "byte");
    REFUSED("\"\xff\"", "unable to decode byte 0xff");
    REFUSED("\"\xc0\x80\"", "unable to decode");
    REFUSED("\"\xed\xa0\x80\"", "unable to decode");
    REFUSED("[1,]", "unexpected token");
    REFUSED("{\"a\"}", "byte");
    REFUSED("nul", "invalid token");
    REFUSED("NaN", "invalid token");
    /* A raw NUL byte is refused anywhere, not treated as the end of input
     * (jansson alone skips one after a number or a literal). */
    assert_refused("{}\0", 3, -EBADMSG, "byte 2: a NUL byte is not allowed");
    assert_refused("\"a\0b\"", 5, -EBADMSG, "byte 2: a NUL byte is not allowed");
    assert_refused("[1\0]", 4, -EBADMSG, "byte 2: a NUL byte is not allowed");
    assert_refused("1\0", 2, -EBADMSG, "byte 1: a NUL byte is not allowed");
    assert_refused("{\"a\":true\0,\"b\":null\0}", 21, -EBADMSG, "byte 9: a NUL byte");
}
END_TEST

static char *nested(const char *open, const char *close, int depth)
{
    size_t lo = strlen(open), lc = strlen(close);
    char *s = malloc((lo + lc) * (size_t)depth + 1), *p = s;
    int i;

    ck_assert_ptr_nonnull(s);
    for (i = 0; i < depth; i++, p += lo)
        memcpy(p, open, lo);
    for (i = 0; i < depth; i++, p += lc)
        memcpy(p, close, lc);
    *p = '\0';
    return s;
}

START_TEST(nesting_depth)
{
    _cleanup_free_ char *a32 = nested("[", "]", 32), *a33 = nested("[", "]", 33), *o32 = nested("{\"k\":", "}", 32),
                        *o33 = nested("{\"k\":", "}", 33), *deep = nested("[", "]", 10000);
    _cleanup_free_ char *o32v = NULL, *o33v = NULL;

    assert_canon(a32, strlen(a32), a32);
    assert_refused(a33, strlen(a33), -EBADMSG, "byte 32: nesting deeper than 32 levels");
    /* Objects need a value at the bottom. */
    ck_assert_int_gt(asprintf(&o32v, "%.*s1%s", 32 * 5, o32, o32 + 32 * 5), 0);
    ck_assert_int_gt(asprintf(&o33v, "%.*s1%s", 33 * 5, o33, o33 + 33 * 5), 0);
    assert_canon(o32v, strlen(o32v), o32v);
    assert_refused(o33v, strlen(o33v), -EBADMSG, "nesting deeper than 32");
    assert_refused(deep, strlen(deep), -EBADMSG, "byte 32: nesting deeper than 32");
    /* Brackets inside strings, even after an escaped quote, do not nest. */
    CANON("[\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]",
          "[\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"]");
}
END_TEST

/* Item budgets keep a small document from claiming gigabytes in jansson. */
START_TEST(item_budgets)
{
    struct berth_error err = BERTH_ERROR_INIT;
    size_t n = BERTH_JSON_MAX_CONTAINERS, i, len;
    _cleanup_free_ char *objs = malloc(3 * (n + 1) + 2), *ints = malloc(2 * (size_t)BERTH_JSON_MAX_ITEMS + 2);
    _cleanup_free_ char *out = NULL;
    char *p;

    /* [{},{},...]: the outer array plus n - 1 objects is exactly the limit. */
    p = objs;
    *p++ = '[';
    for (i = 0; i < n - 1; i++)
        p += sprintf(p, "%s{}", i ? "," : "");
    len = (size_t)(p - objs) + 1;
    *p++ = ']';
    ck_assert_int_eq(berth_json_canonicalize(objs, len, 1 << 22, &out, NULL, &err), 0);
    free(TAKE_PTR(out));
    memcpy(p - 1, ",{}]", 4);
    ck_assert_int_eq(berth_json_canonicalize(objs, len + 3, 1 << 22, &out, NULL, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "byte 393214: more than 131072 arrays and objects");

    /* [0,0,...]: the array plus MAX_ITEMS - 1 zeros fits, one more does not. */
    p = ints;
    *p++ = '[';
    for (i = 0; i < (size_t)BERTH_JSON_MAX_ITEMS - 1; i++) {
        if (i)
            *p++ = ',';
        *p++ = '0';
    }
    *p++ = ']';
    ck_assert_int_eq(berth_json_canonicalize(ints, (size_t)(p - ints), 1 << 22, &out, NULL, &err), 0);
    free(TAKE_PTR(out));
    memcpy(p - 1, ",0]", 3);
    ck_assert_int_eq(berth_json_canonicalize(ints, (size_t)(p - ints) + 2, 1 << 22, &out, NULL, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "more than 1048576 values and member names"));
}
END_TEST

/* When jansson cannot allocate, the caller hears -ENOMEM, not "bad input".
 * jansson reports most allocation failures with an empty message, which is
 * what these budgets hit; a few (a failed key string) it reports as a syntax
 * error, which berth cannot tell apart.  The item budgets keep a document's
 * memory small enough that this is not a practical concern. */
static int alloc_budget;
static void *failing_malloc(size_t n)
{
    return alloc_budget-- > 0 ? malloc(n) : NULL;
}

START_TEST(parse_out_of_memory)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *v = NULL;
    const char *doc = "{\"a\":[1,2,3],\"b\":{\"c\":\"d\"}}";

    json_set_alloc_funcs(failing_malloc, free);
    alloc_budget = 0;
    ck_assert_int_eq(berth_json_parse(doc, strlen(doc), 1024, &v, &err), -ENOMEM);
    ck_assert_str_eq(err.message, "out of memory while parsing");
    alloc_budget = 5;
    ck_assert_int_eq(berth_json_parse(doc, strlen(doc), 1024, &v, &err), -ENOMEM);
    ck_assert_ptr_null(v);
    alloc_budget = 1000;
    ck_assert_int_eq(berth_json_parse(doc, strlen(doc), 1024, &v, &err), 0);
}
END_TEST

START_TEST(member_paths)
{
    REFUSED("{\"limits\":{\"pids\":9007199254740992}}", "$.limits.pids: integer");
    REFUSED("{\"a b\":[9007199254740992]}", "$[\"a b\"][0]: integer");
    /* Control characters in a key are escaped: the message stays one line. */
    REFUSED("{\"a\\nb\":9007199254740992}", "$[\"a\\u000ab\"]: integer");
    REFUSED("{\"\\u001b[31m\\\"\":9007199254740992}", "$[\"\\u001b[31m\\\"\"]: integer");
}
END_TEST

START_TEST(byte_bound)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *v = NULL;
    const char *doc = "{\"a\":1}";

    ck_assert_int_eq(berth_json_parse(doc, 7, 7, &v, &err), 0);
    ck_assert_int_eq(berth_json_parse(doc, 7, 6, &v, &err), -EFBIG);
    ck_assert_ptr_nonnull(strstr(err.message, "7 bytes, more than the 6 allowed"));
    ck_assert_int_eq(berth_json_parse(NULL, 0, 6, &v, &err), -EINVAL);
}
END_TEST

/* serialise(parse(x)) == x for canonical x. */
START_TEST(round_trip)
{
    static const char *docs[] = {
        "{}",
        "[]",
        "null",
        "{\"a\":[true,false,null,0,-5,\"\"],\"b\":{\"c\":{\"d\":[[]]}}}",
        "{\"argv\":[\"/bin/sh\",\"-c\",\"echo hi\"],\"limits\":{\"pids\":64},\"schema_version\":1}",
        "\"tab\\tquote\\\"slash/backslash\\\\ \xe2\x82\xac\"",
        "{\"\\u001f\":1,\"\xf0\x9f\x98\x80\":2,\"\xef\xbf\xbf\":3}",
    };
    size_t i;

    for (i = 0; i < ELEMENTSOF(docs); i++)
        assert_canon(docs[i], strlen(docs[i]), docs[i]);
}
END_TEST

/* A random document survives serialise -> parse -> serialise unchanged. */
static json_t *random_value(unsigned *seed, int depth)
{
    int kind = depth >= 6 ? rand_r(seed) % 5 : rand_r(seed) % 7;
    char key[8];
    json_t *v;
    int i, n;

    switch (kind) {
    case 0: return json_null();
    case 1: return json_boolean(rand_r(seed) & 1);
    case 2: return json_integer((json_int_t)rand_r(seed) * (rand_r(seed) & 1 ? 1 : -1));
    case 3: {
        char s[16];
        n = rand_r(seed) % 15;
        for (i = 0; i < n; i++)
            s[i] = (char)(1 + rand_r(seed) % 126); /* controls, quotes, backslashes included */
        return json_stringn(s, (size_t)n);
    }
    case 4: return json_string("\xc3\xa9\xf0\x9f\x98\x80\xef\xac\xb3");
    case 5:
        v = json_array();
        n = rand_r(seed) % 4;
        for (i = 0; i < n; i++)
            json_array_append_new(v, random_value(seed, depth + 1));
        return v;
    default:
        v = json_object();
        n = rand_r(seed) % 4;
        for (i = 0; i < n; i++) {
            snprintf(key, sizeof(key), "%c%d", "aZ\x7f~"[rand_r(seed) % 4], rand_r(seed) % 100);
            json_object_set_new(v, key, random_value(seed, depth + 1));
        }
        return v;
    }
}

START_TEST(random_idempotent)
{
    unsigned seed = 20261129;
    int i;

    for (i = 0; i < 2000; i++) {
        _cleanup_json_ json_t *v = random_value(&seed, 0), *back = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t alen = 0, blen = 0;
        struct berth_error err = BERTH_ERROR_INIT;

        ck_assert_int_eq(berth_json_serialize(v, 0, &a, &alen, &err), 0);
        ck_assert_msg(berth_json_parse(a, alen, MAX, &back, &err) == 0, "%s: %s", a, err.message);
        ck_assert_int_eq(berth_json_serialize(back, 0, &b, &blen, &err), 0);
        ck_assert_uint_eq(alen, blen);
        ck_assert_mem_eq(a, b, alen);
        ck_assert(json_equal(v, back));
    }
}
END_TEST

START_TEST(serialize_refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *real = json_pack("{s:[i,f]}", "a", 1, 1.5);
    _cleanup_json_ json_t *big = json_pack("{s:[i,I]}", "a", 1, (json_int_t)9007199254740992LL);
    _cleanup_json_ json_t *nul = json_pack("{s:s%}", "k", "a\0b", (size_t)3);
    _cleanup_json_ json_t *badutf = json_object();
    _cleanup_json_ json_t *deep = json_array();
    _cleanup_free_ char *out = NULL;
    json_t *cur = deep;
    int i;

    ck_assert_int_eq(berth_json_serialize(real, 0, &out, NULL, &err), -EINVAL);
    ck_assert_str_eq(err.message, "$.a[1]: real numbers cannot be serialised canonically");
    ck_assert_int_eq(berth_json_serialize(big, 0, &out, NULL, &err), -EINVAL);
    ck_assert_str_eq(err.message, "$.a[1]: integer 9007199254740992 is outside +/-(2^53-1)");
    ck_assert_ptr_nonnull(nul);
    ck_assert_int_eq(berth_json_serialize(nul, 0, &out, NULL, &err), -EINVAL);
    ck_assert_str_eq(err.message, "$.k: string contains a NUL character");
    json_object_set_new(badutf, "v", json_string_nocheck("\xff"));
    ck_assert_int_eq(berth_json_serialize(badutf, 0, &out, NULL, &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "$.v: string is not valid UTF-8"));
    for (i = 0; i < 32; i++) {
        json_t *n = json_array();
        json_array_append_new(cur, n);
        cur = n;
    }
    ck_assert_int_eq(berth_json_serialize(deep, 0, &out, NULL, &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "nesting deeper than 32"));
    ck_assert_ptr_null(out);
    ck_assert_int_eq(berth_json_serialize(real, 0, NULL, NULL, &err), -EINVAL);
}
END_TEST

/* berth_json_emit() serialises and releases; a NULL document (a failed
 * json_pack) is -ENOMEM. */
START_TEST(emit_steals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *out = NULL;
    size_t len = 0;

    ck_assert_int_eq(berth_json_emit(json_pack("{s:i, s:s}", "b", 1, "a", "x"), &out, &len, &err), 0);
    ck_assert_str_eq(out, "{\"a\":\"x\",\"b\":1}");
    ck_assert_uint_eq(len, 15);
    free(out);
    ck_assert_int_eq(berth_json_emit(NULL, &out, &len, &err), -ENOMEM);
    ck_assert_int_eq(berth_json_emit(json_real(1.5), &out, &len, &err), -EINVAL);
}
END_TEST

START_TEST(serialize_bound)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *v = json_pack("{s:s}", "key", "value"); /* {"key":"value"} = 15 bytes */
    _cleanup_free_ char *out = NULL;
    size_t len = 0;

    ck_assert_int_eq(berth_json_serialize(v, 14, &out, &len, &err), -EFBIG);
    ck_assert_ptr_null(out);
    ck_assert_int_eq(berth_json_serialize(v, 15, &out, &len, &err), 0);
    ck_assert_uint_eq(len, 15);
    ck_assert_str_eq(out, "{\"key\":\"value\"}");
}
END_TEST

/* A string that is refused itself (NUL, invalid UTF-8) says so whatever
 * the output bound, once the serialiser reaches it: its refusal comes
 * before any of its output, as when strings were checked before writing. */
START_TEST(serialize_refusal_before_bound)
{
    static const struct {
        const char *value;
        size_t len;
        const char *message;
    } cases[] = {
        {"\xff", 1, "$.v: string is not valid UTF-8 (byte 0)"},
        {"\n\t\xff", 3, "$.v: string is not valid UTF-8 (byte 2)"},
        {"a\"b\0c", 5, "$.v: string contains a NUL character"},
        {"\x01\xc3", 2, "$.v: string is not valid UTF-8 (byte 1)"},
    };
    size_t k, max;

    for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        _cleanup_json_ json_t *v = json_object();

        ck_assert_int_eq(json_object_set_new(v, "v", json_stringn_nocheck(cases[k].value, cases[k].len)), 0);
        /* {"v": is 5 bytes: up to there the bound fails first. */
        for (max = 1; max < 40; max++) {
            struct berth_error err = BERTH_ERROR_INIT;
            char *out = NULL;
            int r = berth_json_serialize(v, max, &out, NULL, &err);

            ck_assert_ptr_null(out);
            if (max < 5) {
                ck_assert_int_eq(r, -EFBIG);
            } else {
                ck_assert_msg(r == -EINVAL, "case %zu, bound %zu: %d %s", k, max, r, err.message);
                ck_assert_str_eq(err.message, cases[k].message);
            }
        }
    }
}
END_TEST

/* Members sort alike however many an object has (small objects sort on the
 * stack, larger ones with qsort): ASCII keys by byte, then an astral
 * character (a surrogate pair, D83D DE00) before U+E000 and U+FFFF. */
START_TEST(member_order_sizes)
{
    static const char *const tail[] = {"\xf0\x9f\x98\x80", "\xee\x80\x80", "\xef\xbf\xbf"};
    static const size_t sizes[] = {3, 4, 15, 16, 17, 40};
    size_t k, i;

    for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], plain = n - 3;
        _cleanup_json_ json_t *v = json_object();
        _cleanup_free_ char *out = NULL;
        struct berth_buf want = BERTH_BUF_INIT(0);
        struct berth_error err = BERTH_ERROR_INIT;
        char key[24];

        /* Inserted in reverse order. */
        for (i = 3; i-- > 0;)
            ck_assert_int_eq(json_object_set_new(v, tail[i], json_integer((json_int_t)(plain + i))), 0);
        for (i = plain; i-- > 0;) {
            snprintf(key, sizeof(key), "k%02zu", i);
            ck_assert_int_eq(json_object_set_new(v, key, json_integer((json_int_t)i)), 0);
        }
        ck_assert_int_eq(berth_buf_append(&want, "{", 1), 0);
        for (i = 0; i < n; i++) {
            char member[64];
            int len;

            if (i < plain)
                snprintf(key, sizeof(key), "k%02zu", i);
            len = snprintf(member, sizeof(member), "%s\"%s\":%zu", i ? "," : "", i < plain ? key : tail[i - plain], i);
            ck_assert_int_eq(berth_buf_append(&want, member, (size_t)len), 0);
        }
        ck_assert_int_eq(berth_buf_append(&want, "}", 1), 0);
        ck_assert_int_eq(berth_json_serialize(v, 0, &out, NULL, &err), 0);
        ck_assert_str_eq(out, want.data);
        berth_buf_free(&want);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("canon");
    TCase *tc = test_case(s, "canonical");

    tcase_add_test(tc, whitespace_and_order);
    tcase_add_test(tc, rfc8785_key_order);
    tcase_add_test(tc, rfc8785_string_escapes);
    tcase_add_test(tc, integers);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, nesting_depth);
    tcase_add_test(tc, item_budgets);
    tcase_add_test(tc, parse_out_of_memory);
    tcase_add_test(tc, member_paths);
    tcase_add_test(tc, byte_bound);
    tcase_add_test(tc, round_trip);
    tcase_add_test(tc, random_idempotent);
    tcase_add_test(tc, serialize_refusals);
    tcase_add_test(tc, serialize_bound);
    tcase_add_test(tc, member_order_sizes);
    tcase_add_test(tc, serialize_refusal_before_bound);
    tcase_add_test(tc, emit_steals);
    return s;
}

TEST_MAIN()
