/* SPDX-License-Identifier: MIT */
/*
 * broker-outputs.c -- a finished job's declared outputs, captured into the
 * evidence store before its result is signed.  See broker.h ("Inputs and
 * outputs").
 *
 * The runtime has checked each output it lists in inspect (a regular file
 * with one link, reached without symlinks, within max_bytes) and reports
 * its digest and size; berthd reads it through open_output() and put()s it
 * under the job's own key (principal, scope, digest) with the declared
 * media type.  put() hashes what it stores and is idempotent, so a capture
 * cut short (berthd killed) is simply done again by the next reconcile,
 * which finds the job still running in the journal.  Only a complete
 * capture is listed; one invalid output makes the result failed with
 * output_invalid and that output's id, and lists none.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-internal.h"
#include "clock.h"
#include "digest.h"
#include "jsonobj.h"
#include "macro.h"
#include "receipt.h"
#include "reserve.h"

/* A failure that a later try may not meet (the store or the backend is busy, full or short of memory). */
static bool transient(int r)
{
    return r == -EBUSY || r == -EAGAIN || r == -ENOMEM || r == -EINTR || r == -ETIMEDOUT || r == -ENOSPC ||
           r == -EDQUOT;
}

bool broker_output_transient(int r)
{
    return transient(r) || r == -EIO;
}

/* The problem a put() error names. */
static const char *put_problem(int r)
{
    switch (r) {
    case -EFBIG: return "too_large";
    case -EIDRM: return "refused";
    default: return "digest_mismatch"; /* -EBADMSG, -EEXIST: the bytes are not what was reported */
    }
}

/* The entry of @list whose id is @id, or NULL. */
static const json_t *by_id(const json_t *list, const char *id)
{
    const json_t *v;
    size_t i;

    json_array_foreach(list, i, v)
        if (streq_ptr(json_string_value(json_object_get(v, "id")), id))
            return v;
    return NULL;
}

struct capture {
    struct berth_broker *b;
    const struct berth_broker_backend *be;
    const struct berth_job_record *rec;
    int64_t retain_until;
    const char *problem; /* set when the output is invalid */
};

/* Capture declared output @decl, which the runtime reported as @got;
 * *@ret the result's entry.  0 (captured, or c->problem set); -EAGAIN. */
static int capture_one(struct capture *c, const json_t *decl, const json_t *got, json_t **ret,
                       struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *id = json_string_value(json_object_get(decl, "id"));
    const char *media = json_string_value(json_object_get(decl, "media_type"));
    const char *digest = json_string_value(json_object_get(got, "digest"));
    const json_t *size_v = json_object_get(got, "size");
    json_int_t max = json_integer_value(json_object_get(decl, "max_bytes")), size = json_integer_value(size_v);
    _cleanup_json_ json_t *meta = NULL, *ref = NULL;
    _cleanup_close_ int fd = -1;
    uint8_t raw[BERTH_SHA256_LEN];
    uint64_t opened = 0;
    int r;

    if (!json_is_integer(size_v) || size < 0 || !digest || berth_digest_parse(digest, raw) < 0) {
        c->problem = "unreadable"; /* the runtime did not say what it captured */
        return 0;
    }
    if (size > max) {
        c->problem = "too_large";
        return 0;
    }
    if (!c->be->ops->open_output) {
        c->problem = "unreadable";
        return 0;
    }
    r = c->be->ops->open_output(c->be->state, c->rec->run_id, id, &fd, &opened, &err);
    if (r < 0) {
        if (transient(r))
            return berth_error_set(reterr, -EAGAIN, "open_output %s: %s", id, err.message);
        berth_logf(c->b->p.logger, BERTH_LOG_WARNING, "job %s run %s: output %s cannot be read: %s", c->rec->job_id,
                   c->rec->run_id, id, err.message);
        c->problem = berth_output_open_problem(r);
        return 0;
    }
    if (opened != (uint64_t)size) {
        c->problem = "digest_mismatch";
        return 0;
    }
    meta = broker_output_meta(c->rec, digest, size, media, c->retain_until);
    if (!meta)
        return berth_error_set(reterr, -EAGAIN, "out of memory");
    r = broker_evidence_put(c->b, meta, fd, &ref, &err);
    if (r < 0) {
        if (transient(r) || r == -EIO)
            return berth_error_set(reterr, -EAGAIN, "storing output %s: %s", id, err.message);
        berth_logf(c->b->p.logger, BERTH_LOG_WARNING, "job %s run %s: the evidence store refuses output %s: %s",
                   c->rec->job_id, c->rec->run_id, id, err.message);
        c->problem = put_problem(r);
        return 0;
    }
    if (!streq_ptr(json_string_value(json_object_get(ref, "digest")), digest) ||
        json_integer_value(json_object_get(ref, "size")) != size) {
        c->problem = "digest_mismatch";
        return 0;
    }
    broker_fault(c->b, "capture-after-put");
    *ret = json_pack("{s:s, s:s, s:I, s:s}", "id", id, "digest", digest, "size", size, "media_type", media);
    return *ret ? 0 : berth_error_set(reterr, -EAGAIN, "out of memory");
}

json_t *broker_output_meta(const struct berth_job_record *rec, const char *digest, int64_t size, const char *media_type,
                           int64_t retain_until)
{
    char until[24];

    snprintf(until, sizeof(until), "%lld", (long long)retain_until);
    return json_pack("{s:s, s:I, s:s, s:s, s:o, s:s*}", "digest", digest, "size", (json_int_t)size, "media_type",
                     media_type, "principal", rec->principal, "scope",
                     json_loads(rec->scope, JSON_REJECT_DUPLICATES, NULL), "retain_until",
                     retain_until > 0 ? until : NULL);
}

int64_t broker_outputs_retain_until(const struct berth_broker *b, int64_t now)
{
    return b->p.outputs_retention_ns > 0 ? now + b->p.outputs_retention_ns : 0;
}

/* The runtime's own output_error, when it reported one for a declared output. */
static int runtime_error(const json_t *declared, const json_t *e, json_t **ret_error, struct berth_error *reterr)
{
    const char *id = json_string_value(json_object_get(e, "id"));
    const char *problem = json_string_value(json_object_get(e, "problem"));

    /* "digest_mismatch" and "refused" are berthd's findings, never a runtime's. */
    if (!by_id(declared, id) || !problem ||
        berth_name_index(berth_output_problem_names, BERTH_OUTPUT_PROBLEM_COUNT - 2, problem) < 0)
        return berth_error_set(reterr, -EAGAIN, "inspect.output_error is not {id of a declared output, problem}");
    *ret_error = json_pack("{s:s, s:s}", "id", id, "problem", problem);
    return *ret_error ? 0 : berth_error_set(reterr, -EAGAIN, "out of memory");
}

int broker_capture_outputs(struct berth_broker *b, const struct berth_broker_backend *be,
                           const struct berth_job_record *rec, const json_t *inspect, json_t **ret_outputs,
                           json_t **ret_error, struct berth_error *reterr)
{
    _cleanup_json_ json_t *job = json_loads(rec->job, JSON_REJECT_DUPLICATES, NULL), *list = json_array();
    const json_t *declared = json_object_get(job, "outputs"), *listed = json_object_get(inspect, "outputs"), *decl;
    const json_t *e = json_object_get(inspect, "output_error");
    struct capture c = {.b = b, .be = be, .rec = rec};
    int64_t now, t0 = broker_mono_now(), bytes = 0;
    size_t i;
    int r;

    *ret_outputs = *ret_error = NULL;
    if (!job || !list)
        return berth_error_set(reterr, -EAGAIN, "out of memory");
    if (e && !json_is_null(e)) {
        r = runtime_error(declared, e, ret_error, reterr);
        if (r == 0)
            *ret_outputs = TAKE_PTR(list);
        return r;
    }
    if ((r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0)
        return berth_error_set(reterr, -EAGAIN, "%s", reterr->message);
    /* Kept for the outputs retention from now; 0: until deleted. */
    c.retain_until = broker_outputs_retain_until(b, now);
    json_array_foreach(declared, i, decl) {
        const char *id = json_string_value(json_object_get(decl, "id"));
        const json_t *got = by_id(listed, id);
        json_t *entry = NULL;

        if (!got)
            c.problem = "missing"; /* exited, yet the runtime lists no capture of it */
        else if ((r = capture_one(&c, decl, got, &entry, reterr)) < 0)
            return r;
        if (c.problem) {
            *ret_error = json_pack("{s:s, s:s}", "id", id, "problem", c.problem);
            if (!*ret_error)
                return berth_error_set(reterr, -EAGAIN, "out of memory");
            json_array_clear(list); /* nothing half-captured is listed */
            break;
        }
        bytes += json_integer_value(json_object_get(entry, "size"));
        if (json_array_append_new(list, entry) < 0)
            return berth_error_set(reterr, -EAGAIN, "out of memory");
    }
    if (!*ret_error && list && json_array_size(list) > 0)
        /* The time is tests/bench/bench-evidence.sh's capture_*_ms. */
        berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: captured %zu output(s), %lld bytes, in %lld ms",
                   rec->job_id, rec->run_id, json_array_size(list), (long long)bytes,
                   (long long)((broker_mono_now() - t0) / 1000000));
    *ret_outputs = TAKE_PTR(list);
    return 0;
}

/* ---------------------------------------------------------------------- */

/* What the signed result of @rec says about @output_id (lock held): 0 and
 * the entry's members copied; else @reply filled. */
static int listed_output(const struct berth_job_record *rec, const char *output_id, struct berth_job_output *ret,
                         struct berth_reply *reply)
{
    _cleanup_json_ json_t *result = NULL;
    const json_t *entry;
    const char *digest, *media;

    if (!berth_job_state_terminal(rec->state) || !rec->result) {
        broker_fail(reply, 202, NULL, "job %s has no result yet", rec->job_id);
        reply->body = json_pack("{s:s, s:s}", "id", rec->job_id, "state", berth_job_state_names[rec->state]);
        return -EAGAIN;
    }
    result = json_loads(rec->result, JSON_REJECT_DUPLICATES, NULL);
    entry = by_id(json_object_get(json_object_get(result, "result"), "outputs"), output_id);
    if (!entry) {
        broker_fail(reply, 404, "not_found", "the result of job %s lists no output %s", rec->job_id, output_id);
        return -ENOENT;
    }
    digest = json_string_value(json_object_get(entry, "digest"));
    media = json_string_value(json_object_get(entry, "media_type"));
    if (!digest || !media || strlen(digest) >= sizeof(ret->digest) || strlen(media) >= sizeof(ret->media_type) ||
        json_integer_value(json_object_get(entry, "size")) < 0) {
        broker_fail(reply, 500, "internal", "the stored result of job %s is damaged", rec->job_id);
        return -EBADMSG;
    }
    snprintf(ret->digest, sizeof(ret->digest), "%s", digest);
    snprintf(ret->media_type, sizeof(ret->media_type), "%s", media);
    ret->size = (uint64_t)json_integer_value(json_object_get(entry, "size"));
    return 0;
}

void berth_broker_job_output(struct berth_broker *b, const char *fingerprint, const char *job_id,
                             const char *output_id, struct berth_job_output *ret, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller = {0};
    struct berth_job_record rec = {0};
    _cleanup_free_ char *principal = NULL, *scope = NULL, *ekey = NULL;
    _cleanup_close_ int fd = -1;
    size_t len = 0;
    int r;

    memset(ret, 0, sizeof(*ret));
    ret->fd = -1;
    pthread_mutex_lock(&b->lock);
    r = broker_find_job(b, fingerprint, job_id, &caller, &rec, reply);
    if (r == 0 && (r = listed_output(&rec, output_id, ret, reply)) == 0 &&
        (!(principal = strdup(rec.principal)) || !(scope = strdup(rec.scope)))) {
        broker_fail(reply, 500, "internal", "out of memory");
        r = -ENOMEM;
    }
    pthread_mutex_unlock(&b->lock);
    berth_job_record_clear(&rec);
    broker_caller_clear(&caller);
    if (r < 0)
        return;
    if (!b->p.evidence_ops) {
        broker_fail(reply, 501, "not_implemented", "this broker has no evidence store");
        return;
    }
    /* The copy lives where nothing can name it: an unnamed file on berthd's own filesystem. */
    fd = open(b->p.inputs_directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        r = -errno;
        if (berth_space_error(r))
            broker_fail(reply, 503, "storage_full", "no room to copy output %s; retry later", output_id);
        else
            broker_fail(reply, 503, "evidence_store", "cannot make room for output %s: %s", output_id, strerror(-r));
        return;
    }
    if ((r = broker_evidence_key(ret->digest, principal, scope, &ekey, &len, &err)) == 0)
        r = broker_evidence_get(b, ekey, len, fd, ret->size, &err);
    /* Bytes of another length or digest than the signed result names: the store was tampered with or is damaged. */
    if (r == 0 && (r = berth_digest_fd_matches(fd, ret->size, ret->digest, &err)) < 0 && r != -EBADMSG)
        r = -EIO;
    if (r < 0) {
        if (r != -ENOENT && r != -EIDRM)
            berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s: output %s of %s cannot be served: %s", job_id,
                       output_id, principal, err.message);
        if (r == -ENOENT || r == -EIDRM)
            broker_fail(reply, 410, "gone", "output %s of job %s is no longer in the evidence store", output_id,
                        job_id);
        else if (r == -EBADMSG || r == -EFBIG)
            broker_fail(reply, 500, "corrupt", "the evidence store holds other bytes than output %s of the result",
                        output_id);
        else
            broker_fail(reply, 503, "evidence_store", "the evidence store cannot serve output %s now", output_id);
        return;
    }
    ret->fd = TAKE_FD(fd);
    reply->status = 200;
}
