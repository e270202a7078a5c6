/* SPDX-License-Identifier: MIT */
/*
 * fixture.h -- shared bits of the test-only fixture plugins.
 *
 * The fixtures are built from two sources with different -D switches (see
 * Makefile.am); each variant breaks exactly one loader rule.  They are never
 * installed.
 */
#ifndef BERTH_TEST_FIXTURE_H
#define BERTH_TEST_FIXTURE_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <berth/plugin.h>

#ifndef FIXTURE_ABI
#define FIXTURE_ABI BERTH_PLUGIN_ABI_VERSION
#endif
#ifndef FIXTURE_STRUCT_SIZE
#define FIXTURE_STRUCT_SIZE sizeof(struct berth_plugin)
#endif
#define FIXTURE_VERSION "1.2.3"

/* Return a malloc'd copy of a JSON literal through the ABI's out-parameters. */
static inline int fixture_json(const char *text, char **ret_json, size_t *ret_len)
{
    char *copy = strdup(text);

    if (!copy)
        return -ENOMEM;
    *ret_json = copy;
    *ret_len = strlen(copy);
    return 0;
}

#endif
