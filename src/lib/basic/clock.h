/* SPDX-License-Identifier: MIT */
/*
 * clock.h -- the time in nanoseconds: berth's one reader of the clocks.
 *
 * Two clocks are used.  CLOCK_REALTIME, nanoseconds since the Unix epoch,
 * for every time that is recorded or compared with a recorded one (receipts,
 * results, audit events, journal rows, policy and qualification validity,
 * job deadlines).  CLOCK_MONOTONIC, nanoseconds since an arbitrary start,
 * for timeouts and durations that must not jump with the wall clock.
 *
 * The rule for a clock that cannot be read is here, not at the callers: a
 * reading fails like any berth call (a caller that records a time fails,
 * with a reason), and a deadline on an unreadable clock has passed (a
 * bounded wait ends rather than running on without its bound).  On Linux, clock_gettime(2)
 * does not fail for these two clocks; the rule exists so that no caller reads
 * an unset struct timespec if it ever does.
 *
 * Pure and thread-safe.
 */
#ifndef BERTH_CLOCK_H
#define BERTH_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>
#include <time.h>

#include <berth/error.h>

/** Nanoseconds per second. */
#define BERTH_NS_PER_SEC 1000000000LL

/**
 * berth_now_ns() - read @clock (CLOCK_REALTIME, CLOCK_MONOTONIC, or any
 * clock id clock_gettime(2) accepts) in nanoseconds into *@ret_ns.
 *
 * Return: 0; or a negative errno, with @reterr (optional) naming the clock,
 * and *@ret_ns left unwritten: the error of clock_gettime(2) (-EINVAL: the
 * kernel does not support @clock), or -ERANGE for a reading before the
 * clock's epoch or beyond INT64_MAX nanoseconds (the year 2262).
 */
int berth_now_ns(clockid_t clock, int64_t *ret_ns, struct berth_error *reterr);

/**
 * berth_realtime_ns() - CLOCK_REALTIME in nanoseconds since the Unix epoch,
 * for callbacks that take a plain clock function (int64_t (*)(void)).
 *
 * Return: the time (> 0), or the negative errno of berth_now_ns().
 */
int64_t berth_realtime_ns(void);

/**
 * berth_deadline_ns() - the time @after_ns nanoseconds from now on @clock,
 * saturating at INT64_MAX; a negative @after_ns counts as 0.
 *
 * Return: the deadline, or 0 when @clock cannot be read: a deadline that
 * berth_deadline_passed() reports as passed.
 */
int64_t berth_deadline_ns(clockid_t clock, int64_t after_ns);

/**
 * berth_deadline_passed() - whether @clock is later than @deadline_ns.
 *
 * Return: true when it is, and when @clock cannot be read; false otherwise.
 */
bool berth_deadline_passed(clockid_t clock, int64_t deadline_ns);

/**
 * berth_timespec_of_ns() - @ns nanoseconds (>= 0) as a struct timespec, for
 * the interfaces that take one (pthread_cond_timedwait(3), nanosleep(2)).
 * A negative @ns gives zero.
 */
struct timespec berth_timespec_of_ns(int64_t ns);

/**
 * berth_timeval_of_ns() - @ns nanoseconds (>= 0) as a struct timeval,
 * rounded down to microseconds, for libevent.  A negative @ns gives zero.
 */
struct timeval berth_timeval_of_ns(int64_t ns);

#endif /* BERTH_CLOCK_H */
