/* SPDX-License-Identifier: MIT */
/*
 * fixture-runtime.c -- a runtime plugin for loader tests.
 *
 * Compiled several times (Makefile.am):
 *   FIXTURE_NAME         descriptor name
 *   FIXTURE_ABI          descriptor ABI version (default: this header's)
 *   FIXTURE_STRUCT_SIZE  descriptor struct_size (default: the real size)
 *   FIXTURE_NULL_START   leave the required start() op NULL
 *   FIXTURE_NO_ENTRY     do not export berth_plugin_entry
 *   FIXTURE_INIT_FAIL    init() fails with -ENOTRECOVERABLE
 *   FIXTURE_OPS_SIZE     descriptor ops_size (default: the whole table,
 *                        with the ABI 1.1 ops open_output and forget)
 *
 * The working variant canonicalises its configuration through the host
 * table, logs one line at init, and reports instance and configuration in
 * capabilities(), so tests can see the host table and config arrive.
 */
#include <stdio.h>

#include "fixture.h"

struct fixture_state {
    const struct berth_host *host;
    char *config;
    size_t config_len;
};

static int fx_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                   struct berth_error *reterr)
{
#ifdef FIXTURE_INIT_FAIL
    (void)host, (void)config, (void)config_len, (void)ret_state;
    return berth_error_set(reterr, -ENOTRECOVERABLE, "%s refuses to initialise", FIXTURE_NAME);
#else
    struct fixture_state *s = calloc(1, sizeof(*s));
    int r;

    if (!s)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    s->host = host;
    r = host->canonicalize(host, config, config_len, 4096, &s->config, &s->config_len, reterr);
    if (r < 0) {
        free(s);
        return r;
    }
    host->log(host, BERTH_LOG_INFO, "initialised with %s", s->config);
    *ret_state = s;
    return 0;
#endif
}

static void fx_fini(void *state)
{
    struct fixture_state *s = state;

    if (!s)
        return;
    free(s->config);
    free(s);
}

static int fx_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct fixture_state *s = state;
    char buf[8192];

    snprintf(buf, sizeof(buf), "{\"backend\":\"fixture\",\"config\":%s,\"instance\":\"%s\"}", s->config,
             s->host->instance);
    /* Through the host so the reply is canonical whatever the order above. */
    return s->host->canonicalize(s->host, buf, strlen(buf), sizeof(buf), ret_json, ret_len, reterr);
}

#ifndef FIXTURE_NULL_START
static int fx_start(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    (void)state, (void)dispatch, (void)dispatch_len;
    return berth_error_set(reterr, -EOPNOTSUPP, "fixture runtimes run nothing");
}
#endif

static int fx_inspect(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    (void)state, (void)ret_json, (void)ret_len;
    return berth_error_set(reterr, -ENOENT, "job %s is unknown", job_id);
}

static int fx_cancel(void *state, const char *job_id, struct berth_error *reterr)
{
    (void)state;
    return berth_error_set(reterr, -ENOENT, "job %s is unknown", job_id);
}

static int fx_reap(void *state, const char *job_id, struct berth_error *reterr)
{
    (void)state;
    return berth_error_set(reterr, -ENOENT, "job %s is unknown", job_id);
}

static int fx_open_output(void *state, const char *job_id, const char *output_id, int *ret_fd, uint64_t *ret_size,
                          struct berth_error *reterr)
{
    (void)state, (void)ret_fd, (void)ret_size;
    return berth_error_set(reterr, -ENOENT, "job %s has no output %s", job_id, output_id);
}

static int fx_forget(void *state, const char *job_id, struct berth_error *reterr)
{
    (void)state;
    return berth_error_set(reterr, -ENOENT, "job %s is unknown", job_id);
}

#ifndef FIXTURE_OPS_SIZE
#define FIXTURE_OPS_SIZE sizeof(fx_ops)
#endif

static const struct berth_runtime_ops_v1 fx_ops = {
    .capabilities = fx_capabilities,
#ifndef FIXTURE_NULL_START
    .start = fx_start,
#endif
    .inspect = fx_inspect,
    .cancel = fx_cancel,
    .reap = fx_reap,
    .open_output = fx_open_output,
    .forget = fx_forget,
};

static const struct berth_plugin fx_descriptor = {
    .abi_version = FIXTURE_ABI,
    .struct_size = FIXTURE_STRUCT_SIZE,
    .name = FIXTURE_NAME,
    .kind = BERTH_PLUGIN_RUNTIME,
    .version = FIXTURE_VERSION,
    .init = fx_init,
    .fini = fx_fini,
    .ops = &fx_ops,
    .ops_size = FIXTURE_OPS_SIZE,
};

#ifdef FIXTURE_NO_ENTRY
/* Exported under the wrong name: the loader must not find it. */
BERTH_PLUGIN_EXPORT const struct berth_plugin *berth_plugin_entry_misspelt(void);
const struct berth_plugin *berth_plugin_entry_misspelt(void)
{
    return &fx_descriptor;
}
#else
const struct berth_plugin *berth_plugin_entry(void)
{
    return &fx_descriptor;
}
#endif
