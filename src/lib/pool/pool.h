/* SPDX-License-Identifier: MIT */
/*
 * pool.h -- named sandbox pool manifests (schema_version 1).
 *
 * A pool is the operator's placement contract: which backends work may run
 * on (in preference order), the base workspace template, which knobs a
 * submitter may turn, and the ceilings (capabilities, network egress,
 * credential environment variables).  Its identity is its pool_hash: the
 * lowercase hex SHA-256 of the canonical JSON of the normalised manifest
 * without pool_hash.  Normalising fills defaults and sorts and de-duplicates
 * the set-like lists, so key order and duplicates in the input never change
 * the hash; backend_allowlist keeps its order (it is the preference order),
 * so reordering it does.
 *
 * The manifest (every member, defaults in brackets):
 *   schema_version           1 (required)
 *   name                     a pool name, berth_pool_name_valid() (required)
 *   backend_allowlist        1..BERTH_POOL_BACKENDS_MAX distinct backend
 *                            names, berth_backend_name_valid() (required)
 *   template.root            absolute guest path ["/workspace"]
 *   template.env             object of string values [{}]
 *   template.timeout_seconds 1..604800 [1800]
 *   exposed_fields           subset of root, env, timeout_seconds, backend,
 *                            capabilities, network_egress_class, plus
 *                            "env.NAME" entries (with env) that let
 *                            overrides set NAME although envsafe.h
 *                            refuses it [[]]
 *   max_concurrency          0..1000000, 0 = unbounded [0]
 *   capability_ceiling       subset of file_rw, exec, network, gpu,
 *                            snapshot, persistent_volumes; must hold exec and
 *                            file_rw [["exec","file_rw"]]
 *   network_egress_class     none < loopback < restricted < open ["none"]
 *   credential_env_allowlist environment variable names [[]]
 *   pool_hash                optional; refused unless it matches
 *
 * Unknown members are refused.  All functions are thread-safe; a struct
 * berth_pool is immutable after parsing and may be shared between threads.
 */
#ifndef BERTH_POOL_H
#define BERTH_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

/* The name rules (berth_pool_name_valid(), berth_backend_name_valid()). */
#include "digest.h"
#include "names.h"

#define BERTH_POOL_SCHEMA_VERSION 1
#define BERTH_POOL_MANIFEST_MAX (256 * 1024) /**< largest manifest document, bytes */
#define BERTH_POOL_BACKENDS_MAX 64           /**< most entries in backend_allowlist */
#define BERTH_HASH_HEX_LEN BERTH_SHA256_HEX_LEN /**< a bare hex SHA-256 (pool, placement hashes) */

/** Capabilities, one bit each, in the sorted order of their names. */
enum berth_capability {
    BERTH_CAP_EXEC,
    BERTH_CAP_FILE_RW,
    BERTH_CAP_GPU,
    BERTH_CAP_NETWORK,
    BERTH_CAP_PERSISTENT_VOLUMES,
    BERTH_CAP_SNAPSHOT,
    BERTH_CAP_COUNT,
};
#define BERTH_CAP_BIT(c) (1u << (c))
/** The capabilities every sandbox has and every ceiling must hold. */
#define BERTH_CAP_BASE (BERTH_CAP_BIT(BERTH_CAP_EXEC) | BERTH_CAP_BIT(BERTH_CAP_FILE_RW))

/** Override fields a pool can expose, in sorted order of their names. */
enum berth_pool_field {
    BERTH_FIELD_BACKEND,
    BERTH_FIELD_CAPABILITIES,
    BERTH_FIELD_ENV,
    BERTH_FIELD_NETWORK_EGRESS_CLASS,
    BERTH_FIELD_ROOT,
    BERTH_FIELD_TIMEOUT_SECONDS,
    BERTH_FIELD_COUNT,
};

/** Network egress classes, ordered from narrowest to widest. */
enum berth_egress {
    BERTH_EGRESS_NONE,
    BERTH_EGRESS_LOOPBACK,
    BERTH_EGRESS_RESTRICTED,
    BERTH_EGRESS_OPEN,
    BERTH_EGRESS_COUNT,
};

/** Name tables, indexed by the enums above. */
extern const char *const berth_capability_names[BERTH_CAP_COUNT];
extern const char *const berth_pool_field_names[BERTH_FIELD_COUNT];
extern const char *const berth_egress_names[BERTH_EGRESS_COUNT];

/**
 * berth_name_set_parse() - a JSON array of names from @table (duplicates
 * allowed) as a bit set (bit i = table[i]).
 * @what:    how to name the array in messages.
 * @ret_bad: optional; on failure the index of the offending entry.
 * Return: 0, or -EBADMSG when @arr is not an array of known names.
 */
int berth_name_set_parse(const json_t *arr, const char *what, const char *const *table, size_t n, unsigned *ret,
                         size_t *ret_bad, struct berth_error *reterr);

/** berth_name_set_json() - the names of the bits of @bits, in table order (a new array), or NULL. */
json_t *berth_name_set_json(unsigned bits, const char *const *table, size_t n);

/**
 * struct berth_pool - a parsed, normalised, hashed manifest.
 * @manifest: the normalised manifest without pool_hash (what is hashed and
 *            stored); the other members are views of it.
 */
struct berth_pool {
    const char *name;
    const char **backends;
    size_t n_backends;
    const char *root;
    const json_t *env;
    int64_t timeout_seconds;
    unsigned exposed; /* bits of enum berth_pool_field */
    const char **exposed_env; /* the NAMEs of its "env.NAME" exposed_fields (envsafe.h) */
    size_t n_exposed_env;
    int64_t max_concurrency;
    unsigned ceiling; /* bits of enum berth_capability */
    enum berth_egress egress;
    const char **credential_allowlist;
    size_t n_credential_allowlist;
    json_t *manifest;
    char pool_hash[BERTH_HASH_HEX_LEN + 1];
    char template_hash[BERTH_HASH_HEX_LEN + 1];
};

/**
 * berth_pool_parse() - parse a manifest document strictly (canon.h rules,
 * at most BERTH_POOL_MANIFEST_MAX bytes), validate, normalise and hash it.
 * Return: 0; -EBADMSG with reterr naming the member and rule; -EFBIG;
 * -ENOMEM.
 */
int berth_pool_parse(const char *json, size_t len, struct berth_pool **ret, struct berth_error *reterr);

/** berth_pool_from_json() - berth_pool_parse() of an already parsed document. */
int berth_pool_from_json(const json_t *doc, struct berth_pool **ret, struct berth_error *reterr);

/** berth_pool_free() - release; accepts NULL. */
void berth_pool_free(struct berth_pool *pool);

static inline void berth_pool_freep(struct berth_pool **p)
{
    berth_pool_free(*p);
}
/** _cleanup_pool_ - an owned struct berth_pool pointer, freed at scope exit. */
#define _cleanup_pool_ __attribute__((cleanup(berth_pool_freep)))

/**
 * berth_pool_to_json() - the normalised manifest with its pool_hash, as a new
 * reference (what "pool show" prints).  NULL when out of memory.
 */
json_t *berth_pool_to_json(const struct berth_pool *pool);

/**
 * berth_hash_hex_json() - bare lowercase hex SHA-256 of the canonical
 * serialisation of @value into @out (BERTH_HASH_HEX_LEN + 1 bytes).
 * Return: 0 or the errors of berth_json_serialize().
 */
int berth_hash_hex_json(const json_t *value, char out[BERTH_HASH_HEX_LEN + 1], struct berth_error *reterr);

/**
 * berth_env_name_valid() - whether @name is a usable environment variable
 * name: [A-Za-z_][A-Za-z0-9_]*, at most 128 bytes.
 */
bool berth_env_name_valid(const char *name);

/**
 * berth_guest_path_valid() - whether @path is an absolute guest path of at
 * most 1024 bytes with no "." or ".." component and no empty component (so
 * no "//" and no trailing "/"; "/" itself is valid).
 */
bool berth_guest_path_valid(const char *path);

#endif /* BERTH_POOL_H */
