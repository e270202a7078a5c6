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
    const char *code = json_string_value(json_object_get(body, "error"));
    const char *message = json_string_value(json_object_get(body, "message"));

    /* Formatted here, not through a struct berth_error, whose messages
     * blank control characters: bctl_error() shows them escaped, so that
     * what the broker said can be read exactly and never reaches the
     * terminal raw. */
    if (code && message)
        return bctl_error(verb, "%ld %s: %s", status, code, message);
    return bctl_error(verb, "the broker answered %ld", status);
}
