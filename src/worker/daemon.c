/* SPDX-License-Identifier: MIT */
/*
 * daemon.c -- "berth-worker run" (docs/workers.md): load the runtime and
 * image plugins, qualify the runtime, go on with the runs a previous
 * process held, then poll berthd for work (a long poll: berthd answers as
 * soon as there is some) and run each offer on a thread of its own, at most
 * "slots" at once.  SIGTERM or SIGINT: take no new work and end once the
 * runs did; a second one: leave at once (the runs' leases then lapse and
 * berthd fences them).  SIGHUP is logged and ignored.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <berth/file.h>

#include "canon.h"
#include "clock.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "placement.h"
#include "session.h"
#include "worker.h"

#define POLL_WAIT_MAX_NS (5LL * 1000 * 1000 * 1000) /* a poll waits at most this for work */
#define RETRY_MAX_NS (5LL * 1000 * 1000 * 1000)
#define RETRY_MIN_NS (250LL * 1000 * 1000)
#define CAPS_MAX (64 * 1024)

int64_t worker_mono_now(void)
{
    int64_t now;

    return berth_now_ns(CLOCK_MONOTONIC, &now, NULL) < 0 ? 0 : now;
}

void worker_wait_until(struct worker *w, int64_t until)
{
    struct timespec ts = berth_timespec_of_ns(until);

    (void)pthread_cond_timedwait(&w->cond, &w->lock, &ts);
}

static void log_sink(void *userdata, int level, const char *line)
{
    const struct worker *w = userdata;

    /* Under systemd (JOURNAL_STREAM set) a "<N>" prefix carries the priority (sd-daemon(3)). */
    if (w->journald)
        fprintf(stderr, "<%d>%s\n", level, line);
    else
        fprintf(stderr, "berth-worker: %s\n", line);
}

/* A runtime notification: wake the run it names. */
static void job_changed(void *userdata, const char *instance, const char *job_id)
{
    struct worker *w = userdata;

    (void)instance;
    pthread_mutex_lock(&w->lock);
    for (int64_t i = 0; i < w->cfg.slots; i++)
        if (w->runs[i] && streq(w->runs[i]->run_id, job_id)) {
            w->runs[i]->changed = true;
            pthread_cond_broadcast(&w->cond);
        }
    pthread_mutex_unlock(&w->lock);
}

/* STATE/NAME as a private directory (0700, ours), made when missing; *@ret its path. */
static int private_dir(struct worker *w, const char *name, char **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int fd = -1;

    if (asprintf(ret, "%s%s%s", w->cfg.state_directory, name[0] ? "/" : "", name) < 0)
        return -ENOMEM;
    if (mkdir(*ret, 0700) < 0 && errno != EEXIST) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "cannot create %s: %m", *ret);
        return -errno;
    }
    const struct berth_file_expect expect = {.type = S_IFDIR, .uid = (uint32_t)geteuid(), .mode_mask = 077};

    fd = berth_open_trusted(*ret, O_RDONLY | O_DIRECTORY, 0, &err);
    if (fd < 0 || berth_file_check(fd, *ret, &expect, NULL, &err) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "%s must be a directory of this user with mode 0700: %s", *ret,
                   err.message);
        return fd < 0 ? fd : -EPERM;
    }
    return 0;
}

/* What this worker offers: its runtime's capabilities.  Of the job needs,
 * "inputs" when the runtime stages them and "outputs" when it captures
 * them and hands them over (open_output): the worker moves both from and
 * to berthd (runio.c). */
static int read_capabilities(struct worker *w)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    json_t *caps, *v;
    size_t len = 0, i;

    if (w->rt->capabilities(w->rt_state, &text, &len, &err) < 0 || berth_json_parse(text, len, CAPS_MAX, &doc, &err) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "the runtime's capabilities: %s", err.message);
        return -EIO;
    }
    if (json_is_string(json_object_get(doc, "unavailable")))
        berth_logf(&w->logger, BERTH_LOG_WARNING, "the runtime says it is unavailable (%s)",
                   json_string_value(json_object_get(doc, "unavailable")));
    caps = json_array();
    json_array_foreach(json_object_get(doc, "capabilities"), i, v)
    {
        int need = json_is_string(v) ? berth_name_index(berth_job_need_names, BERTH_NEED_COUNT, json_string_value(v))
                                     : -1;
        if (need == BERTH_NEED_OUTPUTS && !w->rt->open_output)
            continue;
        if (caps && json_is_string(v))
            json_array_append(caps, v);
    }
    json_decref(w->capabilities);
    json_decref(w->egress_classes);
    w->capabilities = caps;
    w->egress_classes = json_incref(json_object_get(doc, "egress_classes"));
    if (!w->capabilities || !json_is_array(w->egress_classes)) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "the runtime's capabilities lack capabilities or egress_classes");
        return -EIO;
    }
    return 0;
}

static int setup(struct worker *w)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berthd_backend_config images = {.name = "images", .plugin = "image-oci-local"};
    _cleanup_json_ json_t *store_cfg = NULL;
    struct berth_rootcache_params rp = {0};
    pthread_condattr_t ca;
    int r;

    if ((r = worker_config_runnable(&w->cfg, &err)) < 0 ||
        (r = berth_signing_key_load(w->cfg.identity, &w->identity, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "%s", err.message);
        return r;
    }
    if ((r = private_dir(w, "", &w->runs_dir)) < 0)
        return r;
    free(w->runs_dir);
    w->runs_dir = NULL;
    if ((r = private_dir(w, "runs", &w->runs_dir)) < 0 || (r = private_dir(w, "tmp", &w->tmp_dir)) < 0 ||
        (r = private_dir(w, "images", &w->images_dir)) < 0 || (r = private_dir(w, "roots", &w->roots_dir)) < 0 ||
        (r = private_dir(w, "inputs", &w->inputs_dir)) < 0)
        return r;
    /* The qualification first: its own instance of the runtime runs the probes. */
    w->qualification = json_null();
    if (w->cfg.qualify && (r = worker_qualify(w)) < 0)
        return r;
    /* The runtime, and image-oci-local on the worker's own store. */
    if ((r = berthd_backend_load(w->cfg.plugin_directory, &w->cfg.runtime, BERTH_PLUGIN_RUNTIME, &w->logger,
                                 &w->runtime, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "runtime: %s", err.message);
        return r;
    }
    store_cfg = json_pack("{s:s}", "store", w->images_dir);
    images.config = store_cfg;
    if ((r = berthd_backend_load(w->cfg.plugin_directory, &images, BERTH_PLUGIN_IMAGE_SOURCE, &w->logger, &w->images,
                                 &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "image source: %s", err.message);
        return r;
    }
    w->rt = berth_plugin_runtime_ops(w->runtime.plugin);
    w->rt_state = berth_plugin_state(w->runtime.plugin);
    w->img = berth_plugin_image_source_ops(w->images.plugin);
    w->img_state = berth_plugin_state(w->images.plugin);
    berth_logf(&w->logger, BERTH_LOG_INFO, "runtime: plugin %s %s; images: %s",
               berth_plugin_get_info(w->runtime.plugin)->name, berth_plugin_get_info(w->runtime.plugin)->version,
               w->images_dir);
    if ((r = berth_blob_store_open(w->images_dir, true, &w->store, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "the image store: %s", err.message);
        return r;
    }
    rp.directory = w->roots_dir;
    rp.max_bytes = (uint64_t)w->cfg.root_cache_bytes;
    rp.logger = &w->logger;
    if ((r = berth_rootcache_open(&rp, &w->roots, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "the root cache: %s", err.message);
        return r;
    }
    if ((r = read_capabilities(w)) < 0)
        return r;
    w->runs = calloc((size_t)w->cfg.slots, sizeof(*w->runs));
    if (!w->runs)
        return -ENOMEM;
    pthread_mutex_init(&w->lock, NULL);
    pthread_mutex_init(&w->stage_lock, NULL);
    pthread_mutex_init(&w->fetch_lock, NULL);
    pthread_mutex_init(&w->rt_lock, NULL);
    w->rt_concurrent = (w->rt->flags & BERTH_RUNTIME_CONCURRENT) != 0;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    atomic_store(&w->lease_ns, BERTH_WORKER_LEASE_DEFAULT_NS);
    berth_host_instance_set_notify(&w->runtime.host, job_changed, w);
    return 0;
}

/* A free slot (lock held), or -1. */
static int free_slot(struct worker *w)
{
    for (int64_t i = 0; i < w->cfg.slots; i++)
        if (!w->runs[i])
            return (int)i;
    return -1;
}

/* Whether a run of the table is @run_id (lock held). */
static bool holds(struct worker *w, const char *run_id)
{
    for (int64_t i = 0; run_id && i < w->cfg.slots; i++)
        if (w->runs[i] && streq(w->runs[i]->run_id, run_id))
            return true;
    return false;
}

/* Join the runs that ended (lock held, dropped while joining). */
static void collect(struct worker *w)
{
    for (int64_t i = 0; i < w->cfg.slots; i++) {
        struct worker_run *run = w->runs[i];
        if (!run || !run->done)
            continue;
        w->runs[i] = NULL;
        pthread_mutex_unlock(&w->lock);
        pthread_join(run->thread, NULL);
        worker_run_free(run);
        pthread_mutex_lock(&w->lock);
    }
}

/* Runs held (lock held): those whose thread ended hold no slot any more. */
static size_t busy(struct worker *w)
{
    size_t n = 0;

    for (int64_t i = 0; i < w->cfg.slots; i++)
        n += w->runs[i] && !w->runs[i]->done;
    return n;
}

/* A run of STATE/runs: go on with it. */
static void resume(struct worker *w, json_t *offer, json_t *claim, bool started)
{
    struct worker_run *run;
    int slot;

    pthread_mutex_lock(&w->lock);
    slot = free_slot(w);
    if (slot < 0) {
        pthread_mutex_unlock(&w->lock);
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: more runs are recorded than slots; it waits for a restart",
                   json_string_value(json_object_get(offer, "run_id")));
        json_decref(offer);
        json_decref(claim);
        return;
    }
    run = worker_run_spawn(w, offer, claim, true, started);
    if (run) {
        w->runs[slot] = run;
        berth_logf(&w->logger, BERTH_LOG_NOTICE, "run %s: held before the restart; going on with it", run->run_id);
    }
    pthread_mutex_unlock(&w->lock);
}

/* One poll; the offers go to free slots.  Return: 0, or -EIO (berthd did not answer, or refused). */
static int poll_once(struct worker *w, struct worker_session *s, bool *failing, bool *ret_idle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *body = NULL, *reply = NULL;
    size_t n_busy, i;
    const json_t *offers, *ns;
    int64_t wait, asked, lease = atomic_load(&w->lease_ns);
    long status = 0;
    char path[64];
    int r;

    pthread_mutex_lock(&w->lock);
    n_busy = busy(w);
    pthread_mutex_unlock(&w->lock);
    wait = lease / 2 < POLL_WAIT_MAX_NS ? lease / 2 : POLL_WAIT_MAX_NS;
    /* Stopping, it takes no work: every slot counts as busy, so that berthd
     * neither offers it runs nor counts it as room. */
    if (atomic_load(&w->stopping))
        n_busy = (size_t)w->cfg.slots;
    /* Without room, a poll only says the worker is alive: it does not wait for work. */
    if (n_busy >= (size_t)w->cfg.slots)
        wait = 0;
    body = json_pack("{s:s, s:I, s:I, s:O, s:O, s:O}", "keyid", berth_signing_key_id(w->identity), "slots",
                     (json_int_t)w->cfg.slots, "busy", (json_int_t)n_busy, "capabilities", w->capabilities,
                     "egress_classes", w->egress_classes, "qualification", w->qualification);
    if (!body)
        return -ENOMEM;
    snprintf(path, sizeof(path), "/v1/workers/poll?wait_ns=%lld", (long long)wait);
    *ret_idle = false;
    asked = worker_mono_now();
    r = worker_session_post(s, path, body, wait, &status, &reply, &err);
    if (r < 0 || status != 200) {
        if (r == 0)
            berth_https_error(status, reply, &err);
        if (!*failing)
            berth_logf(&w->logger, BERTH_LOG_WARNING, "polling berthd failed (trying on): %s", err.message);
        *failing = true;
        return -EIO;
    }
    if (*failing)
        berth_logf(&w->logger, BERTH_LOG_NOTICE, "berthd answers polls again");
    *failing = false;
    ns = json_object_get(reply, "lease_ns");
    if (ns && berth_json_ns_value(ns, &lease) == 0 && lease > 0)
        atomic_store(&w->lease_ns, lease);
    if (json_array_size(json_object_get(reply, "pools")) == 0)
        berth_logf(&w->logger, BERTH_LOG_DEBUG, "berthd has no pool for this worker (enrolled, served, on workers)");
    offers = json_object_get(reply, "offers");
    /* A long poll answered at once with nothing (berthd parks no more
     * polls now): the next one waits a little first. */
    if (wait > 0 && json_array_size(offers) == 0 && worker_mono_now() - asked < 100LL * 1000 * 1000)
        *ret_idle = true;
    for (i = 0; i < json_array_size(offers) && !atomic_load(&w->stopping); i++) {
        struct worker_run *run;
        int slot;

        pthread_mutex_lock(&w->lock);
        collect(w);
        slot = holds(w, json_string_value(json_object_get(json_array_get(offers, i), "run_id"))) ? -1 : free_slot(w);
        run = slot >= 0 ? worker_run_spawn(w, json_incref(json_array_get(offers, i)), NULL, false, false) : NULL;
        if (run)
            w->runs[slot] = run;
        pthread_mutex_unlock(&w->lock);
    }
    return 0;
}

/* The signal thread: the first SIGTERM/SIGINT drains, the second quits. */
static void *signal_main(void *arg)
{
    struct worker *w = arg;
    sigset_t set;
    int sig = 0;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    for (;;) {
        if (sigwait(&set, &sig) != 0)
            continue;
        if (atomic_load(&w->quitting))
            return NULL; /* the daemon ends and woke this thread to join it */
        if (sig == SIGHUP) {
            /* A lost terminal, or a reload asked for: nothing is reloaded (restart to read the configuration). */
            berth_logf(&w->logger, BERTH_LOG_NOTICE, "SIGHUP ignored: restart berth-worker to read its configuration");
            continue;
        }
        pthread_mutex_lock(&w->lock);
        if (!atomic_load(&w->stopping)) {
            atomic_store(&w->stopping, true);
            berth_logf(&w->logger, BERTH_LOG_NOTICE,
                       "stopping: no new work; leaving once the runs held now are reported (signal again to leave "
                       "now)");
        } else {
            atomic_store(&w->quitting, true);
            berth_logf(&w->logger, BERTH_LOG_NOTICE, "leaving now: the runs held stop here and their leases lapse");
        }
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        if (atomic_load(&w->quitting))
            return NULL;
    }
}

static void teardown_worker(struct worker *w)
{
    if (w->runs) {
        pthread_mutex_lock(&w->lock);
        atomic_store(&w->quitting, true);
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        /* Nothing may reach a run any more before the runs go: the runtime's
         * notifications, then the heartbeats. */
        berth_host_instance_set_notify(&w->runtime.host, NULL, NULL);
        worker_heartbeat_stop(w);
        for (int64_t i = 0; i < w->cfg.slots; i++) {
            struct worker_run *run;
            pthread_mutex_lock(&w->lock);
            run = w->runs[i];
            w->runs[i] = NULL;
            pthread_mutex_unlock(&w->lock);
            if (run) {
                pthread_join(run->thread, NULL);
                worker_run_free(run);
            }
        }
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        pthread_mutex_destroy(&w->stage_lock);
        pthread_mutex_destroy(&w->fetch_lock);
        pthread_mutex_destroy(&w->rt_lock);
        free(w->runs);
    }
    berth_rootcache_free(w->roots);
    berth_blob_store_free(w->store);
    berthd_backend_unload(&w->runtime);
    berthd_backend_unload(&w->images);
    berth_signing_key_free(w->identity);
    json_decref(w->capabilities);
    json_decref(w->egress_classes);
    json_decref(w->qualification);
    free(w->runs_dir);
    free(w->tmp_dir);
    free(w->inputs_dir);
    free(w->images_dir);
    free(w->roots_dir);
    worker_config_clear(&w->cfg);
}

int worker_daemon_run(const char *config_path)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct worker w = {0};
    struct worker_session s = {0};
    sigset_t set;
    pthread_t sigthread;
    bool failing = false, signals = false, idle = false;
    int64_t backoff = RETRY_MIN_NS;
    int rc = 1;

    w.journald = getenv("JOURNAL_STREAM") != NULL;
    w.logger = (struct berth_logger){.sink = log_sink, .userdata = &w, .max_level = BERTH_LOG_INFO};
    /* Every thread leaves SIGTERM and SIGINT to the signal thread. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (worker_config_load(config_path, &w.cfg, &err) < 0) {
        berth_logf(&w.logger, BERTH_LOG_ERR, "%s", err.message);
        worker_config_clear(&w.cfg);
        return 1;
    }
    if (setup(&w) < 0)
        goto out;
    if (worker_session_open(w.cfg.client, &s, &err) < 0) {
        berth_logf(&w.logger, BERTH_LOG_ERR, "%s", err.message);
        goto out;
    }
    if (pthread_create(&sigthread, NULL, signal_main, &w) != 0) {
        berth_logf(&w.logger, BERTH_LOG_ERR, "cannot start the signal thread");
        goto out;
    }
    signals = true;
    if (worker_heartbeat_start(&w) < 0) {
        berth_logf(&w.logger, BERTH_LOG_ERR, "cannot start the heartbeat thread");
        goto out;
    }
    if (worker_records_each(&w, resume) < 0)
        berth_logf(&w.logger, BERTH_LOG_WARNING, "cannot read %s: the runs of a previous process are not resumed",
                   w.runs_dir);
    berth_logf(&w.logger, BERTH_LOG_NOTICE, "%s (key %s) works for berthd with %lld slot%s%s", w.cfg.name,
               berth_signing_key_id(w.identity), (long long)w.cfg.slots, w.cfg.slots == 1 ? "" : "s",
               json_is_null(w.qualification) ? ", unqualified" : ", qualified");
    while (!atomic_load(&w.quitting)) {
        size_t n;

        pthread_mutex_lock(&w.lock);
        collect(&w);
        n = busy(&w);
        if (atomic_load(&w.stopping) && n == 0) {
            pthread_mutex_unlock(&w.lock);
            break;
        }
        /* Full, or stopping: wait for a run to end (a poll still says we live). */
        if (n >= (size_t)w.cfg.slots || atomic_load(&w.stopping))
            worker_wait_until(&w, worker_mono_now() + atomic_load(&w.lease_ns) / 3);
        pthread_mutex_unlock(&w.lock);
        if (atomic_load(&w.quitting))
            break;
        if (poll_once(&w, &s, &failing, &idle) < 0) {
            pthread_mutex_lock(&w.lock);
            worker_wait_until(&w, worker_mono_now() + backoff);
            pthread_mutex_unlock(&w.lock);
            backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
        } else {
            backoff = RETRY_MIN_NS;
            if (idle) {
                pthread_mutex_lock(&w.lock);
                worker_wait_until(&w, worker_mono_now() + RETRY_MIN_NS);
                pthread_mutex_unlock(&w.lock);
            }
        }
    }
    rc = 0;
    berth_logf(&w.logger, BERTH_LOG_NOTICE, "stopped");
out:
    worker_session_close(&s);
    if (signals) {
        atomic_store(&w.quitting, true);
        pthread_kill(sigthread, SIGTERM);
        pthread_join(sigthread, NULL);
    }
    teardown_worker(&w);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* The runtime's calls (plugin.h, "Threading")                               */

static void rt_enter(struct worker *w)
{
    if (!w->rt_concurrent)
        pthread_mutex_lock(&w->rt_lock);
}

static void rt_leave(struct worker *w)
{
    if (!w->rt_concurrent)
        pthread_mutex_unlock(&w->rt_lock);
}

int worker_runtime_start(struct worker *w, const char *doc, size_t len, struct berth_error *reterr)
{
    int r;

    rt_enter(w);
    r = w->rt->start(w->rt_state, doc, len, reterr);
    rt_leave(w);
    return r;
}

int worker_runtime_open_output(struct worker *w, const char *run_id, const char *output_id, int *ret_fd,
                               uint64_t *ret_size, struct berth_error *reterr)
{
    int r;

    if (!w->rt->open_output)
        return berth_error_set(reterr, -EOPNOTSUPP, "the runtime hands over no outputs");
    rt_enter(w);
    r = w->rt->open_output(w->rt_state, run_id, output_id, ret_fd, ret_size, reterr);
    rt_leave(w);
    return r;
}

int worker_runtime_inspect(struct worker *w, const char *run_id, char **ret, size_t *ret_len,
                           struct berth_error *reterr)
{
    int r;

    rt_enter(w);
    r = w->rt->inspect(w->rt_state, run_id, ret, ret_len, reterr);
    rt_leave(w);
    return r;
}

int worker_runtime_cancel(struct worker *w, const char *run_id, struct berth_error *reterr)
{
    int r;

    rt_enter(w);
    r = w->rt->cancel(w->rt_state, run_id, reterr);
    rt_leave(w);
    return r;
}

int worker_runtime_reap(struct worker *w, const char *run_id, struct berth_error *reterr)
{
    int r;

    rt_enter(w);
    r = w->rt->reap(w->rt_state, run_id, reterr);
    rt_leave(w);
    return r;
}
