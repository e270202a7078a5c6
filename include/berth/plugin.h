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
 *   - ABI 1.0 fixes the functions, their arguments and return codes.  The
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
 *   The core never calls into one instance (one state pointer) from two
 *   threads at once.  Different instances may be called concurrently, so a
 *   plugin must keep all mutable data in its state, never in globals.
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
#define BERTH_PLUGIN_ABI_MINOR 0
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
 */
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
};

/* ------------------------------------------------------------------------- */
/* Ops tables, one per kind.  Every member listed is required (non-NULL) in   */
/* v1 unless it says otherwise.                                               */

/**
 * struct berth_runtime_ops_v1 - a sandbox runtime backend.
 *
 * @capabilities: describe the backend as a JSON object: `backend` (what
 *     drives the sandboxes, e.g. "oci" for an OCI runtime CLI), `isolation` ("gvisor", "native", ...), `egress_classes`
 *     it can enforce (subset of "none", "loopback", "restricted", "open"),
 *     `capabilities` (names such as "exec", "file_rw"), `limits` (maxima it
 *     can enforce) and `qualification` ({"id", "expires_ns"} or
 *     "unqualified").  Placement trusts only what this reports.  A backend
 *     that drives a runtime binary also reports `runtime` ({"path",
 *     "version", "sha256"} of that binary) and may report `shim_sha256`
 *     (a helper program it runs as root): berthd then replaces
 *     `qualification` with what its journal holds for exactly that binary,
 *     helper and backend configuration (berthctl qualify), so a plugin's
 *     own claim never qualifies it.  An error here means the backend gets
 *     no work until it answers again.
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
 *                     modify it; absent when berthd has no image source)}
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
 *     return them when retrying cannot help).
 * @inspect: report the job as a JSON object, schema_version 1:
 *
 *       {"schema_version": 1,
 *        "state": "starting" | "running" | "exited" | "failed" |
 *                 "cancelled" | "expired",
 *        "exit_code": 0..255 or null, "reason": short code or null,
 *        "stdout": base64url (RFC 4648 section 5, no padding),
 *        "stderr": base64url,
 *        "outputs": [{"id", "digest": "sha256:...", "size"}],
 *        "started_at": ns string or null, "finished_at": ns string}
 *
 *     Only "state" is required while the job runs; the outcome members
 *     once it is terminal.  stdout and stderr together must stay within the
 *     job's limits.output_bytes (berthd records output_limit otherwise).
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
 *     cgroups) after its outcome was recorded.  Keeps the tombstone.  0 on
 *     success, -ENOENT when confirmed absent, -EBUSY when it still runs or
 *     its teardown is not proven (as for cancel).
 */
struct berth_runtime_ops_v1 {
    int (*capabilities)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*start)(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr);
    int (*inspect)(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*cancel)(void *state, const char *job_id, struct berth_error *reterr);
    int (*reap)(void *state, const char *job_id, struct berth_error *reterr);
};

/**
 * struct berth_image_source_ops_v1 - a source of OCI images, by digest only.
 *
 * berthd creates two instances (two init() calls with the same name,
 * "images", and the same config): one answers resolve() on the request
 * path, the other runs stage() on the worker thread, so a long stage never
 * delays admission.  Instances must not share mutable state.
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
 */
struct berth_image_source_ops_v1 {
    int (*resolve)(void *state, const char *digest, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*stage)(void *state, const char *digest, int target_dirfd, const char *limits, size_t limits_len,
                 char **ret_json, size_t *ret_len, struct berth_error *reterr);
};

/**
 * struct berth_evidence_store_ops_v1 - content-addressed evidence (job inputs
 * and captured outputs).
 *
 * @put: store the bytes readable from @data_fd (read to EOF) described by
 *     @meta (JSON: media type, expected size and digest, owner principal and
 *     scope) and return the evidence reference as JSON.  The digest and size
 *     are verified before the reference is returned.
 * @get: write the referenced bytes to @out_fd, at most @max_bytes; -EFBIG if
 *     the object is larger, -ENOENT if absent, -EIDRM if deleted (tombstoned).
 * @stat: return the reference's metadata as JSON (size, digest, media type,
 *     created time) without reading content.
 * @remove: the "delete" operation: drop the content and leave a tombstone
 *     recording @reason (a short operator-facing string).  Safe to retry.
 * @tombstone: return the tombstone of a deleted reference as JSON; -ENOENT
 *     when the reference was never deleted.
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
};

/**
 * struct berth_containment_ops_v1 - confines host-side processes of one job
 * (for example a systemd scope and its cgroup).
 *
 * @capabilities: describe the mechanism as JSON (controllers it can limit,
 *     whether kills are cgroup-wide).
 * @create: create the container unit for the job described by @spec (JSON:
 *     job id, limits) and return a JSON handle (unit name, cgroup path).
 *     -EEXIST when one already exists for the job id.
 * @attach: move the process referred to by @pidfd into the job's unit.
 * @kill: send @signo to every process in the job's unit.
 * @status: report the unit as JSON (`active`, `populated`, resource use).
 * @destroy: kill what remains, wait until the unit is empty and remove it.
 *     0 when removed, -ENOENT when confirmed absent.
 */
struct berth_containment_ops_v1 {
    int (*capabilities)(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*create)(void *state, const char *spec, size_t spec_len, char **ret_json, size_t *ret_len,
                  struct berth_error *reterr);
    int (*attach)(void *state, const char *job_id, int pidfd, struct berth_error *reterr);
    int (*kill)(void *state, const char *job_id, int signo, struct berth_error *reterr);
    int (*status)(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr);
    int (*destroy)(void *state, const char *job_id, struct berth_error *reterr);
};

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
