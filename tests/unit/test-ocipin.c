/* SPDX-License-Identifier: MIT */
/*
 * test-ocipin.c -- the runtime pin's file identity (plugins/runtime-oci/
 * ocicfg.h), which lets berth-oci-shim skip hashing the runtime the plugin
 * has just hashed: it matches the very file it was taken from, and no
 * longer once that file was written (same size), had its mtime set back,
 * or was replaced by another file; it survives the trip through shim.json
 * exactly, and a malformed identity is refused.  The sealed copy the shim
 * runs a small runtime from holds exactly the checked bytes, cannot be
 * written, and is refused when the file changed since it was checked.
 */
#include "testutil.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include "digest.h"
#include "jsonobj.h"
#include "macro.h"
#include "ocicfg.h"

#define DIGEST "sha256:0000000000000000000000000000000000000000000000000000000000000001"

static char *dir, *file;

static void setup(void)
{
    dir = test_tmpdir();
    file = test_path(dir, "runtime");
    test_write_file(file, "#!/bin/true\n", 12, 0755);
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
    free(file);
}

/* The identity of @path as oci_pin_verify_fd() records it. */
static struct oci_pin_cache identity_of(const char *path)
{
    struct oci_pin_cache c = {.valid = true};
    struct stat st;

    ck_assert_int_eq(stat(path, &st), 0);
    c.dev = st.st_dev;
    c.ino = st.st_ino;
    c.size = st.st_size;
    c.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    c.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    return c;
}

static bool matches(const struct oci_pin_cache *c, const char *path)
{
    struct stat st;

    ck_assert_int_eq(stat(path, &st), 0);
    return oci_pin_identity_matches(c, &st);
}

/* Wait until the file system's clock has moved past @c's ctime, so a change
 * made now gets another timestamp (the kernel's coarse clock ticks every
 * few milliseconds). */
static void clock_moves(const struct oci_pin_cache *c)
{
    for (;;) {
        struct timespec ts;
        ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
        if ((int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec > c->ctime_ns + 20000000LL)
            return;
        ck_assert_int_eq(usleep(5000), 0);
    }
}

START_TEST(same_file_matches)
{
    struct oci_pin_cache c = identity_of(file);

    ck_assert(matches(&c, file));
    c.valid = false;
    ck_assert(!matches(&c, file));
}
END_TEST

START_TEST(rewritten_file_does_not_match)
{
    struct oci_pin_cache c = identity_of(file);
    struct timespec keep[2];
    struct stat st;
    int fd;

    clock_moves(&c);
    /* Same size, same inode, other bytes. */
    fd = open(file, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "#!/bin/echo\n", 12, 0), 12);
    ck_assert_int_eq(close(fd), 0);
    ck_assert(!matches(&c, file));
    /* Setting the mtime back does not hide it: that changes the ctime. */
    ck_assert_int_eq(stat(file, &st), 0);
    keep[0] = st.st_atim;
    keep[1].tv_sec = (time_t)(c.mtime_ns / 1000000000LL);
    keep[1].tv_nsec = (long)(c.mtime_ns % 1000000000LL);
    ck_assert_int_eq(utimensat(AT_FDCWD, file, keep, 0), 0);
    ck_assert_int_eq(stat(file, &st), 0);
    ck_assert_int_eq((int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, c.mtime_ns);
    ck_assert(!matches(&c, file));
}
END_TEST

START_TEST(replaced_file_does_not_match)
{
    struct oci_pin_cache c = identity_of(file);
    char *other = test_path(dir, "other");

    test_write_file(other, "#!/bin/true\n", 12, 0755);
    ck_assert_int_eq(rename(other, file), 0);
    ck_assert(!matches(&c, file));
    free(other);
}
END_TEST

/* create_args: flags for the runtime's create (and its run --detach), but
 * none of those the shim sets itself. */
START_TEST(create_args_checked)
{
    static const char *const refused[] = {"--bundle=/x", "--pid-file=/x", "--console-socket=/x", "--detach", "no-dash"};
    struct berth_error err = BERTH_ERROR_INIT;
    struct oci_config c;
    char *json = NULL;

    for (size_t i = 0; i < ELEMENTSOF(refused) + 1; i++) {
        const char *arg = i < ELEMENTSOF(refused) ? refused[i] : "--no-new-keyring";
        free(json);
        ck_assert_int_gt(asprintf(&json,
                                  "{\"runtime\":{\"path\":\"%s\",\"sha256\":\"" DIGEST "\",\"size\":12,"
                                  "\"mode\":\"0755\"},\"isolation\":\"native\",\"state_directory\":\"%s\","
                                  "\"create_args\":[\"%s\"]}",
                                  file, dir, arg),
                         0);
        memset(&c, 0, sizeof(c));
        err = (struct berth_error)BERTH_ERROR_INIT;
        if (i < ELEMENTSOF(refused)) {
            ck_assert_msg(oci_config_parse(json, strlen(json), "/usr/libexec/berth-oci-shim", &c, &err) == -EBADMSG,
                          "%s was not refused", arg);
            ck_assert_msg(strstr(err.message, "create_args[0]"), "%s", err.message);
        } else {
            ck_assert_msg(oci_config_parse(json, strlen(json), "/usr/libexec/berth-oci-shim", &c, &err) == 0, "%s",
                          err.message);
            ck_assert_uint_eq(c.n_create_args, 1);
            ck_assert(c.sealed_copy); /* the default */
            oci_config_clear(&c);
        }
    }
    free(json);
}
END_TEST

/* sealed_copy: a boolean, true unless set to false. */
START_TEST(sealed_copy_config)
{
    static const char *const values[] = {"false", "true", "\"no\"", "0"};
    struct berth_error err = BERTH_ERROR_INIT;
    struct oci_config c;

    for (size_t i = 0; i < ELEMENTSOF(values); i++) {
        _cleanup_free_ char *json = NULL;
        int r;

        ck_assert_int_gt(asprintf(&json,
                                  "{\"runtime\":{\"path\":\"%s\",\"sha256\":\"" DIGEST "\",\"size\":12,"
                                  "\"mode\":\"0755\"},\"isolation\":\"native\",\"state_directory\":\"%s\","
                                  "\"sealed_copy\":%s}",
                                  file, dir, values[i]),
                         0);
        memset(&c, 0, sizeof(c));
        err = (struct berth_error)BERTH_ERROR_INIT;
        r = oci_config_parse(json, strlen(json), "/usr/libexec/berth-oci-shim", &c, &err);
        if (i < 2) {
            ck_assert_msg(r == 0, "%s", err.message);
            ck_assert(c.sealed_copy == (i == 1));
            oci_config_clear(&c);
        } else {
            ck_assert_int_eq(r, -EBADMSG);
            ck_assert_ptr_nonnull(strstr(err.message, "sealed_copy must be true or false"));
        }
    }
}
END_TEST

START_TEST(json_round_trip)
{
    struct oci_pin_cache c = identity_of(file), back;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *j = oci_pin_identity_json(&c);

    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(oci_pin_identity_parse(j, DIGEST, &back, &err), 0);
    ck_assert(back.valid);
    ck_assert(back.dev == c.dev && back.ino == c.ino && back.size == c.size);
    ck_assert_int_eq(back.mtime_ns, c.mtime_ns);
    ck_assert_int_eq(back.ctime_ns, c.ctime_ns);
    ck_assert_str_eq(back.digest, DIGEST);
    ck_assert(matches(&back, file));
    c.valid = false;
    ck_assert_ptr_null(oci_pin_identity_json(&c));
}
END_TEST

START_TEST(malformed_identity_refused)
{
    static const char *const bad[] = {
        "{\"dev\":\"1\",\"ino\":\"2\",\"size\":\"3\",\"mtime_ns\":\"4\"}", /* no ctime_ns */
        "{\"dev\":\"1\",\"ino\":\"2\",\"size\":\"3\",\"mtime_ns\":\"4\",\"ctime_ns\":\"5\",\"x\":\"6\"}", /* unknown */
        "{\"dev\":\"1\",\"ino\":\"2\",\"size\":\"-3\",\"mtime_ns\":\"4\",\"ctime_ns\":\"5\"}",            /* negative */
        "{\"dev\":1,\"ino\":\"2\",\"size\":\"3\",\"mtime_ns\":\"4\",\"ctime_ns\":\"5\"}",                 /* a number */
        "{\"dev\":\"01\",\"ino\":\"2\",\"size\":\"3\",\"mtime_ns\":\"4\",\"ctime_ns\":\"5\"}", /* leading 0 */
        "[\"1\",\"2\",\"3\",\"4\",\"5\"]",
    };

    for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        struct oci_pin_cache back = {0};
        _cleanup_json_ json_t *j = json_loads(bad[i], 0, NULL);

        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(oci_pin_identity_parse(j, DIGEST, &back, &err), -EBADMSG);
        ck_assert(!back.valid);
        ck_assert_str_ne(err.message, "");
    }
}
END_TEST

/* The pin of @path as it is now (its digest, size and mode). */
static struct oci_pin pin_of(const char *path)
{
    struct oci_pin pin = {.path = path};
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_digest_fd(fd, pin.sha256), 0);
    ck_assert_int_eq(fstat(fd, &st), 0);
    pin.size = st.st_size;
    pin.mode = st.st_mode & 07777;
    close(fd);
    return pin;
}

/* The copy: the pinned bytes, every seal, executable, close-on-exec, named
 * after the file; writing it fails. */
START_TEST(sealed_copy_holds_the_bytes)
{
    _cleanup_free_ char *crun = test_path(dir, "crun-like");
    struct berth_error err = {0};
    char buf[64], link[128], self[64];
    struct oci_pin pin;
    struct stat st;
    int fd, copy, flags;
    ssize_t n;

    test_write_file(crun, "#!/bin/true\n", 12, 0755);
    pin = pin_of(crun);
    fd = open(crun, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(lseek(fd, 5, SEEK_SET), 5); /* its offset is not used */
    copy = oci_pin_sealed_copy(fd, crun, &pin, &err);
    close(fd);
    ck_assert_msg(copy >= 0, "%s", err.message);
    ck_assert_int_eq(fcntl(copy, F_GET_SEALS), OCI_SEALED_RUNTIME_SEALS);
    ck_assert_int_eq(OCI_SEALED_RUNTIME_SEALS, 15);
    flags = fcntl(copy, F_GETFD);
    ck_assert(flags >= 0 && (flags & FD_CLOEXEC));
    ck_assert_int_eq(fstat(copy, &st), 0);
    ck_assert_int_eq(st.st_size, 12);
    ck_assert_int_eq(st.st_mode & 07777, 0555); /* nobody opens it for writing again */
    n = pread(copy, buf, sizeof(buf), 0);
    ck_assert_int_eq(n, 12);
    ck_assert(memcmp(buf, "#!/bin/true\n", 12) == 0);
    ck_assert_int_eq(pwrite(copy, "x", 1, 0), -1);
    ck_assert_int_eq(errno, EPERM);
    ck_assert_int_eq(ftruncate(copy, 0), -1);
    snprintf(self, sizeof(self), "/proc/self/fd/%d", copy);
    n = readlink(self, link, sizeof(link) - 1);
    ck_assert_int_gt(n, 0);
    link[n] = '\0';
    ck_assert_str_eq(link, "/memfd:crun-like (deleted)");
    close(copy);
}
END_TEST

/* Bytes other than the pinned ones (the file was written after its check,
 * by any means): refused, not copied. */
START_TEST(sealed_copy_of_a_changed_file_refused)
{
    struct oci_pin pin = pin_of(file);
    _cleanup_close_ int fd = open(file, O_RDWR | O_CLOEXEC);
    struct berth_error err = {0};

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "#!/bin/echo\n", 12, 0), 12);
    ck_assert_int_eq(oci_pin_sealed_copy(fd, file, &pin, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "changed while it was copied: digest"));
    ck_assert_int_eq(pwrite(fd, "#!/bin/true\n\n", 13, 0), 13);
    ck_assert_int_eq(oci_pin_sealed_copy(fd, file, &pin, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "more bytes"));
}
END_TEST

/* Larger than OCI_SEALED_RUNTIME_MAX: -EFBIG, and the file runs as it is;
 * at the bound, copied. */
START_TEST(large_runtime_not_copied)
{
    _cleanup_close_ int fd = open(file, O_RDWR | O_CLOEXEC);
    struct berth_error err = {0};
    struct oci_pin pin;
    int copy;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, OCI_SEALED_RUNTIME_MAX + 1), 0);
    pin = pin_of(file);
    ck_assert_int_eq(oci_pin_sealed_copy(fd, file, &pin, &err), -EFBIG);
    ck_assert_int_eq(ftruncate(fd, OCI_SEALED_RUNTIME_MAX), 0);
    pin = pin_of(file);
    copy = oci_pin_sealed_copy(fd, file, &pin, &err);
    ck_assert_msg(copy >= 0, "%s", err.message);
    close(copy);
}
END_TEST

/* memfd_create(2)'s flag of Linux 6.3 (as ocicfg.c): where vm.memfd_noexec
 * = 1, a memfd made without it can never be executed (nor chmod'ed). */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/* A sealable memfd holding @len bytes of @data with mode @mode, unsealed. */
static int executable_memfd(const char *name, const char *data, size_t len, mode_t mode)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);

    if (fd < 0 && errno == EINVAL) /* before Linux 6.3 */
        fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    return fd;
}

/* What the shim takes as the backend's copy: one oci_pin_sealed_copy()
 * made for the pin; not the file itself, not a memfd missing a seal, not
 * one its owner may open for writing, not a copy of another size. */
START_TEST(sealed_check_tells_a_copy)
{
    _cleanup_free_ char *crun = test_path(dir, "crun-checked");
    _cleanup_close_ int fd = -1, copy = -1, loose = -1;
    struct berth_error err = {0};
    struct oci_pin pin, other;

    test_write_file(crun, "#!/bin/true\n", 12, 0755);
    pin = pin_of(crun);
    fd = open(crun, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    copy = oci_pin_sealed_copy(fd, crun, &pin, &err);
    ck_assert_msg(copy >= 0, "%s", err.message);
    ck_assert_msg(oci_pin_sealed_check(copy, &pin, &err) == 0, "%s", err.message);
    /* The file: no seals. */
    ck_assert_int_eq(oci_pin_sealed_check(fd, &pin, &err), -ENOEXEC);
    ck_assert_ptr_nonnull(strstr(err.message, "not sealed"));
    /* A memfd of the same bytes, sealed but for F_SEAL_WRITE: it could still change. */
    loose = executable_memfd("loose", "#!/bin/true\n", 12, 0555);
    ck_assert_int_eq(fcntl(loose, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW), 0);
    ck_assert_int_eq(oci_pin_sealed_check(loose, &pin, &err), -ENOEXEC);
    ck_assert_ptr_nonnull(strstr(err.message, "seals 0x7, mode 0555"));
    close(TAKE_FD(loose));
    /* Every seal, but its owner's write bit: someone could open it for
     * writing, after which nothing could execute it (ETXTBSY). */
    loose = executable_memfd("writable", "#!/bin/true\n", 12, 0755);
    ck_assert_int_eq(fcntl(loose, F_ADD_SEALS, OCI_SEALED_RUNTIME_SEALS), 0);
    ck_assert_int_eq(oci_pin_sealed_check(loose, &pin, &err), -ENOEXEC);
    ck_assert_ptr_nonnull(strstr(err.message, "seals 0xf, mode 0755"));
    /* The right copy for another pin (another size). */
    other = pin;
    other.size = 13;
    ck_assert_int_eq(oci_pin_sealed_check(copy, &other, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "13"));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("ocipin");
    TCase *tc = test_case(s, "identity");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, same_file_matches);
    tcase_add_test(tc, rewritten_file_does_not_match);
    tcase_add_test(tc, replaced_file_does_not_match);
    tcase_add_test(tc, json_round_trip);
    tcase_add_test(tc, create_args_checked);
    tcase_add_test(tc, malformed_identity_refused);
    tcase_add_test(tc, sealed_copy_config);
    tcase_add_test(tc, sealed_copy_holds_the_bytes);
    tcase_add_test(tc, sealed_copy_of_a_changed_file_refused);
    tcase_add_test(tc, large_runtime_not_copied);
    tcase_add_test(tc, sealed_check_tells_a_copy);
    return s;
}

TEST_MAIN()
