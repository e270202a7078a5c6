/* SPDX-License-Identifier: MIT */
/*
 * refusals.h -- connections berthd closed without serving them, counted and
 * logged as one summary line per interval.
 *
 * A flood of refused connections must not become a flood of log lines: each
 * refusal is counted under its reason, and at most once per
 * http.refusal_log_interval_ns one line says what was refused since the last
 * one, e.g. "closed connections without serving them: 392 evicted
 * unauthenticated, 16 no TLS handshake within http.handshake_timeout_ns
 * (latest from 127.0.0.2)".  The totals since the start stay readable for
 * /metrics.  Not thread-safe.
 */
#ifndef BERTHD_REFUSALS_H
#define BERTHD_REFUSALS_H

#include <stdint.h>

#include <event2/event.h>

#include "buf.h"
#include "log.h"
#include "slots.h"

/** enum berthd_refusal - why a connection was closed without being served. */
enum berthd_refusal {
    BERTHD_REFUSED_EVICTED,       /**< made room for a newer unauthenticated connection */
    BERTHD_REFUSED_HANDSHAKE,     /**< no TLS handshake within http.handshake_timeout_ns */
    BERTHD_REFUSED_TLS,           /**< the TLS handshake failed (no or a bad certificate, ...) */
    BERTHD_REFUSED_UNLISTED,      /**< the certificate is not in the host policy */
    BERTHD_REFUSED_PRINCIPAL_CAP, /**< the certificate holds http.max_per_principal connections */
    BERTHD_REFUSED_HEADER,        /**< no complete header block within http.header_timeout_ns */
    BERTHD_REFUSED_INACTIVE,      /**< nothing arrived mid-request for http.inactivity_timeout_ns */
    BERTHD_REFUSED_REQUEST,       /**< no complete request within http.request_timeout_ns */
    BERTHD_REFUSED_IDLE,          /**< no new request within http.idle_timeout_ns */
    BERTHD_REFUSED_COUNT
};

/** struct berthd_refusals - counters; see berthd_refusals_init(). */
struct berthd_refusals {
    uint64_t pending[BERTHD_REFUSED_COUNT]; /* since the last summary line */
    uint64_t total[BERTHD_REFUSED_COUNT];   /* since berthd started */
    uint8_t last_source[BERTHD_SOURCE_LEN]; /* of the latest refusal, for the summary */
    struct event *timer;
    int64_t interval_ns;
    const struct berth_logger *logger;
};

/**
 * berthd_refusals_init() - prepare @r to log through @logger at most once per
 * @interval_ns (nanoseconds) on @base.
 * Return: 0; -ENOMEM.
 */
int berthd_refusals_init(struct berthd_refusals *r, struct event_base *base, int64_t interval_ns,
                         const struct berth_logger *logger);

/** berthd_refusals_count() - count one refusal of a connection from @source. */
void berthd_refusals_count(struct berthd_refusals *r, enum berthd_refusal why,
                           const uint8_t source[BERTHD_SOURCE_LEN]);

/** berthd_refusals_flush() - log the summary now if anything is pending (at shutdown). */
void berthd_refusals_flush(struct berthd_refusals *r);

/** berthd_refusals_name() - the metric label of @why ("evicted", "handshake_timeout", ...). */
const char *berthd_refusals_name(enum berthd_refusal why);

/**
 * berthd_refusals_render() - append the Prometheus text exposition of the
 * totals to @out: berth_http_refused_connections_total{reason="..."} per
 * reason, and the gauge berth_http_unauthenticated_connections
 * (@unauthenticated).
 * Return: 0; -EFBIG or -ENOMEM from @out.
 */
int berthd_refusals_render(const struct berthd_refusals *r, size_t unauthenticated, struct berth_buf *out);

/** berthd_refusals_clear() - flush and release the timer; accepts a zeroed @r. */
void berthd_refusals_clear(struct berthd_refusals *r);

#endif
