/* SPDX-License-Identifier: MIT */
/*
 * bench-submit.c -- job submission throughput and latency against a running
 * berthd, next to the raw fsync rate of a directory.
 *
 *   bench-submit --url https://127.0.0.1:PORT --cert FILE --key FILE --cacert FILE
 *                --clients N --jobs-per-client M --image DIGEST --tag STRING
 *                [--pool NAME] [--command PATH]
 *   bench-submit --fsync DIR --seconds S
 *
 * Submission mode: N threads, each with one libcurl easy handle (so one TLS
 * connection, kept alive), first open their connection with GET /v1/health,
 * then all start together and POST M unique jobs ("<tag>-c<client>-j<n>",
 * argv ["echo","x"], pool "default"; --pool and --command PATH, which makes
 * argv [PATH], change them) to /v1/jobs one after the other.  Every
 * request is timed with CLOCK_MONOTONIC; 201 counts as accepted, anything
 * else (including a transport failure) as an error.  One summary line:
 *
 *   clients=N jobs=TOTAL accepted=K errors=E wall=S.SSSs rate=R jobs/s p50=X.XXms p99=Y.YYms max=Z.ZZms
 *
 * fsync mode: in DIR, a private file gets 4096 bytes written at offset 0 and
 * then fdatasync() (and, second, fsync()) in a loop for S seconds each.
 *
 * Prints figures; asserts nothing about time.  Exit status: 0 when every
 * submission was accepted, 1 when some failed, 2 on a usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include <curl/curl.h>

#define MAX_CLIENTS 4096
#define MAX_JOBS_PER_CLIENT 10000000L
#define ERRORS_KEPT 3     /* error descriptions kept per client */
#define ERRORS_PRINTED 5  /* ... and printed in all */
#define ERROR_TEXT 320    /* bytes of one error description */
#define REPLY_KEPT 1024   /* bytes of a reply body kept for the error text */
#define TIMEOUT_MS 60000L /* per request */

struct options {
    const char *url, *cert, *key, *cacert, *image, *tag, *fsync_dir, *pool, *command;
    long clients, jobs_per_client, seconds;
};

struct reply {
    char data[REPLY_KEPT];
    size_t len;
};

/* Clients open their connections, then wait here until all are ready. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long ready; /* clients waiting */
    int state;  /* 0: wait, 1: go, -1: give up */
};

struct client {
    const struct options *opt;
    struct gate *gate;
    pthread_t thread;
    long index;
    double *latency; /* seconds, one per request made */
    long done, accepted, errors, connects;
    bool setup_failed;
    int n_texts;
    char texts[ERRORS_KEPT][ERROR_TEXT];
};

static double now_s(void)
{
    struct timespec ts;

    if (clock_gettime(CLOCK_MONOTONIC, &ts) < 0)
        abort(); /* CLOCK_MONOTONIC always exists on Linux */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-submit --url URL --cert FILE --key FILE --cacert FILE --clients N\n"
               "                    --jobs-per-client M --image DIGEST --tag STRING\n"
               "                    [--pool NAME] [--command PATH]\n"
               "       bench-submit --fsync DIR --seconds S\n");
}

static bool parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* 1 to 64 of [A-Za-z0-9._-] and the characters of @more: short enough for a
 * 128-byte job id, and nothing that needs escaping in JSON. */
static bool chars_ok(const char *s, const char *more)
{
    size_t i, n = strlen(s);

    if (n == 0 || n > 64)
        return false;
    for (i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-' || strchr(more, s[i])))
            return false;
    return true;
}

/* The tag becomes part of job ids. */
static bool tag_ok(const char *s)
{
    return chars_ok(s, "");
}

/* A manifest digest: "sha256:" and 64 lowercase hex digits (safe inside a JSON string). */
static bool digest_ok(const char *s)
{
    size_t i;

    if (strncmp(s, "sha256:", 7) != 0 || strlen(s) != 7 + 64)
        return false;
    for (i = 7; s[i]; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* ------------------------------------------------------------------------ */
/* fsync mode                                                                */

static const char *fs_name(const struct statfs *st)
{
    static const struct {
        unsigned long magic;
        const char *name;
    } names[] = {
        {EXT4_SUPER_MAGIC, "ext4"}, /* also ext2/ext3: they share the magic */
        {XFS_SUPER_MAGIC, "xfs"},   {BTRFS_SUPER_MAGIC, "btrfs"},
        {TMPFS_MAGIC, "tmpfs"},     {OVERLAYFS_SUPER_MAGIC, "overlay"},
        {F2FS_SUPER_MAGIC, "f2fs"}, {NFS_SUPER_MAGIC, "nfs"},
        {0x2fc12fc1UL, "zfs"},      {0x65735546UL, "fuse"},
        {0x01021997UL, "9p"},
    };
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((unsigned long)st->f_type == names[i].magic)
            return names[i].name;
    return NULL;
}

/* Write 4 KiB at offset 0 and sync, for @seconds; the rate in syncs per second. */
static int sync_loop(int fd, const char *block, bool data_only, long seconds, double *rate)
{
    double t0 = now_s(), t = t0;
    long n = 0;

    while (t - t0 < (double)seconds) {
        if (pwrite(fd, block, 4096, 0) != 4096) {
            fprintf(stderr, "bench-submit: write: %s\n", errno ? strerror(errno) : "short write");
            return -1;
        }
        if ((data_only ? fdatasync(fd) : fsync(fd)) < 0) {
            fprintf(stderr, "bench-submit: %s: %s\n", data_only ? "fdatasync" : "fsync", strerror(errno));
            return -1;
        }
        n++;
        t = now_s();
    }
    *rate = (double)n / (t - t0);
    return 0;
}

static int run_fsync(const struct options *opt)
{
    char path[PATH_MAX], block[4096], fsbuf[32];
    const char *fs;
    struct statfs st;
    double rate_data = 0, rate_full = 0;
    int fd, r = 2;

    if (snprintf(path, sizeof(path), "%s/bench-fsync-XXXXXX", opt->fsync_dir) >= (int)sizeof(path)) {
        fprintf(stderr, "bench-submit: --fsync: directory name too long\n");
        return 2;
    }
    fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "bench-submit: cannot create a file in %s: %s\n", opt->fsync_dir, strerror(errno));
        return 2;
    }
    if (fstatfs(fd, &st) < 0) {
        fprintf(stderr, "bench-submit: statfs %s: %s\n", opt->fsync_dir, strerror(errno));
        goto out;
    }
    fs = fs_name(&st);
    if (!fs) {
        snprintf(fsbuf, sizeof(fsbuf), "0x%lx", (unsigned long)st.f_type);
        fs = fsbuf;
    }
    memset(block, 'x', sizeof(block));
    /* The first write allocates the block; the loops then only overwrite it. */
    if (pwrite(fd, block, sizeof(block), 0) != (ssize_t)sizeof(block) || fsync(fd) < 0) {
        fprintf(stderr, "bench-submit: %s: %s\n", path, errno ? strerror(errno) : "short write");
        goto out;
    }
    if (sync_loop(fd, block, true, opt->seconds, &rate_data) < 0 ||
        sync_loop(fd, block, false, opt->seconds, &rate_full) < 0)
        goto out;
    if (printf("fsync: %.0f/s (4 KiB write + fdatasync) on %s\n"
               "fsync: %.0f/s (4 KiB write + fsync) on %s\n",
               rate_data, fs, rate_full, fs) < 0 ||
        fflush(stdout) != 0)
        goto out;
    r = 0;
out:
    if (unlink(path) < 0 && r == 0) {
        fprintf(stderr, "bench-submit: unlink %s: %s\n", path, strerror(errno));
        r = 2;
    }
    if (close(fd) < 0 && r == 0) {
        fprintf(stderr, "bench-submit: close: %s\n", strerror(errno));
        r = 2;
    }
    return r;
}

/* ------------------------------------------------------------------------ */
/* The start gate                                                            */

static int gate_init(struct gate *g)
{
    int e;

    memset(g, 0, sizeof(*g));
    if ((e = pthread_mutex_init(&g->lock, NULL)) != 0)
        return e;
    if ((e = pthread_cond_init(&g->changed, NULL)) != 0) {
        pthread_mutex_destroy(&g->lock);
        return e;
    }
    return 0;
}

static void gate_destroy(struct gate *g)
{
    pthread_cond_destroy(&g->changed);
    pthread_mutex_destroy(&g->lock);
}

/* A client: ready; wait for the verdict.  True to go, false to give up (or on error). */
static bool gate_wait(struct gate *g)
{
    int state, e;

    if ((e = pthread_mutex_lock(&g->lock)) != 0)
        return false;
    g->ready++;
    e = pthread_cond_broadcast(&g->changed);
    while (e == 0 && g->state == 0)
        e = pthread_cond_wait(&g->changed, &g->lock);
    state = g->state;
    pthread_mutex_unlock(&g->lock);
    return e == 0 && state == 1;
}

/* Main: wait until @n clients are ready, then let them go (@go) or give up; the start time in @t0. */
static int gate_open(struct gate *g, long n, bool go, double *t0)
{
    int e;

    if ((e = pthread_mutex_lock(&g->lock)) != 0)
        return e;
    while (e == 0 && g->ready < n)
        e = pthread_cond_wait(&g->changed, &g->lock);
    g->state = go ? 1 : -1;
    *t0 = now_s();
    if (e == 0)
        e = pthread_cond_broadcast(&g->changed);
    pthread_mutex_unlock(&g->lock);
    return e;
}

/* ------------------------------------------------------------------------ */
/* Submission mode                                                           */

static size_t collect(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct reply *r = userdata;
    size_t n = size * nmemb, room = sizeof(r->data) - 1 - r->len;

    memcpy(r->data + r->len, ptr, n < room ? n : room);
    r->len += n < room ? n : room;
    r->data[r->len] = '\0';
    return n; /* the rest is dropped, not refused */
}

static void note_error(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_error(struct client *c, const char *fmt, ...)
{
    va_list ap;

    if (c->n_texts >= ERRORS_KEPT)
        return;
    va_start(ap, fmt);
    vsnprintf(c->texts[c->n_texts], sizeof(c->texts[0]), fmt, ap);
    va_end(ap);
    c->n_texts++;
}

static CURL *open_handle(const struct options *opt, struct reply *reply, char *errbuf)
{
    CURL *h = curl_easy_init();

    if (!h)
        return NULL;
    if (curl_easy_setopt(h, CURLOPT_SSLCERT, opt->cert) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLKEY, opt->key) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_CAINFO, opt->cacert) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_CAPATH, NULL) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSLVERSION, (long)(CURL_SSLVERSION_TLSv1_3 | CURL_SSLVERSION_MAX_DEFAULT)) !=
            CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_NOPROXY, "*") != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_MAXCONNECTS, 1L) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, TIMEOUT_MS) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_WRITEDATA, reply) != CURLE_OK ||
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf) != CURLE_OK) {
        curl_easy_cleanup(h);
        return NULL;
    }
    return h;
}

/*
 * One request on @h: @body NULL is a GET of @url, else a POST of @body.
 * Returns the HTTP status, or 0 after a transport failure (described in @errbuf).
 */
static long perform(CURL *h, const char *url, const char *body, struct reply *reply, char *errbuf, long *connects)
{
    long status = 0, n = 0;
    CURLcode rc;

    reply->len = 0;
    reply->data[0] = '\0';
    errbuf[0] = '\0';
    if (curl_easy_setopt(h, CURLOPT_URL, url) != CURLE_OK) {
        snprintf(errbuf, CURL_ERROR_SIZE, "cannot set the URL");
        return 0;
    }
    if (body)
        rc = curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    else
        rc = curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    if (rc != CURLE_OK) {
        snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
        return 0;
    }
    rc = curl_easy_perform(h);
    if (rc != CURLE_OK) {
        if (!errbuf[0])
            snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
        return 0;
    }
    if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status) != CURLE_OK) {
        snprintf(errbuf, CURL_ERROR_SIZE, "no response code");
        return 0;
    }
    if (curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n) == CURLE_OK)
        *connects += n;
    return status;
}

static void *client_main(void *arg)
{
    struct client *c = arg;
    const struct options *opt = c->opt;
    struct curl_slist *headers = NULL, *more;
    struct reply *reply = NULL;
    char errbuf[CURL_ERROR_SIZE], url[512], health[512], body[1024];
    CURL *h = NULL;
    long j, status;

    if (snprintf(url, sizeof(url), "%s/v1/jobs", opt->url) >= (int)sizeof(url) ||
        snprintf(health, sizeof(health), "%s/v1/health", opt->url) >= (int)sizeof(health)) {
        note_error(c, "the URL is too long");
        c->setup_failed = true;
    }
    if (!c->setup_failed && !(reply = malloc(sizeof(*reply)))) {
        note_error(c, "out of memory");
        c->setup_failed = true;
    }
    if (!c->setup_failed) {
        headers = curl_slist_append(NULL, "Content-Type: application/json");
        more = headers ? curl_slist_append(headers, "Accept: application/json") : NULL;
        more = more ? curl_slist_append(headers, "Expect:") : NULL;
        if (!more) {
            note_error(c, "out of memory");
            c->setup_failed = true;
        }
    }
    if (!c->setup_failed &&
        (!(h = open_handle(opt, reply, errbuf)) || curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers) != CURLE_OK)) {
        note_error(c, "cannot set up a libcurl handle");
        c->setup_failed = true;
    }
    /* Open the connection (TLS handshake) before the clock starts. */
    if (!c->setup_failed) {
        status = perform(h, health, NULL, reply, errbuf, &c->connects);
        if (status != 200) {
            if (status == 0)
                note_error(c, "client %ld: GET /v1/health: %s", c->index, errbuf);
            else
                note_error(c, "client %ld: GET /v1/health: status %ld: %s", c->index, status, reply->data);
            c->setup_failed = true;
        }
    }

    /* Every client waits here, also one whose setup failed: main counts them. */
    if (!gate_wait(c->gate) && !c->setup_failed) {
        note_error(c, "client %ld: the run was called off", c->index);
        c->setup_failed = true;
    }

    for (j = 0; !c->setup_failed && j < opt->jobs_per_client; j++) {
        double t0;
        int n = snprintf(body, sizeof(body),
                         "{\"schema_version\":1,\"id\":\"%s-c%ld-j%ld\",\"pool\":\"%s\",\"image\":\"%s\","
                         "\"argv\":[\"%s\"%s],\"limits\":{\"cpu_millis\":1000,\"memory_bytes\":268435456,"
                         "\"pids\":64,\"scratch_bytes\":67108864,\"wall_time_ns\":60000000000,"
                         "\"output_bytes\":65536,\"artifact_bytes\":1048576}}",
                         opt->tag, c->index, j, opt->pool, opt->image, opt->command ? opt->command : "echo",
                         opt->command ? "" : ",\"x\"");
        if (n < 0 || n >= (int)sizeof(body)) {
            note_error(c, "job document too long");
            c->setup_failed = true;
            break;
        }
        t0 = now_s();
        status = perform(h, url, body, reply, errbuf, &c->connects);
        c->latency[c->done++] = now_s() - t0;
        if (status == 201) {
            c->accepted++;
            continue;
        }
        c->errors++;
        if (status == 0)
            note_error(c, "client %ld job %ld: %s", c->index, j, errbuf);
        else
            note_error(c, "client %ld job %ld: status %ld: %s", c->index, j, status, reply->data);
    }

    if (h)
        curl_easy_cleanup(h);
    curl_slist_free_all(headers);
    free(reply);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile @p (1-100) of sorted @v (n > 0). */
static double percentile(const double *v, size_t n, unsigned p)
{
    size_t rank = (n * p + 99) / 100;

    return v[rank < 1 ? 0 : rank - 1];
}

static int run_submit(const struct options *opt)
{
    struct client *clients = NULL;
    struct gate gate;
    bool gate_ready = false;
    double *all = NULL, t0 = 0, wall;
    long i, started = 0, total = opt->clients * opt->jobs_per_client, accepted = 0, errors = 0, connects = 0;
    long unfinished = 0;
    size_t n = 0;
    int printed = 0, r = 2, e;

    clients = calloc((size_t)opt->clients, sizeof(*clients));
    all = calloc((size_t)total, sizeof(double));
    if (!clients || !all) {
        fprintf(stderr, "bench-submit: out of memory\n");
        goto out;
    }
    for (i = 0; i < opt->clients; i++) {
        clients[i].opt = opt;
        clients[i].gate = &gate;
        clients[i].index = i;
        clients[i].latency = calloc((size_t)opt->jobs_per_client, sizeof(double));
        if (!clients[i].latency) {
            fprintf(stderr, "bench-submit: out of memory\n");
            goto out;
        }
    }
    if ((e = gate_init(&gate)) != 0) {
        fprintf(stderr, "bench-submit: cannot set up the start gate: %s\n", strerror(e));
        goto out;
    }
    gate_ready = true;
    for (started = 0; started < opt->clients; started++) {
        e = pthread_create(&clients[started].thread, NULL, client_main, &clients[started]);
        if (e != 0) {
            fprintf(stderr, "bench-submit: pthread_create: %s\n", strerror(e));
            break;
        }
    }
    /* All connections open (or failed): start everyone at once, or nobody. */
    e = gate_open(&gate, started, started == opt->clients, &t0);
    if (e != 0) {
        fprintf(stderr, "bench-submit: start gate: %s\n", strerror(e));
        abort(); /* the threads could not be released */
    }
    for (i = 0; i < started; i++) {
        e = pthread_join(clients[i].thread, NULL);
        if (e != 0) {
            fprintf(stderr, "bench-submit: pthread_join: %s\n", strerror(e));
            abort(); /* their memory is about to be freed */
        }
    }
    wall = now_s() - t0;
    if (started != opt->clients)
        goto out;

    for (i = 0; i < opt->clients; i++) {
        const struct client *c = &clients[i];
        int k;

        memcpy(all + n, c->latency, (size_t)c->done * sizeof(double));
        n += (size_t)c->done;
        accepted += c->accepted;
        errors += c->errors;
        connects += c->connects;
        if (c->setup_failed)
            unfinished += opt->jobs_per_client - c->done;
        for (k = 0; k < c->n_texts && printed < ERRORS_PRINTED; k++, printed++)
            fprintf(stderr, "bench-submit: %s\n", c->texts[k]);
    }
    errors += unfinished; /* jobs never sent count as failed */
    if (n > 0)
        qsort(all, n, sizeof(double), cmp_double);
    if (printf("clients=%ld jobs=%ld accepted=%ld errors=%ld wall=%.3fs rate=%.0f jobs/s p50=%.2fms p99=%.2fms "
               "max=%.2fms\n",
               opt->clients, total, accepted, errors, wall, wall > 0 ? (double)accepted / wall : 0.0,
               n ? percentile(all, n, 50) * 1e3 : 0.0, n ? percentile(all, n, 99) * 1e3 : 0.0,
               n ? all[n - 1] * 1e3 : 0.0) < 0 ||
        fflush(stdout) != 0) {
        fprintf(stderr, "bench-submit: cannot write the result\n");
        goto out;
    }
    /* Each client opened one connection for its GET /v1/health; more means keep-alive broke. */
    if (connects > opt->clients)
        fprintf(stderr, "bench-submit: note: %ld connections opened for %ld clients (connections were closed)\n",
                connects, opt->clients);
    r = errors == 0 ? 0 : 1;
out:
    if (gate_ready)
        gate_destroy(&gate);
    if (clients)
        for (i = 0; i < opt->clients; i++)
            free(clients[i].latency);
    free(clients);
    free(all);
    return r;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"url", required_argument, NULL, 'u'},     {"cert", required_argument, NULL, 'c'},
        {"key", required_argument, NULL, 'k'},     {"cacert", required_argument, NULL, 'a'},
        {"clients", required_argument, NULL, 'n'}, {"jobs-per-client", required_argument, NULL, 'm'},
        {"image", required_argument, NULL, 'i'},   {"tag", required_argument, NULL, 't'},
        {"fsync", required_argument, NULL, 'f'},   {"seconds", required_argument, NULL, 's'},
        {"pool", required_argument, NULL, 'p'},    {"command", required_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
    };
    struct options opt = {.clients = 0, .jobs_per_client = 0, .seconds = 0};
    int ch, r;

    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'u': opt.url = optarg; break;
        case 'c': opt.cert = optarg; break;
        case 'k': opt.key = optarg; break;
        case 'a': opt.cacert = optarg; break;
        case 'i': opt.image = optarg; break;
        case 't': opt.tag = optarg; break;
        case 'f': opt.fsync_dir = optarg; break;
        case 'p': opt.pool = optarg; break;
        case 'x': opt.command = optarg; break;
        case 'n':
            if (!parse_long(optarg, 1, MAX_CLIENTS, &opt.clients)) {
                fprintf(stderr, "bench-submit: --clients: 1 to %d\n", MAX_CLIENTS);
                return 2;
            }
            break;
        case 'm':
            if (!parse_long(optarg, 1, MAX_JOBS_PER_CLIENT, &opt.jobs_per_client)) {
                fprintf(stderr, "bench-submit: --jobs-per-client: 1 to %ld\n", MAX_JOBS_PER_CLIENT);
                return 2;
            }
            break;
        case 's':
            if (!parse_long(optarg, 1, 3600, &opt.seconds)) {
                fprintf(stderr, "bench-submit: --seconds: 1 to 3600\n");
                return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return 2;
    }
    if (opt.fsync_dir) {
        if (opt.seconds == 0 || opt.url || opt.clients) {
            usage(stderr);
            return 2;
        }
        return run_fsync(&opt);
    }
    if (!opt.url || !opt.cert || !opt.key || !opt.cacert || !opt.clients || !opt.jobs_per_client || !opt.image ||
        !opt.tag || opt.seconds) {
        usage(stderr);
        return 2;
    }
    if (strncmp(opt.url, "https://", 8) != 0) {
        fprintf(stderr, "bench-submit: --url must be https://\n");
        return 2;
    }
    if (!opt.pool)
        opt.pool = "default";
    if (!chars_ok(opt.pool, "")) {
        fprintf(stderr, "bench-submit: --pool: 1-64 of [A-Za-z0-9._-]\n");
        return 2;
    }
    if (opt.command && (opt.command[0] != '/' || !chars_ok(opt.command, "/"))) {
        fprintf(stderr, "bench-submit: --command: an absolute path, 1-64 of [A-Za-z0-9/._-]\n");
        return 2;
    }
    if (!tag_ok(opt.tag)) {
        fprintf(stderr, "bench-submit: --tag: 1-64 of [A-Za-z0-9._-]\n");
        return 2;
    }
    if (!digest_ok(opt.image)) {
        fprintf(stderr, "bench-submit: --image: sha256:<64 lowercase hex>\n");
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "bench-submit: curl_global_init failed\n");
        return 2;
    }
    r = run_submit(&opt);
    curl_global_cleanup();
    return r;
}
