/* SPDX-License-Identifier: MIT */
/*
 * bench-primitives.c -- throughput of libberth's primitives (and of berthd's
 * request framing, http-framing.h).
 *
 * Prints one line per measurement; asserts nothing about time.  Run it with
 * "make bench" (which points BERTH_TEST_PLUGIN_DIR at the fixture plugins).
 * The atomic-publish figure is printed next to the raw fsync(2) rate of the
 * same directory, measured in the same run, because publishing is bounded
 * by the disk, not by berth.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "clock.h"
#include "digest.h"
#include "fsutil.h"
#include "hmac.h"
#include "http-framing.h"
#include "macro.h"
#include "loader.h"
#include "sign.h"

static double now_s(void)
{
    int64_t ns;

    if (berth_now_ns(CLOCK_MONOTONIC, &ns, NULL) < 0)
        abort(); /* no timing without a clock */
    return (double)ns / 1e9;
}

static void report(const char *what, long n, double secs, double bytes_per_op)
{
    printf("%-44s %10.2f us/op %12.0f ops/s", what, secs / (double)n * 1e6, (double)n / secs);
    if (bytes_per_op > 0)
        printf(" %9.1f MB/s", bytes_per_op * (double)n / secs / 1e6);
    printf("\n");
}

#define CHECK(expr)                                                                                                    \
    do {                                                                                                               \
        if ((expr) < 0) {                                                                                              \
            fprintf(stderr, "bench: %s failed\n", #expr);                                                              \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* A realistic job document (about 1 KiB, pretty-printed, members unsorted). */
static const char job[] =
    "{\n"
    "  \"schema_version\": 1,\n"
    "  \"id\": \"job-0000000000000001\",\n"
    "  \"pool\": \"default\",\n"
    "  \"overrides\": {\"env\": {\"LANG\": \"C.UTF-8\", \"TZ\": \"UTC\"}, \"timeout_seconds\": 600},\n"
    "  \"image\": \"sha256:6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a09876543210fedcba9876543210fedcba98\",\n"
    "  \"argv\": [\"/bin/sh\", \"-c\", \"sort /inputs/data.csv | uniq -c > /tmp/outputs/summary.txt\"],\n"
    "  \"inputs\": [{\"path\": \"/inputs/data.csv\", \"ref\": {\"digest\": "
    "\"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\", \"size\": 123456}}],\n"
    "  \"outputs\": [{\"id\": \"summary\", \"path\": \"/tmp/outputs/summary.txt\", \"media_type\": \"text/plain\", "
    "\"max_bytes\": 65536}],\n"
    "  \"limits\": {\"cpu_millis\": 1000, \"memory_bytes\": 268435456, \"pids\": 64, \"scratch_bytes\": 67108864,\n"
    "             \"wall_time_ns\": 60000000000, \"output_bytes\": 1048576, \"artifact_bytes\": 1048576},\n"
    "  \"labels\": {\"team\": \"graders\", \"purpose\": \"benchmark document with some realistic padding text\"}\n"
    "}\n";

static void bench_canon(void)
{
    const long n = 20000;
    double t;
    long i;

    t = now_s();
    for (i = 0; i < n; i++) {
        char *out = NULL;
        CHECK(berth_json_canonicalize(job, sizeof(job) - 1, 1 << 20, &out, NULL, NULL));
        free(out);
    }
    report("canonicalize job (parse+serialise, 1 KiB)", n, now_s() - t, (double)(sizeof(job) - 1));

    t = now_s();
    for (i = 0; i < n; i++) {
        json_t *v = NULL;
        char d[BERTH_DIGEST_BUFSZ];
        CHECK(berth_json_parse(job, sizeof(job) - 1, 1 << 20, &v, NULL));
        CHECK(berth_digest_json(v, d, NULL));
        json_decref(v);
    }
    report("parse + canonical sha256 digest of job", n, now_s() - t, 0);
}

static void bench_sha256(void)
{
    const size_t len = 1 << 20;
    const long n = 200;
    char *buf = calloc(1, len), d[BERTH_DIGEST_BUFSZ];
    double t;
    long i;

    if (!buf)
        exit(1);
    t = now_s();
    for (i = 0; i < n; i++)
        CHECK(berth_digest_bytes(buf, len, d));
    report("sha256 of 1 MiB", n, now_s() - t, (double)len);
    free(buf);
}

static void bench_sign(void)
{
    struct berth_signing_key *k = NULL;
    uint8_t sig[BERTH_ED25519_SIGNATURE_LEN], mac[BERTH_HMAC_SHA256_LEN], key[32] = {7};
    char msg[512];
    const long n = 5000;
    double t;
    long i;

    memset(msg, 'm', sizeof(msg));
    CHECK(berth_signing_key_generate(&k, NULL));
    t = now_s();
    for (i = 0; i < n; i++)
        CHECK(berth_sign(k, msg, sizeof(msg), sig));
    report("ed25519 sign (512 B receipt)", n, now_s() - t, 0);
    t = now_s();
    for (i = 0; i < n; i++)
        CHECK(berth_verify(berth_signing_key_public(k), msg, sizeof(msg), sig));
    report("ed25519 verify (512 B receipt)", n, now_s() - t, 0);
    t = now_s();
    for (i = 0; i < n * 10; i++)
        CHECK(berth_hmac_sha256(key, sizeof(key), msg, 256, mac));
    report("hmac-sha256 (256 B audit event)", n * 10, now_s() - t, 0);
    berth_signing_key_free(k);
}

/* berthd's strict framing of a typical submission's head (berthctl's). */
static void bench_http_head(void)
{
    static const char head[] = "POST /v1/jobs HTTP/1.1\r\n"
                               "Host: berth.example.internal:8443\r\n"
                               "User-Agent: berthctl/0.1.0 libcurl/7.88.1\r\n"
                               "Accept: application/x-ndjson\r\n"
                               "Accept-Encoding: identity\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 1187\r\n"
                               "Idempotency-Key: job-0000000000000001\r\n"
                               "X-Request-Id: 6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a09\r\n"
                               "\r\n";
    const struct berthd_http_limits lim = {.max_header_bytes = 16384, .max_fields = 64, .max_body_bytes = 1 << 20};
    const long n = 1000000;
    char what[64];
    double t;
    long i;

    t = now_s();
    for (i = 0; i < n; i++) {
        struct berthd_http_head h;
        struct berthd_http_refusal why;

        if (berthd_http_parse_head(head, sizeof(head) - 1, &lim, &h, &why) != 1)
            exit(1);
        berthd_http_head_clear(&h);
    }
    snprintf(what, sizeof(what), "frame a %zu-byte POST /v1/jobs head", sizeof(head) - 1);
    report(what, n, now_s() - t, (double)(sizeof(head) - 1));
}

static void bench_plugin(void)
{
    const char *dir = getenv("BERTH_TEST_PLUGIN_DIR");
    const long n = 500;
    double t;
    long i;

    if (!dir) {
        printf("%-44s (skipped: BERTH_TEST_PLUGIN_DIR unset)\n", "plugin load (peek)");
        return;
    }
    t = now_s();
    for (i = 0; i < n; i++) {
        const struct berth_plugin_load_options o = {
            .dir = dir,
            .file = "fixture-good.so",
            .flags = BERTH_PLUGIN_LOAD_PEEK,
        };
        struct berth_plugin_handle *h = NULL;
        CHECK(berth_plugin_load(&o, &h, NULL, NULL));
        berth_plugin_unload(h);
    }
    report("plugin check+dlopen+dlclose (peek)", n, now_s() - t, 0);
}

static void bench_publish(void)
{
    const long n = 300;
    char dir[] = "berth-bench-XXXXXX", name[32], data[1024];
    _cleanup_close_ int dfd = -1, fd = -1;
    double t;
    long i;

    memset(data, 'p', sizeof(data));
    if (!mkdtemp(dir))
        exit(1);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fd = openat(dfd, "raw", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (dfd < 0 || fd < 0)
        exit(1);
    t = now_s();
    for (i = 0; i < n; i++)
        if (pwrite(fd, data, sizeof(data), 0) != (ssize_t)sizeof(data) || fsync(fd) < 0)
            exit(1);
    report("raw pwrite+fsync of 1 KiB (same disk)", n, now_s() - t, 0);
    t = now_s();
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "f%ld", i);
        CHECK(berth_publish_at(dfd, name, data, sizeof(data), 0600, 0, NULL));
    }
    report("atomic publish of 1 KiB (2 fsyncs, rename)", n, now_s() - t, 0);
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "f%ld", i);
        unlinkat(dfd, name, 0);
    }
    unlinkat(dfd, "raw", 0);
    rmdir(dir);
}

int main(void)
{
    printf("berth primitive benchmarks (one core, wall clock)\n");
    bench_canon();
    bench_sha256();
    bench_sign();
    bench_http_head();
    bench_plugin();
    bench_publish();
    return 0;
}
