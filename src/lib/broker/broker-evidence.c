/* SPDX-License-Identifier: MIT */
/* broker-evidence.c -- the evidence store behind its lock; see broker-evidence.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker-evidence.h"
#include "broker-internal.h"
#include "canon.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"
#include "reserve.h"

/* A store's filesystem that is full: how soon a client should try again. */
#define STORE_FULL_RETRY_S 30

void berth_evidence_owner_clear(struct berth_evidence_owner *o)
{
    if (!o)
        return;
    free(o->scope);
    memset(o, 0, sizeof(*o));
}

bool berth_evidence_owner_same(const struct berth_evidence_owner *a, const struct berth_evidence_owner *b)
{
    return a && b && a->scope && b->scope && streq(a->principal, b->principal) && streq(a->scope, b->scope);
}

const struct berth_evidence_store_ops_v1 *berth_broker_evidence_acquire(struct berth_broker *b, void **ret_state)
{
    if (!b || !b->p.evidence_ops)
        return NULL;
    pthread_mutex_lock(&b->evidence_lock);
    if (ret_state)
        *ret_state = b->p.evidence_state;
    return b->p.evidence_ops;
}

void berth_broker_evidence_release(struct berth_broker *b)
{
    pthread_mutex_unlock(&b->evidence_lock);
}

static void no_store(struct berth_reply *reply, const char *what)
{
    broker_fail(reply, 501, "not_implemented", "%s", what);
}

int berth_broker_evidence_caller(struct berth_broker *b, const char *fingerprint, struct berth_evidence_owner *ret,
                                 struct berth_reply *reply)
{
    struct broker_caller caller;
    int r;

    memset(ret, 0, sizeof(*ret));
    if (!b->p.evidence_ops) {
        no_store(reply, "this broker has no evidence store (berthd.json \"evidence\")");
        return -EOPNOTSUPP;
    }
    pthread_mutex_lock(&b->lock);
    r = broker_authenticate(b, fingerprint, &caller, reply);
    if (r == 0) {
        snprintf(ret->principal, sizeof(ret->principal), "%s", caller.subject->principal);
        ret->scope = TAKE_PTR(caller.scope);
        ret->admin = caller.subject->admin;
        ret->quota = caller.subject->evidence_quota;
    }
    pthread_mutex_unlock(&b->lock);
    broker_caller_clear(&caller);
    return r < 0 ? -EACCES : 0;
}

/* ------------------------------------------------------------------------ */
/* Documents the store takes                                                 */

/* {"digest", "principal", "scope"} of @principal and @scope (canonical JSON
 * text), plus "actor" when not NULL, canonical; NULL when out of memory. */
static char *key_of(const char *principal, const char *scope, const char *digest, const char *actor, size_t *ret_len)
{
    _cleanup_json_ json_t *s = json_loads(scope, JSON_REJECT_DUPLICATES, NULL), *doc = NULL;
    char *text = NULL;

    if (!s)
        return NULL;
    doc = json_pack("{s:s, s:s, s:O}", "digest", digest, "principal", principal, "scope", s);
    if (!doc || (actor && json_object_set_new(doc, "actor", json_string(actor)) < 0) ||
        berth_json_serialize(doc, 0, &text, ret_len, NULL) < 0)
        return NULL;
    return text;
}

/* Serialise @doc (a new reference, released) canonically; NULL when out of memory. */
static char *serialize_new(json_t *doc, size_t *ret_len)
{
    char *text = NULL;

    return berth_json_emit(doc, &text, ret_len, NULL) < 0 ? NULL : text;
}

/* Parse what a store returned; NULL when it is not JSON (a broken plugin). */
static json_t *parse_store_json(char *text, size_t len)
{
    json_t *v = NULL;

    if (text)
        (void)berth_json_parse(text, len, BERTH_BROKER_DOC_MAX * 16, &v, NULL);
    free(text);
    return v;
}

/* A store call failed with @r (lock held): @reply says what the client may do. */
static void store_failed(struct berth_broker *b, int r, const struct berth_error *err, const char *what,
                         struct berth_reply *reply)
{
    if (berth_space_error(r)) {
        broker_fail(reply, 503, "storage_full", "the evidence store's filesystem is full; retry in %d s",
                    STORE_FULL_RETRY_S);
        reply->retry_after_s = STORE_FULL_RETRY_S;
        return;
    }
    berth_logf(b->p.logger, BERTH_LOG_ERR, "evidence store: %s failed: %s", what, err->message);
    broker_fail(reply, 503, "evidence_store", "the evidence store failed to %s; retry later", what);
}

/* What @who's principal holds (lock held): 0 with the counts, or <0 with @reply filled. */
static int usage_of(struct berth_broker *b, const char *principal, int64_t *ret_objects, int64_t *ret_bytes,
                    struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *query = NULL;
    _cleanup_json_ json_t *u = NULL;
    char *text = NULL;
    size_t qlen = 0, len = 0;
    int r;

    if (!ops->usage) {
        no_store(reply, "the evidence store cannot count what an owner holds (an ABI 1.0 plugin), so uploads "
                        "are refused");
        return -EOPNOTSUPP;
    }
    query = serialize_new(json_pack("{s:s}", "principal", principal), &qlen);
    if (!query) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    r = ops->usage(b->p.evidence_state, query, qlen, &text, &len, &err);
    if (r < 0) {
        store_failed(b, r, &err, "count usage", reply);
        return r;
    }
    u = parse_store_json(text, len);
    if (!json_is_integer(json_object_get(u, "objects")) || !json_is_integer(json_object_get(u, "bytes"))) {
        broker_fail(reply, 503, "evidence_store", "the evidence store's usage answer is not understood");
        return -EBADMSG;
    }
    *ret_objects = json_integer_value(json_object_get(u, "objects"));
    *ret_bytes = json_integer_value(json_object_get(u, "bytes"));
    return 0;
}

/* A new unnamed file for content (lock held): the store's, else one in the spool. */
static int scratch_file(struct berth_broker *b, int *ret_fd, struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    int r = -EOPNOTSUPP, fd;

    if (ops->upload) {
        r = ops->upload(b->p.evidence_state, &fd, &err);
        if (r == 0) {
            *ret_fd = fd;
            return 0;
        }
    }
    if (r == -EOPNOTSUPP && b->p.evidence_spool_directory) {
        fd = open(b->p.evidence_spool_directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd >= 0) {
            *ret_fd = fd;
            return 0;
        }
        r = -errno;
        berth_error_set(&err, r, "%s: %s", b->p.evidence_spool_directory, strerror(-r));
    }
    if (r == -EOPNOTSUPP) {
        no_store(reply, "the evidence store gives out no upload files and berthd has no spool directory");
        return r;
    }
    store_failed(b, r, &err, "make a file for the content", reply);
    return r;
}

/* Whether @who may add an object of @size bytes to @objects holding @bytes;
 * fills @reply when not. */
static bool quota_allows(const struct berth_evidence_owner *who, int64_t objects, int64_t bytes, uint64_t size,
                         struct berth_reply *reply)
{
    if (objects >= who->quota.objects) {
        broker_fail(reply, 413, "quota_exceeded",
                    "%s holds %" PRId64 " evidence objects, its quota: delete some (berthctl evidence rm) first",
                    who->principal, objects);
        return false;
    }
    if (bytes > who->quota.bytes || size > (uint64_t)(who->quota.bytes - bytes)) {
        broker_fail(reply, 413, "quota_exceeded",
                    "%s holds %" PRId64 " bytes of evidence; %" PRIu64 " more would pass its quota of %" PRId64
                    " bytes",
                    who->principal, bytes, size, who->quota.bytes);
        return false;
    }
    return true;
}

static void too_large(const struct berth_broker *b, uint64_t size, struct berth_reply *reply)
{
    broker_fail(reply, 413, "too_large", "an evidence object is at most %" PRId64 " bytes; this one is %" PRIu64,
                b->p.evidence_max_object_bytes, size);
}

/* Whether @who already stores @digest (lock held); false when it cannot tell. */
static bool stored(struct berth_broker *b, const struct berth_evidence_owner *who, const char *digest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *key = NULL;
    char *text = NULL;
    size_t key_len = 0, len = 0;
    int r;

    if (!digest || !(key = key_of(who->principal, who->scope, digest, NULL, &key_len)))
        return false;
    r = b->p.evidence_ops->stat(b->p.evidence_state, key, key_len, &text, &len, &err);
    free(text);
    return r == 0;
}

int berth_broker_evidence_begin(struct berth_broker *b, const struct berth_evidence_owner *who, bool has_size,
                                uint64_t size, const char *digest, int *ret_fd, uint64_t *ret_room,
                                struct berth_reply *reply)
{
    uint64_t room = (uint64_t)b->p.evidence_max_object_bytes;
    int64_t objects = 0, bytes = 0;
    bool again;
    int r, fd = -1;

    if (!b->p.evidence_ops) {
        no_store(reply, "this broker has no evidence store");
        return -EOPNOTSUPP;
    }
    if (has_size && size > room) {
        too_large(b, size, reply);
        return -EFBIG;
    }
    if (broker_storage_journal_full(b)) {
        pthread_mutex_lock(&b->lock);
        broker_storage_refuse(b, reply);
        pthread_mutex_unlock(&b->lock);
        return -ENOSPC;
    }
    pthread_mutex_lock(&b->evidence_lock);
    /* An identical retry of a stored object takes nothing more (the commit checks again). */
    again = stored(b, who, digest);
    r = usage_of(b, who->principal, &objects, &bytes, reply);
    if (r == 0 && !again && !quota_allows(who, objects, bytes, has_size ? size : 0, reply))
        r = -EDQUOT;
    if (r == 0)
        r = scratch_file(b, &fd, reply);
    pthread_mutex_unlock(&b->evidence_lock);
    if (r < 0)
        return r;
    if (!again && bytes <= who->quota.bytes && (uint64_t)(who->quota.bytes - bytes) < room)
        room = (uint64_t)(who->quota.bytes - bytes);
    *ret_fd = fd;
    *ret_room = room;
    return 0;
}

int broker_evidence_scratch(struct berth_broker *b, int *ret_fd, struct berth_reply *reply)
{
    int r;

    if (!b->p.evidence_ops) {
        no_store(reply, "this broker has no evidence store");
        return -EOPNOTSUPP;
    }
    pthread_mutex_lock(&b->evidence_lock);
    r = scratch_file(b, ret_fd, reply);
    pthread_mutex_unlock(&b->evidence_lock);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Audit                                                                      */

struct evidence_event {
    struct berth_broker *b;
    const char *type, *actor;
    json_t *details;
};

static int evidence_event_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct evidence_event *e = userdata;
    int64_t now;
    int r;

    if ((r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0)
        return r;
    return berth_audit_append(j, e->b->p.audit_key, now, e->type, e->actor, e->details, NULL, reterr);
}

/* Append @type with @details (a new reference, released) by @actor, in a
 * transaction of its own (evidence lock held; takes the broker's);
 * @priority: a deletion, which may use the journal's space reserve. */
static int audit_evidence(struct berth_broker *b, const char *type, const char *actor, json_t *details, bool priority,
                          struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct evidence_event e = {.b = b, .type = type, .actor = actor, .details = details};
    int r;

    if (!details) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    pthread_mutex_lock(&b->lock);
    r = broker_journal_write(b, priority, evidence_event_write, &e, "an evidence audit event", &err);
    if (r < 0) {
        if (!berth_space_error(r))
            berth_logf(b->p.logger, BERTH_LOG_ERR, "recording %s failed: %s", type, err.message);
        broker_journal_failed(b, r, &err, reply,
                              "the evidence store did it, but its audit event could not be recorded: retry");
    }
    pthread_mutex_unlock(&b->lock);
    json_decref(details);
    return r;
}

/* The scope text @scope as JSON (a new reference), or NULL. */
static json_t *scope_json(const char *scope)
{
    return json_loads(scope, JSON_REJECT_DUPLICATES, NULL);
}

/* ------------------------------------------------------------------------ */
/* Commit                                                                     */

enum { ABSENT, PRESENT, TOMBSTONED };

/* The store's stat of @key (lock held): PRESENT (*@ret_stat set), ABSENT,
 * TOMBSTONED, or <0 with @reply filled. */
static int present(struct berth_broker *b, const char *key, size_t key_len, json_t **ret_stat,
                   struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *text = NULL;
    size_t len = 0;
    int r = b->p.evidence_ops->stat(b->p.evidence_state, key, key_len, &text, &len, &err);

    if (r == -ENOENT)
        return ABSENT;
    if (r == -EIDRM)
        return TOMBSTONED;
    if (r < 0) {
        store_failed(b, r, &err, "look the object up", reply);
        return r;
    }
    *ret_stat = parse_store_json(text, len);
    if (!*ret_stat) {
        broker_fail(reply, 503, "evidence_store", "the evidence store's answer is not understood");
        return -EBADMSG;
    }
    return PRESENT;
}

/* The tombstone of @key (lock held), or NULL when there is none. */
static json_t *tombstone_of(struct berth_broker *b, const char *key, size_t key_len)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *text = NULL;
    size_t len = 0;

    if (b->p.evidence_ops->tombstone(b->p.evidence_state, key, key_len, &text, &len, &err) < 0)
        return NULL;
    return parse_store_json(text, len);
}

/* Whether @tomb is a "deleted" tombstone (an "expired" one lets the key be stored again). */
static bool deleted(const json_t *tomb)
{
    const char *kind = json_string_value(json_object_get(tomb, "kind"));

    return kind && streq(kind, "deleted");
}

/* The tombstone @tomb (or none) of @digest as a 410. */
static void gone(const json_t *tomb, const char *digest, struct berth_reply *reply)
{
    const char *actor = json_string_value(json_object_get(tomb, "actor"));
    const char *reason = json_string_value(json_object_get(tomb, "reason"));

    if (tomb && !deleted(tomb))
        broker_fail(reply, 410, "gone", "%s expired (retention)", digest);
    else if (actor && reason)
        broker_fail(reply, 410, "gone", "%s was deleted by %s: %s", digest, actor, reason);
    else
        broker_fail(reply, 410, "gone", "%s was deleted", digest);
}

/* put() failed with @r: what the client is told. */
static void put_failed(struct berth_broker *b, int r, const struct berth_error *err, uint64_t size,
                       const char *digest, struct berth_reply *reply)
{
    switch (r) {
    case -EBADMSG:
        broker_fail(reply, 400, "digest_mismatch",
                    "the %" PRIu64 " bytes uploaded do not match %s (nothing was stored): %s", size, digest,
                    err->message);
        break;
    case -EEXIST:
        broker_fail(reply, 409, "conflict", "%s is stored already with another size or media type", digest);
        break;
    case -EIDRM:
        broker_fail(reply, 410, "gone", "%s was deleted: it can never be stored again under this owner", digest);
        break;
    case -EFBIG: too_large(b, size, reply); break;
    case -EINVAL: broker_fail(reply, 400, "malformed", "the evidence store refused it: %s", err->message); break;
    default: store_failed(b, r, err, "store the object", reply);
    }
}

void berth_broker_evidence_commit(struct berth_broker *b, const struct berth_evidence_owner *who, int fd,
                                  uint64_t size, const char *digest, const char *media_type,
                                  struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *key = NULL, *meta = NULL;
    _cleanup_json_ json_t *old = NULL, *ref = NULL;
    int64_t objects = 0, bytes = 0;
    char *text = NULL;
    size_t key_len = 0, meta_len = 0, len = 0;
    int r, had;

    if (!ops) {
        no_store(reply, "this broker has no evidence store");
        return;
    }
    if (size > (uint64_t)b->p.evidence_max_object_bytes) {
        too_large(b, size, reply);
        return;
    }
    key = key_of(who->principal, who->scope, digest, NULL, &key_len);
    meta = serialize_new(json_pack("{s:s, s:I, s:s, s:s, s:o?}", "digest", digest, "size", (json_int_t)size,
                                   "media_type", media_type, "principal", who->principal, "scope",
                                   scope_json(who->scope)),
                         &meta_len);
    if (!key || !meta) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    if (broker_storage_journal_full(b)) {
        pthread_mutex_lock(&b->lock);
        broker_storage_refuse(b, reply);
        pthread_mutex_unlock(&b->lock);
        return;
    }
    pthread_mutex_lock(&b->evidence_lock);
    had = present(b, key, key_len, &old, reply);
    if (had < 0)
        goto out;
    if (had == TOMBSTONED) {
        _cleanup_json_ json_t *tomb = tombstone_of(b, key, key_len);
        if (!tomb || deleted(tomb)) {
            gone(tomb, digest, reply); /* refused forever: nothing is read */
            goto out;
        }
    }
    if (had != PRESENT && (usage_of(b, who->principal, &objects, &bytes, reply) < 0 ||
                           !quota_allows(who, objects, bytes, size, reply)))
        goto out;
    r = ops->put(b->p.evidence_state, meta, meta_len, fd, &text, &len, &err);
    if (r < 0) {
        put_failed(b, r, &err, size, digest, reply);
        goto out;
    }
    ref = parse_store_json(text, len);
    if (!ref) {
        broker_fail(reply, 503, "evidence_store", "the evidence store's reference is not understood");
        goto out;
    }
    if (audit_evidence(b, "evidence.put", who->principal,
                       json_pack("{s:s, s:I, s:s, s:s, s:o?, s:b}", "digest", digest, "size", (json_int_t)size,
                                 "media_type", media_type, "principal", who->principal, "scope",
                                 scope_json(who->scope), "new", had != PRESENT),
                       false, reply) < 0)
        goto out;
    reply->status = had == PRESENT ? 200 : 201;
    reply->error = NULL;
    reply->body = TAKE_PTR(ref);
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "evidence %s of %s: %s (%" PRIu64 " bytes, %s)", digest,
               who->principal, had == PRESENT ? "stored again (identical)" : "stored", size, media_type);
out:
    pthread_mutex_unlock(&b->evidence_lock);
}

/* ------------------------------------------------------------------------ */
/* Get                                                                        */

void berth_broker_evidence_get(struct berth_broker *b, const struct berth_evidence_owner *who, const char *digest,
                               struct berth_evidence_content *ret, struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *key = NULL;
    _cleanup_json_ json_t *st = NULL;
    _cleanup_close_ int fd = -1;
    const char *media;
    struct stat sb;
    char *text = NULL;
    size_t key_len = 0, len = 0;
    json_int_t size;
    int r;

    ret->fd = -1;
    if (!ops) {
        no_store(reply, "this broker has no evidence store");
        return;
    }
    key = key_of(who->principal, who->scope, digest, NULL, &key_len);
    if (!key) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    pthread_mutex_lock(&b->evidence_lock);
    r = ops->stat(b->p.evidence_state, key, key_len, &text, &len, &err);
    if (r == -ENOENT) {
        broker_fail(reply, 404, "not_found", "no evidence %s of %s", digest, who->principal);
        goto out;
    }
    if (r == -EIDRM) {
        _cleanup_json_ json_t *tomb = tombstone_of(b, key, key_len);
        gone(tomb, digest, reply);
        goto out;
    }
    if (r < 0) {
        store_failed(b, r, &err, "look the object up", reply);
        goto out;
    }
    st = parse_store_json(text, len);
    size = json_integer_value(json_object_get(st, "size"));
    media = json_string_value(json_object_get(st, "media_type"));
    if (!json_is_integer(json_object_get(st, "size")) || size < 0 || !media ||
        strlen(media) > BERTH_EVIDENCE_MEDIA_TYPE_MAX) {
        broker_fail(reply, 503, "evidence_store", "the evidence store's answer is not understood");
        goto out;
    }
    if (scratch_file(b, &fd, reply) < 0)
        goto out;
    r = ops->get(b->p.evidence_state, key, key_len, fd, (uint64_t)b->p.evidence_max_object_bytes, &err);
    if (r == -EBADMSG) {
        berth_logf(b->p.logger, BERTH_LOG_ERR, "evidence %s of %s fails verification: %s", digest, who->principal,
                   err.message);
        broker_fail(reply, 500, "corrupt", "the stored content of %s fails verification; it is not served", digest);
        goto out;
    }
    if (r < 0) {
        put_failed(b, r, &err, (uint64_t)size, digest, reply);
        goto out;
    }
    if (fstat(fd, &sb) < 0 || sb.st_size != (off_t)size) {
        broker_fail(reply, 500, "corrupt", "the evidence store wrote %lld bytes of %s, not %lld",
                    (long long)sb.st_size, digest, (long long)size);
        goto out;
    }
    reply->status = 200;
    reply->error = NULL;
    ret->fd = TAKE_FD(fd);
    ret->size = (uint64_t)size;
    snprintf(ret->media_type, sizeof(ret->media_type), "%s", media);
out:
    pthread_mutex_unlock(&b->evidence_lock);
}

/* ------------------------------------------------------------------------ */
/* Remove                                                                     */

static const char *const remove_members[] = {"principal", "reason", "scope", NULL};

/* The owner a deletion names: @who's own, or (admin) another. 0 or <0 with @reply filled. */
static int remove_target(const struct berth_evidence_owner *who, const json_t *doc, const char **ret_principal,
                         char **ret_scope, const char **ret_reason, struct berth_reply *reply)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *principal = NULL, *reason = NULL;
    const json_t *scope = json_object_get(doc, "scope");
    size_t i;

    if (berth_json_only_members(doc, "the deletion", remove_members, &err) < 0 ||
        berth_json_string_member(doc, "the deletion", "reason", true, &reason, &err) < 0 ||
        berth_json_string_member(doc, "the deletion", "principal", false, &principal, &err) < 0) {
        broker_fail(reply, 400, "malformed", "%s", err.message);
        return -EBADMSG;
    }
    if (!reason[0] || strlen(reason) > BERTH_EVIDENCE_REASON_MAX) {
        broker_fail(reply, 400, "malformed", "reason must be 1 to %d bytes", BERTH_EVIDENCE_REASON_MAX);
        return -EBADMSG;
    }
    for (i = 0; reason[i]; i++)
        if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f) {
            broker_fail(reply, 400, "malformed", "reason must hold no control characters");
            return -EBADMSG;
        }
    if (!!principal != !!scope) {
        broker_fail(reply, 400, "malformed", "principal and scope name another owner together: give both or neither");
        return -EBADMSG;
    }
    *ret_reason = reason;
    if (!principal) {
        *ret_principal = who->principal;
        *ret_scope = strdup(who->scope);
        if (!*ret_scope) {
            broker_fail(reply, 500, "internal", "out of memory");
            return -ENOMEM;
        }
        return 0;
    }
    if (!berth_principal_valid(principal) || !berth_policy_scope_valid(scope)) {
        broker_fail(reply, 400, "malformed",
                    "principal must be " BERTH_PRINCIPAL_RULE " and scope " BERTH_POLICY_SCOPE_RULE);
        return -EBADMSG;
    }
    if (berth_json_serialize(scope, 0, ret_scope, NULL, NULL) < 0) {
        broker_fail(reply, 500, "internal", "out of memory");
        return -ENOMEM;
    }
    if (!who->admin && !(streq(principal, who->principal) && streq(*ret_scope, who->scope))) {
        free(*ret_scope);
        *ret_scope = NULL;
        broker_fail(reply, 403, "denied", "only an admin may delete another owner's evidence");
        return -EACCES;
    }
    *ret_principal = principal;
    return 0;
}

void berth_broker_evidence_remove(struct berth_broker *b, const struct berth_evidence_owner *who, const char *digest,
                                  const char *body, size_t len, struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL, *tomb = NULL, *st = NULL;
    _cleanup_free_ char *scope = NULL, *key = NULL, *actor_key = NULL;
    const char *principal = NULL, *reason = NULL;
    size_t key_len = 0, actor_len = 0;
    int r, had;

    if (!ops) {
        no_store(reply, "this broker has no evidence store");
        return;
    }
    if (len > BERTH_EVIDENCE_DOC_MAX) {
        broker_fail(reply, 413, "too_large", "a deletion is at most %d bytes", BERTH_EVIDENCE_DOC_MAX);
        return;
    }
    r = berth_json_parse(body, len, BERTH_EVIDENCE_DOC_MAX, &doc, &err);
    if (r == -ENOMEM) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    if (r < 0) {
        broker_fail(reply, 400, "malformed", "the deletion must be a JSON object {\"reason\"}: %s", err.message);
        return;
    }
    if (remove_target(who, doc, &principal, &scope, &reason, reply) < 0)
        return;
    key = key_of(principal, scope, digest, NULL, &key_len);
    actor_key = key_of(principal, scope, digest, who->principal, &actor_len);
    if (!key || !actor_key) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    pthread_mutex_lock(&b->evidence_lock);
    had = present(b, key, key_len, &st, reply);
    if (had < 0)
        goto out;
    if (had == ABSENT) {
        broker_fail(reply, 404, "not_found", "no evidence %s of %s", digest, principal);
        goto out;
    }
    if (had == TOMBSTONED) {
        /* A repeat is answered with the first tombstone; an expired object becomes a deleted one. */
        tomb = tombstone_of(b, key, key_len);
        if (deleted(tomb)) {
            reply->status = 200;
            reply->body = TAKE_PTR(tomb);
            goto out;
        }
        json_decref(tomb);
        tomb = NULL;
    }
    r = ops->remove(b->p.evidence_state, actor_key, actor_len, reason, &err);
    if (r == -EINVAL) {
        broker_fail(reply, 400, "malformed", "the evidence store refused the deletion: %s", err.message);
        goto out;
    }
    if (r < 0) {
        store_failed(b, r, &err, "delete the object", reply);
        goto out;
    }
    if (!(tomb = tombstone_of(b, key, key_len))) {
        broker_fail(reply, 503, "evidence_store", "the object is deleted, but its tombstone cannot be read");
        goto out;
    }
    if (audit_evidence(b, "evidence.deleted", who->principal,
                       json_pack("{s:s, s:s, s:o?, s:s}", "digest", digest, "principal", principal, "scope",
                                 scope_json(scope), "reason", reason),
                       true, reply) < 0)
        goto out;
    reply->status = 200;
    reply->error = NULL;
    reply->body = TAKE_PTR(tomb);
    berth_logf(b->p.logger, BERTH_LOG_NOTICE, "evidence %s of %s: deleted by %s", digest, principal, who->principal);
out:
    pthread_mutex_unlock(&b->evidence_lock);
}

/* ------------------------------------------------------------------------ */
/* List                                                                       */

/* Keep only the objects of @scope in @page's "objects" (NULL @scope: all). */
static int keep_scope(json_t *page, const char *scope)
{
    json_t *objects = json_object_get(page, "objects"), *kept = json_array(), *o;
    size_t i;

    if (!json_is_array(objects) || !kept) {
        json_decref(kept);
        return -EBADMSG;
    }
    json_array_foreach(objects, i, o)
    {
        _cleanup_free_ char *s = NULL;

        if (scope && (berth_json_serialize(json_object_get(o, "scope"), 0, &s, NULL, NULL) < 0 || !streq(s, scope)))
            continue;
        if (json_array_append(kept, o) < 0) {
            json_decref(kept);
            return -ENOMEM;
        }
    }
    return json_object_set_new(page, "objects", kept) < 0 ? -ENOMEM : 0;
}

void berth_broker_evidence_list(struct berth_broker *b, const struct berth_evidence_owner *who, const char *after,
                                int64_t limit, bool all, struct berth_reply *reply)
{
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *query = NULL;
    _cleanup_json_ json_t *q = NULL, *page = NULL;
    int64_t objects = 0, bytes = 0;
    char *text = NULL;
    size_t qlen = 0, len = 0;
    int r;

    if (!ops || !ops->list) {
        no_store(reply, ops ? "the evidence store cannot list (an ABI 1.0 plugin)" : "this broker has no evidence store");
        return;
    }
    if (all && !who->admin) {
        broker_fail(reply, 403, "denied", "listing every owner's evidence needs an admin grant");
        return;
    }
    if (limit < 1 || limit > BERTH_EVIDENCE_PAGE_MAX) {
        broker_fail(reply, 400, "malformed", "limit must be 1 to %d", BERTH_EVIDENCE_PAGE_MAX);
        return;
    }
    q = json_pack("{s:I}", "limit", (json_int_t)limit);
    if (!q || (!all && json_object_set_new(q, "principal", json_string(who->principal)) < 0) ||
        (after && json_object_set_new(q, "after", json_string(after)) < 0) ||
        !(query = serialize_new(json_incref(q), &qlen))) {
        broker_fail(reply, 500, "internal", "out of memory");
        return;
    }
    pthread_mutex_lock(&b->evidence_lock);
    r = ops->list(b->p.evidence_state, query, qlen, &text, &len, &err);
    if (r == -EINVAL) {
        broker_fail(reply, 400, "malformed", "the evidence store refused the listing: %s", err.message);
        goto out;
    }
    if (r < 0) {
        store_failed(b, r, &err, "list", reply);
        goto out;
    }
    page = parse_store_json(text, len);
    if (!page || keep_scope(page, all ? NULL : who->scope) < 0) {
        broker_fail(reply, 503, "evidence_store", "the evidence store's listing is not understood");
        goto out;
    }
    if (!all && (usage_of(b, who->principal, &objects, &bytes, reply) < 0 ||
                 json_object_set_new(page, "usage", json_pack("{s:I, s:I}", "objects", (json_int_t)objects, "bytes",
                                                              (json_int_t)bytes)) < 0 ||
                 json_object_set_new(page, "quota", json_pack("{s:I, s:I}", "objects",
                                                              (json_int_t)who->quota.objects, "bytes",
                                                              (json_int_t)who->quota.bytes)) < 0)) {
        if (!reply->error)
            broker_fail(reply, 500, "internal", "out of memory");
        goto out;
    }
    reply->status = 200;
    reply->error = NULL;
    reply->body = TAKE_PTR(page);
out:
    pthread_mutex_unlock(&b->evidence_lock);
}

/* ------------------------------------------------------------------------ */
/* Retention and figures, for the broker's own passes                        */

struct pruned_events {
    struct berth_broker *b;
    const json_t *pruned;
};

static int pruned_write(struct berth_journal *j, void *userdata, struct berth_error *reterr)
{
    struct pruned_events *e = userdata;
    const json_t *o;
    int64_t now;
    size_t i;
    int r;

    if ((r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0)
        return r;
    json_array_foreach(e->pruned, i, o) if ((r = berth_audit_append(j, e->b->p.audit_key, now, "evidence.pruned",
                                                                     "berthd", o, NULL, reterr)) < 0) return r;
    return 0;
}

int broker_evidence_prune(struct berth_broker *b, int64_t now, unsigned *ret_pruned)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_evidence_store_ops_v1 *ops;
    _cleanup_json_ json_t *page = NULL;
    struct pruned_events e = {.b = b};
    char *text = NULL;
    size_t len = 0;
    void *state;
    int r;

    *ret_pruned = 0;
    if (broker_storage_journal_full(b)) /* its audit events could not be recorded: it waits, as every write */
        return 0;
    ops = b->p.evidence_ops;
    state = b->p.evidence_state;
    /* A commit holding the lock for seconds must not hold up the worker: the next pass prunes. */
    if (!ops || !ops->prune || pthread_mutex_trylock(&b->evidence_lock) != 0)
        return 0;
    r = ops->prune(state, now, BERTH_EVIDENCE_PAGE_MAX, &text, &len, &err);
    if (r < 0) {
        berth_logf(b->p.logger, BERTH_LOG_WARNING, "retention: the evidence store cannot prune: %s", err.message);
        berth_broker_evidence_release(b);
        return 0;
    }
    page = parse_store_json(text, len);
    e.pruned = json_object_get(page, "pruned");
    if (json_is_array(e.pruned) && json_array_size(e.pruned) > 0) {
        /* Still under the evidence lock: the events are in the order the store saw the calls. */
        pthread_mutex_lock(&b->lock);
        r = broker_journal_write(b, false, pruned_write, &e, "evidence retention", &err);
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
            berth_logf(b->p.logger, BERTH_LOG_ERR,
                       "retention: %zu evidence object(s) expired, but their audit events could not be recorded: %s",
                       json_array_size(e.pruned), err.message);
        else
            berth_logf(b->p.logger, BERTH_LOG_INFO, "retention: %zu evidence object(s) expired and pruned",
                       json_array_size(e.pruned));
        *ret_pruned = (unsigned)json_array_size(e.pruned);
    }
    berth_broker_evidence_release(b);
    return 0;
}

json_t *broker_evidence_usage_now(struct berth_broker *b)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_evidence_store_ops_v1 *ops = b->p.evidence_ops;
    json_t *u = NULL;
    char *text = NULL;
    size_t len = 0;

    if (!ops || !ops->usage || pthread_mutex_trylock(&b->evidence_lock) != 0)
        return NULL;
    if (ops->usage(b->p.evidence_state, "{}", 2, &text, &len, &err) == 0)
        u = parse_store_json(text, len);
    pthread_mutex_unlock(&b->evidence_lock);
    return u;
}
