/* SPDX-License-Identifier: MIT */
/*
 * extract.c -- apply OCI layers to a root filesystem; see extract.h.
 *
 * Two libarchive readers are chained.  The outer one (gzip filter, raw
 * format; none for plain tar) yields the uncompressed stream; the inner tar
 * reader pulls that stream through source_read(), which enforces the
 * deadline and the expanded-byte budget, hashes every byte for the DiffID
 * and shows it to the tar header observer (tarwalk.h).  After the tar end
 * the rest of the stream is drained through the same path, so the DiffID
 * covers every byte and the observer sees the end-of-archive marker and
 * whatever follows it.  For gzip, every compressed byte the outer reader
 * takes is also shown to the gzip framing observer (gzframe.h), and after
 * the outer reader's end the rest of the blob is read to it as well.
 * Entries are checked here and written by rootfs.c.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <linux/limits.h> /* PATH_MAX, NAME_MAX (budget.h has the budgets) */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "extract.h"
#include "fsutil.h"
#include "gzframe.h"
#include "macro.h"
#include "refusal.h"
#include "rootfs.h"
#include "tarwalk.h"
#include "utf8.h"

#define CHUNK ((size_t)64 << 10)
#define WHITEOUT ".wh."
#define OPAQUE ".wh..wh..opq"
#define OPAQUE_DEPTH_MAX 4096

struct berth_extract {
    int rootfd;
    struct berth_stage_limits limits;
    int64_t deadline_ns;
    unsigned layer;             /* layers applied so far */
    struct berth_stage_stats s; /* expanded_bytes, entries and the counts */
};

struct dirmode {
    char *path;
    mode_t mode;
};

/* One layer being applied. */
struct layer {
    struct berth_extract *x;
    int blobfd;
    struct archive *outer; /* gzip: the decompressing reader; NULL for plain tar */
    struct berth_sha256 *sha;
    struct berth_tarwalk *walk;
    struct berth_gzframe *gz; /* gzip: the framing observer; NULL for plain tar */
    uint64_t expanded;        /* uncompressed bytes of this layer so far */
    unsigned char *buf;       /* what source_read() last handed to libarchive */
    unsigned char *zbuf;      /* what blob_read() last handed to the gzip reader */
    int refusal;              /* set by source_read(), with detail in err */
    struct berth_error err;
    json_t *explicit; /* paths of this layer's entries (duplicates) */
    json_t *touched;  /* the same plus every parent directory they imply */
    struct dirmode *dirs;
    size_t ndirs, capdirs;
};

int berth_extract_new(int rootfd, const struct berth_stage_limits *limits, int64_t deadline_ns,
                      struct berth_extract **ret)
{
    struct berth_extract *x;

    if (rootfd < 0 || !limits || !ret || limits->expanded_bytes == 0 ||
        limits->expanded_bytes > BERTH_STAGE_MAX_EXPANDED_BYTES || limits->entries == 0 ||
        limits->entries > BERTH_STAGE_MAX_ENTRIES)
        return -EINVAL;
    x = calloc(1, sizeof(*x));
    if (!x)
        return -ENOMEM;
    x->rootfd = rootfd;
    x->limits = *limits;
    x->deadline_ns = deadline_ns;
    *ret = x;
    return 0;
}

void berth_extract_free(struct berth_extract *x)
{
    free(x);
}

void berth_extract_stats(const struct berth_extract *x, struct berth_stage_stats *stats)
{
    if (!x || !stats)
        return;
    stats->expanded_bytes += x->s.expanded_bytes;
    stats->entries += x->s.entries;
    stats->files += x->s.files;
    stats->directories += x->s.directories;
    stats->symlinks += x->s.symlinks;
    stats->hardlinks += x->s.hardlinks;
    stats->whiteouts += x->s.whiteouts;
}

static void layer_done(struct layer *l)
{
    if (l->outer)
        archive_read_free(l->outer);
    berth_sha256_free(l->sha);
    berth_tarwalk_free(l->walk);
    berth_gzframe_free(l->gz);
    free(l->buf);
    free(l->zbuf);
    json_decref(l->explicit);
    json_decref(l->touched);
    for (size_t i = 0; i < l->ndirs; i++)
        free(l->dirs[i].path);
    free(l->dirs);
}

/* Record a refusal met inside a libarchive callback; returns -1 for libarchive. */
static ssize_t source_fail(struct layer *l, int r)
{
    l->refusal = r;
    return -1;
}

/* The next chunk of the uncompressed stream, counted, hashed and observed. */
static ssize_t source_pull(struct layer *l)
{
    struct berth_extract *x = l->x;
    ssize_t n;
    int r;

    if (l->refusal)
        return -1;
    if (berth_deadline_passed(CLOCK_MONOTONIC, x->deadline_ns))
        return source_fail(l, berth_image_refuse(&l->err, BERTH_IMAGE_TIME_BUDGET, "layer %u", x->layer));
    if (l->outer) {
        n = archive_read_data(l->outer, l->buf, CHUNK);
        if (n < 0 && l->refusal)
            return -1; /* blob_read() refused: keep its reason */
        if (n < 0)
            return source_fail(l, berth_image_refuse(&l->err, BERTH_IMAGE_ARCHIVE_INVALID, "gzip: %s",
                                                     archive_error_string(l->outer) ?: "read error"));
    } else {
        do
            n = read(l->blobfd, l->buf, CHUNK);
        while (n < 0 && errno == EINTR);
        if (n < 0)
            return source_fail(l, berth_error_set(&l->err, -errno, "reading layer %u: %m", x->layer));
    }
    if (n == 0)
        return 0;
    if ((uint64_t)n > x->limits.expanded_bytes - x->s.expanded_bytes)
        return source_fail(l, berth_image_refuse(&l->err, BERTH_IMAGE_EXPANDED_BUDGET, "over %llu bytes",
                                                 (unsigned long long)x->limits.expanded_bytes));
    x->s.expanded_bytes += (uint64_t)n;
    l->expanded += (uint64_t)n;
    r = berth_sha256_update(l->sha, l->buf, (size_t)n);
    if (r < 0)
        return source_fail(l, berth_error_set(&l->err, r, "hashing layer %u", x->layer));
    r = berth_tarwalk_feed(l->walk, l->buf, (size_t)n, &l->err);
    if (r < 0)
        return source_fail(l, r);
    return n;
}

static la_ssize_t source_read(struct archive *a, void *userdata, const void **buf)
{
    struct layer *l = userdata;
    ssize_t n = source_pull(l);

    (void)a;
    *buf = l->buf;
    return n;
}

/* The error after a libarchive call failed: ours if a callback refused, else the archive's. */
static int archive_failure(struct layer *l, struct archive *a, struct berth_error *reterr)
{
    if (l->refusal) {
        if (reterr)
            *reterr = l->err;
        return l->refusal;
    }
    return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "%s", archive_error_string(a) ?: "unreadable");
}

/* Components of a raw archive name, "." ones (as in a leading "./") not counted. */
static uint64_t components(const char *p)
{
    uint64_t n = 0;

    while (p && *p) {
        size_t len = strcspn(p, "/");
        if (len > 0 && !(len == 1 && p[0] == '.'))
            n++;
        p += len;
        p += strspn(p, "/");
    }
    return n;
}

/*
 * Check and normalise an archive name: relative, valid UTF-8, at most
 * PATH_MAX bytes, no empty, "." or ".." component; one leading "./" and,
 * for directories, one trailing "/" are dropped; "." and "./" become "".
 */
static int normalise(const char *raw, bool is_dir, char **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *p = NULL;
    const char *s = raw;
    size_t len;

    if (!raw || !*raw)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "empty name");
    len = strlen(raw);
    if (len > PATH_MAX)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "name of %zu bytes", len);
    if (!berth_utf8_valid(raw, len, NULL))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "name is not UTF-8");
    if (raw[0] == '/')
        return berth_image_refuse(reterr, BERTH_IMAGE_ABSOLUTE_PATH, "\"%s\"", raw);
    if (streq(raw, "."))
        s = "";
    else if (strncmp(raw, "./", 2) == 0)
        s = raw + 2;
    p = strdup(s);
    if (!p)
        return -ENOMEM;
    len = strlen(p);
    if (is_dir && len > 0 && p[len - 1] == '/')
        p[--len] = '\0';
    for (char *c = p; len > 0;) {
        char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);

        if (n == 2 && c[0] == '.' && c[1] == '.')
            return berth_image_refuse(reterr, BERTH_IMAGE_PATH_TRAVERSAL, "\"%s\"", raw);
        if (n == 0 || (n == 1 && c[0] == '.') || n > NAME_MAX)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "\"%s\"", raw);
        if (!slash)
            break;
        c = slash + 1;
    }
    *ret = TAKE_PTR(p);
    return 0;
}

static bool in_set(json_t *set, const char *path)
{
    return json_object_get(set, path) != NULL;
}

static int set_add(json_t *set, const char *path)
{
    return json_object_set_new(set, path, json_true()) < 0 ? -ENOMEM : 0;
}

/* Mark @path and every directory above it as this layer's. */
static int touch(struct layer *l, char *path)
{
    int r;

    for (char *c = path; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        r = set_add(l->touched, path);
        *c = '/';
        if (r < 0)
            return r;
    }
    return set_add(l->touched, path);
}

static int defer_mode(struct layer *l, const char *path, mode_t mode)
{
    if (l->ndirs == l->capdirs) {
        size_t ncap = l->capdirs ? l->capdirs * 2 : 16;
        struct dirmode *nd = realloc(l->dirs, ncap * sizeof(*nd));
        if (!nd)
            return -ENOMEM;
        l->dirs = nd;
        l->capdirs = ncap;
    }
    l->dirs[l->ndirs].path = strdup(path);
    if (!l->dirs[l->ndirs].path)
        return -ENOMEM;
    l->dirs[l->ndirs++].mode = mode & 01777;
    return 0;
}

/* Split a normalised path in place into its directory ("" at the top) and last component. */
static const char *split(char *path, const char **ret_name)
{
    char *slash = strrchr(path, '/');

    if (!slash) {
        *ret_name = path;
        return "";
    }
    *slash = '\0';
    *ret_name = slash + 1;
    return path;
}

/* Apply the final directory modes, deepest (latest) first. */
static int apply_modes(struct layer *l, struct berth_error *reterr)
{
    for (size_t i = l->ndirs; i-- > 0;) {
        _cleanup_close_ int dfd = -1;
        const char *name, *dir;
        int r;

        if (l->dirs[i].path[0] == '\0')
            r = berth_rootfs_chmod_dir(l->x->rootfd, "", l->dirs[i].mode, reterr);
        else {
            dir = split(l->dirs[i].path, &name);
            r = berth_rootfs_open_dir(l->x->rootfd, dir, false, &dfd, reterr);
            if (r == -ENOENT)
                r = berth_error_set(reterr, r, "directory \"%s\" vanished", dir);
            if (r >= 0)
                r = berth_rootfs_chmod_dir(dfd, name, l->dirs[i].mode, reterr);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

/* The names in directory @fd (opened O_PATH), without "." and "..". */
static int list_dir(int fd, char ***ret, size_t *ret_n, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d;
    int r = 0;

    if (dfd < 0)
        return berth_error_set(reterr, -errno, "opening directory: %m");
    d = fdopendir(dfd);
    if (!d)
        return berth_error_set(reterr, -errno, "opening directory: %m");
    TAKE_FD(dfd);
    while ((errno = 0, de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        if (n == cap) {
            char **nn = realloc(names, (cap = cap ? cap * 2 : 16) * sizeof(*nn));
            if (!nn) {
                r = -ENOMEM;
                break;
            }
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            r = -ENOMEM;
            break;
        }
        n++;
    }
    if (r == 0 && errno != 0)
        r = berth_error_set(reterr, -errno, "reading directory: %m");
    closedir(d);
    if (r < 0) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        return r;
    }
    *ret = names;
    *ret_n = n;
    return 0;
}

/* Open the directory @dir of the root for a whiteout: never through a
 * symlink (a whiteout names a path of the layer tree, not a place a link
 * points to).  Return: the O_PATH fd; -ENOENT when there is nothing there;
 * "invalid-whiteout" through a symlink; another error. */
static int whiteout_dir(struct layer *l, const char *dir, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int fd = berth_open_beneath(l->x->rootfd, dir[0] ? dir : ".", O_PATH | O_DIRECTORY, 0, &err);

    if (fd == -ENOENT || fd == -ENOTDIR)
        return -ENOENT;
    if (fd == -ELOOP)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_WHITEOUT, "\"%s\" is reached through a symlink", dir);
    if (fd < 0)
        return berth_error_set(reterr, fd, "opening \"%s\": %s", dir, err.message);
    return fd;
}

/*
 * An opaque whiteout in @dir: remove every child this layer did not create;
 * descend into the directories it did, whose lower content is hidden too
 * (OCI image-spec, layer.md "Opaque Whiteout").  One directory is open at a
 * time, whatever the depth.
 */
static int opaque(struct layer *l, const char *dir, unsigned depth, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    _cleanup_free_ bool *descend = NULL;
    char **names = NULL;
    size_t n = 0;
    int r;

    if (depth > OPAQUE_DEPTH_MAX)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_WHITEOUT, "opaque directory too deep");
    fd = whiteout_dir(l, dir, reterr);
    if (fd == -ENOENT)
        return 0;
    if (fd < 0)
        return fd;
    r = list_dir(fd, &names, &n, reterr);
    if (r < 0)
        return r;
    descend = calloc(n ? n : 1, sizeof(*descend));
    if (!descend)
        r = -ENOMEM;
    for (size_t i = 0; i < n && r >= 0; i++) {
        _cleanup_free_ char *child = NULL;
        struct stat st;

        if (asprintf(&child, "%s%s%s", dir, dir[0] ? "/" : "", names[i]) < 0) {
            child = NULL;
            r = -ENOMEM;
        } else if (!in_set(l->touched, child))
            r = berth_rootfs_remove(fd, names[i], reterr);
        else if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
            descend[i] = true;
    }
    close(TAKE_FD(fd));
    for (size_t i = 0; i < n && r >= 0; i++) {
        _cleanup_free_ char *child = NULL;

        if (!descend[i])
            continue;
        if (asprintf(&child, "%s%s%s", dir, dir[0] ? "/" : "", names[i]) < 0) {
            child = NULL;
            r = -ENOMEM;
        } else
            r = opaque(l, child, depth + 1, reterr);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return r;
}

/* A whiteout entry (its checks done): ".wh..wh..opq" or ".wh.NAME" in @dir. */
static int whiteout(struct layer *l, const char *dir, const char *name, struct berth_error *reterr)
{
    _cleanup_free_ char *target = NULL;
    _cleanup_close_ int dirfd = -1;

    l->x->s.whiteouts++;
    if (streq(name, OPAQUE))
        return opaque(l, dir, 0, reterr);
    if (asprintf(&target, "%s%s%s", dir, dir[0] ? "/" : "", name + strlen(WHITEOUT)) < 0)
        return -ENOMEM;
    if (in_set(l->touched, target))
        return 0; /* this layer's own: whiteouts apply to lower layers only */
    dirfd = whiteout_dir(l, dir, reterr);
    if (dirfd == -ENOENT)
        return 0; /* nothing below: nothing to remove */
    if (dirfd < 0)
        return dirfd;
    return berth_rootfs_remove(dirfd, name + strlen(WHITEOUT), reterr);
}

static int regular_file(struct layer *l, struct archive *in, int dirfd, const char *name, mode_t mode, bool ours,
                        struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int64_t expect = 0;
    int r;

    r = berth_rootfs_make_room(dirfd, name, false, !ours, reterr);
    if (r < 0)
        return r;
    r = berth_rootfs_create_file(dirfd, name, &fd, reterr);
    if (r < 0)
        return r;
    for (;;) {
        const void *block;
        size_t size;
        la_int64_t offset;

        r = archive_read_data_block(in, &block, &size, &offset);
        if (r == ARCHIVE_EOF)
            break;
        if (r != ARCHIVE_OK)
            return archive_failure(l, in, reterr);
        if (offset != expect)
            return berth_image_refuse(reterr, BERTH_IMAGE_SPARSE_FILE, "\"%s\" has holes", name);
        r = berth_write_all(fd, block, size);
        if (r < 0)
            return berth_error_set(reterr, r, "writing \"%s\": %s", name, strerror(-r));
        expect += (int64_t)size;
    }
    if (fchmod(fd, mode & 0777) < 0)
        return berth_error_set(reterr, -errno, "chmod \"%s\": %m", name);
    if (close(TAKE_FD(fd)) < 0)
        return berth_error_set(reterr, -errno, "closing \"%s\": %m", name);
    l->x->s.files++;
    return 0;
}

enum kind { K_FILE, K_DIR, K_SYMLINK, K_HARDLINK, K_WHITEOUT };

/* Classify an entry, refusing the kinds and attributes the rules forbid. */
static int classify(struct archive_entry *e, const char *path, enum kind *ret, struct berth_error *reterr)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    mode_t type = archive_entry_filetype(e);
    bool hardlink = archive_entry_hardlink(e) != NULL;

    if (strncmp(base, WHITEOUT, strlen(WHITEOUT)) == 0) {
        const char *t = base + strlen(WHITEOUT);
        if (hardlink || type != AE_IFREG)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_WHITEOUT, "\"%s\" is not a regular file", path);
        if (!streq(base, OPAQUE) && (t[0] == '\0' || streq(t, ".") || streq(t, "..") || !strncmp(t, WHITEOUT, 4)))
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_WHITEOUT, "\"%s\"", path);
        *ret = K_WHITEOUT;
    } else if (hardlink) {
        if (type != 0 && type != AE_IFREG)
            return berth_image_refuse(reterr, BERTH_IMAGE_UNSUPPORTED_ENTRY, "\"%s\": hard link of type 0%o", path,
                                      (unsigned)type);
        *ret = K_HARDLINK;
    } else
        switch (type) {
        case AE_IFREG: *ret = K_FILE; break;
        case AE_IFDIR: *ret = K_DIR; break;
        case AE_IFLNK: *ret = K_SYMLINK; break;
        case AE_IFCHR:
        case AE_IFBLK: return berth_image_refuse(reterr, BERTH_IMAGE_DEVICE_NODE, "\"%s\"", path);
        case AE_IFIFO: return berth_image_refuse(reterr, BERTH_IMAGE_FIFO, "\"%s\"", path);
        case AE_IFSOCK: return berth_image_refuse(reterr, BERTH_IMAGE_SOCKET, "\"%s\"", path);
        default: return berth_image_refuse(reterr, BERTH_IMAGE_UNSUPPORTED_ENTRY, "\"%s\": type 0%o", path, type);
        }
    if (archive_entry_sparse_count(e) > 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_SPARSE_FILE, "\"%s\"", path);
    if (archive_entry_mode(e) & (S_ISUID | S_ISGID))
        return berth_image_refuse(reterr, BERTH_IMAGE_SETUID, "\"%s\"", path);
    if (archive_entry_xattr_count(e) > 0 ||
        archive_entry_acl_count(e, ARCHIVE_ENTRY_ACL_TYPE_ACCESS | ARCHIVE_ENTRY_ACL_TYPE_DEFAULT |
                                       ARCHIVE_ENTRY_ACL_TYPE_NFS4) > 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_XATTR, "\"%s\"", path);
    if (path[0] == '\0' && *ret != K_DIR)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "root entry is not a directory");
    return 0;
}

static int symlink_target_valid(const char *t, struct berth_error *reterr)
{
    size_t len = t ? strlen(t) : 0;

    if (len == 0 || len > PATH_MAX || !berth_utf8_valid(t, len, NULL))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_PATH, "bad symlink target");
    return 0;
}

/*
 * libarchive and the header observer must agree on where this entry's
 * headers began and how much data it has: otherwise one of them is reading
 * data as headers (or headers as data), and a rule the observer enforces
 * could be bypassed in what libarchive extracts.
 */
static int same_structure(struct layer *l, struct archive *in, struct archive_entry *e, struct berth_error *reterr)
{
    struct berth_tarwalk_member m;
    la_int64_t pos = archive_read_header_position(in), size = archive_entry_size(e);

    if (berth_tarwalk_next_member(l->walk, &m) < 0 || pos < 0 || size < 0 || m.offset != (uint64_t)pos ||
        m.size != (uint64_t)size)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID,
                                  "ambiguous archive: the tar headers near offset %lld can be read two ways",
                                  (long long)pos);
    return 0;
}

static int entry(struct layer *l, struct archive *in, struct archive_entry *e, struct berth_error *reterr)
{
    struct berth_extract *x = l->x;
    const char *raw = archive_entry_pathname(e), *hl = archive_entry_hardlink(e), *sl = NULL;
    _cleanup_free_ char *path = NULL, *dirpart = NULL, *target = NULL;
    _cleanup_close_ int dirfd = -1;
    const char *dir, *name;
    mode_t mode = archive_entry_mode(e);
    uint64_t units;
    enum kind kind = K_FILE;
    bool ours;
    int r;

    if (!hl && archive_entry_filetype(e) == AE_IFLNK)
        sl = archive_entry_symlink(e);
    r = same_structure(l, in, e, reterr);
    if (r < 0)
        return r;
    if (berth_deadline_passed(CLOCK_MONOTONIC, x->deadline_ns))
        return berth_image_refuse(reterr, BERTH_IMAGE_TIME_BUDGET, "layer %u", x->layer);
    units = 1 + components(raw) + components(hl ? hl : sl);
    if (units > x->limits.entries - x->s.entries)
        return berth_image_refuse(reterr, BERTH_IMAGE_ENTRY_BUDGET, "over %llu entry units",
                                  (unsigned long long)x->limits.entries);
    x->s.entries += units;

    r = normalise(raw, !hl && archive_entry_filetype(e) == AE_IFDIR, &path, reterr);
    if (r < 0)
        return r;
    r = classify(e, path, &kind, reterr);
    if (r < 0)
        return r;
    if (kind == K_SYMLINK) {
        r = symlink_target_valid(sl, reterr);
        if (r < 0)
            return r;
    } else if (kind == K_HARDLINK) {
        r = normalise(hl, false, &target, reterr);
        if (r < 0)
            return r;
        if (target[0] == '\0')
            return berth_image_refuse(reterr, BERTH_IMAGE_HARDLINK_MISSING_TARGET, "link to the root");
    }
    if (in_set(l->explicit, path))
        return berth_image_refuse(reterr, BERTH_IMAGE_DUPLICATE_ENTRY, "\"%s\"", path);
    r = set_add(l->explicit, path);
    if (r < 0)
        return r;
    ours = in_set(l->touched, path);
    r = touch(l, path);
    if (r < 0)
        return r;

    if (path[0] == '\0') { /* the "./" root entry: the staging directory keeps its own mode */
        x->s.directories++;
        return 0;
    }
    dirpart = strdup(path);
    if (!dirpart)
        return -ENOMEM;
    dir = split(dirpart, &name);
    if (strncmp(dir, WHITEOUT, strlen(WHITEOUT)) == 0 || strstr(dir, "/" WHITEOUT))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_WHITEOUT, "\"%s\": a whiteout name as a directory", path);
    if (kind == K_WHITEOUT)
        return whiteout(l, dir, name, reterr);
    r = berth_rootfs_open_dir(x->rootfd, dir, true, &dirfd, reterr);
    if (r < 0)
        return r;

    switch (kind) {
    case K_WHITEOUT: return -EINVAL; /* handled above */
    case K_FILE: return regular_file(l, in, dirfd, name, mode, ours, reterr);
    case K_DIR:
        r = berth_rootfs_make_room(dirfd, name, true, false, reterr);
        if (r >= 0)
            r = berth_rootfs_mkdir(dirfd, name, mode, reterr);
        if (r < 0)
            return r;
        x->s.directories++;
        return (mode & 0700) == 0700 ? 0 : defer_mode(l, path, mode);
    case K_SYMLINK:
        r = berth_rootfs_make_room(dirfd, name, false, !ours, reterr);
        if (r >= 0)
            r = berth_rootfs_symlink(dirfd, name, sl, reterr);
        if (r < 0)
            return r;
        x->s.symlinks++;
        return 0;
    case K_HARDLINK:
        r = berth_rootfs_hardlink(x->rootfd, target, dirfd, name, !ours, reterr);
        if (r < 0)
            return r;
        x->s.hardlinks++;
        return 0;
    }
    return -EINVAL;
}

/* The outer reader's source: the compressed blob, with the deadline checked
 * on every read, so that a stream inflating to nothing (empty gzip members)
 * still meets the time budget. */
static la_ssize_t blob_read(struct archive *a, void *userdata, const void **buf)
{
    struct layer *l = userdata;
    ssize_t n;

    (void)a;
    if (l->refusal)
        return -1;
    if (berth_deadline_passed(CLOCK_MONOTONIC, l->x->deadline_ns))
        return source_fail(l, berth_image_refuse(&l->err, BERTH_IMAGE_TIME_BUDGET, "layer %u", l->x->layer));
    do
        n = read(l->blobfd, l->zbuf, CHUNK);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return source_fail(l, berth_error_set(&l->err, -errno, "reading layer %u: %m", l->x->layer));
    if (n > 0) {
        int r = berth_gzframe_feed(l->gz, l->zbuf, (size_t)n, &l->err);
        if (r < 0)
            return source_fail(l, r);
    }
    *buf = l->zbuf;
    return n;
}

/* Open the outer (decompressing) reader for a gzip layer. */
static int open_gzip(struct layer *l, struct berth_error *reterr)
{
    struct archive_entry *e;
    int r;

    l->outer = archive_read_new();
    if (!l->outer)
        return -ENOMEM;
    if (archive_read_support_filter_gzip(l->outer) != ARCHIVE_OK ||
        archive_read_support_format_raw(l->outer) != ARCHIVE_OK)
        return berth_error_set(reterr, -EIO, "libarchive: %s", archive_error_string(l->outer) ?: "no gzip");
    if (archive_read_open(l->outer, l, NULL, blob_read, NULL) != ARCHIVE_OK) {
        if (l->refusal) {
            if (reterr)
                *reterr = l->err;
            return l->refusal;
        }
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "gzip: %s",
                                  archive_error_string(l->outer) ?: "unreadable");
    }
    /* Exactly one gzip filter over the blob: libarchive would stack a
     * second one for a gzip inside the gzip, which no runtime unpacks. */
    if (archive_filter_count(l->outer) != 2 || archive_filter_code(l->outer, 0) != ARCHIVE_FILTER_GZIP)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "not a single gzip stream");
    r = archive_read_next_header(l->outer, &e);
    if (r != ARCHIVE_OK && l->refusal) {
        if (reterr)
            *reterr = l->err;
        return l->refusal;
    }
    if (r != ARCHIVE_OK)
        return berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID, "gzip: %s",
                                  archive_error_string(l->outer) ?: "empty");
    return 0;
}

static int read_layer(struct layer *l, const uint8_t diff_id[BERTH_SHA256_LEN], struct berth_error *reterr)
{
    struct archive *in = archive_read_new();
    uint8_t digest[BERTH_SHA256_LEN];
    ssize_t n;
    int r;

    if (!in)
        return -ENOMEM;
    if (archive_read_support_format_tar(in) != ARCHIVE_OK ||
        archive_read_open(in, l, NULL, source_read, NULL) != ARCHIVE_OK) {
        r = archive_failure(l, in, reterr);
        archive_read_free(in);
        return r;
    }
    for (;;) {
        struct archive_entry *e;

        r = archive_read_next_header(in, &e);
        if (l->refusal || (r != ARCHIVE_OK && r != ARCHIVE_WARN && r != ARCHIVE_EOF)) {
            r = archive_failure(l, in, reterr);
            break;
        }
        if (r == ARCHIVE_EOF) {
            struct berth_tarwalk_member m;
            r = 0;
            /* Every member the header walk saw must have been an entry. */
            if (berth_tarwalk_next_member(l->walk, &m) == 0)
                r = berth_image_refuse(reterr, BERTH_IMAGE_ARCHIVE_INVALID,
                                       "ambiguous archive: a member at offset %llu was never read as an entry",
                                       (unsigned long long)m.offset);
            break;
        }
        r = entry(l, in, e, reterr);
        if (r < 0)
            break;
    }
    archive_read_free(in);
    if (r < 0)
        return r;

    /* Drain what follows the end of the archive so the DiffID covers it. */
    while ((n = source_pull(l)) > 0)
        ;
    if (n < 0) {
        if (reterr)
            *reterr = l->err;
        return l->refusal;
    }
    if (l->gz) {
        /* The gzip reader may stop before the blob's end (it ignores bytes
         * that start no member): the framing observer sees them all. */
        const void *rest;
        la_ssize_t m;

        while ((m = blob_read(NULL, l, &rest)) > 0)
            ;
        if (m < 0) {
            if (reterr)
                *reterr = l->err;
            return l->refusal;
        }
        r = berth_gzframe_finish(l->gz, l->expanded, reterr);
        if (r < 0)
            return r;
    }
    r = berth_tarwalk_finish(l->walk, reterr);
    if (r < 0)
        return r;
    r = berth_sha256_final(l->sha, digest);
    if (r < 0)
        return berth_error_set(reterr, r, "hashing layer %u", l->x->layer);
    if (memcmp(digest, diff_id, BERTH_SHA256_LEN) != 0) {
        char want[BERTH_DIGEST_BUFSZ], got[BERTH_DIGEST_BUFSZ];
        berth_digest_format(diff_id, want);
        berth_digest_format(digest, got);
        return berth_image_refuse(reterr, BERTH_IMAGE_DIFFID_MISMATCH, "layer %u is %s, config says %s", l->x->layer,
                                  got, want);
    }
    return apply_modes(l, reterr);
}

int berth_extract_layer(struct berth_extract *x, int blobfd, enum berth_layer_compression compression,
                        const uint8_t diff_id[BERTH_SHA256_LEN], struct berth_error *reterr)
{
    struct layer l = {.x = x, .blobfd = blobfd};
    int r;

    if (!x || blobfd < 0 || !diff_id || (compression != BERTH_LAYER_TAR && compression != BERTH_LAYER_GZIP))
        return berth_error_set(reterr, -EINVAL, "bad arguments");
    l.buf = malloc(CHUNK);
    l.zbuf = malloc(CHUNK);
    l.explicit = json_object();
    l.touched = json_object();
    r = berth_sha256_new(&l.sha);
    if (r >= 0)
        r = berth_tarwalk_new(&l.walk);
    if (r >= 0 && (!l.buf || !l.zbuf || !l.explicit || !l.touched))
        r = -ENOMEM;
    if (r >= 0 && compression == BERTH_LAYER_GZIP)
        r = berth_gzframe_new(&l.gz);
    if (r >= 0 && compression == BERTH_LAYER_GZIP)
        r = open_gzip(&l, reterr);
    if (r >= 0)
        r = read_layer(&l, diff_id, reterr);
    if (r == -ENOMEM)
        r = berth_error_set(reterr, r, "out of memory");
    layer_done(&l);
    if (r < 0)
        return r;
    x->layer++;
    return 0;
}
