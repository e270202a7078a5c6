/* SPDX-License-Identifier: MIT */
/*
 * scripttest.h -- the scripted runtime plugin (tests/plugins/runtime-script.c,
 * in $BERTH_TEST_PLUGIN_DIR), loaded through the real loader, for the
 * suites that drive a backend: broker and qualify.
 */
#ifndef BERTH_SCRIPTTEST_H
#define BERTH_SCRIPTTEST_H

#include "testutil.h"

#include "host-table.h"
#include "loader.h"

/* runtime-script as backend "script", initialised with @config (JSON). */
static inline struct berth_plugin_handle *test_load_script(struct berth_host_instance *host, const char *config)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_plugin_load_options o = {
        .dir = getenv("BERTH_TEST_PLUGIN_DIR"),
        .file = "runtime-script.so",
        .kind = BERTH_PLUGIN_RUNTIME,
        .host = berth_host_instance_init(host, "script", NULL),
        .config = config,
        .config_len = strlen(config),
    };
    struct berth_plugin_handle *h = NULL;

    ck_assert_ptr_nonnull(o.dir);
    ck_assert_msg(berth_plugin_load(&o, &h, NULL, &err) == 0, "%s", err.message);
    return h;
}

#endif
