/* SPDX-License-Identifier: MIT */
/*
 * berthd-config.h -- berthd.json, parsed strictly and written
 * (berthd.json(5), docs/berthd.md).
 *
 * The top layer of libberth: the daemon's configuration, which berthd
 * reads at startup, "berthctl qualify" reads to find a backend, and
 * "berthctl dev-init" writes (and reads back with the same parser).  Nothing
 * below this layer needs it.
 *
 * The document is strict JSON (canon.h: no duplicate member, integers
 * only), at most BERTH_BERTHD_CONFIG_MAX bytes, with no unknown member at
 * any level; names follow names.h (berth_broker_name_valid(),
 * berth_backend_name_valid(), berth_plugin_name_valid()).
 *
 * No global state: every function is thread-safe on distinct arguments; a
 * struct berthd_config may be read from several threads once parsed.
 */
#ifndef BERTH_BERTHD_CONFIG_H
#define BERTH_BERTHD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "broker.h" /* struct berth_warm_target */

#define BERTH_BERTHD_CONFIG_MAX (1024 * 1024) /**< largest berthd.json, bytes */
#define BERTH_BERTHD_BACKENDS_MAX 64          /**< most members of "backends" */
#define BERTH_BERTHD_FRONT_THREADS_MAX 64     /**< most front threads (http.threads) */
/** Default of evidence.config.max_object_bytes: the largest evidence object, bytes (64 MiB). */
#define BERTH_EVIDENCE_MAX_OBJECT_DEFAULT ((int64_t)64 * 1024 * 1024)
/** Largest evidence.config.max_object_bytes accepted, bytes (1 GiB). */
#define BERTH_EVIDENCE_MAX_OBJECT_LIMIT ((int64_t)1024 * 1024 * 1024)

/**
 * struct berthd_backend_config - one configured plugin instance: a runtime
 * backend, the image source or the evidence store.
 * @name:    the backend name (berth_backend_name_valid()); "images" for the
 *           image source, "evidence" for the evidence store.
 * @plugin:  the plugin's name (berth_plugin_name_valid()); the file is
 *           "<plugin>.so" in the plugin directory.
 * @sha256:  the pin on the plugin file, "sha256:<64 hex>"; NULL: no pin.
 * @config:  the object handed to the plugin; NULL: none ("{}").
 * @require_qualification: placement refuses the backend without a current
 *           qualification (default true; not used for the image source and
 *           the evidence store).
 * @qualify_at_startup: berthd runs the live probes at startup when no
 *           current qualification exists (default false).
 * @containment: (runtime backends only) the containment instance berthd
 *           loads for this backend and binds to its host table (plugin.h,
 *           host->containment): its plugin (NULL: none), pin and config, as
 *           for a backend.
 *
 * Parsed, every pointer is borrowed from the document (struct
 * berthd_config.doc); for berthd_config_to_json() the caller owns them.
 */
struct berthd_containment_config {
    const char *plugin;
    const char *sha256;
    const json_t *config;
};

struct berthd_backend_config {
    const char *name;
    const char *plugin;
    const char *sha256;
    const json_t *config;
    bool require_qualification;
    bool qualify_at_startup;
    struct berthd_containment_config containment;
};

/**
 * struct berthd_config - every setting of berthd.json, defaults filled in.
 * @doc:    the parsed document, which every string points into (owned;
 *          released by berthd_config_clear()); NULL for a configuration
 *          the caller builds to write.
 * @pools_directory, @probe: NULL when absent.
 * @plugin_directory: parsed, the default the caller named when absent; to
 *          write, NULL leaves the member out.
 * The int64_t members are in the units their names say (_ns nanoseconds,
 * _bytes bytes); their ranges and defaults are in berthd.json(5).
 * @backends: the first @n_backends entries, in document order.
 * @images: the image source, when @has_images.
 * @evidence: the evidence store, when @has_evidence: its plugin, pin and
 *          config, which the plugin checks (docs/evidence.md); berthd itself
 *          reads only config.max_object_bytes, an optional integer 1 to
 *          BERTH_EVIDENCE_MAX_OBJECT_LIMIT, into @evidence_max_object_bytes
 *          (BERTH_EVIDENCE_MAX_OBJECT_DEFAULT when absent), to refuse an
 *          upload that is too large before it reaches the store.
 */
struct berthd_config {
    json_t *doc;
    const char *broker_name;
    const char *address;
    int port;
    const char *certificate, *private_key, *client_ca;
    const char *receipt_key, *audit_key, *policy;
    const char *state_directory, *pools_directory, *plugin_directory;
    const char *probe; /* berth-probe for startup qualification; NULL: the installed one */
    int64_t max_active_jobs, max_retained_jobs;
    int64_t reserve_bytes; /* journal.reserve_bytes: the journal's space reserve (journal.h), 0 for none */
    int64_t max_connections, max_header_bytes, max_body_bytes, max_header_fields;
    int64_t max_unauthenticated, max_per_source, max_per_principal;
    int64_t handshake_timeout_ns, header_timeout_ns, inactivity_timeout_ns;
    int64_t request_timeout_ns, idle_timeout_ns, shutdown_timeout_ns, refusal_log_interval_ns;
    int64_t threads; /* http.threads: front threads (TLS, HTTP), 0..BERTH_BERTHD_FRONT_THREADS_MAX; 0: one per CPU */
    int64_t reconcile_interval_ns;
    int64_t containment_scan_interval_ns; /* how often contained backends' units are scanned (fence.h) */
    int64_t start_concurrency; /* starts under way at once host-wide, 0..1024; 0: twice the CPUs online */
    int64_t root_cache_bytes;  /* bytes of staged roots kept for reuse (rootcache.h); 0: only those in use */
    int64_t jobs_ns;    /* retention.jobs_ns: a terminal job is pruned this long after it finished */
    int64_t outputs_ns; /* retention.outputs_ns: captured outputs are kept this long after the job finished */
    struct berthd_backend_config backends[BERTH_BERTHD_BACKENDS_MAX];
    size_t n_backends;
    struct berthd_backend_config images;
    bool has_images;
    struct berthd_backend_config evidence;
    bool has_evidence;
    int64_t evidence_max_object_bytes;
    /* warm: host bounds and targets (docs/warm-slots.md); the targets borrow from @doc */
    int64_t max_slots, max_memory_bytes, max_age_ns;
    struct berth_warm_target warm[BERTH_WARM_TARGETS_MAX];
    size_t n_warm;
    /* workers: remote workers (docs/workers.md) */
    int64_t lease_ns;                   /* workers.lease_ns: a worker's lease term */
    bool workers_require_qualification; /* workers.require_qualification (default true) */
};

/**
 * berthd_backend_config_parse() - parse one plugin instance @v the way a
 * member of berthd.json's "backends" is (@runtime true: plugin, sha256,
 * config, require_qualification, qualify_at_startup, containment) or its
 * "images" (@runtime false: plugin, sha256, config), for another program's
 * configuration that names one (berth-worker.json(5)).
 * @what:  the member's name in messages ("worker.runtime").
 * @ret:   filled; its strings borrow from @v; @ret->name is kept as the
 *         caller set it.
 * Return: 0; -EBADMSG (reterr names the member and rule); -ENOMEM; -EINVAL.
 */
int berthd_backend_config_parse(const json_t *v, const char *what, bool runtime, struct berthd_backend_config *ret,
                                struct berth_error *reterr);

/**
 * berthd_config_defaults() - zero @c and give every optional integer
 * setting (journal, http, retention, reconcile_interval_ns) its default; every string
 * is NULL and there is no backend.  What berthd_config_parse() starts from,
 * and where a configuration to write starts.
 * @c: caller-owned; nothing it held is released.
 */
void berthd_config_defaults(struct berthd_config *c);

/**
 * berthd_config_unauthenticated_share() - how many connections may be
 * unauthenticated at once: http.max_unauthenticated, but never more than
 * half of http.max_connections (at least 1), so that authenticated clients
 * always have slots.
 */
int64_t berthd_config_unauthenticated_share(const struct berthd_config *c);

/**
 * berthd_config_front_threads() - how many front threads berthd runs (TLS
 * handshakes, TLS records and HTTP framing): http.threads, or when it is 0
 * one per CPU online (sysconf(_SC_NPROCESSORS_ONLN); 1 when that fails).
 * Always 1..BERTH_BERTHD_FRONT_THREADS_MAX.
 */
int64_t berthd_config_front_threads(const struct berthd_config *c);

/**
 * berthd_config_start_concurrency() - how many job starts berthd runs at
 * once: start_concurrency, or when it is 0 twice the CPUs online
 * (sysconf(_SC_NPROCESSORS_ONLN); 2 when that fails).  Always 1..1024.
 */
int64_t berthd_config_start_concurrency(const struct berthd_config *c);

/**
 * berthd_config_parse() - parse and check @len bytes of berthd.json.
 * @text:              the document (need not be NUL-terminated).
 * @default_plugindir: plugin_directory when the document names none
 *                     (borrowed: must outlive @ret).
 * @ret:               receives the configuration; release it with
 *                     berthd_config_clear().  Cleared on failure.
 * @reterr:            optional; on failure names the member and the rule
 *                     ("config.backends.NAME.plugin must be ...").
 *
 * Checks every rule of berthd.json(5) that needs no file: members and
 * types, absolute paths, ranges, names, the listen address, the plugin
 * pins' syntax, request_timeout_ns >= header_timeout_ns,
 * max_retained_jobs >= max_active_jobs and the range of
 * evidence.config.max_object_bytes.
 * Return: 0; -EBADMSG; -EFBIG over BERTH_BERTHD_CONFIG_MAX; -ENOMEM.
 */
int berthd_config_parse(const char *text, size_t len, const char *default_plugindir, struct berthd_config *ret,
                        struct berth_error *reterr);

/**
 * berthd_config_load() - read @path with berthd_read_public_file() (at most
 * BERTH_BERTHD_CONFIG_MAX bytes) and berthd_config_parse() it.
 * Return: 0; the errors of both, messages prefixed with @path.
 */
int berthd_config_load(const char *path, const char *default_plugindir, struct berthd_config *ret,
                       struct berth_error *reterr);

/** berthd_config_clear() - release what @c holds (its document) and zero it; accepts NULL. */
void berthd_config_clear(struct berthd_config *c);

/**
 * berthd_config_to_json() - the berthd.json document of @c, as
 * "berthctl dev-init" writes it: schema_version, broker_name, listen, tls,
 * the key, policy and directory paths, plugin_directory and probe when set,
 * each journal, http, retention and reconcile setting that differs from
 * its default (berthd_config_defaults()), "backends" (always, {} without
 * any), "images" when @c->has_images and "evidence" when @c->has_evidence.
 * A backend has its plugin, sha256 and config when set,
 * require_qualification always and qualify_at_startup when true; the image
 * source and the evidence store their plugin, sha256 and config (the
 * evidence store's config is written as given: @evidence_max_object_bytes
 * is what parsing read from it, never written on its own).
 * @c:   the configuration; only read.  The values are not checked:
 *       berthd_config_parse() of the serialised result does that.
 * @ret: receives a new object (deep copies of the backends' configs); the
 *       caller owns it.
 *
 * When the values of @c are valid, berthd_config_parse() of the result
 * gives back the same settings (and the default plugin directory when @c
 * names none).
 * Return: 0; -EINVAL when @c or @ret is NULL, a required string
 * (broker_name, address, the tls, key and policy paths, state_directory,
 * a backend's name or plugin, the image source's or evidence store's
 * plugin) is NULL, two
 * backends have the same name, or n_backends exceeds
 * BERTH_BERTHD_BACKENDS_MAX; -ENOMEM.
 */
int berthd_config_to_json(const struct berthd_config *c, json_t **ret, struct berth_error *reterr);

/**
 * berthd_read_public_file() - read a file that need not be secret but must
 * be trusted (the configuration, certificates, CA bundles, pool manifests):
 * absolute, opened with no symbolic link on its path, a regular file with
 * one link, owned by the effective uid or root, not writable by group or
 * others, at most @max bytes.
 * @ret, @ret_len: receive a malloc'd, NUL-terminated copy (free(3) it) and
 *       its length without the NUL.
 * Return: 0; -EINVAL (not absolute), -ELOOP (a symlink on the path),
 * -EBADFD (not a regular file), -EPERM (owner or mode bits), -EMLINK (more
 * than one link), -EFBIG (over @max), -ENOMEM, and the errors of openat2(2),
 * fstat(2) and read(2); messages name @path.
 */
int berthd_read_public_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * berthd_read_secret_file() - read a private file (keys): as
 * berthd_read_public_file(), but owned by the effective uid and with no
 * access at all for group or others.
 */
int berthd_read_secret_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr);

#endif /* BERTH_BERTHD_CONFIG_H */
