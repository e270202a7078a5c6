/* SPDX-License-Identifier: MIT */
/*
 * evstore-doc.c -- the documents evidence-sqlite's ops receive (keys, put
 * metadata, list and usage queries, cursors), parsed strictly: at most
 * BERTH_EVIDENCE_DOC_MAX bytes, the depth and duplicate-key rules of
 * canon.h, no unknown member, every value checked.  A malformed document is
 * -EINVAL (the ABI keeps -EBADMSG for content that does not match).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "encoding.h"
#include "evstore.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "policy.h"
#include "utf8.h"

/* A cursor: base64url of canonical ["principal", [scope], "digest"]. */
#define CURSOR_JSON_MAX 4096

void ev_key_done(struct ev_key *k)
{
    if (!k)
        return;
    json_decref(k->doc);
    free(k->scope);
    memset(k, 0, sizeof(*k));
}

void ev_query_done(struct ev_query *q)
{
    if (!q)
        return;
    json_decref(q->doc);
    free(q->after_principal);
    free(q->after_scope);
    free(q->after_digest);
    memset(q, 0, sizeof(*q));
}

/* Any parse failure of a document is -EINVAL for the ABI. */
static int invalid(int r)
{
    return r == -ENOMEM ? r : -EINVAL;
}

static int parse_doc(const char *json, size_t len, const char *what, json_t **ret, struct berth_error *reterr)
{
    int r;

    if (!json)
        return berth_error_set(reterr, -EINVAL, "no %s document", what);
    r = berth_json_parse(json, len, BERTH_EVIDENCE_DOC_MAX, ret, reterr);
    if (r < 0) {
        berth_error_prefix(reterr, "%s", what);
        return invalid(r);
    }
    return 0;
}

/* The key members of @doc, already checked for unknown members. */
static int key_members(json_t *doc, const char *what, struct ev_key *k, struct berth_error *reterr)
{
    uint8_t raw[BERTH_SHA256_LEN];
    const json_t *scope;
    int r;

    if ((r = berth_json_string_member(doc, what, "digest", true, &k->digest, reterr)) < 0 ||
        (r = berth_json_string_member(doc, what, "principal", true, &k->principal, reterr)) < 0)
        return invalid(r);
    if (berth_digest_parse(k->digest, raw) < 0)
        return berth_error_set(reterr, -EINVAL, "%s.digest must be sha256:<64 lowercase hex>", what);
    if (!berth_principal_valid(k->principal))
        return berth_error_set(reterr, -EINVAL, "%s.principal must be " BERTH_PRINCIPAL_RULE, what);
    scope = json_object_get(doc, "scope");
    if (!scope || !berth_policy_scope_valid(scope))
        return berth_error_set(reterr, -EINVAL, "%s.scope must be " BERTH_POLICY_SCOPE_RULE, what);
    r = berth_json_serialize(scope, 0, &k->scope, NULL, reterr);
    return r < 0 ? invalid(r) : 0;
}

int ev_parse_key(const char *json, size_t len, struct ev_key *ret, const char **actor, struct berth_error *reterr)
{
    static const char *const members[] = {"digest", "principal", "scope", NULL};
    static const char *const remove_members[] = {"actor", "digest", "principal", "scope", NULL};
    struct ev_key k = {0};
    int r;

    if ((r = parse_doc(json, len, "key", &k.doc, reterr)) < 0)
        return r;
    if ((r = berth_json_only_members(k.doc, "key", actor ? remove_members : members, reterr)) < 0 ||
        (r = key_members(k.doc, "key", &k, reterr)) < 0)
        goto fail;
    if (actor) {
        if ((r = berth_json_string_member(k.doc, "key", "actor", true, actor, reterr)) < 0) {
            r = invalid(r);
            goto fail;
        }
        if (!berth_principal_valid(*actor)) {
            r = berth_error_set(reterr, -EINVAL, "key.actor must be " BERTH_PRINCIPAL_RULE);
            goto fail;
        }
    }
    *ret = k;
    return 0;
fail:
    ev_key_done(&k);
    return invalid(r);
}

int ev_parse_meta(const char *json, size_t len, struct ev_meta *ret, struct berth_error *reterr)
{
    static const char *const members[] = {"digest",    "media_type",   "principal", "retain_until",
                                          "scope",     "size",         NULL};
    struct ev_meta m = {.retain_until = -1};
    const json_t *retain;
    int64_t size = 0;
    int r;

    if ((r = parse_doc(json, len, "meta", &m.key.doc, reterr)) < 0)
        return r;
    if ((r = berth_json_only_members(m.key.doc, "meta", members, reterr)) < 0 ||
        (r = key_members(m.key.doc, "meta", &m.key, reterr)) < 0 ||
        (r = berth_json_int_member(m.key.doc, "meta", "size", true, 0, BERTH_JSON_MAX_INTEGER, &size, reterr)) < 0 ||
        (r = berth_json_string_member(m.key.doc, "meta", "media_type", true, &m.media_type, reterr)) < 0)
        goto fail;
    if (!berth_media_type_valid(m.media_type)) {
        r = berth_error_set(reterr, -EINVAL, "meta.media_type must be " BERTH_MEDIA_TYPE_RULE);
        goto fail;
    }
    retain = json_object_get(m.key.doc, "retain_until");
    if (retain && (r = berth_json_ns_member(m.key.doc, "meta", "retain_until", &m.retain_until, reterr)) < 0)
        goto fail;
    m.size = (uint64_t)size;
    *ret = m;
    return 0;
fail:
    ev_key_done(&m.key);
    return invalid(r);
}

/* Decode the cursor @text into the three parts of the key it continues after. */
static int parse_cursor(const char *text, struct ev_query *q, struct berth_error *reterr)
{
    _cleanup_free_ uint8_t *raw = NULL;
    _cleanup_json_ json_t *arr = NULL;
    const json_t *p, *sc, *d;
    uint8_t digest[BERTH_SHA256_LEN];
    size_t n = 0, len = strlen(text);

    raw = malloc(CURSOR_JSON_MAX);
    if (!raw)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (len == 0 || berth_base64url_decode(text, len, raw, CURSOR_JSON_MAX, &n) < 0 ||
        berth_json_parse((const char *)raw, n, CURSOR_JSON_MAX, &arr, NULL) < 0 || !json_is_array(arr) ||
        json_array_size(arr) != 3)
        goto bad;
    p = json_array_get(arr, 0);
    sc = json_array_get(arr, 1);
    d = json_array_get(arr, 2);
    if (!json_is_string(p) || !berth_principal_valid(json_string_value(p)) || !berth_policy_scope_valid(sc) ||
        !json_is_string(d) || berth_digest_parse(json_string_value(d), digest) < 0)
        goto bad;
    q->after_principal = strdup(json_string_value(p));
    q->after_digest = strdup(json_string_value(d));
    if (!q->after_principal || !q->after_digest || berth_json_serialize(sc, 0, &q->after_scope, NULL, NULL) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    q->has_after = true;
    return 0;
bad:
    return berth_error_set(reterr, -EINVAL, "query.after is not a cursor of this store");
}

int ev_parse_query(const char *json, size_t len, bool listing, struct ev_query *ret, struct berth_error *reterr)
{
    static const char *const list_members[] = {"after", "limit", "principal", NULL};
    static const char *const usage_members[] = {"principal", NULL};
    struct ev_query q = {0};
    const char *after = NULL;
    int r;

    if ((r = parse_doc(json, len, "query", &q.doc, reterr)) < 0)
        return r;
    if ((r = berth_json_only_members(q.doc, "query", listing ? list_members : usage_members, reterr)) < 0 ||
        (r = berth_json_string_member(q.doc, "query", "principal", false, &q.principal, reterr)) < 0)
        goto fail;
    if (q.principal && !berth_principal_valid(q.principal)) {
        r = berth_error_set(reterr, -EINVAL, "query.principal must be " BERTH_PRINCIPAL_RULE);
        goto fail;
    }
    if (listing) {
        if ((r = berth_json_int_member(q.doc, "query", "limit", true, 1, BERTH_EVIDENCE_PAGE_MAX, &q.limit, reterr)) <
                0 ||
            (r = berth_json_string_member(q.doc, "query", "after", false, &after, reterr)) < 0)
            goto fail;
        if (after && (r = parse_cursor(after, &q, reterr)) < 0)
            goto fail;
        if (q.has_after && q.principal && !streq(q.principal, q.after_principal)) {
            r = berth_error_set(reterr, -EINVAL, "query.after is a cursor of another principal");
            goto fail;
        }
    }
    *ret = q;
    return 0;
fail:
    ev_query_done(&q);
    return invalid(r);
}

bool ev_reason_valid(const char *reason)
{
    size_t len, i;

    if (!reason)
        return false;
    len = strlen(reason);
    if (len == 0 || len > BERTH_EVIDENCE_REASON_MAX || !berth_utf8_valid(reason, len, NULL))
        return false;
    for (i = 0; i < len; i++)
        if ((unsigned char)reason[i] < 0x20 || reason[i] == 0x7f)
            return false;
    return true;
}

json_t *ev_scope_json(const char *scope)
{
    json_t *v = NULL;

    if (!scope || berth_json_parse(scope, strlen(scope), BERTH_EVIDENCE_DOC_MAX, &v, NULL) < 0)
        return NULL;
    if (!json_is_array(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

json_t *ev_cursor(const char *principal, const char *scope, const char *digest)
{
    _cleanup_json_ json_t *arr = NULL;
    _cleanup_free_ char *text = NULL, *b64 = NULL;
    size_t len = 0;

    arr = json_pack("[s, o, s]", principal, ev_scope_json(scope), digest);
    if (!arr || berth_json_serialize(arr, CURSOR_JSON_MAX, &text, &len, NULL) < 0)
        return NULL;
    b64 = malloc(BERTH_BASE64URL_LEN(len) + 1);
    if (!b64 || berth_base64url_encode((const uint8_t *)text, len, b64, BERTH_BASE64URL_LEN(len) + 1) < 0)
        return NULL;
    return json_string(b64);
}
