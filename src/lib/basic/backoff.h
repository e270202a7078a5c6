/* SPDX-License-Identifier: MIT */
/*
 * backoff.h -- capped exponential backoff for retries, and when to log them.
 *
 * A retry loop (staging an image, recording a result on a full disk,
 * checking whether space has returned) asks berth_backoff_due() before each
 * try and reports the outcome with berth_backoff_failed() or
 * berth_backoff_succeeded().  After the first failure the next try is due
 * @initial_ns later; each further failure doubles the wait up to @max_ns; a
 * success resets it.  Both report functions return true only when the state
 * changes (working -> failing, failing -> working), so a caller logs one line
 * per change ("... failed, will retry with backoff" and "... works again"),
 * never one per try.
 *
 * Times are nanoseconds on a clock the caller chooses and passes in
 * (CLOCK_MONOTONIC for berth): the functions read no clock themselves.
 * Pure; a struct berth_backoff is not thread-safe (guard it with the lock of
 * what it belongs to).
 */
#ifndef BERTH_BACKOFF_H
#define BERTH_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

/** The default first wait after a failure: 250 ms (berthd's reconcile interval). */
#define BERTH_BACKOFF_INITIAL_NS (250LL * 1000 * 1000)
/** The default longest wait between two tries: 30 s. */
#define BERTH_BACKOFF_MAX_NS (30LL * 1000 * 1000 * 1000)

/**
 * struct berth_backoff - one retry loop's state; fill with berth_backoff_init().
 * @initial_ns: the wait after the first failure (> 0).
 * @max_ns:     the longest wait (>= @initial_ns).
 * @delay_ns:   the wait the next failure sets.
 * @next_ns:    when the next try is due (0: now).
 * @failures:   consecutive failures (0 while working).
 * @since_ns:   when the current failing period began (0 while working).
 */
struct berth_backoff {
    int64_t initial_ns, max_ns;
    int64_t delay_ns, next_ns;
    uint64_t failures;
    int64_t since_ns;
};

/**
 * berth_backoff_init() - a working loop that retries after @initial_ns,
 * doubling up to @max_ns.  Values out of range are corrected: @initial_ns
 * below 1 becomes 1, @max_ns below @initial_ns becomes @initial_ns.
 */
void berth_backoff_init(struct berth_backoff *b, int64_t initial_ns, int64_t max_ns);

/** berth_backoff_due() - whether a try is due at @now_ns (always while working). */
bool berth_backoff_due(const struct berth_backoff *b, int64_t now_ns);

/** berth_backoff_failing() - whether the last outcome reported was a failure. */
bool berth_backoff_failing(const struct berth_backoff *b);

/**
 * berth_backoff_failed() - a try at @now_ns failed: the next is due after
 * the current wait, which then doubles (capped at @max_ns; no overflow).
 * Return: true when this failure began a failing period (log it), false
 * when the loop was failing already.
 */
bool berth_backoff_failed(struct berth_backoff *b, int64_t now_ns);

/**
 * berth_backoff_succeeded() - a try succeeded: the wait resets to
 * @initial_ns and tries are due at once.
 * Return: true when this ended a failing period (log the recovery), false
 * when the loop was working already.
 */
bool berth_backoff_succeeded(struct berth_backoff *b);

/**
 * berth_backoff_wait_ns() - nanoseconds from @now_ns until the next try is
 * due (0 when due), for "retry in N s" hints.
 */
int64_t berth_backoff_wait_ns(const struct berth_backoff *b, int64_t now_ns);

#endif /* BERTH_BACKOFF_H */
