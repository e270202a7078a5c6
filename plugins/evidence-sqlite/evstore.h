/* SPDX-License-Identifier: MIT */
/*
 * evstore.h -- the evidence-sqlite plugin's parts, shared by its files.
 *
 * The store is one directory (the "directory" of the plugin's config,
 * owned by berthd's user, mode 0700):
 *
 *   evidence.db, evidence.db.lock, evidence.db-wal
 *                       the metadata: an SQLite database opened through
 *                       libberth's journal code (journal.h) with its own
 *                       application_id and format (evstore-db.c)
 *   objects/sha256/<hex>
 *                       the content, one file per digest (mode 0600, one
 *                       link), shared by every owner's object of that digest
 *                       and removed with the last of them (evstore-content.c)
 *
 * Content is published before the metadata row that names it is committed,
 * and removed after the commit that drops the last row, so a crash can leave
 * a content file no row names (an orphan), never a row without content.
 * init() removes orphans and temporaries.  Everything here runs on the one
 * thread the core calls the instance from.
 */
#ifndef BERTH_EVSTORE_H
#define BERTH_EVSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <sqlite3.h>

#include <berth/plugin.h>

#include "digest.h"
#include "journal.h"

/** "brev": PRAGMA application_id of an evidence-sqlite database. */
#define EVSTORE_APPLICATION_ID 0x62726576
/** The metadata format (PRAGMA user_version). */
#define EVSTORE_FORMAT 1
/** File name of the metadata database in the store's directory. */
#define EVSTORE_DB_NAME "evidence.db"
/** max_object_bytes: default and largest accepted. */
#define EVSTORE_MAX_OBJECT_DEFAULT (64ULL * 1024 * 1024)
#define EVSTORE_MAX_OBJECT_LIMIT (1024ULL * 1024 * 1024)

/** One instance. */
struct evstore {
    const struct berth_host *host;
    char *directory;
    struct berth_journal *db;
    int dirfd;    /* the store's directory */
    int objfd;    /* objects/sha256 */
    dev_t objdev; /* its filesystem: what put() may link without copying */
    uint64_t max_object_bytes;
};

/* ------------------------------------------------------------------------ */
/* Documents (evstore-doc.c): strict parsing of what the ops receive.        */

/**
 * struct ev_key - an object's key.  @doc owns the strings; @scope is the
 * canonical JSON text of the scope array (malloc'd).  Release with
 * ev_key_done().
 */
struct ev_key {
    json_t *doc;
    const char *digest; /* "sha256:<hex>" */
    const char *principal;
    char *scope;
};

/** struct ev_meta - put()'s metadata: the key and what describes the bytes. */
struct ev_meta {
    struct ev_key key;
    uint64_t size;
    const char *media_type;
    int64_t retain_until; /* -1: until removed */
};

/** struct ev_query - list() and usage() queries. */
struct ev_query {
    json_t *doc;
    const char *principal; /* NULL: every owner */
    bool has_after;
    char *after_principal, *after_scope, *after_digest; /* the cursor, decoded */
    int64_t limit;
};

void ev_key_done(struct ev_key *k);
void ev_query_done(struct ev_query *q);

/**
 * ev_parse_key() - parse a key document; with @actor non-NULL it must also
 * hold "actor" (remove), borrowed into *@actor.  Return: 0 or -EINVAL.
 */
int ev_parse_key(const char *json, size_t len, struct ev_key *ret, const char **actor, struct berth_error *reterr);

/** ev_parse_meta() - parse put()'s metadata.  Return: 0 or -EINVAL. */
int ev_parse_meta(const char *json, size_t len, struct ev_meta *ret, struct berth_error *reterr);

/**
 * ev_parse_query() - parse a list() (@listing: "after", "limit") or usage()
 * query.  Return: 0 or -EINVAL (a cursor of another principal too).
 */
int ev_parse_query(const char *json, size_t len, bool listing, struct ev_query *ret, struct berth_error *reterr);

/** ev_reason_valid() - remove()'s reason: 1..BERTH_EVIDENCE_REASON_MAX bytes of UTF-8, no control character. */
bool ev_reason_valid(const char *reason);

/**
 * ev_cursor() - the opaque cursor that continues after the key
 * (@principal, @scope, @digest): base64url of canonical ["p", scope, "d"].
 * Return: a new JSON string, or NULL (out of memory).
 */
json_t *ev_cursor(const char *principal, const char *scope, const char *digest);

/** ev_scope_json() - the stored canonical @scope text as a JSON array (NULL: corrupt or no memory). */
json_t *ev_scope_json(const char *scope);

/* ------------------------------------------------------------------------ */
/* Metadata (evstore-db.c).                                                 */

/** A row of objects; strings malloc'd.  Release with ev_object_done(). */
struct ev_object {
    char *principal, *scope, *digest, *media_type;
    uint64_t size;
    int64_t created_at;
    int64_t retain_until; /* -1: NULL */
};

/** A row of tombstones; strings malloc'd.  Release with ev_tomb_done(). */
struct ev_tomb {
    char *actor, *reason, *kind;
    int64_t deleted_at;
};

void ev_object_done(struct ev_object *o);
void ev_tomb_done(struct ev_tomb *t);

/** evdb_open() - open (creating) the metadata database in the store's directory. */
int evdb_open(struct evstore *s, struct berth_error *reterr);

/** evdb_object() - the object of @k: 0, -ENOENT, or an SQLite error. */
int evdb_object(struct evstore *s, const struct ev_key *k, struct ev_object *ret, struct berth_error *reterr);

/** evdb_tombstone() - the tombstone of @k: 0, -ENOENT, or an SQLite error. */
int evdb_tombstone(struct evstore *s, const struct ev_key *k, struct ev_tomb *ret, struct berth_error *reterr);

/** evdb_refs() - how many objects name the content @digest (*@ret). */
int evdb_refs(struct evstore *s, const char *digest, int64_t *ret, struct berth_error *reterr);

/**
 * evdb_insert() - in a transaction of its own: insert the object of @m
 * created at @now, dropping an "expired" tombstone of its key.
 */
int evdb_insert(struct evstore *s, const struct ev_meta *m, int64_t now, struct berth_error *reterr);

/** evdb_set_retain() - in a transaction of its own: set the object's retain_until (-1: NULL). */
int evdb_set_retain(struct evstore *s, const struct ev_key *k, int64_t retain_until, struct berth_error *reterr);

/**
 * evdb_bury() - within the caller's transaction: drop the object of
 * (@principal, @scope, @digest) if there is one and record (insert or
 * replace) its tombstone.
 */
int evdb_bury(struct evstore *s, const char *principal, const char *scope, const char *digest, const char *actor,
              const char *reason, const char *kind, int64_t now, struct berth_error *reterr);

/** evdb_list() - up to @q->limit + 1 stat documents after the cursor, appended to @arr. */
int evdb_list(struct evstore *s, const struct ev_query *q, json_t *arr, struct berth_error *reterr);

/** evdb_usage() - counts for @principal (NULL: all). */
int evdb_usage(struct evstore *s, const char *principal, int64_t *objects, int64_t *bytes, int64_t *tombstones,
               struct berth_error *reterr);

/**
 * evdb_expired() - up to @max + 1 objects whose retain_until <= @now,
 * oldest first, appended to @arr as {"digest","principal","scope","size"}
 * with the scope as canonical text (the caller converts it).
 */
int evdb_expired(struct evstore *s, int64_t now, uint32_t max, json_t *arr, struct berth_error *reterr);

/** ev_stat_doc() - the stat document of @o (NULL on memory or corrupt scope). */
json_t *ev_stat_doc(const struct ev_object *o);

/* ------------------------------------------------------------------------ */
/* Content files (evstore-content.c).                                       */

/** evc_open() - open (creating) objects/sha256 below the store's directory. */
int evc_open(struct evstore *s, struct berth_error *reterr);

/** evc_sweep() - remove temporaries and content files no object names (after a crash). */
int evc_sweep(struct evstore *s, struct berth_error *reterr);

/**
 * evc_store() - make the content of @m present: verify @data_fd's bytes
 * (all of them, also when the content is there already: a put proves the
 * caller has the bytes) and, unless present, publish them (linking
 * @data_fd itself when it is an unnamed file of this filesystem, else a
 * verified copy).  *@ret_added says whether a file was published.
 * Return: 0; -EBADMSG (bytes do not match); -ENOSPC, -EDQUOT, -EIO.
 */
int evc_store(struct evstore *s, const struct ev_meta *m, int data_fd, bool *ret_added, struct berth_error *reterr);

/** evc_stream() - write the content of @o to @out_fd, verified; -EBADMSG when it does not match. */
int evc_stream(struct evstore *s, const struct ev_object *o, int out_fd, struct berth_error *reterr);

/** evc_drop() - remove the content file of @digest if no object names it any more (errors are logged). */
void evc_drop(struct evstore *s, const char *digest);

/** evc_upload() - a new unnamed file on the content's filesystem, for upload(). */
int evc_upload(struct evstore *s, int *ret_fd, struct berth_error *reterr);

#endif /* BERTH_EVSTORE_H */
