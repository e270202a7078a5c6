/* SPDX-License-Identifier: MIT */
/* cgroup.c -- the job's cgroups: path, teardown proof, OOM kills; see cgroup.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "clock.h"
#include "digest.h"
#include "macro.h"

#define PROCS_MAX 4096         /* pids looked at per group per round */
#define DRAIN_POLL_US 20000    /* between kill rounds, at most (from 1 ms, doubling) */
#define FILE_MAX (64 * 1024)   /* a cgroup control file read whole */
#define DEPTH_MAX 16           /* groups below the job's group */

int oci_cgroup_path(const char *state_directory, const char *run_id, char buf[OCI_CGROUP_PATH_MAX])
{
    char digest[BERTH_DIGEST_BUFSZ];
    int r, n;

    if (!state_directory || !run_id)
        return -EINVAL;
    if ((r = berth_digest_bytes(state_directory, strlen(state_directory), digest)) < 0)
        return r;
    /* digest is "sha256:<hex>": the tag is the first 16 hex digits. */
    n = snprintf(buf, OCI_CGROUP_PATH_MAX, "/berth/%.16s/%s", digest + 7, run_id);
    return n < 0 || n >= OCI_CGROUP_PATH_MAX ? -EINVAL : 0;
}

/* Read @name below @dirfd whole (at most FILE_MAX - 1 bytes) into a NUL-terminated malloc'd @ret. */
static int read_control(int dirfd, const char *name, char **ret)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_free_ char *buf = NULL;
    size_t n = 0;

    if (fd < 0)
        return -errno;
    if (!(buf = malloc(FILE_MAX)))
        return -ENOMEM;
    for (;;) {
        ssize_t k = read(fd, buf + n, FILE_MAX - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -errno;
        if (k == 0 || (n += (size_t)k) == FILE_MAX - 1)
            break;
    }
    buf[n] = '\0';
    *ret = TAKE_PTR(buf);
    return 0;
}

/* Whether @pid is listed in the cgroup.procs of @dirfd now. */
static int listed(int dirfd, pid_t pid)
{
    _cleanup_free_ char *text = NULL;
    char *p, *end;
    int r = read_control(dirfd, "cgroup.procs", &text);

    if (r < 0)
        return r;
    for (p = text; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (v == pid)
            return 1;
    }
    return 0;
}

/* One kill round over the group open at @dirfd and the groups below it:
 * SIGKILL to every listed process, rmdir of every empty child.  Adds the
 * processes still listed to *@left and remembers the first in *@first. */
static int kill_round(int dirfd, int depth, int *left, pid_t *first)
{
    _cleanup_free_ char *text = NULL;
    DIR *d;
    struct dirent *e;
    char *p, *end;
    int r, fd;

    if (depth > DEPTH_MAX)
        return -ELOOP;
    if ((r = read_control(dirfd, "cgroup.procs", &text)) < 0)
        return r;
    for (p = text; *p; p = end) {
        long v = strtol(p, &end, 10);
        int pfd;
        if (end == p)
            break;
        if (v <= 1)
            continue;
        if (!*first)
            *first = (pid_t)v;
        (*left)++;
        /* The pidfd names this very process; it is signalled only if it is still a member. */
        pfd = (int)syscall(SYS_pidfd_open, (pid_t)v, 0);
        if (pfd < 0)
            continue; /* gone already */
        if (listed(dirfd, (pid_t)v) == 1)
            (void)syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
        close(pfd);
    }
    fd = dup(dirfd);
    if (fd < 0)
        return -errno;
    d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -errno;
    }
    r = 0;
    while ((e = readdir(d))) {
        _cleanup_close_ int child = -1;
        if (e->d_type != DT_DIR || streq(e->d_name, ".") || streq(e->d_name, ".."))
            continue;
        child = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child < 0)
            continue; /* removed meanwhile */
        if ((r = kill_round(child, depth + 1, left, first)) < 0)
            break;
        (void)unlinkat(dirfd, e->d_name, AT_REMOVEDIR); /* fails (EBUSY) while it has members */
    }
    closedir(d);
    return r;
}

/* Drain the group @path of the hierarchy mounted at @hier (an open directory). */
static int drain_one(int hier, const char *hier_name, const char *path, int64_t until, struct berth_error *reterr)
{
    _cleanup_close_ int grp = openat(hier, path + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int left = 0, r;
    pid_t first = 0;

    if (grp < 0)
        return errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "cgroup %s%s: %m", hier_name, path);
    for (useconds_t nap_us = 1000;; nap_us = nap_us < DRAIN_POLL_US / 2 ? nap_us * 2 : DRAIN_POLL_US) {
        left = 0;
        first = 0;
        if ((r = kill_round(grp, 0, &left, &first)) < 0)
            return berth_error_set(reterr, r, "cgroup %s%s: %s", hier_name, path, strerror(-r));
        if (unlinkat(hier, path + 1, AT_REMOVEDIR) == 0 || errno == ENOENT)
            return 0;
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            break;
        usleep(nap_us);
    }
    if (left > 0)
        return berth_error_set(reterr, -EBUSY, "cgroup %s%s still holds %d process%s (pid %d)", hier_name, path, left,
                               left == 1 ? "" : "es", (int)first);
    return berth_error_set(reterr, -EBUSY, "cgroup %s%s cannot be removed: %m", hier_name, path);
}

int oci_cgroup_drain(const char *root, const char *path, int64_t wait_ns, struct berth_error *reterr)
{
    _cleanup_close_ int rootfd = -1;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, wait_ns);
    struct dirent *e;
    DIR *d;
    int r = 0, fd;

    if (!root || !path || path[0] != '/' || strstr(path, ".."))
        return berth_error_set(reterr, -EINVAL, "invalid cgroup path");
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return berth_error_set(reterr, -errno, "%s: %m", root);
    /* A pure cgroup v2 host: the root is the one hierarchy. */
    if (faccessat(rootfd, "cgroup.procs", F_OK, 0) == 0)
        return drain_one(rootfd, root, path, until, reterr);
    fd = dup(rootfd);
    if (fd < 0 || !(d = fdopendir(fd))) {
        if (fd >= 0)
            close(fd);
        return berth_error_set(reterr, -errno, "%s: %m", root);
    }
    /* v1 (and hybrid): every mounted hierarchy; "cpu" -> "cpu,cpuacct" links are skipped (DT_LNK). */
    while (r == 0 && (e = readdir(d))) {
        _cleanup_close_ int hier = -1;
        char name[300];
        if (e->d_type != DT_DIR || e->d_name[0] == '.')
            continue;
        hier = openat(rootfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (hier < 0 || faccessat(hier, "cgroup.procs", F_OK, 0) < 0)
            continue; /* not a mounted hierarchy */
        snprintf(name, sizeof(name), "%s/%s", root, e->d_name);
        r = drain_one(hier, name, path, until, reterr);
    }
    closedir(d);
    return r;
}

/* The number after "oom_kill " in @text, or -EBADMSG. */
static int64_t oom_kill_line(const char *text)
{
    const char *p = text;

    while ((p = strstr(p, "oom_kill "))) {
        if (p == text || p[-1] == '\n')
            return strtoll(p + 9, NULL, 10);
        p++;
    }
    return -EBADMSG;
}

int64_t oci_cgroup_oom_kills(const char *root, const char *path)
{
    static const char *const where[][2] = {
        {"memory", "memory.oom_control"}, {"unified", "memory.events"}, {".", "memory.events"}};

    if (!root || !path || path[0] != '/' || strstr(path, ".."))
        return -EINVAL;
    for (size_t i = 0; i < ELEMENTSOF(where); i++) {
        _cleanup_free_ char *dir = NULL, *text = NULL;
        _cleanup_close_ int fd = -1;
        if (asprintf(&dir, "%s/%s%s", root, where[i][0], path) < 0)
            return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || read_control(fd, where[i][1], &text) < 0)
            continue;
        return oom_kill_line(text);
    }
    return -ENOENT;
}
