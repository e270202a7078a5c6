/* SPDX-License-Identifier: MIT */
/*
 * outmount.h -- the per-job outputs tmpfs of the runtime-oci plugin.  Not
 * installed.
 *
 * A job that may write outputs (its outputs bound,
 * berth_bundle_writable_bounds(), is not 0) gets a tmpfs of its own at
 * STATE/jobs/<run_id>/outputs (jobdir.h), mounted by start() before the
 * shim runs and bound at /tmp/outputs in the sandbox (bundle.h): size= the
 * bound, nr_inodes=OCI_OUTPUTS_INODES, mode 0700, owned by the job's uid
 * and gid, nosuid, nodev, noexec.  A tmpfs lives in memory, so nothing the
 * job writes there reaches the host's disks, and writes past the bound fail
 * with ENOSPC inside the job.  It stays mounted after the sandbox stopped,
 * so that the shim can check the outputs and berthd can read them (even
 * after a berthd restart: the mount belongs to the mount namespace, not to
 * a process), until reap() unmounts it.  Thread-safe (no state).
 */
#ifndef BERTH_OCI_OUTMOUNT_H
#define BERTH_OCI_OUTMOUNT_H

#include <stdint.h>

#include <berth/error.h>

#define OCI_OUTPUTS_INODES 1024 /* files, directories and links the job may create there, the root included */

/**
 * oci_outputs_mount() - mount the outputs tmpfs on the empty directory
 * @name of @jobfd (fsopen(2), fsconfig(2), fsmount(2) and move_mount(2):
 * the target is reached through @jobfd, never resolved by path).
 * @bytes: size=, in bytes (> 0; the kernel rounds it up to whole pages,
 *         so pass a multiple of the page size to stay within a limit).
 * @uid, @gid: the owner of its root (the job's identity).
 * Return: 0; -EINVAL; the errno of the mount calls (-EPERM without
 * CAP_SYS_ADMIN).  Nothing is mounted on failure.
 */
int oci_outputs_mount(int jobfd, const char *name, uint64_t bytes, uint32_t uid, uint32_t gid,
                      struct berth_error *reterr);

/**
 * oci_outputs_mounted() - whether @name in @jobfd is the root of a mount
 * of its own (statx(2) STATX_ATTR_MOUNT_ROOT, else a device other than
 * @jobfd's).
 * Return: 1 a mount point; 0 a plain directory; -ENOENT absent; -ENOTDIR
 * not a directory; -errno.
 */
int oci_outputs_mounted(int jobfd, const char *name);

/**
 * oci_outputs_release() - unmount everything mounted on @name of @jobfd
 * (umount2(2) of @path, the same directory by absolute path, without
 * following a symlink; layer by layer, at most a few) and prove it: the
 * directory is then no mount point.  The directory itself stays (the
 * caller removes it).  Not lazy: a mount still in use (a descriptor
 * open_output() returned, a process with its working directory there) is
 * -EBUSY and stays mounted.
 * Return: 0 (also when nothing was mounted, or @name is absent); -EBUSY;
 * -EIO when it is still a mount point after the attempts; -errno.
 */
int oci_outputs_release(int jobfd, const char *name, const char *path, struct berth_error *reterr);

#endif /* BERTH_OCI_OUTMOUNT_H */
