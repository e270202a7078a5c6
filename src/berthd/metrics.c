/* SPDX-License-Identifier: MIT */
/* metrics.c -- Prometheus text exposition of berthd's counters; see metrics.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "macro.h"
#include "metrics.h"

static const double latency_bounds[BERTHD_HIST_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
};
static const double size_bounds[BERTHD_HIST_BUCKETS] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192};

void berthd_metrics_init(struct berthd_metrics *m)
{
    memset(m, 0, sizeof(*m));
    m->request_seconds.bounds = latency_bounds;
    m->commit_seconds.bounds = latency_bounds;
    m->batch_size.bounds = size_bounds;
}

void berthd_histogram_observe(struct berthd_histogram *h, double v)
{
    size_t i;

    for (i = 0; i < BERTHD_HIST_BUCKETS && v > h->bounds[i]; i++)
        ;
    h->counts[i]++;
    h->total++;
    h->sum += v;
}

void berthd_metrics_count_reply(struct berthd_metrics *m, int status, const char *error, double seconds,
                                bool submission)
{
    unsigned cls = status >= 100 && status < 600 ? (unsigned)status / 100 : 0;

    m->http_by_class[cls]++;
    berthd_histogram_observe(&m->request_seconds, seconds);
    if (!submission || !error)
        return;
    if (streq(error, "busy"))
        m->refused_busy++;
    else if (streq(error, "full"))
        m->refused_full++;
    else if (streq(error, "storage_full"))
        m->refused_storage_full++;
    else if (streq(error, "denied") || streq(error, "override_refused"))
        m->refused_denied++;
    else if (streq(error, "malformed"))
        m->refused_malformed++;
    else if (streq(error, "conflict"))
        m->refused_conflict++;
    else if (streq(error, "too_large"))
        m->refused_too_large++;
    else
        m->refused_other++;
}

static int put(struct berth_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put(struct berth_buf *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(line))
        return -EINVAL;
    return berth_buf_append(out, line, (size_t)n);
}

static int histogram(struct berth_buf *out, const char *name, const char *help, const struct berthd_histogram *h)
{
    uint64_t cum = 0;
    size_t i;
    int r;

    if ((r = put(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)) < 0)
        return r;
    for (i = 0; i < BERTHD_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        if ((r = put(out, "%s_bucket{le=\"%g\"} %llu\n", name, h->bounds[i], (unsigned long long)cum)) < 0)
            return r;
    }
    return put(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, (unsigned long long)h->total,
               name, h->sum, name, (unsigned long long)h->total);
}

/* The storage lines of @h (see berthd_metrics_render()). */
static int storage(struct berth_buf *out, const struct berth_broker_health *h)
{
    int64_t now = 0, since = 0;
    int r;

    if (h->degraded && h->since_ns > 0 && berth_now_ns(CLOCK_REALTIME, &now, NULL) == 0 && now > h->since_ns)
        since = (now - h->since_ns) / BERTH_NS_PER_SEC;
    r = put(out,
            "# HELP berth_storage_degraded 1 while the state filesystem is out of space (reads and cancellations "
            "only).\n# TYPE berth_storage_degraded gauge\nberth_storage_degraded %d\n",
            h->degraded ? 1 : 0);
    if (r == 0)
        r = put(out,
                "# HELP berth_storage_degraded_seconds How long storage has been degraded (0 when it is not).\n"
                "# TYPE berth_storage_degraded_seconds gauge\nberth_storage_degraded_seconds %lld\n",
                (long long)since);
    if (r == 0)
        r = put(out,
                "# HELP berth_storage_space_failures_total Writes (journal, staging) that failed for space.\n"
                "# TYPE berth_storage_space_failures_total counter\nberth_storage_space_failures_total %llu\n",
                (unsigned long long)h->space_failures);
    if (r == 0)
        r = put(out,
                "# HELP berth_results_unrecorded Finished jobs whose signed result waits in memory for space.\n"
                "# TYPE berth_results_unrecorded gauge\nberth_results_unrecorded %llu\n",
                (unsigned long long)h->unrecorded);
    if (r == 0)
        r = put(out,
                "# HELP berth_journal_reserve_bytes The journal's space reserve on disk now (0: released or none).\n"
                "# TYPE berth_journal_reserve_bytes gauge\nberth_journal_reserve_bytes %llu\n",
                (unsigned long long)(h->reserve_held ? h->reserve_bytes : 0));
    return r;
}

/* The worker's activity lines of @h: reconcile passes and job notifications (broker.h, "Events"). */
static int activity(struct berth_buf *out, const struct berth_broker_health *h)
{
    const struct {
        const char *name, *help;
        uint64_t n;
    } counters[] = {
        {"berth_reconcile_passes_total", "Reconcile passes run (the timer's safety net, and startup).",
         h->reconcile_passes},
        {"berth_job_events_total", "Job notifications received (plugins' job_changed, cancellations).", h->job_events},
        {"berth_job_events_lost_total", "Job notifications dropped for a full queue.", h->job_events_lost},
    };
    int r = 0;

    for (size_t i = 0; r == 0 && i < ELEMENTSOF(counters); i++)
        r = put(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", counters[i].name, counters[i].help,
                counters[i].name, counters[i].name, (unsigned long long)counters[i].n);
    return r;
}

/* The warm slot lines of @h (docs/warm-slots.md): slots per target, hits,
 * cold starts for want of a slot, quarantines, provisioning and refill. */
static int warm(struct berth_buf *out, const struct berth_broker_health *h)
{
    const struct {
        const char *name, *help;
        uint64_t n;
    } counters[] = {
        {"berth_warm_hits_total", "Jobs started in a warm slot.", h->warm_hits},
        {"berth_warm_misses_total", "Jobs of a warm target's shape started cold for want of a ready slot.",
         h->warm_misses},
        {"berth_warm_quarantined_total", "Warm slots destroyed unused because their key differed at claim.",
         h->warm_quarantined},
        {"berth_warm_provisioned_total", "Warm slots provisioned.", h->warm_provisioned},
        {"berth_warm_provision_failures_total", "Warm slot provisionings that failed.", h->warm_provision_failed},
        {"berth_warm_lost_total", "Ready warm slots that died or retired unused and were destroyed.", h->warm_lost},
    };
    size_t i;
    int r = put(out, "# HELP berth_warm_slots Warm slots per pool and image, by state.\n"
                     "# TYPE berth_warm_slots gauge\n");

    for (i = 0; r == 0 && i < h->n_warm; i++)
        r = put(out,
                "berth_warm_slots{pool=\"%s\",image=\"%s\",state=\"ready\"} %llu\n"
                "berth_warm_slots{pool=\"%s\",image=\"%s\",state=\"provisioning\"} %llu\n"
                "berth_warm_slots{pool=\"%s\",image=\"%s\",state=\"claiming\"} %llu\n",
                h->warm[i].pool, h->warm[i].image, (unsigned long long)h->warm[i].ready, h->warm[i].pool,
                h->warm[i].image, (unsigned long long)h->warm[i].provisioning, h->warm[i].pool, h->warm[i].image,
                (unsigned long long)h->warm[i].claiming);
    if (r == 0 && h->n_warm)
        r = put(out, "# HELP berth_warm_target_events_total Per warm target: jobs started in one of its slots "
                     "(hit), jobs of its shape started cold for want of a ready slot (miss), its slots "
                     "quarantined (their key differed at a claim, or the pool changed).\n"
                     "# TYPE berth_warm_target_events_total counter\n");
    for (i = 0; r == 0 && i < h->n_warm; i++)
        r = put(out,
                "berth_warm_target_events_total{pool=\"%s\",image=\"%s\",event=\"hit\"} %llu\n"
                "berth_warm_target_events_total{pool=\"%s\",image=\"%s\",event=\"miss\"} %llu\n"
                "berth_warm_target_events_total{pool=\"%s\",image=\"%s\",event=\"quarantined\"} %llu\n",
                h->warm[i].pool, h->warm[i].image, (unsigned long long)h->warm[i].hits, h->warm[i].pool,
                h->warm[i].image, (unsigned long long)h->warm[i].misses, h->warm[i].pool, h->warm[i].image,
                (unsigned long long)h->warm[i].quarantined);
    for (i = 0; r == 0 && i < ELEMENTSOF(counters); i++)
        r = put(out, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", counters[i].name, counters[i].help,
                counters[i].name, counters[i].name, (unsigned long long)counters[i].n);
    if (r == 0)
        r = put(out,
                "# HELP berth_warm_provision_seconds The last warm slot's provisioning time.\n"
                "# TYPE berth_warm_provision_seconds gauge\nberth_warm_provision_seconds %.6f\n"
                "# HELP berth_warm_refill_seconds From a claim to the next warm slot ready, the last time.\n"
                "# TYPE berth_warm_refill_seconds gauge\nberth_warm_refill_seconds %.6f\n",
                (double)h->warm_provision_ns_last / 1e9, (double)h->warm_refill_ns_last / 1e9);
    return r;
}

int berthd_metrics_render(const struct berthd_metrics *m, const int64_t jobs[BERTH_JOB_STATE_COUNT],
                          uint64_t policy_reloads, unsigned connections, const struct berth_broker_health *health,
                          struct berth_buf *out)
{
    static const char *const classes[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    const struct {
        const char *reason;
        uint64_t n;
    } refused[] = {
        {"busy", m->refused_busy},
        {"full", m->refused_full},
        {"storage_full", m->refused_storage_full},
        {"denied", m->refused_denied},
        {"malformed", m->refused_malformed},
        {"conflict", m->refused_conflict},
        {"too_large", m->refused_too_large},
        {"other", m->refused_other},
    };
    size_t i;
    int r = 0;

    r = put(out, "# HELP berth_jobs Jobs in the journal by state.\n# TYPE berth_jobs gauge\n");
    for (i = 0; r == 0 && i < BERTH_JOB_STATE_COUNT; i++)
        r = put(out, "berth_jobs{state=\"%s\"} %lld\n", berth_job_state_names[i], (long long)jobs[i]);
    if (r == 0)
        r = put(out, "# HELP berth_admissions_refused_total Job submissions refused, by reason.\n"
                     "# TYPE berth_admissions_refused_total counter\n");
    for (i = 0; r == 0 && i < ELEMENTSOF(refused); i++)
        r = put(out, "berth_admissions_refused_total{reason=\"%s\"} %llu\n", refused[i].reason,
                (unsigned long long)refused[i].n);
    if (r == 0)
        r = put(out, "# HELP berth_http_requests_total HTTP replies by status class.\n"
                     "# TYPE berth_http_requests_total counter\n");
    for (i = 0; r == 0 && i < ELEMENTSOF(classes); i++)
        r = put(out, "berth_http_requests_total{code=\"%s\"} %llu\n", classes[i],
                (unsigned long long)m->http_by_class[i]);
    if (r == 0)
        r = histogram(out, "berth_http_request_duration_seconds",
                      "Time from a complete request to its reply being queued.", &m->request_seconds);
    if (r == 0)
        r = histogram(out, "berth_journal_commit_duration_seconds",
                      "Duration of one submission batch's journal transaction, commit and fsync included.",
                      &m->commit_seconds);
    if (r == 0)
        r = histogram(out, "berth_submission_batch_size", "Submissions sharing one journal commit.", &m->batch_size);
    if (r == 0)
        r = put(out,
                "# HELP berth_policy_reloads_total Times the host policy file was read.\n"
                "# TYPE berth_policy_reloads_total counter\nberth_policy_reloads_total %llu\n"
                "# HELP berth_http_connections Open client connections.\n"
                "# TYPE berth_http_connections gauge\nberth_http_connections %u\n",
                (unsigned long long)policy_reloads, connections);
    if (r == 0)
        r = storage(out, health);
    if (r == 0)
        r = activity(out, health);
    if (r == 0)
        r = warm(out, health);
    return r;
}
