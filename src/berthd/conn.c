/* SPDX-License-Identifier: MIT */
/* conn.c -- one client connection of berthd; see conn.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "buf.h"
#include "clock.h"
#include "conn.h"
#include "macro.h"

#define LINGER_NS (1000LL * 1000 * 1000) /* how long a closing connection drains the client's bytes */
#define READ_SLACK 65536                 /* input buffered beyond the largest header block, bytes */
#define REPLY_HEAD_MAX 1024              /* the status line and headers of a reply, bytes */
#define EXTRA_HEADERS_MAX 512            /* a reply's extra header lines, bytes */
#define SEND_PIECE (256 * 1024)          /* a streamed body is read from its file in pieces of this ... */
#define SEND_HIGH (512 * 1024)           /* ... while less than this is waiting to be sent ... */
#define SEND_LOW (128 * 1024)            /* ... refilled when the output drains below this */

enum phase { PHASE_HANDSHAKE, PHASE_WAITING, PHASE_HEAD, PHASE_BODY, PHASE_BUSY, PHASE_SENDING, PHASE_LINGER };

struct berthd_conn {
    struct bufferevent *bev;
    SSL *ssl;
    const struct berthd_config *cfg;
    const struct berthd_conn_ops *ops;
    void *arg;
    struct event *timer;
    struct berthd_conn_graveyard *graveyard;
    struct berthd_conn *next_dead;
    enum phase phase;
    bool served;       /* a reply was sent: the next request is not the first */
    bool close_after;  /* close once the reply in progress is out */
    bool answering;    /* a request (or a refusal) awaits its reply */
    bool dead;         /* closed: only the reaper may touch it */
    int64_t accepted;  /* CLOCK_MONOTONIC ns of the accept */
    int64_t start;     /* of the phase's clock: the handshake, the request's first byte, the last reply */
    int64_t last_rx;   /* of the last byte received */
    struct berthd_http_limits limits;
    struct berthd_http_head head;
    bool have_head;
    struct berthd_http_chunked chunked;
    struct berth_buf body;
    int send_fd;               /* PHASE_SENDING: the file the reply body comes from, else -1 */
    void (*send_released)(void *arg); /* called once send_fd is closed */
    void *send_arg;
    uint64_t send_off, send_end; /* its next byte and its end */
    int64_t last_tx;           /* when the streamed body last moved */
    size_t send_pending;       /* bytes waiting in the output then */
};

/* The clock for deadlines; a clock that cannot be read counts as far in the
 * future, so every deadline passes at once and the connection closes. */
static int64_t now_ns(void)
{
    int64_t now;

    return berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 ? INT64_MAX / 2 : now;
}

static void send_fd_close(struct berthd_conn *c)
{
    void (*released)(void *arg) = c->send_released;

    if (c->send_fd >= 0)
        close(c->send_fd);
    c->send_fd = -1;
    c->send_released = NULL;
    if (released)
        released(c->send_arg);
}

static void request_reset(struct berthd_conn *c)
{
    if (c->have_head)
        berthd_http_head_clear(&c->head);
    c->have_head = false;
    berth_buf_free(&c->body);
    c->body = (struct berth_buf)BERTH_BUF_INIT((size_t)c->cfg->max_body_bytes + 1);
}

/* ------------------------------------------------------------------------ */
/* Closing                                                                   */

static void graveyard_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_conn_graveyard *g = arg;
    struct berthd_conn *c;

    (void)fd, (void)what;
    while ((c = g->head)) {
        g->head = c->next_dead;
        berthd_conn_free(c);
    }
}

int berthd_conn_graveyard_init(struct berthd_conn_graveyard *g, struct event_base *base)
{
    g->head = NULL;
    g->ev = event_new(base, -1, 0, graveyard_cb, g);
    return g->ev ? 0 : -ENOMEM;
}

void berthd_conn_graveyard_clear(struct berthd_conn_graveyard *g)
{
    graveyard_cb(-1, 0, g);
    if (g->ev)
        event_free(g->ev);
    g->ev = NULL;
}

void berthd_conn_close(struct berthd_conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    send_fd_close(c);
    bufferevent_setcb(c->bev, NULL, NULL, NULL, NULL);
    bufferevent_disable(c->bev, EV_READ | EV_WRITE);
    evtimer_del(c->timer);
    c->ops->closed(c, c->arg);
    /* Freed on the next turn of the loop, outside every callback of @c. */
    c->next_dead = c->graveyard->head;
    c->graveyard->head = c;
    event_active(c->graveyard->ev, EV_TIMEOUT, 0);
}

void berthd_conn_free(struct berthd_conn *c)
{
    if (!c)
        return;
    request_reset(c);
    berth_buf_free(&c->body);
    send_fd_close(c);
    if (c->bev)
        bufferevent_free(c->bev); /* with it the SSL object and the socket */
    if (c->timer)
        event_free(c->timer);
    free(c);
}

static void drop(struct berthd_conn *c, enum berthd_refusal why)
{
    c->ops->dropped(c, why, c->arg);
    berthd_conn_close(c);
}

/* ------------------------------------------------------------------------ */
/* Deadlines                                                                 */

/* The phase's next deadline and what it means when it passes; false: none. */
static bool next_deadline(const struct berthd_conn *c, int64_t *ret_at, enum berthd_refusal *ret_why)
{
    const struct berthd_config *cfg = c->cfg;
    int64_t at, quiet;

    switch (c->phase) {
    case PHASE_HANDSHAKE:
        *ret_at = c->accepted + cfg->handshake_timeout_ns;
        *ret_why = BERTHD_REFUSED_HANDSHAKE;
        return true;
    case PHASE_WAITING:
        *ret_at = c->start + (c->served ? cfg->idle_timeout_ns : cfg->header_timeout_ns);
        *ret_why = c->served ? BERTHD_REFUSED_IDLE : BERTHD_REFUSED_HEADER;
        return true;
    case PHASE_HEAD:
    case PHASE_BODY:
        if (c->phase == PHASE_HEAD) {
            at = c->start + cfg->header_timeout_ns;
            *ret_why = BERTHD_REFUSED_HEADER;
        } else {
            at = c->start + cfg->request_timeout_ns;
            *ret_why = BERTHD_REFUSED_REQUEST;
        }
        quiet = c->last_rx + cfg->inactivity_timeout_ns;
        if (quiet < at) {
            at = quiet;
            *ret_why = BERTHD_REFUSED_INACTIVE;
        }
        *ret_at = at;
        return true;
    case PHASE_LINGER:
        *ret_at = c->start + LINGER_NS;
        *ret_why = BERTHD_REFUSED_COUNT;
        return true;
    case PHASE_SENDING:
        *ret_at = c->last_tx + cfg->inactivity_timeout_ns;
        *ret_why = BERTHD_REFUSED_INACTIVE;
        return true;
    case PHASE_BUSY:
        break;
    }
    return false;
}

static void arm(struct berthd_conn *c)
{
    enum berthd_refusal why;
    int64_t at, now = now_ns();
    struct timeval tv;

    evtimer_del(c->timer);
    if (!next_deadline(c, &at, &why))
        return;
    tv = berth_timeval_of_ns(at > now ? at - now : 0);
    if (evtimer_add(c->timer, &tv) < 0)
        berthd_conn_close(c); /* a connection without its deadline is not kept */
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct berthd_conn *c = arg;
    enum berthd_refusal why;
    int64_t at;

    (void)fd, (void)what;
    if (c->dead || !next_deadline(c, &at, &why))
        return;
    if (c->phase == PHASE_SENDING && evbuffer_get_length(bufferevent_get_output(c->bev)) != c->send_pending) {
        /* The client took bytes since: the streamed body moves. */
        c->send_pending = evbuffer_get_length(bufferevent_get_output(c->bev));
        c->last_tx = now_ns();
        arm(c);
        return;
    }
    if (now_ns() < at) {
        arm(c); /* bytes arrived since: the inactivity deadline moved */
        return;
    }
    if (c->phase == PHASE_LINGER)
        berthd_conn_close(c);
    else
        drop(c, why);
}

/* ------------------------------------------------------------------------ */
/* Replies                                                                   */

/* The reason phrases of the statuses berthd sends (RFC 9110 section 15). */
static const char *reason_phrase(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
    }
}

/* IMF-fixdate (RFC 9110 section 5.6.7), independent of the locale; "" if the clock fails. */
static void http_date(char buf[64])
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = time(NULL);
    struct tm tm;

    buf[0] = '\0';
    if (t == (time_t)-1 || !gmtime_r(&t, &tm))
        return;
    snprintf(buf, 64, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday, months[tm.tm_mon % 12],
             tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void begin_linger(struct berthd_conn *c);

/* Write @len bytes at once, so that a reply leaves in one TLS record where it fits. */
static int send_bytes(struct berthd_conn *c, const char *p, size_t len)
{
    return bufferevent_write(c->bev, p, len) < 0 ? -ENOMEM : 0;
}

/* Whether @extra is NULL or header lines "Name: value" CRLF of printable ASCII, within bounds. */
static bool extra_headers_ok(const char *extra)
{
    size_t i;

    if (!extra)
        return true;
    if (strlen(extra) > EXTRA_HEADERS_MAX)
        return false;
    for (i = 0; extra[i]; i++) {
        unsigned char ch = (unsigned char)extra[i];
        if (ch == '\r' && extra[i + 1] == '\n' && i > 0) {
            i++;
            continue;
        }
        if (ch < 0x20 || ch > 0x7e)
            return false;
    }
    return i == 0 || (i >= 2 && extra[i - 1] == '\n');
}

/* The status line and headers of a reply with a @len byte body, into @out;
 * the request is answered from now on.  Return: 0, or -ENOMEM / -EINVAL
 * (the caller closes the connection: a reply is never half sent). */
static int reply_head(struct berthd_conn *c, int status, const char *content_type, uint64_t len,
                      unsigned retry_after_s, bool close, const char *extra, struct berth_buf *out)
{
    char head[REPLY_HEAD_MAX], date[64], retry[40] = "";
    int n;

    c->answering = false;
    if (close || !c->have_head || !c->head.keep_alive)
        c->close_after = true;
    if (!extra_headers_ok(extra))
        return -EINVAL;
    http_date(date);
    if (retry_after_s)
        snprintf(retry, sizeof(retry), "Retry-After: %u\r\n", retry_after_s);
    n = snprintf(head, sizeof(head),
                 "HTTP/1.1 %d %s\r\n%s%s%sContent-Type: %s\r\nContent-Length: %llu\r\nCache-Control: no-store\r\n"
                 "X-Content-Type-Options: nosniff\r\n%s%s%s\r\n",
                 status, reason_phrase(status), date[0] ? "Date: " : "", date, date[0] ? "\r\n" : "",
                 content_type ? content_type : "application/json", (unsigned long long)len, retry, extra ? extra : "",
                 c->close_after ? "Connection: close\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof(head))
        return -EINVAL;
    return berth_buf_append(out, head, (size_t)n) < 0 ? -ENOMEM : 0;
}

/* The whole reply is in the output buffer: linger once it is out, or wait for the next request. */
static void reply_queued(struct berthd_conn *c)
{
    if (c->dead)
        return;
    bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
    c->start = now_ns();
    if (c->close_after) {
        c->phase = PHASE_BUSY; /* write_cb lingers once the reply is out */
        evtimer_del(c->timer);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            begin_linger(c);
        return;
    }
    c->phase = PHASE_WAITING;
    arm(c);
    /* A pipelined request may already be waiting: look at it on the next turn. */
    if (evbuffer_get_length(bufferevent_get_input(c->bev)))
        bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* Start a reply: @out holds what to send first.  The next state is set
 * before writing, which may call write_cb (or event_cb) at once. */
static void reply_send(struct berthd_conn *c, struct berth_buf *out, bool streaming)
{
    int r;

    request_reset(c);
    c->served = true;
    c->start = c->last_tx = now_ns();
    c->phase = streaming ? PHASE_SENDING : c->close_after ? PHASE_BUSY : PHASE_WAITING;
    evtimer_del(c->timer);
    r = send_bytes(c, out->data, out->len);
    berth_buf_free(out);
    if (r < 0) {
        berthd_conn_close(c);
        return;
    }
    if (c->dead || streaming)
        return;
    if (c->close_after) {
        if (c->phase == PHASE_BUSY && evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            begin_linger(c);
        return;
    }
    if (c->phase == PHASE_WAITING)
        reply_queued(c);
}

void berthd_conn_reply_extra(struct berthd_conn *c, int status, const char *content_type, const char *body, size_t len,
                             unsigned retry_after_s, bool close, const char *extra_headers)
{
    struct berth_buf out = BERTH_BUF_INIT(0);
    bool is_head = c->have_head && streq(c->head.method_name, "HEAD");

    if (c->dead || !c->answering)
        return;
    if (reply_head(c, status, content_type, len, retry_after_s, close, extra_headers, &out) < 0 ||
        (!is_head && len && berth_buf_append(&out, body, len) < 0)) {
        berth_buf_free(&out);
        berthd_conn_close(c); /* a reply that cannot be written is not half sent */
        return;
    }
    reply_send(c, &out, false);
}

void berthd_conn_reply(struct berthd_conn *c, int status, const char *content_type, const char *body, size_t len,
                       unsigned retry_after_s, bool close)
{
    berthd_conn_reply_extra(c, status, content_type, body, len, retry_after_s, close, NULL);
}

/* Top up the output from the streamed file; when all of it is queued, the reply is done. */
static void send_more(struct berthd_conn *c)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    struct evbuffer_iovec v;
    ssize_t n;

    while (c->send_off < c->send_end && evbuffer_get_length(out) < SEND_HIGH) {
        uint64_t want = c->send_end - c->send_off < SEND_PIECE ? c->send_end - c->send_off : SEND_PIECE;

        if (evbuffer_reserve_space(out, (ev_ssize_t)want, &v, 1) < 1) {
            berthd_conn_close(c);
            return;
        }
        do
            n = pread(c->send_fd, v.iov_base, (size_t)want, (off_t)c->send_off);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
            /* The file shrank or failed: the client sees a body shorter than its Content-Length. */
            berthd_conn_close(c);
            return;
        }
        v.iov_len = (size_t)n;
        if (evbuffer_commit_space(out, &v, 1) < 0) {
            berthd_conn_close(c);
            return;
        }
        c->send_off += (uint64_t)n;
    }
    c->send_pending = evbuffer_get_length(out);
    if (c->send_off == c->send_end) {
        send_fd_close(c);
        reply_queued(c);
    }
}

void berthd_conn_reply_fd(struct berthd_conn *c, int status, const char *content_type, int fd, uint64_t size,
                          const char *extra_headers, void (*released)(void *arg), void *arg)
{
    struct berth_buf out = BERTH_BUF_INIT(0);
    bool is_head = c->have_head && streq(c->head.method_name, "HEAD");

    if (c->dead || !c->answering) {
        close(fd);
        if (released)
            released(arg);
        return;
    }
    c->send_fd = fd;
    c->send_released = released;
    c->send_arg = arg;
    if (reply_head(c, status, content_type, size, 0, false, extra_headers, &out) < 0) {
        berth_buf_free(&out);
        berthd_conn_close(c); /* closes @fd */
        return;
    }
    if (is_head || size == 0) {
        send_fd_close(c);
        reply_send(c, &out, false);
        return;
    }
    c->send_off = 0;
    c->send_end = size;
    bufferevent_setwatermark(c->bev, EV_WRITE, SEND_LOW, 0);
    reply_send(c, &out, true);
    if (!c->dead && c->phase == PHASE_SENDING) {
        arm(c);
        send_more(c);
    }
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

static void refuse(struct berthd_conn *c, const struct berthd_http_refusal *why)
{
    c->answering = true;
    c->close_after = true;
    c->phase = PHASE_BUSY;
    evtimer_del(c->timer);
    c->ops->refused(c, why, c->arg);
    if (c->answering) { /* the owner did not answer: a plain 400 */
        static const char msg[] = "{\"error\":\"malformed\",\"message\":\"the request was refused\"}\n";
        berthd_conn_reply(c, 400, "application/json", msg, sizeof(msg) - 1, 0, true);
    }
}

static void dispatch(struct berthd_conn *c)
{
    struct berthd_conn_request rq = {
        .head = &c->head,
        .body = c->body.data ? c->body.data : "",
        .body_len = c->body.len,
        .start = c->start,
    };

    c->phase = PHASE_BUSY;
    c->answering = true;
    evtimer_del(c->timer);
    c->ops->request(c, &rq, c->arg);
}

/* The body, as far as it has arrived: 1 complete, 0 more to come, -1 refused. */
static int read_body(struct berthd_conn *c, struct evbuffer *in)
{
    struct berthd_http_refusal why = {0};
    struct evbuffer_iovec v;
    size_t used;
    int r;

    if (!c->head.chunked) {
        /* The framing layer refused a length above http.max_body_bytes (413). */
        while (c->body.len < c->head.content_length && evbuffer_peek(in, -1, NULL, &v, 1) == 1 && v.iov_len) {
            size_t need = (size_t)c->head.content_length - c->body.len;
            size_t take = v.iov_len < need ? v.iov_len : need;

            if (berth_buf_append(&c->body, v.iov_base, take) < 0)
                return -1;
            evbuffer_drain(in, take);
        }
        return c->body.len == c->head.content_length ? 1 : 0;
    }
    while (evbuffer_peek(in, -1, NULL, &v, 1) == 1 && v.iov_len) {
        r = berthd_http_chunked_feed(&c->chunked, v.iov_base, v.iov_len, &c->body, &used, &why);
        if (r < 0) {
            refuse(c, &why);
            return -2;
        }
        evbuffer_drain(in, used);
        if (r == 1)
            return 1;
    }
    return 0;
}

static void process(struct berthd_conn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    struct berthd_http_refusal why = {0};
    size_t have, look;
    int r;

    if (c->phase == PHASE_WAITING && evbuffer_get_length(in)) {
        c->phase = PHASE_HEAD;
        if (c->served)
            c->start = now_ns(); /* the first request's clock runs from the handshake */
        arm(c);
    }
    if (c->phase == PHASE_HEAD) {
        have = evbuffer_get_length(in);
        look = have < (size_t)c->cfg->max_header_bytes + 1 ? have : (size_t)c->cfg->max_header_bytes + 1;
        r = berthd_http_parse_head((const char *)evbuffer_pullup(in, (ev_ssize_t)look), look, &c->limits, &c->head,
                                   &why);
        if (r < 0) {
            refuse(c, &why);
            return;
        }
        if (r == 0)
            return;
        c->have_head = true;
        evbuffer_drain(in, c->head.head_len);
        if (!c->head.chunked && c->head.content_length == 0) {
            dispatch(c);
            return;
        }
        if (c->head.chunked)
            berthd_http_chunked_init(&c->chunked, (uint64_t)c->cfg->max_body_bytes);
        c->phase = PHASE_BODY;
        arm(c);
        if (c->head.expect_continue && evbuffer_get_length(in) == 0) {
            static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
            if (send_bytes(c, cont, sizeof(cont) - 1) < 0) {
                berthd_conn_close(c);
                return;
            }
        }
    }
    if (c->phase == PHASE_BODY) {
        r = read_body(c, in);
        if (r == -1) {
            berthd_conn_close(c); /* out of memory: nothing sensible can be said */
            return;
        }
        if (r == 1)
            dispatch(c);
    }
}

/* ------------------------------------------------------------------------ */
/* libevent callbacks                                                        */

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct berthd_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    if (c->dead)
        return;
    c->last_rx = now_ns();
    if (c->phase == PHASE_LINGER) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    if (c->phase == PHASE_WAITING || c->phase == PHASE_HEAD || c->phase == PHASE_BODY)
        process(c);
}

static void begin_linger(struct berthd_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);

    c->phase = PHASE_LINGER;
    c->start = now_ns();
    /* close_notify, best effort: the socket is non-blocking. */
    (void)SSL_shutdown(c->ssl);
    if (fd < 0 || shutdown(fd, SHUT_WR) < 0) {
        berthd_conn_close(c);
        return;
    }
    evbuffer_drain(bufferevent_get_input(c->bev), evbuffer_get_length(bufferevent_get_input(c->bev)));
    arm(c);
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct berthd_conn *c = arg;

    if (!c->dead && c->phase == PHASE_SENDING) {
        c->last_tx = now_ns();
        send_more(c);
        return;
    }
    if (!c->dead && c->close_after && !c->answering && c->phase == PHASE_BUSY &&
        evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        begin_linger(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct berthd_conn *c = arg;

    (void)bev;
    if (c->dead)
        return;
    if (what & BEV_EVENT_CONNECTED) {
        if (c->phase != PHASE_HANDSHAKE)
            return;
        if (!c->ops->secured(c, c->ssl, c->arg)) {
            berthd_conn_close(c);
            return;
        }
        c->phase = PHASE_WAITING;
        c->start = c->last_rx = now_ns();
        arm(c);
        process(c); /* the request may have come with the handshake's last flight */
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (c->phase == PHASE_HANDSHAKE)
            drop(c, BERTHD_REFUSED_TLS);
        else
            berthd_conn_close(c); /* the client went away */
    }
}

/* ------------------------------------------------------------------------ */

void berthd_conn_close_when_idle(struct berthd_conn *c)
{
    if (c->dead)
        return;
    if ((c->phase == PHASE_BUSY || c->phase == PHASE_SENDING) &&
        (c->answering || c->phase == PHASE_SENDING || evbuffer_get_length(bufferevent_get_output(c->bev)))) {
        c->close_after = true; /* after the reply in progress */
        return;
    }
    berthd_conn_close(c);
}

SSL *berthd_conn_ssl(const struct berthd_conn *c)
{
    return c->ssl;
}

int berthd_conn_new(struct event_base *base, evutil_socket_t fd, SSL_CTX *ctx, const struct berthd_config *cfg,
                    struct berthd_conn_graveyard *graveyard, const struct berthd_conn_ops *ops, void *arg,
                    struct berthd_conn **ret)
{
    struct berthd_conn *c = calloc(1, sizeof(*c));
    SSL *ssl = NULL;

    if (!c) {
        evutil_closesocket(fd);
        return -ENOMEM;
    }
    c->cfg = cfg;
    c->ops = ops;
    c->arg = arg;
    c->graveyard = graveyard;
    c->limits.max_header_bytes = (size_t)cfg->max_header_bytes;
    c->limits.max_fields = (size_t)cfg->max_header_fields;
    c->limits.max_body_bytes = (uint64_t)cfg->max_body_bytes;
    c->body = (struct berth_buf)BERTH_BUF_INIT((size_t)cfg->max_body_bytes + 1);
    c->send_fd = -1;
    c->accepted = c->start = c->last_rx = now_ns();
    c->phase = PHASE_HANDSHAKE;
    c->timer = evtimer_new(base, timer_cb, c);
    ssl = SSL_new(ctx);
    if (!c->timer || !ssl)
        goto fail;
    c->bev = bufferevent_openssl_socket_new(base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev)
        goto fail;
    c->ssl = ssl; /* the bufferevent owns it now, and @fd */
    bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    bufferevent_setwatermark(c->bev, EV_READ, 0, (size_t)cfg->max_header_bytes + READ_SLACK);
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    if (bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0) {
        berthd_conn_free(c);
        return -ENOMEM;
    }
    arm(c);
    *ret = c;
    return 0;
fail:
    SSL_free(ssl);
    berthd_conn_free(c);
    evutil_closesocket(fd);
    return -ENOMEM;
}
