/* SPDX-License-Identifier: MIT */
/*
 * evidence-sqlite.c -- the evidence-sqlite plugin: berth's embedded evidence
 * store (struct berth_evidence_store_ops_v1, every op of ABI 1.1).
 *
 * Backend configuration (berthd.json):
 *   "evidence": {"plugin": "evidence-sqlite",
 *                "config": {"directory": "/var/lib/berth/evidence",
 *                           "max_object_bytes": 67108864}}
 * "directory" is required: an absolute path reached without symlinks, a
 * directory owned by berthd's user with mode 0700 (init creates it, 0700,
 * when its parent exists).  "max_object_bytes" bounds each object (default
 * 64 MiB, at most 1 GiB).  No other member is accepted.
 *
 * The layout and the crash rules are in evstore.h; metadata in
 * evstore-db.c, content files in evstore-content.c, the documents in
 * evstore-doc.c.  One instance per directory: a second init on the same
 * directory, in this process or another, gets -EBUSY (the database's lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <berth/plugin.h>

#include "canon.h"
#include "evstore.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

#define CONFIG_MAX 4096

static void store_free(struct evstore *s)
{
    if (!s)
        return;
    berth_journal_close(s->db);
    if (s->objfd >= 0)
        close(s->objfd);
    if (s->dirfd >= 0)
        close(s->dirfd);
    free(s->directory);
    free(s);
}

static int now_ns(struct evstore *s, int64_t *ret, struct berth_error *reterr)
{
    int64_t t = s->host->now_ns(s->host, BERTH_CLOCK_REALTIME);

    if (t < 0)
        return berth_error_set(reterr, (int)t, "the clock cannot be read");
    *ret = t;
    return 0;
}

/* The store's directory: made 0700 when missing, reached without symlinks. */
static int open_directory(struct evstore *s, struct berth_error *reterr)
{
    if (mkdir(s->directory, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "creating the evidence directory %s: %s", s->directory,
                               strerror(errno));
    s->dirfd = berth_open_trusted(s->directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (s->dirfd < 0) {
        berth_error_prefix(reterr, "the evidence directory %s", s->directory);
        return s->dirfd;
    }
    return 0;
}

static int store_init(const struct berth_host *host, const char *config, size_t config_len, void **ret_state,
                      struct berth_error *reterr)
{
    static const char *const members[] = {"directory", "max_object_bytes", NULL};
    _cleanup_json_ json_t *doc = NULL;
    const char *directory = NULL;
    int64_t max = (int64_t)EVSTORE_MAX_OBJECT_DEFAULT;
    struct evstore *s;
    int r;

    if (!host || !config || !ret_state)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_json_parse(config, config_len, CONFIG_MAX, &doc, reterr)) < 0 ||
        (r = berth_json_only_members(doc, "config", members, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "config", "directory", true, &directory, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "config", "max_object_bytes", false, 1, (int64_t)EVSTORE_MAX_OBJECT_LIMIT,
                                   &max, reterr)) < 0)
        return r == -ENOMEM ? r : -EINVAL;
    if (directory[0] != '/' || strlen(directory) >= 4096)
        return berth_error_set(reterr, -EINVAL, "config.directory must be an absolute path");

    s = calloc(1, sizeof(*s));
    if (!s)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *s = (struct evstore){.host = host, .dirfd = -1, .objfd = -1, .max_object_bytes = (uint64_t)max};
    s->directory = strdup(directory);
    if (!s->directory)
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    /* The database first: its checks (a private directory) and its lock
     * come before anything below the directory is touched. */
    if (r >= 0)
        r = open_directory(s, reterr);
    if (r >= 0)
        r = evdb_open(s, reterr);
    if (r >= 0)
        r = evc_open(s, reterr);
    if (r >= 0)
        r = evc_sweep(s, reterr);
    if (r < 0) {
        store_free(s);
        return r;
    }
    *ret_state = s;
    return 0;
}

static void store_fini(void *state)
{
    store_free(state);
}

static json_t *ref_doc(const char *digest, uint64_t size, const char *media_type)
{
    return json_pack("{s:s, s:I, s:s}", "digest", digest, "size", (json_int_t)size, "media_type", media_type);
}

/* -EIDRM when @k has a tombstone, else -ENOENT. */
static int absent(struct evstore *s, const struct ev_key *k, struct berth_error *reterr)
{
    struct ev_tomb t = {0};
    int r = evdb_tombstone(s, k, &t, reterr);

    if (r == 0) {
        r = berth_error_set(reterr, -EIDRM, "%s of %s was %s", k->digest, k->principal,
                            streq(t.kind, "deleted") ? "deleted" : "removed by retention");
        ev_tomb_done(&t);
        return r;
    }
    if (r == -ENOENT)
        return berth_error_set(reterr, -ENOENT, "no object %s of %s", k->digest, k->principal);
    return r;
}

static int op_put(void *state, const char *meta, size_t meta_len, int data_fd, char **ret_ref, size_t *ret_len,
                  struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_meta m = {0};
    struct ev_object o = {0};
    struct ev_tomb t = {0};
    bool added = false;
    int64_t now = 0;
    int r;

    if (!s || data_fd < 0 || !ret_ref || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = ev_parse_meta(meta, meta_len, &m, reterr)) < 0)
        return r;
    if (m.size > s->max_object_bytes) {
        r = berth_error_set(reterr, -EFBIG, "the object is %llu bytes; this store keeps at most %llu",
                            (unsigned long long)m.size, (unsigned long long)s->max_object_bytes);
        goto out;
    }
    r = evdb_tombstone(s, &m.key, &t, reterr);
    if (r == 0 && streq(t.kind, "deleted")) {
        r = berth_error_set(reterr, -EIDRM, "%s of %s was deleted by %s (%s); it cannot be stored again",
                            m.key.digest, m.key.principal, t.actor, t.reason);
        goto out;
    }
    if (r < 0 && r != -ENOENT)
        goto out;
    r = evdb_object(s, &m.key, &o, reterr);
    if (r == 0) {
        int64_t keep;

        if (o.size != m.size || !streq(o.media_type, m.media_type)) {
            r = berth_error_set(reterr, -EEXIST, "%s of %s is stored with size %llu and media type %s", m.key.digest,
                                m.key.principal, (unsigned long long)o.size, o.media_type);
            goto out;
        }
        /* An identical retry: forever wins, else the later time. */
        keep = o.retain_until < 0 || m.retain_until < 0 ? -1
                                                        : (o.retain_until > m.retain_until ? o.retain_until
                                                                                           : m.retain_until);
        if (keep != o.retain_until && (r = evdb_set_retain(s, &m.key, keep, reterr)) < 0)
            goto out;
    } else if (r == -ENOENT) {
        if ((r = now_ns(s, &now, reterr)) < 0 || (r = evc_store(s, &m, data_fd, &added, reterr)) < 0)
            goto out;
        r = evdb_insert(s, &m, now, reterr);
        if (r < 0 && added)
            evc_drop(s, m.key.digest); /* nothing names it: take it back now */
        if (r < 0)
            goto out;
    } else {
        goto out;
    }
    r = berth_json_emit(ref_doc(m.key.digest, m.size, m.media_type), ret_ref, ret_len, reterr);
out:
    ev_object_done(&o);
    ev_tomb_done(&t);
    ev_key_done(&m.key);
    return r;
}

/* Parse the key @ref and read its object: 0, -ENOENT, -EIDRM (a tombstone). */
static int find_object(struct evstore *s, const char *ref, size_t ref_len, struct ev_key *k, struct ev_object *o,
                       struct berth_error *reterr)
{
    int r;

    if ((r = ev_parse_key(ref, ref_len, k, NULL, reterr)) < 0)
        return r;
    r = evdb_object(s, k, o, reterr);
    return r == -ENOENT ? absent(s, k, reterr) : r;
}

static int op_get(void *state, const char *ref, size_t ref_len, int out_fd, uint64_t max_bytes,
                  struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_key k = {0};
    struct ev_object o = {0};
    int r;

    if (!s || out_fd < 0)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = find_object(s, ref, ref_len, &k, &o, reterr);
    if (r == 0 && o.size > max_bytes)
        r = berth_error_set(reterr, -EFBIG, "%s is %llu bytes, more than the %llu asked for", k.digest,
                            (unsigned long long)o.size, (unsigned long long)max_bytes);
    else if (r == 0)
        r = evc_stream(s, &o, out_fd, reterr);
    ev_object_done(&o);
    ev_key_done(&k);
    return r;
}

static int op_stat(void *state, const char *ref, size_t ref_len, char **ret_json, size_t *ret_len,
                   struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_key k = {0};
    struct ev_object o = {0};
    int r;

    if (!s || !ret_json || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = find_object(s, ref, ref_len, &k, &o, reterr);
    if (r == 0)
        r = berth_json_emit(ev_stat_doc(&o), ret_json, ret_len, reterr);
    ev_object_done(&o);
    ev_key_done(&k);
    return r;
}

struct remove_args {
    struct evstore *s;
    const struct ev_key *k;
    const char *actor, *reason;
    int64_t now;
    bool dropped; /* an object was removed: its content may go */
};

static int remove_fn(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct remove_args *a = userdata;
    struct ev_tomb t = {0};
    struct ev_object o = {0};
    int r;

    (void)j;
    r = evdb_tombstone(a->s, a->k, &t, reterr);
    if (r == 0 && streq(t.kind, "deleted")) {
        ev_tomb_done(&t);
        return 0; /* deleted already: the first tombstone stays */
    }
    ev_tomb_done(&t);
    if (r < 0 && r != -ENOENT)
        return r;
    r = evdb_object(a->s, a->k, &o, reterr);
    a->dropped = r == 0;
    ev_object_done(&o);
    if (r < 0 && r != -ENOENT)
        return r;
    return evdb_bury(a->s, a->k->principal, a->k->scope, a->k->digest, a->actor, a->reason, "deleted", a->now,
                     reterr);
}

static int op_remove(void *state, const char *ref, size_t ref_len, const char *reason, struct berth_error *reterr)
{
    struct evstore *s = state;
    struct remove_args a = {.s = s};
    struct ev_key k = {0};
    int r;

    if (!s)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = ev_parse_key(ref, ref_len, &k, &a.actor, reterr)) < 0)
        return r;
    a.k = &k;
    a.reason = reason;
    if (!ev_reason_valid(reason))
        r = berth_error_set(reterr, -EINVAL,
                            "the reason must be 1 to %d bytes of UTF-8 without control characters",
                            BERTH_EVIDENCE_REASON_MAX);
    if (r == 0)
        r = now_ns(s, &a.now, reterr);
    if (r == 0)
        r = berth_journal_transact(s->db, 0, remove_fn, &a, reterr);
    if (r == 0 && a.dropped)
        evc_drop(s, k.digest);
    ev_key_done(&k);
    return r;
}

static int op_tombstone(void *state, const char *ref, size_t ref_len, char **ret_json, size_t *ret_len,
                        struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_key k = {0};
    struct ev_tomb t = {0};
    int r;

    if (!s || !ret_json || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = ev_parse_key(ref, ref_len, &k, NULL, reterr)) < 0)
        return r;
    r = evdb_tombstone(s, &k, &t, reterr);
    if (r == -ENOENT)
        r = berth_error_set(reterr, -ENOENT, "no tombstone for %s of %s", k.digest, k.principal);
    else if (r == 0)
        r = berth_json_emit(json_pack("{s:s, s:s, s:o, s:s, s:s, s:o, s:s}", "digest", k.digest, "principal", k.principal,
                              "scope", ev_scope_json(k.scope), "actor", t.actor, "reason", t.reason, "deleted_at",
                              berth_json_ns(t.deleted_at), "kind", t.kind),
                    ret_json, ret_len, reterr);
    ev_tomb_done(&t);
    ev_key_done(&k);
    return r;
}

static int op_upload(void *state, int *ret_fd, struct berth_error *reterr)
{
    struct evstore *s = state;

    if (!s || !ret_fd)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    return evc_upload(s, ret_fd, reterr);
}

static int op_list(void *state, const char *query, size_t query_len, char **ret_json, size_t *ret_len,
                   struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_query q = {0};
    json_t *objects = NULL, *next = NULL;
    int r;

    if (!s || !ret_json || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = ev_parse_query(query, query_len, true, &q, reterr)) < 0)
        return r;
    objects = json_array();
    if (!objects)
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
    if (r == 0)
        r = evdb_list(s, &q, objects, reterr);
    if (r == 0 && json_array_size(objects) > (size_t)q.limit) {
        /* One more than asked for: the page continues after its last object. */
        const json_t *last;

        json_array_remove(objects, (size_t)q.limit);
        last = json_array_get(objects, (size_t)q.limit - 1);
        _cleanup_free_ char *scope = NULL;
        if (berth_json_serialize(json_object_get(last, "scope"), 0, &scope, NULL, reterr) < 0 ||
            !(next = ev_cursor(json_string_value(json_object_get(last, "principal")), scope,
                               json_string_value(json_object_get(last, "digest")))))
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (r == 0)
        r = berth_json_emit(json_pack("{s:o, s:o}", "objects", objects, "next", next ? next : json_null()), ret_json, ret_len,
                    reterr);
    else {
        json_decref(objects);
        json_decref(next);
    }
    ev_query_done(&q);
    return r;
}

static int op_usage(void *state, const char *query, size_t query_len, char **ret_json, size_t *ret_len,
                    struct berth_error *reterr)
{
    struct evstore *s = state;
    struct ev_query q = {0};
    int64_t objects = 0, bytes = 0, tombstones = 0;
    int r;

    if (!s || !ret_json || !ret_len)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = ev_parse_query(query, query_len, false, &q, reterr)) < 0)
        return r;
    r = evdb_usage(s, q.principal, &objects, &bytes, &tombstones, reterr);
    if (r == 0)
        r = berth_json_emit(json_pack("{s:I, s:I, s:I}", "objects", (json_int_t)objects, "bytes", (json_int_t)bytes,
                              "tombstones", (json_int_t)tombstones),
                    ret_json, ret_len, reterr);
    ev_query_done(&q);
    return r;
}

struct prune_args {
    struct evstore *s;
    json_t *expired; /* up to max + 1 */
    uint32_t max;
    int64_t now;
};

static int prune_fn(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    const struct prune_args *a = userdata;
    size_t i;
    int r;

    (void)j;
    for (i = 0; i < json_array_size(a->expired) && i < a->max; i++) {
        const json_t *o = json_array_get(a->expired, i);

        r = evdb_bury(a->s, json_string_value(json_object_get(o, "principal")),
                      json_string_value(json_object_get(o, "scope")), json_string_value(json_object_get(o, "digest")),
                      "retention", "retention", "expired", a->now, reterr);
        if (r < 0)
            return r;
    }
    return 0;
}

static int op_prune(void *state, int64_t now_ns_arg, uint32_t max, char **ret_json, size_t *ret_len,
                    struct berth_error *reterr)
{
    struct evstore *s = state;
    struct prune_args a = {.s = s, .max = max};
    json_t *pruned = NULL;
    bool more;
    size_t i;
    int r;

    if (!s || !ret_json || !ret_len || now_ns_arg < 0 || max < 1 || max > BERTH_EVIDENCE_PAGE_MAX)
        return berth_error_set(reterr, -EINVAL, "prune needs a time >= 0 and 1 to %d objects",
                               BERTH_EVIDENCE_PAGE_MAX);
    a.expired = json_array();
    pruned = json_array();
    if (!a.expired || !pruned) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto out;
    }
    if ((r = evdb_expired(s, now_ns_arg, max, a.expired, reterr)) < 0 || (r = now_ns(s, &a.now, reterr)) < 0 ||
        (r = berth_journal_transact(s->db, 0, prune_fn, &a, reterr)) < 0)
        goto out;
    more = json_array_size(a.expired) > max;
    for (i = 0; i < json_array_size(a.expired) && i < max; i++) {
        json_t *o = json_array_get(a.expired, i);
        json_t *scope = ev_scope_json(json_string_value(json_object_get(o, "scope")));

        evc_drop(s, json_string_value(json_object_get(o, "digest")));
        if (!scope || json_object_set_new(o, "scope", scope) < 0 || json_array_append(pruned, o) < 0) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            goto out;
        }
    }
    r = berth_json_emit(json_pack("{s:O, s:b}", "pruned", pruned, "more", more), ret_json, ret_len, reterr);
out:
    json_decref(a.expired);
    json_decref(pruned);
    return r;
}

static const struct berth_evidence_store_ops_v1 store_ops = {
    .put = op_put,
    .get = op_get,
    .stat = op_stat,
    .remove = op_remove,
    .tombstone = op_tombstone,
    .upload = op_upload,
    .list = op_list,
    .usage = op_usage,
    .prune = op_prune,
};

static const struct berth_plugin descriptor = {
    .abi_version = BERTH_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = "evidence-sqlite",
    .kind = BERTH_PLUGIN_EVIDENCE_STORE,
    .version = PACKAGE_VERSION,
    .init = store_init,
    .fini = store_fini,
    .ops = &store_ops,
    .ops_size = sizeof(store_ops),
};

const struct berth_plugin *berth_plugin_entry(void)
{
    return &descriptor;
}
