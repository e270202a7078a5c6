/* SPDX-License-Identifier: MIT */
/*
 * refusal.h -- the stable reason codes of image verification and staging.
 *
 * Every refusal of an image (by import, resolve or stage) is reported as a
 * negative errno plus a struct berth_error whose message is
 * "<reason-code>: <detail>".  The reason codes are part of berth's interface
 * (berthctl prints them, docs/images.md lists them, tests assert them): never
 * rename one; add new ones at the end.
 */
#ifndef BERTH_IMAGE_REFUSAL_H
#define BERTH_IMAGE_REFUSAL_H

#include <stdbool.h>

#include <berth/error.h>

enum berth_image_reason {
    /* archive entries (one layer) */
    BERTH_IMAGE_ABSOLUTE_PATH,           /* "absolute-path": a name starting with "/" */
    BERTH_IMAGE_PATH_TRAVERSAL,          /* "path-traversal": a ".." component */
    BERTH_IMAGE_INVALID_PATH,            /* "invalid-path": empty or "." component, NUL, not UTF-8, too long */
    BERTH_IMAGE_SYMLINK_LOOP,            /* "symlink-loop": resolving a guest path met too many (or magic) links */
    BERTH_IMAGE_HARDLINK_MISSING_TARGET, /* "hardlink-missing-target": target absent or not a regular file */
    BERTH_IMAGE_DEVICE_NODE,             /* "device-node": character or block device */
    BERTH_IMAGE_FIFO,                    /* "fifo" */
    BERTH_IMAGE_SOCKET,                  /* "socket" */
    BERTH_IMAGE_SPARSE_FILE,             /* "sparse-file" */
    BERTH_IMAGE_SETUID,                  /* "setuid": setuid or setgid bit */
    BERTH_IMAGE_XATTR,                   /* "xattr": extended attributes or ACLs */
    BERTH_IMAGE_DUPLICATE_ENTRY,         /* "duplicate-entry": the same path twice in one layer */
    BERTH_IMAGE_INVALID_WHITEOUT,        /* "invalid-whiteout" */
    BERTH_IMAGE_PAX_GLOBAL,              /* "pax-global": a PAX global extended header */
    BERTH_IMAGE_NAME_MISMATCH,           /* "name-mismatch": PAX and ustar names disagree */
    BERTH_IMAGE_ARCHIVE_INVALID,         /* "archive-invalid": not a readable tar (or gzip) stream */
    BERTH_IMAGE_UNSUPPORTED_ENTRY,       /* "unsupported-entry": any other entry type */
    BERTH_IMAGE_CONFLICT,                /* "path-conflict": an entry needs a directory where a file is */
    /* budgets */
    BERTH_IMAGE_COMPRESSED_BUDGET, /* "compressed-budget" */
    BERTH_IMAGE_EXPANDED_BUDGET,   /* "expanded-budget" */
    BERTH_IMAGE_ENTRY_BUDGET,      /* "entry-budget" */
    BERTH_IMAGE_LAYER_BUDGET,      /* "layer-budget" */
    BERTH_IMAGE_TIME_BUDGET,       /* "time-budget" */
    /* verification of manifests, configs and blobs */
    BERTH_IMAGE_DIGEST_MISMATCH,  /* "digest-mismatch": a blob's content does not hash to its digest */
    BERTH_IMAGE_SIZE_MISMATCH,    /* "size-mismatch": a blob's size differs from its descriptor */
    BERTH_IMAGE_DIFFID_MISMATCH,  /* "diffid-mismatch": an uncompressed layer does not hash to its DiffID */
    BERTH_IMAGE_FOREIGN_LAYER,    /* "foreign-layer": a foreign or non-distributable layer */
    BERTH_IMAGE_DESCRIPTOR_URLS,  /* "descriptor-urls" */
    BERTH_IMAGE_DESCRIPTOR_DATA,  /* "descriptor-data": embedded data */
    BERTH_IMAGE_MEDIA_TYPE,       /* "media-type": unknown or unsupported (e.g. zstd) media type */
    BERTH_IMAGE_PLATFORM,         /* "platform": not linux on this host's architecture, or a variant/feature */
    BERTH_IMAGE_INVALID_MANIFEST, /* "invalid-manifest" */
    BERTH_IMAGE_INVALID_CONFIG,   /* "invalid-config" */
    BERTH_IMAGE_INVALID_INDEX,    /* "invalid-index" */
    BERTH_IMAGE_INVALID_LAYOUT,   /* "invalid-layout": not an OCI image layout */
    BERTH_IMAGE_BLOB_MISSING,     /* "blob-missing" */
    BERTH_IMAGE_BLOB_CONFLICT,    /* "blob-conflict": a stored blob differs from the one imported */
    BERTH_IMAGE_UNSAFE_STORE,     /* "unsafe-store": wrong owner, mode, type or link count */
    /* framing of one layer: exactly one tar stream, properly terminated, fills it */
    BERTH_IMAGE_TAR_END_MISSING,    /* "tar-end-missing": no end-of-archive marker (two zero blocks) */
    BERTH_IMAGE_TAR_TRAILING_DATA,  /* "tar-trailing-data": a non-zero byte after the first zero block */
    BERTH_IMAGE_GZIP_MEMBERS,       /* "gzip-multiple-members": a second gzip member (RFC 1952 2.2) */
    BERTH_IMAGE_GZIP_TRAILING_DATA, /* "gzip-trailing-data": bytes after the gzip member that are no member */
    BERTH_IMAGE_MIXED_LONG_NAMES,   /* "mixed-long-names": PAX and GNU 'L'/'K' headers for one entry */
    BERTH_IMAGE_REASON_COUNT,
};

/** berth_image_reason_name() - the stable code of @reason ("path-traversal"), or NULL if out of range. */
const char *berth_image_reason_name(enum berth_image_reason reason);

/**
 * berth_image_reason_of() - whether @message starts with a reason code and
 * ": " (the form berth_image_refuse() writes).  Return: true or false.
 */
bool berth_image_reason_of(const char *message);

/**
 * berth_image_refuse() - record a refusal: sets @reterr (may be NULL) to
 * "<code>: <detail>" (detail from @fmt, control characters replaced) and
 * returns the errno class of @reason, negated: -EFBIG for byte, entry and
 * layer budgets, -ETIME for the time budget, -ENOENT for blob-missing,
 * -EPERM for unsafe-store, -EEXIST for blob-conflict, -EBADMSG otherwise.
 */
int berth_image_refuse(struct berth_error *reterr, enum berth_image_reason reason, const char *fmt, ...)
    BERTH_PRINTF(3, 4);

#endif /* BERTH_IMAGE_REFUSAL_H */
