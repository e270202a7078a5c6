/* SPDX-License-Identifier: MIT */
/*
 * broker-roots.c -- the broker's root cache (rootcache.h): opened below the
 * stage directory, its holders recovered from the jobs' stage directories,
 * and reported or pruned for an admin (berth_broker_root_cache()).
 *
 * A job holds its image's root from its start until its result is recorded
 * and the backend reaped it; the hold is written down as STAGE/<run_id>/root
 * (the image digest), so that after a restart the roots of the jobs still
 * running are held again before anything can evict them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-internal.h"
#include "bundle.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "rootcache.h"

static bool is_run_id(const char *name)
{
    if (name[0] != 'r' || strlen(name) != BERTH_RUN_ID_LEN)
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

/* Hold again the root named by STAGE/@run_id/root, if there is one. */
static void adopt_one(struct berth_broker *b, int top, const char *run_id)
{
    const struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 07777, .mode = 0600,
                                             .max_size = BERTH_DIGEST_BUFSZ, .one_link = 1};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dir = -1;
    _cleanup_free_ char *digest = NULL;
    size_t len = 0;

    dir = berth_open_beneath(top, run_id, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0, NULL);
    if (dir < 0 || faccessat(dir, BROKER_ROOT_FILE, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
        return; /* no root held (or a stage of an older berthd: its own rootfs) */
    if (berth_read_file_at(dir, BROKER_ROOT_FILE, &expect, &digest, &len, &err) < 0 ||
        berth_rootcache_adopt(b->roots, digest, run_id, &err) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "run %s: the root it holds is not known: %s", run_id, err.message);
}

int broker_roots_record(int dirfd, const char *digest, struct berth_error *reterr)
{
    struct berth_publish p;
    int r;

    if ((r = berth_publish_begin(dirfd, BROKER_ROOT_FILE, &p, reterr)) < 0)
        return r;
    /* No fsync: the record matters only while the job's sandbox lives, which
     * a power loss ends anyway; a crash of berthd keeps the page cache. */
    if ((r = berth_write_all(p.fd, digest, strlen(digest))) < 0 || fchmod(p.fd, 0600) < 0 ||
        renameat(dirfd, p.tmp, dirfd, p.name) < 0) {
        r = berth_error_set(reterr, r < 0 ? r : -errno, "cannot record the root the job holds: %m");
        berth_publish_abort(&p);
        return r;
    }
    close(p.fd);
    return 0;
}

int broker_roots_open(struct berth_broker *b, struct berth_error *reterr)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_close_ int top = -1;
    struct dirent *de;
    DIR *d;
    int r, fd;

    if (!b->p.stage_ops || !b->p.stage_directory)
        return 0;
    if (asprintf(&dir, "%s/" BROKER_ROOTS_DIR, b->p.stage_directory) < 0) {
        dir = NULL;
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    {
        const struct berth_rootcache_params rp = {.directory = dir,
                                                  .max_bytes = b->p.root_cache_bytes,
                                                  .mount_points = berth_bundle_root_mount_points,
                                                  .logger = b->p.logger};
        if ((r = berth_rootcache_open(&rp, &b->roots, reterr)) < 0)
            return r;
    }
    top = berth_open_trusted(b->p.stage_directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (top < 0)
        return top;
    if ((fd = dup(top)) < 0 || !(d = fdopendir(fd))) {
        r = berth_error_set(reterr, -errno, "cannot read %s: %m", b->p.stage_directory);
        if (fd >= 0)
            close(fd);
        return r;
    }
    while ((de = readdir(d)))
        if (is_run_id(de->d_name))
            adopt_one(b, top, de->d_name);
    closedir(d);
    return 0;
}

void broker_roots_free(struct berth_broker *b)
{
    berth_rootcache_free(b->roots);
    b->roots = NULL;
}

void berth_broker_root_cache(struct berth_broker *b, const char *fingerprint, bool prune, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller = {0};
    uint64_t removed = 0, bytes = 0;
    json_t *body = NULL;
    int r;

    pthread_mutex_lock(&b->lock);
    r = broker_authenticate(b, fingerprint, &caller, reply);
    if (r == 0 && !caller.subject->admin) {
        broker_fail(reply, 403, "denied", "the root cache needs an admin grant");
        r = -EACCES;
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
    if (r < 0)
        return;
    if (!b->roots) {
        broker_fail(reply, 404, "no_root_cache", "this broker stages no images, so it has no root cache");
        return;
    }
    if (prune && (r = berth_rootcache_prune(b->roots, &removed, &bytes, &err)) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "root cache prune: %s", err.message);
    if (berth_rootcache_list(b->roots, &body, &err) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    if (prune && (json_object_set_new(body, "removed", json_integer((json_int_t)removed)) < 0 ||
                  json_object_set_new(body, "removed_bytes", json_integer((json_int_t)bytes)) < 0)) {
        json_decref(body);
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    if (prune)
        berth_logf(b->p.logger, BERTH_LOG_INFO, "root cache: pruned %" PRIu64 " unused roots (%" PRIu64 " bytes)",
                   removed, bytes);
    reply->status = 200;
    reply->body = body;
}
