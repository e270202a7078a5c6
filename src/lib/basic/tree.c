/* SPDX-License-Identifier: MIT */
/*
 * tree.c -- berth_tree_clear(): remove everything below a directory
 * descriptor; see tree.h.
 *
 * The walk keeps an explicit stack of frames on the heap (never recursion,
 * never one descriptor per level): each frame lists the child directories
 * still to visit.  It descends with openat(O_NOFOLLOW | O_DIRECTORY) and
 * climbs back with openat("..") checked against the device and inode
 * recorded on the way down, so it neither follows a symlink nor leaves the
 * starting directory even if the tree is renamed under it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tree.h"
#include "macro.h"

struct frame {
    char **names; /* child directories to visit */
    size_t n, next;
    dev_t dev;
    ino_t ino;
};

struct walk {
    struct frame *frames;
    size_t depth, cap;
    int first; /* the first error, 0 if none */
    struct berth_error *reterr;
};

static void note(struct walk *w, int r, const char *what, const char *name)
{
    if (w->first == 0)
        w->first = berth_error_set(w->reterr, r, "%s \"%s\": %s", what, name, strerror(-r));
}

static void frame_free(struct frame *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->names[i]);
    free(f->names);
    f->names = NULL;
    f->n = f->next = 0;
}

static bool ensure_search_write(struct walk *w, int dirfd, const char *name, const struct stat *st)
{
    if ((st->st_mode & 0700) == 0700)
        return true;
    if (fchmodat(dirfd, name, (st->st_mode & 07777) | 0700, AT_SYMLINK_NOFOLLOW) < 0) {
        note(w, -errno, "chmod", name);
        return false;
    }
    return true;
}

/* Unlink every non-directory in @fd; list (and make accessible) its subdirectories in a new frame. */
static int push(struct walk *w, int fd)
{
    _cleanup_close_ int dfd = -1;
    struct frame f = {0};
    struct stat st;
    DIR *d;
    struct dirent *de;
    size_t cap = 0;

    if (fstat(fd, &st) < 0)
        return -errno;
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -errno;
    d = fdopendir(dfd);
    if (!d)
        return -errno;
    TAKE_FD(dfd);
    while ((errno = 0, de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno != ENOENT)
                note(w, -errno, "stat", de->d_name);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(fd, de->d_name, 0) < 0 && errno != ENOENT)
                note(w, -errno, "unlink", de->d_name);
            continue;
        }
        if (!ensure_search_write(w, fd, de->d_name, &st))
            continue;
        if (f.n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            char **nn = realloc(f.names, ncap * sizeof(*nn));
            if (!nn)
                goto nomem;
            f.names = nn;
            cap = ncap;
        }
        f.names[f.n] = strdup(de->d_name);
        if (!f.names[f.n])
            goto nomem;
        f.n++;
    }
    if (errno != 0)
        note(w, -errno, "readdir", ".");
    closedir(d);
    if (w->depth == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 16;
        struct frame *nf = realloc(w->frames, ncap * sizeof(*nf));
        if (!nf) {
            frame_free(&f);
            return -ENOMEM;
        }
        w->frames = nf;
        w->cap = ncap;
    }
    w->frames[w->depth++] = f;
    return 0;
nomem:
    closedir(d);
    frame_free(&f);
    return -ENOMEM;
}

static int walk(struct walk *w, int dirfd)
{
    _cleanup_close_ int cur = -1;
    struct stat st;
    int r;

    if (fstat(dirfd, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    if ((st.st_mode & 0700) != 0700 && fchmod(dirfd, (st.st_mode & 07777) | 0700) < 0)
        return -errno;
    cur = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0)
        return -errno;
    r = push(w, cur);
    if (r < 0)
        return r;

    while (w->depth > 0) {
        struct frame *top = &w->frames[w->depth - 1];
        struct frame *up;
        int next;

        if (top->next < top->n) {
            next = openat(cur, top->names[top->next], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (next < 0) {
                note(w, -errno, "opening", top->names[top->next]);
                top->next++;
                continue;
            }
            r = push(w, next);
            if (r < 0) {
                close(next);
                return r;
            }
            close(cur);
            cur = next;
            continue;
        }
        /* This directory is done: climb to its parent and remove it. */
        if (w->depth == 1)
            break;
        up = &w->frames[w->depth - 2];
        next = w->depth == 2 ? openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                             : openat(cur, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            return -errno;
        if (fstat(next, &st) < 0 || st.st_dev != up->dev || st.st_ino != up->ino) {
            close(next);
            return -EXDEV; /* the tree moved under the walk: stop rather than leave it */
        }
        frame_free(top);
        w->depth--;
        close(cur);
        cur = next;
        if (unlinkat(cur, up->names[up->next], AT_REMOVEDIR) < 0)
            note(w, -errno, "rmdir", up->names[up->next]);
        up->next++;
    }
    return 0;
}

int berth_tree_clear(int dirfd, struct berth_error *reterr)
{
    struct walk w = {.reterr = reterr};
    int r;

    if (dirfd < 0)
        return berth_error_set(reterr, -EINVAL, "no directory to clear");
    r = walk(&w, dirfd);
    for (size_t i = 0; i < w.depth; i++)
        frame_free(&w.frames[i]);
    free(w.frames);
    if (r < 0 && w.first == 0)
        return berth_error_set(reterr, r, "clearing tree: %s", strerror(-r));
    return w.first;
}
