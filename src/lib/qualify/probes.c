/* SPDX-License-Identifier: MIT */
/* probes.c -- live qualification probes; see probes.h. */
#include <arpa/inet.h>
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "cgroup2.h"
#include "clock.h"
#include "digest.h"
#include "encoding.h"
#include "fsutil.h"
#include "job.h"
#include "jobstore.h"
#include "jsonobj.h"
#include "macro.h"
#include "probes.h"
#include "receipt.h"
#include "tree.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define PROBE_WALL_NS (60 * NS_PER_S)
#define DEADLINE_PROBE_NS (3 * NS_PER_S)
#define SCRATCH_BYTES (8 * 1024 * 1024)
#define PIDS 64
#define OUTPUT_BYTES 4096
#define INSPECT_MAX (4 * 1024 * 1024)
#define TOKEN_PREFIX "berthq" /* probe job processes are found by their token */
#define TOKEN_BYTES 12
#define OUTPUTS_BYTES (1024 * 1024) /* artifact_bytes of the outputs probe */
#define INPUT_PATH "/inputs/berth-probe/data" /* nested: the directories on the way must stay read-only */
#define OUTPUT_PATH "/tmp/outputs/berth-probe"

struct run {
    const struct berth_qualify_params *p;
    bool stages_inputs, captures_outputs; /* capabilities() names "inputs", "outputs" */
    char rootfs[4096];
    char run_id[BERTH_RUN_ID_LEN + 1];
    char token[sizeof(TOKEN_PREFIX) + BERTH_HEX_LEN(TOKEN_BYTES)];
    int tcp_fd, udp_fd, tcp_port, udp_port;
    json_t *probes;
    unsigned lost; /* outcomes that could not be added to @probes (out of memory) */
    bool passed;
    char probe_sha256[BERTH_DIGEST_BUFSZ];
};

/* One probe job's outcome, as inspect reported it. */
struct outcome {
    char state[16];
    int exit_code; /* -1 = none */
    char reason[64];
    char *out;
    size_t out_len, err_len;
    json_t *outputs; /* inspect's "outputs", or NULL */
};

/* What a probe job reads and writes besides its argv (probe_io()). */
struct io {
    json_t *inputs, *outputs; /* job.inputs, job.outputs (borrowed) */
    int64_t artifact_bytes;
    const char *inputs_dir; /* the dispatch's inputs_dir, or NULL */
};

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * NS_PER_MS};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* BERTH_HEX_LEN(@nbytes) random hex digits and a NUL at @out, for a run id or a token. */
static void random_hex(char *out, size_t nbytes)
{
    uint8_t raw[BERTH_RUN_ID_BYTES > TOKEN_BYTES ? BERTH_RUN_ID_BYTES : TOKEN_BYTES];
    int64_t t = 0; /* stays 0 if the clock cannot be read: then only getrandom() makes ids unique */
    size_t i;

    assert(nbytes <= sizeof(raw));
    if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes)
        memset(raw, 0, sizeof(raw)); /* ids stay well-formed; uniqueness then comes from time below */
    (void)berth_now_ns(CLOCK_MONOTONIC, &t, NULL);
    for (i = 0; i < nbytes; i++)
        sprintf(out + 2 * i, "%02x", raw[i] ^ (uint8_t)(t >> (i % 8)));
}

static void record(struct run *r, const char *name, const char *outcome, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void record(struct run *r, const char *name, const char *outcome, const char *fmt, ...)
{
    char detail[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    if (streq(outcome, "fail"))
        r->passed = false;
    /* A record without every outcome must not pass: berth_qualify_probes() fails. */
    if (json_array_append_new(r->probes,
                              json_pack("{s:s, s:s, s:s}", "name", name, "outcome", outcome, "detail", detail)) < 0) {
        r->passed = false;
        r->lost++;
    }
    if (r->p->progress)
        r->p->progress(r->p->userdata, name, outcome, detail);
}

/* Call @fn(@pid, @userdata) for each process on the host whose command line
 * holds @a or @b (@b may be NULL), until it returns false.  Returns how
 * many it was called for, or -errno when /proc cannot be read. */
static int walk_matching(const char *a, const char *b, bool (*fn)(pid_t pid, void *userdata), void *userdata)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -errno;
    while ((e = readdir(d))) {
        char path[300], buf[4096];
        ssize_t len;
        int fd;

        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        len = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (len <= 0)
            continue;
        for (ssize_t i = 0; i < len; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[len] = '\0';
        if (!strstr(buf, a) && !(b && strstr(buf, b)))
            continue;
        n++;
        if (fn && !fn((pid_t)atoi(e->d_name), userdata))
            break;
    }
    closedir(d);
    return n;
}

/* Processes on the host whose command line holds @a or @b. */
static int processes_matching(const char *a, const char *b)
{
    return walk_matching(a, b, NULL, NULL);
}

/* Wait (bounded) until nothing of the job is left on the host. */
static int leftovers(struct run *r)
{
    int n = 0;

    for (int i = 0; i < 50; i++) {
        n = processes_matching(r->token, r->run_id);
        if (n <= 0)
            return n;
        sleep_ms(100);
    }
    return n;
}

static int setup_listeners(struct run *r, struct berth_error *reterr)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    r->tcp_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    r->udp_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r->tcp_fd < 0 || r->udp_fd < 0 || bind(r->tcp_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        listen(r->tcp_fd, 8) < 0 || getsockname(r->tcp_fd, (struct sockaddr *)&a, &len) < 0)
        return berth_error_set(reterr, -errno, "cannot listen on 127.0.0.1: %m");
    r->tcp_port = ntohs(a.sin_port);
    a.sin_port = 0;
    len = sizeof(a);
    if (bind(r->udp_fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        getsockname(r->udp_fd, (struct sockaddr *)&a, &len) < 0)
        return berth_error_set(reterr, -errno, "cannot bind a UDP socket on 127.0.0.1: %m");
    r->udp_port = ntohs(a.sin_port);
    return 0;
}

/* The probe rootfs: berth-probe as /probe, empty mount points, all read-only to the guest. */
static int setup_rootfs(struct run *r, struct berth_error *reterr)
{
    _cleanup_close_ int src = -1, dst = -1, dirfd = -1;
    char buf[65536];
    ssize_t n;

    snprintf(r->rootfs, sizeof(r->rootfs), "%s/rootfs", r->p->work_dir);
    dirfd = berth_open_trusted(r->p->work_dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dirfd < 0)
        return dirfd;
    {
        _cleanup_close_ int old = openat(dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (old >= 0) {
            (void)berth_tree_clear(old, NULL);
            (void)unlinkat(dirfd, "rootfs", AT_REMOVEDIR);
        }
    }
    if (mkdirat(dirfd, "rootfs", 0755) < 0)
        return berth_error_set(reterr, -errno, "cannot create %s: %m", r->rootfs);
    {
        _cleanup_close_ int rootfd = openat(dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rootfd < 0 || fchmod(rootfd, 0755) < 0)
            return berth_error_set(reterr, -errno, "cannot open %s: %m", r->rootfs);
        for (const char *const *d = (const char *const[]){"proc", "dev", "sys", "tmp", NULL}; *d; d++)
            if (mkdirat(rootfd, *d, 0755) < 0)
                return berth_error_set(reterr, -errno, "cannot create %s/%s: %m", r->rootfs, *d);
        /* The program that decides the verdict must be as trusted as the
         * runtime.  O_NONBLOCK: a FIFO at the path must not block the open. */
        src = berth_open_trusted(r->p->probe, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
        if (src < 0)
            return src;
        {
            int rc = berth_trusted_file_check(src, r->p->probe, 0, NULL, reterr);
            if (rc < 0) {
                berth_error_prefix(reterr, "probe");
                return rc;
            }
        }
        dst = openat(rootfd, "probe", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0755);
        if (dst < 0)
            return berth_error_set(reterr, -errno, "cannot create %s/probe: %m", r->rootfs);
    }
    {
        struct berth_sha256 *h = NULL;
        uint8_t raw[BERTH_SHA256_LEN];
        int rc = berth_sha256_new(&h);

        while (rc == 0 && (n = read(src, buf, sizeof(buf))) > 0) {
            if (berth_write_all(dst, buf, (size_t)n) < 0)
                rc = -errno;
            else
                rc = berth_sha256_update(h, buf, (size_t)n);
        }
        if (rc == 0 && (n < 0 || fchmod(dst, 0755) < 0))
            rc = -errno;
        if (rc == 0)
            rc = berth_sha256_final(h, raw);
        berth_sha256_free(h);
        if (rc < 0)
            return berth_error_set(reterr, rc, "cannot copy %s: %s", r->p->probe, strerror(-rc));
        berth_digest_format(raw, r->probe_sha256);
    }
    return 0;
}

static void outcome_clear(struct outcome *o)
{
    free(o->out);
    json_decref(o->outputs);
    memset(o, 0, sizeof(*o));
}

static int read_outcome(struct run *r, struct outcome *o, bool *ret_terminal, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const char *state, *reason, *out, *err;
    size_t len = 0;
    int rc;

    rc = r->p->ops->inspect(r->p->state, r->run_id, &text, &len, reterr);
    if (rc < 0)
        return rc;
    if ((rc = berth_json_parse(text, len, INSPECT_MAX, &doc, reterr)) < 0)
        return rc;
    state = json_string_value(json_object_get(doc, "state"));
    if (!state)
        return berth_error_set(reterr, -EBADMSG, "inspect without a state");
    outcome_clear(o);
    snprintf(o->state, sizeof(o->state), "%s", state);
    *ret_terminal = !streq(state, "starting") && !streq(state, "running");
    o->exit_code = json_is_integer(json_object_get(doc, "exit_code"))
                       ? (int)json_integer_value(json_object_get(doc, "exit_code"))
                       : -1;
    reason = json_string_value(json_object_get(doc, "reason"));
    snprintf(o->reason, sizeof(o->reason), "%s", reason ? reason : "");
    o->outputs = json_incref(json_object_get(doc, "outputs"));
    out = json_string_value(json_object_get(doc, "stdout"));
    err = json_string_value(json_object_get(doc, "stderr"));
    if (out) {
        size_t n = strlen(out);
        o->out = malloc(n + 1);
        if (!o->out || berth_base64url_decode(out, n, (uint8_t *)o->out, n + 1, &o->out_len) < 0)
            return berth_error_set(reterr, -EBADMSG, "inspect.stdout is not base64url");
        o->out[o->out_len] = '\0';
    }
    if (err) {
        o->err_len = strlen(err) * 3 / 4; /* an upper bound is enough for the output-limit count below */
        {
            size_t n = strlen(err);
            _cleanup_free_ uint8_t *tmp = malloc(n + 1);
            if (!tmp || berth_base64url_decode(err, n, tmp, n + 1, &o->err_len) < 0)
                return berth_error_set(reterr, -EBADMSG, "inspect.stderr is not base64url");
        }
    }
    return 0;
}

/* A new run id and token for the next probe job: call it before building
 * the job's argv, which carries the token its processes are found by. */
static void fresh_ids(struct run *r)
{
    r->run_id[0] = 'r';
    random_hex(r->run_id + 1, BERTH_RUN_ID_BYTES);
    snprintf(r->token, sizeof(r->token), "%s", TOKEN_PREFIX);
    random_hex(r->token + strlen(TOKEN_PREFIX), TOKEN_BYTES);
}

/* The receipt envelope of a probe job: signed with the broker key when
 * the parameters have one (berth_receipt_create()), else unsigned. */
static int probe_receipt(struct run *r, const struct berth_job *job, int64_t now, int64_t wall_ns, json_t **ret,
                         struct berth_error *reterr)
{
    _cleanup_json_ json_t *scope = json_array();
    struct berth_receipt_params rp;

    if (!r->p->key) {
        *ret = json_pack("{s:{s:s, s:o}, s:s}", "receipt", "run_id", r->run_id, "deadline",
                         berth_json_ns(now + wall_ns), "signature", "");
        return *ret ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    rp = (struct berth_receipt_params){
        .broker = r->p->broker ? r->p->broker : "berth-qualify",
        .job = job,
        .run_id = r->run_id,
        .who = {.principal = "berth-qualify", .scope = scope},
        .pool = "qualify",
        .placement_hash = "0000000000000000000000000000000000000000000000000000000000000000",
        .backend = r->p->backend,
        .plugin = "qualify",
        .plugin_version = "qualify",
        .accepted_at = now,
        .deadline = now + wall_ns,
    };
    return scope ? berth_receipt_create(r->p->key, &rp, ret, reterr) : berth_error_set(reterr, -ENOMEM, "out of memory");
}

/* Start one probe job, with @io (or none); 0 or -errno with reterr. */
static int start_probe_io(struct run *r, const char *name, json_t *argv, int64_t wall_ns, int64_t output_bytes,
                          const struct io *io, struct berth_error *reterr)
{
    _cleanup_json_ json_t *job = NULL, *doc = NULL;
    json_t *receipt = NULL;
    _cleanup_free_ char *text = NULL;
    struct berth_job *parsed = NULL;
    char id[BERTH_JOB_ID_MAX + 1];
    size_t len = 0;
    int64_t now;
    int rc;

    snprintf(id, sizeof(id), "qualify-%s", name);
    job =
        json_pack("{s:i, s:s, s:s, s:s, s:o, s:{s:i, s:I, s:i, s:I, s:I, s:I, s:i}}", "schema_version", 1, "id", id,
                  "pool", "qualify", "image", "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                  "argv", argv, "limits", "cpu_millis", 1000, "memory_bytes", (json_int_t)256 * 1024 * 1024, "pids",
                  PIDS, "scratch_bytes", (json_int_t)SCRATCH_BYTES, "wall_time_ns", (json_int_t)wall_ns, "output_bytes",
                  (json_int_t)output_bytes, "artifact_bytes", (json_int_t)(io ? io->artifact_bytes : 0));
    if (!job)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (io && ((io->inputs && json_object_set(job, "inputs", io->inputs) < 0) ||
               (io->outputs && json_object_set(job, "outputs", io->outputs) < 0)))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((rc = berth_job_from_json(job, &parsed, reterr)) < 0)
        return rc;
    /* After the pack, which took @argv: an early return must not leak it. */
    if ((rc = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0 ||
        (rc = probe_receipt(r, parsed, now, wall_ns, &receipt, reterr)) < 0) {
        berth_job_free(parsed);
        return rc;
    }
    berth_job_free(parsed);
    doc = json_pack("{s:i, s:o, s:O, s:{s:s, s:{s:{}, s:s, s:i}, s:n, s:s, s:[]}, s:s}", "schema_version", 1,
                    "receipt", receipt, "job", job, "effective", "pool_hash", "00", "template", "env", "root", "/",
                    "timeout_seconds", 600, "backend_override", "network_egress_class", "none", "credential_env",
                    "rootfs", r->rootfs);
    if (!doc || (io && io->inputs_dir && json_object_set_new(doc, "inputs_dir", json_string(io->inputs_dir)) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((rc = berth_json_serialize(doc, 0, &text, &len, reterr)) < 0)
        return rc;
    rc = r->p->ops->start(r->p->state, text, len, reterr);
    return rc < 0 ? rc : 0;
}

static int start_probe(struct run *r, const char *name, json_t *argv, int64_t wall_ns, int64_t output_bytes,
                       struct berth_error *reterr)
{
    return start_probe_io(r, name, argv, wall_ns, output_bytes, NULL, reterr);
}

/* Wait for the job's terminal outcome (bounded by @wall_ns plus a minute). */
static int wait_probe(struct run *r, int64_t wall_ns, struct outcome *o, struct berth_error *reterr)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, wall_ns + 60 * NS_PER_S);
    bool terminal = false;
    int rc;

    while (!berth_deadline_passed(CLOCK_MONOTONIC, until)) {
        rc = read_outcome(r, o, &terminal, reterr);
        if (rc < 0 && rc != -EAGAIN)
            return rc;
        if (rc == 0 && terminal)
            return 0;
        sleep_ms(50);
    }
    return berth_error_set(reterr, -ETIMEDOUT, "the job did not finish");
}

static void reap_probe(struct run *r)
{
    struct berth_error err = BERTH_ERROR_INIT;
    (void)r->p->ops->reap(r->p->state, r->run_id, &err);
}

/* Run a probe whose verdict the probe program prints itself: exited 0 and
 * "PASS ...", with @io (or none).  @ok and @detail receive the verdict,
 * @ret_outcome (optional) what inspect said; nothing is recorded. */
static void run_inside_io(struct run *r, const char *name, json_t *argv, const struct io *io, bool *ok,
                          char *detail, size_t size, struct outcome *ret_outcome)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};
    int rc;

    fresh_ids(r);
    rc = start_probe_io(r, name, argv, PROBE_WALL_NS, 65536, io, &err);
    if (rc == 0)
        rc = wait_probe(r, PROBE_WALL_NS, &o, &err);
    *ok = false;
    if (rc < 0) {
        snprintf(detail, size, "the probe job did not run: %.400s", err.message);
    } else {
        char *line = o.out ? strtok(o.out, "\n") : NULL;
        const char *said = line ? strstr(line, ": ") : NULL; /* "PASS what: detail" */
        *ok = streq(o.state, "exited") && o.exit_code == 0 && line && strncmp(line, "PASS ", 5) == 0;
        if (*ok)
            snprintf(detail, size, "%s", said ? said + 2 : line + 5);
        else
            snprintf(detail, size, "%s (exit code %d): %s", o.state, o.exit_code, line ? line : "no output");
    }
    if (ret_outcome) {
        *ret_outcome = o; /* the caller reaps when it is done with the job */
        return;
    }
    reap_probe(r);
    outcome_clear(&o);
}

static void run_inside(struct run *r, const char *name, json_t *argv, bool *ok, char *detail, size_t size)
{
    run_inside_io(r, name, argv, NULL, ok, detail, size, NULL);
}

static void inside(struct run *r, const char *name, json_t *argv)
{
    char detail[512];
    bool ok;

    run_inside(r, name, argv, &ok, detail, sizeof(detail));
    record(r, name, ok ? "pass" : "fail", "%s", detail);
}

static void network(struct run *r)
{
    char tcp[16], udp[16], buf[64], detail[512];
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    bool ok;

    snprintf(tcp, sizeof(tcp), "%d", r->tcp_port);
    snprintf(udp, sizeof(udp), "%d", r->udp_port);
    run_inside(r, "network", json_pack("[s, s, s, s]", "/probe", "network", tcp, udp), &ok, detail, sizeof(detail));
    /* The host side must have seen nothing at all. */
    if (accept4(r->tcp_fd, (struct sockaddr *)&a, &len, SOCK_CLOEXEC) >= 0 ||
        recv(r->udp_fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
        record(r, "network", "fail", "the host's loopback listener was reached from the sandbox");
    else
        record(r, "network", ok ? "pass" : "fail", "%s", detail);
}

/* A probe judged from outside: the job must end @want (and exit 0 when
 * @want is "exited") and leave nothing of it on the host. */
static void outside(struct run *r, const char *name, json_t *argv, int64_t wall_ns, const char *want,
                    const char *pass_detail)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};
    int rc, left = -1;

    rc = start_probe(r, name, argv, wall_ns, 65536, &err);
    if (rc == 0)
        rc = wait_probe(r, wall_ns, &o, &err);
    if (rc == 0)
        left = leftovers(r);
    if (rc < 0)
        record(r, name, "fail", "the probe job did not run: %.400s", err.message);
    else if (!streq(o.state, want) || (streq(want, "exited") && o.exit_code != 0))
        record(r, name, "fail", "reported %s (exit code %d), not %s", o.state, o.exit_code, want);
    else if (left != 0)
        record(r, name, "fail", "%d processes of the job remain on the host", left);
    else
        record(r, name, "pass", "%s", pass_detail);
    reap_probe(r);
    outcome_clear(&o);
}

static void cancel_kills(struct run *r)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};
    bool terminal = false, seen_child = false;
    int rc, left = -1;

    fresh_ids(r);
    rc = start_probe(r, "cancel-kills-descendants", json_pack("[s, s, s]", "/probe", "ignore-term", r->token),
                     PROBE_WALL_NS, 65536, &err);
    /* Running, and its child started (the probe prints once it forked). */
    for (int i = 0; rc == 0 && i < 400; i++) {
        rc = read_outcome(r, &o, &terminal, &err);
        if (rc < 0 || terminal || streq(o.state, "running"))
            break;
        sleep_ms(50);
    }
    if (rc == 0 && !terminal) {
        /* Its child must exist before the cancel: on a runtime whose processes
         * the host sees, wait for it; in a gVisor sandbox they are not visible,
         * so give it time (the sandbox process, which carries the run id, is
         * what must be gone afterwards). */
        for (int i = 0; i < 50 && !seen_child; i++) {
            seen_child = processes_matching(r->token, NULL) > 0;
            if (!seen_child)
                sleep_ms(100);
        }
        rc = r->p->ops->cancel(r->p->state, r->run_id, &err);
    }
    if (rc == 0)
        rc = wait_probe(r, PROBE_WALL_NS, &o, &err);
    if (rc == 0)
        left = leftovers(r);
    if (rc < 0)
        record(r, "cancel-kills-descendants", "fail", "%s", err.message);
    else if (!streq(o.state, "cancelled"))
        record(r, "cancel-kills-descendants", "fail", "reported %s after cancel", o.state);
    else if (left != 0)
        record(r, "cancel-kills-descendants", "fail", "%d processes remain after cancel", left);
    else
        record(r, "cancel-kills-descendants", "pass", "cancelled; the job and its child%s are gone",
               seen_child ? " (seen on the host before the cancel)" : "");
    reap_probe(r);
    outcome_clear(&o);
}

static void output_limit(struct run *r)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};
    int rc;

    fresh_ids(r);
    rc = start_probe(r, "output-limit", json_pack("[s, s]", "/probe", "flood"), PROBE_WALL_NS, OUTPUT_BYTES, &err);
    if (rc == 0)
        rc = wait_probe(r, PROBE_WALL_NS, &o, &err);
    if (rc < 0)
        record(r, "output-limit", "fail", "the probe job did not run: %s", err.message);
    else if (!streq(o.state, "failed") || !streq(o.reason, "output_limit"))
        record(r, "output-limit", "fail", "reported %s/%s", o.state, o.reason);
    else if (o.out_len + o.err_len != OUTPUT_BYTES)
        record(r, "output-limit", "fail", "kept %zu bytes of a %d byte bound", o.out_len + o.err_len, OUTPUT_BYTES);
    else
        record(r, "output-limit", "pass", "cut at exactly %d bytes and reported output_limit", OUTPUT_BYTES);
    reap_probe(r);
    outcome_clear(&o);
}

/* Which of "inputs" and "outputs" the backend's capabilities() names. */
static void io_capabilities(struct run *r)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const json_t *v;
    size_t len = 0, i;

    if (r->p->ops->capabilities(r->p->state, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, INSPECT_MAX, &doc, &err) < 0)
        return; /* neither: those probes are then not applicable */
    json_array_foreach(json_object_get(doc, "capabilities"), i, v)
    {
        r->stages_inputs |= streq_ptr(json_string_value(v), "inputs");
        r->captures_outputs |= streq_ptr(json_string_value(v), "outputs");
    }
}

/* A random "berthq-io-<hex>" the probe program must find again. */
static void io_token(char out[32])
{
    snprintf(out, 32, "berthq-io-");
    random_hex(out + strlen(out), 8);
}

/* WORK_DIR/inputs, as berthd stages inputs: a private directory holding
 * @content as the 0444 file "0"; -errno. */
static int stage_input(struct run *r, const char *content, char *ret_dir, size_t size)
{
    _cleanup_close_ int dirfd = -1, fd = -1;

    snprintf(ret_dir, size, "%s/inputs", r->p->work_dir);
    dirfd = berth_open_trusted(r->p->work_dir, O_RDONLY | O_DIRECTORY, 0, NULL);
    if (dirfd < 0)
        return dirfd;
    if (mkdirat(dirfd, "inputs", 0700) < 0)
        return -errno;
    fd = openat(dirfd, "inputs/0", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (fd < 0)
        return -errno;
    if (berth_write_all(fd, content, strlen(content)) < 0 || fchmod(fd, 0444) < 0 || fsync(fd) < 0)
        return -errno;
    return 0;
}

/* Remove WORK_DIR/inputs again. */
static void unstage_input(struct run *r)
{
    _cleanup_close_ int dirfd = berth_open_trusted(r->p->work_dir, O_RDONLY | O_DIRECTORY, 0, NULL);
    _cleanup_close_ int in = dirfd >= 0 ? openat(dirfd, "inputs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;

    if (in >= 0) {
        (void)berth_tree_clear(in, NULL);
        (void)unlinkat(dirfd, "inputs", AT_REMOVEDIR);
    }
}

/* inputs-read-only: an input staged as berthd stages it is readable at its
 * nested /inputs/... path and nothing there can be written, created,
 * removed or renamed from inside; the staged file is intact afterwards. */
static void inputs_read_only(struct run *r)
{
    static const char name[] = "inputs-read-only";
    const struct berth_file_expect staged = {.type = S_IFREG, .uid = BERTH_UID_ANY, .max_size = 64};
    char content[32], dir[4200], digest[BERTH_DIGEST_BUFSZ], detail[512];
    _cleanup_json_ json_t *inputs = NULL;
    _cleanup_free_ char *after = NULL;
    size_t len = 0;
    struct stat st;
    bool ok;
    int rc;

    if (!r->stages_inputs) {
        record(r, name, "not_applicable", "the backend does not stage inputs (no \"inputs\" capability)");
        return;
    }
    io_token(content);
    unstage_input(r);
    if ((rc = stage_input(r, content, dir, sizeof(dir))) < 0 || (rc = berth_digest_bytes(content, strlen(content), digest)) < 0) {
        record(r, name, "fail", "cannot stage the probe input: %s", strerror(-rc));
        unstage_input(r);
        return;
    }
    inputs = json_pack("[{s:s, s:{s:s, s:I}}]", "path", INPUT_PATH, "ref", "digest", digest, "size",
                       (json_int_t)strlen(content));
    run_inside_io(r, name, json_pack("[s, s, s, s]", "/probe", "inputs", INPUT_PATH, content),
                  &(struct io){.inputs = inputs, .inputs_dir = dir}, &ok, detail, sizeof(detail), NULL);
    {
        _cleanup_close_ int in = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, NULL);
        if (ok && (in < 0 || berth_read_file_at(in, "0", &staged, &after, &len, NULL) < 0 ||
                   !streq(after, content) || fstatat(in, "0", &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                   (st.st_mode & 07777) != 0444)) {
            ok = false;
            snprintf(detail, sizeof(detail), "the staged input changed on the host");
        }
    }
    unstage_input(r);
    record(r, name, ok ? "pass" : "fail", "%s", detail);
}

/* The declared output @want_content was captured: inspect lists it with its
 * digest and size, and open_output (when the backend has it) returns it. */
static bool output_captured(struct run *r, const struct outcome *o, const char *want, char *detail, size_t size)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char digest[BERTH_DIGEST_BUFSZ], buf[64];
    const json_t *out = json_array_get(o->outputs, 0);
    _cleanup_close_ int fd = -1;
    uint64_t got = 0;
    ssize_t n;

    if (berth_digest_bytes(want, strlen(want), digest) < 0 || json_array_size(o->outputs) != 1 ||
        !streq_ptr(json_string_value(json_object_get(out, "id")), "probe") ||
        !streq_ptr(json_string_value(json_object_get(out, "digest")), digest) ||
        json_integer_value(json_object_get(out, "size")) != (json_int_t)strlen(want)) {
        snprintf(detail, size, "inspect does not list the declared output with the digest of what was written");
        return false;
    }
    if (!r->p->ops->open_output)
        return true;
    if (r->p->ops->open_output(r->p->state, r->run_id, "probe", &fd, &got, &err) < 0) {
        snprintf(detail, size, "open_output: %.400s", err.message);
        return false;
    }
    n = pread(fd, buf, sizeof(buf), 0);
    if (got != strlen(want) || n != (ssize_t)strlen(want) || memcmp(buf, want, (size_t)n) != 0) {
        snprintf(detail, size, "open_output does not return what the job wrote");
        return false;
    }
    return true;
}

/* outputs-limit: a declared output written inside is captured exactly, and
 * writing past artifact_bytes fails inside with ENOSPC. */
static void outputs_limit(struct run *r)
{
    static const char name[] = "outputs-limit";
    struct outcome o = {.exit_code = -1};
    _cleanup_json_ json_t *outputs = NULL;
    char content[32], limit[32], detail[512];
    bool ok;

    if (!r->captures_outputs) {
        record(r, name, "not_applicable", "the backend does not capture outputs (no \"outputs\" capability)");
        return;
    }
    io_token(content);
    snprintf(limit, sizeof(limit), "%d", OUTPUTS_BYTES);
    outputs = json_pack("[{s:s, s:s, s:s, s:i}]", "id", "probe", "path", OUTPUT_PATH, "media_type", "text/plain",
                        "max_bytes", 4096);
    run_inside_io(r, name, json_pack("[s, s, s, s, s]", "/probe", "outputs", OUTPUT_PATH, content, limit),
                  &(struct io){.outputs = outputs, .artifact_bytes = OUTPUTS_BYTES}, &ok, detail, sizeof(detail), &o);
    if (ok && !output_captured(r, &o, content, detail, sizeof(detail)))
        ok = false;
    reap_probe(r);
    outcome_clear(&o);
    record(r, name, ok ? "pass" : "fail", "%s%s", detail, ok ? "; the declared output was captured exactly" : "");
}

/* ------------------------------------------------------------------------- */
/* The containment probes                                                     */

/* The cgroup of the probe job's unit (the containment's status()): 0, or -errno. */
static int unit_cgroup(struct run *r, char **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const char *cg;
    size_t len = 0;
    int rc;

    if ((rc = r->p->containment->status(r->p->containment_state, r->run_id, &text, &len, reterr)) < 0 ||
        (rc = berth_json_parse(text, len, INSPECT_MAX, &doc, reterr)) < 0)
        return rc;
    cg = json_string_value(json_object_get(doc, "cgroup"));
    if (!berth_cgroup2_path_valid(cg))
        return berth_error_set(reterr, -EBADMSG, "the containment reports no cgroup for %s", r->run_id);
    return (*ret = strdup(cg)) ? 0 : berth_error_set(reterr, -ENOMEM, "out of memory");
}

/* The pids in @cg/@sub (its cgroup.procs, read whole), at most @max: their count, or -errno. */
static int group_pids(const char *cg, const char *sub, pid_t *pids, int max)
{
    _cleanup_free_ char *path = NULL, *text = NULL;
    _cleanup_close_ int fd = -1;
    size_t len = 0;
    int n = 0;

    if (asprintf(&path, "%s%s/%s/cgroup.procs", BERTH_CGROUP2_ROOT, cg, sub) < 0)
        return -ENOMEM;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENODEV ? 0 : -errno;
    if (berth_read_fd(fd, 65536, &text, &len, NULL) < 0)
        return -EIO;
    for (char *t = text, *end; *t && n < max; t = end) {
        long v = strtol(t, &end, 10);
        if (end == t)
            break;
        if (v > 0)
            pids[n++] = (pid_t)v;
    }
    return n;
}

struct in_unit {
    const char *cg;
    pid_t outside; /* a process of the job outside the unit, or 0 */
};

static bool check_in_unit(pid_t pid, void *userdata)
{
    struct in_unit *u = userdata;
    _cleanup_free_ char *own = NULL;
    size_t n = strlen(u->cg);

    if (berth_cgroup2_of(pid, &own, NULL) == -ESRCH)
        return true; /* ended meanwhile */
    if (!own || strncmp(own, u->cg, n) != 0 || (own[n] != '/' && own[n] != '\0')) {
        u->outside = pid;
        return false;
    }
    return true;
}

/* Whether every host process whose command line names the job (run id or
 * token) is in @cg or below; *@ret_outside receives one that is not. */
static bool all_in_unit(struct run *r, const char *cg, pid_t *ret_outside)
{
    struct in_unit u = {.cg = cg};

    if (walk_matching(r->token, r->run_id, check_in_unit, &u) < 0)
        return false;
    *ret_outside = u.outside;
    return u.outside == 0;
}

/* Start a job that ignores SIGTERM and has a child, and wait until it runs
 * with its payload in place: 0 and *@ret_cg its unit's cgroup; -errno. */
static int start_held(struct run *r, const char *name, char **ret_cg, struct berth_error *reterr)
{
    struct outcome o = {.exit_code = -1};
    bool terminal = false;
    pid_t pid;
    int rc;

    fresh_ids(r);
    rc = start_probe(r, name, json_pack("[s, s, s]", "/probe", "ignore-term", r->token), PROBE_WALL_NS, 65536,
                     reterr);
    for (int i = 0; rc == 0 && i < 400; i++) {
        rc = read_outcome(r, &o, &terminal, reterr);
        if (rc < 0 || terminal || streq(o.state, "running"))
            break;
        sleep_ms(50);
    }
    if (rc == 0 && terminal)
        rc = berth_error_set(reterr, -EIO, "the probe job ended at once (%s)", o.state);
    outcome_clear(&o);
    if (rc == 0)
        rc = unit_cgroup(r, ret_cg, reterr);
    /* The sandbox is in place once the payload group holds a process. */
    for (int i = 0; rc == 0 && i < 100 && group_pids(*ret_cg, "payload", &pid, 1) < 1; i++)
        sleep_ms(50);
    sleep_ms(200); /* the job's child starts right after it */
    return rc;
}

/* Stop and forget a probe job (cancel, then reap), whatever state it is in. */
static void end_held(struct run *r)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};

    (void)r->p->ops->cancel(r->p->state, r->run_id, &err);
    (void)wait_probe(r, PROBE_WALL_NS, &o, &err);
    outcome_clear(&o);
    reap_probe(r);
}

static void containment_payload(struct run *r)
{
    static const char name[] = "containment-payload";
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *cg = NULL;
    pid_t sup[4], pay[64], outside = 0;
    int n_sup, n_pay;

    if (start_held(r, name, &cg, &err) < 0) {
        record(r, name, "fail", "the probe job did not run: %.400s", err.message);
        end_held(r);
        return;
    }
    n_sup = group_pids(cg, "supervisor", sup, 4);
    n_pay = group_pids(cg, "payload", pay, 64);
    if (n_sup != 1)
        record(r, name, "fail", "the supervisor group of %s holds %d processes, not the job's supervisor alone", cg,
               n_sup);
    else if (n_pay < 1)
        record(r, name, "fail", "the payload group of %s holds no process while the job runs", cg);
    else if (!all_in_unit(r, cg, &outside))
        record(r, name, "fail", "process %d of the job runs outside its unit %s", (int)outside, cg);
    else
        record(r, name, "pass", "supervisor 1 process, payload %d; every process of the job is in %s", n_pay, cg);
    end_held(r);
}

static void containment_supervisor_lost(struct run *r)
{
    static const char name[] = "containment-supervisor-lost";
    struct berth_error err = BERTH_ERROR_INIT;
    struct outcome o = {.exit_code = -1};
    _cleanup_free_ char *cg = NULL;
    pid_t sup = 0;
    int rc, left = -1, populated = -1;

    rc = start_held(r, name, &cg, &err);
    if (rc == 0 && group_pids(cg, "supervisor", &sup, 1) != 1)
        rc = berth_error_set(&err, -ESRCH, "no supervisor in %s", cg);
    if (rc == 0) {
        /* By pidfd: the number read may not be signalled once it is another's. */
        int pfd = (int)syscall(SYS_pidfd_open, sup, 0);
        if (pfd < 0 || syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) < 0)
            rc = berth_error_set(&err, -errno, "cannot kill the supervisor %d: %m", (int)sup);
        if (pfd >= 0)
            close(pfd);
    }
    if (rc == 0)
        rc = wait_probe(r, PROBE_WALL_NS, &o, &err);
    if (rc == 0) {
        left = leftovers(r);
        populated = berth_cgroup2_populated(cg, NULL);
    }
    if (rc < 0)
        record(r, name, "fail", "%.400s", err.message);
    else if (!streq(o.state, "failed"))
        record(r, name, "fail", "reported %s after its supervisor was killed, not failed", o.state);
    else if (left != 0 || (populated != 0 && populated != -ENOENT))
        record(r, name, "fail", "%d processes of the job remain (its unit %s)", left,
               populated == 1 ? "holds processes" : populated < 0 && populated != -ENOENT ? "cannot be read" : "is empty");
    else
        record(r, name, "pass", "failed (%s); nothing of the job is left", o.reason);
    outcome_clear(&o);
    end_held(r);
}

static void containment_drain(struct run *r)
{
    static const char name[] = "containment-drain";
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *cg = NULL;
    int rc, left = -1, populated = -1;

    rc = start_held(r, name, &cg, &err);
    if (rc == 0)
        rc = r->p->containment->destroy(r->p->containment_state, r->run_id, &err);
    if (rc == 0) {
        populated = berth_cgroup2_populated(cg, NULL);
        left = leftovers(r);
    }
    if (rc < 0)
        record(r, name, "fail", "%.400s", err.message);
    else if ((populated != 0 && populated != -ENOENT) || left != 0)
        record(r, name, "fail", "after destroy %d processes of the job remain (its unit %s)", left,
               populated == 1 ? "holds processes" : populated < 0 && populated != -ENOENT ? "cannot be read" : "is empty");
    else
        record(r, name, "pass", "destroy emptied %s; nothing of the job is left", cg);
    end_held(r);
}

static void containment_probes(struct run *r)
{
    static const char *const names[] = {"containment-payload", "containment-supervisor-lost", "containment-drain"};

    if (!r->p->containment) {
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
            record(r, names[i], "not_applicable", "the backend has no containment");
        return;
    }
    containment_payload(r);
    containment_supervisor_lost(r);
    containment_drain(r);
}

int berth_qualify_probes(const struct berth_qualify_params *p, json_t **ret_probes, bool *ret_passed,
                         char ret_probe_sha256[BERTH_DIGEST_BUFSZ], struct berth_error *reterr)
{
    struct run r = {.p = p, .tcp_fd = -1, .udp_fd = -1, .passed = true};
    char arg[32];
    int rc;

    if (!p || !p->ops || !p->probe || !p->work_dir || !ret_probes || !ret_passed || !ret_probe_sha256)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r.probes = json_array();
    if (!r.probes)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((rc = setup_rootfs(&r, reterr)) < 0 || (rc = setup_listeners(&r, reterr)) < 0)
        goto out;
    io_capabilities(&r);

    inside(&r, "rootfs-read-only", json_pack("[s, s]", "/probe", "rootfs"));
    inside(&r, "identity", json_pack("[s, s]", "/probe", "identity"));
    snprintf(arg, sizeof(arg), "%d", SCRATCH_BYTES);
    inside(&r, "scratch-limit", json_pack("[s, s, s]", "/probe", "scratch", arg));
    network(&r);
    snprintf(arg, sizeof(arg), "%d", 4 * PIDS);
    inside(&r, "pids-limit", json_pack("[s, s, s]", "/probe", "pids", arg));
    fresh_ids(&r); /* before the argv that carries its token */
    outside(&r, "descendant-reaped", json_pack("[s, s, s]", "/probe", "fork-exit", r.token), PROBE_WALL_NS, "exited",
            "exited 0; its detached child is gone");
    cancel_kills(&r);
    output_limit(&r);
    fresh_ids(&r);
    outside(&r, "deadline", json_pack("[s, s, s]", "/probe", "ignore-term", r.token), DEADLINE_PROBE_NS, "expired",
            "expired at its deadline although it ignored SIGTERM; nothing of it left");
    inputs_read_only(&r);
    outputs_limit(&r);
    containment_probes(&r);
    if (r.lost) {
        rc = berth_error_set(reterr, -ENOMEM, "out of memory: %u probe outcomes could not be recorded", r.lost);
        goto out;
    }

    *ret_probes = r.probes;
    r.probes = NULL;
    *ret_passed = r.passed;
    memcpy(ret_probe_sha256, r.probe_sha256, BERTH_DIGEST_BUFSZ);
    rc = 0;
out:
    if (r.tcp_fd >= 0)
        close(r.tcp_fd);
    if (r.udp_fd >= 0)
        close(r.udp_fd);
    json_decref(r.probes);
    {
        _cleanup_close_ int dirfd = berth_open_trusted(p->work_dir, O_RDONLY | O_DIRECTORY, 0, NULL);
        _cleanup_close_ int rootfd =
            dirfd >= 0 ? openat(dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (rootfd >= 0) {
            (void)berth_tree_clear(rootfd, NULL);
            (void)unlinkat(dirfd, "rootfs", AT_REMOVEDIR);
        }
    }
    return rc;
}
