/* SPDX-License-Identifier: MIT */
/* stage.c -- resolve and stage images; see stage.h. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "extract.h"
#include "macro.h"
#include "refusal.h"
#include "stage.h"

/* Budgets from a caller must lie within the ceilings of budget.h. */
static bool limits_valid(const struct berth_stage_limits *l)
{
    return l->compressed_bytes >= 1 && l->compressed_bytes <= BERTH_STAGE_MAX_COMPRESSED_BYTES &&
           l->expanded_bytes >= 1 && l->expanded_bytes <= BERTH_STAGE_MAX_EXPANDED_BYTES && l->entries >= 1 &&
           l->entries <= BERTH_STAGE_MAX_ENTRIES && l->layers >= 1 && l->layers <= BERTH_STAGE_MAX_LAYERS &&
           l->wall_time_ns >= 1 && l->wall_time_ns <= BERTH_STAGE_MAX_WALL_TIME_NS;
}

int berth_image_resolve(const struct berth_blob_store *store, const char *digest, struct berth_oci_image **ret,
                        struct berth_error *reterr)
{
    _cleanup_free_ char *manifest = NULL, *config = NULL;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    size_t mlen = 0, clen = 0;
    int r;

    if (!store || !digest || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    if ((r = berth_blob_read(store, digest, BERTH_BLOB_ANY_SIZE, BERTH_IMAGE_METADATA_MAX, &manifest, &mlen, reterr)) <
        0) {
        if (r == -EFBIG)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST, "the manifest %s is over %u bytes", digest,
                                      BERTH_IMAGE_METADATA_MAX);
        return r;
    }
    if ((r = berth_oci_manifest_parse(manifest, mlen, &img, reterr)) < 0)
        return r;
    snprintf(img->digest, sizeof(img->digest), "%s", digest);
    img->size = mlen;
    img->compressed_bytes += mlen;
    if ((r = berth_blob_read(store, img->config.digest, img->config.size, BERTH_IMAGE_METADATA_MAX, &config, &clen,
                             reterr)) < 0)
        return r;
    if ((r = berth_oci_config_check(img, config, clen, berth_oci_host_architecture(), reterr)) < 0)
        return r;
    *ret = TAKE_PTR(img);
    return 0;
}

json_t *berth_image_summary(const struct berth_oci_image *img)
{
    json_t *layers = json_array(), *doc;
    size_t i;

    if (!img || !layers)
        return json_decref(layers), NULL;
    for (i = 0; i < img->n_layers; i++) {
        const struct berth_oci_layer *l = &img->layers[i];
        if (json_array_append_new(layers, json_pack("{s:s, s:I, s:s, s:s}", "digest", l->blob.digest, "size",
                                                    (json_int_t)l->blob.size, "media_type", l->blob.media_type,
                                                    "diff_id", l->diff_id)) < 0) {
            json_decref(layers);
            return NULL;
        }
    }
    doc = json_pack("{s:i, s:s, s:s, s:s, s:{s:s, s:I}, s:o, s:I}", "schema_version", 1, "digest", img->digest, "os",
                    img->os, "architecture", img->architecture, "config", "digest", img->config.digest, "size",
                    (json_int_t)img->config.size, "layers", layers, "compressed_bytes",
                    (json_int_t)img->compressed_bytes);
    return doc;
}

/* Name the layer in @e: after the reason code of a refusal ("path-traversal:
 * layer 1 (sha256:...): ..."), so the code stays first; in front otherwise. */
static void layer_context(struct berth_error *e, size_t i, const char *digest)
{
    char copy[BERTH_ERROR_MESSAGE_MAX];
    const char *sep;

    if (!e)
        return;
    if (!berth_image_reason_of(e->message) || !(sep = strstr(e->message, ": "))) {
        berth_error_prefix(e, "layer %zu (%s)", i, digest);
        return;
    }
    snprintf(copy, sizeof(copy), "%.*s: layer %zu (%s): %s", (int)(sep - e->message), e->message, i, digest, sep + 2);
    memcpy(e->message, copy, sizeof(copy));
}

/* Everything after resolve; on failure the caller clears the root. */
static int stage_layers(const struct berth_blob_store *store, const struct berth_oci_image *img, int rootfd,
                        const struct berth_stage_limits *limits, int64_t deadline, struct berth_stage_stats *stats,
                        struct berth_error *reterr)
{
    struct berth_extract *x = NULL;
    uint8_t diff_id[BERTH_SHA256_LEN];
    size_t i;
    int r;

    if ((r = berth_extract_new(rootfd, limits, deadline, &x)) < 0)
        return berth_error_set(reterr, r, "starting the extraction failed");
    for (i = 0, r = 0; i < img->n_layers && r == 0; i++) {
        const struct berth_oci_layer *l = &img->layers[i];
        _cleanup_close_ int fd = -1;

        if (berth_deadline_passed(CLOCK_MONOTONIC, deadline)) {
            r = berth_image_refuse(reterr, BERTH_IMAGE_TIME_BUDGET, "the stage ran out of time before layer %zu", i);
            break;
        }
        if ((r = berth_blob_open(store, l->blob.digest, l->blob.size, &fd, reterr)) < 0 ||
            (r = berth_blob_verify_fd(fd, l->blob.digest, l->blob.size, reterr)) < 0)
            break;
        if (berth_digest_parse(l->diff_id, diff_id) < 0) {
            r = berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "layer %zu has no DiffID", i);
            break;
        }
        if ((r = berth_extract_layer(x, fd, l->compression, diff_id, reterr)) < 0)
            layer_context(reterr, i, l->blob.digest);
        stats->layers++;
    }
    berth_extract_stats(x, stats);
    berth_extract_free(x);
    return r;
}

int berth_image_stage(const struct berth_blob_store *store, const char *digest, int rootfd,
                      const struct berth_stage_limits *limits, struct berth_stage_stats *ret_stats,
                      struct berth_error *reterr)
{
    _cleanup_free_ struct berth_oci_image *img = NULL;
    struct berth_stage_limits max;
    struct berth_stage_stats stats = {0};
    struct berth_error cleanup = BERTH_ERROR_INIT;
    int64_t deadline;
    int r;

    if (!store || !digest || rootfd < 0)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    if (!limits) {
        berth_stage_limits_default(&max);
        limits = &max;
    }
    if (!limits_valid(limits))
        return berth_error_set(reterr, -EINVAL, "a stage budget is outside its range (budget.h)");
    /* On a clock that cannot be read the deadline has passed: the stage is refused, never unbounded. */
    deadline = berth_deadline_ns(CLOCK_MONOTONIC, limits->wall_time_ns);
    if ((r = berth_image_resolve(store, digest, &img, reterr)) < 0)
        return r;
    if (img->n_layers > limits->layers)
        return berth_image_refuse(reterr, BERTH_IMAGE_LAYER_BUDGET, "the image has %zu layers; the budget is %u",
                                  img->n_layers, limits->layers);
    if (img->compressed_bytes > limits->compressed_bytes)
        return berth_image_refuse(
            reterr, BERTH_IMAGE_COMPRESSED_BUDGET, "the image's blobs are %llu bytes; the budget is %llu",
            (unsigned long long)img->compressed_bytes, (unsigned long long)limits->compressed_bytes);
    stats.compressed_bytes = img->compressed_bytes;
    r = stage_layers(store, img, rootfd, limits, deadline, &stats, reterr);
    if (r < 0) {
        if (berth_tree_clear(rootfd, &cleanup) < 0 && reterr) {
            size_t n = strlen(reterr->message);
            snprintf(reterr->message + n, sizeof(reterr->message) - n, "; removing the partial tree failed: %s",
                     cleanup.message);
        }
        return r;
    }
    if (ret_stats)
        *ret_stats = stats;
    return 0;
}
