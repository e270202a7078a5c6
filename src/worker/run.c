/* SPDX-License-Identifier: MIT */
/*
 * run.c -- one run on a worker (docs/workers.md), on a thread of its own:
 *
 *   1. claim it: a signed claim of schema version 2 (enrol.h), recorded by
 *      berthd before anything runs (POST /v1/workers/claims), then written
 *      to STATE/runs so that a restarted worker knows what it holds;
 *   2. fetch its image from berthd into the worker's store (images.h) and
 *      hold its staged root (rootcache.h);
 *   3. start it on the runtime plugin with the dispatch document berthd
 *      would send (plugin.h), the receipt berthd signed;
 *   4. watch it (inspect on every notification, at least once a second),
 *      stopping it when berthd asks (a heartbeat's "cancel") and dropping it
 *      when berthd fenced the lease;
 *   5. once it ended and the runtime proved nothing of it runs, report its
 *      outcome, signed (report.h), with stdout and stderr beside it;
 *   6. reap it, release the root, forget the record.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "clock.h"
#include "encoding.h"
#include "enrol.h"
#include "images.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "placement.h"
#include "receipt.h"
#include "report.h"
#include "session.h"
#include "worker.h"

#define INSPECT_MAX (4 * 1024 * 1024)
#define WATCH_NS (1000LL * 1000 * 1000)      /* inspect at least this often */
#define RETRY_MIN_NS (250LL * 1000 * 1000)   /* a failing call is tried again after this, doubling ... */
#define RETRY_MAX_NS (5LL * 1000 * 1000 * 1000) /* ... up to this */
#define REAP_RETRY_MIN_NS (1LL * 1000 * 1000 * 1000)  /* a busy reap is asked again after this, doubling ... */
#define REAP_RETRY_MAX_NS (30LL * 1000 * 1000 * 1000) /* ... up to this ... */
#define REAP_PATIENCE_NS (120LL * 1000 * 1000 * 1000) /* ... for this long in all */

static const char *str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

/* Wait @ns, or less when the run changed or the worker quits (lock not held). */
void worker_run_pause(struct worker_run *run, int64_t ns)
{
    struct worker *w = run->w;

    pthread_mutex_lock(&w->lock);
    if (!run->changed && !run->fenced && !atomic_load(&w->quitting))
        worker_wait_until(w, worker_mono_now() + ns);
    run->changed = false;
    pthread_mutex_unlock(&w->lock);
}

bool worker_run_fenced(struct worker_run *run)
{
    bool f;

    pthread_mutex_lock(&run->w->lock);
    f = run->fenced;
    pthread_mutex_unlock(&run->w->lock);
    return f;
}

/* ------------------------------------------------------------------------ */
/* 1. The claim                                                              */

static int claim(struct worker_run *run, struct worker_session *s)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *env = NULL, *reply = NULL;
    const json_t *o = run->offer;
    struct berth_claim_params p = {
        .pool_hash = str(o, "pool_hash"),
        .worker_name = w->cfg.name,
        .job_id = run->job_id,
        .job_digest = str(o, "job_digest"),
        .receipt_digest = str(o, "receipt_digest"),
        .run_id = run->run_id,
        .placement_hash = str(o, "placement_hash"),
        .lease_revision = json_integer_value(json_object_get(o, "revision")) + 1,
    };
    long status = 0;
    int r;

    if ((r = berth_now_ns(CLOCK_REALTIME, &p.created_ns, &err)) < 0 ||
        (r = berth_claim2_create(w->identity, &p, &env, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: cannot make its claim: %s", run->run_id, err.message);
        return r;
    }
    /* Unanswered, berthd may have recorded it: the same claim is sent again
     * (berthd answers it the same way while it holds the run), for about
     * half a lease; after that the run is left to berthd (offered again, or
     * fenced if the claim was recorded). */
    for (int64_t backoff = RETRY_MIN_NS, waited = 0;; waited += backoff, backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2) {
        json_decref(reply);
        reply = NULL;
        r = worker_session_post(s, "/v1/workers/claims", env, 0, &status, &reply, &err);
        if (r == 0 || r == -ENOMEM || waited >= atomic_load(&w->lease_ns) / 2 || atomic_load(&w->quitting))
            break;
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: the claim went unanswered, sending it again: %s",
                   run->run_id, err.message);
        worker_run_pause(run, backoff);
    }
    if (r < 0) {
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: the claim went unanswered: %s", run->run_id, err.message);
        return r;
    }
    if (status != 201) {
        berth_https_error(status, reply, &err);
        berth_logf(&w->logger, BERTH_LOG_INFO, "run %s: claim refused: %s", run->run_id, err.message);
        return -EPERM;
    }
    if (!str(reply, "claim_digest") || strlen(str(reply, "claim_digest")) >= sizeof(run->claim_digest)) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: berthd's answer to the claim has no claim_digest", run->run_id);
        return -EPROTO;
    }
    snprintf(run->claim_digest, sizeof(run->claim_digest), "%s", str(reply, "claim_digest"));
    run->claim = TAKE_PTR(env);
    pthread_mutex_lock(&w->lock);
    run->claimed = true;
    pthread_mutex_unlock(&w->lock);
    berth_logf(&w->logger, BERTH_LOG_NOTICE, "job %s run %s: claimed", run->job_id, run->run_id);
    if (worker_record_write(w, run, &err) < 0)
        /* Its start is recorded before it starts, and refused if that fails too. */
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: cannot record the claim in %s: %s", run->run_id,
                   w->runs_dir, err.message);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* 2.-3. Image, root, start                                                  */

/* The root cache's stage callback: the image source, one stage at a time. */
static int stage_image(void *userdata, const char *digest, int target_dirfd, struct berth_error *reterr)
{
    struct worker *w = userdata;
    _cleanup_free_ char *summary = NULL;
    size_t len = 0;
    int r;

    pthread_mutex_lock(&w->stage_lock);
    r = w->img->stage(w->img_state, digest, target_dirfd, "{}", 2, &summary, &len, reterr);
    pthread_mutex_unlock(&w->stage_lock);
    return r;
}

/* Fetch and stage the image; *@ret_rootfs its root.  <0: logged; -EBADMSG refused for good. */
static int prepare(struct worker_run *run, struct worker_session *s, char **ret_rootfs)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    uint64_t fetched = 0;
    int64_t backoff = RETRY_MIN_NS;
    int r;

    for (;;) {
        pthread_mutex_lock(&w->fetch_lock);
        r = worker_image_fetch(s, w->store, w->tmp_dir, run->image, run->run_id, &fetched, &err);
        pthread_mutex_unlock(&w->fetch_lock);
        /* berthd refused (-EPROTO: 403, 404, 501): asking again changes nothing. */
        if (r == 0 || r == -EBADMSG || r == -EPROTO || worker_run_fenced(run) || atomic_load(&w->quitting))
            break;
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: fetching image %s failed, trying again: %s", run->run_id,
                   run->image, err.message);
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
    if (r < 0) {
        if (r == -EBADMSG || r == -EPROTO)
            berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: image %s %s: %s", run->run_id, run->image,
                       r == -EBADMSG ? "refused" : "cannot be fetched", err.message);
        return r;
    }
    if (fetched)
        berth_logf(&w->logger, BERTH_LOG_INFO, "run %s: fetched %llu bytes of image %s from berthd", run->run_id,
                   (unsigned long long)fetched, run->image);
    r = berth_rootcache_hold(w->roots, run->image, run->run_id, stage_image, w, ret_rootfs, &err);
    if (r < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: staging image %s failed: %s", run->run_id, run->image,
                   err.message);
        return r == -ENOMEM || r == -EIO || r == -ENOSPC ? r : -EBADMSG;
    }
    return 0;
}

/* The document the runtime's start() takes (plugin.h), as berthd's dispatch makes it. */
static int dispatch_doc(const struct worker_run *run, const char *rootfs, const char *inputs_dir, char **ret,
                        size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = json_pack("{s:i, s:O, s:O, s:O, s:s, s:s*}", "schema_version", 1, "receipt",
                                           json_object_get(run->offer, "receipt"), "job",
                                           json_object_get(run->offer, "job"), "effective",
                                           json_object_get(run->offer, "effective"), "rootfs", rootfs, "inputs_dir",
                                           inputs_dir);

    if (!doc)
        return berth_error_set(reterr, -EBADMSG, "the offer lacks its receipt, job or manifest");
    return berth_json_serialize(doc, 0, ret, ret_len, reterr);
}

/* ------------------------------------------------------------------------ */
/* 4.-5. Watch and report                                                    */

/* The runtime's inspect document, or NULL (-ENOENT: it does not have the run). */
static int inspect(struct worker_run *run, json_t **ret)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    *ret = NULL;
    r = worker_runtime_inspect(w, run->run_id, &text, &len, &err);
    if (r == 0)
        r = berth_json_parse(text, len, INSPECT_MAX, ret, &err);
    if (r < 0 && r != -ENOENT)
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: inspect failed: %s", run->run_id, err.message);
    return r;
}

static bool terminal(const json_t *doc)
{
    const char *s = str(doc, "state");

    return s && !streq(s, "starting") && !streq(s, "running");
}

/* Stop the run and prove nothing of it runs: cancel() until it says so. */
static void teardown(struct worker_run *run)
{
    struct worker *w = run->w;
    int64_t backoff = RETRY_MIN_NS;

    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;
        int r = worker_runtime_cancel(w, run->run_id, &err);

        if (r == 0 || r == -ENOENT || atomic_load(&w->quitting))
            return;
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: stopping it is not proven yet: %s", run->run_id,
                   err.message);
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
}

/* The base64url text of @len bytes at @data, as a new JSON string. */
static json_t *b64(const uint8_t *data, size_t len)
{
    _cleanup_free_ char *text = malloc(BERTH_BASE64URL_LEN(len) + 1);

    if (!text || berth_base64url_encode(len ? data : (const uint8_t *)"", len, text, BERTH_BASE64URL_LEN(len) + 1) < 0)
        return NULL;
    return json_string(text);
}

/* The outcome to report from the runtime's final @doc (NULL: the run never
 * reached the runtime: it failed with @reason); @cancel_reason when
 * berthd asked to stop it. */
static int make_report(struct worker_run *run, const json_t *doc, const char *reason, const char *cancel_reason,
                       const json_t *outputs, const json_t *output_error, json_t **ret_body)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ uint8_t *out = NULL, *errb = NULL;
    _cleanup_json_ json_t *env = NULL;
    const char *state = doc ? str(doc, "state") : cancel_reason && !reason ? "cancelled" : "failed";
    struct berth_report_params p = {
        .worker_name = w->cfg.name,
        .job_id = run->job_id,
        .run_id = run->run_id,
        .job_digest = str(run->offer, "job_digest"),
        .claim_digest = run->claim_digest,
        .status = BERTH_RESULT_FAILED,
        .reason = doc ? str(doc, "reason") : reason,
        .outputs = outputs,
        .output_error = output_error,
        .started_at = -1,
    };
    const json_t *v;
    int r;

    if (streq_ptr(state, "exited"))
        p.status = BERTH_RESULT_EXITED;
    else if (streq_ptr(state, "cancelled"))
        p.status = BERTH_RESULT_CANCELLED;
    else if (streq_ptr(state, "expired"))
        p.status = BERTH_RESULT_EXPIRED;
    /* What berthd asked for names why it stopped, as a local stop would. */
    if (cancel_reason && p.status != BERTH_RESULT_EXITED) {
        p.status = streq(cancel_reason, "deadline") ? BERTH_RESULT_EXPIRED : BERTH_RESULT_CANCELLED;
        p.reason = cancel_reason;
    }
    if (p.reason && !berth_reason_code_valid(p.reason))
        p.reason = NULL;
    /* An invalid declared output fails the run, as it would on berthd's host. */
    if (output_error) {
        p.status = BERTH_RESULT_FAILED;
        p.reason = "output_invalid";
    }
    if (doc) {
        v = json_object_get(doc, "exit_code");
        if (json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= 255) {
            p.has_exit_code = true;
            p.exit_code = (int)json_integer_value(v);
        }
        v = json_object_get(doc, "started_at");
        if (v && !json_is_null(v) && berth_json_ns_value(v, &p.started_at) < 0)
            p.started_at = -1;
        if (berth_json_ns_value(json_object_get(doc, "finished_at"), &p.finished_at) < 0)
            p.finished_at = 0;
        if ((r = berth_json_b64_value(json_object_get(doc, "stdout"), &out, &p.out_len)) < 0 ||
            (r = berth_json_b64_value(json_object_get(doc, "stderr"), &errb, &p.err_len)) < 0) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: the runtime's stdout or stderr is not base64url",
                       run->run_id);
            return r;
        }
        p.out = out;
        p.err = errb;
    }
    if (p.finished_at <= 0 && berth_now_ns(CLOCK_REALTIME, &p.finished_at, &err) < 0)
        return -EIO;
    if ((r = berth_report_create(w->identity, &p, &env, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: cannot sign its report: %s", run->run_id, err.message);
        return r;
    }
    *ret_body = json_pack("{s:O, s:o, s:o}", "report", env, "stdout", b64(out, p.out_len), "stderr",
                          b64(errb, p.err_len));
    return *ret_body ? 0 : -ENOMEM;
}

/* Send the report until berthd recorded it, refused it for good, or
 * fenced the run.  Return: true when nothing more is to be said of the run
 * (recorded, or refused: a fence, a wrong report); false when the worker
 * quits with the report still owed (the record stays for the restart). */
static bool send_report(struct worker_run *run, struct worker_session *s, const json_t *body)
{
    struct worker *w = run->w;
    int64_t backoff = RETRY_MIN_NS;
    bool waited = false;

    for (;;) {
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_json_ json_t *reply = NULL;
        long status = 0;
        int r = worker_session_post(s, "/v1/workers/reports", body, 0, &status, &reply, &err);

        if (r == 0 && status == 200) {
            const json_t *res = json_object_get(json_object_get(reply, "result"), "result");
            berth_logf(&w->logger, BERTH_LOG_NOTICE, "job %s run %s: reported; berthd signed it %s%s%s", run->job_id,
                       run->run_id, str(res, "status"), str(res, "reason") ? ", " : "",
                       str(res, "reason") ? str(res, "reason") : "");
            return true;
        }
        if (r == 0 && status == 202) {
            /* Signed, kept in berthd's memory for want of journal space: the
             * run is held (heartbeats go on) until berthd recorded it. */
            if (!waited)
                berth_logf(&w->logger, BERTH_LOG_NOTICE,
                           "job %s run %s: berthd signed the result and records it once its journal has room",
                           run->job_id, run->run_id);
            waited = true;
        } else if (r == 0) {
            berth_https_error(status, reply, &err);
            /* Final: the run was fenced (409), or the report is wrong (400,
             * 413); anything else (a policy reload, a full journal, memory)
             * passes, and the report goes again. */
            if (status == 409 || status == 400 || status == 413) {
                berth_logf(&w->logger, status == 409 ? BERTH_LOG_WARNING : BERTH_LOG_ERR,
                           "job %s run %s: berthd refused the report: %s", run->job_id, run->run_id, err.message);
                return true;
            }
            berth_logf(&w->logger, BERTH_LOG_WARNING, "job %s run %s: the report is not taken now, trying again: %s",
                       run->job_id, run->run_id, err.message);
        } else {
            berth_logf(&w->logger, BERTH_LOG_WARNING, "job %s run %s: the report went unanswered, trying again: %s",
                       run->job_id, run->run_id, err.message);
        }
        if (worker_run_fenced(run))
            return true;
        if (atomic_load(&w->quitting))
            return false;
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
}

/* A heartbeat of this run's own, waited for: 0 when berthd renewed the
 * lease now (a cancellation it carries is noted); -EPERM when berthd says
 * the lease is not the worker's any more (fenced); -EAGAIN when berthd
 * did not answer (or refused for another reason). */
static int confirm_lease(struct worker_run *run, struct worker_session *s, const char *state)
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *body = NULL, *reply = NULL;
    long status = 0;

    body = json_pack("{s:s, s:s, s:s}", "run_id", run->run_id, "claim_digest", run->claim_digest, "state", state);
    if (!body || worker_session_post(s, "/v1/workers/leases", body, 0, &status, &reply, &err) < 0)
        return -EAGAIN;
    /* Fenced, or a run berthd does not know: not the worker's to run (a 409
     * "stale", the record moved while berthd renewed it, is asked again). */
    bool lost = (status == 409 && streq_ptr(str(reply, "error"), "fenced")) || status == 404;

    pthread_mutex_lock(&w->lock);
    if (status == 200 && json_is_true(json_object_get(reply, "cancel")) && !run->cancel) {
        run->cancel = true;
        snprintf(run->cancel_reason, sizeof(run->cancel_reason), "%s",
                 str(reply, "reason") ? str(reply, "reason") : "cancelled");
    }
    if (lost)
        run->fenced = true;
    pthread_mutex_unlock(&w->lock);
    return status == 200 ? 0 : lost ? -EPERM : -EAGAIN;
}

/* confirm_lease() until berthd answers: 0 (the lease holds), or -EPERM
 * (fenced, or the worker quits: nothing may start). */
static int lease_holds(struct worker_run *run, struct worker_session *s, const char *state)
{
    int64_t backoff = RETRY_MIN_NS;
    int r;

    while ((r = confirm_lease(run, s, state)) == -EAGAIN) {
        if (atomic_load(&run->w->quitting) || worker_run_fenced(run))
            return -EPERM;
        worker_run_pause(run, backoff);
        backoff = backoff * 2 > RETRY_MAX_NS ? RETRY_MAX_NS : backoff * 2;
    }
    return r;
}

static bool cancel_asked(struct worker_run *run, char cancel_reason[64])
{
    bool c;

    pthread_mutex_lock(&run->w->lock);
    c = run->cancel;
    if (c)
        snprintf(cancel_reason, 64, "%s", run->cancel_reason);
    pthread_mutex_unlock(&run->w->lock);
    return c;
}

/* Start (when the runtime does not have it yet) and watch until it ended;
 * *@ret_doc its final inspect document, NULL when it never started
 * (*@ret_reason then says why).  false: the run is given up (fenced, or
 * the worker quits) and nothing is reported. */
static bool execute(struct worker_run *run, struct worker_session *s, json_t **ret_doc, const char **ret_reason,
                    char cancel_reason[64])
{
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *rootfs = NULL, *doc = NULL, *inputs_dir = NULL;
    json_t *state = NULL;
    size_t len = 0;
    bool asked = false;
    int r;

    *ret_doc = NULL;
    /* A run found after a restart: only with its lease still the worker's. */
    if (run->resumed && lease_holds(run, s, run->was_started ? "running" : "starting") < 0)
        return false;
    r = inspect(run, &state);
    if (r == -ENOENT && run->was_started) {
        /* It was started before the restart and the runtime has no trace of
         * it left: it is not started again. */
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: started before the restart, and the runtime lost it",
                   run->run_id);
        *ret_reason = "lost";
        return true;
    }
    if (r == -ENOENT) {
        r = prepare(run, s, &rootfs);
        if (r < 0) {
            *ret_reason = r == -EBADMSG ? "image_refused" : r == -EPROTO ? "image_unavailable" : "start_failed";
            return !worker_run_fenced(run) && !atomic_load(&w->quitting);
        }
        r = worker_inputs_stage(run, s, &inputs_dir);
        if (r == -EPROTO || (r < 0 && worker_run_fenced(run)) || atomic_load(&w->quitting))
            return false; /* berthd refused: the lease is gone */
        if (r < 0) {
            /* Bytes that are not their digest, or no room for them: it cannot run as accepted. */
            *ret_reason = r == -EBADMSG ? "input_invalid" : "input_unavailable";
            return true;
        }
        if ((r = dispatch_doc(run, rootfs, inputs_dir, &doc, &len, &err)) < 0) {
            *ret_reason = "damaged_record";
            return true;
        }
        /* The lease confirmed right before the start: a run berthd fenced
         * meanwhile (the image took long, berthd was away) never starts. */
        if (lease_holds(run, s, "starting") < 0)
            return false;
        if (cancel_asked(run, cancel_reason)) {
            *ret_reason = NULL;
            return true; /* reported cancelled (or expired), never started */
        }
        run->was_started = true;
        if (worker_record_write(w, run, &err) < 0) {
            /* Without the record a restart could start it twice: it is not started. */
            berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: cannot record its start in %s, so it does not start: %s",
                       run->run_id, w->runs_dir, err.message);
            *ret_reason = "start_failed";
            return true;
        }
        r = worker_runtime_start(w, doc, len, &err);
        if (r < 0) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: the runtime refused to start it: %s", run->run_id,
                       err.message);
            *ret_reason = r == -ETIME ? "deadline" : r == -EPERM ? "backend_refused" : "start_refused";
            return true;
        }
        berth_logf(&w->logger, BERTH_LOG_INFO, "job %s run %s: started", run->job_id, run->run_id);
    } else if (r < 0) {
        berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: the runtime cannot say how it is; asking again",
                   run->run_id);
    }
    json_decref(state);
    pthread_mutex_lock(&w->lock);
    run->started = true;
    worker_heartbeat_kick(w); /* berthd records that it runs */
    pthread_mutex_unlock(&w->lock);
    for (;;) {
        bool stop, drop;

        pthread_mutex_lock(&w->lock);
        stop = run->cancel;
        drop = run->fenced || atomic_load(&w->quitting);
        if (stop)
            snprintf(cancel_reason, 64, "%s", run->cancel_reason);
        pthread_mutex_unlock(&w->lock);
        if (drop)
            return false;
        if (stop && !asked) {
            berth_logf(&w->logger, BERTH_LOG_NOTICE, "run %s: berthd asks to stop it (%s)", run->run_id,
                       cancel_reason);
            teardown(run);
            asked = true;
        }
        if (inspect(run, &state) == 0 && terminal(state)) {
            *ret_doc = state;
            return true;
        }
        json_decref(state);
        state = NULL;
        worker_run_pause(run, WATCH_NS);
    }
}

/* A run that is not reported: whether berthd fenced it (then its sandbox
 * is stopped and it is forgotten).  A refusal seen before the heartbeat
 * saw the fence is confirmed by asking berthd once more; a worker that
 * quits keeps the run for its restart. */
static bool given_up(struct worker_run *run, struct worker_session *s)
{
    int64_t backoff = RETRY_MIN_NS;

    /* A few tries: a berthd that stays away (or refuses) leaves the run to
     * the restart, which asks again before anything else. */
    for (int i = 0; i < 4 && !atomic_load(&run->w->quitting) && !worker_run_fenced(run); i++) {
        if (confirm_lease(run, s, run->was_started ? "running" : "starting") != -EAGAIN)
            break;
        worker_run_pause(run, backoff);
        backoff *= 2;
    }
    return !atomic_load(&run->w->quitting) && worker_run_fenced(run);
}

/* ------------------------------------------------------------------------ */

static void *run_main(void *arg)
{
    struct worker_run *run = arg;
    struct worker *w = run->w;
    struct berth_error err = BERTH_ERROR_INIT;
    struct worker_session s = {0};
    _cleanup_json_ json_t *doc = NULL, *body = NULL, *outputs = NULL, *output_error = NULL;
    const char *reason = NULL;
    char cancel_reason[64] = "";
    bool report, done;
    int r;

    if (worker_session_open(w->cfg.client, &s, &err) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: %s", run->run_id, err.message);
        goto out;
    }
    if (!run->resumed && claim(run, &s) < 0)
        goto out;
    report = execute(run, &s, &doc, &reason, cancel_reason);
    done = !report && given_up(run, &s);
    if (report) {
        teardown(run); /* a result only once nothing of the run is left running */
        /* Only a run that exited on its own keeps outputs (as on berthd's host). */
        r = doc && streq_ptr(str(doc, "state"), "exited") &&
                    json_array_size(json_object_get(json_object_get(run->offer, "job"), "outputs"))
                ? worker_outputs_upload(run, &s, doc, &outputs, &output_error)
                : 0;
        if (r == -ECANCELED) {
            report = false;
            done = given_up(run, &s); /* fenced; or the worker quits, and its restart asks again */
        } else if (r == 0 &&
                   make_report(run, doc, reason, cancel_reason[0] ? cancel_reason : NULL, outputs, output_error,
                               &body) == 0) {
            done = send_report(run, &s, body);
        } else {
            done = true; /* nothing berthd would take: its lease lapses, and berthd fences it */
        }
    }
    if (!report && done) {
        berth_logf(&w->logger, BERTH_LOG_WARNING,
                   "job %s run %s: berthd fenced its lease: stopping it, and it reports nothing", run->job_id,
                   run->run_id);
        teardown(run);
    }
    if (done && !atomic_load(&w->quitting)) {
        /* The record goes first: a restart between the two must not find a
         * reported run the runtime no longer knows. */
        worker_record_remove(w, run->run_id);
        if (w->rt->reap) {
            struct berth_error rerr = BERTH_ERROR_INIT;
            /* The runtime may still be tearing the sandbox down after the
             * result (runtime-oci records it before the runtime's delete):
             * a busy reap is asked again, 1 s doubling to 30 s, for
             * REAP_PATIENCE_NS in all (the heartbeat may have marked the
             * run fenced meanwhile, which worker_run_pause() does not
             * wait for: this waits on the clock, for the quit alone). */
            int64_t give_up = worker_mono_now() + REAP_PATIENCE_NS;
            for (int64_t pause = REAP_RETRY_MIN_NS;; pause = pause * 2 > REAP_RETRY_MAX_NS ? REAP_RETRY_MAX_NS : pause * 2) {
                rerr = (struct berth_error)BERTH_ERROR_INIT;
                r = worker_runtime_reap(w, run->run_id, &rerr);
                if (r != -EBUSY || worker_mono_now() >= give_up || atomic_load(&w->quitting))
                    break;
                pthread_mutex_lock(&w->lock);
                for (int64_t until = worker_mono_now() + pause;
                     worker_mono_now() < until && !atomic_load(&w->quitting);)
                    worker_wait_until(w, until);
                pthread_mutex_unlock(&w->lock);
            }
            if (r < 0 && r != -ENOENT)
                berth_logf(&w->logger, BERTH_LOG_WARNING, "run %s: reap failed: %s", run->run_id, rerr.message);
        }
        berth_rootcache_release(w->roots, run->run_id);
        worker_inputs_remove(w, run->run_id);
    }
out:
    worker_session_close(&s);
    pthread_mutex_lock(&w->lock);
    run->claimed = false;
    run->done = true;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

struct worker_run *worker_run_spawn(struct worker *w, json_t *offer, json_t *claim_env, bool resumed,
                                    bool was_started)
{
    struct worker_run *run = calloc(1, sizeof(*run));
    const char *run_id = str(offer, "run_id"), *job_id = str(offer, "job_id");
    const char *image = json_string_value(json_object_get(json_object_get(offer, "job"), "image"));
    int r;

    if (!run || !run_id || !job_id || !image || strlen(run_id) > BERTH_RUN_ID_LEN || !berth_job_id_valid(run_id) ||
        !berth_job_id_valid(job_id) || strlen(job_id) > BERTH_JOB_ID_MAX || strlen(image) >= sizeof(run->image)) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "an offer of berthd lacks its run, job or image; ignored");
        free(run);
        json_decref(offer);
        json_decref(claim_env);
        return NULL;
    }
    run->w = w;
    run->offer = offer;
    run->claim = claim_env;
    run->resumed = resumed;
    run->was_started = was_started;
    run->claimed = resumed;
    snprintf(run->run_id, sizeof(run->run_id), "%s", run_id);
    snprintf(run->job_id, sizeof(run->job_id), "%s", job_id);
    snprintf(run->image, sizeof(run->image), "%s", image);
    if (resumed && berth_digest_json(claim_env, run->claim_digest, NULL) < 0) {
        worker_run_free(run);
        return NULL;
    }
    r = pthread_create(&run->thread, NULL, run_main, run);
    if (r != 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "run %s: cannot start its thread: %s", run_id, strerror(r));
        worker_run_free(run);
        return NULL;
    }
    return run;
}

void worker_run_free(struct worker_run *run)
{
    if (!run)
        return;
    json_decref(run->offer);
    json_decref(run->claim);
    free(run);
}
