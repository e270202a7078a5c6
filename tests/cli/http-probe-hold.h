/* SPDX-License-Identifier: MIT */
/*
 * http-probe-hold.h -- http-probe's connections that hold a server's slots
 * without ever completing a request: idle TCP, one request byte at a time
 * after the TLS handshake (slowloris), and the TLS handshake itself one
 * byte at a time.  Each runs many connections from one thread with poll(2)
 * and writes its counts to @out, one "NAME VALUE" line each (the formats are
 * in http-probe --help and below).
 *
 * Seconds are whole seconds of CLOCK_MONOTONIC, intervals milliseconds.
 * Return: 0, also when the server closed or refused every connection (that
 * is what is counted); a negative errno when the probe itself failed (no
 * socket, a source address that cannot be bound, a server certificate
 * that does not verify, out of memory), with @reterr saying why.
 * Not thread-safe per call; no global state.
 */
#ifndef BERTH_HTTP_PROBE_HOLD_H
#define BERTH_HTTP_PROBE_HOLD_H

#include <stdio.h>

#include "http-probe-net.h"

/**
 * probe_hold_tcp() - @count plain TCP connections to @t that send nothing,
 * for @seconds; a connection the server closes (or that fails to connect)
 * is made again @reconnect_ms later.  Writes:
 *
 *   connects N   connections established (the kernel's handshake done)
 *   closes N     established connections the server closed or reset
 *   failed N     connection attempts that failed (refused, reset, timed out)
 *   open N       connections still established at the end
 */
int probe_hold_tcp(const struct probe_target *t, long count, long seconds, long reconnect_ms, FILE *out,
                   struct berth_error *reterr);

/**
 * probe_hold_slow() - @count TLS connections to @t (@t->tls set), at most
 * PROBE_SLOW_HANDSHAKES handshaking at a time, each of which, once its
 * handshake is done, sends the request head "GET /v1/health HTTP/1.1",
 * "Host: HOST", "X-Slow: aaa..." one byte every @interval_ms and never
 * finishes it (the last field grows until the connection ends).  Anything
 * the server sends is read and dropped.  Ends when every connection is
 * closed or after @seconds.  Writes:
 *
 *   connections N     connections started
 *   handshakes N      TLS handshakes completed
 *   closed N          connections the server closed (before or after the handshake)
 *   open N            connections still open at the end
 *   first_close_s S   seconds from a connection's start to the earliest close, "-" if none
 *   last_close_s S    ... to the latest
 */
int probe_hold_slow(const struct probe_target *t, long count, long seconds, long interval_ms, FILE *out,
                    struct berth_error *reterr);

/** Handshakes hold-slow has in flight at most, so that they start as a trickle, not a burst. */
#define PROBE_SLOW_HANDSHAKES 4

/**
 * probe_trickle_handshake() - one TLS connection to @t whose handshake
 * bytes (the ClientHello, then whatever follows) go out one every
 * @interval_ms, for at most @seconds.  Writes:
 *
 *   hello_bytes N     bytes of the ClientHello
 *   sent N            bytes sent before the end
 *   closed S          the server closed the connection S seconds after it was established
 *   handshake S       or: the handshake completed after S seconds
 *   open              or: neither happened within @seconds
 */
int probe_trickle_handshake(const struct probe_target *t, long seconds, long interval_ms, FILE *out,
                            struct berth_error *reterr);

#endif /* BERTH_HTTP_PROBE_HOLD_H */
