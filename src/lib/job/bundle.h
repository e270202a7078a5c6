/* SPDX-License-Identifier: MIT */
/*
 * bundle.h -- the deny-all OCI runtime configuration every OCI backend of
 * berth runs a job with (OCI runtime-spec 1.0.2, config.md and
 * config-linux.md), and its exclusive publication into a bundle directory.
 *
 * What the configuration says, and why:
 *   process     args from the job; env = PATH (unless the pool's template
 *               sets it) and the template's env, sorted by name; cwd = the
 *               template's root; user = @uid:@gid (default 65534:65534), no
 *               additional groups; terminal false; noNewPrivileges; all
 *               five capability sets empty; rlimits NOFILE (@nofile), CORE 0
 *               and, when @nproc is set, NPROC (gVisor counts host tasks
 *               in pids.limit, so guest processes are bounded this way).
 *   root        @rootfs, read-only.
 *   mounts      /proc; /dev as a small tmpfs (root's, mode 0755: the job
 *               cannot write it) with /dev/pts; /sys read-only; /dev/shm
 *               and /tmp, size-bounded tmpfs (nosuid, nodev, noexec, mode
 *               1777) sharing limits.scratch_bytes
 *               (berth_bundle_writable_bounds()); /tmp/outputs, a bind
 *               (nosuid, nodev, noexec) of @outputs_dir, the per-job host
 *               tmpfs of limits.artifact_bytes the runtime plugin mounted
 *               (so that outputs can be read after the sandbox stopped),
 *               or, when that bound is 0, a read-only in-sandbox tmpfs (a
 *               bound of 0 always gives a read-only tmpfs: size=0 would
 *               mean no limit).  With inputs, /inputs is an empty
 *               read-only tmpfs (root's, mode 0755: the mount points of
 *               the inputs are made in it, not in the image, and the job
 *               can create nothing there) and every input is bound
 *               read-only (ro, nosuid, nodev, noexec) at its /inputs/...
 *               path.  Nothing else of the host: nothing
 *               the job writes reaches a host filesystem that is not a
 *               bounded tmpfs.
 *   linux       namespaces pid, ipc, uts, mount and network (a new, empty
 *               network namespace for both "none" and "loopback": a runtime
 *               that brings up lo gives loopback, nothing gives more;
 *               "restricted" and "open" are refused); resources memory
 *               (limits.memory_bytes), pids (@pids_ceiling, default
 *               limits.pids), cpu (quota = cpu_millis * 100 per 100,000 us
 *               period) and devices (deny all); maskedPaths and
 *               readonlyPaths as runc's defaults; optional cgroupsPath.
 *   hostname    "sandbox".  No hooks, no annotations, no host devices.
 * The document is built from the job and the effective manifest only, so
 * the same inputs always give the same bytes (canonical JSON).
 */
#ifndef BERTH_BUNDLE_H
#define BERTH_BUNDLE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "job.h"

#define BERTH_BUNDLE_DEFAULT_UID 65534
#define BERTH_BUNDLE_DEFAULT_NOFILE 1024
#define BERTH_BUNDLE_CONFIG_MAX (1024 * 1024) /**< largest config.json, bytes */

/*
 * The kernel rounds a tmpfs size= up to whole pages; sizes are rounded down
 * to this grain (the largest Linux page size), so a mount never holds more
 * than its limit on any host, and the same job gives the same bytes
 * everywhere (tmpfs in Documentation/filesystems/tmpfs.rst).
 */
#define BERTH_BUNDLE_TMPFS_GRAIN 65536
#define BERTH_BUNDLE_SHM_MAX (64LL * 1024 * 1024) /**< /dev/shm's share of scratch, at most */
#define BERTH_BUNDLE_OUTPUTS "/tmp/outputs"
#define BERTH_BUNDLE_INPUTS_NAME "inputs" /**< the inputs' directory, below "/" */
#define BERTH_BUNDLE_INPUTS "/" BERTH_BUNDLE_INPUTS_NAME

/*
 * A warm slot's bundle (docs/warm-slots.md): the container's process is
 * berth-slot-init, bound read-only at BERTH_BUNDLE_SLOT_INIT (in the /dev
 * tmpfs, so no image root needs a mount point).  The slot's container is
 * started when it is provisioned; the init then waits on its standard input,
 * one end of a socket pair whose other end only the runtime's supervisor
 * holds, for the claiming job's argv (a uint32_t length, then its strings,
 * each ending in a NUL byte, then end of file), and execs it.
 */
#define BERTH_BUNDLE_SLOT_INIT "/dev/.berth-slot-init"
#define BERTH_BUNDLE_SLOT_ARGV_MAX (256 * 1024) /**< bytes of the NUL-terminated strings */
#define BERTH_BUNDLE_SLOT_ARGC_MAX 4096

/**
 * berth_bundle_root_mount_points - the top-level directories the mounts of
 * every bundle are made on ("proc", "dev", "sys", "tmp", "inputs"; names
 * below "/"), NULL-terminated.  A root shared by several jobs gets them as
 * empty directories before it is sealed (rootcache.h), so that no runtime
 * has to create them in it.
 */
extern const char *const berth_bundle_root_mount_points[];

/**
 * struct berth_bundle_bounds - what the job can write into each writable
 * tmpfs, bytes (multiples of BERTH_BUNDLE_TMPFS_GRAIN; 0 = read-only).
 * @tmp + @shm <= limits.scratch_bytes; @outputs <= limits.artifact_bytes.
 */
struct berth_bundle_bounds {
    uint64_t tmp;     /* /tmp */
    uint64_t shm;     /* /dev/shm */
    uint64_t outputs; /* /tmp/outputs */
};

/**
 * berth_bundle_writable_bounds() - split the job's limits @l over its
 * writable mounts: /dev/shm gets a quarter of scratch_bytes (at most
 * BERTH_BUNDLE_SHM_MAX), /tmp the rest, /tmp/outputs artifact_bytes; each
 * rounded down to BERTH_BUNDLE_TMPFS_GRAIN.
 * Return: 0; -EINVAL when @l or @ret is NULL or a limit is negative.
 * Thread-safe.
 */
int berth_bundle_writable_bounds(const struct berth_limits *l, struct berth_bundle_bounds *ret);

/** struct berth_bundle_input - one job input, bound read-only at @guest_path. */
struct berth_bundle_input {
    const char *guest_path; /* "/inputs/..." as the job declares it */
    const char *host_path;  /* absolute path of the staged file on the host */
};

/**
 * struct berth_bundle_params - what a bundle is built from (all borrowed).
 * @job:          the sealed job (argv and limits).
 * @effective:    the effective manifest placement chose (the dispatch
 *                document's "effective": template {root, env},
 *                network_egress_class).
 * @rootfs:       root.path: the staged root filesystem, absolute or
 *                relative to the bundle directory (usually "rootfs").  It
 *                is the guest's "/", so @uid must be able to search it:
 *                keep the bundle directory private (0700) and the rootfs
 *                in it 0755 (image stages leave the directory they fill
 *                as they found it).
 * @inputs, @n_inputs: the staged inputs (one per job input), may be 0.
 * @outputs_dir:  absolute host path of the job's outputs tmpfs, bound at
 *                /tmp/outputs; required exactly when the job's outputs
 *                bound (berth_bundle_writable_bounds()) is not 0, NULL
 *                otherwise.
 * @uid, @gid:    the process identity; 0 means 65534 (so root can never be
 *                chosen).
 * @nofile:       RLIMIT_NOFILE (soft = hard); 0 means 1024.
 * @nproc:        RLIMIT_NPROC (soft = hard), or 0 for none.
 * @pids_ceiling: linux.resources.pids.limit; 0 means limits.pids.
 * @cgroups_path: linux.cgroupsPath, or NULL.
 * @slot_init:    NULL for a job's own bundle; for a warm slot's, the
 *                absolute host path of berth-slot-init: process.args is then
 *                [BERTH_BUNDLE_SLOT_INIT] instead of the job's argv (which
 *                is ignored) and the init is bound read-only there (see
 *                above).  Everything else is what the job's own bundle
 *                would be.
 */
struct berth_bundle_params {
    const struct berth_job *job;
    const json_t *effective;
    const char *rootfs;
    const struct berth_bundle_input *inputs;
    size_t n_inputs;
    const char *outputs_dir;
    uint32_t uid, gid;
    uint64_t nofile;
    uint64_t nproc;
    uint64_t pids_ceiling;
    const char *cgroups_path;
    const char *slot_init;
};

/**
 * berth_bundle_config() - build the OCI configuration for @p.
 * @ret: receives a new JSON object (json_decref()).
 * Return: 0; -EINVAL (NULL or malformed parameters: relative host paths,
 * an input path outside /inputs/, an @outputs_dir given for a job without
 * room for outputs or missing for one with it, a template root that is not an absolute
 * guest path, a relative cgroupsPath, a scratch_bytes below
 * BERTH_BUNDLE_TMPFS_GRAIN, which leaves /tmp no room); -EPROTONOSUPPORT when the egress class is wider than
 * loopback (this configuration cannot enforce it); -EBADMSG when @effective
 * lacks a member; -ENOMEM.  Thread-safe.
 */
int berth_bundle_config(const struct berth_bundle_params *p, json_t **ret, struct berth_error *reterr);

/**
 * berth_bundle_write() - write @config as config.json (canonical JSON, mode
 * 0600) into the bundle directory @bundle_dirfd, atomically and
 * exclusively: an existing config.json is never overwritten.
 * @bundle_dirfd: the job's private bundle directory, O_RDONLY|O_DIRECTORY.
 * Return: 0; -EEXIST when config.json exists (nothing is changed); the
 * errors of berth_publish_at().
 */
int berth_bundle_write(int bundle_dirfd, const json_t *config, struct berth_error *reterr);

#endif /* BERTH_BUNDLE_H */
