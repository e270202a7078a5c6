/* SPDX-License-Identifier: MIT */
/*
 * test-outcheck.c -- the reader of declared outputs
 * (plugins/runtime-oci/outcheck.h) on a real directory tree: every verdict
 * (missing, too_large, symlink as the output, on its path and pointing
 * outside, hard_link, not_regular for a directory, FIFO and socket), the
 * exact size bound, the digest, a descriptor that is read-only at offset 0,
 * and the length proof of the digest.  A FIFO must be judged without
 * blocking (the test would hang), a link never followed (the file outside
 * is never the answer).
 */
#include "testutil.h"

#include <sys/socket.h>
#include <sys/un.h>

#include "digest.h"
#include "macro.h"
#include "outcheck.h"

static char *dir;
static int rootfd = -1;

static void setup(void)
{
    char *p;

    dir = test_tmpdir();
    p = test_path(dir, "root");
    ck_assert_int_eq(mkdir(p, 0700), 0);
    rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(rootfd, 0);
    free(p);
    p = test_path(dir, "outside");
    test_write_file(p, "secret", 6, 0600);
    free(p);
}

static void teardown(void)
{
    close(rootfd);
    test_rm_rf(dir);
    free(dir);
}

static void put(const char *rel, const char *data, size_t len)
{
    char *p = test_path(dir, "root"), *q = test_path(p, rel);
    test_write_file(q, data, len, 0644);
    free(p);
    free(q);
}

static char *in_root(const char *rel)
{
    char *p = test_path(dir, "root"), *q = test_path(p, rel);
    free(p);
    return q;
}

/* The verdict and errno on @rel with @max. */
static enum oci_output_problem verdict(const char *rel, uint64_t max, int *ret_r)
{
    enum oci_output_problem p = OCI_OUTPUT_OK;
    char digest[BERTH_DIGEST_BUFSZ];
    uint64_t size = 12345;
    int r = oci_output_capture(rootfd, rel, max, digest, &size, &p);

    if (r < 0)
        ck_assert_uint_eq(size, 12345); /* nothing written on failure */
    if (ret_r)
        *ret_r = r;
    return p;
}

START_TEST(valid_output)
{
    char want[BERTH_DIGEST_BUFSZ], got[BERTH_DIGEST_BUFSZ], buf[16];
    enum oci_output_problem p;
    uint64_t size = 0;
    int fd = -1, r;
    char *sub = in_root("a");

    ck_assert_int_eq(mkdir(sub, 0755), 0);
    free(sub);
    put("a/report.json", "{\"lines\":2}", 11);
    ck_assert_int_eq(berth_digest_bytes("{\"lines\":2}", 11, want), 0);
    /* Exactly at the bound is fine. */
    ck_assert_int_eq(oci_output_capture(rootfd, "a/report.json", 11, got, &size, &p), 0);
    ck_assert_int_eq(p, OCI_OUTPUT_OK);
    ck_assert_ptr_null(oci_output_problem_name(p));
    ck_assert_uint_eq(size, 11);
    ck_assert_str_eq(got, want);
    /* The descriptor: read-only, at 0, and the digest does not move it. */
    ck_assert_int_eq(oci_output_open(rootfd, "a/report.json", 4096, &fd, &size, &p), 0);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ck_assert_int_eq(oci_output_digest(fd, size, got), 0);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 11);
    /* A digest over a size other than the file's proves nothing: refused. */
    ck_assert_int_eq(oci_output_digest(fd, 10, got), -EIO);
    ck_assert_int_eq(oci_output_digest(fd, 12, got), -EIO);
    close(fd);
    /* An empty output is valid. */
    put("empty", "", 0);
    ck_assert_int_eq(oci_output_capture(rootfd, "empty", 1, got, &size, &p), 0);
    ck_assert_uint_eq(size, 0);
    ck_assert_str_eq(got, "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    (void)r;
}
END_TEST

START_TEST(invalid_outputs)
{
    char *p, *q;
    int r, fd;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};

    put("big", "0123456789", 10);
    ck_assert_int_eq(verdict("big", 9, &r), OCI_OUTPUT_TOO_LARGE);
    ck_assert_int_eq(r, -EFBIG);
    ck_assert_int_eq(verdict("nothing", 100, &r), OCI_OUTPUT_MISSING);
    ck_assert_int_eq(r, -ENOENT);
    ck_assert_int_eq(verdict("big/below", 100, &r), OCI_OUTPUT_MISSING); /* ENOTDIR */
    /* Links: the output itself, a directory on its path, one leading out. */
    p = in_root("link");
    ck_assert_int_eq(symlink("big", p), 0);
    free(p);
    ck_assert_int_eq(verdict("link", 100, &r), OCI_OUTPUT_SYMLINK);
    ck_assert_int_eq(r, -ELOOP);
    p = in_root("real");
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
    put("real/o", "x", 1);
    p = in_root("d");
    ck_assert_int_eq(symlink("real", p), 0);
    free(p);
    ck_assert_int_eq(verdict("d/o", 100, NULL), OCI_OUTPUT_SYMLINK);
    p = in_root("out");
    q = test_path(dir, "outside");
    ck_assert_int_eq(symlink(q, p), 0);
    free(p);
    p = in_root("up");
    ck_assert_int_eq(symlink("../outside", p), 0);
    ck_assert_int_eq(verdict("out", 100, NULL), OCI_OUTPUT_SYMLINK);
    ck_assert_int_eq(verdict("up", 100, NULL), OCI_OUTPUT_SYMLINK);
    free(p);
    /* A hard link, also one to a file outside the root. */
    p = in_root("hl");
    ck_assert_int_eq(link(q, p), 0);
    ck_assert_int_eq(verdict("hl", 100, &r), OCI_OUTPUT_HARD_LINK);
    ck_assert_int_eq(r, -EMLINK);
    free(p);
    free(q);
    /* Not regular: a directory, a FIFO (without blocking), a socket. */
    ck_assert_int_eq(verdict("real", 100, &r), OCI_OUTPUT_NOT_REGULAR);
    ck_assert_int_eq(r, -EBADFD);
    p = in_root("fifo");
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    free(p);
    ck_assert_int_eq(verdict("fifo", 100, NULL), OCI_OUTPUT_NOT_REGULAR);
    p = in_root("sock");
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", p);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    if (strlen(p) < sizeof(sa.sun_path)) {
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(verdict("sock", 100, NULL), OCI_OUTPUT_NOT_REGULAR);
    }
    close(fd);
    free(p);
    /* Nothing beneath the root can be named from outside it. */
    ck_assert_int_eq(verdict("../outside", 100, NULL), OCI_OUTPUT_UNREADABLE);
    ck_assert_int_eq(verdict("/etc/passwd", 100, &r), OCI_OUTPUT_UNREADABLE);
    ck_assert_int_eq(r, -EINVAL);
    /* The problem names inspect reports. */
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_MISSING), "missing");
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_TOO_LARGE), "too_large");
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_SYMLINK), "symlink");
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_HARD_LINK), "hard_link");
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_NOT_REGULAR), "not_regular");
    ck_assert_str_eq(oci_output_problem_name(OCI_OUTPUT_UNREADABLE), "unreadable");
}
END_TEST

START_TEST(relpath)
{
    ck_assert_str_eq(oci_output_relpath("/tmp/outputs/a/b"), "a/b");
    ck_assert_ptr_null(oci_output_relpath("/tmp/outputs/"));
    ck_assert_ptr_null(oci_output_relpath("/tmp/outputs"));
    ck_assert_ptr_null(oci_output_relpath("/tmp/outputsx/a"));
    ck_assert_ptr_null(oci_output_relpath("/inputs/a"));
    ck_assert_ptr_null(oci_output_relpath(NULL));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("outcheck");
    TCase *tc = test_case(s, "outcheck");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, valid_output);
    tcase_add_test(tc, invalid_outputs);
    tcase_add_test(tc, relpath);
    return s;
}

TEST_MAIN()
