/* SPDX-License-Identifier: MIT */
/*
 * berth/file.h -- what a trusted file must look like before berth reads it.
 *
 * Shared by libberth's safe-file helpers and the plugin host table
 * (struct berth_host in <berth/plugin.h>).  Part of the plugin ABI: fields are
 * never reordered or removed.
 */
#ifndef BERTH_FILE_H
#define BERTH_FILE_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @uid value meaning "any owner". */
#define BERTH_UID_ANY ((uint32_t)-1)

/**
 * struct berth_file_expect - checks applied to an open file (fstat(2)).
 * @type:      required file type as the S_IFMT bits of st_mode (S_IFREG,
 *             S_IFDIR); 0 accepts any type.
 * @uid:       required owner, or BERTH_UID_ANY.
 * @mode_mask: permission bits (07777) that are checked ...
 * @mode:      ... and the value they must have: (st_mode & mode_mask) == mode.
 *             Exact mode 0600: mask 07777, mode 0600.  "Not writable by group
 *             or others": mask 0022, mode 0.  Mask 0 checks nothing.
 * @max_size:  largest accepted st_size in bytes; 0 means no bound.
 * @one_link:  non-zero to require st_nlink == 1 (no other hard link can
 *             change the file behind berth's back).
 */
struct berth_file_expect {
    uint32_t type;
    uint32_t uid;
    uint32_t mode_mask;
    uint32_t mode;
    uint64_t max_size;
    uint32_t one_link;
    uint32_t reserved; /**< must be 0 */
};

/** berth_publish flag: replace an existing file instead of failing with -EEXIST. */
#define BERTH_PUBLISH_REPLACE 0x1u

#ifdef __cplusplus
}
#endif

#endif /* BERTH_FILE_H */
