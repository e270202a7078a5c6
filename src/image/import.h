/* SPDX-License-Identifier: MIT */
/*
 * import.h -- copy an image from an OCI image layout into the blob store.
 */
#ifndef BERTH_IMAGE_IMPORT_H
#define BERTH_IMAGE_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include <berth/error.h>

#include "blobstore.h"
#include "digest.h"

/** struct berth_import_stats - what an import did. */
struct berth_import_stats {
    size_t blobs;   /* blobs of the image: manifest, config, layers */
    size_t added;   /* of those, new in the store (the rest were verified) */
    uint64_t bytes; /* bytes of all its blobs */
};

/**
 * berth_image_import() - import one image from the OCI image layout
 * (image-spec image-layout.md) in directory @layout_dir.
 *
 * Reads `oci-layout` (imageLayoutVersion 1.0.0) and `index.json`; chooses
 * the manifest named @ref (annotation org.opencontainers.image.ref.name), or
 * the only image when @ref is NULL; when that entry is an image index, the
 * manifest for linux on this host's architecture (amd64 or arm64) in it.
 * The manifest and config are verified and checked as a stage would check
 * them (oci.h); then every blob is copied with berth_blob_import_fd(), which
 * verifies digest and size while copying and never overwrites: the config
 * and layers first and the manifest last, so a manifest in the store means
 * its blobs are there.  Inside the layout, paths are opened beneath the
 * layout directory without following symlinks, and a blob must be a
 * regular file with exactly one link ("invalid-layout" otherwise).
 * @ret_digest: receives the manifest digest.
 * @ret_stats:  optional.
 * Return: 0; a refusal ("invalid-layout", "invalid-index", "platform",
 * "blob-missing", "digest-mismatch", "blob-conflict", ...); -ENOMEM; errno.
 * An import that fails part-way leaves the blobs it already published
 * (each complete and verified), which a retry reuses.
 */
int berth_image_import(const struct berth_blob_store *store, const char *layout_dir, const char *ref,
                       char ret_digest[BERTH_DIGEST_BUFSZ], struct berth_import_stats *ret_stats,
                       struct berth_error *reterr);

#endif /* BERTH_IMAGE_IMPORT_H */
