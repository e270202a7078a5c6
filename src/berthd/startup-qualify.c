/* SPDX-License-Identifier: MIT */
/*
 * startup-qualify.c -- berthd's own live qualification at startup for the
 * backends configured with "qualify_at_startup": true; see
 * startup-qualify.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"
#include "probes.h"
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

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One backend; nothing to do when it holds a current qualification. */
static void qualify_one(const struct berthd_config *cfg, const struct berth_broker_backend *be,
                        struct berth_journal *journal, const struct berth_signing_key *key, const char *work_dir,
                        const struct berth_logger *log)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct progress_ctx pc = {.logger = log, .backend = be->name};
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *caps = NULL, *probes = NULL, *body = NULL, *env = NULL;
    char id[BERTH_QUALIFICATION_ID_LEN + 1], kernel[256], config_digest[BERTH_DIGEST_BUFSZ],
        probe_sha256[BERTH_DIGEST_BUFSZ] = "";
    const char *sha;
    int64_t expires = 0;
    size_t len = 0;
    bool passed = false;
    int r;

    if (be->ops->capabilities(be->state, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, 64 * 1024, &caps, &err) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: not qualified at startup: %s", be->name, err.message);
        return;
    }
    sha = json_string_value(json_object_get(json_object_get(caps, "runtime"), "sha256"));
    if (!sha || berth_qualification_config_digest(be->config, be->plugin_sha256, caps, config_digest, &err) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: not qualified at startup: %s", be->name,
                   sha ? err.message : "it reports no runtime.sha256");
        return;
    }
    berth_kernel_release(kernel, sizeof(kernel));
    r = berth_qualification_current(journal, be->name, sha, config_digest, kernel, now_ns(), id, &expires, &err);
    if (r == 0) {
        berth_logf(log, BERTH_LOG_INFO, "backend %s: qualified (%s)", be->name, id);
        return;
    }
    if (r != -ENOENT) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: cannot read its qualifications: %s", be->name, err.message);
        return;
    }
    berth_logf(log, BERTH_LOG_NOTICE, "backend %s: no current qualification: running the live probes", be->name);
    {
        const struct berth_qualify_params qp = {
            .backend = be->name,
            .ops = be->ops,
            .state = be->state,
            .probe = cfg->probe ? cfg->probe : BERTH_PROBE_PATH,
            .work_dir = work_dir,
            .progress = progress,
            .userdata = &pc,
        };
        if (berth_qualify_probes(&qp, &probes, &passed, probe_sha256, &err) < 0) {
            berth_logf(log, BERTH_LOG_ERR, "backend %s: cannot run the probes: %s", be->name, err.message);
            return;
        }
    }
    body = berth_qualification_body(cfg->broker_name, be->name, be->plugin, be->plugin_version, config_digest,
                                    probe_sha256, passed, caps, probes, now_ns(), VALIDITY_NS);
    if (!body || berth_qualification_seal(key, body, &env, &err) < 0 ||
        berth_qualification_store(journal, env, &err) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: cannot record its qualification: %s", be->name,
                   body ? err.message : "out of memory");
        return;
    }
    if (passed)
        berth_logf(log, BERTH_LOG_NOTICE, "backend %s: qualified (%s), recorded in the journal", be->name,
                   json_string_value(json_object_get(json_object_get(env, "qualification"), "id")));
    else
        berth_logf(log, BERTH_LOG_ERR, "backend %s: a probe failed: NOT qualified (recorded), it gets no work",
                   be->name);
}

int berthd_qualify_at_startup(const struct berthd_config *cfg, const struct berth_broker_backend *backends,
                              struct berth_journal *journal, const struct berth_signing_key *key,
                              const struct berth_logger *log)
{
    _cleanup_free_ char *work_dir = NULL;
    struct stat st;
    size_t i;
    bool any = false;

    for (i = 0; i < cfg->n_backends; i++)
        any = any || cfg->backends[i].qualify_at_startup;
    if (!any)
        return 0;
    if (asprintf(&work_dir, "%s/qualify", cfg->state_directory) < 0)
        return -ENOMEM;
    if ((mkdir(work_dir, 0700) < 0 && errno != EEXIST) || lstat(work_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & 077)) {
        berth_logf(log, BERTH_LOG_ERR, "%s must be a directory owned by uid %u with mode 0700", work_dir,
                   (unsigned)geteuid());
        return -EPERM;
    }
    for (i = 0; i < cfg->n_backends; i++)
        if (cfg->backends[i].qualify_at_startup)
            qualify_one(cfg, &backends[i], journal, key, work_dir, log);
    return 0;
}
