/* SPDX-License-Identifier: MIT */
/*
 * receipt.h -- broker-signed receipts and results.
 *
 * A receipt says "this broker accepted this job, for this caller, placed it
 * here, and it must finish by then"; it is signed and written to the journal
 * before the backend is called.  Both travel as envelopes (envelope.h):
 *
 *   {"receipt": {
 *      "schema_version": 1, "kind": "berth.receipt",
 *      "broker": <name>, "key_id": <RFC 7638 key id of the signing key>,
 *      "job_id", "job_digest": "sha256:...",
 *      "run_id": the id the runtime knows the job by (jobstore.h),
 *      "principal", "scope": [strings],    -- from the authenticated caller
 *      "pool", "placement_hash", "backend",
 *      "runtime": {"plugin", "plugin_version", "qualification": id or null},
 *      "accepted_at": "<ns>", "deadline": "<ns>"},
 *    "signature": ...}
 *
 *   {"result": {
 *      "schema_version": 1, "kind": "berth.result",
 *      "broker", "key_id", "job_id", "job_digest",
 *      "receipt_digest": "sha256:..." of the canonical receipt envelope,
 *      "status": "exited" | "failed" | "cancelled" | "expired",
 *      "exit_code": integer or null, "reason": short code or null,
 *      "stdout": base64url, "stderr": base64url,   -- together at most the
 *                                                     job's output_bytes
 *      "outputs": [{"id", "digest", "size", "media_type"}],
 *      "output_error": {"id", "problem"} or null,
 *      "started_at": "<ns>" or null, "finished_at": "<ns>"},
 *    "signature": ...}
 *
 * "outputs" lists the job's declared outputs captured into the evidence
 * store, each exactly once, in the order job.outputs declares them; a
 * result with an "output_error" (a declared output that could not be
 * captured: status "failed", reason "output_invalid") lists none.  The
 * problems are those of berth_output_problem_names: "missing",
 * "too_large", "symlink", "hard_link", "not_regular", "unreadable" (the
 * runtime's checks) and "digest_mismatch" (the bytes read back are not
 * what the runtime reported), "refused" (the evidence store refuses the
 * content for good: an object with that digest was deleted by its owner).
 * A result signed before outputs existed has no "output_error": it reads
 * as null.
 *
 * Times are nanosecond strings (jsonobj.h).  Verification pins the broker's
 * public key from the verifier's own configuration, never from the document.
 * Thread-safe.
 */
#ifndef BERTH_RECEIPT_H
#define BERTH_RECEIPT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h>

#include "job.h"
#include "sign.h"

#define BERTH_RECEIPT_SCHEMA_VERSION 1

/** Who asked: principal and scope, from the authenticated transport. */
struct berth_identity {
    const char *principal;
    const json_t *scope; /* array of strings */
};

/** struct berth_receipt_params - what a receipt records (strings borrowed). */
struct berth_receipt_params {
    const char *broker;
    const struct berth_job *job;
    const char *run_id;
    struct berth_identity who;
    const char *pool;
    const char *placement_hash;
    const char *backend;
    const char *plugin;
    const char *plugin_version;
    const char *qualification; /* NULL: unqualified */
    int64_t accepted_at;
    int64_t deadline;
};

/**
 * berth_receipt_create() - build and sign a receipt.
 * @ret: receives the envelope {"receipt", "signature"}.
 * Return: 0, -EINVAL (missing members, deadline before acceptance), -ENOMEM,
 * -EIO.
 */
int berth_receipt_create(const struct berth_signing_key *key, const struct berth_receipt_params *p, json_t **ret,
                         struct berth_error *reterr);

/**
 * berth_receipt_verify() - check a receipt envelope: its shape, a signature
 * by @pub, key_id = thumbprint(@pub), and -- when @job is not NULL -- that it
 * covers exactly that job (id and digest).
 * @ret_body: optional; receives the receipt body (borrowed from @env).
 * Return: 0 or -EBADMSG naming what is wrong.
 */
int berth_receipt_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const struct berth_job *job,
                         const json_t **ret_body, struct berth_error *reterr);

/** Terminal statuses of a job. */
enum berth_result_status {
    BERTH_RESULT_EXITED,
    BERTH_RESULT_FAILED,
    BERTH_RESULT_CANCELLED,
    BERTH_RESULT_EXPIRED,
};
extern const char *const berth_result_status_names[4];

/** What can be wrong with a declared output (the result's output_error.problem). */
#define BERTH_OUTPUT_PROBLEM_COUNT 8
extern const char *const berth_output_problem_names[BERTH_OUTPUT_PROBLEM_COUNT];

/**
 * berth_output_open_problem() - the output problem (a name of
 * berth_output_problem_names) that an error @r of a runtime's
 * open_output() (plugin.h) names: -ENOENT missing, -EFBIG too_large,
 * -ELOOP symlink, -EMLINK hard_link, -EBADFD/-EISDIR/-ENXIO not_regular,
 * anything else unreadable.  A static string.
 */
const char *berth_output_open_problem(int r);

/**
 * berth_result_outputs_check() - check a result's (or a worker report's)
 * @outputs, an array of {id, digest, size, media_type} with no id twice,
 * and @error, null/NULL or {id, problem} with a problem of
 * berth_output_problem_names, which lists no output and goes only with
 * @status "failed".  With @job (optional), every id must be one of its
 * declared outputs, with its media type and within its max_bytes.
 * Return: 0 or -EBADMSG naming what is wrong (as "result.outputs...").
 */
int berth_result_outputs_check(const json_t *outputs, const json_t *error, const char *status,
                               const struct berth_job *job, struct berth_error *reterr);

/** struct berth_result_params - what a result records (buffers borrowed). */
struct berth_result_params {
    const char *broker;
    const struct berth_job *job;
    const json_t *receipt; /* the signed receipt envelope */
    enum berth_result_status status;
    bool has_exit_code;
    int exit_code;
    const char *reason; /* NULL or a short code such as "output_limit" */
    const void *out;
    size_t out_len;
    const void *err;
    size_t err_len;
    const json_t *outputs;      /* array of {id, digest, size, media_type}, or NULL */
    const json_t *output_error; /* {id, problem} or NULL; then @outputs must be empty */
    int64_t started_at;    /* < 0: never started */
    int64_t finished_at;
    /* NULL: the job started cold or never started (no "warm" member); else
     * {slot_id, slot_hash, provision_ns}: the warm slot it started in
     * (docs/warm-slots.md), copied into the result's "warm" member. */
    const json_t *warm;
    /* NULL: a run of this host; else the "worker" member of a remote
     * worker's run, {name, public_key, claim, report} (report.h,
     * berth_result_worker_json()): the result must then say what the
     * signed report says, or berth_result_create() refuses it. */
    const json_t *worker;
};

/**
 * berth_result_create() - build and sign a result.
 * Return: 0; -EFBIG (stdout and stderr together over the job's
 * output_bytes); -EINVAL (also: an output_error with outputs listed, or
 * with a status other than failed, or a @worker member the result does not
 * match); -ENOMEM; -EIO.
 */
int berth_result_create(const struct berth_signing_key *key, const struct berth_result_params *p, json_t **ret,
                        struct berth_error *reterr);

/**
 * berth_result_verify() - check a result envelope: shape, signature by
 * @pub, key_id, that it answers @job (id and digest), that stdout and stderr
 * fit the job's output_bytes, that outputs and output_error are well formed
 * (with @job: each output one the job declares, once, with its media type
 * and within its max_bytes; an output_error naming a declared output, with
 * no output listed and status failed), and -- when @receipt is not NULL --
 * that receipt_digest is that receipt's digest.  The optional member
 * "warm" must be {slot_id, slot_hash, provision_ns}: a slot id ("s" and 32
 * hex digits), the slot's effective_manifest_hash (64 hex digits) and the
 * nanoseconds its provisioning took.  The optional member "worker" (a
 * remote worker's run) must pass berth_result_worker_verify() (report.h):
 * the worker's signed claim and report, and a result that says what the
 * report says.
 * Return: 0 or -EBADMSG naming what is wrong.
 */
int berth_result_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const struct berth_job *job,
                        const json_t *receipt, const json_t **ret_body, struct berth_error *reterr);

#endif /* BERTH_RECEIPT_H */
