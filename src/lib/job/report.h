/* SPDX-License-Identifier: MIT */
/*
 * report.h -- a remote worker's signed report of one run (docs/workers.md).
 *
 * A worker that claimed a run (enrol.h, a claim of schema version 2 by a
 * "worker") reports how it ended by signing, with the key it enrolled,
 *
 *   {"claim_digest": "sha256:...",   the digest of its signed claim
 *    "exit_code": 0..255 | null, "finished_at": "<ns>",
 *    "job_digest": "sha256:...", "job_id": ..., "keyid": ...,
 *    "kind": "worker.report", "outputs": [{id, digest, size, media_type}],
 *    "output_error": {id, problem} | null,
 *    "reason": "<code>" | null, "run_id": ..., "schema_version": 1,
 *    "started_at": "<ns>" | null,
 *    "status": "exited" | "failed" | "cancelled" | "expired",
 *    "stderr_digest": "sha256:...", "stderr_size": N,
 *    "stdout_digest": "sha256:...", "stdout_size": N,
 *    "worker_name": ...}
 *
 * sealed as {"report": ..., "signature": ...} (envelope.h).  The bytes of
 * stdout and stderr travel beside the report; the report binds them by
 * digest, so that the envelope stays small enough to be embedded whole in
 * the broker's signed result.
 *
 * The result berthd signs for a worker's run carries the member
 *
 *   "worker": {"name": ..., "public_key": "<base64url>",
 *              "claim": <the signed claim>, "report": <the signed report>}
 *
 * and berth_result_worker_verify() checks that chain: the claim and the
 * report are signed by that key, the report answers that claim, and the
 * result says exactly what the report says (status, exit code, reason,
 * times, outputs and output_error, and stdout and stderr by digest).
 * A report's outputs were uploaded as evidence before it was sent
 * (docs/workers.md, "Inputs and outputs"): berthd checks that the store
 * holds each of them before it signs the result.  Whether the key was
 * enrolled in the pool is the audit chain's to prove (berthctl audit
 * verify).  Thread-safe.
 */
#ifndef BERTH_REPORT_H
#define BERTH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "receipt.h"
#include "sign.h"

#define BERTH_REPORT_SCHEMA_VERSION 1
/** Largest report envelope accepted, bytes of canonical JSON (outputs included). */
#define BERTH_REPORT_MAX (64 * 1024)

/** struct berth_report_params - what a report says (strings and buffers borrowed). */
struct berth_report_params {
    const char *worker_name;
    const char *job_id, *run_id, *job_digest;
    const char *claim_digest; /* berth_digest_json() of the signed claim envelope */
    enum berth_result_status status;
    bool has_exit_code;
    int exit_code;      /* 0..255 */
    const char *reason; /* NULL or a reason code (berth_reason_code_valid()) */
    const void *out, *err;
    size_t out_len, err_len;
    const json_t *outputs; /* array of {id, digest, size, media_type}, or NULL: none */
    const json_t *output_error; /* {id, problem} (receipt.h) when a declared output is invalid, or NULL */
    int64_t started_at;    /* ns since the epoch; < 0: it never started */
    int64_t finished_at;   /* ns since the epoch, >= 1 */
};

/**
 * berth_report_create() - sign a report with the worker's @key.
 * @ret: receives {"report": ..., "signature": ...} (a new reference).
 * Return: 0; -EINVAL (a malformed member: names, digests, an exit code
 * out of 0..255, a reason that is no reason code, a finish time before
 * 1 ns after the epoch, outputs that are not an array, an output_error
 * that is not an object); -ENOMEM; -EIO.
 */
int berth_report_create(const struct berth_signing_key *key, const struct berth_report_params *p, json_t **ret,
                        struct berth_error *reterr);

/**
 * berth_report_verify() - check a report envelope @env: exact members and
 * their forms, keyid the thumbprint of @public_key (RFC 7638), a valid
 * signature by that key, outputs and output_error as
 * berth_result_outputs_check() takes them (without the job).  @ret_body
 * (optional) receives the report body, borrowed from @env.  Return: 0 or
 * -EBADMSG naming what is wrong.
 */
int berth_report_verify(const json_t *env, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                        const json_t **ret_body, struct berth_error *reterr);

/**
 * berth_report_binds_output() - whether the verified report body @body
 * names exactly @out (@out_len bytes) as stdout and @err as stderr (sizes
 * and digests).  Return: 0 or -EBADMSG saying which differs.
 */
int berth_report_binds_output(const json_t *body, const void *out, size_t out_len, const void *err, size_t err_len,
                              struct berth_error *reterr);

/**
 * berth_result_worker_json() - the result's "worker" member for a run
 * that @worker_name ran: {name, public_key, claim, report} with deep
 * copies of @claim and @report (a new reference, or NULL out of memory).
 */
json_t *berth_result_worker_json(const char *worker_name, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                                 const json_t *claim, const json_t *report);

/**
 * berth_result_worker_verify() - check the "worker" member @worker of the
 * verified result body @result (see above): its shape; the claim is a
 * worker's claim of schema version 2 of this job (job_id, job_digest,
 * receipt_digest) by @worker.name, signed by @worker.public_key; the report
 * is signed by the same key and names that claim's digest and run; and the
 * result's status, exit_code, reason, started_at, finished_at, outputs and
 * the digests and sizes of its stdout and stderr are the report's.
 * Return: 0 or -EBADMSG naming the first link of the chain that fails.
 */
int berth_result_worker_verify(const json_t *result, const json_t *worker, struct berth_error *reterr);

#endif /* BERTH_REPORT_H */
