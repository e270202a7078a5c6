/* SPDX-License-Identifier: MIT */
/*
 * evstore-db.c -- evidence-sqlite's metadata: one SQLite database opened
 * through libberth's journal code (safe open, flock'ed lock file, 0600 files
 * in a 0700 directory, locking_mode=EXCLUSIVE, WAL, synchronous=FULL) with
 * its own application_id ("brev") and format.
 *
 *   objects    (principal, scope, digest) -> size, media_type, created_at,
 *              retain_until (NULL: until removed); an index on digest counts
 *              the owners of one content file (its reference count)
 *   tombstones (principal, scope, digest) -> actor, reason, deleted_at,
 *              kind ('deleted': refused forever; 'expired': by retention)
 *
 * scope is the canonical JSON text of the scope array, digest the whole
 * "sha256:<hex>".  The order of list() is the primary key's (bytewise).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "evstore.h"
#include "jsonobj.h"
#include "macro.h"

static const char *const migrations[] = {
    /* 1: objects and tombstones. */
    "CREATE TABLE objects ("
    "  principal TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  digest TEXT NOT NULL CHECK (length(digest) = 71 AND substr(digest, 1, 7) = 'sha256:'),"
    "  size INTEGER NOT NULL CHECK (size >= 0),"
    "  media_type TEXT NOT NULL,"
    "  created_at INTEGER NOT NULL,"
    "  retain_until INTEGER,"
    "  PRIMARY KEY (principal, scope, digest)"
    ") STRICT, WITHOUT ROWID;"
    "CREATE INDEX objects_digest ON objects (digest);"
    "CREATE INDEX objects_expiry ON objects (retain_until) WHERE retain_until IS NOT NULL;"
    "CREATE TABLE tombstones ("
    "  principal TEXT NOT NULL,"
    "  scope TEXT NOT NULL,"
    "  digest TEXT NOT NULL CHECK (length(digest) = 71 AND substr(digest, 1, 7) = 'sha256:'),"
    "  actor TEXT NOT NULL,"
    "  reason TEXT NOT NULL,"
    "  deleted_at INTEGER NOT NULL,"
    "  kind TEXT NOT NULL CHECK (kind IN ('deleted', 'expired')),"
    "  PRIMARY KEY (principal, scope, digest)"
    ") STRICT, WITHOUT ROWID;",
};

_Static_assert(ELEMENTSOF(migrations) == EVSTORE_FORMAT, "one migration per format version");

static const struct berth_journal_schema schema = {
    .what = "evidence database",
    .application_id = EVSTORE_APPLICATION_ID,
    .format = EVSTORE_FORMAT,
    .migrations = migrations,
};

static void finalizep(sqlite3_stmt **st)
{
    if (*st)
        sqlite3_finalize(*st);
}
#define _cleanup_stmt_ BERTH_CLEANUP(finalizep)

void ev_object_done(struct ev_object *o)
{
    if (!o)
        return;
    free(o->principal);
    free(o->scope);
    free(o->digest);
    free(o->media_type);
    memset(o, 0, sizeof(*o));
}

void ev_tomb_done(struct ev_tomb *t)
{
    if (!t)
        return;
    free(t->actor);
    free(t->reason);
    free(t->kind);
    memset(t, 0, sizeof(*t));
}

int evdb_open(struct evstore *s, struct berth_error *reterr)
{
    _cleanup_free_ char *path = NULL;

    if (asprintf(&path, "%s/" EVSTORE_DB_NAME, s->directory) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_journal_open_schema(path, BERTH_JOURNAL_CREATE, &schema, &s->db, reterr);
}

static int prepare(struct evstore *s, const char *sql, sqlite3_stmt **st, struct berth_error *reterr)
{
    if (sqlite3_prepare_v2(berth_journal_db(s->db), sql, -1, st, NULL) != SQLITE_OK)
        return berth_journal_error(s->db, "preparing a statement of the evidence database", reterr);
    return 0;
}

/* Step a statement that returns no row (or whose rows are not wanted). */
static int step_done(struct evstore *s, sqlite3_stmt *st, const char *what, struct berth_error *reterr)
{
    int rc = sqlite3_step(st);

    if (rc != SQLITE_DONE && rc != SQLITE_ROW)
        return berth_journal_error(s->db, what, reterr);
    return 0;
}

static char *column_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

#define KEY_WHERE " WHERE principal = ?1 AND scope = ?2 AND digest = ?3"
#define BIND_KEY(s, st, what, reterr, k)                                                                               \
    BERTH_JOURNAL_BIND((s)->db, (st), (what), (reterr), BERTH_SQL_TEXT((k)->principal), BERTH_SQL_TEXT((k)->scope),   \
                       BERTH_SQL_TEXT((k)->digest))

static int object_row(sqlite3_stmt *st, struct ev_object *o)
{
    *o = (struct ev_object){
        .principal = column_dup(st, 0),
        .scope = column_dup(st, 1),
        .digest = column_dup(st, 2),
        .size = (uint64_t)sqlite3_column_int64(st, 3),
        .media_type = column_dup(st, 4),
        .created_at = sqlite3_column_int64(st, 5),
        .retain_until = sqlite3_column_type(st, 6) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 6),
    };
    if (!o->principal || !o->scope || !o->digest || !o->media_type) {
        ev_object_done(o);
        return -ENOMEM;
    }
    return 0;
}

#define OBJECT_COLUMNS "principal, scope, digest, size, media_type, created_at, retain_until"

int evdb_object(struct evstore *s, const struct ev_key *k, struct ev_object *ret, struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = prepare(s, "SELECT " OBJECT_COLUMNS " FROM objects" KEY_WHERE, &st, reterr)) < 0 ||
        (r = BIND_KEY(s, st, "reading an object", reterr, k)) < 0)
        return r;
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return -ENOENT;
    if (rc != SQLITE_ROW)
        return berth_journal_error(s->db, "reading an object", reterr);
    if (object_row(st, ret) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return 0;
}

int evdb_tombstone(struct evstore *s, const struct ev_key *k, struct ev_tomb *ret, struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = prepare(s, "SELECT actor, reason, kind, deleted_at FROM tombstones" KEY_WHERE, &st, reterr)) < 0 ||
        (r = BIND_KEY(s, st, "reading a tombstone", reterr, k)) < 0)
        return r;
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE)
        return -ENOENT;
    if (rc != SQLITE_ROW)
        return berth_journal_error(s->db, "reading a tombstone", reterr);
    *ret = (struct ev_tomb){.actor = column_dup(st, 0),
                            .reason = column_dup(st, 1),
                            .kind = column_dup(st, 2),
                            .deleted_at = sqlite3_column_int64(st, 3)};
    if (!ret->actor || !ret->reason || !ret->kind) {
        ev_tomb_done(ret);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    return 0;
}

int evdb_refs(struct evstore *s, const char *digest, int64_t *ret, struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r;

    if ((r = prepare(s, "SELECT count(*) FROM objects WHERE digest = ?1", &st, reterr)) < 0 ||
        (r = BERTH_JOURNAL_BIND(s->db, st, "counting owners", reterr, BERTH_SQL_TEXT(digest))) < 0)
        return r;
    if (sqlite3_step(st) != SQLITE_ROW)
        return berth_journal_error(s->db, "counting owners", reterr);
    *ret = sqlite3_column_int64(st, 0);
    return 0;
}

struct insert_args {
    struct evstore *s;
    const struct ev_meta *m;
    int64_t now;
};

static int insert_fn(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    const struct insert_args *a = userdata;
    const struct ev_meta *m = a->m;
    _cleanup_stmt_ sqlite3_stmt *ins = NULL, *del = NULL;
    int r;

    (void)j;
    if ((r = prepare(a->s,
                     "INSERT INTO objects (" OBJECT_COLUMNS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", &ins, reterr)) <
            0 ||
        (r = BERTH_JOURNAL_BIND(a->s->db, ins, "recording an object", reterr, BERTH_SQL_TEXT(m->key.principal),
                                BERTH_SQL_TEXT(m->key.scope), BERTH_SQL_TEXT(m->key.digest), BERTH_SQL_INT(m->size),
                                BERTH_SQL_TEXT(m->media_type), BERTH_SQL_INT(a->now),
                                m->retain_until < 0 ? (struct berth_sql_value)BERTH_SQL_NULL
                                                    : (struct berth_sql_value)BERTH_SQL_INT(m->retain_until))) < 0 ||
        (r = step_done(a->s, ins, "recording an object", reterr)) < 0)
        return r;
    if ((r = prepare(a->s, "DELETE FROM tombstones" KEY_WHERE " AND kind = 'expired'", &del, reterr)) < 0 ||
        (r = BIND_KEY(a->s, del, "dropping an expired tombstone", reterr, &m->key)) < 0)
        return r;
    return step_done(a->s, del, "dropping an expired tombstone", reterr);
}

int evdb_insert(struct evstore *s, const struct ev_meta *m, int64_t now, struct berth_error *reterr)
{
    struct insert_args a = {s, m, now};
    return berth_journal_transact(s->db, 0, insert_fn, &a, reterr);
}

struct retain_args {
    struct evstore *s;
    const struct ev_key *k;
    int64_t retain_until;
};

static int retain_fn(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    const struct retain_args *a = userdata;
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r;

    (void)j;
    if ((r = prepare(a->s, "UPDATE objects SET retain_until = ?4" KEY_WHERE, &st, reterr)) < 0 ||
        (r = BIND_KEY(a->s, st, "extending retention", reterr, a->k)) < 0)
        return r;
    if (sqlite3_bind_null(st, 4) != SQLITE_OK ||
        (a->retain_until >= 0 && sqlite3_bind_int64(st, 4, a->retain_until) != SQLITE_OK))
        return berth_journal_error(a->s->db, "extending retention", reterr);
    return step_done(a->s, st, "extending retention", reterr);
}

int evdb_set_retain(struct evstore *s, const struct ev_key *k, int64_t retain_until, struct berth_error *reterr)
{
    struct retain_args a = {s, k, retain_until};
    return berth_journal_transact(s->db, 0, retain_fn, &a, reterr);
}

int evdb_bury(struct evstore *s, const char *principal, const char *scope, const char *digest, const char *actor,
              const char *reason, const char *kind, int64_t now, struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *del = NULL, *ins = NULL;
    const struct ev_key k = {.principal = principal, .scope = (char *)scope, .digest = digest};
    int r;

    if ((r = prepare(s, "DELETE FROM objects" KEY_WHERE, &del, reterr)) < 0 ||
        (r = BIND_KEY(s, del, "removing an object", reterr, &k)) < 0 ||
        (r = step_done(s, del, "removing an object", reterr)) < 0)
        return r;
    if ((r = prepare(s,
                     "INSERT OR REPLACE INTO tombstones (principal, scope, digest, actor, reason, deleted_at, kind)"
                     " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                     &ins, reterr)) < 0 ||
        (r = BERTH_JOURNAL_BIND(s->db, ins, "recording a tombstone", reterr, BERTH_SQL_TEXT(principal),
                                BERTH_SQL_TEXT(scope), BERTH_SQL_TEXT(digest), BERTH_SQL_TEXT(actor),
                                BERTH_SQL_TEXT(reason), BERTH_SQL_INT(now), BERTH_SQL_TEXT(kind))) < 0)
        return r;
    return step_done(s, ins, "recording a tombstone", reterr);
}

json_t *ev_stat_doc(const struct ev_object *o)
{
    return json_pack("{s:s, s:I, s:s, s:s, s:o, s:o, s:o}", "digest", o->digest, "size", (json_int_t)o->size, "media_type",
                     o->media_type, "principal", o->principal, "scope", ev_scope_json(o->scope), "created_at",
                     berth_json_ns(o->created_at), "retain_until",
                     o->retain_until < 0 ? json_null() : berth_json_ns(o->retain_until));
}

int evdb_list(struct evstore *s, const struct ev_query *q, json_t *arr, struct berth_error *reterr)
{
    /* ?1 principal or NULL (all); ?2..?4 the cursor's key or NULL (from the start). */
    static const char sql[] = "SELECT " OBJECT_COLUMNS " FROM objects"
                              " WHERE (?1 IS NULL OR principal = ?1)"
                              "   AND (?2 IS NULL OR (principal, scope, digest) > (?2, ?3, ?4))"
                              " ORDER BY principal, scope, digest LIMIT ?5";
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = prepare(s, sql, &st, reterr)) < 0 ||
        (r = BERTH_JOURNAL_BIND(s->db, st, "listing objects", reterr, BERTH_SQL_TEXT(q->principal),
                                BERTH_SQL_TEXT(q->after_principal), BERTH_SQL_TEXT(q->after_scope),
                                BERTH_SQL_TEXT(q->after_digest), BERTH_SQL_INT(q->limit + 1))) < 0)
        return r;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        struct ev_object o;
        json_t *doc;

        if (object_row(st, &o) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        doc = ev_stat_doc(&o);
        ev_object_done(&o);
        if (!doc || json_array_append_new(arr, doc) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (rc != SQLITE_DONE)
        return berth_journal_error(s->db, "listing objects", reterr);
    return 0;
}

static int count(struct evstore *s, const char *sql, const char *principal, int64_t *a, int64_t *b,
                 struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r;

    if ((r = prepare(s, sql, &st, reterr)) < 0 ||
        (r = BERTH_JOURNAL_BIND(s->db, st, "counting", reterr, BERTH_SQL_TEXT(principal))) < 0)
        return r;
    if (sqlite3_step(st) != SQLITE_ROW)
        return berth_journal_error(s->db, "counting", reterr);
    *a = sqlite3_column_int64(st, 0);
    if (b)
        *b = sqlite3_column_int64(st, 1);
    return 0;
}

int evdb_usage(struct evstore *s, const char *principal, int64_t *objects, int64_t *bytes, int64_t *tombstones,
               struct berth_error *reterr)
{
    int r;

    if ((r = count(s, "SELECT count(*), coalesce(sum(size), 0) FROM objects WHERE ?1 IS NULL OR principal = ?1",
                   principal, objects, bytes, reterr)) < 0)
        return r;
    return count(s, "SELECT count(*) FROM tombstones WHERE ?1 IS NULL OR principal = ?1", principal, tombstones, NULL,
                 reterr);
}

int evdb_expired(struct evstore *s, int64_t now, uint32_t max, json_t *arr, struct berth_error *reterr)
{
    _cleanup_stmt_ sqlite3_stmt *st = NULL;
    int r, rc;

    if ((r = prepare(s,
                     "SELECT digest, principal, scope, size FROM objects"
                     " WHERE retain_until IS NOT NULL AND retain_until <= ?1"
                     " ORDER BY retain_until, principal, scope, digest LIMIT ?2",
                     &st, reterr)) < 0 ||
        (r = BERTH_JOURNAL_BIND(s->db, st, "finding expired objects", reterr, BERTH_SQL_INT(now),
                                BERTH_SQL_INT((int64_t)max + 1))) < 0)
        return r;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *o = json_pack("{s:s, s:s, s:s, s:I}", "digest", (const char *)sqlite3_column_text(st, 0), "principal",
                              (const char *)sqlite3_column_text(st, 1), "scope",
                              (const char *)sqlite3_column_text(st, 2), "size",
                              (json_int_t)sqlite3_column_int64(st, 3));
        if (!o || json_array_append_new(arr, o) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (rc != SQLITE_DONE)
        return berth_journal_error(s->db, "finding expired objects", reterr);
    return 0;
}
