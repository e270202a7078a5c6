/* SPDX-License-Identifier: MIT */
/* oci.c -- strict OCI manifest, config and index parsing; see oci.h. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "canon.h"
#include "jsonobj.h"
#include "budget.h"
#include "macro.h"
#include "oci.h"
#include "refusal.h"

static const char *const descriptor_members[] = {"annotations", "digest", "mediaType", "size", "urls", "data", NULL};
static const char *const index_descriptor_members[] = {"annotations", "digest", "mediaType", "size",
                                                       "urls",        "data",   "platform",  NULL};
static const char *const manifest_members[] = {"annotations",   "config",  "layers", "mediaType",
                                               "schemaVersion", "subject", NULL};
static const char *const index_members[] = {"annotations", "manifests", "mediaType", "schemaVersion", "subject", NULL};
static const char *const config_members[] = {"architecture", "author",     "config", "created", "history", "os",
                                             "os.features",  "os.version", "rootfs", "variant", NULL};
static const char *const platform_members[] = {"architecture", "features", "os", "os.features",
                                               "os.version",   "variant",  NULL};
static const char *const rootfs_members[] = {"diff_ids", "type", NULL};

const char *berth_oci_host_architecture(void)
{
#if defined(__x86_64__)
    return "amd64";
#elif defined(__aarch64__)
    return "arm64";
#else
    return NULL;
#endif
}

/* Parse @buf as a JSON object of at most the metadata bound. */
static int parse_object(const char *buf, size_t len, enum berth_image_reason reason, const char *what, json_t **ret,
                        struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *doc = NULL;

    if (berth_json_parse(buf, len, BERTH_IMAGE_METADATA_MAX, &doc, &err) < 0)
        return berth_image_refuse(reterr, reason, "%s: %s", what, err.message);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return berth_image_refuse(reterr, reason, "%s is not a JSON object", what);
    }
    *ret = doc;
    return 0;
}

/* Only @allowed members; anything else is a @reason refusal. */
static int only_members(const json_t *obj, const char *const *allowed, enum berth_image_reason reason, const char *what,
                        struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (!json_is_object(obj))
        return berth_image_refuse(reterr, reason, "%s must be an object", what);
    if (berth_json_only_members(obj, what, allowed, &err) < 0)
        return berth_image_refuse(reterr, reason, "%s", err.message);
    return 0;
}

static int check_annotations(const json_t *v, enum berth_image_reason reason, const char *what,
                             struct berth_error *reterr)
{
    const char *k;
    json_t *s;

    if (!v)
        return 0;
    if (!json_is_object(v))
        return berth_image_refuse(reterr, reason, "%s.annotations must be an object", what);
    json_object_foreach((json_t *)v, k, s) if (!json_is_string(s)) return berth_image_refuse(
        reterr, reason, "%s.annotations[\"%s\"] must be a string", what, k);
    return 0;
}

static int check_schema_version(const json_t *doc, enum berth_image_reason reason, const char *what,
                                struct berth_error *reterr)
{
    const json_t *v = json_object_get(doc, "schemaVersion");

    if (!json_is_integer(v) || json_integer_value(v) != 2)
        return berth_image_refuse(reterr, reason, "%s.schemaVersion must be 2", what);
    return 0;
}

/* A descriptor (OCI descriptor.md), into @ret. */
static int parse_descriptor(const json_t *d, const char *const *members, enum berth_image_reason reason,
                            const char *what, struct berth_oci_descriptor *ret, struct berth_error *reterr)
{
    uint8_t raw[BERTH_SHA256_LEN];
    const json_t *mt, *dg, *sz;
    int r;

    if ((r = only_members(d, members, reason, what, reterr)) < 0)
        return r;
    if (json_object_get(d, "urls"))
        return berth_image_refuse(reterr, BERTH_IMAGE_DESCRIPTOR_URLS, "%s lists urls: berth never fetches blobs",
                                  what);
    if (json_object_get(d, "data"))
        return berth_image_refuse(reterr, BERTH_IMAGE_DESCRIPTOR_DATA, "%s embeds data", what);
    mt = json_object_get(d, "mediaType");
    dg = json_object_get(d, "digest");
    sz = json_object_get(d, "size");
    if (!json_is_string(mt) || json_string_length(mt) == 0 || json_string_length(mt) > BERTH_OCI_MEDIA_TYPE_MAX)
        return berth_image_refuse(reterr, reason, "%s.mediaType must be a media type", what);
    if (!json_is_string(dg) || berth_digest_parse(json_string_value(dg), raw) < 0)
        return berth_image_refuse(reterr, reason, "%s.digest must be sha256:<64 lowercase hex>", what);
    if (!json_is_integer(sz) || json_integer_value(sz) < 0)
        return berth_image_refuse(reterr, reason, "%s.size must be a non-negative integer", what);
    if ((r = check_annotations(json_object_get(d, "annotations"), reason, what, reterr)) < 0)
        return r;
    snprintf(ret->media_type, sizeof(ret->media_type), "%s", json_string_value(mt));
    snprintf(ret->digest, sizeof(ret->digest), "%s", json_string_value(dg));
    ret->size = (uint64_t)json_integer_value(sz);
    return 0;
}

/* The compression of a layer media type, or a refusal. */
static int layer_compression(const char *mt, const char *what, enum berth_layer_compression *ret,
                             struct berth_error *reterr)
{
    if (streq(mt, "application/vnd.oci.image.layer.v1.tar")) {
        *ret = BERTH_LAYER_TAR;
        return 0;
    }
    if (streq(mt, "application/vnd.oci.image.layer.v1.tar+gzip") ||
        streq(mt, "application/vnd.docker.image.rootfs.diff.tar.gzip")) {
        *ret = BERTH_LAYER_GZIP;
        return 0;
    }
    if (strstr(mt, "nondistributable") || strstr(mt, "foreign"))
        return berth_image_refuse(reterr, BERTH_IMAGE_FOREIGN_LAYER, "%s is a foreign layer (%s)", what, mt);
    if (strstr(mt, "zstd"))
        return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE, "%s is zstd-compressed (%s): not supported", what,
                                  mt);
    return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE, "%s has an unsupported media type (%s)", what, mt);
}

/* One digest declared twice must be declared alike. */
static int check_consistent(const struct berth_oci_image *img, const struct berth_oci_descriptor *d, size_t upto,
                            struct berth_error *reterr)
{
    size_t i;

    if (streq(img->config.digest, d->digest) && img->config.size != d->size)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST, "%s is declared with two sizes", d->digest);
    for (i = 0; i < upto; i++)
        if (streq(img->layers[i].blob.digest, d->digest) && img->layers[i].blob.size != d->size)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST, "%s is declared with two sizes", d->digest);
    return 0;
}

int berth_oci_manifest_parse(const char *buf, size_t len, struct berth_oci_image **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    const json_t *mt, *layers, *l;
    char what[64];
    size_t i, n;
    int r;

    if (!buf || !ret)
        return -EINVAL;
    if ((r = parse_object(buf, len, BERTH_IMAGE_INVALID_MANIFEST, "manifest", &doc, reterr)) < 0)
        return r;
    mt = json_object_get(doc, "mediaType");
    if (json_object_get(doc, "manifests") || (json_is_string(mt) && streq(json_string_value(mt), BERTH_OCI_INDEX_TYPE)))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST,
                                  "the digest names an image index; a job names one image manifest");
    if ((r = only_members(doc, manifest_members, BERTH_IMAGE_INVALID_MANIFEST, "manifest", reterr)) < 0 ||
        (r = check_schema_version(doc, BERTH_IMAGE_INVALID_MANIFEST, "manifest", reterr)) < 0 ||
        (r = check_annotations(json_object_get(doc, "annotations"), BERTH_IMAGE_INVALID_MANIFEST, "manifest", reterr)) <
            0)
        return r;
    if (mt && !(json_is_string(mt) && streq(json_string_value(mt), BERTH_OCI_MANIFEST_TYPE)))
        return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE, "manifest.mediaType must be %s",
                                  BERTH_OCI_MANIFEST_TYPE);
    if (json_object_get(doc, "subject")) {
        /* Never read, but it must be what the spec says it is: a descriptor. */
        struct berth_oci_descriptor subject;
        if ((r = parse_descriptor(json_object_get(doc, "subject"), descriptor_members, BERTH_IMAGE_INVALID_MANIFEST,
                                  "manifest.subject", &subject, reterr)) < 0)
            return r;
    }
    layers = json_object_get(doc, "layers");
    if (!json_is_array(layers) || json_array_size(layers) == 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST, "manifest.layers must list 1 or more layers");
    n = json_array_size(layers);
    if (n > BERTH_STAGE_MAX_LAYERS)
        return berth_image_refuse(reterr, BERTH_IMAGE_LAYER_BUDGET, "the manifest lists %zu layers; at most %u", n,
                                  BERTH_STAGE_MAX_LAYERS);
    img = calloc(1, sizeof(*img) + n * sizeof(img->layers[0]));
    if (!img)
        return -ENOMEM;
    if ((r = parse_descriptor(json_object_get(doc, "config"), descriptor_members, BERTH_IMAGE_INVALID_MANIFEST,
                              "manifest.config", &img->config, reterr)) < 0)
        return r;
    if (!streq(img->config.media_type, BERTH_OCI_CONFIG_TYPE))
        return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE, "manifest.config.mediaType must be %s, not %s",
                                  BERTH_OCI_CONFIG_TYPE, img->config.media_type);
    if (img->config.size > BERTH_IMAGE_METADATA_MAX)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST,
                                  "the config is declared as %llu bytes; at most %u",
                                  (unsigned long long)img->config.size, BERTH_IMAGE_METADATA_MAX);
    img->compressed_bytes = img->config.size;
    json_array_foreach(layers, i, l)
    {
        snprintf(what, sizeof(what), "manifest.layers[%zu]", i);
        if ((r = parse_descriptor(l, descriptor_members, BERTH_IMAGE_INVALID_MANIFEST, what, &img->layers[i].blob,
                                  reterr)) < 0 ||
            (r = layer_compression(img->layers[i].blob.media_type, what, &img->layers[i].compression, reterr)) < 0 ||
            (r = check_consistent(img, &img->layers[i].blob, i, reterr)) < 0)
            return r;
        if (img->layers[i].blob.size > BERTH_STAGE_MAX_COMPRESSED_BYTES ||
            img->compressed_bytes + img->layers[i].blob.size > BERTH_STAGE_MAX_COMPRESSED_BYTES)
            return berth_image_refuse(reterr, BERTH_IMAGE_COMPRESSED_BUDGET,
                                      "the layers are declared larger than %llu bytes in all",
                                      (unsigned long long)BERTH_STAGE_MAX_COMPRESSED_BYTES);
        img->compressed_bytes += img->layers[i].blob.size;
    }
    img->n_layers = n;
    *ret = TAKE_PTR(img);
    return 0;
}

/* Platform fields outside the supported profile: linux, @arch, nothing else. */
static int check_platform(const char *os, const char *arch, const json_t *variant, bool extras, const char *want_arch,
                          const char *what, struct berth_error *reterr)
{
    if (!os || !streq(os, "linux"))
        return berth_image_refuse(reterr, BERTH_IMAGE_PLATFORM, "%s is for os %s; berth runs linux images", what,
                                  os ?: "(none)");
    if (!want_arch || !arch || !streq(arch, want_arch))
        return berth_image_refuse(reterr, BERTH_IMAGE_PLATFORM, "%s is for architecture %s; this host is %s", what,
                                  arch ?: "(none)", want_arch ?: "unsupported");
    if (variant && !(json_is_string(variant) && streq(arch, "arm64") && streq(json_string_value(variant), "v8")))
        return berth_image_refuse(reterr, BERTH_IMAGE_PLATFORM, "%s names a platform variant", what);
    if (extras)
        return berth_image_refuse(reterr, BERTH_IMAGE_PLATFORM, "%s names os.version or platform features", what);
    return 0;
}

int berth_oci_config_check(struct berth_oci_image *img, const char *buf, size_t len, const char *arch,
                           struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    const json_t *rootfs, *ids, *v, *type;
    const char *os, *a;
    size_t i;
    int r;

    if (!img || !buf)
        return -EINVAL;
    if ((r = parse_object(buf, len, BERTH_IMAGE_INVALID_CONFIG, "config", &doc, reterr)) < 0 ||
        (r = only_members(doc, config_members, BERTH_IMAGE_INVALID_CONFIG, "config", reterr)) < 0)
        return r;
    os = json_string_value(json_object_get(doc, "os"));
    a = json_string_value(json_object_get(doc, "architecture"));
    if (!os || !a)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "config.os and config.architecture are required");
    if ((r = check_platform(os, a, json_object_get(doc, "variant"),
                            json_object_get(doc, "os.version") || json_object_get(doc, "os.features"), arch,
                            "the image", reterr)) < 0)
        return r;
    v = json_object_get(doc, "config");
    if (v && !json_is_object(v))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "config.config must be an object");
    v = json_object_get(doc, "history");
    if (v && !json_is_array(v))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "config.history must be an array");
    json_array_foreach(v, i, type) if (!json_is_object(type)) return berth_image_refuse(
        reterr, BERTH_IMAGE_INVALID_CONFIG, "config.history[%zu] must be an object", i);
    if ((json_object_get(doc, "created") && !json_is_string(json_object_get(doc, "created"))) ||
        (json_object_get(doc, "author") && !json_is_string(json_object_get(doc, "author"))))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "config.created and config.author are strings");
    rootfs = json_object_get(doc, "rootfs");
    if ((r = only_members(rootfs, rootfs_members, BERTH_IMAGE_INVALID_CONFIG, "config.rootfs", reterr)) < 0)
        return r;
    type = json_object_get(rootfs, "type");
    ids = json_object_get(rootfs, "diff_ids");
    if (!json_is_string(type) || !streq(json_string_value(type), "layers"))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG, "config.rootfs.type must be \"layers\"");
    if (!json_is_array(ids) || json_array_size(ids) != img->n_layers)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG,
                                  "config.rootfs.diff_ids lists %zu DiffIDs for %zu layers",
                                  json_is_array(ids) ? json_array_size(ids) : 0, img->n_layers);
    json_array_foreach(ids, i, v)
    {
        uint8_t raw[BERTH_SHA256_LEN];
        if (!json_is_string(v) || berth_digest_parse(json_string_value(v), raw) < 0)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_CONFIG,
                                      "config.rootfs.diff_ids[%zu] must be sha256:<64 lowercase hex>", i);
    }
    json_array_foreach(ids, i, v)
        snprintf(img->layers[i].diff_id, sizeof(img->layers[i].diff_id), "%s", json_string_value(v));
    snprintf(img->os, sizeof(img->os), "%s", os);
    snprintf(img->architecture, sizeof(img->architecture), "%s", a);
    return 0;
}

/* The platform of an index entry (image-index.md "platform"). */
static int parse_platform(const json_t *p, const char *what, struct berth_oci_index_entry *e,
                          struct berth_error *reterr)
{
    const char *os, *arch;
    const json_t *variant;
    int r;

    if (!p)
        return 0;
    if ((r = only_members(p, platform_members, BERTH_IMAGE_INVALID_INDEX, what, reterr)) < 0)
        return r;
    os = json_string_value(json_object_get(p, "os"));
    arch = json_string_value(json_object_get(p, "architecture"));
    if (!os || !arch || strlen(os) >= sizeof(e->os) || strlen(arch) >= sizeof(e->architecture))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "%s needs os and architecture", what);
    variant = json_object_get(p, "variant");
    e->has_platform = true;
    snprintf(e->os, sizeof(e->os), "%s", os);
    snprintf(e->architecture, sizeof(e->architecture), "%s", arch);
    e->platform_extra =
        json_object_get(p, "os.version") || json_object_get(p, "os.features") || json_object_get(p, "features") ||
        (variant && !(json_is_string(variant) && streq(arch, "arm64") && streq(json_string_value(variant), "v8")));
    return 0;
}

int berth_oci_index_parse(const char *buf, size_t len, struct berth_oci_index **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ struct berth_oci_index *idx = NULL;
    const json_t *list, *d, *mt, *ref;
    char what[64];
    size_t i, n;
    int r;

    if (!buf || !ret)
        return -EINVAL;
    if ((r = parse_object(buf, len, BERTH_IMAGE_INVALID_INDEX, "index", &doc, reterr)) < 0 ||
        (r = only_members(doc, index_members, BERTH_IMAGE_INVALID_INDEX, "index", reterr)) < 0 ||
        (r = check_schema_version(doc, BERTH_IMAGE_INVALID_INDEX, "index", reterr)) < 0 ||
        (r = check_annotations(json_object_get(doc, "annotations"), BERTH_IMAGE_INVALID_INDEX, "index", reterr)) < 0)
        return r;
    mt = json_object_get(doc, "mediaType");
    if (mt && !(json_is_string(mt) && streq(json_string_value(mt), BERTH_OCI_INDEX_TYPE)))
        return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE, "index.mediaType must be %s", BERTH_OCI_INDEX_TYPE);
    list = json_object_get(doc, "manifests");
    if (!json_is_array(list))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "index.manifests must be an array");
    n = json_array_size(list);
    if (n > 4096)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "the index lists %zu manifests; at most 4096", n);
    idx = calloc(1, sizeof(*idx) + n * sizeof(idx->entries[0]));
    if (!idx)
        return -ENOMEM;
    json_array_foreach(list, i, d)
    {
        struct berth_oci_index_entry *e = &idx->entries[i];
        snprintf(what, sizeof(what), "index.manifests[%zu]", i);
        if ((r = parse_descriptor(d, index_descriptor_members, BERTH_IMAGE_INVALID_INDEX, what, &e->blob, reterr)) < 0)
            return r;
        if (!streq(e->blob.media_type, BERTH_OCI_MANIFEST_TYPE) && !streq(e->blob.media_type, BERTH_OCI_INDEX_TYPE))
            return berth_image_refuse(reterr, BERTH_IMAGE_MEDIA_TYPE,
                                      "%s.mediaType %s is neither a manifest nor an index", what, e->blob.media_type);
        if (e->blob.size > BERTH_IMAGE_METADATA_MAX)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "%s is declared as %llu bytes; at most %u",
                                      what, (unsigned long long)e->blob.size, BERTH_IMAGE_METADATA_MAX);
        ref = json_object_get(json_object_get(d, "annotations"), BERTH_OCI_REF_NAME);
        if (ref && json_string_length(ref) >= sizeof(e->ref_name))
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "%s has a ref name over 255 bytes", what);
        if (ref)
            snprintf(e->ref_name, sizeof(e->ref_name), "%s", json_string_value(ref));
        snprintf(what, sizeof(what), "index.manifests[%zu].platform", i);
        if ((r = parse_platform(json_object_get(d, "platform"), what, e, reterr)) < 0)
            return r;
    }
    idx->n = n;
    *ret = TAKE_PTR(idx);
    return 0;
}

int berth_oci_index_select(const struct berth_oci_index *idx, const char *ref, const char *arch,
                           struct berth_error *reterr)
{
    size_t i, matches = 0;
    int pick = -1, fallback = -1;

    if (!idx)
        return -EINVAL;
    if (!ref) {
        /* Without a ref every entry must belong to one ref (or none). */
        for (i = 1; i < idx->n; i++)
            if (!streq(idx->entries[i].ref_name, idx->entries[0].ref_name))
                return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX,
                                          "the layout holds several images (refs \"%s\", \"%s\", ...); name one as "
                                          "DIR:REF",
                                          idx->entries[0].ref_name, idx->entries[i].ref_name);
        if (idx->n == 0)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "the index lists no manifest");
    }
    for (i = 0; i < idx->n; i++) {
        const struct berth_oci_index_entry *e = &idx->entries[i];
        if (ref && !streq(e->ref_name, ref))
            continue;
        matches++;
        if (!e->has_platform) {
            if (fallback < 0)
                fallback = (int)i;
            continue;
        }
        if (arch && streq(e->os, "linux") && streq(e->architecture, arch) && !e->platform_extra && pick < 0)
            pick = (int)i;
    }
    if (pick >= 0)
        return pick;
    if (matches == 0) {
        berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "the layout has no image named \"%s\"", ref);
        return -ENOENT;
    }
    if (fallback >= 0 && matches == 1)
        return fallback;
    berth_image_refuse(reterr, BERTH_IMAGE_PLATFORM, "no manifest %s%s%sfor linux/%s", ref ? "named \"" : "", ref ?: "",
                       ref ? "\" " : "", arch ?: "(unsupported host)");
    return -ENOENT;
}
