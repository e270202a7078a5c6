/* SPDX-License-Identifier: MIT */
/*
 * rootcache.c -- the root cache: one staged, sealed root per image digest,
 * held by the jobs that use it; see rootcache.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "rootcache.h"
#include "tree.h"
#include "treesum.h"

#define MARKER "root.json"
#define MARKER_MAX 4096
#define HOLDER_MAX 64
#define NAME_PREFIX "sha256-"
#define NAME_SIZE (sizeof(NAME_PREFIX) + 64)

/* What an entry's marker records about its rootfs directory. */
struct rootfs_stat {
    uint64_t ino;
    uint32_t mode;
    int64_t mtime_ns, ctime_ns;
};

struct entry {
    char digest[BERTH_DIGEST_BUFSZ];
    char name[NAME_SIZE];
    struct berth_tree_sum sum;
    int64_t created_ns, last_used_ns;
    uint64_t entry_ino;
    struct rootfs_stat rootfs;
    uint64_t marker_ino;   /* the marker as read or written by this process */
    int64_t marker_ctime_ns;
    bool verified; /* walked by this process (staged by it, or checked at first use) */
};

struct hold {
    char holder[HOLDER_MAX];
    char digest[BERTH_DIGEST_BUFSZ];
};

/* Names renamed out of the way under the lock, removed after it. */
struct trash {
    char **names;
    size_t n;
};

struct berth_rootcache {
    char *directory;
    int dirfd;
    uint64_t max_bytes;
    const char *const *mount_points;
    const struct berth_logger *logger;
    pthread_mutex_t lock;       /* the table below */
    pthread_mutex_t stage_lock; /* one stage at a time; taken before lock */
    struct entry *entries;
    size_t n_entries;
    struct hold *holds;
    size_t n_holds;
    uint64_t seq; /* names of .tmp- and .trash- directories */
};

static int64_t ts_ns(const struct timespec *t)
{
    return (int64_t)t->tv_sec * BERTH_NS_PER_SEC + t->tv_nsec;
}

static int64_t now_ns(void)
{
    int64_t t = 0;
    return berth_now_ns(CLOCK_REALTIME, &t, NULL) < 0 ? 0 : t;
}

static int name_of(const char *digest, char name[NAME_SIZE])
{
    uint8_t raw[BERTH_SHA256_LEN];

    if (!digest || berth_digest_parse(digest, raw) < 0)
        return -EINVAL;
    snprintf(name, NAME_SIZE, NAME_PREFIX "%s", digest + strlen("sha256:"));
    return 0;
}

static struct entry *find(struct berth_rootcache *c, const char *digest)
{
    for (size_t i = 0; i < c->n_entries; i++)
        if (strcmp(c->entries[i].digest, digest) == 0)
            return &c->entries[i];
    return NULL;
}

static size_t holders_of(const struct berth_rootcache *c, const char *digest)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_holds; i++)
        n += strcmp(c->holds[i].digest, digest) == 0;
    return n;
}

static int add_hold(struct berth_rootcache *c, const char *digest, const char *holder)
{
    struct hold *v;

    for (size_t i = 0; i < c->n_holds; i++)
        if (strcmp(c->holds[i].holder, holder) == 0) {
            snprintf(c->holds[i].digest, sizeof(c->holds[i].digest), "%s", digest);
            return 0;
        }
    if (!(v = realloc(c->holds, (c->n_holds + 1) * sizeof(*v))))
        return -ENOMEM;
    c->holds = v;
    snprintf(v[c->n_holds].holder, HOLDER_MAX, "%s", holder);
    snprintf(v[c->n_holds].digest, BERTH_DIGEST_BUFSZ, "%s", digest);
    c->n_holds++;
    return 0;
}

static void trash_free(struct trash *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->names[i]);
    free(t->names);
    *t = (struct trash){0};
}

/* Remove the directory @name of DIR and everything below it. */
static int remove_dir(struct berth_rootcache *c, const char *name, struct berth_error *reterr)
{
    _cleanup_close_ int fd = openat(c->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r;

    if (fd < 0)
        return errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "cannot open %s/%s: %m", c->directory, name);
    (void)fchmod(fd, 0700); /* an entry is 0500 */
    if ((r = berth_tree_clear(fd, reterr)) < 0)
        return r;
    if (unlinkat(c->dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove %s/%s: %m", c->directory, name);
    return 0;
}

static void trash_empty(struct berth_rootcache *c, struct trash *t)
{
    for (size_t i = 0; i < t->n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        if (remove_dir(c, t->names[i], &err) < 0)
            berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s", err.message);
    }
    trash_free(t);
}

/* Rename DIR/@name to a fresh .trash- name and add it to @t (under the lock). */
static int move_to_trash(struct berth_rootcache *c, const char *name, struct trash *t, struct berth_error *reterr)
{
    char **v;
    char *to = NULL;

    if (asprintf(&to, ".trash-%s-%" PRIu64, name, ++c->seq) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (renameat(c->dirfd, name, c->dirfd, to) < 0) {
        int r = errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "cannot move %s/%s aside: %m", c->directory, name);
        free(to);
        return r;
    }
    if (!(v = realloc(t->names, (t->n + 1) * sizeof(*v)))) {
        free(to); /* renamed already: the next open removes it */
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    t->names = v;
    t->names[t->n++] = to;
    return 0;
}

/* Take @e out of the table and move its directory aside (under the lock). */
static void detach(struct berth_rootcache *c, struct entry *e, struct trash *t)
{
    struct berth_error err = BERTH_ERROR_INIT;
    size_t i = (size_t)(e - c->entries);

    if (move_to_trash(c, e->name, t, &err) < 0)
        berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s", err.message);
    c->entries[i] = c->entries[--c->n_entries];
}

/* Evict unused entries, least recently used first, down to the bound (under the lock). */
static void evict(struct berth_rootcache *c, struct trash *t)
{
    for (;;) {
        struct entry *lru = NULL;
        uint64_t total = 0;

        for (size_t i = 0; i < c->n_entries; i++) {
            struct entry *e = &c->entries[i];
            total += e->sum.bytes;
            if (holders_of(c, e->digest) == 0 && (!lru || e->last_used_ns < lru->last_used_ns))
                lru = e;
        }
        if (total <= c->max_bytes || !lru)
            return;
        berth_logf(c->logger, BERTH_LOG_INFO, "root cache: evicting %s (%" PRIu64 " bytes; %" PRIu64 " of %" PRIu64
                   " cached)", lru->digest, lru->sum.bytes, total, c->max_bytes);
        detach(c, lru, t);
    }
}

static bool stat_is(const struct stat *st, mode_t type, mode_t mode)
{
    return (st->st_mode & S_IFMT) == type && (st->st_mode & 07777) == mode && st->st_uid == geteuid();
}

/* The owner/mode/inode checks of every use (under the lock): 0 or -EBADMSG. */
static int check_stat(struct berth_rootcache *c, const struct entry *e, struct berth_error *reterr)
{
    _cleanup_close_ int fd = openat(c->dirfd, e->name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st, ms, rs;

    if (fd < 0 || fstat(fd, &st) < 0)
        return berth_error_set(reterr, -EBADMSG, "its directory cannot be opened: %m");
    if (!stat_is(&st, S_IFDIR, 0500) || st.st_ino != e->entry_ino)
        return berth_error_set(reterr, -EBADMSG, "its directory was replaced or its owner or mode changed");
    if (fstatat(fd, MARKER, &ms, AT_SYMLINK_NOFOLLOW) < 0 || !stat_is(&ms, S_IFREG, 0400) || ms.st_nlink != 1 ||
        ms.st_ino != e->marker_ino || ts_ns(&ms.st_ctim) != e->marker_ctime_ns)
        return berth_error_set(reterr, -EBADMSG, "its marker " MARKER " was changed");
    if (fstatat(fd, "rootfs", &rs, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(rs.st_mode) || rs.st_uid != geteuid() ||
        rs.st_ino != e->rootfs.ino || (rs.st_mode & 07777) != e->rootfs.mode ||
        ts_ns(&rs.st_mtim) != e->rootfs.mtime_ns || ts_ns(&rs.st_ctim) != e->rootfs.ctime_ns)
        return berth_error_set(reterr, -EBADMSG, "its rootfs was replaced or changed");
    return 0;
}

/* The whole tree against the marker's summary. */
static int check_tree(struct berth_rootcache *c, const struct entry *e, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int fd = -1;
    struct berth_tree_sum sum;
    char path[NAME_SIZE + 8];

    snprintf(path, sizeof(path), "%s/rootfs", e->name);
    fd = berth_open_beneath(c->dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, &err);
    if (fd < 0 || berth_tree_sum(fd, &sum, &err) < 0)
        return berth_error_set(reterr, -EBADMSG, "its tree cannot be read: %s", err.message);
    if (sum.entries != e->sum.entries || sum.bytes != e->sum.bytes ||
        memcmp(sum.fingerprint, e->sum.fingerprint, sizeof(sum.fingerprint)) != 0)
        return berth_error_set(reterr, -EBADMSG,
                               "its tree does not match its marker (%" PRIu64 " entries, %" PRIu64
                               " bytes; recorded %" PRIu64 ", %" PRIu64 ", or another fingerprint)",
                               sum.entries, sum.bytes, e->sum.entries, e->sum.bytes);
    return 0;
}

static int check(struct berth_rootcache *c, struct entry *e, struct berth_error *reterr)
{
    int r = check_stat(c, e, reterr);
    if (r == 0 && !e->verified && (r = check_tree(c, e, reterr)) == 0)
        e->verified = true;
    return r;
}

static int path_of(struct berth_rootcache *c, const struct entry *e, char **ret, struct berth_error *reterr)
{
    if (asprintf(ret, "%s/%s/rootfs", c->directory, e->name) < 0) {
        *ret = NULL;
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    return 0;
}

/* ---- markers ---------------------------------------------------------- */

static json_t *marker_json(const struct entry *e)
{
    char fp[BERTH_DIGEST_BUFSZ];

    berth_digest_format(e->sum.fingerprint, fp);
    return json_pack("{s:s, s:I, s:I, s:s, s:o, s:o, s:{s:o, s:I, s:o, s:o}}", "digest", e->digest, "entries",
                     (json_int_t)e->sum.entries, "bytes", (json_int_t)e->sum.bytes, "fingerprint", fp, "created_ns",
                     berth_json_ns(e->created_ns), "entry_ino", berth_json_ns((int64_t)e->entry_ino), "rootfs",
                     "ino", berth_json_ns((int64_t)e->rootfs.ino), "mode", (json_int_t)e->rootfs.mode, "mtime_ns",
                     berth_json_ns(e->rootfs.mtime_ns), "ctime_ns", berth_json_ns(e->rootfs.ctime_ns));
}

static int marker_parse(const char *text, size_t len, struct entry *e, struct berth_error *reterr)
{
    static const char *const top[] = {"digest", "entries", "bytes", "fingerprint", "created_ns", "entry_ino", "rootfs", NULL};
    static const char *const rfs[] = {"ino", "mode", "mtime_ns", "ctime_ns", NULL};
    _cleanup_json_ json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    const char *digest = NULL, *fp = NULL;
    int64_t entries = 0, bytes = 0, mode = 0, ino = 0, eino = 0;
    const json_t *rootfs;

    if (!json_is_object(doc))
        return berth_error_set(reterr, -EBADMSG, "not a JSON object");
    rootfs = json_object_get(doc, "rootfs");
    if (berth_json_only_members(doc, MARKER, top, reterr) < 0 || !json_is_object(rootfs) ||
        berth_json_only_members(rootfs, MARKER " rootfs", rfs, reterr) < 0 ||
        berth_json_string_member(doc, MARKER, "digest", true, &digest, reterr) < 0 ||
        berth_json_string_member(doc, MARKER, "fingerprint", true, &fp, reterr) < 0 ||
        berth_json_int_member(doc, MARKER, "entries", true, 0, INT64_MAX, &entries, reterr) < 0 ||
        berth_json_int_member(doc, MARKER, "bytes", true, 0, INT64_MAX, &bytes, reterr) < 0 ||
        berth_json_int_member(rootfs, MARKER, "mode", true, 0, 07777, &mode, reterr) < 0 ||
        berth_json_ns_member(doc, MARKER, "created_ns", &e->created_ns, reterr) < 0 ||
        berth_json_ns_member(doc, MARKER, "entry_ino", &eino, reterr) < 0 ||
        berth_json_ns_member(rootfs, MARKER, "ino", &ino, reterr) < 0 ||
        berth_json_ns_member(rootfs, MARKER, "mtime_ns", &e->rootfs.mtime_ns, reterr) < 0 ||
        berth_json_ns_member(rootfs, MARKER, "ctime_ns", &e->rootfs.ctime_ns, reterr) < 0)
        return -EBADMSG;
    if (strcmp(digest, e->digest) != 0 || berth_digest_parse(fp, e->sum.fingerprint) < 0)
        return berth_error_set(reterr, -EBADMSG, "it names another image or has no valid fingerprint");
    e->sum.entries = (uint64_t)entries;
    e->sum.bytes = (uint64_t)bytes;
    e->rootfs.mode = (uint32_t)mode;
    e->rootfs.ino = (uint64_t)ino;
    e->entry_ino = (uint64_t)eino;
    return 0;
}

/* Read DIR/@name's marker into @e (digest and name already set). */
static int load_entry(struct berth_rootcache *c, struct entry *e, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = geteuid(), .mode_mask = 07777, .mode = 0400, .max_size = MARKER_MAX, .one_link = 1};
    _cleanup_close_ int dfd = -1, fd = -1;
    _cleanup_free_ char *text = NULL;
    struct stat st;
    size_t len = 0;
    int r;

    dfd = berth_open_beneath(c->dirfd, e->name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0, reterr);
    if (dfd < 0)
        return dfd;
    fd = berth_open_beneath(dfd, MARKER, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    if ((r = berth_file_check(fd, MARKER, &expect, &st, reterr)) < 0 ||
        (r = berth_read_fd(fd, MARKER_MAX, &text, &len, reterr)) < 0 || (r = marker_parse(text, len, e, reterr)) < 0)
        return r;
    e->marker_ino = st.st_ino;
    e->marker_ctime_ns = ts_ns(&st.st_ctim);
    e->last_used_ns = ts_ns(&st.st_mtim);
    return 0;
}

/* ---- staging ---------------------------------------------------------- */

/* Make the empty mount points the bundle needs (a runtime must never create them in a shared root). */
static int make_mount_points(struct berth_rootcache *c, int rootfd, struct berth_error *reterr)
{
    for (const char *const *m = c->mount_points; m && *m; m++)
        if (mkdirat(rootfd, *m, 0755) < 0 && errno != EEXIST)
            return berth_error_set(reterr, -errno, "cannot create the mount point /%s: %m", *m);
    return 0;
}

/* Sum and seal the staged tree in @tmpfd as @e, and write its marker. */
static int seal(struct berth_rootcache *c, int tmpfd, int rootfd, struct entry *e, struct berth_error *reterr)
{
    _cleanup_json_ json_t *marker = NULL;
    _cleanup_free_ char *text = NULL;
    struct stat st;
    int r;

    if ((r = make_mount_points(c, rootfd, reterr)) < 0 || (r = berth_tree_sum(rootfd, &e->sum, reterr)) < 0)
        return r;
    if (fstat(rootfd, &st) < 0)
        return berth_error_set(reterr, -errno, "cannot stat the staged root: %m");
    e->rootfs = (struct rootfs_stat){st.st_ino, st.st_mode & 07777, ts_ns(&st.st_mtim), ts_ns(&st.st_ctim)};
    if (fstat(tmpfd, &st) < 0)
        return berth_error_set(reterr, -errno, "cannot stat the staged entry: %m");
    e->entry_ino = st.st_ino;
    e->created_ns = e->last_used_ns = now_ns();
    if (!(marker = marker_json(e)) || !(text = json_dumps(marker, JSON_COMPACT | JSON_SORT_KEYS)))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = berth_publish_at(tmpfd, MARKER, text, strlen(text), 0400, 0, reterr)) < 0)
        return r;
    if (fstatat(tmpfd, MARKER, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return berth_error_set(reterr, -errno, "cannot stat the marker: %m");
    e->marker_ino = st.st_ino;
    e->marker_ctime_ns = ts_ns(&st.st_ctim);
    if (fchmod(tmpfd, 0500) < 0)
        return berth_error_set(reterr, -errno, "cannot seal the staged entry: %m");
    e->verified = true;
    return 0;
}

/* Stage @digest into a .tmp- directory, seal it and rename it to @e->name.
 * Called with stage_lock held, not lock (the seq counter is stage_lock's too). */
static int stage_entry(struct berth_rootcache *c, struct entry *e, berth_rootcache_stage_fn stage, void *userdata,
                       struct berth_error *reterr)
{
    _cleanup_close_ int tmpfd = -1, rootfd = -1;
    _cleanup_free_ char *tmp = NULL;
    int r;

    pthread_mutex_lock(&c->lock);
    r = asprintf(&tmp, ".tmp-%s-%" PRIu64, e->name, ++c->seq);
    pthread_mutex_unlock(&c->lock);
    if (r < 0) {
        tmp = NULL;
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (mkdirat(c->dirfd, tmp, 0700) < 0)
        return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", c->directory, tmp);
    tmpfd = openat(c->dirfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (tmpfd < 0 || mkdirat(tmpfd, "rootfs", 0755) < 0 ||
        (rootfd = openat(tmpfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        fchmod(rootfd, 0755) < 0)
        r = berth_error_set(reterr, -errno, "cannot create %s/%s/rootfs: %m", c->directory, tmp);
    else if ((r = stage(userdata, e->digest, rootfd, reterr)) == 0 && (r = seal(c, tmpfd, rootfd, e, reterr)) == 0) {
        if (renameat2(c->dirfd, tmp, c->dirfd, e->name, RENAME_NOREPLACE) == 0) {
            /* Published; should it not survive a crash, the next open finds no entry or a bad one. */
            if (fsync(c->dirfd) < 0)
                berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: cannot sync %s: %m", c->directory);
            return 0;
        }
        r = berth_error_set(reterr, -errno, "cannot publish %s/%s: %m", c->directory, e->name);
    }
    {
        struct berth_error err = BERTH_ERROR_INIT;
        if (remove_dir(c, tmp, &err) < 0)
            berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s", err.message);
    }
    return r;
}

/* ---- the API ---------------------------------------------------------- */

static bool holder_valid(const char *holder)
{
    return holder && holder[0] && strlen(holder) < HOLDER_MAX && !strchr(holder, '/');
}

/* Under the lock: hold the sound entry of @digest (0), or detach a bad one
 * into @t and return 1 (also when there is none). */
static int try_hold(struct berth_rootcache *c, const char *digest, const char *holder, char **ret_path,
                    struct trash *t, struct berth_error *reterr)
{
    struct berth_error why = BERTH_ERROR_INIT;
    struct entry *e = find(c, digest);
    int r;

    if (!e)
        return 1;
    if (check(c, e, &why) < 0) {
        berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: the entry of %s is refused and staged again: %s",
                   digest, why.message);
        detach(c, e, t);
        return 1;
    }
    if ((r = path_of(c, e, ret_path, reterr)) < 0 || (r = add_hold(c, digest, holder)) < 0) {
        free(*ret_path);
        *ret_path = NULL;
        return berth_error_set(reterr, r, "out of memory");
    }
    e->last_used_ns = now_ns();
    return 0;
}

int berth_rootcache_hold(struct berth_rootcache *c, const char *digest, const char *holder,
                         berth_rootcache_stage_fn stage, void *userdata, char **ret_path, struct berth_error *reterr)
{
    struct trash t = {0};
    struct entry ne = {0}, *v;
    int r;

    *ret_path = NULL;
    if (name_of(digest, ne.name) < 0 || !holder_valid(holder))
        return berth_error_set(reterr, -EINVAL, "invalid image digest or holder");
    snprintf(ne.digest, sizeof(ne.digest), "%s", digest);
    pthread_mutex_lock(&c->lock);
    r = try_hold(c, digest, holder, ret_path, &t, reterr);
    pthread_mutex_unlock(&c->lock);
    trash_empty(c, &t);
    if (r <= 0)
        return r;

    /* Not cached: stage it once, however many starts want it now. */
    pthread_mutex_lock(&c->stage_lock);
    pthread_mutex_lock(&c->lock);
    r = try_hold(c, digest, holder, ret_path, &t, reterr);
    pthread_mutex_unlock(&c->lock);
    trash_empty(c, &t);
    if (r == 1 && (r = stage_entry(c, &ne, stage, userdata, reterr)) == 0) {
        pthread_mutex_lock(&c->lock);
        if (!(v = realloc(c->entries, (c->n_entries + 1) * sizeof(*v)))) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            (void)move_to_trash(c, ne.name, &t, NULL);
        } else {
            c->entries = v;
            c->entries[c->n_entries++] = ne;
            r = try_hold(c, digest, holder, ret_path, &t, reterr);
            if (r == 0) {
                evict(c, &t);
                r = 1;
            }
        }
        pthread_mutex_unlock(&c->lock);
        trash_empty(c, &t);
    }
    pthread_mutex_unlock(&c->stage_lock);
    return r;
}

int berth_rootcache_adopt(struct berth_rootcache *c, const char *digest, const char *holder,
                          struct berth_error *reterr)
{
    char name[NAME_SIZE];
    int r;

    if (name_of(digest, name) < 0 || !holder_valid(holder))
        return berth_error_set(reterr, -EINVAL, "invalid image digest or holder");
    pthread_mutex_lock(&c->lock);
    r = add_hold(c, digest, holder);
    pthread_mutex_unlock(&c->lock);
    return r < 0 ? berth_error_set(reterr, r, "out of memory") : 0;
}

void berth_rootcache_release(struct berth_rootcache *c, const char *holder)
{
    struct trash t = {0};

    if (!holder)
        return;
    pthread_mutex_lock(&c->lock);
    for (size_t i = 0; i < c->n_holds; i++)
        if (strcmp(c->holds[i].holder, holder) == 0) {
            c->holds[i] = c->holds[--c->n_holds];
            evict(c, &t);
            break;
        }
    pthread_mutex_unlock(&c->lock);
    trash_empty(c, &t);
}

static int by_last_used(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    return x->last_used_ns < y->last_used_ns ? 1 : x->last_used_ns > y->last_used_ns ? -1 : strcmp(x->digest, y->digest);
}

int berth_rootcache_list(struct berth_rootcache *c, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *roots = json_array(), *doc = NULL;
    struct entry *copy = NULL;
    uint64_t total = 0;
    size_t n;
    int r = 0;

    *ret = NULL;
    pthread_mutex_lock(&c->lock);
    n = c->n_entries;
    if (n && (copy = malloc(n * sizeof(*copy))))
        memcpy(copy, c->entries, n * sizeof(*copy));
    if (copy)
        qsort(copy, n, sizeof(*copy), by_last_used);
    for (size_t i = 0; roots && (copy || n == 0) && i < n && r == 0; i++) {
        const struct entry *e = &copy[i];
        total += e->sum.bytes;
        r = json_array_append_new(
            roots, json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:b}", "digest", e->digest, "entries",
                             (json_int_t)e->sum.entries, "bytes", (json_int_t)e->sum.bytes, "jobs",
                             (json_int_t)holders_of(c, e->digest), "created_ns", berth_json_ns(e->created_ns),
                             "last_used_ns", berth_json_ns(e->last_used_ns), "verified", e->verified));
    }
    pthread_mutex_unlock(&c->lock);
    if (!roots || (n && !copy) || r < 0 ||
        !(doc = json_pack("{s:I, s:I, s:O}", "max_bytes", (json_int_t)c->max_bytes, "bytes", (json_int_t)total,
                          "roots", roots))) {
        free(copy);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    free(copy);
    *ret = TAKE_PTR(doc);
    return 0;
}

int berth_rootcache_prune(struct berth_rootcache *c, uint64_t *ret_removed, uint64_t *ret_bytes,
                          struct berth_error *reterr)
{
    struct trash t = {0};
    uint64_t removed = 0, bytes = 0;
    int r = 0;

    pthread_mutex_lock(&c->lock);
    for (size_t i = c->n_entries; i-- > 0;) {
        struct entry *e = &c->entries[i];
        if (holders_of(c, e->digest) > 0)
            continue;
        removed++;
        bytes += e->sum.bytes;
        detach(c, e, &t);
    }
    pthread_mutex_unlock(&c->lock);
    for (size_t i = 0; i < t.n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        int rr = remove_dir(c, t.names[i], &err);
        if (rr < 0 && r == 0)
            r = berth_error_set(reterr, rr, "%s", err.message);
    }
    trash_free(&t);
    *ret_removed = removed;
    *ret_bytes = bytes;
    return r;
}

/* ---- opening ---------------------------------------------------------- */

static bool is_entry_name(const char *name)
{
    char digest[BERTH_DIGEST_BUFSZ];

    if (strncmp(name, NAME_PREFIX, strlen(NAME_PREFIX)) != 0)
        return false;
    snprintf(digest, sizeof(digest), "sha256:%s", name + strlen(NAME_PREFIX));
    return name_of(digest, (char[NAME_SIZE]){0}) == 0 && strlen(name) == NAME_SIZE - 1;
}

/* One name found in DIR: load an entry, remove a leftover or a bad entry. */
static int open_one(struct berth_rootcache *c, const char *name, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct trash t = {0};
    struct entry e = {0}, *v;

    if (strncmp(name, ".tmp-", 5) == 0 || strncmp(name, ".trash-", 7) == 0) {
        if (remove_dir(c, name, &err) < 0)
            berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s", err.message);
        return 0;
    }
    if (!is_entry_name(name)) {
        berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s/%s is not an entry; left alone", c->directory, name);
        return 0;
    }
    snprintf(e.name, sizeof(e.name), "%s", name);
    snprintf(e.digest, sizeof(e.digest), "sha256:%s", name + strlen(NAME_PREFIX));
    if (load_entry(c, &e, &err) < 0) {
        berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: the entry of %s is removed: its marker: %s", e.digest,
                   err.message);
        if (move_to_trash(c, name, &t, &err) < 0)
            berth_logf(c->logger, BERTH_LOG_WARNING, "root cache: %s", err.message);
        trash_empty(c, &t);
        return 0;
    }
    if (!(v = realloc(c->entries, (c->n_entries + 1) * sizeof(*v))))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    c->entries = v;
    c->entries[c->n_entries++] = e;
    return 0;
}

static int open_dir(struct berth_rootcache *c, struct berth_error *reterr)
{
    struct stat st;

    if (mkdir(c->directory, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s: %m", c->directory);
    c->dirfd = berth_open_trusted(c->directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (c->dirfd < 0)
        return c->dirfd;
    if (fstat(c->dirfd, &st) < 0)
        return berth_error_set(reterr, -errno, "cannot stat %s: %m", c->directory);
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0)
        return berth_error_set(reterr, -EPERM, "%s must be a directory of uid %u with mode 0700", c->directory,
                               (unsigned)geteuid());
    return 0;
}

static int scan(struct berth_rootcache *c, struct berth_error *reterr)
{
    struct dirent *de;
    char **names = NULL;
    size_t n = 0;
    int r = 0, fd = dup(c->dirfd);
    DIR *d;

    if (fd < 0 || !(d = fdopendir(fd))) {
        r = berth_error_set(reterr, -errno, "cannot read %s: %m", c->directory);
        if (fd >= 0)
            close(fd);
        return r;
    }
    /* Names first: entries are renamed while the directory is handled. */
    while ((de = readdir(d)) && r == 0) {
        char **v;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!(v = realloc(names, (n + 1) * sizeof(*v))) || !(v[n] = strdup(de->d_name))) {
            if (v)
                names = v;
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            break;
        }
        names = v;
        n++;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++) {
        if (r == 0)
            r = open_one(c, names[i], reterr);
        free(names[i]);
    }
    free(names);
    return r;
}

int berth_rootcache_open(const struct berth_rootcache_params *p, struct berth_rootcache **ret,
                         struct berth_error *reterr)
{
    struct berth_rootcache *c;
    int r;

    *ret = NULL;
    if (!p->directory || p->directory[0] != '/')
        return berth_error_set(reterr, -EINVAL, "the root cache needs an absolute directory");
    if (!(c = calloc(1, sizeof(*c))) || !(c->directory = strdup(p->directory))) {
        free(c);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    c->dirfd = -1;
    c->max_bytes = p->max_bytes;
    c->mount_points = p->mount_points;
    c->logger = p->logger;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->stage_lock, NULL);
    if ((r = open_dir(c, reterr)) < 0 || (r = scan(c, reterr)) < 0) {
        berth_rootcache_free(c);
        return r;
    }
    *ret = c;
    return 0;
}

void berth_rootcache_free(struct berth_rootcache *c)
{
    if (!c)
        return;
    if (c->dirfd >= 0)
        close(c->dirfd);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->stage_lock);
    free(c->entries);
    free(c->holds);
    free(c->directory);
    free(c);
}
