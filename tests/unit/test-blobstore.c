/* SPDX-License-Identifier: MIT */
/* test-blobstore.c -- the local OCI blob store (src/image/blobstore.h), on real files. */
#include "imagetest.h"

#include <dirent.h>

#include "blobstore.h"
#include "digest.h"
#include "macro.h"

static char *dir, *root, *sha;

static void setup(void)
{
    dir = test_tmpdir();
    ck_assert_int_gt(asprintf(&root, "%s/store", dir), 0);
    ck_assert_int_gt(asprintf(&sha, "%s/store/blobs/sha256", dir), 0);
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
    free(root);
    free(sha);
}

/* A source file holding @text; returns an fd at offset 0. */
static int source(const char *text)
{
    char path[512];
    int fd;

    snprintf(path, sizeof(path), "%s/src-XXXXXX", dir);
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    unlink(path);
    return fd;
}

static void digest_of(const char *text, char out[BERTH_DIGEST_BUFSZ])
{
    ck_assert_int_eq(berth_digest_bytes(text, strlen(text), out), 0);
}

/* Entries of blobs/sha256 other than "." and "..". */
static int count_blobs(void)
{
    return test_count_entries(sha);
}

static char *blob_path(const char *digest)
{
    char *p = NULL;
    ck_assert_int_gt(asprintf(&p, "%s/%s", sha, digest + 7), 0);
    return p;
}

START_TEST(create_and_import)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *s = NULL;
    char d[BERTH_DIGEST_BUFSZ], *buf = NULL;
    _cleanup_free_ char *path = NULL;
    _cleanup_close_ int fd = -1, fd2 = -1, rfd = -1;
    bool added = false;
    struct stat st;
    size_t len = 0;

    ck_assert_int_eq(berth_blob_store_open(root, false, &s, &err), -ENOENT);
    {
        /* Missing parents are made too (0755), the store itself 0700. */
        _cleanup_free_ char *deep = NULL, *mid = NULL;
        struct berth_blob_store *ds = NULL;
        ck_assert_int_gt(asprintf(&deep, "%s/a/b/store", dir), 0);
        ck_assert_int_gt(asprintf(&mid, "%s/a/b", dir), 0);
        ck_assert_int_eq(berth_blob_store_open(deep, true, &ds, &err), 0);
        ck_assert_int_eq(stat(mid, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0755);
        ck_assert_int_eq(stat(deep, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        berth_blob_store_free(ds);
    }
    ck_assert_int_eq(berth_blob_store_open(root, true, &s, &err), 0);
    ck_assert_int_eq(stat(sha, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0700);

    digest_of("hello layer", d);
    fd = source("hello layer");
    ck_assert_int_eq(berth_blob_import_fd(s, fd, d, 11, &added, &err), 0);
    ck_assert(added);
    path = blob_path(d);
    ck_assert_int_eq(lstat(path, &st), 0);
    ck_assert(S_ISREG(st.st_mode));
    ck_assert_uint_eq(st.st_mode & 07777, 0400);
    ck_assert_uint_eq(st.st_nlink, 1);
    ck_assert_uint_eq(st.st_uid, geteuid());

    /* Identical retry: verified, not added. */
    fd2 = source("hello layer");
    ck_assert_int_eq(berth_blob_import_fd(s, fd2, d, 11, &added, &err), 0);
    ck_assert(!added);
    ck_assert_int_eq(count_blobs(), 1);

    /* Read back, any size and exact size. */
    ck_assert_int_eq(berth_blob_read(s, d, BERTH_BLOB_ANY_SIZE, 1024, &buf, &len, &err), 0);
    ck_assert_uint_eq(len, 11);
    ck_assert_str_eq(buf, "hello layer");
    free(buf);
    ck_assert_int_eq(berth_blob_read(s, d, 12, 1024, &buf, &len, &err), -EBADMSG);
    image_assert_reason(&err, "size-mismatch");
    ck_assert_int_eq(berth_blob_open(s, d, 11, &rfd, &err), 0);
    ck_assert_int_eq(berth_blob_verify_fd(rfd, d, 11, &err), 0);
    berth_blob_store_free(s);
}
END_TEST

START_TEST(import_mismatch_publishes_nothing)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *s = NULL;
    char d[BERTH_DIGEST_BUFSZ];
    _cleanup_close_ int fd = -1, fd2 = -1, fd3 = -1;

    ck_assert_int_eq(berth_blob_store_open(root, true, &s, &err), 0);
    digest_of("the real content", d);
    fd = source("other content!!!");
    ck_assert_int_eq(berth_blob_import_fd(s, fd, d, 16, NULL, &err), -EBADMSG);
    image_assert_reason(&err, "digest-mismatch");
    fd2 = source("the real content plus more");
    ck_assert_int_eq(berth_blob_import_fd(s, fd2, d, 16, NULL, &err), -EBADMSG);
    image_assert_reason(&err, "size-mismatch");
    fd3 = source("the real");
    ck_assert_int_eq(berth_blob_import_fd(s, fd3, d, 16, NULL, &err), -EBADMSG);
    image_assert_reason(&err, "size-mismatch");
    ck_assert_int_eq(count_blobs(), 0);
    berth_blob_store_free(s);
}
END_TEST

START_TEST(conflict_never_overwrites)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *s = NULL;
    char d[BERTH_DIGEST_BUFSZ], got[64] = "";
    _cleanup_free_ char *path = NULL;
    _cleanup_close_ int fd = -1, in = -1;

    ck_assert_int_eq(berth_blob_store_open(root, true, &s, &err), 0);
    digest_of("genuine", d);
    path = blob_path(d);
    /* A file of that name with other content, as the store wants it otherwise. */
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0400);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "forgery", 7), 7);
    close(fd);
    fd = -1;
    in = source("genuine");
    ck_assert_int_eq(berth_blob_import_fd(s, in, d, 7, NULL, &err), -EEXIST);
    image_assert_reason(&err, "blob-conflict");
    fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(read(fd, got, sizeof(got) - 1), 7);
    ck_assert_str_eq(got, "forgery");
    /* And a stage-side open sees it for what it is. */
    ck_assert_int_eq(berth_blob_verify_fd(fd, d, 7, &err), -EBADMSG);
    image_assert_reason(&err, "digest-mismatch");
    berth_blob_store_free(s);
}
END_TEST

START_TEST(unsafe_store)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *s = NULL;
    char d[BERTH_DIGEST_BUFSZ], link2[600], target[600];
    _cleanup_free_ char *path = NULL;
    _cleanup_close_ int fd = -1, in = -1;

    ck_assert_int_eq(berth_blob_store_open(root, true, &s, &err), 0);
    digest_of("blob", d);
    in = source("blob");
    ck_assert_int_eq(berth_blob_import_fd(s, in, d, 4, NULL, &err), 0);
    path = blob_path(d);

    /* Mode 0644. */
    ck_assert_int_eq(chmod(path, 0644), 0);
    ck_assert_int_eq(berth_blob_open(s, d, 4, &fd, &err), -EPERM);
    image_assert_reason(&err, "unsafe-store");
    ck_assert_int_eq(chmod(path, 0400), 0);
    /* A second hard link. */
    snprintf(link2, sizeof(link2), "%s/extra-link", dir);
    ck_assert_int_eq(link(path, link2), 0);
    ck_assert_int_eq(berth_blob_open(s, d, 4, &fd, &err), -EPERM);
    image_assert_reason(&err, "unsafe-store");
    ck_assert_int_eq(unlink(link2), 0);
    ck_assert_int_eq(berth_blob_open(s, d, 4, &fd, &err), 0);
    close(fd);
    fd = -1;
    /* A symlink in place of the blob. */
    snprintf(target, sizeof(target), "%s/elsewhere", dir);
    ck_assert_int_eq(rename(path, target), 0);
    ck_assert_int_eq(symlink(target, path), 0);
    ck_assert_int_eq(berth_blob_open(s, d, 4, &fd, &err), -EPERM);
    image_assert_reason(&err, "unsafe-store");
    /* Missing. */
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(berth_blob_open(s, d, 4, &fd, &err), -ENOENT);
    image_assert_reason(&err, "blob-missing");
    berth_blob_store_free(s);

    /* A store directory others can read is refused. */
    ck_assert_int_eq(chmod(sha, 0755), 0);
    ck_assert_int_eq(berth_blob_store_open(root, false, &s, &err), -EPERM);
    image_assert_reason(&err, "unsafe-store");
    ck_assert_int_eq(chmod(sha, 0700), 0);
    ck_assert_int_eq(chmod(root, 0750), 0);
    ck_assert_int_eq(berth_blob_store_open(root, false, &s, &err), -EPERM);
    image_assert_reason(&err, "unsafe-store");
    ck_assert_int_eq(berth_blob_store_open("relative/store", true, &s, &err), -EINVAL);
    /* A store reached through a symlink. */
    ck_assert_int_eq(chmod(root, 0700), 0);
    {
        char link[600];
        snprintf(link, sizeof(link), "%s/store-link", dir);
        ck_assert_int_eq(symlink(root, link), 0);
        ck_assert_int_eq(berth_blob_store_open(link, false, &s, &err), -EPERM);
        image_assert_reason(&err, "unsafe-store");
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("blobstore");
    TCase *tc = test_case(s, "blobstore");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, create_and_import);
    tcase_add_test(tc, import_mismatch_publishes_nothing);
    tcase_add_test(tc, conflict_never_overwrites);
    tcase_add_test(tc, unsafe_store);
    return s;
}

TEST_MAIN()
