/* SPDX-License-Identifier: MIT */
/*
 * oci.h -- strict parsing of OCI image manifests, configs and indexes.
 *
 * Rules from the OCI image-spec v1.1 (manifest.md, config.md,
 * image-index.md, descriptor.md), narrowed to what berth runs:
 *
 * - documents are at most BERTH_IMAGE_METADATA_MAX bytes, parsed by the
 *   core's strict JSON parser (duplicate keys, NUL, invalid UTF-8 and depth
 *   over 32 are errors); members outside the spec are refused;
 * - descriptors: `mediaType`, `digest` (sha256 only) and `size` required;
 *   `urls` ("descriptor-urls") and `data` ("descriptor-data") refused;
 *   `annotations` (strings) accepted; one digest declared twice in a
 *   manifest must declare the same size;
 * - a manifest has schemaVersion 2, the OCI manifest media type (when
 *   given), the OCI config media type, 1..128 layers of media type
 *   layer.v1.tar or layer.v1.tar+gzip (also Docker's rootfs.diff.tar.gzip);
 *   zstd and unknown types are "media-type", non-distributable (foreign)
 *   types "foreign-layer"; an image index where a manifest is expected is
 *   "invalid-manifest";
 * - a config has os "linux", the host's architecture (amd64 or arm64), no
 *   `variant` (except "v8" on arm64), no `os.version`/`os.features`
 *   ("platform"), and rootfs {type "layers", diff_ids} with one DiffID per
 *   manifest layer.  Image process defaults (config.config) are read as an
 *   object and otherwise ignored: they never change a job.
 */
#ifndef BERTH_IMAGE_OCI_H
#define BERTH_IMAGE_OCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>

#include "digest.h"
#include "extract.h"

#define BERTH_OCI_MEDIA_TYPE_MAX 255
#define BERTH_OCI_MANIFEST_TYPE "application/vnd.oci.image.manifest.v1+json"
#define BERTH_OCI_INDEX_TYPE "application/vnd.oci.image.index.v1+json"
#define BERTH_OCI_CONFIG_TYPE "application/vnd.oci.image.config.v1+json"
#define BERTH_OCI_REF_NAME "org.opencontainers.image.ref.name"

/** struct berth_oci_descriptor - what a descriptor says of a blob. */
struct berth_oci_descriptor {
    char media_type[BERTH_OCI_MEDIA_TYPE_MAX + 1];
    char digest[BERTH_DIGEST_BUFSZ];
    uint64_t size;
};

/** struct berth_oci_layer - one layer: its blob, compression and DiffID. */
struct berth_oci_layer {
    struct berth_oci_descriptor blob;
    enum berth_layer_compression compression;
    char diff_id[BERTH_DIGEST_BUFSZ]; /* from the config; "" until berth_oci_config_check() */
};

/**
 * struct berth_oci_image - a parsed manifest and, once checked, its config.
 * @digest, @size: of the manifest itself (set by the caller that verified it).
 * @os, @architecture: from the config.
 * @compressed_bytes: manifest + config + every layer blob, as declared.
 */
struct berth_oci_image {
    char digest[BERTH_DIGEST_BUFSZ];
    uint64_t size;
    struct berth_oci_descriptor config;
    char os[16];
    char architecture[16];
    uint64_t compressed_bytes;
    size_t n_layers;
    struct berth_oci_layer layers[];
};

/**
 * berth_oci_host_architecture() - this host's architecture in OCI terms
 * ("amd64", "arm64"), from the build target; NULL on any other.
 */
const char *berth_oci_host_architecture(void);

/**
 * berth_oci_manifest_parse() - parse the manifest @buf (@len bytes).
 * @ret: receives a new image (free()) with config and layer descriptors;
 *       digest, size, platform and DiffIDs are left empty.
 * Return: 0; a refusal ("invalid-manifest", "media-type", "foreign-layer",
 * "descriptor-urls", "descriptor-data", "layer-budget" for more than 128
 * layers); -ENOMEM.
 */
int berth_oci_manifest_parse(const char *buf, size_t len, struct berth_oci_image **ret, struct berth_error *reterr);

/**
 * berth_oci_config_check() - parse the config @buf against @img: platform
 * and DiffIDs (written into @img->layers[].diff_id, and os/architecture).
 * @arch: the architecture to require (berth_oci_host_architecture()).
 * Return: 0; "invalid-config" or "platform" refusals.  @img is changed only
 * on success.
 */
int berth_oci_config_check(struct berth_oci_image *img, const char *buf, size_t len, const char *arch,
                           struct berth_error *reterr);

/** struct berth_oci_index_entry - one manifest listed by an index. */
struct berth_oci_index_entry {
    struct berth_oci_descriptor blob;
    char ref_name[256]; /* org.opencontainers.image.ref.name, or "" */
    char os[16], architecture[16];
    bool has_platform, platform_extra; /* platform_extra: a variant (other than v8 on arm64), os.version or features */
};

/** struct berth_oci_index - a parsed image index (or a layout's index.json). */
struct berth_oci_index {
    size_t n;
    struct berth_oci_index_entry entries[];
};

/**
 * berth_oci_index_parse() - parse the image index @buf.
 * @ret: receives a new index (free()).
 * Return: 0; "invalid-index", "descriptor-urls", "descriptor-data"; -ENOMEM.
 */
int berth_oci_index_parse(const char *buf, size_t len, struct berth_oci_index **ret, struct berth_error *reterr);

/**
 * berth_oci_index_select() - choose the entry to import from @idx.
 * @ref:  a ref name to match (org.opencontainers.image.ref.name), or NULL:
 *        then the index must list exactly one ref (or one entry).
 * @arch: the architecture to prefer among entries of one ref that carry a
 *        platform (a multi-platform image): linux/@arch without extras.
 * Return: the entry's position; -ENOENT with "invalid-index" (no such ref)
 * or "platform" (no entry for linux/@arch); -EBADMSG with "invalid-index"
 * (several refs and no @ref given, naming two of them; or an empty index).
 */
int berth_oci_index_select(const struct berth_oci_index *idx, const char *ref, const char *arch,
                           struct berth_error *reterr);

#endif /* BERTH_IMAGE_OCI_H */
