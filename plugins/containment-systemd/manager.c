/* SPDX-License-Identifier: MIT */
/*
 * manager.c -- sd-bus calls to systemd over its private socket (see
 * manager.h).  The manager's errors come back as D-Bus error names, which
 * this maps to errno values itself: libsystemd's client side knows only the
 * generic org.freedesktop.DBus ones, and its error map is process-wide.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <time.h>

#include <berth/cleanup.h>

#include "clock.h"
#include "macro.h"
#include "manager.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER_IFACE "org.freedesktop.systemd1.Manager"

/* An errno for the manager's error @e (or for @r, libsystemd's own). */
static int bus_errno(const sd_bus_error *e, int r)
{
    static const struct {
        const char *name;
        int err;
    } map[] = {
        /* Only errnos the ops table documents (plugin.h, struct
         * berth_containment_ops_v1): a masked unit is refused (EPERM), a
         * job that conflicts with one already queued is busy (EBUSY), a
         * unit without processes has none to signal (ESRCH). */
        {"org.freedesktop.systemd1.NoSuchUnit", ENOENT},
        {"org.freedesktop.systemd1.UnitMasked", EPERM},
        {"org.freedesktop.systemd1.LoadFailed", EIO},
        {"org.freedesktop.systemd1.JobTypeNotApplicable", EINVAL},
        {"org.freedesktop.systemd1.TransactionIsDestructive", EBUSY},
        {"org.freedesktop.systemd1.UnitInactive", ESRCH},
        {"org.freedesktop.systemd1.NoSuchProcess", ESRCH},
        {"org.freedesktop.DBus.Error.AccessDenied", EACCES},
    };

    for (size_t i = 0; e && sd_bus_error_is_set(e) && i < ELEMENTSOF(map); i++)
        if (sd_bus_error_has_name(e, map[i].name))
            return -map[i].err;
    /* libsystemd's own: the connection reset or closed (ECONNRESET,
     * ENOTCONN, EPIPE), a bad message (EBADMSG), ...: none is documented
     * but these two. */
    return r == -ETIMEDOUT || r == -ENOMEM ? r : -EIO;
}

bool manager_unreachable(struct manager *m, int r)
{
    return r == -ETIMEDOUT || r == -EACCES || !m->bus || sd_bus_is_open(m->bus) <= 0;
}

static int bus_fail(const sd_bus_error *e, int r, const char *what, const char *unit, struct berth_error *reterr)
{
    return berth_error_set(reterr, bus_errno(e, r), "%s %s: %s", what, unit ? unit : "",
                           e && sd_bus_error_is_set(e) ? e->message : strerror(r < 0 ? -r : EIO));
}

/* The documented errno (plugin.h) for a system call's @e while reaching
 * the manager: no socket file, or no listener, is -ECONNREFUSED (-ENOENT
 * is the ops' word for an absent unit); a full backlog (EAGAIN on a
 * non-blocking unix socket), no descriptor left (EMFILE, ENFILE) and the
 * rest are -EIO. */
static int reach_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ECONNREFUSED:
        return -ECONNREFUSED;
    case EACCES:
    case EPERM:
        return -EACCES;
    case ENOMEM:
    case ENOBUFS:
        return -ENOMEM;
    case ETIMEDOUT:
        return -ETIMEDOUT;
    default:
        return -EIO;
    }
}

/* A connected stream socket to @path whose peer (the listener, SO_PEERCRED)
 * is uid 0, pid 1: checked before a single byte is sent. */
static int connect_manager(const char *path, struct berth_error *reterr)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct ucred peer;
    socklen_t len = sizeof(peer);
    _cleanup_close_ int fd = -1;
    int r;

    if (strlen(path) >= sizeof(sa.sun_path))
        return berth_error_set(reterr, -EIO, "the manager socket path %s is too long", path);
    memcpy(sa.sun_path, path, strlen(path));
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0)
        return berth_error_set(reterr, reach_errno(errno), "socket: %m");
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return berth_error_set(reterr, reach_errno(errno), "cannot reach the service manager at %s: %m", path);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) < 0)
        return berth_error_set(reterr, reach_errno(errno), "SO_PEERCRED of %s: %m", path);
    if (peer.uid != 0 || peer.pid != 1)
        return berth_error_set(reterr, -EACCES, "%s is served by pid %d uid %u, not the service manager (root's pid 1)",
                               path, (int)peer.pid, (unsigned)peer.uid);
    r = fd;
    fd = -1;
    return r;
}

int manager_open(struct manager *m, const char *path, int64_t job_timeout_ns, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r, fd;

    *m = (struct manager){.job_timeout_ns = job_timeout_ns};
    if (!path || path[0] != '/')
        return berth_error_set(reterr, -EINVAL, "the manager socket must be an absolute path");
    if ((fd = connect_manager(path, reterr)) < 0)
        return fd;
    if ((r = sd_bus_new(&m->bus)) < 0) {
        close(fd);
        return berth_error_set(reterr, r, "sd_bus_new: %s", strerror(-r));
    }
    if ((r = sd_bus_set_fd(m->bus, fd, fd)) < 0) {
        close(fd);
        manager_close(m);
        return berth_error_set(reterr, r, "sd_bus_set_fd: %s", strerror(-r));
    }
    /* From here the bus owns fd. */
    if ((r = sd_bus_start(m->bus)) < 0) {
        manager_close(m);
        return berth_error_set(reterr, bus_errno(NULL, r), "no D-Bus handshake with the service manager at %s: %s",
                               path, strerror(-r));
    }
    /* A direct connection gets the manager's signals (JobRemoved) once it subscribed. */
    r = sd_bus_call_method(m->bus, SD_DEST, SD_PATH, SD_MANAGER_IFACE, "Subscribe", &e, NULL, "");
    if (r < 0) {
        r = bus_fail(&e, r, "Subscribe", NULL, reterr);
        sd_bus_error_free(&e);
        manager_close(m);
        return r;
    }
    return 0;
}

void manager_close(struct manager *m)
{
    if (m && m->bus) {
        sd_bus_flush_close_unref(m->bus);
        m->bus = NULL;
    }
}

int manager_unit_path(struct manager *m, const char *name, char **ret_path, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    const char *path;
    int r;

    r = sd_bus_call_method(m->bus, SD_DEST, SD_PATH, SD_MANAGER_IFACE, "LoadUnit", &e, &reply, "s", name);
    if (r < 0)
        r = bus_fail(&e, r, "LoadUnit", name, reterr);
    else if ((r = sd_bus_message_read(reply, "o", &path)) < 0)
        r = bus_fail(NULL, r, "LoadUnit reply of", name, reterr);
    else if (!(*ret_path = strdup(path)))
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    sd_bus_error_free(&e);
    sd_bus_message_unref(reply);
    return r < 0 ? r : 0;
}

int manager_get(struct manager *m, const char *path, const char *iface, const char *prop, const char *sig,
                sd_bus_message **reply, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_get_property(m->bus, SD_DEST, path, iface, prop, &e, reply, sig);

    if (r < 0)
        r = bus_fail(&e, r, "reading property", prop, reterr);
    sd_bus_error_free(&e);
    return r < 0 ? r : 0;
}

int manager_get_string(struct manager *m, const char *path, const char *iface, const char *prop, char **ret,
                       struct berth_error *reterr)
{
    sd_bus_message *reply = NULL;
    const char *s;
    int r;

    if ((r = manager_get(m, path, iface, prop, "s", &reply, reterr)) < 0)
        return r;
    if ((r = sd_bus_message_read(reply, "s", &s)) < 0)
        r = bus_fail(NULL, r, "reading property", prop, reterr);
    else if (!(*ret = strdup(s)))
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    sd_bus_message_unref(reply);
    return r < 0 ? r : 0;
}

struct job_wait {
    char *want; /* the job's object path, once StartUnit/StopUnit answered */
    char *result;
    int error;
};

/* JobRemoved(u id, o job, s unit, s result) */
static int on_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *e)
{
    struct job_wait *w = userdata;
    const char *job, *unit, *result;
    uint32_t id;

    (void)e;
    if (sd_bus_message_read(msg, "uoss", &id, &job, &unit, &result) < 0)
        return 0;
    if (w->want && !w->result && streq(job, w->want) && !(w->result = strdup(result)))
        w->error = -ENOMEM;
    return 0;
}

int manager_run_job(struct manager *m, bool start, const char *name, const char *mode,
                    int (*queued)(void *userdata, struct berth_error *reterr), void *userdata, char **ret_result,
                    struct berth_error *reterr)
{
    const char *method = start ? "StartUnit" : "StopUnit";
    struct job_wait w = {0};
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    sd_bus_slot *slot = NULL;
    const char *job;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, m->job_timeout_ns);
    int r;

    r = sd_bus_match_signal(m->bus, &slot, NULL, SD_PATH, SD_MANAGER_IFACE, "JobRemoved", on_job_removed, &w);
    if (r < 0)
        return bus_fail(NULL, r, "watching the jobs of", name, reterr);
    r = sd_bus_call_method(m->bus, SD_DEST, SD_PATH, SD_MANAGER_IFACE, method, &e, &reply, "ss", name, mode);
    if (r < 0) {
        r = bus_fail(&e, r, method, name, reterr);
        goto out;
    }
    if ((r = sd_bus_message_read(reply, "o", &job)) < 0 || !(w.want = strdup(job))) {
        r = r < 0 ? bus_fail(NULL, r, method, name, reterr) : berth_error_set(reterr, -ENOMEM, "out of memory");
        goto out;
    }
    if (queued && (r = queued(userdata, reterr)) < 0)
        goto out;
    /* The signal may already sit in the read queue: process it before waiting. */
    while (!w.result && !w.error) {
        int64_t now;

        if ((r = sd_bus_process(m->bus, NULL)) < 0) {
            r = bus_fail(NULL, r, "waiting for the job of", name, reterr);
            goto out;
        }
        if (r > 0)
            continue;
        if (berth_now_ns(CLOCK_MONOTONIC, &now, reterr) < 0) {
            r = -EIO;
            goto out;
        }
        if (now >= until) {
            r = berth_error_set(reterr, -ETIMEDOUT, "%s %s: job %s did not finish within %lld ms", method, name,
                                w.want, (long long)(m->job_timeout_ns / 1000000));
            goto out;
        }
        if ((r = sd_bus_wait(m->bus, (uint64_t)((until - now) / 1000))) < 0) {
            r = bus_fail(NULL, r, "waiting for the job of", name, reterr);
            goto out;
        }
    }
    if (w.error) {
        r = berth_error_set(reterr, w.error, "out of memory");
        goto out;
    }
    *ret_result = w.result;
    w.result = NULL;
    r = 0;
out:
    sd_bus_slot_unref(slot);
    sd_bus_message_unref(reply);
    sd_bus_error_free(&e);
    free(w.want);
    free(w.result);
    return r;
}

int manager_kill(struct manager *m, const char *name, int signo, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    int r = sd_bus_call_method(m->bus, SD_DEST, SD_PATH, SD_MANAGER_IFACE, "KillUnit", &e, NULL, "ssi", name, "all",
                               (int32_t)signo);

    if (r < 0)
        r = bus_fail(&e, r, "KillUnit", name, reterr);
    sd_bus_error_free(&e);
    return r < 0 ? r : 0;
}

int manager_mask(struct manager *m, const char *name, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *call = NULL;
    int r;

    if ((r = sd_bus_message_new_method_call(m->bus, &call, SD_DEST, SD_PATH, SD_MANAGER_IFACE, "MaskUnitFiles")) < 0 ||
        (r = sd_bus_message_append_strv(call, (char *[]){(char *)name, NULL})) < 0 ||
        (r = sd_bus_message_append(call, "bb", 0, 1)) < 0) {
        sd_bus_message_unref(call);
        return bus_fail(NULL, r, "MaskUnitFiles", name, reterr);
    }
    r = sd_bus_call(m->bus, call, 0, &e, NULL);
    sd_bus_message_unref(call);
    if (r < 0) {
        r = bus_fail(&e, r, "MaskUnitFiles", name, reterr);
        sd_bus_error_free(&e);
        return r;
    }
    r = sd_bus_call_method(m->bus, SD_DEST, SD_PATH, SD_MANAGER_IFACE, "Reload", &e, NULL, "");
    if (r < 0)
        r = bus_fail(&e, r, "Reload after masking", name, reterr);
    sd_bus_error_free(&e);
    return r < 0 ? r : 0;
}

int manager_list_units(struct manager *m, const char *pattern, int (*each)(void *userdata, const char *name),
                       void *userdata, struct berth_error *reterr)
{
    sd_bus_error e = SD_BUS_ERROR_NULL;
    sd_bus_message *call = NULL, *reply = NULL;
    const char *name;
    int r;

    if ((r = sd_bus_message_new_method_call(m->bus, &call, SD_DEST, SD_PATH, SD_MANAGER_IFACE,
                                            "ListUnitsByPatterns")) < 0 ||
        (r = sd_bus_message_append_strv(call, (char *[]){NULL})) < 0 ||
        (r = sd_bus_message_append_strv(call, (char *[]){(char *)pattern, NULL})) < 0) {
        sd_bus_message_unref(call);
        return bus_fail(NULL, r, "ListUnitsByPatterns", pattern, reterr);
    }
    r = sd_bus_call(m->bus, call, 0, &e, &reply);
    sd_bus_message_unref(call);
    if (r < 0) {
        r = bus_fail(&e, r, "ListUnitsByPatterns", pattern, reterr);
        sd_bus_error_free(&e);
        return r;
    }
    /* a(ssssssouso): name, description, load, active, sub, following, path, job id, type, path */
    if ((r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)")) < 0)
        goto bad;
    while ((r = sd_bus_message_enter_container(reply, 'r', "ssssssouso")) > 0) {
        if ((r = sd_bus_message_read(reply, "s", &name)) < 0 || (r = sd_bus_message_skip(reply, "sssssouso")) < 0 ||
            (r = sd_bus_message_exit_container(reply)) < 0)
            goto bad;
        if ((r = each(userdata, name)) < 0) {
            sd_bus_message_unref(reply);
            return r;
        }
    }
    if (r < 0)
        goto bad;
    sd_bus_message_unref(reply);
    return 0;
bad:
    sd_bus_message_unref(reply);
    return bus_fail(NULL, r, "reading the reply of ListUnitsByPatterns", pattern, reterr);
}

int manager_version(struct manager *m, char **ret, struct berth_error *reterr)
{
    return manager_get_string(m, SD_PATH, SD_MANAGER_IFACE, "Version", ret, reterr);
}
