/* SPDX-License-Identifier: MIT */
/*
 * gzframe.h -- an observer of a gzip layer's framing: exactly one member.
 *
 * libarchive's gzip filter decompresses the layer for the extractor, but it
 * reads every member of a multi-member file (RFC 1952 section 2.2 allows
 * them) as one stream, silently stops at bytes after a member that do not
 * start another one, and checks neither the CRC32 nor the ISIZE trailer.
 * Other readers differ (some stop after the first member, some refuse
 * trailing bytes), so a layer must be exactly one member with nothing after
 * it.  The observer sees every compressed byte libarchive is given, in
 * order, and inflates it once more with zlib (gzip wrapper only, RFC 1952;
 * the output is discarded), which ends at the first member's end and checks
 * its header CRC, its CRC32 and its ISIZE.  Then:
 *   - a byte after that member is "gzip-multiple-members" when the bytes
 *     there start a gzip header (ID1 0x1f, ID2 0x8b), else
 *     "gzip-trailing-data" (zero padding included);
 *   - a stream that zlib cannot inflate, or one that ends before the
 *     member's trailer, is "archive-invalid";
 *   - berth_gzframe_finish() compares zlib's output size with what
 *     libarchive produced ("archive-invalid" when they differ).
 *
 * The cost is a second inflate of the layer (the output is never stored).
 * An object is not thread-safe; separate objects are independent.
 */
#ifndef BERTH_IMAGE_GZFRAME_H
#define BERTH_IMAGE_GZFRAME_H

#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>

struct berth_gzframe;

/**
 * berth_gzframe_new() - a new observer at the start of a compressed blob.
 * Return: 0 and *@ret (free with berth_gzframe_free()); -ENOMEM; -EINVAL.
 */
int berth_gzframe_new(struct berth_gzframe **ret);

/** berth_gzframe_free() - free @g (NULL is accepted). */
void berth_gzframe_free(struct berth_gzframe *g);

/**
 * berth_gzframe_feed() - observe the next @len compressed bytes of the blob.
 * Return: 0; a refusal made with berth_image_refuse() ("gzip-multiple-
 * members", "gzip-trailing-data", "archive-invalid"), after which every
 * further call refuses the same way; -ENOMEM; -EINVAL.
 */
int berth_gzframe_feed(struct berth_gzframe *g, const void *data, size_t len, struct berth_error *reterr);

/**
 * berth_gzframe_finish() - the blob ended (every byte of it was fed).
 * @expanded: the uncompressed bytes the other reader (libarchive) produced.
 * Return: 0; the refusal of an earlier feed; "archive-invalid" when the
 * member did not end, or when zlib produced another number of bytes;
 * "gzip-trailing-data" for one lone byte after the member; -EINVAL.
 */
int berth_gzframe_finish(struct berth_gzframe *g, uint64_t expanded, struct berth_error *reterr);

#endif /* BERTH_IMAGE_GZFRAME_H */
