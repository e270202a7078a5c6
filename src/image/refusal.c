/* SPDX-License-Identifier: MIT */
/* refusal.c -- reason codes of image refusals; see refusal.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "refusal.h"

static const char *const names[BERTH_IMAGE_REASON_COUNT] = {
    [BERTH_IMAGE_ABSOLUTE_PATH] = "absolute-path",
    [BERTH_IMAGE_PATH_TRAVERSAL] = "path-traversal",
    [BERTH_IMAGE_INVALID_PATH] = "invalid-path",
    [BERTH_IMAGE_SYMLINK_LOOP] = "symlink-loop",
    [BERTH_IMAGE_HARDLINK_MISSING_TARGET] = "hardlink-missing-target",
    [BERTH_IMAGE_DEVICE_NODE] = "device-node",
    [BERTH_IMAGE_FIFO] = "fifo",
    [BERTH_IMAGE_SOCKET] = "socket",
    [BERTH_IMAGE_SPARSE_FILE] = "sparse-file",
    [BERTH_IMAGE_SETUID] = "setuid",
    [BERTH_IMAGE_XATTR] = "xattr",
    [BERTH_IMAGE_DUPLICATE_ENTRY] = "duplicate-entry",
    [BERTH_IMAGE_INVALID_WHITEOUT] = "invalid-whiteout",
    [BERTH_IMAGE_PAX_GLOBAL] = "pax-global",
    [BERTH_IMAGE_NAME_MISMATCH] = "name-mismatch",
    [BERTH_IMAGE_ARCHIVE_INVALID] = "archive-invalid",
    [BERTH_IMAGE_UNSUPPORTED_ENTRY] = "unsupported-entry",
    [BERTH_IMAGE_CONFLICT] = "path-conflict",
    [BERTH_IMAGE_COMPRESSED_BUDGET] = "compressed-budget",
    [BERTH_IMAGE_EXPANDED_BUDGET] = "expanded-budget",
    [BERTH_IMAGE_ENTRY_BUDGET] = "entry-budget",
    [BERTH_IMAGE_LAYER_BUDGET] = "layer-budget",
    [BERTH_IMAGE_TIME_BUDGET] = "time-budget",
    [BERTH_IMAGE_DIGEST_MISMATCH] = "digest-mismatch",
    [BERTH_IMAGE_SIZE_MISMATCH] = "size-mismatch",
    [BERTH_IMAGE_DIFFID_MISMATCH] = "diffid-mismatch",
    [BERTH_IMAGE_FOREIGN_LAYER] = "foreign-layer",
    [BERTH_IMAGE_DESCRIPTOR_URLS] = "descriptor-urls",
    [BERTH_IMAGE_DESCRIPTOR_DATA] = "descriptor-data",
    [BERTH_IMAGE_MEDIA_TYPE] = "media-type",
    [BERTH_IMAGE_PLATFORM] = "platform",
    [BERTH_IMAGE_INVALID_MANIFEST] = "invalid-manifest",
    [BERTH_IMAGE_INVALID_CONFIG] = "invalid-config",
    [BERTH_IMAGE_INVALID_INDEX] = "invalid-index",
    [BERTH_IMAGE_INVALID_LAYOUT] = "invalid-layout",
    [BERTH_IMAGE_BLOB_MISSING] = "blob-missing",
    [BERTH_IMAGE_BLOB_CONFLICT] = "blob-conflict",
    [BERTH_IMAGE_UNSAFE_STORE] = "unsafe-store",
    [BERTH_IMAGE_TAR_END_MISSING] = "tar-end-missing",
    [BERTH_IMAGE_TAR_TRAILING_DATA] = "tar-trailing-data",
    [BERTH_IMAGE_GZIP_MEMBERS] = "gzip-multiple-members",
    [BERTH_IMAGE_GZIP_TRAILING_DATA] = "gzip-trailing-data",
    [BERTH_IMAGE_MIXED_LONG_NAMES] = "mixed-long-names",
};

const char *berth_image_reason_name(enum berth_image_reason reason)
{
    return (unsigned)reason < BERTH_IMAGE_REASON_COUNT ? names[reason] : NULL;
}

bool berth_image_reason_of(const char *message)
{
    for (int i = 0; message && i < BERTH_IMAGE_REASON_COUNT; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(message, names[i], n) == 0 && message[n] == ':' && message[n + 1] == ' ')
            return true;
    }
    return false;
}

int berth_image_refuse(struct berth_error *reterr, enum berth_image_reason reason, const char *fmt, ...)
{
    char detail[BERTH_ERROR_MESSAGE_MAX];
    int r;
    va_list ap;

    switch (reason) {
    case BERTH_IMAGE_COMPRESSED_BUDGET:
    case BERTH_IMAGE_EXPANDED_BUDGET:
    case BERTH_IMAGE_ENTRY_BUDGET:
    case BERTH_IMAGE_LAYER_BUDGET: r = -EFBIG; break;
    case BERTH_IMAGE_TIME_BUDGET: r = -ETIME; break;
    case BERTH_IMAGE_BLOB_MISSING: r = -ENOENT; break;
    case BERTH_IMAGE_UNSAFE_STORE: r = -EPERM; break;
    case BERTH_IMAGE_BLOB_CONFLICT: r = -EEXIST; break;
    default: r = -EBADMSG; break;
    }
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return berth_error_set(reterr, r, "%s: %s", berth_image_reason_name(reason) ?: "invalid", detail);
}
