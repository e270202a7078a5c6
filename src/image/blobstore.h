/* SPDX-License-Identifier: MIT */
/*
 * blobstore.h -- the local OCI blob store berth serves images from.
 *
 * Layout (the blobs part of the OCI image-layout spec): <root>/blobs/sha256/
 * <hex>, where <hex> is the blob's lowercase SHA-256.  The root, blobs and
 * blobs/sha256 are directories owned by the user berth runs as (root in
 * production) with no group or other permission bits (0700); each blob is a
 * regular file of that owner, mode 0400, with one hard link.  Nothing else
 * is ever trusted: every open is a no-follow descriptor open below the
 * store's directory descriptors, and every check is made on the open file.
 * Blobs are looked up by explicit digest only: no tags, no URLs, no network.
 */
#ifndef BERTH_IMAGE_BLOBSTORE_H
#define BERTH_IMAGE_BLOBSTORE_H

#include <stdbool.h>
#include <stdint.h>

#include <berth/error.h>

#include "digest.h"

struct berth_blob_store;

/** A size argument meaning "not declared": the size is not checked. */
#define BERTH_BLOB_ANY_SIZE UINT64_MAX

/**
 * berth_blob_store_open() - open (with @create, first make) the store at @root.
 * @root:   an absolute path without symlinks.
 * @create: make missing directories (mode 0700; missing parents of @root
 *          0755, as "mkdir -p" would) instead of failing.
 * Return: 0; "unsafe-store" (-EPERM) when a directory has another owner,
 * group/other permission bits, or is not a directory; -ENOENT without
 * @create; -EINVAL; -ENOMEM; another errno of open/mkdir.
 * Thread safety: the returned store may be shared by threads for reading.
 */
int berth_blob_store_open(const char *root, bool create, struct berth_blob_store **ret, struct berth_error *reterr);

/** berth_blob_store_free() - close the store (NULL accepted). */
void berth_blob_store_free(struct berth_blob_store *store);

/**
 * berth_blob_open() - open the blob @digest for reading and check it.
 * @size:     the size its descriptor declares, in bytes, or
 *            BERTH_BLOB_ANY_SIZE.
 * @ret_fd:   receives an O_RDONLY descriptor at offset 0 (caller closes).
 * Return: 0; "blob-missing" (-ENOENT); "unsafe-store" (-EPERM: not a regular
 * file, another owner, mode other than 0400, more than one link, a symlink);
 * "size-mismatch" (-EBADMSG); -EINVAL for a malformed digest.
 * The content is not hashed here: see berth_blob_verify_fd().
 */
int berth_blob_open(const struct berth_blob_store *store, const char *digest, uint64_t size, int *ret_fd,
                    struct berth_error *reterr);

/**
 * berth_blob_verify_fd() - hash all of @fd (pread from offset 0; the offset
 * is not moved) and compare with @digest and @size.
 * Return: 0; "digest-mismatch" or "size-mismatch" (-EBADMSG); the read error.
 */
int berth_blob_verify_fd(int fd, const char *digest, uint64_t size, struct berth_error *reterr);

/**
 * berth_blob_read_fd() - read all of @fd (at most @max_bytes, from its
 * offset) and check it against @digest and, unless BERTH_BLOB_ANY_SIZE,
 * @size.  Used for store blobs and for the blobs of a layout being imported.
 * @ret, @ret_len: a malloc'd copy of the content, NUL appended (not counted).
 * Return: 0; -EFBIG for more than @max_bytes (not a refusal: the caller
 * knows what that means for its blob); "size-mismatch" or "digest-mismatch"
 * (-EBADMSG); -EINVAL for a malformed digest; the read error.
 */
int berth_blob_read_fd(int fd, const char *digest, uint64_t size, size_t max_bytes, char **ret, size_t *ret_len,
                       struct berth_error *reterr);

/**
 * berth_blob_read() - open, check, read and verify a small blob (a manifest,
 * config or index) of declared @size bytes (or BERTH_BLOB_ANY_SIZE), at most
 * @max_bytes.
 * @ret, @ret_len: a malloc'd copy of the content, NUL appended (not counted).
 * Return: as berth_blob_open() and berth_blob_verify_fd(); -EFBIG when @size
 * exceeds @max_bytes.
 */
int berth_blob_read(const struct berth_blob_store *store, const char *digest, uint64_t size, size_t max_bytes,
                    char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * berth_blob_import_fd() - copy @size bytes from @src_fd (read from its
 * current offset to EOF) into the store as blob @digest, verifying digest and
 * size while copying, and publish it atomically (an unnamed O_TMPFILE file,
 * fsync'd, mode 0400, then linked in: a crash leaves nothing behind).
 * An existing blob of that name is verified instead: identical content is
 * success (an import is idempotent), different content is "blob-conflict"
 * and nothing is overwritten, ever.
 * @ret_added: optional; true when the blob was new.
 * Return: 0; "digest-mismatch"/"size-mismatch" (-EBADMSG) for a source that
 * does not match (nothing is published); "blob-conflict" (-EEXIST);
 * "unsafe-store" (-EPERM); the errno of a failing system call.
 */
int berth_blob_import_fd(const struct berth_blob_store *store, int src_fd, const char *digest, uint64_t size,
                         bool *ret_added, struct berth_error *reterr);

#endif /* BERTH_IMAGE_BLOBSTORE_H */
