/* SPDX-License-Identifier: MIT */
/*
 * ocicfg.h -- a runtime-oci backend's configuration (the "config" object of
 * its entry in berthd.json) and the pin of its runtime binary.  Not
 * installed.
 *
 *   {"runtime": {"path": "/usr/bin/runsc", "sha256": "sha256:<hex>",
 *                "size": <bytes>, "mode": "0755"},
 *    "isolation": "gvisor" | "native",
 *    "global_args": ["--network=none", "--platform=ptrace"],
 *    "create_args": ["--no-new-keyring"],                   (optional)
 *    "cgroup_limits": "required" | "when_delegated",          (optional; contained)
 *    "state_directory": "/var/lib/berth/runtime/runsc",
 *    "shim": "/usr/libexec/berth/berth-oci-shim",          (optional)
 *    "slot_init": "/usr/libexec/berth/berth-slot-init",    (optional; warm slots)
 *    "unmount": ["/sys/fs/cgroup/unified"],                   (optional)
 *    "uid": 65534, "gid": 65534,                              (optional)
 *    "pids_ceiling": 4096,                                    (optional)
 *    "start_timeout_ns": 60000000000,                         (optional)
 *    "broker_public_key": "<43 base64url characters>"}        (optional)
 *
 * runtime      the OCI runtime binary, pinned: it must be a regular file
 *              owned by root (or by the user berthd runs as), with exactly
 *              this size, permission bits and SHA-256.  Checked before
 *              every start() and capabilities(); the digest is recomputed
 *              only when the file's identity (device, inode, size, mtime,
 *              ctime) changed.
 * global_args  flags given to every runtime subcommand; the plugin adds
 *              "--root STATE/root" itself.
 * create_args  flags given to `create` only, after the subcommand (crun's
 *              --no-new-keyring where the kernel keyring is not available,
 *              as in a container); --bundle, --pid-file and
 *              --console-socket are refused: the shim sets what it needs.
 * cgroup_limits  for a backend bound to a containment (docs/containment.md):
 *              the shim writes the job's memory, task and CPU limits into
 *              its unit's payload group (memory.max, memory.swap.max,
 *              pids.max, cpu.max).  "required" (the default): a job whose
 *              payload group lacks one of these controllers fails before
 *              `create` with reason "cgroup_limits_unavailable";
 *              "when_delegated": the job runs without the limits of the
 *              missing controllers on the host side (the unit's own
 *              ceilings are all there is), and runtime.log names them.
 * broker_public_key  berthd's receipt public key (the "broker_public_key"
 *              of a client.json; `berthctl keygen` prints it as public_key):
 *              with it, start() refuses (-EKEYREJECTED) and the shim
 *              refuses before `create` a dispatch whose receipt does not
 *              verify with it (binding.h).  The plugin cannot read berthd's
 *              private key file, and must not: the key reaches it only
 *              through this configuration.  Without it, receipts are not
 *              verified (init logs a warning).
 * pids_ceiling when set, linux.resources.pids.limit is this ceiling and the
 *              job's limits.pids becomes RLIMIT_NPROC (gVisor counts host
 *              tasks in the pids cgroup; use it for runsc, never for a
 *              native runtime, where RLIMIT_NPROC is per host user).
 */
#ifndef BERTH_OCI_CFG_H
#define BERTH_OCI_CFG_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h>

#include "sign.h"

#define OCI_MAX_GLOBAL_ARGS 32
#define OCI_MAX_CREATE_ARGS 8

/* What the runtime binary must be. */
struct oci_pin {
    const char *path;
    char sha256[BERTH_DIGEST_BUFSZ];
    int64_t size;
    uint32_t mode;
};

/* The identity and digest of the file last hashed. */
struct oci_pin_cache {
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns, ctime_ns;
    char digest[BERTH_DIGEST_BUFSZ];
    bool valid;
};

struct oci_config {
    json_t *doc; /* owns every string below */
    struct oci_pin pin;
    const char *isolation;
    const char *global_args[OCI_MAX_GLOBAL_ARGS];
    size_t n_global_args;
    const char *create_args[OCI_MAX_CREATE_ARGS];
    size_t n_create_args;
    bool cgroup_limits_required; /* "cgroup_limits": "required" (the default) */
    bool sealed_copy;            /* "sealed_copy" (default true): a small runtime runs from a sealed copy */
    const char *state_directory;
    const char *shim;
    const char *slot_init; /* berth-slot-init (warm slots); NULL: the plugin's default */
    const json_t *unmount; /* array of absolute paths, may be NULL */
    uint32_t uid, gid;
    int64_t pids_ceiling; /* 0 = none */
    int64_t start_timeout_ns;
    bool has_broker_key;
    uint8_t broker_key[BERTH_ED25519_PUBLIC_LEN];
    const char *broker_key_b64;
    struct oci_pin_cache pin_cache;
};

/**
 * oci_config_parse() - read and check @json (@len bytes).
 * @default_shim: the shim path used when "shim" is absent.
 * Return: 0; -EBADMSG (unknown member, wrong type, relative path, a uid or
 * gid of 0, ...; reterr names it); -ENOMEM.
 */
int oci_config_parse(const char *json, size_t len, const char *default_shim, struct oci_config *ret,
                     struct berth_error *reterr);

/** oci_config_clear() - release what oci_config_parse() filled. */
void oci_config_clear(struct oci_config *c);

/**
 * oci_pin_identity_matches() - whether @st (fstat(2) of the runtime) is the
 * file @cache describes: same device, inode, size, mtime and ctime (to the
 * nanosecond).  Writing a file changes its mtime and ctime, and setting the
 * mtime back (utimensat(2)) changes the ctime, so a file changed since it
 * was hashed does not match.  False when @cache is not valid.
 */
bool oci_pin_identity_matches(const struct oci_pin_cache *cache, const struct stat *st);

/**
 * oci_pin_verify_fd() - check the open runtime binary @fd, opened at the
 * absolute @path, against the trusted-file rule (berth_trusted_file_check():
 * a regular file with one link, root's or the caller's, not writable by group
 * or others, below directories that are the same) and against @pin.  With
 * @cache, a file whose device, inode, size, mtime and ctime are those of the
 * last call is not hashed again.
 * Return: 0; -EPERM (it is not trusted or differs from its pin: reterr says
 * in what); -EAGAIN (@path was replaced while it was checked); -errno.
 */
int oci_pin_verify_fd(int fd, const char *path, const struct oci_pin *pin, struct oci_pin_cache *cache,
                      struct berth_error *reterr);

/* The largest runtime run from a sealed copy (crun is about 0.5 MiB; runc,
 * about 10 MiB, and runsc, about 24 MiB, run from their files: a shim
 * started without berthd's copy, a contained job's, would hold one of its
 * own for as long as its job runs). */
#define OCI_SEALED_RUNTIME_MAX (4 * 1024 * 1024)
/* The longest name memfd_create(2) takes (249 bytes), less room to spare. */
#define OCI_SEALED_NAME_MAX 200
/* Every seal that keeps a memfd's content as it is (memfd_create(2)): the
 * set crun and runc look for to know that /proc/self/exe is already a copy
 * a container cannot write through (CVE-2019-5736), so that they do not
 * copy themselves again on each start. */
#define OCI_SEALED_RUNTIME_SEALS (F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/**
 * oci_pin_sealed_copy() - an in-memory copy of the runtime binary @fd,
 * sealed so that nothing can change it, to be executed (execveat(2) with
 * AT_EMPTY_PATH) instead of the file.
 * @fd:   the runtime, open for reading (pread(2): its offset is unused).
 * @path: the path it was opened at; the copy is named after its last
 *        component ("/memfd:crun (deleted)" in /proc/PID/exe; kernels since
 *        6.14 or so also name the process "memfd:crun" in ps).
 * @pin:  what it must be: the copy is hashed as it is made and must have
 *        @pin's size and digest, so it holds exactly the pinned bytes
 *        whatever happened to the file (a write through a shared mapping
 *        changes no timestamp).
 *
 * The copy has mode 0555, is sealed with OCI_SEALED_RUNTIME_SEALS, and is
 * checked with oci_pin_sealed_check().  The caller holds the copy (about
 * the runtime's size in memory) while it is open: runtime-oci makes one per
 * backend and hands it to every shim it starts (jobdir.h,
 * OCI_SHIM_RUNTIME_ENV); a shim started without one makes its own.
 *
 * Return: a new descriptor (close-on-exec, the caller's) of the copy;
 * -EFBIG when @pin's size is over OCI_SEALED_RUNTIME_MAX; -EPERM when the
 * bytes read differ from @pin (refuse the runtime, as for a broken pin);
 * -ENOEXEC when the copy came out not executable, with other seals, or
 * with a write bit (a memfd sealed against execution, F_SEAL_EXEC, refuses
 * its mode); or -ENOMEM, -EIO, or the errno of memfd_create(2) (-EACCES
 * where vm.memfd_noexec = 2), pread(2), write(2) or fcntl(2).  For all but -EPERM, run the file
 * instead.  reterr says which.  Thread-safe.
 */
int oci_pin_sealed_copy(int fd, const char *path, const struct oci_pin *pin, struct berth_error *reterr);

/**
 * oci_pin_sealed_check() - whether @fd looks like a copy
 * oci_pin_sealed_copy() made, as far as can be told without reading it: a
 * regular file with exactly the seals OCI_SEALED_RUNTIME_SEALS (so its bytes
 * can no longer change, nor its seals be removed: memfd_create(2), fcntl(2)
 * F_ADD_SEALS), executable and writable by nobody, of @pin's size.  Its
 * digest is not computed again, so this does not tell which pin it was made
 * for: the shim uses it on the copy berthd's runtime-oci made and hashed,
 * handed over with the digest of the pin it was made for, which the shim
 * compares with its job's pin itself (jobdir.h, OCI_SHIM_RUNTIME_ENV).
 * @fd:  the descriptor to check (its offset is unused).
 * @pin: the pin the copy must have been made for (size).
 *
 * Return: 0; -ENOEXEC when @fd is not a regular file with exactly those
 * seals, not executable, or writable by someone; -EPERM when its size is
 * not @pin's; -errno of fstat(2).  reterr says which.  Thread-safe.
 */
int oci_pin_sealed_check(int fd, const struct oci_pin *pin, struct berth_error *reterr);

/**
 * oci_pin_check() - open the runtime binary (no symlink on its path) and
 * check it with oci_pin_verify_fd(), with the config's cache.
 * Return: as oci_pin_verify_fd(); -errno when it cannot be opened or read.
 */
int oci_pin_check(struct oci_config *c, struct berth_error *reterr);

/**
 * oci_pin_identity_json() - the file identity @cache holds (device, inode,
 * size, mtime and ctime in nanoseconds), as the JSON object shim.json carries
 * under "pin"."identity", so that the shim, which checks the runtime again
 * before it runs it, hashes it only when it is no longer the file the plugin
 * hashed.  The caller must have checked that @cache->digest is the pin's.
 * Return: a new object (the caller owns it), or NULL when @cache is not valid
 * or memory ran out.
 */
json_t *oci_pin_identity_json(const struct oci_pin_cache *cache);

/**
 * oci_pin_identity_parse() - read an object oci_pin_identity_json() made
 * into @ret, with @digest (the pin's) as the digest of that file.
 * Return: 0; -EBADMSG when a member is missing, unknown or out of range
 * (reterr names it).
 */
int oci_pin_identity_parse(const json_t *identity, const char *digest, struct oci_pin_cache *ret,
                           struct berth_error *reterr);

#endif /* BERTH_OCI_CFG_H */
