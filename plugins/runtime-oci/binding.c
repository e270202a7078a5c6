/* SPDX-License-Identifier: MIT */
/* binding.c -- receipt and config.json binding of a container; see binding.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binding.h"
#include "bundle.h"
#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "receipt.h"

#define WHAT "bundle_params"

int oci_binding_verify(const json_t *dispatch, const struct berth_job *job, const uint8_t *pub,
                       struct berth_error *reterr)
{
    const json_t *env = json_object_get(dispatch, "receipt"), *body = NULL;
    const char *run_id;
    int r;

    if (!json_is_object(env) || !job)
        return berth_error_set(reterr, -EBADMSG, "the dispatch document has no receipt");
    run_id = json_string_value(json_object_get(json_object_get(env, "receipt"), "run_id"));
    if (!pub)
        return run_id ? 0 : berth_error_set(reterr, -EBADMSG, "the receipt names no run id");
    r = berth_receipt_verify(env, pub, job, &body, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "receipt rejected (broker_public_key)");
        return r == -ENOMEM ? r : -EKEYREJECTED;
    }
    if (!run_id || !streq(run_id, json_string_value(json_object_get(body, "run_id"))))
        return berth_error_set(reterr, -EKEYREJECTED, "receipt rejected: it names another run id");
    return 0;
}

#define MAX_INPUTS BERTH_JOB_MAX_INPUTS

/* The inputs of @job as staged in the dispatch's inputs_dir: file i is job.inputs[i]. */
struct inputs {
    struct berth_bundle_input list[MAX_INPUTS];
    char paths[MAX_INPUTS][4096];
    size_t n;
};

static int staged_inputs(const json_t *dispatch, const struct berth_job *job, struct inputs *in,
                         struct berth_error *reterr)
{
    const json_t *list = json_object_get(job->doc, "inputs"), *v;
    const char *dir = json_string_value(json_object_get(dispatch, "inputs_dir"));
    size_t i;

    in->n = 0;
    if (json_array_size(list) == 0)
        return 0;
    if (!dir || dir[0] != '/' || strlen(dir) > 4000)
        return berth_error_set(reterr, -EBADMSG, "the job has inputs but the dispatch names no absolute inputs_dir");
    if (json_array_size(list) > MAX_INPUTS)
        return berth_error_set(reterr, -EBADMSG, "more than %d inputs", MAX_INPUTS);
    json_array_foreach(list, i, v)
    {
        snprintf(in->paths[i], sizeof(in->paths[i]), "%s/%zu", dir, i);
        in->list[i] = (struct berth_bundle_input){json_string_value(json_object_get(v, "path")), in->paths[i]};
    }
    in->n = json_array_size(list);
    return 0;
}

int oci_binding_config(const json_t *dispatch, const struct berth_job *job, const json_t *params, json_t **ret,
                       struct berth_error *reterr)
{
    struct berth_bundle_params bp = {.job = job};
    int64_t uid = 0, gid = 0, nproc = 0, pids = 0;
    _cleanup_free_ struct inputs *in = calloc(1, sizeof(*in));
    int r;

    if (!in)
        return berth_error_set(reterr, -ENOMEM, "out of memory");

    if (!json_is_object(params))
        return berth_error_set(reterr, -EBADMSG, WHAT " missing");
    if ((r = berth_json_int_member(params, WHAT, "uid", true, 1, 0xfffffffe, &uid, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "gid", true, 1, 0xfffffffe, &gid, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "nproc", true, 0, INT64_MAX, &nproc, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "pids_ceiling", true, 0, INT64_MAX, &pids, reterr)) < 0 ||
        (r = berth_json_string_member(params, WHAT, "cgroups_path", false, &bp.cgroups_path, reterr)) < 0 ||
        (r = berth_json_string_member(params, WHAT, "outputs_dir", false, &bp.outputs_dir, reterr)) < 0 ||
        (r = berth_json_string_member(params, WHAT, "slot_init", false, &bp.slot_init, reterr)) < 0 ||
        (r = staged_inputs(dispatch, job, in, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    bp.inputs = in->list;
    bp.n_inputs = in->n;
    bp.uid = (uint32_t)uid;
    bp.gid = (uint32_t)gid;
    bp.nproc = (uint64_t)nproc;
    bp.pids_ceiling = (uint64_t)pids;
    bp.effective = json_object_get(dispatch, "effective");
    bp.rootfs = json_string_value(json_object_get(dispatch, "rootfs"));
    r = berth_bundle_config(&bp, ret, reterr);
    if (r == -EPROTONOSUPPORT || r == -EINVAL)
        r = -EBADMSG; /* this job cannot run here, now or later */
    return r;
}

int oci_binding_check_inputs(const json_t *dispatch, const struct berth_job *job, struct berth_error *reterr)
{
    const json_t *list = json_object_get(job->doc, "inputs"), *v;
    const char *dir = json_string_value(json_object_get(dispatch, "inputs_dir"));
    _cleanup_close_ int dirfd = -1;
    struct stat st;
    size_t i;
    int r;

    if (json_array_size(list) == 0)
        return 0;
    if (!dir || dir[0] != '/')
        return berth_error_set(reterr, -EBADMSG, "the job has inputs but the dispatch names no absolute inputs_dir");
    dirfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dirfd < 0)
        return dirfd == -ENOENT || dirfd == -ELOOP || dirfd == -ENOTDIR ? -EBADMSG : dirfd;
    {
        const struct berth_file_expect private_dir = {.type = S_IFDIR, .uid = geteuid(), .mode_mask = 077};
        if ((r = berth_file_check(dirfd, dir, &private_dir, NULL, reterr)) < 0)
            return r == -ENOMEM ? r : -EBADMSG;
    }
    json_array_foreach(list, i, v)
    {
        const struct berth_file_expect staged = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 0222, .one_link = 1};
        int64_t size = json_integer_value(json_object_get(json_object_get(v, "ref"), "size"));
        char name[24];
        _cleanup_close_ int fd = -1;

        snprintf(name, sizeof(name), "%zu", i);
        /* O_PATH: nothing but a regular file is opened for reading, ever. */
        fd = berth_open_beneath(dirfd, name, O_PATH | O_NOFOLLOW, 0, reterr);
        if (fd < 0) {
            berth_error_prefix(reterr, "staged input %zu", i);
            return fd == -ENOMEM ? fd : -EBADMSG;
        }
        if ((r = berth_file_check(fd, name, &staged, &st, reterr)) < 0) {
            berth_error_prefix(reterr, "staged input %zu in %s", i, dir);
            return r == -ENOMEM ? r : -EBADMSG;
        }
        if (st.st_size != size)
            return berth_error_set(reterr, -EBADMSG, "staged input %zu in %s is %lld bytes; job.inputs[%zu] says %lld",
                                   i, dir, (long long)st.st_size, i, (long long)size);
    }
    return 0;
}

int oci_binding_check_config(const json_t *dispatch, const struct berth_job *job, const json_t *params,
                             const char *config_text, size_t len, struct berth_error *reterr)
{
    _cleanup_json_ json_t *want = NULL, *have = NULL;
    _cleanup_free_ char *text = NULL;
    size_t want_len = 0;
    const char *key;
    json_t *v;
    int r;

    if ((r = oci_binding_config(dispatch, job, params, &want, reterr)) < 0 ||
        (r = berth_json_serialize(want, 0, &text, &want_len, reterr)) < 0)
        return r;
    if (want_len == len && memcmp(text, config_text, len) == 0)
        return 0;
    /* Say where: the first top-level member that differs (or "the encoding"). */
    have = json_loadb(config_text, len, JSON_REJECT_DUPLICATES, NULL);
    json_object_foreach(want, key, v)
    {
        if (!have || !json_equal(v, json_object_get(have, key)))
            return berth_error_set(reterr, -EPERM, "config.json differs from the deny-all spec rebuilt from the "
                                                   "sealed job in \"%s\"", key);
    }
    return berth_error_set(reterr, -EPERM, "config.json is not the deny-all spec rebuilt from the sealed job");
}

/* ------------------------------------------------------------------------- */
/* warm slots                                                                 */

static const char *const slot_members[] = {
    "effective", "image", "limits", "not_after", "pool", "rootfs", "schema_version", "slot_id", NULL,
};

int oci_binding_slot(const json_t *slot, struct berth_job **ret_job, json_t **ret_dispatch, int64_t *ret_not_after,
                     struct berth_error *reterr)
{
    const char *id = NULL, *pool = NULL, *image = NULL, *rootfs = NULL;
    const json_t *effective = json_object_get(slot, "effective"), *limits = json_object_get(slot, "limits");
    _cleanup_json_ json_t *job_doc = NULL, *dispatch = NULL;
    struct berth_limits parsed;
    struct berth_job *job = NULL;
    int64_t version = 0, not_after = 0;
    int r;

    if (!json_is_object(slot))
        return berth_error_set(reterr, -EBADMSG, "a slot document is a JSON object");
    if ((r = berth_json_only_members(slot, "slot", slot_members, reterr)) < 0 ||
        (r = berth_json_int_member(slot, "slot", "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_string_member(slot, "slot", "slot_id", true, &id, reterr)) < 0 ||
        (r = berth_json_string_member(slot, "slot", "pool", true, &pool, reterr)) < 0 ||
        (r = berth_json_string_member(slot, "slot", "image", true, &image, reterr)) < 0 ||
        (r = berth_json_string_member(slot, "slot", "rootfs", true, &rootfs, reterr)) < 0 ||
        (r = berth_limits_parse(limits, "slot.limits", &parsed, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    if (!json_is_object(effective))
        return berth_error_set(reterr, -EBADMSG, "slot.effective must be an object (the effective manifest)");
    if (rootfs[0] != '/')
        return berth_error_set(reterr, -EBADMSG, "slot.rootfs must be an absolute path (the staged root)");
    if (berth_json_ns_value(json_object_get(slot, "not_after"), &not_after) < 0)
        return berth_error_set(reterr, -EBADMSG, "slot.not_after must be a nanosecond string");
    /* The job its bundle is built for: the slot's own, running berth-slot-init. */
    job_doc = json_pack("{s:i, s:s, s:s, s:s, s:[s], s:[], s:[], s:O}", "schema_version", 1, "id", id, "pool", pool,
                        "image", image, "argv", BERTH_BUNDLE_SLOT_INIT, "inputs", "outputs", "limits", limits);
    dispatch = json_pack("{s:O, s:s}", "effective", effective, "rootfs", rootfs);
    if (!job_doc || !dispatch)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = berth_job_from_json(job_doc, &job, reterr)) < 0) {
        berth_error_prefix(reterr, "slot");
        return r == -ENOMEM ? r : -EBADMSG;
    }
    *ret_job = job;
    *ret_dispatch = TAKE_PTR(dispatch);
    if (ret_not_after)
        *ret_not_after = not_after;
    return 0;
}

int oci_binding_slot_match(const json_t *slot, const json_t *dispatch, const struct berth_job *job,
                           struct berth_error *reterr)
{
    const char *differs = NULL;

    if (!json_equal(json_object_get(slot, "effective"), json_object_get(dispatch, "effective")))
        differs = "effective manifest";
    else if (!streq_ptr(json_string_value(json_object_get(slot, "image")), job->image))
        differs = "image";
    else if (!json_equal(json_object_get(slot, "limits"), json_object_get(job->doc, "limits")))
        differs = "limits";
    else if (!streq_ptr(json_string_value(json_object_get(slot, "pool")), job->pool))
        differs = "pool";
    else if (!streq_ptr(json_string_value(json_object_get(slot, "rootfs")),
                        json_string_value(json_object_get(dispatch, "rootfs"))))
        differs = "staged root";
    if (differs)
        return berth_error_set(reterr, -ESTALE, "the slot was provisioned for another %s", differs);
    if (json_array_size(json_object_get(job->doc, "inputs")) > 0)
        return berth_error_set(reterr, -ESTALE, "a job with inputs cannot run in a warm slot");
    return 0;
}
