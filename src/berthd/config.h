/* SPDX-License-Identifier: MIT */
/*
 * config.h -- berthd.json, parsed strictly (docs/berthd.md).
 */
#ifndef BERTHD_CONFIG_H
#define BERTHD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#define BERTHD_CONFIG_MAX (1024 * 1024) /**< largest berthd.json, bytes */
#define BERTHD_MAX_BACKENDS 64

/** One configured runtime backend; strings borrowed from the config document. */
struct berthd_backend_config {
    const char *name;
    const char *plugin;
    const char *sha256; /* NULL: no pin */
    const json_t *config;
    bool require_qualification;
    bool qualify_at_startup; /* run the live probes at startup when no current qualification exists */
};

/** struct berthd_config - every setting, defaults filled in; strings borrowed from @doc. */
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
    int64_t max_connections, max_header_bytes, max_body_bytes;
    int64_t header_timeout_ns, request_timeout_ns, idle_timeout_ns, shutdown_timeout_ns;
    int64_t reconcile_interval_ns;
    struct berthd_backend_config backends[BERTHD_MAX_BACKENDS];
    size_t n_backends;
    struct berthd_backend_config images; /* the image source, when has_images */
    bool has_images;
};

/**
 * berthd_config_load() - read @path (absolute, no symlinks, a regular file
 * owned by the effective uid or root, not writable by group or others, at
 * most BERTHD_CONFIG_MAX bytes, one link) and parse it.
 * @default_plugindir: used when the file names no plugin_directory.
 * Return: 0; -EBADMSG naming the member; the errors of reading the file.
 */
int berthd_config_load(const char *path, const char *default_plugindir, struct berthd_config *ret,
                       struct berth_error *reterr);

/** berthd_config_parse() - the same for @len bytes already read. */
int berthd_config_parse(const char *text, size_t len, const char *default_plugindir, struct berthd_config *ret,
                        struct berth_error *reterr);

/** berthd_config_clear() - release what @c holds. */
void berthd_config_clear(struct berthd_config *c);

/**
 * berthd_read_public_file() - read a file that need not be secret but must
 * be trusted (configuration, certificates, CA bundles, pool manifests):
 * absolute, no symlinks, regular, owned by the effective uid or root, not
 * writable by group or others, at most @max bytes.
 */
int berthd_read_public_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * berthd_read_secret_file() - read a private file: as above, but owned by
 * the effective uid and with no access at all for group or others.
 */
int berthd_read_secret_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr);

#endif
