/* SPDX-License-Identifier: MIT */
/*
 * bench-roots.c -- what a job's root costs with the root cache
 * (rootcache.h): the first job of an image stages and seals it, every later
 * one only holds the sealed entry.  Prints figures; asserts nothing about
 * time.
 *
 * Usage: bench-roots STORE DIGEST [N]
 *   STORE   an image store (berthctl image import LAYOUT --store STORE),
 *           normally holding the Debian image of
 *           tests/image/build-debian-image.sh
 *   DIGEST  the image's manifest digest
 *   N       cached holds to time (default 200)
 *
 * Works in a fresh private directory under TMPDIR (removed at the end) and
 * prints, one "name=value" per line:
 *   stage_ms        the first hold: staging with the real extractor
 *                   (src/image/stage.h), mount points, the tree walk, the
 *                   marker, the rename
 *   walk_ms         one walk of the sealed tree (treesum.h), as a first use
 *                   after a restart does once
 *   reopen_hold_ms  the first hold after reopening the cache (that walk,
 *                   plus the checks)
 *   hold_us_p50, hold_us_p99   a cached hold + release (the per-job cost of
 *                   the cache itself), over N jobs
 *   job_file_us_p50 the broker's per-job record of the hold: mkdir of the
 *                   job's stage directory, its "root" file written
 *                   (broker_roots_record()), both removed again
 *   entries, bytes  of the staged tree
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "blobstore.h"
#include "broker-internal.h"
#include "clock.h"
#include "fsutil.h"
#include "macro.h"
#include "rootcache.h"
#include "stage.h"
#include "tree.h"
#include "treesum.h"

static int64_t mono(void)
{
    int64_t t = 0;
    (void)berth_now_ns(CLOCK_MONOTONIC, &t, NULL);
    return t;
}

static int stage(void *userdata, const char *digest, int target_dirfd, struct berth_error *reterr)
{
    return berth_image_stage(userdata, digest, target_dirfd, NULL, NULL, reterr);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void die(const char *what, const struct berth_error *err)
{
    fprintf(stderr, "bench-roots: %s: %s\n", what, err ? err->message : strerror(errno));
    exit(1);
}

static struct berth_rootcache *open_cache(const char *dir)
{
    const struct berth_rootcache_params p = {.directory = dir, .max_bytes = UINT64_MAX >> 11};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_rootcache *c = NULL;

    if (berth_rootcache_open(&p, &c, &err) < 0)
        die("open the cache", &err);
    return c;
}

int main(int argc, char **argv)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *store = NULL;
    struct berth_rootcache *c;
    struct berth_tree_sum sum;
    char tmpl[] = "/tmp/bench-roots-XXXXXX", cdir[64], holder[32];
    const char *base = tmpl;
    char *path = NULL;
    int64_t t0, stage_ns, walk_ns, reopen_ns, *hold_ns, *file_ns;
    long n = argc > 3 ? strtol(argv[3], NULL, 10) : 200;
    int rootfd, jobsfd;

    if (argc < 3 || n < 1) {
        fprintf(stderr, "usage: bench-roots STORE DIGEST [N]\n");
        return 2;
    }
    if (!mkdtemp(tmpl) || chmod(base, 0700) < 0)
        die("mkdtemp", NULL);
    snprintf(cdir, sizeof(cdir), "%s/roots", base);
    if (berth_blob_store_open(argv[1], false, &store, &err) < 0)
        die("open the store", &err);
    hold_ns = calloc((size_t)n, sizeof(*hold_ns));
    file_ns = calloc((size_t)n, sizeof(*file_ns));
    if (!hold_ns || !file_ns)
        die("calloc", NULL);

    c = open_cache(cdir);
    t0 = mono();
    if (berth_rootcache_hold(c, argv[2], "first", stage, store, &path, &err) < 0)
        die("stage", &err);
    stage_ns = mono() - t0;
    berth_rootcache_release(c, "first");
    if ((rootfd = berth_open_trusted(path, O_RDONLY | O_DIRECTORY, 0, &err)) < 0)
        die("open the root", &err);
    t0 = mono();
    if (berth_tree_sum(rootfd, &sum, &err) < 0)
        die("walk", &err);
    walk_ns = mono() - t0;
    close(rootfd);
    free(path);
    berth_rootcache_free(c);

    c = open_cache(cdir);
    t0 = mono();
    if (berth_rootcache_hold(c, argv[2], "reopened", stage, store, &path, &err) != 0)
        die("hold after reopen (it should be cached)", &err);
    reopen_ns = mono() - t0;
    berth_rootcache_release(c, "reopened");
    free(path);

    if ((jobsfd = berth_open_trusted(base, O_RDONLY | O_DIRECTORY, 0, &err)) < 0)
        die("open the base", &err);
    for (long i = 0; i < n; i++) {
        snprintf(holder, sizeof(holder), "r%ld", i);
        t0 = mono();
        if (berth_rootcache_hold(c, argv[2], holder, stage, store, &path, &err) != 0)
            die("cached hold", &err);
        berth_rootcache_release(c, holder);
        hold_ns[i] = mono() - t0;
        free(path);
        t0 = mono();
        {
            _cleanup_close_ int dfd = -1;
            if (mkdirat(jobsfd, holder, 0700) < 0 ||
                (dfd = openat(jobsfd, holder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                die("mkdir", NULL);
            if (broker_roots_record(dfd, argv[2], &err) < 0)
                die("record", &err);
            if (unlinkat(dfd, "root", 0) < 0 || unlinkat(jobsfd, holder, AT_REMOVEDIR) < 0)
                die("unlink", NULL);
        }
        file_ns[i] = mono() - t0;
    }
    close(jobsfd);
    qsort(hold_ns, (size_t)n, sizeof(*hold_ns), cmp64);
    qsort(file_ns, (size_t)n, sizeof(*file_ns), cmp64);
    printf("entries=%llu\nbytes=%llu\n", (unsigned long long)sum.entries, (unsigned long long)sum.bytes);
    printf("stage_ms=%.1f\nwalk_ms=%.2f\nreopen_hold_ms=%.2f\n", stage_ns / 1e6, walk_ns / 1e6, reopen_ns / 1e6);
    printf("hold_us_p50=%.1f\nhold_us_p99=%.1f\n", hold_ns[n / 2] / 1e3, hold_ns[(n * 99) / 100] / 1e3);
    printf("job_file_us_p50=%.1f\njob_file_us_p99=%.1f\n", file_ns[n / 2] / 1e3, file_ns[(n * 99) / 100] / 1e3);

    {
        uint64_t removed = 0, bytes = 0;
        if (berth_rootcache_prune(c, &removed, &bytes, &err) < 0)
            die("prune", &err);
    }
    berth_rootcache_free(c);
    berth_blob_store_free(store);
    {
        _cleanup_close_ int fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
            (void)berth_tree_clear(fd, NULL);
    }
    (void)rmdir(base);
    free(hold_ns);
    free(file_ns);
    return 0;
}
