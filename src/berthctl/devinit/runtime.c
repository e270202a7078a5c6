/* SPDX-License-Identifier: MIT */
/* runtime.c -- runtime-oci backend settings for dev-init --runtime (runtime.h). */
#include <errno.h>
#include <fcntl.h>
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

/* The pin of the binary at @path: {path, sha256, size, mode}.  Refuses what
 * runtime-oci would refuse to run (ocicfg.c): what is not a trusted file
 * (berth_trusted_file_check()). */
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
    if ((r = berth_trusted_file_check(fd, path, 0, &st, reterr)) < 0)
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
