/* SPDX-License-Identifier: MIT */
/*
 * test-rootcache.c -- the root cache (rootcache.h) on a real directory: one
 * sealed entry per image shared by its holders, staged once under
 * concurrent holds, tampered entries refused and staged again (on every use
 * for what the stat checks see, at the first use after a reopen for any
 * change in the tree), leftovers removed at open, LRU eviction that never
 * touches an entry in use, prune.
 */
#include "testutil.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>

#include "macro.h"
#include "rootcache.h"

#define DIGEST_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DIGEST_B "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define DIGEST_C "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define DIGEST_D "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define TREE_BYTES 1000 /* bytes of the files stage_tree() makes */

static const char *const mount_points[] = {"proc", "tmp", NULL};

static char *base;  /* a private directory holding the cache directory */
static char *cdir;  /* base/roots */

struct stager {
    int calls;
    int fail; /* a negative errno to fail with, after writing a file */
    unsigned delay_ms;
    pthread_mutex_t lock;
};

static void write_at(int dirfd, const char *name, size_t len, mode_t mode)
{
    char buf[TREE_BYTES];
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

    ck_assert_int_ge(fd, 0);
    memset(buf, 'x', sizeof(buf));
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
    close(fd);
}

/* A small real tree: bin/sh (600 bytes), etc/hostname (400), lib -> usr/lib, usr/lib/. */
static int stage_tree(void *userdata, const char *digest, int target_dirfd, struct berth_error *reterr)
{
    struct stager *s = userdata;
    int bin;

    (void)digest;
    pthread_mutex_lock(&s->lock);
    s->calls++;
    pthread_mutex_unlock(&s->lock);
    if (s->delay_ms)
        usleep(s->delay_ms * 1000);
    ck_assert_int_eq(mkdirat(target_dirfd, "bin", 0755), 0);
    bin = openat(target_dirfd, "bin", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(bin, 0);
    write_at(bin, "sh", 600, 0755);
    close(bin);
    if (s->fail)
        return berth_error_set(reterr, s->fail, "path-traversal: refused for the test");
    ck_assert_int_eq(mkdirat(target_dirfd, "etc", 0755), 0);
    bin = openat(target_dirfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    write_at(bin, "hostname", 400, 0644);
    close(bin);
    ck_assert_int_eq(mkdirat(target_dirfd, "usr", 0755), 0);
    ck_assert_int_eq(mkdirat(target_dirfd, "usr/lib", 0755), 0);
    ck_assert_int_eq(symlinkat("usr/lib", target_dirfd, "lib"), 0);
    return 0;
}

static struct stager stager;

static void setup(void)
{
    base = test_tmpdir();
    ck_assert_int_eq(chmod(base, 0700), 0);
    cdir = test_path(base, "roots");
    stager = (struct stager){0};
    pthread_mutex_init(&stager.lock, NULL);
}

static void teardown(void)
{
    test_rm_rf(base);
    free(cdir);
    free(base);
    pthread_mutex_destroy(&stager.lock);
}

static struct berth_rootcache *open_cache(uint64_t max_bytes)
{
    const struct berth_rootcache_params p = {.directory = cdir, .max_bytes = max_bytes, .mount_points = mount_points};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_rootcache *c = NULL;

    ck_assert_msg(berth_rootcache_open(&p, &c, &err) == 0, "open: %s", err.message);
    return c;
}

/* Hold @digest for @holder; the return code, *@path the rootfs (free it). */
static int hold(struct berth_rootcache *c, const char *digest, const char *holder, char **path)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *p = NULL;
    int r = berth_rootcache_hold(c, digest, holder, stage_tree, &stager, &p, &err);

    if (path)
        *path = p;
    else
        free(p);
    return r;
}

/* Hold DIGEST_A for @holder in a cache opened now (bound 1 MiB), expect
 * @want (0 cached, 1 staged) and @calls stages so far, release, close. */
static void hold_in_new_cache(const char *holder, int want, int calls)
{
    struct berth_rootcache *c = open_cache(1 << 20);

    ck_assert_int_eq(hold(c, DIGEST_A, holder, NULL), want);
    ck_assert_int_eq(stager.calls, calls);
    berth_rootcache_release(c, holder);
    berth_rootcache_free(c);
}

static ino_t ino_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(lstat(path, &st), 0);
    return st.st_ino;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static char *entry_path(const char *digest, const char *below)
{
    char *p = NULL;
    ck_assert_int_gt(asprintf(&p, "%s/sha256-%s%s%s", cdir, digest + 7, below ? "/" : "", below ? below : ""), 0);
    return p;
}

/* The names in DIR (the cache directory), "." and ".." left out. */
static int count_names(void)
{
    return test_count_entries(cdir);
}

START_TEST(two_holders_share_one_sealed_root)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    _cleanup_free_ char *p1 = NULL, *p2 = NULL, *entry = entry_path(DIGEST_A, NULL), *marker = entry_path(DIGEST_A, "root.json");
    _cleanup_free_ char *sh = NULL, *proc = NULL;
    struct stat st;

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", &p1), 1);
    ck_assert_int_eq(hold(c, DIGEST_A, "r2", &p2), 0);
    ck_assert_int_eq(stager.calls, 1);
    ck_assert_str_eq(p1, p2);
    ck_assert_uint_eq(ino_of(p1), ino_of(p2));
    /* Sealed: the entry 0500, its marker 0400, mount points made. */
    ck_assert_int_eq(lstat(entry, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0500);
    ck_assert_int_eq(lstat(marker, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0400);
    sh = test_path(p1, "bin/sh");
    proc = test_path(p1, "proc");
    ck_assert(exists(sh));
    ck_assert_int_eq(lstat(proc, &st), 0);
    ck_assert(S_ISDIR(st.st_mode));
    /* Holding again with the same holder is one hold. */
    ck_assert_int_eq(hold(c, DIGEST_A, "r1", NULL), 0);
    {
        json_t *doc = NULL;
        struct berth_error err = BERTH_ERROR_INIT;
        ck_assert_int_eq(berth_rootcache_list(c, &doc, &err), 0);
        ck_assert_int_eq(json_array_size(json_object_get(doc, "roots")), 1);
        const json_t *e = json_array_get(json_object_get(doc, "roots"), 0);
        ck_assert_str_eq(json_string_value(json_object_get(e, "digest")), DIGEST_A);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "jobs")), 2);
        ck_assert_int_eq(json_integer_value(json_object_get(e, "bytes")), TREE_BYTES);
        /* bin, bin/sh, etc, etc/hostname, usr, usr/lib, lib, proc, tmp */
        ck_assert_int_eq(json_integer_value(json_object_get(e, "entries")), 9);
        ck_assert(json_is_true(json_object_get(e, "verified")));
        json_decref(doc);
    }
    berth_rootcache_free(c);
}
END_TEST

struct racer {
    struct berth_rootcache *c;
    char holder[8];
    char *path;
    int r;
};

static void *race(void *arg)
{
    struct racer *x = arg;
    x->r = hold(x->c, DIGEST_A, x->holder, &x->path);
    return NULL;
}

START_TEST(concurrent_holds_stage_once)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    struct racer x[4];
    pthread_t t[4];

    stager.delay_ms = 200;
    for (int i = 0; i < 4; i++) {
        x[i] = (struct racer){.c = c};
        snprintf(x[i].holder, sizeof(x[i].holder), "r%d", i);
        ck_assert_int_eq(pthread_create(&t[i], NULL, race, &x[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
    ck_assert_int_eq(stager.calls, 1);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_ge(x[i].r, 0);
        ck_assert_str_eq(x[i].path, x[0].path);
    }
    for (int i = 0; i < 4; i++)
        free(x[i].path);
    berth_rootcache_free(c);
}
END_TEST

/* A file added at the top of the root, a mode changed, the marker rewritten:
 * each is seen by the checks of the next use, which stages again. */
START_TEST(tampered_entry_is_refused_and_restaged)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    _cleanup_free_ char *p = NULL, *evil = NULL, *marker = entry_path(DIGEST_A, "root.json");

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", &p), 1);
    berth_rootcache_release(c, "r1");
    evil = test_path(p, "evil");
    test_write_file(evil, "x", 1, 0644);
    ck_assert_int_eq(hold(c, DIGEST_A, "r2", NULL), 1);
    ck_assert_int_eq(stager.calls, 2);
    ck_assert(!exists(evil));
    ck_assert_int_eq(count_names(), 1); /* the bad one is gone, not kept aside */
    berth_rootcache_release(c, "r2");

    ck_assert_int_eq(chmod(p, 0777), 0);
    ck_assert_int_eq(hold(c, DIGEST_A, "r3", NULL), 1);
    ck_assert_int_eq(stager.calls, 3);
    berth_rootcache_release(c, "r3");

    ck_assert_int_eq(chmod(marker, 0600), 0);
    test_rm_rf(marker);
    test_write_file(marker, "{}", 2, 0400);
    ck_assert_int_eq(hold(c, DIGEST_A, "r4", NULL), 1);
    ck_assert_int_eq(stager.calls, 4);
    /* Untouched: no stage. */
    ck_assert_int_eq(hold(c, DIGEST_A, "r5", NULL), 0);
    ck_assert_int_eq(stager.calls, 4);
    berth_rootcache_free(c);
}
END_TEST

/* A change deep in the tree (a file written, a mode changed) is found by
 * the walk of the first use after the cache is opened again. */
START_TEST(deep_change_is_found_after_reopen)
{
    _cleanup_free_ char *p = NULL, *sh = NULL, *hostname = NULL;
    struct berth_rootcache *c = open_cache(1 << 20);
    int fd;

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", &p), 1);
    berth_rootcache_release(c, "r1");
    berth_rootcache_free(c);
    /* Reopened untouched: verified by its walk, not staged. */
    hold_in_new_cache("r2", 0, 1);
    /* Same size, new content. */
    sh = test_path(p, "bin/sh");
    fd = open(sh, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "#!", 2), 2);
    close(fd);
    hold_in_new_cache("r3", 1, 2);
    /* A mode deep in the tree. */
    hostname = test_path(p, "etc/hostname");
    ck_assert_int_eq(chmod(hostname, 0666), 0);
    hold_in_new_cache("r4", 1, 3);
    hold_in_new_cache("r5", 0, 3);
}
END_TEST

START_TEST(refused_stage_leaves_nothing)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    struct berth_error err = BERTH_ERROR_INIT;
    char *p = NULL;

    stager.fail = -EBADMSG;
    ck_assert_int_eq(berth_rootcache_hold(c, DIGEST_A, "r1", stage_tree, &stager, &p, &err), -EBADMSG);
    ck_assert_ptr_null(p);
    ck_assert_str_eq(err.message, "path-traversal: refused for the test");
    ck_assert_int_eq(count_names(), 0);
    stager.fail = 0;
    ck_assert_int_eq(hold(c, DIGEST_A, "r1", NULL), 1);
    berth_rootcache_free(c);
}
END_TEST

START_TEST(leftovers_are_removed_at_open)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    _cleanup_free_ char *tmp = test_path(cdir, ".tmp-sha256-x-1"), *trash = test_path(cdir, ".trash-sha256-x-2");
    _cleanup_free_ char *inner = NULL, *marker = entry_path(DIGEST_B, "root.json");

    ck_assert_int_eq(hold(c, DIGEST_B, "r1", NULL), 1);
    berth_rootcache_free(c);
    ck_assert_int_eq(mkdir(tmp, 0700), 0);
    inner = test_path(tmp, "rootfs");
    ck_assert_int_eq(mkdir(inner, 0555), 0);
    ck_assert_int_eq(mkdir(trash, 0500), 0);
    c = open_cache(1 << 20);
    ck_assert(!exists(tmp));
    ck_assert(!exists(trash));
    ck_assert_int_eq(count_names(), 1);
    berth_rootcache_free(c);

    /* An entry whose marker cannot be read is removed at open.  (The entry
     * is 0500: without root, removing its marker needs its write bit.) */
    {
        _cleanup_free_ char *entry = entry_path(DIGEST_B, NULL);
        ck_assert_int_eq(chmod(entry, 0700), 0);
        ck_assert_int_eq(unlink(marker), 0);
        ck_assert_int_eq(chmod(entry, 0500), 0);
    }
    c = open_cache(1 << 20);
    ck_assert_int_eq(count_names(), 0);
    berth_rootcache_free(c);
}
END_TEST

/* Bound 0: an entry goes with its last holder, and never before. */
START_TEST(eviction_never_removes_a_root_in_use)
{
    struct berth_rootcache *c = open_cache(0);
    _cleanup_free_ char *pa = NULL, *pb = NULL, *sh = NULL;

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", &pa), 1);
    ck_assert_int_eq(hold(c, DIGEST_B, "r2", &pb), 1);
    ck_assert(exists(pa));
    ck_assert(exists(pb));
    berth_rootcache_release(c, "r2");
    ck_assert(!exists(pb));
    sh = test_path(pa, "bin/sh");
    ck_assert(exists(sh));
    ck_assert_int_eq(hold(c, DIGEST_A, "r3", NULL), 0); /* r1 and r3 now */
    berth_rootcache_release(c, "r1");
    ck_assert(exists(sh));
    berth_rootcache_release(c, "r3");
    ck_assert(!exists(pa));
    ck_assert_int_eq(count_names(), 0);
    berth_rootcache_free(c);
}
END_TEST

/* Bound of two entries: the least recently used unused one goes. */
START_TEST(eviction_is_lru)
{
    struct berth_rootcache *c = open_cache(2 * TREE_BYTES);
    _cleanup_free_ char *a = entry_path(DIGEST_A, NULL), *b = entry_path(DIGEST_B, NULL);
    _cleanup_free_ char *cc = entry_path(DIGEST_C, NULL), *d = entry_path(DIGEST_D, NULL);

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", NULL), 1);
    berth_rootcache_release(c, "r1");
    ck_assert_int_eq(hold(c, DIGEST_B, "r2", NULL), 1);
    berth_rootcache_release(c, "r2");
    ck_assert_int_eq(hold(c, DIGEST_C, "r3", NULL), 1);
    ck_assert(!exists(a));
    ck_assert(exists(b) && exists(cc));
    ck_assert_int_eq(hold(c, DIGEST_B, "r4", NULL), 0); /* B used again: C is the oldest unused */
    berth_rootcache_release(c, "r4");
    berth_rootcache_release(c, "r3");
    ck_assert_int_eq(hold(c, DIGEST_D, "r5", NULL), 1);
    ck_assert(exists(b) && exists(d));
    ck_assert(!exists(cc));
    berth_rootcache_free(c);
}
END_TEST

/* A holder adopted after a restart protects its entry from prune and eviction. */
START_TEST(adopted_holder_and_prune)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_rootcache *c = open_cache(1 << 20);
    _cleanup_free_ char *a = entry_path(DIGEST_A, NULL), *b = entry_path(DIGEST_B, NULL);
    uint64_t removed = 9, bytes = 9;

    ck_assert_int_eq(hold(c, DIGEST_A, "r1", NULL), 1);
    ck_assert_int_eq(hold(c, DIGEST_B, "r2", NULL), 1);
    berth_rootcache_free(c); /* "berthd stops" with r1 and r2 running */

    c = open_cache(0);
    ck_assert_int_eq(berth_rootcache_adopt(c, DIGEST_A, "r1", &err), 0);
    ck_assert_int_eq(berth_rootcache_prune(c, &removed, &bytes, &err), 0);
    ck_assert_uint_eq(removed, 1);
    ck_assert_uint_eq(bytes, TREE_BYTES);
    ck_assert(exists(a));
    ck_assert(!exists(b));
    ck_assert_int_eq(berth_rootcache_adopt(c, "sha256:nope", "r1", &err), -EINVAL);
    berth_rootcache_release(c, "r1");
    ck_assert(!exists(a)); /* bound 0 */
    berth_rootcache_free(c);
}
END_TEST

START_TEST(bad_arguments)
{
    struct berth_rootcache *c = open_cache(1 << 20);
    const struct berth_rootcache_params rel = {.directory = "relative"};
    struct berth_rootcache *x = NULL;
    struct berth_error err = BERTH_ERROR_INIT;

    ck_assert_int_eq(hold(c, "sha256:ABC", "r1", NULL), -EINVAL);
    ck_assert_int_eq(hold(c, DIGEST_A, "a/b", NULL), -EINVAL);
    ck_assert_int_eq(hold(c, DIGEST_A, "", NULL), -EINVAL);
    ck_assert_int_eq(berth_rootcache_open(&rel, &x, &err), -EINVAL);
    berth_rootcache_free(c);
    /* A cache directory others may enter is refused. */
    ck_assert_int_eq(chmod(cdir, 0755), 0);
    {
        const struct berth_rootcache_params p = {.directory = cdir};
        ck_assert_int_eq(berth_rootcache_open(&p, &x, &err), -EPERM);
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("rootcache");
    TCase *tc = test_case(s, "rootcache");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 30);
    tcase_add_test(tc, two_holders_share_one_sealed_root);
    tcase_add_test(tc, concurrent_holds_stage_once);
    tcase_add_test(tc, tampered_entry_is_refused_and_restaged);
    tcase_add_test(tc, deep_change_is_found_after_reopen);
    tcase_add_test(tc, refused_stage_leaves_nothing);
    tcase_add_test(tc, leftovers_are_removed_at_open);
    tcase_add_test(tc, eviction_never_removes_a_root_in_use);
    tcase_add_test(tc, eviction_is_lru);
    tcase_add_test(tc, adopted_holder_and_prune);
    tcase_add_test(tc, bad_arguments);
    return s;
}

TEST_MAIN()
