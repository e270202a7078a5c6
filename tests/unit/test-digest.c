/* SPDX-License-Identifier: MIT */
/* test-digest.c -- SHA-256 digests (digest.h); vectors from FIPS 180-4 examples. */
#include "testutil.h"

#include "digest.h"
#include "jsonobj.h"
#include "macro.h"

#define EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ABC "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define MILLION_A "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

START_TEST(known_vectors)
{
    char d[BERTH_DIGEST_BUFSZ];

    ck_assert_int_eq(berth_digest_bytes("", 0, d), 0);
    ck_assert_str_eq(d, EMPTY);
    ck_assert_int_eq(berth_digest_bytes(NULL, 0, d), 0);
    ck_assert_str_eq(d, EMPTY);
    ck_assert_int_eq(berth_digest_bytes("abc", 3, d), 0);
    ck_assert_str_eq(d, ABC);
    ck_assert_uint_eq(strlen(d), BERTH_DIGEST_STRLEN);
    ck_assert_int_eq(berth_digest_bytes(NULL, 1, d), -EINVAL);
}
END_TEST

START_TEST(streaming_matches)
{
    struct berth_sha256 *ctx = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    char d[BERTH_DIGEST_BUFSZ], chunk[997];
    size_t done = 0;

    memset(chunk, 'a', sizeof(chunk));
    ck_assert_int_eq(berth_sha256_new(&ctx), 0);
    while (done < 1000000) {
        size_t n = 1000000 - done < sizeof(chunk) ? 1000000 - done : sizeof(chunk);
        ck_assert_int_eq(berth_sha256_update(ctx, chunk, n), 0);
        done += n;
    }
    ck_assert_int_eq(berth_sha256_update(ctx, NULL, 0), 0);
    ck_assert_int_eq(berth_sha256_final(ctx, raw), 0);
    berth_sha256_free(ctx);
    berth_digest_format(raw, d);
    ck_assert_str_eq(d, MILLION_A);
    berth_sha256_free(NULL);
}
END_TEST

START_TEST(fd_digest)
{
    char d[BERTH_DIGEST_BUFSZ];
    int p[2];

    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], "xabc", 4), 4);
    close(p[1]);
    ck_assert_int_eq(read(p[0], d, 1), 1); /* from the current offset on */
    ck_assert_int_eq(berth_digest_fd(p[0], d), 0);
    ck_assert_str_eq(d, ABC);
    close(p[0]);
    ck_assert_int_eq(berth_digest_fd(-1, d), -EINVAL);
    ck_assert_int_eq(berth_digest_fd(p[0], d), -EBADF);
}
END_TEST

START_TEST(json_digest_is_canonical)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *a = json_pack("{s:i,s:[s,b]}", "b", 1, "a", "x", 1);
    _cleanup_json_ json_t *bad = json_pack("{s:f}", "a", 0.5);
    char d1[BERTH_DIGEST_BUFSZ], d2[BERTH_DIGEST_BUFSZ];
    const char *canon = "{\"a\":[\"x\",true],\"b\":1}";

    ck_assert_int_eq(berth_digest_json(a, d1, &err), 0);
    ck_assert_int_eq(berth_digest_bytes(canon, strlen(canon), d2), 0);
    ck_assert_str_eq(d1, d2);
    ck_assert_int_eq(berth_digest_json(bad, d1, &err), -EINVAL);
}
END_TEST

START_TEST(parse)
{
    uint8_t raw[BERTH_SHA256_LEN], want[BERTH_SHA256_LEN];
    char d[BERTH_DIGEST_BUFSZ];

    ck_assert_int_eq(berth_sha256("abc", 3, want), 0);
    ck_assert_int_eq(berth_digest_parse(ABC, raw), 0);
    ck_assert_mem_eq(raw, want, sizeof(raw));
    berth_digest_format(raw, d);
    ck_assert_str_eq(d, ABC);
    ck_assert_int_eq(berth_digest_parse("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", raw),
                     -EINVAL);
    ck_assert_int_eq(berth_digest_parse("sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", raw),
                     -EINVAL);
    ck_assert_int_eq(berth_digest_parse("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", raw),
                     -EINVAL);
    ck_assert_int_eq(berth_digest_parse(ABC "0", raw), -EINVAL);
    ck_assert_int_eq(berth_digest_parse("sha256:", raw), -EINVAL);
    ck_assert_int_eq(berth_digest_parse(NULL, raw), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("digest");
    TCase *tc = test_case(s, "digest");

    tcase_add_test(tc, known_vectors);
    tcase_add_test(tc, streaming_matches);
    tcase_add_test(tc, fd_digest);
    tcase_add_test(tc, json_digest_is_canonical);
    tcase_add_test(tc, parse);
    return s;
}

TEST_MAIN()
