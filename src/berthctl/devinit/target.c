/* SPDX-License-Identifier: MIT */
/* target.c -- DIR, the directory dev-init writes the installation into (devinit.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devinit.h"
#include "fsutil.h"
#include "macro.h"

const char *const devinit_subdir_names[SUB_COUNT] = {"tls", "keys", "pools", "state", "images", "runtime"};

void devinit_target_done(struct target *t)
{
    size_t i;

    free(t->dir);
    free(t->raw);
    berth_closep(&t->parent_fd);
    berth_closep(&t->dir_fd);
    for (i = 0; i < SUB_COUNT; i++)
        berth_closep(&t->sub_fd[i]);
}

/*
 * Normalise the absolute @path: drop empty and "." components and resolve
 * ".." textually.  Exact only for a path already opened with no symlink on
 * the way (so every component before a ".." is a real directory).
 */
static int normalise_path(const char *path, char **ret)
{
    _cleanup_free_ char *out = malloc(strlen(path) + 2);
    const char *p = path, *next;
    size_t len = 0, n;

    if (!out)
        return -ENOMEM;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        next = strchr(p, '/');
        n = next ? (size_t)(next - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the slash before the removed component */
        } else if (!(n == 1 && p[0] == '.')) {
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    *ret = TAKE_PTR(out);
    return 0;
}

char *devinit_path_join(const char *dir, const char *rel)
{
    char *s = NULL;

    if (asprintf(&s, "%s/%s", streq(dir, "/") ? "" : dir, rel) < 0)
        return NULL;
    return s;
}

int devinit_target_open(const char *abs_dir, struct target *t)
{
    const struct berth_file_expect expect = {
        .type = S_IFDIR,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 022,
        .mode = 0,
    };
    struct berth_error err = BERTH_ERROR_INIT;
    char *slash;
    int fd;

    t->raw = strdup(abs_dir);
    if (!t->raw)
        return bctl_error(VERB, "out of memory");
    /* Trailing slashes name the same directory; drop them to find the last component. */
    for (slash = t->raw + strlen(t->raw); slash > t->raw + 1 && slash[-1] == '/'; slash--)
        slash[-1] = '\0';

    fd = berth_open_trusted(t->raw, O_RDONLY | O_DIRECTORY, 0, &err);
    if (fd >= 0) {
        t->dir_fd = fd;
        if (berth_file_check(fd, t->raw, &expect, NULL, &err) < 0)
            return bctl_error(VERB, "%s; refusing to write an installation into it", err.message);
    } else if (fd == -ENOENT) {
        /* Create DIR in its parent, which must exist. */
        slash = strrchr(t->raw, '/');
        t->new_name = slash + 1;
        if (!berth_name_valid(t->new_name))
            return bctl_error(VERB, "%s", err.message);
        *slash = '\0';
        fd = berth_open_trusted(slash == t->raw ? "/" : t->raw, O_RDONLY | O_DIRECTORY, 0, &err);
        *slash = '/';
        if (fd < 0)
            return bctl_error(VERB, "cannot create %s: %s", t->raw, err.message);
        t->parent_fd = fd;
    } else {
        return bctl_error(VERB, "%s", err.message);
    }
    if (normalise_path(t->raw, &t->dir) < 0)
        return bctl_error(VERB, "out of memory");
    slash = strrchr(t->dir, '/');
    t->base = slash + 1;
    return BCTL_EXIT_OK;
}
