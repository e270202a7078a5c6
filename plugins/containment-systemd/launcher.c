/* SPDX-License-Identifier: MIT */
/*
 * launcher.c -- berth-contained, the one command berth-job@.service runs:
 *
 *   berth-contained JOB_ID
 *
 * It reads the job's command from the credential "berth-launch"
 * ($CREDENTIALS_DIRECTORY/berth-launch, systemd.exec(5) LoadCredential=,
 * {"argv": [PATH, ARG...]}: at most 64 KiB, no other member, no duplicate
 * key), checks that it runs in the cgroup of berth-job@JOB_ID.service,
 * makes the unit's delegated subgroups "supervisor" and "payload"
 * (cgroup v2 allows no process in a group whose children hold processes
 * once controllers are enabled, so nothing stays in the unit's own group),
 * moves itself into "supervisor", enables the memory, pids and cpu
 * controllers the unit was given for its subgroups (cgroup.subtree_control),
 * and execs the command there with BERTH_PAYLOAD_CGROUP set to the payload group's path below
 * /sys/fs/cgroup.  The supervisor (the job's shim) moves the sandbox into
 * that group.  Exit status 1 with a message on standard error when any
 * step fails; nothing is run then.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <syslog.h>

#include <systemd/sd-journal.h>

#include <berth/cleanup.h>
#include <berth/file.h>

#include "canon.h"
#include "cgroup2.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

#define LAUNCH_MAX 65536
#define ARGV_MAX 256

/* Standard error is /dev/null under the unit: the journal hears it too. */
static int die(const struct berth_error *err, const char *fallback)
{
    const char *msg = err && err->message[0] ? err->message : fallback;

    fprintf(stderr, "berth-contained: %s\n", msg);
    (void)sd_journal_print(LOG_ERR, "berth-contained: %s", msg);
    return 1;
}

static int read_launch(json_t **ret_argv, struct berth_error *err)
{
    static const char *const members[] = {"argv", NULL};
    static const struct berth_file_expect any = {.uid = BERTH_UID_ANY, .max_size = LAUNCH_MAX};
    const char *dir = getenv("CREDENTIALS_DIRECTORY");
    _cleanup_free_ char *path = NULL, *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const json_t *a;
    size_t len = 0, i;
    json_t *argv;
    int r;

    if (!dir || dir[0] != '/')
        return berth_error_set(err, -ENOENT, "no $CREDENTIALS_DIRECTORY: not started by berth-job@.service");
    if (asprintf(&path, "%s/berth-launch", dir) < 0)
        return berth_error_set(err, -ENOMEM, "out of memory");
    if ((r = berth_read_file_at(AT_FDCWD, path, &any, &text, &len, err)) < 0 ||
        (r = berth_json_parse(text, len, LAUNCH_MAX, &doc, err)) < 0 ||
        (r = berth_json_only_members(doc, "berth-launch", members, err)) < 0)
        return r;
    argv = json_object_get(doc, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > ARGV_MAX)
        return berth_error_set(err, -EBADMSG, "berth-launch: argv must hold 1 to %d strings", ARGV_MAX);
    json_array_foreach (argv, i, a)
        if (!json_is_string(a) || (i == 0 && json_string_value(a)[0] != '/'))
            return berth_error_set(err, -EBADMSG, "berth-launch: argv[%zu] is not %s", i,
                                   i == 0 ? "an absolute path" : "a string");
    *ret_argv = json_incref(argv);
    return 0;
}

static int make_group(const char *cg, const char *sub, struct berth_error *err)
{
    _cleanup_free_ char *path = NULL;

    if (asprintf(&path, "%s%s/%s", BERTH_CGROUP2_ROOT, cg, sub) < 0)
        return berth_error_set(err, -ENOMEM, "out of memory");
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return berth_error_set(err, -errno, "%s: %m (is the unit Delegate=yes?)", path);
    return 0;
}

/* Hand the controllers the manager delegated to the unit (memory, pids,
 * cpu: those the job's limits use) on to its subgroups, so that the
 * supervisor can write the job's limits into "payload".  Only once nothing
 * is left in the unit's own group (cgroup v2's no internal process
 * constraint).  A controller the unit did not get is left out: the
 * supervisor decides what a job without it may do (runtime-oci:
 * "cgroup_limits"). */
static int delegate_controllers(const char *cg, struct berth_error *err)
{
    static const char *const wanted[] = {"memory", "pids", "cpu"};
    char line[64] = "";
    size_t n = 0, i;
    int r;

    for (i = 0; i < ELEMENTSOF(wanted); i++) {
        if ((r = berth_cgroup2_has_controller(cg, wanted[i], err)) < 0)
            return r;
        if (r)
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s+%s", n ? " " : "", wanted[i]);
    }
    return n ? berth_cgroup2_write(cg, "cgroup.subtree_control", line, err) : 0;
}

int main(int argc, char **argv)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *cg = NULL, *unit = NULL, *payload = NULL;
    _cleanup_json_ json_t *cmd = NULL;
    const char *base;
    char **args;
    size_t i;

    if (argc != 2 || !argv[1][0] || strchr(argv[1], '/')) {
        fputs("usage: berth-contained JOB_ID (run by berth-job@JOB_ID.service only)\n", stderr);
        return 2;
    }
    if (berth_cgroup2_of(0, &cg, &err) < 0 || read_launch(&cmd, &err) < 0)
        return die(&err, "cannot start");
    if (asprintf(&unit, "berth-job@%s.service", argv[1]) < 0)
        return die(NULL, "out of memory");
    base = strrchr(cg, '/');
    if (!base || !streq(base + 1, unit))
        return die(NULL, "not running in the cgroup of its own berth-job@ unit");
    if (make_group(cg, "supervisor", &err) < 0 || make_group(cg, "payload", &err) < 0 ||
        berth_cgroup2_move(cg, "supervisor", 0, &err) < 0)
        return die(&err, "cannot make the unit's subgroups");
    if (delegate_controllers(cg, &err) < 0)
        return die(&err, "cannot delegate the unit's controllers to its subgroups");
    if (asprintf(&payload, "%s/payload", cg) < 0 || setenv("BERTH_PAYLOAD_CGROUP", payload, 1) < 0)
        return die(NULL, "out of memory");
    if (!(args = calloc(json_array_size(cmd) + 1, sizeof(*args))))
        return die(NULL, "out of memory");
    for (i = 0; i < json_array_size(cmd); i++)
        args[i] = (char *)json_string_value(json_array_get(cmd, i));
    execv(args[0], args);
    {
        struct berth_error e = BERTH_ERROR_INIT;
        berth_error_set(&e, -errno, "cannot run %s: %m", args[0]);
        free(args);
        return die(&e, "cannot run the command");
    }
}
