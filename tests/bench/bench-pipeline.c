/* SPDX-License-Identifier: MIT */
/*
 * bench-pipeline.c -- the in-process accept pipeline: what berthd does with a
 * job submission once it holds the request body, without TLS and HTTP.
 *
 *   bench-pipeline --config BERTHD.JSON --fingerprint HEX --image DIGEST
 *                  --jobs N [--batch B] [--tag STRING]
 *
 * Opens the installation of BERTHD.JSON as berthd does (its receipt and
 * audit keys, host policy, runtime backends, journal and pools_directory),
 * runs the startup reconcile, then submits N distinct jobs of the caller
 * whose certificate fingerprint is HEX with berth_broker_submit_batch(), B
 * at a time (default 64): each batch is checked, placed, signed and
 * inserted, then committed once, on one thread, as berthd's journal writer
 * does.  Job bodies are those tests/bench/bench-submit sends.  Prints
 *
 *   pipeline jobs=N batch=B seconds=S rate=<jobs/s>
 *
 * and exits 1 when any submission is not accepted (201).  The journal must
 * not be open in a running berthd (it takes the journal's lock); the jobs
 * stay in it, accepted.  Prints figures; asserts nothing about time.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit.h"
#include "berthd-config.h"
#include "broker.h"
#include "canon.h"
#include "jsonobj.h"
#include "heap.h"
#include "host-table.h"
#include "journal.h"
#include "loader.h"
#include "log.h"
#include "macro.h"
#include "policy.h"
#include "pool.h"
#include "sign.h"

#define BODY_MAX 1024

struct pipeline {
    struct berthd_config cfg;
    struct berth_signing_key *key;
    struct berth_audit_key audit_key;
    struct berth_policy_source *policy;
    struct berth_host_instance hosts[BERTH_BERTHD_BACKENDS_MAX];
    struct berth_plugin_handle *plugins[BERTH_BERTHD_BACKENDS_MAX];
    struct berth_broker_backend backends[BERTH_BERTHD_BACKENDS_MAX];
    struct berth_journal *journal;
    struct berth_broker *broker;
};

static void log_sink(void *userdata, int level, const char *line)
{
    (void)userdata;
    if (level <= BERTH_LOG_WARNING)
        fprintf(stderr, "bench-pipeline: %s\n", line);
}

static const struct berth_logger logger = {.sink = log_sink, .max_level = BERTH_LOG_WARNING};

static int failed(const char *what, const struct berth_error *err)
{
    fprintf(stderr, "bench-pipeline: %s: %s\n", what, err->message);
    return -1;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Backend @i of the configuration, loaded as berthd loads it. */
static int load_backend(struct pipeline *p, size_t i)
{
    const struct berthd_backend_config *bc = &p->cfg.backends[i];
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *config = NULL, *file = NULL;
    _cleanup_json_ json_t *empty = json_object();
    const struct berth_plugin_info *info;
    struct berth_plugin_load_options o = {0};
    size_t len = 0;

    if (!empty || berth_json_serialize(bc->config ? bc->config : empty, 0, &config, &len, &err) < 0 ||
        asprintf(&file, "%s.so", bc->plugin) < 0)
        return failed(bc->name, &err);
    o.dir = p->cfg.plugin_directory;
    o.file = file;
    o.sha256 = bc->sha256;
    o.kind = BERTH_PLUGIN_RUNTIME;
    o.host = berth_host_instance_init(&p->hosts[i], bc->name, &logger);
    o.config = config;
    o.config_len = len;
    if (berth_plugin_load(&o, &p->plugins[i], NULL, &err) < 0)
        return failed(bc->name, &err);
    info = berth_plugin_get_info(p->plugins[i]);
    p->backends[i] = (struct berth_broker_backend){
        .name = bc->name,
        .plugin = info->name,
        .plugin_version = info->version,
        .ops = berth_plugin_runtime_ops(p->plugins[i]),
        .state = berth_plugin_state(p->plugins[i]),
        .require_qualification = bc->require_qualification,
        .config = bc->config,
        .plugin_sha256 = info->sha256,
    };
    return 0;
}

/* Every *.json of the pools directory, registered as berthd registers them. */
static int register_pools(struct pipeline *p)
{
    struct dirent **names = NULL;
    int n, rc = 0;

    if (!p->cfg.pools_directory)
        return 0;
    n = scandir(p->cfg.pools_directory, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "bench-pipeline: %s: %s\n", p->cfg.pools_directory, strerror(errno));
        return -1;
    }
    for (int i = 0; i < n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *path = NULL, *text = NULL;
        const char *outcome = NULL, *name = names[i]->d_name;
        size_t len = 0, nl = strlen(name);

        if (rc == 0 && nl > 5 && streq(name + nl - 5, ".json") && name[0] != '.') {
            if (asprintf(&path, "%s/%s", p->cfg.pools_directory, name) < 0 ||
                berthd_read_public_file(path, BERTH_POOL_MANIFEST_MAX, &text, &len, &err) < 0 ||
                berth_broker_pool_register_trusted(p->broker, text, len, "bench-pipeline", &outcome, &err) < 0)
                rc = failed(name, &err);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int open_pipeline(struct pipeline *p, const char *config)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *journal_path = NULL;
    struct berth_pass_stats st = {.more = true};

    if (berthd_config_load(config, BERTH_PLUGINDIR, &p->cfg, &err) < 0)
        return failed(config, &err);
    if (berth_signing_key_load(p->cfg.receipt_key, &p->key, &err) < 0)
        return failed("receipt_key", &err);
    if (berth_audit_key_load(p->cfg.audit_key, &p->audit_key, &err) < 0)
        return failed("audit_key", &err);
    if (berth_policy_source_new(p->cfg.policy, &p->policy) < 0)
        return fprintf(stderr, "bench-pipeline: policy: out of memory\n"), -1;
    for (size_t i = 0; i < p->cfg.n_backends; i++)
        if (load_backend(p, i) < 0)
            return -1;
    if (asprintf(&journal_path, "%s/journal.db", p->cfg.state_directory) < 0)
        return -1;
    if (berth_journal_open(journal_path, BERTH_JOURNAL_CREATE, &p->journal, &err) < 0)
        return failed("journal", &err);
    const struct berth_broker_params bp = {
        .name = p->cfg.broker_name,
        .journal = p->journal,
        .key = p->key,
        .audit_key = &p->audit_key,
        .policy = p->policy,
        .backends = p->backends,
        .n_backends = p->cfg.n_backends,
        .max_active = p->cfg.max_active_jobs,
        .max_retained = p->cfg.max_retained_jobs,
        .start_concurrency = (unsigned)berthd_config_start_concurrency(&p->cfg),
        .jobs_retention_ns = p->cfg.jobs_ns,
        .outputs_retention_ns = p->cfg.outputs_ns,
        .logger = &logger,
    };
    if (berth_broker_new(&bp, &p->broker, &err) < 0)
        return failed("broker", &err);
    if (register_pools(p) < 0)
        return -1;
    berth_broker_refresh_backends(p->broker);
    while (st.more)
        if (berth_broker_reconcile(p->broker, &st, &err) < 0)
            return failed("startup reconcile", &err);
    if (!berth_broker_admitting(p->broker))
        return fprintf(stderr, "bench-pipeline: the broker does not admit jobs after its startup reconcile\n"), -1;
    return 0;
}

static void close_pipeline(struct pipeline *p)
{
    berth_broker_free(p->broker);
    berth_journal_close(p->journal);
    for (size_t i = 0; i < p->cfg.n_backends; i++)
        berth_plugin_unload(p->plugins[i]);
    berth_policy_source_free(p->policy);
    berth_audit_key_wipe(&p->audit_key);
    berth_signing_key_free(p->key);
    berthd_config_clear(&p->cfg);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench-pipeline --config BERTHD.JSON --fingerprint HEX --image DIGEST --jobs N\n"
               "                      [--batch B] [--tag STRING]\n");
}

static long positive(const char *opt, const char *s, long max)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || !end || *end || v < 1 || v > max) {
        fprintf(stderr, "bench-pipeline: %s: an integer 1 to %ld\n", opt, max);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'}, {"fingerprint", required_argument, NULL, 'f'},
        {"image", required_argument, NULL, 'i'},  {"jobs", required_argument, NULL, 'n'},
        {"batch", required_argument, NULL, 'b'},  {"tag", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},         {},
    };
    const char *config = NULL, *fingerprint = NULL, *image = NULL, *tag = "pipeline";
    long jobs = 0, batch = 64, refused = 0;
    struct pipeline p = {0};
    struct berth_submission *v;
    char (*bodies)[BODY_MAX];
    double t0, t1;
    int ch, rc = 0;

    while ((ch = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (ch) {
        case 'c': config = optarg; break;
        case 'f': fingerprint = optarg; break;
        case 'i': image = optarg; break;
        case 'n': jobs = positive("--jobs", optarg, 10000000); break;
        case 'b': batch = positive("--batch", optarg, 4096); break;
        case 't': tag = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind != argc || !config || !fingerprint || !image || jobs == 0) {
        usage(stderr);
        return 2;
    }
    v = calloc((size_t)batch, sizeof(*v));
    bodies = calloc((size_t)jobs, sizeof(*bodies));
    if (!v || !bodies) {
        fprintf(stderr, "bench-pipeline: out of memory\n");
        return 1;
    }
    /* The bodies are made before the clock starts: berthd receives them. */
    for (long j = 0; j < jobs; j++) {
        int n = snprintf(bodies[j], BODY_MAX,
                         "{\"schema_version\":1,\"id\":\"%s-j%ld\",\"pool\":\"default\",\"image\":\"%s\","
                         "\"argv\":[\"echo\",\"x\"],\"limits\":{\"cpu_millis\":1000,\"memory_bytes\":268435456,"
                         "\"pids\":64,\"scratch_bytes\":67108864,\"wall_time_ns\":60000000000,"
                         "\"output_bytes\":65536,\"artifact_bytes\":1048576}}",
                         tag, j, image);
        if (n < 0 || n >= BODY_MAX) {
            fprintf(stderr, "bench-pipeline: --tag or --image too long\n");
            return 2;
        }
    }
    /* As berthd's main() does, so that the limit is measured with its allocator settings. */
    if (berth_heap_tune(getenv("GLIBC_TUNABLES")) < 0)
        fprintf(stderr, "bench-pipeline: warning: glibc refused the allocator settings\n");
    if (open_pipeline(&p, config) < 0) {
        close_pipeline(&p);
        return 1;
    }
    t0 = now_s();
    for (long j = 0; j < jobs; j += batch) {
        size_t n = (size_t)(jobs - j < batch ? jobs - j : batch);

        for (size_t k = 0; k < n; k++)
            v[k] = (struct berth_submission){
                .fingerprint = fingerprint, .body = bodies[j + (long)k], .len = strlen(bodies[j + (long)k])};
        if (berth_broker_submit_batch(p.broker, v, n) < 0) {
            fprintf(stderr, "bench-pipeline: berth_broker_submit_batch refused its arguments\n");
            rc = 1;
            break;
        }
        for (size_t k = 0; k < n; k++) {
            if (v[k].reply.status != 201 && refused++ == 0)
                fprintf(stderr, "bench-pipeline: job %ld: %d %s: %s\n", j + (long)k, v[k].reply.status,
                        v[k].reply.error ? v[k].reply.error : "", v[k].reply.message);
            berth_reply_clear(&v[k].reply);
        }
    }
    t1 = now_s();
    close_pipeline(&p);
    free(bodies);
    free(v);
    if (refused) {
        fprintf(stderr, "bench-pipeline: %ld of %ld submissions were not accepted\n", refused, jobs);
        rc = 1;
    }
    printf("pipeline jobs=%ld batch=%ld seconds=%.3f rate=%.0f\n", jobs, batch, t1 - t0,
           t1 > t0 ? (double)jobs / (t1 - t0) : 0.0);
    return rc;
}
