/* SPDX-License-Identifier: MIT */
/*
 * test-reserve.c -- space reserves and the space probe (reserve.h), on a
 * plain directory and, as root, on a real 1 MiB tmpfs filled to the last
 * page.
 */
#include "pooltest.h"

#include <dirent.h>

#include "macro.h"
#include "reserve.h"

#define KIB 1024ULL

static char *dir; /* a plain private directory */

static void dir_setup(void)
{
    dir = test_private_dir();
}

static void dir_teardown(void)
{
    test_rm_rf(dir);
    free(dir);
}

static int open_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Entries of @path other than "." and "..". */
static int entries(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)))
        n += !streq(e->d_name, ".") && !streq(e->d_name, "..");
    closedir(d);
    return n;
}

START_TEST(space_errors)
{
    ck_assert(berth_space_error(-ENOSPC));
    ck_assert(berth_space_error(-EDQUOT));
    ck_assert(!berth_space_error(-EIO));
    ck_assert(!berth_space_error(0));
}
END_TEST

START_TEST(fill_is_idempotent_and_exact)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open_dir(dir);
    _cleanup_free_ char *path = test_path(dir, "r");
    struct stat st;

    ck_assert(!berth_reserve_held(dfd, "r", 64 * KIB));
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 64 * KIB, &err), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_int_eq(st.st_size, 64 * KIB);
    ck_assert_uint_ge((unsigned long long)st.st_blocks * 512, 64 * KIB); /* allocated, not sparse */
    ck_assert(berth_reserve_held(dfd, "r", 64 * KIB));
    ck_assert(!berth_reserve_held(dfd, "r", 128 * KIB));
    /* A whole reserve is left alone; a longer one is cut to size, a shorter one grown. */
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 64 * KIB, &err), 0);
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 16 * KIB, &err), 0);
    ck_assert(berth_reserve_held(dfd, "r", 16 * KIB));
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 96 * KIB, &err), 0);
    ck_assert(berth_reserve_held(dfd, "r", 96 * KIB));
    ck_assert_int_eq(berth_reserve_release(dfd, "r", &err), 0);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(berth_reserve_release(dfd, "r", &err), -ENOENT);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

START_TEST(refuses_what_is_not_a_private_file)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open_dir(dir);
    _cleanup_free_ char *link = test_path(dir, "link"), *loose = test_path(dir, "loose");

    ck_assert_int_eq(symlink("/etc/passwd", link), 0);
    ck_assert_int_eq(berth_reserve_fill(dfd, "link", 4 * KIB, &err), -ELOOP);
    test_write_file(loose, "x", 1, 0644);
    ck_assert_int_eq(berth_reserve_fill(dfd, "loose", 4 * KIB, &err), -EPERM);
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 0, &err), -EINVAL);
    ck_assert_int_eq(berth_reserve_fill(dfd, "a/b", 4 * KIB, &err), -EINVAL);
    ck_assert_int_eq(berth_reserve_fill(-1, "r", 4 * KIB, &err), -EINVAL);
    ck_assert_int_eq(berth_reserve_probe(dfd, 0, &err), -EINVAL);
}
END_TEST

START_TEST(probe_leaves_nothing)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open_dir(dir);

    ck_assert_int_eq(berth_reserve_probe(dfd, 256 * KIB, &err), 0);
    ck_assert_int_eq(entries(dir), 0);
}
END_TEST

START_TEST(tmpfs_reserve_is_space_others_cannot_take)
{
    const char *tmpfs = test_fs();
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open_dir(tmpfs);
    unsigned long long before = test_free_bytes(tmpfs);
    _cleanup_free_ char *more = test_path(tmpfs, "more");
    char page[4096] = {0};
    int fd;

    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 256 * KIB, &err), 0);
    ck_assert_uint_eq(test_free_bytes(tmpfs), before - 256 * KIB); /* counted at once */
    test_fill(tmpfs, "filler");
    /* Full: no reserve can be made (and no partial one is left), nothing is free. */
    ck_assert_int_eq(berth_reserve_fill(dfd, "r2", 4 * KIB, &err), -ENOSPC);
    ck_assert_int_eq(access(more, F_OK), -1);
    ck_assert_int_eq(faccessat(dfd, "r2", F_OK, 0), -1);
    ck_assert_int_eq(berth_reserve_probe(dfd, 4 * KIB, &err), -ENOSPC);
    ck_assert_ptr_nonnull(strstr(err.message, "not free"));
    fd = open(more, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, page, sizeof(page)), -1);
    ck_assert_int_eq(errno, ENOSPC);
    /* Released, the reserve's space is there for the next write. */
    ck_assert_int_eq(berth_reserve_release(dfd, "r", &err), 0);
    ck_assert_uint_eq(test_free_bytes(tmpfs), 256 * KIB);
    for (int i = 0; i < 64; i++)
        ck_assert_int_eq(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
    ck_assert_int_eq(close(fd), 0);
    ck_assert_uint_eq(test_free_bytes(tmpfs), 0);
}
END_TEST

START_TEST(tmpfs_probe_sees_space_return)
{
    const char *tmpfs = test_fs();
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open_dir(tmpfs);
    _cleanup_free_ char *filler = test_path(tmpfs, "filler");

    test_fill(tmpfs, "filler");
    ck_assert_int_eq(berth_reserve_probe(dfd, 64 * KIB, &err), -ENOSPC);
    ck_assert_int_eq(entries(tmpfs), 1); /* the failed probe left nothing */
    ck_assert_int_eq(unlink(filler), 0);
    ck_assert_int_eq(berth_reserve_probe(dfd, 512 * KIB, &err), 0);
    ck_assert_int_eq(entries(tmpfs), 0);
    ck_assert_uint_eq(test_free_bytes(tmpfs), 1024 * KIB); /* and gave its space back */
    /* More than the filesystem holds: refused, and the partial allocation is undone. */
    ck_assert_int_eq(berth_reserve_fill(dfd, "r", 2048 * KIB, &err), -ENOSPC);
    ck_assert_int_eq(entries(tmpfs), 0);
    ck_assert_uint_eq(test_free_bytes(tmpfs), 1024 * KIB);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("reserve");
    TCase *tc = test_case(s, "directory");

    tcase_add_checked_fixture(tc, dir_setup, dir_teardown);
    tcase_add_test(tc, space_errors);
    tcase_add_test(tc, fill_is_idempotent_and_exact);
    tcase_add_test(tc, refuses_what_is_not_a_private_file);
    tcase_add_test(tc, probe_leaves_nothing);
    /* The full filesystem itself needs a tmpfs, so root. */
    tc = test_tmpfs_case(s, "full tmpfs", "1m");
    if (tc) {
        tcase_add_test(tc, tmpfs_reserve_is_space_others_cannot_take);
        tcase_add_test(tc, tmpfs_probe_sees_space_return);
    }
    return s;
}

TEST_MAIN()
