/* SPDX-License-Identifier: MIT */
/*
 * extract.h -- apply OCI image layers to a root filesystem, safely.
 *
 * Reading is libarchive's (tar, and gzip through its filter); writing is
 * berth's own and never leaves the root: every parent directory is resolved
 * with openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) relative to the root
 * descriptor (guest symlinks are followed *inside* the root, as containerd
 * does, never on the host), and the final component is created with *at()
 * calls that do not follow it (O_NOFOLLOW, AT_SYMLINK_NOFOLLOW, O_EXCL).
 *
 * Rules (reason codes from refusal.h): names must be relative ("absolute-
 * path"), without ".." ("path-traversal") or empty/"." components, NUL
 * bytes, invalid UTF-8 or more than PATH_MAX bytes ("invalid-path"); a
 * single leading "./" and the "./" root entry are accepted and normalised.
 * Refused entries: character/block devices ("device-node"), FIFOs ("fifo"),
 * sockets ("socket"), sparse files ("sparse-file"), setuid/setgid bits
 * ("setuid"), extended attributes or ACLs ("xattr"), the same path twice in
 * one layer ("duplicate-entry"), PAX global headers ("pax-global"), a PAX
 * path or linkpath that differs from the ustar name where the ustar name
 * could have held it ("name-mismatch"), PAX and GNU long-name headers for
 * one entry ("mixed-long-names"), type '7' ("unsupported-entry").  Framing
 * (docs/images.md "Framing"): the tar stream must end with its two zero
 * blocks ("tar-end-missing") followed by nothing but zero bytes
 * ("tar-trailing-data"); a gzip layer must be exactly one gzip member
 * ("gzip-multiple-members") with nothing after it ("gzip-trailing-data")
 * and a right CRC32 and ISIZE (RFC 1952 2.3.1; "archive-invalid").
 * Hard links must name an existing regular file already in the root
 * ("hardlink-missing-target").  Whiteouts
 * (".wh.NAME", ".wh..wh..opq" per the OCI image-spec layer section) remove
 * only what lower layers created, are never created as files themselves,
 * and a malformed one (".wh." alone, ".wh..", ".wh...", any other ".wh..wh."
 * name, or a whiteout that is not a regular file) is "invalid-whiteout".
 * Modes keep the permission bits (0777), and on directories the sticky bit;
 * the "./" root entry never changes the staging directory itself; ownership
 * is the caller's.
 * An existing non-directory in the way of a directory entry is replaced, as
 * is an existing entry of a later layer's file, symlink or hard link.
 */
#ifndef BERTH_IMAGE_EXTRACT_H
#define BERTH_IMAGE_EXTRACT_H

#include <stdint.h>

#include <berth/error.h>

#include "tree.h"

#include "digest.h"
#include "budget.h"

/** How a layer blob is compressed (from its OCI media type). */
enum berth_layer_compression {
    BERTH_LAYER_TAR,  /* application/vnd.oci.image.layer.v1.tar */
    BERTH_LAYER_GZIP, /* ...tar+gzip, and the Docker v2 equivalent */
};

struct berth_extract;

/**
 * berth_extract_new() - start applying layers to the root filesystem @rootfd.
 * @rootfd:      an empty directory, opened O_RDONLY|O_DIRECTORY; borrowed,
 *               must stay open until berth_extract_free().
 * @limits:      budgets (expanded bytes, entries and wall time are enforced
 *               here; compressed bytes and layers by the caller); copied.
 * @deadline_ns: CLOCK_MONOTONIC time after which extraction stops with
 *               "time-budget" (berth_deadline_passed(): also when the clock
 *               cannot be read).
 * Return: 0; -EINVAL; -ENOMEM.  Not thread-safe; one extraction per object.
 */
int berth_extract_new(int rootfd, const struct berth_stage_limits *limits, int64_t deadline_ns,
                      struct berth_extract **ret);

/**
 * berth_extract_layer() - apply the next layer (layers in manifest order,
 * the first one with index 0).
 * @blobfd:  the layer blob, positioned at offset 0; read to EOF, not closed.
 *           The caller has already verified its compressed digest.
 * @diff_id: the layer's DiffID from the image config: the SHA-256 of the
 *           uncompressed tar stream, verified while streaming (every byte of
 *           the stream, trailing blocks included).
 * Return: 0; a refusal from refusal.h (message "<code>: <detail>"); -ENOMEM;
 * -EIO or another errno for host failures.  After a failure the root holds a
 * partial tree: the caller removes it (berth_tree_clear()).
 */
int berth_extract_layer(struct berth_extract *x, int blobfd, enum berth_layer_compression compression,
                        const uint8_t diff_id[BERTH_SHA256_LEN], struct berth_error *reterr);

/** berth_extract_stats() - add what was consumed so far into @stats. */
void berth_extract_stats(const struct berth_extract *x, struct berth_stage_stats *stats);

/** berth_extract_free() - free @x (NULL is accepted); the root is left as it is. */
void berth_extract_free(struct berth_extract *x);

#endif /* BERTH_IMAGE_EXTRACT_H */
