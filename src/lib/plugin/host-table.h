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

#include <berth/plugin.h>

#include "log.h"

/**
 * struct berth_host_instance - storage for one host table.
 * @host:     the table to pass to plugins (&inst->host).
 * @logger:   where the plugin's log lines go (may be NULL to discard).
 * @instance: the backend name, NUL-terminated, at most 63 bytes.
 */
struct berth_host_instance {
    struct berth_host host;
    const struct berth_logger *logger;
    char instance[64];
};

/**
 * berth_host_instance_init() - fill @inst for the backend @instance.
 * @instance: backend name (cut at 63 bytes); NULL means "".
 * @logger:   borrowed; must outlive @inst.
 * Returns &inst->host.  Thread-safe for distinct @inst.
 */
const struct berth_host *berth_host_instance_init(struct berth_host_instance *inst, const char *instance,
                                                  const struct berth_logger *logger);

#endif /* BERTH_HOST_H */
