/* SPDX-License-Identifier: MIT */
/*
 * script-notify.h -- the scripted runtime's notifications (ABI 1.1,
 * plugin.h host->job_changed): a thread of the plugin's own that tells
 * the core when a job is due to finish, as a real runtime's watcher would.
 * Test-only, like runtime-script.c.
 *
 * Every function accepts a NULL @n (a plugin built for ABI 1.0, or a core
 * without job_changed: nothing is ever notified and the core polls).
 * Thread-safe.
 */
#ifndef BERTH_SCRIPT_NOTIFY_H
#define BERTH_SCRIPT_NOTIFY_H

#include <stdint.h>

#include <berth/plugin.h>

struct script_notify;

/**
 * script_notify_start() - start the thread for @host; *@ret is NULL when
 * @host has no job_changed.  Return: 0; -ENOMEM; the pthread_create error.
 */
int script_notify_start(const struct berth_host *host, struct script_notify **ret);

/** script_notify_at() - call job_changed(@run_id) at @due_ns (CLOCK_REALTIME); replaces an earlier entry. */
void script_notify_at(struct script_notify *n, const char *run_id, int64_t due_ns);

/** script_notify_stop() - stop and join the thread, drop what is due; frees @n. */
void script_notify_stop(struct script_notify *n);

#endif
