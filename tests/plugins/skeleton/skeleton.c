/* SPDX-License-Identifier: MIT */
/*
 * skeleton.c -- the smallest complete berth runtime plugin.
 *
 * Copy this file to start a plugin.  It compiles against the installed
 * headers only (see Makefile) and links against nothing of berth's: the core
 * lends its services through the host table passed to init().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <berth/plugin.h>

/* All mutable data lives here, one instance per configured backend. */
struct skeleton {
    const struct berth_host *host; /* valid until fini() returns */
    char *config;                  /* our configuration, canonical JSON */
    size_t config_len;
};

static int skeleton_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                         struct berth_error *reterr)
{
    struct skeleton *s;
    int r;

    s = calloc(1, sizeof(*s));
    if (!s)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    s->host = host;
    /* Keep a private canonical copy; the caller's buffer is only borrowed. */
    r = host->canonicalize(host, config, config_len, 64 * 1024, &s->config, &s->config_len, reterr);
    if (r < 0) {
        free(s);
        return r;
    }
    host->log(host, BERTH_LOG_INFO, "skeleton ready");
    *ret_state = s;
    return 0;
}

static void skeleton_fini(void *state)
{
    struct skeleton *s = state;

    if (!s)
        return;
    free(s->config);
    free(s);
}

/* What placement may rely on.  "unqualified" keeps berth from placing real
 * work here unless an operator explicitly allows unqualified backends. */
static int skeleton_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    static const char caps[] = "{\"backend\":\"skeleton\",\"capabilities\":[],\"egress_classes\":[\"none\"],"
                               "\"isolation\":\"none\",\"limits\":{},\"qualification\":\"unqualified\"}";
    struct skeleton *s = state;

    /* Returned buffers are malloc'd; the core releases them with free(). */
    return s->host->canonicalize(s->host, caps, sizeof(caps) - 1, sizeof(caps), ret_json, ret_len, reterr);
}

static int skeleton_start(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    (void)state, (void)dispatch, (void)dispatch_len;
    return berth_error_set(reterr, -EOPNOTSUPP, "the skeleton plugin does not run jobs");
}

/* It never starts anything, so every job id is confirmed absent. */
static int skeleton_inspect(void *state, const char *job_id, char **ret_json, size_t *ret_len,
                            struct berth_error *reterr)
{
    (void)state, (void)ret_json, (void)ret_len;
    return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
}

static int skeleton_cancel(void *state, const char *job_id, struct berth_error *reterr)
{
    (void)state;
    return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
}

static int skeleton_reap(void *state, const char *job_id, struct berth_error *reterr)
{
    (void)state;
    return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
}

static const struct berth_runtime_ops_v1 skeleton_ops = {
    .capabilities = skeleton_capabilities,
    .start = skeleton_start,
    .inspect = skeleton_inspect,
    .cancel = skeleton_cancel,
    .reap = skeleton_reap,
};

static const struct berth_plugin skeleton_plugin = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "skeleton",
    .kind = BERTH_PLUGIN_RUNTIME,
    .version = "0.1.0",
    .init = skeleton_init,
    .fini = skeleton_fini,
    .ops = &skeleton_ops,
    .ops_size = sizeof(skeleton_ops),
};

const struct berth_plugin *berth_plugin_entry(void)
{
    return &skeleton_plugin;
}
