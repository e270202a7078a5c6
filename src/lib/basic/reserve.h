/* SPDX-License-Identifier: MIT */
/*
 * reserve.h -- disk space held back for the writes that must not fail when
 * a filesystem fills up, and a check that space has returned.
 *
 * A reserve is a regular file whose blocks are really allocated: fallocate(2)
 * mode 0 where the filesystem supports it (ext4, xfs, btrfs and tmpfs count
 * the blocks at once, so they are not free for anyone else), otherwise
 * written with a non-zero, poorly compressible pattern (a filesystem that
 * compresses or deduplicates would not keep zeros).  Removing the file gives
 * the space back to the filesystem: whoever writes next gets it, so the
 * owner of a reserve releases it only right before the write it was kept
 * for, and refuses other writes until it has been re-created (journal.h).
 *
 * Quota: a reserve counts against the owner's quota like any file, so it
 * also keeps back quota; -EDQUOT is a "no space" error like -ENOSPC.
 *
 * Not thread-safe for the same file; the functions hold no state.
 */
#ifndef BERTH_RESERVE_H
#define BERTH_RESERVE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include <berth/error.h>

/**
 * berth_space_error() - whether @r, a negative errno, says that a
 * filesystem is out of space for the caller: -ENOSPC (no blocks or inodes
 * left) or -EDQUOT (the caller's quota is used up).
 */
static inline bool berth_space_error(int r)
{
    return r == -ENOSPC || r == -EDQUOT;
}

/**
 * berth_reserve_fill() - make the file @name in directory @dirfd a reserve
 * of exactly @bytes allocated bytes: created mode 0600 when absent (never
 * through a symlink), shortened when longer, allocated when any of it is
 * not, then fsync'd with its directory.  A reserve already whole is left
 * alone (nothing is written).
 * @dirfd: the directory, opened O_RDONLY | O_DIRECTORY (so it can be fsync'd).
 * @name:  one path component.
 * @bytes: the size, > 0.
 *
 * Return: 0; -EINVAL (bad arguments); -ELOOP (@name is a symlink);
 * -EBADFD/-EPERM/-EMLINK (@name is not a private regular file of this
 * user with one link); -ENOSPC or -EDQUOT (no room: the file is removed,
 * so that a partial reserve is never taken for a whole one); another
 * negative errno of open, fallocate, write or fsync (the file is removed
 * too).
 */
int berth_reserve_fill(int dirfd, const char *name, uint64_t bytes, struct berth_error *reterr);

/**
 * berth_reserve_release() - remove the reserve @name from @dirfd, giving
 * its space back to the filesystem at once (nothing else may hold it open).
 * Return: 0; -ENOENT (there was none); another negative errno of unlinkat(2).
 */
int berth_reserve_release(int dirfd, const char *name, struct berth_error *reterr);

/**
 * berth_reserve_held() - whether @name in @dirfd is a whole reserve of
 * @bytes (a regular file of that size with that much allocated).
 */
bool berth_reserve_held(int dirfd, const char *name, uint64_t bytes);

/**
 * berth_reserve_probe() - whether @bytes more could be allocated in the
 * filesystem of @dirfd now: an anonymous file (O_TMPFILE; a named
 * ".berth-probe-PID" where the filesystem lacks it, removed at once) gets
 * @bytes allocated as berth_reserve_fill() would and is dropped.  Nothing
 * is left behind, even by a crash in the middle when O_TMPFILE works.
 * Return: 0 (there is room); -ENOSPC or -EDQUOT; -EINVAL; another negative
 * errno.
 */
int berth_reserve_probe(int dirfd, uint64_t bytes, struct berth_error *reterr);

#endif /* BERTH_RESERVE_H */
