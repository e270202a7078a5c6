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

/* Take @cl out of admission and forget what it waits for; its close is
 * under way (or done) and its closed callback frees it. */
static void client_detach(struct client *cl)
{
    struct berthd_server *srv = cl->srv;

    if (cl->detached)
        return;
    cl->detached = true;
    berthd_api_forget(srv, cl);
    berthd_result_waits_forget(srv, cl);
    berthd_worker_polls_forget(srv, cl);
    berthd_evidence_forget(srv, cl);
    berthd_slots_remove(&srv->slots, &cl->slot);
    resume_listener(srv);
    if (srv->shutting_down && srv->slots.total == 0)
        event_base_loopexit(srv->base, NULL);
}

/* Close @cl without serving it further, counted as @why. */
static void client_refuse(struct client *cl, enum berthd_refusal why)
{
    berthd_refusals_count(&cl->srv->refusals, why, cl->slot.source);
    client_detach(cl);
    berthd_fconn_close(cl->conn);
}

/* The handshake is complete: admit the certificate, or close. */
static void secured_cb(void *arg, const char *fp)
{
    struct client *cl = arg;
    struct berthd_server *srv = cl->srv;
    enum berth_front_door door;

    if (cl->detached)
        return;
    if (!fp) {
        client_refuse(cl, BERTHD_REFUSED_TLS);
        return;
    }
    /* Through the broker: the worker thread reads the same policy source. */
    door = berth_broker_front_door(srv->broker, fp);
    if (door == BERTH_DOOR_CLOSED) {
        client_refuse(cl, BERTHD_REFUSED_UNLISTED);
        return;
    }
    cl->health_only = door == BERTH_DOOR_HEALTH;
    if (!berthd_slots_authenticate(&srv->slots, &cl->slot, fp, (size_t)srv->cfg->max_per_principal))
        client_refuse(cl, BERTHD_REFUSED_PRINCIPAL_CAP);
}

static void request_cb(void *arg, struct berthd_front_request *rq)
{
    struct client *cl = arg;

    /* A request that was on its way when the connection was refused. */
    if (cl->detached) {
        berthd_front_request_free(rq);
        return;
    }
    berthd_api_request(cl, rq);
}

static void refused_cb(void *arg, const struct berthd_http_refusal *why, int64_t start)
{
    struct client *cl = arg;

    if (!cl->detached)
        berthd_api_refused(cl, why, start);
}

static void dropped_cb(void *arg, enum berthd_refusal why)
{
    struct client *cl = arg;

    if (!cl->detached) /* a refused one was counted already */
        berthd_refusals_count(&cl->srv->refusals, why, cl->slot.source);
}

static void client_unlink(struct client *cl)
{
    struct berthd_server *srv = cl->srv;

    if (cl->prev)
        cl->prev->next = cl->next;
    else
        srv->clients = cl->next;
    if (cl->next)
        cl->next->prev = cl->prev;
    berthd_front_request_free(cl->rq);
    free(cl);
}

static void closed_cb(void *arg)
{
    struct client *cl = arg;

    client_detach(cl);
    berthd_fconn_release(cl->conn);
    client_unlink(cl);
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
    /* A slot is a client's first member. */
    if (victim)
        client_refuse((struct client *)(void *)victim, BERTHD_REFUSED_EVICTED);
    cl = calloc(1, sizeof(*cl));
    if (!cl) {
        evutil_closesocket(fd);
        berth_logf(srv->logger, BERTH_LOG_ERR, "out of memory accepting a connection");
        return;
    }
    cl->srv = srv;
    memcpy(cl->slot.source, source, sizeof(source));
    /* Its TLS and framing run on a front thread; every callback comes back here. */
    cl->conn = berthd_front_accept(srv->front, fd, cl);
    if (!cl->conn) {
        free(cl); /* the socket is closed */
        berth_logf(srv->logger, BERTH_LOG_ERR, "out of memory accepting a connection");
        return;
    }
    cl->next = srv->clients;
    if (srv->clients)
        srv->clients->prev = cl;
    srv->clients = cl;
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
    srv->ops = (struct berthd_front_ops){
        .secured = secured_cb,
        .request = request_cb,
        .refused = refused_cb,
        .dropped = dropped_cb,
        .closed = closed_cb,
        .prepare = berthd_api_prepare,
    };
    berthd_metrics_init(&srv->metrics);
    srv->batch_ev = event_new(base, -1, 0, berthd_api_batch, srv);
    if (!srv->batch_ev ||
        berthd_front_new(base, BERTHD_PRIORITIES - 2, (unsigned)berthd_config_front_threads(cfg), ctx, cfg, &srv->ops,
                         &srv->front) < 0 ||
        berthd_refusals_init(&srv->refusals, base, cfg->refusal_log_interval_ns, logger) < 0 ||
        berthd_waits_new(0, 0, &srv->waits) < 0 ||
        berthd_waits_new(0, BERTHD_WORKER_POLLS_PER_WORKER, &srv->poll_waits) < 0 ||
        berthd_evidence_init(srv) < 0) {
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
    berth_logf(logger, BERTH_LOG_INFO, "front: %u threads", berthd_front_threads(srv->front));
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
    /* Parked long polls are answered now with what they have (202 while pending). */
    berthd_result_waits_answer_all(srv);
    berthd_worker_polls_answer_all(srv);
    for (s = srv->slots.head; s; s = next) {
        next = s->next;
        berthd_fconn_close_when_idle(((struct client *)(void *)s)->conn);
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
    srv->freeing = true;
    if (srv->listener)
        evconnlistener_free(srv->listener);
    /* The evidence helper's task finishes before the clients it may answer go. */
    berthd_evidence_free(srv);
    berthd_result_waits_drop_all(srv);
    berthd_waits_free(srv->waits);
    berthd_worker_polls_drop_all(srv);
    berthd_waits_free(srv->poll_waits);
    /* The front threads end first, freeing their connections; then no message refers to a client. */
    berthd_front_stop(srv->front);
    while (srv->clients) {
        struct client *cl = srv->clients;
        if (!cl->detached)
            berthd_slots_remove(&srv->slots, &cl->slot);
        client_unlink(cl);
    }
    berthd_front_free(srv->front);
    for (i = 0; i < srv->n_pending; i++)
    {
        free(srv->pending[i].body);
        berth_parsed_job_free(srv->pending[i].parsed);
    }
    free(srv->pending);
    if (srv->batch_ev)
        event_free(srv->batch_ev);
    if (srv->shutdown_ev)
        event_free(srv->shutdown_ev);
    berthd_refusals_clear(&srv->refusals);
    free(srv);
}
