/* SPDX-License-Identifier: MIT */
/* server.c -- berthd's HTTPS front end; see server.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <openssl/crypto.h>

#include "buf.h"
#include "canon.h"
#include "clock.h"
#include "enrol.h"
#include "job.h"
#include "macro.h"
#include "metrics.h"
#include "pool.h"
#include "server.h"
#include "tls.h"

#define BATCH_MAX 256   /* submissions per journal commit */
#define AUDIT_PAGE 1000 /* audit events per reply */
#define PRIORITIES 3    /* 0: signals, 1: I/O (the default), 2: the submission batch */

struct conn;

/* A submission waiting for the next batch; @req is NULL once its connection is gone. */
struct pending {
    struct evhttp_request *req;
    struct conn *conn;
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
    char *body;
    size_t len;
    int64_t start; /* CLOCK_MONOTONIC ns, -1 if unreadable (elapsed()) */
    char path[64];
};

struct berthd_server {
    struct event_base *base;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    SSL_CTX *ctx;
    int ex_index;
    const struct berthd_config *cfg;
    struct berth_broker *broker;
    struct berth_policy_source *policy;
    const struct berth_logger *logger;
    struct berthd_metrics metrics;
    unsigned connections;
    bool paused, shutting_down;
    struct conn *conns; /* every open connection */
    struct pending *pending;
    size_t n_pending, cap_pending;
    struct event *batch_ev, *shutdown_ev;
    int port;
};

struct conn {
    struct berthd_server *srv;
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* known from the first request on */
    struct event *watchdog;
    bool busy;    /* a request is being handled */
    bool over;    /* accepted beyond the connection limit: closed at once */
    bool replied; /* at least one reply was sent */
    bool secured; /* the TLS handshake is complete */
    int64_t accepted; /* CLOCK_MONOTONIC ns, -1 if unreadable */
    struct conn *prev, *next;
};

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
/* Connections                                                               */

static void close_now(struct conn *c)
{
    evutil_socket_t fd = c->bev ? bufferevent_getfd(c->bev) : -1;

    /* libevent sees the end of the stream and frees the connection itself. */
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

static void watchdog_cb(evutil_socket_t fd, short what, void *arg)
{
    struct conn *c = arg;

    (void)fd, (void)what;
    if (c->busy)
        return; /* the request is complete; its reply re-arms the watchdog */
    if (!c->over && !c->secured)
        berth_logf(c->srv->logger, BERTH_LOG_INFO,
                   "closing a connection: no TLS handshake within http.header_timeout_ns of the accept");
    else if (!c->over)
        berth_logf(c->srv->logger, BERTH_LOG_INFO, "closing a connection: no complete request within %s",
                   c->replied ? "http.idle_timeout_ns of the last reply" : "http.request_timeout_ns of the accept");
    close_now(c);
}

static void arm(struct conn *c, int64_t ns)
{
    struct timeval tv = berth_timeval_of_ns(ns);
    evtimer_add(c->watchdog, &tv);
}

/* OpenSSL's progress callback: once the handshake is done, the first request
 * gets the rest of http.request_timeout_ns (counted from the accept). */
static void tls_info_cb(const SSL *ssl, int where, int ret)
{
    struct conn *c = SSL_get_app_data(ssl);
    int64_t now, left = 0;

    (void)ret;
    if (!c || !(where & SSL_CB_HANDSHAKE_DONE) || c->secured)
        return;
    c->secured = true;
    if (c->over || c->busy || c->replied)
        return;
    /* A clock that cannot be read leaves no time: the connection is closed. */
    if (c->accepted >= 0 && berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0 && now >= c->accepted)
        left = c->srv->cfg->request_timeout_ns - (now - c->accepted);
    arm(c, left > 0 ? left : 0);
}

static void resume_listener(struct berthd_server *srv)
{
    if (srv->paused && !srv->shutting_down && srv->connections < (unsigned)srv->cfg->max_connections) {
        evconnlistener_enable(evhttp_bound_socket_get_listener(srv->bound));
        srv->paused = false;
    }
}

/* OpenSSL calls this when a connection's SSL object is freed, i.e. when
 * libevent has freed the connection: forget it. */
static void conn_free_cb(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
    struct conn *c = ptr;
    struct berthd_server *srv;
    size_t i;

    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    if (!c)
        return;
    srv = c->srv;
    for (i = 0; i < srv->n_pending; i++)
        if (srv->pending[i].conn == c) {
            srv->pending[i].req = NULL;
            srv->pending[i].conn = NULL;
        }
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    event_free(c->watchdog);
    srv->connections--;
    free(c);
    resume_listener(srv);
    if (srv->shutting_down && srv->connections == 0)
        event_base_loopexit(srv->base, NULL);
}

/* evhttp calls this as a connection closes, before it frees its requests. */
static void evcon_close_cb(struct evhttp_connection *evcon, void *arg)
{
    struct conn *c = arg;
    struct berthd_server *srv = c->srv;
    size_t i;

    (void)evcon;
    for (i = 0; i < srv->n_pending; i++)
        if (srv->pending[i].conn == c)
            srv->pending[i].req = NULL;
}

static struct bufferevent *accept_cb(struct event_base *base, void *arg)
{
    struct berthd_server *srv = arg;
    struct bufferevent *bev;
    struct conn *c;
    SSL *ssl;

    ssl = SSL_new(srv->ctx);
    c = calloc(1, sizeof(*c));
    if (!ssl || !c)
        goto fail;
    c->srv = srv;
    if (berth_now_ns(CLOCK_MONOTONIC, &c->accepted, NULL) < 0)
        c->accepted = -1; /* the request timeout counts as spent */
    c->watchdog = evtimer_new(base, watchdog_cb, c);
    if (!c->watchdog || SSL_set_app_data(ssl, c) != 1 || SSL_set_ex_data(ssl, srv->ex_index, c) != 1)
        goto fail;
    SSL_set_info_callback(ssl, tls_info_cb);
    bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        SSL_set_ex_data(ssl, srv->ex_index, NULL);
        goto fail;
    }
    /* From here the SSL object, and through it @c, belong to @bev. */
    c->bev = bev;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->connections++;
    if (srv->connections > (unsigned)srv->cfg->max_connections || srv->shutting_down) {
        c->over = true;
        arm(c, 0);
    } else {
        /* A client that trickles its handshake holds a connection slot for
         * the header timeout at most, not for the whole request timeout. */
        arm(c, srv->cfg->header_timeout_ns);
    }
    if (srv->connections >= (unsigned)srv->cfg->max_connections && !srv->paused) {
        evconnlistener_disable(evhttp_bound_socket_get_listener(srv->bound));
        srv->paused = true;
    }
    return bev;
fail:
    berth_logf(srv->logger, BERTH_LOG_ERR, "out of memory accepting a connection");
    if (c && c->watchdog)
        event_free(c->watchdog);
    free(c);
    SSL_free(ssl);
    return NULL; /* evhttp closes the socket */
}

static struct conn *conn_of(struct berthd_server *srv, struct evhttp_request *req, SSL **ret_ssl)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
    struct conn *c = ssl ? SSL_get_ex_data(ssl, srv->ex_index) : NULL;

    if (c && !c->evcon) {
        c->evcon = evcon;
        evhttp_connection_set_closecb(evcon, evcon_close_cb, c);
    }
    *ret_ssl = ssl;
    return c;
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

static const char *method_name(enum evhttp_cmd_type m)
{
    switch (m) {
    case EVHTTP_REQ_GET: return "GET";
    case EVHTTP_REQ_POST: return "POST";
    case EVHTTP_REQ_PUT: return "PUT";
    case EVHTTP_REQ_DELETE: return "DELETE";
    default: return "OTHER";
    }
}

/* Send @reply: its JSON, or for a successful reply with text, the text as @text_type. */
static void send_reply_as(struct berthd_server *srv, struct evhttp_request *req, struct conn *c,
                          struct berth_reply *reply, int64_t start, bool submission, const char *path,
                          const char *text_type)
{
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    struct evbuffer *buf = evbuffer_new();
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    double secs;

    if (!buf) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    if (reply->text && !reply->error) {
        evbuffer_add(buf, reply->text, reply->text_len);
        evhttp_add_header(out, "Content-Type", text_type);
    } else {
        json_t *doc = berth_reply_json(reply);
        if (!doc || berth_json_serialize(doc, 0, &text, &len, NULL) < 0) {
            reply->status = 500;
            free(text);
            text = strdup("{\"error\":\"internal\",\"message\":\"the reply could not be encoded\"}");
            len = text ? strlen(text) : 0;
        }
        json_decref(doc);
        if (text) {
            evbuffer_add(buf, text, len);
            evbuffer_add(buf, "\n", 1);
        }
        evhttp_add_header(out, "Content-Type", "application/json");
    }
    evhttp_add_header(out, "Cache-Control", "no-store");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    if (srv->shutting_down)
        evhttp_add_header(out, "Connection", "close");
    evhttp_send_reply(req, reply->status, NULL, buf);
    evbuffer_free(buf);
    secs = elapsed(start);
    berthd_metrics_count_reply(&srv->metrics, reply->status, reply->error, secs, submission);
    berth_logf(srv->logger, reply->status >= 500 ? BERTH_LOG_WARNING : BERTH_LOG_INFO, "%s %s %s %d %s%s%.1f ms",
               reply->principal[0] ? reply->principal : "-", method_name(evhttp_request_get_command(req)), path,
               reply->status, reply->error ? reply->error : "", reply->error ? " " : "", secs * 1000);
    if (c) {
        c->busy = false;
        c->replied = true;
        arm(c, srv->shutting_down ? 0 : srv->cfg->idle_timeout_ns);
    }
}

static void send_reply(struct berthd_server *srv, struct evhttp_request *req, struct conn *c, struct berth_reply *reply,
                       int64_t start, bool submission, const char *path)
{
    send_reply_as(srv, req, c, reply, start, submission, path, "application/x-ndjson");
}

static void reply_error(struct berthd_server *srv, struct evhttp_request *req, struct conn *c, int64_t start,
                        int status, const char *code, const char *message, const char *path)
{
    struct berth_reply r = {0};

    r.status = status;
    r.error = code;
    snprintf(r.message, sizeof(r.message), "%s", message);
    send_reply(srv, req, c, &r, start, false, path);
}

/* ------------------------------------------------------------------------ */
/* Submissions: queued, then committed together                              */

static void batch_cb(evutil_socket_t fd, short what, void *arg)
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
        if (!p->req)
            continue; /* the client went away before it was recorded: nothing is recorded */
        v[k].fingerprint = p->fingerprint;
        v[k].body = p->body;
        v[k].len = p->len;
        k++;
    }
    if (berth_now_ns(CLOCK_MONOTONIC, &t0, NULL) < 0)
        t0 = -1; /* observed as 0 s */
    if (k > 0) {
        berth_broker_submit_batch(srv->broker, v, k);
        berthd_histogram_observe(&srv->metrics.commit_seconds, elapsed(t0));
        berthd_histogram_observe(&srv->metrics.batch_size, (double)k);
    }
    for (i = 0, k = 0; i < n; i++) {
        p = &srv->pending[i];
        if (p->req) {
            send_reply(srv, p->req, p->conn, &v[k].reply, p->start, true, p->path);
            berth_reply_clear(&v[k].reply);
            k++;
        }
        free(p->body);
    }
    free(v);
    memmove(srv->pending, srv->pending + n, (srv->n_pending - n) * sizeof(*srv->pending));
    srv->n_pending -= n;
    if (srv->n_pending)
        event_active(srv->batch_ev, EV_TIMEOUT, 0);
}

static void queue_submission(struct berthd_server *srv, struct evhttp_request *req, struct conn *c,
                             const char *fingerprint, int64_t start, const char *path)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    struct pending *p;

    if (srv->n_pending == srv->cap_pending) {
        size_t cap = srv->cap_pending ? srv->cap_pending * 2 : 64;
        struct pending *np = reallocarray(srv->pending, cap, sizeof(*np));
        if (!np) {
            reply_error(srv, req, c, start, 503, "busy", "out of memory; retry later", path);
            return;
        }
        srv->pending = np;
        srv->cap_pending = cap;
    }
    p = &srv->pending[srv->n_pending];
    memset(p, 0, sizeof(*p));
    p->body = malloc(len + 1);
    if (!p->body) {
        reply_error(srv, req, c, start, 503, "busy", "out of memory; retry later", path);
        return;
    }
    evbuffer_remove(in, p->body, len);
    p->body[len] = '\0';
    p->len = len;
    p->req = req;
    p->conn = c;
    p->start = start;
    snprintf(p->fingerprint, sizeof(p->fingerprint), "%s", fingerprint);
    snprintf(p->path, sizeof(p->path), "%s", path);
    srv->n_pending++;
    if (srv->n_pending == 1)
        event_active(srv->batch_ev, EV_TIMEOUT, 0);
}

/* ------------------------------------------------------------------------ */
/* Routing                                                                   */

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

/* The number of @name headers in @h (compared without case). */
static unsigned header_count(struct evkeyvalq *h, const char *name)
{
    struct evkeyval *kv;
    unsigned n = 0;

    TAILQ_FOREACH(kv, h, next)
    if (strcasecmp(kv->key, name) == 0)
        n++;
    return n;
}

/* One request on its way through the route table. */
struct request {
    struct berthd_server *srv;
    struct evhttp_request *req;
    struct conn *c;
    const char *fp;    /* the client certificate's fingerprint */
    const char *param; /* the {job} or {pool} segment of the path */
    const char *shown; /* the path as logs show it */
    int64_t start;     /* CLOCK_MONOTONIC ns, -1 if unreadable */
};

/* A route's handler fills @r, which is then sent; it returns false instead
 * when it has taken the reply over (a submission waits for its batch). */
typedef bool route_handler(struct request *rq, struct berth_reply *r);

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
    enum evhttp_cmd_type method;
    const char *pattern;
    route_handler *handler;
    const char *admin;
    const char *text_type;
    bool hidden;
};

static bool submit_handler(struct request *rq, struct berth_reply *r)
{
    (void)r;
    queue_submission(rq->srv, rq->req, rq->c, rq->fp, rq->start, rq->shown);
    return false;
}

static bool inspect_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_inspect(rq->srv->broker, rq->fp, rq->param, r);
    return true;
}

static bool result_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_result(rq->srv->broker, rq->fp, rq->param, r);
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
    struct evbuffer *in = evhttp_request_get_input_buffer(rq->req);
    size_t len = evbuffer_get_length(in);
    const char *body = (const char *)evbuffer_pullup(in, -1);

    berth_broker_pool_register(rq->srv->broker, rq->fp, body ? body : "", body ? len : 0, r);
    return true;
}

static bool pool_show_handler(struct request *rq, struct berth_reply *r)
{
    berth_broker_pool_show(rq->srv->broker, rq->fp, rq->param, r);
    return true;
}

static bool audit_handler(struct request *rq, struct berth_reply *r)
{
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(rq->req);
    uint64_t after;

    if (!parse_after(evhttp_uri_get_query(uri), &after)) {
        r->status = 400;
        r->error = "malformed";
        snprintf(r->message, sizeof(r->message), "after must be a decimal event sequence number");
        return true;
    }
    berth_broker_audit(rq->srv->broker, rq->fp, after, AUDIT_PAGE, r);
    return true;
}

/* 200 {"status":"ok"}, or, on a full state filesystem, still 200 (reads
 * are served, so a load balancer keeps the server) with {"status":
 * "degraded", "reason", "message", "unrecorded_results", "retry_after_s"}. */
static bool health_handler(struct request *rq, struct berth_reply *r)
{
    struct berth_broker_health h;

    r->status = 200;
    if (berth_broker_health(rq->srv->broker, &h) < 0 || !h.degraded)
        r->body = json_pack("{s:s}", "status", "ok");
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
        berthd_metrics_render(&srv->metrics, jobs, berth_policy_reloads(srv->policy), srv->connections, &health, &out) <
            0) {
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
    {EVHTTP_REQ_POST, "/v1/jobs", submit_handler, .hidden = true},
    {EVHTTP_REQ_GET, "/v1/jobs/{job}", inspect_handler},
    {EVHTTP_REQ_GET, "/v1/jobs/{job}/result", result_handler},
    {EVHTTP_REQ_POST, "/v1/jobs/{job}/cancel", cancel_handler},
    {EVHTTP_REQ_GET, "/v1/capabilities", capabilities_handler},
    {EVHTTP_REQ_GET, "/v1/pools", pool_list_handler},
    {EVHTTP_REQ_POST, "/v1/pools", pool_register_handler},
    {EVHTTP_REQ_GET, "/v1/pools/{pool}", pool_show_handler},
    {EVHTTP_REQ_GET, "/v1/audit", audit_handler},
    {EVHTTP_REQ_GET, "/v1/health", health_handler},
    {EVHTTP_REQ_GET, "/metrics", metrics_handler, .admin = "metrics need an admin grant",
     .text_type = "text/plain; version=0.0.4"},
};

/* Whether @value is a valid {@kind} (@len bytes: "job" or "pool"). */
static bool param_valid(const char *kind, size_t len, const char *value)
{
    if (len == strlen("job") && strncmp(kind, "job", len) == 0)
        return berth_job_id_valid(value);
    if (len == strlen("pool") && strncmp(kind, "pool", len) == 0)
        return berth_pool_name_valid(value);
    return false;
}

/* Whether @path is @pattern; a "{job}" or "{pool}" segment is copied into
 * @param (@size bytes), and must fit and be valid. */
static bool route_match(const char *pattern, const char *path, char *param, size_t size)
{
    while (*pattern) {
        if (*pattern == '{') {
            const char *kind = pattern + 1, *close = strchr(kind, '}');
            size_t len = strcspn(path, "/");

            if (!close || len >= size)
                return false;
            memcpy(param, path, len);
            param[len] = '\0';
            if (!param_valid(kind, (size_t)(close - kind), param))
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
static const struct route *route_find(enum evhttp_cmd_type method, const char *path, char *param, size_t size,
                                      int *ret_status)
{
    size_t i;

    *ret_status = 404;
    for (i = 0; i < ELEMENTSOF(routes); i++) {
        if (!route_match(routes[i].pattern, path, param, size))
            continue;
        if (routes[i].method == method)
            return &routes[i];
        if (!routes[i].hidden)
            *ret_status = 405;
    }
    return NULL;
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

static void request_cb(struct evhttp_request *req, void *arg)
{
    struct berthd_server *srv = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    struct berth_reply r = {0};
    char fp[BERTH_FINGERPRINT_LEN + 1], param[BERTH_JOB_ID_MAX + 1], shown[64];
    const struct route *rt;
    struct request rq = {.srv = srv, .req = req, .fp = fp, .param = param, .shown = shown};
    bool valid = false;
    int status;
    SSL *ssl;

    if (berth_now_ns(CLOCK_MONOTONIC, &rq.start, NULL) < 0)
        rq.start = -1; /* logs and metrics show 0 ms */
    rq.c = conn_of(srv, req, &ssl);
    if (rq.c) {
        rq.c->busy = true;
        evtimer_del(rq.c->watchdog);
    }
    /* Logs name the route, never a query string. */
    shown_path(path, shown, sizeof(shown));
    if (!path) {
        reply_error(srv, req, rq.c, rq.start, 400, "malformed", "the request URI cannot be parsed", "-");
        return;
    }
    /* Two lengths are how request smuggling starts (RFC 9112 section 6.3):
     * refuse and close rather than pick one. */
    if (header_count(evhttp_request_get_input_headers(req), "Content-Length") > 1) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
        reply_error(srv, req, rq.c, rq.start, 400, "malformed", "the request has more than one Content-Length", shown);
        return;
    }
    if (srv->shutting_down) {
        reply_error(srv, req, rq.c, rq.start, 503, "shutting_down", "berthd is shutting down; retry", shown);
        return;
    }
    if (berthd_tls_peer(ssl, fp, &valid) < 0) {
        reply_error(srv, req, rq.c, rq.start, 403, "denied", "no verified client certificate", shown);
        return;
    }
    if (!valid) {
        reply_error(srv, req, rq.c, rq.start, 403, "denied", "the client certificate is outside its validity period",
                    shown);
        return;
    }
    rt = route_find(evhttp_request_get_command(req), path, param, sizeof(param), &status);
    if (!rt) {
        if (status == 405)
            reply_error(srv, req, rq.c, rq.start, 405, "method_not_allowed", "that method is not allowed here", shown);
        else
            reply_error(srv, req, rq.c, rq.start, 404, "not_found", "no such resource", shown);
        return;
    }
    if ((!rt->admin || admin_granted(&rq, rt, &r)) && !rt->handler(&rq, &r))
        return; /* the handler replies */
    send_reply_as(srv, req, rq.c, &r, rq.start, false, shown, rt->text_type ? rt->text_type : "application/x-ndjson");
    berth_reply_clear(&r);
}

/* ------------------------------------------------------------------------ */

int berthd_server_new(struct event_base *base, SSL_CTX *ctx, const struct berthd_config *cfg,
                      struct berth_broker *broker, struct berth_policy_source *policy,
                      const struct berth_logger *logger, struct berthd_server **ret, struct berth_error *reterr)
{
    struct berthd_server *srv;
    struct timeval tv = berth_timeval_of_ns(cfg->header_timeout_ns);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    evutil_socket_t fd;

    srv = calloc(1, sizeof(*srv));
    if (!srv)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    srv->ex_index = -1;
    srv->base = base;
    srv->ctx = ctx;
    srv->cfg = cfg;
    srv->broker = broker;
    srv->policy = policy;
    srv->logger = logger;
    berthd_metrics_init(&srv->metrics);
    srv->ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, conn_free_cb);
    srv->http = evhttp_new(base);
    srv->batch_ev = event_new(base, -1, 0, batch_cb, srv);
    if (srv->ex_index < 0 || !srv->http || !srv->batch_ev) {
        berthd_server_free(srv);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    event_priority_set(srv->batch_ev, PRIORITIES - 1);
    evhttp_set_bevcb(srv->http, accept_cb, srv);
    evhttp_set_gencb(srv->http, request_cb, srv);
    /* HEAD is left to libevent (501 and close): a HEAD reply must carry no
     * body, and every route here answers with one. */
    evhttp_set_allowed_methods(srv->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                              EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    evhttp_set_max_headers_size(srv->http, (ev_ssize_t)cfg->max_header_bytes);
    evhttp_set_max_body_size(srv->http, (ev_ssize_t)cfg->max_body_bytes);
    evhttp_set_timeout_tv(srv->http, &tv);
    evhttp_set_default_content_type(srv->http, "application/json");
    srv->bound = evhttp_bind_socket_with_handle(srv->http, cfg->address, (ev_uint16_t)cfg->port);
    if (!srv->bound) {
        int e = errno ? errno : EADDRINUSE;
        berthd_server_free(srv);
        return berth_error_set(reterr, -e, "cannot listen on %s port %d: %s", cfg->address, cfg->port, strerror(e));
    }
    fd = evhttp_bound_socket_get_fd(srv->bound);
    {
        /* Replies go out as a header record and a body record: without
         * TCP_NODELAY (inherited by accepted sockets on Linux) Nagle holds the
         * second until the client's delayed ACK, about 40 ms per request. */
        int one = 1;
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
            berth_logf(logger, BERTH_LOG_WARNING, "TCP_NODELAY: %s", strerror(errno));
    }
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    *ret = srv;
    return 0;
}

int berthd_server_port(const struct berthd_server *srv)
{
    return srv ? srv->port : -1;
}

static void shutdown_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_server *srv = arg;

    (void)fd, (void)what;
    if (srv->connections)
        berth_logf(srv->logger, BERTH_LOG_WARNING, "%u connections still open at the shutdown timeout; closing them",
                   srv->connections);
    event_base_loopexit(srv->base, NULL);
}

void berthd_server_shutdown(struct berthd_server *srv)
{
    struct timeval tv;
    struct conn *c;

    if (srv->shutting_down)
        return;
    srv->shutting_down = true;
    if (!srv->paused)
        evconnlistener_disable(evhttp_bound_socket_get_listener(srv->bound));
    srv->paused = true;
    /* Queued submissions are answered now (their batch runs before the loop ends). */
    if (srv->n_pending)
        batch_cb(-1, 0, srv);
    for (c = srv->conns; c; c = c->next)
        if (!c->busy)
            close_now(c);
    if (srv->connections == 0) {
        event_base_loopexit(srv->base, NULL);
        return;
    }
    tv = berth_timeval_of_ns(srv->cfg->shutdown_timeout_ns);
    srv->shutdown_ev = evtimer_new(srv->base, shutdown_timeout_cb, srv);
    if (!srv->shutdown_ev || evtimer_add(srv->shutdown_ev, &tv) < 0)
        event_base_loopexit(srv->base, NULL);
}

void berthd_server_free(struct berthd_server *srv)
{
    size_t i;

    if (!srv)
        return;
    srv->shutting_down = true; /* the listener goes first: never resume it */
    if (srv->http)
        evhttp_free(srv->http); /* frees every connection, and with them our conns */
    for (i = 0; i < srv->n_pending; i++)
        free(srv->pending[i].body);
    free(srv->pending);
    if (srv->batch_ev)
        event_free(srv->batch_ev);
    if (srv->shutdown_ev)
        event_free(srv->shutdown_ev);
    if (srv->ex_index >= 0)
        CRYPTO_free_ex_index(CRYPTO_EX_INDEX_SSL, srv->ex_index);
    free(srv);
}
