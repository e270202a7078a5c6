/* SPDX-License-Identifier: MIT */
/* bundle.c -- the deny-all OCI runtime configuration; see bundle.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "pool.h"

#define OCI_VERSION "1.0.2"
#define HOSTNAME "sandbox"
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define CPU_PERIOD_US 100000

/* runc's defaults (libcontainer/specconv/example.go). */
static const char *const masked_paths[] = {
    "/proc/acpi",
    "/proc/asound",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/sys/firmware",
    "/proc/scsi",
    NULL,
};
static const char *const readonly_paths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};
static const char *const namespaces[] = {"pid", "ipc", "uts", "mount", "network", NULL};

static json_t *string_array(const char *const *v)
{
    json_t *a = json_array();

    for (; a && *v; v++)
        if (json_array_append_new(a, json_string(*v)) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* json_array_append_new() that turns a NULL item into failure. */
static int append(json_t *array, json_t *item)
{
    if (!item)
        return -ENOMEM;
    return json_array_append_new(array, item) < 0 ? -ENOMEM : 0;
}

static json_t *mount(const char *dest, const char *type, const char *source, json_t *options)
{
    if (!options)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", dest, "type", type, "source", source, "options", options);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* "K=V" for every template env member, PATH first unless the template has one. */
static json_t *environment(const json_t *env)
{
    _cleanup_json_ json_t *out = json_array();
    const char **keys;
    const char *k;
    json_t *v;
    size_t n = 0, i;
    bool has_path = false;

    if (!out || !json_is_object(env))
        return NULL;
    keys = calloc(json_object_size(env) + 1, sizeof(*keys));
    if (!keys)
        return NULL;
    json_object_foreach((json_t *)env, k, v)
    {
        if (!json_is_string(v) || !berth_env_name_valid(k)) {
            free(keys);
            return NULL;
        }
        keys[n++] = k;
        has_path |= streq(k, "PATH");
    }
    qsort(keys, n, sizeof(*keys), compare_names);
    if (!has_path && append(out, json_string(DEFAULT_PATH)) < 0) {
        free(keys);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        char *line = NULL;
        if (asprintf(&line, "%s=%s", keys[i], json_string_value(json_object_get(env, keys[i]))) < 0 ||
            append(out, json_string(line)) < 0) {
            free(line);
            free(keys);
            return NULL;
        }
        free(line);
    }
    free(keys);
    return TAKE_PTR(out);
}

static json_t *rlimit(const char *type, uint64_t v)
{
    return json_pack("{s:s, s:I, s:I}", "type", type, "hard", (json_int_t)v, "soft", (json_int_t)v);
}

static bool absolute_clean(const char *p)
{
    return p && berth_guest_path_valid(p) && !strchr(p, ',') && !strchr(p, '\n');
}

static uint64_t grain_floor(int64_t bytes)
{
    return bytes > 0 ? (uint64_t)bytes / BERTH_BUNDLE_TMPFS_GRAIN * BERTH_BUNDLE_TMPFS_GRAIN : 0;
}

int berth_bundle_writable_bounds(const struct berth_limits *l, struct berth_bundle_bounds *ret)
{
    uint64_t shm;

    if (!l || !ret || l->scratch_bytes < 0 || l->artifact_bytes < 0)
        return -EINVAL;
    shm = grain_floor(l->scratch_bytes / 4);
    if (shm > BERTH_BUNDLE_SHM_MAX)
        shm = BERTH_BUNDLE_SHM_MAX;
    *ret = (struct berth_bundle_bounds){
        .tmp = grain_floor(l->scratch_bytes - (int64_t)shm),
        .shm = shm,
        .outputs = grain_floor(l->artifact_bytes),
    };
    return 0;
}

/* A tmpfs the job may write at most @bytes into (nosuid, nodev, noexec,
 * mode 1777); with @bytes 0 a read-only one, since size=0 would mean "no
 * limit" to the kernel. */
static json_t *bounded_tmpfs(const char *dest, const char *source, uint64_t bytes)
{
    char size[64];

    snprintf(size, sizeof(size), "size=%" PRIu64, bytes ? bytes : (uint64_t)BERTH_BUNDLE_TMPFS_GRAIN);
    if (!bytes)
        return mount(dest, "tmpfs", source, json_pack("[s,s,s,s,s,s]", "nosuid", "nodev", "noexec", "ro", "mode=0755", size));
    return mount(dest, "tmpfs", source, json_pack("[s,s,s,s,s]", "nosuid", "nodev", "noexec", "mode=1777", size));
}

/* /tmp/outputs: a bind of the host tmpfs the plugin mounted for the job,
 * or a read-only tmpfs when the job has no room for outputs. */
static json_t *outputs_mount(const struct berth_bundle_params *p, uint64_t bytes)
{
    if (!bytes)
        return bounded_tmpfs(BERTH_BUNDLE_OUTPUTS, "tmpfs", 0);
    return mount(BERTH_BUNDLE_OUTPUTS, "bind", p->outputs_dir, json_pack("[s,s,s,s]", "bind", "nosuid", "nodev", "noexec"));
}

/* /inputs and the inputs bound read-only in it.  /inputs is an empty
 * read-only tmpfs (mode 0755), so the runtime makes the inputs' mount
 * points in it rather than in the image (runsc and crun create them before
 * the read-only flag applies; gVisor makes the directories on the way mode
 * 0777, which only a read-only /inputs keeps from the job), and the job
 * sees nothing but its inputs there. */
static int input_mounts(json_t *m, const struct berth_bundle_params *p)
{
    size_t i;

    if (p->n_inputs == 0)
        return 0;
    if (append(m, bounded_tmpfs(BERTH_BUNDLE_INPUTS, "tmpfs", 0)) < 0)
        return -ENOMEM;
    for (i = 0; i < p->n_inputs; i++)
        if (append(m, mount(p->inputs[i].guest_path, "bind", p->inputs[i].host_path,
                            json_pack("[s,s,s,s,s]", "bind", "ro", "nosuid", "nodev", "noexec"))) < 0)
            return -ENOMEM;
    return 0;
}

/* A warm slot's init (executable, nothing else). */
static int slot_mounts(json_t *m, const struct berth_bundle_params *p)
{
    if (!p->slot_init)
        return 0;
    if (append(m, mount(BERTH_BUNDLE_SLOT_INIT, "bind", p->slot_init, json_pack("[s,s,s,s]", "bind", "ro", "nosuid", "nodev"))) < 0)
        return -ENOMEM;
    return 0;
}

const char *const berth_bundle_root_mount_points[] = {
    "proc", "dev", "sys", "tmp", BERTH_BUNDLE_INPUTS_NAME, NULL,
};

/* The mounts: the fixed ones, the bounded writable ones and the inputs. */
static json_t *mounts(const struct berth_bundle_params *p)
{
    _cleanup_json_ json_t *m = json_array();
    struct berth_bundle_bounds b;

    if (!m || berth_bundle_writable_bounds(&p->job->limits, &b) < 0 ||
        append(m, mount("/proc", "proc", "proc", json_pack("[s,s,s]", "nosuid", "noexec", "nodev"))) < 0 ||
        append(m, mount("/dev", "tmpfs", "tmpfs",
                        json_pack("[s,s,s,s]", "nosuid", "strictatime", "mode=755", "size=65536k"))) < 0 ||
        append(m, mount("/dev/pts", "devpts", "devpts",
                        json_pack("[s,s,s,s,s]", "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"))) <
            0 ||
        append(m, bounded_tmpfs("/dev/shm", "shm", b.shm)) < 0 ||
        append(m, mount("/sys", "sysfs", "sysfs", json_pack("[s,s,s,s]", "nosuid", "noexec", "nodev", "ro"))) < 0 ||
        append(m, bounded_tmpfs("/tmp", "tmpfs", b.tmp)) < 0 || append(m, outputs_mount(p, b.outputs)) < 0 ||
        input_mounts(m, p) < 0 || slot_mounts(m, p) < 0)
        return NULL;
    return TAKE_PTR(m);
}

static int check_params(const struct berth_bundle_params *p, const char **ret_root, const json_t **ret_env,
                        struct berth_error *reterr)
{
    const json_t *tpl, *egress;
    struct berth_bundle_bounds bounds;
    size_t i;

    if (!p || !p->job || !p->effective || !p->rootfs || !p->rootfs[0] || strchr(p->rootfs, '\n'))
        return berth_error_set(reterr, -EINVAL, "a bundle needs a job, an effective manifest and a rootfs");
    for (i = 0; i < p->n_inputs; i++) {
        const char *g = p->inputs[i].guest_path;
        if (!g || strncmp(g, "/inputs/", 8) != 0 || !absolute_clean(g) || !absolute_clean(p->inputs[i].host_path))
            return berth_error_set(reterr, -EINVAL, "input %zu: a guest path under /inputs/ and an absolute host path",
                                   i);
    }
    if (berth_bundle_writable_bounds(&p->job->limits, &bounds) < 0 || bounds.tmp == 0)
        return berth_error_set(reterr, -EINVAL,
                               "scratch_bytes %" PRId64 " leaves no room for /tmp: an OCI bundle needs at least %d",
                               p->job->limits.scratch_bytes, BERTH_BUNDLE_TMPFS_GRAIN);
    if (p->slot_init && !absolute_clean(p->slot_init))
        return berth_error_set(reterr, -EINVAL, "a warm slot's bundle needs the absolute host path of its init");
    if (bounds.outputs && !absolute_clean(p->outputs_dir))
        return berth_error_set(reterr, -EINVAL, "artifact_bytes %" PRId64 " needs the absolute host path of the "
                                                "job's outputs tmpfs",
                               p->job->limits.artifact_bytes);
    if (!bounds.outputs && p->outputs_dir)
        return berth_error_set(reterr, -EINVAL, "artifact_bytes %" PRId64 " leaves no room for outputs: no outputs "
                                                "directory is bound",
                               p->job->limits.artifact_bytes);
    tpl = json_object_get(p->effective, "template");
    egress = json_object_get(p->effective, "network_egress_class");
    *ret_root = json_string_value(json_object_get(tpl, "root"));
    *ret_env = json_object_get(tpl, "env");
    if (!json_is_string(egress) || !*ret_root || !json_is_object(*ret_env))
        return berth_error_set(reterr, -EBADMSG,
                               "the effective manifest lacks template.root, template.env or network_egress_class");
    if (!berth_guest_path_valid(*ret_root))
        return berth_error_set(reterr, -EINVAL, "template.root must be an absolute guest path");
    if (!streq(json_string_value(egress), "none") && !streq(json_string_value(egress), "loopback"))
        return berth_error_set(reterr, -EPROTONOSUPPORT,
                               "egress class %s is not offered: an OCI bundle enforces none or loopback only",
                               json_string_value(egress));
    return 0;
}

int berth_bundle_config(const struct berth_bundle_params *p, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *process = NULL, *lnx = NULL, *doc = NULL, *rlimits = NULL, *env = NULL, *caps = NULL,
                          *ns = NULL, *slot_argv = NULL;
    const json_t *tenv = NULL, *argv;
    const char *root = NULL, *n;
    uint32_t uid, gid;
    int r;

    if ((r = check_params(p, &root, &tenv, reterr)) < 0)
        return r;
    uid = p->uid ? p->uid : BERTH_BUNDLE_DEFAULT_UID;
    gid = p->gid ? p->gid : BERTH_BUNDLE_DEFAULT_UID;
    argv = json_object_get(p->job->doc, "argv");
    env = environment(tenv);
    if (!json_is_array(argv) || !env)
        return berth_error_set(reterr, -EINVAL, "the job's argv or the template's env is malformed");
    if (p->slot_init)
        argv = slot_argv = json_pack("[s]", BERTH_BUNDLE_SLOT_INIT);
    if (!argv)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    rlimits = json_array();
    if (!rlimits || append(rlimits, rlimit("RLIMIT_NOFILE", p->nofile ? p->nofile : BERTH_BUNDLE_DEFAULT_NOFILE)) < 0 ||
        append(rlimits, rlimit("RLIMIT_CORE", 0)) < 0 ||
        (p->nproc && append(rlimits, rlimit("RLIMIT_NPROC", p->nproc)) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    caps = json_pack("{s:[], s:[], s:[], s:[], s:[]}", "bounding", "effective", "inheritable", "permitted", "ambient");
    process = json_pack("{s:b, s:{s:I, s:I}, s:O, s:O, s:s, s:O, s:O, s:b}", "terminal", 0, "user", "uid",
                        (json_int_t)uid, "gid", (json_int_t)gid, "args", argv, "env", env, "cwd", root, "capabilities",
                        caps, "rlimits", rlimits, "noNewPrivileges", 1);
    ns = json_array();
    for (const char *const *t = namespaces; ns && *t; t++)
        if (append(ns, json_pack("{s:s}", "type", *t)) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    lnx = json_pack("{s:O, s:{s:{s:I}, s:{s:I}, s:{s:I, s:I}, s:[{s:b, s:s}]}, s:o, s:o}", "namespaces", ns,
                    "resources", "memory", "limit", (json_int_t)p->job->limits.memory_bytes, "pids", "limit",
                    (json_int_t)(p->pids_ceiling ? (int64_t)p->pids_ceiling : p->job->limits.pids), "cpu", "quota",
                    (json_int_t)(p->job->limits.cpu_millis * (CPU_PERIOD_US / 1000)), "period",
                    (json_int_t)CPU_PERIOD_US, "devices", "allow", 0, "access", "rwm", "maskedPaths",
                    string_array(masked_paths), "readonlyPaths", string_array(readonly_paths));
    if (!process || !lnx || !ns)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    n = p->cgroups_path;
    if (n && (n[0] != '/' || strchr(n, '\n') || json_object_set_new(lnx, "cgroupsPath", json_string(n)) < 0))
        return berth_error_set(reterr, -EINVAL, "cgroupsPath must be an absolute path");
    doc = json_pack("{s:s, s:O, s:{s:s, s:b}, s:s, s:o, s:O}", "ociVersion", OCI_VERSION, "process", process, "root",
                    "path", p->rootfs, "readonly", 1, "hostname", HOSTNAME, "mounts", mounts(p), "linux", lnx);
    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(doc);
    return 0;
}

int berth_bundle_write(int bundle_dirfd, const json_t *config, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    if (bundle_dirfd < 0 || !config)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    if ((r = berth_json_serialize(config, BERTH_BUNDLE_CONFIG_MAX, &text, &len, reterr)) < 0)
        return r;
    return berth_publish_at(bundle_dirfd, "config.json", text, len, 0600, 0, reterr);
}
