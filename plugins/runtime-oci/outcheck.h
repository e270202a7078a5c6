/* SPDX-License-Identifier: MIT */
/*
 * outcheck.h -- the reader of a job's declared outputs, shared by
 * berth-oci-shim (which checks and hashes them after the sandbox stopped)
 * and the runtime-oci plugin (open_output()).  Not installed.
 *
 * What the job left in its outputs tmpfs is untrusted.  An output is
 * accepted only when its path, resolved beneath the tmpfs root, crosses no
 * symbolic link (openat2(2) RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, through
 * berth_open_beneath()), and it is a regular file with exactly one link and
 * at most its max_bytes.  The file is first opened O_PATH, so that nothing
 * is opened for reading that is not a regular file (a FIFO would block or
 * a device could act on open), then reopened O_RDONLY the same way and
 * checked to be the same inode.  Content is read through that descriptor
 * with pread(2) from offset 0, never more than the checked size plus one
 * byte (which proves the end).  Thread-safe (no state).
 */
#ifndef BERTH_OCI_OUTCHECK_H
#define BERTH_OCI_OUTCHECK_H

#include <stdint.h>

#include <berth/plugin.h>

/* What is wrong with an output, as inspect names it (plugin.h). */
enum oci_output_problem {
    OCI_OUTPUT_OK = 0,
    OCI_OUTPUT_MISSING,     /* "missing": nothing at its path (or a component is not a directory) */
    OCI_OUTPUT_TOO_LARGE,   /* "too_large": more than its max_bytes */
    OCI_OUTPUT_SYMLINK,     /* "symlink": a symbolic link on its path, the last component included */
    OCI_OUTPUT_HARD_LINK,   /* "hard_link": a regular file with more than one link */
    OCI_OUTPUT_NOT_REGULAR, /* "not_regular": a directory, FIFO, socket or device */
    OCI_OUTPUT_UNREADABLE,  /* "unreadable": any other failure to open or read it exactly */
};

/** oci_output_problem_name() - "missing", "too_large", ...; NULL for OCI_OUTPUT_OK. */
const char *oci_output_problem_name(enum oci_output_problem p);

/**
 * oci_output_relpath() - the path of the guest path @guest_path (a
 * job.outputs[].path) relative to the outputs tmpfs root: what follows
 * "/tmp/outputs/".  Returns NULL when @guest_path is not below it or the
 * rest is empty.
 */
const char *oci_output_relpath(const char *guest_path);

/**
 * oci_output_open() - open and check the output at @relpath beneath the
 * outputs root @rootfd (a directory descriptor; O_PATH is enough).
 * @max_bytes: the output's max_bytes.
 * @ret_fd:    receives a new O_RDONLY | O_CLOEXEC descriptor of the
 *             checked file, at offset 0 (the caller closes it).
 * @ret_size:  receives its size in bytes (<= @max_bytes).
 * @ret_problem: always receives the verdict (OCI_OUTPUT_OK on success).
 * Return: 0; otherwise a negative errno (the cause: -ENOENT, -ELOOP,
 * -EMLINK, -EFBIG, -EBADFD, or an open/fstat error) with *@ret_problem
 * naming the problem; nothing is written to @ret_fd or @ret_size then.
 */
int oci_output_open(int rootfd, const char *relpath, uint64_t max_bytes, int *ret_fd, uint64_t *ret_size,
                    enum oci_output_problem *ret_problem);

/**
 * oci_output_digest() - "sha256:<hex>" of exactly @size bytes of the
 * regular file @fd, read with pread(2) from offset 0 (the file offset is
 * not moved), and proof that it ends there.
 * Return: 0; -EIO when the file holds fewer or more than @size bytes or the
 * hash fails; -ENOMEM; the pread(2) error.
 */
int oci_output_digest(int fd, uint64_t size, char ret_digest[BERTH_DIGEST_BUFSZ]);

/**
 * oci_output_capture() - oci_output_open() and oci_output_digest() of one
 * output, the descriptor closed again.
 * Return: 0 with *@ret_size and @ret_digest; a negative errno with
 * *@ret_problem set (a failed read is OCI_OUTPUT_UNREADABLE).
 */
int oci_output_capture(int rootfd, const char *relpath, uint64_t max_bytes, char ret_digest[BERTH_DIGEST_BUFSZ],
                       uint64_t *ret_size, enum oci_output_problem *ret_problem);

#endif /* BERTH_OCI_OUTCHECK_H */
