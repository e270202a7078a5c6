/* SPDX-License-Identifier: MIT */
/* import.c -- OCI image layout into the blob store; see import.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "canon.h"
#include "fsutil.h"
#include "import.h"
#include "jsonobj.h"
#include "budget.h"
#include "macro.h"
#include "oci.h"
#include "refusal.h"

#define LAYOUT_FILE_MAX 4096
#define INDEX_DEPTH_MAX 2 /* index.json -> an image index -> a manifest */

/* Open the layout's blob @digest for reading: a regular file with one link
 * (another name could change it while it is read), reached without symlinks. */
static int open_layout_blob(int layoutfd, const char *digest, int *ret_fd, struct berth_error *reterr)
{
    static const struct berth_file_expect expect = {.type = S_IFREG, .uid = BERTH_UID_ANY, .one_link = 1};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int fd = -1;
    char path[128];
    int r;

    snprintf(path, sizeof(path), "blobs/sha256/%s", digest + strlen("sha256:"));
    fd = berth_open_beneath(layoutfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, reterr);
    if (fd == -ENOENT)
        return berth_image_refuse(reterr, BERTH_IMAGE_BLOB_MISSING, "the layout has no blob %s", digest);
    if (fd == -ELOOP || fd == -EXDEV)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "layout blob %s is reached through a symlink",
                                  digest);
    if (fd < 0) {
        berth_error_prefix(reterr, "layout blob %s", digest);
        return fd;
    }
    r = berth_file_check(fd, path, &expect, NULL, &err);
    if (r == -EBADFD)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "layout blob %s is not a regular file", digest);
    if (r == -EMLINK)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "layout blob %s has more than one link", digest);
    if (r < 0)
        return berth_error_set(reterr, r, "layout blob %s: %s", digest, err.message);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* Read and verify a small blob of the layout. */
static int read_layout_blob(int layoutfd, const struct berth_oci_descriptor *d, char **ret, size_t *ret_len,
                            struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r;

    if (d->size > BERTH_IMAGE_METADATA_MAX)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_MANIFEST, "%s is declared as %llu bytes; at most %u",
                                  d->digest, (unsigned long long)d->size, BERTH_IMAGE_METADATA_MAX);
    if ((r = open_layout_blob(layoutfd, d->digest, &fd, reterr)) < 0)
        return r;
    r = berth_blob_read_fd(fd, d->digest, d->size, BERTH_IMAGE_METADATA_MAX, ret, ret_len, reterr);
    if (r == -EFBIG)
        return berth_image_refuse(reterr, BERTH_IMAGE_SIZE_MISMATCH, "layout blob %s is larger than declared",
                                  d->digest);
    return r;
}

/* `oci-layout` must say imageLayoutVersion 1.0.0 (image-layout.md). */
static int check_layout_file(int layoutfd, struct berth_error *reterr)
{
    static const struct berth_file_expect expect = {.type = S_IFREG, .uid = BERTH_UID_ANY, .max_size = LAYOUT_FILE_MAX};
    static const char *const members[] = {"imageLayoutVersion", NULL};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *buf = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const json_t *v;
    size_t len = 0;

    if (berth_read_file_at(layoutfd, "oci-layout", &expect, &buf, &len, &err) < 0 ||
        berth_json_parse(buf, len, LAYOUT_FILE_MAX, &doc, &err) < 0 ||
        berth_json_only_members(doc, "oci-layout", members, &err) < 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "%s", err.message);
    v = json_object_get(doc, "imageLayoutVersion");
    if (!json_is_string(v) || !streq(json_string_value(v), "1.0.0"))
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT,
                                  "oci-layout: imageLayoutVersion must be \"1.0.0\"");
    return 0;
}

/* Find the manifest descriptor: index.json, then nested indexes. */
static int choose_manifest(int layoutfd, const char *ref, struct berth_oci_descriptor *ret, struct berth_error *reterr)
{
    static const struct berth_file_expect expect = {
        .type = S_IFREG, .uid = BERTH_UID_ANY, .max_size = BERTH_IMAGE_METADATA_MAX};
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    int depth, pick, r;

    if ((r = berth_read_file_at(layoutfd, "index.json", &expect, &buf, &len, reterr)) < 0) {
        if (r == -ENOENT || r == -EFBIG || r == -EBADFD || r == -ELOOP)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "index.json: %s",
                                      reterr ? reterr->message : "");
        return r;
    }
    for (depth = 0;; depth++) {
        _cleanup_free_ struct berth_oci_index *idx = NULL;
        if ((r = berth_oci_index_parse(buf, len, &idx, reterr)) < 0)
            return r;
        pick = berth_oci_index_select(idx, depth == 0 ? ref : NULL, berth_oci_host_architecture(), reterr);
        if (pick < 0)
            return pick;
        *ret = idx->entries[pick].blob;
        if (streq(ret->media_type, BERTH_OCI_MANIFEST_TYPE))
            return 0;
        if (depth + 1 >= INDEX_DEPTH_MAX)
            return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_INDEX, "image indexes nest deeper than %d",
                                      INDEX_DEPTH_MAX);
        free(buf);
        buf = NULL;
        if ((r = read_layout_blob(layoutfd, ret, &buf, &len, reterr)) < 0)
            return r;
    }
}

static int copy_blob(const struct berth_blob_store *store, int layoutfd, const struct berth_oci_descriptor *d,
                     struct berth_import_stats *stats, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    bool added = false;
    int r;

    if ((r = open_layout_blob(layoutfd, d->digest, &fd, reterr)) < 0 ||
        (r = berth_blob_import_fd(store, fd, d->digest, d->size, &added, reterr)) < 0)
        return r;
    stats->blobs++;
    stats->added += added;
    stats->bytes += d->size;
    return 0;
}

int berth_image_import(const struct berth_blob_store *store, const char *layout_dir, const char *ref,
                       char ret_digest[BERTH_DIGEST_BUFSZ], struct berth_import_stats *ret_stats,
                       struct berth_error *reterr)
{
    _cleanup_close_ int layoutfd = -1;
    _cleanup_free_ char *manifest = NULL, *config = NULL;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    struct berth_oci_descriptor md;
    struct berth_import_stats stats = {0};
    size_t mlen = 0, clen = 0, i;
    int r;

    if (!store || !layout_dir || !ret_digest)
        return berth_error_set(reterr, -EINVAL, "invalid arguments");
    layoutfd = open(layout_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (layoutfd < 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_INVALID_LAYOUT, "%s: %s", layout_dir, strerror(errno));
    if ((r = check_layout_file(layoutfd, reterr)) < 0 || (r = choose_manifest(layoutfd, ref, &md, reterr)) < 0 ||
        (r = read_layout_blob(layoutfd, &md, &manifest, &mlen, reterr)) < 0 ||
        (r = berth_oci_manifest_parse(manifest, mlen, &img, reterr)) < 0 ||
        (r = read_layout_blob(layoutfd, &img->config, &config, &clen, reterr)) < 0 ||
        (r = berth_oci_config_check(img, config, clen, berth_oci_host_architecture(), reterr)) < 0)
        return r;
    if ((r = copy_blob(store, layoutfd, &img->config, &stats, reterr)) < 0)
        return r;
    for (i = 0; i < img->n_layers; i++)
        if ((r = copy_blob(store, layoutfd, &img->layers[i].blob, &stats, reterr)) < 0)
            return r;
    if ((r = copy_blob(store, layoutfd, &md, &stats, reterr)) < 0)
        return r;
    snprintf(ret_digest, BERTH_DIGEST_BUFSZ, "%s", md.digest);
    if (ret_stats)
        *ret_stats = stats;
    return 0;
}
