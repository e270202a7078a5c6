/* SPDX-License-Identifier: MIT */
/*
 * test-runstate.c -- an OCI runtime's state record of a container, read
 * from its --root directory (plugins/runtime-oci/runstate.h): crun's and
 * runc's directory and runsc's ".state"/".lock" files count, names that
 * only share a prefix do not, an absent root holds nothing, and a root
 * that cannot be read (a symlink on the way, not a directory) is an error,
 * never "absent".  The real runtimes' layouts are covered by the shim on
 * real runsc and crun (tests/cli/test-runtime-oci.sh).
 */
#include "testutil.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runstate.h"

#define ID "r0123456789abcdef0123456789abcdef"

static char *dir, *root;

static void setup(void)
{
    dir = test_tmpdir();
    root = test_path(dir, "root");
    ck_assert_int_eq(mkdir(root, 0700), 0);
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
    free(root);
}

static bool present(const char *r, const char *id)
{
    bool p = false;

    ck_assert_int_eq(oci_runstate_present(r, id, &p), 0);
    return p;
}

static void add(const char *name, bool directory)
{
    char *path = test_path(root, name);

    if (directory)
        ck_assert_int_eq(mkdir(path, 0700), 0);
    else
        test_write_file(path, "{}", 2, 0600);
    free(path);
}

START_TEST(empty_root_holds_nothing)
{
    ck_assert(!present(root, ID));
}
END_TEST

START_TEST(crun_directory_counts)
{
    add(ID, true);
    ck_assert(present(root, ID));
}
END_TEST

START_TEST(runsc_files_count)
{
    add(ID "_sandbox:" ID ".state", false);
    ck_assert(present(root, ID));
}
END_TEST

START_TEST(runsc_lock_alone_counts)
{
    add(ID "_sandbox:" ID ".lock", false);
    ck_assert(present(root, ID));
}
END_TEST

/* Another container's records, even ones sharing a prefix with the id. */
START_TEST(others_do_not_count)
{
    add(ID "0", true);
    add("r0123456789abcdef0123456789abcde", true);
    add("x" ID "_sandbox:x" ID ".state", false);
    add("r1111111111111111111111111111111_sandbox:" ID ".state", false);
    ck_assert(!present(root, ID));
    add(ID, true);
    ck_assert(present(root, ID));
}
END_TEST

START_TEST(absent_root_holds_nothing)
{
    char *gone = test_path(dir, "never-made");

    ck_assert(!present(gone, ID));
    free(gone);
}
END_TEST

/* A root that cannot be read is not taken as empty. */
START_TEST(unreadable_root_is_an_error)
{
    char *link = test_path(dir, "link"), *file = test_path(dir, "file");
    bool p = false;

    add(ID, true);
    ck_assert_int_eq(symlink(root, link), 0);
    ck_assert_int_eq(oci_runstate_present(link, ID, &p), -ELOOP);
    test_write_file(file, "", 0, 0600);
    ck_assert_int_eq(oci_runstate_present(file, ID, &p), -ENOTDIR);
    free(link);
    free(file);
}
END_TEST

START_TEST(bad_arguments_refused)
{
    bool p;

    ck_assert_int_eq(oci_runstate_present("relative", ID, &p), -EINVAL);
    ck_assert_int_eq(oci_runstate_present(root, "", &p), -EINVAL);
    ck_assert_int_eq(oci_runstate_present(root, "a/b", &p), -EINVAL);
    ck_assert_int_eq(oci_runstate_present(root, "a_b", &p), -EINVAL);
    ck_assert_int_eq(oci_runstate_present(NULL, ID, &p), -EINVAL);
    ck_assert_int_eq(oci_runstate_present(root, ID, NULL), -EINVAL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("runstate");
    TCase *tc = test_case(s, "runstate");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, empty_root_holds_nothing);
    tcase_add_test(tc, crun_directory_counts);
    tcase_add_test(tc, runsc_files_count);
    tcase_add_test(tc, runsc_lock_alone_counts);
    tcase_add_test(tc, others_do_not_count);
    tcase_add_test(tc, absent_root_holds_nothing);
    tcase_add_test(tc, unreadable_root_is_an_error);
    tcase_add_test(tc, bad_arguments_refused);
    return s;
}

TEST_MAIN()
