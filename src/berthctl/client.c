/* SPDX-License-Identifier: MIT */
/* client.c -- berthctl's HTTPS client; see client.h. */
#include <stdlib.h>

#include "client.h"
#include "fsutil.h"
#include "macro.h"

int bctl_client_open(const struct bctl_globals *g, const char *verb, struct berth_https **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *env_path = NULL;
    const char *path = g->config;

    if (!path && getenv("BERTH_CLIENT_CONFIG")) {
        if (berth_path_absolute(getenv("BERTH_CLIENT_CONFIG"), &env_path) < 0)
            return bctl_usage_error(verb, "BERTH_CLIENT_CONFIG is not a usable path");
        path = env_path;
    }
    if (!path)
        return bctl_usage_error(verb, "this verb talks to berthd: give --config=CLIENT.json "
                                      "(or set BERTH_CLIENT_CONFIG)");
    if (berth_https_open(path, ret, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    return BCTL_EXIT_OK;
}

int bctl_client_fail(const char *verb, long status, const json_t *body)
{
    struct berth_error err = BERTH_ERROR_INIT;

    berth_https_error(status, body, &err);
    return bctl_error(verb, "%s", err.message);
}
