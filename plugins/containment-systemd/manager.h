/* SPDX-License-Identifier: MIT */
/*
 * manager.h -- containment-systemd's connection to the service manager:
 * systemd's private socket (/run/systemd/private) through sd-bus, never a
 * systemctl subprocess, never the system bus (whose broker anyone can
 * reach).  The peer is checked to be root's PID 1 before any call.  The
 * method and property names are those of org.freedesktop.systemd1(5).
 *
 * A struct manager is one connection, used by one thread at a time.
 */
#ifndef BERTH_CONTAINMENT_SYSTEMD_MANAGER_H
#define BERTH_CONTAINMENT_SYSTEMD_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#include <berth/error.h>

struct manager {
    sd_bus *bus;
    int64_t job_timeout_ns; /* how long a queued start or stop may take */
};

/* manager_open() - connect to the unix socket @path (the manager's private
 * socket) and check, with SO_PEERCRED, that its owner is uid 0, pid 1.
 * -EACCES a peer that is not PID 1 of root; -ECONNREFUSED no manager
 * there (no socket at @path, or no one listening: not booted with
 * systemd), never -ENOENT, which the ops keep for a unit that is absent;
 * -ENOMEM; -EIO any other failure to reach it (a full backlog, no
 * descriptor left, a socket path too long for sun_path).
 *
 * Every call through @m reports a failure of the connection itself (reset,
 * closed, a reply that did not parse) as -EIO, a reply that did not come in
 * time as -ETIMEDOUT, and the manager's own error replies as the errnos of
 * bus_errno() in manager.c. */
int manager_open(struct manager *m, const char *path, int64_t job_timeout_ns, struct berth_error *reterr);
void manager_close(struct manager *m);

/* manager_unreachable() - whether the failure @r of a call through @m says
 * that the manager cannot answer any further call on it, not only this
 * one: the connection is closed, the call timed out (the manager is stuck
 * or gone), or it denied access (its policy, the same for every unit). */
bool manager_unreachable(struct manager *m, int r);

/* manager_unit_path() - LoadUnit(@name): the unit's object path, caller
 * frees.  Loads it when not loaded (a template instance is loaded from the
 * template). */
int manager_unit_path(struct manager *m, const char *name, char **ret_path, struct berth_error *reterr);

/* manager_get() - read property @prop of @iface on the unit at @path as
 * D-Bus signature @sig into @reply, positioned at the variant's content
 * (the caller reads it and unrefs the message). */
int manager_get(struct manager *m, const char *path, const char *iface, const char *prop, const char *sig,
                sd_bus_message **reply, struct berth_error *reterr);
/* manager_get_string(): a property of type "s" (caller frees). */
int manager_get_string(struct manager *m, const char *path, const char *iface, const char *prop, char **ret,
                       struct berth_error *reterr);

/* manager_run_job() - StartUnit (@start) or StopUnit of @name with @mode
 * ("fail", "replace"); once the manager queued the job, call @queued
 * (optional) with @userdata (its return value, when negative, ends the
 * wait with that error); then wait for the job's JobRemoved and return its result
 * in @ret_result ("done", "failed", "canceled", "timeout", "dependency",
 * "skipped"; caller frees).  -ETIMEDOUT when no JobRemoved came within the
 * connection's job timeout; the manager's own error (e.g. -ENOENT for
 * org.freedesktop.systemd1.NoSuchUnit) when it refused the job. */
int manager_run_job(struct manager *m, bool start, const char *name, const char *mode,
                    int (*queued)(void *userdata, struct berth_error *reterr), void *userdata, char **ret_result,
                    struct berth_error *reterr);

/* manager_kill() - KillUnit(@name, "all", @signo). */
int manager_kill(struct manager *m, const char *name, int signo, struct berth_error *reterr);

/* manager_mask() - MaskUnitFiles([@name], runtime=false, force=true), then
 * Reload(): a persistent mask the manager has loaded.  Nothing in berth
 * unmasks a unit. */
int manager_mask(struct manager *m, const char *name, struct berth_error *reterr);

/* manager_list_units() - ListUnitsByPatterns([] (every state),
 * [@pattern]): @each is called with each unit's name (a negative return
 * stops the walk and is returned). */
int manager_list_units(struct manager *m, const char *pattern, int (*each)(void *userdata, const char *name),
                       void *userdata, struct berth_error *reterr);

/* manager_version() - the manager's Version property (caller frees). */
int manager_version(struct manager *m, char **ret, struct berth_error *reterr);

#define SD_UNIT_IFACE "org.freedesktop.systemd1.Unit"
#define SD_SERVICE_IFACE "org.freedesktop.systemd1.Service"

#endif
