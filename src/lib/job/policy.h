/* SPDX-License-Identifier: MIT */
/*
 * policy.h -- host policy: who may use this broker, for what, until when.
 *
 * The policy file (strict JSON, no unknown members, at most 1 MiB, a regular
 * file owned by the effective uid, mode 0600, one link, no symlink on its
 * path):
 *
 *   {"schema_version": 1, "not_before": "<ns>", "not_after": "<ns>",
 *    "subjects": [                                      at most 512
 *      {"principal": "dev",                             berth_principal_valid()
 *       "scope": ["team", "dev"],                       1..16 strings, ordered
 *       "fingerprints": ["<64 hex>", ...],              1..16, unique in the file
 *       "pools": ["default"],                           0..256 pool names
 *                                                       (berth_pool_name_valid())
 *       "images": ["sha256:..."],                       0..256 manifest digests
 *       "limits": {the seven job limits},               the ceiling
 *       "not_before": "<ns>", "not_after": "<ns>",      inside the file's interval
 *       "admin": false,                                 optional: audit export,
 *                                                       pool registration, every
 *                                                       owner's evidence
 *       "evidence_quota": {"bytes": N, "objects": N},   optional, both members
 *                                                       optional: what the
 *                                                       subject may keep in the
 *                                                       evidence store
 *       "serves": ["default"]}],                        optional, 0..256 pool
 *                                                       names: the pools this
 *                                                       subject may serve as a
 *                                                       remote worker
 *                                                       (docs/workers.md): its
 *                                                       principal is the
 *                                                       worker's name
 *    "unlisted_clients": "refuse"}                      optional: "refuse" (the
 *                                                       default) or "health"
 *
 * evidence_quota bounds the evidence one subject (principal and scope) owns
 * in the store at once: "bytes" 0..2^53-1 (default
 * BERTH_EVIDENCE_QUOTA_BYTES_DEFAULT, 1 GiB) of content and "objects"
 * 0..BERTH_EVIDENCE_QUOTA_OBJECTS_MAX (default
 * BERTH_EVIDENCE_QUOTA_OBJECTS_DEFAULT, 10,000) objects; 0 allows none.
 * Tombstones do not count.  berthd checks it when an upload starts and
 * again when it commits (docs/evidence.md).
 *
 * A fingerprint is the lowercase hex SHA-256 of a client certificate's leaf
 * DER.  Each (principal, scope) pair appears once.  Identity comes only from
 * the fingerprint of the verified certificate; nothing in a request chooses
 * it.  A verified certificate whose fingerprint no subject lists is an
 * unlisted client: berthd closes its connection right after the TLS
 * handshake, or with "unlisted_clients": "health" serves it /v1/health and
 * nothing else (for load balancers and monitors that hold a CA-signed
 * certificate but no grant).
 *
 * A struct berth_policy_source re-reads the file whenever its device,
 * inode, size or modification time change (publish updates by atomic
 * replacement), and checks validity against the clock on every lookup.  A
 * missing, malformed or expired file denies everything; there is no
 * fallback to an older snapshot.  Not thread-safe.
 */
#ifndef BERTH_POLICY_H
#define BERTH_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "digest.h"
#include "job.h"

#define BERTH_POLICY_MAX (1024 * 1024)   /**< largest policy file, bytes */
#define BERTH_POLICY_SUBJECTS_MAX 512    /**< most subjects in a policy */
#define BERTH_POLICY_SCOPE_MAX 16        /**< most strings in a subject's scope */
#define BERTH_POLICY_FINGERPRINTS_MAX 16 /**< most fingerprints of a subject */
#define BERTH_POLICY_LIST_MAX 256        /**< most pools, and most images, of a subject */
#define BERTH_FINGERPRINT_LEN BERTH_SHA256_HEX_LEN /**< hex characters of a fingerprint, without NUL */
#define BERTH_EVIDENCE_QUOTA_BYTES_DEFAULT ((int64_t)1024 * 1024 * 1024) /**< evidence_quota.bytes default: 1 GiB */
#define BERTH_EVIDENCE_QUOTA_OBJECTS_DEFAULT 10000                    /**< evidence_quota.objects default */
#define BERTH_EVIDENCE_QUOTA_OBJECTS_MAX 100000000                    /**< largest evidence_quota.objects */

/**
 * struct berth_evidence_quota - what one subject may keep in the evidence
 * store: @bytes of content in at most @objects objects (0: none).
 */
struct berth_evidence_quota {
    int64_t bytes;
    int64_t objects;
};

/** struct berth_subject - one grant (strings point into the policy). */
struct berth_subject {
    const char *principal;
    const json_t *scope;
    const json_t *fingerprints;
    const json_t *pools;
    const json_t *images;
    struct berth_limits limits;
    int64_t not_before, not_after;
    bool admin;
    struct berth_evidence_quota evidence_quota;
    const json_t *serves; /* pools it may serve as a worker, or NULL */
};

/**
 * struct berth_policy - a parsed policy document.
 * @unlisted_health: "unlisted_clients" is "health".
 */
struct berth_policy {
    json_t *doc;
    int64_t not_before, not_after;
    bool unlisted_health;
    struct berth_subject *subjects;
    size_t n_subjects;
};

/**
 * berth_policy_parse() - parse and validate a policy document.
 * Return: 0; -EBADMSG naming the member and rule; -EFBIG; -ENOMEM.
 */
int berth_policy_parse(const char *json, size_t len, struct berth_policy **ret, struct berth_error *reterr);

/**
 * berth_policy_scope_valid() - whether @scope is a scope as a subject has
 * one: an array of 1 to BERTH_POLICY_SCOPE_MAX strings of 1 to 128 bytes.
 * The rule in words: BERTH_POLICY_SCOPE_RULE.  Pure, thread-safe.
 */
bool berth_policy_scope_valid(const json_t *scope);
#define BERTH_POLICY_SCOPE_RULE "an array of 1 to 16 strings of 1 to 128 bytes"

/** berth_policy_free() - release; accepts NULL. */
void berth_policy_free(struct berth_policy *p);

/**
 * berth_policy_lists() - whether a subject of @p lists @fingerprint (64
 * lowercase hex), whatever the validity periods; for the front door, which
 * closes connections of certificates the policy does not know.
 * Return: false for a NULL @p or @fingerprint.
 */
bool berth_policy_lists(const struct berth_policy *p, const char *fingerprint);

/**
 * berth_policy_subject() - the subject whose fingerprints include @fingerprint
 * (64 lowercase hex), if the document and the subject are valid at @now_ns.
 * Return: the subject, or NULL (unknown fingerprint, or outside a validity
 * interval; *@ret_why, when not NULL, says which).
 */
const struct berth_subject *berth_policy_subject(const struct berth_policy *p, const char *fingerprint, int64_t now_ns,
                                                 const char **ret_why);

/** berth_subject_allows_pool() / _image() - membership in the grant's lists. */
bool berth_subject_allows_pool(const struct berth_subject *s, const char *pool);
bool berth_subject_allows_image(const struct berth_subject *s, const char *digest);
/** berth_subject_serves_pool() - whether the grant lets its holder serve @pool as a worker ("serves"). */
bool berth_subject_serves_pool(const struct berth_subject *s, const char *pool);

/**
 * berth_policy_read_file() - read the policy file at the absolute @path with
 * the checks every reader applies: a regular file owned by the effective
 * uid, mode 0600, one link, no symlink on its path, at most
 * BERTH_POLICY_MAX bytes.
 * @ret, @ret_len: a malloc'd copy, NUL appended (not counted).
 * Return: 0 or the errors of berth_read_file_at() (fsutil.h).
 */
int berth_policy_read_file(const char *path, char **ret, size_t *ret_len, struct berth_error *reterr);

/** A policy file watched for changes. */
struct berth_policy_source;

/** berth_policy_source_new() - watch the absolute @path (nothing read yet). */
int berth_policy_source_new(const char *path, struct berth_policy_source **ret);

/** berth_policy_source_free() - release; accepts NULL. */
void berth_policy_source_free(struct berth_policy_source *src);

/**
 * berth_policy_current() - the policy in force at @now_ns: re-read when the
 * file changed, refused when missing, malformed or expired.
 * @ret: receives the policy (borrowed; valid until the next call).
 * Return: 0; -EACCES (no valid policy: reterr says why); -ENOMEM.
 */
int berth_policy_current(struct berth_policy_source *src, int64_t now_ns, const struct berth_policy **ret,
                         struct berth_error *reterr);

/**
 * berth_policy_reloads() - how many times the file was (re)read; for tests
 * and metrics.
 */
uint64_t berth_policy_reloads(const struct berth_policy_source *src);

#endif /* BERTH_POLICY_H */
