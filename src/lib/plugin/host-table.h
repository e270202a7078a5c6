/* SPDX-License-Identifier: MIT */
/*
 * host-table.h -- the core's implementation of the plugin host table.
 *
 * Each plugin instance gets its own struct berth_host_instance, which embeds
 * the struct berth_host handed to init() and remembers the backend name and
 * logger.  The instance must outlive the plugin handle it is given to.
 */
#ifndef BERTH_HOST_H
#define BERTH_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <berth/plugin.h>

#include "containment-binding.h"
#include "log.h"

/**
 * berth_host_notify_fn - where a plugin's job_changed() calls go (plugin.h):
 * @userdata as given to berth_host_instance_set_notify(), the backend name
 * of the instance and the job id, already checked (berth_job_id_valid(): 1 to 128 bytes of
 * [A-Za-z0-9._-]).  Called on the plugin's thread with the instance's notify
 * lock held: it must be quick, must not block and must not call
 * berth_host_instance_set_notify().
 */
typedef void berth_host_notify_fn(void *userdata, const char *instance, const char *job_id);

/**
 * struct berth_host_instance - storage for one host table.
 * @host:     the table to pass to plugins (&inst->host).
 * @logger:   where the plugin's log lines go (may be NULL to discard).
 * @instance: the instance name, NUL-terminated, at most 95 bytes (a backend
 *            name, or "<backend>.containment").
 * @notify_lock, @notify, @notify_userdata: the sink of job_changed()
 *            (berth_host_instance_set_notify()); NULL drops the calls.
 * @containment: what host->containment() hands out
 *            (berth_host_instance_set_containment()); NULL: none bound.
 * @containment_taken: set once host->containment() has handed it out
 *            (berth_host_instance_containment_taken()).
 */
struct berth_host_instance {
    struct berth_host host;
    const struct berth_logger *logger;
    char instance[96];
    pthread_mutex_t notify_lock;
    berth_host_notify_fn *notify;
    void *notify_userdata;
    struct berth_containment_binding *containment;
    atomic_bool containment_taken;
};

/**
 * berth_host_instance_init() - fill @inst for the backend @instance.
 * @instance: instance name (cut at 95 bytes); NULL means "".
 * @logger:   borrowed; must outlive @inst.
 * Returns &inst->host.  Thread-safe for distinct @inst.
 */
const struct berth_host *berth_host_instance_init(struct berth_host_instance *inst, const char *instance,
                                                  const struct berth_logger *logger);

/**
 * berth_host_instance_set_notify() - send the instance's job_changed()
 * calls to @fn(@userdata, ...) from now on; @fn NULL drops them (the
 * default: a call made before the core is ready is lost, which only costs
 * a reconcile pass).  Waits for a call in flight, so once it returns with
 * @fn NULL, @userdata is no longer used.  Any thread; not from @fn.
 */
void berth_host_instance_set_notify(struct berth_host_instance *inst, berth_host_notify_fn *fn, void *userdata);

/**
 * berth_host_instance_set_containment() - bind the containment @b (NULL:
 * none, the default) to @inst, so that its host->containment() returns
 * @b's forwarding table and @b as the state.  Call it before the plugin's
 * init() and never change it while the plugin is loaded: plugin.h promises
 * the same answer from init() to fini().  @b is borrowed and must outlive
 * the plugin instance.  Not thread-safe against host->containment().
 */
void berth_host_instance_set_containment(struct berth_host_instance *inst, struct berth_containment_binding *b);

/**
 * berth_host_instance_containment_taken() - whether the plugin has called
 * host->containment() and been given the bound containment (a 0 return),
 * so that a loader can refuse a runtime whose init() never asked for it:
 * such a runtime would run its jobs uncontained.  Any thread.
 */
bool berth_host_instance_containment_taken(const struct berth_host_instance *inst);

#endif /* BERTH_HOST_H */
