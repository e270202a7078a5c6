/* SPDX-License-Identifier: MIT */
/*
 * unitcheck.c -- the effective properties of a berth-job@ instance, as the
 * manager loaded it (see unitcheck.h; property types from
 * org.freedesktop.systemd1(5)).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "unitcheck.h"

#define LIST_MAX 16

/* Property @prop of type "as" into @v (at most LIST_MAX, else -E2BIG). */
static int get_strv(struct manager *m, const char *path, const char *prop, char v[][256], size_t *ret_n,
                    struct berth_error *reterr)
{
    sd_bus_message *reply = NULL;
    const char *s;
    size_t n = 0;
    int r;

    if ((r = manager_get(m, path, SD_UNIT_IFACE, prop, "as", &reply, reterr)) < 0)
        return r;
    if ((r = sd_bus_message_enter_container(reply, 'a', "s")) < 0)
        goto bad;
    while ((r = sd_bus_message_read(reply, "s", &s)) > 0) {
        if (n == LIST_MAX) {
            sd_bus_message_unref(reply);
            return berth_error_set(reterr, -E2BIG, "%s lists more than %d entries", prop, LIST_MAX);
        }
        snprintf(v[n++], 256, "%s", s);
    }
    if (r < 0)
        goto bad;
    sd_bus_message_unref(reply);
    *ret_n = n;
    return 0;
bad:
    sd_bus_message_unref(reply);
    return berth_error_set(reterr, r, "reading %s: %s", prop, strerror(-r));
}

static int expect_string(struct manager *m, const char *path, const char *iface, const char *prop, const char *want,
                         const char *name, struct berth_error *reterr)
{
    char *got = NULL;
    int r = manager_get_string(m, path, iface, prop, &got, reterr);

    if (r < 0)
        return r;
    if (!streq(got, want))
        r = berth_error_set(reterr, -EPERM, "%s has %s=%s, the template says %s: refused", name, prop, got, want);
    free(got);
    return r;
}

/* ExecStart a(sasbttttuii): exactly one command, x->launcher with argv
 * [x->launcher, x->instance]. */
static int check_exec(struct manager *m, const char *path, const struct unit_expect *x, struct berth_error *reterr)
{
    sd_bus_message *reply = NULL;
    const char *bin, *arg;
    int ignore, r, n = 0, argc;
    char why[160] = "";

    if ((r = manager_get(m, path, SD_SERVICE_IFACE, "ExecStart", "a(sasbttttuii)", &reply, reterr)) < 0)
        return r;
    if ((r = sd_bus_message_enter_container(reply, 'a', "(sasbttttuii)")) < 0)
        goto bad;
    while ((r = sd_bus_message_enter_container(reply, 'r', "sasbttttuii")) > 0) {
        if ((r = sd_bus_message_read(reply, "s", &bin)) < 0 ||
            (r = sd_bus_message_enter_container(reply, 'a', "s")) < 0)
            goto bad;
        if (n++ == 0 && !streq(bin, x->launcher))
            snprintf(why, sizeof(why), "runs %s, not %s", bin, x->launcher);
        for (argc = 0; (r = sd_bus_message_read(reply, "s", &arg)) > 0; argc++)
            if (!why[0] && ((argc == 0 && !streq(arg, x->launcher)) || (argc == 1 && !streq(arg, x->instance)) ||
                            argc > 1))
                snprintf(why, sizeof(why), "passes the argument list of another command");
        if (r < 0 || (r = sd_bus_message_exit_container(reply)) < 0 ||
            (r = sd_bus_message_read(reply, "b", &ignore)) < 0 || (r = sd_bus_message_skip(reply, "ttttuii")) < 0 ||
            (r = sd_bus_message_exit_container(reply)) < 0)
            goto bad;
        if (!why[0] && argc != 2)
            snprintf(why, sizeof(why), "passes %d arguments, not 2", argc);
    }
    if (r < 0)
        goto bad;
    sd_bus_message_unref(reply);
    if (n != 1 && !why[0])
        snprintf(why, sizeof(why), "has %d ExecStart= commands, not 1", n);
    return why[0] ? berth_error_set(reterr, -EPERM, "%s %s: refused", x->name, why) : 0;
bad:
    sd_bus_message_unref(reply);
    return berth_error_set(reterr, r, "reading ExecStart of %s: %s", x->name, strerror(-r));
}

int unit_check(struct manager *m, const char *path, const struct unit_expect *x, struct berth_error *reterr)
{
    char v[LIST_MAX][256];
    sd_bus_message *reply = NULL;
    size_t n = 0;
    int delegate = 0, r;

    if ((r = get_strv(m, path, "DropInPaths", v, &n, reterr)) < 0)
        return r;
    if (n > 0)
        return berth_error_set(reterr, -EPERM, "%s has a drop-in, %s%s: refused (the template is used unaltered)",
                               x->name, v[0], n > 1 ? " and more" : "");
    if ((r = get_strv(m, path, "Names", v, &n, reterr)) < 0)
        return r;
    if (n == 0)
        return berth_error_set(reterr, -EPERM, "%s reports no name: refused", x->name);
    if (n != 1 || !streq(v[0], x->name))
        return berth_error_set(reterr, -EPERM, "%s has another name, %s: refused (no aliases)", x->name,
                               streq(v[0], x->name) && n > 1 ? v[1] : v[0]);
    if ((r = expect_string(m, path, SD_UNIT_IFACE, "FragmentPath", x->fragment, x->name, reterr)) < 0 ||
        (r = check_exec(m, path, x, reterr)) < 0 ||
        (r = expect_string(m, path, SD_SERVICE_IFACE, "Slice", UNIT_SLICE, x->name, reterr)) < 0 ||
        (r = expect_string(m, path, SD_SERVICE_IFACE, "KillMode", "control-group", x->name, reterr)) < 0 ||
        (r = expect_string(m, path, SD_SERVICE_IFACE, "Restart", "no", x->name, reterr)) < 0 ||
        (r = expect_string(m, path, SD_SERVICE_IFACE, "Type", "exec", x->name, reterr)) < 0)
        return r;
    if ((r = manager_get(m, path, SD_SERVICE_IFACE, "Delegate", "b", &reply, reterr)) < 0)
        return r;
    r = sd_bus_message_read(reply, "b", &delegate);
    sd_bus_message_unref(reply);
    if (r < 0)
        return berth_error_set(reterr, r, "reading Delegate of %s: %s", x->name, strerror(-r));
    if (!delegate)
        return berth_error_set(reterr, -EPERM, "%s has Delegate=no, the template says yes: refused", x->name);
    return 0;
}
