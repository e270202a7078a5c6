/* SPDX-License-Identifier: MIT */
/* binding.c -- receipt and config.json binding of a container; see binding.h. */
#include <errno.h>
#include <string.h>

#include "binding.h"
#include "bundle.h"
#include "canon.h"
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

int oci_binding_config(const json_t *dispatch, const struct berth_job *job, const json_t *params, json_t **ret,
                       struct berth_error *reterr)
{
    struct berth_bundle_params bp = {.job = job};
    int64_t uid = 0, gid = 0, nproc = 0, pids = 0;
    int r;

    if (!json_is_object(params))
        return berth_error_set(reterr, -EBADMSG, WHAT " missing");
    if ((r = berth_json_int_member(params, WHAT, "uid", true, 1, 0xfffffffe, &uid, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "gid", true, 1, 0xfffffffe, &gid, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "nproc", true, 0, INT64_MAX, &nproc, reterr)) < 0 ||
        (r = berth_json_int_member(params, WHAT, "pids_ceiling", true, 0, INT64_MAX, &pids, reterr)) < 0 ||
        (r = berth_json_string_member(params, WHAT, "cgroups_path", true, &bp.cgroups_path, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
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
