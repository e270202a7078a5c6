/* SPDX-License-Identifier: MIT */
/* report.c -- a remote worker's signed report, and the result's chain to it; see report.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "encoding.h"
#include "enrol.h"
#include "envelope.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "placement.h"
#include "report.h"

static const char *const report_members[] = {
    "claim_digest",  "exit_code",   "finished_at",   "job_digest", "job_id",        "keyid",
    "kind",          "output_error", "outputs",      "reason",     "run_id",        "schema_version",
    "started_at",    "status",      "stderr_digest", "stderr_size", "stdout_digest", "stdout_size",
    "worker_name",   NULL,
};
static const char *const worker_members[] = {"claim", "name", "public_key", "report", NULL};

static bool digest_valid(const char *s)
{
    uint8_t raw[BERTH_SHA256_LEN];

    return s && berth_digest_parse(s, raw) == 0;
}

int berth_report_create(const struct berth_signing_key *key, const struct berth_report_params *p, json_t **ret,
                        struct berth_error *reterr)
{
    _cleanup_json_ json_t *body = NULL;
    char out_digest[BERTH_DIGEST_BUFSZ], err_digest[BERTH_DIGEST_BUFSZ];

    if (!key || !p || !ret || !berth_worker_name_valid(p->worker_name) || !berth_job_id_valid(p->job_id) ||
        !berth_job_id_valid(p->run_id) || !digest_valid(p->job_digest) || !digest_valid(p->claim_digest) ||
        (unsigned)p->status > BERTH_RESULT_EXPIRED || (p->has_exit_code && (p->exit_code < 0 || p->exit_code > 255)) ||
        (p->reason && !berth_reason_code_valid(p->reason)) || p->finished_at < 1 || (!p->out && p->out_len) ||
        (!p->err && p->err_len) || (p->outputs && !json_is_array(p->outputs)) ||
        (p->output_error && !json_is_object(p->output_error)))
        return berth_error_set(reterr, -EINVAL, "invalid report arguments");
    if (berth_digest_bytes(p->out_len ? p->out : "", p->out_len, out_digest) < 0 ||
        berth_digest_bytes(p->err_len ? p->err : "", p->err_len, err_digest) < 0)
        return berth_error_set(reterr, -EIO, "hashing stdout and stderr failed");
    body = json_pack("{s:s, s:o, s:o, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:i, s:o, s:s, s:s, s:I, s:s, s:I, s:s}",
                     "claim_digest", p->claim_digest, "exit_code",
                     p->has_exit_code ? json_integer(p->exit_code) : json_null(), "finished_at",
                     berth_json_ns(p->finished_at), "job_digest", p->job_digest, "job_id", p->job_id, "keyid",
                     berth_signing_key_id(key), "kind", "worker.report", "output_error",
                     p->output_error ? json_deep_copy(p->output_error) : json_null(), "outputs",
                     p->outputs ? json_deep_copy(p->outputs) : json_array(), "reason",
                     p->reason ? json_string(p->reason) : json_null(), "run_id", p->run_id, "schema_version",
                     BERTH_REPORT_SCHEMA_VERSION, "started_at",
                     p->started_at >= 0 ? berth_json_ns(p->started_at) : json_null(), "status",
                     berth_result_status_names[p->status], "stderr_digest", err_digest, "stderr_size",
                     (json_int_t)p->err_len, "stdout_digest", out_digest, "stdout_size", (json_int_t)p->out_len,
                     "worker_name", p->worker_name);
    if (!body)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(key, "report", body, ret, reterr);
}

int berth_report_verify(const json_t *env, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                        const json_t **ret_body, struct berth_error *reterr)
{
    const json_t *body = json_object_get(env, "report"), *v;
    const char *s = NULL, *kind = NULL, *keyid = NULL, *status = NULL;
    char kid[BERTH_KEY_ID_LEN + 1];
    int64_t n, finished = 0;
    int r;

    if (!public_key)
        return berth_error_set(reterr, -EBADMSG, "a report needs the worker's key to be checked");
    if ((r = berth_json_only_members(body, "report", report_members, reterr)) < 0 ||
        (r = berth_json_int_member(body, "report", "schema_version", true, BERTH_REPORT_SCHEMA_VERSION,
                                   BERTH_REPORT_SCHEMA_VERSION, &n, reterr)) < 0 ||
        (r = berth_json_string_member(body, "report", "kind", true, &kind, reterr)) < 0 ||
        (r = berth_json_string_member(body, "report", "keyid", true, &keyid, reterr)) < 0 ||
        (r = berth_json_string_member(body, "report", "status", true, &status, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "report", "finished_at", &finished, reterr)) < 0 ||
        (r = berth_json_int_member(body, "report", "stdout_size", true, 0, BERTH_JSON_MAX_INTEGER, &n, reterr)) < 0 ||
        (r = berth_json_int_member(body, "report", "stderr_size", true, 0, BERTH_JSON_MAX_INTEGER, &n, reterr)) < 0)
        return r;
    if (!streq(kind, "worker.report"))
        return berth_error_set(reterr, -EBADMSG, "report.kind must be \"worker.report\"");
    if (finished < 1)
        return berth_error_set(reterr, -EBADMSG, "report.finished_at must be a time after the epoch");
    if (berth_name_index(berth_result_status_names, 4, status) < 0)
        return berth_error_set(reterr, -EBADMSG, "report.status must be exited, failed, cancelled or expired");
    if ((r = berth_json_string_member(body, "report", "worker_name", true, &s, reterr)) < 0)
        return r;
    if (!berth_worker_name_valid(s))
        return berth_error_set(reterr, -EBADMSG, "report.worker_name is not a worker name");
    if ((r = berth_json_string_member(body, "report", "job_id", true, &s, reterr)) < 0)
        return r;
    if (!berth_job_id_valid(s))
        return berth_error_set(reterr, -EBADMSG, "report.job_id is not a job id");
    if ((r = berth_json_string_member(body, "report", "run_id", true, &s, reterr)) < 0)
        return r;
    if (!berth_job_id_valid(s))
        return berth_error_set(reterr, -EBADMSG, "report.run_id is not a run id");
    static const char *const digests[] = {"claim_digest", "job_digest", "stderr_digest", "stdout_digest"};
    for (size_t i = 0; i < ELEMENTSOF(digests); i++) {
        if ((r = berth_json_string_member(body, "report", digests[i], true, &s, reterr)) < 0)
            return r;
        if (!digest_valid(s))
            return berth_error_set(reterr, -EBADMSG, "report.%s is not a sha256 digest", digests[i]);
    }
    v = json_object_get(body, "exit_code");
    if (!json_is_null(v) && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 255))
        return berth_error_set(reterr, -EBADMSG, "report.exit_code must be 0 to 255 or null");
    v = json_object_get(body, "reason");
    if (!json_is_null(v) && !berth_reason_code_valid(json_string_value(v)))
        return berth_error_set(reterr, -EBADMSG, "report.reason must be a reason code of [a-z_] or null");
    v = json_object_get(body, "started_at");
    if (!json_is_null(v) && berth_json_ns_value(v, &n) < 0)
        return berth_error_set(reterr, -EBADMSG, "report.started_at must be nanoseconds or null");
    /* Outputs are judged as a result's are (without the job: its declarations are the result's to check). */
    if (!json_object_get(body, "output_error"))
        return berth_error_set(reterr, -EBADMSG, "report.output_error is missing");
    if ((r = berth_result_outputs_check(json_object_get(body, "outputs"), json_object_get(body, "output_error"),
                                        status, NULL, reterr)) < 0) {
        berth_error_prefix(reterr, "report: ");
        return -EBADMSG;
    }
    if (berth_public_key_id(public_key, kid) < 0 || !streq(kid, keyid))
        return berth_error_set(reterr, -EBADMSG, "report.keyid is not the id of the key it is checked with");
    r = berth_envelope_open(env, "report", public_key, NULL, reterr);
    if (r < 0)
        return r;
    if (ret_body)
        *ret_body = body;
    return 0;
}

/* Whether @body's @what_digest and @what_size describe @data (@len bytes). */
static int binds(const json_t *body, const char *what, const void *data, size_t len, struct berth_error *reterr)
{
    char digest_key[32], size_key[32], digest[BERTH_DIGEST_BUFSZ];
    const json_t *size;

    snprintf(digest_key, sizeof(digest_key), "%s_digest", what);
    snprintf(size_key, sizeof(size_key), "%s_size", what);
    size = json_object_get(body, size_key);
    if (!json_is_integer(size) || (uint64_t)json_integer_value(size) != (uint64_t)len)
        return berth_error_set(reterr, -EBADMSG, "%s is %zu bytes, but the report says %lld", what, len,
                               (long long)json_integer_value(size));
    if (berth_digest_bytes(len ? data : "", len, digest) < 0)
        return berth_error_set(reterr, -EBADMSG, "hashing %s failed", what);
    if (!streq_ptr(json_string_value(json_object_get(body, digest_key)), digest))
        return berth_error_set(reterr, -EBADMSG, "%s is not the bytes the report signed (%s differs)", what,
                               digest_key);
    return 0;
}

int berth_report_binds_output(const json_t *body, const void *out, size_t out_len, const void *err, size_t err_len,
                              struct berth_error *reterr)
{
    int r = binds(body, "stdout", out, out_len, reterr);

    return r < 0 ? r : binds(body, "stderr", err, err_len, reterr);
}

json_t *berth_result_worker_json(const char *worker_name, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                                 const json_t *claim, const json_t *report)
{
    char pub[BERTH_PUBLIC_KEY_B64_LEN + 1];

    if (!worker_name || !claim || !report || berth_public_key_to_b64url(public_key, pub) < 0)
        return NULL;
    return json_pack("{s:s, s:s, s:o, s:o}", "name", worker_name, "public_key", pub, "claim", json_deep_copy(claim),
                     "report", json_deep_copy(report));
}

/* Whether members @key of @a and @b are equal JSON (both absent counts as equal). */
static bool same(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

    return (!x && !y) || (x && y && json_equal(x, y));
}

int berth_result_worker_verify(const json_t *result, const json_t *worker, struct berth_error *reterr)
{
    const json_t *claim_env, *report_env, *claim, *report = NULL;
    const char *name = NULL, *pk = NULL;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    char claim_digest[BERTH_DIGEST_BUFSZ];
    _cleanup_free_ uint8_t *out = NULL, *err = NULL;
    size_t out_len = 0, err_len = 0;
    static const char *const claim_binds[] = {"job_id", "job_digest", "receipt_digest"};
    static const char *const report_says[] = {"status", "exit_code", "reason", "started_at", "finished_at", "outputs",
                                                 "output_error"};
    size_t i;
    int r;

    if ((r = berth_json_only_members(worker, "result.worker", worker_members, reterr)) < 0 ||
        (r = berth_json_string_member(worker, "result.worker", "name", true, &name, reterr)) < 0 ||
        (r = berth_json_string_member(worker, "result.worker", "public_key", true, &pk, reterr)) < 0)
        return -EBADMSG;
    if (berth_public_key_from_b64url(pk, pub) < 0)
        return berth_error_set(reterr, -EBADMSG, "result.worker.public_key is not a base64url Ed25519 key");
    claim_env = json_object_get(worker, "claim");
    report_env = json_object_get(worker, "report");
    /* The claim: a worker's, of this job, under this name, by this key. */
    if (berth_claim_version(claim_env) != 2)
        return berth_error_set(reterr, -EBADMSG, "result.worker.claim is not a claim of schema version 2");
    if ((r = berth_claim_verify(claim_env, pub, reterr)) < 0)
        return -EBADMSG;
    claim = json_object_get(claim_env, "claim");
    if (!streq_ptr(json_string_value(json_object_get(claim, "claimant")), "worker") ||
        !streq_ptr(json_string_value(json_object_get(claim, "worker_name")), name))
        return berth_error_set(reterr, -EBADMSG, "result.worker.claim is not a claim by worker %s", name);
    for (i = 0; i < ELEMENTSOF(claim_binds); i++)
        if (!same(claim, result, claim_binds[i]))
            return berth_error_set(reterr, -EBADMSG, "result.worker.claim is for another run (its %s differs)",
                                   claim_binds[i]);
    /* The report: of that claim, by the same key. */
    if ((r = berth_report_verify(report_env, pub, &report, reterr)) < 0)
        return -EBADMSG;
    if ((r = berth_digest_json(claim_env, claim_digest, reterr)) < 0)
        return -EBADMSG;
    if (!streq_ptr(json_string_value(json_object_get(report, "claim_digest")), claim_digest) ||
        !same(report, claim, "run_id") || !same(report, claim, "job_id") || !same(report, claim, "job_digest") ||
        !same(report, claim, "worker_name"))
        return berth_error_set(reterr, -EBADMSG, "result.worker.report does not answer result.worker.claim");
    /* The result says what the report says. */
    for (i = 0; i < ELEMENTSOF(report_says); i++)
        if (!same(report, result, report_says[i]))
            return berth_error_set(reterr, -EBADMSG, "the result's %s is not the worker's report's", report_says[i]);
    if (!json_is_string(json_object_get(result, "stdout")) || !json_is_string(json_object_get(result, "stderr")) ||
        berth_json_b64_value(json_object_get(result, "stdout"), &out, &out_len) < 0 ||
        berth_json_b64_value(json_object_get(result, "stderr"), &err, &err_len) < 0)
        return berth_error_set(reterr, -EBADMSG, "result.stdout and result.stderr must be base64url");
    r = berth_report_binds_output(report, out, out_len, err, err_len, reterr);
    return r < 0 ? -EBADMSG : 0;
}
