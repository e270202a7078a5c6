/* SPDX-License-Identifier: MIT */
/*
 * rootcache.h -- one staged, verified, read-only root filesystem per image
 * manifest digest, shared by every job of that image (docs/images.md,
 * "The root cache").
 *
 * Layout below the cache directory DIR (0700, berthd's own user):
 *   DIR/sha256-<hex>/            0500: one entry per image digest
 *   DIR/sha256-<hex>/rootfs/     the guest's "/" (the stage's tree, plus the
 *                                empty mount points the bundle needs)
 *   DIR/sha256-<hex>/root.json   0400: {"digest", "entries", "bytes",
 *                                "fingerprint", "created_ns", "entry_ino",
 *                                "rootfs": {"ino", "mode", "mtime_ns",
 *                                "ctime_ns"}} (treesum.h)
 *   DIR/.tmp-<hex>-<n>, DIR/.trash-<hex>-<n>   being staged or removed
 * An entry is staged into a .tmp directory, summed, sealed and renamed to
 * its name in one step, so a crash never leaves a half-made entry under a
 * real name (leftovers are removed when the cache is opened).
 *
 * Checks: on every use the entry, its marker and its rootfs are fstat'ed
 * without following them (owner, type, mode, inode, and the rootfs' mtime
 * and ctime against the marker; the marker's inode and ctime against what
 * was read); the first use of an entry by this process (an entry found on
 * disk when the cache was opened) also walks the whole tree and compares
 * entries, bytes and fingerprint.  An entry failing either is renamed out
 * of the way and removed, and the image staged again: it is never used.
 *
 * Holders: each job using an entry is a holder (its run id).  An entry with
 * a holder is never evicted; entries without one are evicted least recently
 * used first while the entries' bytes exceed the bound.
 *
 * Thread safety: every function may be called from any thread; one mutex
 * guards the table (never held while staging), and one more serialises
 * staging, so that concurrent holds of one image stage it once.
 */
#ifndef BERTH_ROOTCACHE_H
#define BERTH_ROOTCACHE_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "log.h"

/**
 * berth_rootcache_stage_fn - build the root filesystem of the image
 * @digest ("sha256:<hex>") into the empty directory @target_dirfd
 * (borrowed).  Return 0 or a negative errno with reterr set; on failure
 * the cache removes whatever it left.  Called with no cache lock held.
 */
typedef int (*berth_rootcache_stage_fn)(void *userdata, const char *digest, int target_dirfd,
                                        struct berth_error *reterr);

/**
 * struct berth_rootcache_params - how to open a cache.
 * @directory:    absolute path of DIR; created (0700) when absent; its
 *                parent must exist.  Copied.
 * @max_bytes:    the bound on the entries' bytes (treesum.h): after a
 *                stage or a release, unused entries are evicted until the
 *                sum is at most this (0: keep no unused entry).  Entries
 *                in use are never evicted, so the sum can exceed it.
 * @mount_points: NULL-terminated top-level names made as empty
 *                directories (0755) in a staged root when absent, before
 *                it is sealed, so that no runtime creates them in a shared
 *                root; borrowed for the cache's lifetime.  May be NULL.
 * @logger:       where evictions and refused entries are logged; borrowed.
 */
struct berth_rootcache_params {
    const char *directory;
    uint64_t max_bytes;
    const char *const *mount_points;
    const struct berth_logger *logger;
};

struct berth_rootcache;

/**
 * berth_rootcache_open() - open (and create) the cache at @p->directory,
 * remove leftovers and entries whose marker is unreadable, and load the
 * rest (last used = the marker's mtime).
 * Return: 0 and *@ret; -ENOMEM; -EINVAL (a relative directory); or the
 * error of creating or opening DIR (it must be a directory of the
 * effective uid, mode 0700: -EPERM otherwise).
 */
int berth_rootcache_open(const struct berth_rootcache_params *p, struct berth_rootcache **ret,
                         struct berth_error *reterr);

/** berth_rootcache_free() - free the in-memory table (the directory stays); accepts NULL. */
void berth_rootcache_free(struct berth_rootcache *c);

/**
 * berth_rootcache_hold() - the root of image @digest for the holder
 * @holder (a job's run id, at most 63 bytes), staged with @stage first
 * when the cache has no sound entry for it.  Holding twice with the same
 * holder is one hold.
 * @ret_path: receives the malloc'd absolute path of the entry's rootfs.
 * Return: 0 (a cached entry), 1 (staged now); -EINVAL (bad digest or
 * holder); -ENOMEM; @stage's error; or the error of sealing or publishing
 * the entry (nothing is held then).
 */
int berth_rootcache_hold(struct berth_rootcache *c, const char *digest, const char *holder,
                         berth_rootcache_stage_fn stage, void *userdata, char **ret_path, struct berth_error *reterr);

/**
 * berth_rootcache_adopt() - record @holder as a holder of @digest without
 * checking or staging anything (a job that was running when berthd
 * stopped).  Return: 0; -EINVAL; -ENOMEM.
 */
int berth_rootcache_adopt(struct berth_rootcache *c, const char *digest, const char *holder,
                          struct berth_error *reterr);

/** berth_rootcache_release() - drop @holder from whatever entry it holds (if any), then evict to the bound. */
void berth_rootcache_release(struct berth_rootcache *c, const char *holder);

/**
 * berth_rootcache_list() - the cache as JSON: {"max_bytes", "bytes",
 * "roots": [{"digest", "entries", "bytes", "jobs" (holders),
 * "created_ns", "last_used_ns" (decimal strings), "verified" (whether this
 * process has walked it)}]}, most recently used first.
 * Return: 0 and *@ret (the caller's); -ENOMEM.
 */
int berth_rootcache_list(struct berth_rootcache *c, json_t **ret, struct berth_error *reterr);

/**
 * berth_rootcache_prune() - remove every entry no holder uses.
 * @ret_removed, @ret_bytes: receive how many entries and bytes went.
 * Return: 0; or the first removal error (the rest are still tried).
 */
int berth_rootcache_prune(struct berth_rootcache *c, uint64_t *ret_removed, uint64_t *ret_bytes,
                          struct berth_error *reterr);

#endif /* BERTH_ROOTCACHE_H */
