/* SPDX-License-Identifier: MIT */
/*
 * drain.h -- a unit's cgroup (cgroup v2, Documentation/admin-guide/
 * cgroup-v2.rst): whether it holds processes, killing all of them with
 * cgroup.kill (Linux 5.14), and moving a process into its payload subgroup.
 * @cgroup is the unit's ControlGroup property: a path below the cgroup2
 * mount (/sys/fs/cgroup), starting with '/', without "." or ".." parts.
 */
#ifndef BERTH_CONTAINMENT_SYSTEMD_DRAIN_H
#define BERTH_CONTAINMENT_SYSTEMD_DRAIN_H

#include <stdint.h>
#include <sys/types.h>

#include <berth/error.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

/* cgroup_path_valid() - whether @cgroup has the shape above. */
int cgroup_path_valid(const char *cgroup);

/* cgroup_populated() - 1 when @cgroup or a group below it holds a
 * process, 0 when it holds none, -ENOENT when the group does not exist
 * (systemd removes an emptied unit's group; ENODEV while it goes counts as
 * gone).  Other errors: the errno of open(2) or read(2), -EBADMSG for a
 * cgroup.events without a "populated" line. */
int cgroup_populated(const char *cgroup, struct berth_error *reterr);

/* cgroup_drain() - write "1" to @cgroup's cgroup.kill (SIGKILL to every
 * process in it and below, which no process can ignore or escape by
 * forking), then poll its cgroup.events every 10 ms until "populated 0"
 * or the group is gone, for at most @timeout_ns.  0 when empty or gone;
 * -ETIMEDOUT still populated; -EOPNOTSUPP a kernel without cgroup.kill;
 * the errno of a failing open or write. */
int cgroup_drain(const char *cgroup, int64_t timeout_ns, struct berth_error *reterr);

/* cgroup_move() - write @pid to cgroup.procs of @cgroup + "/" + @sub. */
int cgroup_move(const char *cgroup, const char *sub, pid_t pid, struct berth_error *reterr);

#endif
