/* SPDX-License-Identifier: MIT */
/*
 * metrics.h -- berthd's counters and histograms, rendered in the Prometheus
 * text exposition format (version 0.0.4).  Updated and read on the event
 * loop thread only.
 */
#ifndef BERTHD_METRICS_H
#define BERTHD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker.h"
#include "buf.h"
#include "jobstore.h"

#define BERTHD_HIST_BUCKETS 14

/** A histogram of durations or sizes with fixed upper bounds. */
struct berthd_histogram {
    const double *bounds; /* BERTHD_HIST_BUCKETS upper bounds, increasing */
    uint64_t counts[BERTHD_HIST_BUCKETS + 1];
    uint64_t total;
    double sum;
};

/** What berthd counts. */
struct berthd_metrics {
    uint64_t http_by_class[6]; /* 1xx..5xx by status / 100; [0] other */
    uint64_t refused_busy, refused_full, refused_storage_full, refused_denied, refused_malformed, refused_conflict,
        refused_too_large, refused_other;
    struct berthd_histogram request_seconds;
    struct berthd_histogram commit_seconds;
    struct berthd_histogram batch_size;
};

/** berthd_metrics_init() - zero @m and set the bucket bounds. */
void berthd_metrics_init(struct berthd_metrics *m);

/** berthd_histogram_observe() - add one observation @v (seconds or a count). */
void berthd_histogram_observe(struct berthd_histogram *h, double v);

/** berthd_metrics_count_reply() - count a reply with @status and, for a refused submission, its @error code. */
void berthd_metrics_count_reply(struct berthd_metrics *m, int status, const char *error, double seconds,
                                bool submission);

/**
 * berthd_metrics_render() - append the exposition text to @out.
 * @jobs: jobs per state; @policy_reloads: the policy source's count;
 * @connections: currently open; @health: berth_broker_health(), rendered as
 * berth_storage_degraded (gauge, 0 or 1), berth_storage_degraded_seconds
 * (gauge: how long, 0 when not), berth_storage_space_failures_total
 * (counter: writes that failed for space), berth_results_unrecorded (gauge:
 * signed results waiting in memory) and berth_journal_reserve_bytes (gauge:
 * the space reserve on disk now, 0 while released or absent).
 * Return: 0 or -ENOMEM.
 */
int berthd_metrics_render(const struct berthd_metrics *m, const int64_t jobs[BERTH_JOB_STATE_COUNT],
                          uint64_t policy_reloads, unsigned connections, const struct berth_broker_health *health,
                          struct berth_buf *out);

#endif
