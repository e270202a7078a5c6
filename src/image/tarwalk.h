/* SPDX-License-Identifier: MIT */
/*
 * tarwalk.h -- a minimal observer of a raw (uncompressed) tar stream.
 *
 * The extractor reads archives with libarchive, which does not expose two
 * facts the layer rules need: a PAX global header ("pax-global") and a PAX
 * "path"/"linkpath" record that differs from the ustar name fields where
 * those fields could have held it exactly ("name-mismatch").  The observer
 * sees every byte libarchive is given, in order, and walks the 512-byte
 * headers in lockstep (POSIX.1-2008 pax and ustar formats, "pax" utility,
 * plus the GNU 'L'/'K' long names).
 *
 * It is deliberately stricter than libarchive wherever the two could
 * disagree on where the next header starts: a non-regular entry with a
 * non-zero size, a regular entry whose name ends in "/" with data, a second
 * PAX or long-name header for the same entry, an unknown type flag, a
 * PAX record or long name over 1 MiB, or a bad checksum is refused.  It is
 * also stricter about the framing, which libarchive does not check: the
 * archive must end with the end-of-archive marker, two zero blocks (POSIX
 * pax, "ustar Interchange Format"), where libarchive stops at the first
 * one; anything after the first zero block must be zero bytes (padding to
 * a record size, as GNU tar writes, is fine).
 *
 * Reason codes (refusal.h): "pax-global", "name-mismatch", "sparse-file"
 * (GNU 'S', PAX GNU.sparse.*, SCHILY.realsize, SUN.holesdata), "xattr" (PAX
 * SCHILY.xattr.*, LIBARCHIVE.xattr.*, SCHILY.acl.*, RHT.security.*),
 * "socket", "fifo", "device-node" (star's PAX SCHILY.filetype record: a
 * tar header has no socket type flag, this record is the only way a tar
 * stream can declare one), "invalid-path" (a NUL byte or invalid UTF-8 in
 * a PAX path), "mixed-long-names" (a PAX 'x' header and a GNU 'L' or 'K'
 * header before one entry), "tar-trailing-data" (a non-zero byte after the
 * first zero block), "tar-end-missing" (at berth_tarwalk_finish()), and
 * "unsupported-entry" (an unknown type flag, and '7': see header()); all
 * else it cannot parse is "archive-invalid".
 *
 * An object is not thread-safe; separate objects are independent.
 */
#ifndef BERTH_IMAGE_TARWALK_H
#define BERTH_IMAGE_TARWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>

/** Largest PAX extended header or GNU long name body accepted (1 MiB). */
#define BERTH_TARWALK_META_MAX ((size_t)1 << 20)

struct berth_tarwalk;

/**
 * berth_tarwalk_new() - a new observer at the start of a stream.
 * Return: 0 and *@ret (free with berth_tarwalk_free()); -ENOMEM; -EINVAL.
 */
int berth_tarwalk_new(struct berth_tarwalk **ret);

/** berth_tarwalk_free() - free @w (NULL is accepted). */
void berth_tarwalk_free(struct berth_tarwalk *w);

/**
 * berth_tarwalk_feed() - observe the next @len bytes of the stream.
 * Return: 0; a refusal made with berth_image_refuse() (see above), after
 * which the observer refuses every further call the same way; -ENOMEM.
 */
int berth_tarwalk_feed(struct berth_tarwalk *w, const void *data, size_t len, struct berth_error *reterr);

/**
 * berth_tarwalk_finish() - the stream ended: refuses a stream that ends
 * inside a header, a member's data or its padding ("archive-invalid"), or
 * without both zero blocks of the end-of-archive marker ("tar-end-missing").
 * Return: 0 or the refusal.
 */
int berth_tarwalk_finish(struct berth_tarwalk *w, struct berth_error *reterr);

/**
 * struct berth_tarwalk_member - where a member began and how much data it has.
 * @offset: stream offset of the first header of its chain (a PAX 'x' or GNU
 *          'L'/'K' header, else its own ustar header), in bytes.
 * @size:   its data size in bytes (the PAX "size" record, else the field).
 */
struct berth_tarwalk_member {
    uint64_t offset;
    uint64_t size;
};

/**
 * berth_tarwalk_next_member() - take the oldest member observed and not yet
 * taken.  The extractor compares each with what libarchive reports for the
 * entry it returns (archive_read_header_position(), archive_entry_size()):
 * any difference means the two readers disagree on the archive's structure,
 * so a rule checked by one could be bypassed in the other.
 * Return: 0; -ENOENT when no member is pending; -EINVAL.
 */
int berth_tarwalk_next_member(struct berth_tarwalk *w, struct berth_tarwalk_member *ret);

#endif /* BERTH_IMAGE_TARWALK_H */
