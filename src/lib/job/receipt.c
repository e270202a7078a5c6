/* SPDX-License-Identifier: MIT */
/* receipt.c -- broker-signed receipts and results; see receipt.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "encoding.h"
#include "envelope.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "pool.h"
#include "receipt.h"
#include "report.h"

const char *const berth_result_status_names[4] = {"exited", "failed", "cancelled", "expired"};
const char *const berth_output_problem_names[BERTH_OUTPUT_PROBLEM_COUNT] = {
    "missing", "too_large", "symlink", "hard_link", "not_regular", "unreadable", "digest_mismatch", "refused",
};

static const char *const receipt_members[] = {
    "accepted_at",    "backend", "broker",    "deadline", "job_digest", "job_id",         "key_id", "kind",
    "placement_hash", "pool",    "principal", "run_id",   "runtime",    "schema_version", "scope",  NULL,
};
static const char *const runtime_members[] = {"plugin", "plugin_version", "qualification", NULL};
static const char *const result_members[] = {
    "broker",         "exit_code",      "finished_at", "job_digest", "job_id", "key_id", "kind",
    "output_error",   "outputs",        "reason",      "receipt_digest", "schema_version", "started_at", "status",
    "stderr",         "stdout",         "warm",        "worker",         NULL,
};
static const char *const warm_members[] = {"provision_ns", "slot_hash", "slot_id", NULL};
static const char *const output_members[] = {"digest", "id", "media_type", "size", NULL};
static const char *const output_error_members[] = {"id", "problem", NULL};

/* Common members of both documents: kind, version, key id of @pub, job. */
static int check_common(const json_t *body, const char *what, const char *kind,
                        const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const struct berth_job *job,
                        struct berth_error *reterr)
{
    const char *k = NULL, *kid = NULL, *broker = NULL, *job_id = NULL, *digest = NULL;
    char want[BERTH_KEY_ID_LEN + 1];
    int64_t version = 0;
    int r;

    if ((r = berth_json_int_member(body, what, "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_string_member(body, what, "kind", true, &k, reterr)) < 0 ||
        (r = berth_json_string_member(body, what, "key_id", true, &kid, reterr)) < 0 ||
        (r = berth_json_string_member(body, what, "broker", true, &broker, reterr)) < 0 ||
        (r = berth_json_string_member(body, what, "job_id", true, &job_id, reterr)) < 0 ||
        (r = berth_json_string_member(body, what, "job_digest", true, &digest, reterr)) < 0)
        return r;
    if (!streq(k, kind))
        return berth_error_set(reterr, -EBADMSG, "%s.kind must be \"%s\"", what, kind);
    if (berth_public_key_id(pub, want) < 0 || !streq(kid, want))
        return berth_error_set(reterr, -EBADMSG, "%s.key_id is not the pinned broker key", what);
    if (job && (!streq(job_id, job->id) || !streq(digest, job->digest)))
        return berth_error_set(reterr, -EBADMSG, "the %s is for another job (id or digest differs)", what);
    return 0;
}

int berth_receipt_create(const struct berth_signing_key *key, const struct berth_receipt_params *p, json_t **ret,
                         struct berth_error *reterr)
{
    _cleanup_json_ json_t *body = NULL;

    if (!key || !p || !p->job || !p->broker || !p->run_id || !p->who.principal || !json_is_array(p->who.scope) ||
        !p->pool || !p->placement_hash || !p->backend || !p->plugin || !p->plugin_version || p->accepted_at < 0 ||
        p->deadline < p->accepted_at || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid receipt arguments");
    body = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:s, s:{s:s, s:s, s:s?}, s:o, s:o}",
                     "schema_version", BERTH_RECEIPT_SCHEMA_VERSION, "kind", "berth.receipt", "broker", p->broker,
                     "key_id", berth_signing_key_id(key), "job_id", p->job->id, "run_id", p->run_id, "job_digest",
                     p->job->digest, "principal", p->who.principal, "scope", p->who.scope, "pool", p->pool,
                     "placement_hash", p->placement_hash, "backend", p->backend, "runtime", "plugin", p->plugin,
                     "plugin_version", p->plugin_version, "qualification", p->qualification, "accepted_at",
                     berth_json_ns(p->accepted_at), "deadline", berth_json_ns(p->deadline));
    if (!body)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(key, "receipt", body, ret, reterr);
}

int berth_receipt_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const struct berth_job *job,
                         const json_t **ret_body, struct berth_error *reterr)
{
    const json_t *body = NULL, *scope, *runtime, *v;
    const char *s = NULL;
    int64_t accepted, deadline;
    size_t i;
    int r;

    if ((r = berth_envelope_open(env, "receipt", pub, &body, reterr)) < 0 ||
        (r = berth_json_only_members(body, "receipt", receipt_members, reterr)) < 0 ||
        (r = check_common(body, "receipt", "berth.receipt", pub, job, reterr)) < 0 ||
        (r = berth_json_string_member(body, "receipt", "principal", true, &s, reterr)) < 0 ||
        (r = berth_json_string_member(body, "receipt", "run_id", true, &s, reterr)) < 0 ||
        (r = berth_json_string_member(body, "receipt", "pool", true, &s, reterr)) < 0 ||
        (r = berth_json_string_member(body, "receipt", "placement_hash", true, &s, reterr)) < 0 ||
        (r = berth_json_string_member(body, "receipt", "backend", true, &s, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "receipt", "accepted_at", &accepted, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "receipt", "deadline", &deadline, reterr)) < 0)
        return r;
    if (deadline < accepted)
        return berth_error_set(reterr, -EBADMSG, "receipt.deadline is before receipt.accepted_at");
    scope = json_object_get(body, "scope");
    if (!json_is_array(scope))
        return berth_error_set(reterr, -EBADMSG, "receipt.scope must be an array of strings");
    json_array_foreach(scope, i, v) if (!json_is_string(v)) return berth_error_set(
        reterr, -EBADMSG, "receipt.scope[%zu] must be a string", i);
    runtime = json_object_get(body, "runtime");
    if ((r = berth_json_only_members(runtime, "receipt.runtime", runtime_members, reterr)) < 0 ||
        (r = berth_json_string_member(runtime, "receipt.runtime", "plugin", true, &s, reterr)) < 0 ||
        (r = berth_json_string_member(runtime, "receipt.runtime", "plugin_version", true, &s, reterr)) < 0)
        return r;
    v = json_object_get(runtime, "qualification");
    if (!json_is_string(v) && !json_is_null(v))
        return berth_error_set(reterr, -EBADMSG, "receipt.runtime.qualification must be a string or null");
    if (ret_body)
        *ret_body = body;
    return 0;
}

/* Unpadded base64url of @len bytes, as a new JSON string. */
static json_t *b64_string(const void *data, size_t len)
{
    _cleanup_free_ char *text = malloc(BERTH_BASE64URL_LEN(len) + 1);

    if (!text || berth_base64url_encode(len ? data : (const void *)"", len, text, BERTH_BASE64URL_LEN(len) + 1) < 0)
        return NULL;
    return json_string(text);
}

/* The result's "warm" member: the slot a job started in (docs/warm-slots.md). */
static int check_warm(const json_t *w, struct berth_error *reterr)
{
    const char *id = NULL, *hash = NULL;
    int64_t ns;
    int r;

    if ((r = berth_json_only_members(w, "result.warm", warm_members, reterr)) < 0 ||
        (r = berth_json_string_member(w, "result.warm", "slot_id", true, &id, reterr)) < 0 ||
        (r = berth_json_string_member(w, "result.warm", "slot_hash", true, &hash, reterr)) < 0 ||
        (r = berth_json_ns_member(w, "result.warm", "provision_ns", &ns, reterr)) < 0)
        return r;
    if (strlen(id) != 33 || id[0] != 's' || !berth_is_hex(id + 1, 32) || !berth_is_hex(hash, 64))
        return berth_error_set(reterr, -EBADMSG, "result.warm names a malformed slot id or effective_manifest_hash");
    return 0;
}

int berth_result_create(const struct berth_signing_key *key, const struct berth_result_params *p, json_t **ret,
                        struct berth_error *reterr)
{
    _cleanup_json_ json_t *body = NULL;
    char receipt_digest[BERTH_DIGEST_BUFSZ];
    int r;

    if (!key || !p || !p->job || !p->broker || !p->receipt || (unsigned)p->status > BERTH_RESULT_EXPIRED ||
        (!p->out && p->out_len) || (!p->err && p->err_len) || p->finished_at < 0 || !ret ||
        (p->outputs && !json_is_array(p->outputs)) ||
        (p->output_error && (json_array_size(p->outputs) > 0 || p->status != BERTH_RESULT_FAILED)))
        return berth_error_set(reterr, -EINVAL, "invalid result arguments");
    if (p->out_len + p->err_len > (size_t)p->job->limits.output_bytes)
        return berth_error_set(reterr, -EFBIG, "stdout and stderr are %zu bytes, more than the job's %lld",
                               p->out_len + p->err_len, (long long)p->job->limits.output_bytes);
    r = berth_digest_json(p->receipt, receipt_digest, reterr);
    if (r < 0)
        return r;
    body = json_pack(
        "{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "schema_version",
        BERTH_RECEIPT_SCHEMA_VERSION, "kind", "berth.result", "broker", p->broker, "key_id", berth_signing_key_id(key),
        "job_id", p->job->id, "job_digest", p->job->digest, "receipt_digest", receipt_digest, "status",
        berth_result_status_names[p->status], "exit_code", p->has_exit_code ? json_integer(p->exit_code) : json_null(),
        "reason", p->reason ? json_string(p->reason) : json_null(), "stdout", b64_string(p->out, p->out_len), "stderr",
        b64_string(p->err, p->err_len), "outputs", p->outputs ? json_deep_copy(p->outputs) : json_array(), "output_error",
        p->output_error ? json_deep_copy(p->output_error) : json_null(), "started_at",
        p->started_at >= 0 ? berth_json_ns(p->started_at) : json_null(), "finished_at", berth_json_ns(p->finished_at));
    if (!body)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (p->warm && ((r = check_warm(p->warm, reterr)) < 0 ||
                    json_object_set_new(body, "warm", json_deep_copy(p->warm)) < 0))
        return r < 0 ? -EINVAL : berth_error_set(reterr, -ENOMEM, "out of memory");
    if (p->worker && json_object_set_new(body, "worker", json_deep_copy(p->worker)) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* A worker's run: the result must say what the worker's signed report says. */
    if (p->worker && berth_result_worker_verify(body, p->worker, reterr) < 0)
        return -EINVAL;
    return berth_envelope_seal(key, "result", body, ret, reterr);
}

/* Decoded length of a base64url member, or -1. */
static ssize_t b64_len(const json_t *v)
{
    size_t n = json_string_length(v), out;
    _cleanup_free_ uint8_t *buf = NULL;

    if (!json_is_string(v))
        return -1;
    buf = malloc(n + 1);
    if (!buf || berth_base64url_decode(json_string_value(v), n, buf, n + 1, &out) < 0)
        return -1;
    return (ssize_t)out;
}

/* The declared output of @job with id @id, or NULL. */
static const json_t *declared_output(const struct berth_job *job, const char *id)
{
    const json_t *o;
    size_t i;

    json_array_foreach(json_object_get(job->doc, "outputs"), i, o) if (streq_ptr(
        json_string_value(json_object_get(o, "id")), id)) return o;
    return NULL;
}

const char *berth_output_open_problem(int r)
{
    switch (r) {
    case -ENOENT: return "missing";
    case -EFBIG: return "too_large";
    case -ELOOP: return "symlink";
    case -EMLINK: return "hard_link";
    case -EBADFD:
    case -EISDIR:
    case -ENXIO: return "not_regular";
    default: return "unreadable";
    }
}

int berth_result_outputs_check(const json_t *outputs, const json_t *error, const char *status,
                               const struct berth_job *job, struct berth_error *reterr)
{
    const json_t *v, *decl;
    const char *id = NULL, *problem = NULL;
    size_t i, k;
    int r;

    if (!json_is_array(outputs))
        return berth_error_set(reterr, -EBADMSG, "result.outputs must be an array");
    json_array_foreach(outputs, i, v)
    {
        const char *digest = NULL, *media = NULL;
        int64_t size = 0;
        uint8_t raw[BERTH_SHA256_LEN];
        if ((r = berth_json_only_members(v, "result.outputs[]", output_members, reterr)) < 0 ||
            (r = berth_json_string_member(v, "result.outputs[]", "id", true, &id, reterr)) < 0 ||
            (r = berth_json_string_member(v, "result.outputs[]", "digest", true, &digest, reterr)) < 0 ||
            (r = berth_json_string_member(v, "result.outputs[]", "media_type", true, &media, reterr)) < 0 ||
            (r = berth_json_int_member(v, "result.outputs[]", "size", true, 0, BERTH_JSON_MAX_INTEGER, &size, reterr)) <
                0)
            return r;
        if (berth_digest_parse(digest, raw) < 0)
            return berth_error_set(reterr, -EBADMSG, "result.outputs[%zu].digest is not a sha256 digest", i);
        for (k = 0; k < i; k++)
            if (streq_ptr(json_string_value(json_object_get(json_array_get(outputs, k), "id")), id))
                return berth_error_set(reterr, -EBADMSG, "result.outputs[%zu] repeats output %s", i, id);
        if (!job)
            continue;
        decl = declared_output(job, id);
        if (!decl)
            return berth_error_set(reterr, -EBADMSG, "result.outputs[%zu]: the job declares no output %s", i, id);
        if (!streq_ptr(json_string_value(json_object_get(decl, "media_type")), media))
            return berth_error_set(reterr, -EBADMSG, "result.outputs[%zu]: output %s has another media type", i, id);
        if (size > json_integer_value(json_object_get(decl, "max_bytes")))
            return berth_error_set(reterr, -EBADMSG, "result.outputs[%zu]: output %s is over its max_bytes", i, id);
    }
    if (!error || json_is_null(error))
        return 0;
    if ((r = berth_json_only_members(error, "result.output_error", output_error_members, reterr)) < 0 ||
        (r = berth_json_string_member(error, "result.output_error", "id", true, &id, reterr)) < 0 ||
        (r = berth_json_string_member(error, "result.output_error", "problem", true, &problem, reterr)) < 0)
        return r;
    if (berth_name_index(berth_output_problem_names, BERTH_OUTPUT_PROBLEM_COUNT, problem) < 0)
        return berth_error_set(reterr, -EBADMSG, "result.output_error.problem \"%s\" is not a known problem", problem);
    if (json_array_size(outputs) > 0 || !streq(status, "failed"))
        return berth_error_set(reterr, -EBADMSG, "a result with an output_error lists no output and has failed");
    if (job && !declared_output(job, id))
        return berth_error_set(reterr, -EBADMSG, "result.output_error names output %s, which the job does not declare",
                               id);
    return 0;
}

int berth_result_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const struct berth_job *job,
                        const json_t *receipt, const json_t **ret_body, struct berth_error *reterr)
{
    const json_t *body = NULL, *v, *outputs;
    const char *status = NULL, *rd = NULL;
    char want[BERTH_DIGEST_BUFSZ];
    ssize_t out_len, err_len;
    int64_t finished, started;
    int r;

    if ((r = berth_envelope_open(env, "result", pub, &body, reterr)) < 0 ||
        (r = berth_json_only_members(body, "result", result_members, reterr)) < 0 ||
        (r = check_common(body, "result", "berth.result", pub, job, reterr)) < 0 ||
        (r = berth_json_string_member(body, "result", "status", true, &status, reterr)) < 0 ||
        (r = berth_json_string_member(body, "result", "receipt_digest", true, &rd, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "result", "finished_at", &finished, reterr)) < 0)
        return r;
    if (berth_name_index(berth_result_status_names, 4, status) < 0)
        return berth_error_set(reterr, -EBADMSG, "result.status must be exited, failed, cancelled or expired");
    v = json_object_get(body, "exit_code");
    if (!json_is_integer(v) && !json_is_null(v))
        return berth_error_set(reterr, -EBADMSG, "result.exit_code must be an integer or null");
    v = json_object_get(body, "reason");
    if (!json_is_string(v) && !json_is_null(v))
        return berth_error_set(reterr, -EBADMSG, "result.reason must be a string or null");
    v = json_object_get(body, "started_at");
    if (!json_is_null(v) && berth_json_ns_value(v, &started) < 0)
        return berth_error_set(reterr, -EBADMSG, "result.started_at must be nanoseconds or null");
    out_len = b64_len(json_object_get(body, "stdout"));
    err_len = b64_len(json_object_get(body, "stderr"));
    if (out_len < 0 || err_len < 0)
        return berth_error_set(reterr, -EBADMSG, "result.stdout and result.stderr must be base64url");
    if (job && out_len + err_len > job->limits.output_bytes)
        return berth_error_set(reterr, -EBADMSG, "result output is more than the job's output_bytes");
    v = json_object_get(body, "warm");
    if (v && (r = check_warm(v, reterr)) < 0)
        return -EBADMSG;
    v = json_object_get(body, "worker");
    if (v && (r = berth_result_worker_verify(body, v, reterr)) < 0)
        return -EBADMSG;
    outputs = json_object_get(body, "outputs");
    if ((r = berth_result_outputs_check(outputs, json_object_get(body, "output_error"), status, job, reterr)) < 0)
        return r;
    if (receipt) {
        if ((r = berth_digest_json(receipt, want, reterr)) < 0)
            return -EBADMSG;
        if (!streq(want, rd))
            return berth_error_set(reterr, -EBADMSG, "result.receipt_digest is not the digest of that receipt");
    }
    if (ret_body)
        *ret_body = body;
    return 0;
}
