/* SPDX-License-Identifier: MIT */
/*
 * broker-inputs.c -- a job's inputs and outputs at admission, and its
 * inputs at dispatch.  See broker.h ("Inputs and outputs").
 *
 * Admission: every input must be in the evidence store under the caller's
 * own key (principal, scope, digest) with the size the job names, and a
 * backend of the job's pool must report the "inputs" (resp. "outputs")
 * need; otherwise the job is refused before anything is recorded.  The
 * store is asked before the batch takes the broker lock.
 *
 * Staging: inputs-stage.h, each input fetched from the store with
 * get(max_bytes = its size).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-internal.h"
#include "inputs-stage.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
#include "tree.h"

static void refuse(struct broker_input_check *ic, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void refuse(struct broker_input_check *ic, int status, const char *code, const char *fmt, ...)
{
    va_list ap;

    ic->status = status;
    ic->code = code;
    va_start(ap, fmt);
    vsnprintf(ic->message, sizeof(ic->message), fmt, ap);
    va_end(ap);
}

/* Look up input @i (@in, a valid job input) for @ic's identity; false once refused. */
static bool input_present(struct berth_broker *b, const struct berth_job *job, size_t i, const json_t *in,
                          struct broker_input_check *ic)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const json_t *ref = json_object_get(in, "ref");
    const char *digest = json_string_value(json_object_get(ref, "digest"));
    json_int_t size = json_integer_value(json_object_get(ref, "size"));
    _cleanup_free_ char *key = NULL;
    _cleanup_json_ json_t *st = NULL;
    size_t len = 0;
    int r;

    if (broker_evidence_key(digest, ic->principal, ic->scope, &key, &len, &err) < 0) {
        refuse(ic, 500, "internal", "out of memory");
        return false;
    }
    r = broker_evidence_stat(b, key, len, &st, &err);
    /* Another owner's object is absent for this caller: its existence is not told. */
    if (r == -ENOENT) {
        refuse(ic, 400, "input_unknown", "job %s: input %zu (%s) is not in the evidence store of %s", job->id, i,
               digest, ic->principal);
        return false;
    }
    if (r == -EIDRM) {
        refuse(ic, 400, "input_refused", "job %s: input %zu (%s) was deleted from the evidence store", job->id, i,
               digest);
        return false;
    }
    if (r < 0) {
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s of %s: looking up input %zu failed: %s", job->id,
                   ic->principal, i, err.message);
        refuse(ic, 503, "evidence_store", "the evidence store cannot be read now; retry");
        return false;
    }
    if (json_integer_value(json_object_get(st, "size")) != size || !json_is_integer(json_object_get(st, "size"))) {
        refuse(ic, 400, "input_refused", "job %s: input %zu (%s) is %lld bytes in the evidence store, not %lld",
               job->id, i, digest, (long long)json_integer_value(json_object_get(st, "size")), (long long)size);
        return false;
    }
    return true;
}

void broker_inputs_precheck(struct berth_broker *b, const struct berth_submission *s, struct broker_input_check *ic)
{
    struct berth_reply scratch = {0};
    struct broker_caller caller = {0};
    struct broker_job_ref ref = {0};
    struct berth_job *job;
    const json_t *inputs, *in;
    size_t i;
    int r;

    memset(ic, 0, sizeof(*ic));
    if (!b->p.evidence_ops || !s->body || s->len > BERTH_JOB_MAX || broker_submission_job(s, &ref, NULL) < 0) {
        broker_job_ref_clear(&ref);
        return; /* submit refuses it without asking the store */
    }
    job = ref.job;
    inputs = json_object_get(job->doc, "inputs");
    if (json_array_size(inputs) == 0)
        goto out;
    pthread_mutex_lock(&b->lock);
    r = broker_authenticate(b, s->fingerprint, &caller, &scratch);
    if (r == 0) {
        snprintf(ic->principal, sizeof(ic->principal), "%s", caller.subject->principal);
        ic->scope = TAKE_PTR(caller.scope);
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
    berth_reply_clear(&scratch);
    if (r < 0)
        goto out;
    ic->checked = true;
    json_array_foreach(inputs, i, in)
        if (!input_present(b, job, i, in, ic))
            break;
out:
    broker_job_ref_clear(&ref);
}

void broker_input_check_clear(struct broker_input_check *ic)
{
    free(ic->scope);
    memset(ic, 0, sizeof(*ic));
}

/* Whether a backend of @pool reports every one of @needs; -EAGAIN when
 * none does but one whose capabilities are unknown now might (lock held). */
static int pool_serves(struct berth_broker *b, const struct berth_pool *pool, unsigned needs)
{
    bool unknown = false;
    size_t i, k;

    for (i = 0; i < pool->n_backends; i++) {
        for (k = 0; k < b->offers->n; k++)
            if (streq(b->offers->v[k].name, pool->backends[i]) && (b->offers->v[k].needs & needs) == needs)
                return 1;
        for (k = 0; k < b->p.n_backends; k++)
            if (streq(b->backends[k].name, pool->backends[i]) && b->caps_errors[k][0])
                unknown = true;
    }
    return unknown ? -EAGAIN : 0;
}

bool broker_jobio_admissible(struct berth_broker *b, const struct berth_job *job, const struct broker_caller *caller,
                             const struct broker_input_check *ic, unsigned *ret_needs, struct berth_reply *reply)
{
    size_t n_in = json_array_size(json_object_get(job->doc, "inputs"));
    size_t n_out = json_array_size(json_object_get(job->doc, "outputs"));
    unsigned needs = (n_in ? BERTH_NEED_BIT(BERTH_NEED_INPUTS) : 0) | (n_out ? BERTH_NEED_BIT(BERTH_NEED_OUTPUTS) : 0);
    const struct berth_pool *pool;
    int r;

    *ret_needs = needs;
    if (!needs)
        return true;
    if (n_in && (!b->p.evidence_ops || !b->p.inputs_directory)) {
        broker_fail(reply, 400, "inputs_unsupported",
                    "job %s declares %zu input(s), but this broker has no evidence store to stage inputs", job->id,
                    n_in);
        return false;
    }
    if (n_out && !b->p.evidence_ops) {
        broker_fail(reply, 400, "outputs_unsupported",
                    "job %s declares %zu output(s), but this broker has no evidence store to keep outputs", job->id,
                    n_out);
        return false;
    }
    if (n_in &&
        (!ic->checked || !streq(ic->principal, caller->subject->principal) || !streq_ptr(ic->scope, caller->scope))) {
        broker_fail(reply, 503, "busy", "the host policy changed while the inputs were looked up; retry");
        reply->retry_after_s = 1;
        return false;
    }
    if (n_in && ic->status) {
        broker_fail(reply, ic->status, ic->code, "%s", ic->message);
        if (ic->status == 503)
            reply->retry_after_s = 1;
        return false;
    }
    pool = berth_pool_chain_find(berth_registry_chain(b->reg), job->pool);
    if (!pool)
        return true; /* placement says that the pool is not registered */
    r = pool_serves(b, pool, needs);
    if (r == -EAGAIN) {
        broker_fail(reply, 503, "no_backend", "no backend of pool %s can take inputs or outputs now", job->pool);
        return false;
    }
    if (r == 0) {
        bool in = n_in && pool_serves(b, pool, BERTH_NEED_BIT(BERTH_NEED_INPUTS)) == 0;
        broker_fail(reply, 400, in ? "inputs_unsupported" : "outputs_unsupported", "no backend of pool %s can %s",
                    job->pool,
                    in ? "stage inputs (capability \"inputs\")" : "capture outputs (capability \"outputs\")");
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------------- */

/* The store's copy of input @index of the job being staged, into @fd. */
struct fetch_call {
    struct berth_broker *b;
    const struct berth_job_record *rec;
};

static int fetch_input(void *userdata, size_t index, const char *digest, uint64_t size, int fd,
                       struct berth_error *reterr)
{
    struct fetch_call *c = userdata;
    _cleanup_free_ char *key = NULL;
    size_t len = 0;
    int r;

    (void)index;
    if ((r = broker_evidence_key(digest, c->rec->principal, c->rec->scope, &key, &len, reterr)) < 0)
        return r;
    return broker_evidence_get(c->b, key, len, fd, size, reterr);
}

int broker_stage_inputs(struct berth_broker *b, const struct berth_job_record *rec, const json_t *job, char **ret_dir,
                        struct berth_error *reterr)
{
    const json_t *inputs = json_object_get(job, "inputs");
    struct fetch_call c = {.b = b, .rec = rec};
    int64_t t0 = broker_mono_now(), bytes = 0;
    int r;

    *ret_dir = NULL;
    if (json_array_size(inputs) == 0)
        return 0;
    if (!b->p.inputs_directory || !b->p.evidence_ops)
        return berth_error_set(reterr, -ENOENT, "this broker has no evidence store to stage inputs from");
    r = berth_inputs_stage(b->p.inputs_directory, rec->run_id, inputs, fetch_input, &c, ret_dir, &bytes, reterr);
    if (r == 0 && bytes)
        /* The time is tests/bench/bench-evidence.sh's stage_*_ms. */
        berth_logf(b->p.logger, BERTH_LOG_INFO, "job %s run %s: staged %zu input(s), %lld bytes, in %lld ms into %s",
                   rec->job_id, rec->run_id, json_array_size(inputs), (long long)bytes,
                   (long long)((broker_mono_now() - t0) / 1000000), *ret_dir);
    return r;
}

void broker_unstage_inputs(struct berth_broker *b, const struct berth_job_record *rec)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (b->p.inputs_directory && berth_inputs_unstage(b->p.inputs_directory, rec->run_id, &err) < 0)
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "job %s run %s: cannot remove its staged inputs: %s", rec->job_id,
                   rec->run_id, err.message);
}
