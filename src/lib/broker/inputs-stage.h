/* SPDX-License-Identifier: MIT */
/*
 * inputs-stage.h -- a job's inputs staged for its runtime (plugin.h,
 * "inputs_dir"), by berthd from its evidence store and by a remote worker
 * from berthd (docs/workers.md).
 *
 * DIR/<run_id>/ (0700) holds one 0444 file per entry of job.inputs, named
 * by its index ("0", "1", ...), each fetched by the caller's callback,
 * synced, then read back and hashed against its ref's digest and size; the
 * empty marker "staged" is published last.  A directory without the marker
 * was cut short (a crash, a failure): nothing in it is trusted, it is
 * cleared and staged again.  Thread-safe for distinct runs.
 */
#ifndef BERTH_INPUTS_STAGE_H
#define BERTH_INPUTS_STAGE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

/**
 * berth_input_fetch_fn - write input @index (@digest, @size bytes) into
 * @fd, an empty file open for writing at offset 0.  Writing more than
 * @size bytes may be refused with -EFBIG.  Return: 0 or a negative errno
 * with @reterr set; the staging fails with it.
 */
typedef int (*berth_input_fetch_fn)(void *userdata, size_t index, const char *digest, uint64_t size, int fd,
                                    struct berth_error *reterr);

/**
 * berth_inputs_stage() - stage @inputs (a job's "inputs" array, already
 * valid: job.h) of run @run_id below @directory (absolute, trusted, opened
 * without following symlinks).  An earlier complete staging is kept as it
 * is.
 * @ret_dir: receives "@directory/@run_id" (malloc'd).
 * @ret_bytes: optional; receives the bytes staged now (0 when kept).
 * Return: 0; -EBADMSG (an input is not the bytes its ref names); the
 * callback's errors; file system errors (-errno).
 */
int berth_inputs_stage(const char *directory, const char *run_id, const json_t *inputs, berth_input_fetch_fn fetch,
                       void *userdata, char **ret_dir, int64_t *ret_bytes, struct berth_error *reterr);

/**
 * berth_inputs_unstage() - remove "@directory/@run_id" and everything in
 * it.  Return: 0 (also when it is absent) or -errno.
 */
int berth_inputs_unstage(const char *directory, const char *run_id, struct berth_error *reterr);

#endif /* BERTH_INPUTS_STAGE_H */
