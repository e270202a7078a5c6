/* SPDX-License-Identifier: MIT */
/* config.c -- berth-worker's configuration; see config.h. */
#include <errno.h>
#include <fcntl.h>
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

static const char *const members[] = {"client", "identity", "name", "schema_version", NULL};

int worker_config_load(const char *path, struct worker_config *ret, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = (uint32_t)geteuid(), .mode_mask = 022, .max_size = BERTH_WORKER_CONFIG_MAX,
        .one_link = 1};
    struct worker_config c = {0};
    _cleanup_free_ char *text = NULL;
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
        (r = berth_json_string_member(c.doc, "worker", "identity", true, &c.identity, reterr)) < 0)
        goto fail;
    if (!berth_worker_name_valid(c.name)) {
        r = berth_error_set(reterr, -EBADMSG, "worker.name must be 1 to 128 of [A-Za-z0-9._-], not all dots");
        goto fail;
    }
    if (c.client[0] != '/' || c.identity[0] != '/') {
        r = berth_error_set(reterr, -EBADMSG, "worker.client and worker.identity must be absolute paths");
        goto fail;
    }
    *ret = c;
    return 0;
fail:
    berth_error_prefix(reterr, "%s", path);
    json_decref(c.doc);
    return r == -ENOMEM ? r : -EBADMSG;
}

void worker_config_clear(struct worker_config *c)
{
    json_decref(c->doc);
    memset(c, 0, sizeof(*c));
}
