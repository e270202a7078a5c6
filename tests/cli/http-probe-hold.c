/* SPDX-License-Identifier: MIT */
/* http-probe-hold.c -- connections that hold a server's slots; see http-probe-hold.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>

#include "clock.h"
#include "http-probe-hold.h"
#include "macro.h"

#define NS_PER_MS 1000000LL
#define SCRATCH 16384 /* bytes read from a server at a time */

/* CLOCK_MONOTONIC now; an unreadable clock fails the probe. */
static int now_ns(int64_t *ret, struct berth_error *reterr)
{
    return berth_now_ns(CLOCK_MONOTONIC, ret, reterr);
}

static int64_t earliest(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* poll(2) until @deadline_ns, restarted after a signal. */
static int poll_until(struct pollfd *p, size_t n, int64_t deadline_ns, struct berth_error *reterr)
{
    for (;;) {
        if (poll(p, n, probe_ms_until(deadline_ns)) >= 0)
            return 0;
        if (errno != EINTR)
            return berth_error_set(reterr, -errno, "poll: %s", strerror(errno));
    }
}

/*
 * struct poll_set - the descriptors of one round of a holder loop: @p[k]
 * belongs to holder @which[k], for k < @n; room for every holder.
 */
struct poll_set {
    struct pollfd *p;
    size_t *which;
    size_t n;
};

static int poll_set_alloc(struct poll_set *ps, long count, struct berth_error *reterr)
{
    ps->p = calloc((size_t)count, sizeof(*ps->p));
    ps->which = calloc((size_t)count, sizeof(*ps->which));
    ps->n = 0;
    return ps->p && ps->which ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
}

static void poll_set_free(struct poll_set *ps)
{
    free(ps->p);
    free(ps->which);
}

static void poll_set_add(struct poll_set *ps, size_t holder, int fd, short events)
{
    ps->p[ps->n] = (struct pollfd){.fd = fd, .events = events};
    ps->which[ps->n++] = holder;
}

/* Wait until @wake, read the clock into *@now, and call @ready(holder, now,
 * @arg) for each ready descriptor until one fails; the set is emptied. */
static int poll_set_round(struct poll_set *ps, int64_t wake, int64_t *now,
                          int (*ready)(size_t holder, int64_t now, void *arg, struct berth_error *reterr), void *arg,
                          struct berth_error *reterr)
{
    size_t k, n = ps->n;
    int r;

    ps->n = 0;
    if ((r = poll_until(ps->p, n, wake, reterr)) < 0 || (r = now_ns(now, reterr)) < 0)
        return r;
    for (k = 0; k < n && r == 0; k++)
        if (ps->p[k].revents)
            r = ready(ps->which[k], *now, arg, reterr);
    return r;
}

/* ------------------------------------------------------------------------ */
/* hold-tcp                                                                  */

enum tcp_state { TCP_WAIT, TCP_CONNECTING, TCP_OPEN };

struct tcp_holder {
    int fd;
    enum tcp_state state;
    int64_t retry_at; /* TCP_WAIT: when to connect again */
};

/* One hold-tcp: its holders and counts. */
struct tcp_run {
    const struct probe_target *t;
    struct tcp_holder *h;
    int64_t reconnect_ns;
    long connects, closes, failed;
};

static void tcp_drop(struct tcp_holder *h, int64_t retry_at)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    h->state = TCP_WAIT;
    h->retry_at = retry_at;
}

/* Start holder @i's connection; a refusal is counted, only a local failure is an error. */
static int tcp_start(struct tcp_run *run, size_t i, int64_t now, struct berth_error *reterr)
{
    struct tcp_holder *h = &run->h[i];
    int r = probe_tcp_socket(&run->t->to, probe_target_source(run->t, i), &h->fd, reterr);

    if (r < 0)
        return r;
    if (probe_tcp_connect(h->fd, &run->t->to, NULL) < 0) {
        run->failed++;
        tcp_drop(h, now + run->reconnect_ns);
        return 0;
    }
    h->state = TCP_CONNECTING;
    return 0;
}

/* Holder @i's socket is ready: connected, failed, readable or closed. */
static int tcp_ready(size_t i, int64_t now, void *arg, struct berth_error *reterr)
{
    struct tcp_run *run = arg;
    struct tcp_holder *h = &run->h[i];
    char buf[512];
    ssize_t got;

    (void)reterr;
    if (h->state == TCP_CONNECTING) {
        if (probe_tcp_connected(h->fd) == 0) {
            h->state = TCP_OPEN;
            run->connects++;
        } else {
            run->failed++;
            tcp_drop(h, now + run->reconnect_ns);
        }
        return 0;
    }
    got = read(h->fd, buf, sizeof(buf));
    if (got > 0 || (got < 0 && (errno == EAGAIN || errno == EINTR)))
        return 0; /* whatever the server says is dropped */
    run->closes++;
    tcp_drop(h, now + run->reconnect_ns);
    return 0;
}

int probe_hold_tcp(const struct probe_target *t, long count, long seconds, long reconnect_ms, FILE *out,
                   struct berth_error *reterr)
{
    _cleanup_free_ struct tcp_holder *h = calloc((size_t)count, sizeof(*h));
    struct tcp_run run = {.t = t, .h = h, .reconnect_ns = reconnect_ms * NS_PER_MS};
    _cleanup_(poll_set_free) struct poll_set ps = {0};
    int64_t now, end;
    long open = 0;
    size_t i;
    int r;

    if (!h)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = poll_set_alloc(&ps, count, reterr)) < 0 || (r = now_ns(&now, reterr)) < 0)
        return r;
    end = now + seconds * BERTH_NS_PER_SEC;
    for (i = 0; i < (size_t)count; i++) {
        h[i].fd = -1;
        tcp_drop(&h[i], now); /* every holder connects at once */
    }
    while (r == 0 && now < end) {
        int64_t wake = end;
        for (i = 0; i < (size_t)count && r == 0; i++) {
            if (h[i].state == TCP_WAIT && h[i].retry_at <= now)
                r = tcp_start(&run, i, now, reterr);
            if (h[i].state == TCP_WAIT)
                wake = earliest(wake, h[i].retry_at);
            else
                poll_set_add(&ps, i, h[i].fd, h[i].state == TCP_CONNECTING ? POLLOUT : POLLIN);
        }
        if (r == 0)
            r = poll_set_round(&ps, wake, &now, tcp_ready, &run, reterr);
    }
    for (i = 0; i < (size_t)count; i++) {
        open += h[i].state == TCP_OPEN;
        tcp_drop(&h[i], 0);
    }
    if (r < 0)
        return r;
    fprintf(out, "connects %ld\ncloses %ld\nfailed %ld\nopen %ld\n", run.connects, run.closes, run.failed, open);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* hold-slow                                                                 */

enum slow_state { SLOW_IDLE, SLOW_CONNECTING, SLOW_HANDSHAKE, SLOW_TRICKLE, SLOW_CLOSED };

struct slow_holder {
    int fd;
    SSL *ssl;
    enum slow_state state;
    short events;      /* what the socket waits for */
    int64_t started;   /* CLOCK_MONOTONIC ns of the connect */
    int64_t next_byte; /* SLOW_TRICKLE: when the next byte is due */
    size_t sent;
    double closed_after; /* SLOW_CLOSED: seconds from @started */
};

struct slow_run {
    const struct probe_target *t;
    struct slow_holder *h;
    char prefix[160]; /* the request head before the endless field value */
    size_t prefix_len;
    long handshakes, closed;
    int64_t interval_ns;
};

static void slow_close(struct slow_holder *h, int64_t now, struct slow_run *run)
{
    SSL_free(h->ssl);
    h->ssl = NULL;
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    h->state = SLOW_CLOSED;
    h->closed_after = (double)(now - h->started) / 1e9;
    run->closed++;
}

static int slow_start(struct slow_holder *h, size_t i, int64_t now, struct slow_run *run, struct berth_error *reterr)
{
    int r = probe_tcp_socket(&run->t->to, probe_target_source(run->t, i), &h->fd, reterr);

    if (r < 0)
        return r;
    h->started = now;
    h->state = SLOW_CONNECTING;
    h->events = POLLOUT;
    if (probe_tcp_connect(h->fd, &run->t->to, NULL) < 0)
        slow_close(h, now, run);
    return 0;
}

/* SLOW_CONNECTING, the socket writable: on to the handshake, or closed. */
static int slow_connected(struct slow_holder *h, int64_t now, struct slow_run *run, struct berth_error *reterr)
{
    int r;

    if (probe_tcp_connected(h->fd) < 0) {
        slow_close(h, now, run);
        return 0;
    }
    if ((r = probe_tls_new(run->t->tls, h->fd, run->t->to.host, &h->ssl, reterr)) < 0)
        return r;
    h->state = SLOW_HANDSHAKE;
    return 0;
}

/* SLOW_HANDSHAKE: one more step; on to SLOW_TRICKLE when it is done. */
static int slow_handshake(struct slow_holder *h, int64_t now, struct slow_run *run, struct berth_error *reterr)
{
    int r = probe_tls_result(h->ssl, SSL_connect(h->ssl), &h->events, reterr);

    if (r == -EAGAIN)
        return 0;
    if (r < 0)
        return r;
    if (r == 0) {
        slow_close(h, now, run);
        return 0;
    }
    run->handshakes++;
    h->state = SLOW_TRICKLE;
    h->next_byte = now;
    h->events = POLLIN;
    return 0;
}

/* SLOW_TRICKLE: drop what the server sent, notice a close, send a byte when one is due. */
static int slow_trickle(struct slow_holder *h, int64_t now, struct slow_run *run, struct berth_error *reterr)
{
    char scratch[SCRATCH];
    int r;

    for (;;) {
        r = probe_tls_result(h->ssl, SSL_read(h->ssl, scratch, sizeof(scratch)), &h->events, reterr);
        if (r == 0) {
            slow_close(h, now, run);
            return 0;
        }
        if (r == -EAGAIN)
            break; /* nothing more to read now */
        if (r < 0)
            return r;
    }
    if (now < h->next_byte)
        return 0;
    r = probe_tls_result(h->ssl, SSL_write(h->ssl, h->sent < run->prefix_len ? &run->prefix[h->sent] : "a", 1),
                         &h->events, reterr);
    if (r == 0) {
        slow_close(h, now, run);
        return 0;
    }
    if (r == -EAGAIN)
        return 0; /* the same byte again once the socket is ready */
    if (r < 0)
        return r;
    h->sent++;
    h->next_byte += run->interval_ns;
    h->events = POLLIN;
    return 0;
}

/* Make progress on holder @i (its socket is ready, or a byte is due). */
static int slow_step(size_t i, int64_t now, void *arg, struct berth_error *reterr)
{
    struct slow_run *run = arg;
    struct slow_holder *h = &run->h[i];
    int r = 0;

    if (h->state == SLOW_CONNECTING)
        r = slow_connected(h, now, run, reterr);
    if (r == 0 && h->state == SLOW_HANDSHAKE)
        r = slow_handshake(h, now, run, reterr);
    if (r == 0 && h->state == SLOW_TRICKLE)
        r = slow_trickle(h, now, run, reterr);
    return r;
}

static void slow_report(const struct slow_holder *h, long count, const struct slow_run *run, FILE *out)
{
    double first = -1, last = -1;
    long open = 0, i;

    for (i = 0; i < count; i++) {
        if (h[i].state != SLOW_CLOSED) {
            open += h[i].state != SLOW_IDLE;
            continue;
        }
        if (first < 0 || h[i].closed_after < first)
            first = h[i].closed_after;
        if (h[i].closed_after > last)
            last = h[i].closed_after;
    }
    fprintf(out, "connections %ld\nhandshakes %ld\nclosed %ld\nopen %ld\n", run->closed + open, run->handshakes,
            run->closed, open);
    if (first < 0)
        fprintf(out, "first_close_s -\nlast_close_s -\n");
    else
        fprintf(out, "first_close_s %.2f\nlast_close_s %.2f\n", first, last);
}

int probe_hold_slow(const struct probe_target *t, long count, long seconds, long interval_ms, FILE *out,
                    struct berth_error *reterr)
{
    _cleanup_free_ struct slow_holder *h = calloc((size_t)count, sizeof(*h));
    struct slow_run run = {.t = t, .h = h, .interval_ns = interval_ms * NS_PER_MS};
    _cleanup_(poll_set_free) struct poll_set ps = {0};
    int64_t now, end;
    size_t i, started = 0;
    int r;

    if (!h)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    run.prefix_len =
        (size_t)snprintf(run.prefix, sizeof(run.prefix), "GET /v1/health HTTP/1.1\r\nHost: %s\r\nX-Slow: ", t->to.host);
    for (i = 0; i < (size_t)count; i++)
        h[i].fd = -1;
    if ((r = poll_set_alloc(&ps, count, reterr)) < 0 || (r = now_ns(&now, reterr)) < 0)
        return r;
    end = now + seconds * BERTH_NS_PER_SEC;
    while (r == 0 && now < end && run.closed < count) {
        int64_t wake = end;
        size_t handshaking = 0;
        for (i = 0; i < started; i++)
            handshaking += h[i].state == SLOW_CONNECTING || h[i].state == SLOW_HANDSHAKE;
        while (r == 0 && started < (size_t)count && handshaking < PROBE_SLOW_HANDSHAKES) {
            r = slow_start(&h[started], started, now, &run, reterr);
            handshaking += h[started++].state == SLOW_CONNECTING;
        }
        for (i = 0; i < started && r == 0; i++) {
            if (h[i].state == SLOW_TRICKLE && h[i].next_byte <= now)
                r = slow_step(i, now, &run, reterr);
            if (h[i].state == SLOW_CLOSED)
                continue;
            if (h[i].state == SLOW_TRICKLE)
                wake = earliest(wake, h[i].next_byte);
            poll_set_add(&ps, i, h[i].fd, h[i].events);
        }
        if (r == 0)
            r = poll_set_round(&ps, wake, &now, slow_step, &run, reterr);
    }
    if (r == 0)
        slow_report(h, count, &run, out);
    for (i = 0; i < (size_t)count; i++) {
        SSL_free(h[i].ssl);
        if (h[i].fd >= 0)
            close(h[i].fd);
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* trickle-handshake                                                         */

/* What the TLS engine wants sent, appended to @buf (@cap bytes, *@len used). */
static int drain(BIO *wbio, char *buf, size_t cap, size_t *len, struct berth_error *reterr)
{
    int n;

    while (BIO_ctrl_pending(wbio) > 0) {
        if (*len == cap)
            return berth_error_set(reterr, -ENOBUFS, "the handshake is larger than %zu bytes", cap);
        n = BIO_read(wbio, buf + *len, (int)(cap - *len));
        if (n <= 0)
            break;
        *len += (size_t)n;
    }
    return 0;
}

/* The three lines of trickle-handshake; @outcome is "closed", "handshake" or "open". */
static void trickle_report(FILE *out, size_t hello, size_t sent, const char *outcome, int64_t start)
{
    fprintf(out, "hello_bytes %zu\nsent %zu\n%s", hello, sent, outcome);
    if (strcmp(outcome, "open") != 0)
        fprintf(out, " %.2f", probe_seconds_since(start));
    fputc('\n', out);
}

int probe_trickle_handshake(const struct probe_target *t, long seconds, long interval_ms, FILE *out,
                            struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    _cleanup_(SSL_freep) SSL *ssl = NULL;
    char pending[SCRATCH], in[SCRATCH];
    size_t len = 0, sent = 0, hello;
    int64_t start, end, next_byte;
    BIO *rbio, *wbio;
    short events = 0;
    int r;

    if ((r = now_ns(&start, reterr)) < 0)
        return r;
    end = start + seconds * BERTH_NS_PER_SEC;
    if ((r = probe_target_connect(t, 0, end, &fd, reterr)) < 0 ||
        (r = probe_tls_new(t->tls, fd, t->to.host, &ssl, reterr)) < 0 || (r = now_ns(&start, reterr)) < 0)
        return r;
    /* The engine talks to memory; this loop decides when its bytes go out. */
    rbio = BIO_new(BIO_s_mem());
    wbio = BIO_new(BIO_s_mem());
    if (!rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    SSL_set_bio(ssl, rbio, wbio);
    r = probe_tls_result(ssl, SSL_connect(ssl), &events, reterr);
    if (r != -EAGAIN)
        return r < 0 ? r : berth_error_set(reterr, -EPROTO, "the TLS handshake did not start");
    if ((r = drain(wbio, pending, sizeof(pending), &len, reterr)) < 0)
        return r;
    hello = len;
    for (next_byte = start;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t now;
        ssize_t got;

        if ((r = poll_until(&p, 1, sent < len ? earliest(next_byte, end) : end, reterr)) < 0 ||
            (r = now_ns(&now, reterr)) < 0)
            return r;
        if (p.revents) {
            got = read(fd, in, sizeof(in));
            if (got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE))) {
                trickle_report(out, hello, sent, "closed", start);
                return 0;
            }
            if (got < 0 && errno != EAGAIN && errno != EINTR)
                return berth_error_set(reterr, -errno, "read: %s", strerror(errno));
            if (got > 0 && BIO_write(rbio, in, (int)got) != (int)got)
                return berth_error_set(reterr, -ENOMEM, "out of memory");
            r = probe_tls_result(ssl, SSL_connect(ssl), &events, reterr);
            if (r > 0) {
                trickle_report(out, hello, sent, "handshake", start);
                return 0;
            }
            if (r != -EAGAIN && r != 0)
                return r;
            if ((r = drain(wbio, pending, sizeof(pending), &len, reterr)) < 0)
                return r;
        }
        if (now >= end)
            break;
        if (sent < len && now >= next_byte) {
            got = write(fd, pending + sent, 1);
            if (got < 0 && (errno == ECONNRESET || errno == EPIPE)) {
                trickle_report(out, hello, sent, "closed", start);
                return 0;
            }
            if (got < 0 && errno != EAGAIN && errno != EINTR)
                return berth_error_set(reterr, -errno, "write: %s", strerror(errno));
            if (got == 1) {
                sent++;
                next_byte += interval_ms * NS_PER_MS;
            }
        }
    }
    trickle_report(out, hello, sent, "open", start);
    return 0;
}
