/* SPDX-License-Identifier: MIT */
/*
 * bench-pools.c -- throughput of pool operations on a real journal.
 *
 * Opening a registry replays the whole audit chain once (every pool rule
 * re-checked); each operation then commits its event and applies just that
 * event.  Placement is measured at several chain lengths to show that its
 * cost does not grow with the chain, and the replay per event is printed.  Commits are real (synchronous=FULL), so the disk
 * bounds the rates; the raw fsync rate of the same directory is printed
 * alongside.  Prints figures; asserts nothing about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "registry.h"

#define NOW 1796342400000000000LL

static double now_s(void)
{
    int64_t ns;

    if (berth_now_ns(CLOCK_MONOTONIC, &ns, NULL) < 0)
        abort(); /* no timing without a clock */
    return (double)ns / 1e9;
}

static void die(const char *what, const struct berth_error *err)
{
    fprintf(stderr, "bench-pools: %s: %s\n", what, err ? err->message : strerror(errno));
    exit(1);
}

static void report(const char *what, long n, double secs)
{
    printf("%-52s %10.3f ms/op %10.0f ops/s\n", what, secs / (double)n * 1e3, (double)n / secs);
}

static const char backends_json[] = "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
                                    "\"qualification\":{\"id\":\"q\",\"expires_ns\":\"9000000000000000000\"}}}";

static int collect(void *userdata, uint64_t seq, const char *line, size_t len)
{
    (void)seq;
    return berth_buf_append(userdata, line, len) < 0 || berth_buf_putc(userdata, '\n') < 0 ? -ENOMEM : 0;
}

int main(void)
{
    char dir[] = "/tmp/berth-bench-pools-XXXXXX", path[128], raw[128], manifest[256];
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = NULL;
    struct berth_registry *reg = NULL, *fresh = NULL;
    struct berth_backend_set *set = NULL;
    struct berth_audit_key key;
    struct berth_verify_report rep;
    struct berth_buf export = BERTH_BUF_INIT(0);
    long events = 0, i, n;
    static const long marks[] = {100, 1000, 10000};
    double t;
    int fd;
    size_t m;

    memset(key.bytes, 1, sizeof(key.bytes));
    if (!mkdtemp(dir) || chmod(dir, 0700) < 0)
        die("mkdtemp", NULL);
    snprintf(path, sizeof(path), "%s/journal.db", dir);
    snprintf(raw, sizeof(raw), "%s/raw", dir);
    if (berth_journal_open(path, BERTH_JOURNAL_CREATE, &j, &err) < 0)
        die("journal", &err);
    if (berth_registry_open(j, &reg, &err) < 0)
        die("registry", &err);
    if (berth_backend_set_parse(backends_json, sizeof(backends_json) - 1, &set, &err) < 0)
        die("backends", &err);
    printf("berth pool benchmarks (journal in %s, synchronous=FULL)\n", dir);

    fd = open(raw, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    t = now_s();
    for (i = 0; i < 200; i++)
        if (pwrite(fd, "x", 1, 0) != 1 || fsync(fd) < 0)
            die("fsync", NULL);
    report("raw pwrite+fsync (same disk)", 200, now_s() - t);
    close(fd);

    t = now_s();
    for (i = 0; i < 50; i++) {
        struct berth_pool *p = NULL;
        snprintf(manifest, sizeof(manifest),
                 "{\"schema_version\":1,\"name\":\"pool-%ld\",\"backend_allowlist\":[\"runsc\"]}", i);
        if (berth_pool_parse(manifest, strlen(manifest), &p, &err) < 0 ||
            berth_registry_register(reg, &key, p, "bench", NOW, NULL, &err) < 0)
            die("register", &err);
        berth_pool_free(p);
    }
    events = 50;
    report("register a new pool (50 pools)", 50, now_s() - t);

    for (m = 0; m < sizeof(marks) / sizeof(marks[0]); m++) {
        char what[96];
        /* Grow the chain to the mark with placements, timing the last 50. */
        n = marks[m] - events;
        for (i = 0; i < n; i++) {
            struct berth_placement_result res;
            double t0 = now_s();
            if (berth_registry_place(reg, &key, "pool-7", NULL, set, "bench", NOW, &res, &err) < 0)
                die("place", &err);
            berth_placement_result_clear(&res);
            if (i == n - 50)
                t = t0;
        }
        events = marks[m];
        snprintf(what, sizeof(what), "place (merge + receipt + commit + apply), %ld events", events);
        report(what, 50, now_s() - t);
    }

    t = now_s();
    if (berth_registry_open(j, &fresh, &err) < 0)
        die("reopen", &err);
    report("registry open: replay with every pool rule (per event)", events, now_s() - t);
    berth_registry_free(fresh);
    t = now_s();
    if (berth_registry_verify(j, &key, NULL, &rep, &err) < 0)
        die("verify", &err);
    report("pool verify, whole chain (per event)", (long)rep.events, now_s() - t);
    if (berth_audit_foreach(j, 0, collect, &export, &err) < 0)
        die("export", &err);
    t = now_s();
    if (berth_audit_verify(export.data, export.len, &key, NULL, NULL, NULL, NULL, &err) < 0)
        die("audit verify", &err);
    report("audit verify, MACs only (per event)", (long)rep.events, now_s() - t);
    printf("chain: %llu events, %zu bytes exported\n", (unsigned long long)rep.events, export.len);

    berth_buf_free(&export);
    berth_backend_set_free(set);
    berth_registry_free(reg);
    berth_journal_close(j);
    unlink(raw);
    unlink(path);
    snprintf(raw, sizeof(raw), "%s/journal.db.lock", dir);
    unlink(raw);
    rmdir(dir);
    return 0;
}
