/* SPDX-License-Identifier: MIT */
/*
 * fence.h -- berthd fences and drains the units of its contained backends
 * that no live job accounts for (docs/containment.md, "Recovery at startup and on a timer"): once at
 * startup, before admission opens, and then every
 * containment_scan_interval_ns (berthd.json(5)) on a thread of its own.
 * The startup scan runs once the broker has recovered the journal (so the
 * states it reads are the recovered ones) and before the worker thread or
 * the listener starts.
 *
 * For each runtime backend bound to a containment whose plugin lists its
 * units (ABI 1.3, units), every unit listed is looked up by its job id (a
 * runtime names a job's unit by the job's run id):
 *
 *   - no job (a unit started by hand, or by another journal), or a
 *     terminal one (the job ended; what is left of it must not run on):
 *     destroy() fences it (a persistent mask) and drains its cgroup, unless
 *     it is masked and empty already;
 *   - a job that is not terminal: left to the runtime, which owns it;
 *   - a unit whose name carries no job id berth makes (job_id null) cannot
 *     be addressed through the ops table: it is reported (by the startup
 *     scan), for the operator to stop and mask by hand.
 *
 * A job's record is written before anything of it starts (journal first),
 * so a unit of a job being started is never taken for one without a job.
 * Every unit of the pattern on the host is taken as this broker's: run one
 * berthd per service manager.  A unit that cannot be proven gone is logged
 * at error level and tried again by the next scan.
 */
#ifndef BERTHD_FENCE_H
#define BERTHD_FENCE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend-load.h"
#include "broker.h"
#include "jobstore.h"
#include "log.h"

/**
 * struct berthd_fence_counts - what one scan did, over every backend:
 * @fenced units destroyed with proof, @failed units destroy() could not
 * prove gone (or listings that failed), @unaddressable units without a job
 * id, @kept units of jobs that are not terminal, @already masked and empty
 * units.
 */
struct berthd_fence_counts {
    size_t fenced, failed, unaddressable, kept, already;
};

/**
 * berthd_job_lookup_fn - the state of the job with run id @run_id into
 * *@ret_state: 0, -ENOENT when there is no such job, or another negative
 * errno: -EIO or -ENOMEM stop the scan (it returns the error), any other
 * counts the unit as failed and the scan goes on.
 */
typedef int berthd_job_lookup_fn(void *userdata, const char *run_id, enum berth_job_state *ret_state,
                                 struct berth_error *reterr);

/**
 * berthd_fence_units() - one scan as above, for the @n backends in
 * @runtimes (names from their host tables); backends without a
 * containment, or whose containment has no units, are skipped, and so is
 * a backend whose containment identity (plugin file and config) equals an
 * earlier backend's: the same units would be listed twice.  Jobs are
 * looked up with @lookup(@userdata, ...).  @cancel (optional) is read
 * before each backend and each unit: once true, the scan stops there and
 * returns -ECANCELED (a unit being drained is finished first).  Logs each unit it acts on (or
 * cannot) to @log, and a summary when it acted on, or failed on, any;
 * units without a job id are warned about only when @startup (the scan
 * before admission), at debug level by the periodic scans;
 * @ret (optional) receives the counts.  Thread-safe against the backends'
 * own calls (the containment binding serializes them).
 * Return: 0, also when units were left unproven or their lookups failed
 * (they are counted and logged); -ECANCELED; -EIO or -ENOMEM from @lookup.
 */
int berthd_fence_units(const struct berthd_backend_instance *runtimes, size_t n, berthd_job_lookup_fn *lookup,
                       void *userdata, bool startup, const atomic_bool *cancel, const struct berth_logger *log,
                       struct berthd_fence_counts *ret);

/** berthd_broker_lookup() - a berthd_job_lookup_fn over a broker (@userdata), berth_broker_run_state(). */
int berthd_broker_lookup(void *userdata, const char *run_id, enum berth_job_state *ret_state,
                         struct berth_error *reterr);

/**
 * struct berthd_fence_timer - the periodic scan's thread.  Fill @runtimes,
 * @n, @broker (jobs are looked up through berth_broker_run_state()), @log
 * and @interval_ns, then berthd_fence_timer_start(); the rest is private.
 */
struct berthd_fence_timer {
    const struct berthd_backend_instance *runtimes;
    size_t n;
    struct berth_broker *broker;
    const struct berth_logger *log;
    int64_t interval_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool started;
    atomic_bool stop;
};

/**
 * berthd_fence_timer_start() - start the thread when any of the backends
 * has a containment with units (otherwise nothing is started and this
 * returns 0).  The thread scans every @interval_ns nanoseconds (first one
 * interval after the start) until berthd_fence_timer_stop().
 * Return: 0, or the negative errno of pthread_create() or of the
 * condition's clock setup.
 */
int berthd_fence_timer_start(struct berthd_fence_timer *t, struct berth_error *reterr);

/**
 * berthd_fence_timer_stop() - stop the thread and wait for it (a scan in
 * progress stops before its next unit; a drain under way is finished
 * first, which takes up to the containment's drain timeout).  Accepts a timer that was never started; call once, before
 * the broker or the backends go away.
 */
void berthd_fence_timer_stop(struct berthd_fence_timer *t);

#endif
