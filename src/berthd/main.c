/* SPDX-License-Identifier: MIT */
/*
 * main.c -- berthd: startup, recovery, serving and orderly shutdown.
 *
 * Order matters: configuration and every trusted file are checked first;
 * then the plugins are loaded, the journal opened (recovery), backends
 * qualified at startup when configured, the pools directory registered,
 * the units of contained backends no live job accounts for fenced
 * (fence.h; again on a timer) and one reconcile pass run, all before the listener
 * opens and systemd hears READY=1.  SIGTERM stops accepting, answers what
 * is in flight within http.shutdown_timeout_ns, lets the worker finish its
 * pass and closes the journal.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <openssl/ssl.h>
#include <systemd/sd-daemon.h>

#include <berth/version.h>

#include "audit.h"
#include "backend-load.h"
#include "berthd-config.h"
#include "broker.h"
#include "canon.h"
#include "fsutil.h"
#include "heap.h"
#include "host-table.h"
#include "journal.h"
#include "macro.h"
#include "loader.h"
#include "pool.h"
#include "reserve.h"
#include "server.h"
#include "fence.h"
#include "startup-qualify.h"
#include "sign.h"
#include "tls.h"
#include "worker.h"

#ifndef BERTH_PLUGINDIR
#error "BERTH_PLUGINDIR must be defined by the build"
#endif

/* Everything the daemon holds; lives in main()'s frame. */
struct daemon {
    struct berthd_config cfg;
    struct berth_logger logger;
    bool journald;
    struct berth_signing_key *key;
    struct berth_audit_key audit_key;
    struct berth_policy_source *policy;
    struct berth_journal *journal;
    struct berthd_backend_instance runtimes[BERTH_BERTHD_BACKENDS_MAX]; /* each with its containment */
    struct berth_plugin_handle *plugins[BERTH_BERTHD_BACKENDS_MAX];     /* runtimes[i].plugin, borrowed */
    struct berth_broker_backend backends[BERTH_BERTHD_BACKENDS_MAX];
    struct berthd_backend_instance images_instance, stager_instance, blobs_instance, evidence_instance;
    struct berth_plugin_handle *blobs;  /* a third image source instance, for workers' blob reads (borrowed) */
    struct berth_plugin_handle *stager; /* a second image source instance, for dispatch (borrowed) */
    char *stage_directory;              /* state_directory/stage */
    char *inputs_directory;             /* state_directory/inputs: each job's staged inputs */
    struct berth_plugin_handle *images;   /* the image source, or NULL (borrowed) */
    struct berth_plugin_handle *evidence; /* the evidence store, or NULL (borrowed) */
    char *evidence_spool;                 /* state_directory/evidence-spool */
    struct berth_broker *broker;
    struct berthd_worker worker;
    struct berthd_fence_timer fence; /* the periodic containment scan */
    struct event_base *base;
    SSL_CTX *ctx;
    struct berthd_server *server;
    struct event *sigterm, *sigint, *sighup, *failed;
    const char *fault_point;
    int status;
};

static void log_sink(void *userdata, int level, const char *line)
{
    const struct daemon *d = userdata;

    /* Under systemd (JOURNAL_STREAM set) a "<N>" prefix carries the priority (sd-daemon(3)). */
    if (d->journald)
        fprintf(stderr, "<%d>%s\n", level, line);
    else
        fprintf(stderr, "berthd: %s\n", line);
}

static void help(void)
{
    printf("Usage: berthd --config=FILE [--check]\n"
           "       berthd --help | --version\n"
           "\n"
           "berthd is berth's broker daemon.  Clients submit sealed jobs over HTTPS with a\n"
           "client certificate; berthd checks the host policy, places each job in its pool,\n"
           "signs a receipt and records it in the journal before anything runs, starts it\n"
           "on the chosen runtime backend, and later returns a signed result.\n"
           "\n"
           "Options:\n"
           "  -c, --config=FILE   the daemon configuration (JSON; see docs/berthd.md).  It and\n"
           "                      every file it names must be owned by this user (or root,\n"
           "                      for non-secret files) and not writable by others; keys,\n"
           "                      the TLS private key and the policy must be mode 0600.\n"
           "      --check         check the configuration and every file it names, load the\n"
           "                      backends, then exit without opening the journal or the\n"
           "                      listener (0: usable)\n"
           "  -h, --help          show this help\n"
           "      --version       show the version\n"
           "\n"
           "Startup: configuration and files are checked; the plugins of the backends\n"
           "and the image source are loaded; the journal in state_directory/journal.db\n"
           "is opened (created 0600 in a 0700 directory) and recovered; backends with\n"
           "qualify_at_startup that need it are qualified; the pools directory is\n"
           "registered; the units of backends with a containment whose job has ended,\n"
           "or that no job accounts for, are fenced and drained (again every\n"
           "containment_scan_interval_ns while berthd runs); one reconcile pass settles\n"
           "jobs left by an earlier run (it never starts a job); then the listener opens\n"
           "and systemd is told READY=1.\n"
           "\n"
           "Signals: SIGTERM and SIGINT stop accepting, answer requests in flight (at most\n"
           "http.shutdown_timeout_ns), finish the current backend pass and close the\n"
           "journal.  The host policy needs no signal: it is re-read whenever it changes.\n"
           "\n"
           "Logging: one line per request and per job state change on standard error,\n"
           "with sd-daemon priority prefixes under systemd.  Nothing secret is logged.\n"
           "\n"
           "A full state filesystem does not stop berthd: it serves reads and records\n"
           "cancellations, refuses new jobs with 503 storage_full, keeps finished jobs'\n"
           "results in memory until space returns and reports \"degraded\" on /v1/health\n"
           "(see berthd(8), FULL STATE FILESYSTEM).\n"
           "\n"
           "Exit status: 0 after a clean shutdown; 1 on a startup failure or a journal\n"
           "that cannot be trusted (corrupt, or an I/O error); 2 on a bad command line.\n");
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;

    (void)what;
    berth_logf(&d->logger, BERTH_LOG_NOTICE, "%s: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
    sd_notify(0, "STOPPING=1");
    berth_broker_stop(d->broker); /* no new starts; the worker's pass ends at the next job */
    berthd_server_shutdown(d->server);
}

static void hup_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;

    (void)sig, (void)what;
    berth_logf(&d->logger, BERTH_LOG_INFO,
               "SIGHUP ignored: the host policy is re-read when it changes; "
               "other settings need a restart");
}

static void failed_cb(evutil_socket_t fd, short what, void *arg)
{
    struct daemon *d = arg;

    (void)fd, (void)what;
    d->status = 1;
    berth_broker_stop(d->broker);
    berthd_server_shutdown(d->server);
}

/* The worker thread found the journal failing: stop the loop (thread-safe with evthread). */
static void worker_failed(void *userdata)
{
    struct daemon *d = userdata;
    event_active(d->failed, EV_TIMEOUT, 0);
}

/* The startup reconcile completed (worker thread): berthd is ready. */
static void worker_ready(void *userdata, const struct berth_pass_stats *st)
{
    struct daemon *d = userdata;

    berth_logf(&d->logger, BERTH_LOG_INFO,
               "recovered: %u exited, %u cancelled, %u expired, %u failed since the last run (%u no longer "
               "qualified)",
               st->finished, st->cancelled, st->expired, st->failed, st->swept);
    berth_logf(&d->logger, BERTH_LOG_NOTICE, "ready: https://%s%s%s:%d/ (broker %s, key id %s, %zu backends)",
               strchr(d->cfg.address, ':') ? "[" : "", d->cfg.address, strchr(d->cfg.address, ':') ? "]" : "",
               berthd_server_port(d->server), d->cfg.broker_name, berth_signing_key_id(d->key), d->cfg.n_backends);
    sd_notifyf(0, "READY=1\nSTATUS=serving on %s port %d", d->cfg.address, berthd_server_port(d->server));
}

static void wake_worker(void *userdata)
{
    struct daemon *d = userdata;
    berthd_worker_wake(&d->worker);
}

/* A runtime plugin's host->job_changed() (plugin thread): the broker looks at the job now. */
static void job_changed(void *userdata, const char *backend, const char *job_id)
{
    struct daemon *d = userdata;
    berth_broker_job_changed(d->broker, backend, job_id);
}

/* The worker recorded a job's result: answer the long polls waiting for it. */
static void result_recorded(void *userdata, const char *principal, const char *job_id)
{
    struct daemon *d = userdata;
    berthd_server_result_recorded(d->server, principal, job_id);
}

static void offers_changed(void *userdata)
{
    struct daemon *d = userdata;
    berthd_server_offers_changed(d->server);
}

/* Route (or, with @on false, stop routing) the backends' notifications to the broker. */
static void route_notifications(struct daemon *d, bool on)
{
    for (size_t i = 0; i < d->cfg.n_backends; i++)
        berth_host_instance_set_notify(&d->runtimes[i].host, on ? job_changed : NULL, on ? d : NULL);
}

#ifdef BERTH_FAULT_INJECTION
/* Test-only: die at the point BERTH_FAULT names, as a crash would. */
static void fault(void *userdata, const char *point)
{
    struct daemon *d = userdata;

    if (d->fault_point && streq(d->fault_point, point)) {
        fprintf(stderr, "berthd: fault injection: killed at %s\n", point);
        raise(SIGKILL);
    }
}
#endif

static int fail(struct daemon *d, const char *what, const struct berth_error *err)
{
    berth_logf(&d->logger, BERTH_LOG_ERR, "%s: %s", what, err->message);
    return 1;
}

static int check_policy(struct daemon *d)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    struct berth_policy *p = NULL;
    size_t len = 0;
    int r;

    /* The reader requests use, so that --check and startup refuse what every
     * request would be denied for (a mode 0400 policy, for one). */
    r = berth_policy_read_file(d->cfg.policy, &text, &len, &err);
    if (r == -ENOENT) {
        berth_logf(&d->logger, BERTH_LOG_WARNING,
                   "the host policy %s does not exist: every request is denied "
                   "until it does",
                   d->cfg.policy);
        return 0;
    }
    if (r == 0)
        r = berth_policy_parse(text, len, &p, &err);
    if (r < 0)
        return fail(d, "the host policy is unusable", &err);
    berth_policy_free(p);
    return berth_policy_source_new(d->cfg.policy, &d->policy) < 0 ? 1 : 0;
}

/* Load the plugin of @bc (and its containment) as an instance of @kind into @inst; *@ret borrows it. */
static int load_plugin(struct daemon *d, const struct berthd_backend_config *bc, const char *what, uint32_t kind,
                       struct berthd_backend_instance *inst, struct berth_plugin_handle **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_plugin_info *info;

    if (berthd_backend_load(d->cfg.plugin_directory, bc, kind, &d->logger, inst, &err) < 0) {
        berth_logf(&d->logger, BERTH_LOG_ERR, "%s: %s", what, err.message);
        return 1;
    }
    *ret = inst->plugin;
    if (inst->containment) {
        info = berth_plugin_get_info(inst->containment);
        berth_logf(&d->logger, BERTH_LOG_INFO, "%s: containment plugin %s %s (%s)", what, info->name, info->version,
                   info->sha256);
    }
    info = berth_plugin_get_info(*ret);
    berth_logf(&d->logger, BERTH_LOG_INFO, "%s: plugin %s %s (%s)", what, info->name, info->version, info->sha256);
    return 0;
}

static int load_backends(struct daemon *d)
{
    size_t i;
    char what[128];

    for (i = 0; i < d->cfg.n_backends; i++) {
        const struct berthd_backend_config *bc = &d->cfg.backends[i];
        const struct berth_plugin_info *info;

        snprintf(what, sizeof(what), "backend %s", bc->name);
        if (load_plugin(d, bc, what, BERTH_PLUGIN_RUNTIME, &d->runtimes[i], &d->plugins[i]) != 0)
            return 1;
        info = berth_plugin_get_info(d->plugins[i]);
        d->backends[i] = (struct berth_broker_backend){
            .name = bc->name,
            .plugin = info->name,
            .plugin_version = info->version,
            .ops = berth_plugin_runtime_ops(d->plugins[i]),
            .state = berth_plugin_state(d->plugins[i]),
            .require_qualification = bc->require_qualification,
            .config = bc->config,
            .plugin_sha256 = info->sha256,
            .containment = d->runtimes[i].containment_identity,
        };
    }
    if (d->cfg.has_images &&
        (load_plugin(d, &d->cfg.images, "image source", BERTH_PLUGIN_IMAGE_SOURCE, &d->images_instance, &d->images) != 0 ||
         load_plugin(d, &d->cfg.images, "image stager", BERTH_PLUGIN_IMAGE_SOURCE, &d->stager_instance, &d->stager) != 0 ||
         load_plugin(d, &d->cfg.images, "image blobs", BERTH_PLUGIN_IMAGE_SOURCE, &d->blobs_instance, &d->blobs) != 0))
        return 1;
    if (d->cfg.has_evidence && load_plugin(d, &d->cfg.evidence, "evidence store", BERTH_PLUGIN_EVIDENCE_STORE,
                                           &d->evidence_instance, &d->evidence) != 0)
        return 1;
    return 0;
}

static int select_json(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return n > 5 && e->d_name[0] != '.' && streq(e->d_name + n - 5, ".json");
}

/* Register every *.json of the pools directory, in name order. */
static int register_pools(struct daemon *d)
{
    struct dirent **names = NULL;
    int n, i, rc = 0;

    if (!d->cfg.pools_directory)
        return 0;
    n = scandir(d->cfg.pools_directory, &names, select_json, alphasort);
    if (n < 0) {
        berth_logf(&d->logger, BERTH_LOG_ERR, "pools directory %s: %s", d->cfg.pools_directory, strerror(errno));
        return 1;
    }
    for (i = 0; i < n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *path = NULL, *text = NULL;
        const char *outcome = NULL;
        size_t len = 0;

        if (rc == 0 && asprintf(&path, "%s/%s", d->cfg.pools_directory, names[i]->d_name) < 0)
            rc = 1;
        if (rc == 0 && berthd_read_public_file(path, BERTH_POOL_MANIFEST_MAX, &text, &len, &err) < 0) {
            berth_logf(&d->logger, BERTH_LOG_ERR, "pool file %s: %s", path, err.message);
            rc = 1;
        } else if (rc == 0) {
            int r = berth_broker_pool_register_trusted(d->broker, text, len, "berthd:pools_directory", &outcome, &err);
            if (berth_space_error(r)) {
                /* A full disk: the pool keeps the version the journal has (reads are served); a restart
                 * with space registers the file. */
                berth_logf(&d->logger, BERTH_LOG_WARNING, "pool file %s: not registered for lack of space: %s", path,
                           err.message);
            } else if (r < 0) {
                berth_logf(&d->logger, BERTH_LOG_ERR, "pool file %s: %s", path, err.message);
                rc = 1;
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

/* A private directory @path below the state directory (created 0700 when missing). */
static int private_subdirectory(struct daemon *d, const char *what, const char *path)
{
    struct stat st;

    if (mkdir(path, 0700) < 0 && errno != EEXIST) {
        berth_logf(&d->logger, BERTH_LOG_ERR, "%s %s: %s", what, path, strerror(errno));
        return 1;
    }
    if (lstat(path, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        berth_logf(&d->logger, BERTH_LOG_ERR, "%s %s must be a directory owned by uid %u with mode 0700 (no symlink)",
                   what, path, (unsigned)geteuid());
        return 1;
    }
    return 0;
}

/* Check (and with @create, make) the state directory; --check leaves a
 * missing one to the first real start. */
static int state_directory(struct daemon *d, bool create)
{
    struct stat st;

    if (!create && lstat(d->cfg.state_directory, &st) < 0 && errno == ENOENT)
        return 0;
    if (create && mkdir(d->cfg.state_directory, 0700) < 0 && errno != EEXIST) {
        berth_logf(&d->logger, BERTH_LOG_ERR, "state directory %s: %s", d->cfg.state_directory, strerror(errno));
        return 1;
    }
    if (lstat(d->cfg.state_directory, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077)) {
        berth_logf(&d->logger, BERTH_LOG_ERR,
                   "state directory %s must be a directory owned by uid %u with mode 0700 (no symlink)",
                   d->cfg.state_directory, (unsigned)geteuid());
        return 1;
    }
    if (!create)
        return 0;
    /* Unnamed files of uploads and downloads, when the store cannot make them (broker-evidence.h). */
    if (d->evidence && (asprintf(&d->evidence_spool, "%s/evidence-spool", d->cfg.state_directory) < 0 ||
                        private_subdirectory(d, "evidence spool directory", d->evidence_spool) != 0))
        return 1;
    /* Each job's inputs are staged here, verified, before its backend starts it. */
    if (asprintf(&d->inputs_directory, "%s/inputs", d->cfg.state_directory) < 0 ||
        private_subdirectory(d, "inputs directory", d->inputs_directory) != 0)
        return 1;
    if (!d->stager)
        return 0;
    /* Each job's image is staged here before its backend starts it. */
    if (asprintf(&d->stage_directory, "%s/stage", d->cfg.state_directory) < 0)
        return 1;
    return private_subdirectory(d, "stage directory", d->stage_directory);
}

/* --check: every backend must answer capabilities() (a runtime that fails
 * its pin, for example); a running berthd only leaves such a backend idle. */
static int check_backends(struct daemon *d)
{
    int rc = 0;

    for (size_t i = 0; i < d->cfg.n_backends; i++) {
        const struct berth_broker_backend *be = &d->backends[i];
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;

        if (be->ops->capabilities(be->state, &text, &len, &err) < 0) {
            berth_logf(&d->logger, BERTH_LOG_ERR, "backend %s would get no work: %s", be->name, err.message);
            rc = 1;
        }
    }
    return rc;
}

static int start(struct daemon *d, bool check_only)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *journal_path = NULL;
    struct berth_broker_params bp;
    int r;

    if ((r = berth_signing_key_load(d->cfg.receipt_key, &d->key, &err)) < 0)
        return fail(d, "receipt_key", &err);
    if ((r = berth_audit_key_load(d->cfg.audit_key, &d->audit_key, &err)) < 0)
        return fail(d, "audit_key", &err);
    if (check_policy(d) != 0)
        return 1;
    if ((r = berthd_tls_context(d->cfg.certificate, d->cfg.private_key, d->cfg.client_ca, &d->ctx, &err)) < 0)
        return fail(d, "tls", &err);
    if (load_backends(d) != 0)
        return 1;
    if (state_directory(d, !check_only) != 0)
        return 1;
    if (check_only)
        return check_backends(d);
    if (asprintf(&journal_path, "%s/journal.db", d->cfg.state_directory) < 0)
        return 1;
    if ((r = berth_journal_open(journal_path, BERTH_JOURNAL_CREATE, &d->journal, &err)) < 0)
        return fail(d, "journal", &err);
    /* On a full disk berthd starts without its reserve, degraded, and makes it once space returns. */
    r = berth_journal_set_reserve(d->journal, (uint64_t)d->cfg.reserve_bytes, &err);
    if (berth_space_error(r))
        berth_logf(&d->logger, BERTH_LOG_WARNING, "journal space reserve: %s", err.message);
    else if (r < 0)
        return fail(d, "journal space reserve", &err);
    if (berthd_qualify_at_startup(&d->cfg, d->runtimes, d->journal, d->key, &d->logger) < 0)
        return 1;
    bp = (struct berth_broker_params){
        .name = d->cfg.broker_name,
        .journal = d->journal,
        .key = d->key,
        .audit_key = &d->audit_key,
        .policy = d->policy,
        .backends = d->backends,
        .n_backends = d->cfg.n_backends,
        .image_ops = d->images ? berth_plugin_image_source_ops(d->images) : NULL,
        .image_state = d->images ? berth_plugin_state(d->images) : NULL,
        .stage_ops = d->stager ? berth_plugin_image_source_ops(d->stager) : NULL,
        .stage_state = d->stager ? berth_plugin_state(d->stager) : NULL,
        .stage_directory = d->stage_directory,
        .root_cache_bytes = (uint64_t)d->cfg.root_cache_bytes,
        .evidence_ops = d->evidence ? berth_plugin_evidence_store_ops(d->evidence) : NULL,
        .evidence_state = d->evidence ? berth_plugin_state(d->evidence) : NULL,
        .evidence_max_object_bytes = d->cfg.evidence_max_object_bytes,
        .evidence_spool_directory = d->evidence_spool,
        .inputs_directory = d->inputs_directory,
        .max_active = d->cfg.max_active_jobs,
        .max_retained = d->cfg.max_retained_jobs,
        .start_concurrency = (unsigned)berthd_config_start_concurrency(&d->cfg),
        .jobs_retention_ns = d->cfg.jobs_ns,
        .outputs_retention_ns = d->cfg.outputs_ns,
        .warm = d->cfg.warm,
        .n_warm = d->cfg.n_warm,
        .warm_max_slots = d->cfg.max_slots,
        .warm_max_memory_bytes = d->cfg.max_memory_bytes,
        .warm_max_age_ns = d->cfg.max_age_ns,
        .logger = &d->logger,
        .wake = wake_worker,
        .on_result = result_recorded,
        .worker_lease_ns = d->cfg.lease_ns,
        .workers_require_qualification = d->cfg.workers_require_qualification,
        .blob_ops = d->blobs ? berth_plugin_image_source_ops(d->blobs) : NULL,
        .blob_state = d->blobs ? berth_plugin_state(d->blobs) : NULL,
        .on_offer = offers_changed,
        .userdata = d,
    };
#ifdef BERTH_FAULT_INJECTION
    bp.fault = fault;
    d->fault_point = getenv("BERTH_FAULT");
    if (d->fault_point)
        berth_logf(&d->logger, BERTH_LOG_WARNING, "fault injection armed at %s (a test build)", d->fault_point);
#endif
    if ((r = berth_broker_new(&bp, &d->broker, &err)) < 0)
        return fail(d, "journal recovery", &err);
    if (register_pools(d) != 0)
        return 1;
    /* Before admission and dispatch: no unit of a job that ended, or of none, runs on. */
    if ((r = berthd_fence_units(d->runtimes, d->cfg.n_backends, berthd_broker_lookup, d->broker, true, NULL,
                                &d->logger, NULL)) < 0)
        return berth_logf(&d->logger, BERTH_LOG_ERR, "containment recovery stopped: %s", strerror(-r)), 1;
    berth_broker_refresh_backends(d->broker);
    /* The startup reconcile runs on the worker thread, page by page, while
     * reads are served; new jobs get 503 "starting" until it completed
     * without error, and only then is berthd ready (worker_ready()). */

    if (evthread_use_pthreads() < 0 || !(d->base = event_base_new()) || event_base_priority_init(d->base, BERTHD_PRIORITIES) < 0)
        return berth_logf(&d->logger, BERTH_LOG_ERR, "cannot create the event loop"), 1;
    if ((r = berthd_server_new(d->base, d->ctx, &d->cfg, d->broker, d->policy, &d->logger, &d->server, &err)) < 0)
        return fail(d, "listen", &err);
    d->sigterm = evsignal_new(d->base, SIGTERM, stop_cb, d);
    d->sigint = evsignal_new(d->base, SIGINT, stop_cb, d);
    d->sighup = evsignal_new(d->base, SIGHUP, hup_cb, d);
    d->failed = event_new(d->base, -1, 0, failed_cb, d);
    if (!d->sigterm || !d->sigint || !d->sighup || !d->failed || event_add(d->sigterm, NULL) < 0 ||
        event_add(d->sigint, NULL) < 0 || event_add(d->sighup, NULL) < 0)
        return berth_logf(&d->logger, BERTH_LOG_ERR, "cannot install signal handlers"), 1;
    event_priority_set(d->sigterm, 0);
    event_priority_set(d->sigint, 0);
    d->worker = (struct berthd_worker){
        .broker = d->broker,
        .logger = &d->logger,
        .interval_ns = d->cfg.reconcile_interval_ns,
        .on_failure = worker_failed,
        .on_ready = worker_ready,
        .userdata = d,
    };
    sd_notifyf(0, "STATUS=startup reconcile on %s port %d", d->cfg.address, berthd_server_port(d->server));
    route_notifications(d, true); /* a call before now was lost: the startup reconcile looks at every job */
    if ((r = berthd_worker_start(&d->worker)) < 0)
        return berth_logf(&d->logger, BERTH_LOG_ERR, "cannot start the worker thread: %s", strerror(-r)), 1;
    berthd_worker_wake(&d->worker); /* the startup reconcile, then dispatch what recovery left accepted */
    d->fence = (struct berthd_fence_timer){
        .runtimes = d->runtimes,
        .n = d->cfg.n_backends,
        .broker = d->broker,
        .log = &d->logger,
        .interval_ns = d->cfg.containment_scan_interval_ns,
    };
    if ((r = berthd_fence_timer_start(&d->fence, &err)) < 0)
        return fail(d, "containment scan", &err);
    return 0;
}

static void stop(struct daemon *d)
{
    size_t i;

    route_notifications(d, false); /* plugin threads may still call job_changed until fini */
    berthd_fence_timer_stop(&d->fence); /* it uses the broker and the backends */
    berthd_worker_stop(&d->worker);
    berthd_server_free(d->server);
    if (d->sigterm)
        event_free(d->sigterm);
    if (d->sigint)
        event_free(d->sigint);
    if (d->sighup)
        event_free(d->sighup);
    if (d->failed)
        event_free(d->failed);
    if (d->base)
        event_base_free(d->base);
    berth_broker_free(d->broker);
    for (i = 0; i < BERTH_BERTHD_BACKENDS_MAX; i++)
        berthd_backend_unload(&d->runtimes[i]);
    berthd_backend_unload(&d->images_instance);
    berthd_backend_unload(&d->stager_instance);
    berthd_backend_unload(&d->blobs_instance);
    berthd_backend_unload(&d->evidence_instance);
    free(d->stage_directory);
    free(d->evidence_spool);
    free(d->inputs_directory);
    berth_journal_close(d->journal);
    SSL_CTX_free(d->ctx);
    berth_policy_source_free(d->policy);
    berth_signing_key_free(d->key);
    berth_audit_key_wipe(&d->audit_key);
    berthd_config_clear(&d->cfg);
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"config", required_argument, NULL, 'c'},
        {"check", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    struct daemon d;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *config = NULL;
    bool check_only = false;
    int c, r;

    memset(&d, 0, sizeof(d));
    d.journald = getenv("JOURNAL_STREAM") != NULL;
    d.logger = (struct berth_logger){.sink = log_sink, .userdata = &d, .max_level = BERTH_LOG_INFO};
    while ((c = getopt_long(argc, argv, "c:h", options, NULL)) != -1) {
        switch (c) {
        case 'c':
            free(config);
            if (berth_path_absolute(optarg, &config) < 0) {
                fprintf(stderr, "berthd: --config: cannot make %s absolute\n", optarg);
                return 2;
            }
            break;
        case 'C': check_only = true; break;
        case 'h': help(); return 0;
        case 'V': printf("berthd %s\n", BERTH_VERSION); return 0;
        default: fprintf(stderr, "Try 'berthd --help'.\n"); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "berthd: unexpected argument %s\nTry 'berthd --help'.\n", argv[optind]);
        return 2;
    }
    if (!config) {
        fprintf(stderr, "berthd: --config=FILE is required\nTry 'berthd --help'.\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    /* Before any thread: keep freed heap for reuse (heap.h has the figures). */
    r = berth_heap_tune(getenv("GLIBC_TUNABLES"));
    if (r < 0 && r != -EOPNOTSUPP)
        fprintf(stderr, "berthd: warning: glibc refused the allocator settings; running with its defaults\n");
    if (berthd_config_load(config, BERTH_PLUGINDIR, &d.cfg, &err) < 0) {
        fprintf(stderr, "berthd: %s\n", err.message);
        return 1;
    }
    r = start(&d, check_only);
    if (r == 0 && check_only) {
        printf("berthd: %s is usable (%zu backends%s%s)\n", config, d.cfg.n_backends,
               d.cfg.has_images ? ", an image source" : "", d.cfg.has_evidence ? ", an evidence store" : "");
    } else if (r == 0) {
        event_base_dispatch(d.base);
        r = d.status;
    }
    stop(&d);
    if (!check_only && r == 0)
        fprintf(stderr,
                d.journald ? "<5>stopped: the journal is closed\n" : "berthd: stopped: the journal is closed\n");
    return r;
}
