/* SPDX-License-Identifier: MIT */
/* qualify.c -- one backend's qualification, start to end; see qualify.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "probes.h"
#include "qualify.h"

#define CAPABILITIES_MAX (64 * 1024)

void berth_qualify_outcome_clear(struct berth_qualify_outcome *o)
{
    if (!o)
        return;
    json_decref(o->probes);
    json_decref(o->envelope);
    memset(o, 0, sizeof(*o));
}

/* Steps 1 and 2: the capabilities, which must name the runtime binary and the
 * isolation, and the config digest. */
static int read_capabilities(const struct berth_qualify_backend_params *p, const struct berth_runtime_ops_v1 *ops,
                             json_t **ret_caps, char config_digest[BERTH_DIGEST_BUFSZ], struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    _cleanup_json_ json_t *caps = NULL;
    size_t len = 0;
    int r;

    if ((r = ops->capabilities(berth_plugin_state(p->plugin), &text, &len, reterr)) < 0 ||
        (r = berth_json_parse(text, len, CAPABILITIES_MAX, &caps, reterr)) < 0) {
        berth_error_prefix(reterr, "capabilities");
        return r;
    }
    if (!json_is_object(caps))
        return berth_error_set(reterr, -EBADMSG, "capabilities: not a JSON object");
    if (!json_is_string(json_object_get(json_object_get(caps, "runtime"), "sha256")) ||
        !json_is_string(json_object_get(caps, "isolation")))
        return berth_error_set(reterr, -EBADMSG,
                               "capabilities: no runtime.sha256 and isolation: only runtimes that name their binary "
                               "can be qualified");
    /* A backend that cannot take jobs now (plugin.h, "unavailable") would
     * fail every probe for a reason that has nothing to do with its
     * isolation: nothing is run and nothing recorded. */
    if (json_is_string(json_object_get(caps, "unavailable"))) {
        const char *detail = json_string_value(json_object_get(json_object_get(caps, "containment"), "error"));
        return berth_error_set(reterr, -EAGAIN, "capabilities: the backend is unavailable (%s%s%s): it cannot be "
                               "qualified now",
                               json_string_value(json_object_get(caps, "unavailable")), detail ? ": " : "",
                               detail ? detail : "");
    }
    if ((r = berth_qualification_config_digest(p->config, berth_plugin_get_info(p->plugin)->sha256, caps,
                                               p->containment, config_digest, reterr)) < 0)
        return r;
    *ret_caps = TAKE_PTR(caps);
    return 0;
}

int berth_qualify_backend(const struct berth_qualify_backend_params *p, struct berth_qualify_outcome *ret,
                          struct berth_error *reterr)
{
    const struct berth_runtime_ops_v1 *ops = p && p->plugin ? berth_plugin_runtime_ops(p->plugin) : NULL;
    const struct berth_plugin_info *info = p && p->plugin ? berth_plugin_get_info(p->plugin) : NULL;
    struct berth_qualify_outcome out = {0};
    _cleanup_json_ json_t *caps = NULL, *body = NULL;
    char config_digest[BERTH_DIGEST_BUFSZ], probe_sha256[BERTH_DIGEST_BUFSZ] = "";
    int64_t now;
    int r;

    if (ret)
        memset(ret, 0, sizeof(*ret));
    if (!ops || !info || !ret || !p->broker || !p->backend || !p->probe || !p->work_dir || !p->key || !p->journal ||
        !p->now_ns || p->validity_ns <= 0)
        return berth_error_set(reterr, -EINVAL, "invalid argument");

    if ((r = read_capabilities(p, ops, &caps, config_digest, reterr)) < 0)
        return r;

    /* Step 3: nothing to do while a current qualification holds. */
    if (p->reuse_current) {
        char kernel[256];
        const char *sha = json_string_value(json_object_get(json_object_get(caps, "runtime"), "sha256"));

        berth_kernel_release(kernel, sizeof(kernel));
        r = berth_qualification_current(p->journal, p->backend, sha, config_digest, kernel, p->now_ns(), out.id,
                                        &out.expires_ns, reterr);
        if (r == 0) {
            out.reused = out.passed = true;
            *ret = out;
            return 0;
        }
        if (r != -ENOENT) {
            berth_error_prefix(reterr, "cannot read its qualifications");
            return r;
        }
    }

    /* Step 4: the probes. */
    if (p->begin)
        p->begin(p->userdata, caps);
    {
        const struct berth_qualify_params qp = {
            .backend = p->backend,
            .ops = ops,
            .state = berth_plugin_state(p->plugin),
            .probe = p->probe,
            .work_dir = p->work_dir,
            .progress = p->progress,
            .userdata = p->userdata,
            .key = p->key,
            .broker = p->broker,
            .containment = p->containment_ops,
            .containment_state = p->containment_state,
        };
        if ((r = berth_qualify_probes(&qp, &out.probes, &out.passed, probe_sha256, reterr)) < 0) {
            berth_error_prefix(reterr, "cannot run the probes");
            return r;
        }
    }

    /* Steps 5 and 6: the record, failed runs too. */
    now = p->now_ns();
    if (now < 0)
        return berth_error_set(reterr, (int)now, "cannot read the clock for qualified_at");
    body = berth_qualification_body(p->broker, p->backend, info->name, info->version, config_digest, probe_sha256,
                                    out.passed, caps, out.probes, now, p->validity_ns);
    if (!body)
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    else if ((r = berth_qualification_seal(p->key, body, &out.envelope, reterr)) == 0)
        r = berth_qualification_store(p->journal, out.envelope, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "cannot record the qualification");
        berth_qualify_outcome_clear(&out);
        return r;
    }
    snprintf(out.id, sizeof(out.id), "%s",
             json_string_value(json_object_get(json_object_get(out.envelope, "qualification"), "id")));
    out.expires_ns = now + p->validity_ns;
    *ret = out;
    return 0;
}

int berth_qualify_work_dir(const char *state_directory, char **ret_path, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFDIR,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 077,
        .mode = 0,
    };
    _cleanup_free_ char *path = NULL;
    _cleanup_close_ int dfd = -1, fd = -1;
    int r;

    if (!state_directory || state_directory[0] != '/' || !ret_path)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (asprintf(&path, "%s/qualify", state_directory) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* Created and opened inside the state directory, never through a symlink. */
    dfd = berth_open_trusted(state_directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dfd < 0)
        return dfd;
    if (mkdirat(dfd, "qualify", 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s: %s", path, strerror(errno));
    fd = berth_open_beneath(dfd, "qualify", O_RDONLY | O_DIRECTORY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    r = fd < 0 ? fd : berth_file_check(fd, path, &expect, NULL, reterr);
    if (r == -ENOTDIR || r == -EBADFD || r == -EPERM)
        return berth_error_set(reterr, -EPERM, "%s must be a directory owned by uid %u with mode 0700", path,
                               (unsigned)geteuid());
    if (r < 0)
        return r;
    *ret_path = TAKE_PTR(path);
    return 0;
}
