/* SPDX-License-Identifier: MIT */
/*
 * runrecord.c -- STATE/runs/<run_id>.json, one per run the worker claimed
 * (docs/workers.md, "Leases"): {"offer": berthd's offer, "claim": the
 * signed claim, "started": whether the runtime was asked to start it},
 * written atomically and durably right after berthd recorded the claim,
 * again right before the start, and removed once the run was reported (or
 * fenced), before it is reaped.  A restarted worker finds its runs there
 * and goes on with each only once berthd renewed its lease; a run recorded
 * as started that the runtime does not know any more is reported lost,
 * never started again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <berth/file.h>

#include "canon.h"
#include "enrol.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "worker.h"

#define RECORD_MAX (4 * 1024 * 1024) /* an offer carries the job, its receipt and manifest */

int worker_record_write(struct worker *w, const struct worker_run *run, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = json_pack("{s:O, s:O, s:b}", "offer", run->offer, "claim", run->claim, "started",
                                           run->was_started);
    _cleanup_free_ char *text = NULL, *path = NULL;
    size_t len = 0;
    int r;

    if (!doc || asprintf(&path, "%s/%s.json", w->runs_dir, run->run_id) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = berth_json_serialize(doc, RECORD_MAX, &text, &len, reterr)) < 0)
        return r;
    return berth_publish_path(path, text, len, 0600, BERTH_PUBLISH_REPLACE, reterr);
}

void worker_record_remove(struct worker *w, const char *run_id)
{
    _cleanup_free_ char *path = NULL;

    if (asprintf(&path, "%s/%s.json", w->runs_dir, run_id) < 0)
        return;
    if (unlink(path) < 0 && errno != ENOENT)
        berth_logf(&w->logger, BERTH_LOG_WARNING, "cannot remove %s: %m", path);
}

int worker_records_each(struct worker *w, void (*fn)(struct worker *w, json_t *offer, json_t *claim, bool started))
{
    const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = (uint32_t)geteuid(), .mode_mask = 077, .max_size = RECORD_MAX, .one_link = 1};
    _cleanup_close_ int dfd = -1;
    DIR *dir;
    struct dirent *e;

    dfd = berth_open_trusted(w->runs_dir, O_RDONLY | O_DIRECTORY, 0, NULL);
    if (dfd < 0 || !(dir = fdopendir(dup(dfd))))
        return dfd < 0 ? dfd : -errno;
    while ((e = readdir(dir))) {
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *text = NULL;
        _cleanup_json_ json_t *doc = NULL;
        size_t n = strlen(e->d_name), len = 0;
        char run_id[BERTH_RUN_ID_LEN + 1];

        if (e->d_name[0] == '.' || n < 6 || !streq(e->d_name + n - 5, ".json"))
            continue; /* "." "..", and a temporary file of a write a crash cut short */
        snprintf(run_id, sizeof(run_id), "%.*s", (int)(n - 5), e->d_name);
        if (berth_read_file_at(dfd, e->d_name, &expect, &text, &len, &err) < 0 ||
            berth_json_parse(text, len, RECORD_MAX, &doc, &err) < 0 || !json_is_object(json_object_get(doc, "offer")) ||
            berth_claim_version(json_object_get(doc, "claim")) != 2 ||
            !streq_ptr(json_string_value(json_object_get(json_object_get(doc, "offer"), "run_id")), run_id)) {
            berth_logf(&w->logger, BERTH_LOG_ERR, "%s/%s is damaged and left alone: %s", w->runs_dir, e->d_name,
                       err.message[0] ? err.message : "not a run record");
            continue;
        }
        fn(w, json_incref(json_object_get(doc, "offer")), json_incref(json_object_get(doc, "claim")),
           json_is_true(json_object_get(doc, "started")));
    }
    closedir(dir);
    return 0;
}
