/* SPDX-License-Identifier: MIT */
/*
 * berth/plugin.h -- the berth plugin ABI, version 1.
 *
 * A berth plugin is a shared object installed as "<name>.so" (its descriptor's
 * name plus ".so") that needs to export only one symbol,
 *
 *     const struct berth_plugin *berth_plugin_entry(void);
 *
 * returning a descriptor with static storage duration.  berthd loads plugins
 * from its plugin directory (`pkg-config --variable=plugindir berth-plugin`),
 * checks the descriptor, and only then calls init().  A plugin is code; a
 * *backend* is a named, configured instance of a plugin in berthd's
 * configuration, and one plugin may back several backends (one init() per
 * backend, each with its own state).
 *
 * Build a plugin with
 *
 *     cc $(pkg-config --cflags berth-plugin) -fPIC -shared \
 *        -Wl,--no-undefined -o my-plugin.so my-plugin.c
 *
 * or with libtool `-module -avoid-version -shared -Wl,--no-undefined
 * -export-symbols-regex '^berth_plugin_entry$$'`.  The loader maps the very
 * file it checked by opening it through /proc/self/fd, so `$ORIGIN` in a
 * plugin's RPATH/RUNPATH does not name the plugin directory: link other
 * libraries from the standard search path, or statically.  A plugin does not link
 * against libberth: everything it needs from the core arrives through the
 * host table (struct berth_host).  Start from the skeleton under
 * tests/plugins/skeleton/ of the source tree, which uses nothing but this
 * ABI and is built against the installed headers by "make distcheck".
 *
 * The in-tree plugins (runtime-oci, image-oci-local) are the exception, as
 * Slurm's and crun's own plugins are: they are built with berth and link
 * berth's internal library (libberth) statically, so they may call its
 * functions directly.  libberth is not installed and has no installed
 * headers: its C API is internal to berth and may change in any release.
 * Only this header, the other <berth/...> headers and the host table are
 * the interface a plugin written elsewhere can rely on.
 *
 * Compatibility rules
 *   - The first two descriptor fields (abi_version, struct_size) never move.
 *   - The loader accepts a plugin whose ABI major equals the core's and whose
 *     minor is not newer than the core's (a minor bump only appends).
 *   - Ops tables and the host table only grow at the end.  The core copies
 *     min(ops_size, sizeof(its table)) bytes into a zeroed table, so a newer
 *     core sees an older plugin's missing functions as NULL; a plugin must
 *     check host->struct_size before using a host function added after v1.0.
 *   - No third-party type crosses the ABI.  Structured data crosses as
 *     canonical JSON bytes passed as (pointer, length): RFC 8785 restricted to
 *     integers in +/-(2^53-1) -- no whitespace, members sorted by UTF-16 code
 *     units, only the required string escapes.  Input JSON need not be
 *     NUL-terminated; host->canonicalize() produces and checks the form.
 *   - ABI 1.0 fixes the functions, their arguments and return codes; 1.1
 *     appends ops (each says so) and keeps everything of 1.0.  The
 *     JSON documents runtime plugins exchange with berthd (dispatch, inspect)
 *     carry their own schema_version; version 1 is specified with struct
 *     berth_runtime_ops_v1 below.  A plugin ignores members it does not know
 *     in what berthd sends, and berthd ignores unknown members in inspect.
 *
 * Calling conventions
 *   - Every function returns 0 (or a documented non-negative value) on
 *     success and exactly a negative errno on failure.  `reterr` may be NULL;
 *     when it is not, a failing function fills it (see <berth/error.h>).
 *   - Buffers a function returns through `char **ret_json` are allocated with
 *     malloc(3) and owned by the caller, who releases them with free(3).
 *     Nothing is written to a ret_ argument on failure.
 *   - Absence is reported as -ENOENT only when it is *confirmed*; when a
 *     plugin cannot tell, it returns another error (-EIO, -ETIMEDOUT, ...).
 *   - Job ids are NUL-terminated strings of at most 128 bytes from
 *     [A-Za-z0-9._-].
 *
 * Threading
 *   Different instances may be called concurrently, so a plugin must keep
 *   all mutable data in its state, never in globals.  Within one instance
 *   (one state pointer) the core never calls from two threads at once,
 *   with one exception since ABI 1.1: a runtime plugin whose ops table sets
 *   BERTH_RUNTIME_CONCURRENT in `flags` declares that every op of its
 *   runtime instances may be called from several threads at once, also
 *   for the same job id (berthd starts, stops and reaps jobs on several
 *   threads; it still never runs start and cancel of one job at the same
 *   time).  Without the flag -- a 1.0 plugin, or a 1.1 plugin that leaves
 *   `flags` 0 -- the core serializes every call into the instance, as in
 *   1.0.  Image sources, evidence stores and containment instances are
 *   always called one thread at a time.  The host functions (struct
 *   berth_host) may be called from any thread.
 */
#ifndef BERTH_PLUGIN_H
#define BERTH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>
#include <berth/file.h>
#include <berth/log.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------- */
/* Versions                                                                   */

/** ABI major version: bumped only for incompatible changes. */
#define BERTH_PLUGIN_ABI_MAJOR 1
/** ABI minor version: bumped when something is appended. */
#define BERTH_PLUGIN_ABI_MINOR 5
/** Pack a major and minor version the way struct berth_plugin stores them. */
#define BERTH_PLUGIN_ABI_PACK(major, minor) ((uint32_t)(((major) << 16) | ((minor)&0xffff)))
/** The ABI version this header describes, packed as major << 16 | minor. */
#define BERTH_PLUGIN_ABI_VERSION BERTH_PLUGIN_ABI_PACK(BERTH_PLUGIN_ABI_MAJOR, BERTH_PLUGIN_ABI_MINOR)
/** Major part of a packed ABI version. */
#define BERTH_PLUGIN_ABI_MAJOR_OF(v) ((uint32_t)(v) >> 16)
/** Minor part of a packed ABI version. */
#define BERTH_PLUGIN_ABI_MINOR_OF(v) ((uint32_t)(v)&0xffff)

/** Name of the one symbol a plugin exports. */
#define BERTH_PLUGIN_ENTRY_SYMBOL "berth_plugin_entry"

/** Size of a buffer that holds "sha256:" + 64 hex digits + NUL. */
#define BERTH_DIGEST_BUFSZ 72

/* ------------------------------------------------------------------------- */
/* Plugin kinds                                                               */

/**
 * enum berth_plugin_kind - what a plugin provides; selects its ops table.
 * @BERTH_PLUGIN_RUNTIME:        runs jobs in sandboxes (struct berth_runtime_ops_v1).
 * @BERTH_PLUGIN_IMAGE_SOURCE:   resolves and stages OCI images (struct berth_image_source_ops_v1).
 * @BERTH_PLUGIN_EVIDENCE_STORE: stores job inputs and outputs (struct berth_evidence_store_ops_v1).
 * @BERTH_PLUGIN_CONTAINMENT:    confines host processes in cgroups/units (struct berth_containment_ops_v1).
 */
enum berth_plugin_kind {
    BERTH_PLUGIN_RUNTIME = 1,
    BERTH_PLUGIN_IMAGE_SOURCE = 2,
    BERTH_PLUGIN_EVIDENCE_STORE = 3,
    BERTH_PLUGIN_CONTAINMENT = 4,
};

/* ------------------------------------------------------------------------- */
/* Host table: core services offered to plugins                               */

/** Clock ids for berth_host.now_ns. */
#define BERTH_CLOCK_REALTIME 0  /**< nanoseconds since the Unix epoch (trusted host clock) */
#define BERTH_CLOCK_MONOTONIC 1 /**< nanoseconds since an arbitrary start; never jumps */

/**
 * struct berth_host - services the core lends to one plugin instance.
 *
 * The core builds one table per instance and keeps it alive until after
 * fini() returns, so a plugin may store the pointer in its state.  All
 * functions are safe to call from any thread the core calls the plugin on.
 *
 * @struct_size: sizeof(struct berth_host) as compiled into the core.  A field
 *               exists only if its end is within struct_size.
 * @abi_version: the core's packed ABI version.
 * @instance:    the backend name this instance serves (for example "runsc");
 *               an empty string when the core has no name for it.
 * @host_data:   opaque core data; do not touch.
 *
 * @log:     log one line at a BERTH_LOG_* level; the core adds the instance
 *           name.  Never pass secrets.  The line is cut at 1 KiB.
 * @now_ns:  read BERTH_CLOCK_REALTIME or BERTH_CLOCK_MONOTONIC in nanoseconds;
 *           returns -EINVAL for an unknown clock, and another negative errno
 *           if the clock cannot be read (a plugin fails what needed the
 *           time, or treats a deadline as passed).
 * @digest:  write "sha256:<64 lowercase hex>" of @len bytes at @data into
 *           @ret_digest (BERTH_DIGEST_BUFSZ bytes).  Returns 0, -EINVAL
 *           (NULL arguments) or -EIO (the crypto library failed).
 * @canonicalize: parse @len bytes of JSON strictly (duplicate keys, floats,
 *           -0, integers beyond +/-(2^53-1), invalid UTF-8, NUL in strings,
 *           nesting over 32 and documents over @max_bytes are errors) and
 *           return its canonical serialisation (RFC 8785 restricted to
 *           integers) in a malloc'd, NUL-terminated buffer.  Returns 0,
 *           -EFBIG (over @max_bytes), -EBADMSG (not acceptable JSON; reterr
 *           names the byte offset or member), -ENOMEM, -EINVAL.
 * @open_beneath: open @path relative to @dirfd without following any
 *           symlink and without leaving @dirfd (openat2(2) with
 *           RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), O_CLOEXEC added.
 *           Returns the new descriptor or a negative errno: -ELOOP (a
 *           symlink on the way), -EXDEV (the path leaves @dirfd), or
 *           whatever openat2(2) reported.
 * @read_file: open @path beneath @dirfd as above, check it against @expect
 *           (see <berth/file.h>) and read it whole into a malloc'd,
 *           NUL-terminated buffer (the NUL is not counted in *ret_len).
 *           Returns 0, -EFBIG (larger than expect->max_size), -EPERM (owner
 *           or mode wrong), -EMLINK (more than one link), -EBADFD (wrong file
 *           type), or an open/read error.
 * @publish_file: write @len bytes to a new file @name (one path component)
 *           in directory @dirfd atomically: exclusive temporary file in the
 *           same directory, fchmod(@mode), fsync, rename into place, fsync of
 *           the directory.  Without BERTH_PUBLISH_REPLACE in @flags an
 *           existing @name is never touched and -EEXIST is returned.  On any
 *           failure the temporary file is removed and @name is unchanged.
 *
 * Appended in ABI 1.1 (present only when host->struct_size reaches its end,
 * see BERTH_HOST_HAS()):
 *
 * @job_changed: tell the core that the state of job @job_id of this
 *           instance may have changed (for a runtime: it exited, failed or
 *           its sandbox went away), so that the core looks at it soon
 *           instead of at its next reconcile pass.  @job_id is the id the
 *           core passed to start() (at most 128 bytes of [A-Za-z0-9._-]),
 *           or (ABI 1.2) the slot_id of a warm slot provision() made, when
 *           that slot ended or its sandbox died while idle: the core then
 *           lists slots() at once; anything else, and an id the instance
 *           does not run, is ignored.  May be called from any thread -- one of the core's
 *           during an op, or a thread of the plugin's own -- at any time
 *           between the return of init() and the call of fini() (not from
 *           within fini), as often as the plugin likes: calls for a job the
 *           core has not looked at yet are coalesced into one look.  It
 *           never blocks for long (it takes a short internal lock and
 *           wakes the core's backend thread), never fails, allocates
 *           nothing the plugin must free and never calls back into the
 *           plugin: the core later calls inspect() (and what follows from
 *           it) from its own thread, as on any reconcile pass, and the
 *           call does not wait for that, so a plugin may hold its own locks
 *           while it calls job_changed.  It is
 *           a hint, not a transfer of state: the plugin's inspect() stays
 *           the only truth, and a call that is lost (before the core is
 *           ready, when its queue is full, or one the plugin never made)
 *           only costs the time until the reconcile timer's next pass,
 *           which keeps polling every job, notified or not.  A plugin built
 *           for ABI 1.0 never calls it and is polled as before.
 *
 * Appended in ABI 1.4:
 *
 * @containment: the containment instance the operator bound to this
 *           instance (berthd.json(5): a runtime backend's "containment"
 *           member), for a runtime that runs its jobs' host-side processes
 *           in it (docs/containment.md).  On 0, *@ret_ops is an ops table of
 *           the core's, valid for *@ret_ops_size bytes (at least
 *           BERTH_CONTAINMENT_OPS_V1_0_SIZE: check a member appended later
 *           against it, and for NULL, as with any ops table), and *@ret_state
 *           is the state to pass as each op's first argument.  The core's ops
 *           forward to the containment plugin, one call at a time: they may
 *           be called from any thread, at once, and a call waits for the one
 *           in progress (containment-systemd's destroy: up to its drain
 *           timeout, 10 s by default).  Both stay valid from before init()
 *           is called until fini() has returned, and every call of
 *           containment returns the same table and state.  Returns 0,
 *           -ENOENT (no containment is bound to this instance: it runs its
 *           jobs as it always did), or -EINVAL (NULL arguments).  A runtime
 *           that cannot run its jobs contained must refuse init() when this
 *           returns 0, never run them uncontained.  The containment job id
 *           of each job is its run id (the job id of the runtime ops):
 *           berthd's recovery scans (before admission opens, then every
 *           containment_scan_interval_ns) look each listed unit up by it
 *           and fence every unit whose job is unknown or has ended.  So a
 *           contained runtime creates a unit only for a job, under its run
 *           id, never one for a warm slot before its claim (provision):
 *           the scans would fence it as a unit no job accounts for.
 */
struct berth_containment_ops_v1;

struct berth_host {
    uint32_t struct_size;
    uint32_t abi_version;
    const char *instance;
    void *host_data;

    void (*log)(const struct berth_host *host, int level, const char *fmt, ...) BERTH_PRINTF(3, 4);
    int64_t (*now_ns)(const struct berth_host *host, int clock);
    int (*digest)(const struct berth_host *host, const void *data, size_t len, char ret_digest[BERTH_DIGEST_BUFSZ]);
    int (*canonicalize)(const struct berth_host *host, const char *json, size_t len, size_t max_bytes, char **ret_json,
                        size_t *ret_len, struct berth_error *reterr);
    int (*open_beneath)(const struct berth_host *host, int dirfd, const char *path, int flags, uint32_t mode,
                        struct berth_error *reterr);
    int (*read_file)(const struct berth_host *host, int dirfd, const char *path, const struct berth_file_expect *expect,
                     char **ret_buf, size_t *ret_len, struct berth_error *reterr);
    int (*publish_file)(const struct berth_host *host, int dirfd, const char *name, const void *data, size_t len,
                        uint32_t mode, uint32_t flags, struct berth_error *reterr);
    /* ABI 1.1 */
    void (*job_changed)(const struct berth_host *host, const char *job_id);
    /* ABI 1.4 */
    int (*containment)(const struct berth_host *host, const struct berth_containment_ops_v1 **ret_ops,
                       size_t *ret_ops_size, void **ret_state);
};

/**
 * BERTH_HOST_HAS() - whether the host table @host (a const struct
 * berth_host *) has the member @field: its end lies within
 * host->struct_size, so a core older than the member never made it.  Use it
 * before calling a member appended after ABI 1.0, for example
 * `if (BERTH_HOST_HAS(host, job_changed) && host->job_changed) ...`.
 */
#define BERTH_HOST_HAS(host, field)                                                                                    \
    ((host)->struct_size >= offsetof(struct berth_host, field) + sizeof((host)->field))

/* ------------------------------------------------------------------------- */
/* Ops tables, one per kind.  Every member listed is required (non-NULL) in   */
/* v1 unless it says otherwise.                                               */

/**
 * struct berth_runtime_ops_v1 - a sandbox runtime backend.
 *
 * @capabilities: describe the backend as a JSON object: `backend` (what
 *     drives the sandboxes, e.g. "oci" for an OCI runtime CLI), `isolation` ("gvisor", "native", ...), `egress_classes`
 *     it can enforce (subset of "none", "loopback", "restricted", "open"),
 *     `capabilities` (names such as "exec", "file_rw"; since ABI 1.1
 *     "inputs": the backend bind-mounts the staged inputs of the dispatch's
 *     inputs_dir read-only, and "outputs": it captures declared outputs,
 *     reports them in inspect and implements open_output; berthd places a
 *     job with inputs or outputs only on a backend that reports the
 *     matching name), `limits` (maxima it
 *     can enforce) and `qualification` ({"id", "expires_ns"} or
 *     "unqualified").  Placement trusts only what this reports.  A backend
 *     that drives a runtime binary also reports `runtime` ({"path",
 *     "version", "sha256"} of that binary) and may report `shim_sha256`
 *     (a helper program it runs as root): berthd then replaces
 *     `qualification` with what its journal holds for exactly that binary,
 *     helper and backend configuration (berthctl qualify), so a plugin's
 *     own claim never qualifies it.  An error here means the backend gets
 *     no work until it answers again.  A backend that answers but cannot
 *     take jobs now reports `unavailable`: a reason code of 1 to 48
 *     characters of [a-z_] (runtime-oci: "containment_unreachable", its
 *     bound containment's manager cannot be reached); placement then skips
 *     it with that code as its reason in the placement receipt's
 *     selector_inputs, and berthctl qualify runs no probe.  A backend
 *     bound to a containment (host->containment) may describe it under
 *     `containment` (runtime-oci: the containment's own capabilities, or
 *     {"error": why} while it is unavailable).
 * @start: start the job described by @dispatch, the canonical JSON dispatch
 *     document, schema_version 1:
 *
 *       {"schema_version": 1,
 *        "receipt":   {"receipt": {...}, "signature": "..."},
 *        "job":       {the sealed job, schema v1},
 *        "effective": {the effective pool manifest placement chose:
 *                      template {root, env, timeout_seconds},
 *                      capabilities, network_egress_class, ...},
 *        "rootfs":    absolute path of the job's image, staged by berthd
 *                     from its image source (a directory, mode 0755, in a
 *                     private directory berthd owns; the plugin must not
 *                     modify it: it is staged once per image and shared
 *                     by every job of that image, so it is mounted
 *                     read-only and nothing is created in it; absent when
 *                     berthd has no image source),
 *        "inputs_dir": (ABI 1.1) absolute path of a directory (mode 0700,
 *                     root's) berthd made for this job, holding one regular
 *                     file (mode 0444) per entry of job.inputs, named by
 *                     its index ("0", "1", ...) and already verified
 *                     against its ref's digest and size; absent when the
 *                     job has no inputs.  The plugin bind-mounts file i
 *                     read-only (ro, nosuid, nodev) at job.inputs[i].path
 *                     and never modifies or removes the directory: berthd
 *                     removes it after the job was reaped.}
 *
 *     The job id every other op takes is receipt.receipt.run_id ("r" and
 *     32 hex digits: unique per principal, scope and client job id); the
 *     deadline is receipt.receipt.deadline (nanoseconds since the epoch,
 *     a decimal string).  Idempotent per job id: returns 0 when it started
 *     the job now, 1 when the id was already started or has finished (a
 *     retry after a lost reply).  A finished id is never started again: the
 *     plugin keeps a tombstone.  -EBADMSG: the document is invalid;
 *     -EKEYREJECTED: its signature does not verify; -ETIME: its deadline has
 *     passed; -EPERM: the backend refuses to run anything now (for example
 *     its runtime binary no longer matches its pin).  berthd turns those
 *     four into a failed result and retries any other error later (so only
 *     return them when retrying cannot help).  A job with inputs but no
 *     inputs_dir, or with inputs or outputs on a backend that does not
 *     report "inputs" / "outputs", is -EBADMSG.
 * @inspect: report the job as a JSON object, schema_version 1:
 *
 *       {"schema_version": 1,
 *        "state": "starting" | "running" | "exited" | "failed" |
 *                 "cancelled" | "expired",
 *        "exit_code": 0..255 or null, "reason": short code or null,
 *        "stdout": base64url (RFC 4648 section 5, no padding),
 *        "stderr": base64url,
 *        "outputs": [{"id", "digest": "sha256:...", "size"}],
 *        "output_error": {"id", "problem"},  (ABI 1.1; only when invalid)
 *        "started_at": ns string or null, "finished_at": ns string}
 *
 *     Only "state" is required while the job runs; the outcome members
 *     once it is terminal.  stdout and stderr together must stay within the
 *     job's limits.output_bytes (berthd records output_limit otherwise).
 *     "outputs" (ABI 1.1, backends reporting the "outputs" capability)
 *     lists each declared output (job.outputs) the plugin captured after
 *     the sandbox stopped, in declaration order: "id" as declared, the
 *     sha256 "digest" and "size" in bytes of the file the job left at its
 *     path under /tmp/outputs/.  Outputs are captured only for a job that
 *     exited on its own (state "exited", reason null), whatever its exit
 *     code; otherwise "outputs" is [].  Every declared output must be
 *     valid: the first one that is not is reported as "output_error" with
 *     its "id" and a "problem" -- "missing" (no such file), "too_large"
 *     (over its max_bytes), "symlink" (a symbolic link on its path),
 *     "hard_link" (more than one link), "not_regular" (a directory, FIFO,
 *     socket or device) or "unreadable" (any other failure to open or read
 *     it exactly) -- and "outputs" is then [].
 *     -ENOENT only when the plugin is sure it never saw the id or has
 *     released it.
 * @cancel: stop the job and every process it started; returns after they are
 *     gone.  Safe to retry.  0 when the job is stopped (or had already
 *     finished) *and* the plugin has proven that no process of its sandbox
 *     remains (for runtime-oci: the shim has exited and the job's cgroup is
 *     empty or gone in every hierarchy); -ENOENT when confirmed absent;
 *     -EBUSY when that proof cannot be made now (a process is still there;
 *     "delete succeeded" is not proof).  berthd calls cancel on a job that
 *     inspect reports terminal before it records the result (proof of
 *     teardown): on any error the job stays (or becomes) "reaping" and
 *     cancel is asked again with back-off (1 s doubling to 60 s); the
 *     result is recorded only after cancel returned 0 or -ENOENT.
 *     Reasons runtime plugins report in inspect for their own failures:
 *     "runtime_lost" (a runtime process -- sandbox, gofer, supervisor --
 *     died under the job: state "failed") and "oom" (the memory limit
 *     killed the job: state "exited").
 * @reap: release everything the job still holds (runtime state, scratch,
 *     cgroups, captured outputs) after its outcome was recorded.  Keeps the
 *     tombstone.  0 on success, -ENOENT when confirmed absent, -EBUSY when
 *     it still runs or its teardown is not proven (as for cancel), or a
 *     descriptor open_output() returned is still open.  The dispatch's
 *     inputs_dir is left alone (berthd owns it).
 *
 * Appended in ABI 1.1; NULL in a 1.0 plugin (ops_size says), and then the
 * core treats the feature as unsupported:
 *
 * @open_output: a read-only descriptor of the captured declared output
 *     @output_id (a job.outputs[].id) of job @job_id, once inspect reports
 *     the job terminal.  On success *@ret_fd is a new descriptor
 *     (O_RDONLY | O_CLOEXEC, positioned at offset 0; the caller closes it)
 *     of the very file the plugin checked -- a regular file with one link,
 *     reached without any symbolic link, at most its max_bytes -- and
 *     *@ret_size its size in bytes, equal to the "size" inspect reported.
 *     The digest is not recomputed: whoever stores the bytes verifies them
 *     against inspect's "digest".  Callable again (each call returns a
 *     fresh descriptor), also from another instance on the same state
 *     after a berthd restart, until reap.  Returns 0; -ENOENT when the
 *     job or that output is absent (not declared, not captured, reaped,
 *     or its storage is gone); -EBUSY while the job runs; -EBADMSG when
 *     the file no longer passes the checks or its size changed since it
 *     was captured; -EINVAL (NULL arguments); -errno of open/fstat.
 *     Nothing is written to @ret_fd or @ret_size on failure.
 * @forget: retention: drop what the plugin keeps of the reaped job @job_id
 *     (its tombstone).  After it the plugin no longer knows the id: a later
 *     start of it would run it again, so berthd calls forget only after its
 *     own journal remembers the job (a pruned job's identity tombstone).
 *     Returns 0; -ENOENT when the id was never known or is already
 *     forgotten; -EBUSY when the job has not been reaped yet; -errno when
 *     the tombstone cannot be removed.
 * @flags: (ABI 1.1, not a function) BERTH_RUNTIME_CONCURRENT or 0; 0 (and
 *     absent in a 1.0 table) keeps the instance's calls serialized.
 *
 * Appended in ABI 1.2, warm slots (docs/warm-slots.md); NULL in an older
 * plugin, whose pools then only start cold.  A slot is one sandbox created
 * before its job exists, for exactly one job, never reused:
 *
 * @provision: create the slot described by @slot, a JSON object:
 *
 *       {"schema_version": 1, "slot_id": "s" and 32 hex digits,
 *        "pool": the pool, "image": "sha256:..." (the image's digest),
 *        "effective": {the effective manifest, as in a dispatch},
 *        "limits": {the seven job limits the slot is for},
 *        "rootfs": absolute path of the staged image (as in a dispatch),
 *        "not_after": ns string (CLOCK_REALTIME): the slot retires then}
 *
 *     and return once it is ready: the sandbox built with the deny-all
 *     spec a job of exactly these parameters gets, and a process in it
 *     waiting to run the claiming job's argv (runtime-oci runs the
 *     runtime's `create` and `start` here, so that claim runs no runtime
 *     command).  Returns 0; -EEXIST
 *     when the id is in use; -EBADMSG (the document is invalid or names a
 *     configuration the backend cannot run); -EPERM (the runtime fails its
 *     pin); -EIO or -ETIMEDOUT when the sandbox could not be created (its
 *     state is removed again, or, when that cannot be proven yet, left as a
 *     "lost" slot for discard).  Blocking: the sandbox is built meanwhile
 *     (about 190 ms for runsc here).
 * @claim: start the job of @dispatch (a dispatch document, as for start)
 *     in the ready slot @slot_id.  The plugin checks the receipt as start
 *     does and that the job is one the slot was made for (effective
 *     manifest, image, limits, pool, rootfs equal, no inputs, the runtime
 *     pin unchanged); then the job id is consumed exactly as start()
 *     consumes it, and the slot is gone.  Returns 0 (started), 1 (the job
 *     id was started before: the slot is untouched), -ESTALE (the job does
 *     not fit the slot, or the slot is no longer ready: the slot is
 *     untouched; discard it and start the job cold; also while another
 *     claim or discard of it is under way), -ENOENT (no such slot), and
 *     start's errors (-EBADMSG, -EKEYREJECTED, -ETIME, -EPERM)
 *     for the dispatch itself.  After 0 the job is the plugin's as after
 *     start(): inspect, cancel, reap and forget take its run id.
 * @discard: destroy the unclaimed slot @slot_id: its sandbox, processes,
 *     cgroup and state.  Returns 0 once that is proven (as cancel proves
 *     a job's teardown); -ENOENT when there is no such slot (or it was
 *     claimed meanwhile); -EBUSY when the proof cannot be made now, or a
 *     claim of it is under way (retry later).
 * @slots: list the instance's unclaimed slots as a JSON object
 *     {"slots": [{"slot_id", "state": "provisioning" | "ready" | "lost",
 *     "created_at": ns string or null, "provision_ns": ns string or null,
 *     "reason": code or null}]} sorted by slot_id (at most 4096 listed);
 *     "lost" is a slot whose
 *     sandbox or supervisor died or that retired: discard it.  Slots
 *     survive a berthd restart; berthd lists them at start-up and discards
 *     those it did not provision in its current configuration.
 */
struct berth_runtime_ops_v1 {
    int (*capabilities)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*start)(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr);
    int (*inspect)(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*cancel)(void *state, const char *job_id, struct berth_error *reterr);
    int (*reap)(void *state, const char *job_id, struct berth_error *reterr);
    /* ABI 1.1 */
    int (*open_output)(void *state, const char *job_id, const char *output_id, int *ret_fd, uint64_t *ret_size,
                       struct berth_error *reterr);
    int (*forget)(void *state, const char *job_id, struct berth_error *reterr);
    uint64_t flags; /* ABI 1.1: BERTH_RUNTIME_* below; 0 in a 1.0 plugin */
    /* ABI 1.2 */
    int (*provision)(void *state, const char *slot, size_t slot_len, struct berth_error *reterr);
    int (*claim)(void *state, const char *slot_id, const char *dispatch, size_t dispatch_len,
                 struct berth_error *reterr);
    int (*discard)(void *state, const char *slot_id, struct berth_error *reterr);
    int (*slots)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
};

/**
 * BERTH_RUNTIME_CONCURRENT - a struct berth_runtime_ops_v1 flag (ABI 1.1):
 * every op may be called on one instance from several threads at once
 * (see "Threading").  Unknown flags are ignored by the core.
 */
#define BERTH_RUNTIME_CONCURRENT ((uint64_t)1 << 0)

/** Size of a runtime ops table of ABI 1.0 (the smallest the loader accepts). */
#define BERTH_RUNTIME_OPS_V1_0_SIZE (offsetof(struct berth_runtime_ops_v1, reap) + sizeof(void (*)(void)))

/**
 * struct berth_image_source_ops_v1 - a source of OCI images, by digest only.
 *
 * berthd creates three instances (three init() calls with the same name,
 * "images", and the same config): one answers resolve() on the request
 * path, one runs stage() on the worker thread, so a long stage never
 * delays admission, and one serves open_blob() to remote workers.
 * Instances must not share mutable state.
 *
 * @resolve: look up the image whose OCI manifest digest is @digest
 *     ("sha256:<hex>") and return a JSON summary of the verified manifest and
 *     config (layers, sizes, platform).  Never resolves tags or URLs and
 *     never uses the network.  -ENOENT when the store does not hold it,
 *     -EBADMSG when stored content fails verification.
 * @stage: build the image's root filesystem into @target_dirfd, an empty
 *     directory the caller created for this job, within the budgets in
 *     @limits (JSON: compressed bytes, expanded bytes, entries, layers, wall
 *     time; see docs/images.md for the members and their defaults).
 *     Returns a JSON summary (entries, bytes) on success.  On failure
 *     reterr starts with a stable reason code (e.g. "path-traversal") and
 *     everything the call created below @target_dirfd has been removed.
 *
 * Appended in ABI 1.5 (NULL in an older plugin, and optional in a newer
 * one), so that remote workers can fetch an image from berthd
 * (docs/workers.md, GET /v1/images/{image}/blobs/{digest}):
 *
 * @open_blob: open for reading the blob @blob ("sha256:<hex>") of the
 *     image whose manifest digest is @image: the manifest itself, its
 *     config or one of its layers, exactly as stored (compressed layers
 *     stay compressed).  *@ret_fd receives a descriptor of a regular file
 *     at offset 0, which the caller reads and closes, and *@ret_size its
 *     size in bytes.  The content need not be hashed here: whoever
 *     receives it verifies it against @blob (OCI image spec, "Descriptors":
 *     digests).  -ENOENT when the store does not hold @image, or @blob is
 *     none of its blobs; -EBADMSG when the image's manifest fails
 *     verification; -EINVAL for a malformed digest.  Called on a third
 *     instance (see above), on berthd's helper thread.
 */
struct berth_image_source_ops_v1 {
    int (*resolve)(void *state, const char *digest, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*stage)(void *state, const char *digest, int target_dirfd, const char *limits, size_t limits_len,
                 char **ret_json, size_t *ret_len, struct berth_error *reterr);
    /* ABI 1.5 */
    int (*open_blob)(void *state, const char *image, const char *blob, int *ret_fd, uint64_t *ret_size,
                     struct berth_error *reterr);
};

/** Size of an image source ops table of ABI 1.0 (the smallest the loader accepts). */
#define BERTH_IMAGE_SOURCE_OPS_V1_0_SIZE (offsetof(struct berth_image_source_ops_v1, stage) + sizeof(void (*)(void)))

/** Largest JSON document (meta, key, query) an evidence op accepts, bytes. */
#define BERTH_EVIDENCE_DOC_MAX 65536
/** Longest @reason of berth_evidence_store_ops_v1.remove, bytes. */
#define BERTH_EVIDENCE_REASON_MAX 1024
/** Most objects one list() page or one prune() call may return. */
#define BERTH_EVIDENCE_PAGE_MAX 1000

/**
 * struct berth_evidence_store_ops_v1 - content-addressed evidence (job inputs
 * and captured outputs), owned by a principal and a scope.
 *
 * An object is named by its *key*, the JSON object (members in any order;
 * canonical JSON is what the core sends)
 *
 *     {"digest": "sha256:<64 lowercase hex>", "principal": P, "scope": [S...]}
 *
 * (P: 1 to 128 of [A-Za-z0-9._@-]; scope: 1 to 16 strings of 1 to 128
 * bytes, in order).  The same bytes stored by two owners are two objects
 * (the store may keep one copy of the content).  An object is immutable: it
 * is created by put() and only ever removed, by remove() (a "deleted"
 * tombstone: the key can never be stored again) or by prune() (an "expired"
 * tombstone: it may be stored again).
 *
 * Every JSON argument is at most BERTH_EVIDENCE_DOC_MAX bytes and parsed
 * strictly: unknown members, duplicate keys, wrong types and values outside
 * the rules are -EINVAL with reterr naming the member (never -EBADMSG, which
 * is about content).  Times are nanoseconds since the Unix epoch written as
 * decimal strings ("1796342400000000000"), sizes are bytes.  Every op may
 * also fail with -ENOMEM, and with -EIO when the store itself failed (a
 * read, a write or an fsync of its metadata or content); none of them
 * retains a descriptor it was given.  The core serialises calls into one
 * instance (see "Threading" above).
 *
 * @put: store the bytes of @data_fd described by @meta,
 *
 *       {"digest": "sha256:...", "size": N, "media_type": "type/subtype",
 *        "principal": P, "scope": [...],
 *        "retain_until": "<ns>"}          optional: absent keeps it until removed
 *
 *     (media_type: 1 to 255 bytes of printable ASCII with a "/").  @data_fd
 *     is read with pread(2) from offset 0 to end of file (its position is
 *     neither used nor moved); the plugin verifies that exactly "size"
 *     bytes are there and that their SHA-256 is "digest", then publishes the
 *     object atomically: a crash at any point leaves either nothing visible
 *     or the whole object.  When @data_fd came from upload() of the same
 *     instance, the plugin publishes that very file without copying it; the
 *     caller must not write to it any more and closes it after put()
 *     returns, whatever the result.  On success *@ret_ref receives the
 *     reference {"digest", "size", "media_type"} (malloc'd canonical JSON,
 *     *@ret_len its length).  An identical retry (the key exists with the
 *     same size and media type) reads nothing and returns 0 and the same
 *     reference; its retain_until extends the retention (a later time wins,
 *     absent -- forever -- wins over any time).
 *     Errors: -EINVAL @meta invalid; -EFBIG "size" is over the store's
 *     max_object_bytes (nothing is read); -EIDRM the key was removed (a
 *     "deleted" tombstone: refused forever, also across restarts);
 *     -EEXIST the key exists with another size or media type; -EBADMSG the
 *     bytes do not match "size" or "digest" (nothing is stored); -ENOSPC /
 *     -EDQUOT the store's filesystem is full (nothing is stored); the
 *     pread(2) error of @data_fd.
 * @get: write the content of the object @ref (a key) to @out_fd, from its
 *     current position with write(2) (a pipe or socket will do), verifying
 *     length and digest while streaming.  -EFBIG its size is over
 *     @max_bytes (nothing written); -ENOENT no such object; -EIDRM it was
 *     removed or expired (a tombstone exists); -EBADMSG the stored content
 *     does not match its digest or size (the store is corrupt; what was
 *     written to @out_fd must be discarded); the write(2) error of @out_fd
 *     (for example -EPIPE); -EINVAL @ref invalid.
 * @stat: *@ret_json receives the object's metadata without reading its
 *     content: {"digest", "size", "media_type", "principal", "scope",
 *     "created_at": "<ns>", "retain_until": "<ns>" or null}.  -ENOENT no
 *     such object; -EIDRM a tombstone exists; -EINVAL @ref invalid.
 * @remove: the "delete" operation.  @ref is a key with one more member,
 *     "actor" (who deletes, 1 to 128 of [A-Za-z0-9._@-]); @reason is a
 *     NUL-terminated operator-facing text of 1 to BERTH_EVIDENCE_REASON_MAX
 *     bytes of UTF-8 without control characters.  Drops the content (once
 *     no other owner's object shares it) and records the tombstone {actor,
 *     reason, deleted_at, kind "deleted"}, durably, before returning 0.
 *     Works for a key that was never stored (the tombstone then stops a
 *     later put), turns an "expired" tombstone into a "deleted" one, and
 *     an identical or different repeat on a deleted key is 0 and keeps the
 *     first tombstone.  -EINVAL @ref or @reason invalid.
 * @tombstone: *@ret_json receives the key's tombstone: {"digest",
 *     "principal", "scope", "actor", "reason", "deleted_at": "<ns>",
 *     "kind": "deleted" | "expired"}.  -ENOENT there is none (the key was
 *     never removed, or was stored again after it expired); -EINVAL.
 *
 * The members below were appended in ABI 1.1: they are NULL in a plugin
 * built for 1.0, and the core then treats the feature as unsupported.
 *
 * @upload: *@ret_fd receives a new unnamed regular file (open(2) with
 *     O_TMPFILE, O_RDWR | O_CLOEXEC, mode 0600) on the store's own
 *     filesystem, owned by the caller, who writes an upload into it and then
 *     passes it to put() (which links it into the store without copying).
 *     Nothing of it is ever visible in the store unless put() succeeds, and
 *     nothing remains of it when the process dies.  -EOPNOTSUPP the store
 *     cannot (its filesystem has no O_TMPFILE; the caller uses a temporary
 *     file of its own and put() copies it); -ENOSPC, -EDQUOT, -EMFILE, or
 *     another open(2) error.
 * @list: one page of objects.  @query is {"principal": P (optional: absent
 *     lists every owner, for administrators), "after": cursor (optional),
 *     "limit": 1 to BERTH_EVIDENCE_PAGE_MAX}; *@ret_json receives
 *     {"objects": [stat documents], "next": cursor or null}.  Objects come
 *     in a stable order (principal, scope, digest); "next" is an opaque
 *     string to pass as "after" for the following page, null after the
 *     last.  Objects stored or removed between pages may or may not be
 *     seen; none is seen twice.  -EINVAL @query invalid, including a cursor
 *     this store did not make or made for another principal.
 * @usage: what an owner, or the whole store, holds: @query is
 *     {"principal": P} (all of P's scopes) or {} (every owner); *@ret_json
 *     receives {"objects": N, "bytes": N, "tombstones": N}, where "bytes"
 *     adds up the sizes of the objects (each owner's object counted once
 *     for that owner, whether or not its content is shared).  -EINVAL.
 * @prune: retention: remove up to @max (1 to BERTH_EVIDENCE_PAGE_MAX)
 *     objects whose retain_until is at or before @now_ns, oldest expiry
 *     first, each leaving a tombstone of kind "expired" with actor
 *     "retention" and reason "retention", which does not stop a later put
 *     of the same key.  *@ret_json receives {"pruned": [{"digest",
 *     "principal", "scope", "size"}], "more": true when more objects have
 *     expired than were pruned}.  What was pruned is durable when it
 *     returns 0.  -EINVAL (@max or @now_ns out of range).
 */
struct berth_evidence_store_ops_v1 {
    int (*put)(void *state, const char *meta, size_t meta_len, int data_fd, char **ret_ref, size_t *ret_len,
               struct berth_error *reterr);
    int (*get)(void *state, const char *ref, size_t ref_len, int out_fd, uint64_t max_bytes,
               struct berth_error *reterr);
    int (*stat)(void *state, const char *ref, size_t ref_len, char **ret_json, size_t *ret_len,
                struct berth_error *reterr);
    int (*remove)(void *state, const char *ref, size_t ref_len, const char *reason, struct berth_error *reterr);
    int (*tombstone)(void *state, const char *ref, size_t ref_len, char **ret_json, size_t *ret_len,
                     struct berth_error *reterr);
    /* ABI 1.1 */
    int (*upload)(void *state, int *ret_fd, struct berth_error *reterr);
    int (*list)(void *state, const char *query, size_t query_len, char **ret_json, size_t *ret_len,
                struct berth_error *reterr);
    int (*usage)(void *state, const char *query, size_t query_len, char **ret_json, size_t *ret_len,
                 struct berth_error *reterr);
    int (*prune)(void *state, int64_t now_ns, uint32_t max, char **ret_json, size_t *ret_len,
                 struct berth_error *reterr);
};

/** Size of the evidence ops table of ABI 1.0 (up to and including tombstone). */
#define BERTH_EVIDENCE_STORE_OPS_V1_0_SIZE (offsetof(struct berth_evidence_store_ops_v1, upload))

/**
 * struct berth_containment_ops_v1 - confines the host-side processes of one
 * job (its supervisor, e.g. the shim, and its payload, the sandbox) in a
 * unit of the host's service manager, whose cgroup outlives any of them, so
 * that the job can always be found, stopped and proven gone.
 * containment-systemd (docs/containment.md) is berth's implementation.
 *
 * A job is named by its @job_id, a job id as above; a plugin may refuse
 * ids its manager would have to escape (containment-systemd: a leading '.'
 * or '-') with -EINVAL.  JSON documents are UTF-8, owned by the caller once returned
 * (free(3)).  The core calls one instance from one thread at a time: the
 * table host->containment hands a runtime forwards its calls and berthd's
 * recovery scans through one lock.
 *
 * @capabilities: describe the mechanism: {"manager": name, "version",
 *     "kill": "cgroup" when kills reach every process of the unit's cgroup,
 *     "controllers": the cgroup v2 controllers available, space-separated}.
 *     Errors: the manager cannot be reached (-ECONNREFUSED), or is
 *     not who it should be (-EACCES).
 * @create: start the job's unit and, in it, the command of @spec:
 *     {"job_id": ID, "argv": [absolute path, arguments...] (1 to 256)},
 *     which runs as the job's supervisor.  The command is handed over once:
 *     nothing can start the same unit again with it.  *@ret_json receives
 *     the handle {"unit": name, "cgroup": path below the cgroup2 mount}.
 *     -EEXIST a unit for @job_id exists and is not inactive; -EPERM the
 *     unit is not the one the plugin ships (altered, or masked by an
 *     earlier destroy: a job id is never reused); -ENOENT the unit's
 *     definition is not installed; -EBADMSG @spec invalid; -EIO or
 *     -ETIMEDOUT the manager did not start it, or may have: whether the
 *     command runs is unknown (after a lost reply, or a failure once the
 *     unit ran), and the caller must treat the unit as possibly running
 *     (destroy fences it).  With any other error nothing was started.
 * @attach: move the process referred to by @pidfd (pidfd_open(2)) into the
 *     job's payload group.  -ESRCH the process is gone (reaped), before
 *     or during the call; -EINVAL @pidfd is not an open pidfd.  The kernel's cgroup.procs takes a pid number,
 *     so the process must not be reaped before attach returns (the caller
 *     itself, or a child of the caller's it has not waited for): a pid
 *     that is reaped and given to another process in between could move
 *     that one, and -ESRCH after the move says that this may have happened.
 * @kill: send @signo (1 to 64) to every process in the job's unit.
 *     -EINVAL @signo out of range; -ESRCH the unit is not running (no
 *     process to signal, whether it ended or never ran).
 * @status: report the unit as JSON: {"unit", "load_state", "active_state",
 *     "sub_state" (the manager's words), "cgroup", "populated": any process
 *     in the group, "masked", "job_pending": the manager has a start or
 *     stop queued for it}.
 * @units (ABI 1.3, optional): discovery, for recovery: every unit of this
 *     plugin's kind on the host, known to berth or not, in any state,
 *     whether the service manager has it loaded or only the kernel still
 *     has its cgroup.  *@ret_json receives {"units": [{"job_id", "unit",
 *     "active_state" (the manager's, or "unknown" when it does not know
 *     the unit), "populated", "masked"}], "truncated": true when there
 *     were more than BERTH_CONTAINMENT_UNITS_MAX}.  "job_id" is null for a
 *     unit whose name carries no job id (one the plugin would never make:
 *     escaped, or longer than any id); such a unit is listed all the same.
 *     A unit the manager fails to report is listed too, with "error" (the
 *     reason), "active_state" "unknown" and "populated" true unless the
 *     kernel says its group is empty or gone: a unit that may hold
 *     processes is never reported empty.  A failure that every further
 *     unit would meet as well (the connection lost: -EIO; a call timed out:
 *     -ETIMEDOUT; access denied: -EACCES) fails the whole call instead.
 *     NULL in a 1.0 plugin.
 * @destroy: fence and drain: mask the unit persistently (nothing starts it
 *     again), stop it, kill everything left in its cgroup (cgroup.kill),
 *     and return 0 only with proof that it is gone (masked, no pending job,
 *     its cgroup empty or absent).  -ENOENT when nothing of it was running
 *     (it is fenced all the same); -ETIMEDOUT processes remain after the
 *     drain timeout; -EAGAIN the proof did not hold.  Any error means the
 *     job may still hold processes: call it again later.
 *
 * Every op may also fail because of the manager itself: -ECONNREFUSED it
 * cannot be reached (no socket, or no listener; -ENOENT is never used for
 * that, only for an absent unit or its definition); -EACCES it is not who it should be
 * (containment-systemd: the socket's peer is not root's PID 1) or denied
 * the call; -EBUSY it refused a job that conflicts with one already
 * queued for the unit; -EIO or -ETIMEDOUT any other failure of the call;
 * -ENOMEM.  No other errno is returned.
 */
struct berth_containment_ops_v1 {
    int (*capabilities)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*create)(void *state, const char *spec, size_t spec_len, char **ret_json, size_t *ret_len,
                  struct berth_error *reterr);
    int (*attach)(void *state, const char *job_id, int pidfd, struct berth_error *reterr);
    int (*kill)(void *state, const char *job_id, int signo, struct berth_error *reterr);
    int (*status)(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*destroy)(void *state, const char *job_id, struct berth_error *reterr);
    /* ABI 1.3 */
    int (*units)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
};

/** Size of the containment ops table of ABI 1.0 (up to and including destroy). */
#define BERTH_CONTAINMENT_OPS_V1_0_SIZE (offsetof(struct berth_containment_ops_v1, units))
/** Most units one units() call reports. */
#define BERTH_CONTAINMENT_UNITS_MAX 4096

/* ------------------------------------------------------------------------- */
/* The descriptor                                                             */

/**
 * struct berth_plugin - what berth_plugin_entry() returns.
 *
 * @abi_version: BERTH_PLUGIN_ABI_VERSION the plugin was built against.
 *               Never moves.
 * @struct_size: sizeof(struct berth_plugin) the plugin was built with.
 *               Never moves.
 * @name:        the plugin's name: 1 to 63 bytes of [a-z0-9-], starting with
 *               a letter or digit (for example "runtime-oci").
 * @kind:        one of enum berth_plugin_kind.
 * @version:     the plugin's own version, 1 to 63 printable ASCII bytes.
 * @init:        optional.  Create one instance for @host->instance from
 *               @config (canonical JSON of the backend's "config" object, or
 *               "{}"), storing it in *@ret_state.  Return 0 or a negative
 *               errno with reterr filled; on failure the plugin must have
 *               released everything it allocated.  When NULL the state
 *               pointer is NULL.
 * @fini:        optional.  Release an instance created by init().  Called
 *               once, after the last op call on that state.
 * @ops:         pointer to the kind's ops table (static storage duration).
 * @ops_size:    sizeof that table as the plugin was built.
 */
struct berth_plugin {
    uint32_t abi_version;
    uint32_t struct_size;
    const char *name;
    uint32_t kind;
    const char *version;
    int (*init)(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                struct berth_error *reterr);
    void (*fini)(void *state);
    const void *ops;
    size_t ops_size;
};

/** Smallest descriptor the loader accepts (the v1.0 layout). */
#define BERTH_PLUGIN_V1_STRUCT_SIZE (offsetof(struct berth_plugin, ops_size) + sizeof(size_t))

/** Mark the entry point exported even under -fvisibility=hidden. */
#if defined(__GNUC__)
#define BERTH_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define BERTH_PLUGIN_EXPORT
#endif

/** The entry point every plugin defines. */
BERTH_PLUGIN_EXPORT const struct berth_plugin *berth_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* BERTH_PLUGIN_H */
