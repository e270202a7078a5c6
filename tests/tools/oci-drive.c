/* SPDX-License-Identifier: MIT */
/*
 * oci-drive.c -- a test tool: drive one runtime plugin instance through
 * the core's loader and the runtime ops, one operation per run, so that
 * shell tests can use the real runtime-oci plugin on real runtimes without
 * berthd (each run is a fresh init() on the same state directory, as after
 * a berthd restart).  A FILE.so named containment-*.so is loaded as a
 * containment plugin instead, with the containment ops below.
 *
 *   oci-drive PLUGIN_DIR FILE.so BACKEND CONFIG.json OP [ARGS...]
 *     capabilities                     the JSON on stdout
 *     start DISPATCH.json              "started" or "already" on stdout
 *     inspect RUN_ID                   the JSON on stdout
 *     wait RUN_ID [SECONDS]            inspect until terminal (default 120 s)
 *     open-output RUN_ID OUTPUT_ID OUT the output's bytes into the new file
 *                                      OUT, its size on stdout
 *     cancel RUN_ID | reap RUN_ID | forget RUN_ID
 *     provision SLOT.json              a warm slot (ABI 1.2), ready on exit
 *     claim SLOT_ID DISPATCH.json      "started" or "already" on stdout
 *     discard SLOT_ID | slots          the latter: the JSON on stdout
 *   containment plugins:
 *     capabilities | status JOB_ID | units   the JSON on stdout
 *     create SPEC.json                 the handle (JSON) on stdout
 *     attach JOB_ID PID | kill JOB_ID SIGNO | destroy JOB_ID
 *
 * With OCI_DRIVE_AWAIT_CHANGE=SECONDS in the environment, a runtime op is
 * followed by a wait of up to SECONDS for the plugin's first job_changed()
 * call (plugin.h), reported on standard error as "job_changed ID", or
 * "no job_changed within SECONDS s"; the op's own status is the exit status.
 *
 * Exit status 0; 1 when the operation failed, with "ENAME: message" on
 * standard error (ENAME the errno name of its return value); 2 for usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "fsutil.h"
#include "host-table.h"
#include "jsonobj.h"
#include "loader.h"
#include "log.h"
#include "macro.h"

static void sink(void *userdata, int level, const char *line)
{
    (void)userdata;
    if (level <= BERTH_LOG_WARNING)
        fprintf(stderr, "oci-drive: plugin: %s\n", line);
}

/* The first job_changed() call (OCI_DRIVE_AWAIT_CHANGE). */
struct changed {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    char job_id[129]; /* a job id is at most 128 bytes (plugin.h) */
    bool got;
};

static void on_changed(void *userdata, const char *instance, const char *job_id)
{
    struct changed *c = userdata;

    (void)instance;
    pthread_mutex_lock(&c->lock);
    if (!c->got) {
        snprintf(c->job_id, sizeof(c->job_id), "%s", job_id);
        c->got = true;
        pthread_cond_signal(&c->cond);
    }
    pthread_mutex_unlock(&c->lock);
}

static void await_changed(struct changed *c, long seconds)
{
    struct timespec at;

    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += seconds;
    pthread_mutex_lock(&c->lock);
    while (!c->got && pthread_cond_timedwait(&c->cond, &c->lock, &at) == 0)
        ;
    if (c->got)
        fprintf(stderr, "job_changed %s\n", c->job_id);
    else
        fprintf(stderr, "no job_changed within %ld s\n", seconds);
    pthread_mutex_unlock(&c->lock);
}

static int failed(int r, const struct berth_error *err)
{
    const char *name = strerrorname_np(-r);
    fprintf(stderr, "%s: %s\n", name ? name : "E?", err->message[0] ? err->message : strerror(-r));
    return 1;
}

static int usage(void)
{
    fputs("usage: oci-drive PLUGIN_DIR FILE.so BACKEND CONFIG.json OP [ARGS...]\n"
          "  OP: capabilities | start DISPATCH.json | inspect RUN_ID | wait RUN_ID [SECONDS] |\n"
          "      open-output RUN_ID OUTPUT_ID OUT | cancel RUN_ID | reap RUN_ID | forget RUN_ID |\n"
          "      provision SLOT.json | claim SLOT_ID DISPATCH.json | discard SLOT_ID | slots\n"
          "  containment-*.so: capabilities | create SPEC.json | attach JOB_ID PID |\n"
          "      kill JOB_ID SIGNO | status JOB_ID | destroy JOB_ID | units\n",
          stderr);
    return 2;
}

/* Read a whole (small) file of any owner. */
static int slurp(const char *path, char **ret, size_t *ret_len, struct berth_error *err)
{
    static const struct berth_file_expect any = {.uid = BERTH_UID_ANY, .max_size = 4 << 20};
    return berth_read_file_at(AT_FDCWD, path, &any, ret, ret_len, err);
}

static int print_json(char *text, size_t len)
{
    printf("%.*s\n", (int)len, text);
    free(text);
    return 0;
}

/* The result @r of an op that returned the JSON @text: printed when it succeeded. */
static int json_out(int r, char *text, size_t len)
{
    return r < 0 ? r : print_json(text, len);
}

static int wait_terminal(const struct berth_runtime_ops_v1 *ops, void *state, const char *id, long seconds,
                         struct berth_error *err)
{
    for (long i = 0; i < seconds * 20; i++) {
        _cleanup_json_ json_t *doc = NULL;
        char *text = NULL;
        size_t len = 0;
        const char *st;
        int r = ops->inspect(state, id, &text, &len, err);

        if (r < 0)
            return r;
        if (berth_json_parse(text, len, 8 << 20, &doc, err) < 0) {
            free(text);
            return -EBADMSG;
        }
        st = json_string_value(json_object_get(doc, "state"));
        if (st && !streq(st, "starting") && !streq(st, "running"))
            return print_json(text, len);
        free(text);
        usleep(50000);
    }
    return berth_error_set(err, -ETIMEDOUT, "job %s did not finish within %ld s", id, seconds);
}

static int open_output(const struct berth_runtime_ops_v1 *ops, void *state, const char *id, const char *output,
                       const char *out, struct berth_error *err)
{
    _cleanup_close_ int fd = -1, dst = -1;
    uint64_t size = 0, copied = 0;
    char buf[65536];
    ssize_t n;
    int r;

    if (!ops->open_output)
        return berth_error_set(err, -EOPNOTSUPP, "the plugin has no open_output");
    if ((r = ops->open_output(state, id, output, &fd, &size, err)) < 0)
        return r;
    if (lseek(fd, 0, SEEK_CUR) != 0)
        return berth_error_set(err, -EIO, "the descriptor is not at offset 0");
    if ((fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
        return berth_error_set(err, -EIO, "the descriptor is not read-only");
    dst = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (dst < 0)
        return berth_error_set(err, -errno, "%s: %m", out);
    while ((n = read(fd, buf, sizeof(buf))) > 0) {
        if (berth_write_all(dst, buf, (size_t)n) < 0)
            return berth_error_set(err, -errno, "%s: %m", out);
        copied += (uint64_t)n;
    }
    if (n < 0)
        return berth_error_set(err, -errno, "reading the output: %m");
    if (copied != size)
        return berth_error_set(err, -EIO, "read %llu bytes of an output of %llu", (unsigned long long)copied,
                               (unsigned long long)size);
    printf("%llu\n", (unsigned long long)size);
    return 0;
}

static int run_op(const struct berth_runtime_ops_v1 *ops, void *state, int argc, char **argv,
                  struct berth_error *err)
{
    const char *op = argv[0];
    char *text = NULL;
    size_t len = 0;
    int r;

    if (streq(op, "capabilities") && argc == 1) {
        r = ops->capabilities(state, &text, &len, err);
        return json_out(r, text, len);
    }
    if (streq(op, "start") && argc == 2) {
        _cleanup_free_ char *doc = NULL;
        if ((r = slurp(argv[1], &doc, &len, err)) < 0 || (r = ops->start(state, doc, len, err)) < 0)
            return r;
        puts(r == 0 ? "started" : "already");
        return 0;
    }
    if (streq(op, "inspect") && argc == 2) {
        r = ops->inspect(state, argv[1], &text, &len, err);
        return json_out(r, text, len);
    }
    if (streq(op, "wait") && (argc == 2 || argc == 3))
        return wait_terminal(ops, state, argv[1], argc == 3 ? atol(argv[2]) : 120, err);
    if (streq(op, "open-output") && argc == 4)
        return open_output(ops, state, argv[1], argv[2], argv[3], err);
    if (streq(op, "cancel") && argc == 2)
        return ops->cancel(state, argv[1], err);
    if (streq(op, "reap") && argc == 2)
        return ops->reap(state, argv[1], err);
    if (streq(op, "provision") && argc == 2) {
        _cleanup_free_ char *doc = NULL;
        if (!ops->provision)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no warm slots");
        if ((r = slurp(argv[1], &doc, &len, err)) < 0)
            return r;
        return ops->provision(state, doc, len, err);
    }
    if (streq(op, "claim") && argc == 3) {
        _cleanup_free_ char *doc = NULL;
        if (!ops->claim)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no warm slots");
        if ((r = slurp(argv[2], &doc, &len, err)) < 0 || (r = ops->claim(state, argv[1], doc, len, err)) < 0)
            return r;
        puts(r == 0 ? "started" : "already");
        return 0;
    }
    if (streq(op, "discard") && argc == 2) {
        if (!ops->discard)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no warm slots");
        return ops->discard(state, argv[1], err);
    }
    if (streq(op, "slots") && argc == 1) {
        if (!ops->slots)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no warm slots");
        r = ops->slots(state, &text, &len, err);
        return json_out(r, text, len);
    }
    if (streq(op, "forget") && argc == 2) {
        if (!ops->forget)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no forget");
        return ops->forget(state, argv[1], err);
    }
    return -EINVAL;
}

static int run_containment_op(const struct berth_containment_ops_v1 *ops, void *state, int argc, char **argv,
                              struct berth_error *err)
{
    const char *op = argv[0];
    char *text = NULL;
    size_t len = 0;
    int r;

    if (streq(op, "capabilities") && argc == 1) {
        r = ops->capabilities(state, &text, &len, err);
        return json_out(r, text, len);
    }
    if (streq(op, "create") && argc == 2) {
        _cleanup_free_ char *doc = NULL;
        if ((r = slurp(argv[1], &doc, &len, err)) < 0 || (r = ops->create(state, doc, len, &text, &len, err)) < 0)
            return r;
        return print_json(text, len);
    }
    if (streq(op, "status") && argc == 2) {
        r = ops->status(state, argv[1], &text, &len, err);
        return json_out(r, text, len);
    }
    if (streq(op, "attach") && argc == 3) {
        _cleanup_close_ int pidfd = (int)syscall(SYS_pidfd_open, atoi(argv[2]), 0);
        if (pidfd < 0)
            return berth_error_set(err, -errno, "pidfd_open %s: %m", argv[2]);
        return ops->attach(state, argv[1], pidfd, err);
    }
    if (streq(op, "kill") && argc == 3)
        return ops->kill(state, argv[1], atoi(argv[2]), err);
    if (streq(op, "destroy") && argc == 2)
        return ops->destroy(state, argv[1], err);
    if (streq(op, "units") && argc == 1) {
        if (!ops->units)
            return berth_error_set(err, -EOPNOTSUPP, "the plugin has no units (ABI 1.3)");
        r = ops->units(state, &text, &len, err);
        return json_out(r, text, len);
    }
    return -EINVAL;
}

int main(int argc, char **argv)
{
    const struct berth_logger logger = {.sink = sink, .max_level = BERTH_LOG_WARNING};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    struct berth_plugin_handle *h = NULL;
    _cleanup_free_ char *raw = NULL, *config = NULL;
    _cleanup_json_ json_t *doc = NULL;
    size_t len = 0, clen = 0;
    struct changed changed = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
    const char *await = getenv("OCI_DRIVE_AWAIT_CHANGE");
    bool containment;
    int r;

    if (argc < 6)
        return usage();
    containment = strncmp(argv[2], "containment-", 12) == 0;
    if ((r = slurp(argv[4], &raw, &len, &err)) < 0 || (r = berth_json_parse(raw, len, 1 << 20, &doc, &err)) < 0 ||
        (r = berth_json_serialize(doc, 0, &config, &clen, &err)) < 0)
        return failed(r, &err);
    {
        const struct berth_plugin_load_options o = {
            .dir = argv[1],
            .file = argv[2],
            .kind = containment ? BERTH_PLUGIN_CONTAINMENT : BERTH_PLUGIN_RUNTIME,
            .host = berth_host_instance_init(&inst, argv[3], &logger),
            .config = config,
            .config_len = clen,
        };
        if (await)
            berth_host_instance_set_notify(&inst, on_changed, &changed);
        if ((r = berth_plugin_load(&o, &h, NULL, &err)) < 0)
            return failed(r, &err);
    }
    if (containment)
        r = run_containment_op(berth_plugin_containment_ops(h), berth_plugin_state(h), argc - 5, argv + 5, &err);
    else {
        r = run_op(berth_plugin_runtime_ops(h), berth_plugin_state(h), argc - 5, argv + 5, &err);
        if (await)
            await_changed(&changed, strtol(await, NULL, 10));
    }
    berth_plugin_unload(h);
    if (r == -EINVAL && !err.message[0])
        return usage();
    return r < 0 ? failed(r, &err) : 0;
}
