/* SPDX-License-Identifier: MIT */
/* images.c -- fetching an image's blobs from berthd into the worker's store; see images.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "images.h"
#include "jsonobj.h"
#include "macro.h"
#include "oci.h"

/* Make sure @store holds blob @blob of @size bytes (BERTH_BLOB_ANY_SIZE for the manifest). */
static int fetch_blob(struct worker_session *s, const struct berth_blob_store *store, const char *tmpdir,
                      const char *image, const char *blob, uint64_t size, const char *run_id, uint64_t *fetched,
                      struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int held = -1, fd = -1;
    _cleanup_json_ json_t *refusal = NULL;
    char path[512];
    uint64_t bytes = 0;
    long status = 0;
    int r;

    r = berth_blob_open(store, blob, size, &held, &err);
    if (r == 0)
        return 0; /* the import verified it when it came in */
    if (r != -ENOENT)
        return berth_error_set(reterr, r, "blob %s in the worker's store: %s", blob, err.message);
    fd = open(tmpdir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "cannot make a download file in %s: %m", tmpdir);
    snprintf(path, sizeof(path), "/v1/images/%s/blobs/%s?run=%s", image, blob, run_id);
    r = berth_https_download(s->https, path, fd,
                             size == BERTH_BLOB_ANY_SIZE ? BERTH_IMAGE_METADATA_MAX : size, NULL, &bytes, &status,
                             &refusal, &err);
    if (r < 0)
        return berth_error_set(reterr, r == -ENOMEM ? r : -EIO, "fetching blob %s: %s", blob, err.message);
    if (status != 200) {
        /* A busy or failing berthd (503, 500) may serve it later; a refusal (403, 404, 501) stands. */
        berth_https_error(status, refusal, &err);
        return berth_error_set(reterr, status >= 500 && status != 501 ? -EAGAIN : -EPROTO, "fetching blob %s: %s",
                               blob, err.message);
    }
    if (lseek(fd, 0, SEEK_SET) < 0)
        return berth_error_set(reterr, -errno, "rewinding the download of %s: %m", blob);
    r = berth_blob_import_fd(store, fd, blob, size == BERTH_BLOB_ANY_SIZE ? bytes : size, NULL, &err);
    if (r < 0)
        return berth_error_set(reterr, r == -EEXIST ? -EBADMSG : r, "blob %s from berthd: %s", blob, err.message);
    *fetched += bytes;
    return 0;
}

int worker_image_fetch(struct worker_session *s, const struct berth_blob_store *store, const char *tmpdir,
                       const char *image, const char *run_id, uint64_t *ret_fetched, struct berth_error *reterr)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *manifest = NULL;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    size_t len = 0, i;
    int r;

    *ret_fetched = 0;
    if ((r = fetch_blob(s, store, tmpdir, image, image, BERTH_BLOB_ANY_SIZE, run_id, ret_fetched, reterr)) < 0)
        return r;
    if ((r = berth_blob_read(store, image, BERTH_BLOB_ANY_SIZE, BERTH_IMAGE_METADATA_MAX, &manifest, &len, &err)) <
            0 ||
        (r = berth_oci_manifest_parse(manifest, len, &img, &err)) < 0)
        return berth_error_set(reterr, r == -ENOMEM ? r : -EBADMSG, "image %s: %s", image, err.message);
    if ((r = fetch_blob(s, store, tmpdir, image, img->config.digest, img->config.size, run_id, ret_fetched,
                        reterr)) < 0)
        return r;
    for (i = 0; i < img->n_layers; i++)
        if ((r = fetch_blob(s, store, tmpdir, image, img->layers[i].blob.digest, img->layers[i].blob.size, run_id,
                            ret_fetched, reterr)) < 0)
            return r;
    return 0;
}
