/* SPDX-License-Identifier: MIT */
/*
 * runio.c -- a run's inputs from berthd and its declared outputs back to
 * berthd (docs/workers.md, "Inputs and outputs"); see worker.h.
 *
 * Inputs: GET /v1/workers/runs/{run}/inputs/{digest} for each, staged as
 * berthd stages a local run's (inputs-stage.h: verified against the ref's
 * digest and size, then published), so the runtime gets the same
 * inputs_dir.  Outputs: for each declared output the runtime captured
 * (inspect's "outputs", read through open_output), an upload session
 * (POST /v1/workers/runs/{run}/outputs/{id}, PATCH chunks with
 * Content-Range, PUT ?digest=): berthd stores it under the job's owner and
 * refuses bytes that are not the digest.  Only then is it named in the
 * report, and berthd signs no result naming an output it does not hold.
 * A failing berthd is asked again while the lease holds; a refusal of the
 * lease (403) ends the run's reporting, as a fence does.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "inputs-stage.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "receipt.h"
#include "session.h"
#include "worker.h"

#define RETRY_MIN_NS (250LL * 1000 * 1000)   /* a failing call is tried again after this, doubling ... */
#define RETRY_MAX_NS (5LL * 1000 * 1000 * 1000) /* ... up to this */
#define CHUNK_DEFAULT (1024 * 1024)           /* bytes of a chunk, unless berthd says otherwise */
#define CHUNK_MAX (64 * 1024 * 1024)

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Whether the run is to be given up: fenced, or the worker quits. */
static bool given_up(struct worker_run *run)
{
    return worker_run_fenced(run) || atomic_load(&run->w->quitting);
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                    */

struct fetch_call {
    struct worker_run *run;
    struct worker_session *s;
};

/* One input from berthd into @fd; -EAGAIN (try again), -EPROTO (403: the
 * lease is not the worker's), -ENOENT (berthd cannot serve it: gone from
 * the store, or no store). */
static int fetch_input(void *userdata, size_t index, const char *digest, uint64_t size, int fd,
                       struct berth_error *reterr)
{
    struct fetch_call *c = userdata;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *refusal = NULL;
    char path[256];
    uint64_t bytes = 0;
    long status = 0;
    int r;

    snprintf(path, sizeof(path), "/v1/workers/runs/%s/inputs/%s", c->run->run_id, digest);
    r = berth_https_download(c->s->https, path, fd, size, NULL, &bytes, &status, &refusal, &err);
    if (r < 0)
        return berth_error_set(reterr, r == -ENOMEM ? r : -EAGAIN, "fetching input %zu: %s", index, err.message);
    if (status != 200) {
        berth_https_error(status, refusal, &err);
        /* 403: not the worker's run; 404, 410, 501: berthd cannot serve it; else ask again. */
        r = status == 403                                    ? -EPROTO
            : status == 404 || status == 410 || status == 501 ? -ENOENT
                                                              : -EAGAIN;
        return berth_error_set(reterr, r, "fetching input %zu: %s", index, err.message);
    }
    return 0;
}

int worker_inputs_stage(struct worker_run *run, struct worker_session *s, char **ret_dir)
{
    struct worker *w = run->w;
    const json_t *inputs = json_object_get(json_object_get(run->offer, "job"), "inputs");
    struct fetch_call c = {.run = run, .s = s};
    int64_t backoff = RETRY_MIN_NS, bytes = 0;
    int r;

    *ret_dir = NULL;
    if (json_array_size(inputs) == 0)
        return 0;
    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;

        r = berth_inputs_stage(w->inputs_dir, run->run_id, inputs, fetch_input, &c, ret_dir, &bytes, &err);
        if (r == 0) {
            if (bytes)
                berth_logf(&w->logger, BERTH_LOG_INFO, "run %s: staged %zu input(s), %lld bytes, from berthd",
                           run->run_id, json_array_size(inputs), (long long)bytes);
            return 0;
        }
        if (r != -EAGAIN || given_up(run)) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: staging its inputs failed: %s", run->run_id, err.message);
            return r;
        }
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: staging its inputs failed, trying again: %s", run->run_id,
                   err.message);
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
}

void worker_inputs_remove(struct worker *w, const char *run_id)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (berth_inputs_unstage(w->inputs_dir, run_id, &err) < 0)
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: cannot remove its staged inputs: %s", run_id, err.message);
}

/* ------------------------------------------------------------------------ */
/* Outputs                                                                   */

/* One request of an upload; 0 with *@ret_status (and *@ret_reply) when
 * berthd answered, -EAGAIN when it did not. */
static int call(struct worker_session *s, const char *method, const char *path, const char *range, const char *body,
                size_t len, long *ret_status, json_t **ret_reply, struct berth_error *reterr)
{
    const char *headers[] = {range, NULL};

    *ret_reply = NULL;
    if (berth_https_send(s->https, method, path, range ? headers : NULL, body ? "application/octet-stream" : NULL,
                         body, len, ret_status, ret_reply, NULL, NULL, reterr) < 0)
        return -EAGAIN;
    return 0;
}

/* The problem berthd's refusal @status of an output's bytes names, or NULL
 * when it is not about the bytes (the lease, a failing berthd). */
static const char *refused_problem(long status, const json_t *reply)
{
    const char *code = str(reply, "error");

    if (status == 400 && streq_ptr(code, "digest_mismatch"))
        return "digest_mismatch";
    if (status == 409 && streq_ptr(code, "conflict"))
        return "digest_mismatch";
    if (status == 410)
        return "refused";
    if (status == 413)
        return "too_large";
    return NULL;
}

/* Upload @size bytes of @fd as output @id (@digest) once.  0 stored;
 * a problem in *@problem; -EAGAIN (ask again); -EPERM (the lease is gone). */
static int upload_once(struct worker_run *run, struct worker_session *s, const char *id, int fd, uint64_t size,
                       const char *digest, const char **problem, struct berth_error *reterr)
{
    _cleanup_json_ json_t *reply = NULL;
    _cleanup_free_ char *buf = NULL;
    char path[512], loc[256], range[96];
    uint64_t off = 0;
    size_t chunk;
    long status = 0;
    int r;

    snprintf(path, sizeof(path), "/v1/workers/runs/%s/outputs/%s?size=%" PRIu64, run->run_id, id, size);
    if ((r = call(s, "POST", path, NULL, NULL, 0, &status, &reply, reterr)) < 0)
        return r;
    if (status != 202 || !str(reply, "upload") || strlen(str(reply, "upload")) > 64) {
        berth_https_error(status, reply, reterr);
        if ((*problem = refused_problem(status, reply)))
            return 0;
        /* 403: not the worker's run any more; 404: the job declares no such output. */
        return status == 403 || status == 404 ? -EPERM : -EAGAIN;
    }
    snprintf(loc, sizeof(loc), "/v1/workers/uploads/%s", str(reply, "upload"));
    chunk = json_integer_value(json_object_get(reply, "max_chunk_bytes")) >= 4096 &&
                    json_integer_value(json_object_get(reply, "max_chunk_bytes")) <= CHUNK_MAX
                ? (size_t)json_integer_value(json_object_get(reply, "max_chunk_bytes"))
                : CHUNK_DEFAULT;
    /* Leave room for the request's own head within the body bound. */
    chunk = chunk > 4096 ? chunk - 1024 : chunk;
    if (!(buf = malloc(chunk))) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto again;
    }
    while (off < size) {
        size_t n = size - off < chunk ? (size_t)(size - off) : chunk;

        if ((r = berth_pread_all(fd, buf, n, (off_t)off)) < 0) {
            /* The runtime's capture cannot be read back: as on berthd's host. */
            berth_error_set(reterr, r, "reading output %s at %" PRIu64 ": %s", id, off, strerror(-r));
            *problem = "unreadable";
            r = 0;
            goto cancel;
        }
        snprintf(range, sizeof(range), "Content-Range: %" PRIu64 "-%" PRIu64, off, off + n - 1);
        json_decref(reply);
        if ((r = call(s, "PATCH", loc, range, buf, n, &status, &reply, reterr)) < 0)
            goto again;
        if (status == 413) {
            *problem = "too_large";
            goto cancel;
        }
        if (status != 202)
            goto again;
        off += n;
    }
    snprintf(path, sizeof(path), "%s?digest=%s", loc, digest);
    json_decref(reply);
    if ((r = call(s, "PUT", path, NULL, "", 0, &status, &reply, reterr)) < 0)
        goto again;
    if (status == 201 && streq_ptr(str(reply, "digest"), digest) &&
        json_integer_value(json_object_get(reply, "size")) == (json_int_t)size)
        return 0;
    berth_https_error(status, reply, reterr);
    if ((*problem = refused_problem(status, reply)))
        return 0;
    return status == 403 ? -EPERM : -EAGAIN;
again:
    /* The session is given up (berthd restarted, a chunk was lost, the
     * connection failed): a new one starts from the first byte. */
    if (r == 0)
        berth_https_error(status, reply, reterr);
    r = r == -ENOMEM ? r : -EAGAIN;
cancel:
    json_decref(reply);
    reply = NULL;
    (void)call(s, "DELETE", loc, NULL, NULL, 0, &status, &reply, NULL);
    return r;
}

/* Output @decl of @run as the runtime captured it (@got, or NULL): 0 with
 * *@ret its report entry, or *@problem set; -ECANCELED. */
static int upload_output(struct worker_run *run, struct worker_session *s, const json_t *decl, const json_t *got,
                         json_t **ret, const char **problem)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    const char *id = str(decl, "id"), *digest = str(got, "digest");
    const json_t *size_v = json_object_get(got, "size");
    json_int_t max = json_integer_value(json_object_get(decl, "max_bytes")), size = json_integer_value(size_v);
    int64_t backoff = RETRY_MIN_NS;
    _cleanup_close_ int fd = -1;
    uint64_t opened = 0;
    int r;

    if (!got) {
        *problem = "missing"; /* exited, yet the runtime lists no capture of it */
        return 0;
    }
    if (!json_is_integer(size_v) || size < 0 || !digest) {
        *problem = "unreadable";
        return 0;
    }
    if (size > max) {
        *problem = "too_large";
        return 0;
    }
    r = worker_runtime_open_output(w, run->run_id, id, &fd, &opened, &err);
    if (r < 0) {
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: output %s cannot be read: %s", run->run_id, id,
                   err.message);
        *problem = berth_output_open_problem(r);
        return 0;
    }
    if (opened != (uint64_t)size) {
        *problem = "digest_mismatch";
        return 0;
    }
    for (;;) {
        err = (struct berth_error)BERTH_ERROR_INIT;
        r = upload_once(run, s, id, fd, (uint64_t)size, digest, problem, &err);
        if (r == 0 && *problem)
            berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: berthd refuses output %s: %s", run->run_id, id,
                       err.message);
        if (r == 0)
            break;
        if (r == -ENOMEM)
            return r;
        if (r == -EPERM || given_up(run)) {
            berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: output %s cannot be uploaded: %s", run->run_id, id,
                       err.message);
            return -ECANCELED;
        }
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: uploading output %s failed, trying again: %s", run->run_id,
                   id, err.message);
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
    if (*problem)
        return 0;
    *ret = json_pack("{s:s, s:s, s:I, s:s}", "id", id, "digest", digest, "size", size, "media_type",
                     str(decl, "media_type"));
    return *ret ? 0 : -ENOMEM;
}

/* The runtime's own output_error for a declared output, or NULL. */
static json_t *runtime_error(const json_t *declared, const json_t *e)
{
    const char *id = str(e, "id"), *problem = str(e, "problem");
    const json_t *d;
    size_t i;

    if (!problem || berth_name_index(berth_output_problem_names, BERTH_OUTPUT_PROBLEM_COUNT - 2, problem) < 0)
        return NULL;
    json_array_foreach(declared, i, d)
        if (streq_ptr(str(d, "id"), id))
            return json_pack("{s:s, s:s}", "id", id, "problem", problem);
    return NULL;
}

int worker_outputs_upload(struct worker_run *run, struct worker_session *s, const json_t *doc, json_t **ret_outputs,
                          json_t **ret_error)
{
    const json_t *declared = json_object_get(json_object_get(run->offer, "job"), "outputs");
    const json_t *listed = json_object_get(doc, "outputs"), *e = json_object_get(doc, "output_error"), *decl, *v;
    _cleanup_json_ json_t *list = json_array();
    size_t i, k;
    int r;

    *ret_outputs = *ret_error = NULL;
    if (!list)
        return -ENOMEM;
    if (e && !json_is_null(e)) {
        *ret_error = runtime_error(declared, e);
        if (!*ret_error)
            *ret_error = json_pack("{s:s, s:s}", "id", str(json_array_get(declared, 0), "id"), "problem",
                                   "unreadable");
        *ret_outputs = TAKE_PTR(list);
        return *ret_error ? 0 : -ENOMEM;
    }
    json_array_foreach(declared, i, decl)
    {
        const json_t *got = NULL;
        const char *problem = NULL;
        json_t *entry = NULL;

        json_array_foreach(listed, k, v)
            if (streq_ptr(str(v, "id"), str(decl, "id")))
                got = v;
        if ((r = upload_output(run, s, decl, got, &entry, &problem)) < 0)
            return r;
        if (problem) {
            *ret_error = json_pack("{s:s, s:s}", "id", str(decl, "id"), "problem", problem);
            json_array_clear(list); /* nothing half-uploaded is listed */
            break;
        }
        if (json_array_append_new(list, entry) < 0)
            return -ENOMEM;
    }
    if (json_array_size(list))
        berth_logf(&run->w->logger, BERTH_LOG_INFO, "job %s run %s: uploaded %zu output(s) to berthd", run->job_id,
                   run->run_id, json_array_size(list));
    *ret_outputs = TAKE_PTR(list);
    return 0;
}
