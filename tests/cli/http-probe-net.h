/* SPDX-License-Identifier: MIT */
/*
 * http-probe-net.h -- sockets and TLS for http-probe, the test client of
 * berthd's front door (tests/cli/http-probe.c).
 *
 * Numeric addresses only (the tests talk to loopback listeners they
 * started), non-blocking sockets, TLS 1.3 client connections that verify
 * the server against a CA file and the connected IP address, and reads and
 * writes bounded by CLOCK_MONOTONIC deadlines (nanoseconds, as
 * berth_deadline_ns() makes them).
 *
 * "The server closed the connection" is a result here, not an error: a TLS
 * close_notify, a TCP end of stream, a TCP reset and a fatal alert from the
 * server all count as closed.  Errors are what the client itself did wrong
 * or could not do (a certificate file that does not load, a server
 * certificate that does not verify, a clock that cannot be read).
 *
 * Not thread-safe per object; no global state (OpenSSL's own aside).
 */
#ifndef BERTH_HTTP_PROBE_NET_H
#define BERTH_HTTP_PROBE_NET_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include <berth/cleanup.h>
#include <berth/error.h>

/** Characters of a numeric address as text, with brackets and port. */
#define PROBE_ADDR_TEXT_MAX 64

/*
 * struct probe_addr - one numeric IPv4 or IPv6 socket address.
 * @ss, @len: the address for bind(2) and connect(2).
 * @host:     the address without port or brackets ("127.0.0.1", "::1"),
 *            as the server certificate's IP SAN must name it.
 */
struct probe_addr {
    struct sockaddr_storage ss;
    socklen_t len;
    char host[PROBE_ADDR_TEXT_MAX];
};

/**
 * probe_addr_parse() - parse @text into *@ret.
 * @text:      "HOST:PORT" or "[HOST]:PORT" when @with_port, else "HOST"
 *             (port 0, for a source address); HOST is a numeric IPv4 or
 *             IPv6 address, PORT 1..65535 (names are never resolved).
 * Return: 0; -EINVAL (with @reterr saying why) for anything else, and *@ret
 * is unwritten.
 */
int probe_addr_parse(const char *text, bool with_port, struct probe_addr *ret, struct berth_error *reterr);

/**
 * probe_addr_list_parse() - parse a comma-separated list of source
 * addresses ("127.0.0.2,127.0.0.3") as probe_addr_parse() without port.
 * @ret:   receives a malloc'd array (free() it), at least one element.
 * @ret_n: receives its length.
 * Return: 0; -EINVAL for an empty list or a bad element; -ENOMEM.
 */
int probe_addr_list_parse(const char *text, struct probe_addr **ret, size_t *ret_n, struct berth_error *reterr);

/**
 * probe_tcp_socket() - a non-blocking TCP socket (TCP_NODELAY, close-on-exec)
 * of @to's address family, bound to @from first when @from is not NULL (its
 * port 0: the kernel picks one at connect time, IP_BIND_ADDRESS_NO_PORT).
 * @ret_fd: receives the socket; close it.
 * Return: 0; the negative errno of socket(2), setsockopt(2) or bind(2) (for
 * example -EADDRNOTAVAIL for a source that is no local address).
 */
int probe_tcp_socket(const struct probe_addr *to, const struct probe_addr *from, int *ret_fd,
                     struct berth_error *reterr);

/**
 * probe_tcp_connect() - start the connection of the socket @fd to @to.
 * Return: 0 when it is established or under way (see
 * probe_tcp_connected()); the negative errno of connect(2) otherwise (for
 * example -ECONNREFUSED, or -EADDRNOTAVAIL when no local port is left).
 */
int probe_tcp_connect(int fd, const struct probe_addr *to, struct berth_error *reterr);

/**
 * probe_tcp_connected() - after @fd polled writable: whether the connection
 * probe_tcp_connect() began is established.
 * Return: 0 when it is; the connection's error (SO_ERROR) as a negative
 * errno when it failed (-ECONNREFUSED, -ECONNRESET, -ETIMEDOUT, ...).
 */
int probe_tcp_connected(int fd);

/**
 * probe_wait() - poll(2) @fd for @events until CLOCK_MONOTONIC passes
 * @deadline_ns.
 * Return: 1 when @fd is ready (or has an error or hang-up to report), 0 when
 * the deadline passed first (also when the clock cannot be read), or the
 * negative errno of poll(2).
 */
int probe_wait(int fd, short events, int64_t deadline_ns);

/**
 * probe_ms_until() - milliseconds from now to @deadline_ns (CLOCK_MONOTONIC),
 * rounded up, 0 when it has passed or the clock cannot be read, at most
 * INT32_MAX: a poll(2) timeout.
 */
int probe_ms_until(int64_t deadline_ns);

/**
 * probe_seconds_since() - seconds on CLOCK_MONOTONIC since @start_ns, for
 * what the subcommands print; 0 when the clock cannot be read.
 */
double probe_seconds_since(int64_t start_ns);

/**
 * probe_tls_context() - a TLS 1.3-only client context that verifies the
 * server against the PEM certificates in @ca, offers ALPN "http/1.1", and,
 * when @cert is not NULL, presents the PEM chain @cert with the PEM private
 * key @key (unencrypted).
 * @ret: receives the context; SSL_CTX_free() it.
 * Return: 0; -EINVAL when @cert is given without @key; -EBADMSG when a file
 * does not load or the key does not match the certificate (with OpenSSL's
 * reason in @reterr); -ENOMEM.
 */
int probe_tls_context(const char *ca, const char *cert, const char *key, SSL_CTX **ret, struct berth_error *reterr);

/**
 * probe_tls_new() - a client SSL object on the connected socket @fd (which
 * stays owned by the caller) that checks the server certificate's IP
 * address SAN against @host (struct probe_addr's host).
 * @ret: receives it; SSL_free() it before closing @fd.
 * Return: 0; -ENOMEM.
 */
int probe_tls_new(SSL_CTX *ctx, int fd, const char *host, SSL **ret, struct berth_error *reterr);

/**
 * probe_tls_result() - what the return value @r of SSL_connect(),
 * SSL_read() or SSL_write() on non-blocking @ssl means.
 * @ret_events: on -EAGAIN, receives the poll(2) events to wait for.
 * Return: @r when it is > 0; 0 when the server closed the connection
 * (close_notify, end of stream, reset, a fatal alert it sent: @reterr says
 * which); -EAGAIN to try again once *@ret_events are ready;
 * -EKEYREJECTED when the server's certificate does not verify; -EPROTO for
 * any other TLS failure; another negative errno of the socket.  The OpenSSL
 * error queue is left empty.
 */
int probe_tls_result(SSL *ssl, int r, short *ret_events, struct berth_error *reterr);

/**
 * probe_tls_handshake() - complete the TLS handshake of @ssl before
 * @deadline_ns (CLOCK_MONOTONIC).
 * Return: 0; -ECONNRESET when the server closed the connection first (it
 * refused, or its limits did); -ETIMEDOUT; or an error of
 * probe_tls_result().
 */
int probe_tls_handshake(SSL *ssl, int64_t deadline_ns, struct berth_error *reterr);

/**
 * probe_tls_write() - write the @len bytes at @data (any bytes, NUL
 * included) to @ssl before @deadline_ns.
 * Return: 0; -EPIPE when the server closed the connection first (what was
 * written before may have been read by it); -ETIMEDOUT; or an error of
 * probe_tls_result().
 */
int probe_tls_write(SSL *ssl, const void *data, size_t len, int64_t deadline_ns, struct berth_error *reterr);

/**
 * probe_tls_read() - read at most @size bytes from @ssl into @buf, waiting
 * until @deadline_ns for the first.
 * Return: the count read (> 0); 0 when the server closed the connection;
 * -ETIMEDOUT when nothing arrived in time; or an error of
 * probe_tls_result().
 */
ssize_t probe_tls_read(SSL *ssl, void *buf, size_t size, int64_t deadline_ns, struct berth_error *reterr);

/*
 * struct probe_target - where a subcommand connects, and how.
 * @to:        the server.
 * @sources:   local addresses to bind, used in turn (connection i binds
 *             sources[i % n_sources]); NULL (and @n_sources 0) lets the kernel
 *             choose.
 * @tls:       the client context (probe_tls_context()); NULL for plain TCP.
 */
struct probe_target {
    struct probe_addr to;
    const struct probe_addr *sources;
    size_t n_sources;
    SSL_CTX *tls;
};

/** probe_target_source() - the address connection @i binds, or NULL. */
const struct probe_addr *probe_target_source(const struct probe_target *t, size_t i);

/**
 * probe_target_connect() - a TCP connection to @t->to from its source @i,
 * established before @deadline_ns (CLOCK_MONOTONIC), blocking until then.
 * @ret_fd: receives the non-blocking socket; close it.
 * Return: 0; -ETIMEDOUT; the connection's error (-ECONNREFUSED, ...); an
 * error of probe_tcp_socket().
 */
int probe_target_connect(const struct probe_target *t, size_t i, int64_t deadline_ns, int *ret_fd,
                         struct berth_error *reterr);

/** SSL_free() on scope exit. */
BERTH_DEFINE_CLEANUP(SSL *, SSL_free)
/** SSL_CTX_free() on scope exit. */
BERTH_DEFINE_CLEANUP(SSL_CTX *, SSL_CTX_free)

#endif /* BERTH_HTTP_PROBE_NET_H */
