/* SPDX-License-Identifier: MIT */
/* outcheck.c -- the no-follow reader of declared outputs; see outcheck.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"
#include "digest.h"
#include "fsutil.h"
#include "macro.h"
#include "outcheck.h"

#define READ_CHUNK 65536

const char *oci_output_problem_name(enum oci_output_problem p)
{
    switch (p) {
    case OCI_OUTPUT_MISSING: return "missing";
    case OCI_OUTPUT_TOO_LARGE: return "too_large";
    case OCI_OUTPUT_SYMLINK: return "symlink";
    case OCI_OUTPUT_HARD_LINK: return "hard_link";
    case OCI_OUTPUT_NOT_REGULAR: return "not_regular";
    case OCI_OUTPUT_UNREADABLE: return "unreadable";
    case OCI_OUTPUT_OK: break;
    }
    return NULL;
}

const char *oci_output_relpath(const char *guest_path)
{
    static const char prefix[] = BERTH_BUNDLE_OUTPUTS "/";

    if (!guest_path || strncmp(guest_path, prefix, sizeof(prefix) - 1) != 0 || !guest_path[sizeof(prefix) - 1])
        return NULL;
    return guest_path + sizeof(prefix) - 1;
}

/* The verdict on what fstat(2) says of an output. */
static enum oci_output_problem judge(const struct stat *st, uint64_t max_bytes)
{
    if (S_ISLNK(st->st_mode))
        return OCI_OUTPUT_SYMLINK;
    if (!S_ISREG(st->st_mode))
        return OCI_OUTPUT_NOT_REGULAR;
    if (st->st_nlink != 1)
        return OCI_OUTPUT_HARD_LINK;
    if (st->st_size < 0 || (uint64_t)st->st_size > max_bytes)
        return OCI_OUTPUT_TOO_LARGE;
    return OCI_OUTPUT_OK;
}

static int problem_errno(enum oci_output_problem p)
{
    switch (p) {
    case OCI_OUTPUT_SYMLINK: return -ELOOP;
    case OCI_OUTPUT_NOT_REGULAR: return -EBADFD;
    case OCI_OUTPUT_HARD_LINK: return -EMLINK;
    case OCI_OUTPUT_TOO_LARGE: return -EFBIG;
    default: return -EIO;
    }
}

/* berth_open_beneath() of @relpath, its failure classified. */
static int open_classified(int rootfd, const char *relpath, int flags, enum oci_output_problem *ret_problem)
{
    int fd = berth_open_beneath(rootfd, relpath, flags, 0, NULL);

    if (fd >= 0)
        return fd;
    switch (fd) {
    case -ENOENT:
    case -ENOTDIR: /* a component on the way is a file: nothing at that path */
        *ret_problem = OCI_OUTPUT_MISSING;
        break;
    case -ELOOP: /* RESOLVE_NO_SYMLINKS met a link on the way */
        *ret_problem = OCI_OUTPUT_SYMLINK;
        break;
    default: *ret_problem = OCI_OUTPUT_UNREADABLE; break;
    }
    return fd;
}

int oci_output_open(int rootfd, const char *relpath, uint64_t max_bytes, int *ret_fd, uint64_t *ret_size,
                    enum oci_output_problem *ret_problem)
{
    _cleanup_close_ int pathfd = -1, fd = -1;
    struct stat st, st2;

    *ret_problem = OCI_OUTPUT_UNREADABLE;
    if (rootfd < 0 || !relpath || !relpath[0] || relpath[0] == '/' || !ret_fd || !ret_size)
        return -EINVAL;
    /* O_PATH first: a FIFO, socket or device is judged without being opened
     * for reading.  With O_NOFOLLOW a link as the last component is opened
     * itself (openat2(2)), and fstat says so. */
    pathfd = open_classified(rootfd, relpath, O_PATH | O_NOFOLLOW, ret_problem);
    if (pathfd < 0)
        return pathfd;
    if (fstat(pathfd, &st) < 0)
        return -errno;
    if ((*ret_problem = judge(&st, max_bytes)) != OCI_OUTPUT_OK)
        return problem_errno(*ret_problem);
    /* Only a regular file is opened for reading, the same way, and must be
     * the very inode judged above. */
    fd = open_classified(rootfd, relpath, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, ret_problem);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st2) < 0) {
        *ret_problem = OCI_OUTPUT_UNREADABLE;
        return -errno;
    }
    if (st2.st_dev != st.st_dev || st2.st_ino != st.st_ino) {
        *ret_problem = OCI_OUTPUT_UNREADABLE;
        return -ESTALE; /* replaced between the two opens */
    }
    if ((*ret_problem = judge(&st2, max_bytes)) != OCI_OUTPUT_OK)
        return problem_errno(*ret_problem);
    if (fcntl(fd, F_SETFL, 0) < 0) { /* drop O_NONBLOCK: a plain read-only descriptor */
        *ret_problem = OCI_OUTPUT_UNREADABLE;
        return -errno;
    }
    *ret_size = (uint64_t)st2.st_size;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

int oci_output_digest(int fd, uint64_t size, char ret_digest[BERTH_DIGEST_BUFSZ])
{
    _cleanup_free_ uint8_t *buf = malloc(READ_CHUNK);
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    uint64_t off = 0;
    int r;

    if (fd < 0 || !ret_digest)
        return -EINVAL;
    if (!buf)
        return -ENOMEM;
    if ((r = berth_sha256_new(&h)) < 0)
        return r;
    /* Exactly @size bytes, then one more read that must find the end. */
    for (;;) {
        size_t want = size - off > READ_CHUNK ? READ_CHUNK : (size_t)(size - off);
        ssize_t n;

        if (want == 0)
            want = 1;
        n = pread(fd, buf, want, (off_t)off);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            r = -errno;
            break;
        }
        if (off == size) {
            r = n == 0 ? 0 : -EIO; /* more than @size: it grew */
            break;
        }
        if (n == 0) {
            r = -EIO; /* fewer than @size: it shrank */
            break;
        }
        if ((r = berth_sha256_update(h, buf, (size_t)n)) < 0)
            break;
        off += (uint64_t)n;
    }
    if (r == 0 && (r = berth_sha256_final(h, raw)) == 0)
        berth_digest_format(raw, ret_digest);
    berth_sha256_free(h);
    return r;
}

int oci_output_capture(int rootfd, const char *relpath, uint64_t max_bytes, char ret_digest[BERTH_DIGEST_BUFSZ],
                       uint64_t *ret_size, enum oci_output_problem *ret_problem)
{
    _cleanup_close_ int fd = -1;
    uint64_t size = 0;
    int r;

    if ((r = oci_output_open(rootfd, relpath, max_bytes, &fd, &size, ret_problem)) < 0)
        return r;
    if ((r = oci_output_digest(fd, size, ret_digest)) < 0) {
        *ret_problem = OCI_OUTPUT_UNREADABLE;
        return r;
    }
    *ret_size = size;
    return 0;
}
