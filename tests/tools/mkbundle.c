/* SPDX-License-Identifier: MIT */
/*
 * mkbundle.c -- a test tool: write the deny-all config.json (bundle.h) for
 * a job into a bundle directory, so that the tests can hand real bundles to
 * real runtimes (runsc, crun) before the runtime plugin drives them.
 *
 *   mkbundle BUNDLE_DIR JOB.json EFFECTIVE.json
 *            [--input GUEST=HOST]... [--outputs HOST_DIR] [--nproc N] [--pids N]
 *
 * --outputs names the host directory (a bounded tmpfs the caller mounted)
 * bound at /tmp/outputs; a job with room for outputs needs it (bundle.h).
 * The root filesystem is BUNDLE_DIR/rootfs ("rootfs" in config.json).
 * Exit status 0, or 1 with one line on standard error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bundle.h"
#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

static int die(const char *what, const char *detail)
{
    fprintf(stderr, "mkbundle: %s: %s\n", what, detail);
    return 1;
}

static json_t *load(const char *path, struct berth_error *err)
{
    static const struct berth_file_expect any = {.uid = BERTH_UID_ANY, .max_size = 1 << 20};
    _cleanup_free_ char *text = NULL;
    json_t *doc = NULL;
    size_t len = 0;

    if (berth_read_file_at(AT_FDCWD, path, &any, &text, &len, err) < 0 ||
        berth_json_parse(text, len, 1 << 20, &doc, err) < 0)
        return NULL;
    return doc;
}

int main(int argc, char **argv)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_bundle_input inputs[16];
    struct berth_bundle_params p = {.rootfs = "rootfs"};
    _cleanup_json_ json_t *jobdoc = NULL, *effective = NULL, *config = NULL;
    struct berth_job *job = NULL;
    int i, dirfd, r;

    if (argc < 4)
        return die("usage", "mkbundle BUNDLE_DIR JOB.json EFFECTIVE.json [--input GUEST=HOST]... "
                            "[--outputs HOST_DIR] [--nproc N] [--pids N]");
    for (i = 4; i < argc; i++) {
        if (streq(argv[i], "--nproc") && i + 1 < argc)
            p.nproc = strtoull(argv[++i], NULL, 10);
        else if (streq(argv[i], "--pids") && i + 1 < argc)
            p.pids_ceiling = strtoull(argv[++i], NULL, 10);
        else if (streq(argv[i], "--outputs") && i + 1 < argc)
            p.outputs_dir = argv[++i];
        else if (streq(argv[i], "--input") && i + 1 < argc && p.n_inputs < 16 && strchr(argv[i + 1], '=')) {
            char *eq = strchr(argv[++i], '=');
            *eq = '\0';
            inputs[p.n_inputs++] = (struct berth_bundle_input){argv[i], eq + 1};
        } else
            return die("usage", argv[i]);
    }
    p.inputs = inputs;
    if (!(jobdoc = load(argv[2], &err)) || berth_job_from_json(jobdoc, &job, &err) < 0)
        return die(argv[2], err.message);
    if (!(effective = load(argv[3], &err)))
        return die(argv[3], err.message);
    p.job = job;
    p.effective = effective;
    r = berth_bundle_config(&p, &config, &err);
    if (r < 0) {
        berth_job_free(job);
        return die("config", err.message);
    }
    dirfd = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        berth_job_free(job);
        return die(argv[1], strerror(errno));
    }
    r = berth_bundle_write(dirfd, config, &err);
    close(dirfd);
    berth_job_free(job);
    return r < 0 ? die("config.json", err.message) : 0;
}
