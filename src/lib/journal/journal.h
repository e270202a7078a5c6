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
 *
 * A full filesystem.  A write that fails for space (SQLITE_FULL, or an I/O
 * error whose errno is ENOSPC or EDQUOT) is reported as -ENOSPC or -EDQUOT
 * (berth_space_error() in reserve.h); SQLite has rolled the transaction
 * back, so the journal holds exactly what the last successful commit left,
 * and the next transaction may simply be tried again.  Every other failure
 * of a write is -EIO (a failed read or fsync: the journal's durability can
 * no longer be trusted), corruption -EBADMSG.  Reading needs no space: a
 * journal whose format is current is opened without writing to it, so it
 * opens, and serves reads, on a full filesystem.
 *
 * The space reserve.  berth_journal_set_reserve() keeps a file of N
 * allocated bytes, "<journal>.reserve", beside the journal (reserve.h).  A
 * write that must get through on a full filesystem (berthd: recording a
 * cancellation, and that a job is being stopped) runs through
 * berth_journal_transact() with BERTH_JOURNAL_USE_RESERVE: when it fails for
 * space and the reserve is whole, the reserve is removed and the write tried
 * once more, in the space just freed.  Measured on a full tmpfs: 256 KiB
 * freed this way took 21 transactions of a 4 KB row (tests/unit/
 * test-journal.c), 1 MiB about 80 updates of 3 KiB rows with an audit line
 * each.  The owner
 * must then hold back every other write until berth_journal_check_space()
 * has re-created the reserve, or the next ordinary write takes the space;
 * another process writing to the same filesystem can take it anyway, so the
 * reserve is a promise only for a filesystem berthd has to itself (its
 * state directory on its own filesystem or quota).
 */
#ifndef BERTH_JOURNAL_H
#define BERTH_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include <berth/error.h>

#include "hmac.h"

/** PRAGMA application_id of a berth journal: "brth". */
#define BERTH_JOURNAL_APPLICATION_ID 0x62727468

/** The journal format this libberth writes (PRAGMA user_version). */
#define BERTH_JOURNAL_FORMAT 8

/** berth_journal_open() flag: create the journal when it does not exist. */
#define BERTH_JOURNAL_CREATE 0x1u

/** berth_journal_transact() flag: on a space failure, release the space reserve and try once more. */
#define BERTH_JOURNAL_USE_RESERVE 0x1u

/** A good size for the space reserve: 1 MiB (berthd's journal.reserve_bytes default). */
#define BERTH_JOURNAL_RESERVE_DEFAULT (1024ULL * 1024)
/** The largest space reserve berth_journal_set_reserve() accepts: 1 GiB. */
#define BERTH_JOURNAL_RESERVE_MAX (1024ULL * 1024 * 1024)
/** What berth_journal_check_space() asks to be free without a reserve: 64 KiB. */
#define BERTH_JOURNAL_PROBE_BYTES (64ULL * 1024)

struct berth_journal;

/**
 * struct berth_journal_schema - what makes an SQLite file one kind of berth
 * database.  The journal is one; other modules (the evidence-sqlite
 * plugin's metadata) open their own files with their own schema through
 * berth_journal_open_schema() and get the same safe open, lock, pragmas and
 * error mapping.
 * @what:           how messages name the database ("journal").
 * @application_id: PRAGMA application_id that marks the file as this kind;
 *                  a file with another is refused (-EMEDIUMTYPE).
 * @format:         the current format (PRAGMA user_version), at least 1.
 * @migrations:     @format SQL scripts: migrations[N - 1] turns format N - 1
 *                  into N; they run in one transaction.
 * Static storage: the journal handle keeps the pointer.
 */
struct berth_journal_schema {
    const char *what;
    uint32_t application_id;
    int format;
    const char *const *migrations;
};

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
 * berth_journal_open_schema() - berth_journal_open() for a database of the
 * kind @schema describes (borrowed; it must outlive the handle).  Every
 * other function of this header then works on it as on the journal.
 * Return: as berth_journal_open(); -EINVAL also for an invalid @schema.
 */
int berth_journal_open_schema(const char *path, unsigned flags, const struct berth_journal_schema *schema,
                              struct berth_journal **ret, struct berth_error *reterr);

/**
 * berth_journal_close() - checkpoint, close and release the lock.  Accepts
 * NULL.  A transaction still open is rolled back.
 */
void berth_journal_close(struct berth_journal *j);

/** berth_journal_db() - the SQLite connection, for libberth's own modules. */
sqlite3 *berth_journal_db(struct berth_journal *j);

/**
 * berth_journal_prepare() - the prepared statement of @sql (one statement;
 * text after it is ignored) on @j's connection, in *@ret, ready to bind and
 * step.  Statements are kept on the handle, keyed by their text, for as
 * long as it is open (at most 64, the least recently used making room), so
 * a statement run again is not compiled again.  A statement of the same
 * text that is still in use (not yet finished, e.g. an outer loop over its
 * rows) is not shared: the caller then gets one of its own.
 * @what: what the statement is for, the start of the error message.
 *
 * Ownership: *@ret belongs to @j; the caller hands it back with
 * berth_journal_finish() on every path, never sqlite3_finalize().  Not
 * thread-safe (the handle is used by one thread at a time).
 * Return: 0; -EINVAL (a NULL argument, or @sql holds no statement); or the
 * errors of berth_journal_error() for SQL that does not compile.
 */
int berth_journal_prepare(struct berth_journal *j, const char *sql, const char *what, sqlite3_stmt **ret,
                          struct berth_error *reterr);

/**
 * struct berth_journal_tail - audit.c's memo of the audit chain's last
 * event, kept on the handle: the stored line it last read or wrote
 * (malloc'd, owned by the handle), and that line's seq and mac.  audit.c
 * uses seq and mac only while the stored last line is byte for byte @line,
 * so what it takes from the memo is exactly what the stored line says.
 */
struct berth_journal_tail {
    char *line;
    size_t len;
    uint64_t seq;
    char mac[2 * BERTH_HMAC_SHA256_LEN + 1];
};

/**
 * berth_journal_tail_memo() - @j's audit tail memo (all zero at first),
 * for audit.c.  Owned by @j, freed by berth_journal_close().
 */
struct berth_journal_tail *berth_journal_tail_memo(struct berth_journal *j);

/**
 * berth_journal_finish() - hand back @st from berth_journal_prepare(): a
 * kept statement is reset (ending its read of the database) and its
 * bindings cleared, any other is finalized.  Accepts NULL.  Column values
 * read from @st are invalid afterwards.
 */
void berth_journal_finish(struct berth_journal *j, sqlite3_stmt *st);

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
 * negative errno and fill @reterr with "@what: <sqlite message>":
 * -ENOSPC (SQLITE_FULL, or an I/O error with errno ENOSPC), -EDQUOT (an I/O
 * error with errno EDQUOT), -EBUSY, -EBADMSG (corruption, not a database),
 * -ENOMEM, -EPERM (read-only), otherwise -EIO.
 */
int berth_journal_error(struct berth_journal *j, const char *what, struct berth_error *reterr);

/**
 * berth_journal_set_reserve() - keep a space reserve of @bytes allocated
 * bytes in "<journal>.reserve" beside the journal (0: keep none, and remove
 * the file if there is one).  Journals opened without this call (berthctl's
 * offline use) neither make nor touch a reserve.
 * Return: 0; -EINVAL (@bytes over BERTH_JOURNAL_RESERVE_MAX); -ENOSPC or
 * -EDQUOT (no room for it now: the size is remembered and
 * berth_journal_check_space() makes it later); the other errors of
 * berth_reserve_fill().
 */
int berth_journal_set_reserve(struct berth_journal *j, uint64_t bytes, struct berth_error *reterr);

/** berth_journal_reserve_size() - the configured reserve in bytes (0: none). */
uint64_t berth_journal_reserve_size(const struct berth_journal *j);

/** berth_journal_reserve_held() - whether a reserve is configured and whole on disk now. */
bool berth_journal_reserve_held(struct berth_journal *j);

/**
 * berth_journal_check_space() - whether the journal's filesystem has room
 * again: re-create the space reserve if it is configured and not whole,
 * then check that as much again (or BERTH_JOURNAL_PROBE_BYTES without a
 * reserve) could be allocated beside it (berth_reserve_probe(): nothing is
 * left behind).  Costs one fallocate(2) of that size: call it with backoff
 * (backoff.h), not in a loop.
 * Return: 0 (there is room); -ENOSPC or -EDQUOT; -EINVAL; other errors of
 * reserve.h.
 */
int berth_journal_check_space(struct berth_journal *j, struct berth_error *reterr);

/**
 * berth_journal_transact() - run @fn in a write transaction of its own
 * (BEGIN IMMEDIATE, @fn, COMMIT; ROLLBACK when either fails).  With
 * BERTH_JOURNAL_USE_RESERVE, a transaction that fails with -ENOSPC or
 * -EDQUOT while the space reserve is whole releases the reserve and runs
 * once more (so @fn may run twice; whatever it does besides journal writes
 * must be safe to repeat).  Whether that happened shows in
 * berth_journal_reserve_held() afterwards.
 * @fn: writes in the open transaction with @userdata; returns 0 or a
 *      negative errno (which aborts the transaction and is returned).
 * Return: 0 (committed, durable); -EINVAL (a transaction is already open,
 * NULL @fn, unknown @flags); @fn's error; the errors of
 * berth_journal_begin() and berth_journal_commit().
 */
int berth_journal_transact(struct berth_journal *j, unsigned flags,
                           int (*fn)(struct berth_journal *j, void *userdata, struct berth_error *reterr),
                           void *userdata, struct berth_error *reterr);

/**
 * struct berth_sql_value - one value for a statement parameter, written with
 * BERTH_SQL_INT(), BERTH_SQL_TEXT(), BERTH_SQL_TEXTN() or BERTH_SQL_NULL in
 * the list of BERTH_JOURNAL_BIND().
 * @type: which of @i and @text is the value.
 * @i:    the integer.
 * @text: the text, borrowed until the statement is finalized (SQLITE_STATIC);
 *        NULL binds SQL NULL, as sqlite3_bind_text() does.
 * @len:  bytes of @text, or -1 for all of it up to its NUL.
 */
struct berth_sql_value {
    enum { BERTH_SQL_NULL_TYPE, BERTH_SQL_INT_TYPE, BERTH_SQL_TEXT_TYPE } type;
    int64_t i;
    const char *text;
    int len;
};

#define BERTH_SQL_INT(v)                                                                                               \
    {                                                                                                                  \
        .type = BERTH_SQL_INT_TYPE, .i = (int64_t)(v)                                                                  \
    }
#define BERTH_SQL_TEXT(s)                                                                                              \
    {                                                                                                                  \
        .type = BERTH_SQL_TEXT_TYPE, .text = (s), .len = -1                                                            \
    }
#define BERTH_SQL_TEXTN(s, n)                                                                                          \
    {                                                                                                                  \
        .type = BERTH_SQL_TEXT_TYPE, .text = (s), .len = (n)                                                           \
    }
#define BERTH_SQL_NULL                                                                                                 \
    {                                                                                                                  \
        .type = BERTH_SQL_NULL_TYPE                                                                                    \
    }

/**
 * berth_journal_bind() - bind @n values to the parameters 1..@n of @st, a
 * statement prepared on @j's connection, stopping at the first that fails.
 * @what: what the statement is for, the start of the error message.
 *
 * Return: 0; -EINVAL (a NULL argument, or @n over INT_MAX); or a negative
 * errno as berth_journal_error() maps the bind's
 * SQLite code (-ENOMEM, otherwise -EIO: a parameter the statement does not
 * have, a text over SQLite's length limit, a statement already running),
 * with @reterr "@what: parameter N: <sqlite message>".  On failure some
 * parameters may be bound: the caller finalizes @st.
 */
int berth_journal_bind(struct berth_journal *j, sqlite3_stmt *st, const struct berth_sql_value *v, size_t n,
                       const char *what, struct berth_error *reterr);

/**
 * berth_journal_column_text() - a malloc'd copy of text column @col of the
 * current row of @st, or NULL (SQL NULL, or out of memory).
 */
char *berth_journal_column_text(sqlite3_stmt *st, int col);

/**
 * berth_journal_query_int() - run @sql, a query of one integer (one row,
 * one column), bound with the @n values @v, into *@ret.
 * @what: the start of the error message.
 * Return: 0; the errors of berth_journal_bind() and berth_journal_error()
 * (a query with no row is one).
 */
int berth_journal_query_int(struct berth_journal *j, const char *sql, const struct berth_sql_value *v, size_t n,
                            const char *what, int64_t *ret, struct berth_error *reterr);

/**
 * BERTH_JOURNAL_BIND() - berth_journal_bind() with the values listed in
 * place, for example
 *   BERTH_JOURNAL_BIND(j, st, "reading jobs", reterr, BERTH_SQL_TEXT(id), BERTH_SQL_INT(rev))
 */
#define BERTH_JOURNAL_BIND(j, st, what, reterr, ...)                                                                   \
    berth_journal_bind((j), (st), (const struct berth_sql_value[]){__VA_ARGS__},                                       \
                       sizeof((const struct berth_sql_value[]){__VA_ARGS__}) / sizeof(struct berth_sql_value), (what), \
                       (reterr))

#endif /* BERTH_JOURNAL_H */
