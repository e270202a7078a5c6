/* SPDX-License-Identifier: MIT */
/*
 * test-upload-request.c -- the evidence upload request and its parsers:
 * Content-Range (content-range.h), query strings (query.h), UUIDs
 * (uuid.h) and the rules of one request (upload-request.h).
 */
#include "testutil.h"

#include "content-range.h"
#include "macro.h"
#include "query.h"
#include "upload-request.h"
#include "uuid.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DIGEST "sha256:" D64

START_TEST(content_range)
{
    static const char *const bad[] = {
        "",          "-",       "0-",         "-5",          "5-4",           "bytes 0-9/10", "0-9/10", " 0-9",
        "0-9 ",      "+0-9",    "0--9",       "00-9",        "0-09",          "0x1-2",        "1-2-3",  "0,1",
        "1 - 2",     "a-b",     "0-9007199254740992",        "12345678901234567-12345678901234568",
    };
    uint64_t start = 7, end = 7;
    char buf[BERTHD_RANGE_BUFSZ];
    size_t i;

    ck_assert_int_eq(berthd_content_range_parse("0-0", &start, &end), 0);
    ck_assert_uint_eq(start, 0);
    ck_assert_uint_eq(end, 0);
    ck_assert_int_eq(berthd_content_range_parse("1048576-2097151", &start, &end), 0);
    ck_assert_uint_eq(start, 1048576);
    ck_assert_uint_eq(end, 2097151);
    ck_assert_int_eq(berthd_content_range_parse("9007199254740991-9007199254740991", &start, &end), 0);
    ck_assert_uint_eq(end, BERTHD_RANGE_POS_MAX);
    for (i = 0; i < ELEMENTSOF(bad); i++) {
        start = end = 7;
        ck_assert_msg(berthd_content_range_parse(bad[i], &start, &end) == -EBADMSG, "accepted \"%s\"", bad[i]);
        ck_assert_uint_eq(start, 7); /* nothing written on failure */
    }
    ck_assert_int_eq(berthd_content_range_parse(NULL, &start, &end), -EINVAL);

    ck_assert_int_eq(berthd_range_format(1, buf), 0);
    ck_assert_str_eq(buf, "0-0");
    ck_assert_int_eq(berthd_range_format(1048576, buf), 0);
    ck_assert_str_eq(buf, "0-1048575");
    ck_assert_int_eq(berthd_range_format(0, buf), -EINVAL);
    ck_assert_int_eq(berthd_range_format(BERTHD_RANGE_POS_MAX + 2, buf), -EINVAL);
}
END_TEST

START_TEST(uuids)
{
    char a[BERTHD_UUID_LEN + 1], b[BERTHD_UUID_LEN + 1];
    static const char *const bad[] = {
        "",
        "0f0e9a2c-5b7d-4c3e-8f1a-2b3c4d5e6f7",   /* short */
        "0f0e9a2c-5b7d-4c3e-8f1a-2b3c4d5e6f7a0", /* long */
        "0F0E9A2C-5B7D-4C3E-8F1A-2B3C4D5E6F7A",  /* upper case */
        "0f0e9a2c-5b7d-1c3e-8f1a-2b3c4d5e6f7a",  /* version 1 */
        "0f0e9a2c-5b7d-4c3e-cf1a-2b3c4d5e6f7a",  /* variant 110x */
        "0f0e9a2c-5b7d-4c3e-7f1a-2b3c4d5e6f7a",  /* variant 0xxx */
        "0f0e9a2c5b7d-4c3e-8f1a-2b3c4d5e6f7a-",  /* dashes moved */
        "{f0e9a2c-5b7d-4c3e-8f1a-2b3c4d5e6f7a}",
        "0f0e9a2c-5b7d-4c3e-8f1a-2b3c4d5e6f7g",
        "../../../../../../../../../etc/passw",
    };
    size_t i;

    ck_assert(berthd_uuid_valid("0f0e9a2c-5b7d-4c3e-8f1a-2b3c4d5e6f7a"));
    ck_assert(berthd_uuid_valid("0f0e9a2c-5b7d-4c3e-bf1a-2b3c4d5e6f7a"));
    for (i = 0; i < ELEMENTSOF(bad); i++)
        ck_assert_msg(!berthd_uuid_valid(bad[i]), "accepted \"%s\"", bad[i]);
    ck_assert(!berthd_uuid_valid(NULL));
    ck_assert_int_eq(berthd_uuid_new(a), 0);
    ck_assert_int_eq(berthd_uuid_new(b), 0);
    ck_assert_msg(berthd_uuid_valid(a), "%s", a);
    ck_assert_str_ne(a, b);
    ck_assert_int_eq(berthd_uuid_new(NULL), -EINVAL);
}
END_TEST

static void query_refused(const char *q, const char *needle)
{
    static const char *const keys[] = {"after", "limit", NULL};
    char *v[2] = {(char *)"x", (char *)"y"}, why[160] = "";

    ck_assert_msg(berthd_query_parse(q, keys, v, why, sizeof(why)) == -EBADMSG, "accepted \"%s\"", q);
    ck_assert_msg(strstr(why, needle), "\"%s\": \"%s\" lacks \"%s\"", q, why, needle);
    ck_assert_ptr_null(v[0]);
    ck_assert_ptr_null(v[1]);
}

START_TEST(queries)
{
    static const char *const keys[] = {"after", "limit", NULL};
    char *v[2] = {0}, why[160] = "", big[BERTHD_QUERY_MAX + 2];

    ck_assert_int_eq(berthd_query_parse(NULL, keys, v, why, sizeof(why)), 0);
    ck_assert_ptr_null(v[0]);
    ck_assert_int_eq(berthd_query_parse("", keys, v, why, sizeof(why)), 0);
    ck_assert_int_eq(berthd_query_parse("limit=10&after=a%2Fb%3a+c", keys, v, why, sizeof(why)), 0);
    ck_assert_str_eq(v[0], "a/b:+c"); /* "+" is not a space */
    ck_assert_str_eq(v[1], "10");
    berthd_query_free(keys, v);
    ck_assert_ptr_null(v[0]);
    ck_assert_int_eq(berthd_query_parse("after=", keys, v, why, sizeof(why)), 0);
    ck_assert_str_eq(v[0], "");
    ck_assert_ptr_null(v[1]);
    berthd_query_free(keys, v);

    query_refused("after", "query parameter 1 is not key=value");
    query_refused("=1", "query parameter 1 is not key=value");
    query_refused("after=1&", "query parameter 2 is not key=value");
    query_refused("after=1&&limit=2", "query parameter 2 is not key=value");
    query_refused("after=1&after=2", "the query parameter after is given twice");
    query_refused("limit=1&other=2", "query parameter 2 is not one this resource takes");
    query_refused("Limit=1", "query parameter 1 is not one this resource takes");
    query_refused("lim%69t=1", "query parameter 1 is not one this resource takes");
    query_refused("after=%2", "after has a \"%\" not followed by two hex digits");
    query_refused("after=%zz", "not followed by two hex digits");
    query_refused("after=a%20b", "after decodes to a byte that is not visible ASCII");
    query_refused("after=%00", "not visible ASCII");
    query_refused("after=%7F", "not visible ASCII");
    query_refused("after=%c3%a9", "not visible ASCII");
    query_refused("after=1&limit=1&after=1&after=1&after=1&after=1&after=1&after=1&after=1", "given twice");
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "after=", 6);
    query_refused(big, "the query string is longer than 2048 bytes");
    big[6 + BERTHD_QUERY_VALUE_MAX + 1] = '\0';
    query_refused(big, "after is longer than 512 bytes");
    big[6 + BERTHD_QUERY_VALUE_MAX] = '\0';
    ck_assert_int_eq(berthd_query_parse(big, keys, v, why, sizeof(why)), 0);
    ck_assert_uint_eq(strlen(v[0]), BERTHD_QUERY_VALUE_MAX);
    berthd_query_free(keys, v);
}
END_TEST

START_TEST(media_types)
{
    static const char *const good[] = {"text/plain", "application/vnd.berth.report+json", "a/b", "x-foo/y_z.1"};
    static const char *const bad[] = {"",           "text",         "/plain",         "text/",
                                      "text/plain;charset=utf-8",   "text/plain ",    " text/plain",
                                      "text//plain", "text/pl ain", "-text/plain",    "text/+json",
                                      "a/b/c",      "t\xc3\xa9xt/plain"};
    char long_name[300];
    size_t i;

    for (i = 0; i < ELEMENTSOF(good); i++)
        ck_assert_msg(berthd_media_type_valid(good[i]), "refused %s", good[i]);
    for (i = 0; i < ELEMENTSOF(bad); i++)
        ck_assert_msg(!berthd_media_type_valid(bad[i]), "accepted \"%s\"", bad[i]);
    memset(long_name, 'a', sizeof(long_name));
    long_name[127] = '/';
    long_name[255] = '\0';
    ck_assert(berthd_media_type_valid(long_name)); /* 127 "/" 127 */
    long_name[127] = 'a';
    long_name[128] = '/';
    ck_assert(!berthd_media_type_valid(long_name)); /* a type of 128 */
    ck_assert(!berthd_media_type_valid(NULL));
}
END_TEST

static void refused(enum berthd_upload_op op, const char *query, const char *range, uint64_t len, const char *needle)
{
    struct berthd_upload_request rq = {.length = 99};
    struct berthd_http_refusal why = {0};

    ck_assert_msg(berthd_upload_request_parse(op, query, range, len, &rq, &why) == -EBADMSG, "accepted %s %s",
                  query ? query : "-", range ? range : "-");
    ck_assert_int_eq(why.status, 400);
    ck_assert_str_eq(why.code, "malformed");
    ck_assert_msg(strstr(why.message, needle), "\"%s\" lacks \"%s\"", why.message, needle);
    ck_assert_uint_eq(rq.length, 99);
}

static struct berthd_upload_request accepted(enum berthd_upload_op op, const char *query, const char *range,
                                             uint64_t len)
{
    struct berthd_upload_request rq;
    struct berthd_http_refusal why = {0};

    ck_assert_msg(berthd_upload_request_parse(op, query, range, len, &rq, &why) == 0, "%s", why.message);
    return rq;
}

START_TEST(requests)
{
    struct berthd_upload_request rq;
    struct berthd_http_refusal why;

    /* POST: a session, optionally with a declared size. */
    rq = accepted(BERTHD_UPLOAD_START, NULL, NULL, 0);
    ck_assert(!rq.monolithic && !rq.has_digest && !rq.has_size && !rq.has_range);
    ck_assert_str_eq(rq.media_type, "application/octet-stream");
    rq = accepted(BERTHD_UPLOAD_START, "size=268435456", NULL, 0);
    ck_assert(rq.has_size);
    ck_assert_uint_eq(rq.size, 268435456);
    refused(BERTHD_UPLOAD_START, NULL, NULL, 5, "takes no body");
    refused(BERTHD_UPLOAD_START, NULL, "0-4", 0, "a POST takes no Content-Range");
    refused(BERTHD_UPLOAD_START, "media_type=text/plain", NULL, 0, "media_type is given with the digest");
    refused(BERTHD_UPLOAD_START, "size=-1", NULL, 0, "size must be a decimal byte count");
    refused(BERTHD_UPLOAD_START, "size=01", NULL, 0, "size must be a decimal byte count");
    refused(BERTHD_UPLOAD_START, "size=9007199254740992", NULL, 0, "size must be a decimal byte count");
    refused(BERTHD_UPLOAD_START, "size=1&size=1", NULL, 0, "given twice");
    refused(BERTHD_UPLOAD_START, "name=x", NULL, 0, "not one this resource takes");

    /* POST ?digest=: monolithic. */
    rq = accepted(BERTHD_UPLOAD_START, "digest=" DIGEST "&media_type=text/plain&size=5", NULL, 5);
    ck_assert(rq.monolithic && rq.has_digest);
    ck_assert_str_eq(rq.digest, DIGEST);
    ck_assert_str_eq(rq.media_type, "text/plain");
    ck_assert_uint_eq(rq.length, 5);
    rq = accepted(BERTHD_UPLOAD_START, "digest=" DIGEST, NULL, 0); /* the empty object */
    ck_assert(rq.monolithic);
    refused(BERTHD_UPLOAD_START, "digest=" DIGEST "&size=4", NULL, 5, "size is 4 but the body holds 5 bytes");
    refused(BERTHD_UPLOAD_START, "digest=sha256:" D64 "0", NULL, 5, "digest must be sha256:");
    refused(BERTHD_UPLOAD_START, "digest=SHA256:" D64, NULL, 5, "digest must be sha256:");
    refused(BERTHD_UPLOAD_START, "digest=sha256%3A0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
            NULL, 5, "digest must be sha256:");
    refused(BERTHD_UPLOAD_START, "digest=" DIGEST "&media_type=text", NULL, 5, "media_type must be a type/subtype");
    refused(BERTHD_UPLOAD_START, "digest=" DIGEST, "0-4", 5, "a POST takes no Content-Range");
    /* Percent-encoded is the same digest. */
    rq = accepted(BERTHD_UPLOAD_START, "digest=sha256%3a" D64 "&media_type=application%2Fjson", NULL, 1);
    ck_assert_str_eq(rq.digest, DIGEST);
    ck_assert_str_eq(rq.media_type, "application/json");

    /* PATCH: a chunk, its range optional but exact. */
    rq = accepted(BERTHD_UPLOAD_CHUNK, NULL, NULL, 1024);
    ck_assert(!rq.has_range);
    ck_assert_uint_eq(rq.length, 1024);
    rq = accepted(BERTHD_UPLOAD_CHUNK, NULL, "1024-2047", 1024);
    ck_assert(rq.has_range);
    ck_assert_uint_eq(rq.start, 1024);
    ck_assert_uint_eq(rq.end, 2047);
    rq = accepted(BERTHD_UPLOAD_CHUNK, "", NULL, 0);
    refused(BERTHD_UPLOAD_CHUNK, NULL, "1024-2047", 1023, "the Content-Range names 1024 bytes but the body holds 1023");
    refused(BERTHD_UPLOAD_CHUNK, NULL, "1024-2047", 1025, "names 1024 bytes");
    refused(BERTHD_UPLOAD_CHUNK, NULL, "0-0", 0, "the body is empty");
    refused(BERTHD_UPLOAD_CHUNK, NULL, "bytes 0-9/10", 10, "Content-Range must be <start>-<end>");
    refused(BERTHD_UPLOAD_CHUNK, NULL, "", 10, "Content-Range must be <start>-<end>");
    refused(BERTHD_UPLOAD_CHUNK, NULL, "9-0", 10, "Content-Range must be");
    refused(BERTHD_UPLOAD_CHUNK, "digest=" DIGEST, NULL, 10, "not one this resource takes");

    /* PUT: commit, with an optional last chunk. */
    rq = accepted(BERTHD_UPLOAD_COMMIT, "digest=" DIGEST, NULL, 0);
    ck_assert(rq.has_digest && !rq.monolithic);
    ck_assert_str_eq(rq.media_type, "application/octet-stream");
    rq = accepted(BERTHD_UPLOAD_COMMIT, "media_type=text/csv&digest=" DIGEST, "10-19", 10);
    ck_assert_str_eq(rq.media_type, "text/csv");
    ck_assert(rq.has_range);
    refused(BERTHD_UPLOAD_COMMIT, NULL, NULL, 0, "a commit (PUT) needs ?digest=");
    refused(BERTHD_UPLOAD_COMMIT, "media_type=text/csv", NULL, 0, "a commit (PUT) needs ?digest=");
    refused(BERTHD_UPLOAD_COMMIT, "digest=" DIGEST "&size=3", NULL, 3, "not one this resource takes");
    refused(BERTHD_UPLOAD_COMMIT, "digest=" DIGEST, "0-3", 3, "names 4 bytes");

    ck_assert_int_eq(berthd_upload_request_parse((enum berthd_upload_op)9, NULL, NULL, 0, &rq, &why), -EINVAL);
    ck_assert_int_eq(berthd_upload_request_parse(BERTHD_UPLOAD_START, NULL, NULL, 0, NULL, &why), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("upload-request");
    TCase *tc = test_case(s, "upload-request");

    tcase_add_test(tc, content_range);
    tcase_add_test(tc, uuids);
    tcase_add_test(tc, queries);
    tcase_add_test(tc, media_types);
    tcase_add_test(tc, requests);
    return s;
}

TEST_MAIN()
