/* SPDX-License-Identifier: MIT */
/* config.c -- berth-worker's configuration; see config.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <berth/file.h>

#include "canon.h"
#include "config.h"
#include "enrol.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

static const char *const members[] = {"client",   "identity", "name",    "plugin_directory", "probe",
                                      "qualify",  "root_cache_bytes",   "runtime", "schema_version",
                                      "slots",    "state_directory",    NULL};

/* An optional absolute path member. */
static int path_member(const json_t *o, const char *key, bool required, const char **ret, struct berth_error *reterr)
{
    int r = berth_json_string_member(o, "worker", key, required, ret, reterr);

    if (r < 0)
        return r;
    if (*ret && ((*ret)[0] != '/' || strlen(*ret) >= PATH_MAX))
        return berth_error_set(reterr, -EBADMSG, "worker.%s must be an absolute path", key);
    return 0;
}

int worker_config_load(const char *path, struct worker_config *ret, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = (uint32_t)geteuid(), .mode_mask = 022, .max_size = BERTH_WORKER_CONFIG_MAX,
        .one_link = 1};
    struct worker_config c = {.slots = 1, .root_cache_bytes = INT64_C(4) << 30, .qualify = true};
    _cleanup_free_ char *text = NULL;
    const json_t *v;
    int64_t version = 0;
    size_t len = 0;
    int r;

    if (!path || path[0] != '/' || !ret)
        return berth_error_set(reterr, -EINVAL, "the configuration must be named by an absolute path");
    if ((r = berth_read_file_at(AT_FDCWD, path, &expect, &text, &len, reterr)) < 0) {
        berth_error_prefix(reterr, "%s", path);
        return r;
    }
    if ((r = berth_json_parse(text, len, BERTH_WORKER_CONFIG_MAX, &c.doc, reterr)) < 0 ||
        (r = berth_json_only_members(c.doc, "worker", members, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, "worker", "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, "worker", "name", true, &c.name, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, "worker", "client", true, &c.client, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, "worker", "identity", true, &c.identity, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, "worker", "slots", false, 1, BERTH_WORKER_SLOTS_MAX, &c.slots, reterr)) <
            0 ||
        (r = berth_json_int_member(c.doc, "worker", "root_cache_bytes", false, 0, (INT64_C(1) << 53) - 1,
                                   &c.root_cache_bytes, reterr)) < 0 ||
        (r = path_member(c.doc, "state_directory", false, &c.state_directory, reterr)) < 0 ||
        (r = path_member(c.doc, "plugin_directory", false, &c.plugin_directory, reterr)) < 0 ||
        (r = path_member(c.doc, "probe", false, &c.probe, reterr)) < 0)
        goto fail;
    if (!berth_worker_name_valid(c.name)) {
        r = berth_error_set(reterr, -EBADMSG, "worker.name must be 1 to 128 of [A-Za-z0-9._-], not all dots");
        goto fail;
    }
    if (c.client[0] != '/' || c.identity[0] != '/') {
        r = berth_error_set(reterr, -EBADMSG, "worker.client and worker.identity must be absolute paths");
        goto fail;
    }
    v = json_object_get(c.doc, "qualify");
    if (v && !json_is_boolean(v)) {
        r = berth_error_set(reterr, -EBADMSG, "worker.qualify must be true or false");
        goto fail;
    }
    c.qualify = !v || json_is_true(v);
    v = json_object_get(c.doc, "runtime");
    c.runtime.name = "runtime";
    if (v && (r = berthd_backend_config_parse(v, "worker.runtime", true, &c.runtime, reterr)) < 0)
        goto fail;
    if (!c.plugin_directory)
        c.plugin_directory = BERTH_PLUGINDIR;
    if (!c.probe)
        c.probe = BERTH_PROBE_PATH;
    *ret = c;
    return 0;
fail:
    berth_error_prefix(reterr, "%s", path);
    json_decref(c.doc);
    return r == -ENOMEM ? r : -EBADMSG;
}

int worker_config_runnable(const struct worker_config *c, struct berth_error *reterr)
{
    if (!c->state_directory)
        return berth_error_set(reterr, -EBADMSG, "worker.state_directory is missing: \"run\" keeps its state there");
    if (!c->runtime.plugin)
        return berth_error_set(reterr, -EBADMSG,
                               "worker.runtime is missing: \"run\" needs a runtime backend such as "
                               "{\"plugin\": \"runtime-oci\", \"config\": {...}}");
    return 0;
}

void worker_config_clear(struct worker_config *c)
{
    json_decref(c->doc);
    memset(c, 0, sizeof(*c));
}
