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
        if (v > 0 && v != exclude)
            out[n++] = (pid_t)v;
    }
    return (int)n;
}

pid_t oci_session_of(pid_t pid)
{
    char path[64], buf[1024], *p, state;
    int ppid, pgrp, sid;
    ssize_t len;

    if (pid <= 0)
        return -ESRCH;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    len = read_small(path, buf, sizeof(buf));
    if (len < 0)
        return (pid_t)len;
    p = strrchr(buf, ')');
    if (!p || sscanf(p + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4 || sid <= 0)
        return -EBADMSG;
    return (pid_t)sid;
}
