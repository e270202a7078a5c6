/* SPDX-License-Identifier: MIT */
/*
 * backend-load.h -- load one plugin instance berthd.json configures, with
 * the containment instance bound to it (berthd.json(5), "containment").
 *
 * berthd and "berthctl qualify" load a runtime backend the same way: its
 * containment plugin first (when configured), whose instance is then bound
 * to the backend's host table (plugin.h, host->containment, ABI 1.4), then
 * the backend's own plugin, which may use the containment from its init().
 * Unloading goes the other way round, so the containment outlives every
 * call the backend can make into it.
 */
#ifndef BERTH_BACKEND_LOAD_H
#define BERTH_BACKEND_LOAD_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "berthd-config.h"
#include "containment-binding.h"
#include "host-table.h"
#include "loader.h"
#include "log.h"

/**
 * struct berthd_backend_instance - one loaded instance and what it owns.
 * @host:        the instance's host table (its name the backend's).
 * @plugin:      the loaded instance; NULL before berthd_backend_load().
 * @containment_host, @containment, @binding: the containment instance
 *               (host name "<backend>.containment") and the forwarding
 *               table the backend's host->containment() hands out;
 *               @containment NULL when none is configured.
 * @containment_identity: {"plugin_sha256": the containment plugin file's
 *               digest, "config": its config or {}}, what a qualification
 *               of the backend is bound to as well
 *               (berth_qualification_config_digest()); NULL without one.
 * The structure must not move once loaded (the host tables and the binding
 * are referred to by address).
 */
struct berthd_backend_instance {
    struct berth_host_instance host;
    struct berth_plugin_handle *plugin;
    struct berth_host_instance containment_host;
    struct berth_plugin_handle *containment;
    struct berth_containment_binding binding;
    json_t *containment_identity;
};

/**
 * berthd_backend_load() - load the plugin @bc names from @plugin_dir as an
 * instance of @kind (enum berth_plugin_kind) into @inst, after its
 * containment when @bc->containment.plugin is set (only for
 * BERTH_PLUGIN_RUNTIME; another kind with a containment is -EINVAL).
 * @plugin_dir: absolute, as berth_plugin_load() requires.
 * @bc:      borrowed, including its configs; they are serialized for init().
 * @logger:  where both instances' log lines go; borrowed, must outlive @inst.
 * @inst:    caller storage, overwritten; release with berthd_backend_unload()
 *           whether or not this succeeded.
 * @reterr:  names the plugin ("plugin runtime-oci in /dir: ...", or
 *           "containment plugin containment-systemd in /dir: ...").
 * With a containment, the runtime plugin must be of ABI 1.4 or later
 * (-EPROTO otherwise, before its init() runs) and its init() must have
 * taken the containment through host->containment() (-EOPNOTSUPP
 * otherwise: the instance is loaded but would run its jobs uncontained;
 * berthd_backend_unload() releases it).
 * Returns 0, -EINVAL (a containment on another kind than a runtime),
 * -EOPNOTSUPP, any error of berth_plugin_load() (the containment's is
 * -EPROTOTYPE when its plugin is of another kind), or -ENOMEM.
 * Thread-safe for distinct @inst.
 */
int berthd_backend_load(const char *plugin_dir, const struct berthd_backend_config *bc, uint32_t kind,
                        const struct berth_logger *logger, struct berthd_backend_instance *inst,
                        struct berth_error *reterr);

/**
 * berthd_backend_unload() - unload the backend's plugin, then its
 * containment, and drop the containment's identity.  Accepts an instance that was never loaded, or only in part
 * (a failed berthd_backend_load()); safe to call twice.  No op of either may
 * be running.
 */
void berthd_backend_unload(struct berthd_backend_instance *inst);

#endif /* BERTH_BACKEND_LOAD_H */
