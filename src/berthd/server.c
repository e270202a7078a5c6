/* SPDX-License-Identifier: MIT */
/* server.c -- berthd's HTTPS front end: the listener, admission and the
 * connections' lifecycle; see server.h.  The API itself is api.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/listener.h>

#include "clock.h"
#include "macro.h"
#include "server-internal.h"
#include "tls.h"

/* ------------------------------------------------------------------------ */
/* Connections                                                               */

static void resume_listener(struct berthd_server *srv)
{
    if (srv->paused && !srv->shutting_down && srv->slots.total < (size_t)srv->cfg->max_connections) {
        evconnlistener_enable(srv->listener);
        srv->paused = false;
    }
}

/* The handshake is complete: admit the certificate, or close. */
static bool secured_cb(struct berthd_conn *conn, SSL *ssl, void *arg)
{
    struct client *cl = arg;
    struct berthd_server *srv = cl->srv;
    char fp[BERTH_FINGERPRINT_LEN + 1];
    enum berth_front_door door;
    bool valid;

    (void)conn;
    if (berthd_tls_peer(ssl, fp, &valid) < 0) {
        berthd_refusals_count(&srv->refusals, BERTHD_REFUSED_TLS, cl->slot.source);
        return false;
    }
    /* Through the broker: the worker thread reads the same policy source. */
    door = berth_broker_front_door(srv->broker, fp);
    if (door == BERTH_DOOR_CLOSED) {
        berthd_refusals_count(&srv->refusals, BERTHD_REFUSED_UNLISTED, cl->slot.source);
        return false;
    }
    cl->health_only = door == BERTH_DOOR_HEALTH;
    if (!berthd_slots_authenticate(&srv->slots, &cl->slot, fp, (size_t)srv->cfg->max_per_principal)) {
        berthd_refusals_count(&srv->refusals, BERTHD_REFUSED_PRINCIPAL_CAP, cl->slot.source);
        return false;
    }
    return true;
}

static void dropped_cb(struct berthd_conn *conn, enum berthd_refusal why, void *arg)
{
    struct client *cl = arg;

    (void)conn;
    berthd_refusals_count(&cl->srv->refusals, why, cl->slot.source);
}

static void closed_cb(struct berthd_conn *conn, void *arg)
{
    struct client *cl = arg;
    struct berthd_server *srv = cl->srv;

    (void)conn;
    berthd_api_forget(srv, cl);
    berthd_slots_remove(&srv->slots, &cl->slot);
    free(cl);
    resume_listener(srv);
    if (srv->shutting_down && srv->slots.total == 0)
        event_base_loopexit(srv->base, NULL);
}

static void accept_cb(struct evconnlistener *listener, evutil_socket_t fd, struct sockaddr *sa, int socklen,
                      void *arg)
{
    struct berthd_server *srv = arg;
    uint8_t source[BERTHD_SOURCE_LEN];
    struct berthd_slot *victim;
    struct client *cl;

    (void)listener;
    if (srv->shutting_down) {
        evutil_closesocket(fd);
        return;
    }
    berthd_slot_source(sa, (socklen_t)socklen, source);
    victim = berthd_slots_victim(&srv->slots, source, (size_t)srv->cfg->max_per_source,
                                 (size_t)berthd_config_unauthenticated_share(srv->cfg));
    if (victim) {
        /* A slot is a client's first member. */
        struct client *old = (struct client *)(void *)victim;
        berthd_refusals_count(&srv->refusals, BERTHD_REFUSED_EVICTED, victim->source);
        berthd_conn_close(old->conn);
    }
    cl = calloc(1, sizeof(*cl));
    if (!cl) {
        evutil_closesocket(fd);
        berth_logf(srv->logger, BERTH_LOG_ERR, "out of memory accepting a connection");
        return;
    }
    cl->srv = srv;
    memcpy(cl->slot.source, source, sizeof(source));
    if (berthd_conn_new(srv->base, fd, srv->ctx, srv->cfg, &srv->graveyard, &srv->ops, cl, &cl->conn) < 0) {
        free(cl); /* the socket is closed */
        berth_logf(srv->logger, BERTH_LOG_ERR, "out of memory accepting a connection");
        return;
    }
    berthd_slots_add(&srv->slots, &cl->slot);
    if (srv->slots.total >= (size_t)srv->cfg->max_connections && !srv->paused) {
        evconnlistener_disable(srv->listener);
        srv->paused = true;
    }
}

static void accept_error_cb(struct evconnlistener *listener, void *arg)
{
    struct berthd_server *srv = arg;
    int e = EVUTIL_SOCKET_ERROR();

    (void)listener;
    /* EMFILE and friends: the connection waits in the backlog; say so once per burst. */
    berth_logf(srv->logger, BERTH_LOG_WARNING, "accepting a connection failed: %s", evutil_socket_error_to_string(e));
}

/* ------------------------------------------------------------------------ */

/* @address (IPv4 or IPv6 text) and @port as a socket address. */
static int listen_address(const char *address, int port, struct sockaddr_storage *ss, socklen_t *ret_len)
{
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (inet_pton(AF_INET, address, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *ret_len = sizeof(*in4);
        return 0;
    }
    if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *ret_len = sizeof(*in6);
        return 0;
    }
    return -EINVAL;
}

int berthd_server_new(struct event_base *base, SSL_CTX *ctx, const struct berthd_config *cfg,
                      struct berth_broker *broker, struct berth_policy_source *policy,
                      const struct berth_logger *logger, struct berthd_server **ret, struct berth_error *reterr)
{
    struct berthd_server *srv;
    struct sockaddr_storage ss;
    socklen_t sl;
    evutil_socket_t fd;
    int one = 1;

    if (listen_address(cfg->address, cfg->port, &ss, &sl) < 0)
        return berth_error_set(reterr, -EINVAL, "cannot listen on %s: not an IPv4 or IPv6 address", cfg->address);
    srv = calloc(1, sizeof(*srv));
    if (!srv)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    srv->base = base;
    srv->ctx = ctx;
    srv->cfg = cfg;
    srv->broker = broker;
    srv->policy = policy;
    srv->logger = logger;
    srv->ops = (struct berthd_conn_ops){
        .secured = secured_cb,
        .request = berthd_api_request,
        .refused = berthd_api_refused,
        .dropped = dropped_cb,
        .closed = closed_cb,
    };
    berthd_metrics_init(&srv->metrics);
    srv->batch_ev = event_new(base, -1, 0, berthd_api_batch, srv);
    if (!srv->batch_ev || berthd_conn_graveyard_init(&srv->graveyard, base) < 0 ||
        berthd_refusals_init(&srv->refusals, base, cfg->refusal_log_interval_ns, logger) < 0) {
        berthd_server_free(srv);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    event_priority_set(srv->batch_ev, BERTHD_PRIORITIES - 1); /* after all ready I/O */
    errno = 0;
    srv->listener = evconnlistener_new_bind(base, accept_cb, srv,
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE, -1,
                                            (struct sockaddr *)&ss, (int)sl);
    if (!srv->listener) {
        int e = errno ? errno : EADDRINUSE;
        berthd_server_free(srv);
        return berth_error_set(reterr, -e, "cannot listen on %s port %d: %s", cfg->address, cfg->port, strerror(e));
    }
    evconnlistener_set_error_cb(srv->listener, accept_error_cb);
    fd = evconnlistener_get_fd(srv->listener);
    /* Replies go out in one TLS record, but a reply larger than a record
     * is several: without TCP_NODELAY (inherited by accepted sockets on
     * Linux) Nagle holds the last until the client's delayed ACK, ~40 ms. */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        berth_logf(logger, BERTH_LOG_WARNING, "TCP_NODELAY: %s", strerror(errno));
    sl = sizeof(ss);
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
    if (srv->slots.total)
        berth_logf(srv->logger, BERTH_LOG_WARNING, "%zu connections still open at the shutdown timeout; closing them",
                   srv->slots.total);
    event_base_loopexit(srv->base, NULL);
}

void berthd_server_shutdown(struct berthd_server *srv)
{
    struct berthd_slot *s, *next;
    struct timeval tv;

    if (srv->shutting_down)
        return;
    srv->shutting_down = true;
    if (!srv->paused)
        evconnlistener_disable(srv->listener);
    srv->paused = true;
    /* Queued submissions are answered now (their batch runs before the loop ends). */
    if (srv->n_pending)
        berthd_api_batch(-1, 0, srv);
    for (s = srv->slots.head; s; s = next) {
        next = s->next; /* closing removes @s */
        berthd_conn_close_when_idle(((struct client *)(void *)s)->conn);
    }
    if (srv->slots.total == 0) {
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
    if (srv->listener)
        evconnlistener_free(srv->listener);
    while (srv->slots.head) {
        struct client *cl = (struct client *)(void *)srv->slots.head;
        berthd_slots_remove(&srv->slots, &cl->slot);
        berthd_conn_free(cl->conn);
        free(cl);
    }
    for (i = 0; i < srv->n_pending; i++)
        free(srv->pending[i].body);
    free(srv->pending);
    if (srv->batch_ev)
        event_free(srv->batch_ev);
    if (srv->shutdown_ev)
        event_free(srv->shutdown_ev);
    berthd_conn_graveyard_clear(&srv->graveyard);
    berthd_refusals_clear(&srv->refusals);
    free(srv);
}
