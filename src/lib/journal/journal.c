/* SPDX-License-Identifier: MIT */
/* journal.c -- the SQLite journal: safe open, lock, pragmas, migrations. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "journal.h"
#include "macro.h"
#include "reserve.h"

/* Prepared statements kept for the connection's life: compiling a statement
 * costs more than running it (a job's admission runs about twenty). */
#define STMT_CACHE_MAX 64

struct cached_stmt {
    char *sql;        /* its text, owned */
    sqlite3_stmt *st; /* prepared with SQLITE_PREPARE_PERSISTENT */
    bool busy;        /* handed out, not yet finished */
    uint64_t used;    /* when last handed out (struct berth_journal's tick) */
};

struct berth_journal {
    const struct berth_journal_schema *schema;
    sqlite3 *db;
    int lock_fd;
    int dir_fd; /* the journal's directory, for its space reserve */
    char *path;
    char *reserve_name;                       /* "<journal>.reserve" */
    uint64_t reserve_bytes;                   /* 0: no reserve (berth_journal_set_reserve()) */
    struct cached_stmt cache[STMT_CACHE_MAX]; /* berth_journal_prepare() */
    size_t n_cache;
    uint64_t tick; /* the last use, for the cache's eviction */
    struct berth_journal_tail tail;
};

/* 1 when the state in column @c is not terminal (jobstore.h), else 0. */
#define OPEN(c) "(" c " <> 'exited' AND " c " <> 'failed' AND " c " <> 'cancelled' AND " c " <> 'expired')"

/* Format N is reached by running migrations[N - 1] on format N - 1.  A
 * migration only ever adds; it never rewrites history. */
static const char *const migrations[] = {
    /* 1: the audit chain and content-addressed pool manifests. */
    "CREATE TABLE audit_events ("
    "  seq INTEGER PRIMARY KEY CHECK (seq > 0),"
    "  type TEXT NOT NULL,"
    "  mac TEXT NOT NULL CHECK (length(mac) = 64),"
    "  line TEXT NOT NULL"
    ") STRICT;"
    "CREATE TABLE pool_bodies ("
    "  pool_hash TEXT PRIMARY KEY CHECK (length(pool_hash) = 64),"
    "  body TEXT NOT NULL"
    ") STRICT;",
    /* 2: jobs, keyed by who asked (principal and canonical scope) and the job id. */
    "CREATE TABLE jobs ("
    "  principal TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  run_id TEXT NOT NULL UNIQUE,"
    "  job_digest TEXT NOT NULL,"
    "  pool TEXT NOT NULL,"
    "  job TEXT NOT NULL,"
    "  receipt TEXT NOT NULL,"
    "  effective TEXT NOT NULL,"
    "  backend TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('accepted','claimed','running','finalizing','reaping',"
    "                                      'exited','failed','cancelled','expired')),"
    "  revision INTEGER NOT NULL CHECK (revision > 0),"
    "  accepted_at INTEGER NOT NULL,"
    "  deadline INTEGER NOT NULL,"
    "  cancel_requested INTEGER NOT NULL DEFAULT 0,"
    "  result TEXT,"
    "  updated_at INTEGER NOT NULL,"
    "  PRIMARY KEY (principal, scope, job_id)"
    ") STRICT;"
    "CREATE INDEX jobs_open ON jobs (state) WHERE state NOT IN ('exited','failed','cancelled','expired');",
    /* 3: signed live qualifications of runtime backends (qualification.h). */
    "CREATE TABLE qualifications ("
    "  id TEXT NOT NULL PRIMARY KEY,"
    "  backend TEXT NOT NULL,"
    "  runtime_sha256 TEXT NOT NULL,"
    "  config_digest TEXT NOT NULL,"
    "  kernel TEXT NOT NULL,"
    "  passed INTEGER NOT NULL CHECK (passed IN (0, 1)),"
    "  qualified_at INTEGER NOT NULL,"
    "  expires_at INTEGER NOT NULL,"
    "  envelope TEXT NOT NULL"
    ") STRICT;"
    "CREATE INDEX qualifications_backend ON qualifications (backend, expires_at);",
    /* 4: reconcile sweeps: who submitted (the certificate fingerprint, '' for
     * older rows), why berthd itself cancelled a job, and the keyset order
     * the sweeps page through (jobstore.h, berth_jobstore_page_open()). */
    "ALTER TABLE jobs ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN cancel_reason TEXT;"
    "CREATE INDEX jobs_open_order ON jobs (accepted_at, run_id)"
    "  WHERE state NOT IN ('exited','failed','cancelled','expired');",
    /* 5: retention (jobprune.h): what is left of a pruned job, and the
     * order in which terminal jobs expire (by their finished time). */
    "CREATE TABLE job_tombstones ("
    "  principal TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  job_id TEXT NOT NULL,"
    "  run_id TEXT NOT NULL UNIQUE,"
    "  job_digest TEXT NOT NULL,"
    "  receipt TEXT NOT NULL,"
    "  state TEXT NOT NULL CHECK (state IN ('exited','failed','cancelled','expired')),"
    "  result_digest TEXT NOT NULL,"
    "  finished_at INTEGER NOT NULL,"
    "  pruned_at INTEGER NOT NULL,"
    "  PRIMARY KEY (principal, scope, job_id)"
    ") STRICT;"
    "CREATE INDEX jobs_terminal_order ON jobs (updated_at, run_id)"
    "  WHERE state IN ('exited','failed','cancelled','expired');",
    /* 6: how many jobs the journal holds and how many of them are open,
     * kept by triggers in the transaction that changes them, so that
     * admission (berth_jobstore_insert()) reads two numbers instead of
     * counting every row of a queue.  OPEN() spells "not terminal" as
     * comparisons: SQLite builds an ephemeral index for an IN list of more
     * than two constants on each run of the statement, which cost more than
     * the insert itself. */
    "CREATE TABLE job_counts ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  retained INTEGER NOT NULL CHECK (retained >= 0),"
    "  open INTEGER NOT NULL CHECK (open >= 0 AND open <= retained)"
    ") STRICT;"
    "INSERT INTO job_counts (id, retained, open)"
    "  SELECT 1, count(*), coalesce(sum(" OPEN(
        "state") "), 0) FROM jobs;"
                 "CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN"
                 "  UPDATE job_counts SET retained = retained + 1, open = open + " OPEN(
                     "NEW.state") " WHERE id = 1;"
                                  "END;"
                                  "CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN"
                                  "  UPDATE job_counts SET open = open - " OPEN(
                                      "OLD.state") ", retained = retained - 1 WHERE id = 1;"
                                                   "END;"
                                                   "CREATE TRIGGER job_counts_state AFTER UPDATE OF state ON jobs"
                                                   "  WHEN " OPEN("OLD.state") " <> " OPEN(
                                                       "NEW.state") " BEGIN"
                                                                    "  UPDATE job_counts SET open = open + " OPEN(
                                                                        "NEW.state") " - " OPEN("OLD.state") " WHERE "
                                                                                                             "id = 1;"
                                                                                                             "END;",
    /* 7: warm slots (docs/warm-slots.md): the slot a job was started in,
     * {slot_id, slot_hash, provision_ns} as canonical JSON, NULL for a
     * cold start; the signed result says so. */
    "ALTER TABLE jobs ADD COLUMN warm TEXT;",
    /* 8: remote workers (docs/workers.md): the lease of a job a worker
     * claimed, {worker, keyid, claim_digest, expires_ns} as canonical JSON,
     * NULL for a job of this host. */
    "ALTER TABLE jobs ADD COLUMN lease TEXT;",
};

_Static_assert(ELEMENTSOF(migrations) == BERTH_JOURNAL_FORMAT, "one migration per format version");

static const struct berth_journal_schema journal_schema = {
    .what = "journal",
    .application_id = BERTH_JOURNAL_APPLICATION_ID,
    .format = BERTH_JOURNAL_FORMAT,
    .migrations = migrations,
};

/* The negative errno for the SQLite result code @rc (extended or primary);
 * @sys is the errno of SQLite's last failed system call (0: none known).
 * The unix VFS reports ENOSPC as SQLITE_FULL, and EDQUOT (or ENOSPC from
 * fallocate or an fsync) as an SQLITE_IOERR: all of them are "no space". */
static int errno_of(int rc, int sys)
{
    if ((rc & 0xff) == SQLITE_FULL || (rc & 0xff) == SQLITE_IOERR) {
        if (sys == EDQUOT)
            return -EDQUOT;
        if (sys == ENOSPC)
            return -ENOSPC;
    }
    switch (rc & 0xff) {
    case SQLITE_FULL: return -ENOSPC;
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return -EBUSY;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return -EBADMSG;
    case SQLITE_NOMEM: return -ENOMEM;
    case SQLITE_READONLY:
    case SQLITE_PERM: return -EPERM;
    default: return -EIO;
    }
}

int berth_journal_error(struct berth_journal *j, const char *what, struct berth_error *reterr)
{
    int rc = j && j->db ? sqlite3_extended_errcode(j->db) : SQLITE_ERROR;
    int sys = j && j->db ? sqlite3_system_errno(j->db) : 0;
    const char *msg = j && j->db ? sqlite3_errmsg(j->db) : "no database";
    int r = errno_of(rc, sys);

    if (r == -EDQUOT)
        return berth_error_set(reterr, r, "%s: %s (disk quota exceeded)", what, msg);
    return berth_error_set(reterr, r, "%s: %s", what, msg);
}

int berth_journal_bind(struct berth_journal *j, sqlite3_stmt *st, const struct berth_sql_value *v, size_t n,
                       const char *what, struct berth_error *reterr)
{
    size_t i;
    int rc;

    if (!j || !st || (n && !v) || n > INT_MAX || !what)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    for (i = 0; i < n; i++) {
        int idx = (int)i + 1;

        switch (v[i].type) {
        case BERTH_SQL_INT_TYPE: rc = sqlite3_bind_int64(st, idx, (sqlite3_int64)v[i].i); break;
        case BERTH_SQL_TEXT_TYPE: rc = sqlite3_bind_text(st, idx, v[i].text, v[i].len, SQLITE_STATIC); break;
        case BERTH_SQL_NULL_TYPE: rc = sqlite3_bind_null(st, idx); break;
        default: return berth_error_set(reterr, -EINVAL, "%s: parameter %d has no type", what, idx);
        }
        if (rc != SQLITE_OK)
            return berth_error_set(reterr, errno_of(rc, 0), "%s: parameter %d: %s", what, idx, sqlite3_errstr(rc));
    }
    return 0;
}

char *berth_journal_column_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? strdup((const char *)t) : NULL;
}

int berth_journal_query_int(struct berth_journal *j, const char *sql, const struct berth_sql_value *v, size_t n,
                            const char *what, int64_t *ret, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int r;

    if (!j || !sql || !what || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_journal_prepare(j, sql, what, &st, reterr)) < 0)
        return r;
    r = berth_journal_bind(j, st, v, n, what, reterr);
    if (r == 0) {
        if (sqlite3_step(st) == SQLITE_ROW)
            *ret = sqlite3_column_int64(st, 0);
        else
            r = berth_journal_error(j, what, reterr);
    }
    berth_journal_finish(j, st);
    return r;
}

static int exec(struct berth_journal *j, const char *sql, const char *what, struct berth_error *reterr)
{
    if (sqlite3_exec(j->db, sql, NULL, NULL, NULL) != SQLITE_OK)
        return berth_journal_error(j, what, reterr);
    return 0;
}

/* exec() of one statement that returns no rows, from the cache. */
static int exec_one(struct berth_journal *j, const char *sql, const char *what, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if ((r = berth_journal_prepare(j, sql, what, &st, reterr)) < 0)
        return r;
    rc = sqlite3_step(st);
    r = rc == SQLITE_DONE ? 0 : berth_journal_error(j, what, reterr);
    berth_journal_finish(j, st);
    return r;
}

int berth_journal_prepare(struct berth_journal *j, const char *sql, const char *what, sqlite3_stmt **ret,
                          struct berth_error *reterr)
{
    struct cached_stmt *c, *slot = NULL;
    sqlite3_stmt *st = NULL;
    bool keep = true;
    size_t i;

    if (!j || !j->db || !sql || !what || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    *ret = NULL;
    for (i = 0; i < j->n_cache; i++) {
        c = &j->cache[i];
        if (c->sql != sql && strcmp(c->sql, sql) != 0)
            continue;
        if (c->busy) {
            keep = false; /* the same statement, still in use: this one is not kept */
            break;
        }
        c->busy = true;
        c->used = ++j->tick;
        *ret = c->st;
        return 0;
    }
    if (sqlite3_prepare_v3(j->db, sql, -1, keep ? SQLITE_PREPARE_PERSISTENT : 0, &st, NULL) != SQLITE_OK)
        return berth_journal_error(j, what, reterr);
    if (!st) /* only a comment or white space */
        return berth_error_set(reterr, -EINVAL, "%s: no SQL statement", what);
    if (!keep)
        goto uncached;
    if (j->n_cache < STMT_CACHE_MAX) {
        slot = &j->cache[j->n_cache];
    } else {
        /* Full: the least recently used statement not in use makes room. */
        for (i = 0; i < j->n_cache; i++)
            if (!j->cache[i].busy && (!slot || j->cache[i].used < slot->used))
                slot = &j->cache[i];
        if (!slot)
            goto uncached;
        sqlite3_finalize(slot->st);
        free(slot->sql);
        *slot = (struct cached_stmt){0};
    }
    slot->sql = strdup(sql);
    if (!slot->sql)
        goto uncached; /* works, only not kept */
    slot->st = st;
    slot->busy = true;
    slot->used = ++j->tick;
    if (slot == &j->cache[j->n_cache])
        j->n_cache++;
    *ret = st;
    return 0;

uncached:
    if (slot && !slot->sql && slot != &j->cache[j->n_cache]) {
        /* An evicted entry whose copy failed: close the gap. */
        *slot = j->cache[--j->n_cache];
        j->cache[j->n_cache] = (struct cached_stmt){0};
    }
    *ret = st;
    return 0;
}

void berth_journal_finish(struct berth_journal *j, sqlite3_stmt *st)
{
    size_t i;

    if (!st)
        return;
    for (i = 0; j && i < j->n_cache; i++) {
        if (j->cache[i].st == st) {
            /* Reset ends the statement's read of the database (a statement
             * left mid-way would hold the WAL back from checkpoints). */
            (void)sqlite3_reset(st);
            (void)sqlite3_clear_bindings(st);
            j->cache[i].busy = false;
            return;
        }
    }
    sqlite3_finalize(st);
}

static void cache_clear(struct berth_journal *j)
{
    size_t i;

    for (i = 0; i < j->n_cache; i++) {
        sqlite3_finalize(j->cache[i].st);
        free(j->cache[i].sql);
        j->cache[i] = (struct cached_stmt){0};
    }
    j->n_cache = 0;
}

static int pragma_int(struct berth_journal *j, const char *sql, int *ret, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(j->db, sql, -1, &st, NULL) != SQLITE_OK)
        return berth_journal_error(j, sql, reterr);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *ret = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return berth_journal_error(j, sql, reterr);
    return 0;
}

static int pragma_text_is(struct berth_journal *j, const char *sql, const char *want, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, ok = 0;

    if (sqlite3_prepare_v2(j->db, sql, -1, &st, NULL) != SQLITE_OK)
        return berth_journal_error(j, sql, reterr);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_text(st, 0))
        ok = strcasecmp((const char *)sqlite3_column_text(st, 0), want) == 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return berth_journal_error(j, sql, reterr);
    if (!ok)
        return berth_error_set(reterr, -EIO, "%s did not take effect", sql);
    return 0;
}

/* Open (or create) @name below @dirfd: owned by us, mode 0600, one link. */
static int open_private_file(int dirfd, const char *name, const char *shown, bool create, struct berth_error *reterr)
{
    int fd, r;

    fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (create ? O_CREAT : 0), 0600);
    if (fd < 0) {
        if (errno == ELOOP)
            return berth_error_set(reterr, -ELOOP, "%s is a symbolic link", shown);
        return berth_error_set(reterr, -errno, "%s: %s", shown, strerror(errno));
    }
    r = berth_private_file_check(fd, shown, NULL, reterr); /* the journal and its lock */
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

static int migrate(struct berth_journal *j, struct berth_error *reterr)
{
    const struct berth_journal_schema *sc = j->schema;
    int app = 0, version = 0, tables = 0, r;
    char sql[128];

    r = berth_journal_begin(j, reterr);
    if (r < 0)
        return r;
    if ((r = pragma_int(j, "PRAGMA application_id", &app, reterr)) < 0 ||
        (r = pragma_int(j, "PRAGMA user_version", &version, reterr)) < 0 ||
        (r = pragma_int(j, "SELECT count(*) FROM sqlite_schema", &tables, reterr)) < 0)
        goto fail;
    if ((uint32_t)app != sc->application_id && !(app == 0 && version == 0 && tables == 0)) {
        r = berth_error_set(reterr, -EMEDIUMTYPE, "%s is an SQLite database of another application", j->path);
        goto fail;
    }
    if (version < 0) {
        r = berth_error_set(reterr, -EBADMSG, "%s has an invalid %s format %d", j->path, sc->what, version);
        goto fail;
    }
    if (version > sc->format) {
        r = berth_error_set(reterr, -EPROTONOSUPPORT, "%s has %s format %d; this berth understands formats up to %d",
                            j->path, sc->what, version, sc->format);
        goto fail;
    }
    if (version == sc->format) {
        berth_journal_rollback(j);
        return 0;
    }
    for (; version < sc->format; version++) {
        snprintf(sql, sizeof(sql), "migrating the %s to format %d", sc->what, version + 1);
        if ((r = exec(j, sc->migrations[version], sql, reterr)) < 0)
            goto fail;
    }
    snprintf(sql, sizeof(sql), "PRAGMA application_id = %d; PRAGMA user_version = %d", (int32_t)sc->application_id,
             sc->format);
    if ((r = exec(j, sql, "recording the format", reterr)) < 0)
        goto fail;
    return berth_journal_commit(j, reterr);
fail:
    berth_journal_rollback(j);
    return r;
}

int berth_journal_open(const char *path, unsigned flags, struct berth_journal **ret, struct berth_error *reterr)
{
    return berth_journal_open_schema(path, flags, &journal_schema, ret, reterr);
}

int berth_journal_open_schema(const char *path, unsigned flags, const struct berth_journal_schema *schema,
                              struct berth_journal **ret, struct berth_error *reterr)
{
    const struct berth_file_expect dir_expect = {
        .type = S_IFDIR,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 0077,
        .mode = 0,
    };
    _cleanup_free_ char *dir = NULL, *lockname = NULL, *lockpath = NULL, *walname = NULL;
    _cleanup_close_ int dfd = -1, fd = -1, wal = -1;
    struct berth_journal *j = NULL;
    const char *slash, *base;
    struct stat st;
    bool create;
    int r;

    if (!schema || !schema->what || !schema->migrations || schema->format < 1)
        return berth_error_set(reterr, -EINVAL, "invalid schema");
    if (!path || path[0] != '/' || !ret || (flags & ~BERTH_JOURNAL_CREATE))
        return berth_error_set(reterr, -EINVAL, "%s: the %s needs an absolute path", path ? path : "(null)",
                               schema->what);
    slash = strrchr(path, '/');
    base = slash + 1;
    if (!berth_name_valid(base))
        return berth_error_set(reterr, -EINVAL, "%s does not end in a file name", path);
    /* SQLite and berth put files beside the journal under these suffixes. */
    for (const char *const *sfx = (const char *const[]){"-wal", "-shm", "-journal", ".lock", ".reserve", NULL}; *sfx;
         sfx++)
        if (strlen(base) > strlen(*sfx) && streq(base + strlen(base) - strlen(*sfx), *sfx))
            return berth_error_set(reterr, -EINVAL, "%s: a %s name may not end in \"%s\"", path, schema->what, *sfx);
    dir = strndup(path, (size_t)(slash - path) + 1);
    if (!dir || asprintf(&lockname, "%s.lock", base) < 0 || asprintf(&lockpath, "%s.lock", path) < 0 ||
        asprintf(&walname, "%s-wal", base) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");

    dfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dfd < 0)
        return dfd;
    r = berth_file_check(dfd, dir, &dir_expect, NULL, reterr);
    if (r < 0) {
        if (r == -EPERM)
            berth_error_prefix(reterr, "the %s's directory must be private (chmod 0700, owned by uid %u)", schema->what,
                               (unsigned)geteuid());
        return r;
    }

    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return berth_error_set(reterr, -errno, "%s: %s", path, strerror(errno));
        if (!(flags & BERTH_JOURNAL_CREATE))
            return berth_error_set(reterr, -ENOENT, "%s: no %s there", path, schema->what);
        create = true;
    } else {
        create = false;
    }

    j = calloc(1, sizeof(*j));
    if (!j)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    j->schema = schema;
    j->lock_fd = -1;
    j->dir_fd = -1;
    j->path = strdup(path);
    if (!j->path || asprintf(&j->reserve_name, "%s.reserve", base) < 0) {
        j->reserve_name = NULL;
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto fail;
    }

    /* The lock first: nobody else may be between our checks and our use. */
    j->lock_fd = open_private_file(dfd, lockname, lockpath, true, reterr);
    if (j->lock_fd < 0) {
        r = j->lock_fd;
        goto fail;
    }
    if (flock(j->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        r = errno == EWOULDBLOCK ? berth_error_set(reterr, -EBUSY, "%s is in use by another process", path)
                                 : berth_error_set(reterr, -errno, "%s: flock: %s", lockpath, strerror(errno));
        goto fail;
    }

    /* The database file: create it ourselves so that it is born 0600. */
    if (create) {
        fd = openat(dfd, base, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || fchmod(fd, 0600) < 0 || fsync(dfd) < 0) {
            r = berth_error_set(reterr, -errno, "creating %s: %s", path, strerror(errno));
            goto fail;
        }
    } else {
        fd = open_private_file(dfd, base, path, false, reterr);
        if (fd < 0) {
            r = fd;
            goto fail;
        }
    }
    /* A WAL left by a crash must be ours as well; SQLite will replay it. */
    wal = openat(dfd, walname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (wal >= 0) {
        r = berth_private_file_check(wal, "the write-ahead log", NULL, reterr);
        if (r < 0)
            goto fail;
    } else if (errno != ENOENT) {
        r = berth_error_set(reterr, -errno, "%s-wal: %s", path, strerror(errno));
        goto fail;
    }

    if (sqlite3_open_v2(path, &j->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE, NULL) !=
        SQLITE_OK) {
        r = berth_journal_error(j, "opening the database", reterr);
        goto fail;
    }
    sqlite3_extended_result_codes(j->db, 1);
    /* EXCLUSIVE before WAL: the WAL index then lives in heap memory. */
    if ((r = pragma_text_is(j, "PRAGMA locking_mode = EXCLUSIVE", "exclusive", reterr)) < 0 ||
        (r = pragma_text_is(j, "PRAGMA journal_mode = WAL", "wal", reterr)) < 0 ||
        (r = exec(j, "PRAGMA synchronous = FULL; PRAGMA trusted_schema = OFF; PRAGMA foreign_keys = ON",
                  "configuring the database", reterr)) < 0)
        goto fail;
    r = migrate(j, reterr);
    if (r < 0)
        goto fail;
    j->dir_fd = TAKE_FD(dfd);
    *ret = j;
    return 0;

fail:
    if (r == -EBADMSG)
        berth_error_prefix(reterr, "%s is not a usable berth %s", path, schema->what);
    berth_journal_close(j);
    return r;
}

void berth_journal_close(struct berth_journal *j)
{
    if (!j)
        return;
    if (j->db) {
        cache_clear(j);
        if (!sqlite3_get_autocommit(j->db))
            (void)sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
        sqlite3_close_v2(j->db);
    }
    if (j->lock_fd >= 0)
        close(j->lock_fd); /* releases the flock; the lock file stays */
    if (j->dir_fd >= 0)
        close(j->dir_fd); /* the space reserve stays for the next start */
    free(j->tail.line);
    free(j->path);
    free(j->reserve_name);
    free(j);
}

struct berth_journal_tail *berth_journal_tail_memo(struct berth_journal *j)
{
    return j ? &j->tail : NULL;
}

sqlite3 *berth_journal_db(struct berth_journal *j)
{
    return j ? j->db : NULL;
}

const char *berth_journal_path(const struct berth_journal *j)
{
    return j ? j->path : NULL;
}

int berth_journal_begin(struct berth_journal *j, struct berth_error *reterr)
{
    return exec_one(j, "BEGIN IMMEDIATE", "starting a journal transaction", reterr);
}

int berth_journal_commit(struct berth_journal *j, struct berth_error *reterr)
{
    int r = exec_one(j, "COMMIT", "committing to the journal", reterr);
    if (r < 0)
        berth_journal_rollback(j);
    return r;
}

void berth_journal_rollback(struct berth_journal *j)
{
    if (j && j->db && !sqlite3_get_autocommit(j->db))
        (void)sqlite3_exec(j->db, "ROLLBACK", NULL, NULL, NULL);
}

bool berth_journal_in_transaction(struct berth_journal *j)
{
    return j && j->db && !sqlite3_get_autocommit(j->db);
}

int berth_journal_savepoint(struct berth_journal *j, struct berth_error *reterr)
{
    if (!berth_journal_in_transaction(j))
        return berth_error_set(reterr, -EINVAL, "a savepoint needs an open transaction");
    return exec_one(j, "SAVEPOINT berth_step", "marking a journal savepoint", reterr);
}

int berth_journal_release(struct berth_journal *j, struct berth_error *reterr)
{
    return exec_one(j, "RELEASE berth_step", "releasing a journal savepoint", reterr);
}

int berth_journal_rollback_to(struct berth_journal *j, struct berth_error *reterr)
{
    int r = exec_one(j, "ROLLBACK TO berth_step", "rolling back to a journal savepoint", reterr);
    if (r == 0)
        r = exec_one(j, "RELEASE berth_step", "releasing a journal savepoint", reterr);
    return r;
}

int berth_journal_set_reserve(struct berth_journal *j, uint64_t bytes, struct berth_error *reterr)
{
    int r;

    if (!j || bytes > BERTH_JOURNAL_RESERVE_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    j->reserve_bytes = bytes;
    if (bytes > 0)
        return berth_reserve_fill(j->dir_fd, j->reserve_name, bytes, reterr);
    r = berth_reserve_release(j->dir_fd, j->reserve_name, reterr);
    return r == -ENOENT ? 0 : r;
}

uint64_t berth_journal_reserve_size(const struct berth_journal *j)
{
    return j ? j->reserve_bytes : 0;
}

bool berth_journal_reserve_held(struct berth_journal *j)
{
    return j && j->reserve_bytes > 0 && berth_reserve_held(j->dir_fd, j->reserve_name, j->reserve_bytes);
}

int berth_journal_check_space(struct berth_journal *j, struct berth_error *reterr)
{
    int r;

    if (!j)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (j->reserve_bytes > 0 && (r = berth_reserve_fill(j->dir_fd, j->reserve_name, j->reserve_bytes, reterr)) < 0)
        return r;
    r = berth_reserve_probe(j->dir_fd, j->reserve_bytes > 0 ? j->reserve_bytes : BERTH_JOURNAL_PROBE_BYTES, reterr);
    if (r < 0)
        berth_error_prefix(reterr, "the journal's filesystem");
    return r;
}

int berth_journal_transact(struct berth_journal *j, unsigned flags,
                           int (*fn)(struct berth_journal *j, void *userdata, struct berth_error *reterr),
                           void *userdata, struct berth_error *reterr)
{
    bool retried = false;
    int r;

    if (!j || !fn || (flags & ~BERTH_JOURNAL_USE_RESERVE) || berth_journal_in_transaction(j))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    for (;;) {
        r = berth_journal_begin(j, reterr);
        if (r == 0)
            r = fn(j, userdata, reterr);
        if (r == 0)
            r = berth_journal_commit(j, reterr); /* rolls back when it fails */
        else
            berth_journal_rollback(j);
        if (r == 0 || !berth_space_error(r) || !(flags & BERTH_JOURNAL_USE_RESERVE) || retried ||
            !berth_journal_reserve_held(j))
            return r;
        /* The space kept for this write: give it to the filesystem and try once more. */
        if (berth_reserve_release(j->dir_fd, j->reserve_name, NULL) < 0)
            return r;
        retried = true;
    }
}
