/* SPDX-License-Identifier: MIT */
/*
 * waits.h -- the registry of parked long-poll requests
 * (GET /v1/jobs/{job}/result?wait_ns=N, docs/api.md): each waits on an
 * event of its own request's event base until the broker records the
 * job's result, until its bound, or until it is removed.
 *
 * A wait is keyed by (principal, job id).  berthd_waits_wake() may be
 * called from any thread (the broker's worker calls it when it records a
 * result): it only activates the waits' events (libevent with evthread
 * locking, so event_active() is safe from any thread), and each wait's
 * callback then runs on the loop thread of the base it was added on, so
 * the registry works whether requests live on one event base or several.
 * A wake is a hint: the callback re-reads the result (another scope of
 * the same principal may use the same job id).
 *
 * Bounds: at most @max_total waits, at most @max_per_principal of one
 * principal; berthd_waits_add() refuses more.
 *
 * Thread safety: every function may be called from any thread, except
 * berthd_wait_rearm() and berthd_waits_remove(), which belong on the loop
 * thread of the wait's base, and berthd_waits_free().
 */
#ifndef BERTHD_WAITS_H
#define BERTHD_WAITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

/** Longest wait_ns a request may ask for: 60 s. */
#define BERTHD_WAIT_MAX_NS (60LL * 1000000000LL)
/** Parked requests, at most, in all ... */
#define BERTHD_WAITS_MAX_TOTAL 1024
/** ... and of one principal. */
#define BERTHD_WAITS_MAX_PER_PRINCIPAL 64

struct berthd_waits;
struct berthd_wait;

/**
 * berthd_wait_fn - a wait's callback, on its base's loop thread: @woken
 * true when berthd_waits_wake() (or _wake_all()) named it, false when its
 * bound passed.  The wait stays registered: the callback either rearms it
 * or removes it.
 */
typedef void berthd_wait_fn(struct berthd_wait *w, bool woken, void *arg);

/**
 * berthd_waits_new() - an empty registry with the bounds above (0 takes
 * the default).  Return: 0; -ENOMEM.
 */
int berthd_waits_new(size_t max_total, size_t max_per_principal, struct berthd_waits **ret);

/** berthd_waits_free() - free @ws (accepts NULL); every wait must have been removed. */
void berthd_waits_free(struct berthd_waits *ws);

/**
 * berthd_waits_add() - park a wait for @principal's job @job_id on @base:
 * @fn(@arg) runs on @base's loop once it is woken or @timeout_ns
 * (CLOCK_MONOTONIC, relative, > 0) passed.  The strings are copied.
 * Return: 0 with *@ret set; -EUSERS (@principal has max_per_principal
 * waits); -EAGAIN (the registry holds max_total); -EINVAL; -ENOMEM.
 */
int berthd_waits_add(struct berthd_waits *ws, struct event_base *base, const char *principal, const char *job_id,
                     int64_t timeout_ns, berthd_wait_fn *fn, void *arg, struct berthd_wait **ret);

/**
 * berthd_wait_rearm() - after a callback that found nothing new: wait
 * again, at most @timeout_ns more (> 0).  Return: 0; -ENOMEM (the event
 * could not be added: the caller answers now and removes the wait).
 */
int berthd_wait_rearm(struct berthd_wait *w, int64_t timeout_ns);

/** berthd_waits_remove() - unregister and free @w (accepts NULL); its callback never runs again. */
void berthd_waits_remove(struct berthd_waits *ws, struct berthd_wait *w);

/** berthd_waits_wake() - wake every wait of @principal's job @job_id (any thread, quick). */
void berthd_waits_wake(struct berthd_waits *ws, const char *principal, const char *job_id);

/** berthd_waits_wake_all() - wake every wait (shutdown: each answers with what it has). */
void berthd_waits_wake_all(struct berthd_waits *ws);

/** berthd_waits_count() - how many waits are registered now. */
size_t berthd_waits_count(struct berthd_waits *ws);

#endif
