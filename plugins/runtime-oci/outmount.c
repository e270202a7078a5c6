/* SPDX-License-Identifier: MIT */
/* outmount.c -- the per-job outputs tmpfs; see outmount.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fsutil.h"
#include "macro.h"
#include "outmount.h"

#define RELEASE_LAYERS 8 /* mounts stacked on the directory that release() takes off */

/* fsconfig(2) of one string parameter. */
static int set_param(int fsfd, const char *key, const char *value)
{
    return fsconfig(fsfd, FSCONFIG_SET_STRING, key, value, 0) < 0 ? -errno : 0;
}

int oci_outputs_mount(int jobfd, const char *name, uint64_t bytes, uint32_t uid, uint32_t gid,
                      struct berth_error *reterr)
{
    _cleanup_close_ int fsfd = -1, mfd = -1;
    char size[32], inodes[32], u[16], g[16];
    int r;

    if (jobfd < 0 || !name || !berth_name_valid(name) || bytes == 0)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    snprintf(size, sizeof(size), "%" PRIu64, bytes);
    snprintf(inodes, sizeof(inodes), "%d", OCI_OUTPUTS_INODES);
    snprintf(u, sizeof(u), "%" PRIu32, uid);
    snprintf(g, sizeof(g), "%" PRIu32, gid);
    fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fsfd < 0)
        return berth_error_set(reterr, -errno, "cannot create the outputs tmpfs: fsopen: %m");
    if ((r = set_param(fsfd, "source", "berth-outputs")) < 0 || (r = set_param(fsfd, "size", size)) < 0 ||
        (r = set_param(fsfd, "nr_inodes", inodes)) < 0 || (r = set_param(fsfd, "mode", "0700")) < 0 ||
        (r = set_param(fsfd, "uid", u)) < 0 || (r = set_param(fsfd, "gid", g)) < 0)
        return berth_error_set(reterr, r, "cannot configure the outputs tmpfs: %s", strerror(-r));
    if (fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return berth_error_set(reterr, -errno, "cannot create the outputs tmpfs: %m");
    mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (mfd < 0)
        return berth_error_set(reterr, -errno, "cannot mount the outputs tmpfs: fsmount: %m");
    if (move_mount(mfd, "", jobfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return berth_error_set(reterr, -errno, "cannot mount the outputs tmpfs on %s: move_mount: %m", name);
    return 0;
}

int oci_outputs_mounted(int jobfd, const char *name)
{
    struct statx sx;
    struct stat parent;

    if (statx(jobfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_TYPE | STATX_INO, &sx) < 0)
        return -errno;
    if (!S_ISDIR(sx.stx_mode))
        return -ENOTDIR;
    if (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT)
        return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) ? 1 : 0;
    if (fstat(jobfd, &parent) < 0)
        return -errno;
    return makedev(sx.stx_dev_major, sx.stx_dev_minor) != parent.st_dev ? 1 : 0;
}

int oci_outputs_release(int jobfd, const char *name, const char *path, struct berth_error *reterr)
{
    int r, i;

    if (jobfd < 0 || !name || !path || path[0] != '/')
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    for (i = 0; i < RELEASE_LAYERS; i++) {
        r = oci_outputs_mounted(jobfd, name);
        if (r == -ENOENT || r == 0)
            return 0; /* nothing (any more) mounted there */
        if (r < 0)
            return berth_error_set(reterr, r, "%s: %s", path, strerror(-r));
        if (umount2(path, UMOUNT_NOFOLLOW) < 0) {
            if (errno == EBUSY)
                return berth_error_set(reterr, -EBUSY, "%s is still in use (an open output?); not unmounted", path);
            if (errno != EINVAL) /* EINVAL: not a mount point after all; looked at again above */
                return berth_error_set(reterr, -errno, "cannot unmount %s: %m", path);
        }
    }
    return berth_error_set(reterr, -EIO, "%s is still a mount point after %d unmounts", path, RELEASE_LAYERS);
}
