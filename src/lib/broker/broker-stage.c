/* SPDX-License-Identifier: MIT */
/*
 * broker-stage.c -- each job's image root, held from the root cache
 * (broker-roots.c, rootcache.h) before its backend starts it, and released
 * once its result is recorded.  See broker.h (stage_directory).
 *
 * Layout: STAGE/<run_id>/ (0700) holds the file "root" (0600), the digest
 * of the image whose cached root the run holds; the root itself is
 * STAGE/roots/sha256-<hex>/rootfs, shared by every job of that image and
 * read-only in each sandbox (bundle.h).  A retried start() (a lost reply)
 * gets the same root.  A directory of an older berthd with its own rootfs/
 * is removed as before when its job ends.
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
#include "jsonobj.h"
#include "macro.h"
#include "reserve.h"
#include "tree.h"

int broker_remove_dir_at(int dirfd, const char *name, struct berth_error *reterr)
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

struct stage_call {
    struct berth_broker *b;
    const char *cwd; /* the job's working directory (template.root), or NULL */
};

/* Make the directory @cwd (absolute) below @rootfd when absent, each
 * component 0755 and never through a symlink: a runtime creates a missing
 * working directory in the root, which must not happen in a shared one.
 * Best effort: a component that is not a directory stops it (the runtime
 * then decides, as for an unshared root). */
static void make_cwd(int rootfd, const char *cwd)
{
    _cleanup_free_ char *copy = cwd ? strdup(cwd) : NULL;
    char *save = NULL, *comp;
    int fd = rootfd;

    for (comp = copy ? strtok_r(copy, "/", &save) : NULL; comp; comp = strtok_r(NULL, "/", &save)) {
        int next;
        if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0)
            break;
        if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST)
            break;
        next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd != rootfd)
            close(fd);
        if (next < 0)
            return;
        fd = next;
    }
    if (fd != rootfd)
        close(fd);
}

/* The cache's stage callback: the stager plugin into @target_dirfd (one
 * stage at a time: it is one plugin instance), then the job's working
 * directory.  A refusal is -EBADMSG and names its reason code first; host
 * trouble keeps its code. */
static int stage_image(void *userdata, const char *digest, int target_dirfd, struct berth_error *reterr)
{
    const struct stage_call *call = userdata;
    struct berth_broker *b = call->b;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *summary = NULL;
    size_t len = 0;
    int r;

    broker_starts_stage_lock(b);
    r = b->p.stage_ops->stage(b->p.stage_state, digest, target_dirfd, "{}", 2, &summary, &len, &err);
    broker_starts_stage_unlock(b);
    if (r < 0)
        return berth_error_set(reterr, r == -ENOMEM || r == -EIO || berth_space_error(r) || r == -EAGAIN ? r : -EBADMSG,
                               "%s", err.message);
    make_cwd(target_dirfd, call->cwd);
    return 0;
}

int broker_stage(struct berth_broker *b, const struct berth_job_record *rec, const char *image, char **ret_rootfs,
                 struct berth_error *reterr)
{
    _cleanup_close_ int top = -1, dir = -1;
    _cleanup_free_ char *path = NULL;
    _cleanup_json_ json_t *effective = NULL;
    struct stage_call call = {.b = b};
    int r, held;

    *ret_rootfs = NULL;
    if (!b->p.stage_ops || !b->p.stage_directory || !b->roots)
        return 0;
    top = open_stage_root(b, reterr);
    if (top < 0)
        return top;
    if (mkdirat(top, rec->run_id, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", b->p.stage_directory, rec->run_id);
    dir = openat(top, rec->run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return berth_error_set(reterr, -errno, "cannot open %s/%s: %m", b->p.stage_directory, rec->run_id);
    effective = json_loads(rec->effective ? rec->effective : "{}", JSON_REJECT_DUPLICATES, NULL);
    call.cwd = json_string_value(json_object_get(json_object_get(effective, "template"), "root"));
    held = berth_rootcache_hold(b->roots, image, rec->run_id, stage_image, &call, &path, reterr);
    if (held < 0)
        return held;
    /* Written down after the hold: a restart holds it again (broker-roots.c). */
    r = broker_roots_record(dir, image, reterr);
    if (r < 0) {
        berth_rootcache_release(b->roots, rec->run_id);
        return r;
    }
    if (held == 1)
        berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: staged image %s into %s", rec->job_id, rec->run_id,
                   image, path);
    *ret_rootfs = TAKE_PTR(path);
    return 0;
}

int broker_stage_slot(struct berth_broker *b, const char *slot_id, const char *image, const json_t *effective,
                      char **ret_rootfs, struct berth_error *reterr)
{
    struct stage_call call = {.b = b};
    int held;

    *ret_rootfs = NULL;
    if (!b->p.stage_ops || !b->p.stage_directory || !b->roots)
        return berth_error_set(reterr, -EOPNOTSUPP, "warm slots need an image source that stages roots");
    call.cwd = json_string_value(json_object_get(json_object_get(effective, "template"), "root"));
    held = berth_rootcache_hold(b->roots, image, slot_id, stage_image, &call, ret_rootfs, reterr);
    return held < 0 ? held : 0;
}

void broker_unstage(struct berth_broker *b, const struct berth_job_record *rec)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int top = -1;

    broker_unstage_inputs(b, rec);
    if (!b->p.stage_ops || !b->p.stage_directory)
        return;
    if (b->roots)
        berth_rootcache_release(b->roots, rec->run_id);
    top = open_stage_root(b, &err);
    if (top < 0 || broker_remove_dir_at(top, rec->run_id, &err) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot remove its staged image: %s", rec->job_id,
                   rec->run_id, err.message);
}
