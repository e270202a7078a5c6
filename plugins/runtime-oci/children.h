/* SPDX-License-Identifier: MIT */
/*
 * children.h -- berth-oci-shim's child processes.  The shim is a child
 * subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)): when the runtime's
 * `create` or `run --detach` exits, what it started becomes the shim's
 * child.  Some of it is the runtime's, started in the shim's own session
 * (runsc-gofer); some comes from a sandbox that made a session of its own
 * (setsid(2)), such as gVisor's ptrace stubs, which reach the shim only
 * when the sandbox ends and die with it.  The session and the start time
 * tell them apart (newer runsc releases start the gofer in a session of
 * its own too, but before the sandbox), and both can be read from a
 * zombie.
 */
#ifndef BERTH_OCI_CHILDREN_H
#define BERTH_OCI_CHILDREN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/**
 * oci_children_list() - the children of the calling thread, from
 * /proc/self/task/TID/children (Documentation/filesystems/proc.rst), zombies
 * included, leaving out @exclude (0: none).
 * @out: room for @max pids; children past @max are not listed.
 *
 * The file lists the children of one thread: call it from the thread that
 * started them (the shim has one).  Thread-safe (no shared state).
 * Return: how many were stored; -errno of opening or reading the file.
 */
int oci_children_list(pid_t exclude, pid_t *out, size_t max);

/**
 * struct oci_proc_stat - what the shim reads of a process from
 * /proc/PID/stat (proc(5)), a zombie's included.
 * @state:       field 3: 'R', 'S', 'D', 'Z' (zombie), 'X' (dead), ...
 * @session:     field 6: the session id; 0 when the session's leader is
 *               not in the PID namespace of the /proc mount, or is the kernel's
 *               (a process whose ancestors never called setsid(2), such
 *               as the children of an init that did not, is in session 0).
 * @start_ticks: field 22: when it started, in clock ticks after boot
 *               (sysconf(_SC_CLK_TCK), 100 a second here): two processes
 *               started within one tick compare equal.
 * @exiting:     it has begun to exit: a zombie (or dead), or field 9, the
 *               task's flags, has PF_EXITING (0x4, include/linux/sched.h;
 *               set first thing in do_exit(), kernel/exit.c), as for a
 *               thread group leader whose other threads are still exiting.
 */
struct oci_proc_stat {
    char state;
    pid_t session;
    unsigned long long start_ticks;
    bool exiting;
};

/**
 * oci_proc_stat() - read @pid's /proc/PID/stat into *@ret, past the last
 * ')' so that a comm with spaces or parentheses cannot shift the fields.
 * Thread-safe.
 * Return: 0; -ESRCH (no such process, or @pid <= 0); -EBADMSG (a line it
 * cannot read); another -errno of reading the file.
 */
int oci_proc_stat(pid_t pid, struct oci_proc_stat *ret);

#endif
