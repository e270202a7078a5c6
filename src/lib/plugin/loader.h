/* SPDX-License-Identifier: MIT */
/*
 * loader.h -- finding, checking, loading and initialising plugins.
 *
 * The loader applies these rules in this order and stops at the first that
 * fails, returning the error named (every failure dlclose()s what was opened,
 * so nothing stays mapped):
 *
 *   1. The directory is absolute, the file one path component       -EINVAL
 *   2. The directory opens with no symlink in its path               -ELOOP
 *      and is trusted (berth_trusted_dir_check(), fsutil.h): a
 *      directory, owned by root or the effective uid,                -EBADFD, -EPERM
 *      not writable by group or others,                              -EPERM
 *      and so is every directory above it (shared ones sticky)       -EPERM
 *   3. The file opens beneath it, not through a symlink:             -ENOENT, -ELOOP
 *      it is trusted (berth_trusted_file_check()): a regular file    -EBADFD
 *      not writable by group or others,                              -EPERM
 *      with exactly one hard link,                                   -EMLINK
 *      at most max_file_size bytes,                                  -EFBIG
 *      owned by root or the effective uid,                           -EPERM
 *      and still at its path once the checks are done                -EAGAIN
 *   4. Its SHA-256 matches the optional pin                          -EBADMSG
 *   5. dlopen(RTLD_NOW | RTLD_LOCAL) of that very descriptor          -ELIBBAD
 *      (through /proc/self/fd, so the checked inode is the one loaded)
 *   6. It exports berth_plugin_entry and that returns a descriptor   -ENOEXEC
 *   7. ABI major equals the core's and minor is not newer            -EPROTO
 *   8. struct_size and ops_size reach the v1 minimum; name, kind     -EPROTO
 *      and version are well-formed; the file is named "<name>.so"
 *   9. The kind is the one asked for                                 -EPROTOTYPE
 *  10. Every required op of the kind (those of ABI 1.0) is non-NULL -ENOSYS
 *  11. The minor is at least the one the caller needs (min_abi)    -EPROTO
 *  12. Peek mode stops here and never calls init; otherwise init()   (init's error)
 *
 * Peek mode still runs the object's ELF constructors (dlopen does), but
 * never init().  Thread safety: dlopen/dlclose are thread-safe; a handle must
 * not be used from two threads at once.
 */
#ifndef BERTH_PLUGIN_LOADER_H
#define BERTH_PLUGIN_LOADER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>
#include <berth/plugin.h>

/** Do everything up to init() but do not call it (berthctl plugins list). */
#define BERTH_PLUGIN_LOAD_PEEK 0x1u

/** Largest plugin file the loader reads, in bytes, unless told otherwise. */
#define BERTH_PLUGIN_MAX_FILE_SIZE (64u * 1024 * 1024)

/**
 * struct berth_plugin_load_options - what to load and how.
 * @dir:      absolute plugin directory.
 * @file:     file name inside @dir (one component, e.g. "runtime-oci.so").
 * @sha256:   optional pin, "sha256:<64 lowercase hex>"; NULL for none.
 * @flags:    BERTH_PLUGIN_LOAD_PEEK or 0.
 * @host_abi: the packed ABI version to check against; 0 means
 *            BERTH_PLUGIN_ABI_VERSION.  Only the test suite sets it, to
 *            exercise the minor-version rule against other core versions.
 * @kind:     required enum berth_plugin_kind, or 0 for any.
 * @host:     host table handed to init(); required unless peeking; must stay
 *            valid until berth_plugin_unload().
 * @config, @config_len: canonical JSON handed to init(); NULL means "{}".
 * @max_file_size: bound for the file in bytes; 0 means
 *            BERTH_PLUGIN_MAX_FILE_SIZE.
 * @min_abi:  0, or the packed ABI version (same major as the core's) the
 *            plugin must be built against at least, because the caller
 *            relies on what that minor added (a bound containment needs a
 *            runtime of ABI 1.4, which knows host->containment).
 */
struct berth_plugin_load_options {
    const char *dir;
    const char *file;
    const char *sha256;
    unsigned flags;
    uint32_t host_abi;
    uint32_t kind;
    const struct berth_host *host;
    const char *config;
    size_t config_len;
    uint64_t max_file_size;
    uint32_t min_abi;
};

/**
 * struct berth_plugin_info - what is known about a plugin file.
 * Fields are filled as far as loading got; unknown strings are empty and
 * unknown numbers 0.
 * @path:        the file's absolute path.
 * @sha256:      "sha256:<hex>" of the file's bytes.
 * @abi_version: packed ABI version from the descriptor.
 * @name, @version, @kind: from the descriptor, once it was found compatible.
 */
struct berth_plugin_info {
    char path[PATH_MAX];
    char sha256[BERTH_DIGEST_BUFSZ];
    uint32_t abi_version;
    uint32_t kind;
    char name[64];
    char version[64];
};

/** A loaded plugin (and, unless peeked, its initialised instance). Opaque. */
struct berth_plugin_handle;

/**
 * berth_plugin_load() - load, check and (unless peeking) initialise a plugin.
 * @opts:   see struct berth_plugin_load_options.
 * @ret:    receives the handle; release it with berth_plugin_unload().
 * @info:   optional; filled as far as loading got, on success *and* on
 *          failure (so a listing can show what it refused).
 * @reterr: optional detail; messages name the file and the rule that failed.
 *
 * Return: 0 or the error of the first failing rule (see the top of this
 * header); -ENOMEM.
 */
int berth_plugin_load(const struct berth_plugin_load_options *opts, struct berth_plugin_handle **ret,
                      struct berth_plugin_info *info, struct berth_error *reterr);

/**
 * berth_plugin_unload() - call fini() if init() ran, then dlclose().
 * Accepts NULL.  No op of the plugin may be running or called afterwards.
 */
void berth_plugin_unload(struct berth_plugin_handle *h);

/** berth_plugin_get_info() - the handle's info (lives as long as @h). */
const struct berth_plugin_info *berth_plugin_get_info(const struct berth_plugin_handle *h);

/** berth_plugin_state() - the state init() returned (NULL when peeked or no init). */
void *berth_plugin_state(const struct berth_plugin_handle *h);

/**
 * berth_plugin_runtime_ops() and friends - the kind's ops table, copied into
 * a zeroed table of the core's size (functions the plugin's older table
 * lacks read as NULL).  NULL when @h is of another kind.
 */
const struct berth_runtime_ops_v1 *berth_plugin_runtime_ops(const struct berth_plugin_handle *h);
const struct berth_image_source_ops_v1 *berth_plugin_image_source_ops(const struct berth_plugin_handle *h);
const struct berth_evidence_store_ops_v1 *berth_plugin_evidence_store_ops(const struct berth_plugin_handle *h);
const struct berth_containment_ops_v1 *berth_plugin_containment_ops(const struct berth_plugin_handle *h);

/** berth_plugin_kind_name() - "runtime", "image-source", "evidence-store", "containment", or NULL. */
const char *berth_plugin_kind_name(uint32_t kind);

/**
 * berth_plugin_list_dir() - names of the "*.so" entries of the absolute
 * directory @dir (symlinks included, so that they can be reported), sorted
 * bytewise.
 * @ret_names: receives a malloc'd array of malloc'd strings; free each and
 *             the array.
 * @ret_count: receives the number of names.
 * Return: 0, the errors of berth_open_trusted(), -ENOMEM.
 */
int berth_plugin_list_dir(const char *dir, char ***ret_names, size_t *ret_count, struct berth_error *reterr);

#endif /* BERTH_PLUGIN_LOADER_H */
