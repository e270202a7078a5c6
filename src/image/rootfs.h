/* SPDX-License-Identifier: MIT */
/*
 * rootfs.h -- confined write operations on a root filesystem descriptor.
 *
 * Directories are resolved with openat2(2) (Linux >= 5.6) relative to the
 * root descriptor with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: guest
 * symlinks on the way are followed as if the root were "/" (as containerd
 * does), so "..", absolute targets and "../../.." all stay inside the root,
 * and /proc magic links are refused.  The final component is then created
 * or removed with *at() calls on the resolved directory that never follow
 * it (O_NOFOLLOW, O_EXCL, AT_SYMLINK_NOFOLLOW).  Permission bits only are
 * ever set (mode & 0777, plus the sticky bit on directories); ownership is the caller's, never changed.
 *
 * Paths given here are already normalised by the caller: relative, no
 * empty, "." or ".." component, no trailing "/"; "" names the root itself.
 * Refusals are made with berth_image_refuse(): "symlink-loop" (ELOOP while
 * resolving), "path-conflict" (a non-directory, or a dangling symlink, where
 * a directory is needed; a directory this layer created where a
 * non-directory goes), "hardlink-missing-target".  Other failures are the
 * host's negative errno, with detail in @reterr.
 *
 * Thread safety: the functions keep no state; concurrent calls on the same
 * tree are as safe as the *at() calls they make.
 */
#ifndef BERTH_IMAGE_ROOTFS_H
#define BERTH_IMAGE_ROOTFS_H

#include <stdbool.h>
#include <sys/types.h>

#include <berth/error.h>

/**
 * berth_rootfs_open_dir() - resolve the directory @dir inside the root.
 * @rootfd: the root directory descriptor (borrowed).
 * @dir:    a normalised relative path, "" for the root.
 * @create: create missing components as directories with mode 0755.
 * @ret_fd: receives an O_PATH | O_DIRECTORY descriptor (the caller closes
 *          it); written only on success.
 * Return: 0; "path-conflict" (-EBADMSG); "symlink-loop" (-EBADMSG); -ENOENT
 * when a component is missing and @create is false (no message); another
 * negative errno of openat2(2) or mkdirat(2).
 */
int berth_rootfs_open_dir(int rootfd, const char *dir, bool create, int *ret_fd, struct berth_error *reterr);

/**
 * berth_rootfs_make_room() - clear the way for a new entry @name in the
 * resolved directory @dirfd.
 * @want_dir:       the new entry is a directory: an existing directory is
 *                  kept (returns 1).
 * @may_remove_dir: an existing directory in the way of a non-directory may
 *                  be removed with its contents (a lower layer's); when
 *                  false it is a "path-conflict".
 * Existing non-directories are unlinked (never followed).
 * Return: 1 (existing directory kept), 0 (nothing left at @name), a refusal
 * or a negative errno.
 */
int berth_rootfs_make_room(int dirfd, const char *name, bool want_dir, bool may_remove_dir, struct berth_error *reterr);

/**
 * berth_rootfs_mkdir() - create the directory @name in @dirfd (mode 0700),
 * or keep the existing one, then set its permission bits to @mode | 0700 so
 * that the extraction can still write into it (the caller applies the final
 * mode later with berth_rootfs_chmod_dir()).
 * Return: 0 or a negative errno.
 */
int berth_rootfs_mkdir(int dirfd, const char *name, mode_t mode, struct berth_error *reterr);

/**
 * berth_rootfs_chmod_dir() - set the permission bits of the directory @name
 * in @dirfd (or of @dirfd itself when @name is "") to @mode & 01777, without
 * following a symlink.
 * Return: 0; -ENOTDIR when @name is not a directory; another negative errno.
 */
int berth_rootfs_chmod_dir(int dirfd, const char *name, mode_t mode, struct berth_error *reterr);

/**
 * berth_rootfs_create_file() - create the regular file @name in @dirfd
 * (O_CREAT | O_EXCL | O_NOFOLLOW, mode 0600 until the caller's fchmod(2)).
 * @ret_fd: receives the descriptor, open for writing (the caller closes it).
 * Return: 0 or a negative errno (-EEXIST when something is in the way).
 */
int berth_rootfs_create_file(int dirfd, const char *name, int *ret_fd, struct berth_error *reterr);

/**
 * berth_rootfs_symlink() - create the symlink @name in @dirfd pointing to
 * @target verbatim (never resolved on the host).
 * Return: 0 or a negative errno of symlinkat(2).
 */
int berth_rootfs_symlink(int dirfd, const char *name, const char *target, struct berth_error *reterr);

/**
 * berth_rootfs_hardlink() - link @name in @dirfd to the existing regular
 * file @target (a normalised path resolved inside the root like any other).
 * @may_remove_dir: as berth_rootfs_make_room(), for what is at @name.
 * Return: 0; "hardlink-missing-target" when @target is absent or not a
 * regular file (a symlink is not followed); the refusals of
 * berth_rootfs_make_room(); a negative errno.
 */
int berth_rootfs_hardlink(int rootfd, const char *target, int dirfd, const char *name, bool may_remove_dir,
                          struct berth_error *reterr);

/**
 * berth_rootfs_remove() - remove @name from @dirfd with everything below it
 * (a whiteout); a missing @name is not an error.  Symlinks are removed,
 * never followed.
 * Return: 0 or the first negative errno.
 */
int berth_rootfs_remove(int dirfd, const char *name, struct berth_error *reterr);

#endif /* BERTH_IMAGE_ROOTFS_H */
