/* SPDX-License-Identifier: MIT */
/*
 * images.h -- a worker's copy of the images it runs (docs/workers.md, "Data
 * path"): the blobs of an image, fetched from berthd
 * (GET /v1/images/{image}/blobs/{blob}?run=RUN, allowed while the worker
 * holds RUN's lease) into the worker's own blob store
 * (STATE/images, the store image-oci-local stages from, blobstore.h).
 * Every blob is checked against its digest and size as it is published
 * (berth_blob_import_fd()), so berthd -- or anything between -- cannot
 * change a byte of what runs; one already in the store is not fetched
 * again.
 */
#ifndef BERTH_WORKER_IMAGES_H
#define BERTH_WORKER_IMAGES_H

#include <stdint.h>

#include <berth/error.h>

#include "blobstore.h"
#include "session.h"

/**
 * worker_image_fetch() - make sure @store holds image @image (manifest,
 * config and every layer), fetching what it lacks through @s for run
 * @run_id.  @tmpdir: a private directory on the store's filesystem for
 * the downloads (unnamed files).  *@ret_fetched: bytes fetched (0 when
 * the store held it all).
 * Return: 0; -EBADMSG (berthd sent bytes that are not the digest, or a
 * manifest berth refuses: reterr says which); -EPROTO (berthd refused for
 * good: 403, 404, 501; reterr has its status and code); -EAGAIN (berthd is
 * busy or failing now: 500, 503); -EIO (no answer); errors of writing the
 * store (-ENOSPC, ...); -ENOMEM.  Thread-safe for distinct sessions
 * (the store takes concurrent imports of one blob: the same bytes win).
 */
int worker_image_fetch(struct worker_session *s, const struct berth_blob_store *store, const char *tmpdir,
                       const char *image, const char *run_id, uint64_t *ret_fetched, struct berth_error *reterr);

#endif /* BERTH_WORKER_IMAGES_H */
