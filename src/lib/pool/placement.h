/* SPDX-License-Identifier: MIT */
/*
 * placement.h -- choosing a backend for an effective manifest, and the
 * placement receipt that proves the choice.
 *
 * Candidates are the pool's backend_allowlist in order.  Each is kept or
 * dropped with a reason:
 *
 *   not_requested             the submitter's backend override names another
 *   not_configured            no configured backend has that name
 *   REASON                    its offer names this pool in
 *                             "pools_unavailable", with why: the remote
 *                             workers ("workers", docs/workers.md) have
 *                             "no_enrolled_worker" live and enrolled into
 *                             this pool's manifest, "workers_unqualified"
 *                             (those are not qualified) or "workers_busy"
 *                             (no free slot left after the queued runs)
 *   not_serving_pool          its offer lists the pools it serves ("pools",
 *                             pool hashes), and not this one
 *   REASON                    its offer says it is "unavailable" now, and
 *                             why (a code of lowercase letters and '_',
 *                             such as "containment_unreachable": a backend
 *                             bound to a containment whose service manager
 *                             cannot be reached, plugin.h capabilities)
 *   missing_capability:NAME   it does not offer a required capability
 *   egress_unsupported:CLASS  it cannot enforce the egress class
 *   unqualified               it has no qualification and requires one
 *   qualification_expired     its qualification expired (at @now_ns)
 *   eligible                  kept
 *   eligible_unqualified      kept although unqualified: its configuration
 *                             says require_qualification false (development)
 *
 * The first kept candidate is chosen; an override that cannot be honoured
 * gives no fallback.  The receipt is
 *
 *   {schema_version: 1, pool_hash, template_hash, overrides_hash,
 *    effective_manifest_hash, selector_inputs: [{backend, kept, reason}],
 *    chosen_backend}
 *
 * with no time and no host name, so two hosts with the same pool, overrides
 * and backends seal byte-identical receipts; placement_hash is the bare hex
 * SHA-256 of its canonical JSON.
 *
 * The backend set describes configured backends as their runtime plugins'
 * capabilities() report them, one object per backend name:
 *
 *   {"runsc": {"capabilities": ["exec","file_rw"],
 *              "egress_classes": ["none","loopback"],
 *              "qualification": {"id": "...", "expires_ns": "<ns>"},
 *              "require_qualification": true}, ...}
 *
 * A backend's "capabilities" may also hold the job needs "inputs" (it
 * bind-mounts staged inputs read-only) and "outputs" (it captures declared
 * outputs, open_output()): a job with inputs or outputs is placed only on a
 * backend that reports the matching need (missing_capability:inputs, ...),
 * and its receipt then lists them as "job_needs" (absent when the job needs
 * neither, so that such receipts are unchanged).
 *
 * "unavailable" (optional) is that reason code; "pools" (optional) the
 * pool hashes it serves; "pools_unavailable" (optional) an object of pool
 * hashes to the reason code it takes no work of that pool now.
 * "qualification" may be the string "unqualified"; require_qualification
 * defaults to true; the informational members backend, isolation, limits
 * and runtime_version are accepted and ignored.  Thread-safe.
 */
#ifndef BERTH_PLACEMENT_H
#define BERTH_PLACEMENT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "override.h"
#include "pool.h"

#define BERTH_PLACEMENT_SCHEMA_VERSION 1
#define BERTH_BACKEND_SET_MAX (256 * 1024) /**< largest backend set document, bytes */

/** What a job needs of its backend besides the pool's capabilities, in sorted order of their names. */
enum berth_job_need {
    BERTH_NEED_INPUTS,  /* "inputs": staged inputs bind-mounted read-only */
    BERTH_NEED_OUTPUTS, /* "outputs": declared outputs captured (open_output) */
    BERTH_NEED_COUNT,
};
#define BERTH_NEED_BIT(n) (1u << (n))

/** Names of enum berth_job_need, as backends report them among their capabilities. */
extern const char *const berth_job_need_names[BERTH_NEED_COUNT];

/** berth_reason_code_valid() - whether @s is a reason code: 1 to 48 of [a-z_] (NULL: false). */
bool berth_reason_code_valid(const char *s);

/** struct berth_backend_offer - what one configured backend offers. */
struct berth_backend_offer {
    const char *name;
    unsigned capabilities; /* bits of enum berth_capability */
    unsigned needs;        /* bits of enum berth_job_need it can serve */
    unsigned egress;       /* bits of enum berth_egress */
    bool qualified;
    int64_t qualification_expires_ns;
    bool require_qualification;
    const char *unavailable; /* why it takes no work now (a reason code), or NULL */
    const json_t *pools;     /* the pool hashes it serves (borrowed from the set), or NULL: every pool */
    const json_t *pools_unavailable; /* {pool hash: reason code} it takes no work of now (borrowed), or NULL */
};

/** struct berth_backend_set - every configured backend (owns @doc). */
struct berth_backend_set {
    json_t *doc;
    struct berth_backend_offer *v;
    size_t n;
};

/**
 * berth_backend_set_parse() - parse a backend set document (see above).
 * Return: 0, -EBADMSG naming the backend and member, -EFBIG, -ENOMEM.
 */
int berth_backend_set_parse(const char *json, size_t len, struct berth_backend_set **ret, struct berth_error *reterr);

/** berth_backend_set_from_json() - the same for a parsed document. */
int berth_backend_set_from_json(const json_t *doc, struct berth_backend_set **ret, struct berth_error *reterr);

/** berth_backend_set_empty() - a set with no backends. */
int berth_backend_set_empty(struct berth_backend_set **ret);

/** berth_backend_set_free() - release; accepts NULL. */
void berth_backend_set_free(struct berth_backend_set *set);

/**
 * berth_place() - choose a backend and seal the placement receipt.
 * @e:              the effective manifest; @e->needs are the job's needs.
 * @now_ns:         the time qualifications are judged at (not recorded).
 * @ret_receipt:    on success, the receipt (a new reference).
 * @ret_hash:       on success, its placement_hash.
 * @refusal:        on -EPERM, reason no_backend and a summary.
 * @ret_selector_inputs: on -EPERM, the candidates and their reasons (a new
 *                  reference; may be NULL when not wanted).
 * Return: 0; -EPERM when no candidate is kept; -ENOMEM; -EINVAL.
 */
int berth_place(const struct berth_pool *pool, const struct berth_effective *e, const struct berth_backend_set *set,
                int64_t now_ns, json_t **ret_receipt, char ret_hash[BERTH_HASH_HEX_LEN + 1],
                struct berth_refusal *refusal, json_t **ret_selector_inputs, struct berth_error *reterr);

#endif /* BERTH_PLACEMENT_H */
