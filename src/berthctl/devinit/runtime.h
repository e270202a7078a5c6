/* SPDX-License-Identifier: MIT */
/*
 * runtime.h -- the runtime-oci backend configuration that
 * "berthctl dev-init --runtime" writes for an installed OCI runtime.
 *
 * Only the runtimes berth is tested with are known: gVisor's runsc
 * (isolation "gvisor") and crun (isolation "native").  The settings are the
 * ones docs/runtime-oci.md explains and ../notes/platform-facts measured:
 * runsc with --network=none and the ptrace platform (KVM is not available
 * in a VM) and a pids ceiling, crun with the hybrid cgroup v1 "unified"
 * mount detached when the host has one.
 */
#ifndef BERTHCTL_DEVINIT_RUNTIME_H
#define BERTHCTL_DEVINIT_RUNTIME_H

#include <jansson.h>

#include <berth/error.h>

/**
 * bctl_runtime_config() - the "config" object of a runtime-oci backend for
 * the OCI runtime binary at @path.
 * @path:   absolute path of the runtime binary; its last component names
 *          the kind ("runsc" or "crun").  Opened with no symlink on the
 *          path (berth_open_trusted()), so the pin is of the file berthd
 *          will check.
 * @ret:    on success a new object (caller owns it) with "runtime" (the pin:
 *          path, sha256 of the contents, size in bytes, mode as four octal
 *          digits), "isolation" and the kind's settings; without
 *          "state_directory", which the caller adds.
 * @reterr: detail on failure.
 *
 * Return: 0; -EINVAL for a runtime that is not runsc or crun; -ENOENT,
 * -ELOOP, -EACCES and the other errors of opening and reading @path; the
 * refusals of berth_trusted_file_check() (fsutil.h), which runtime-oci
 * applies before it runs a runtime: -EBADFD (not a regular file), -EMLINK
 * (a second hard link), -EPERM (not owned by root or the caller, writable by
 * group or others, or below a directory that is not root's or the caller's
 * or is writable by group or others without the sticky bit), -EAGAIN
 * (replaced while it was checked); -ENOMEM.
 * Thread safety: none needed (no shared state).
 */
int bctl_runtime_config(const char *path, json_t **ret, struct berth_error *reterr);

#endif
