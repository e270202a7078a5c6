/* SPDX-License-Identifier: MIT */
/* backoff.c -- capped exponential backoff; see backoff.h. */
#include "backoff.h"

void berth_backoff_init(struct berth_backoff *b, int64_t initial_ns, int64_t max_ns)
{
    if (initial_ns < 1)
        initial_ns = 1;
    if (max_ns < initial_ns)
        max_ns = initial_ns;
    *b = (struct berth_backoff){.initial_ns = initial_ns, .max_ns = max_ns, .delay_ns = initial_ns};
}

bool berth_backoff_due(const struct berth_backoff *b, int64_t now_ns)
{
    return b->failures == 0 || now_ns >= b->next_ns;
}

bool berth_backoff_failing(const struct berth_backoff *b)
{
    return b->failures > 0;
}

bool berth_backoff_failed(struct berth_backoff *b, int64_t now_ns)
{
    bool began = b->failures == 0;

    if (began)
        b->since_ns = now_ns;
    b->failures++;
    b->next_ns = now_ns > INT64_MAX - b->delay_ns ? INT64_MAX : now_ns + b->delay_ns;
    b->delay_ns = b->delay_ns > b->max_ns / 2 ? b->max_ns : b->delay_ns * 2;
    return began;
}

bool berth_backoff_succeeded(struct berth_backoff *b)
{
    bool ended = b->failures > 0;

    b->failures = 0;
    b->since_ns = 0;
    b->next_ns = 0;
    b->delay_ns = b->initial_ns;
    return ended;
}

int64_t berth_backoff_wait_ns(const struct berth_backoff *b, int64_t now_ns)
{
    return berth_backoff_due(b, now_ns) ? 0 : b->next_ns - now_ns;
}
