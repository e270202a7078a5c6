/* SPDX-License-Identifier: MIT */
/* cgroup2.c -- cgroup v2 groups below the cgroup2 mount; see cgroup2.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup2.h"
#include "clock.h"
#include "fsutil.h"
#include "macro.h"

#define POLL_NS (10LL * 1000000LL)
#define PROC_CGROUP_MAX 65536

bool berth_cgroup2_path_valid(const char *path)
{
    const char *p;

    if (!path || path[0] != '/' || strlen(path) > BERTH_CGROUP2_PATH_MAX)
        return false;
    for (p = path; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0' ||
                                                             (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))))
            return false;
    return true;
}

/* The group's directory (@sub below it when not NULL): -ENOENT when it does not exist. */
static int open_group(const char *path, const char *sub, struct berth_error *reterr)
{
    _cleanup_free_ char *dir = NULL;
    int fd;

    if (!berth_cgroup2_path_valid(path) || (sub && (!sub[0] || strchr(sub, '/') || streq(sub, ".."))))
        return berth_error_set(reterr, -EINVAL, "not a cgroup path: %s%s%s", path ? path : "(null)", sub ? "/" : "",
                               sub ? sub : "");
    if (asprintf(&dir, "%s%s%s%s", BERTH_CGROUP2_ROOT, streq(path, "/") ? "" : path, sub ? "/" : "",
                 sub ? sub : "") < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    fd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, reterr);
    if (fd == -ENOENT || fd == -ENODEV)
        return berth_error_set(reterr, -ENOENT, "cgroup %s does not exist", dir);
    return fd;
}

int berth_cgroup2_of(pid_t pid, char **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_close_ int fd = -1;
    char proc[64];
    char *line, *save = NULL;
    size_t len = 0;
    int r;

    if (!ret || pid < 0)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    if (pid == 0)
        snprintf(proc, sizeof(proc), "/proc/self/cgroup");
    else
        snprintf(proc, sizeof(proc), "/proc/%d/cgroup", (int)pid);
    fd = open(proc, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, errno == ENOENT ? -ESRCH : -errno, "%s: %m", proc);
    if ((r = berth_read_fd(fd, PROC_CGROUP_MAX, &text, &len, reterr)) < 0)
        return r == -ESRCH ? r : berth_error_set(reterr, r, "%s: %s", proc, strerror(-r));
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        if (strncmp(line, "0::", 3) == 0 && berth_cgroup2_path_valid(line + 3))
            return (*ret = strdup(line + 3)) ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_error_set(reterr, -ENOENT, "%s: no cgroup v2 group (no valid 0:: line)", proc);
}

static int read_populated(int dirfd, const char *path, struct berth_error *reterr)
{
    char buf[512];
    const char *line;
    ssize_t n;
    _cleanup_close_ int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT || errno == ENODEV ? -ENOENT
                                                  : berth_error_set(reterr, -errno, "%s/cgroup.events: %m", path);
    n = read(fd, buf, sizeof(buf) - 1);
    if (n < 0)
        return errno == ENODEV ? -ENOENT : berth_error_set(reterr, -errno, "%s/cgroup.events: %m", path);
    buf[n] = '\0';
    for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, "populated ", 10) == 0)
            return line[10] == '1';
    return berth_error_set(reterr, -EBADMSG, "%s/cgroup.events has no populated line", path);
}

int berth_cgroup2_populated(const char *path, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(path, NULL, reterr);

    return dfd < 0 ? dfd : read_populated(dfd, path, reterr);
}

int berth_cgroup2_kill(const char *path, int64_t timeout_ns, struct berth_error *reterr)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, timeout_ns);
    _cleanup_close_ int dfd = open_group(path, NULL, reterr), kfd = -1;
    int r;

    if (dfd == -ENOENT)
        return 0;
    if (dfd < 0)
        return dfd;
    kfd = openat(dfd, "cgroup.kill", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (kfd < 0 && errno == ENOENT && read_populated(dfd, path, reterr) != -ENOENT)
        return berth_error_set(reterr, -EOPNOTSUPP, "%s has no cgroup.kill (Linux 5.14 added it)", path);
    if (kfd < 0 && errno != ENOENT && errno != ENODEV)
        return berth_error_set(reterr, -errno, "%s/cgroup.kill: %m", path);
    if (kfd >= 0 && write(kfd, "1", 1) != 1 && errno != ENODEV && errno != ENOENT)
        return berth_error_set(reterr, -errno, "writing %s/cgroup.kill: %m", path);
    for (;;) {
        r = read_populated(dfd, path, reterr);
        if (r == 0 || r == -ENOENT)
            return 0;
        if (r < 0)
            return r;
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            return berth_error_set(reterr, -ETIMEDOUT, "cgroup %s still holds processes %lld ms after cgroup.kill",
                                   path, (long long)(timeout_ns / 1000000));
        nanosleep(&(struct timespec){.tv_nsec = POLL_NS}, NULL);
    }
}

int berth_cgroup2_move(const char *path, const char *sub, pid_t pid, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(path, sub, reterr), fd = -1;
    char num[24];
    int n;

    if (dfd < 0)
        return dfd;
    if (pid < 0)
        return berth_error_set(reterr, -EINVAL, "no process %d", (int)pid);
    fd = openat(dfd, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "%s%s%s/cgroup.procs: %m", path, sub ? "/" : "", sub ? sub : "");
    n = snprintf(num, sizeof(num), "%d", (int)pid);
    if (write(fd, num, (size_t)n) != n)
        return berth_error_set(reterr, -errno, "moving pid %d into %s%s%s: %m", (int)pid, path, sub ? "/" : "",
                               sub ? sub : "");
    return 0;
}

int berth_cgroup2_has_controller(const char *path, const char *name, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(path, NULL, reterr), fd = -1;
    _cleanup_free_ char *text = NULL;
    char *tok, *save = NULL;
    size_t len = 0;
    int r;

    if (dfd < 0)
        return dfd;
    if (!name || !name[0])
        return berth_error_set(reterr, -EINVAL, "no controller name");
    fd = openat(dfd, "cgroup.controllers", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, errno == ENODEV ? -ENOENT : -errno, "%s/cgroup.controllers: %m", path);
    if ((r = berth_read_fd(fd, 4096, &text, &len, reterr)) < 0)
        return r;
    for (tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
        if (streq(tok, name))
            return 1;
    return 0;
}

int berth_cgroup2_write(const char *path, const char *file, const char *value, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(path, NULL, reterr), fd = -1;
    size_t n = value ? strlen(value) : 0;

    if (dfd < 0)
        return dfd;
    if (!file || !file[0] || strchr(file, '/') || file[0] == '.' || !value)
        return berth_error_set(reterr, -EINVAL, "invalid interface file or value");
    fd = openat(dfd, file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, errno == ENODEV ? -ENOENT : -errno, "%s/%s: %m", path, file);
    if (write(fd, value, n) != (ssize_t)n)
        return berth_error_set(reterr, -errno, "writing \"%s\" to %s/%s: %m", value, path, file);
    return 0;
}
