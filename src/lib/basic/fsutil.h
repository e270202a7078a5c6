/* SPDX-License-Identifier: MIT */
/*
 * fsutil.h -- opening, checking, reading and publishing trusted files.
 *
 * Trusted files (keys, policies, configs, plugins, images, inputs) are opened
 * through descriptors that never follow a symlink and never leave the
 * directory they were opened from (openat2(2) with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, Linux >= 5.6), then checked with fstat(2) on the very
 * descriptor that will be read, so there is no window between check and use.
 * Files are published atomically: an exclusive temporary file in the target
 * directory, fsync(2), renameat2(2) with RENAME_NOREPLACE (or plain
 * rename(2) in replace mode), then fsync(2) of the directory.
 *
 * Every function is thread-safe.  All descriptors are O_CLOEXEC.
 */
#ifndef BERTH_FSUTIL_H
#define BERTH_FSUTIL_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <berth/error.h>
#include <berth/file.h>

/**
 * berth_open_beneath() - open @path relative to @dirfd without following any
 * symlink and without leaving @dirfd.
 * @dirfd: a directory descriptor (O_PATH is enough) or AT_FDCWD.
 * @path:  a relative path; ".." may be used only while it stays beneath
 *         @dirfd.
 * @flags: open(2) flags; O_CLOEXEC is added (RESOLVE_NO_SYMLINKS also
 *         refuses a symlink as the last component, with -ELOOP).
 * @mode:  creation mode when @flags has O_CREAT.
 *
 * Return: the new descriptor, or -ELOOP (a symlink on the way), -EXDEV (the
 * path is absolute or leaves @dirfd), -ENOSYS (kernel without openat2), or
 * another negative errno from openat2(2).
 */
int berth_open_beneath(int dirfd, const char *path, int flags, mode_t mode, struct berth_error *reterr);

/**
 * berth_open_trusted() - open an absolute @path with no symlink in any
 * component (the root is the only anchor).
 * Return: as berth_open_beneath(); -EINVAL when @path is not absolute.
 */
int berth_open_trusted(const char *path, int flags, mode_t mode, struct berth_error *reterr);

/**
 * berth_file_check() - apply @expect (see <berth/file.h>) to the open @fd.
 * @what:   how to name the file in messages (usually its path).
 * @ret_st: optional; receives the fstat(2) result when the checks pass.
 *
 * Return: 0; -EBADFD (wrong type), -EPERM (wrong owner or mode bits),
 * -EMLINK (more than one hard link), -EFBIG (bigger than @expect->max_size),
 * -EINVAL (bad @expect), or the fstat(2) error.
 */
int berth_file_check(int fd, const char *what, const struct berth_file_expect *expect, struct stat *ret_st,
                     struct berth_error *reterr);

/**
 * berth_private_file_check() - berth_file_check() for a file only berth's
 * own user may touch (the journal and the files beside it): a regular file
 * owned by the effective uid, permission bits exactly 0600, one hard link.
 * Return: as berth_file_check().
 */
int berth_private_file_check(int fd, const char *what, struct stat *ret_st, struct berth_error *reterr);

/**
 * BERTH_UNTRUSTED_MODE - the permission bits a trusted file or directory
 * must not have: write permission for its group or for others.
 */
#define BERTH_UNTRUSTED_MODE ((mode_t)(S_IWGRP | S_IWOTH))

/**
 * berth_trusted_file_check() - the trusted-file rule, for a file berth
 * executes, loads or lets decide a verdict (a runtime binary, the OCI shim,
 * a plugin, the probe program): nobody but root and the invoking user can
 * have changed it, or can change it while it is used.  Checked, in order:
 *
 *   1. @fd is a regular file                                      -EBADFD
 *   2. not writable by group or others (BERTH_UNTRUSTED_MODE)     -EPERM
 *   3. exactly one hard link (no name elsewhere to change it by)  -EMLINK
 *   4. at most @max_size bytes, when @max_size is not 0           -EFBIG
 *   5. owned by root or by the effective uid                      -EPERM
 *   6. every directory above @path, from "/" down, reached with
 *      no symlink (berth_open_beneath())                          -ELOOP
 *      is owned by root or by the effective uid                   -EPERM
 *      and not writable by group or others, unless it is sticky   -EPERM
 *      (like /tmp: in a sticky directory only an entry's owner, the
 *      directory's owner or root can rename or remove the entry, and
 *      the entry is checked to be root's or the caller's itself)
 *   7. @path is not a symlink                                     -ELOOP
 *      and still names the inode of @fd (it was not replaced or
 *      removed since it was opened)                               -EAGAIN
 *
 * @fd:       a descriptor of the file, opened from @path with
 *            berth_open_trusted() (or berth_open_beneath() from a directory
 *            at @path's parent); O_PATH is enough.  Open it with O_NONBLOCK
 *            so that a FIFO at the path cannot block the open: rule 1
 *            refuses it.  Borrowed.
 * @path:     the absolute path @fd was opened at ("." and empty components
 *            are skipped, ".." goes up one level; nothing is resolved).
 *            Messages name it.
 * @max_size: the largest accepted st_size in bytes, or 0 for no bound.
 * @ret_st:   optional; receives the fstat(2) of @fd when every rule holds.
 *
 * Return: 0; the codes above (reterr says which file or directory broke
 * which rule); -EINVAL (bad arguments or a relative @path); -ENOMEM; or the
 * errno of fstat(2) or of opening a directory on the way.  Thread-safe: it
 * reads only the file system and geteuid(2).
 */
int berth_trusted_file_check(int fd, const char *path, uint64_t max_size, struct stat *ret_st,
                             struct berth_error *reterr);

/**
 * berth_trusted_dir_check() - the same rule for a directory whose entries
 * berth trusts (the plugin directory): @fd is a directory (-EBADFD), owned
 * by root or the effective uid (-EPERM), not writable by group or others
 * even when sticky (-EPERM), with every directory above @path as in rule 6
 * of berth_trusted_file_check() and @path still naming @fd (-EAGAIN).
 * @fd:   a descriptor of the directory (O_PATH is enough), opened from
 *        @path with berth_open_trusted(); borrowed.
 * @path: its absolute path, as for berth_trusted_file_check().
 * Return: as berth_trusted_file_check(), without -EMLINK and -EFBIG.
 * Thread-safe.
 */
int berth_trusted_dir_check(int fd, const char *path, struct berth_error *reterr);

/**
 * berth_read_fd() - read @fd from its current offset to EOF, at most
 * @max_bytes bytes.
 * @ret:     receives a malloc'd buffer with a NUL appended (not counted).
 * @ret_len: receives the byte count.
 * Return: 0; -EFBIG when more than @max_bytes bytes are readable (nothing is
 * returned); -ENOMEM; the read(2) error.
 */
int berth_read_fd(int fd, size_t max_bytes, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * berth_read_file_at() - open, check and read a trusted file.
 * @dirfd, @path: as berth_open_beneath(); with @dirfd == AT_FDCWD an absolute
 *                @path is opened with berth_open_trusted().
 * @expect:       the checks; @expect->max_size bounds the read as well and
 *                must not be 0.
 * Return: 0 or any error of the functions above.
 */
int berth_read_file_at(int dirfd, const char *path, const struct berth_file_expect *expect, char **ret, size_t *ret_len,
                       struct berth_error *reterr);

/**
 * berth_publish_at() - atomically create (or with BERTH_PUBLISH_REPLACE,
 * replace) the file @name in directory @dirfd with @len bytes of @data and
 * permission bits @mode (umask does not apply).
 * @dirfd: a directory opened for reading (O_RDONLY | O_DIRECTORY), so that it
 *         can be fsync'd.
 * @name:  one path component (see berth_name_valid()).
 *
 * Without BERTH_PUBLISH_REPLACE an existing @name is never modified.  On
 * failure the temporary file is removed and @name is unchanged, except that
 * if only the final directory fsync(2) fails the file is in place but its
 * durability is unknown (-EIO is returned).
 *
 * Return: 0; -EEXIST; -EINVAL (bad name or flags); -EIO; or the errno of the
 * failing system call.
 */
int berth_publish_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                     struct berth_error *reterr);

/**
 * struct berth_publish - a file being published in steps, for content that
 * is streamed rather than held in memory: berth_publish_begin() creates the
 * exclusive temporary file ".#<name>.<random>" in @dirfd and opens it
 * (O_RDWR) as @fd; the caller writes and checks it; berth_publish_commit()
 * makes it @name exactly as berth_publish_at() does, or
 * berth_publish_abort() removes it.  A crash in between leaves only the
 * temporary name, never @name.
 */
struct berth_publish {
    int dirfd; /* borrowed: must stay open until commit or abort */
    int fd;    /* the temporary file, -1 once committed or aborted */
    char name[NAME_MAX + 1];
    char tmp[NAME_MAX + 1];
};

/**
 * berth_publish_begin() - start publishing @name in @dirfd (see struct
 * berth_publish).  Return: 0 with @p->fd open; -EINVAL (bad name); -EIO
 * (no randomness); or the errno of openat(2).  On failure @p->fd is -1.
 */
int berth_publish_begin(int dirfd, const char *name, struct berth_publish *p, struct berth_error *reterr);

/**
 * berth_publish_commit() - fchmod(@mode), fsync and close @p->fd, then move
 * the temporary file to its name (never replacing an existing one without
 * BERTH_PUBLISH_REPLACE in @flags) and fsync the directory.  Always ends
 * @p: on failure the temporary file is removed.  Return: as
 * berth_publish_at().
 */
int berth_publish_commit(struct berth_publish *p, mode_t mode, unsigned flags, struct berth_error *reterr);

/** berth_publish_abort() - close and remove the temporary file of @p; accepts an ended @p or NULL. */
void berth_publish_abort(struct berth_publish *p);

/**
 * berth_publish_path() - berth_publish_at() for an absolute @path whose
 * directory is opened with berth_open_trusted().
 */
int berth_publish_path(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct berth_error *reterr);

/**
 * struct berth_tmpfile - a file being written in a directory for atomic
 * publication under a name there (berth_tmpfile_open()).
 * @fd:    the file, open O_RDWR; -1 once closed.
 * @dirfd: the directory (borrowed: it must outlive the struct).
 * @name:  "" for an unnamed file (O_TMPFILE), else its hidden temporary
 *         name BERTH_TMPFILE_PREFIX<16 hex digits>.
 */
struct berth_tmpfile {
    int fd;
    int dirfd;
    char name[32];
};

/** The name prefix of the named temporaries berth_tmpfile_open() makes. */
#define BERTH_TMPFILE_PREFIX ".#tmp."

/**
 * berth_tmpfile_open() - create a new empty regular file in @dirfd (a
 * directory opened O_RDONLY | O_DIRECTORY), mode @mode: unnamed (O_TMPFILE,
 * so that nothing of it survives the process) when the filesystem supports
 * it; otherwise, with @allow_named, under a hidden random name that
 * berth_tmpfile_discard() removes (a crash leaves it: its owner sweeps names
 * starting with BERTH_TMPFILE_PREFIX).
 * Return: 0; -EOPNOTSUPP (no O_TMPFILE and !@allow_named); the errno of
 * open(2) (-ENOSPC, -EDQUOT, -EMFILE, ...); -EINVAL.
 */
int berth_tmpfile_open(int dirfd, mode_t mode, bool allow_named, struct berth_tmpfile *ret, struct berth_error *reterr);

/**
 * berth_tmpfile_publish() - give the file of @t the name @name (one
 * component) in its directory, never replacing what is there, then fsync(2)
 * the directory.  The caller has written and synced the data (fdatasync)
 * first.  @t stays open; discard it afterwards.
 * Return: 0; -EEXIST (@name exists; nothing changed); -EIO (in place, but the
 * directory fsync failed: durability unknown); the errno of linkat(2) or
 * renameat2(2); -EINVAL.
 */
int berth_tmpfile_publish(struct berth_tmpfile *t, const char *name, struct berth_error *reterr);

/** berth_tmpfile_discard() - close @t and remove its temporary name if it has one (an unpublished named file). */
void berth_tmpfile_discard(struct berth_tmpfile *t);

/**
 * berth_link_unnamed() - give the unnamed file @fd (opened with O_TMPFILE
 * without O_EXCL, on the filesystem of @dirfd) the name @name in @dirfd,
 * never replacing, through linkat(2) of /proc/self/fd/N; check that @name
 * is now @fd's inode; fsync(2) @dirfd.  The caller synced the data first.
 * Return: 0; -EEXIST (@name exists; nothing changed); -EINVAL (@fd has a
 * name already, or is not a regular file); -ENOENT (@fd cannot be given a
 * name: an unlinked file, or O_TMPFILE | O_EXCL); -EXDEV (another
 * filesystem); -EAGAIN (@name did not end up on @fd's inode: it was
 * removed again); -EIO (in place, directory fsync failed); linkat's errno.
 */
int berth_link_unnamed(int fd, int dirfd, const char *name, struct berth_error *reterr);

/**
 * berth_write_all() - write all @len bytes at @data to @fd, retrying short
 * writes and EINTR.
 * Return: 0, or the negative errno of write(2) (what was written before the
 * failure stays written).
 */
int berth_write_all(int fd, const void *data, size_t len);

/**
 * berth_pwrite_all() - write all @len bytes at @data to @fd at @offset
 * with pwrite(2) (the file position is neither used nor moved), retrying
 * short writes and EINTR.
 * Return: 0; -EIO (pwrite(2) wrote nothing); its negative errno (what was
 * written before the failure stays written).
 */
int berth_pwrite_all(int fd, const void *data, size_t len, uint64_t offset);

/**
 * berth_pread_all() - read exactly @len bytes of @fd at @offset into @buf
 * with pread(2), retrying short reads and EINTR.
 * Return: 0; -EIO (the file ends first); pread(2)'s negative errno.
 */
int berth_pread_all(int fd, void *buf, size_t len, uint64_t offset);

/**
 * berth_name_valid() - whether @name is one usable path component: 1 to
 * NAME_MAX bytes, no "/", no NUL, not "." or "..".
 */
bool berth_name_valid(const char *name);

/**
 * berth_path_absolute() - make @path absolute by prefixing the current
 * directory (getcwd(3)); symlinks are *not* resolved, so a later
 * berth_open_trusted() still refuses them.
 * @ret: receives a malloc'd string.
 * Return: 0, -EINVAL (empty path), -ENOMEM, or the getcwd(3) error.
 */
int berth_path_absolute(const char *path, char **ret);

#endif /* BERTH_FSUTIL_H */
