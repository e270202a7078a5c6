/* SPDX-License-Identifier: MIT */
/* http-probe-net.c -- sockets and TLS for http-probe; see http-probe-net.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "clock.h"
#include "http-probe-net.h"
#include "macro.h"
#include "openssl-error.h"

static const unsigned char alpn_http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

/* Parse the decimal port @text (1..65535). */
static bool port_parse(const char *text, uint16_t *ret)
{
    unsigned long v = 0;
    const char *p;

    if (!*text || strlen(text) > 5)
        return false;
    for (p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    if (v == 0 || v > 65535)
        return false;
    *ret = (uint16_t)v;
    return true;
}

int probe_addr_parse(const char *text, bool with_port, struct probe_addr *ret, struct berth_error *reterr)
{
    struct probe_addr a = {0};
    char host[PROBE_ADDR_TEXT_MAX];
    const char *port_text = NULL;
    uint16_t port = 0;
    size_t n;

    if (!text || strlen(text) >= sizeof(host))
        return berth_error_set(reterr, -EINVAL, "not an address: \"%s\"", text ? text : "");
    if (with_port) {
        const char *colon;
        if (text[0] == '[') {
            const char *close = strchr(text, ']');
            if (!close || close[1] != ':')
                return berth_error_set(reterr, -EINVAL, "not [HOST]:PORT: \"%s\"", text);
            n = (size_t)(close - text - 1);
            memcpy(host, text + 1, n);
            port_text = close + 2;
        } else {
            colon = strrchr(text, ':');
            if (!colon || memchr(text, ':', (size_t)(colon - text)))
                return berth_error_set(reterr, -EINVAL, "not HOST:PORT (an IPv6 HOST goes in brackets): \"%s\"", text);
            n = (size_t)(colon - text);
            memcpy(host, text, n);
            port_text = colon + 1;
        }
        host[n] = '\0';
        if (!port_parse(port_text, &port))
            return berth_error_set(reterr, -EINVAL, "not a port (1..65535): \"%s\"", port_text);
    } else {
        snprintf(host, sizeof(host), "%s", text);
    }
    if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&a.ss)->sin_addr) == 1) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a.ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        a.len = sizeof(*sin);
    } else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&a.ss)->sin6_addr) == 1) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a.ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(port);
        a.len = sizeof(*sin6);
    } else {
        return berth_error_set(reterr, -EINVAL, "not a numeric IPv4 or IPv6 address: \"%s\"", host);
    }
    snprintf(a.host, sizeof(a.host), "%s", host);
    *ret = a;
    return 0;
}

int probe_addr_list_parse(const char *text, struct probe_addr **ret, size_t *ret_n, struct berth_error *reterr)
{
    _cleanup_free_ char *copy = strdup(text ? text : "");
    _cleanup_free_ struct probe_addr *v = NULL;
    char *item, *save = NULL;
    size_t n = 0, cap = 1;
    int r;

    if (!copy)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (const char *p = copy; *p; p++)
        cap += *p == ',';
    v = calloc(cap, sizeof(*v));
    if (!v)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
        if ((r = probe_addr_parse(item, false, &v[n++], reterr)) < 0)
            return r;
    if (n == 0)
        return berth_error_set(reterr, -EINVAL, "no source address in \"%s\"", text ? text : "");
    *ret = TAKE_PTR(v);
    *ret_n = n;
    return 0;
}

int probe_tcp_socket(const struct probe_addr *to, const struct probe_addr *from, int *ret_fd,
                     struct berth_error *reterr)
{
    _cleanup_close_ int fd = socket(to->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;

    if (fd < 0)
        return berth_error_set(reterr, -errno, "socket: %s", strerror(errno));
    /* Single bytes go out as they are written (hold-slow, trickle-handshake). */
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
        return berth_error_set(reterr, -errno, "TCP_NODELAY: %s", strerror(errno));
    if (from) {
        /* The port is chosen at connect(2), so many holders from one
         * source address do not run out of ports at bind(2). */
        if (setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one)) < 0 && errno != ENOPROTOOPT)
            return berth_error_set(reterr, -errno, "IP_BIND_ADDRESS_NO_PORT: %s", strerror(errno));
        if (bind(fd, (const struct sockaddr *)&from->ss, from->len) < 0)
            return berth_error_set(reterr, -errno, "binding the source address %s: %s", from->host, strerror(errno));
    }
    *ret_fd = TAKE_FD(fd);
    return 0;
}

int probe_tcp_connect(int fd, const struct probe_addr *to, struct berth_error *reterr)
{
    if (connect(fd, (const struct sockaddr *)&to->ss, to->len) < 0 && errno != EINPROGRESS)
        return berth_error_set(reterr, -errno, "connecting to %s: %s", to->host, strerror(errno));
    return 0;
}

int probe_tcp_connected(int fd)
{
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        return -errno;
    return err ? -err : 0;
}

int probe_ms_until(int64_t deadline_ns)
{
    int64_t now, left;

    if (berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 || now >= deadline_ns)
        return 0;
    left = (deadline_ns - now + 999999) / 1000000;
    return left > INT32_MAX ? INT32_MAX : (int)left;
}

double probe_seconds_since(int64_t start_ns)
{
    int64_t now;

    if (berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 || now < start_ns)
        return 0;
    return (double)(now - start_ns) / 1e9;
}

int probe_wait(int fd, short events, int64_t deadline_ns)
{
    struct pollfd p = {.fd = fd, .events = events};
    int r;

    for (;;) {
        r = poll(&p, 1, probe_ms_until(deadline_ns));
        if (r >= 0)
            return r > 0 ? 1 : 0;
        if (errno != EINTR)
            return -errno;
    }
}

const struct probe_addr *probe_target_source(const struct probe_target *t, size_t i)
{
    return t->n_sources ? &t->sources[i % t->n_sources] : NULL;
}

int probe_target_connect(const struct probe_target *t, size_t i, int64_t deadline_ns, int *ret_fd,
                         struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r;

    if ((r = probe_tcp_socket(&t->to, probe_target_source(t, i), &fd, reterr)) < 0 ||
        (r = probe_tcp_connect(fd, &t->to, reterr)) < 0)
        return r;
    r = probe_wait(fd, POLLOUT, deadline_ns);
    if (r < 0)
        return berth_error_set(reterr, r, "poll: %s", strerror(-r));
    if (r == 0)
        return berth_error_set(reterr, -ETIMEDOUT, "connecting to %s: no connection before the deadline", t->to.host);
    if ((r = probe_tcp_connected(fd)) < 0)
        return berth_error_set(reterr, r, "connecting to %s: %s", t->to.host, strerror(-r));
    *ret_fd = TAKE_FD(fd);
    return 0;
}

int probe_tls_context(const char *ca, const char *cert, const char *key, SSL_CTX **ret, struct berth_error *reterr)
{
    _cleanup_(SSL_CTX_freep) SSL_CTX *ctx = NULL;

    if (!ca || (cert && !key) || (!cert && key))
        return berth_error_set(reterr, -EINVAL, "a CA file is needed, and a client certificate goes with its key");
    ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx)
        return berth_openssl_error(reterr, -ENOMEM, "creating the TLS context");
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1)
        return berth_openssl_error(reterr, -EPROTO, "limiting the TLS context to TLS 1.3");
    /* A TCP end of stream without close_notify is the server closing too. */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
        return berth_openssl_error(reterr, -EBADMSG, "loading the CA file");
    if (SSL_CTX_set_alpn_protos(ctx, alpn_http11, sizeof(alpn_http11)) != 0) /* 0 is success here */
        return berth_openssl_error(reterr, -ENOMEM, "setting ALPN");
    if (cert) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
            return berth_openssl_error(reterr, -EBADMSG, "loading the client certificate");
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
            return berth_openssl_error(reterr, -EBADMSG, "loading the client key");
        if (SSL_CTX_check_private_key(ctx) != 1)
            return berth_openssl_error(reterr, -EBADMSG, "the client key does not match its certificate");
    }
    *ret = TAKE_PTR(ctx);
    return 0;
}

int probe_tls_new(SSL_CTX *ctx, int fd, const char *host, SSL **ret, struct berth_error *reterr)
{
    _cleanup_(SSL_freep) SSL *ssl = SSL_new(ctx);

    if (!ssl || SSL_set_fd(ssl, fd) != 1)
        return berth_openssl_error(reterr, -ENOMEM, "creating a TLS connection");
    if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1)
        return berth_openssl_error(reterr, -EINVAL, "setting the server address to verify");
    SSL_set_connect_state(ssl);
    *ret = TAKE_PTR(ssl);
    return 0;
}

int probe_tls_result(SSL *ssl, int r, short *ret_events, struct berth_error *reterr)
{
    int saved = errno, e = SSL_get_error(ssl, r), reason;
    unsigned long err;

    switch (e) {
    case SSL_ERROR_NONE: return r;
    case SSL_ERROR_WANT_READ: *ret_events = POLLIN; return -EAGAIN;
    case SSL_ERROR_WANT_WRITE: *ret_events = POLLOUT; return -EAGAIN;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        berth_error_set(reterr, -ECONNRESET, "the server ended the connection (close_notify or end of stream)");
        return 0;
    case SSL_ERROR_SYSCALL:
        ERR_clear_error();
        if (saved == 0 || saved == ECONNRESET || saved == EPIPE) {
            berth_error_set(reterr, -ECONNRESET, "the server ended the connection (%s)",
                            saved ? strerror(saved) : "end of stream");
            return 0;
        }
        return berth_error_set(reterr, -saved, "TLS I/O: %s", strerror(saved));
    case SSL_ERROR_SSL:
        if (SSL_get_verify_result(ssl) != X509_V_OK) {
            ERR_clear_error();
            return berth_error_set(reterr, -EKEYREJECTED, "the server certificate does not verify: %s",
                                   X509_verify_cert_error_string(SSL_get_verify_result(ssl)));
        }
        err = ERR_peek_error();
        reason = ERR_GET_REASON(err);
        /* Reasons from SSL_AD_REASON_OFFSET on are alerts the peer sent. */
        if (ERR_GET_LIB(err) == ERR_LIB_SSL && reason >= SSL_AD_REASON_OFFSET) {
            berth_openssl_error(reterr, -ECONNRESET, "the server ended the connection with an alert");
            return 0;
        }
        return berth_openssl_error(reterr, -EPROTO, "TLS");
    default: return berth_openssl_error(reterr, -EPROTO, "TLS");
    }
}

/* Wait for @events of @ssl's socket until @deadline_ns: 0 ready, -ETIMEDOUT, or poll's error. */
static int wait_ssl(SSL *ssl, short events, int64_t deadline_ns, const char *what, struct berth_error *reterr)
{
    int r = probe_wait(SSL_get_fd(ssl), events, deadline_ns);

    if (r < 0)
        return berth_error_set(reterr, r, "poll: %s", strerror(-r));
    if (r == 0)
        return berth_error_set(reterr, -ETIMEDOUT, "%s: no progress before the deadline", what);
    return 0;
}

int probe_tls_handshake(SSL *ssl, int64_t deadline_ns, struct berth_error *reterr)
{
    short events = 0;
    int r;

    for (;;) {
        r = probe_tls_result(ssl, SSL_connect(ssl), &events, reterr);
        if (r > 0)
            return 0;
        if (r == 0)
            return -ECONNRESET; /* @reterr says how */
        if (r != -EAGAIN)
            return r;
        if ((r = wait_ssl(ssl, events, deadline_ns, "the TLS handshake", reterr)) < 0)
            return r;
    }
}

int probe_tls_write(SSL *ssl, const void *data, size_t len, int64_t deadline_ns, struct berth_error *reterr)
{
    const char *p = data;
    short events = 0;
    size_t off = 0;
    int r;

    while (off < len) {
        int chunk = len - off > INT_MAX ? INT_MAX : (int)(len - off);
        r = probe_tls_result(ssl, SSL_write(ssl, p + off, chunk), &events, reterr);
        if (r > 0) {
            off += (size_t)r;
            continue;
        }
        if (r == 0)
            return -EPIPE;
        if (r != -EAGAIN)
            return r;
        if ((r = wait_ssl(ssl, events, deadline_ns, "writing", reterr)) < 0)
            return r;
    }
    return 0;
}

ssize_t probe_tls_read(SSL *ssl, void *buf, size_t size, int64_t deadline_ns, struct berth_error *reterr)
{
    int n = size > INT_MAX ? INT_MAX : (int)size;
    short events = 0;
    int r;

    for (;;) {
        r = probe_tls_result(ssl, SSL_read(ssl, buf, n), &events, reterr);
        if (r >= 0)
            return r;
        if (r != -EAGAIN)
            return r;
        if ((r = wait_ssl(ssl, events, deadline_ns, "reading", reterr)) < 0)
            return r;
    }
}
