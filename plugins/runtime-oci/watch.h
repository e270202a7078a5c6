/* SPDX-License-Identifier: MIT */
/*
 * watch.h -- runtime-oci's notifications (ABI 1.1, plugin.h
 * host->job_changed): a thread of the plugin's own watches each running
 * job's directory with inotify(7) and tells berthd the moment the shim
 * publishes result.json (jobdir.h: written once, atomically, by rename,
 * as the shim's last act), so berthd records the result at once instead
 * of at its next reconcile pass.
 *
 * The shim is a separate process that outlives berthd, so a watch is a
 * property of this instance, not of the job: start() arms one for the job
 * it started, and inspect() re-arms one for every job it finds still
 * running (after a berthd restart the startup reconcile inspects them
 * all).  Arming is idempotent and checks for a result published before the
 * watch existed, so no exit is missed between the two.  A job whose shim
 * died without a result is found by berthd's reconcile timer, as is
 * everything when a watch cannot be added (the inotify limits): the
 * watcher only ever makes things sooner.
 *
 * Thread-safe: oci_watch_job() may be called from any thread (the core
 * may call the plugin's ops from several); oci_watch_stop() once, from
 * fini.
 */
#ifndef BERTH_OCI_WATCH_H
#define BERTH_OCI_WATCH_H

#include <berth/error.h>
#include <berth/plugin.h>

struct oci_watch;

/**
 * oci_watch_start() - the inotify descriptor, a stop eventfd and the
 * thread, for @host.  *@ret is NULL (and 0 returned) when @host has no
 * job_changed (a core of ABI 1.0): the plugin is polled.
 * Return: 0; -ENOMEM; -EMFILE or another inotify_init1/eventfd error;
 * the pthread_create error.
 */
int oci_watch_start(const struct berth_host *host, struct oci_watch **ret, struct berth_error *reterr);

/**
 * oci_watch_job() - watch the job directory @jobfd of run @run_id until
 * its result.json appears, then call job_changed(@run_id) once; when it is
 * there already, call it now.  @jobfd is borrowed.  Accepts a NULL @w.
 */
void oci_watch_job(struct oci_watch *w, int jobfd, const char *run_id);

/** oci_watch_stop() - stop and join the thread, close its descriptors, free @w (accepts NULL). */
void oci_watch_stop(struct oci_watch *w);

#endif
