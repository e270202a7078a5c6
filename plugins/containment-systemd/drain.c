/* SPDX-License-Identifier: MIT */
/*
 * drain.c -- cgroup v2 reads and writes of containment-systemd (see
 * drain.h).  Every group is reached from the cgroup2 mount without
 * following symlinks; wake-ups through inotify or POLLPRI on cgroup.events
 * can be lost when systemd removes the group, so waiting is a bounded poll
 * that re-reads the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <berth/cleanup.h>
#include <berth/file.h>

#include "clock.h"
#include "drain.h"
#include "fsutil.h"
#include "macro.h"

#define POLL_NS (10LL * 1000000LL)

int cgroup_path_valid(const char *cgroup)
{
    const char *p;

    if (!cgroup || cgroup[0] != '/' || strlen(cgroup) > 4000)
        return 0;
    for (p = cgroup; *p; p++)
        if (p[0] == '/' && (p[1] == '/' || (p[1] == '.' && (p[2] == '/' || p[2] == '\0' ||
                                                             (p[2] == '.' && (p[3] == '/' || p[3] == '\0'))))))
            return 0;
    return 1;
}

/* The group's directory: -ENOENT when it does not exist. */
static int open_group(const char *cgroup, const char *sub, struct berth_error *reterr)
{
    _cleanup_free_ char *path = NULL;
    int fd;

    if (!cgroup_path_valid(cgroup))
        return berth_error_set(reterr, -EINVAL, "not a cgroup path: %s", cgroup ? cgroup : "(null)");
    if (asprintf(&path, "%s%s%s%s", CGROUP_ROOT, cgroup, sub ? "/" : "", sub ? sub : "") < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    fd = berth_open_trusted(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, reterr);
    if (fd == -ENOENT || fd == -ENODEV)
        return berth_error_set(reterr, -ENOENT, "cgroup %s does not exist", path);
    return fd;
}

static int read_populated(int dirfd, const char *cgroup, struct berth_error *reterr)
{
    char buf[512];
    const char *line;
    ssize_t n;
    _cleanup_close_ int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return errno == ENOENT || errno == ENODEV ? -ENOENT
                                                  : berth_error_set(reterr, -errno, "%s/cgroup.events: %m", cgroup);
    n = read(fd, buf, sizeof(buf) - 1);
    if (n < 0)
        return errno == ENODEV ? -ENOENT : berth_error_set(reterr, -errno, "%s/cgroup.events: %m", cgroup);
    buf[n] = '\0';
    for (line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
        if (strncmp(line, "populated ", 10) == 0)
            return line[10] == '1';
    return berth_error_set(reterr, -EBADMSG, "%s/cgroup.events has no populated line", cgroup);
}

int cgroup_populated(const char *cgroup, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(cgroup, NULL, reterr);

    return dfd < 0 ? dfd : read_populated(dfd, cgroup, reterr);
}

int cgroup_drain(const char *cgroup, int64_t timeout_ns, struct berth_error *reterr)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, timeout_ns);
    _cleanup_close_ int dfd = open_group(cgroup, NULL, reterr), kfd = -1;
    int r;

    if (dfd == -ENOENT)
        return 0;
    if (dfd < 0)
        return dfd;
    kfd = openat(dfd, "cgroup.kill", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (kfd < 0 && errno == ENOENT && read_populated(dfd, cgroup, reterr) != -ENOENT)
        return berth_error_set(reterr, -EOPNOTSUPP, "%s has no cgroup.kill (Linux 5.14 added it)", cgroup);
    if (kfd < 0 && errno != ENOENT && errno != ENODEV)
        return berth_error_set(reterr, -errno, "%s/cgroup.kill: %m", cgroup);
    if (kfd >= 0 && write(kfd, "1", 1) != 1 && errno != ENODEV && errno != ENOENT)
        return berth_error_set(reterr, -errno, "writing %s/cgroup.kill: %m", cgroup);
    for (;;) {
        r = read_populated(dfd, cgroup, reterr);
        if (r == 0 || r == -ENOENT)
            return 0;
        if (r < 0)
            return r;
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            return berth_error_set(reterr, -ETIMEDOUT, "cgroup %s still holds processes %lld ms after cgroup.kill",
                                   cgroup, (long long)(timeout_ns / 1000000));
        nanosleep(&(struct timespec){.tv_nsec = POLL_NS}, NULL);
    }
}

int cgroup_move(const char *cgroup, const char *sub, pid_t pid, struct berth_error *reterr)
{
    _cleanup_close_ int dfd = open_group(cgroup, sub, reterr), fd = -1;
    char num[24];
    int n;

    if (dfd < 0)
        return dfd;
    fd = openat(dfd, "cgroup.procs", O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "%s/%s/cgroup.procs: %m", cgroup, sub);
    n = snprintf(num, sizeof(num), "%d", (int)pid);
    if (write(fd, num, (size_t)n) != n)
        return berth_error_set(reterr, -errno, "moving pid %d into %s/%s: %m", (int)pid, cgroup, sub);
    return 0;
}
