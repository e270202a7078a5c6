/* SPDX-License-Identifier: MIT */
/*
 * runtime-oci -- berth's runtime plugin for any OCI runtime with the
 * standard command line (create, start, state, kill, delete): gVisor's
 * runsc, crun, runc.  One backend per configured runtime (ocicfg.h).
 *
 * start() checks the dispatch document and the runtime's pin, claims the
 * job id by creating its job directory exclusively (jobdir.h: the directory
 * is the tombstone, so a started id is never started again), writes the
 * deny-all OCI bundle (bundle.h) around the rootfs berthd staged, and hands
 * the job to a detached berth-oci-shim, which owns the container from
 * `create` to `delete` and writes result.json.  inspect(), cancel() and
 * reap() only read and write the job directory; a shim that died without a
 * result is replaced by `berth-oci-shim cleanup`, which kills and deletes
 * the container and records "runtime_lost".  Because the shim outlives
 * berthd, a job keeps running across a berthd restart and its result is
 * found afterwards.
 *
 * Inputs and outputs (ABI 1.1): the staged inputs berthd names in the
 * dispatch's inputs_dir are bound read-only (bundle.h, binding.h); a job
 * with room for outputs gets a tmpfs of its own in its job directory
 * (outmount.h), mounted here before the shim runs, whose declared outputs
 * the shim checks and hashes after the sandbox stopped (outcheck.h) into
 * result.json; open_output() hands out checked descriptors of them until
 * reap() unmounts it, and forget() drops the tombstone.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <berth/plugin.h>

#include "binding.h"
#include "bundle.h"
#include "canon.h"
#include "cgroup.h"
#include "clock.h"
#include "digest.h"
#include "encoding.h"
#include "fsutil.h"
#include "job.h"
#include "jobstore.h"
#include "jobdir.h"
#include "jsonobj.h"
#include "macro.h"
#include "oci.h"
#include "ocicfg.h"
#include "outcheck.h"
#include "outmount.h"
#include "tree.h"
#include "watch.h"

#ifndef BERTH_OCI_SHIM_PATH
#error "BERTH_OCI_SHIM_PATH must name the installed berth-oci-shim"
#endif
#ifndef BERTH_OCI_SLOT_INIT_PATH
#error "BERTH_OCI_SLOT_INIT_PATH must name the installed berth-slot-init"
#endif

#define DISPATCH_MAX (2 * 1024 * 1024)
#define CANCEL_WAIT_NS (3LL * 1000000000LL) /* then -ETIMEDOUT: berthd asks again on its next pass */
#define REAP_WAIT_NS (10LL * 1000000000LL)  /* for a shim that wrote its result to exit */
#define TEARDOWN_WAIT_NS (2LL * 1000000000LL) /* for the job's cgroup to empty after SIGKILL */
#define VERSION_MAX OCI_VERSION_MAX

extern char **environ;


bool oci_run_id_ok(const char *id)
{
    size_t i;

    if (!id || strlen(id) != BERTH_RUN_ID_LEN || id[0] != 'r')
        return false;
    for (i = 1; i < BERTH_RUN_ID_LEN; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

/* mkdir -p @path: missing parents 0755, the last component 0700; it must end up a private directory we own. */
static int make_private_dir(const char *path, struct berth_error *reterr)
{
    _cleanup_free_ char *p = strdup(path);
    struct stat st;
    char *s;

    if (!p)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
            return berth_error_set(reterr, -errno, "cannot create %s: %m", p);
        *s = '/';
    }
    if (mkdir(p, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s: %m", p);
    if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return berth_error_set(reterr, -EPERM, "%s must be a directory owned by uid %u with mode 0700", p,
                               (unsigned)geteuid());
    return 0;
}

/* The runtime's argv prefix: path, --root, the global flags. */
static json_t *runtime_prefix(const struct oci *o)
{
    json_t *a = json_pack("[s, s, s]", o->cfg.pin.path, "--root", o->root_dir);
    size_t i;

    for (i = 0; a && i < o->cfg.n_global_args; i++)
        if (json_array_append_new(a, json_string(o->cfg.global_args[i])) < 0) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* The first line the program open on @exec_fd prints on stdout when run
 * with @argv (at most VERSION_MAX bytes, waiting at most 10 s) into @buf;
 * "" when it prints nothing.  The program is executed from @exec_fd (as
 * /proc/self/fd/3 in the child), never by path: the file checked is the
 * file run, whatever happens at its path meanwhile. */
static void first_line(int exec_fd, char *const argv[], char buf[VERSION_MAX])
{
    static const char exec_path[] = "/proc/self/fd/3";
    posix_spawn_file_actions_t fa;
    int p[2], st;
    pid_t pid;
    size_t n = 0;

    buf[0] = '\0';
    if (pipe2(p, O_CLOEXEC) < 0)
        return;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        close(p[0]);
        close(p[1]);
        return;
    }
    /* Only stdin, stdout and stderr: nothing berthd inherited from its parent. */
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, p[1], 1) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawn_file_actions_adddup2(&fa, exec_fd, 3) != 0 || posix_spawn_file_actions_addclosefrom_np(&fa, 4) != 0)
        st = ENOMEM;
    else
        st = posix_spawn(&pid, exec_path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (st == 0) {
        for (;;) {
            struct pollfd pfd = {.fd = p[0], .events = POLLIN};
            ssize_t k;
            if (n >= VERSION_MAX - 1 || poll(&pfd, 1, 10000) <= 0)
                break;
            k = read(p[0], buf + n, VERSION_MAX - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
        }
        kill(pid, SIGKILL);
        (void)waitpid(pid, &st, 0);
    }
    close(p[0]);
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* Check the runtime against its pin and, when it passes, read the first
 * line of `runtime --version` (for capabilities) from the very file checked. */
static int verify_runtime(struct oci *o, struct berth_error *reterr)
{
    char *argv[] = {(char *)o->cfg.pin.path, "--version", NULL};
    _cleanup_close_ int fd = -1;
    int r;

    fd = berth_open_trusted(o->cfg.pin.path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    if ((r = oci_pin_verify_fd(fd, o->cfg.pin.path, &o->cfg.pin, &o->cfg.pin_cache, reterr)) < 0)
        return r;
    if (strcmp(o->version, "unknown") == 0 || !o->version[0]) {
        first_line(fd, argv, o->version);
        if (!o->version[0])
            snprintf(o->version, sizeof(o->version), "unknown");
    }
    return 0;
}

/* verify_runtime() under the instance's lock; @version (VERSION_MAX bytes) gets its version. */
static int check_runtime(struct oci *o, char *version, struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&o->lock);
    r = verify_runtime(o, reterr);
    snprintf(version, VERSION_MAX, "%s", o->version);
    pthread_mutex_unlock(&o->lock);
    return r;
}

/* oci_pin_check() under the instance's lock (it updates the pin cache);
 * on success *ret_seen (optional) gets the identity and digest of the file
 * it checked, which then is the pin's. */
int oci_runtime_pin_check(struct oci *o, struct oci_pin_cache *ret_seen, struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&o->lock);
    r = oci_pin_check(&o->cfg, reterr);
    if (r == 0 && ret_seen)
        *ret_seen = o->cfg.pin_cache;
    pthread_mutex_unlock(&o->lock);
    return r;
}

/* The shim must be trusted like the runtime (it runs as root) and answer as berth-oci-shim. */
static int check_shim(struct oci *o, struct berth_error *reterr)
{
    /* O_NONBLOCK: a FIFO at the path must not block the open. */
    _cleanup_close_ int fd = berth_open_trusted(o->cfg.shim, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    char *argv[] = {(char *)o->cfg.shim, "--version", NULL};
    char line[VERSION_MAX];
    int r;

    if (fd < 0) {
        berth_error_prefix(reterr, "shim");
        return fd;
    }
    if ((r = berth_trusted_file_check(fd, o->cfg.shim, 0, NULL, reterr)) < 0) {
        berth_error_prefix(reterr, "shim");
        return r;
    }
    if ((r = berth_digest_fd(fd, o->shim_sha256)) < 0)
        return berth_error_set(reterr, r, "shim %s: cannot read it: %s", o->cfg.shim, strerror(-r));
    first_line(fd, argv, line);
    if (strncmp(line, "berth-oci-shim ", 15) != 0)
        return berth_error_set(reterr, -EINVAL, "shim %s is not berth-oci-shim (its --version said \"%.64s\")",
                               o->cfg.shim, line);
    return 0;
}

/*
 * One backend per state directory: its jobs and runtime root are its own.
 * The instance holding the flock writes its backend name to STATE/owner.
 * Held by the *same* backend name, the holder is another process serving
 * this backend (berthd --check while berthd runs): init succeeds and every
 * operation but capabilities() needs the lock first (-EAGAIN until then).
 * Held under another name, two backends share the directory: refused.
 */
static int claim_state_dir(struct oci *o, struct berth_error *reterr)
{
    char owner[128] = "";
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    const struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = sizeof(owner) - 1};

    if (o->locked)
        return 0;
    if (flock(o->lockfd, LOCK_EX | LOCK_NB) == 0) {
        o->locked = true;
        return berth_publish_at(o->lockfd, "owner", o->host->instance, strlen(o->host->instance), 0600,
                                BERTH_PUBLISH_REPLACE, reterr);
    }
    if (errno != EWOULDBLOCK)
        return berth_error_set(reterr, -errno, "cannot lock %s: %m", o->cfg.state_directory);
    if (berth_read_file_at(o->lockfd, "owner", &expect, &text, &len, NULL) == 0)
        snprintf(owner, sizeof(owner), "%s", text);
    if (!streq(owner, o->host->instance))
        return berth_error_set(reterr, -EBUSY, "state_directory %s is in use by another backend (%s)",
                               o->cfg.state_directory, owner[0] ? owner : "unknown");
    return berth_error_set(reterr, -EAGAIN, "state_directory %s is in use by another process serving backend %s",
                           o->cfg.state_directory, owner);
}

/* claim_state_dir() under the instance's lock. */
int oci_take_state_lock(struct oci *o, struct berth_error *reterr)
{
    int r;

    pthread_mutex_lock(&o->lock);
    r = claim_state_dir(o, reterr);
    pthread_mutex_unlock(&o->lock);
    return r;
}

static int oci_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                    struct berth_error *reterr)
{
    struct oci *o = calloc(1, sizeof(*o));
    struct berth_error err = BERTH_ERROR_INIT;
    char version[VERSION_MAX];
    int r;

    if (!o)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    o->host = host;
    o->jobsfd = o->slotsfd = o->bundlesfd = o->lockfd = o->copy_fd = -1;
    pthread_mutex_init(&o->lock, NULL);
    if ((r = oci_config_parse(config, config_len, BERTH_OCI_SHIM_PATH, &o->cfg, reterr)) < 0)
        goto fail;
    /* plugin.h: a runtime given a containment runs every job in it, or
     * refuses it; runtime-oci runs them (contained.c). */
    if ((r = oci_contained_bind(o, reterr)) < 0)
        goto fail;
    if (!o->cfg.slot_init)
        o->cfg.slot_init = BERTH_OCI_SLOT_INIT_PATH;
    if (asprintf(&o->jobs_dir, "%s/jobs", o->cfg.state_directory) < 0 ||
        asprintf(&o->slots_dir, "%s/slots", o->cfg.state_directory) < 0 ||
        asprintf(&o->bundles_dir, "%s/bundles", o->cfg.state_directory) < 0 ||
        asprintf(&o->root_dir, "%s/root", o->cfg.state_directory) < 0) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto fail;
    }
    if ((r = make_private_dir(o->cfg.state_directory, reterr)) < 0 || (r = make_private_dir(o->jobs_dir, reterr)) < 0 ||
        (r = make_private_dir(o->root_dir, reterr)) < 0 || (r = make_private_dir(o->slots_dir, reterr)) < 0 ||
        (r = make_private_dir(o->bundles_dir, reterr)) < 0)
        goto fail;
    o->jobsfd = berth_open_trusted(o->jobs_dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (o->jobsfd < 0) {
        r = o->jobsfd;
        goto fail;
    }
    o->slotsfd = berth_open_trusted(o->slots_dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (o->slotsfd < 0) {
        r = o->slotsfd;
        goto fail;
    }
    o->bundlesfd = berth_open_trusted(o->bundles_dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (o->bundlesfd < 0) {
        r = o->bundlesfd;
        goto fail;
    }
    if ((r = check_shim(o, reterr)) < 0)
        goto fail;
    o->lockfd = openat(o->jobsfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->lockfd < 0) {
        r = berth_error_set(reterr, -errno, "cannot open %s: %m", o->cfg.state_directory);
        goto fail;
    }
    if ((r = oci_take_state_lock(o, reterr)) < 0 && r != -EAGAIN)
        goto fail;
    /* A runtime that fails its pin is reported by capabilities(); berthd still starts. */
    if (check_runtime(o, version, &err) < 0)
        host->log(host, BERTH_LOG_WARNING, "%s", err.message);
    if (!o->cfg.has_broker_key)
        host->log(host, BERTH_LOG_WARNING,
                  "no broker_public_key in its configuration: receipts are not verified before create");
    /* Without the watcher berthd still finds every result, on its reconcile passes. */
    if (oci_watch_start(host, &o->watch, &err) < 0)
        host->log(host, BERTH_LOG_WARNING, "job exits are not notified, only polled: %s", err.message);
    *ret_state = o;
    return 0;
fail:
    if (o->jobsfd >= 0)
        close(o->jobsfd);
    if (o->slotsfd >= 0)
        close(o->slotsfd);
    if (o->bundlesfd >= 0)
        close(o->bundlesfd);
    free(o->slots_dir);
    free(o->bundles_dir);
    if (o->lockfd >= 0)
        close(o->lockfd);
    free(o->jobs_dir);
    free(o->root_dir);
    oci_config_clear(&o->cfg);
    pthread_mutex_destroy(&o->lock);
    free(o);
    return r;
}

static void oci_fini(void *state)
{
    struct oci *o = state;

    if (!o)
        return;
    oci_watch_stop(o->watch); /* first: its thread calls the host, never after fini */
    close(o->jobsfd);
    close(o->slotsfd);
    close(o->bundlesfd);
    close(o->lockfd);
    if (o->copy_fd >= 0)
        close(o->copy_fd);
    free(o->jobs_dir);
    free(o->slots_dir);
    free(o->bundles_dir);
    free(o->root_dir);
    oci_config_clear(&o->cfg);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

int oci_give_json(json_t *doc, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    int r;

    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = berth_json_serialize(doc, 0, ret_json, ret_len, reterr);
    json_decref(doc);
    return r;
}

static int oci_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct oci *o = state;
    char version[VERSION_MAX];
    int r;

    json_t *caps;

    r = check_runtime(o, version, reterr);
    if (r < 0)
        return r;
    caps = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s, s:s, s:[s, s], s:[s, s, s, s], s:{s:I, s:I, s:I, s:I}, s:s}", "backend",
                  "oci", "runtime", "path", o->cfg.pin.path, "version", version, "sha256", o->cfg.pin.sha256,
                  "shim_sha256", o->shim_sha256, "isolation", o->cfg.isolation, "egress_classes", "none", "loopback",
                  "capabilities", "exec", "file_rw", "inputs", "outputs", "limits", "output_bytes", (json_int_t)BERTH_LIMIT_OUTPUT_BYTES_MAX,
                  "pids", (json_int_t)BERTH_LIMIT_PIDS_MAX, "memory_bytes", (json_int_t)BERTH_LIMIT_MEMORY_BYTES_MAX,
                  "scratch_bytes", (json_int_t)BERTH_LIMIT_SCRATCH_BYTES_MAX, "qualification", "unqualified");
    if (caps && o->cops && oci_contained_capabilities(o, caps) < 0) {
        json_decref(caps);
        caps = NULL;
    }
    return oci_give_json(caps, ret_json, ret_len, reterr);
}

/* ------------------------------------------------------------------------- */
/* start                                                                      */


void oci_dispatch_clear(struct dispatch *d)
{
    json_decref(d->doc);
    berth_job_free(d->job);
    memset(d, 0, sizeof(*d));
}

int oci_dispatch_parse(const struct oci *o, const char *text, size_t len, struct dispatch *d,
                          struct berth_error *reterr)
{
    const json_t *receipt;
    json_int_t sv;
    int r;

    memset(d, 0, sizeof(*d));
    d->text = text;
    d->len = len;
    if ((r = berth_json_parse(text, len, DISPATCH_MAX, &d->doc, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    sv = json_integer_value(json_object_get(d->doc, "schema_version"));
    receipt = json_object_get(json_object_get(d->doc, "receipt"), "receipt");
    d->run_id = json_string_value(json_object_get(receipt, "run_id"));
    d->effective = json_object_get(d->doc, "effective");
    d->rootfs = json_string_value(json_object_get(d->doc, "rootfs"));
    if (sv != 1 || !oci_run_id_ok(d->run_id) || !json_is_object(d->effective) ||
        berth_json_ns_value(json_object_get(receipt, "deadline"), &d->deadline) < 0)
        return berth_error_set(reterr, -EBADMSG, "not a schema_version 1 dispatch document");
    if (!d->rootfs || d->rootfs[0] != '/')
        return berth_error_set(reterr, -EBADMSG,
                               "the dispatch document has no staged rootfs: berthd needs an image source "
                               "(\"images\" in berthd.json) to run jobs on an OCI runtime");
    if ((r = berth_job_from_json(json_object_get(d->doc, "job"), &d->job, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    /* The shim checks these again before create; refusing here creates nothing. */
    if ((r = oci_binding_check_inputs(d->doc, d->job, reterr)) < 0)
        return r;
    return oci_binding_verify(d->doc, d->job, o->cfg.has_broker_key ? o->cfg.broker_key : NULL, reterr);
}

/* Write the bundle and shim.json into the new job directory @jobfd, and,
 * for a job with room for outputs (@outputs bytes, 0 for none), the empty
 * mount point of its outputs tmpfs, which shim.json announces before
 * start() mounts it. */
int oci_prepare(struct oci *o, const struct dispatch *d, int jobfd, const char *jobdir, uint64_t outputs,
                const char *slot_init, struct berth_error *reterr)
{
    _cleanup_free_ char *bundle = NULL, *outputs_dir = NULL;
    _cleanup_json_ json_t *config = NULL, *shim = NULL, *params = NULL, *mount = NULL;
    _cleanup_free_ char *text = NULL;
    _cleanup_close_ int bundlefd = -1;
    char cgroup[OCI_CGROUP_PATH_MAX];
    size_t len = 0;
    int r;

    /* A slot's bundle stays where `create` saw it when the claim renames the
     * slot's directory (runsc reads config.json again at `start`). */
    if ((slot_init ? asprintf(&bundle, "%s/%s", o->bundles_dir, d->run_id)
                   : asprintf(&bundle, "%s/%s", jobdir, OCI_JOB_BUNDLE)) < 0 ||
        (outputs && asprintf(&outputs_dir, "%s/%s", jobdir, OCI_JOB_OUTPUTS) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (slot_init) {
        if (mkfifoat(jobfd, OCI_SLOT_CLAIMED, 0600) < 0)
            return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", jobdir, OCI_SLOT_CLAIMED);
        if ((r = berth_publish_at(jobfd, OCI_SLOT_ID, d->run_id, strlen(d->run_id), 0600, 0, reterr)) < 0)
            return r;
    }
    if (outputs) {
        mount = json_pack("{s:I, s:i, s:I, s:I}", "size", (json_int_t)outputs, "nr_inodes", OCI_OUTPUTS_INODES, "uid",
                          (json_int_t)o->cfg.uid, "gid", (json_int_t)o->cfg.gid);
        if (!mount)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        if (mkdirat(jobfd, OCI_JOB_OUTPUTS, 0700) < 0)
            return berth_error_set(reterr, -errno, "cannot create %s: %m", outputs_dir);
    }
    {
        /* provision() made a slot's (the id's claim); a job's is made here. */
        int parent = slot_init ? o->bundlesfd : jobfd;
        const char *name = slot_init ? d->run_id : OCI_JOB_BUNDLE;
        if (!slot_init && mkdirat(parent, name, 0700) < 0)
            return berth_error_set(reterr, -errno, "cannot create the bundle %s: %m", bundle);
        bundlefd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (bundlefd < 0)
        return berth_error_set(reterr, -errno, "cannot prepare %s: %m", jobdir);
    if ((r = oci_cgroup_path(o->cfg.state_directory, d->run_id, cgroup)) < 0)
        return berth_error_set(reterr, r, "cannot name the job's cgroup: %s", strerror(-r));
    /* What the shim rebuilds config.json from (binding.h).  A contained job
     * has no cgroupsPath: its runtime makes no group of its own, and the
     * job stays in its unit's payload group (contained.c). */
    params = json_pack("{s:I, s:I, s:I, s:I, s:s*, s:s*, s:s*}", "uid", (json_int_t)o->cfg.uid, "gid",
                       (json_int_t)o->cfg.gid, "nproc", (json_int_t)(o->cfg.pids_ceiling ? d->job->limits.pids : 0),
                       "pids_ceiling", (json_int_t)o->cfg.pids_ceiling, "cgroups_path", o->cops ? NULL : cgroup,
                       "outputs_dir", outputs_dir, "slot_init", slot_init);
    if (!params)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = oci_binding_config(d->doc, d->job, params, &config, reterr)) < 0 ||
        (r = berth_bundle_write(bundlefd, config, reterr)) < 0 ||
        (r = berth_publish_at(jobfd, slot_init ? OCI_SLOT_DOC : OCI_JOB_DISPATCH, d->text, d->len, 0600, 0, reterr)) <
            0)
        return r;
    /* "identity": the file start() just hashed, so the shim hashes the
     * runtime again only when the file at the path is another one. */
    shim = json_pack("{s:s, s:s, s:o, s:{s:s, s:I, s:i, s:o*}, s:O*, s:o, s:I, s:O, s:s*, s:s, s:s*, s:O*, s:O*}",
                     "id", d->run_id, "bundle", bundle, "runtime", runtime_prefix(o), "pin", "sha256",
                     o->cfg.pin.sha256, "size", (json_int_t)o->cfg.pin.size, "mode", (int)o->cfg.pin.mode, "identity",
                     streq(d->pin_seen.digest, o->cfg.pin.sha256) ? oci_pin_identity_json(&d->pin_seen) : NULL,
                     "unmount", o->cfg.unmount, "deadline_ns", berth_json_ns(d->deadline), "output_bytes",
                     (json_int_t)d->job->limits.output_bytes, "bundle_params", params, "cgroup",
                     o->cops ? NULL : cgroup, "isolation", o->cfg.isolation, "broker_public_key",
                     o->cfg.broker_key_b64, "outputs_mount", mount, "create_args",
                     json_object_get(o->cfg.doc, "create_args"));
    /* Only when off: the shim's default is the sealed copy. */
    if (shim && !o->cfg.sealed_copy && json_object_set_new(shim, "sealed_copy", json_false()) < 0) {
        json_decref(shim);
        shim = NULL;
    }
    if (shim && o->cops &&
        json_object_set_new(shim, "contained",
                            json_pack("{s:b}", "cgroup_limits_required", o->cfg.cgroup_limits_required)) < 0) {
        json_decref(shim);
        shim = NULL;
    }
    if (!shim)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = berth_json_serialize(shim, 0, &text, &len, reterr)) < 0 ||
        (r = berth_publish_at(jobfd, OCI_JOB_SHIM_CONFIG, text, len, 0600, 0, reterr)) < 0)
        return r;
    if (mkfifoat(jobfd, OCI_JOB_CONTROL, 0600) < 0)
        return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", jobdir, OCI_JOB_CONTROL);
    if (o->cops && mkfifoat(jobfd, OCI_JOB_SYNC, 0600) < 0)
        return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", jobdir, OCI_JOB_SYNC);
    return 0;
}

/* How long after a failure to make the backend's copy the next shim start
 * tries again (meanwhile each shim makes its own, as without one). */
#define COPY_RETRY_NS (60 * 1000000000LL)

/* The backend's sealed copy of its runtime, made on first use from the
 * checked file (oci_pin_sealed_copy() hashes it as it copies, against the
 * pin) and kept until fini, on a descriptor of 10 or more (never one that
 * oci_run_shim() moves another descriptor onto): every shim then runs the
 * runtime from it without copying or hashing the runtime itself.  -1 when
 * there is none: a runtime over OCI_SEALED_RUNTIME_MAX, "sealed_copy":
 * false, a host where no executable memfd can be made (never tried again),
 * or a failure now (tried again after COPY_RETRY_NS).  The descriptor stays
 * open until fini: callers use it unlocked. */
static int oci_runtime_copy(struct oci *o)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int fd = -1;
    int64_t now = 0;
    int r, copy;

    pthread_mutex_lock(&o->lock);
    if (o->copy_fd >= 0 || o->copy_off || !o->cfg.sealed_copy || o->cfg.pin.size > OCI_SEALED_RUNTIME_MAX ||
        berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 || now < o->copy_retry_at) {
        copy = o->copy_fd;
        pthread_mutex_unlock(&o->lock);
        return copy;
    }
    fd = berth_open_trusted(o->cfg.pin.path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, &err);
    r = fd < 0 ? fd : oci_pin_sealed_copy(fd, o->cfg.pin.path, &o->cfg.pin, &err);
    if (r >= 0) {
        o->copy_fd = fcntl(r, F_DUPFD_CLOEXEC, 10);
        if (o->copy_fd < 0)
            berth_error_set(&err, -errno, "cannot move the sealed copy of the runtime: %m");
        close(r);
    }
    if (o->copy_fd >= 0) {
        /* made */
    } else if (fd >= 0 && (r == -ENOEXEC || r == -EACCES || r == -EINVAL)) {
        /* memfd_create(2) refused an executable memfd (vm.memfd_noexec =
         * 2, or a kernel without MFD_EXEC where memfds are not executable) */
        o->copy_off = true;
        o->host->log(o->host, BERTH_LOG_NOTICE,
                     "no sealed copy of the runtime %s on this host (%s): each shim tries one of its own, or runs the "
                     "file",
                     o->cfg.pin.path, err.message);
    } else {
        o->copy_retry_at = now + COPY_RETRY_NS;
        o->host->log(o->host, BERTH_LOG_WARNING,
                     "no sealed copy of the runtime %s for now (%s): each shim makes its own; tried again in %lld s",
                     o->cfg.pin.path, err.message, (long long)(COPY_RETRY_NS / 1000000000LL));
    }
    copy = o->copy_fd;
    pthread_mutex_unlock(&o->lock);
    return copy;
}

/* Run the shim in @mode for @jobdir and wait for its first process.  With
 * @syncfd >= 0 it becomes the shim's fd 3; the backend's sealed copy of its
 * runtime, when there is one, the next (jobdir.h, OCI_SHIM_RUNTIME_ENV).
 * Returns its exit status or -errno. */
int oci_run_shim(struct oci *o, const char *mode, const char *jobdir, int syncfd, struct berth_error *reterr)
{
    posix_spawn_file_actions_t fa;
    char *argv[] = {(char *)o->cfg.shim, (char *)mode, (char *)jobdir, NULL};
    char copy_env[sizeof(OCI_SHIM_RUNTIME_ENV) + 16 + BERTH_DIGEST_BUFSZ];
    char *envp[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL, NULL};
    int copy = oci_runtime_copy(o), copy_at = syncfd >= 0 ? OCI_SHIM_SYNC_FD + 1 : OCI_SHIM_SYNC_FD;
    int next = copy >= 0 ? copy_at + 1 : copy_at;
    pid_t pid;
    int r, st;

    if (copy >= 0) {
        snprintf(copy_env, sizeof(copy_env), "%s=%d %s", OCI_SHIM_RUNTIME_ENV, copy_at, o->cfg.pin.sha256);
        envp[1] = copy_env;
    }
    if (posix_spawn_file_actions_init(&fa) != 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* The shim (and through it the runtime and the job's gofer) gets only
     * these descriptors, never one berthd inherited from its parent. */
    if (posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) != 0 ||
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) != 0 ||
        (syncfd >= 0 && posix_spawn_file_actions_adddup2(&fa, syncfd, OCI_SHIM_SYNC_FD) != 0) ||
        (copy >= 0 && posix_spawn_file_actions_adddup2(&fa, copy, copy_at) != 0) ||
        posix_spawn_file_actions_addclosefrom_np(&fa, next) != 0)
        r = ENOMEM;
    else
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0)
        return berth_error_set(reterr, -r, "cannot run %s: %s", argv[0], strerror(r));
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return berth_error_set(reterr, -errno, "waiting for %s: %m", argv[0]);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Read the shim's one line on @fd within the start timeout. */
int oci_await_shim(struct oci *o, int fd, const char *jobdir, const char *want, struct berth_error *reterr)
{
    return oci_await_shim_until(o, fd, jobdir, want, NULL, NULL, NULL, reterr);
}

#define AWAIT_LOOK_MS 250 /* how often @alive is asked while the shim is silent */

int oci_await_shim_until(struct oci *o, int fd, const char *jobdir, const char *want,
                         int (*alive)(void *userdata, const char *id), void *userdata, const char *id,
                         struct berth_error *reterr)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, o->cfg.start_timeout_ns);
    char buf[64];
    size_t n = 0;

    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int64_t now, left = 0, ms;
        ssize_t k;

        /* No time is left when the clock cannot be read. */
        if (berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0)
            left = until - now;
        if (left <= 0)
            return berth_error_set(reterr, -ETIMEDOUT, "the runtime did not start the job within %lld ms (%s)",
                                   (long long)(o->cfg.start_timeout_ns / 1000000), jobdir);
        ms = left / 1000000 + 1;
        if (alive && ms > AWAIT_LOOK_MS)
            ms = AWAIT_LOOK_MS;
        k = poll(&p, 1, (int)ms);
        if (k < 0 && errno != EINTR)
            return berth_error_set(reterr, -errno, "poll: %m");
        /* Nothing to read yet: look at the clock again.  A read now would
         * block for as long as the shim keeps the pipe open, past the
         * start timeout. */
        if (k == 0 && alive && !alive(userdata, id)) {
            /* What runs the shim is gone: it will never answer, unless its
             * line came in since the poll (@fd is non-blocking then). */
            k = read(fd, buf + n, sizeof(buf) - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            if (memchr(buf, '\n', n) || n == sizeof(buf) - 1)
                break;
            continue;
        }
        if (k <= 0)
            continue;
        k = read(fd, buf + n, sizeof(buf) - 1 - n);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (k <= 0)
            break;
        n += (size_t)k;
        if (memchr(buf, '\n', n) || n == sizeof(buf) - 1)
            break;
    }
    buf[n] = '\0';
    if (strcmp(buf, want) == 0)
        return 0;
    if (strcmp(buf, OCI_SHIM_SYNC_FAILED) == 0)
        return 1; /* result.json says why */
    return berth_error_set(reterr, -EIO, "the shim ended before starting the job; see %s/%s", jobdir,
                           OCI_JOB_RUNTIME_LOG);
}

/* Undo a start() that ran nothing: the outputs tmpfs (if it was mounted),
 * then the job directory, so that the id is released. */
void oci_unclaim(int parentfd, int dirfd, const char *dir, const char *name)
{
    _cleanup_free_ char *mnt = NULL;

    if (asprintf(&mnt, "%s/%s", dir, OCI_JOB_OUTPUTS) >= 0)
        (void)oci_outputs_release(dirfd, OCI_JOB_OUTPUTS, mnt, NULL);
    (void)berth_tree_clear(dirfd, NULL);
    (void)unlinkat(parentfd, name, AT_REMOVEDIR);
}

int oci_fifo_say(int fd, const char *line)
{
    sigset_t pipe_only, old;
    const struct timespec zero = {0};
    int r, e;

    /* A reader that went away gives EPIPE, never a SIGPIPE to the host. */
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe_only, &old) != 0)
        return -EINVAL;
    r = berth_write_all(fd, line, strlen(line));
    e = errno;
    if (r < 0 && e == EPIPE && !sigismember(&old, SIGPIPE))
        while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR)
            ;
    (void)pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r < 0 ? -e : 0;
}

int oci_dispatch_admit(struct oci *o, const char *text, size_t len, struct dispatch *d, struct berth_error *reterr)
{
    int64_t now;
    int r;

    if ((r = oci_dispatch_parse(o, text, len, d, reterr)) < 0 || (r = oci_take_state_lock(o, reterr)) < 0)
        return r;
    if (faccessat(o->jobsfd, d->run_id, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
        return 1; /* started before (a retry after a lost reply) or finished: never again */
    if ((r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0)
        return r;
    if (d->deadline <= now)
        return berth_error_set(reterr, -ETIME, "the job's deadline has passed");
    return oci_runtime_pin_check(o, &d->pin_seen, reterr);
}

static int oci_start(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    struct oci *o = state;
    struct dispatch d;
    struct berth_bundle_bounds bounds;
    _cleanup_free_ char *jobdir = NULL;
    _cleanup_close_ int jobfd = -1;
    int p[2] = {-1, -1};
    int r;

    r = oci_dispatch_admit(o, dispatch, dispatch_len, &d, reterr);
    if (r != 0)
        goto out;
    if (asprintf(&jobdir, "%s/%s", o->jobs_dir, d.run_id) < 0) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto out;
    }
    if (mkdirat(o->jobsfd, d.run_id, 0700) < 0) {
        r = errno == EEXIST ? 1 : berth_error_set(reterr, -errno, "cannot create %s: %m", jobdir);
        goto out;
    }
    jobfd = openat(o->jobsfd, d.run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (jobfd < 0) {
        r = berth_error_set(reterr, -errno, "cannot open %s: %m", jobdir);
        goto out;
    }
    if ((r = berth_bundle_writable_bounds(&d.job->limits, &bounds)) < 0) {
        r = berth_error_set(reterr, -EBADMSG, "the job's limits are invalid");
        goto out;
    }
    r = oci_prepare(o, &d, jobfd, jobdir, bounds.outputs, NULL, reterr);
    /* A contained job's shim mounts it in the mount namespace of its own
     * that it shares with the runtime (berthd's may not be the host's). */
    if (r == 0 && bounds.outputs && !o->cops)
        r = oci_outputs_mount(jobfd, OCI_JOB_OUTPUTS, bounds.outputs, o->cfg.uid, o->cfg.gid, reterr);
    if (r < 0) {
        /* Nothing ran: release the id so that a retry (or nothing) is clean. */
        oci_unclaim(o->jobsfd, jobfd, jobdir, d.run_id);
        goto out;
    }
    if (o->cops) {
        r = oci_contained_start(o, &d, jobfd, jobdir, reterr);
        goto out;
    }
    if (pipe2(p, O_CLOEXEC) < 0) {
        r = berth_error_set(reterr, -errno, "pipe: %m");
        goto out;
    }
    r = oci_run_shim(o, "supervise", jobdir, p[1], reterr);
    close(p[1]);
    if (r > 0)
        r = berth_error_set(reterr, -EIO, "the shim exited with status %d; see %s/%s", r, jobdir, OCI_JOB_RUNTIME_LOG);
    if (r == 0)
        r = oci_await_shim(o, p[0], jobdir, OCI_SHIM_SYNC_STARTED, reterr);
    if (r == 1)
        r = 0; /* failed: inspect reports it from result.json */
    close(p[0]);
    if (r == 0) {
        o->host->log(o->host, BERTH_LOG_INFO, "job %s started by %s", d.run_id, o->cfg.pin.path);
        oci_watch_job(o->watch, jobfd, d.run_id); /* berthd hears of its end at once */
    } else if (r == -ETIMEDOUT) {
        /* The shim holds the id and may still start the job (its runtime
         * commands have a bound of their own): berthd's retry finds it
         * started (1) and follows it through inspect, and hears of its end. */
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s: no answer from the shim within the start timeout; it keeps "
                     "the job and may still start it", d.run_id);
        oci_watch_job(o->watch, jobfd, d.run_id);
    }
out:
    oci_dispatch_clear(&d);
    return r;
}

/* ------------------------------------------------------------------------- */
/* inspect, cancel, reap                                                      */

/* The job directory of @job_id, reaped or not (the state lock taken). */
static int open_job_dir(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    int fd, r;

    if ((r = oci_take_state_lock(o, reterr)) < 0)
        return r;
    if (!oci_run_id_ok(job_id))
        return berth_error_set(reterr, -ENOENT, "no job %s here", job_id ? job_id : "(null)");
    fd = openat(o->jobsfd, job_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, -errno, errno == ENOENT ? "no job %s here" : "job %s: %m", job_id);
    return fd;
}

/* The job directory of @job_id; -ENOENT when the job was reaped. */
static int open_job(struct oci *o, const char *job_id, struct berth_error *reterr)
{
    int fd = open_job_dir(o, job_id, reterr);

    if (fd < 0)
        return fd;
    if (faccessat(fd, OCI_JOB_REAPED, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        close(fd);
        return berth_error_set(reterr, -ENOENT, "job %s was reaped", job_id);
    }
    return fd;
}

/* Whether a shim holds the job's lock: 1 yes, 0 no (none supervises it). */
int oci_shim_alive(int jobfd)
{
    _cleanup_close_ int fd = openat(jobfd, OCI_JOB_LOCK, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

    if (fd < 0)
        return 0;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0)
        return errno == EWOULDBLOCK ? 1 : -errno;
    (void)flock(fd, LOCK_UN);
    return 0;
}

bool oci_has_result(int jobfd)
{
    return faccessat(jobfd, OCI_JOB_RESULT, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A job without a live shim and without a result: let `cleanup` settle it. */
int oci_settle_orphan(struct oci *o, int jobfd, const char *job_id, struct berth_error *reterr)
{
    _cleanup_free_ char *jobdir = NULL;
    int r;

    /* The shim publishes its result and exits right after: a result that
     * appeared since the caller looked needs no settling. */
    if (oci_has_result(jobfd))
        return 0;
    if (asprintf(&jobdir, "%s/%s", o->jobs_dir, job_id) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    o->host->log(o->host, BERTH_LOG_WARNING, "job %s has no shim and no result: cleaning up", job_id);
    /* A contained job's unit may still hold its sandbox: nothing is
     * recorded before the containment proved it gone. */
    if (oci_job_contained(jobfd) && (r = oci_contained_fence(o, job_id, reterr)) < 0)
        return r;
    r = oci_run_shim(o, "cleanup", jobdir, -1, reterr);
    if (r == OCI_SHIM_EXIT_BUSY)
        return berth_error_set(reterr, -EAGAIN, "job %s: another shim holds it", job_id);
    if (r != 0)
        return r < 0 ? r
                     : berth_error_set(reterr, -EIO, "cleanup of job %s failed (%d); see %s/%s", job_id, r, jobdir,
                                       OCI_JOB_RUNTIME_LOG);
    return 0;
}

/* Read a capture file (at most @max bytes) as base64url. */
static json_t *capture_b64(int jobfd, const char *name, size_t max)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = max};
    _cleanup_free_ char *data = NULL, *b64 = NULL;
    size_t len = 0, cap;
    int r;

    r = berth_read_file_at(jobfd, name, &expect, &data, &len, NULL);
    if (r == -ENOENT)
        return json_string("");
    if (r < 0)
        return NULL;
    cap = len / 3 * 4 + 8;
    b64 = malloc(cap);
    if (!b64 || berth_base64url_encode((const uint8_t *)data, len, b64, cap) < 0)
        return NULL;
    return json_string(b64);
}

/* The job's result.json, parsed: -EBUSY while the job has none (it runs). */
static int read_result(int jobfd, const char *job_id, json_t **ret, struct berth_error *reterr)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = OCI_RESULT_MAX};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    r = berth_read_file_at(jobfd, OCI_JOB_RESULT, &expect, &text, &len, reterr);
    if (r == -ENOENT)
        return berth_error_set(reterr, -EBUSY, "job %s has not finished", job_id);
    if (r < 0)
        return r;
    return berth_json_parse(text, len, OCI_RESULT_MAX, ret, reterr);
}

static int oci_inspect(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int jobfd = -1;
    _cleanup_json_ json_t *res = NULL;
    json_t *out, *err;
    int r;

    jobfd = open_job(o, job_id, reterr);
    if (jobfd < 0)
        return jobfd;
    if (!oci_has_result(jobfd)) {
        r = oci_shim_alive(jobfd);
        if (r < 0)
            return berth_error_set(reterr, r, "job %s: cannot check its shim: %s", job_id, strerror(-r));
        /* No shim yet: a contained job whose unit is still starting (the
         * manager was slow, or create() could not tell) is not lost. */
        if (r == 0 && !oci_has_result(jobfd) && oci_job_contained(jobfd) &&
            faccessat(jobfd, OCI_JOB_LAUNCHED, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
            r = oci_contained_quiet(o, job_id, reterr);
            if (r < 0)
                return r;
            r = r == 0; /* its unit is active or has a start queued: starting */
        }
        if (r == 1) {
            bool started = faccessat(jobfd, OCI_JOB_STARTED, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
            oci_watch_job(o->watch, jobfd, job_id); /* again after a berthd restart; idempotent */
            return oci_give_json(json_pack("{s:i, s:s}", "schema_version", 1, "state", started ? "running" : "starting"),
                             ret_json, ret_len, reterr);
        }
        if ((r = oci_settle_orphan(o, jobfd, job_id, reterr)) < 0)
            return r == -ENOENT ? -EIO : r;
    }
    if ((r = read_result(jobfd, job_id, &res, reterr)) < 0)
        return r == -EBUSY ? -EIO : r; /* settled above: a result must be there */
    out = capture_b64(jobfd, OCI_JOB_STDOUT, BERTH_LIMIT_OUTPUT_BYTES_MAX);
    err = capture_b64(jobfd, OCI_JOB_STDERR, BERTH_LIMIT_OUTPUT_BYTES_MAX);
    if (!out || !err) {
        json_decref(out);
        json_decref(err);
        return berth_error_set(reterr, -EIO, "job %s: cannot read its output", job_id);
    }
    /* The shim wrote outputs (and output_error) into result.json; a result
     * of a job that captured nothing, or of an older shim, has none. */
    if (json_object_set_new(res, "schema_version", json_integer(1)) < 0 ||
        json_object_set_new(res, "stdout", out) < 0 || json_object_set_new(res, "stderr", err) < 0 ||
        (!json_object_get(res, "outputs") && json_object_set_new(res, "outputs", json_array()) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return oci_give_json(json_incref(res), ret_json, ret_len, reterr);
}

/* The declared output @output_id of @job_id's dispatch: its path and max_bytes. */
static int declared_output(int jobfd, const char *job_id, const char *output_id, const char **ret_relpath,
                           uint64_t *ret_max, json_t **ret_doc, struct berth_error *reterr)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = DISPATCH_MAX};
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const json_t *v;
    size_t len = 0, i;
    int r;

    if ((r = berth_read_file_at(jobfd, OCI_JOB_DISPATCH, &expect, &text, &len, reterr)) < 0 ||
        (r = berth_json_parse(text, len, DISPATCH_MAX, &doc, reterr)) < 0)
        return r == -ENOENT ? -EIO : r;
    json_array_foreach(json_object_get(json_object_get(doc, "job"), "outputs"), i, v)
    {
        const char *rel = oci_output_relpath(json_string_value(json_object_get(v, "path")));
        if (!streq_ptr(json_string_value(json_object_get(v, "id")), output_id))
            continue;
        if (!rel || !json_is_integer(json_object_get(v, "max_bytes")))
            return berth_error_set(reterr, -EIO, "job %s: output %s is malformed in its dispatch", job_id, output_id);
        *ret_relpath = rel;
        *ret_max = (uint64_t)json_integer_value(json_object_get(v, "max_bytes"));
        *ret_doc = TAKE_PTR(doc);
        return 0;
    }
    return berth_error_set(reterr, -ENOENT, "job %s declares no output %s", job_id, output_id);
}

/* The size result.json recorded for the captured output @output_id. */
static int captured_size(const json_t *result, const char *job_id, const char *output_id, uint64_t *ret,
                         struct berth_error *reterr)
{
    const json_t *v;
    size_t i;

    json_array_foreach(json_object_get(result, "outputs"), i, v)
    {
        if (streq_ptr(json_string_value(json_object_get(v, "id")), output_id) &&
            json_is_integer(json_object_get(v, "size"))) {
            *ret = (uint64_t)json_integer_value(json_object_get(v, "size"));
            return 0;
        }
    }
    return berth_error_set(reterr, -ENOENT, "job %s: output %s was not captured", job_id, output_id);
}

static int oci_open_output(void *state, const char *job_id, const char *output_id, int *ret_fd, uint64_t *ret_size,
                           struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int jobfd = -1, rootfd = -1, fd = -1;
    _cleanup_json_ json_t *result = NULL, *dispatch = NULL;
    enum oci_output_problem problem;
    const char *relpath = NULL;
    uint64_t max = 0, want = 0, size = 0;
    int r;

    if (!output_id || !ret_fd || !ret_size)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    jobfd = open_job(o, job_id, reterr);
    if (jobfd < 0)
        return jobfd;
    if ((r = read_result(jobfd, job_id, &result, reterr)) < 0 ||
        (r = captured_size(result, job_id, output_id, &want, reterr)) < 0 ||
        (r = declared_output(jobfd, job_id, output_id, &relpath, &max, &dispatch, reterr)) < 0)
        return r;
    if (oci_job_contained(jobfd)) {
        /* A contained job's shim left a checked copy of each captured output
         * (jobdir.h "captured"): its tmpfs went with the job. */
        rootfd = berth_open_beneath(jobfd, OCI_JOB_CAPTURED, O_PATH | O_DIRECTORY, 0, reterr);
        if (rootfd < 0)
            return rootfd == -ENOENT ? berth_error_set(reterr, -ENOENT, "job %s: its captured outputs are gone", job_id)
                                     : rootfd;
        relpath = output_id;
    } else {
        /* Its storage: the job's outputs tmpfs, still mounted (a reboot takes it). */
        if (oci_outputs_mounted(jobfd, OCI_JOB_OUTPUTS) != 1)
            return berth_error_set(reterr, -ENOENT, "job %s: its outputs tmpfs is gone", job_id);
        rootfd = berth_open_beneath(jobfd, OCI_JOB_OUTPUTS, O_PATH | O_DIRECTORY, 0, reterr);
        if (rootfd < 0)
            return rootfd;
    }
    if ((r = oci_output_open(rootfd, relpath, max, &fd, &size, &problem)) < 0)
        return berth_error_set(reterr, -EBADMSG, "job %s: output %s is no longer as captured (%s)", job_id,
                               output_id, oci_output_problem_name(problem));
    if (size != want)
        return berth_error_set(reterr, -EBADMSG, "job %s: output %s is %llu bytes, captured with %llu", job_id,
                               output_id, (unsigned long long)size, (unsigned long long)want);
    *ret_size = size;
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* Proof of teardown (plugin.h, cancel): the job's shim has exited (it
 * reaped runsc-sandbox, runsc-gofer and everything else it was parent of)
 * and no process is left in the job's cgroup in any hierarchy (cgroup.h;
 * leftovers are killed, empty groups removed).  -EBUSY when either cannot
 * be shown now: berthd keeps the job reaping and asks again.  Without
 * @whole, a shim still deleting the container after an early result (the
 * "teardown" marker, jobdir.h: it had reaped the runtime's processes and
 * drained the cgroup) is not waited for: the cgroup is drained again here,
 * which is the proof; reap() and discard, which remove what that shim
 * still uses, pass @whole. */
int oci_prove_teardown(struct oci *o, int jobfd, const char *job_id, bool whole, struct berth_error *reterr)
{
    char cgroup[OCI_CGROUP_PATH_MAX], idbuf[64];
    int r;

    /* The shim writes result.json last and exits right after, which
     * releases its lock (flock(2) has no timed wait): look again after
     * 100 us, doubling to 10 ms, so the usual sub-millisecond gap costs
     * about that, not a fixed tick. */
    for (int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, REAP_WAIT_NS), nap_us = 100; oci_shim_alive(jobfd) == 1;) {
        if (!whole && !oci_job_contained(jobfd) && faccessat(jobfd, OCI_JOB_TEARDOWN, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            goto drain;
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            return berth_error_set(reterr, -EBUSY, "job %s: teardown not proven: its shim is still running", job_id);
        usleep((useconds_t)nap_us);
        nap_us = nap_us < 10000 ? nap_us * 2 : 10000;
    }
    /* A shim that ended between an early result and the end of the
     * teardown after it (jobdir.h "teardown"): finish that teardown. */
    if (faccessat(jobfd, OCI_JOB_TEARDOWN, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        _cleanup_free_ char *jobdir = NULL;
        if (asprintf(&jobdir, "%s/%s", o->jobs_dir, job_id) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s: its shim ended during the teardown: finishing it", job_id);
        r = oci_run_shim(o, "cleanup", jobdir, -1, reterr);
        if (r != 0)
            return r < 0 ? r
                         : berth_error_set(reterr, -EBUSY, "job %s: teardown not proven: cleanup failed (%d); see %s/%s",
                                           job_id, r, jobdir, OCI_JOB_RUNTIME_LOG);
    }
    if (oci_job_contained(jobfd))
        return oci_contained_prove(o, job_id, reterr); /* its unit's cgroup, by the containment's word */
drain:
    if ((r = oci_cgroup_path(o->cfg.state_directory, oci_container_id(jobfd, job_id, idbuf), cgroup)) < 0)
        return berth_error_set(reterr, r, "job %s: cannot name its cgroup: %s", job_id, strerror(-r));
    r = oci_cgroup_drain(OCI_CGROUP_ROOT, cgroup, TEARDOWN_WAIT_NS, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "job %s: teardown not proven", job_id);
        if (reterr)
            reterr->code = -EBUSY;
        return -EBUSY; /* not knowing is not proof either */
    }
    return 0;
}

static int oci_cancel(void *state, const char *job_id, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int jobfd = -1;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, CANCEL_WAIT_NS);
    int r;

    jobfd = open_job(o, job_id, reterr);
    if (jobfd < 0)
        return jobfd;
    while (!oci_has_result(jobfd)) {
        r = oci_shim_alive(jobfd);
        if (r == 0) {
            if ((r = oci_settle_orphan(o, jobfd, job_id, reterr)) < 0)
                return r;
            break;
        }
        if (r < 0)
            return berth_error_set(reterr, r, "job %s: cannot check its shim: %s", job_id, strerror(-r));
        {
            /* The shim reads its FIFO; without a reader the open fails (ENXIO) and the loop looks again. */
            _cleanup_close_ int fd = openat(jobfd, OCI_JOB_CONTROL, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0)
                (void)oci_fifo_say(fd, "cancel\n");
        }
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            return berth_error_set(reterr, -ETIMEDOUT, "job %s: still running %lld s after cancel", job_id,
                                   (long long)(CANCEL_WAIT_NS / BERTH_NS_PER_SEC));
        usleep(20000);
    }
    return oci_prove_teardown(o, jobfd, job_id, false, reterr);
}

static int oci_reap(void *state, const char *job_id, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int jobfd = -1;
    _cleanup_free_ char *outputs = NULL;
    int r;

    jobfd = open_job(o, job_id, reterr);
    if (jobfd < 0)
        return jobfd;
    if (!oci_has_result(jobfd))
        return berth_error_set(reterr, -EBUSY, "job %s has not finished", job_id);
    if ((r = oci_prove_teardown(o, jobfd, job_id, true, reterr)) < 0)
        return r;
    /* The outputs tmpfs goes first (never walked into by the tree clear),
     * proven unmounted; berthd's inputs_dir is only no longer referenced. */
    if (asprintf(&outputs, "%s/%s/%s", o->jobs_dir, job_id, OCI_JOB_OUTPUTS) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = oci_outputs_release(jobfd, OCI_JOB_OUTPUTS, outputs, reterr)) < 0) {
        berth_error_prefix(reterr, "job %s", job_id);
        return r;
    }
    {
        char idbuf[64];
        const char *cid = oci_container_id(jobfd, job_id, idbuf);
        if (cid != job_id && (r = oci_remove_bundle(o, cid, reterr)) < 0)
            return r;
    }
    if ((r = berth_tree_clear(jobfd, reterr)) < 0)
        return r;
    return berth_publish_at(jobfd, OCI_JOB_REAPED, "", 0, 0600, 0, reterr);
}

/* Retention (plugin.h, forget): the job directory, the tombstone, goes
 * once the job is reaped ("reaped" is all that is left in it).  It is
 * emptied first and removed last, so a forget cut short leaves a directory
 * that a second forget removes. */
static int oci_forget(void *state, const char *job_id, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int jobfd = -1;
    int r;

    jobfd = open_job_dir(o, job_id, reterr);
    if (jobfd < 0)
        return jobfd;
    if (faccessat(jobfd, OCI_JOB_REAPED, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
        return berth_error_set(reterr, errno == ENOENT ? -EBUSY : -errno,
                               errno == ENOENT ? "job %s is not reaped yet" : "job %s: %m", job_id);
    if ((r = berth_tree_clear(jobfd, reterr)) < 0)
        return r;
    if (unlinkat(o->jobsfd, job_id, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove the job directory of %s: %m", job_id);
    if (fsync(o->jobsfd) < 0)
        return berth_error_set(reterr, -errno, "fsync %s: %m", o->jobs_dir);
    return 0;
}

static const struct berth_runtime_ops_v1 oci_ops = {
    .capabilities = oci_capabilities,
    .start = oci_start,
    .inspect = oci_inspect,
    .cancel = oci_cancel,
    .reap = oci_reap,
    .open_output = oci_open_output,
    .forget = oci_forget,
    .flags = BERTH_RUNTIME_CONCURRENT, /* see struct oci's lock */
    .provision = oci_provision,
    .claim = oci_claim,
    .discard = oci_discard,
    .slots = oci_slots,
};

static const struct berth_plugin oci_plugin = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "runtime-oci",
    .kind = BERTH_PLUGIN_RUNTIME,
    .version = PACKAGE_VERSION,
    .init = oci_init,
    .fini = oci_fini,
    .ops = &oci_ops,
    .ops_size = sizeof(oci_ops),
};

BERTH_PLUGIN_EXPORT const struct berth_plugin *berth_plugin_entry(void)
{
    return &oci_plugin;
}
