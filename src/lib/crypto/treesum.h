/* SPDX-License-Identifier: MIT */
/*
 * treesum.h -- a fingerprint of a directory tree's metadata: what the root
 * cache records when it publishes a staged root and compares when it
 * verifies one again (src/lib/broker/rootcache.h).
 */
#ifndef BERTH_TREESUM_H
#define BERTH_TREESUM_H

#include <stdint.h>

#include <berth/error.h>

#include "digest.h"

/** Deepest directory nesting berth_tree_sum() walks (below it: -ELOOP). */
#define BERTH_TREESUM_MAX_DEPTH 1024

/**
 * struct berth_tree_sum - what berth_tree_sum() found.
 * @entries:     directory entries below the root (every type, the root not
 *               counted).
 * @bytes:       st_size summed over the regular files (a hard-linked file
 *               counts once per name).
 * @fingerprint: SHA-256 over one record per entry, in a fixed order (each
 *               directory's names sorted bytewise, depth first): its path
 *               relative to the root, type and mode, uid, gid, size,
 *               inode, link count, mtime and ctime (ns) and, for a
 *               symlink, its target.  A file added, removed, renamed,
 *               written, chmod'ed, chown'ed, replaced or linked changes at
 *               least its ctime or inode, so it changes the fingerprint;
 *               file content itself is not read.
 */
struct berth_tree_sum {
    uint64_t entries;
    uint64_t bytes;
    uint8_t fingerprint[BERTH_SHA256_LEN];
};

/**
 * berth_tree_sum() - walk the tree below the directory @dirfd (borrowed)
 * through descriptors only (openat2 below @dirfd, never following a
 * symlink) and fill @ret.
 * Return: 0; -ELOOP (deeper than BERTH_TREESUM_MAX_DEPTH); -ENOMEM; -EIO
 * (hashing); or the errno of a failing openat2/fstatat/readlinkat/getdents.
 * Thread-safe (separate calls share nothing).
 */
int berth_tree_sum(int dirfd, struct berth_tree_sum *ret, struct berth_error *reterr);

#endif /* BERTH_TREESUM_H */
