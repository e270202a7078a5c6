/* SPDX-License-Identifier: MIT */
/* children.c -- berth-oci-shim's child processes (children.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "children.h"
#include "macro.h"

/* PF_EXITING of the task flags (include/linux/sched.h), not in any uapi header. */
#define PF_EXITING_FLAG 0x00000004U

/* Read at most @size - 1 bytes of @path into @buf, NUL-terminated: the
 * length, or -errno. */
static ssize_t read_small(const char *path, char *buf, size_t size)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return errno == ENOENT ? -ESRCH : -errno;
    n = read(fd, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return n;
}

int oci_children_list(pid_t exclude, pid_t *out, size_t max)
{
    char path[64], buf[4096];
    size_t n = 0;
    ssize_t len;
    char *p, *end;

    snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)syscall(SYS_gettid));
    len = read_small(path, buf, sizeof(buf));
    if (len < 0)
        return (int)len;
    for (p = buf; n < max; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p)
            break;
        if (*end == '\0' && (size_t)len == sizeof(buf) - 1)
            break; /* cut by the buffer: not a whole pid */
        if (v > 0 && v != exclude)
            out[n++] = (pid_t)v;
    }
    return (int)n;
}

int oci_proc_stat(pid_t pid, struct oci_proc_stat *ret)
{
    char path[64], buf[1024], *p, state;
    int ppid, pgrp, sid, tty, tpgid;
    unsigned flags;
    unsigned long minflt, cminflt, majflt, cmajflt, utime, stime;
    long cutime, cstime, priority, nice, threads, itreal;
    unsigned long long start;
    ssize_t len;

    if (pid <= 0 || !ret)
        return -ESRCH;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    len = read_small(path, buf, sizeof(buf));
    if (len < 0)
        return (int)len;
    p = strrchr(buf, ')');
    if (!p ||
        sscanf(p + 1, " %c %d %d %d %d %d %u %lu %lu %lu %lu %lu %lu %ld %ld %ld %ld %ld %ld %llu", &state, &ppid,
               &pgrp, &sid, &tty, &tpgid, &flags, &minflt, &cminflt, &majflt, &cmajflt, &utime, &stime, &cutime,
               &cstime, &priority, &nice, &threads, &itreal, &start) != 20 ||
        sid < 0)
        return -EBADMSG;
    ret->state = state;
    ret->session = (pid_t)sid;
    ret->start_ticks = start;
    ret->exiting = state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG);
    return 0;
}
