/* SPDX-License-Identifier: MIT */
/* reserve.c -- disk space held back for writes that must not fail; see reserve.h. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "macro.h"
#include "reserve.h"

#define PATTERN_CHUNK 16384

/* Whether @st is a reserve of @bytes with every byte allocated. */
static bool whole(const struct stat *st, uint64_t bytes)
{
    return S_ISREG(st->st_mode) && (uint64_t)st->st_size == bytes && (uint64_t)st->st_blocks * 512 >= bytes;
}

/* Write a non-zero pattern over [0, @bytes) of @fd, for filesystems without fallocate(2). */
static int write_pattern(int fd, uint64_t bytes)
{
    uint8_t chunk[PATTERN_CHUNK];
    uint32_t x = 0x9e3779b9u;
    uint64_t off = 0;
    size_t i;

    for (i = 0; i < sizeof(chunk); i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* xorshift32: no long runs for a compressor */
        chunk[i] = (uint8_t)(x | 1);
    }
    while (off < bytes) {
        size_t n = bytes - off < sizeof(chunk) ? (size_t)(bytes - off) : sizeof(chunk);
        ssize_t w = pwrite(fd, chunk, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        off += (uint64_t)w;
    }
    return 0;
}

/* Allocate [0, @bytes) of @fd for real. */
static int allocate(int fd, uint64_t bytes)
{
    int r;

    do
        r = fallocate(fd, 0, 0, (off_t)bytes) < 0 ? -errno : 0;
    while (r == -EINTR);
    if (r == -EOPNOTSUPP || r == -ENOSYS)
        r = write_pattern(fd, bytes);
    return r;
}

int berth_reserve_fill(int dirfd, const char *name, uint64_t bytes, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    struct stat st;
    int r;

    if (dirfd < 0 || !name || !berth_name_valid(name) || bytes == 0 || bytes > INT64_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            return berth_error_set(reterr, -ELOOP, "%s is a symbolic link", name);
        return berth_error_set(reterr, -errno, "creating the space reserve %s: %m", name);
    }
    r = berth_private_file_check(fd, name, &st, reterr);
    if (r < 0)
        return r;
    if (whole(&st, bytes))
        return 0;
    r = (uint64_t)st.st_size > bytes && ftruncate(fd, (off_t)bytes) < 0 ? -errno : 0;
    if (r == 0)
        r = allocate(fd, bytes);
    if (r == 0 && (fsync(fd) < 0 || fsync(dirfd) < 0))
        r = -errno;
    if (r < 0) {
        (void)unlinkat(dirfd, name, 0); /* a partial reserve must not pass for a whole one */
        return berth_error_set(reterr, r, "allocating %llu bytes for the space reserve %s: %s",
                               (unsigned long long)bytes, name, strerror(-r));
    }
    return 0;
}

int berth_reserve_release(int dirfd, const char *name, struct berth_error *reterr)
{
    if (dirfd < 0 || !name || !berth_name_valid(name))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (unlinkat(dirfd, name, 0) < 0)
        return berth_error_set(reterr, -errno, "removing the space reserve %s: %m", name);
    return 0;
}

bool berth_reserve_held(int dirfd, const char *name, uint64_t bytes)
{
    struct stat st;

    return dirfd >= 0 && name && berth_name_valid(name) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           whole(&st, bytes);
}

int berth_reserve_probe(int dirfd, uint64_t bytes, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    char name[64];
    int r;

    if (dirfd < 0 || bytes == 0 || bytes > INT64_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        /* No O_TMPFILE here: a named file, unlinked at once; the descriptor keeps it. */
        snprintf(name, sizeof(name), ".berth-probe-%ld", (long)getpid());
        (void)unlinkat(dirfd, name, 0);
        fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 && unlinkat(dirfd, name, 0) < 0) {
            r = -errno;
            return berth_error_set(reterr, r, "removing the space probe %s: %s", name, strerror(-r));
        }
    }
    if (fd < 0)
        return berth_error_set(reterr, -errno, "creating a space probe: %m");
    r = allocate(fd, bytes);
    if (r < 0)
        return berth_error_set(reterr, r, "%llu bytes are not free: %s", (unsigned long long)bytes, strerror(-r));
    return 0;
}
