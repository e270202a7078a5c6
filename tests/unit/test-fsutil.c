/* SPDX-License-Identifier: MIT */
/* test-fsutil.c -- trusted file access (fsutil.h). */
#include "testutil.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>

#include "fsutil.h"
#include "macro.h"

static char *tmp;

static void setup(void)
{
    char *p;

    tmp = test_tmpdir();
    p = test_path(tmp, "a");
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
    p = test_path(tmp, "a/b");
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
    p = test_path(tmp, "a/b/file");
    test_write_file(p, "content", 7, 0600);
    free(p);
    p = test_path(tmp, "link");
    ck_assert_int_eq(symlink("a", p), 0);
    free(p);
    p = test_path(tmp, "a/b/flink");
    ck_assert_int_eq(symlink("file", p), 0);
    free(p);
}

static void teardown(void)
{
    test_rm_rf(tmp);
    free(tmp);
}

static int count_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int n = 0;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)))
        if (strncmp(de->d_name, ".#", 2) == 0)
            n++;
    closedir(d);
    return n;
}

START_TEST(open_beneath)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
    int fd;

    ck_assert_int_ge(dfd, 0);
    fd = berth_open_beneath(dfd, "a/b/file", O_RDONLY, 0, &err);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    fd = berth_open_beneath(dfd, "a/../a/b/file", O_RDONLY, 0, &err);
    ck_assert_int_ge(fd, 0);
    close(fd);

    ck_assert_int_eq(berth_open_beneath(dfd, "link/b/file", O_RDONLY, 0, &err), -ELOOP);
    ck_assert_ptr_nonnull(strstr(err.message, "symbolic link"));
    ck_assert_int_eq(berth_open_beneath(dfd, "a/b/flink", O_RDONLY, 0, &err), -ELOOP);
    ck_assert_int_eq(berth_open_beneath(dfd, "../x", O_RDONLY, 0, &err), -EXDEV);
    ck_assert_int_eq(berth_open_beneath(dfd, "a/../../x", O_RDONLY, 0, &err), -EXDEV);
    ck_assert_int_eq(berth_open_beneath(dfd, "/etc/passwd", O_RDONLY, 0, &err), -EXDEV);
    ck_assert_int_eq(berth_open_beneath(dfd, "", O_RDONLY, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_open_beneath(dfd, "a/missing", O_RDONLY, 0, &err), -ENOENT);
}
END_TEST

START_TEST(open_trusted)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *good = test_path(tmp, "a/b/file"), *bad = test_path(tmp, "link/b/file");
    int fd;

    fd = berth_open_trusted(good, O_RDONLY, 0, &err);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(berth_open_trusted(bad, O_RDONLY, 0, &err), -ELOOP);
    ck_assert_int_eq(berth_open_trusted("a/b/file", O_RDONLY, 0, &err), -EINVAL);
    fd = berth_open_trusted("/", O_PATH | O_DIRECTORY, 0, &err);
    ck_assert_int_ge(fd, 0);
    close(fd);
}
END_TEST

START_TEST(file_check)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *hard = test_path(tmp, "a/hard");
    _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC);
    struct berth_file_expect e = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = 7,
        .one_link = 1,
    };
    struct stat st;

    ck_assert_int_eq(berth_file_check(fd, "f", &e, &st, &err), 0);
    ck_assert_int_eq(st.st_size, 7);

    ck_assert_int_eq(fchmod(fd, 0644), 0);
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EPERM);
    ck_assert_str_eq(err.message, "f has mode 0644, expected 0600");
    e.mode_mask = 0022, e.mode = 0;
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), 0);
    ck_assert_int_eq(fchmod(fd, 0664), 0);
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EPERM);
    ck_assert_str_eq(err.message, "f has mode 0664, which is writable by group or others");
    ck_assert_int_eq(fchmod(fd, 0600), 0);

    e.uid = (uint32_t)geteuid() + 1;
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "is owned by uid"));
    e.uid = BERTH_UID_ANY;

    e.max_size = 6;
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EFBIG);
    e.max_size = 0;
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), 0);

    ck_assert_int_eq(link(file, hard), 0);
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EMLINK);
    ck_assert_str_eq(err.message, "f has 2 hard links, expected exactly 1");
    ck_assert_int_eq(unlink(hard), 0);

    e.type = S_IFDIR;
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EBADFD);
    ck_assert_str_eq(err.message, "f is a regular file, expected a directory");

    e.type = S_IFREG, e.mode_mask = 0022, e.mode = 0600; /* mode outside mask */
    ck_assert_int_eq(berth_file_check(fd, "f", &e, NULL, &err), -EINVAL);
}
END_TEST

/* berth_trusted_file_check() (or, with @dir, berth_trusted_dir_check()) of
 * @path opened the way callers open it; a failed open is returned as is. */
static int trusted(const char *path, bool dir, struct berth_error *err)
{
    _cleanup_close_ int fd = berth_open_trusted(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, err);

    if (fd < 0)
        return fd;
    return dir ? berth_trusted_dir_check(fd, path, err) : berth_trusted_file_check(fd, path, 0, NULL, err);
}

/* trusted() and the message it left, which must contain @needle. */
#define ASSERT_TRUSTED(path, dir, code, needle)                                                                        \
    do {                                                                                                               \
        struct berth_error e_ = BERTH_ERROR_INIT;                                                                      \
        int r_ = trusted((path), (dir), &e_);                                                                          \
        ck_assert_msg(r_ == (code), "%s: expected %d, got %d (%s)", (path), (code), r_, e_.message);                   \
        ck_assert_msg(strstr(e_.message, (needle)), "%s: \"%s\" lacks \"%s\"", (path), e_.message, (needle));          \
    } while (0)

START_TEST(trusted_file_accepted)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *odd = test_path(tmp, "a/./b/../b//file");
    _cleanup_close_ int fd = berth_open_trusted(file, O_PATH, 0, &err);
    struct stat st;

    /* Root's, 0600, one link, below root's 0755 directories and sticky /tmp. */
    ck_assert_int_ge(fd, 0);
    ck_assert_msg(berth_trusted_file_check(fd, file, 0, &st, &err) == 0, "%s", err.message);
    ck_assert_int_eq(st.st_size, 7);
    ck_assert_int_eq(berth_trusted_file_check(fd, file, 7, NULL, &err), 0);
    ck_assert_int_eq(berth_trusted_file_check(fd, file, 6, NULL, &err), -EFBIG);
    /* "." and empty components are skipped, ".." goes up: the same file. */
    ck_assert_msg(berth_trusted_file_check(fd, odd, 0, NULL, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_trusted_file_check(fd, "a/b/file", 0, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_trusted_file_check(-1, file, 0, NULL, &err), -EINVAL);
    ASSERT_TRUSTED(tmp, true, 0, "");
}
END_TEST

START_TEST(trusted_file_mode)
{
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *a = test_path(tmp, "a"), *needle = NULL;

    /* The file itself: group-writable, world-writable. */
    ck_assert_int_eq(chmod(file, 0620), 0);
    ASSERT_TRUSTED(file, false, -EPERM, "file has mode 0620, which is writable by group or others");
    ck_assert_int_eq(chmod(file, 0602), 0);
    ASSERT_TRUSTED(file, false, -EPERM, "has mode 0602");
    ck_assert_int_eq(chmod(file, 0755), 0);
    ASSERT_TRUSTED(file, false, 0, "");

    /* A directory above it that anyone can write: the file could be swapped. */
    ck_assert_int_eq(chmod(a, 0777), 0);
    ck_assert_int_gt(
        asprintf(&needle, "%s (above %s) has mode 0777, which is writable by group or others and not sticky", a, file),
        0);
    ASSERT_TRUSTED(file, false, -EPERM, needle);
    ck_assert_int_eq(chmod(a, 0775), 0);
    ASSERT_TRUSTED(file, false, -EPERM, "(above");
    /* Sticky, like /tmp: only the entry's owner (checked next) can move it. */
    ck_assert_int_eq(chmod(a, 01777), 0);
    ASSERT_TRUSTED(file, false, 0, "");
    /* ... but a directory whose entries are trusted may not be sticky-writable. */
    ASSERT_TRUSTED(a, true, -EPERM, "has mode 1777, which is writable by group or others");
    ck_assert_int_eq(chmod(a, 0755), 0);
    ASSERT_TRUSTED(a, true, 0, "");
}
END_TEST

START_TEST(trusted_file_symlinks)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *flink = test_path(tmp, "a/b/flink"),
                        *via_dir = test_path(tmp, "link/b/file"), *needle = NULL, *link = test_path(tmp, "link");
    _cleanup_close_ int fd = berth_open_trusted(file, O_RDONLY, 0, &err);

    /* Opened the way callers do, a symlink anywhere on the path is refused. */
    ASSERT_TRUSTED(flink, false, -ELOOP, "symbolic link");
    ASSERT_TRUSTED(via_dir, false, -ELOOP, "symbolic link");
    /* The check itself refuses a symlink on @path too, whatever @fd is. */
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_trusted_file_check(fd, flink, 0, NULL, &err), -ELOOP);
    ck_assert_str_eq(err.message + strlen(tmp), "/a/b/flink is a symbolic link, which is not allowed");
    ck_assert_int_eq(berth_trusted_file_check(fd, via_dir, 0, NULL, &err), -ELOOP);
    ck_assert_int_gt(asprintf(&needle, "%s (above %s) is a symbolic link, which is not allowed", link, via_dir), 0);
    ck_assert_str_eq(err.message, needle);
}
END_TEST

START_TEST(trusted_file_links_and_types)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *hard = test_path(tmp, "hard"),
                        *fifo = test_path(tmp, "a/fifo"), *b = test_path(tmp, "a/b"), *other = test_path(tmp, "other"),
                        *moved = test_path(tmp, "moved");
    _cleanup_close_ int fd = -1;

    /* A second hard link, even in a trusted directory. */
    ck_assert_int_eq(link(file, hard), 0);
    ASSERT_TRUSTED(file, false, -EMLINK, "file has 2 hard links, expected exactly 1");
    ck_assert_int_eq(unlink(hard), 0);

    /* Not a regular file: a directory, a FIFO (opened without blocking). */
    ASSERT_TRUSTED(b, false, -EBADFD, "b is a directory, expected a regular file");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ASSERT_TRUSTED(fifo, false, -EBADFD, "fifo is a FIFO, expected a regular file");
    ASSERT_TRUSTED(file, true, -EBADFD, "file is a regular file, expected a directory");

    /* Moved away after it was opened, and another file put in its place or
     * none: the path no longer names it. */
    fd = berth_open_trusted(file, O_RDONLY, 0, &err);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(rename(file, moved), 0);
    test_write_file(other, "other", 5, 0600);
    ck_assert_int_eq(rename(other, file), 0);
    ck_assert_int_eq(berth_trusted_file_check(fd, file, 0, NULL, &err), -EAGAIN);
    ck_assert_ptr_nonnull(strstr(err.message, "was replaced while it was being checked"));
    ck_assert_int_eq(unlink(file), 0);
    ck_assert_int_eq(berth_trusted_file_check(fd, file, 0, NULL, &err), -EAGAIN);
    ck_assert_ptr_nonnull(strstr(err.message, "was removed while it was being checked"));
    /* Replaced by a rename over it: the descriptor's file has no name left. */
    ck_assert_int_eq(rename(moved, file), 0);
    test_write_file(other, "other", 5, 0600);
    ck_assert_int_eq(rename(other, file), 0);
    ck_assert_int_eq(berth_trusted_file_check(fd, file, 0, NULL, &err), -EMLINK);
    ck_assert_ptr_nonnull(strstr(err.message, "has 0 hard links"));
}
END_TEST

START_TEST(trusted_file_owner)
{
    _cleanup_free_ char *file = test_path(tmp, "a/b/file"), *mine = test_path(tmp, "a/b/mine"),
                        *b = test_path(tmp, "a/b"), *needle = NULL;

    if (geteuid() != 0)
        return; /* chown(2) to another user needs root */
    /* As root: only root's files. */
    ck_assert_int_eq(chown(file, 65534, 65534), 0);
    ASSERT_TRUSTED(file, false, -EPERM, "file is owned by uid 65534, expected root");
    ck_assert_int_eq(chown(file, 0, 0), 0);
    ck_assert_int_eq(chown(b, 65534, 65534), 0);
    ck_assert_int_gt(asprintf(&needle, "%s (above %s) is owned by uid 65534, expected root", b, file), 0);
    ASSERT_TRUSTED(file, false, -EPERM, needle);
    ck_assert_int_eq(chown(b, 0, 0), 0);

    /* As another user (the effective uid; the real one stays root so that it
     * can come back): root's files and its own, nobody else's. */
    test_write_file(mine, "mine", 4, 0644);
    ck_assert_int_eq(chown(mine, 65534, 65534), 0);
    ck_assert_int_eq(chmod(file, 0644), 0);
    ck_assert_int_eq(seteuid(65534), 0);
    ASSERT_TRUSTED(mine, false, 0, "");
    ASSERT_TRUSTED(file, false, 0, "");
    ck_assert_int_eq(seteuid(0), 0);
    ck_assert_int_eq(chown(mine, 65533, 65533), 0);
    ck_assert_int_eq(seteuid(65534), 0);
    ASSERT_TRUSTED(mine, false, -EPERM, "mine is owned by uid 65533, expected root or uid 65534");
    ck_assert_int_eq(seteuid(0), 0);
}
END_TEST

START_TEST(read_fd_bounded)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(tmp, "hundred"), *buf = NULL;
    char data[100], big[20000];
    int fd, p[2];
    size_t len = 0;

    memset(data, 'd', sizeof(data));
    test_write_file(path, data, sizeof(data), 0600);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_eq(berth_read_fd(fd, 100, &buf, &len, &err), 0);
    ck_assert_uint_eq(len, 100);
    ck_assert_int_eq(buf[100], '\0');
    free(TAKE_PTR(buf));
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    ck_assert_int_eq(berth_read_fd(fd, 99, &buf, &len, &err), -EFBIG);
    ck_assert_ptr_null(buf);
    close(fd);

    /* A pipe has no size to trust: the bound is enforced while reading. */
    memset(big, 'p', sizeof(big));
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], big, sizeof(big)), (ssize_t)sizeof(big));
    close(p[1]);
    ck_assert_int_eq(berth_read_fd(p[0], 19999, &buf, &len, &err), -EFBIG);
    close(p[0]);
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(write(p[1], big, sizeof(big)), (ssize_t)sizeof(big));
    close(p[1]);
    ck_assert_int_eq(berth_read_fd(p[0], 20000, &buf, &len, &err), 0);
    ck_assert_uint_eq(len, 20000);
    ck_assert_mem_eq(buf, big, 20000);
    close(p[0]);
}
END_TEST

START_TEST(read_file_at)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *abs = test_path(tmp, "a/b/file"), *viasym = test_path(tmp, "link/b/file"), *buf = NULL,
                        *fifo = test_path(tmp, "fifo");
    _cleanup_close_ int dfd = open(tmp, O_PATH | O_DIRECTORY | O_CLOEXEC);
    const struct berth_file_expect e = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = 64,
        .one_link = 1,
    };
    struct berth_file_expect zero = e;
    size_t len = 0;

    ck_assert_int_eq(berth_read_file_at(AT_FDCWD, abs, &e, &buf, &len, &err), 0);
    ck_assert_str_eq(buf, "content");
    free(TAKE_PTR(buf));
    ck_assert_int_eq(berth_read_file_at(dfd, "a/b/file", &e, &buf, &len, &err), 0);
    ck_assert_uint_eq(len, 7);
    free(TAKE_PTR(buf));
    ck_assert_int_eq(berth_read_file_at(AT_FDCWD, viasym, &e, &buf, &len, &err), -ELOOP);
    ck_assert_int_eq(chmod(abs, 0640), 0);
    ck_assert_int_eq(berth_read_file_at(dfd, "a/b/file", &e, &buf, &len, &err), -EPERM);
    ck_assert_ptr_null(buf);
    zero.max_size = 0;
    ck_assert_int_eq(berth_read_file_at(dfd, "a/b/file", &zero, &buf, &len, &err), -EINVAL);

    /* A FIFO where the file should be is refused at once; opening it used
     * to block forever waiting for a writer. */
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(berth_read_file_at(dfd, "fifo", &e, &buf, &len, &err), -EBADFD);
    ck_assert_ptr_nonnull(strstr(err.message, "is a FIFO, expected a regular file"));
}
END_TEST

START_TEST(publish_create_and_refuse)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *path = test_path(tmp, "out.json");
    char buf[64];
    struct stat st;

    umask(077);
    ck_assert_int_eq(berth_publish_at(dfd, "out.json", "{\"v\":1}", 7, 0644, 0, &err), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0644); /* the umask does not apply */
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "{\"v\":1}");

    ck_assert_int_eq(berth_publish_at(dfd, "out.json", "{\"v\":2}", 7, 0600, 0, &err), -EEXIST);
    ck_assert_str_eq(err.message, "out.json already exists; refusing to overwrite it");
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "{\"v\":1}");

    ck_assert_int_eq(berth_publish_at(dfd, "out.json", "{\"v\":3}", 7, 0600, BERTH_PUBLISH_REPLACE, &err), 0);
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "{\"v\":3}");
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_int_eq(count_temporaries(tmp), 0);

    ck_assert_int_eq(berth_publish_at(dfd, "", "x", 1, 0600, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_publish_at(dfd, ".", "x", 1, 0600, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_publish_at(dfd, "..", "x", 1, 0600, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_publish_at(dfd, "a/x", "x", 1, 0600, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_publish_at(dfd, "x", "x", 1, 0600, 0x80, &err), -EINVAL);
}
END_TEST

/* A write that fails half way leaves neither the target nor a temporary. */
START_TEST(publish_failure_leaves_nothing)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *path = test_path(tmp, "big");
    struct rlimit rl = {10, 10};
    char data[100];

    memset(data, 'b', sizeof(data));
    signal(SIGXFSZ, SIG_IGN);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    ck_assert_int_eq(berth_publish_at(dfd, "big", data, sizeof(data), 0600, 0, &err), -EFBIG);
    ck_assert_int_eq(access(path, F_OK), -1);
    ck_assert_int_eq(count_temporaries(tmp), 0);
}
END_TEST

/* berth_tmpfile_*(): nothing visible until published, never replacing;
 * berth_link_unnamed() for someone else's O_TMPFILE descriptor. */
START_TEST(tmpfile_publish)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    _cleanup_free_ char *path = test_path(tmp, "pub");
    struct berth_tmpfile t;
    struct stat a, b;
    char buf[16];
    int fd;

    ck_assert_int_eq(berth_tmpfile_open(dfd, 0640, false, &t, &err), 0);
    ck_assert_str_eq(t.name, ""); /* O_TMPFILE on this filesystem */
    ck_assert_int_eq(write(t.fd, "data", 4), 4);
    ck_assert_int_eq(stat(path, &a), -1);
    ck_assert_int_eq(berth_tmpfile_publish(&t, "pub", &err), 0);
    ck_assert_int_eq(fstat(t.fd, &a), 0);
    ck_assert_int_eq(stat(path, &b), 0);
    ck_assert_uint_eq(a.st_ino, b.st_ino);
    ck_assert_uint_eq(b.st_mode & 07777, 0640);
    ck_assert_uint_eq(b.st_nlink, 1);
    berth_tmpfile_discard(&t);
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "data");
    /* Never replaces. */
    ck_assert_int_eq(berth_tmpfile_open(dfd, 0600, false, &t, &err), 0);
    ck_assert_int_eq(write(t.fd, "other", 5), 5);
    ck_assert_int_eq(berth_tmpfile_publish(&t, "pub", &err), -EEXIST);
    berth_tmpfile_discard(&t);
    test_read_file(path, buf, sizeof(buf));
    ck_assert_str_eq(buf, "data");
    ck_assert_int_eq(count_temporaries(tmp), 0);

    /* Someone else's unnamed file: linked, but never a named one. */
    fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_link_unnamed(fd, dfd, "pub", &err), -EEXIST);
    ck_assert_int_eq(berth_link_unnamed(fd, dfd, "pub2", &err), 0);
    ck_assert_int_eq(berth_link_unnamed(fd, dfd, "pub3", &err), -EINVAL); /* it has a name now */
    close(fd);
    fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_link_unnamed(fd, dfd, "pub4", &err), -ENOENT); /* O_EXCL: never linkable */
    close(fd);
    ck_assert_int_eq(berth_link_unnamed(dfd, dfd, "pub5", &err), -EINVAL); /* a directory */
}
END_TEST

/* A filesystem without O_TMPFILE (sysfs) is -EOPNOTSUPP when the caller
 * cannot use a named temporary (upload()).  The kernel checks write
 * permission on the directory before it asks the filesystem, so a user
 * other than root (make distcheck in CI) gets -EACCES from read-only /sys
 * instead: that error must come through unchanged. */
START_TEST(tmpfile_without_o_tmpfile)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int sys = open("/sys", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct berth_tmpfile t;
    int r;

    ck_assert_int_ge(sys, 0);
    r = berth_tmpfile_open(sys, 0600, false, &t, &err);
    if (geteuid() != 0) {
        ck_assert_msg(r == -EACCES, "%d %s", r, err.message);
        return;
    }
    ck_assert_msg(r == -EOPNOTSUPP, "%d %s", r, err.message);
    ck_assert_ptr_nonnull(strstr(err.message, "O_TMPFILE"));
}
END_TEST

START_TEST(publish_path)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *good = test_path(tmp, "a/new"), *viasym = test_path(tmp, "link/new"),
                        *slash = test_path(tmp, "a/");
    char buf[16];

    ck_assert_int_eq(berth_publish_path(good, "n", 1, 0600, 0, &err), 0);
    test_read_file(good, buf, sizeof(buf));
    ck_assert_str_eq(buf, "n");
    ck_assert_int_eq(berth_publish_path(good, "m", 1, 0600, 0, &err), -EEXIST);
    ck_assert_ptr_nonnull(strstr(err.message, "a/new already exists"));
    ck_assert_int_eq(berth_publish_path(viasym, "n", 1, 0600, 0, &err), -ELOOP);
    ck_assert_int_eq(berth_publish_path("relative/x", "n", 1, 0600, 0, &err), -EINVAL);
    ck_assert_int_eq(berth_publish_path(slash, "n", 1, 0600, 0, &err), -EINVAL);
}
END_TEST

START_TEST(names_and_paths)
{
    _cleanup_free_ char *abs = NULL, *rel = NULL, *want = test_path(tmp, "x/y");

    ck_assert(berth_name_valid("a"));
    ck_assert(berth_name_valid(".hidden"));
    ck_assert(!berth_name_valid(""));
    ck_assert(!berth_name_valid("."));
    ck_assert(!berth_name_valid(".."));
    ck_assert(!berth_name_valid("a/b"));
    ck_assert(!berth_name_valid(NULL));
    ck_assert_int_eq(berth_path_absolute("/etc/x", &abs), 0);
    ck_assert_str_eq(abs, "/etc/x");
    ck_assert_int_eq(chdir(tmp), 0);
    ck_assert_int_eq(berth_path_absolute("x/y", &rel), 0);
    ck_assert_str_eq(rel, want);
    ck_assert_int_eq(berth_path_absolute("", &abs), -EINVAL);
}
END_TEST

/* Positional writes and reads, whole or not at all. */
START_TEST(positional_io)
{
    _cleanup_free_ char *dir = test_tmpdir(), *path = NULL;
    char got[16] = "";
    int fd;

    ck_assert_int_gt(asprintf(&path, "%s/f", dir), 0);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_pwrite_all(fd, "world", 5, 6), 0);
    ck_assert_int_eq(berth_pwrite_all(fd, "hello ", 6, 0), 0);
    ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0); /* the position never moves */
    ck_assert_int_eq(berth_pread_all(fd, got, 11, 0), 0);
    ck_assert_str_eq(got, "hello world");
    ck_assert_int_eq(berth_pread_all(fd, got, 6, 6), -EIO); /* past the end */
    ck_assert_int_eq(berth_pread_all(-1, got, 1, 0), -EBADF);
    ck_assert_int_eq(berth_pwrite_all(-1, "x", 1, 0), -EBADF);
    close(fd);
    test_rm_rf(dir);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("fsutil");
    TCase *tc = test_case(s, "fsutil");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, open_beneath);
    tcase_add_test(tc, open_trusted);
    tcase_add_test(tc, file_check);
    tcase_add_test(tc, trusted_file_accepted);
    tcase_add_test(tc, trusted_file_mode);
    tcase_add_test(tc, trusted_file_symlinks);
    tcase_add_test(tc, trusted_file_links_and_types);
    tcase_add_test(tc, trusted_file_owner);
    tcase_add_test(tc, read_fd_bounded);
    tcase_add_test(tc, read_file_at);
    tcase_add_test(tc, publish_create_and_refuse);
    tcase_add_test(tc, publish_failure_leaves_nothing);
    tcase_add_test(tc, tmpfile_publish);
    tcase_add_test(tc, tmpfile_without_o_tmpfile);
    tcase_add_test(tc, publish_path);
    tcase_add_test(tc, names_and_paths);
    tcase_add_test(tc, positional_io);
    return s;
}

TEST_MAIN()
