/* SPDX-License-Identifier: MIT */
/*
 * fence.c -- fence and drain the units no live job accounts for, at
 * startup and on a timer; see fence.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "canon.h"
#include "clock.h"
#include "jobstore.h"
#include "jsonobj.h"
#include "macro.h"
#include "fence.h"

/* A units() document is at most 4096 entries of well under 1 KiB each. */
#define UNITS_DOC_MAX (8u * 1024 * 1024)

struct scan {
    berthd_job_lookup_fn *lookup;
    void *userdata;
    const struct berth_logger *log;
    const atomic_bool *cancel;
    bool startup;
    struct berthd_fence_counts c;
};

static bool cancelled(const struct scan *s)
{
    return s->cancel && atomic_load(s->cancel);
}

/* What systemd accepts in a unit name (systemd.unit(5), "Description"):
 * a name with anything else came from the cgroup tree, not the manager,
 * and is logged escaped, never as a command to paste. */
static bool unit_name_plain(const char *unit)
{
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@";

    return *unit && strlen(unit) < 256 && unit[strspn(unit, ok)] == '\0';
}

/* Why the unit of @job_id must be fenced (a static string), or NULL when
 * its job is not terminal and the runtime owns it. */
static int fence_reason(struct scan *s, const char *job_id, const char **ret, struct berth_error *reterr)
{
    enum berth_job_state st = 0;
    int r = s->lookup(s->userdata, job_id, &st, reterr);

    if (r == -ENOENT) {
        *ret = "no journal record";
        return 0;
    }
    if (r < 0)
        return r;
    *ret = berth_job_state_terminal(st) ? berth_job_state_names[st] : NULL;
    return 0;
}

/* One entry of units(): act on it and count it. */
static int one_unit(const char *backend, const struct berth_containment_binding *b, struct scan *s,
                    const json_t *e)
{
    const struct berth_logger *log = s->log;
    struct berthd_fence_counts *c = &s->c;
    struct berth_error err = BERTH_ERROR_INIT;
    const char *unit = json_string_value(json_object_get(e, "unit"));
    const json_t *jid = json_object_get(e, "job_id");
    bool populated = json_is_true(json_object_get(e, "populated")), masked = json_is_true(json_object_get(e, "masked"));
    const char *why = NULL;
    int r;

    if (!unit || !(json_is_string(jid) || json_is_null(jid)) || !json_is_boolean(json_object_get(e, "populated")) ||
        !json_is_boolean(json_object_get(e, "masked"))) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: the containment listed a malformed unit; skipped", backend);
        c->failed++;
        return 0;
    }
    if (masked && !populated) {
        c->already++;
        return 0;
    }
    if (json_is_null(jid)) {
        _cleanup_free_ char *shown = NULL;

        if (unit_name_plain(unit))
            berth_logf(log, s->startup ? BERTH_LOG_WARNING : BERTH_LOG_DEBUG,
                       "backend %s: unit %s carries no job id berth makes and cannot be fenced through the "
                       "containment plugin; stop and mask it by hand (systemctl mask --now '%s')",
                       backend, unit, unit);
        else
            berth_logf(log, s->startup ? BERTH_LOG_WARNING : BERTH_LOG_DEBUG,
                       "backend %s: a cgroup named %s, which is no unit name systemd accepts, carries no job id "
                       "berth makes; kill and remove it by hand (docs/containment.md)",
                       backend, (shown = json_dumps(json_object_get(e, "unit"), JSON_ENCODE_ANY | JSON_ENSURE_ASCII))
                           ? shown
                           : "(unprintable)");
        c->unaddressable++;
        return 0;
    }
    if ((r = fence_reason(s, json_string_value(jid), &why, &err)) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: unit %s: cannot look its job up: %s", backend, unit,
                   err.message);
        if (r == -EIO || r == -ENOMEM)
            return r; /* the journal fails: no other lookup would do better */
        c->failed++;
        return 0;
    }
    if (!why) {
        c->kept++;
        return 0;
    }
    r = b->table.destroy((void *)b, json_string_value(jid), &err);
    if (r == 0 || r == -ENOENT) {
        berth_logf(log, BERTH_LOG_NOTICE, "backend %s: unit %s (%s): fenced, %s", backend, unit, why,
                   r == 0 ? "drained" : "nothing was left running");
        c->fenced++;
        return 0;
    }
    berth_logf(log, BERTH_LOG_ERR,
               "backend %s: unit %s (%s) could not be proven gone: %s; the next scan tries again "
               "(docs/containment.md, \"When recovery cannot prove a job gone\")",
               backend, unit, why, err.message);
    c->failed++;
    return 0;
}

static int one_backend(const struct berthd_backend_instance *inst, struct scan *s)
{
    const struct berth_logger *log = s->log;
    struct berthd_fence_counts *c = &s->c;
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_containment_binding *b = &inst->binding;
    const char *name = inst->host.instance;
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const json_t *units;
    size_t len = 0, i;
    int r;

    if (!inst->containment || !b->table.units)
        return 0;
    if ((r = b->table.units((void *)b, &text, &len, &err)) < 0 ||
        (r = berth_json_parse(text, len, UNITS_DOC_MAX, &doc, &err)) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: cannot list the containment's units: %s; none was fenced", name,
                   err.message);
        c->failed++;
        return 0;
    }
    units = json_object_get(doc, "units");
    if (!json_is_array(units)) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: the containment's units document has no \"units\" array", name);
        c->failed++;
        return 0;
    }
    if (json_is_true(json_object_get(doc, "truncated")))
        berth_logf(log, BERTH_LOG_WARNING, "backend %s: more than %zu units; only those listed are looked at", name,
                   json_array_size(units));
    for (i = 0; i < json_array_size(units); i++) {
        if (cancelled(s))
            return -ECANCELED;
        if ((r = one_unit(name, b, s, json_array_get(units, i))) < 0)
            return r;
    }
    return 0;
}

/* Whether an earlier backend than @i is bound to the same containment (the
 * same plugin file and config): its units were looked at once already. */
static bool scanned_before(const struct berthd_backend_instance *runtimes, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (runtimes[j].containment && runtimes[j].binding.table.units &&
            json_equal(runtimes[j].containment_identity, runtimes[i].containment_identity))
            return true;
    return false;
}

static bool scans_anything(const struct berthd_backend_instance *runtimes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (runtimes[i].containment && runtimes[i].binding.table.units)
            return true;
    return false;
}

int berthd_fence_units(const struct berthd_backend_instance *runtimes, size_t n, berthd_job_lookup_fn *lookup,
                       void *userdata, bool startup, const atomic_bool *cancel, const struct berth_logger *log,
                       struct berthd_fence_counts *ret)
{
    struct scan s = {.lookup = lookup, .userdata = userdata, .log = log, .cancel = cancel, .startup = startup};
    int r = 0;

    for (size_t i = 0; i < n && r == 0; i++)
        if (cancelled(&s))
            r = -ECANCELED;
        else if (!scanned_before(runtimes, i))
            r = one_backend(&runtimes[i], &s);
    if (s.c.fenced || s.c.failed || (startup && s.c.unaddressable))
        berth_logf(log, s.c.failed ? BERTH_LOG_ERR : BERTH_LOG_NOTICE,
                   "containment recovery: %zu units fenced, %zu not proven gone, %zu without a job id, %zu of live "
                   "jobs kept",
                   s.c.fenced, s.c.failed, s.c.unaddressable, s.c.kept);
    if (ret)
        *ret = s.c;
    return r;
}

int berthd_broker_lookup(void *userdata, const char *run_id, enum berth_job_state *ret_state,
                         struct berth_error *reterr)
{
    return berth_broker_run_state(userdata, run_id, ret_state, reterr);
}

static void *timer_main(void *arg)
{
    struct berthd_fence_timer *t = arg;
    struct timespec at;
    int r;

    pthread_mutex_lock(&t->lock);
    while (!atomic_load(&t->stop)) {
        /* The condition variable waits on CLOCK_MONOTONIC (berthd_fence_timer_start). */
        at = berth_timespec_of_ns(berth_deadline_ns(CLOCK_MONOTONIC, t->interval_ns));
        while (!atomic_load(&t->stop) && pthread_cond_timedwait(&t->cond, &t->lock, &at) == 0)
            ;
        if (atomic_load(&t->stop))
            break;
        pthread_mutex_unlock(&t->lock);
        /* The unit it stopped at is logged; the next scan starts over. */
        r = berthd_fence_units(t->runtimes, t->n, berthd_broker_lookup, t->broker, false, &t->stop, t->log, NULL);
        if (r < 0 && r != -ECANCELED)
            berth_logf(t->log, BERTH_LOG_ERR, "containment scan stopped early: %s", strerror(-r));
        pthread_mutex_lock(&t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int berthd_fence_timer_start(struct berthd_fence_timer *t, struct berth_error *reterr)
{
    pthread_condattr_t ca;
    int r;

    t->started = false;
    atomic_store(&t->stop, false);
    if (!scans_anything(t->runtimes, t->n))
        return 0;
    if ((r = pthread_condattr_init(&ca)) != 0)
        return berth_error_set(reterr, -r, "the containment scan's timer: %s", strerror(r));
    if ((r = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) == 0)
        r = pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (r != 0)
        return berth_error_set(reterr, -r, "the containment scan's timer: %s", strerror(r));
    if ((r = pthread_mutex_init(&t->lock, NULL)) != 0) {
        pthread_cond_destroy(&t->cond);
        return berth_error_set(reterr, -r, "the containment scan's lock: %s", strerror(r));
    }
    if ((r = pthread_create(&t->thread, NULL, timer_main, t)) != 0) {
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        return berth_error_set(reterr, -r, "cannot start the containment scan's thread: %s", strerror(r));
    }
    t->started = true;
    return 0;
}

void berthd_fence_timer_stop(struct berthd_fence_timer *t)
{
    if (!t->started)
        return;
    pthread_mutex_lock(&t->lock);
    atomic_store(&t->stop, true); /* read by the scan between units, without the lock */
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    t->started = false;
}
