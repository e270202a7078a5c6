/* SPDX-License-Identifier: MIT */
/*
 * cgroup.h -- the job's cgroups, seen from the host: where the runtime puts
 * them, proof that they are empty (teardown), and what the memory
 * controller saw (OOM kills).  Not installed.
 *
 * Each job's config.json names linux.cgroupsPath "/berth/<tag>/<run_id>",
 * where <tag> is the first 16 hex digits of the SHA-256 of the backend's
 * state_directory (so that two backends, or two berthd instances in tests,
 * never share a group).  runsc (cgroup v1 on this host) creates that path
 * below every mounted hierarchy (/sys/fs/cgroup/memory, pids, cpu, freezer,
 * the named "systemd" one, ...) and puts runsc-gofer, runsc-sandbox and the
 * sandbox's ptrace stubs in it; crun, run by the shim in a mount namespace
 * without /sys/fs/cgroup/unified, does the same for the container's
 * processes.  On a pure cgroup v2 host the path is below /sys/fs/cgroup.
 * Source: OCI runtime-spec v1.0.2 config-linux.md "Cgroups Path"; kernel
 * Documentation/admin-guide/cgroup-v1/cgroups.rst (cgroup.procs) and
 * cgroup-v2.rst (cgroup.procs, cgroup.kill, memory.events).
 *
 * Functions here are thread-safe (no state) and need root for the drain.
 */
#ifndef BERTH_OCI_CGROUP_H
#define BERTH_OCI_CGROUP_H

#include <stdint.h>

#include <berth/error.h>

#define OCI_CGROUP_ROOT "/sys/fs/cgroup"
#define OCI_CGROUP_PATH_MAX 128

/**
 * oci_cgroup_path() - the job's linux.cgroupsPath into @buf
 * (OCI_CGROUP_PATH_MAX bytes): "/berth/<16 hex of sha256(@state_directory)>/@run_id".
 * Return: 0; -EINVAL when it does not fit; -errno from the digest.
 */
int oci_cgroup_path(const char *state_directory, const char *run_id, char buf[OCI_CGROUP_PATH_MAX]);

/**
 * oci_cgroup_drain() - prove that no process is left in the job's cgroup
 * @path (as oci_cgroup_path() made it) in any hierarchy mounted below
 * @root (OCI_CGROUP_ROOT; tests may pass another directory).  In every
 * hierarchy where the group (or a group below it) exists, each process
 * listed in cgroup.procs is sent SIGKILL (through a pidfd opened while it
 * is listed, so a recycled pid is never signalled) until the lists are
 * empty or @wait_ns (nanoseconds, CLOCK_MONOTONIC) passed; empty groups are
 * removed (rmdir, deepest first).  An absent group counts as empty.
 * Return: 0 when every hierarchy has no such group left; -EBUSY when a
 * process is still listed or a group cannot be removed (reterr names the
 * hierarchy and the first pid); -errno when a hierarchy cannot be read
 * (never 0 then: not knowing is not proof).
 */
int oci_cgroup_drain(const char *root, const char *path, int64_t wait_ns, struct berth_error *reterr);

/**
 * oci_cgroup_oom_kills() - how many processes the memory controller of
 * the job's cgroup @path (below @root) killed for being over its limit:
 * "oom_kill" of memory.events (v2, in @root or @root/unified) or of
 * memory.oom_control (v1, @root/memory; Linux >= 4.13).
 * Return: the count (>= 0); -ENOENT when no memory group of @path exists
 * (removed, or never made); -EBADMSG when the file has no oom_kill line.
 */
int64_t oci_cgroup_oom_kills(const char *root, const char *path);

#endif /* BERTH_OCI_CGROUP_H */
