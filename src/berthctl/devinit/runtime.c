/* SPDX-License-Identifier: MIT */
/* runtime.c -- runtime-oci backend settings for dev-init --runtime (runtime.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "berth/cleanup.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "runtime.h"

/* The cgroup v1 hybrid-layout mount crun 1.8 refuses (platform facts). */
#define CGROUP_UNIFIED "/sys/fs/cgroup/unified"
/* Debian's runsc counts several host tasks per guest process (docs/runtime-oci.md). */
#define RUNSC_PIDS_CEILING 4096

/* True when CGROUP_UNIFIED is a mount point: a directory on another device than its parent. */
static bool hybrid_cgroup_mount(void)
{
    struct stat st, parent;

    return stat(CGROUP_UNIFIED, &st) == 0 && S_ISDIR(st.st_mode) && stat("/sys/fs/cgroup", &parent) == 0 &&
           st.st_dev != parent.st_dev;
}

/* Every directory above @path: root's (or the caller's), and writable by
 * group or others only when sticky, so nobody else can replace the binary
 * that berthd will run as root. */
static int parents_trusted(const char *path, struct berth_error *reterr)
{
    char dir[PATH_MAX];
    char *slash;
    struct stat st;

    if (strlen(path) >= sizeof(dir))
        return berth_error_set(reterr, -ENAMETOOLONG, "%s: path too long", path);
    strcpy(dir, path);
    while ((slash = strrchr(dir, '/')) != NULL) {
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (lstat(dir, &st) < 0)
            return berth_error_set(reterr, -errno, "%s: %m", dir);
        if (st.st_uid != 0 && st.st_uid != geteuid())
            return berth_error_set(reterr, -EPERM, "%s (above the runtime) is owned by uid %u, not root", dir,
                                   (unsigned)st.st_uid);
        if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
            return berth_error_set(reterr, -EPERM,
                                   "%s (above the runtime) is writable by group or others: anyone could replace "
                                   "the runtime",
                                   dir);
        if (slash == dir)
            break;
    }
    return 0;
}

/* The pin of the binary at @path: {path, sha256, size, mode}.  Refuses what
 * runtime-oci would refuse to run (ocicfg.c): not a regular file, not root's,
 * writable by group or others. */
static int runtime_pin(const char *path, json_t **ret, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    char digest[BERTH_DIGEST_BUFSZ], mode[8];
    struct stat st;
    int r;

    /* O_NONBLOCK: a FIFO at the path must not block the open. */
    fd = berth_open_trusted(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "%s: %m", path);
    if (!S_ISREG(st.st_mode))
        return berth_error_set(reterr, -EPERM, "%s is not a regular file", path);
    if (st.st_uid != 0 && st.st_uid != geteuid())
        return berth_error_set(reterr, -EPERM, "%s is owned by uid %u, not root", path, (unsigned)st.st_uid);
    if (st.st_mode & 022)
        return berth_error_set(reterr, -EPERM, "%s has mode %04o: group or others could write the runtime", path,
                               (unsigned)(st.st_mode & 07777));
    if ((r = parents_trusted(path, reterr)) < 0)
        return r;
    if ((r = berth_digest_fd(fd, digest)) < 0)
        return berth_error_set(reterr, r, "cannot read %s: %s", path, strerror(-r));
    snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
    *ret =
        json_pack("{s:s, s:s, s:I, s:s}", "path", path, "sha256", digest, "size", (json_int_t)st.st_size, "mode", mode);
    return *ret ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
}

int bctl_runtime_config(const char *path, json_t **ret, struct berth_error *reterr)
{
    const char *base = strrchr(path, '/');
    _cleanup_json_ json_t *pin = NULL, *doc = NULL;
    int r;

    base = base ? base + 1 : path;
    if (!streq(base, "runsc") && !streq(base, "crun"))
        return berth_error_set(reterr, -EINVAL,
                               "%s: dev-init knows the runtimes runsc and crun; write the configuration of "
                               "another runtime yourself (docs/runtime-oci.md) and give it with --backend",
                               path);
    if ((r = runtime_pin(path, &pin, reterr)) < 0)
        return r;
    if (streq(base, "runsc"))
        doc = json_pack("{s:O, s:s, s:[s, s], s:i}", "runtime", pin, "isolation", "gvisor", "global_args",
                        "--network=none", "--platform=ptrace", "pids_ceiling", RUNSC_PIDS_CEILING);
    else if (hybrid_cgroup_mount())
        doc = json_pack("{s:O, s:s, s:[s]}", "runtime", pin, "isolation", "native", "unmount", CGROUP_UNIFIED);
    else
        doc = json_pack("{s:O, s:s}", "runtime", pin, "isolation", "native");
    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(doc);
    return 0;
}
