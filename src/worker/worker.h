/* SPDX-License-Identifier: MIT */
/*
 * worker.h -- what the parts of "berth-worker run" share (docs/workers.md):
 *
 *   daemon.c     setup, the poll loop, the runs it holds
 *   run.c        one run: claim, image, start, watch, report, clean up
 *   heartbeat.c  the thread that renews every lease the worker holds
 *   selfqual.c   the worker's own live qualification of its runtime
 *   runrecord.c  STATE/runs/<run_id>.json: the runs claimed, for a restart
 *
 * Threads: the main thread polls; each run has a thread of its own; one
 * thread sends the heartbeats.  @lock guards the run table and each run's
 * flags; @cond is broadcast when a run ends, a lease answer or a runtime
 * notification changes a run, or the worker stops.
 */
#ifndef BERTH_WORKER_WORKER_H
#define BERTH_WORKER_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/plugin.h>

#include "backend-load.h"
#include "blobstore.h"
#include "config.h"
#include "digest.h"
#include "job.h"
#include "jobstore.h"
#include "log.h"
#include "rootcache.h"
#include "sign.h"

struct worker_session;

/* One run the worker holds (or is claiming). */
struct worker_run {
    struct worker *w;
    pthread_t thread;
    json_t *offer;     /* berthd's offer (berth_broker_worker_poll()) */
    json_t *claim;     /* the worker's signed claim, once made */
    char run_id[BERTH_RUN_ID_LEN + 1];
    char job_id[BERTH_JOB_ID_MAX + 1];
    char image[BERTH_DIGEST_BUFSZ];
    char claim_digest[BERTH_DIGEST_BUFSZ];
    bool resumed;      /* found in STATE/runs at startup: already claimed */
    bool was_started;  /* its record says the runtime was asked to start it (run thread only) */
    /* under w->lock: */
    bool claimed;      /* berthd recorded the claim: the heartbeat thread renews it */
    bool started;      /* the runtime started it: heartbeats say "running" */
    bool announced;    /* a heartbeat said "running" */
    bool changed;      /* the runtime notified a change */
    bool fenced;       /* berthd refused the lease (409): stop it, report nothing */
    bool cancel;       /* berthd asked to stop it ... */
    char cancel_reason[64]; /* ... and why */
    bool done;         /* its thread ended: join it */
};

struct worker {
    struct worker_config cfg;
    struct berth_logger logger;
    bool journald;
    struct berth_signing_key *identity;
    struct berthd_backend_instance runtime, images;
    const struct berth_runtime_ops_v1 *rt;
    void *rt_state;
    const struct berth_image_source_ops_v1 *img;
    void *img_state;
    struct berth_blob_store *store;
    struct berth_rootcache *roots;
    char *runs_dir, *tmp_dir, *images_dir, *roots_dir, *inputs_dir;
    json_t *capabilities, *egress_classes; /* what it offers: its runtime's, without the job needs it cannot serve */
    json_t *qualification;                 /* its signed qualification, or JSON null */
    pthread_mutex_t stage_lock;            /* one stage() at a time: the image source is one instance */
    pthread_mutex_t fetch_lock;            /* one image fetch at a time: the second run of an image finds it */
    pthread_mutex_t rt_lock;               /* runtime calls, one at a time unless it is BERTH_RUNTIME_CONCURRENT */
    bool rt_concurrent;
    pthread_mutex_t lock;
    pthread_cond_t cond;                   /* CLOCK_MONOTONIC */
    struct worker_run **runs;              /* @slots entries, NULL when free */
    atomic_int_fast64_t lease_ns;          /* berthd's lease term, from its last answer */
    atomic_bool stopping;                  /* take no new work; runs go on */
    atomic_bool quitting;                  /* leave now: runs stop where they are (their leases lapse) */
    pthread_t heartbeat;
    bool heartbeat_started;
    bool beat_now;                         /* under @lock: a run wants a heartbeat at once */
};

/* --- run.c --- */

/* Start a thread for a run: @offer (taken over) to claim, or with @resumed
 * a run of STATE/runs (@claim taken over; @was_started: its record says
 * it was started).  Lock held; the caller puts the returned run into a
 * free slot.  NULL: out of memory or threads (logged). */
struct worker_run *worker_run_spawn(struct worker *w, json_t *offer, json_t *claim, bool resumed, bool was_started);

/* Wait @ns, or less when the run changed, was fenced or the worker quits (lock not held). */
void worker_run_pause(struct worker_run *run, int64_t ns);

/* Whether berthd fenced @run's lease (lock not held). */
bool worker_run_fenced(struct worker_run *run);

/* The runtime plugin's calls, one at a time unless the plugin declares
 * BERTH_RUNTIME_CONCURRENT (plugin.h, "Threading"). */
int worker_runtime_start(struct worker *w, const char *doc, size_t len, struct berth_error *reterr);
int worker_runtime_inspect(struct worker *w, const char *run_id, char **ret, size_t *ret_len,
                           struct berth_error *reterr);
int worker_runtime_cancel(struct worker *w, const char *run_id, struct berth_error *reterr);
int worker_runtime_reap(struct worker *w, const char *run_id, struct berth_error *reterr);
int worker_runtime_open_output(struct worker *w, const char *run_id, const char *output_id, int *ret_fd,
                               uint64_t *ret_size, struct berth_error *reterr);

/* --- runio.c: a run's inputs and outputs (docs/workers.md) --- */

/* Stage the inputs of @run (its job's "inputs") from berthd into
 * STATE/inputs/<run id>; *@ret_dir that directory (malloc'd), NULL when
 * the job has none.  0; -EPROTO (berthd refused: the lease is gone);
 * -ENOENT (berthd cannot serve an input); -EBADMSG (the bytes are not the
 * input's); -errno of the file system.  A failing berthd or network is
 * asked again while the lease holds. */
int worker_inputs_stage(struct worker_run *run, struct worker_session *s, char **ret_dir);

/* Remove the staged inputs of @run_id (logged when that fails). */
void worker_inputs_remove(struct worker *w, const char *run_id);

/* Upload the declared outputs of @run, whose runtime's final inspect
 * document is @doc (it exited), to berthd as the job owner's evidence.
 * 0 with *@ret_outputs the report's outputs (a new array) and
 * *@ret_error NULL, or *@ret_outputs [] and *@ret_error {id, problem}
 * when an output is invalid; -ECANCELED: the run was fenced or the worker
 * quits (nothing is reported); -ENOMEM. */
int worker_outputs_upload(struct worker_run *run, struct worker_session *s, const json_t *doc, json_t **ret_outputs,
                          json_t **ret_error);

/* Free @run once its thread was joined. */
void worker_run_free(struct worker_run *run);

/* --- heartbeat.c --- */

int worker_heartbeat_start(struct worker *w);
void worker_heartbeat_stop(struct worker *w);

/* Ask the heartbeat thread for a round now (lock held). */
void worker_heartbeat_kick(struct worker *w);

/* --- selfqual.c --- */

/* The worker's qualification of its runtime into w->qualification: the
 * current one, or the live probes run now (logged), on an instance of the
 * runtime of its own: call it before w->runtime is loaded.  Return: 0
 * (qualified or not: w->qualification says); -ENOMEM. */
int worker_qualify(struct worker *w);

/* --- runrecord.c --- */

/* Write STATE/runs/@run_id.json ({"offer", "claim", "started"}) atomically and durably. */
int worker_record_write(struct worker *w, const struct worker_run *run, struct berth_error *reterr);

/* Remove it (the run is over). */
void worker_record_remove(struct worker *w, const char *run_id);

/* Call @fn(offer, claim, started) for each record (it takes a reference
 * to each); a damaged one is logged and left alone.  Return: 0 or a
 * negative errno. */
int worker_records_each(struct worker *w, void (*fn)(struct worker *w, json_t *offer, json_t *claim, bool started));

/* --- daemon.c --- */

/* CLOCK_MONOTONIC now (0 if it cannot be read). */
int64_t worker_mono_now(void);

/* Wait on @w->cond until CLOCK_MONOTONIC @until (lock held). */
void worker_wait_until(struct worker *w, int64_t until);

/* "berth-worker run": 0 on a clean stop, else 1. */
int worker_daemon_run(const char *config_path);

#endif /* BERTH_WORKER_WORKER_H */
