/* SPDX-License-Identifier: MIT */
/*
 * treesum.c -- berth_tree_sum(): entries, bytes and a metadata fingerprint
 * of a directory tree; see treesum.h.
 *
 * The walk keeps a heap stack of relative directory paths (no recursion, one
 * open directory at a time): each directory is opened below the root with
 * berth_open_beneath() (no symlink anywhere), its names are read and sorted,
 * every entry is fstatat'ed without following it and hashed, and its
 * subdirectories are pushed in reverse order so that they are visited in
 * sorted order.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "macro.h"
#include "treesum.h"

struct pending {
    char *path; /* relative to the root; "" for the root itself */
    unsigned depth;
};

struct walk {
    struct pending *stack;
    size_t n, cap;
    struct berth_sha256 *sha;
    struct berth_tree_sum *sum;
    struct berth_error *reterr;
};

static int push(struct walk *w, char *path, unsigned depth)
{
    if (w->n == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        struct pending *s = realloc(w->stack, cap * sizeof(*s));
        if (!s) {
            free(path);
            return -ENOMEM;
        }
        w->stack = s;
        w->cap = cap;
    }
    w->stack[w->n++] = (struct pending){path, depth};
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The sorted names of the directory @fd (borrowed), "." and ".." left out. */
static int read_names(int fd, char ***ret, size_t *ret_n)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d;
    int dfd = dup(fd);

    if (dfd < 0)
        return -errno;
    if (!(d = fdopendir(dfd))) {
        int r = -errno;
        close(dfd);
        return r;
    }
    errno = 0;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap) {
            char **v = realloc(names, (cap = cap ? cap * 2 : 32) * sizeof(*v));
            if (!v)
                goto nomem;
            names = v;
        }
        if (!(names[n] = strdup(de->d_name)))
            goto nomem;
        n++;
        errno = 0;
    }
    if (errno != 0) {
        int r = -errno;
        closedir(d);
        names_free(names, n);
        return r;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
    *ret = names;
    *ret_n = n;
    return 0;
nomem:
    closedir(d);
    names_free(names, n);
    return -ENOMEM;
}

/* Hash one entry's record: path NUL, ten little-endian u64, target NUL. */
static int hash_entry(struct walk *w, int dfd, const char *path, const char *name, const struct stat *st)
{
    uint64_t f[10] = {st->st_mode, st->st_uid, st->st_gid, (uint64_t)st->st_size, st->st_ino, st->st_nlink,
                      (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ctim.tv_sec,
                      (uint64_t)st->st_ctim.tv_nsec};
    uint8_t bytes[sizeof(f)];
    char target[PATH_MAX + 1];
    size_t tlen = 0;

    for (size_t i = 0; i < ELEMENTSOF(f); i++)
        for (size_t j = 0; j < 8; j++)
            bytes[i * 8 + j] = (uint8_t)(f[i] >> (8 * j));
    if (S_ISLNK(st->st_mode)) {
        ssize_t k = readlinkat(dfd, name, target, sizeof(target) - 1);
        if (k < 0)
            return berth_error_set(w->reterr, -errno, "cannot read the symlink %s: %m", path);
        tlen = (size_t)k;
    }
    target[tlen] = '\0';
    if (berth_sha256_update(w->sha, path, strlen(path) + 1) < 0 || berth_sha256_update(w->sha, bytes, sizeof(bytes)) < 0 ||
        berth_sha256_update(w->sha, target, tlen + 1) < 0)
        return berth_error_set(w->reterr, -EIO, "cannot hash the tree");
    w->sum->entries++;
    if (S_ISREG(st->st_mode))
        w->sum->bytes += (uint64_t)st->st_size;
    return 0;
}

/* The directory @path below @rootfd ("" for @rootfd itself): a descriptor or -errno. */
static int open_dir(int rootfd, const char *path)
{
    int fd;

    if (path[0] != '\0')
        return berth_open_beneath(rootfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, NULL);
    fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Hash every entry of the directory @p and push its subdirectories. */
static int visit(struct walk *w, int rootfd, const struct pending *p)
{
    _cleanup_close_ int fd = -1;
    char **names = NULL, **subdirs = NULL;
    size_t n = 0, n_sub = 0, i;
    int r;

    fd = open_dir(rootfd, p->path);
    if (fd < 0)
        return berth_error_set(w->reterr, fd, "cannot open the directory \"%s\": %s", p->path[0] ? p->path : ".",
                               strerror(-fd));
    if ((r = read_names(fd, &names, &n)) < 0)
        return berth_error_set(w->reterr, r, "cannot read the directory \"%s\": %s", p->path[0] ? p->path : ".",
                               strerror(-r));
    if (!(subdirs = calloc(n ? n : 1, sizeof(*subdirs)))) {
        names_free(names, n);
        return berth_error_set(w->reterr, -ENOMEM, "out of memory");
    }
    for (i = 0, r = 0; i < n && r == 0; i++) {
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (asprintf(&path, "%s%s%s", p->path, p->path[0] ? "/" : "", names[i]) < 0) {
            path = NULL;
            r = berth_error_set(w->reterr, -ENOMEM, "out of memory");
        } else if (fstatat(fd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
            r = berth_error_set(w->reterr, -errno, "cannot stat \"%s\": %m", path);
        } else if ((r = hash_entry(w, fd, path, names[i], &st)) == 0 && S_ISDIR(st.st_mode)) {
            subdirs[n_sub++] = TAKE_PTR(path);
        }
    }
    names_free(names, n);
    if (r == 0 && n_sub > 0 && p->depth + 1 > BERTH_TREESUM_MAX_DEPTH)
        r = berth_error_set(w->reterr, -ELOOP, "the tree is nested deeper than %d directories",
                            BERTH_TREESUM_MAX_DEPTH);
    /* Reverse order onto the stack: popped back in sorted order. */
    while (n_sub > 0) {
        char *s = subdirs[--n_sub];
        if (r == 0) {
            if ((r = push(w, s, p->depth + 1)) < 0)
                r = berth_error_set(w->reterr, r, "out of memory");
        } else {
            free(s);
        }
    }
    free(subdirs);
    return r;
}

int berth_tree_sum(int dirfd, struct berth_tree_sum *ret, struct berth_error *reterr)
{
    struct walk w = {.sum = ret, .reterr = reterr};
    char *root = strdup("");
    int r;

    *ret = (struct berth_tree_sum){0};
    if (!root)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (berth_sha256_new(&w.sha) < 0) {
        free(root);
        return berth_error_set(reterr, -EIO, "cannot hash the tree");
    }
    r = push(&w, root, 0);
    while (r == 0 && w.n > 0) {
        struct pending p = w.stack[--w.n];
        r = visit(&w, dirfd, &p);
        free(p.path);
    }
    if (r == 0 && berth_sha256_final(w.sha, ret->fingerprint) < 0)
        r = berth_error_set(reterr, -EIO, "cannot hash the tree");
    while (w.n > 0)
        free(w.stack[--w.n].path);
    free(w.stack);
    berth_sha256_free(w.sha);
    return r;
}
