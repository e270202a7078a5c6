/* SPDX-License-Identifier: MIT */
/* clock.c -- the time in nanoseconds; see clock.h. */
#include <errno.h>
#include <string.h>

#include "clock.h"

static const char *clock_name(clockid_t clock)
{
    switch (clock) {
    case CLOCK_REALTIME: return "CLOCK_REALTIME";
    case CLOCK_MONOTONIC: return "CLOCK_MONOTONIC";
    default: return "the clock";
    }
}

int berth_now_ns(clockid_t clock, int64_t *ret_ns, struct berth_error *reterr)
{
    struct timespec ts;

    if (!ret_ns)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (clock_gettime(clock, &ts) < 0) {
        int e = errno > 0 ? errno : EINVAL;
        return berth_error_set(reterr, -e, "cannot read %s: %s", clock_name(clock), strerror(e));
    }
    if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= BERTH_NS_PER_SEC ||
        (int64_t)ts.tv_sec > (INT64_MAX - ts.tv_nsec) / BERTH_NS_PER_SEC)
        return berth_error_set(reterr, -ERANGE, "%s reads %lld s, outside the range berth records", clock_name(clock),
                               (long long)ts.tv_sec);
    *ret_ns = (int64_t)ts.tv_sec * BERTH_NS_PER_SEC + ts.tv_nsec;
    return 0;
}

int64_t berth_realtime_ns(void)
{
    int64_t now;
    int r = berth_now_ns(CLOCK_REALTIME, &now, NULL);

    return r < 0 ? r : now;
}

int64_t berth_deadline_ns(clockid_t clock, int64_t after_ns)
{
    int64_t now;

    if (berth_now_ns(clock, &now, NULL) < 0)
        return 0;
    if (after_ns <= 0)
        return now;
    return now > INT64_MAX - after_ns ? INT64_MAX : now + after_ns;
}

bool berth_deadline_passed(clockid_t clock, int64_t deadline_ns)
{
    int64_t now;

    return berth_now_ns(clock, &now, NULL) < 0 || now > deadline_ns;
}

struct timespec berth_timespec_of_ns(int64_t ns)
{
    struct timespec ts = {0};

    if (ns > 0) {
        ts.tv_sec = (time_t)(ns / BERTH_NS_PER_SEC);
        ts.tv_nsec = (long)(ns % BERTH_NS_PER_SEC);
    }
    return ts;
}

struct timeval berth_timeval_of_ns(int64_t ns)
{
    struct timeval tv = {0};

    if (ns > 0) {
        tv.tv_sec = (time_t)(ns / BERTH_NS_PER_SEC);
        tv.tv_usec = (suseconds_t)(ns % BERTH_NS_PER_SEC / 1000);
    }
    return tv;
}
