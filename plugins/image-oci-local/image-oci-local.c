/* SPDX-License-Identifier: MIT */
/*
 * image-oci-local.c -- the image-oci-local plugin: serves OCI images from a
 * local blob store (see src/image/blobstore.h) and stages a fresh root
 * filesystem per job.
 *
 * Backend configuration (berthd.json):
 *   "images": {"plugin": "image-oci-local", "config": {"store": "/var/lib/berth/images"}}
 * "store" is required: an absolute path whose directories are owned by the
 * user berthd runs as with mode 0700 (see "berthctl image import"); init
 * creates blobs/sha256 below it when missing, and refuses an unsafe store.
 *
 * Ops: resolve(digest) returns the verified summary (stage.h,
 * berth_image_summary()); stage(digest, dirfd, limits) builds the rootfs into
 * the caller's empty directory within the budgets of the limits JSON
 * (budget.h: compressed_bytes, expanded_bytes, entries, layers,
 * wall_time_ns; absent members keep their maxima) and returns
 * {"schema_version": 1, "layers", "compressed_bytes", "expanded_bytes",
 * "entries", "files", "directories", "symlinks", "hardlinks", "whiteouts"}.
 * On refusal the error message starts with the reason code and the caller's
 * directory is empty again.  open_blob(image, blob) (ABI 1.5) opens the
 * manifest, config or a layer of a resolved image as stored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <berth/plugin.h>

#include "blobstore.h"
#include "canon.h"
#include "extract.h"
#include "jsonobj.h"
#include "budget.h"
#include "macro.h"
#include "stage.h"

#define CONFIG_MAX 4096

struct image_source {
    const struct berth_host *host;
    struct berth_blob_store *store;
};

static int emit(const json_t *doc, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_json_serialize(doc, 0, ret_json, ret_len, reterr);
}

static int source_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                       struct berth_error *reterr)
{
    static const char *const members[] = {"store", NULL};
    _cleanup_json_ json_t *doc = NULL;
    struct image_source *s;
    const char *store = NULL;
    int r;

    if ((r = berth_json_parse(config, config_len, CONFIG_MAX, &doc, reterr)) < 0 ||
        (r = berth_json_only_members(doc, "config", members, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "config", "store", true, &store, reterr)) < 0)
        return r;
    s = calloc(1, sizeof(*s));
    if (!s)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    s->host = host;
    if ((r = berth_blob_store_open(store, true, &s->store, reterr)) < 0) {
        free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

static void source_fini(void *state)
{
    struct image_source *s = state;

    if (!s)
        return;
    berth_blob_store_free(s->store);
    free(s);
}

static int source_resolve(void *state, const char *digest, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct image_source *s = state;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    _cleanup_json_ json_t *doc = NULL;
    int r;

    if ((r = berth_image_resolve(s->store, digest, &img, reterr)) < 0)
        return r;
    doc = berth_image_summary(img);
    return emit(doc, ret_json, ret_len, reterr);
}

static int source_stage(void *state, const char *digest, int target_dirfd, const char *limits, size_t limits_len,
                        char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct image_source *s = state;
    _cleanup_json_ json_t *ldoc = NULL, *doc = NULL;
    struct berth_stage_limits l;
    struct berth_stage_stats st = {0};
    int r;

    if (limits && limits_len && (r = berth_json_parse(limits, limits_len, CONFIG_MAX, &ldoc, reterr)) < 0)
        return r;
    if ((r = berth_stage_limits_from_json(ldoc, &l, reterr)) < 0 ||
        (r = berth_image_stage(s->store, digest, target_dirfd, &l, &st, reterr)) < 0)
        return r;
    doc = json_pack("{s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "schema_version", 1, "layers", (int)st.layers,
                    "compressed_bytes", (json_int_t)st.compressed_bytes, "expanded_bytes",
                    (json_int_t)st.expanded_bytes, "entries", (json_int_t)st.entries, "files", (json_int_t)st.files,
                    "directories", (json_int_t)st.directories, "symlinks", (json_int_t)st.symlinks, "hardlinks",
                    (json_int_t)st.hardlinks, "whiteouts", (json_int_t)st.whiteouts);
    if ((r = emit(doc, ret_json, ret_len, reterr)) < 0)
        (void)berth_tree_clear(target_dirfd, NULL); /* a failed stage leaves the directory empty */
    return r;
}

/* ABI 1.5: a blob of a resolved image, as stored, for a remote worker. */
static int source_open_blob(void *state, const char *image, const char *blob, int *ret_fd, uint64_t *ret_size,
                            struct berth_error *reterr)
{
    struct image_source *s = state;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    uint64_t size = 0;
    bool found = false;
    size_t i;
    int r;

    if ((r = berth_image_resolve(s->store, image, &img, reterr)) < 0)
        return r;
    if (streq(blob, img->digest)) {
        found = true;
        size = img->size;
    } else if (streq(blob, img->config.digest)) {
        found = true;
        size = img->config.size;
    }
    for (i = 0; !found && i < img->n_layers; i++)
        if (streq(blob, img->layers[i].blob.digest)) {
            found = true;
            size = img->layers[i].blob.size;
        }
    if (!found)
        return berth_error_set(reterr, -ENOENT, "blob %s is not part of image %s", blob, image);
    r = berth_blob_open(s->store, blob, size, ret_fd, reterr);
    if (r == 0)
        *ret_size = size;
    return r;
}

static const struct berth_image_source_ops_v1 ops = {
    .resolve = source_resolve,
    .stage = source_stage,
    .open_blob = source_open_blob,
};

static const struct berth_plugin descriptor = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "image-oci-local",
    .kind = BERTH_PLUGIN_IMAGE_SOURCE,
    .version = PACKAGE_VERSION,
    .init = source_init,
    .fini = source_fini,
    .ops = &ops,
    .ops_size = sizeof(ops),
};

BERTH_PLUGIN_EXPORT const struct berth_plugin *berth_plugin_entry(void)
{
    return &descriptor;
}
