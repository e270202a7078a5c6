/* SPDX-License-Identifier: MIT */
/*
 * api-evidence.c -- the evidence routes of berthd's API (docs/evidence.md):
 * chunked and monolithic uploads in the shape of the OCI distribution
 * spec, downloads, deletions and listings.
 *
 * What touches only the upload sessions (uploads.h) runs on the event
 * loop: a chunk is written into its session's unnamed file there (one
 * request holds at most http.max_body_bytes).  Everything that calls the
 * evidence store runs on the helper thread (offload.h), because it may wait
 * for the evidence lock or hash and fdatasync up to 1 GiB; the reply is
 * sent when it is done, as a submission's reply waits for its batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "broker-evidence.h"
#include "clock.h"
#include "content-range.h"
#include "enrol.h"
#include "fsutil.h"
#include "macro.h"
#include "query.h"
#include "server-internal.h"
#include "upload-request.h"

#define DOWNLOADS_MAX 8                                /* evidence downloads copied or sent at once */
#define BLOB_DOWNLOADS_MAX 8                           /* and, apart, image blobs sent to workers at once */
#define LIST_LIMIT_DEFAULT 100                         /* objects per listed page, unless ?limit= */
#define EXPIRY_PERIOD_NS (30LL * 1000 * 1000 * 1000)   /* how often idle sessions are looked for */
#define EXTRA_MAX 400                                  /* the extra header lines of one reply */

enum task_kind {
    TASK_OPEN,
    TASK_MONOLITHIC,
    TASK_COMMIT,
    TASK_GET,
    TASK_DELETE,
    TASK_LIST,
    TASK_JOB_OUTPUT,
    TASK_IMAGE_BLOB,
    TASK_RUN_INPUT,  /* a worker's: an input of a run it holds */
    TASK_RUN_OPEN,   /* a worker's: start uploading a declared output */
    TASK_RUN_COMMIT, /* a worker's: store it */
};

/* One evidence operation on the helper thread. */
struct evidence_task {
    struct berthd_offload_task base; /* first: the offload hands this back */
    struct berthd_server *srv;
    struct client *client; /* NULL once its connection is gone: nothing is answered */
    struct evidence_task *next;
    enum task_kind kind;
    struct berth_evidence_owner who;
    struct berthd_upload *upload; /* TASK_OPEN, TASK_COMMIT: busy meanwhile */
    struct berthd_upload_request req;
    char digest[BERTH_DIGEST_BUFSZ];
    char *body; /* TASK_MONOLITHIC: the object; TASK_DELETE: the request */
    size_t len;
    char *after; /* TASK_LIST */
    int64_t limit;
    bool all;
    int rc; /* TASK_OPEN: what berth_broker_evidence_begin() returned */
    int fd; /* TASK_OPEN: the new session's file */
    uint64_t room;
    struct berth_evidence_content content; /* TASK_GET */
    struct berth_job_output output;        /* TASK_JOB_OUTPUT, of: */
    char fp[BERTH_FINGERPRINT_LEN + 1], job[BERTH_JOB_ID_MAX + 1], output_id[BERTH_JOB_ID_MAX + 1];
    char image[BERTH_DIGEST_BUFSZ];        /* TASK_IMAGE_BLOB: the image, and @digest the blob */
    int blob_fd;                           /* TASK_IMAGE_BLOB */
    uint64_t blob_size;
    struct berth_reply reply;
    char method[16];
    char path[64];
    int64_t start;
};

static int64_t mono_now(void)
{
    int64_t now;

    return berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 ? 0 : now;
}

/* ------------------------------------------------------------------------ */
/* Helper thread                                                             */

/* A chunk could not be written (@r): what the client is told. */
static void write_failed(int r, struct berth_reply *reply)
{
    reply->status = 503;
    reply->error = r == -ENOSPC || r == -EDQUOT ? "storage_full" : "evidence_store";
    snprintf(reply->message, sizeof(reply->message), "writing the upload failed (%s): nothing was kept; retry",
             strerror(-r));
    reply->retry_after_s = r == -ENOSPC || r == -EDQUOT ? 30 : 0;
}

static void task_run(struct berthd_offload_task *base)
{
    struct evidence_task *t = (struct evidence_task *)base;
    struct berth_broker *b = t->srv->broker;
    int fd = -1, r;

    switch (t->kind) {
    case TASK_OPEN:
        t->rc = berth_broker_evidence_begin(b, &t->who, t->req.has_size, t->req.size, NULL, &t->fd, &t->room,
                                            &t->reply);
        break;
    case TASK_MONOLITHIC:
        if (berth_broker_evidence_begin(b, &t->who, true, t->len, t->req.digest, &fd, &t->room, &t->reply) < 0)
            break;
        r = berth_pwrite_all(fd, t->body, t->len, 0);
        if (r < 0)
            write_failed(r, &t->reply);
        else
            berth_broker_evidence_commit(b, &t->who, fd, t->len, t->req.digest, t->req.media_type, &t->reply);
        close(fd);
        break;
    case TASK_COMMIT:
        berth_broker_evidence_commit(b, &t->who, t->upload->fd, t->upload->offset, t->req.digest, t->req.media_type,
                                     &t->reply);
        break;
    case TASK_GET: berth_broker_evidence_get(b, &t->who, t->digest, &t->content, &t->reply); break;
    case TASK_DELETE: berth_broker_evidence_remove(b, &t->who, t->digest, t->body, t->len, &t->reply); break;
    case TASK_LIST: berth_broker_evidence_list(b, &t->who, t->after, t->limit, t->all, &t->reply); break;
    case TASK_JOB_OUTPUT: berth_broker_job_output(b, t->fp, t->job, t->output_id, &t->output, &t->reply); break;
    case TASK_IMAGE_BLOB:
        if (berth_broker_image_blob(b, t->fp, t->image, t->digest, t->job, &t->blob_fd, &t->blob_size, &t->reply) == 0)
            t->reply.status = 200;
        break;
    case TASK_RUN_INPUT: berth_broker_run_input(b, t->fp, t->job, t->digest, &t->content, &t->reply); break;
    case TASK_RUN_OPEN:
        t->rc = berth_broker_run_output_begin(b, t->fp, t->upload->run_id, t->upload->output, t->req.has_size,
                                              t->req.size, &t->fd, &t->room, &t->reply);
        break;
    case TASK_RUN_COMMIT:
        berth_broker_run_output_commit(b, t->fp, t->upload->run_id, t->upload->output, t->upload->fd,
                                       t->upload->offset, t->req.digest, &t->reply);
        break;
    }
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

static void fail(struct berth_reply *r, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(struct berth_reply *r, int status, const char *code, const char *fmt, ...)
{
    va_list ap;

    json_decref(r->body);
    r->body = NULL;
    r->status = status;
    r->error = code;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof(r->message), fmt, ap);
    va_end(ap);
}

/* Where the chunks of @u go: an evidence upload's, or a worker's. */
static const char *session_base(const struct berthd_upload *u)
{
    return u->run_id[0] ? "/v1/workers/uploads" : "/v1/evidence/uploads";
}

/* Location and (when it holds bytes) Range of @u, as header lines. */
static void session_headers(const struct berthd_upload *u, char extra[EXTRA_MAX])
{
    char range[BERTHD_RANGE_BUFSZ];

    if (u->offset && berthd_range_format(u->offset, range) == 0)
        snprintf(extra, EXTRA_MAX, "Location: %s/%s\r\nRange: %s\r\n", session_base(u), u->id, range);
    else
        snprintf(extra, EXTRA_MAX, "Location: %s/%s\r\n", session_base(u), u->id);
}

/* {upload, location, offset, room, max_chunk_bytes} of @u. */
static json_t *session_json(const struct berthd_server *srv, const struct berthd_upload *u)
{
    char location[128];

    snprintf(location, sizeof(location), "%s/%s", session_base(u), u->id);
    return json_pack("{s:s, s:s, s:I, s:I, s:I}", "upload", u->id, "location", location, "offset",
                     (json_int_t)u->offset, "room", (json_int_t)u->room, "max_chunk_bytes",
                     (json_int_t)srv->cfg->max_body_bytes);
}

static void succeed(struct berth_reply *r, int status, json_t *body)
{
    if (!body) {
        fail(r, 500, "internal", "out of memory");
        return;
    }
    r->status = status;
    r->body = body;
}

static void download_released(void *arg)
{
    struct berthd_server *srv = arg;

    if (srv->downloads)
        srv->downloads--;
}

static void blob_download_released(void *arg)
{
    struct berthd_server *srv = arg;

    if (srv->blob_downloads)
        srv->blob_downloads--;
}

/* The loop: answer what the helper thread did, and release the task. */
/* A download's verified copy *@fd (@size bytes): streamed to @cl with its
 * digest and media type, or closed when nothing was found or @cl is gone;
 * *@fd is -1 afterwards.  true when @cl was answered. */
static bool send_copy(struct evidence_task *t, struct client *cl, int *fd, uint64_t size, const char *digest,
                      const char *media_type)
{
    void (*released)(void *) =
        t->kind == TASK_IMAGE_BLOB || t->kind == TASK_RUN_INPUT ? blob_download_released : download_released;
    char extra[EXTRA_MAX];

    if (*fd < 0 || !cl) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        released(t->srv);
        return false;
    }
    snprintf(extra, sizeof(extra), "Evidence-Digest: %s\r\nEvidence-Media-Type: %s\r\n", digest, media_type);
    berthd_api_send_fd(t->srv, cl, t->method, &t->reply, *fd, size, t->start, t->path, extra, released, t->srv);
    *fd = -1;
    return true;
}

static void task_done(struct berthd_offload_task *base)
{
    struct evidence_task *t = (struct evidence_task *)base, **pp;
    struct berthd_server *srv = t->srv;
    struct client *cl = srv->freeing ? NULL : t->client;
    char extra[EXTRA_MAX] = "";

    for (pp = &srv->tasks; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    if (t->who.principal[0]) /* a job's output: the broker names who asked */
        snprintf(t->reply.principal, sizeof(t->reply.principal), "%s", t->who.principal);
    if (!base->ran && t->reply.status == 0)
        fail(&t->reply, 503, "shutting_down", "berthd is shutting down; retry");
    switch (t->kind) {
    case TASK_OPEN:
    case TASK_RUN_OPEN:
        if (base->ran && t->rc == 0 && cl && !srv->freeing) {
            t->upload->fd = t->fd;
            t->upload->room = t->room;
            t->upload->busy = false;
            t->upload->touched = mono_now();
            succeed(&t->reply, 202, session_json(srv, t->upload));
            session_headers(t->upload, extra);
        } else {
            if (base->ran && t->rc == 0)
                close(t->fd);
            if (!srv->freeing)
                berthd_uploads_drop(&srv->uploads, t->upload); /* nobody knows its name */
        }
        break;
    case TASK_RUN_COMMIT:
        if (!srv->freeing)
            berthd_uploads_drop(&srv->uploads, t->upload); /* stored or refused: a retry starts again */
        break;
    case TASK_COMMIT:
    case TASK_MONOLITHIC:
        if (t->kind == TASK_COMMIT && !srv->freeing)
            berthd_uploads_drop(&srv->uploads, t->upload); /* committed or refused: nothing is kept */
        if (t->reply.status == 200 || t->reply.status == 201)
            snprintf(extra, sizeof(extra), "Location: /v1/evidence/%s\r\n", t->req.digest);
        break;
    case TASK_GET:
        if (send_copy(t, cl, &t->content.fd, t->content.size, t->digest, t->content.media_type))
            cl = NULL; /* answered */
        break;
    case TASK_RUN_INPUT:
        if (send_copy(t, cl, &t->content.fd, t->content.size, t->digest, t->content.media_type))
            cl = NULL; /* answered */
        break;
    case TASK_JOB_OUTPUT:
        if (send_copy(t, cl, &t->output.fd, t->output.size, t->output.digest, t->output.media_type))
            cl = NULL; /* answered */
        break;
    case TASK_IMAGE_BLOB:
        /* Bytes as stored: the worker checks them against the digest it asked for. */
        if (send_copy(t, cl, &t->blob_fd, t->blob_size, t->digest, "application/octet-stream"))
            cl = NULL; /* answered */
        break;
    case TASK_DELETE:
    case TASK_LIST: break;
    }
    if (cl)
        berthd_api_send(srv, cl, t->method, &t->reply, t->start, t->path, extra[0] ? extra : NULL);
    berth_reply_clear(&t->reply);
    berth_evidence_owner_clear(&t->who);
    free(t->body);
    free(t->after);
    free(t);
}

/* A new task of @kind for @rq's client and @who (taken over: *@who is zeroed). */
static struct evidence_task *task_new(struct request *rq, enum task_kind kind, struct berth_evidence_owner *who,
                                      struct berth_reply *r)
{
    struct evidence_task *t = calloc(1, sizeof(*t));

    if (!t) {
        fail(r, 503, "busy", "out of memory; retry later");
        return NULL;
    }
    t->base.run = task_run;
    t->base.done = task_done;
    t->srv = rq->srv;
    t->client = rq->cl;
    t->kind = kind;
    t->who = *who;
    memset(who, 0, sizeof(*who));
    t->fd = -1;
    t->content.fd = -1;
    t->output.fd = -1;
    t->blob_fd = -1;
    t->start = rq->start;
    snprintf(t->method, sizeof(t->method), "%s", rq->in->head->method_name);
    snprintf(t->path, sizeof(t->path), "%s", rq->shown);
    return t;
}

/* Queue @t; the handler then returns false (the reply comes from task_done()). */
static bool task_submit(struct evidence_task *t)
{
    t->next = t->srv->tasks;
    t->srv->tasks = t;
    berthd_offload_submit(t->srv->offload, &t->base);
    return false;
}

/* ------------------------------------------------------------------------ */
/* Handlers                                                                  */

/* The caller as an owner of evidence; false with @r filled when refused. */
static bool caller(struct request *rq, struct berth_evidence_owner *who, struct berth_reply *r)
{
    return berth_broker_evidence_caller(rq->srv->broker, rq->fp, who, r) == 0;
}

/* Judge @rq as upload operation @op into @req; false with @r filled when refused. */
static bool parse_upload(struct request *rq, enum berthd_upload_op op, struct berthd_upload_request *req,
                         struct berth_reply *r)
{
    const struct berthd_http_head *h = rq->in->head;
    struct berthd_http_refusal why = {0};

    if (berthd_upload_request_parse(op, rq->query, h->has_content_range ? h->content_range : NULL, rq->in->body_len,
                                    req, &why) == 0)
        return true;
    fail(r, why.status, why.code, "%s", why.message);
    return false;
}

/* The caller's session named by the path; NULL with @r filled when there is none or it is busy. */
static struct berthd_upload *session_of(struct request *rq, const char *principal, const char *scope,
                                        struct berth_reply *r)
{
    struct berthd_upload *u = berthd_uploads_find(&rq->srv->uploads, rq->param, principal, scope);

    /* A worker's session is no evidence caller's, and the other way round. */
    if (u && (u->run_id[0] != '\0') != (scope[0] == '\0'))
        u = NULL;
    if (!u) {
        fail(r, 404, "not_found", "no upload %s (it was committed, cancelled, expired, or berthd restarted)",
             rq->param);
        return NULL;
    }
    if (u->busy) {
        fail(r, 409, "busy", "upload %s is being opened or committed", u->id);
        return NULL;
    }
    return u;
}

static struct berthd_upload *session(struct request *rq, const struct berth_evidence_owner *who, struct berth_reply *r)
{
    return session_of(rq, who->principal, who->scope, r);
}

/* session() of an authenticated caller that needs only that. */
static struct berthd_upload *callers_session(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner who;
    struct berthd_upload *u;

    if (!caller(rq, &who, r))
        return NULL;
    u = session(rq, &who, r);
    berth_evidence_owner_clear(&who);
    return u;
}

/* Append the body of @rq, a chunk judged into @req, to @u; false with @r
 * filled when refused (a chunk past the upload's room drops it). */
static bool take_chunk(struct request *rq, struct berthd_upload *u, const struct berthd_upload_request *req,
                       struct berth_reply *r, char extra[EXTRA_MAX])
{
    struct berthd_server *srv = rq->srv;
    int err;

    u->touched = mono_now();
    if (req->has_range && req->start != u->offset) {
        fail(r, 416, "range",
             "upload %s holds %llu bytes: the next chunk must start there (Content-Range %llu-...), not at %llu",
             u->id, (unsigned long long)u->offset, (unsigned long long)u->offset, (unsigned long long)req->start);
        session_headers(u, extra);
        return false;
    }
    if (req->length > u->room - u->offset) {
        if (u->room >= (uint64_t)srv->cfg->evidence_max_object_bytes)
            fail(r, 413, "too_large", "an evidence object is at most %lld bytes: upload %s is dropped",
                 (long long)srv->cfg->evidence_max_object_bytes, u->id);
        else
            fail(r, 413, "quota_exceeded",
                 "the owner's evidence quota leaves room for %llu bytes: upload %s is dropped",
                 (unsigned long long)u->room, u->id);
        berthd_uploads_drop(&srv->uploads, u);
        return false;
    }
    err = berth_pwrite_all(u->fd, rq->in->body, rq->in->body_len, u->offset);
    if (err < 0) {
        write_failed(err, r);
        berthd_uploads_drop(&srv->uploads, u);
        return false;
    }
    /* Write-behind: the chunk starts for the disk now (this does not wait),
     * so the commit's fdatasync finds little left to write.  Best effort. */
    if (rq->in->body_len)
        (void)sync_file_range(u->fd, (off_t)u->offset, (off_t)rq->in->body_len, SYNC_FILE_RANGE_WRITE);
    u->offset += rq->in->body_len;
    return true;
}

bool berthd_evidence_start_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner who;
    struct berthd_upload_request req;
    struct evidence_task *t;
    struct berthd_upload *u = NULL;
    int err = 0;

    if (!parse_upload(rq, BERTHD_UPLOAD_START, &req, r) || !caller(rq, &who, r))
        return true;
    if (!req.monolithic) {
        u = berthd_uploads_add(&rq->srv->uploads, who.principal, who.scope, mono_now(), &err);
        if (!u) {
            if (err == -EUSERS)
                fail(r, 429, "too_many_uploads",
                     "at most %d uploads of one principal (%d in all) at once: commit or cancel one first",
                     BERTHD_UPLOADS_PER_OWNER, BERTHD_UPLOADS_MAX);
            else
                fail(r, 503, "busy", "no upload can be started now; retry later");
            berth_evidence_owner_clear(&who);
            return true;
        }
    }
    t = task_new(rq, req.monolithic ? TASK_MONOLITHIC : TASK_OPEN, &who, r);
    if (t && req.monolithic && !(t->body = malloc(rq->in->body_len ? rq->in->body_len : 1))) {
        fail(r, 503, "busy", "out of memory; retry later");
        berth_evidence_owner_clear(&t->who);
        free(t);
        t = NULL;
    }
    if (!t) {
        if (!req.monolithic)
            berthd_uploads_drop(&rq->srv->uploads, u);
        berth_evidence_owner_clear(&who);
        return true;
    }
    t->req = req;
    if (req.monolithic) {
        memcpy(t->body, rq->in->body, rq->in->body_len);
        t->len = rq->in->body_len;
    } else {
        t->upload = u;
    }
    return task_submit(t);
}

bool berthd_evidence_status_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_upload *u = callers_session(rq, r);
    char extra[EXTRA_MAX];

    if (!u)
        return true;
    u->touched = mono_now();
    succeed(r, 200, session_json(rq->srv, u));
    session_headers(u, extra);
    berthd_api_send(rq->srv, rq->cl, rq->in->head->method_name, r, rq->start, rq->shown, extra);
    berth_reply_clear(r);
    return false;
}

/* Append the chunk @req of @rq to session @u (NULL: @r says why) and answer. */
static bool chunk_session(struct request *rq, struct berthd_upload *u, const struct berthd_upload_request *req,
                          struct berth_reply *r)
{
    char extra[EXTRA_MAX] = "";

    if (!u)
        return true;
    if (take_chunk(rq, u, req, r, extra)) {
        succeed(r, 202, session_json(rq->srv, u));
        session_headers(u, extra);
    }
    berthd_api_send(rq->srv, rq->cl, rq->in->head->method_name, r, rq->start, rq->shown, extra[0] ? extra : NULL);
    berth_reply_clear(r);
    return false;
}

/* Commit session @u (NULL: @r says why) with @req, its last chunk if @rq
 * has a body, as a task of @kind for @who (taken over, cleared on failure). */
static bool commit_session(struct request *rq, struct berthd_upload *u, const struct berthd_upload_request *req,
                           enum task_kind kind, struct berth_evidence_owner *who, struct berth_reply *r)
{
    struct evidence_task *t = NULL;
    char extra[EXTRA_MAX] = "";

    if (!u || (rq->in->body_len && !take_chunk(rq, u, req, r, extra)) || !(t = task_new(rq, kind, who, r))) {
        berth_evidence_owner_clear(who);
        berthd_api_send(rq->srv, rq->cl, rq->in->head->method_name, r, rq->start, rq->shown,
                        extra[0] ? extra : NULL);
        berth_reply_clear(r);
        return false;
    }
    snprintf(t->fp, sizeof(t->fp), "%s", rq->fp);
    u->busy = true;
    t->upload = u;
    t->req = *req;
    return task_submit(t);
}

bool berthd_evidence_chunk_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_upload_request req;

    if (!parse_upload(rq, BERTHD_UPLOAD_CHUNK, &req, r))
        return true;
    return chunk_session(rq, callers_session(rq, r), &req, r);
}

bool berthd_evidence_commit_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner who;
    struct berthd_upload_request req;

    if (!parse_upload(rq, BERTHD_UPLOAD_COMMIT, &req, r) || !caller(rq, &who, r))
        return true;
    return commit_session(rq, session(rq, &who, r), &req, TASK_COMMIT, &who, r);
}

/* Drop session @u (NULL: @r says why already) and say so. */
static bool cancel_session(struct request *rq, struct berthd_upload *u, struct berth_reply *r)
{
    char id[BERTHD_UUID_LEN + 1];

    if (!u)
        return true;
    snprintf(id, sizeof(id), "%s", u->id);
    berthd_uploads_drop(&rq->srv->uploads, u);
    succeed(r, 200, json_pack("{s:s, s:b}", "upload", id, "cancelled", 1));
    return true;
}

bool berthd_evidence_cancel_handler(struct request *rq, struct berth_reply *r)
{
    return cancel_session(rq, callers_session(rq, r), r);
}

bool berthd_evidence_get_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner who;
    struct evidence_task *t;

    if (!caller(rq, &who, r))
        return true;
    if (rq->srv->downloads >= DOWNLOADS_MAX) {
        berth_evidence_owner_clear(&who);
        fail(r, 503, "busy", "%d evidence downloads are in progress; retry in a moment", DOWNLOADS_MAX);
        r->retry_after_s = 1;
        return true;
    }
    t = task_new(rq, TASK_GET, &who, r);
    if (!t) {
        berth_evidence_owner_clear(&who);
        return true;
    }
    snprintf(t->digest, sizeof(t->digest), "%s", rq->param);
    rq->srv->downloads++; /* until the copy is sent or dropped */
    return task_submit(t);
}

/* A task of @kind for a download sent on behalf of the caller's
 * certificate, counted in *@count (at most @max at once: the copy holds a
 * file until it is sent); NULL with @r filled. */
static struct evidence_task *download_task(struct request *rq, enum task_kind kind, unsigned *count, unsigned max,
                                           struct berth_reply *r)
{
    struct berth_evidence_owner nobody = {0};
    struct evidence_task *t;

    if (*count >= max) {
        fail(r, 503, "busy", "%u downloads of this kind are in progress; retry in a moment", max);
        r->retry_after_s = 1;
        return NULL;
    }
    t = task_new(rq, kind, &nobody, r);
    if (!t)
        return NULL;
    snprintf(t->fp, sizeof(t->fp), "%s", rq->fp);
    (*count)++; /* until the copy is sent or dropped */
    return t;
}

/* GET /v1/jobs/{job}/outputs/{output}: a job's captured output, through the
 * helper thread like an evidence download (the broker rechecks the grant). */
bool berthd_job_output_handler(struct request *rq, struct berth_reply *r)
{
    struct evidence_task *t = download_task(rq, TASK_JOB_OUTPUT, &rq->srv->downloads, DOWNLOADS_MAX, r);

    if (!t)
        return true;
    snprintf(t->job, sizeof(t->job), "%s", rq->param);
    snprintf(t->output_id, sizeof(t->output_id), "%s", rq->param2);
    return task_submit(t);
}

/* GET /v1/images/{image}/blobs/{blob}?run=RUN: a blob for the worker that
 * holds the lease of RUN (docs/workers.md), read on the helper thread. */
bool berthd_image_blob_handler(struct request *rq, struct berth_reply *r)
{
    static const char *const allowed[] = {"run", NULL};
    char *values[ELEMENTSOF(allowed)] = {NULL};
    struct evidence_task *t;
    char why[160];
    int rc;

    rc = berthd_query_parse(rq->query, allowed, values, why, sizeof(why));
    if (rc < 0 || !values[0] || !berth_job_id_valid(values[0])) {
        if (rc == 0)
            berthd_query_free(allowed, values);
        fail(r, rc == -ENOMEM ? 503 : 400, rc == -ENOMEM ? "busy" : "malformed", "%s",
             rc == -EBADMSG ? why : rc == -ENOMEM ? "out of memory; retry later" : "?run=RUN names the leased run");
        return true;
    }
    t = download_task(rq, TASK_IMAGE_BLOB, &rq->srv->blob_downloads, BLOB_DOWNLOADS_MAX, r);
    if (t) {
        snprintf(t->image, sizeof(t->image), "%s", rq->param);
        snprintf(t->digest, sizeof(t->digest), "%s", rq->param2);
        snprintf(t->job, sizeof(t->job), "%s", values[0]);
    }
    berthd_query_free(allowed, values);
    return t ? task_submit(t) : true;
}

/* GET /v1/workers/runs/{run}/inputs/{digest}: an input of a run the
 * worker holds, read on the helper thread (sent like an image blob). */
bool berthd_run_input_handler(struct request *rq, struct berth_reply *r)
{
    struct evidence_task *t = download_task(rq, TASK_RUN_INPUT, &rq->srv->blob_downloads, BLOB_DOWNLOADS_MAX, r);

    if (!t)
        return true;
    snprintf(t->job, sizeof(t->job), "%s", rq->param);
    snprintf(t->digest, sizeof(t->digest), "%s", rq->param2);
    return task_submit(t);
}

/* POST /v1/workers/runs/{run}/outputs/{output}[?size=N]: a session for a
 * declared output of a run the worker holds, opened on the helper thread
 * (the lease is checked there); its chunks go to /v1/workers/uploads/{id}. */
bool berthd_run_output_start_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner nobody = {0};
    struct berthd_upload_request req;
    struct berthd_upload *u;
    struct evidence_task *t;
    int err = 0;

    if (!parse_upload(rq, BERTHD_UPLOAD_START, &req, r))
        return true;
    if (req.monolithic) {
        fail(r, 400, "malformed",
             "an output is uploaded in a session: POST without ?digest=, PATCH its chunks, PUT ?digest= to store it");
        return true;
    }
    /* Workers' sessions take at most half the table: evidence clients keep the rest. */
    for (size_t i = 0, n = 0; i < rq->srv->uploads.n; i++)
        if (rq->srv->uploads.v[i]->run_id[0] && ++n >= BERTHD_UPLOADS_MAX / 2) {
            fail(r, 429, "too_many_uploads", "%d uploads of workers are open; retry later", BERTHD_UPLOADS_MAX / 2);
            r->retry_after_s = 1;
            return true;
        }
    u = berthd_uploads_add(&rq->srv->uploads, rq->fp, "", mono_now(), &err);
    if (!u) {
        if (err == -EUSERS)
            fail(r, 429, "too_many_uploads", "at most %d uploads of one worker (%d in all) at once",
                 BERTHD_UPLOADS_PER_OWNER, BERTHD_UPLOADS_MAX);
        else
            fail(r, 503, "busy", "no upload can be started now; retry later");
        return true;
    }
    snprintf(u->run_id, sizeof(u->run_id), "%s", rq->param);
    snprintf(u->output, sizeof(u->output), "%s", rq->param2);
    t = task_new(rq, TASK_RUN_OPEN, &nobody, r);
    if (!t) {
        berthd_uploads_drop(&rq->srv->uploads, u);
        return true;
    }
    snprintf(t->fp, sizeof(t->fp), "%s", rq->fp);
    t->upload = u;
    t->req = req;
    return task_submit(t);
}

/* PATCH /v1/workers/uploads/{upload}: a chunk of the caller's session (Content-Range as for evidence). */
bool berthd_run_output_chunk_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_upload_request req;

    if (!parse_upload(rq, BERTHD_UPLOAD_CHUNK, &req, r))
        return true;
    return chunk_session(rq, session_of(rq, rq->fp, "", r), &req, r);
}

/* PUT /v1/workers/uploads/{upload}?digest=D: store the session (with a
 * last chunk, if any) as the run's output, on the helper thread. */
bool berthd_run_output_commit_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner nobody = {0};
    struct berthd_upload_request req;

    if (!parse_upload(rq, BERTHD_UPLOAD_COMMIT, &req, r))
        return true;
    return commit_session(rq, session_of(rq, rq->fp, "", r), &req, TASK_RUN_COMMIT, &nobody, r);
}

/* DELETE /v1/workers/uploads/{upload}: the worker gives its session up. */
bool berthd_run_output_cancel_handler(struct request *rq, struct berth_reply *r)
{
    return cancel_session(rq, session_of(rq, rq->fp, "", r), r);
}

bool berthd_evidence_delete_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_evidence_owner who;
    struct evidence_task *t;

    if (!caller(rq, &who, r))
        return true;
    t = task_new(rq, TASK_DELETE, &who, r);
    if (t && !(t->body = strndup(rq->in->body, rq->in->body_len))) {
        fail(r, 503, "busy", "out of memory; retry later");
        berth_evidence_owner_clear(&t->who);
        free(t);
        t = NULL;
    }
    if (!t) {
        berth_evidence_owner_clear(&who);
        return true;
    }
    t->len = rq->in->body_len;
    snprintf(t->digest, sizeof(t->digest), "%s", rq->param);
    return task_submit(t);
}

/* ?after=CURSOR&limit=N&all=true|false */
bool berthd_evidence_list_handler(struct request *rq, struct berth_reply *r)
{
    static const char *const keys[] = {"after", "all", "limit", NULL};
    struct berth_evidence_owner who = {0};
    struct evidence_task *t;
    char *v[3] = {0}, why[160] = "", *end = NULL;
    long long limit = LIST_LIMIT_DEFAULT;
    bool all = false;
    int err;

    err = berthd_query_parse(rq->query, keys, v, why, sizeof(why));
    if (err < 0) {
        fail(r, err == -EBADMSG ? 400 : 503, err == -EBADMSG ? "malformed" : "busy", "%s",
             err == -EBADMSG ? why : "out of memory; retry later");
        return true;
    }
    if (v[2]) {
        errno = 0;
        limit = v[2][0] >= '1' && v[2][0] <= '9' ? strtoll(v[2], &end, 10) : 0;
        if (errno || !end || *end || limit < 1 || limit > BERTH_EVIDENCE_PAGE_MAX)
            fail(r, 400, "malformed", "limit must be a number from 1 to %d", BERTH_EVIDENCE_PAGE_MAX);
    }
    if (v[1] && !streq(v[1], "true") && !streq(v[1], "false"))
        fail(r, 400, "malformed", "all must be true or false");
    all = v[1] && streq(v[1], "true");
    if (r->error || !caller(rq, &who, r) || !(t = task_new(rq, TASK_LIST, &who, r))) {
        berth_evidence_owner_clear(&who);
        berthd_query_free(keys, v);
        return true;
    }
    t->after = TAKE_PTR(v[0]);
    t->limit = limit;
    t->all = all;
    berthd_query_free(keys, v);
    return task_submit(t);
}

/* ------------------------------------------------------------------------ */
/* Lifecycle                                                                 */

static void expire_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_server *srv = arg;
    size_t n;

    (void)fd, (void)what;
    n = berthd_uploads_expire(&srv->uploads, mono_now());
    if (n)
        berth_logf(srv->logger, BERTH_LOG_INFO, "%zu evidence upload(s) idle for %lld s dropped", n,
                   BERTHD_UPLOAD_IDLE_NS / BERTH_NS_PER_SEC);
}

int berthd_evidence_init(struct berthd_server *srv)
{
    struct timeval tv = berth_timeval_of_ns(EXPIRY_PERIOD_NS);
    int r;

    srv->uploads_ev = event_new(srv->base, -1, EV_PERSIST, expire_cb, srv);
    if (!srv->uploads_ev || event_add(srv->uploads_ev, &tv) < 0)
        return -ENOMEM;
    r = berthd_offload_new(srv->base, 1, &srv->offload);
    return r;
}

void berthd_evidence_forget(struct berthd_server *srv, struct client *cl)
{
    struct evidence_task *t;

    for (t = srv->tasks; t; t = t->next)
        if (t->client == cl)
            t->client = NULL;
}

void berthd_evidence_free(struct berthd_server *srv)
{
    berthd_offload_free(srv->offload);
    srv->offload = NULL;
    berthd_uploads_clear(&srv->uploads);
    if (srv->uploads_ev)
        event_free(srv->uploads_ev);
    srv->uploads_ev = NULL;
}
