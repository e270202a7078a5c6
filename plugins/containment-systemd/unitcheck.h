/* SPDX-License-Identifier: MIT */
/*
 * unitcheck.h -- before containment-systemd starts berth-job@<id>.service
 * it reads the instance's effective properties from the manager and
 * refuses to start anything but the installed template, unaltered.
 */
#ifndef BERTH_CONTAINMENT_SYSTEMD_UNITCHECK_H
#define BERTH_CONTAINMENT_SYSTEMD_UNITCHECK_H

#include "manager.h"

/* The slice of every instance of berth-job@.service: systemd's default for
 * a template's instances, "system-" + the escaped prefix + ".slice"
 * (systemd.special(7)), below system.slice. */
#define UNIT_SLICE "system-berth\\x2djob.slice"

struct unit_expect {
    const char *name;     /* the instance, "berth-job@<id>.service" */
    const char *instance; /* "<id>" */
    const char *fragment; /* FragmentPath: the installed template */
    const char *launcher; /* ExecStart's only command: launcher <id> */
};

/* unit_check() - -EPERM with the reason when the unit at @path is not
 * exactly the template: a drop-in (DropInPaths not empty), an alias (Names
 * other than the instance), another FragmentPath, an ExecStart other than
 * one "launcher <id>", a Slice other than UNIT_SLICE, or KillMode,
 * Delegate, Restart, Type not control-group, yes, no, exec.  Errors of the manager as manager_get(). */
int unit_check(struct manager *m, const char *path, const struct unit_expect *x, struct berth_error *reterr);

#endif
