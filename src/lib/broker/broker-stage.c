/* SPDX-License-Identifier: MIT */
/*
 * broker-stage.c -- each job's image staged before its backend starts it,
 * and removed once its result is recorded.  See broker.h (stage_directory).
 *
 * Layout: STAGE/<run_id>/ (0700) holds rootfs/ (0755: the guest's "/", which
 * a non-root guest must be able to search) and, once the stage completed,
 * the empty marker file "staged".  A directory without the marker is left
 * over from an interrupted stage: no backend was ever given it, so it is
 * cleared and staged again.  With the marker, a retried start() (a lost
 * reply) gets the same rootfs its running sandbox may already use.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-internal.h"
#include "fsutil.h"
#include "macro.h"
#include "reserve.h"
#include "tree.h"

#define STAGED_MARKER "staged"

/* Remove @name (a directory) below @dirfd with everything in it; 0 or -errno. */
static int remove_dir_at(int dirfd, const char *name, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r;

    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "cannot open %s: %m", name);
    r = berth_tree_clear(fd, reterr);
    if (r < 0)
        return r;
    if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove %s: %m", name);
    return 0;
}

static int open_stage_root(struct berth_broker *b, struct berth_error *reterr)
{
    return berth_open_trusted(b->p.stage_directory, O_RDONLY | O_DIRECTORY, 0, reterr);
}

int broker_stage(struct berth_broker *b, const struct berth_job_record *rec, const char *image, char **ret_rootfs,
                 struct berth_error *reterr)
{
    _cleanup_close_ int top = -1, dir = -1, rootfd = -1;
    _cleanup_free_ char *summary = NULL, *path = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    size_t len = 0;
    int r;

    *ret_rootfs = NULL;
    if (!b->p.stage_ops || !b->p.stage_directory)
        return 0;
    if (asprintf(&path, "%s/%s/rootfs", b->p.stage_directory, rec->run_id) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    top = open_stage_root(b, reterr);
    if (top < 0)
        return top;
    if (mkdirat(top, rec->run_id, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", b->p.stage_directory, rec->run_id);
    dir = openat(top, rec->run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return berth_error_set(reterr, -errno, "cannot open %s/%s: %m", b->p.stage_directory, rec->run_id);
    if (faccessat(dir, STAGED_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        *ret_rootfs = TAKE_PTR(path);
        return 0;
    }
    if ((r = remove_dir_at(dir, "rootfs", reterr)) < 0)
        return r;
    if (mkdirat(dir, "rootfs", 0755) < 0)
        return berth_error_set(reterr, -errno, "cannot create %s: %m", path);
    rootfd = openat(dir, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rootfd < 0 || fchmod(rootfd, 0755) < 0)
        return berth_error_set(reterr, -errno, "cannot open %s: %m", path);
    r = b->p.stage_ops->stage(b->p.stage_state, image, rootfd, "{}", 2, &summary, &len, &err);
    if (r < 0) {
        /* The stage removed what it made; a refusal names its reason code first. */
        return berth_error_set(reterr, r == -ENOMEM || r == -EIO || berth_space_error(r) || r == -EAGAIN ? r : -EBADMSG,
                               "%s", err.message);
    }
    if ((r = berth_publish_at(dir, STAGED_MARKER, "", 0, 0600, 0, reterr)) < 0)
        return r;
    berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: staged image %s into %s", rec->job_id, rec->run_id, image,
               path);
    *ret_rootfs = TAKE_PTR(path);
    return 0;
}

void broker_unstage(struct berth_broker *b, const struct berth_job_record *rec)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int top = -1;

    if (!b->p.stage_ops || !b->p.stage_directory)
        return;
    top = open_stage_root(b, &err);
    if (top < 0 || remove_dir_at(top, rec->run_id, &err) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot remove its staged image: %s", rec->job_id,
                   rec->run_id, err.message);
}
