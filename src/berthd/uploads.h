/* SPDX-License-Identifier: MIT */
/*
 * uploads.h -- berthd's evidence upload sessions (docs/evidence.md,
 * "Uploads"): one per POST /v1/evidence/uploads, named by a random UUID,
 * owned by the caller's principal and scope, holding an unnamed file
 * (O_TMPFILE) that the chunks are written into and its offset.
 *
 * Sessions live in memory only: their files have no name, so nothing of an
 * upload is visible anywhere if berthd dies, and a restarted berthd knows
 * none (the client starts again).  They are bounded: at most
 * BERTHD_UPLOADS_MAX in all and BERTHD_UPLOADS_PER_OWNER per principal, and
 * a session nobody touched for BERTHD_UPLOAD_IDLE_NS is dropped.
 *
 * Not thread-safe: the event loop thread only.  A session marked busy (its
 * commit runs on the helper thread, which owns its file meanwhile) is never
 * expired or dropped from here.
 */
#ifndef BERTHD_UPLOADS_H
#define BERTHD_UPLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "names.h"
#include "uuid.h"

#define BERTHD_UPLOADS_MAX 64                             /**< sessions at once, in all */
#define BERTHD_UPLOADS_PER_OWNER 4                        /**< sessions at once, per principal */
#define BERTHD_UPLOAD_IDLE_NS (600LL * 1000 * 1000 * 1000) /**< a session untouched this long is dropped: 10 min */

/**
 * struct berthd_upload - one session.
 * @id:        its UUID.
 * @principal, @scope: its owner (@scope canonical JSON, owned).
 * @fd:        the unnamed file, -1 while the session is being opened.
 * @offset:    bytes written so far (the next chunk starts there).
 * @room:      the most bytes it may hold (max_object_bytes or the quota's room).
 * @touched:   CLOCK_MONOTONIC ns of its last request.
 * @busy:      opening or committing on the helper thread: not expired, not
 *             written, not dropped.
 * @run_id, @output: empty for an evidence upload; for a worker's upload
 *             of a run's declared output (docs/workers.md), the run and
 *             the output, and then @principal is the worker certificate's
 *             fingerprint and @scope "" (no evidence caller has that
 *             scope, so neither kind of session is found as the other).
 */
struct berthd_upload {
    char id[BERTHD_UUID_LEN + 1];
    char principal[BERTH_PRINCIPAL_MAX + 1];
    char *scope;
    int fd;
    uint64_t offset;
    uint64_t room;
    int64_t touched;
    bool busy;
    char run_id[BERTH_JOB_ID_MAX + 1];
    char output[BERTH_JOB_ID_MAX + 1];
};

/** struct berthd_uploads - the table (zero-initialised is empty). */
struct berthd_uploads {
    struct berthd_upload *v[BERTHD_UPLOADS_MAX];
    size_t n;
};

/**
 * berthd_uploads_add() - a new busy session for @principal and @scope
 * (copied), with a new UUID, no file yet.
 * Return: the session; NULL with *@ret_err -EUSERS (the table or the
 * owner's share is full), -ENOMEM or -EIO (no random bytes).
 */
struct berthd_upload *berthd_uploads_add(struct berthd_uploads *t, const char *principal, const char *scope,
                                         int64_t now, int *ret_err);

/**
 * berthd_uploads_find() - the session @id of @principal and @scope, or
 * NULL (no such session, or another owner's: the same answer).
 */
struct berthd_upload *berthd_uploads_find(struct berthd_uploads *t, const char *id, const char *principal,
                                          const char *scope);

/** berthd_uploads_drop() - remove @u (closing its file) and free it. */
void berthd_uploads_drop(struct berthd_uploads *t, struct berthd_upload *u);

/**
 * berthd_uploads_expire() - drop every session that is not busy and was
 * last touched before @now - BERTHD_UPLOAD_IDLE_NS.  Return: how many.
 */
size_t berthd_uploads_expire(struct berthd_uploads *t, int64_t now);

/** berthd_uploads_clear() - drop every session, busy or not (berthd is going away). */
void berthd_uploads_clear(struct berthd_uploads *t);

#endif
