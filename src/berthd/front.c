/* SPDX-License-Identifier: MIT */
/* front.c -- the front threads and their message queues; see front.h. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "front.h"
#include "macro.h"
#include "reply-encode.h"
#include "tls.h"

enum msg_kind {
    /* to a front thread */
    MSG_NEW,
    MSG_REPLY,
    MSG_REPLY_FD,
    MSG_CLOSE,
    MSG_CLOSE_WHEN_IDLE,
    MSG_RELEASE,
    MSG_STOP,
    /* to the main loop */
    MSG_SECURED,
    MSG_REQUEST,
    MSG_REFUSED,
    MSG_DROPPED,
    MSG_CLOSED,
    MSG_RELEASED,
};

/* One message; which members count depends on @kind. */
struct msg {
    struct msg *next;
    enum msg_kind kind;
    struct berthd_fconn *c;          /* to a front thread */
    void *arg;                       /* to the main loop: the owner's */
    int fd;                          /* NEW, REPLY_FD (-1 when none) */
    int status;                      /* REPLY, REPLY_FD */
    unsigned retry_after_s;          /* REPLY */
    bool close;                      /* REPLY */
    uint64_t size;                   /* REPLY_FD */
    char *content_type, *body, *extra; /* REPLY, REPLY_FD: owned */
    size_t len;                      /* REPLY */
    void (*released)(void *arg);     /* REPLY_FD, RELEASED */
    void *released_arg;
    struct berthd_front_request *rq; /* REQUEST: owned until handed over */
    struct berthd_http_refusal why;  /* REFUSED */
    enum berthd_refusal drop;        /* DROPPED */
    int64_t start;                   /* REFUSED */
    bool peer_ok;                    /* SECURED */
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
};

/* A queue of messages to one loop; @ev (on that loop) runs them. */
struct queue {
    pthread_mutex_t lock;
    struct msg *head, *tail;
    struct event *ev;
    bool closed; /* its loop no longer runs: what is posted is dropped at free */
};

struct front_thread {
    struct berthd_front *f;
    pthread_t thread;
    bool started;
    struct event_base *base;
    struct queue in;
    struct berthd_conn_graveyard graveyard;
    struct berthd_fconn *conns; /* every handle not yet freed */
};

struct berthd_fconn {
    struct front_thread *t;  /* set before it is posted, then read-only */
    void *arg;               /* the owner's, read-only */
    /* The front thread's alone: */
    struct berthd_conn *conn; /* NULL once closed */
    bool closed, released;
    struct berthd_fconn *prev, *next;
};

struct berthd_front {
    const struct berthd_front_ops *ops;
    SSL_CTX *ctx;
    const struct berthd_config *cfg;
    struct berthd_conn_ops conn_ops;
    struct queue out; /* to the main loop */
    struct front_thread *threads;
    unsigned n, next;
    bool stopped;
};

/* ------------------------------------------------------------------------ */
/* Queues                                                                    */

static void msg_free(struct msg *m)
{
    if (!m)
        return;
    if (m->fd >= 0)
        (void)close(m->fd);
    free(m->content_type);
    free(m->body);
    free(m->extra);
    berthd_front_request_free(m->rq);
    free(m);
}

static struct msg *msg_new(enum msg_kind kind)
{
    struct msg *m = calloc(1, sizeof(*m));

    if (m) {
        m->kind = kind;
        m->fd = -1;
    }
    return m;
}

static int queue_init(struct queue *q, struct event_base *base, int priority, event_callback_fn cb, void *arg)
{
    q->ev = event_new(base, -1, 0, cb, arg);
    if (!q->ev || (priority >= 0 && event_priority_set(q->ev, priority) < 0))
        return -ENOMEM;
    pthread_mutex_init(&q->lock, NULL);
    return 0;
}

/* Post @m (accepts NULL: out of memory, nothing posted) to @q. */
static void queue_post(struct queue *q, struct msg *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&q->lock);
    if (q->tail)
        q->tail->next = m;
    else
        q->head = m;
    q->tail = m;
    /* Under the lock: the loop's event is freed only after the queue is closed. */
    if (!q->closed)
        event_active(q->ev, EV_TIMEOUT, 0);
    pthread_mutex_unlock(&q->lock);
}

/* Everything posted so far, in order. */
static struct msg *queue_take(struct queue *q)
{
    struct msg *m;

    pthread_mutex_lock(&q->lock);
    m = q->head;
    q->head = q->tail = NULL;
    pthread_mutex_unlock(&q->lock);
    return m;
}

static void queue_close(struct queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_mutex_unlock(&q->lock);
}

static void queue_clear(struct queue *q)
{
    struct msg *m, *next;

    if (!q->ev)
        return;
    for (m = queue_take(q); m; m = next) {
        next = m->next;
        msg_free(m);
    }
    event_free(q->ev);
    q->ev = NULL;
    pthread_mutex_destroy(&q->lock);
}

void berthd_front_request_free(struct berthd_front_request *rq)
{
    if (!rq)
        return;
    if (rq->prepared && rq->prepared_free)
        rq->prepared_free(rq->prepared);
    free(rq->head.target);
    free(rq->body);
    free(rq);
}

/* ------------------------------------------------------------------------ */
/* On a front thread                                                         */

static void fconn_maybe_free(struct berthd_fconn *c)
{
    struct front_thread *t = c->t;

    if (!c->closed || !c->released)
        return;
    if (c->prev)
        c->prev->next = c->next;
    else
        t->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    free(c);
}

static struct msg *to_main(enum msg_kind kind, struct berthd_fconn *c)
{
    struct msg *m = msg_new(kind);

    if (m)
        m->arg = c->arg;
    return m;
}

static bool secured_cb(struct berthd_conn *conn, SSL *ssl, void *arg)
{
    struct berthd_fconn *c = arg;
    struct msg *m = to_main(MSG_SECURED, c);
    bool valid;

    (void)conn;
    if (!m)
        return false; /* closed: the main loop hears of it, and refuses nothing it never admitted */
    m->peer_ok = berthd_tls_peer(ssl, m->fingerprint, &valid) == 0;
    queue_post(&c->t->f->out, m);
    return true;
}

static void request_cb(struct berthd_conn *conn, const struct berthd_conn_request *in, void *arg)
{
    struct berthd_fconn *c = arg;
    struct berthd_front_request *rq = calloc(1, sizeof(*rq));
    struct msg *m = to_main(MSG_REQUEST, c);

    if (!rq || !m || !(rq->head.target = strdup(in->head->target)) || !(rq->body = malloc(in->body_len + 1))) {
        berthd_front_request_free(rq);
        msg_free(m);
        /* Nobody will answer it: close rather than hang. */
        berthd_conn_close(conn);
        return;
    }
    {
        char *target = rq->head.target;
        rq->head = *in->head;
        rq->head.target = target;
    }
    memcpy(rq->body, in->body, in->body_len);
    rq->body[in->body_len] = '\0';
    rq->in = (struct berthd_conn_request){.head = &rq->head, .body = rq->body, .body_len = in->body_len,
                                          .start = in->start};
    rq->peer_ok = berthd_tls_peer(berthd_conn_ssl(conn), rq->fingerprint, &rq->peer_valid) == 0;
    if (c->t->f->ops->prepare)
        c->t->f->ops->prepare(rq);
    m->rq = rq;
    queue_post(&c->t->f->out, m);
}

/* A framing refusal is answered here (conn.h wants it answered before the
 * callback returns), exactly as the main loop would; it is counted there. */
static void refused_cb(struct berthd_conn *conn, const struct berthd_http_refusal *why, void *arg)
{
    struct berthd_fconn *c = arg;
    struct berth_reply r = {0};
    _cleanup_free_ char *text = NULL;
    struct msg *m = to_main(MSG_REFUSED, c);
    size_t len;

    r.status = why->status;
    r.error = why->code;
    snprintf(r.message, sizeof(r.message), "%s", why->message);
    text = berthd_reply_encode(&r, &len);
    berthd_conn_reply(conn, r.status, "application/json", text ? text : "", len, 0, true);
    if (m) {
        m->why = *why;
        m->why.status = r.status;
        if (berth_now_ns(CLOCK_MONOTONIC, &m->start, NULL) < 0)
            m->start = -1;
        queue_post(&c->t->f->out, m);
    }
}

static void dropped_cb(struct berthd_conn *conn, enum berthd_refusal why, void *arg)
{
    struct berthd_fconn *c = arg;
    struct msg *m = to_main(MSG_DROPPED, c);

    (void)conn;
    if (m) {
        m->drop = why;
        queue_post(&c->t->f->out, m);
    }
}

static void closed_cb(struct berthd_conn *conn, void *arg)
{
    struct berthd_fconn *c = arg;
    struct msg *m;

    (void)conn;
    c->conn = NULL; /* the graveyard frees it */
    c->closed = true;
    /* Out of memory: retried would be better, but the main loop must hear
     * of it; a small message, so wait for one. */
    while (!(m = to_main(MSG_CLOSED, c)))
        sched_yield();
    queue_post(&c->t->f->out, m);
    fconn_maybe_free(c);
}

static void released_cb(void *arg)
{
    struct msg *m = arg; /* a RELEASED message prepared by MSG_REPLY_FD */
    struct berthd_front *f = (struct berthd_front *)m->arg;

    m->arg = NULL;
    queue_post(&f->out, m);
}

static void run_one(struct front_thread *t, struct msg *m)
{
    struct berthd_fconn *c = m->c;
    struct berthd_front *f = t->f;

    switch (m->kind) {
    case MSG_NEW:
        c->prev = NULL;
        c->next = t->conns;
        if (t->conns)
            t->conns->prev = c;
        t->conns = c;
        {
            int fd = m->fd;
            m->fd = -1; /* the connection's, even when berthd_conn_new() fails */
            if (berthd_conn_new(t->base, fd, f->ctx, f->cfg, &t->graveyard, &f->conn_ops, c, &c->conn) < 0) {
                c->conn = NULL;
                closed_cb(NULL, c);
            }
        }
        break;
    case MSG_REPLY:
        if (c->conn)
            berthd_conn_reply_extra(c->conn, m->status, m->content_type, m->body ? m->body : "", m->len,
                                    m->retry_after_s, m->close, m->extra);
        break;
    case MSG_REPLY_FD: {
        int fd = m->fd;
        struct msg *rel = NULL;

        m->fd = -1;
        if (m->released && (rel = msg_new(MSG_RELEASED))) {
            rel->released = m->released;
            rel->released_arg = m->released_arg;
            rel->arg = f; /* released_cb() knows where to post */
        }
        if (!c->conn) {
            (void)close(fd);
            if (rel)
                released_cb(rel);
        } else {
            berthd_conn_reply_fd(c->conn, m->status, m->content_type, fd, m->size, m->extra,
                                 rel ? released_cb : NULL, rel);
        }
        break;
    }
    case MSG_CLOSE:
        if (c->conn)
            berthd_conn_close(c->conn);
        break;
    case MSG_CLOSE_WHEN_IDLE:
        if (c->conn)
            berthd_conn_close_when_idle(c->conn);
        break;
    case MSG_RELEASE:
        c->released = true;
        fconn_maybe_free(c);
        break;
    case MSG_STOP:
        event_base_loopbreak(t->base);
        break;
    default:
        break;
    }
}

static void front_queue_cb(evutil_socket_t fd, short what, void *arg)
{
    struct front_thread *t = arg;
    struct msg *m, *next;

    (void)fd, (void)what;
    for (m = queue_take(&t->in); m; m = next) {
        next = m->next;
        run_one(t, m);
        msg_free(m);
    }
}

static void *front_main(void *arg)
{
    struct front_thread *t = arg;

    (void)event_base_loop(t->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* On the main loop                                                          */

static void main_queue_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_front *f = arg;
    const struct berthd_front_ops *ops = f->ops;
    struct msg *m, *next;

    (void)fd, (void)what;
    for (m = queue_take(&f->out); m; m = next) {
        next = m->next;
        switch (m->kind) {
        case MSG_SECURED:
            ops->secured(m->arg, m->peer_ok ? m->fingerprint : NULL);
            break;
        case MSG_REQUEST:
            ops->request(m->arg, TAKE_PTR(m->rq));
            break;
        case MSG_REFUSED:
            ops->refused(m->arg, &m->why, m->start);
            break;
        case MSG_DROPPED:
            ops->dropped(m->arg, m->drop);
            break;
        case MSG_CLOSED:
            ops->closed(m->arg);
            break;
        case MSG_RELEASED:
            m->released(m->released_arg);
            break;
        default:
            break;
        }
        msg_free(m);
    }
}

int berthd_front_new(struct event_base *base, int priority, unsigned n, SSL_CTX *ctx, const struct berthd_config *cfg,
                     const struct berthd_front_ops *ops, struct berthd_front **ret)
{
    struct berthd_front *f;
    unsigned i;
    int r;

    if (n < 1 || n > BERTH_BERTHD_FRONT_THREADS_MAX)
        return -EINVAL;
    f = calloc(1, sizeof(*f));
    if (!f)
        return -ENOMEM;
    f->ops = ops;
    f->ctx = ctx;
    f->cfg = cfg;
    f->conn_ops = (struct berthd_conn_ops){
        .secured = secured_cb,
        .request = request_cb,
        .refused = refused_cb,
        .dropped = dropped_cb,
        .closed = closed_cb,
    };
    f->threads = calloc(n, sizeof(*f->threads));
    if (!f->threads || queue_init(&f->out, base, priority, main_queue_cb, f) < 0) {
        berthd_front_free(f);
        return -ENOMEM;
    }
    for (i = 0; i < n; i++) {
        struct front_thread *t = &f->threads[i];

        t->f = f;
        f->n = i + 1;
        if (!(t->base = event_base_new()) || queue_init(&t->in, t->base, -1, front_queue_cb, t) < 0 ||
            berthd_conn_graveyard_init(&t->graveyard, t->base) < 0) {
            berthd_front_free(f);
            return -ENOMEM;
        }
        r = pthread_create(&t->thread, NULL, front_main, t);
        if (r != 0) {
            berthd_front_free(f);
            return -r;
        }
        t->started = true;
    }
    *ret = f;
    return 0;
}

unsigned berthd_front_threads(const struct berthd_front *f)
{
    return f ? f->n : 0;
}

int berthd_front_render(const struct berthd_front *f, struct berth_buf *out)
{
    char line[192];

    snprintf(line, sizeof(line),
             "# HELP berth_front_threads Threads running the connections' TLS and HTTP framing (http.threads).\n"
             "# TYPE berth_front_threads gauge\nberth_front_threads %u\n",
             berthd_front_threads(f));
    return berth_buf_append(out, line, strlen(line));
}

struct berthd_fconn *berthd_front_accept(struct berthd_front *f, evutil_socket_t fd, void *arg)
{
    struct berthd_fconn *c = calloc(1, sizeof(*c));
    struct msg *m = msg_new(MSG_NEW);

    if (!c || !m || f->stopped) {
        free(c);
        free(m);
        evutil_closesocket(fd);
        return NULL;
    }
    c->t = &f->threads[f->next++ % f->n];
    c->arg = arg;
    m->c = c;
    m->fd = fd;
    queue_post(&c->t->in, m);
    return c;
}

/* A message to @c's thread, or NULL (out of memory, or the front stopped). */
static struct msg *to_front(enum msg_kind kind, struct berthd_fconn *c)
{
    struct msg *m;

    if (!c || c->t->f->stopped || !(m = msg_new(kind)))
        return NULL;
    m->c = c;
    return m;
}

/* strdup() of @s, which may be NULL; false when memory ran out. */
static bool dup_opt(const char *s, char **ret)
{
    *ret = NULL;
    return !s || (*ret = strdup(s));
}

void berthd_fconn_reply(struct berthd_fconn *c, struct berthd_front_request *rq, int status, const char *content_type,
                        const char *body, size_t len, unsigned retry_after_s, bool close, const char *extra_headers)
{
    struct msg *m = to_front(MSG_REPLY, c);

    berthd_front_request_free(rq);
    if (!m)
        return;
    m->status = status;
    m->retry_after_s = retry_after_s;
    m->close = close;
    m->len = len;
    if (!dup_opt(content_type, &m->content_type) || !dup_opt(extra_headers, &m->extra) ||
        !(m->body = malloc(len + 1))) {
        /* Out of memory: no reply can be sent, so the connection closes. */
        msg_free(m);
        berthd_fconn_close(c);
        return;
    }
    memcpy(m->body, body, len);
    m->body[len] = '\0';
    queue_post(&c->t->in, m);
}

void berthd_fconn_reply_fd(struct berthd_fconn *c, struct berthd_front_request *rq, int status,
                           const char *content_type, int fd, uint64_t size, const char *extra_headers,
                           void (*released)(void *arg), void *arg)
{
    struct msg *m = to_front(MSG_REPLY_FD, c);

    berthd_front_request_free(rq);
    if (!m || !dup_opt(content_type, &m->content_type) || !dup_opt(extra_headers, &m->extra)) {
        msg_free(m);
        (void)close(fd);
        if (released)
            released(arg);
        berthd_fconn_close(c);
        return;
    }
    m->fd = fd;
    m->status = status;
    m->size = size;
    m->released = released;
    m->released_arg = arg;
    queue_post(&c->t->in, m);
}

static void post_simple(enum msg_kind kind, struct berthd_fconn *c)
{
    struct msg *m;

    /* These carry nothing: wait out a shortage rather than lose one. */
    while (c && !c->t->f->stopped && !(m = to_front(kind, c)))
        sched_yield();
    if (c && !c->t->f->stopped)
        queue_post(&c->t->in, m);
}

void berthd_fconn_close(struct berthd_fconn *c)
{
    post_simple(MSG_CLOSE, c);
}

void berthd_fconn_close_when_idle(struct berthd_fconn *c)
{
    post_simple(MSG_CLOSE_WHEN_IDLE, c);
}

void berthd_fconn_release(struct berthd_fconn *c)
{
    post_simple(MSG_RELEASE, c);
}

void berthd_front_stop(struct berthd_front *f)
{
    unsigned i;

    if (!f || f->stopped)
        return;
    f->stopped = true;
    for (i = 0; i < f->n; i++) {
        struct front_thread *t = &f->threads[i];
        struct msg *m;

        if (!t->started)
            continue;
        while (!(m = msg_new(MSG_STOP)))
            sched_yield();
        queue_post(&t->in, m);
        pthread_join(t->thread, NULL);
        t->started = false;
    }
    /* The threads are gone: their connections are freed here, calling nothing. */
    for (i = 0; i < f->n; i++) {
        struct front_thread *t = &f->threads[i];

        queue_close(&t->in);
        while (t->conns) {
            struct berthd_fconn *c = t->conns;
            t->conns = c->next;
            berthd_conn_free(c->conn);
            free(c);
        }
        berthd_conn_graveyard_clear(&t->graveyard);
    }
}

void berthd_front_free(struct berthd_front *f)
{
    unsigned i;

    if (!f)
        return;
    berthd_front_stop(f);
    for (i = 0; f->threads && i < f->n; i++) {
        struct front_thread *t = &f->threads[i];

        queue_clear(&t->in);
        if (t->base)
            event_base_free(t->base);
    }
    free(f->threads);
    queue_close(&f->out);
    queue_clear(&f->out);
    free(f);
}
