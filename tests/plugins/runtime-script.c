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
 *   ["refuse"]           start() refuses the document (-EBADMSG)
 *   ["flaky"]            the first start() fails with -EIO, the next succeeds
 *   ["leftover"]         exits 0 at once, but cancel() says its teardown is
 *                        not proven (-EBUSY) until "<run_id>.released" exists
 *   anything else        exits 0 with no output
 *
 * Everything is kept in files under the configured state_directory, so a
 * restarted berthd finds the same jobs: "<run_id>.job" (the started job,
 * also its tombstone: start() never starts an id twice), "<run_id>.cancel",
 * "<run_id>.reaped", and "calls.log", one line per start/cancel/reap call:
 *
 *   start RUN_ID new | start RUN_ID again | cancel RUN_ID | reap RUN_ID
 *
 * so tests can prove that no job was started twice.  Configuration:
 *   {"state_directory": "/abs/dir", "egress_classes": ["none", ...],
 *    "runtime": {"path", "version", "sha256"}, "qualification": ANY}
 * (egress_classes optional, default ["none", "loopback"]; runtime optional:
 * reported as capabilities().runtime, so that the backend can be qualified;
 * qualification is what capabilities() claims about the backend's
 * qualification, default "unqualified": berthd must never believe it, see
 * tests/unit/test-broker.c).
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

struct script {
    const struct berth_host *host;
    int dirfd;
    json_t *egress;
    json_t *runtime;       /* NULL: capabilities() name no runtime */
    json_t *qualification; /* what capabilities() claims */
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
    s->qualification = json_incref(json_object_get(cfg, "qualification"));
    if (!s->qualification)
        s->qualification = json_string("unqualified");
    json_decref(cfg);
    *ret_state = s;
    return 0;
}

static void script_fini(void *state)
{
    struct script *s = state;

    if (!s)
        return;
    close(s->dirfd);
    json_decref(s->egress);
    json_decref(s->runtime);
    json_decref(s->qualification);
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

    if (caps && s->runtime && json_object_set(caps, "runtime", s->runtime) < 0) {
        json_decref(caps);
        caps = NULL;
    }
    return give_json(caps, ret_json, ret_len, reterr);
}

static int script_start(void *state, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    struct script *s = state;
    json_error_t jerr;
    json_t *doc = json_loadb(dispatch, dispatch_len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *receipt = json_object_get(json_object_get(doc, "receipt"), "receipt");
    json_t *job = json_object_get(doc, "job");
    const char *id = json_string_value(json_object_get(receipt, "run_id"));
    const char *argv0 = json_string_value(json_array_get(json_object_get(job, "argv"), 0));
    char run_id[129];
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
    if (now_ns(s) < 0) {
        json_decref(doc);
        return berth_error_set(reterr, -EIO, "the host clock cannot be read");
    }
    rec = json_pack("{s:O, s:I}", "argv", json_object_get(job, "argv"), "started_at", (json_int_t)now_ns(s));
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

static int script_inspect(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct script *s = state;
    char name[192], *out = NULL;
    const char *argv0, *arg1;
    json_t *rec, *argv;
    json_error_t jerr;
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
    } else if (strcmp(argv0, "sleep") == 0 || strcmp(argv0, "cancelled-before-start") == 0) {
        done = false;
    } else if (strcmp(argv0, "sleep-ms") == 0) {
        finished = started + (arg1 ? atoll(arg1) : 0) * 1000000LL;
        done = now_ns(s) >= finished;
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
    } else if (strcmp(argv0, "spew") == 0) {
        out_len = arg1 ? (size_t)atoll(arg1) : 0;
        out = malloc(out_len + 1);
        if (out)
            memset(out, 'x', out_len);
    }
    if (exists(s, job_id, ".cancel") && !done) {
        json_decref(rec);
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
        json_t *doc = json_pack("{s:i, s:s, s:i, s:o, s:o, s:[], s:o, s:o}", "schema_version", 1, "state", "exited",
                                "exit_code", code, "stdout", b64(out ? out : "", out_len), "stderr", b64("", 0),
                                "outputs", "started_at", ns(started), "finished_at", ns(finished));
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

static const struct berth_runtime_ops_v1 script_ops = {
    .capabilities = script_capabilities,
    .start = script_start,
    .inspect = script_inspect,
    .cancel = script_cancel,
    .reap = script_reap,
};

static const struct berth_plugin script_plugin = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "runtime-script",
    .kind = BERTH_PLUGIN_RUNTIME,
    .version = "1.0.0",
    .init = script_init,
    .fini = script_fini,
    .ops = &script_ops,
    .ops_size = sizeof(script_ops),
};

const struct berth_plugin *berth_plugin_entry(void)
{
    return &script_plugin;
}
