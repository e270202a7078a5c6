/* SPDX-License-Identifier: MIT */
/* backend-load.c -- a configured plugin instance and its containment; see backend-load.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <berth/cleanup.h>

#include "backend-load.h"
#include "canon.h"
#include "macro.h"

/* Load @plugin (pin @sha256, config @config or "{}") as @kind for @host. */
static int load_one(const char *dir, const char *plugin, const char *sha256, const json_t *config, uint32_t kind,
                    uint32_t min_abi, const struct berth_host *host, struct berth_plugin_handle **ret,
                    struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL, *file = NULL;
    json_t *empty = json_object();
    size_t len = 0;
    int r;

    r = empty ? berth_json_serialize(config ? config : empty, 0, &text, &len, reterr) : -ENOMEM;
    json_decref(empty);
    if (r < 0 || asprintf(&file, "%s.so", plugin) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    const struct berth_plugin_load_options o = {
        .dir = dir,
        .file = file,
        .sha256 = sha256,
        .kind = kind,
        .host = host,
        .config = text,
        .config_len = len,
        .min_abi = min_abi};
    return berth_plugin_load(&o, ret, NULL, reterr);
}

int berthd_backend_load(const char *plugin_dir, const struct berthd_backend_config *bc, uint32_t kind,
                        const struct berth_logger *logger, struct berthd_backend_instance *inst,
                        struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berthd_containment_config *c = &bc->containment;
    const struct berth_host *host;
    char name[sizeof(inst->containment_host.instance)];
    int r;

    memset(inst, 0, sizeof(*inst));
    host = berth_host_instance_init(&inst->host, bc->name, logger);
    if (c->plugin) {
        if (kind != BERTH_PLUGIN_RUNTIME)
            return berth_error_set(reterr, -EINVAL, "only a runtime backend can have a containment");
        snprintf(name, sizeof(name), "%s.containment", bc->name ? bc->name : "");
        r = load_one(plugin_dir, c->plugin, c->sha256, c->config, BERTH_PLUGIN_CONTAINMENT, 0,
                     berth_host_instance_init(&inst->containment_host, name, logger), &inst->containment, &err);
        if (r < 0)
            return berth_error_set(reterr, r, "containment plugin %s in %s: %s", c->plugin, plugin_dir, err.message);
        inst->containment_identity =
            c->config ? json_pack("{s:s, s:O}", "plugin_sha256", berth_plugin_get_info(inst->containment)->sha256,
                                  "config", c->config)
                      : json_pack("{s:s, s:{}}", "plugin_sha256", berth_plugin_get_info(inst->containment)->sha256,
                                  "config");
        if (!inst->containment_identity)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        berth_containment_binding_init(&inst->binding, berth_plugin_containment_ops(inst->containment),
                                       berth_plugin_state(inst->containment));
        berth_host_instance_set_containment(&inst->host, &inst->binding);
    }
    /* A runtime older than ABI 1.4 does not know host->containment, and
     * one that never asks for it would run its jobs uncontained. */
    r = load_one(plugin_dir, bc->plugin, bc->sha256, bc->config, kind,
                 c->plugin ? BERTH_PLUGIN_ABI_PACK(1, 4) : 0, host, &inst->plugin, &err);
    if (r < 0)
        return berth_error_set(reterr, r, "plugin %s in %s%s: %s", bc->plugin, plugin_dir,
                               c->plugin ? " (with a containment)" : "", err.message);
    if (c->plugin && !berth_host_instance_containment_taken(&inst->host))
        return berth_error_set(reterr, -EOPNOTSUPP,
                               "plugin %s in %s: a containment is configured for this backend, but the plugin's "
                               "init() never took it (host->containment), so its jobs would run uncontained",
                               bc->plugin, plugin_dir);
    return 0;
}

void berthd_backend_unload(struct berthd_backend_instance *inst)
{
    berth_plugin_unload(inst->plugin);
    inst->plugin = NULL;
    berth_plugin_unload(inst->containment);
    inst->containment = NULL;
    json_decref(inst->containment_identity);
    inst->containment_identity = NULL;
}
