/* SPDX-License-Identifier: MIT */
/*
 * containment-binding.h -- a containment instance lent to another plugin
 * instance through its host table (plugin.h, host->containment, ABI 1.4).
 *
 * The operator binds a containment instance to a runtime backend
 * (berthd.json(5), "containment"); the runtime then calls the containment
 * operations from any of its threads.  plugin.h promises a containment
 * plugin one call at a time, so the binding hands out an ops table of its
 * own whose every entry takes the binding's lock and forwards the call.
 */
#ifndef BERTH_CONTAINMENT_BINDING_H
#define BERTH_CONTAINMENT_BINDING_H

#include <pthread.h>
#include <stddef.h>

#include <berth/plugin.h>

/**
 * struct berth_containment_binding - the forwarding table and its target.
 * @table:  the core's ops table handed to the runtime; an entry is NULL
 *          exactly when the plugin's is (units of an ABI 1.0 plugin).
 * @target: the containment plugin's own table (the loader's copy) and
 *          @state its instance; both borrowed.
 * @lock:   held across every forwarded call.
 */
struct berth_containment_binding {
    struct berth_containment_ops_v1 table;
    const struct berth_containment_ops_v1 *target;
    void *state;
    pthread_mutex_t lock;
};

/**
 * berth_containment_binding_init() - make @b forward to the instance
 * @state of the ops table @target (berth_plugin_containment_ops() of a
 * loaded containment plugin: a full-size table, members it lacks NULL).
 * Both are borrowed and must outlive every use of @b; @b itself must stay
 * where it is once handed out.  Nothing to release (the lock is a static
 * initialiser).  Thread-safe for distinct @b.
 */
void berth_containment_binding_init(struct berth_containment_binding *b, const struct berth_containment_ops_v1 *target,
                                    void *state);

#endif /* BERTH_CONTAINMENT_BINDING_H */
