/* SPDX-License-Identifier: MIT */
/* devinit.c -- berthctl dev-init: a complete local installation for trying berth (devinit.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "canon.h"
#include "devinit.h"
#include "jsonobj.h"
#include "macro.h"

/*
 * What a successful run prints, in a malloc'd string: the next steps and
 * each principal's fingerprint, or (@json) one canonical JSON object.
 * Return: 0 or -ENOMEM.
 */
static int format_output(const struct devinit_opts *o, const struct target *t, const struct plan *p,
                         const struct fingerprint *fingerprints, bool json, char **ret)
{
    size_t i;

    if (json) {
        _cleanup_json_ json_t *doc = NULL, *principals = json_array();
        if (!principals)
            return -ENOMEM;
        for (i = 0; i < o->n_principals; i++)
            if (json_array_append_new(principals, json_pack("{s:s, s:s, s:s}", "name", o->principals[i], "certificate",
                                                            p->files[F_CLIENT_PEM(i)].path, "fingerprint",
                                                            fingerprints[i].hex)) < 0)
                return -ENOMEM;
        doc = json_pack("{s:s, s:s, s:s, s:O}", "directory", t->dir, "berthd_config", p->files[F_BERTHD].path,
                        "client_config", p->files[F_CLIENT].path, "principals", principals);
        if (!doc || berth_json_serialize(doc, 0, ret, NULL, NULL) < 0)
            return -ENOMEM;
        return 0;
    } else {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        bool ok;

        if (!f)
            return -ENOMEM;
        ok = fprintf(f,
                     "berth dev installation written to %s\n"
                     "  start the daemon:  berthd --config %s\n"
                     "  submit a job:      berthctl --config %s submit JOB.json --wait\n",
                     t->dir, p->files[F_BERTHD].path, p->files[F_CLIENT].path) >= 0;
        ok = ok && fprintf(f, "  import an image:   berthctl image import LAYOUT_DIR[:REF] --store %s/%s%s\n", t->dir,
                           devinit_subdir_names[SUB_IMAGES],
                           devinit_image_plugin_present(o) || o->no_image_source
                               ? ""
                               : "\n  note: image-oci-local.so is not in the plugin directory, so "
                                 "berthd.json has no image source") >= 0;
        if (devinit_evidence_plugin_present(o))
            ok = ok && fprintf(f, "  upload an input:   berthctl --config %s evidence put FILE\n",
                               p->files[F_CLIENT].path) >= 0;
        if (o->n_backends == 0)
            ok = ok && fprintf(f,
                               "  note: without --backend, berthd.json has no backend: add one named %s\n"
                               "        (the pool's backend) before submitting jobs\n",
                               DEFAULT_BACKEND) >= 0;
        for (i = 0; i < o->n_principals; i++) {
            _cleanup_free_ char *label = NULL;
            if (asprintf(&label, "principal %s:", o->principals[i]) < 0) {
                (void)fclose(f);
                return -ENOMEM;
            }
            ok = ok && fprintf(f, "  %-18s fingerprint %s%s\n", label, fingerprints[i].hex,
                               i == 0 ? " (admin; client.json)" : "") >= 0;
        }
        if (fclose(f) != 0 || !ok)
            return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
    }
}

/*
 * berthctl dev-init: check everything that can be checked before writing
 * (arguments, backend configurations, DIR and every target name), generate
 * all keys, certificates and documents in memory and validate them with the
 * parsers that will read them, then write; on any failure after the first
 * write, remove everything written.
 */
int cmd_devinit(struct bctl_globals *g, int argc, char **argv)
{
    struct devinit_opts o = {0};
    struct target t = {.parent_fd = -1, .dir_fd = -1, .sub_fd = {[0 ... SUB_COUNT - 1] = -1}};
    struct plan p = {0};
    struct written w = {0};
    struct berth_error err = BERTH_ERROR_INIT;
    struct fingerprint *fingerprints = NULL;
    _cleanup_free_ char *text = NULL;
    int ret, r;

    if ((ret = devinit_parse_args(g, argc, argv, &o)) != BCTL_EXIT_OK || !o.dir)
        goto out;
    if ((ret = devinit_load_backend_configs(&o)) != BCTL_EXIT_OK ||
        (ret = devinit_target_open(o.dir, &t)) != BCTL_EXIT_OK)
        goto out;
    fingerprints = calloc(o.n_principals, sizeof(*fingerprints));
    if (!fingerprints || devinit_plan_layout(&o, t.dir, &p) < 0) {
        ret = bctl_error(VERB, "out of memory");
        goto out;
    }
    /* Nothing is generated, let alone written, when a file is in the way. */
    if (t.dir_fd >= 0 && (ret = devinit_check_absent(&t, &p)) != BCTL_EXIT_OK)
        goto out;
    if (devinit_generate(&o, &t, &p, fingerprints, &err) < 0) {
        ret = bctl_error(VERB, "%s", err.message);
        goto out;
    }
    if ((r = format_output(&o, &t, &p, fingerprints, g->json, &text)) < 0) {
        ret = bctl_error(VERB, "formatting the output failed: %s", strerror(-r));
        goto out;
    }
    ret = BCTL_EXIT_FAIL;
    if (devinit_write_plan(&t, &p, &w, &err) < 0)
        bctl_error(VERB, "%s", err.message);
    else if ((g->json ? printf("%s\n", text) : fputs(text, stdout)) < 0 || fflush(stdout) != 0)
        bctl_error(VERB, "writing standard output: %s", strerror(errno));
    else
        ret = BCTL_EXIT_OK;
    if (ret != BCTL_EXIT_OK && devinit_wrote_anything(&p, &w) && devinit_roll_back(&t, &p, &w))
        bctl_error(VERB, "nothing was kept: everything written was removed again");
out:
    free(fingerprints);
    devinit_plan_done(&p);
    devinit_target_done(&t);
    devinit_opts_done(&o);
    return ret;
}
