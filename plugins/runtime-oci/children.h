/* SPDX-License-Identifier: MIT */
/*
 * children.h -- berth-oci-shim's child processes.  The shim is a child
 * subreaper (PR_SET_CHILD_SUBREAPER, prctl(2)): when the runtime's
 * `create` or `run --detach` exits, what it started becomes the shim's
 * child.  Some of it is the runtime's, started in the shim's own session
 * (runsc-gofer); some comes from a sandbox that made a session of its own
 * (setsid(2)), such as gVisor's ptrace stubs, which reach the shim only
 * when the sandbox ends and die with it.  The session tells them apart,
 * and it can be read from a zombie too.
 */
#ifndef BERTH_OCI_CHILDREN_H
#define BERTH_OCI_CHILDREN_H

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
 * oci_session_of() - the session id of process @pid: field 6 of
 * /proc/PID/stat (proc(5)), read past the last ')' so that a comm with
 * spaces or parentheses cannot shift it.  Works for a zombie.
 * Return: the session id (> 0); -ESRCH (no such process), -EBADMSG (a stat
 * line it cannot read), or another -errno of reading the file.
 */
pid_t oci_session_of(pid_t pid);

#endif
