/* SPDX-License-Identifier: MIT */
/*
 * jobdir.h -- the job directory the runtime-oci plugin and its shim
 * (berth-oci-shim) share.  Not installed.
 *
 * STATE/jobs/<run_id>/ (0700, created exclusively by start(): its existence
 * is the "this id was started" tombstone) holds
 *   shim.json     what the shim runs (written by the plugin, 0600):
 *                 {"id", "bundle", "runtime": [argv prefix: path and global
 *                  flags], "unmount": [paths], "deadline_ns": "<ns>",
 *                  "output_bytes": N, "bundle_params": {...} (binding.h),
 *                  "cgroup": linux.cgroupsPath (cgroup.h),
 *                  "isolation": "gvisor"|"native",
 *                  "broker_public_key": base64url or absent,
 *                  "create_args": [flags for create] or absent,
 *                  "contained": {"cgroup_limits_required": bool} for a job
 *                  of a backend bound to a containment (contained.c; then
 *                  no "cgroup": the runtime makes no group of its own, and
 *                  the job runs in its unit's payload group),
 *                  "outputs_mount": {"size", "nr_inodes", "uid", "gid"}
 *                  when start() mounts the outputs tmpfs (written before
 *                  it mounts it; a contained job's shim mounts it), absent
 *                  when the job has no room for outputs}
 *   dispatch.json the dispatch document start() received (0600): the shim
 *                 verifies its receipt and rebuilds config.json from it
 *   bundle/       the OCI bundle: config.json (root.path is berthd's staged
 *                 rootfs, outside this directory)
 *   outputs/      the job's outputs tmpfs (outmount.h), bound at
 *                 /tmp/outputs; mounted from start() until reap()
 *                 (bundle_params.outputs_dir names it); absent when the job
 *                 has no room for outputs (artifact_bytes under 64 KiB)
 *   captured/     (contained jobs) a copy of each declared output the
 *                 shim captured, named by its id, exactly the bytes its
 *                 digest in result.json names: the outputs tmpfs is in the
 *                 shim's own mount namespace, which berthd does not see, and
 *                 goes with the job; open_output() reads these until reap()
 *   lock          flock(2)ed by the shim for as long as it lives: a lock that
 *                 can be taken means no shim supervises the job any more
 *   control       a FIFO the shim reads: "cancel\n" asks it to kill the job
 *   sync          (contained jobs) a FIFO: the shim, started in the job's
 *                 unit, writes its one start line here (the fd 3 of an
 *                 uncontained shim); start() holds the reading end
 *   launched      (contained jobs) created exclusively by the first shim
 *                 that runs in the unit: a second launch (a restart of the
 *                 unit) finds it and runs nothing
 *   init.pid      the runtime's --pid-file
 *   stdout, stderr  what the job wrote, together at most output_bytes
 *   runtime.log   the runtime's own messages (everything but create's)
 *   started.json  {"started_at": "<ns>"} once `start` (or `run --detach`) succeeded
 *   result.json   the outcome, written once, atomically:
 *                 {"state": "exited"|"failed"|"cancelled"|"expired",
 *                  "exit_code": 0..255 or null, "reason": code or null,
 *                  "started_at": "<ns>" or null, "finished_at": "<ns>",
 *                  "outputs": [{"id", "digest", "size"}],
 *                  "output_error": {"id", "problem"} (only when one is
 *                  invalid; outputs is [] then)}
 *                 the outputs checked after the sandbox stopped
 *                 (outcheck.h), for a job that exited on its own.
 *                 started_at is when the shim asked the runtime to start
 *                 the job: before `run --detach` for a cold job (which
 *                 creates the container too), before `start` for a
 *                 contained one, at the claim for a warm slot; null when
 *                 it never may have started.  For a
 *                 job that declares no outputs it is written as soon as no
 *                 process of the job is left (the runtime's helpers
 *                 reaped, the job's cgroup drained), before `delete` (so
 *                 the result does not wait for the runtime's record of the
 *                 container to go)
 *   teardown      (empty) made just before such an early result.json and
 *                 removed when the teardown after it is done: a job whose
 *                 shim is gone while it is there is torn down by
 *                 `berth-oci-shim cleanup`, which keeps the result; reap()
 *                 waits for the shim, so it never sees it mid-teardown
 *   reaped        after reap(): everything else is gone (the outputs tmpfs
 *                 unmounted); inspect says -ENOENT, start says "already
 *                 started"; forget() removes it and the directory.
 *
 * STATE/slots/<slot_id>/ (0700, created exclusively by provision()) is a
 * warm slot (docs/warm-slots.md): the files of a job directory, built from
 * the slot document instead of a dispatch (the bundle in slot form,
 * binding.h), and
 *   slot.json     the slot document provision() received (0600)
 *   slot          the slot id: the container's id and its cgroup's name,
 *                 which stay the slot's after the claim
 *   claimed       a FIFO: the shim's answer ("started"/"failed") to claim()
 *   ready.json    {"created_at": "<ns>", "provision_ns": "<ns>"} once
 *                 `create` and `start` succeeded (berth-slot-init waits on
 *                 its standard input, one end of a socket pair whose other
 *                 end only the shim holds, for the job's argv): the slot
 *                 can be claimed
 *   result.json   a slot that ended without a job (state "failed", reason
 *                 slot_discarded, slot_expired, slot_lost, create_failed or
 *                 a binding reason)
 * The control FIFO takes "claim\n" (dispatch.json is in place) and
 * "discard\n".  claim() first renames the directory to STATE/jobs/<run_id>
 * (RENAME_NOREPLACE: the job's tombstone, as mkdir is for start()); from
 * then on it is that job's directory.  discard() removes the directory.
 */
#ifndef BERTH_OCI_JOBDIR_H
#define BERTH_OCI_JOBDIR_H

#define OCI_JOB_SHIM_CONFIG "shim.json"
#define OCI_JOB_DISPATCH "dispatch.json"
#define OCI_JOB_BUNDLE "bundle"
#define OCI_JOB_LOCK "lock"
#define OCI_JOB_CONTROL "control"
#define OCI_JOB_PIDFILE "init.pid"
#define OCI_JOB_STDOUT "stdout"
#define OCI_JOB_STDERR "stderr"
#define OCI_JOB_RUNTIME_LOG "runtime.log"
#define OCI_JOB_STARTED "started.json"
#define OCI_JOB_RESULT "result.json"
#define OCI_JOB_REAPED "reaped"
#define OCI_JOB_OUTPUTS "outputs"
#define OCI_JOB_SYNC "sync"
#define OCI_JOB_LAUNCHED "launched"
#define OCI_JOB_CAPTURED "captured"
#define OCI_JOB_TEARDOWN "teardown"
#define OCI_SLOT_DOC "slot.json"
#define OCI_SLOT_ID "slot"
#define OCI_SLOT_CLAIMED "claimed"
#define OCI_SLOT_READY "ready.json"
#define OCI_SLOT_MAX (256 * 1024) /* slot.json, bytes */

#define OCI_SHIM_CONFIG_MAX (64 * 1024)
#define OCI_RESULT_MAX (16 * 1024) /* room for 16 outputs */

/* The sync pipe from the shim to start(): fd 3 in the shim; one line. */
#define OCI_SHIM_SYNC_FD 3
#define OCI_SHIM_SYNC_STARTED "started\n"
#define OCI_SHIM_SYNC_FAILED "failed\n"
#define OCI_SHIM_SYNC_CREATED "created\n" /* a slot is ready */

/* The backend's sealed copy of its runtime (ocicfg.h, oci_pin_sealed_copy()),
 * when runtime-oci hands it to the shim: this environment variable holds
 * "FD DIGEST", the shim's descriptor number of the copy in decimal (the
 * descriptor after the sync pipe: 4 with it, 3 without), a space, and the
 * pinned digest ("sha256:<hex>") the copy was made for.  The shim takes it
 * only for a job whose pin has that digest and when oci_pin_sealed_check()
 * passes, runs the runtime from it, and removes the variable from its
 * environment. */
#define OCI_SHIM_RUNTIME_ENV "BERTH_OCI_RUNTIME_FD"

/* Exit status of the shim when another shim holds the job's lock. */
#define OCI_SHIM_EXIT_BUSY 75

#endif /* BERTH_OCI_JOBDIR_H */
