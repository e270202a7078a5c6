/* SPDX-License-Identifier: MIT */
/*
 * startup-qualify.c -- berthd's own live qualification at startup for the
 * backends configured with "qualify_at_startup": true; see
 * startup-qualify.h.  The sequence itself is berth_qualify_backend()
 * (qualify/qualify.h), the one "berthctl qualify" runs too.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "macro.h"
#include "qualify.h"
#include "reserve.h"
#include "startup-qualify.h"

#define VALIDITY_NS (30LL * 86400LL * 1000000000LL)

struct progress_ctx {
    const struct berth_logger *logger;
    const char *backend;
};

static void progress(void *userdata, const char *name, const char *outcome, const char *detail)
{
    const struct progress_ctx *p = userdata;

    berth_logf(p->logger, streq(outcome, "fail") ? BERTH_LOG_ERR : BERTH_LOG_INFO, "backend %s: probe %s: %s: %s",
               p->backend, name, outcome, detail);
}

/* Called when the backend holds no current qualification, before the probes. */
static void begin(void *userdata, const json_t *caps)
{
    const struct progress_ctx *p = userdata;

    (void)caps;
    berth_logf(p->logger, BERTH_LOG_NOTICE, "backend %s: no current qualification: running the live probes",
               p->backend);
}

/* One backend; nothing to do when it holds a current qualification. */
static void qualify_one(const struct berthd_config *cfg, const struct berthd_backend_config *bc,
                        const struct berthd_backend_instance *runtime, struct berth_journal *journal,
                        const struct berth_signing_key *key, const char *work_dir, const struct berth_logger *log)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct progress_ctx pc = {.logger = log, .backend = bc->name};
    struct berth_qualify_outcome out;
    const struct berth_qualify_backend_params qp = {
        .broker = cfg->broker_name,
        .backend = bc->name,
        .plugin = runtime->plugin,
        .config = bc->config,
        .containment = runtime->containment_identity,
        .containment_ops = runtime->containment ? &runtime->binding.table : NULL,
        .containment_state = runtime->containment ? (void *)&runtime->binding : NULL,
        .probe = cfg->probe ? cfg->probe : BERTH_PROBE_PATH,
        .work_dir = work_dir,
        .key = key,
        .journal = journal,
        .validity_ns = VALIDITY_NS,
        .now_ns = berth_realtime_ns,
        .reuse_current = true,
        .begin = begin,
        .progress = progress,
        .userdata = &pc,
    };

    if (berth_qualify_backend(&qp, &out, &err) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: not qualified at startup: %s", bc->name, err.message);
        return;
    }
    if (out.reused)
        berth_logf(log, BERTH_LOG_INFO, "backend %s: qualified (%s)", bc->name, out.id);
    else if (out.passed)
        berth_logf(log, BERTH_LOG_NOTICE, "backend %s: qualified (%s), recorded in the journal", bc->name, out.id);
    else
        berth_logf(log, BERTH_LOG_ERR, "backend %s: a probe failed: NOT qualified (recorded), it gets no work",
                   bc->name);
    berth_qualify_outcome_clear(&out);
}

int berthd_qualify_at_startup(const struct berthd_config *cfg, const struct berthd_backend_instance *runtimes,
                              struct berth_journal *journal, const struct berth_signing_key *key,
                              const struct berth_logger *log)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *work_dir = NULL;
    size_t i;
    bool any = false;
    int r;

    for (i = 0; i < cfg->n_backends; i++)
        any = any || cfg->backends[i].qualify_at_startup;
    if (!any)
        return 0;
    if ((r = berth_qualify_work_dir(cfg->state_directory, &work_dir, &err)) < 0) {
        if (berth_space_error(r)) {
            /* A full state filesystem: berthd comes up degraded; the backends stay as qualified as they were. */
            berth_logf(log, BERTH_LOG_WARNING, "no startup qualification for lack of space: %s", err.message);
            return 0;
        }
        berth_logf(log, BERTH_LOG_ERR, "%s", err.message);
        return r;
    }
    for (i = 0; i < cfg->n_backends; i++)
        if (cfg->backends[i].qualify_at_startup)
            qualify_one(cfg, &cfg->backends[i], &runtimes[i], journal, key, work_dir, log);
    return 0;
}
