/* SPDX-License-Identifier: MIT */
/*
 * qualification.h -- signed qualification records of runtime backends and
 * their place in the journal.
 *
 * A qualification says: on this host (kernel release and machine), this
 * backend, driving this exact runtime binary (its SHA-256 as the plugin
 * reports it in capabilities().runtime.sha256) with this exact
 * configuration (config_digest, below), passed (or failed) the live probes
 * (qualify/probes.h) run with this probe program at qualified_at; a passed one is
 * valid until expires_at.  It travels as an envelope (envelope.h) signed
 * with the broker's receipt key:
 *
 *   {"qualification": {"kind": "berth.qualification", "schema_version": 1,
 *      "id": "q<32 hex>", "broker", "key_id", "backend", "plugin",
 *      "plugin_version", "config_digest", "probe_sha256", "passed": bool,
 *      "runtime": {path, version, sha256}, "isolation", "kernel", "machine",
 *      "probes": [{name, outcome, detail}],
 *      "qualified_at": "<ns>", "expires_at": "<ns>"},
 *    "signature": "..."}
 *
 * id = "q" + the first 32 hex digits of the SHA-256 of the canonical body
 * without "id".  config_digest covers the backend's "config" object in
 * berthd.json, the plugin file's SHA-256 and the shim's SHA-256 (as the
 * plugin reports it in capabilities().shim_sha256), so a changed flag, uid,
 * plugin or shim is a different configuration.  berthd offers a backend as
 * qualified only while the *newest* record for its current runtime digest,
 * configuration and running kernel passed and has not expired: an upgrade,
 * a configuration change, time, or a failed re-run each end it.
 */
#ifndef BERTH_QUALIFICATION_H
#define BERTH_QUALIFICATION_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "digest.h"
#include "journal.h"
#include "sign.h"

#define BERTH_QUALIFICATION_ID_LEN 33 /**< "q" + 32 hex */
#define BERTH_QUALIFICATION_MAX (256 * 1024)

/**
 * berth_qualification_seal() - complete @body (adds kind, schema_version,
 * key_id and id) and sign it.
 * @body: the record's other members (see above); not changed (a copy is
 *        sealed), the caller keeps its reference.
 * @ret: receives the envelope.
 * Return: 0; -EBADMSG (a required member is missing or of the wrong type);
 * -ENOMEM; the errors of berth_envelope_seal().  Thread-safe.
 */
int berth_qualification_seal(const struct berth_signing_key *key, json_t *body, json_t **ret,
                             struct berth_error *reterr);

/**
 * berth_qualification_check() - check that @body has exactly the members
 * of a qualification record, each of its type (what seal, verify and store
 * each check first).
 * Return: 0; -EBADMSG (reterr names the member).  Thread-safe.
 */
int berth_qualification_check(const json_t *body, struct berth_error *reterr);

/**
 * berth_qualification_verify() - check @env is a qualification signed by
 * @pub, with the right kind, version and id.
 * @ret_body: optional; the body (borrowed from @env).
 * Return: 0; -EBADMSG (reterr says what is wrong).  Thread-safe.
 */
int berth_qualification_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const json_t **ret_body,
                               struct berth_error *reterr);

/**
 * berth_qualification_store() - record @env (sealed above) in the journal,
 * in its own transaction.
 * Return: 0; -EEXIST (that id is recorded already); journal errors.
 */
int berth_qualification_store(struct berth_journal *j, const json_t *env, struct berth_error *reterr);

/**
 * berth_qualification_current() - the newest record of @backend for runtime
 * @runtime_sha256, configuration @config_digest and kernel @kernel, if it
 * passed and is valid at @now_ns.
 * @ret_id: BERTH_QUALIFICATION_ID_LEN + 1 bytes.
 * @ret_expires_ns: its expiry.
 * Return: 0; -ENOENT (none, or the newest failed or expired); journal
 * errors.  Not thread-safe (the journal).
 */
int berth_qualification_current(struct berth_journal *j, const char *backend, const char *runtime_sha256,
                                const char *config_digest, const char *kernel, int64_t now_ns,
                                char ret_id[BERTH_QUALIFICATION_ID_LEN + 1], int64_t *ret_expires_ns,
                                struct berth_error *reterr);

/**
 * struct berth_qualification_binding - what one recorded qualification
 * covers, for the reconcile sweeps (broker.h).  Strings are copies in
 * fixed buffers.
 */
struct berth_qualification_binding {
    char backend[256];
    char runtime_sha256[BERTH_DIGEST_BUFSZ];
    char config_digest[BERTH_DIGEST_BUFSZ];
    char kernel[256];
    bool passed;
    int64_t expires_ns;
};

/**
 * berth_qualification_lookup() - the record with id @id (a receipt's
 * runtime.qualification), whatever its age or outcome.
 * Return: 0 with @ret filled; -ENOENT (no such record); -EINVAL; journal
 * errors.  Not thread-safe (the journal).
 */
int berth_qualification_lookup(struct berth_journal *j, const char *id, struct berth_qualification_binding *ret,
                               struct berth_error *reterr);

/**
 * berth_qualification_body() - the unsigned record of a passed probe run.
 * @caps: the backend's capabilities document (its runtime and isolation are
 *        copied); @probes: what berth_qualify_probes() returned (referenced).
 * @config_digest: berth_qualification_config_digest(); @probe_sha256: the
 *        probe program's digest; @passed: whether every probe passed.
 * @now_ns, @validity_ns: qualified_at and expires_at - qualified_at.
 * Return: a new object, or NULL (out of memory, or @caps lacks runtime or
 * isolation).
 */
json_t *berth_qualification_body(const char *broker, const char *backend, const char *plugin,
                                 const char *plugin_version, const char *config_digest, const char *probe_sha256,
                                 bool passed, const json_t *caps, json_t *probes, int64_t now_ns, int64_t validity_ns);

/**
 * berth_qualification_config_digest() - the config_digest of a backend:
 * sha256 of the canonical {"config": @config (or {}), "plugin_sha256":
 * @plugin_sha256, "shim_sha256": @caps.shim_sha256 (or null),
 * "containment": @containment}, the last member only when @containment is
 * not NULL (so a backend without one keeps the digest it always had).
 * @containment: the bound containment's identity,
 *        {"plugin_sha256": ..., "config": ...}
 *        (berthd_backend_instance.containment_identity): a backend
 *        qualified with one containment, or none, is not qualified with
 *        another.
 * Return: 0; -ENOMEM; -EIO.
 */
int berth_qualification_config_digest(const json_t *config, const char *plugin_sha256, const json_t *caps,
                                      const json_t *containment, char out[BERTH_DIGEST_BUFSZ],
                                      struct berth_error *reterr);

/** berth_kernel_release() - uname(2)'s release into @buf (@size bytes). */
void berth_kernel_release(char *buf, size_t size);

#endif /* BERTH_QUALIFICATION_H */
