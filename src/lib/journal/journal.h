/* SPDX-License-Identifier: MIT */
/*
 * journal.h -- berth's durable SQLite journal.
 *
 * One SQLite file per daemon (or per offline berthctl invocation), opened
 * only through this module:
 *
 *   - the file lives in a directory owned by the effective uid with no
 *     access for group or others (0700), opened without following symlinks;
 *   - the file itself, and the "<file>.lock" beside it, are regular files
 *     owned by the effective uid, mode 0600, one hard link;
 *   - the lock file is held with flock(LOCK_EX) for as long as the journal
 *     is open, so a second process gets -EBUSY instead of a shared database;
 *   - PRAGMA locking_mode=EXCLUSIVE (set before WAL, so the WAL index lives
 *     in heap memory and no -shm file exists), journal_mode=WAL,
 *     synchronous=FULL, trusted_schema=OFF;
 *   - application_id identifies a berth journal, user_version is the format
 *     version: newer formats are refused, older ones migrated forward in one
 *     transaction.
 *
 * The SQLite handle (sqlite3 *) is for the other libberth modules only; it
 * never crosses the plugin ABI.  A journal handle is not thread-safe: one
 * thread at a time.
 */
#ifndef BERTH_JOURNAL_H
#define BERTH_JOURNAL_H

#include <stdbool.h>
#include <sqlite3.h>

#include <berth/error.h>

/** PRAGMA application_id of a berth journal: "brth". */
#define BERTH_JOURNAL_APPLICATION_ID 0x62727468

/** The journal format this libberth writes (PRAGMA user_version). */
#define BERTH_JOURNAL_FORMAT 3

/** berth_journal_open() flag: create the journal when it does not exist. */
#define BERTH_JOURNAL_CREATE 0x1u

struct berth_journal;

/**
 * berth_journal_open() - open (and with BERTH_JOURNAL_CREATE, create) the
 * journal at the absolute @path, take its lock and bring its format up to
 * BERTH_JOURNAL_FORMAT.
 *
 * Return: 0; -EINVAL (relative path, bad flags); -ENOENT (no journal and no
 * BERTH_JOURNAL_CREATE); -EPERM (directory or file owner/mode unsafe);
 * -ELOOP (a symlink on the way); -EMLINK; -EBADFD (not a regular file);
 * -EBUSY (another process holds the journal); -EMEDIUMTYPE (an SQLite file
 * of another application); -EPROTONOSUPPORT (a newer journal format);
 * -EBADMSG (not an SQLite database, or corrupt); -EIO; -ENOMEM.
 */
int berth_journal_open(const char *path, unsigned flags, struct berth_journal **ret, struct berth_error *reterr);

/**
 * berth_journal_close() - checkpoint, close and release the lock.  Accepts
 * NULL.  A transaction still open is rolled back.
 */
void berth_journal_close(struct berth_journal *j);

/** berth_journal_db() - the SQLite connection, for libberth's own modules. */
sqlite3 *berth_journal_db(struct berth_journal *j);

/** berth_journal_path() - the path the journal was opened with. */
const char *berth_journal_path(const struct berth_journal *j);

/**
 * berth_journal_begin() - BEGIN IMMEDIATE: a write transaction.
 * berth_journal_commit() - COMMIT; durable (fsync'd) when it returns 0.
 * berth_journal_rollback() - ROLLBACK, ignoring errors; safe when no
 * transaction is open.
 * Return: 0, or an error from berth_journal_error().
 */
int berth_journal_begin(struct berth_journal *j, struct berth_error *reterr);
int berth_journal_commit(struct berth_journal *j, struct berth_error *reterr);
void berth_journal_rollback(struct berth_journal *j);

/**
 * berth_journal_savepoint() - mark a point inside the open transaction
 * (SQL SAVEPOINT) so that one step of a batch can be undone alone.
 * berth_journal_release() - keep what the step wrote (RELEASE).
 * berth_journal_rollback_to() - undo what the step wrote and drop the mark
 * (ROLLBACK TO, then RELEASE); the transaction stays open.
 * One mark at a time.  Return: 0; -EINVAL (no open transaction); errors of
 * berth_journal_error().
 */
int berth_journal_savepoint(struct berth_journal *j, struct berth_error *reterr);
int berth_journal_release(struct berth_journal *j, struct berth_error *reterr);
int berth_journal_rollback_to(struct berth_journal *j, struct berth_error *reterr);

/** berth_journal_in_transaction() - whether a transaction is open. */
bool berth_journal_in_transaction(struct berth_journal *j);

/**
 * berth_journal_error() - turn the connection's last SQLite error into a
 * negative errno (-ENOSPC for a full disk, -EBUSY, -EBADMSG for corruption,
 * -ENOMEM, otherwise -EIO) and fill @reterr with "@what: <sqlite message>".
 */
int berth_journal_error(struct berth_journal *j, const char *what, struct berth_error *reterr);

#endif /* BERTH_JOURNAL_H */
