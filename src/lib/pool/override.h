/* SPDX-License-Identifier: MIT */
/*
 * override.h -- governed overrides: merging a submitter's overrides into a
 * pool's template, failing closed.
 *
 * Overrides are a JSON object whose members may be root, env,
 * timeout_seconds, backend, capabilities and network_egress_class.  The
 * merge is a pure function of (pool, overrides, credential names) and either
 * yields the effective manifest or a refusal with a stable reason and the
 * field it concerns.  First every member (in sorted order) must be a known,
 * exposed field; then each field in sorted order is checked in full (its
 * value, then its ceiling), and the first failure is the refusal:
 *
 *   unknown_field              a member that is not an override field
 *   non_exposed_field          a field the pool does not expose
 *   malformed_value            wrong type or format (root not an absolute
 *                              path, env not an object of strings with
 *                              variable names, timeout_seconds not in
 *                              1..604800, an unknown capability or egress
 *                              class, a backend name that is not a string)
 *   backend_not_allowed        backend not in the pool's allowlist
 *   capability_above_ceiling   a capability the ceiling does not hold
 *   egress_widened             an egress class wider than the pool's
 *   refused_env                an env variable overrides may not set
 *                              (the dynamic loader's, a shell's start-up
 *                              variables, PATH, ...: envsafe.h) that the
 *                              pool does not expose as "env.NAME"
 *   credential_env_not_allowed an env variable that names a credential and
 *                              is not in the pool's credential_env_allowlist
 *
 * Which env names are credentials: every name in the credential_env_allowlist
 * of any pool ever registered in the journal (passed in by the caller; a name
 * stays a credential after its pool is retired), and every name that,
 * compared case-insensitively, is TOKEN, SECRET, KEY, PASSWORD, PASSWD or
 * CREDENTIALS or ends in "_" followed by one of those, plus PGPASSWORD and
 * MYSQL_PWD.  Because of the first part, whether overrides are refused can
 * depend on the other pools a journal holds.
 *
 * The effective manifest: env overlays the template's env; capabilities are
 * the union of exec, file_rw and the request; the egress class is the
 * request's or the pool's; credential_env lists (sorted) every name in the
 * merged env that is a credential by the fixed rule or by the pool's own
 * allowlist -- never by other pools' lists, so that the effective manifest
 * and the placement receipt depend only on the pool and the overrides.  Its hash covers {pool_hash, template
 * (merged), backend_override (or null), capabilities (sorted),
 * network_egress_class, credential_env}.  overrides_hash covers the
 * normalised overrides (capabilities sorted and de-duplicated).
 *
 * Thread-safe; results are immutable.
 */
#ifndef BERTH_OVERRIDE_H
#define BERTH_OVERRIDE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <berth/error.h>

#include "pool.h"

/** Stable refusal reasons (the strings are part of the audit record). */
enum berth_refusal_reason {
    BERTH_REFUSAL_UNKNOWN_FIELD,
    BERTH_REFUSAL_NON_EXPOSED_FIELD,
    BERTH_REFUSAL_MALFORMED_VALUE,
    BERTH_REFUSAL_BACKEND_NOT_ALLOWED,
    BERTH_REFUSAL_CAPABILITY_ABOVE_CEILING,
    BERTH_REFUSAL_EGRESS_WIDENED,
    BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED,
    BERTH_REFUSAL_NO_BACKEND,
    BERTH_REFUSAL_REFUSED_ENV,
    BERTH_REFUSAL_COUNT,
};

/** "unknown_field", "non_exposed_field", ... indexed by the enum. */
extern const char *const berth_refusal_names[BERTH_REFUSAL_COUNT];

/**
 * struct berth_refusal - why a merge or placement was refused.
 * @reason: the reason.
 * @field:  the field concerned: "backend", "env.API_TOKEN",
 *          "capabilities.gpu", "(overrides)" when the document itself is
 *          not an object, "" for no_backend.
 * @detail: a sentence for people.
 */
struct berth_refusal {
    enum berth_refusal_reason reason;
    char field[160];
    char detail[256];
};

/**
 * struct berth_effective - the effective manifest of one dispatch.
 * @overrides:      the normalised overrides (what overrides_hash covers).
 * @json:           the effective manifest (what effective_manifest_hash
 *                  covers).
 * @backend_override: the requested backend or NULL.
 */
struct berth_effective {
    json_t *overrides;
    json_t *json;
    const char *backend_override;
    unsigned capabilities;
    unsigned needs; /* bits of enum berth_job_need (placement.h); the caller sets them after the merge */
    enum berth_egress egress;
    char pool_hash[BERTH_HASH_HEX_LEN + 1];
    char overrides_hash[BERTH_HASH_HEX_LEN + 1];
    char effective_hash[BERTH_HASH_HEX_LEN + 1];
};

/**
 * berth_credential_name() - whether the env name @name counts as a
 * credential, given @known (names from every pool's allowlist, may be NULL).
 */
bool berth_credential_name(const char *name, const json_t *known);

/**
 * berth_overrides_hash() - the overrides_hash of @overrides (normalised as
 * the merge does, as far as they are well-formed), for refusal records.
 * Return: 0 or a serialisation error.
 */
int berth_overrides_hash(const json_t *overrides, char out[BERTH_HASH_HEX_LEN + 1], struct berth_error *reterr);

/**
 * berth_pool_merge() - apply @overrides (NULL means {}) to @pool.
 * @known_credentials: JSON array of names allowlisted by any pool, or NULL.
 * @ret:     receives the effective manifest (free with berth_effective_free()).
 * @refusal: filled when the merge is refused.
 * Return: 0; -EPERM when refused (@refusal says why); -ENOMEM; -EINVAL.
 */
int berth_pool_merge(const struct berth_pool *pool, const json_t *overrides, const json_t *known_credentials,
                     struct berth_effective **ret, struct berth_refusal *refusal, struct berth_error *reterr);

/** berth_effective_free() - release; accepts NULL. */
void berth_effective_free(struct berth_effective *e);

#endif /* BERTH_OVERRIDE_H */
