/* SPDX-License-Identifier: MIT */
/*
 * stage.h -- resolve an image by manifest digest and stage its root
 * filesystem, as a job gets it.
 */
#ifndef BERTH_IMAGE_STAGE_H
#define BERTH_IMAGE_STAGE_H

#include <jansson.h>

#include <berth/error.h>

#include "blobstore.h"
#include "budget.h"
#include "oci.h"

/**
 * berth_image_resolve() - load and verify the image whose manifest digest is
 * @digest from @store: the manifest blob (at most 1 MiB, hashed), parsed
 * strictly (oci.h), then its config (hashed, platform = linux on this host's
 * architecture, one DiffID per layer).  Layer blobs are not read.
 * @ret: receives the image (free()), digest and size filled in.
 * Return: 0; a refusal from refusal.h ("blob-missing" is -ENOENT); -ENOMEM.
 */
int berth_image_resolve(const struct berth_blob_store *store, const char *digest, struct berth_oci_image **ret,
                        struct berth_error *reterr);

/**
 * berth_image_summary() - @img as a JSON object: schema_version 1, digest,
 * os, architecture, config {digest, size}, layers [{digest, size,
 * media_type, diff_id}], compressed_bytes.  NULL when out of memory.
 */
json_t *berth_image_summary(const struct berth_oci_image *img);

/**
 * berth_image_stage() - build the root filesystem of image @digest into
 * the empty directory @rootfd.
 *
 * Order: resolve (metadata bytes count against the compressed budget); the
 * layer count and the declared sizes are checked against the budgets before
 * any layer is read; then per layer, in manifest order: open the blob, hash
 * all of it and compare with its digest ("digest-mismatch"), and only then
 * extract it (extract.h), verifying its DiffID while streaming.
 * On any failure everything created below @rootfd is removed
 * (berth_tree_clear()), so a partial tree is never returned.
 * @rootfd:    an empty directory, O_RDONLY|O_DIRECTORY (borrowed).
 * @limits:    the budgets; NULL for the maxima.
 * @ret_stats: optional; what the stage consumed.
 * Return: 0; a refusal ("<code>: <detail>" in @reterr); -EINVAL for a
 * budget outside its range (budget.h); -ENOMEM; -EIO.
 * When the cleanup itself fails, @reterr says so after the reason.
 */
int berth_image_stage(const struct berth_blob_store *store, const char *digest, int rootfd,
                      const struct berth_stage_limits *limits, struct berth_stage_stats *ret_stats,
                      struct berth_error *reterr);

#endif /* BERTH_IMAGE_STAGE_H */
