/* SPDX-License-Identifier: MIT */
/*
 * cgroup2.h -- reading and writing cgroup v2 groups below the cgroup2 mount
 * (BERTH_CGROUP2_ROOT): which group a process is in, whether a group holds
 * processes, killing every process of a group with cgroup.kill, moving a
 * process, and a group's controllers and interface files.  The
 * containment-systemd plugin and its launcher, runtime-oci's shim and the
 * qualification probes of contained backends share it.
 *
 * A group is named by its path below the mount, as /proc/PID/cgroup's
 * "0::" line and systemd's ControlGroup property write it: starting with
 * '/', without empty, "." or ".." components, at most 4000 bytes.  Every
 * group is opened from the mount without following symlinks
 * (berth_open_trusted()).  Source: Documentation/admin-guide/cgroup-v2.rst
 * (cgroup.procs, cgroup.events, cgroup.kill, cgroup.controllers,
 * cgroup.subtree_control, "No Internal Process Constraint"), proc(5)
 * (/proc/PID/cgroup).
 *
 * Every function is thread-safe (no state).  Writing needs the permissions
 * of the group's files (root, or the delegatee of a delegated subtree).
 */
#ifndef BERTH_CGROUP2_H
#define BERTH_CGROUP2_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <berth/error.h>

#define BERTH_CGROUP2_ROOT "/sys/fs/cgroup"
#define BERTH_CGROUP2_PATH_MAX 4000

/** berth_cgroup2_path_valid() - whether @path has the shape above. */
bool berth_cgroup2_path_valid(const char *path);

/**
 * berth_cgroup2_of() - the cgroup v2 group of process @pid (0: the caller),
 * from the "0::" line of /proc/PID/cgroup, as seen in the caller's cgroup
 * namespace.
 * @ret: receives the path (malloc'd; the caller frees it).
 * Return: 0; -ESRCH no such process; -ENOENT the process is in no cgroup v2
 * group (no valid "0::" line, as on a host without the unified hierarchy,
 * or a path outside the caller's cgroup namespace); -ENOMEM; -errno of
 * reading the file.
 */
int berth_cgroup2_of(pid_t pid, char **ret, struct berth_error *reterr);

/**
 * berth_cgroup2_populated() - whether @path or a group below it holds a
 * process ("populated" of its cgroup.events).
 * Return: 1 or 0; -ENOENT when the group does not exist (a group being
 * removed, ENODEV, counts as gone); -EINVAL a malformed @path; -EBADMSG a
 * cgroup.events without a "populated" line; -errno of open(2)/read(2).
 */
int berth_cgroup2_populated(const char *path, struct berth_error *reterr);

/**
 * berth_cgroup2_kill() - write "1" to @path's cgroup.kill (Linux 5.14:
 * SIGKILL to every process in the group and below, which no process can
 * ignore or escape by forking), then re-read its cgroup.events every 10 ms
 * until "populated 0" or the group is gone, for at most @timeout_ns
 * (nanoseconds, CLOCK_MONOTONIC).  Wake-ups through inotify or POLLPRI are
 * not used: they can be lost when the group is removed meanwhile.
 * Return: 0 when the group is empty or gone; -ETIMEDOUT it still holds
 * processes; -EOPNOTSUPP a kernel without cgroup.kill; -EINVAL a malformed
 * @path; -errno of a failing open or write.
 */
int berth_cgroup2_kill(const char *path, int64_t timeout_ns, struct berth_error *reterr);

/**
 * berth_cgroup2_move() - move process @pid (0: the caller) into
 * @path/@sub (@sub NULL: @path itself) by writing its number to the
 * group's cgroup.procs.  The number must stay the process's own during the
 * call: pass the caller, or a child it has not waited for.
 * Return: 0; -ENOENT the group does not exist; -EINVAL a malformed path;
 * -errno of the write (-ESRCH the process is gone, -EBUSY or -EOPNOTSUPP
 * the kernel's rules on where processes may live).
 */
int berth_cgroup2_move(const char *path, const char *sub, pid_t pid, struct berth_error *reterr);

/**
 * berth_cgroup2_has_controller() - whether the controller @name ("memory",
 * "pids", "cpu", ...) is listed in @path's cgroup.controllers, that is,
 * enabled for the group by its parent, so that its interface files
 * (memory.max, ...) exist in it.
 * Return: 1 or 0; -ENOENT no such group; -errno of reading the file.
 */
int berth_cgroup2_has_controller(const char *path, const char *name, struct berth_error *reterr);

/**
 * berth_cgroup2_write() - write @value to the interface file @file of the
 * group @path (for example "memory.max", "268435456"), in one write(2).
 * Return: 0; -ENOENT no such group or file (a controller not enabled for
 * the group); -EINVAL a malformed path or file name (it must be one name,
 * without '/'); -errno of the write (the kernel's -EINVAL for a value it
 * refuses, -EBUSY for a subtree_control change against the no internal
 * process constraint).
 */
int berth_cgroup2_write(const char *path, const char *file, const char *value, struct berth_error *reterr);

#endif /* BERTH_CGROUP2_H */
