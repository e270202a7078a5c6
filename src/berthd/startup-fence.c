/* SPDX-License-Identifier: MIT */
/*
 * startup-fence.c -- fence and drain the units no job accounts for, before
 * admission opens; see startup-fence.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "canon.h"
#include "jobstore.h"
#include "jsonobj.h"
#include "macro.h"
#include "startup-fence.h"

/* A units() document is at most 4096 entries of well under 1 KiB each. */
#define UNITS_DOC_MAX (8u * 1024 * 1024)

/* Why the unit of @job_id must be fenced (a static string), or NULL when
 * its job is not terminal and the runtime owns it. */
static int fence_reason(struct berth_journal *j, const char *job_id, const char **ret, struct berth_error *reterr)
{
    struct berth_job_record rec = {0};
    int r = berth_jobstore_find_run(j, job_id, &rec, reterr);

    if (r == -ENOENT) {
        *ret = "no journal record";
        return 0;
    }
    if (r < 0)
        return r;
    *ret = berth_job_state_terminal(rec.state) ? berth_job_state_names[rec.state] : NULL;
    berth_job_record_clear(&rec);
    return 0;
}

/* One entry of units(): act on it and count it. */
static int one_unit(const char *backend, const struct berth_containment_binding *b, struct berth_journal *j,
                    const json_t *e, const struct berth_logger *log, struct berthd_fence_counts *c)
{
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
        berth_logf(log, BERTH_LOG_WARNING,
                   "backend %s: unit %s carries no job id berth makes and cannot be fenced through the containment "
                   "plugin; stop and mask it by hand (systemctl mask --now '%s')",
                   backend, unit, unit);
        c->unaddressable++;
        return 0;
    }
    if ((r = fence_reason(j, json_string_value(jid), &why, &err)) < 0) {
        berth_logf(log, BERTH_LOG_ERR, "backend %s: unit %s: %s", backend, unit, err.message);
        return r;
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
               "backend %s: unit %s (%s) could not be proven gone: %s; berthd tries again at its next start "
               "(docs/containment.md, \"When recovery cannot prove a job gone\")",
               backend, unit, why, err.message);
    c->failed++;
    return 0;
}

static int one_backend(const struct berthd_backend_instance *inst, struct berth_journal *j,
                       const struct berth_logger *log, struct berthd_fence_counts *c)
{
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
    for (i = 0; i < json_array_size(units); i++)
        if ((r = one_unit(name, b, j, json_array_get(units, i), log, c)) < 0)
            return r;
    return 0;
}

int berthd_fence_units(const struct berthd_backend_instance *runtimes, size_t n, struct berth_journal *journal,
                       const struct berth_logger *log, struct berthd_fence_counts *ret)
{
    struct berthd_fence_counts c = {0};
    int r = 0;

    for (size_t i = 0; i < n && r == 0; i++)
        r = one_backend(&runtimes[i], journal, log, &c);
    if (c.fenced || c.failed || c.unaddressable)
        berth_logf(log, c.failed ? BERTH_LOG_ERR : BERTH_LOG_NOTICE,
                   "containment recovery: %zu units fenced, %zu not proven gone, %zu without a job id, %zu of live "
                   "jobs kept",
                   c.fenced, c.failed, c.unaddressable, c.kept);
    if (ret)
        *ret = c;
    return r;
}
