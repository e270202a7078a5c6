/* SPDX-License-Identifier: MIT */
/*
 * selfqual.c -- the worker's own live qualification of its runtime
 * (docs/workers.md, "Qualification"): the sequence berthd and "berthctl
 * qualify" run (qualify.h), with the worker's journal (STATE/journal.db)
 * and signed with the worker's identity, so that berthd can check the
 * record against the key the worker enrolled.  A current one is reused;
 * its signed record is kept in STATE/qualification.json, which every poll
 * carries.  Valid 30 days, as berthd's own.
 *
 * The probes' jobs are the worker's own, their receipts signed by its
 * identity, not by berthd: they run on an instance of the runtime loaded
 * for the qualification alone (before the one that runs berthd's jobs,
 * never beside it), whose configuration trusts the worker's key instead of
 * berthd's as "broker_public_key" (runtime-oci's receipt check).  The
 * record binds the configuration berthd's jobs run with: the key a receipt
 * is checked with is not what the probes qualify.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <berth/file.h>

#include "canon.h"
#include "clock.h"
#include "fsutil.h"
#include "journal.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"
#include "qualify.h"
#include "worker.h"

#define VALIDITY_NS (30LL * 86400LL * 1000000000LL)

static void progress(void *userdata, const char *name, const char *outcome, const char *detail)
{
    struct worker *w = userdata;

    berth_logf(&w->logger, streq(outcome, "fail") ? BERTH_LOG_ERR : BERTH_LOG_INFO, "qualification: probe %s: %s: %s",
               name, outcome, detail);
}

static void begin(void *userdata, const json_t *caps)
{
    struct worker *w = userdata;

    (void)caps;
    berth_logf(&w->logger, BERTH_LOG_NOTICE, "no current qualification of the runtime: running the live probes");
}

/* The kept record @id, or NULL. */
static json_t *kept(struct worker *w, const char *path, const char *id)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = (uint32_t)geteuid(), .mode_mask = 077, .max_size = BERTH_QUALIFICATION_MAX,
        .one_link = 1};
    _cleanup_free_ char *text = NULL;
    json_t *doc = NULL;
    const json_t *body = NULL;
    size_t len = 0;

    if (berth_read_file_at(AT_FDCWD, path, &expect, &text, &len, NULL) < 0 ||
        berth_json_parse(text, len, BERTH_QUALIFICATION_MAX, &doc, NULL) < 0)
        return NULL;
    if (berth_qualification_verify(doc, berth_signing_key_public(w->identity), &body, NULL) < 0 ||
        !streq_ptr(json_string_value(json_object_get(body, "id")), id)) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}

/* The runtime's configuration for the probes: @config with the worker's
 * public key as broker_public_key when it names one (a new reference). */
static json_t *probe_config(struct worker *w, const json_t *config)
{
    char pub[BERTH_PUBLIC_KEY_B64_LEN + 1];
    json_t *c = config ? json_deep_copy(config) : json_object();

    if (c && json_object_get(c, "broker_public_key") &&
        (berth_public_key_to_b64url(berth_signing_key_public(w->identity), pub) < 0 ||
         json_object_set_new(c, "broker_public_key", json_string(pub)) < 0)) {
        json_decref(c);
        return NULL;
    }
    return c;
}

int worker_qualify(struct worker *w)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *journal = NULL;
    _cleanup_free_ char *work_dir = NULL, *db = NULL, *path = NULL, *text = NULL;
    _cleanup_json_ json_t *config = probe_config(w, w->cfg.runtime.config);
    struct berthd_backend_config bc = w->cfg.runtime;
    struct berthd_backend_instance inst = {0};
    struct berth_qualify_outcome out = {0};
    struct berth_qualify_backend_params qp = {
        .broker = w->cfg.name,
        .backend = "runtime",
        .config = w->cfg.runtime.config,
        .probe = w->cfg.probe,
        .key = w->identity,
        .validity_ns = VALIDITY_NS,
        .now_ns = berth_realtime_ns,
        .reuse_current = true,
        .begin = begin,
        .progress = progress,
        .userdata = w,
    };
    size_t len = 0;
    int r;

    json_decref(w->qualification);
    w->qualification = json_null();
    if (!config || asprintf(&db, "%s/journal.db", w->cfg.state_directory) < 0 ||
        asprintf(&path, "%s/qualification.json", w->cfg.state_directory) < 0)
        return -ENOMEM;
    bc.config = config;
    if ((r = berth_qualify_work_dir(w->cfg.state_directory, &work_dir, &err)) < 0 ||
        (r = berth_journal_open(db, BERTH_JOURNAL_CREATE, &journal, &err)) < 0 ||
        (r = berthd_backend_load(w->cfg.plugin_directory, &bc, BERTH_PLUGIN_RUNTIME, &w->logger, &inst, &err)) < 0) {
        berth_logf(&w->logger, BERTH_LOG_ERR, "qualification: %s", err.message);
        berthd_backend_unload(&inst);
        berth_journal_close(journal);
        return 0;
    }
    qp.plugin = inst.plugin;
    qp.containment = inst.containment_identity;
    qp.containment_ops = inst.containment ? &inst.binding.table : NULL;
    qp.containment_state = inst.containment ? (void *)&inst.binding : NULL;
    qp.work_dir = work_dir;
    qp.journal = journal;
    for (int tries = 0; tries < 2; tries++) {
        r = berth_qualify_backend(&qp, &out, &err);
        if (r < 0) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "the runtime is not qualified: %s", err.message);
            break;
        }
        if (out.reused) {
            json_t *doc = kept(w, path, out.id);
            if (doc) {
                json_decref(w->qualification);
                w->qualification = doc;
                berth_logf(&w->logger, BERTH_LOG_INFO, "the runtime is qualified (%s)", out.id);
                break;
            }
            /* Its signed record went missing: run the probes again. */
            qp.reuse_current = false;
            berth_qualify_outcome_clear(&out);
            continue;
        }
        if (!out.passed) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "a probe failed: the runtime is NOT qualified; berthd gives no "
                                                  "work to an unqualified worker unless told otherwise");
            break;
        }
        if (berth_json_serialize(out.envelope, 0, &text, &len, &err) < 0 ||
            berth_publish_path(path, text, len, 0600, BERTH_PUBLISH_REPLACE, &err) < 0)
            berth_logf(&w->logger, BERTH_LOG_WARNING, "cannot keep the qualification in %s: %s", path, err.message);
        json_decref(w->qualification);
        w->qualification = json_incref(out.envelope);
        berth_logf(&w->logger, BERTH_LOG_NOTICE, "the runtime is qualified (%s), until %lld", out.id,
                   (long long)out.expires_ns);
        break;
    }
    berth_qualify_outcome_clear(&out);
    berthd_backend_unload(&inst);
    berth_journal_close(journal);
    return 0;
}
