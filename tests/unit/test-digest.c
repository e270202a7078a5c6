/* SPDX-License-Identifier: MIT */
/*
 * test-digest.c -- SHA-256 digests (digest.h); vectors from FIPS 180-4
 * examples.  Built twice: test-digest on OpenSSL's SHA-256 (sha256-openssl.c),
 * and test-digest-lazy (BERTH_TEST_SHA256_LAZY) on sha256-lazy.c, which
 * berth-oci-shim links: the same vectors hold for both, and the lazy one
 * checks that it loads libcrypto for its first stream, and only then.
 */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>

#include "digest.h"
#include "jsonobj.h"
#include "macro.h"

#define EMPTY "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ABC "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define MILLION_A "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
#define TWO_BLOCKS_MSG "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
#define TWO_BLOCKS "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"

#ifdef BERTH_TEST_SHA256_LAZY
/* Whether OpenSSL's libcrypto is mapped into this process. */
static bool libcrypto_mapped(void)
{
    char line[512];
    bool found = false;
    FILE *f = fopen("/proc/self/maps", "re");

    ck_assert_ptr_nonnull(f);
    while (!found && fgets(line, sizeof(line), f))
        found = strstr(line, "/libcrypto.so") != NULL;
    fclose(f);
    return found;
}

/* sha256-lazy.c: no OpenSSL linked; one buffer is hashed without it, and the
 * first stream loads it.  (The OpenSSL build links libcrypto, so it has no
 * such case.) */
START_TEST(implementation)
{
    struct berth_sha256 *ctx = NULL;
    char d[BERTH_DIGEST_BUFSZ];

    ck_assert_msg(!libcrypto_mapped(), "test-digest-lazy must not link OpenSSL");
    ck_assert_int_eq(berth_digest_bytes("abc", 3, d), 0);
    ck_assert_str_eq(d, ABC);
    ck_assert_msg(!libcrypto_mapped(), "a digest of one buffer must not load OpenSSL");
    ck_assert_int_eq(berth_sha256_new(&ctx), 0);
    ck_assert_msg(libcrypto_mapped(), "a stream runs on OpenSSL");
    berth_sha256_free(ctx);
}
END_TEST
#endif

/* Every length across the 64-byte block and the 56-byte padding boundary,
 * fed in two pieces split anywhere: the same digest as in one piece. */
START_TEST(split_anywhere)
{
    uint8_t msg[200], one[BERTH_SHA256_LEN], two[BERTH_SHA256_LEN];
    char d[BERTH_DIGEST_BUFSZ];

    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 131 + 7);
    for (size_t len = 0; len <= sizeof(msg); len += len < 130 ? 1 : 7)
        for (size_t cut = 0; cut <= len; cut += 1 + len / 9) {
            struct berth_sha256 *ctx = NULL;
            ck_assert_int_eq(berth_sha256(msg, len, one), 0);
            ck_assert_int_eq(berth_sha256_new(&ctx), 0);
            ck_assert_int_eq(berth_sha256_update(ctx, msg, cut), 0);
            ck_assert_int_eq(berth_sha256_update(ctx, msg + cut, len - cut), 0);
            ck_assert_int_eq(berth_sha256_final(ctx, two), 0);
            berth_sha256_free(ctx);
            ck_assert_msg(memcmp(one, two, sizeof(one)) == 0, "length %zu cut at %zu", len, cut);
        }
    ck_assert_int_eq(berth_digest_bytes(TWO_BLOCKS_MSG, strlen(TWO_BLOCKS_MSG), d), 0);
    ck_assert_str_eq(d, TWO_BLOCKS);
}
END_TEST

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

/* berth_sha256_copy(): from an offset with pread, the position untouched,
 * copied when asked, bounded by max_bytes + 1. */
START_TEST(sha256_copy)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *dir = test_tmpdir(), *src = test_path(dir, "src"), *dst = test_path(dir, "dst");
    uint8_t raw[BERTH_SHA256_LEN], want[BERTH_SHA256_LEN];
    char d[BERTH_DIGEST_BUFSZ], buf[16];
    uint64_t len = 0;
    int in, out, p[2];

    test_write_file(src, "xxabc", 5, 0600);
    in = open(src, O_RDONLY | O_CLOEXEC);
    out = open(dst, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(out, 0);
    ck_assert_int_eq(lseek(in, 4, SEEK_SET), 4);
    ck_assert_int_eq(berth_sha256_copy(in, 2, out, 3, raw, &len, &err), 0);
    ck_assert_uint_eq(len, 3);
    berth_digest_format(raw, d);
    ck_assert_str_eq(d, ABC);
    ck_assert_int_eq(lseek(in, 0, SEEK_CUR), 4); /* not moved */
    ck_assert_int_eq(pread(out, buf, sizeof(buf), 0), 3);
    ck_assert(memcmp(buf, "abc", 3) == 0);
    /* Longer than max_bytes: max + 1 read, only max written, no digest. */
    memset(raw, 0, sizeof(raw));
    memset(want, 0, sizeof(want));
    ck_assert_int_eq(berth_sha256_copy(in, 0, -1, 4, raw, &len, &err), 0);
    ck_assert_uint_eq(len, 5);
    ck_assert(memcmp(raw, want, sizeof(raw)) == 0);
    ck_assert_int_eq(ftruncate(out, 0), 0);
    ck_assert_int_eq(lseek(out, 0, SEEK_SET), 0);
    ck_assert_int_eq(berth_sha256_copy(in, 0, out, 2, raw, &len, &err), 0);
    ck_assert_uint_eq(len, 3);
    ck_assert_int_eq(pread(out, buf, sizeof(buf), 0), 2);
    /* Empty from the end; a destination that fails is its errno. */
    ck_assert_int_eq(berth_sha256_copy(in, 5, -1, 10, raw, &len, &err), 0);
    ck_assert_uint_eq(len, 0);
    berth_digest_format(raw, d);
    ck_assert_str_eq(d, EMPTY);
    ck_assert_int_eq(pipe(p), 0);
    close(p[0]);
    signal(SIGPIPE, SIG_IGN);
    ck_assert_int_eq(berth_sha256_copy(in, 0, p[1], 10, raw, &len, &err), -EPIPE);
    ck_assert_ptr_nonnull(strstr(err.message, "writing"));
    close(p[1]);
    /* A source pread cannot read (a pipe) is the read's errno. */
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(berth_sha256_copy(p[0], 0, -1, 10, raw, &len, &err), -ESPIPE);
    ck_assert_ptr_nonnull(strstr(err.message, "reading"));
    close(p[0]);
    close(p[1]);
    ck_assert_int_eq(berth_sha256_copy(-1, 0, -1, 10, raw, &len, &err), -EINVAL);
    close(in);
    close(out);
    test_rm_rf(dir);
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

#ifdef BERTH_TEST_SHA256_LAZY
    tcase_add_test(tc, implementation);
#endif
    tcase_add_test(tc, known_vectors);
    tcase_add_test(tc, split_anywhere);
    tcase_add_test(tc, streaming_matches);
    tcase_add_test(tc, fd_digest);
    tcase_add_test(tc, sha256_copy);
    tcase_add_test(tc, json_digest_is_canonical);
    tcase_add_test(tc, parse);
    return s;
}

TEST_MAIN()
