/* SPDX-License-Identifier: MIT */
/* job.c -- sealed job documents; see job.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "enrol.h"
#include "job.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "pool.h"

#define MAX_ARGV 256
#define MAX_ARGV_BYTES (64 * 1024)
#define MAX_INPUTS BERTH_JOB_MAX_INPUTS
#define MAX_OUTPUTS BERTH_JOB_MAX_OUTPUTS

static const char *const job_members[] = {
    "argv", "id", "image", "inputs", "limits", "outputs", "overrides", "pool", "schema_version", NULL,
};
static const char *const limit_members[] = {
    "artifact_bytes", "cpu_millis", "memory_bytes", "output_bytes", "pids", "scratch_bytes", "wall_time_ns", NULL,
};
static const char *const input_members[] = {"path", "ref", NULL};
static const char *const ref_members[] = {"digest", "size", NULL};
static const char *const output_members[] = {"id", "max_bytes", "media_type", "path", NULL};

int berth_limits_parse(const json_t *obj, const char *what, struct berth_limits *ret, struct berth_error *reterr)
{
    struct berth_limits l = {0};
    int r;

    if ((r = berth_json_only_members(obj, what, limit_members, reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "cpu_millis", true, 1, BERTH_LIMIT_CPU_MILLIS_MAX, &l.cpu_millis,
                                   reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "memory_bytes", true, 1024 * 1024, BERTH_LIMIT_MEMORY_BYTES_MAX,
                                   &l.memory_bytes, reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "pids", true, 1, BERTH_LIMIT_PIDS_MAX, &l.pids, reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "scratch_bytes", true, 4096, BERTH_LIMIT_SCRATCH_BYTES_MAX,
                                   &l.scratch_bytes, reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "wall_time_ns", true, 1000000, BERTH_LIMIT_WALL_TIME_NS_MAX,
                                   &l.wall_time_ns, reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "output_bytes", true, 1, BERTH_LIMIT_OUTPUT_BYTES_MAX, &l.output_bytes,
                                   reterr)) < 0 ||
        (r = berth_json_int_member(obj, what, "artifact_bytes", true, 0, BERTH_LIMIT_ARTIFACT_BYTES_MAX,
                                   &l.artifact_bytes, reterr)) < 0)
        return r;
    *ret = l;
    return 0;
}

bool berth_limits_within(const struct berth_limits *l, const struct berth_limits *ceiling, const char **ret_name)
{
    const struct {
        const char *name;
        int64_t v, max;
    } pairs[] = {
        {"cpu_millis", l->cpu_millis, ceiling->cpu_millis},
        {"memory_bytes", l->memory_bytes, ceiling->memory_bytes},
        {"pids", l->pids, ceiling->pids},
        {"scratch_bytes", l->scratch_bytes, ceiling->scratch_bytes},
        {"wall_time_ns", l->wall_time_ns, ceiling->wall_time_ns},
        {"output_bytes", l->output_bytes, ceiling->output_bytes},
        {"artifact_bytes", l->artifact_bytes, ceiling->artifact_bytes},
    };
    size_t i;

    for (i = 0; i < ELEMENTSOF(pairs); i++)
        if (pairs[i].v > pairs[i].max) {
            if (ret_name)
                *ret_name = pairs[i].name;
            return false;
        }
    return true;
}

/* An absolute guest path strictly below @prefix (which ends in "/"). */
static bool path_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    return path && strncmp(path, prefix, n) == 0 && path[n] != '\0' && berth_guest_path_valid(path);
}

static int check_argv(const json_t *argv, struct berth_error *reterr)
{
    size_t i, total = 0;
    json_t *v;

    if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > MAX_ARGV)
        return berth_error_set(reterr, -EBADMSG, "job.argv must list 1 to %d strings", MAX_ARGV);
    json_array_foreach(argv, i, v)
    {
        if (!json_is_string(v))
            return berth_error_set(reterr, -EBADMSG, "job.argv[%zu] must be a string", i);
        total += json_string_length(v) + 1;
    }
    if (json_string_length(json_array_get(argv, 0)) == 0)
        return berth_error_set(reterr, -EBADMSG, "job.argv[0] must not be empty");
    if (total > MAX_ARGV_BYTES)
        return berth_error_set(reterr, -EBADMSG, "job.argv is %zu bytes, more than %d", total, MAX_ARGV_BYTES);
    return 0;
}

static int check_inputs(const json_t *inputs, struct berth_error *reterr)
{
    char what[48];
    size_t i, k;
    json_t *in;
    int r;

    if (!json_is_array(inputs) || json_array_size(inputs) > MAX_INPUTS)
        return berth_error_set(reterr, -EBADMSG, "job.inputs must be an array of at most %d inputs", MAX_INPUTS);
    json_array_foreach(inputs, i, in)
    {
        const json_t *ref = json_object_get(in, "ref");
        const char *path = NULL, *digest = NULL;
        int64_t size = 0;
        uint8_t raw[BERTH_SHA256_LEN];

        snprintf(what, sizeof(what), "job.inputs[%zu]", i);
        if ((r = berth_json_only_members(in, what, input_members, reterr)) < 0 ||
            (r = berth_json_string_member(in, what, "path", true, &path, reterr)) < 0)
            return r;
        if (!path_under(path, "/inputs/"))
            return berth_error_set(reterr, -EBADMSG, "%s.path must be a path under /inputs/", what);
        for (k = 0; k < i; k++)
            if (streq(json_string_value(json_object_get(json_array_get(inputs, k), "path")), path))
                return berth_error_set(reterr, -EBADMSG, "%s.path repeats %s", what, path);
        snprintf(what, sizeof(what), "job.inputs[%zu].ref", i);
        if ((r = berth_json_only_members(ref, what, ref_members, reterr)) < 0 ||
            (r = berth_json_string_member(ref, what, "digest", true, &digest, reterr)) < 0 ||
            (r = berth_json_int_member(ref, what, "size", true, 0, BERTH_LIMIT_ARTIFACT_BYTES_MAX, &size, reterr)) < 0)
            return r;
        if (berth_digest_parse(digest, raw) < 0)
            return berth_error_set(reterr, -EBADMSG, "%s.digest must be sha256:<64 lowercase hex>", what);
    }
    return 0;
}

static int check_outputs(const json_t *outputs, int64_t artifact_bytes, struct berth_error *reterr)
{
    char what[48];
    size_t i, k;
    json_t *out;
    int r;

    if (!json_is_array(outputs) || json_array_size(outputs) > MAX_OUTPUTS)
        return berth_error_set(reterr, -EBADMSG, "job.outputs must be an array of at most %d outputs", MAX_OUTPUTS);
    json_array_foreach(outputs, i, out)
    {
        const char *id = NULL, *path = NULL, *media = NULL;
        int64_t max = 0;

        snprintf(what, sizeof(what), "job.outputs[%zu]", i);
        if ((r = berth_json_only_members(out, what, output_members, reterr)) < 0 ||
            (r = berth_json_string_member(out, what, "id", true, &id, reterr)) < 0 ||
            (r = berth_json_string_member(out, what, "path", true, &path, reterr)) < 0 ||
            (r = berth_json_string_member(out, what, "media_type", true, &media, reterr)) < 0 ||
            (r = berth_json_int_member(out, what, "max_bytes", true, 1, BERTH_LIMIT_ARTIFACT_BYTES_MAX, &max, reterr)) <
                0)
            return r;
        if (!berth_job_id_valid(id))
            return berth_error_set(reterr, -EBADMSG, "%s.id must be 1 to 128 of [A-Za-z0-9._-], not all dots", what);
        if (!path_under(path, "/tmp/outputs/"))
            return berth_error_set(reterr, -EBADMSG, "%s.path must be a path under /tmp/outputs/", what);
        if (!berth_media_type_valid(media))
            return berth_error_set(reterr, -EBADMSG, "%s.media_type must be " BERTH_MEDIA_TYPE_RULE, what);
        if (max > artifact_bytes)
            return berth_error_set(reterr, -EBADMSG, "%s.max_bytes is more than limits.artifact_bytes", what);
        for (k = 0; k < i; k++) {
            const json_t *o = json_array_get(outputs, k);
            if (streq(json_string_value(json_object_get(o, "id")), id) ||
                streq(json_string_value(json_object_get(o, "path")), path))
                return berth_error_set(reterr, -EBADMSG, "%s repeats the id or path of job.outputs[%zu]", what, k);
        }
    }
    return 0;
}

int berth_job_from_json(const json_t *doc, struct berth_job **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *copy = NULL;
    const json_t *v;
    struct berth_job *job;
    int64_t version = 0;
    uint8_t raw[BERTH_SHA256_LEN];
    int r;

    if (!doc || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    job = calloc(1, sizeof(*job));
    if (!job || !(copy = json_deep_copy(doc))) {
        free(job);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    job->doc = TAKE_PTR(copy);
    doc = job->doc;
    if ((r = berth_json_only_members(doc, "job", job_members, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "job", "schema_version", true, 0, BERTH_JSON_MAX_INTEGER, &version, reterr)) <
            0 ||
        (r = berth_json_string_member(doc, "job", "id", true, &job->id, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "job", "pool", true, &job->pool, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "job", "image", true, &job->image, reterr)) < 0)
        goto fail;
    r = -EBADMSG;
    if (version != BERTH_JOB_SCHEMA_VERSION) {
        berth_error_set(reterr, r, "job.schema_version must be %d", BERTH_JOB_SCHEMA_VERSION);
        goto fail;
    }
    if (!berth_job_id_valid(job->id)) {
        berth_error_set(reterr, r, "job.id must be 1 to 128 of [A-Za-z0-9._-], not all dots");
        goto fail;
    }
    if (!berth_pool_name_valid(job->pool)) {
        berth_error_set(reterr, r, "job.pool must name a pool (" BERTH_POOL_NAME_RULE ")");
        goto fail;
    }
    if (berth_digest_parse(job->image, raw) < 0) {
        berth_error_set(reterr, r, "job.image must be an OCI manifest digest, sha256:<64 lowercase hex>");
        goto fail;
    }
    job->overrides = json_object_get(doc, "overrides");
    if (job->overrides && !json_is_object(job->overrides)) {
        berth_error_set(reterr, r, "job.overrides must be an object");
        goto fail;
    }
    if ((r = check_argv(json_object_get(doc, "argv"), reterr)) < 0)
        goto fail;
    if ((r = berth_limits_parse(json_object_get(doc, "limits"), "job.limits", &job->limits, reterr)) < 0)
        goto fail;
    if ((v = json_object_get(doc, "inputs")) && (r = check_inputs(v, reterr)) < 0)
        goto fail;
    if ((v = json_object_get(doc, "outputs")) && (r = check_outputs(v, job->limits.artifact_bytes, reterr)) < 0)
        goto fail;
    if ((r = berth_digest_json(doc, job->digest, reterr)) < 0)
        goto fail;
    *ret = job;
    return 0;
fail:
    berth_job_free(job);
    return r == -ENOMEM ? r : -EBADMSG;
}

int berth_job_parse(const char *json, size_t len, struct berth_job **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    int r;

    r = berth_json_parse(json, len, BERTH_JOB_MAX, &doc, reterr);
    if (r < 0)
        return r;
    return berth_job_from_json(doc, ret, reterr);
}

void berth_job_free(struct berth_job *job)
{
    if (!job)
        return;
    json_decref(job->doc);
    free(job);
}
