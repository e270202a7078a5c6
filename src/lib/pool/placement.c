/* SPDX-License-Identifier: MIT */
/* placement.c -- backend selection and placement receipts; see placement.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "jsonobj.h"
#include "macro.h"
#include "placement.h"

static const char *const offer_members[] = {
    "backend",       "capabilities",          "egress_classes",  "isolation", "limits",
    "qualification", "require_qualification", "runtime_version", "unavailable", "pools", "pools_unavailable", NULL,
};

bool berth_reason_code_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    return n >= 1 && n <= 48 && strspn(s, "abcdefghijklmnopqrstuvwxyz_") == n;
}
static const char *const qualification_members[] = {"expires_ns", "id", NULL};

const char *const berth_job_need_names[BERTH_NEED_COUNT] = {"inputs", "outputs"};

/* A backend's "capabilities": pool capability names and job needs, nothing else. */
static int parse_capabilities(const json_t *arr, const char *what, unsigned *ret_caps, unsigned *ret_needs,
                              struct berth_error *reterr)
{
    const json_t *v;
    size_t i;
    int idx;

    *ret_caps = *ret_needs = 0;
    if (!json_is_array(arr))
        return berth_error_set(reterr, -EBADMSG, "%s must be an array of names", what);
    json_array_foreach(arr, i, v)
    {
        const char *name = json_string_value(v);

        if (name && (idx = berth_name_index(berth_capability_names, BERTH_CAP_COUNT, name)) >= 0)
            *ret_caps |= BERTH_CAP_BIT(idx);
        else if (name && (idx = berth_name_index(berth_job_need_names, BERTH_NEED_COUNT, name)) >= 0)
            *ret_needs |= BERTH_NEED_BIT(idx);
        else
            return berth_error_set(reterr, -EBADMSG, "%s[%zu] is not one of the known names", what, i);
    }
    return 0;
}

static int parse_offer(const char *name, const json_t *o, struct berth_backend_offer *out, struct berth_error *reterr)
{
    char what[96];
    const json_t *q, *req;
    int r;

    snprintf(what, sizeof(what), "backend %.64s", name);
    if ((r = berth_json_only_members(o, what, offer_members, reterr)) < 0)
        return r;
    out->name = name;
    snprintf(what, sizeof(what), "backend %.64s: capabilities", name);
    if ((r = parse_capabilities(json_object_get(o, "capabilities"), what, &out->capabilities, &out->needs, reterr)) <
        0)
        return r;
    snprintf(what, sizeof(what), "backend %.64s: egress_classes", name);
    if ((r = berth_name_set_parse(json_object_get(o, "egress_classes"), what, berth_egress_names, BERTH_EGRESS_COUNT,
                                  &out->egress, NULL, reterr)) < 0)
        return r;
    q = json_object_get(o, "unavailable");
    if (q && !berth_reason_code_valid(json_string_value(q)))
        return berth_error_set(reterr, -EBADMSG, "backend %.64s: unavailable must be a reason code of [a-z_]", name);
    out->unavailable = json_string_value(q);
    q = json_object_get(o, "pools");
    if (q) {
        const json_t *v;
        size_t i;
        if (!json_is_array(q))
            return berth_error_set(reterr, -EBADMSG, "backend %.64s: pools must be an array of pool hashes", name);
        json_array_foreach(q, i, v) if (!berth_is_hex(json_string_value(v), BERTH_HASH_HEX_LEN)) return berth_error_set(
            reterr, -EBADMSG, "backend %.64s: pools[%zu] is not a pool hash", name, i);
        out->pools = q;
    }
    q = json_object_get(o, "pools_unavailable");
    if (q) {
        const char *hash;
        const json_t *v;
        if (!json_is_object(q))
            return berth_error_set(reterr, -EBADMSG, "backend %.64s: pools_unavailable must be an object", name);
        json_object_foreach((json_t *)q, hash, v) if (!berth_is_hex(hash, BERTH_HASH_HEX_LEN) ||
                                                      !berth_reason_code_valid(json_string_value(v))) return
            berth_error_set(reterr, -EBADMSG,
                            "backend %.64s: pools_unavailable maps pool hashes to reason codes of [a-z_]", name);
        out->pools_unavailable = q;
    }
    req = json_object_get(o, "require_qualification");
    if (req && !json_is_boolean(req))
        return berth_error_set(reterr, -EBADMSG, "backend %.64s: require_qualification must be true or false", name);
    out->require_qualification = !req || json_is_true(req);
    q = json_object_get(o, "qualification");
    if (json_is_string(q) && streq(json_string_value(q), "unqualified")) {
        out->qualified = false;
    } else if (json_is_object(q)) {
        snprintf(what, sizeof(what), "backend %.64s: qualification", name);
        if ((r = berth_json_only_members(q, what, qualification_members, reterr)) < 0 ||
            (r = berth_json_ns_member(q, what, "expires_ns", &out->qualification_expires_ns, reterr)) < 0)
            return r;
        if (!json_is_string(json_object_get(q, "id")))
            return berth_error_set(reterr, -EBADMSG, "%s.id must be a string", what);
        out->qualified = true;
    } else {
        return berth_error_set(
            reterr, -EBADMSG, "backend %.64s: qualification must be {\"id\", \"expires_ns\"} or \"unqualified\"", name);
    }
    return 0;
}

int berth_backend_set_from_json(const json_t *doc, struct berth_backend_set **ret, struct berth_error *reterr)
{
    struct berth_backend_set *set;
    const char *name;
    json_t *o;
    size_t i = 0;
    int r;

    if (!json_is_object(doc))
        return berth_error_set(reterr, -EBADMSG, "the backend set must be a JSON object of backends");
    set = calloc(1, sizeof(*set));
    if (!set)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    set->doc = json_deep_copy(doc);
    set->v = calloc(json_object_size(doc) ? json_object_size(doc) : 1, sizeof(*set->v));
    if (!set->doc || !set->v) {
        berth_backend_set_free(set);
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    json_object_foreach(set->doc, name, o)
    {
        r = parse_offer(name, o, &set->v[i], reterr);
        if (r < 0) {
            berth_backend_set_free(set);
            return r;
        }
        i++;
    }
    set->n = i;
    *ret = set;
    return 0;
}

int berth_backend_set_parse(const char *json, size_t len, struct berth_backend_set **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    int r;

    r = berth_json_parse(json, len, BERTH_BACKEND_SET_MAX, &doc, reterr);
    if (r < 0)
        return r;
    return berth_backend_set_from_json(doc, ret, reterr);
}

int berth_backend_set_empty(struct berth_backend_set **ret)
{
    _cleanup_json_ json_t *doc = json_object();

    if (!doc)
        return -ENOMEM;
    return berth_backend_set_from_json(doc, ret, NULL);
}

void berth_backend_set_free(struct berth_backend_set *set)
{
    if (!set)
        return;
    json_decref(set->doc);
    free(set->v);
    free(set);
}

static const struct berth_backend_offer *find_offer(const struct berth_backend_set *set, const char *name)
{
    size_t i;

    for (i = 0; set && i < set->n; i++)
        if (streq(set->v[i].name, name))
            return &set->v[i];
    return NULL;
}

/* Whether the offer @o serves the pool @pool_hash (an offer without
 * "pools" serves every pool). */
static bool serves(const struct berth_backend_offer *o, const char *pool_hash)
{
    const json_t *v;
    size_t i;

    if (!o->pools)
        return true;
    json_array_foreach(o->pools, i, v) if (streq_ptr(json_string_value(v), pool_hash)) return true;
    return false;
}

/* Why @name is dropped, or NULL when it is kept (then *ret_kept_reason). */
static const char *judge(const char *name, const char *pool_hash, const struct berth_effective *e,
                         const struct berth_backend_set *set, int64_t now_ns, char *buf, size_t bufsz,
                         const char **ret_kept_reason)
{
    const struct berth_backend_offer *o;
    unsigned missing;
    size_t i;

    if (e->backend_override && !streq(e->backend_override, name))
        return "not_requested";
    o = find_offer(set, name);
    if (!o)
        return "not_configured";
    if (o->unavailable)
        return o->unavailable;
    if (o->pools_unavailable && json_is_string(json_object_get(o->pools_unavailable, pool_hash)))
        return json_string_value(json_object_get(o->pools_unavailable, pool_hash));
    if (!serves(o, pool_hash))
        return "not_serving_pool";
    missing = e->capabilities & ~o->capabilities;
    for (i = 0; missing && i < BERTH_CAP_COUNT; i++)
        if (missing & BERTH_CAP_BIT(i)) {
            snprintf(buf, bufsz, "missing_capability:%s", berth_capability_names[i]);
            return buf;
        }
    missing = e->needs & ~o->needs;
    for (i = 0; missing && i < BERTH_NEED_COUNT; i++)
        if (missing & BERTH_NEED_BIT(i)) {
            snprintf(buf, bufsz, "missing_capability:%s", berth_job_need_names[i]);
            return buf;
        }
    if (!(o->egress & (1u << e->egress))) {
        snprintf(buf, bufsz, "egress_unsupported:%s", berth_egress_names[e->egress]);
        return buf;
    }
    if (o->require_qualification && !o->qualified)
        return "unqualified";
    if (o->require_qualification && o->qualification_expires_ns <= now_ns)
        return "qualification_expired";
    *ret_kept_reason = o->qualified && o->qualification_expires_ns > now_ns ? "eligible" : "eligible_unqualified";
    return NULL;
}

int berth_place(const struct berth_pool *pool, const struct berth_effective *e, const struct berth_backend_set *set,
                int64_t now_ns, json_t **ret_receipt, char ret_hash[BERTH_HASH_HEX_LEN + 1],
                struct berth_refusal *refusal, json_t **ret_selector_inputs, struct berth_error *reterr)
{
    _cleanup_json_ json_t *inputs = json_array(), *receipt = NULL;
    const char *chosen = NULL;
    char buf[96];
    size_t i;
    int r;

    if (!pool || !e || !ret_receipt || !ret_hash)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!inputs)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (i = 0; i < pool->n_backends; i++) {
        const char *kept_reason = NULL;
        const char *why = judge(pool->backends[i], pool->pool_hash, e, set, now_ns, buf, sizeof(buf), &kept_reason);

        if (!why && !chosen)
            chosen = pool->backends[i];
        if (json_array_append_new(inputs, json_pack("{s:s, s:b, s:s}", "backend", pool->backends[i], "kept", !why,
                                                    "reason", why ? why : kept_reason)) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    }
    if (!chosen) {
        if (refusal) {
            refusal->reason = BERTH_REFUSAL_NO_BACKEND;
            refusal->field[0] = '\0';
            snprintf(refusal->detail, sizeof(refusal->detail), "no backend of pool %s can take this placement",
                     pool->name);
        }
        if (ret_selector_inputs)
            *ret_selector_inputs = TAKE_PTR(inputs);
        return -EPERM;
    }
    receipt =
        json_pack("{s:i, s:s, s:s, s:s, s:s, s:O, s:s}", "schema_version", BERTH_PLACEMENT_SCHEMA_VERSION, "pool_hash",
                  pool->pool_hash, "template_hash", pool->template_hash, "overrides_hash", e->overrides_hash,
                  "effective_manifest_hash", e->effective_hash, "selector_inputs", inputs, "chosen_backend", chosen);
    if (!receipt || (e->needs && json_object_set_new(receipt, "job_needs",
                                                     berth_name_set_json(e->needs, berth_job_need_names,
                                                                         BERTH_NEED_COUNT)) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = berth_hash_hex_json(receipt, ret_hash, reterr);
    if (r < 0)
        return r;
    *ret_receipt = TAKE_PTR(receipt);
    return 0;
}
