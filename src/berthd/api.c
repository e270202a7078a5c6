/* SPDX-License-Identifier: MIT */
/*
 * api.c -- berthd's HTTP API: the route table, its handlers, replies, and
 * the submission batch (group commit); see server.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "buf.h"
#include "canon.h"
#include "clock.h"
#include "digest.h"
#include "enrol.h"
#include "job.h"
#include "macro.h"
#include "pool.h"
#include "reply-encode.h"
#include "server-internal.h"
#include "tls.h"
#include "uuid.h"

#define BATCH_MAX 256   /* submissions per journal commit */
#define AUDIT_PAGE 1000 /* audit events per reply */
#define ROUTE_PARAMS 2  /* {...} segments of a route, at most */
#define ROUTE_PARAM_SIZE (BERTH_JOB_ID_MAX + 1)

/* Seconds since @start (CLOCK_MONOTONIC ns), for logs and metrics only: 0
 * when either reading failed. */
static double elapsed(int64_t start)
{
    int64_t now;

    if (start < 0 || berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 || now < start)
        return 0;
    return (double)(now - start) / 1e9;
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

/* A reply's metrics and its log line. */
static void account(struct berthd_server *srv, const char *method, const struct berth_reply *reply, int64_t start,
                    bool submission, const char *path)
{
    double secs = elapsed(start);

    berthd_metrics_count_reply(&srv->metrics, reply->status, reply->error, secs, submission);
    berth_logf(srv->logger, reply->status >= 500 ? BERTH_LOG_WARNING : BERTH_LOG_INFO, "%s %s %s %d %s%s%.1f ms",
               reply->principal[0] ? reply->principal : "-", method, path, reply->status,
               reply->error ? reply->error : "", reply->error ? " " : "", secs * 1000);
}

/* Send @reply on @cl: its JSON, or for a successful reply with text, the
 * text as @text_type, with @extra header lines (conn.h) when not NULL.
 * @close: the connection closes after it. */
static void send_reply_as(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                          int64_t start, bool submission, const char *path, const char *text_type, bool close,
                          const char *extra)
{
    _cleanup_free_ char *text = NULL;
    const char *type = "application/json";
    const char *body;
    char shown_method[16];
    size_t len = 0;

    /* @method may be the request's own, which the reply releases. */
    snprintf(shown_method, sizeof(shown_method), "%s", method);

    if (reply->text && !reply->error) {
        body = reply->text;
        len = reply->text_len;
        type = text_type;
    } else {
        text = berthd_reply_encode(reply, &len);
        body = text ? text : "";
    }
    /* Counted before it is sent: @method and @path may live in the request the reply frees. */
    account(srv, shown_method, reply, start, submission, path);
    berthd_fconn_reply(cl->conn, TAKE_PTR(cl->rq), reply->status, type, body, len, reply->retry_after_s,
                       close || srv->shutting_down, extra);
}

static void send_reply(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                       int64_t start, bool submission, const char *path)
{
    send_reply_as(srv, cl, method, reply, start, submission, path, "application/x-ndjson", false, NULL);
}

void berthd_api_send(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                     int64_t start, const char *path, const char *extra_headers)
{
    send_reply_as(srv, cl, method, reply, start, false, path, "application/x-ndjson", false, extra_headers);
}

void berthd_api_send_fd(struct berthd_server *srv, struct client *cl, const char *method, struct berth_reply *reply,
                        int fd, uint64_t size, int64_t start, const char *path, const char *extra_headers,
                        void (*released)(void *arg), void *arg)
{
    char shown_method[16];

    snprintf(shown_method, sizeof(shown_method), "%s", method);
    account(srv, shown_method, reply, start, false, path);
    berthd_fconn_reply_fd(cl->conn, TAKE_PTR(cl->rq), reply->status, "application/octet-stream", fd, size,
                          extra_headers, released, arg);
}

static void reply_error(struct berthd_server *srv, struct client *cl, const char *method, int64_t start, int status,
                        const char *code, const char *message, const char *path, bool close)
{
    struct berth_reply r = {0};

    r.status = status;
    r.error = code;
    snprintf(r.message, sizeof(r.message), "%s", message);
    send_reply_as(srv, cl, method, &r, start, false, path, "application/x-ndjson", close, NULL);
}

/* ------------------------------------------------------------------------ */
/* Submissions: queued, then committed together                              */

void berthd_api_batch(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_server *srv = arg;
    struct berth_submission *v;
    struct pending *p;
    size_t n = srv->n_pending < BATCH_MAX ? srv->n_pending : BATCH_MAX, i, k = 0;
    int64_t t0;

    (void)fd, (void)what;
    if (n == 0)
        return;
    v = calloc(n, sizeof(*v));
    if (!v) {
        event_active(srv->batch_ev, EV_TIMEOUT, 0); /* try again on the next turn */
        return;
    }
    for (i = 0; i < n; i++) {
        p = &srv->pending[i];
        if (!p->client)
            continue; /* the client went away before it was recorded: nothing is recorded */
        v[k].fingerprint = p->fingerprint;
        v[k].body = p->body;
        v[k].len = p->len;
        v[k].parsed = p->parsed;
        k++;
    }
    if (berth_now_ns(CLOCK_MONOTONIC, &t0, NULL) < 0)
        t0 = -1; /* observed as 0 s */
    if (k > 0) {
        /* Each submission's reply says how it went, failures included. */
        (void)berth_broker_submit_batch(srv->broker, v, k);
        berthd_histogram_observe(&srv->metrics.commit_seconds, elapsed(t0));
        berthd_histogram_observe(&srv->metrics.batch_size, (double)k);
    }
    for (i = 0, k = 0; i < n; i++) {
        p = &srv->pending[i];
        if (p->client) {
            send_reply(srv, p->client, p->method, &v[k].reply, p->start, true, p->path);
            berth_reply_clear(&v[k].reply);
            k++;
        }
        free(p->body);
        berth_parsed_job_free(p->parsed);
    }
    free(v);
    memmove(srv->pending, srv->pending + n, (srv->n_pending - n) * sizeof(*srv->pending));
    srv->n_pending -= n;
    if (srv->n_pending)
        event_active(srv->batch_ev, EV_TIMEOUT, 0);
}

void berthd_api_forget(struct berthd_server *srv, struct client *cl)
{
    size_t i;

    for (i = 0; i < srv->n_pending; i++)
        if (srv->pending[i].client == cl)
            srv->pending[i].client = NULL;
}

struct request;
static void queue_submission(struct request *rq);

static bool parse_after(const char *query, uint64_t *ret)
{
    struct evkeyvalq q = {0};
    const char *v;
    char *end = NULL;
    bool ok = true;

    *ret = 0;
    if (!query)
        return true;
    if (evhttp_parse_query_str(query, &q) != 0)
        return false;
    v = evhttp_find_header(&q, "after");
    if (v) {
        errno = 0;
        if (*v < '0' || *v > '9')
            ok = false;
        else
            *ret = strtoull(v, &end, 10);
        /* Sequence numbers are SQLite integers: nothing above INT64_MAX. */
        if (errno || (end && *end) || *ret > INT64_MAX)
            ok = false;
    }
    evhttp_clear_headers(&q);
    return ok;
}

/* @path as a log shows it: bytes outside printable ASCII, and '%', as %XX
 * (the URI's own escape), so a line can neither break nor be spoofed; a path
 * too long for @size is shown as "(long path)". */
static void shown_path(const char *path, char *shown, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i, o = 0;

    snprintf(shown, size, "-");
    if (!path)
        return;
    for (i = 0; path[i]; i++) {
        unsigned char ch = (unsigned char)path[i];
        bool esc = ch <= ' ' || ch >= 0x7f || ch == '%';
        if (o + (esc ? 3 : 1) >= size) {
            snprintf(shown, size, "(long path)");
            return;
        }
        if (esc) {
            shown[o++] = '%';
            shown[o++] = hex[ch >> 4];
            shown[o++] = hex[ch & 15];
        } else {
            shown[o++] = (char)ch;
        }
    }
    shown[o] = '\0';
}

/*
 * struct route - one entry of the route table.
 * @method:    the one method served.
 * @pattern:   the path, where "{job}" stands for one segment that is a job
 *             id (job.h) and "{pool}" for one that is a pool name (pool.h).
 * @handler:   what answers.
 * @admin:     NULL, or: only a certificate with an admin grant is served,
 *             and this is the message of the refusal.
 * @text_type: the Content-Type of a reply with text (default NDJSON).
 * @hidden:    another method on this path answers 404, not 405.
 */
struct route {
    enum berthd_http_method method;
    const char *pattern;
    route_handler *handler;
    const char *admin;
    const char *text_type;
    bool hidden;
    /* Run on the request's front thread first (berthd_api_prepare()). */
    void (*prepare)(struct berthd_front_request *rq);
};

static void parsed_free(void *p)
{
    berth_parsed_job_free(p);
}

/* Job documents parsed on the front threads: up to this many bytes.  A
 * job is a few hundred bytes to a few KiB; a larger one (to BERTH_JOB_MAX,
 * 1 MiB) is parsed in the batch as before.  The front thread parses before
 * the main loop has admitted the caller, so this bounds what a certificate
 * that will be refused can cost a front thread (less than a TLS handshake)
 * and what a queued parse holds (its JSON tree, up to about 20 times the
 * text). */
#define PARSE_AHEAD_MAX (16 * 1024)

/* On a front thread: the job parsed where the TLS and HTTP work was done.
 * Parsed or not, the batch answers the same (broker.h). */
static void submit_prepare(struct berthd_front_request *rq)
{
    struct berth_parsed_job *p = NULL;

    if (rq->in.body_len > PARSE_AHEAD_MAX)
        return;
    if (berth_parsed_job_new(rq->body, rq->in.body_len, &p) == 0) {
        rq->prepared = p;
        rq->prepared_free = parsed_free;
    }
}

static bool submit_handler(struct request *rq, struct berth_reply *r)
{
    (void)r;
    queue_submission(rq);
    return false;
}

static bool inspect_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_inspect(rq->srv->broker, rq->fp, rq->param, r);
    return true;
}

static bool cancel_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_cancel(rq->srv->broker, rq->fp, rq->param, r);
    return true;
}

static bool capabilities_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_capabilities(rq->srv->broker, rq->fp, r);
    return true;
}

static bool pool_list_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_pool_list(rq->srv->broker, rq->fp, r);
    return true;
}

static bool pool_register_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_pool_register(rq->srv->broker, rq->fp, rq->in->body, rq->in->body_len, r);
    return true;
}

static bool worker_enrol_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_worker_enrol(rq->srv->broker, rq->fp, rq->in->body, rq->in->body_len, r);
    return true;
}

static bool pool_show_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_pool_show(rq->srv->broker, rq->fp, rq->param, r);
    return true;
}

static bool audit_handler(struct request *rq, struct berth_reply *r)
{
    uint64_t after;

    if (!parse_after(rq->query, &after)) {
        r->status = 400;
        r->error = "malformed";
        snprintf(r->message, sizeof(r->message), "after must be a decimal event sequence number");
        return true;
    }
    berth_broker_audit(rq->srv->broker, rq->fp, after, AUDIT_PAGE, r);
    return true;
}

static bool journal_stats_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_journal_stats(rq->srv->broker, rq->fp, r);
    return true;
}

/* The root cache (admin): GET lists it, POST .../prune removes the unused roots first. */
static bool root_cache_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_root_cache(rq->srv->broker, rq->fp, false, r);
    return true;
}

static bool root_cache_prune_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_root_cache(rq->srv->broker, rq->fp, true, r);
    return true;
}

/* 200 {"status":"ok"}, {"status":"starting", "message"} until admission
 * opens (broker.h, "Sweeps"), or, on a full state filesystem, still 200 (reads
 * are served, so a load balancer keeps the server) with {"status":
 * "degraded", "reason", "message", "unrecorded_results", "retry_after_s"}. */
static bool health_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_broker_health h;

    r->status = 200;
    if (berth_broker_health(rq->srv->broker, &h) < 0 || (!h.degraded && !h.starting))
        r->body = json_pack("{s:s}", "status", "ok");
    else if (!h.degraded)
        r->body = json_pack("{s:s, s:s}", "status", "starting", "message",
                            "the startup reconcile is checking the jobs of the last run: new jobs are refused");
    else
        r->body = json_pack("{s:s, s:s, s:s, s:I, s:I}", "status", "degraded", "reason", h.reason, "message", h.message,
                            "unrecorded_results", (json_int_t)h.unrecorded, "retry_after_s",
                            (json_int_t)((h.retry_in_ns + BERTH_NS_PER_SEC - 1) / BERTH_NS_PER_SEC));
    return true;
}

static bool metrics_handler(struct request *rq, struct berth_reply *r)
{
    struct berthd_server *srv = rq->srv;
    struct berth_buf out = BERTH_BUF_INIT(0);
    int64_t jobs[BERTH_JOB_STATE_COUNT];
    struct berth_broker_health health;

    if (berth_broker_job_counts(srv->broker, jobs, NULL) < 0 || berth_broker_health(srv->broker, &health) < 0 ||
        berthd_metrics_render(&srv->metrics, jobs, berth_broker_policy_reloads(srv->broker), (unsigned)srv->slots.total,
                              &health, &out) < 0 ||
        berthd_refusals_render(&srv->refusals, srv->slots.unauthenticated, &out) < 0 ||
        berthd_front_render(srv->front, &out) < 0 ||
        berthd_result_waits_render(srv, &out) < 0 || berthd_worker_polls_render(srv, &out) < 0) {
        berth_buf_free(&out);
        r->status = 503;
        r->error = "journal";
        snprintf(r->message, sizeof(r->message), "the metrics could not be read");
        return true;
    }
    r->text = berth_buf_steal(&out, &r->text_len);
    r->status = r->text ? 200 : 500;
    return true;
}

/* The API.  A path that matches an entry but not its method answers 405
 * (unless the entry is hidden), a path that matches none 404. */
static const struct route routes[] = {
    {BERTHD_HTTP_POST, "/v1/jobs", submit_handler, .hidden = true, .prepare = submit_prepare},
    {BERTHD_HTTP_GET, "/v1/jobs/{job}", inspect_handler},
    {BERTHD_HTTP_GET, "/v1/jobs/{job}/result", berthd_result_handler},
    {BERTHD_HTTP_GET, "/v1/jobs/{job}/outputs/{output}", berthd_job_output_handler},
    {BERTHD_HTTP_POST, "/v1/jobs/{job}/cancel", cancel_handler},
    {BERTHD_HTTP_GET, "/v1/capabilities", capabilities_handler},
    {BERTHD_HTTP_GET, "/v1/pools", pool_list_handler},
    {BERTHD_HTTP_POST, "/v1/pools", pool_register_handler},
    {BERTHD_HTTP_GET, "/v1/pools/{pool}", pool_show_handler},
    {BERTHD_HTTP_POST, "/v1/workers/enrolments", worker_enrol_handler},
    {BERTHD_HTTP_POST, "/v1/workers/poll", berthd_worker_poll_handler},
    {BERTHD_HTTP_POST, "/v1/workers/claims", berthd_worker_claim_handler},
    {BERTHD_HTTP_POST, "/v1/workers/leases", berthd_worker_lease_handler},
    {BERTHD_HTTP_POST, "/v1/workers/reports", berthd_worker_report_handler},
    {BERTHD_HTTP_GET, "/v1/workers/runs/{job}/inputs/{digest}", berthd_run_input_handler},
    {BERTHD_HTTP_POST, "/v1/workers/runs/{job}/outputs/{output}", berthd_run_output_start_handler},
    {BERTHD_HTTP_PATCH, "/v1/workers/uploads/{upload}", berthd_run_output_chunk_handler},
    {BERTHD_HTTP_PUT, "/v1/workers/uploads/{upload}", berthd_run_output_commit_handler},
    {BERTHD_HTTP_DELETE, "/v1/workers/uploads/{upload}", berthd_run_output_cancel_handler},
    {BERTHD_HTTP_GET, "/v1/images/{digest}/blobs/{digest}", berthd_image_blob_handler},
    {BERTHD_HTTP_GET, "/v1/audit", audit_handler},
    {BERTHD_HTTP_GET, "/v1/journal/stats", journal_stats_handler},
    {BERTHD_HTTP_GET, "/v1/images/cache", root_cache_handler},
    {BERTHD_HTTP_POST, "/v1/images/cache/prune", root_cache_prune_handler},
    {BERTHD_HTTP_GET, "/v1/health", health_handler},
    {BERTHD_HTTP_GET, "/v1/evidence", berthd_evidence_list_handler},
    {BERTHD_HTTP_POST, "/v1/evidence/uploads", berthd_evidence_start_handler},
    {BERTHD_HTTP_GET, "/v1/evidence/uploads/{upload}", berthd_evidence_status_handler},
    {BERTHD_HTTP_PATCH, "/v1/evidence/uploads/{upload}", berthd_evidence_chunk_handler},
    {BERTHD_HTTP_PUT, "/v1/evidence/uploads/{upload}", berthd_evidence_commit_handler},
    {BERTHD_HTTP_DELETE, "/v1/evidence/uploads/{upload}", berthd_evidence_cancel_handler},
    {BERTHD_HTTP_GET, "/v1/evidence/{digest}", berthd_evidence_get_handler},
    {BERTHD_HTTP_DELETE, "/v1/evidence/{digest}", berthd_evidence_delete_handler},
    {BERTHD_HTTP_GET, "/metrics", metrics_handler, .admin = "metrics need an admin grant",
     .text_type = "text/plain; version=0.0.4"},
};

/* Whether @kind (@len bytes) is @name. */
static bool kind_is(const char *kind, size_t len, const char *name)
{
    return len == strlen(name) && strncmp(kind, name, len) == 0;
}

/* Whether @value is a valid {@kind} (@len bytes: "job", "pool", "upload" or "digest"). */
static bool param_valid(const char *kind, size_t len, const char *value)
{
    uint8_t raw[BERTH_SHA256_LEN];

    if (kind_is(kind, len, "job") || kind_is(kind, len, "output"))
        return berth_job_id_valid(value);
    if (kind_is(kind, len, "pool"))
        return berth_pool_name_valid(value);
    if (kind_is(kind, len, "upload"))
        return berthd_uuid_valid(value);
    if (kind_is(kind, len, "digest"))
        return berth_digest_parse(value, raw) == 0;
    return false;
}

/* Whether @path is @pattern; a "{job}", "{pool}", "{upload}", "{digest}"
 * or "{output}" segment is copied into the next of the ROUTE_PARAMS
 * @params, and must fit and be valid. */
static bool route_match(const char *pattern, const char *path, char (*params)[ROUTE_PARAM_SIZE])
{
    size_t n = 0;

    while (*pattern) {
        if (*pattern == '{') {
            const char *kind = pattern + 1, *close = strchr(kind, '}');
            size_t len = strcspn(path, "/");

            if (!close || len >= ROUTE_PARAM_SIZE || n == ROUTE_PARAMS)
                return false;
            memcpy(params[n], path, len);
            params[n][len] = '\0';
            if (!param_valid(kind, (size_t)(close - kind), params[n++]))
                return false;
            pattern = close + 1;
            path += len;
        } else if (*pattern++ != *path++) {
            return false;
        }
    }
    return *path == '\0';
}

/* The route for @method and @path, or NULL with *@ret_status 404 or 405. */
static const struct route *route_find(enum berthd_http_method method, const char *path,
                                      char (*params)[ROUTE_PARAM_SIZE], int *ret_status)
{
    size_t i;

    *ret_status = 404;
    for (i = 0; i < ELEMENTSOF(routes); i++) {
        if (!route_match(routes[i].pattern, path, params))
            continue;
        if (routes[i].method == method)
            return &routes[i];
        if (!routes[i].hidden)
            *ret_status = 405;
    }
    return NULL;
}

void berthd_api_prepare(struct berthd_front_request *rq)
{
    char params[ROUTE_PARAMS][ROUTE_PARAM_SIZE], path[64];
    const char *target = rq->head.target;
    const struct route *rt;
    size_t len = strcspn(target, "?");
    int status;

    /* Requests berthd_api_request() refuses before routing get nothing. */
    if (!rq->peer_ok || !rq->peer_valid || len >= sizeof(path))
        return;
    memcpy(path, target, len);
    path[len] = '\0';
    rt = route_find(rq->head.method, path, params, &status);
    if (rt && rt->prepare)
        rt->prepare(rq);
}

/* For a route with an admin message: whether the caller has an admin grant;
 * when not, @r holds the refusal. */
static bool admin_granted(struct request *rq, const struct route *rt, struct berth_reply *r)
{
    bool admin;

    berth_broker_capabilities(rq->srv->broker, rq->fp, r);
    if (r->status != 200)
        return false;
    admin = json_is_true(json_object_get(r->body, "admin"));
    json_decref(r->body);
    r->body = NULL;
    if (!admin) {
        r->status = 403;
        r->error = "denied";
        snprintf(r->message, sizeof(r->message), "%s", rt->admin);
    }
    return admin;
}


/* ------------------------------------------------------------------------ */
/* Dispatch                                                                  */

static void queue_submission(struct request *rq)
{
    struct berthd_server *srv = rq->srv;
    const char *method = rq->in->head->method_name;
    struct pending *p;

    if (srv->n_pending == srv->cap_pending) {
        size_t cap = srv->cap_pending ? srv->cap_pending * 2 : 64;
        struct pending *np = reallocarray(srv->pending, cap, sizeof(*np));
        if (!np) {
            reply_error(srv, rq->cl, method, rq->start, 503, "busy", "out of memory; retry later", rq->shown, false);
            return;
        }
        srv->pending = np;
        srv->cap_pending = cap;
    }
    p = &srv->pending[srv->n_pending];
    memset(p, 0, sizeof(*p));
    p->body = malloc(rq->in->body_len + 1);
    if (!p->body) {
        reply_error(srv, rq->cl, method, rq->start, 503, "busy", "out of memory; retry later", rq->shown, false);
        return;
    }
    memcpy(p->body, rq->in->body, rq->in->body_len);
    p->body[rq->in->body_len] = '\0';
    p->len = rq->in->body_len;
    /* Parsed from these same bytes on the front thread (berthd_api_prepare()). */
    p->parsed = rq->cl->rq->prepared;
    rq->cl->rq->prepared = NULL;
    p->client = rq->cl;
    p->start = rq->start;
    snprintf(p->fingerprint, sizeof(p->fingerprint), "%s", rq->fp);
    snprintf(p->path, sizeof(p->path), "%s", rq->shown);
    snprintf(p->method, sizeof(p->method), "%s", method);
    srv->n_pending++;
    if (srv->n_pending == 1)
        event_active(srv->batch_ev, EV_TIMEOUT, 0);
}

/* Whether @name is a method RFC 9110 section 9 defines (PATCH: RFC 5789),
 * other than CONNECT: a tunnel is something berthd does not implement (501). */
static bool known_method(const char *name)
{
    static const char *const known[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"};
    size_t i;

    for (i = 0; i < ELEMENTSOF(known); i++)
        if (streq(name, known[i]))
            return true;
    return false;
}

void berthd_api_refused(struct client *cl, const struct berthd_http_refusal *why, int64_t start)
{
    struct berth_reply r = {0};

    r.status = why->status;
    r.error = why->code;
    snprintf(r.message, sizeof(r.message), "%s", why->message);
    account(cl->srv, "-", &r, start, false, "-");
}

void berthd_api_request(struct client *cl, struct berthd_front_request *frq)
{
    const struct berthd_conn_request *in = &frq->in;
    struct berthd_server *srv = cl->srv;
    const char *method = in->head->method_name;
    _cleanup_free_ char *path = NULL;
    struct berth_reply r = {0};
    char params[ROUTE_PARAMS][ROUTE_PARAM_SIZE], shown[64];
    const struct route *rt;
    struct request rq = {.srv = srv,
                         .cl = cl,
                         .in = in,
                         .fp = frq->fingerprint,
                         .param = params[0],
                         .param2 = params[1],
                         .shown = shown,
                         .start = in->start};
    const char *q;
    int status;

    cl->rq = frq; /* answered (and freed) by the one reply */
    /* Logs name the route, never a query string. */
    q = strchr(in->head->target, '?');
    path = strndup(in->head->target, q ? (size_t)(q - in->head->target) : strlen(in->head->target));
    rq.query = q ? q + 1 : NULL;
    shown_path(path, shown, sizeof(shown));
    if (!path) {
        reply_error(srv, cl, method, rq.start, 503, "busy", "out of memory; retry later", "-", true);
        return;
    }
    if (srv->shutting_down) {
        reply_error(srv, cl, method, rq.start, 503, "shutting_down", "berthd is shutting down; retry", shown, true);
        return;
    }
    /* Only GET, POST, PUT, PATCH and DELETE are routed.  Another method of
     * RFC 9110 gets 405 on a route (404 elsewhere), one berthd does not know
     * 501; either closes the connection, so that no body it may have is
     * read as a request. */
    if (in->head->method == BERTHD_HTTP_OTHER) {
        if (!known_method(method))
            reply_error(srv, cl, method, rq.start, 501, "not_implemented",
                        "berthd serves only GET, POST, PUT, PATCH and DELETE", shown, true);
        else if (route_find(in->head->method, path, params, &status), status == 405)
            reply_error(srv, cl, method, rq.start, 405, "method_not_allowed", "that method is not allowed here",
                        shown, true);
        else
            reply_error(srv, cl, method, rq.start, 404, "not_found", "no such resource", shown, true);
        return;
    }
    /* The front thread read the certificate when the request arrived. */
    if (!frq->peer_ok) {
        reply_error(srv, cl, method, rq.start, 403, "denied", "no verified client certificate", shown, true);
        return;
    }
    if (!frq->peer_valid) {
        reply_error(srv, cl, method, rq.start, 403, "denied", "the client certificate is outside its validity period",
                    shown, false);
        return;
    }
    if (cl->health_only && (in->head->method != BERTHD_HTTP_GET || strcmp(path, "/v1/health") != 0)) {
        reply_error(srv, cl, method, rq.start, 403, "denied",
                    "the client certificate is not in the host policy: only /v1/health is served", shown, true);
        return;
    }
    rt = route_find(in->head->method, path, params, &status);
    if (!rt) {
        /* PUT, PATCH and DELETE off their routes close, as every other method does. */
        bool close = in->head->method != BERTHD_HTTP_GET && in->head->method != BERTHD_HTTP_POST;

        if (status == 405)
            reply_error(srv, cl, method, rq.start, 405, "method_not_allowed", "that method is not allowed here", shown,
                        close);
        else
            reply_error(srv, cl, method, rq.start, 404, "not_found", "no such resource", shown, close);
        return;
    }
    if ((!rt->admin || admin_granted(&rq, rt, &r)) && !rt->handler(&rq, &r))
        return; /* the handler replies */
    send_reply_as(srv, cl, method, &r, rq.start, false, shown, rt->text_type ? rt->text_type : "application/x-ndjson",
                  false, NULL);
    berth_reply_clear(&r);
}
