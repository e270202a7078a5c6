/* SPDX-License-Identifier: MIT */
/*
 * broker-runio.c -- the inputs and outputs of a run a remote worker holds
 * (broker-evidence.h, "Runs of workers"; docs/workers.md, "Inputs and
 * outputs").
 *
 * A worker reads only the inputs of a run whose lease it holds, and
 * writes only that run's declared outputs, each into the evidence store
 * under the job's owner (principal, scope) exactly as berthd captures a
 * local run's outputs: the declared media type, within max_bytes, kept
 * for outputs_retention_ns.  The lease is checked again at every request,
 * so a fenced worker reads and writes nothing more.  A run stores at most
 * one object per declared output (the same bytes again are an idempotent
 * retry; other bytes are refused), so a worker cannot store more under
 * the owner than a local run would.  The report then
 * names the outputs by digest, and berthd signs no result until the store
 * holds each of them (broker_outputs_stored()).
 *
 * Lock order as everywhere (broker-evidence.h): the broker lock is taken
 * and released to check the lease; the store is called without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker-evidence.h"
#include "broker-internal.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"

/* Whether the worker @fingerprint holds run @run_id now: 0 with @rec filled
 * (cleared by the caller) and *@ret_job its job; else @reply says why. */
static int held(struct berth_broker *b, const char *fingerprint, const char *run_id, struct berth_job_record *rec,
                json_t **ret_job, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct broker_caller caller = {0};
    int64_t now = 0;
    int r;

    *ret_job = NULL;
    pthread_mutex_lock(&b->lock);
    r = broker_authenticate_worker(b, fingerprint, &caller, reply);
    if (r == 0 && berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        r = -EIO;
    }
    if (r == 0 && broker_held_run(b, &caller, run_id, now, rec, ret_job) < 0) {
        broker_fail(reply, 403, "denied", "%s holds no lease on run %s", caller.subject->principal, run_id);
        r = -EACCES;
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
    return r;
}

/* The declared output @id of @job, or NULL with @reply filled. */
static const json_t *declared(const json_t *job, const char *run_id, const char *id, struct berth_reply *reply)
{
    const json_t *v;
    size_t i;

    json_array_foreach(json_object_get(job, "outputs"), i, v)
        if (streq_ptr(json_string_value(json_object_get(v, "id")), id))
            return v;
    broker_fail(reply, 404, "not_found", "the job of run %s declares no output %s", run_id, id);
    return NULL;
}

void berth_broker_run_input(struct berth_broker *b, const char *fingerprint, const char *run_id, const char *digest,
                            struct berth_evidence_content *ret, struct berth_reply *reply)
{
    struct berth_job_record rec = {0};
    struct berth_evidence_owner who = {0};
    _cleanup_json_ json_t *job = NULL;
    const json_t *v;
    bool input = false;
    size_t i;

    ret->fd = -1;
    if (held(b, fingerprint, run_id, &rec, &job, reply) < 0)
        goto out;
    json_array_foreach(json_object_get(job, "inputs"), i, v)
        input |= streq_ptr(json_string_value(json_object_get(json_object_get(v, "ref"), "digest")), digest);
    if (!input) {
        broker_fail(reply, 403, "denied", "%s is not an input of run %s", digest, run_id);
        goto out;
    }
    /* Read as its owner would; the owner's grants are not the worker's to need. */
    snprintf(who.principal, sizeof(who.principal), "%s", rec.principal);
    who.scope = strdup(rec.scope);
    if (!who.scope) {
        broker_fail(reply, 503, "busy", "out of memory; retry later");
        goto out;
    }
    berth_broker_evidence_get(b, &who, digest, ret, reply);
out:
    berth_evidence_owner_clear(&who);
    berth_job_record_clear(&rec);
}

int berth_broker_run_output_begin(struct berth_broker *b, const char *fingerprint, const char *run_id,
                                  const char *output_id, bool has_size, uint64_t size, int *ret_fd,
                                  uint64_t *ret_room, struct berth_reply *reply)
{
    struct berth_job_record rec = {0};
    _cleanup_json_ json_t *job = NULL;
    const json_t *decl;
    json_int_t max;
    int r;

    *ret_fd = -1;
    if ((r = held(b, fingerprint, run_id, &rec, &job, reply)) < 0)
        goto out;
    r = -ENOENT;
    if (!(decl = declared(job, run_id, output_id, reply)))
        goto out;
    max = json_integer_value(json_object_get(decl, "max_bytes"));
    if (max > b->p.evidence_max_object_bytes)
        max = b->p.evidence_max_object_bytes;
    r = -EFBIG;
    if (has_size && size > (uint64_t)max) {
        broker_fail(reply, 413, "too_large", "output %s of run %s is at most %lld bytes", output_id, run_id,
                    (long long)max);
        goto out;
    }
    if ((r = broker_evidence_scratch(b, ret_fd, reply)) < 0)
        goto out;
    *ret_room = (uint64_t)max;
out:
    berth_job_record_clear(&rec);
    return r;
}

/* The key of @run_id's output @output_id in b->worker_outputs. */
static void output_key(const char *run_id, const char *output_id, char key[2 * BERTH_JOB_ID_MAX + 2])
{
    snprintf(key, 2 * BERTH_JOB_ID_MAX + 2, "%s/%s", run_id, output_id);
}

/* Lock held: whether run @run_id is open (not terminal, no signed result
 * waiting for journal space). */
static bool run_open(struct berth_broker *b, const char *run_id)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job_record rec = {0};
    bool open;

    if (broker_unrecorded_has(b, run_id) || berth_jobstore_find_run(b->p.journal, run_id, &rec, &err) < 0)
        return false;
    open = !berth_job_state_terminal(rec.state);
    berth_job_record_clear(&rec);
    return open;
}

/* One object per declared output and run, as a local capture stores:
 * @digest becomes the output's unless it has another already (409).
 * *@ret_new: it was not there before (release() undoes it).  Commits of
 * one broker run on berthd's one evidence helper thread; release() after a
 * failed put would drop an entry a concurrent commit of the same digest
 * relies on, were there two. */
static int reserve(struct berth_broker *b, const char *run_id, const char *output_id, const char *digest,
                   bool *ret_new, struct berth_reply *reply)
{
    char key[2 * BERTH_JOB_ID_MAX + 2];
    const char *had;
    int r = 0;

    output_key(run_id, output_id, key);
    pthread_mutex_lock(&b->lock);
    had = json_string_value(json_object_get(b->worker_outputs, key));
    *ret_new = !had;
    /* Still the run's to change: not ended (its outputs forgotten, or
     * about to be) since held() looked, and no result of it is signed. */
    if (!run_open(b, run_id)) {
        broker_fail(reply, 403, "denied", "run %s has ended", run_id);
        r = -EACCES;
    } else if (had && !streq(had, digest)) {
        broker_fail(reply, 409, "conflict", "output %s of run %s was stored already as %s", output_id, run_id, had);
        r = -EEXIST;
    } else if (!had && json_object_set_new(b->worker_outputs, key, json_string(digest)) < 0) {
        broker_fail(reply, 503, "busy", "out of memory; retry later");
        r = -ENOMEM;
    }
    pthread_mutex_unlock(&b->lock);
    return r;
}

static void release(struct berth_broker *b, const char *run_id, const char *output_id)
{
    char key[2 * BERTH_JOB_ID_MAX + 2];

    output_key(run_id, output_id, key);
    pthread_mutex_lock(&b->lock);
    json_object_del(b->worker_outputs, key);
    pthread_mutex_unlock(&b->lock);
}

void broker_runio_forget(struct berth_broker *b, const char *run_id)
{
    size_t n = strlen(run_id);
    const char *key;
    json_t *v;
    void *tmp;

    pthread_mutex_lock(&b->lock);
    json_object_foreach_safe(b->worker_outputs, tmp, key, v)
    {
        if (strncmp(key, run_id, n) == 0 && key[n] == '/')
            json_object_del(b->worker_outputs, key);
    }
    pthread_mutex_unlock(&b->lock);
}

void berth_broker_run_output_commit(struct berth_broker *b, const char *fingerprint, const char *run_id,
                                    const char *output_id, int fd, uint64_t size, const char *digest,
                                    struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_job_record rec = {0};
    _cleanup_json_ json_t *job = NULL, *meta = NULL, *ref = NULL;
    const json_t *decl;
    const char *media;
    int64_t now = 0;
    bool reserved = false;
    int r;

    if (held(b, fingerprint, run_id, &rec, &job, reply) < 0 || !(decl = declared(job, run_id, output_id, reply)))
        goto out;
    media = json_string_value(json_object_get(decl, "media_type"));
    if (size > (uint64_t)json_integer_value(json_object_get(decl, "max_bytes"))) {
        broker_fail(reply, 413, "too_large", "output %s of run %s is at most %lld bytes", output_id, run_id,
                    (long long)json_integer_value(json_object_get(decl, "max_bytes")));
        goto out;
    }
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0) {
        broker_fail(reply, 500, "internal", "the broker cannot read the system clock");
        goto out;
    }
    meta = broker_output_meta(&rec, digest, (int64_t)size, media, broker_outputs_retain_until(b, now));
    if (!meta) {
        broker_fail(reply, 503, "busy", "out of memory; retry later");
        goto out;
    }
    if ((r = reserve(b, run_id, output_id, digest, &reserved, reply)) < 0)
        goto out;
    /* The store hashes what it keeps: bytes that are not @digest are refused. */
    r = broker_evidence_put(b, meta, fd, &ref, &err);
    if (r < 0 && reserved)
        release(b, run_id, output_id);
    /* Judged as berthd judges its own capture (broker-outputs.c). */
    if (r < 0 && broker_output_transient(r))
        broker_fail(reply, 503, r == -ENOSPC || r == -EDQUOT ? "storage_full" : "evidence_store",
                    "the evidence store failed: %s", err.message);
    else if (r == -EEXIST)
        broker_fail(reply, 409, "conflict", "%s is stored for the job's owner with another size or media type",
                    digest);
    else if (r == -EIDRM)
        broker_fail(reply, 410, "gone", "%s was deleted from the evidence store of the job's owner", digest);
    else if (r == -EFBIG)
        broker_fail(reply, 413, "too_large", "%s", err.message);
    else if (r < 0)
        broker_fail(reply, 400, "digest_mismatch", "output %s of run %s is not %s of %llu bytes: %s", output_id,
                    run_id, digest, (unsigned long long)size, err.message);
    else if (!streq_ptr(json_string_value(json_object_get(ref, "digest")), digest) ||
             json_integer_value(json_object_get(ref, "size")) != (json_int_t)size)
        broker_fail(reply, 400, "digest_mismatch", "the evidence store kept another object than %s", digest);
    else {
        broker_succeed(reply, 201,
                       json_pack("{s:s, s:s, s:s, s:I, s:s}", "run_id", run_id, "output", output_id, "digest", digest,
                                 "size", (json_int_t)size, "media_type", media));
        berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: output %s stored from its worker, %llu bytes",
                   rec.job_id, run_id, output_id, (unsigned long long)size);
    }
out:
    berth_job_record_clear(&rec);
}

int broker_outputs_stored(struct berth_broker *b, const struct berth_job_record *rec, const json_t *outputs,
                          struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const json_t *v;
    size_t i;
    int r;

    json_array_foreach(outputs, i, v) {
        const char *id = json_string_value(json_object_get(v, "id"));
        const char *digest = json_string_value(json_object_get(v, "digest"));
        _cleanup_free_ char *key = NULL;
        _cleanup_json_ json_t *st = NULL;
        size_t len = 0;

        if (broker_evidence_key(digest, rec->principal, rec->scope, &key, &len, &err) < 0) {
            broker_fail(reply, 503, "busy", "out of memory; retry later");
            return -ENOMEM;
        }
        r = broker_evidence_stat(b, key, len, &st, &err);
        if (r == -ENOENT || r == -EIDRM || (r == 0 && (!json_equal(json_object_get(st, "size"), json_object_get(v, "size")) ||
                                                       !json_equal(json_object_get(st, "media_type"),
                                                                   json_object_get(v, "media_type"))))) {
            broker_fail(reply, 409, "output_missing",
                        "output %s (%s) of run %s is not in the evidence store as reported: upload it first", id,
                        digest, rec->run_id);
            return -ENOENT;
        }
        if (r < 0) {
            broker_fail(reply, 503, "evidence_store", "the evidence store failed: %s", err.message);
            return r;
        }
    }
    return 0;
}
