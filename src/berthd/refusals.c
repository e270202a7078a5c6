/* SPDX-License-Identifier: MIT */
/* refusals.c -- refused connections, counted and summarised; see refusals.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "clock.h"
#include "macro.h"
#include "refusals.h"

static const struct {
    const char *name, *text;
} reasons[BERTHD_REFUSED_COUNT] = {
    [BERTHD_REFUSED_EVICTED] = {"evicted", "evicted unauthenticated"},
    [BERTHD_REFUSED_HANDSHAKE] = {"handshake_timeout", "no TLS handshake within http.handshake_timeout_ns"},
    [BERTHD_REFUSED_TLS] = {"tls_failed", "TLS handshake failed"},
    [BERTHD_REFUSED_UNLISTED] = {"unlisted_certificate", "certificate not in the host policy"},
    [BERTHD_REFUSED_PRINCIPAL_CAP] = {"principal_cap", "over http.max_per_principal"},
    [BERTHD_REFUSED_HEADER] = {"header_timeout", "no complete header block within http.header_timeout_ns"},
    [BERTHD_REFUSED_INACTIVE] = {"inactivity_timeout", "nothing received for http.inactivity_timeout_ns"},
    [BERTHD_REFUSED_REQUEST] = {"request_timeout", "no complete request within http.request_timeout_ns"},
    [BERTHD_REFUSED_IDLE] = {"idle_timeout", "no new request within http.idle_timeout_ns"},
};

const char *berthd_refusals_name(enum berthd_refusal why)
{
    return why < BERTHD_REFUSED_COUNT ? reasons[why].name : "unknown";
}

void berthd_refusals_flush(struct berthd_refusals *r)
{
    struct berth_buf line = BERTH_BUF_INIT(4096);
    char shown[64], part[160];
    bool any = false;
    size_t i;

    for (i = 0; i < BERTHD_REFUSED_COUNT; i++) {
        if (!r->pending[i])
            continue;
        snprintf(part, sizeof(part), "%s%" PRIu64 " %s", any ? ", " : "", r->pending[i], reasons[i].text);
        if (berth_buf_append(&line, part, strlen(part)) < 0)
            break;
        any = true;
        r->pending[i] = 0;
    }
    if (any) {
        berthd_slot_shown(r->last_source, shown, sizeof(shown));
        berth_logf(r->logger, BERTH_LOG_INFO, "closed connections without serving them: %s (latest from %s)",
                   line.data, shown);
    }
    berth_buf_free(&line);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    berthd_refusals_flush(arg);
}

int berthd_refusals_init(struct berthd_refusals *r, struct event_base *base, int64_t interval_ns,
                         const struct berth_logger *logger)
{
    memset(r, 0, sizeof(*r));
    r->interval_ns = interval_ns;
    r->logger = logger;
    r->timer = evtimer_new(base, timer_cb, r);
    return r->timer ? 0 : -ENOMEM;
}

void berthd_refusals_count(struct berthd_refusals *r, enum berthd_refusal why,
                           const uint8_t source[BERTHD_SOURCE_LEN])
{
    struct timeval tv = berth_timeval_of_ns(r->interval_ns);

    if (why >= BERTHD_REFUSED_COUNT)
        return;
    r->pending[why]++;
    r->total[why]++;
    if (source)
        memcpy(r->last_source, source, BERTHD_SOURCE_LEN);
    /* The first refusal of an interval starts it; the rest wait for its line. */
    if (r->timer && !evtimer_pending(r->timer, NULL))
        evtimer_add(r->timer, &tv);
}

int berthd_refusals_render(const struct berthd_refusals *r, size_t unauthenticated, struct berth_buf *out)
{
    static const char help[] = "# HELP berth_http_refused_connections_total Connections closed without being served.\n"
                               "# TYPE berth_http_refused_connections_total counter\n";
    char line[256];
    size_t i;
    int r2;

    if ((r2 = berth_buf_append(out, help, sizeof(help) - 1)) < 0)
        return r2;
    for (i = 0; i < BERTHD_REFUSED_COUNT; i++) {
        snprintf(line, sizeof(line), "berth_http_refused_connections_total{reason=\"%s\"} %" PRIu64 "\n",
                 reasons[i].name, r->total[i]);
        if ((r2 = berth_buf_append(out, line, strlen(line))) < 0)
            return r2;
    }
    snprintf(line, sizeof(line),
             "# HELP berth_http_unauthenticated_connections Connections before their handshake and policy check.\n"
             "# TYPE berth_http_unauthenticated_connections gauge\nberth_http_unauthenticated_connections %zu\n",
             unauthenticated);
    return berth_buf_append(out, line, strlen(line));
}

void berthd_refusals_clear(struct berthd_refusals *r)
{
    if (!r->timer)
        return;
    berthd_refusals_flush(r);
    event_free(r->timer);
    r->timer = NULL;
}
