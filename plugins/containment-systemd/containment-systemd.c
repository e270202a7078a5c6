/* SPDX-License-Identifier: MIT */
/*
 * containment-systemd.c -- the containment-systemd plugin (struct
 * berth_containment_ops_v1): each job's host-side processes live in one
 * instance of the installed template unit berth-job@.service, whose
 * cgroup the service manager owns, so that whatever dies (berthd, the
 * shim, the runtime) the job can be found, stopped and proven gone.
 *
 * Backend configuration (the "config" object of a containment backend):
 *   {"socket": "/run/systemd/private",
 *    "template": "@systemdsystemunitdir@/berth-job@.service",
 *    "launcher": "@pkglibexecdir@/berth-contained",
 *    "drain_timeout_ns": 10000000000, "job_timeout_ns": 30000000000}
 * Every member is optional (the defaults are shown); "template" is the
 * FragmentPath the manager must report for every instance and "launcher"
 * the one command its ExecStart= may run.  No other member is accepted.
 *
 * The one-time launch handoff: create() publishes the job's command as
 * LAUNCH_DIR/<id>.json (0600, the path the template's LoadCredential= names), starts the instance, which reads it as the
 * credential "berth-launch" (LoadCredential=, copied by the manager when
 * the unit starts), and removes the file once the start job is done: a
 * second start of the same instance, by hand or by a restart, finds no
 * command and fails.  berth-contained (launcher.c) makes the unit's
 * delegated subgroups "supervisor" (itself, then the command it execs) and
 * "payload" (where the supervisor puts the sandbox, or attach() does).
 *
 * Every op makes its own connection to the manager, so instances may be
 * used from several threads at once.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <berth/cleanup.h>
#include <berth/plugin.h>

#include "canon.h"
#include "cgroup2.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "manager.h"
#include "unitcheck.h"

#define CONFIG_MAX 4096
#define SPEC_MAX 65536
#define ARGV_MAX 256
#define ID_MAX 128 /* a job id (<berth/plugin.h>) */
#define UNIT_PREFIX "berth-job@"
#define UNIT_NAME_MAX 256 /* systemd's longest unit name (UNIT_NAME_MAX, 255) and its NUL */
#define SEC_NS 1000000000LL
#define LAUNCH_PARENT "/run/berth"
#define LAUNCH_DIR LAUNCH_PARENT "/contained"

#ifndef BERTH_JOB_TEMPLATE_PATH
#define BERTH_JOB_TEMPLATE_PATH "/lib/systemd/system/berth-job@.service"
#endif
#ifndef BERTH_CONTAINED_PATH
#define BERTH_CONTAINED_PATH "/usr/libexec/berth/berth-contained"
#endif

struct contained {
    char *socket, *template, *launcher;
    int64_t drain_timeout_ns, job_timeout_ns;
};

static void contained_free(struct contained *c)
{
    if (!c)
        return;
    free(c->socket);
    free(c->template);
    free(c->launcher);
    free(c);
}

static int dup_member(const json_t *doc, const char *key, const char *dflt, char **ret, struct berth_error *reterr)
{
    const char *v = NULL;
    int r = berth_json_string_member(doc, "config", key, false, &v, reterr);

    if (r < 0)
        return r;
    if (!v)
        v = dflt;
    if (v[0] != '/' || strlen(v) > 1024)
        return berth_error_set(reterr, -EINVAL, "config.%s must be an absolute path", key);
    if (!(*ret = strdup(v)))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return 0;
}

static int contained_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                          struct berth_error *reterr)
{
    static const char *const members[] = {"socket", "template", "launcher", "drain_timeout_ns", "job_timeout_ns",
                                          NULL};
    _cleanup_json_ json_t *doc = NULL;
    struct contained *c;
    int r;

    if (!host || !config || !ret_state)
        return berth_error_set(reterr, -EINVAL, "missing argument");
    if (!(c = calloc(1, sizeof(*c))))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = berth_json_parse(config, config_len, CONFIG_MAX, &doc, reterr)) < 0 ||
        (r = berth_json_only_members(doc, "config", members, reterr)) < 0 ||
        (r = dup_member(doc, "socket", "/run/systemd/private", &c->socket, reterr)) < 0 ||
        (r = dup_member(doc, "template", BERTH_JOB_TEMPLATE_PATH, &c->template, reterr)) < 0 ||
        (r = dup_member(doc, "launcher", BERTH_CONTAINED_PATH, &c->launcher, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "config", "drain_timeout_ns", false, SEC_NS / 10, 600 * SEC_NS,
                                   &c->drain_timeout_ns, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "config", "job_timeout_ns", false, SEC_NS / 10, 600 * SEC_NS,
                                   &c->job_timeout_ns, reterr)) < 0) {
        contained_free(c);
        return r;
    }
    if (!c->drain_timeout_ns)
        c->drain_timeout_ns = 10 * SEC_NS;
    if (!c->job_timeout_ns)
        c->job_timeout_ns = 30 * SEC_NS;
    *ret_state = c;
    return 0;
}

static void contained_fini(void *state)
{
    contained_free(state);
}

/* A job id becomes the instance name: 1 to ID_MAX bytes of [A-Za-z0-9._-],
 * not starting with '.' or '-' (nothing systemd would escape, no path, no
 * specifier). */
static int unit_name(const char *id, char name[static sizeof(UNIT_PREFIX) + ID_MAX + 8], struct berth_error *reterr)
{
    size_t n = id ? strlen(id) : 0;

    if (n == 0 || n > ID_MAX || id[0] == '-' || id[0] == '.' ||
        strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n)
        return berth_error_set(reterr, -EINVAL, "job id must be 1 to %d bytes of [A-Za-z0-9._-]", ID_MAX);
    snprintf(name, sizeof(UNIT_PREFIX) + ID_MAX + 8, UNIT_PREFIX "%s.service", id);
    return 0;
}

struct unit {
    struct manager m;
    char name[UNIT_NAME_MAX]; /* at least what unit_name() writes; units() reads longer names too */
    char *path;
};

static void unit_done(struct unit *u)
{
    manager_close(&u->m);
    free(u->path);
    u->path = NULL;
}

static int unit_open(struct contained *c, const char *id, struct unit *u, struct berth_error *reterr)
{
    int r;

    *u = (struct unit){0};
    if ((r = unit_name(id, u->name, reterr)) < 0 || (r = manager_open(&u->m, c->socket, c->job_timeout_ns, reterr)) < 0)
        return r;
    if ((r = manager_unit_path(&u->m, u->name, &u->path, reterr)) < 0)
        unit_done(u);
    return r;
}

/* The unit's cgroup, also once the manager forgot it (an inactive or
 * masked unit reports ControlGroup ""): then where systemd puts every
 * instance of the template, its default slice (unit_check() makes sure
 * no instance is placed elsewhere). */
static int unit_cgroup(struct unit *u, char **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *cg = NULL;
    int r;

    if ((r = manager_get_string(&u->m, u->path, SD_SERVICE_IFACE, "ControlGroup", &cg, reterr)) < 0)
        return r;
    if (!cg[0]) {
        free(cg);
        cg = NULL;
        if (asprintf(&cg, "/system.slice/%s/%s", UNIT_SLICE, u->name) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (!berth_cgroup2_path_valid(cg))
        return berth_error_set(reterr, -EBADMSG, "%s reports the cgroup \"%s\"", u->name, cg);
    *ret = cg;
    cg = NULL;
    return 0;
}

/* LAUNCH_DIR, made (0700, its parent 0755) when missing, and refused
 * unless it and every directory above it are root's and writable by no
 * one else (berth_trusted_dir_check()). */
static int launch_dir(struct berth_error *reterr)
{
    int fd, r;

    if ((mkdir(LAUNCH_PARENT, 0755) < 0 && errno != EEXIST) || (mkdir(LAUNCH_DIR, 0700) < 0 && errno != EEXIST))
        return berth_error_set(reterr, -errno, "%s: %m", LAUNCH_DIR);
    /* The manager opens the file by name as root: nobody else may be able
     * to swap it, or a directory on its way. */
    if ((fd = berth_open_trusted(LAUNCH_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, reterr)) < 0)
        return fd;
    if ((r = berth_trusted_dir_check(fd, LAUNCH_DIR, reterr)) < 0) {
        close(fd);
        return r;
    }
    return fd;
}

/* The spec: {"job_id": ID, "argv": [1 to ARGV_MAX absolute-path-first strings]}. */
static int parse_spec(const char *spec, size_t len, json_t **ret_doc, const char **ret_id, struct berth_error *reterr)
{
    static const char *const members[] = {"job_id", "argv", NULL};
    _cleanup_json_ json_t *doc = NULL;
    const json_t *argv, *a;
    size_t i;
    int r;

    if ((r = berth_json_parse(spec, len, SPEC_MAX, &doc, reterr)) < 0 ||
        (r = berth_json_only_members(doc, "spec", members, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "spec", "job_id", true, ret_id, reterr)) < 0)
        return r;
    argv = json_object_get(doc, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > ARGV_MAX)
        return berth_error_set(reterr, -EBADMSG, "spec.argv must be an array of 1 to %d strings", ARGV_MAX);
    json_array_foreach (argv, i, a)
        if (!json_is_string(a) || (i == 0 && json_string_value(a)[0] != '/'))
            return berth_error_set(reterr, -EBADMSG, "spec.argv[%zu] must be a string%s", i,
                                   i == 0 ? " holding an absolute path" : "");
    *ret_doc = doc;
    doc = NULL;
    return 0;
}

static int contained_create(void *state, const char *spec, size_t spec_len, char **ret_json, size_t *ret_len,
                            struct berth_error *reterr)
{
    struct contained *c = state;
    _cleanup_json_ json_t *doc = NULL, *launch = NULL;
    _cleanup_free_ char *load = NULL, *active = NULL, *text = NULL, *result = NULL, *cg = NULL;
    _cleanup_close_ int dfd = -1;
    char file[ID_MAX + 8];
    const char *id = NULL;
    struct unit u;
    size_t len = 0;
    int r;

    if ((r = parse_spec(spec, spec_len, &doc, &id, reterr)) < 0 || (r = unit_open(c, id, &u, reterr)) < 0)
        return r;
    if ((r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "LoadState", &load, reterr)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "ActiveState", &active, reterr)) < 0)
        goto out;
    if (streq(load, "masked")) {
        r = berth_error_set(reterr, -EPERM, "%s is masked: it was drained before, and a job id is never reused",
                            u.name);
        goto out;
    }
    if (!streq(load, "loaded")) {
        r = berth_error_set(reterr, -ENOENT, "%s cannot be loaded (%s): is %s installed?", u.name, load, c->template);
        goto out;
    }
    if (!streq(active, "inactive")) {
        r = berth_error_set(reterr, -EEXIST, "%s exists already (%s)", u.name, active);
        goto out;
    }
    {
        const struct unit_expect x = {.name = u.name, .instance = id, .fragment = c->template, .launcher = c->launcher};
        if ((r = unit_check(&u.m, u.path, &x, reterr)) < 0)
            goto out;
    }
    snprintf(file, sizeof(file), "%s.json", id);
    if ((dfd = launch_dir(reterr)) < 0) {
        r = dfd;
        goto out;
    }
    launch = json_pack("{s:O}", "argv", json_object_get(doc, "argv"));
    if ((r = berth_json_emit(json_incref(launch), &text, &len, reterr)) < 0 ||
        (r = berth_publish_at(dfd, file, text, len, 0600, BERTH_PUBLISH_REPLACE, reterr)) < 0)
        goto out;
    r = manager_run_job(&u.m, true, u.name, "fail", NULL, NULL, &result, reterr);
    (void)unlinkat(dfd, file, 0); /* one start only: the manager copied it, or the start failed */
    if (r < 0)
        goto out;
    if (!streq(result, "done")) {
        r = berth_error_set(reterr, -EIO, "starting %s: the manager's start job ended \"%s\"", u.name, result);
        goto out;
    }
    /* The unit runs: from here on a failure says nothing about whether the
     * command runs, so it is reported as one of the manager's (-EIO), never
     * as a refusal the caller could take for "nothing started". */
    if ((r = unit_cgroup(&u, &cg, reterr)) < 0 ||
        (r = berth_json_emit(json_pack("{s:s, s:s}", "unit", u.name, "cgroup", cg), ret_json, ret_len, reterr)) < 0) {
        if (reterr)
            reterr->code = -EIO;
        r = -EIO;
    }
out:
    unit_done(&u);
    return r < 0 ? r : 0;
}

/* The pid of @pidfd, from /proc/self/fdinfo (proc(5), "Pid:"). */
static int pidfd_pid(int pidfd, pid_t *ret, struct berth_error *reterr)
{
    char path[64], buf[1024];
    const char *p;
    ssize_t n;
    _cleanup_close_ int fd = -1;

    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
    /* No such entry: @pidfd is no open descriptor (-EINVAL, plugin.h). */
    if (pidfd < 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || (n = read(fd, buf, sizeof(buf) - 1)) < 0)
        return berth_error_set(reterr, pidfd < 0 || errno == ENOENT ? -EINVAL : errno == ENOMEM ? -ENOMEM : -EIO,
                               "descriptor %d: %s: %s", pidfd, path, pidfd < 0 ? "negative" : strerror(errno));
    buf[n] = '\0';
    if (!(p = strstr(buf, "\nPid:")))
        return berth_error_set(reterr, -EINVAL, "descriptor %d is not a pidfd", pidfd);
    /* A pidfd of a process that was reaped reads "Pid: -1" (proc(5)). */
    if ((*ret = (pid_t)strtol(p + 5, NULL, 10)) <= 0)
        return berth_error_set(reterr, -ESRCH, "descriptor %d is the pidfd of a process that was reaped", pidfd);
    return 0;
}

static int contained_attach(void *state, const char *job_id, int pidfd, struct berth_error *reterr)
{
    _cleanup_free_ char *cg = NULL;
    struct unit u;
    pid_t pid = 0;
    int r;

    if ((r = pidfd_pid(pidfd, &pid, reterr)) < 0 || (r = unit_open(state, job_id, &u, reterr)) < 0)
        return r;
    /* cgroup.procs takes a pid number, not a pidfd: read the number again
     * just before the move, and afterwards make sure the process behind the
     * pidfd still exists (a zombie still holds its pid), so that the number
     * written was its own and not one the kernel gave to another process
     * meanwhile.  plugin.h asks callers for a process that cannot be reaped
     * during the call, which closes the window entirely. */
    if ((r = unit_cgroup(&u, &cg, reterr)) == 0 && (r = pidfd_pid(pidfd, &pid, reterr)) == 0 &&
        (r = berth_cgroup2_move(cg, "payload", pid, reterr)) == 0 && syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0) {
        /* Only ESRCH says the process was reaped (pidfd_send_signal(2)). */
        if (errno == ESRCH)
            r = berth_error_set(reterr, -ESRCH,
                                "process %d was reaped while it was moved into %s/payload: if its pid was reused "
                                "meanwhile, another process was moved there in its place",
                                (int)pid, cg);
        else
            r = berth_error_set(reterr, -EIO, "cannot tell whether process %d outlived its move into %s/payload: %m",
                                (int)pid, cg);
    }
    unit_done(&u);
    return r;
}

static int contained_kill(void *state, const char *job_id, int signo, struct berth_error *reterr)
{
    struct unit u;
    int r;

    if (signo <= 0 || signo >= 65)
        return berth_error_set(reterr, -EINVAL, "no signal %d", signo);
    if ((r = unit_open(state, job_id, &u, reterr)) < 0)
        return r;
    r = manager_kill(&u.m, u.name, signo, reterr);
    /* An instance that ended may be unloaded before the call: not loaded
     * is not running, the same as inactive (plugin.h: -ESRCH). */
    if (r == -ENOENT)
        r = berth_error_set(reterr, -ESRCH, "%s is not running: no process to signal", u.name);
    unit_done(&u);
    return r;
}

/* The unit's pending job id (Job, "(uo)"): 0 when none. */
static int pending_job(struct unit *u, uint32_t *ret, struct berth_error *reterr)
{
    sd_bus_message *reply = NULL;
    const char *path;
    int r;

    if ((r = manager_get(&u->m, u->path, SD_UNIT_IFACE, "Job", "(uo)", &reply, reterr)) < 0)
        return r;
    r = sd_bus_message_read(reply, "(uo)", ret, &path);
    sd_bus_message_unref(reply);
    return r < 0 ? berth_error_set(reterr, r, "reading Job of %s: %s", u->name, strerror(-r)) : 0;
}

static int contained_status(void *state, const char *job_id, char **ret_json, size_t *ret_len,
                            struct berth_error *reterr)
{
    _cleanup_free_ char *load = NULL, *active = NULL, *sub = NULL, *cg = NULL;
    struct unit u;
    uint32_t job = 0;
    int r, populated;

    if ((r = unit_open(state, job_id, &u, reterr)) < 0)
        return r;
    if ((r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "LoadState", &load, reterr)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "ActiveState", &active, reterr)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "SubState", &sub, reterr)) < 0 ||
        (r = pending_job(&u, &job, reterr)) < 0 || (r = unit_cgroup(&u, &cg, reterr)) < 0)
        goto out;
    populated = berth_cgroup2_populated(cg, reterr);
    if (populated < 0 && populated != -ENOENT) {
        r = populated;
        goto out;
    }
    r = berth_json_emit(json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:b, s:b}", "unit", u.name, "load_state", load,
                                  "active_state", active, "sub_state", sub, "cgroup", cg, "populated", populated == 1,
                                  "masked", streq(load, "masked"), "job_pending", job != 0),
                        ret_json, ret_len, reterr);
out:
    unit_done(&u);
    return r;
}

struct drain_args {
    const char *cgroup;
    int64_t timeout_ns;
};

static int drain_now(void *userdata, struct berth_error *reterr)
{
    const struct drain_args *d = userdata;
    return berth_cgroup2_kill(d->cgroup, d->timeout_ns, reterr);
}

/* Fence and drain: a persistent mask (nothing restarts it), a stop, then
 * cgroup.kill until the group is empty or gone.  Proven gone = masked, no
 * pending job, group empty or absent; anything else is an error and the
 * caller tries again later. */
static int contained_destroy(void *state, const char *job_id, struct berth_error *reterr)
{
    struct contained *c = state;
    _cleanup_free_ char *cg = NULL, *active = NULL, *load = NULL, *result = NULL;
    struct unit u;
    uint32_t job = 0;
    int r, was, fenced;

    if ((r = unit_open(c, job_id, &u, reterr)) < 0)
        return r;
    if ((r = unit_cgroup(&u, &cg, reterr)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "ActiveState", &active, reterr)) < 0)
        goto out;
    was = berth_cgroup2_populated(cg, reterr);
    if (was < 0 && was != -ENOENT) {
        r = was;
        goto out;
    }
    if ((fenced = manager_mask(&u.m, u.name, reterr)) < 0) {
        /* Unfenced is no reason to leave it running: drain it now, and
         * report the failed fence (no proof without one). */
        struct berth_error ignored = BERTH_ERROR_INIT;
        (void)berth_cgroup2_kill(cg, c->drain_timeout_ns, &ignored);
        r = fenced;
        goto out;
    }
    /* The stop is queued, then cgroup.kill empties the group at once
     * (what ignores SIGTERM too); the stop job ends when it is empty. */
    {
        struct drain_args d = {.cgroup = cg, .timeout_ns = c->drain_timeout_ns};
        r = manager_run_job(&u.m, false, u.name, "replace", drain_now, &d, &result, reterr);
        if (r == -ENOENT || r == -ESRCH) /* nothing to stop: drain what may be left */
            r = drain_now(&d, reterr);
        if (r < 0)
            goto out;
    }
    /* The proof, read back. */
    free(u.path);
    u.path = NULL;
    if ((r = manager_unit_path(&u.m, u.name, &u.path, reterr)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "LoadState", &load, reterr)) < 0 ||
        (r = pending_job(&u, &job, reterr)) < 0)
        goto out;
    if (!streq(load, "masked")) {
        r = berth_error_set(reterr, -EAGAIN, "%s is %s after masking it", u.name, load);
        goto out;
    }
    if (job != 0) {
        r = berth_error_set(reterr, -EAGAIN, "%s still has job %u pending", u.name, (unsigned)job);
        goto out;
    }
    if ((r = berth_cgroup2_populated(cg, reterr)) != 0 && r != -ENOENT) {
        r = r > 0 ? berth_error_set(reterr, -EAGAIN, "cgroup %s holds processes again", cg) : r;
        goto out;
    }
    r = streq(active, "inactive") && was == -ENOENT ? -ENOENT : 0;
    if (r == -ENOENT)
        berth_error_set(reterr, -ENOENT, "%s was not running (now masked)", u.name);
out:
    unit_done(&u);
    return r;
}

/* The names units() reports, without duplicates, at most one past the limit. */
struct names {
    char **v;
    size_t n;
};

static int names_add(void *userdata, const char *name)
{
    struct names *l = userdata;
    char **v;

    size_t n = strlen(name);

    /* Any instance of the template, also one whose instance is no job id of
     * berth's (escaped, too long): recovery must see it. */
    if (strncmp(name, UNIT_PREFIX, strlen(UNIT_PREFIX)) != 0 || n >= UNIT_NAME_MAX ||
        n <= strlen(UNIT_PREFIX) + strlen(".service") || !streq(name + n - strlen(".service"), ".service"))
        return 0;
    for (size_t i = 0; i < l->n; i++)
        if (streq(l->v[i], name))
            return 0;
    if (l->n > BERTH_CONTAINMENT_UNITS_MAX)
        return 0;
    if (!(v = realloc(l->v, (l->n + 1) * sizeof(*v))) || !(v[l->n] = strdup(name))) {
        if (v)
            l->v = v;
        return -ENOMEM;
    }
    l->v = v;
    l->n++;
    return 0;
}

static void names_free(struct names *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* The groups the kernel still has below the template's slice: a unit the
 * manager forgot (or never knew) is still found while it holds processes. */
static int kernel_units(struct names *l, struct berth_error *reterr)
{
    _cleanup_close_ int fd = berth_open_trusted(BERTH_CGROUP2_ROOT "/system.slice/" UNIT_SLICE, O_RDONLY | O_DIRECTORY |
                                                O_CLOEXEC, 0, reterr);
    DIR *d;
    struct dirent *de;
    int r = 0;

    if (fd == -ENOENT)
        return 0; /* no instance has run since boot */
    if (fd < 0)
        return fd;
    if (!(d = fdopendir(fd)))
        return berth_error_set(reterr, -errno, "reading %s: %m", UNIT_SLICE);
    fd = -1; /* the DIR owns it */
    while (r == 0 && (de = readdir(d)))
        if (de->d_type == DT_DIR && strlen(de->d_name) > 8 && streq(de->d_name + strlen(de->d_name) - 8, ".service"))
            r = names_add(l, de->d_name);
    closedir(d);
    return r < 0 ? berth_error_set(reterr, r, "out of memory") : 0;
}

/* The kernel's word on @name's group in the template's slice, where an
 * instance the manager cannot report would be: 1 populated, 0 empty or
 * gone, 1 as well when it cannot be read (a unit that may hold processes is
 * never reported empty). */
static bool default_group_populated(const char *name)
{
    _cleanup_free_ char *cg = NULL;
    int r;

    if (asprintf(&cg, "/system.slice/%s/%s", UNIT_SLICE, name) < 0)
        return true;
    r = berth_cgroup2_populated(cg, NULL);
    return r == -ENOENT ? false : r != 0;
}

/* One entry of units() in *@ret: the unit @name, read through @m.  A unit
 * the manager fails to report is listed all the same, with "error"; a
 * failure that every further unit would meet as well (manager_unreachable():
 * the connection lost, a call timed out, access denied) fails the listing
 * instead, rather than wait out the timeout once per unit. */
static int unit_entry(struct manager *m, const char *name, json_t **ret, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *load = NULL, *active = NULL, *cg = NULL, *id = NULL;
    struct unit u = {.m = *m};
    size_t n = strlen(name) - strlen(UNIT_PREFIX) - strlen(".service");
    char check[sizeof(u.name)];
    json_t *jid;
    bool asked_manager = true;
    int r;

    if (!(id = strndup(name + strlen(UNIT_PREFIX), n)))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* escaped, too long or otherwise no id berth makes: job_id null */
    jid = unit_name(id, check, NULL) == 0 ? json_string(id) : json_null();
    snprintf(u.name, sizeof(u.name), "%s", name);
    if ((r = manager_unit_path(&u.m, u.name, &u.path, &err)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "LoadState", &load, &err)) < 0 ||
        (r = manager_get_string(&u.m, u.path, SD_UNIT_IFACE, "ActiveState", &active, &err)) < 0 ||
        (r = unit_cgroup(&u, &cg, &err)) < 0)
        goto out;
    asked_manager = false;
    r = berth_cgroup2_populated(cg, &err);
    if (r < 0 && r != -ENOENT)
        goto out;
    *ret = json_pack("{s:O, s:s, s:s, s:b, s:b}", "job_id", jid, "unit", name, "active_state", active, "populated",
                     r == 1, "masked", streq(load, "masked"));
    r = 0;
out:
    if (r < 0 && r != -ENOMEM && asked_manager && manager_unreachable(&u.m, r)) {
        json_decref(jid);
        free(u.path);
        return berth_error_set(reterr, r, "listing the units: %s", err.message);
    }
    if (r < 0 && r != -ENOMEM) {
        *ret = json_pack("{s:O, s:s, s:s, s:b, s:b, s:s}", "job_id", jid, "unit", name, "active_state", "unknown",
                         "populated", default_group_populated(name), "masked", load && streq(load, "masked"),
                         "error", err.message);
        r = 0;
    }
    json_decref(jid);
    free(u.path); /* u.m is @m's, closed by the caller */
    if (r == 0 && !*ret)
        r = -ENOMEM;
    return r < 0 ? berth_error_set(reterr, r, "out of memory") : 0;
}

static int contained_units(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct contained *c = state;
    struct names l = {0};
    struct manager m;
    _cleanup_json_ json_t *list = json_array();
    size_t i;
    int r;

    if (!list)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = manager_open(&m, c->socket, c->job_timeout_ns, reterr)) < 0)
        return r;
    if ((r = manager_list_units(&m, UNIT_PREFIX "*.service", names_add, &l, reterr)) < 0 ||
        (r = kernel_units(&l, reterr)) < 0)
        goto out;
    for (i = 0; i < l.n && i < BERTH_CONTAINMENT_UNITS_MAX; i++) {
        json_t *e = NULL;
        if ((r = unit_entry(&m, l.v[i], &e, reterr)) < 0)
            goto out;
        if (json_array_append_new(list, e) < 0) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            goto out;
        }
    }
    r = berth_json_emit(json_pack("{s:O, s:b}", "units", list, "truncated", l.n > BERTH_CONTAINMENT_UNITS_MAX),
                        ret_json, ret_len, reterr);
out:
    manager_close(&m);
    names_free(&l);
    return r;
}

static int contained_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct contained *c = state;
    _cleanup_free_ char *version = NULL, *controllers = NULL;
    _cleanup_close_ int fd = -1;
    struct manager m;
    size_t len = 0;
    int r;

    if ((r = manager_open(&m, c->socket, c->job_timeout_ns, reterr)) < 0)
        return r;
    r = manager_version(&m, &version, reterr);
    manager_close(&m);
    if (r < 0)
        return r;
    if ((fd = berth_open_trusted(BERTH_CGROUP2_ROOT "/cgroup.controllers", O_RDONLY | O_CLOEXEC, 0, reterr)) < 0)
        return fd;
    if ((r = berth_read_fd(fd, 4096, &controllers, &len, reterr)) < 0)
        return r;
    controllers[strcspn(controllers, "\n")] = '\0';
    return berth_json_emit(json_pack("{s:s, s:s, s:s, s:s, s:s}", "manager", "systemd", "version", version, "kill",
                                     "cgroup", "template", c->template, "controllers", controllers),
                           ret_json, ret_len, reterr);
}

static const struct berth_containment_ops_v1 ops = {
    .capabilities = contained_capabilities,
    .create = contained_create,
    .attach = contained_attach,
    .kill = contained_kill,
    .status = contained_status,
    .destroy = contained_destroy,
    .units = contained_units,
};

static const struct berth_plugin plugin = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "containment-systemd",
    .kind = BERTH_PLUGIN_CONTAINMENT,
    .version = PACKAGE_VERSION,
    .init = contained_init,
    .fini = contained_fini,
    .ops = &ops,
    .ops_size = sizeof(ops),
};

BERTH_PLUGIN_EXPORT const struct berth_plugin *berth_plugin_entry(void)
{
    return &plugin;
}
