/* SPDX-License-Identifier: MIT */
/* rootfs.c -- confined writes below a root descriptor; see rootfs.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "extract.h"
#include "macro.h"
#include "refusal.h"
#include "rootfs.h"

#define RESOLVE_RETRIES 16

/* openat2(rootfd, path, O_PATH|O_DIRECTORY, RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS); fd or -errno. */
static int resolve_dir(int rootfd, const char *path)
{
    struct open_how how = {
        .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
        .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
    };

    for (int i = 0; i < RESOLVE_RETRIES; i++) {
        long fd = syscall(SYS_openat2, rootfd, path[0] ? path : ".", &how, sizeof(how));
        if (fd >= 0)
            return (int)fd;
        if (errno != EAGAIN && errno != EINTR)
            return -errno;
    }
    return -EAGAIN;
}

static int resolve_error(int r, const char *dir, struct berth_error *reterr)
{
    switch (r) {
    case -ELOOP: return berth_image_refuse(reterr, BERTH_IMAGE_SYMLINK_LOOP, "resolving \"%s\"", dir);
    case -ENOTDIR: return berth_image_refuse(reterr, BERTH_IMAGE_CONFLICT, "\"%s\" is not a directory", dir);
    default: return berth_error_set(reterr, r, "resolving \"%s\": %s", dir, strerror(-r));
    }
}

int berth_rootfs_open_dir(int rootfd, const char *dir, bool create, int *ret_fd, struct berth_error *reterr)
{
    _cleanup_free_ char *copy = NULL;
    _cleanup_close_ int prev = -1;
    size_t start = 0;
    int fd;

    if (rootfd < 0 || !dir || !ret_fd)
        return -EINVAL;
    fd = resolve_dir(rootfd, dir);
    if (fd >= 0) {
        *ret_fd = fd;
        return 0;
    }
    if (fd != -ENOENT)
        return resolve_error(fd, dir, reterr);
    if (!create)
        return -ENOENT;

    /* Walk prefix by prefix, creating what is missing in the directory the
     * previous prefix resolved to (never through a symlink: mkdirat does
     * not follow the final component, a dangling symlink is EEXIST). */
    copy = strdup(dir);
    if (!copy)
        return -ENOMEM;
    prev = resolve_dir(rootfd, "");
    if (prev < 0)
        return resolve_error(prev, "", reterr);
    for (size_t i = 0;; i++) {
        char saved = copy[i];
        int r;

        if (saved != '/' && saved != '\0')
            continue;
        copy[i] = '\0';
        r = resolve_dir(rootfd, copy);
        if (r == -ENOENT) {
            if (mkdirat(prev, copy + start, 0755) < 0) {
                if (errno == EEXIST)
                    return berth_image_refuse(reterr, BERTH_IMAGE_CONFLICT, "\"%s\" is a dangling symlink", copy);
                return berth_error_set(reterr, -errno, "creating \"%s\": %m", copy);
            }
            if (fchmodat(prev, copy + start, 0755, AT_SYMLINK_NOFOLLOW) < 0)
                return berth_error_set(reterr, -errno, "chmod \"%s\": %m", copy);
            r = resolve_dir(rootfd, copy);
        }
        if (r < 0)
            return resolve_error(r, copy, reterr);
        close(prev);
        prev = r;
        copy[i] = saved;
        if (saved == '\0')
            break;
        start = i + 1;
    }
    *ret_fd = TAKE_FD(prev);
    return 0;
}

int berth_rootfs_remove(int dirfd, const char *name, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    struct stat st;
    int r;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return berth_error_set(reterr, -errno, "stat \"%s\": %m", name);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
            return berth_error_set(reterr, -errno, "unlink \"%s\": %m", name);
        return 0;
    }
    if ((st.st_mode & 0700) != 0700 && fchmodat(dirfd, name, (st.st_mode & 0777) | 0700, AT_SYMLINK_NOFOLLOW) < 0)
        return berth_error_set(reterr, -errno, "chmod \"%s\": %m", name);
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "opening \"%s\": %m", name);
    r = berth_tree_clear(fd, reterr);
    if (r < 0)
        return r;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
        return berth_error_set(reterr, -errno, "rmdir \"%s\": %m", name);
    return 0;
}

int berth_rootfs_make_room(int dirfd, const char *name, bool want_dir, bool may_remove_dir, struct berth_error *reterr)
{
    struct stat st;

    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return berth_error_set(reterr, -errno, "stat \"%s\": %m", name);
    }
    if (S_ISDIR(st.st_mode)) {
        if (want_dir)
            return 1;
        if (!may_remove_dir)
            return berth_image_refuse(reterr, BERTH_IMAGE_CONFLICT, "\"%s\" is a directory of this layer", name);
        return berth_rootfs_remove(dirfd, name, reterr);
    }
    if (unlinkat(dirfd, name, 0) < 0)
        return berth_error_set(reterr, -errno, "unlink \"%s\": %m", name);
    return 0;
}

int berth_rootfs_chmod_dir(int dirfd, const char *name, mode_t mode, struct berth_error *reterr)
{
    const char *n = name[0] ? name : "."; /* "." names @dirfd itself */
    struct stat st;

    if (fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return berth_error_set(reterr, -errno, "stat \"%s\": %m", name);
    if (!S_ISDIR(st.st_mode))
        return berth_error_set(reterr, -ENOTDIR, "\"%s\" is not a directory", name);
    /* Permission bits and the sticky bit (which only restricts, as on /tmp). */
    if (fchmodat(dirfd, n, mode & 01777, name[0] ? AT_SYMLINK_NOFOLLOW : 0) < 0)
        return berth_error_set(reterr, -errno, "chmod \"%s\": %m", name);
    return 0;
}

int berth_rootfs_mkdir(int dirfd, const char *name, mode_t mode, struct berth_error *reterr)
{
    if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "mkdir \"%s\": %m", name);
    return berth_rootfs_chmod_dir(dirfd, name, (mode & 01777) | 0700, reterr);
}

int berth_rootfs_create_file(int dirfd, const char *name, int *ret_fd, struct berth_error *reterr)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);

    if (fd < 0)
        return berth_error_set(reterr, -errno, "creating \"%s\": %m", name);
    *ret_fd = fd;
    return 0;
}

int berth_rootfs_symlink(int dirfd, const char *name, const char *target, struct berth_error *reterr)
{
    if (symlinkat(target, dirfd, name) < 0)
        return berth_error_set(reterr, -errno, "symlink \"%s\": %m", name);
    return 0;
}

int berth_rootfs_hardlink(int rootfd, const char *target, int dirfd, const char *name, bool may_remove_dir,
                          struct berth_error *reterr)
{
    _cleanup_free_ char *tdir = strdup(target);
    _cleanup_close_ int tfd = -1;
    const char *tname = target;
    char *slash;
    struct stat st;
    int r;

    if (!tdir)
        return -ENOMEM;
    slash = strrchr(tdir, '/');
    if (slash) {
        *slash = '\0';
        tname = target + (slash - tdir) + 1;
    } else
        tdir[0] = '\0';
    tfd = resolve_dir(rootfd, tdir);
    if (tfd == -ENOENT || tfd == -ENOTDIR)
        return berth_image_refuse(reterr, BERTH_IMAGE_HARDLINK_MISSING_TARGET, "\"%s\" does not exist", target);
    if (tfd < 0)
        return resolve_error(tfd, tdir, reterr);
    if (fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return berth_image_refuse(reterr, BERTH_IMAGE_HARDLINK_MISSING_TARGET, "\"%s\" is not a regular file", target);
    r = berth_rootfs_make_room(dirfd, name, false, may_remove_dir, reterr);
    if (r < 0)
        return r;
    if (linkat(tfd, tname, dirfd, name, 0) < 0) {
        if (errno == ENOENT)
            return berth_image_refuse(reterr, BERTH_IMAGE_HARDLINK_MISSING_TARGET, "\"%s\" vanished", target);
        return berth_error_set(reterr, -errno, "link \"%s\": %m", name);
    }
    return 0;
}
