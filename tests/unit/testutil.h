/* SPDX-License-Identifier: MIT */
/*
 * testutil.h -- helpers shared by the Check suites under tests/unit/.
 *
 * Header-only so that every suite is one file.  Each suite defines
 * `static Suite *make_suite(void)` and ends with TEST_MAIN().
 */
#ifndef BERTH_TESTUTIL_H
#define BERTH_TESTUTIL_H

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "clock.h"

/** Run the suite; exit status 0 only when every test passed. */
#define TEST_MAIN()                                                                                                    \
    int main(void)                                                                                                     \
    {                                                                                                                  \
        SRunner *sr = srunner_create(make_suite());                                                                    \
        int failed;                                                                                                    \
        srunner_run_all(sr, CK_NORMAL);                                                                                \
        failed = srunner_ntests_failed(sr);                                                                            \
        srunner_free(sr);                                                                                              \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                                              \
    }

/** Add @tc with the given tests to @s. */
static inline TCase *test_case(Suite *s, const char *name)
{
    TCase *tc = tcase_create(name);
    suite_add_tcase(s, tc);
    return tc;
}

/** A fresh private directory under $TMPDIR (or /tmp); free() the result. */
static inline char *test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *path = NULL;

    if (!base || !*base)
        base = "/tmp";
    ck_assert_int_gt(asprintf(&path, "%s/berth-test-XXXXXX", base), 0);
    ck_assert_ptr_nonnull(mkdtemp(path));
    ck_assert_int_eq(chmod(path, 0755), 0);
    return path;
}

static inline int test_rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

/** rm -rf @path (no symlinks followed). */
static inline void test_rm_rf(const char *path)
{
    nftw(path, test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/** The entries of the directory @path other than "." and "..". */
static inline int test_count_entries(const char *path)
{
    struct dirent *e;
    DIR *d = opendir(path);
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/** Write @len bytes to @path with @mode (umask cleared); asserts success. */
static inline void test_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    ck_assert_int_eq(close(fd), 0);
}

/** Read a whole small file into a static-size buffer; returns its length. */
static inline size_t test_read_file(const char *path, char *buf, size_t bufsz)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    n = read(fd, buf, bufsz - 1);
    ck_assert_int_ge(n, 0);
    buf[n] = '\0';
    close(fd);
    return (size_t)n;
}

/** Copy the file @src to the new file @dst (mode @mode). */
static inline void test_copy_file(const char *src, const char *dst, mode_t mode)
{
    char buf[1 << 16];
    int in = open(src, O_RDONLY | O_CLOEXEC), out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    ssize_t n;

    ck_assert_int_ge(in, 0);
    ck_assert_int_ge(out, 0);
    while ((n = read(in, buf, sizeof(buf))) > 0)
        ck_assert_int_eq(write(out, buf, (size_t)n), n);
    ck_assert_int_eq(n, 0);
    close(in);
    ck_assert_int_eq(close(out), 0);
}

/** What a capturing log sink saw: the number of lines, the last level and line. */
struct test_log {
    int calls;
    int level;
    char line[2048];
};

/** A struct berth_logger sink recording into the struct test_log @userdata. */
static inline void test_log_sink(void *userdata, int level, const char *line)
{
    struct test_log *c = userdata;

    c->calls++;
    c->level = level;
    snprintf(c->line, sizeof(c->line), "%s", line);
}

/** Join @dir and @name into a new string. */
static inline char *test_path(const char *dir, const char *name)
{
    char *p = NULL;
    ck_assert_int_gt(asprintf(&p, "%s/%s", dir, name), 0);
    return p;
}

/** @clock now, in nanoseconds (berth_now_ns()); the test fails when it cannot be read. */
static inline int64_t test_now_ns(clockid_t clock)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t ns = 0;

    ck_assert_msg(berth_now_ns(clock, &ns, &err) == 0, "%s", err.message);
    return ns;
}

/**
 * test_tmpfs() - a fresh directory with a tmpfs of @size (mount(8)'s
 * "size=" syntax, e.g. "1m") mounted on it, mode 0700, for tests of what
 * happens when a filesystem is full; NULL when mounting fails (not root).
 * Suites use it through test_tmpfs_case().
 */
static inline char *test_tmpfs(const char *size)
{
    char *dir, opts[64];

    dir = test_tmpdir();
    snprintf(opts, sizeof(opts), "size=%s,mode=0700", size);
    if (mount("berth-test", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0) {
        rmdir(dir);
        free(dir);
        return NULL;
    }
    return dir;
}

/** Unmount and remove a test_tmpfs() directory; accepts NULL. */
static inline void test_tmpfs_free(char *dir)
{
    if (!dir)
        return;
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    free(dir);
}

/* The tmpfs of a test_tmpfs_case(): its size and, while mounted, its directory. */
struct test_fs {
    const char *size;
    char *dir;
};

static inline struct test_fs *test_fs_state(void)
{
    static struct test_fs fs;
    return &fs;
}

/** test_fs() - the directory of the current test_tmpfs_case()'s tmpfs. */
static inline const char *test_fs(void)
{
    return test_fs_state()->dir;
}

static inline void test_fs_mount(void)
{
    test_fs_state()->dir = test_tmpfs(test_fs_state()->size);
    ck_assert_msg(test_fs_state()->dir, "cannot mount a tmpfs: %s", strerror(errno));
}

static inline void test_fs_umount(void)
{
    test_tmpfs_free(test_fs_state()->dir);
    test_fs_state()->dir = NULL;
}

static inline int test_rm_below(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    return ftw->level == 0 ? 0 : test_rm_one(path, st, type, ftw);
}

/* Empty the tmpfs before each test (the mount point itself stays). */
static inline void test_fs_empty(void)
{
    nftw(test_fs(), test_rm_below, 16, FTW_DEPTH | FTW_PHYS);
}

/**
 * test_tmpfs_case() - add the case @name to @s, whose tests find a tmpfs of
 * @size (see test_tmpfs()) at test_fs(), emptied before each test.  It is
 * mounted by the runner (an unchecked fixture) once for the case, so it is
 * unmounted even after a failed test.  Mounting needs root: otherwise the
 * case is left out (a note on stderr) and NULL returned.  One such case per
 * suite.
 */
static inline TCase *test_tmpfs_case(Suite *s, const char *name, const char *size)
{
    TCase *tc;

    if (geteuid() != 0) {
        fprintf(stderr, "not root: the case \"%s\" (a full tmpfs) is left out\n", name);
        return NULL;
    }
    test_fs_state()->size = size;
    tc = test_case(s, name);
    tcase_add_unchecked_fixture(tc, test_fs_mount, test_fs_umount);
    tcase_add_checked_fixture(tc, test_fs_empty, NULL);
    return tc;
}

/** Bytes free for an unprivileged writer on the filesystem of @dir. */
static inline unsigned long long test_free_bytes(const char *dir)
{
    struct statvfs sv;

    ck_assert_int_eq(statvfs(dir, &sv), 0);
    return (unsigned long long)sv.f_bavail * sv.f_frsize;
}

/** Write zeros to the new file @dir/@name until the filesystem is full. */
static inline void test_fill(const char *dir, const char *name)
{
    static const char zeros[4096];
    char *path = test_path(dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

    ck_assert_int_ge(fd, 0);
    while (write(fd, zeros, sizeof(zeros)) > 0)
        ;
    ck_assert_int_eq(errno, ENOSPC);
    ck_assert_int_eq(close(fd), 0);
    ck_assert_uint_eq(test_free_bytes(dir), 0);
    free(path);
}

#endif
