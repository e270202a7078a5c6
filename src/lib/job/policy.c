/* SPDX-License-Identifier: MIT */
/* policy.c -- host policy and its watched file; see policy.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "canon.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "policy.h"

static const char *const policy_members[] = {"not_after", "not_before", "schema_version", "subjects", "unlisted_clients",
                                             NULL};
static const char *const subject_members[] = {
    "admin", "evidence_quota", "fingerprints", "images", "limits", "not_after", "not_before", "pools", "principal",
    "scope", "serves",         NULL,
};
static const char *const quota_members[] = {"bytes", "objects", NULL};

/* An array of 0..@max (at least @min) strings each accepted by @ok. */
static int check_strings(const json_t *arr, const char *what, size_t min, size_t max, bool (*ok)(const char *),
                         struct berth_error *reterr)
{
    json_t *v;
    size_t i;

    if (!json_is_array(arr) || json_array_size(arr) < min || json_array_size(arr) > max)
        return berth_error_set(reterr, -EBADMSG, "%s must be an array of %zu to %zu strings", what, min, max);
    json_array_foreach(arr, i, v) if (!json_is_string(v) || !ok(json_string_value(v))) return berth_error_set(
        reterr, -EBADMSG, "%s[%zu] is not valid", what, i);
    return 0;
}

static bool scope_ok(const char *s)
{
    return s[0] && strlen(s) <= 128;
}

bool berth_policy_scope_valid(const json_t *scope)
{
    return check_strings(scope, "scope", 1, BERTH_POLICY_SCOPE_MAX, scope_ok, NULL) == 0;
}

static bool fingerprint_ok(const char *s)
{
    return berth_is_hex(s, BERTH_FINGERPRINT_LEN);
}

static bool image_ok(const char *s)
{
    uint8_t raw[BERTH_SHA256_LEN];
    return berth_digest_parse(s, raw) == 0;
}

/* "evidence_quota": both members optional, each with its default. */
static int parse_quota(const json_t *o, size_t i, struct berth_evidence_quota *q, struct berth_error *reterr)
{
    const json_t *v = json_object_get(o, "evidence_quota");
    char what[64];
    int r;

    q->bytes = BERTH_EVIDENCE_QUOTA_BYTES_DEFAULT;
    q->objects = BERTH_EVIDENCE_QUOTA_OBJECTS_DEFAULT;
    if (!v)
        return 0;
    snprintf(what, sizeof(what), "policy.subjects[%zu].evidence_quota", i);
    if ((r = berth_json_only_members(v, what, quota_members, reterr)) < 0 ||
        (r = berth_json_int_member(v, what, "bytes", false, 0, BERTH_JSON_MAX_INTEGER, &q->bytes, reterr)) < 0 ||
        (r = berth_json_int_member(v, what, "objects", false, 0, BERTH_EVIDENCE_QUOTA_OBJECTS_MAX, &q->objects,
                                   reterr)) < 0)
        return r;
    return 0;
}

static int parse_subject(const json_t *o, size_t i, struct berth_subject *s, int64_t nb, int64_t na,
                         struct berth_error *reterr)
{
    char what[64];
    const json_t *admin;
    int r;

    snprintf(what, sizeof(what), "policy.subjects[%zu]", i);
    if ((r = berth_json_only_members(o, what, subject_members, reterr)) < 0 ||
        (r = berth_json_string_member(o, what, "principal", true, &s->principal, reterr)) < 0 ||
        (r = berth_json_ns_member(o, what, "not_before", &s->not_before, reterr)) < 0 ||
        (r = berth_json_ns_member(o, what, "not_after", &s->not_after, reterr)) < 0)
        return r;
    if (!berth_principal_valid(s->principal))
        return berth_error_set(reterr, -EBADMSG, "%s.principal must be " BERTH_PRINCIPAL_RULE, what);
    s->scope = json_object_get(o, "scope");
    s->fingerprints = json_object_get(o, "fingerprints");
    s->pools = json_object_get(o, "pools");
    s->images = json_object_get(o, "images");
    snprintf(what, sizeof(what), "policy.subjects[%zu].scope", i);
    if ((r = check_strings(s->scope, what, 1, BERTH_POLICY_SCOPE_MAX, scope_ok, reterr)) < 0)
        return r;
    snprintf(what, sizeof(what), "policy.subjects[%zu].fingerprints", i);
    if ((r = check_strings(s->fingerprints, what, 1, BERTH_POLICY_FINGERPRINTS_MAX, fingerprint_ok, reterr)) < 0)
        return r;
    snprintf(what, sizeof(what), "policy.subjects[%zu].pools", i);
    if ((r = check_strings(s->pools, what, 0, BERTH_POLICY_LIST_MAX, berth_pool_name_valid, reterr)) < 0)
        return r;
    snprintf(what, sizeof(what), "policy.subjects[%zu].images", i);
    if ((r = check_strings(s->images, what, 0, BERTH_POLICY_LIST_MAX, image_ok, reterr)) < 0)
        return r;
    s->serves = json_object_get(o, "serves");
    snprintf(what, sizeof(what), "policy.subjects[%zu].serves", i);
    if (s->serves && (r = check_strings(s->serves, what, 0, BERTH_POLICY_LIST_MAX, berth_pool_name_valid, reterr)) < 0)
        return r;
    snprintf(what, sizeof(what), "policy.subjects[%zu].limits", i);
    if ((r = berth_limits_parse(json_object_get(o, "limits"), what, &s->limits, reterr)) < 0)
        return r;
    admin = json_object_get(o, "admin");
    if (admin && !json_is_boolean(admin))
        return berth_error_set(reterr, -EBADMSG, "policy.subjects[%zu].admin must be true or false", i);
    s->admin = json_is_true(admin);
    if ((r = parse_quota(o, i, &s->evidence_quota, reterr)) < 0)
        return r;
    if (s->not_before > s->not_after || s->not_before < nb || s->not_after > na)
        return berth_error_set(reterr, -EBADMSG,
                               "policy.subjects[%zu]: its validity interval must lie inside the policy's", i);
    return 0;
}

int berth_policy_parse(const char *json, size_t len, struct berth_policy **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL, *seen_fp = json_object(), *seen_id = json_object();
    struct berth_policy *p;
    const json_t *subjects;
    const char *unlisted = NULL;
    int64_t version = 0;
    size_t i, k;
    int r;

    if (!ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!seen_fp || !seen_id)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = berth_json_parse(json, len, BERTH_POLICY_MAX, &doc, reterr);
    if (r < 0)
        return r;
    p = calloc(1, sizeof(*p));
    if (!p)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    p->doc = TAKE_PTR(doc);
    if ((r = berth_json_only_members(p->doc, "policy", policy_members, reterr)) < 0 ||
        (r = berth_json_int_member(p->doc, "policy", "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_ns_member(p->doc, "policy", "not_before", &p->not_before, reterr)) < 0 ||
        (r = berth_json_ns_member(p->doc, "policy", "not_after", &p->not_after, reterr)) < 0 ||
        (r = berth_json_string_member(p->doc, "policy", "unlisted_clients", false, &unlisted, reterr)) < 0)
        goto fail;
    r = -EBADMSG;
    if (unlisted && streq(unlisted, "health")) {
        p->unlisted_health = true;
    } else if (unlisted && !streq(unlisted, "refuse")) {
        berth_error_set(reterr, r, "policy.unlisted_clients must be \"refuse\" or \"health\"");
        goto fail;
    }
    if (p->not_before > p->not_after) {
        berth_error_set(reterr, r, "policy.not_before is after policy.not_after");
        goto fail;
    }
    subjects = json_object_get(p->doc, "subjects");
    if (!json_is_array(subjects) || json_array_size(subjects) > BERTH_POLICY_SUBJECTS_MAX) {
        berth_error_set(reterr, r, "policy.subjects must be an array of at most %d subjects",
                        BERTH_POLICY_SUBJECTS_MAX);
        goto fail;
    }
    p->subjects = calloc(json_array_size(subjects) ? json_array_size(subjects) : 1, sizeof(*p->subjects));
    if (!p->subjects) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto fail;
    }
    for (i = 0; i < json_array_size(subjects); i++) {
        struct berth_subject *s = &p->subjects[i];
        _cleanup_free_ char *scope = NULL, *id = NULL;
        json_t *fp;

        if ((r = parse_subject(json_array_get(subjects, i), i, s, p->not_before, p->not_after, reterr)) < 0)
            goto fail;
        p->n_subjects++;
        json_array_foreach(s->fingerprints, k, fp)
        {
            if (json_object_get(seen_fp, json_string_value(fp))) {
                r = berth_error_set(reterr, -EBADMSG, "policy.subjects[%zu]: fingerprint %s is used twice", i,
                                    json_string_value(fp));
                goto fail;
            }
            /* A fingerprint not remembered would let a later subject reuse it unnoticed. */
            if (json_object_set_new(seen_fp, json_string_value(fp), json_true()) < 0) {
                r = berth_error_set(reterr, -ENOMEM, "out of memory");
                goto fail;
            }
        }
        if (berth_json_serialize(s->scope, 0, &scope, NULL, NULL) < 0 ||
            asprintf(&id, "%s %s", s->principal, scope) < 0) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            goto fail;
        }
        if (json_object_get(seen_id, id)) {
            r = berth_error_set(reterr, -EBADMSG, "policy.subjects[%zu]: principal %s with that scope appears twice", i,
                                s->principal);
            goto fail;
        }
        if (json_object_set_new(seen_id, id, json_true()) < 0) {
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
            goto fail;
        }
    }
    *ret = p;
    return 0;
fail:
    berth_policy_free(p);
    return r == -ENOMEM ? r : -EBADMSG;
}

void berth_policy_free(struct berth_policy *p)
{
    if (!p)
        return;
    free(p->subjects);
    json_decref(p->doc);
    free(p);
}

static bool list_has(const json_t *arr, const char *s)
{
    json_t *v;
    size_t i;

    json_array_foreach(arr, i, v) if (json_is_string(v) && streq(json_string_value(v), s)) return true;
    return false;
}

const struct berth_subject *berth_policy_subject(const struct berth_policy *p, const char *fingerprint, int64_t now_ns,
                                                 const char **ret_why)
{
    size_t i;

    if (!p || !fingerprint)
        return NULL;
    for (i = 0; i < p->n_subjects; i++) {
        const struct berth_subject *s = &p->subjects[i];
        if (!list_has(s->fingerprints, fingerprint))
            continue;
        if (now_ns < s->not_before || now_ns > s->not_after) {
            if (ret_why)
                *ret_why = "the grant is not valid now";
            return NULL;
        }
        return s;
    }
    if (ret_why)
        *ret_why = "the client certificate is not in the host policy";
    return NULL;
}

bool berth_policy_lists(const struct berth_policy *p, const char *fingerprint)
{
    size_t i;

    for (i = 0; p && fingerprint && i < p->n_subjects; i++)
        if (list_has(p->subjects[i].fingerprints, fingerprint))
            return true;
    return false;
}

bool berth_subject_allows_pool(const struct berth_subject *s, const char *pool)
{
    return s && pool && list_has(s->pools, pool);
}

bool berth_subject_allows_image(const struct berth_subject *s, const char *digest)
{
    return s && digest && list_has(s->images, digest);
}

bool berth_subject_serves_pool(const struct berth_subject *s, const char *pool)
{
    return s && pool && s->serves && list_has(s->serves, pool);
}

struct berth_policy_source {
    char *path;
    bool have_stat;
    struct stat last;
    struct berth_policy *current;
    uint64_t reloads;
};

int berth_policy_source_new(const char *path, struct berth_policy_source **ret)
{
    struct berth_policy_source *src;

    if (!path || path[0] != '/' || !ret)
        return -EINVAL;
    src = calloc(1, sizeof(*src));
    if (!src || !(src->path = strdup(path))) {
        free(src);
        return -ENOMEM;
    }
    *ret = src;
    return 0;
}

void berth_policy_source_free(struct berth_policy_source *src)
{
    if (!src)
        return;
    berth_policy_free(src->current);
    free(src->path);
    free(src);
}

uint64_t berth_policy_reloads(const struct berth_policy_source *src)
{
    return src ? src->reloads : 0;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int berth_policy_read_file(const char *path, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = BERTH_POLICY_MAX,
        .one_link = 1,
    };

    return berth_read_file_at(AT_FDCWD, path, &expect, ret, ret_len, reterr);
}

static int reload(struct berth_policy_source *src, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    struct berth_policy *p = NULL;
    size_t len = 0;
    int r;

    src->reloads++;
    r = berth_policy_read_file(src->path, &text, &len, reterr);
    if (r == 0)
        r = berth_policy_parse(text, len, &p, reterr);
    if (r < 0)
        return r;
    src->current = p;
    return 0;
}

int berth_policy_current(struct berth_policy_source *src, int64_t now_ns, const struct berth_policy **ret,
                         struct berth_error *reterr)
{
    struct stat st;
    int r;

    if (!src || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (stat(src->path, &st) < 0) {
        int e = errno;
        berth_policy_free(src->current);
        src->current = NULL;
        src->have_stat = false;
        return berth_error_set(reterr, -EACCES, "no host policy: %s: %s", src->path, strerror(e));
    }
    if (!src->have_stat || !same_file(&st, &src->last)) {
        berth_policy_free(src->current);
        src->current = NULL;
        src->last = st;
        src->have_stat = true;
        r = reload(src, reterr);
        if (r == -ENOMEM)
            return r;
        if (r < 0) {
            berth_error_prefix(reterr, "the host policy is unusable, so everything is denied");
            if (reterr)
                reterr->code = -EACCES;
            return -EACCES;
        }
    }
    if (!src->current)
        return berth_error_set(reterr, -EACCES, "the host policy is unusable, so everything is denied");
    if (now_ns < src->current->not_before || now_ns > src->current->not_after)
        return berth_error_set(reterr, -EACCES, "the host policy is not valid now (expired or not yet valid)");
    *ret = src->current;
    return 0;
}
