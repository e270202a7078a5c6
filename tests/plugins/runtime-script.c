/* SPDX-License-Identifier: MIT */
/*
 * runtime-script.c -- a scripted runtime plugin for berthd's tests.
 *
 * Test-only: built by "make check", never installed, never listed in conf/.
 * It runs nothing.  Each job's argv is a script for what the "sandbox" does:
 *
 *   ["echo", WORD...]    exits 0 at once, stdout = the words and a newline
 *   ["exit", N]          exits N at once
 *   ["sleep"]            runs until cancelled (or until the broker expires it)
 *   ["sleep-ms", N]      runs for N milliseconds, then exits 0
 *   ["hold"]             runs until the file "<run_id>.release" exists in the
 *                        state_directory (a test creates it), then exits 0
 *                        with stdout "released" and a newline
 *   ["spew", N]          exits 0 with N bytes of stdout (tests output bounds)
 *   ["slow-start"]       start() writes "<run_id>.starting", then blocks until
 *                        "<run_id>.go" exists (at most 10 s, else -EIO), then
 *                        runs like "sleep" (tests what happens to a job while
 *                        its start is under way)
 *   ["refuse"]           start() refuses the document (-EBADMSG)
 *   ["flaky"]            the first start() fails with -EIO, the next succeeds
 *   ["leftover"]         exits 0 at once, but cancel() says its teardown is
 *                        not proven (-EBUSY) until "<run_id>.released" exists
 *   ["cat-input", N]     exits 0, stdout = the staged input N, read from the
 *                        dispatch's inputs_dir when inspect is asked
 *   ["outputs", SPEC...] exits 0 with a declared output per SPEC, written at
 *                        start into "<run_id>.out.<ID>" and served by
 *                        open_output(): "ID=TEXT" (captured as TEXT),
 *                        "ID~TEXT" (inspect lies: it reports the digest of
 *                        TEXT and one more byte), "ID^TEXT" (open_output()
 *                        is -EBUSY until "<run_id>.unbusy" exists), "ID@N"
 *                        (N bytes of 'x', for benchmarks), "ID!PROBLEM"
 *                        (inspect reports output_error {ID, PROBLEM}, the
 *                        runtime's own finding)
 *   anything else        exits 0 with no output
 *
 * Everything is kept in files under the configured state_directory, so a
 * restarted berthd finds the same jobs: "<run_id>.job" (the started job,
 * also its tombstone: start() never starts an id twice), "<run_id>.cancel",
 * "<run_id>.reaped", and "calls.log", one line per start/cancel/reap/forget
 * call:
 *
 *   start RUN_ID new | start RUN_ID again | cancel RUN_ID | reap RUN_ID |
 *   forget RUN_ID
 *
 * forget() (ABI 1.1, retention) removes every file of a reaped job, its
 * tombstone last but one ("<run_id>.reaped" goes after it), so a start()
 * after it would start the id again: berthd must never ask for that.
 *
 * so tests can prove that no job was started twice.  Configuration:
 *   {"state_directory": "/abs/dir", "egress_classes": ["none", ...],
 *    "runtime": {"path", "version", "sha256"}, "qualification": ANY}
 * and "needs": the job needs it serves, reported among its capabilities
 * (default []: a backend that stages and captures nothing, as before ABI
 * 1.1; ["inputs", "outputs"] for the tests of jobs with inputs and outputs)
 * (egress_classes optional, default ["none", "loopback"]; runtime optional:
 * reported as capabilities().runtime, so that the backend can be qualified;
 * qualification is what capabilities() claims about the backend's
 * qualification, default "unqualified": berthd must never believe it, see
 * tests/unit/test-broker.c), and "unavailable": ANY, reported as
 * capabilities().unavailable as it is (plugin.h: a reason code, or
 * something berthd must refuse).
 *
 * Notifications (ABI 1.1, host->job_changed; script-notify.h): a job that
 * ends at once is notified from start(), a "sleep-ms" job by the plugin's
 * own thread when its time is up (re-armed by inspect(), so also after a
 * berthd restart); "sleep" and "hold" are only polled.  Built with
 * -DSCRIPT_ABI_1_0 it is "runtime-script-1-0", a plugin of ABI 1.0 (its ops
 * table ends at reap()) that never notifies: berthd must poll it.
 *
 * Containment (ABI 1.4, host->containment): when the host binds one, init()
 * calls its capabilities() and writes "containment.json" in the
 * state_directory, {"capabilities": what it said, "ops_size": the table's
 * size, "units": whether the table has units}, so a test can see what the
 * core handed over.  The scripted jobs never run in it.  With
 * "ignore_containment": true in its configuration init() never asks for
 * one, as a runtime that does not know of containments would not: the
 * core must refuse that backend.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include <berth/plugin.h>

#include "script-notify.h"

#ifdef SCRIPT_ABI_1_0
#define SCRIPT_NAME "runtime-script-1-0"
#define SCRIPT_ABI BERTH_PLUGIN_ABI_PACK(1, 0)
#define SCRIPT_OPS_SIZE BERTH_RUNTIME_OPS_V1_0_SIZE
#else
#define SCRIPT_NAME "runtime-script"
#define SCRIPT_ABI BERTH_PLUGIN_ABI_VERSION
#define SCRIPT_OPS_SIZE sizeof(struct berth_runtime_ops_v1)
#endif

struct script {
    const struct berth_host *host;
    int dirfd;
    json_t *egress;
    json_t *runtime;       /* NULL: capabilities() name no runtime */
    json_t *qualification; /* what capabilities() claims */
    json_t *needs;         /* "inputs", "outputs" among its capabilities */
    json_t *unavailable;   /* reported as capabilities().unavailable, or NULL */
    struct script_notify *notify; /* NULL: never notifies (ABI 1.0) */
};

/* The time from the host table, as any plugin reads it: a negative errno if it cannot be read. */
static int64_t now_ns(const struct script *s)
{
    return s->host->now_ns(s->host, BERTH_CLOCK_REALTIME);
}

BERTH_PRINTF(2, 3)
static void log_call(struct script *s, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    int fd, n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(line) - 1)
        return;
    line[n++] = '\n';
    fd = openat(s->dirfd, "calls.log", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) != n)
        s->host->log(s->host, BERTH_LOG_WARNING, "calls.log: short write");
    fsync(fd);
    close(fd);
}

static bool exists(struct script *s, const char *run_id, const char *suffix)
{
    char name[192];
    struct stat st;

    snprintf(name, sizeof(name), "%s%s", run_id, suffix);
    return fstatat(s->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int mark(struct script *s, const char *run_id, const char *suffix, const char *text, uint32_t flags,
                struct berth_error *reterr)
{
    char name[192];

    snprintf(name, sizeof(name), "%s%s", run_id, suffix);
    return s->host->publish_file(s->host, s->dirfd, name, text, strlen(text), 0600, flags, reterr);
}

static bool id_ok(const char *id)
{
    size_t i;

    if (!id || !id[0] || strlen(id) > 128)
        return false;
    for (i = 0; id[i]; i++)
        if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9') ||
              strchr("._-", id[i])))
            return false;
    return true;
}

/* "slow-start": say that start() is under way, then wait for the test's go. */
static int wait_for_go(struct script *s, const char *run_id, struct berth_error *reterr)
{
    int r = mark(s, run_id, ".starting", "", 0, reterr), i;

    if (r < 0)
        return r;
    for (i = 0; i < 10000; i++) {
        if (exists(s, run_id, ".go"))
            return 0;
        if (usleep(1000) < 0)
            return berth_error_set(reterr, -errno, "usleep: %s", strerror(errno));
    }
    return berth_error_set(reterr, -EIO, "no go for %s within 10 s", run_id);
}

static void script_fini(void *state);

#ifndef SCRIPT_ABI_1_0
/* The containment the host bound, if any, as containment.json (see the top). */
static int record_containment(struct script *s, struct berth_error *reterr)
{
    const struct berth_containment_ops_v1 *ops;
    struct berth_error err = BERTH_ERROR_INIT;
    size_t ops_size = 0, len = 0;
    char *caps = NULL, *text;
    void *cstate;
    json_t *doc;
    int r;

    if (!BERTH_HOST_HAS(s->host, containment) || !s->host->containment)
        return 0;
    r = s->host->containment(s->host, &ops, &ops_size, &cstate);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return berth_error_set(reterr, r, "host->containment: %s", strerror(-r));
    if ((r = ops->capabilities(cstate, &caps, &len, &err)) < 0)
        return berth_error_set(reterr, r, "the containment's capabilities: %s", err.message);
    doc = json_pack("{s:s%, s:I, s:b}", "capabilities", caps, len, "ops_size", (json_int_t)ops_size, "units",
                    ops_size >= offsetof(struct berth_containment_ops_v1, units) + sizeof(ops->units) &&
                        ops->units != NULL);
    free(caps);
    text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    if (!text)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = s->host->publish_file(s->host, s->dirfd, "containment.json", text, strlen(text), 0600, BERTH_PUBLISH_REPLACE,
                              reterr);
    free(text);
    return r;
}
#endif

static int script_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                       struct berth_error *reterr)
{
    json_error_t jerr;
    json_t *cfg = json_loadb(config, config_len, JSON_REJECT_DUPLICATES, &jerr);
    const char *dir = json_string_value(json_object_get(cfg, "state_directory"));
    struct script *s;

    if (sodium_init() < 0) {
        json_decref(cfg);
        return berth_error_set(reterr, -EIO, "libsodium failed to initialise");
    }
    if (!dir || dir[0] != '/') {
        json_decref(cfg);
        return berth_error_set(reterr, -EINVAL, "config.state_directory must be an absolute path");
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        json_decref(cfg);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    s->host = host;
    s->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (s->dirfd < 0) {
        int e = errno;
        free(s);
        json_decref(cfg);
        return berth_error_set(reterr, -e, "config.state_directory: %s", strerror(e));
    }
    s->egress = json_incref(json_object_get(cfg, "egress_classes"));
    if (!s->egress)
        s->egress = json_pack("[s, s]", "none", "loopback");
    s->runtime = json_incref(json_object_get(cfg, "runtime"));
    s->needs = json_incref(json_object_get(cfg, "needs"));
    if (!s->needs)
        s->needs = json_array();
    s->unavailable = json_incref(json_object_get(cfg, "unavailable"));
    s->qualification = json_incref(json_object_get(cfg, "qualification"));
    if (!s->qualification)
        s->qualification = json_string("unqualified");
    bool take_containment = !json_is_true(json_object_get(cfg, "ignore_containment"));
    (void)take_containment; /* unused in the ABI 1.0 build */
    json_decref(cfg);
#ifndef SCRIPT_ABI_1_0
    if (take_containment) {
        int r = record_containment(s, reterr);
        if (r < 0) {
            script_fini(s);
            return r;
        }
    }
    {
        int r = script_notify_start(host, &s->notify);
        if (r < 0) {
            script_fini(s);
            return berth_error_set(reterr, r, "cannot start the notifier thread: %s", strerror(-r));
        }
    }
#endif
    *ret_state = s;
    return 0;
}

static void script_fini(void *state)
{
    struct script *s = state;

    if (!s)
        return;
    script_notify_stop(s->notify); /* first: its thread calls the host, never after fini */
    close(s->dirfd);
    json_decref(s->egress);
    json_decref(s->runtime);
    json_decref(s->qualification);
    json_decref(s->needs);
    json_decref(s->unavailable);
    free(s);
}

static int give_json(json_t *doc, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;

    json_decref(doc);
    if (!text)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret_json = text;
    *ret_len = strlen(text);
    return 0;
}

static int script_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct script *s = state;
    json_t *caps =
        json_pack("{s:s, s:s, s:[s, s], s:O, s:{}, s:O}", "backend", "script", "isolation", "none", "capabilities",
                  "exec", "file_rw", "egress_classes", s->egress, "limits", "qualification", s->qualification);

    if (caps && json_array_extend(json_object_get(caps, "capabilities"), s->needs) < 0) {
        json_decref(caps);
        caps = NULL;
    }
    if (caps && s->runtime && json_object_set(caps, "runtime", s->runtime) < 0) {
        json_decref(caps);
        caps = NULL;
    }
    if (caps && s->unavailable && json_object_set(caps, "unavailable", s->unavailable) < 0) {
        json_decref(caps);
        caps = NULL;
    }
    return give_json(caps, ret_json, ret_len, reterr);
}

/* The content of the output SPEC whose id is @n bytes long (malloc'd, one
 * byte spare), or NULL. */
static char *spec_content(const char *spec, size_t n, size_t *ret_len)
{
    size_t len = spec[n] == '@' ? (size_t)strtoull(spec + n + 1, NULL, 10) : strlen(spec + n + 1);
    char *text = malloc(len + 1);

    if (!text)
        return NULL;
    if (spec[n] == '@')
        memset(text, 'x', len);
    else
        memcpy(text, spec + n + 1, len);
    *ret_len = len;
    return text;
}

/* The files of an "outputs" script (see the top), written when it starts. */
static int write_outputs(struct script *s, const char *run_id, const json_t *argv, struct berth_error *reterr)
{
    size_t i;

    for (i = 1; i < json_array_size(argv); i++) {
        const char *spec = json_string_value(json_array_get(argv, i));
        size_t n = strcspn(spec, "=~^!@");
        char name[192];
        int r;

        if (!spec[n] || spec[n] == '!')
            continue;
        size_t len = 0;
        char *text = spec_content(spec, n, &len);

        if (!text)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        snprintf(name, sizeof(name), "%s.out.%.*s", run_id, (int)n, spec);
        r = s->host->publish_file(s->host, s->dirfd, name, text, len, 0600, BERTH_PUBLISH_REPLACE, reterr);
        free(text);
        if (r < 0)
            return r;
    }
    return 0;
}

static int script_start(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    struct script *s = state;
    json_error_t jerr;
    json_t *doc = json_loadb(dispatch, dispatch_len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *receipt = json_object_get(json_object_get(doc, "receipt"), "receipt");
    json_t *job = json_object_get(doc, "job");
    const char *id = json_string_value(json_object_get(receipt, "run_id"));
    const char *argv0 = json_string_value(json_array_get(json_object_get(job, "argv"), 0)), *arg1;
    char run_id[129];
    int64_t started, due;
    json_t *rec;
    char *text;
    int r;

    if (!doc || !id_ok(id) || !argv0 || json_integer_value(json_object_get(doc, "schema_version")) != 1) {
        json_decref(doc);
        return berth_error_set(reterr, -EBADMSG, "not a dispatch document");
    }
    snprintf(run_id, sizeof(run_id), "%s", id); /* outlives doc */
    if (exists(s, run_id, ".job")) {
        log_call(s, "start %s again", run_id);
        json_decref(doc);
        return 1;
    }
    if (strcmp(argv0, "refuse") == 0) {
        log_call(s, "start %s refused", run_id);
        json_decref(doc);
        return berth_error_set(reterr, -EBADMSG, "this script refuses to start");
    }
    if (strcmp(argv0, "flaky") == 0 && mark(s, run_id, ".flaky", "", 0, NULL) == 0) {
        log_call(s, "start %s flaked", run_id);
        json_decref(doc);
        return berth_error_set(reterr, -EIO, "a transient failure, on purpose");
    }
    if (strcmp(argv0, "leftover") == 0 && mark(s, run_id, ".leftover", "", 0, reterr) < 0) {
        json_decref(doc);
        return -EIO;
    }
    if (strcmp(argv0, "slow-start") == 0 && (r = wait_for_go(s, run_id, reterr)) < 0) {
        json_decref(doc);
        return r;
    }
    if (now_ns(s) < 0) {
        json_decref(doc);
        return berth_error_set(reterr, -EIO, "the host clock cannot be read");
    }
    if (strcmp(argv0, "outputs") == 0 && (r = write_outputs(s, run_id, json_object_get(job, "argv"), reterr)) < 0) {
        json_decref(doc);
        return r;
    }
    started = now_ns(s);
    arg1 = json_string_value(json_array_get(json_object_get(job, "argv"), 1));
    due = strcmp(argv0, "sleep-ms") == 0 ? started + (arg1 ? atoll(arg1) : 0) * 1000000LL
          : strcmp(argv0, "sleep") == 0 || strcmp(argv0, "hold") == 0 || strcmp(argv0, "slow-start") == 0
              ? -1 /* polled */
                                                                       : started;
    rec = json_pack("{s:O, s:I, s:O*}", "argv", json_object_get(job, "argv"), "started_at", (json_int_t)started,
                    "inputs_dir", json_object_get(doc, "inputs_dir"));
    text = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
    json_decref(rec);
    json_decref(doc);
    if (!text)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = mark(s, run_id, ".job", text, 0, reterr);
    free(text);
    if (r < 0)
        return r;
    log_call(s, "start %s new", run_id);
    if (due >= 0)
        script_notify_at(s->notify, run_id, due);
    return 0;
}

static json_t *b64(const char *data, size_t len)
{
    size_t n = sodium_base64_encoded_len(len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    char *text = malloc(n);
    json_t *v;

    if (!text)
        return NULL;
    sodium_bin2base64(text, n, (const unsigned char *)data, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    v = json_string(text);
    free(text);
    return v;
}

static json_t *ns(int64_t v)
{
    char text[24];
    snprintf(text, sizeof(text), "%lld", (long long)v);
    return json_string(text);
}

/* What inspect reports for an "outputs" script: its outputs, or an output_error. */
static json_t *report_outputs(struct script *s, const json_t *argv, json_t **ret_error)
{
    json_t *list = json_array();
    size_t i;

    *ret_error = NULL;
    for (i = 1; list && i < json_array_size(argv); i++) {
        const char *spec = json_string_value(json_array_get(argv, i));
        size_t n = strcspn(spec, "=~^!@");
        char digest[BERTH_DIGEST_BUFSZ], *text;
        size_t len;

        if (!spec[n])
            continue;
        if (spec[n] == '!') {
            *ret_error = json_pack("{s:s%, s:s}", "id", spec, n, "problem", spec + n + 1);
            json_array_clear(list);
            return list;
        }
        text = spec_content(spec, n, &len);
        if (!text)
            break;
        text[len] = 'x'; /* "~": the digest of one more byte than was written */
        if (s->host->digest(s->host, text, len + (spec[n] == '~'), digest) < 0 ||
            json_array_append_new(list, json_pack("{s:s%, s:s, s:I}", "id", spec, n, "digest", digest, "size",
                                                  (json_int_t)len)) < 0) {
            free(text);
            break;
        }
        free(text);
    }
    return list;
}

/* Staged input @arg of the job, from the inputs_dir its dispatch named. */
static char *read_input(const json_t *rec, const char *arg, size_t *ret_len)
{
    const char *dir = json_string_value(json_object_get(rec, "inputs_dir"));
    char path[4096], *buf = NULL;
    ssize_t n = 0;
    int fd;

    *ret_len = 0;
    if (!dir || !arg || snprintf(path, sizeof(path), "%s/%s", dir, arg) >= (int)sizeof(path))
        return NULL;
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    buf = malloc(65536);
    if (buf)
        n = read(fd, buf, 65536);
    close(fd);
    if (n < 0) {
        free(buf);
        return NULL;
    }
    *ret_len = (size_t)n;
    return buf;
}

static int script_inspect(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct script *s = state;
    char name[192], *out = NULL;
    const char *argv0, *arg1;
    json_t *rec, *argv;
    json_error_t jerr;
    json_t *outputs = NULL, *output_error = NULL;
    int64_t started, finished;
    size_t out_len = 0, i;
    int code = 0, fd;
    bool done = true;

    if (!id_ok(job_id))
        return berth_error_set(reterr, -EINVAL, "bad job id");
    snprintf(name, sizeof(name), "%s.job", job_id);
    fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 && errno == ENOENT)
        return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "%s: %s", name, strerror(errno));
    {
        FILE *f = fdopen(fd, "r"); /* buffered: json_loadfd reads a byte at a time */
        rec = f ? json_loadf(f, 0, &jerr) : NULL;
        if (f)
            fclose(f);
        else
            close(fd);
    }
    if (!rec)
        return berth_error_set(reterr, -EIO, "%s is damaged", name);
    argv = json_object_get(rec, "argv");
    argv0 = json_string_value(json_array_get(argv, 0));
    arg1 = json_string_value(json_array_get(argv, 1));
    started = json_integer_value(json_object_get(rec, "started_at"));
    finished = started + 1000000;
    if (strcmp(argv0, "echo") == 0) {
        size_t cap = 1;
        for (i = 1; i < json_array_size(argv); i++)
            cap += strlen(json_string_value(json_array_get(argv, i))) + 1;
        out = calloc(1, cap);
        for (i = 1; out && i < json_array_size(argv); i++) {
            if (i > 1)
                out[out_len++] = ' ';
            strcpy(out + out_len, json_string_value(json_array_get(argv, i)));
            out_len += strlen(json_string_value(json_array_get(argv, i)));
        }
        if (out)
            out[out_len++] = '\n';
    } else if (strcmp(argv0, "exit") == 0) {
        code = arg1 ? atoi(arg1) : 0;
    } else if (strcmp(argv0, "sleep") == 0 || strcmp(argv0, "cancelled-before-start") == 0 ||
               strcmp(argv0, "slow-start") == 0) {
        done = false;
    } else if (strcmp(argv0, "sleep-ms") == 0) {
        finished = started + (arg1 ? atoll(arg1) : 0) * 1000000LL;
        done = now_ns(s) >= finished;
        if (!done)
            script_notify_at(s->notify, job_id, finished); /* again, after a restart of berthd */
    } else if (strcmp(argv0, "hold") == 0) {
        struct stat rst;
        snprintf(name, sizeof(name), "%s.release", job_id);
        done = fstatat(s->dirfd, name, &rst, AT_SYMLINK_NOFOLLOW) == 0;
        if (done) {
            finished = (int64_t)rst.st_mtim.tv_sec * 1000000000LL + rst.st_mtim.tv_nsec;
            if (finished < started)
                finished = started;
            out = strdup("released\n");
            out_len = out ? strlen(out) : 0;
        }
    } else if (strcmp(argv0, "cat-input") == 0) {
        out = read_input(rec, arg1, &out_len);
    } else if (strcmp(argv0, "outputs") == 0) {
        outputs = report_outputs(s, argv, &output_error);
    } else if (strcmp(argv0, "spew") == 0) {
        out_len = arg1 ? (size_t)atoll(arg1) : 0;
        out = malloc(out_len + 1);
        if (out)
            memset(out, 'x', out_len);
    }
    if (exists(s, job_id, ".cancel") && !done) {
        json_decref(rec);
        json_decref(outputs);
        json_decref(output_error);
        free(out);
        return give_json(json_pack("{s:i, s:s, s:n, s:s, s:o, s:o}", "schema_version", 1, "state", "cancelled",
                                   "exit_code", "reason", "cancelled", "started_at", ns(started), "finished_at",
                                   ns(now_ns(s))),
                         ret_json, ret_len, reterr);
    }
    json_decref(rec);
    if (!done) {
        free(out);
        return give_json(
            json_pack("{s:i, s:s, s:o}", "schema_version", 1, "state", "running", "started_at", ns(started)), ret_json,
            ret_len, reterr);
    }
    {
        json_t *doc = json_pack("{s:i, s:s, s:i, s:o, s:o, s:o, s:o, s:o, s:o*}", "schema_version", 1, "state",
                                "exited", "exit_code", code, "stdout", b64(out ? out : "", out_len), "stderr",
                                b64("", 0), "outputs", outputs ? outputs : json_array(), "started_at", ns(started),
                                "finished_at", ns(finished), "output_error", output_error);
        free(out);
        return give_json(doc, ret_json, ret_len, reterr);
    }
}

static int script_cancel(void *state, const char *job_id, struct berth_error *reterr)
{
    struct script *s = state;
    int r;

    if (!id_ok(job_id))
        return berth_error_set(reterr, -EINVAL, "bad job id");
    log_call(s, "cancel %s", job_id);
    if (!exists(s, job_id, ".job")) {
        /* Fence the id so that a late start cannot run it. */
        r = mark(s, job_id, ".job", "{\"argv\":[\"cancelled-before-start\"],\"started_at\":0}", 0, reterr);
        if (r < 0 && r != -EEXIST)
            return r;
        mark(s, job_id, ".cancel", "", 0, NULL);
        return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
    }
    r = mark(s, job_id, ".cancel", "", 0, reterr);
    if (r < 0 && r != -EEXIST)
        return r;
    if (exists(s, job_id, ".leftover") && !exists(s, job_id, ".released"))
        return berth_error_set(reterr, -EBUSY, "job %s: teardown not proven (a leftover process)", job_id);
    return 0;
}

static int script_reap(void *state, const char *job_id, struct berth_error *reterr)
{
    struct script *s = state;
    int r;

    if (!id_ok(job_id))
        return berth_error_set(reterr, -EINVAL, "bad job id");
    log_call(s, "reap %s", job_id);
    if (!exists(s, job_id, ".job"))
        return berth_error_set(reterr, -ENOENT, "job %s was never started here", job_id);
    r = mark(s, job_id, ".reaped", "", 0, reterr);
    return r == -EEXIST ? 0 : r;
}

static int script_open_output(void *state, const char *job_id, const char *output_id, int *ret_fd,
                              uint64_t *ret_size, struct berth_error *reterr)
{
    struct script *s = state;
    char name[192];
    struct stat st;
    int fd;

    if (!id_ok(job_id) || !id_ok(output_id) || !ret_fd || !ret_size)
        return berth_error_set(reterr, -EINVAL, "bad job or output id");
    log_call(s, "open_output %s %s", job_id, output_id);
    /* "^": busy until the test says otherwise. */
    {
        const char *argv_busy = NULL;
        char job[192];
        json_error_t jerr;
        json_t *rec;
        size_t i;
        snprintf(job, sizeof(job), "%s.job", job_id);
        fd = openat(s->dirfd, job, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        rec = fd >= 0 ? json_loadfd(fd, 0, &jerr) : NULL;
        if (fd >= 0)
            close(fd);
        for (i = 1; rec && i < json_array_size(json_object_get(rec, "argv")); i++) {
            const char *spec = json_string_value(json_array_get(json_object_get(rec, "argv"), i));
            size_t n = strcspn(spec, "=~^!@");
            if (spec[n] == '^' && n == strlen(output_id) && strncmp(spec, output_id, n) == 0)
                argv_busy = spec;
        }
        json_decref(rec);
        if (argv_busy && !exists(s, job_id, ".unbusy"))
            return berth_error_set(reterr, -EBUSY, "output %s is busy, on purpose", output_id);
    }
    snprintf(name, sizeof(name), "%s.out.%s", job_id, output_id);
    fd = openat(s->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "output %s of %s: %s", output_id, job_id, strerror(errno));
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return berth_error_set(reterr, -e, "output %s: %s", output_id, strerror(e));
    }
    *ret_fd = fd;
    *ret_size = (uint64_t)st.st_size;
    return 0;
}

static int script_forget(void *state, const char *job_id, struct berth_error *reterr)
{
    static const char *const extra[] = {".cancel", ".flaky", ".leftover", ".released", ".release"};
    struct script *s = state;
    char name[192];
    size_t i;

    if (!id_ok(job_id))
        return berth_error_set(reterr, -EINVAL, "bad job id");
    log_call(s, "forget %s", job_id);
    if (!exists(s, job_id, ".job")) {
        snprintf(name, sizeof(name), "%s.reaped", job_id); /* left by a forget cut short */
        (void)unlinkat(s->dirfd, name, 0);
        return berth_error_set(reterr, -ENOENT, "job %s is not known here", job_id);
    }
    if (!exists(s, job_id, ".reaped"))
        return berth_error_set(reterr, -EBUSY, "job %s is not reaped yet", job_id);
    for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        snprintf(name, sizeof(name), "%s%s", job_id, extra[i]);
        if (unlinkat(s->dirfd, name, 0) < 0 && errno != ENOENT)
            return berth_error_set(reterr, -errno, "%s: %s", name, strerror(errno));
    }
    for (i = 0; i < 2; i++) {
        snprintf(name, sizeof(name), "%s%s", job_id, i == 0 ? ".job" : ".reaped");
        if (unlinkat(s->dirfd, name, 0) < 0 && errno != ENOENT)
            return berth_error_set(reterr, -errno, "%s: %s", name, strerror(errno));
    }
    return fsync(s->dirfd) < 0 ? berth_error_set(reterr, -errno, "fsync: %s", strerror(errno)) : 0;
}

static const struct berth_runtime_ops_v1 script_ops = {
    .capabilities = script_capabilities,
    .start = script_start,
    .inspect = script_inspect,
    .cancel = script_cancel,
    .reap = script_reap,
    .open_output = script_open_output,
    .forget = script_forget,
};

static const struct berth_plugin script_plugin = {
    .abi_version = SCRIPT_ABI,
    .struct_size = sizeof(struct berth_plugin),
    .name = SCRIPT_NAME,
    .kind = BERTH_PLUGIN_RUNTIME,
    .version = "1.0.0",
    .init = script_init,
    .fini = script_fini,
    .ops = &script_ops,
    .ops_size = SCRIPT_OPS_SIZE,
};

const struct berth_plugin *berth_plugin_entry(void)
{
    return &script_plugin;
}
