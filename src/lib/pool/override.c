/* SPDX-License-Identifier: MIT */
/* override.c -- governed overrides and the effective manifest; see override.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "envsafe.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "override.h"

#define MAX_TIMEOUT 604800
#define MAX_ENV 256
#define MAX_ENV_VALUE (32 * 1024)

const char *const berth_refusal_names[BERTH_REFUSAL_COUNT] = {
    "unknown_field",
    "non_exposed_field",
    "malformed_value",
    "backend_not_allowed",
    "capability_above_ceiling",
    "egress_widened",
    "credential_env_not_allowed",
    "no_backend",
    "refused_env",
};

static const char *const credential_words[] = {"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIALS"};
static const char *const credential_names[] = {"PGPASSWORD", "MYSQL_PWD"};

bool berth_credential_name(const char *name, const json_t *known)
{
    size_t i, n, m;
    json_t *v;

    if (!name)
        return false;
    json_array_foreach(known, i, v) if (json_is_string(v) && streq(json_string_value(v), name)) return true;
    for (i = 0; i < ELEMENTSOF(credential_names); i++)
        if (strcasecmp(name, credential_names[i]) == 0)
            return true;
    n = strlen(name);
    for (i = 0; i < ELEMENTSOF(credential_words); i++) {
        m = strlen(credential_words[i]);
        if (n == m && strcasecmp(name, credential_words[i]) == 0)
            return true;
        if (n > m && name[n - m - 1] == '_' && strcasecmp(name + n - m, credential_words[i]) == 0)
            return true;
    }
    return false;
}

BERTH_PRINTF(4, 5)
static int refuse(struct berth_refusal *rf, enum berth_refusal_reason reason, const char *field, const char *fmt, ...)
{
    va_list ap;

    if (rf) {
        rf->reason = reason;
        snprintf(rf->field, sizeof(rf->field), "%s", field);
        va_start(ap, fmt);
        vsnprintf(rf->detail, sizeof(rf->detail), fmt, ap);
        va_end(ap);
        berth_error_sanitize(rf->field);
        berth_error_sanitize(rf->detail);
    }
    return -EPERM;
}

/* Capabilities named in @arr as bits; -1 when @arr is not an array of at
 * most 64 known capability names (then *ret_bad is the offending index). */
static int capability_bits(const json_t *arr, unsigned *ret, size_t *ret_bad)
{
    *ret_bad = 0;
    if (json_array_size(arr) > 64)
        return -1;
    return berth_name_set_parse(arr, "capabilities", berth_capability_names, BERTH_CAP_COUNT, ret, ret_bad, NULL) < 0
               ? -1
               : 0;
}

static json_t *capability_json(unsigned bits)
{
    return berth_name_set_json(bits, berth_capability_names, BERTH_CAP_COUNT);
}

/* The overrides with capabilities normalised (when they are well-formed). */
static json_t *normalise_overrides(const json_t *ov)
{
    json_t *out = json_deep_copy(ov);
    unsigned bits;
    size_t bad;

    if (out && json_is_object(out) && capability_bits(json_object_get(out, "capabilities"), &bits, &bad) == 0 &&
        json_object_set_new(out, "capabilities", capability_json(bits)) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

int berth_overrides_hash(const json_t *overrides, char out[BERTH_HASH_HEX_LEN + 1], struct berth_error *reterr)
{
    _cleanup_json_ json_t *norm = overrides ? normalise_overrides(overrides) : json_object();

    if (!norm)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_hash_hex_json(norm, out, reterr);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Keys of @obj in sorted order (a malloc'd array of borrowed strings). */
static const char **sorted_keys(const json_t *obj, size_t *ret_n)
{
    size_t n = json_object_size(obj), i = 0;
    const char **keys = calloc(n ? n : 1, sizeof(*keys));
    const char *k;
    json_t *v;

    if (!keys)
        return NULL;
    json_object_foreach((json_t *)obj, k, v) keys[i++] = k;
    if (n > 1)
        qsort(keys, n, sizeof(*keys), cmp_str);
    *ret_n = n;
    return keys;
}

static bool in_list(const char **list, size_t n, const char *s)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (streq(list[i], s))
            return true;
    return false;
}

static int check_env(const struct berth_pool *pool, const json_t *env, const json_t *known, struct berth_refusal *rf)
{
    _cleanup_free_ const char **keys = NULL;
    char field[160];
    size_t n = 0, i;

    if (!json_is_object(env) || json_object_size(env) > MAX_ENV)
        return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, "env", "env must be an object of at most %d strings", MAX_ENV);
    keys = sorted_keys(env, &n);
    if (!keys)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        const json_t *v = json_object_get(env, keys[i]);
        snprintf(field, sizeof(field), "env.%.150s", keys[i]);
        if (!berth_env_name_valid(keys[i]) || !json_is_string(v) || json_string_length(v) > MAX_ENV_VALUE)
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, field,
                          "env names are [A-Za-z_][A-Za-z0-9_]* and values strings of at most %d bytes", MAX_ENV_VALUE);
    }
    for (i = 0; i < n; i++) {
        const char *why = NULL;
        snprintf(field, sizeof(field), "env.%.150s", keys[i]);
        if (berth_env_override_refused(pool, keys[i], &why))
            return refuse(rf, BERTH_REFUSAL_REFUSED_ENV, field,
                          "%.100s is %s; pool %s does not expose it by name (env.%.100s)", keys[i], why, pool->name,
                          keys[i]);
        if (berth_credential_name(keys[i], known) &&
            !in_list(pool->credential_allowlist, pool->n_credential_allowlist, keys[i]))
            return refuse(rf, BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED, field,
                          "%.100s names a credential, and pool %s does not allow it in credential_env_allowlist",
                          keys[i], pool->name);
    }
    return 0;
}

/* Validate the value of one exposed field and check it against the pool. */
static int check_field(const struct berth_pool *pool, enum berth_pool_field f, const json_t *v, const json_t *known,
                       struct berth_refusal *rf)
{
    unsigned bits = 0;
    size_t bad = 0, i;
    int idx;

    switch (f) {
    case BERTH_FIELD_BACKEND:
        if (!json_is_string(v))
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, "backend", "backend must be a backend name");
        if (!in_list(pool->backends, pool->n_backends, json_string_value(v)))
            return refuse(rf, BERTH_REFUSAL_BACKEND_NOT_ALLOWED, "backend",
                          "backend \"%.64s\" is not in pool %s's backend_allowlist", json_string_value(v), pool->name);
        return 0;
    case BERTH_FIELD_CAPABILITIES:
        if (capability_bits(v, &bits, &bad) < 0) {
            char field[32];
            snprintf(field, sizeof(field), "capabilities[%zu]", bad);
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, json_is_array(v) ? field : "capabilities",
                          "capabilities must be an array of capability names");
        }
        for (i = 0; i < BERTH_CAP_COUNT; i++)
            if ((bits & BERTH_CAP_BIT(i)) && !(pool->ceiling & BERTH_CAP_BIT(i))) {
                char field[64];
                snprintf(field, sizeof(field), "capabilities.%s", berth_capability_names[i]);
                return refuse(rf, BERTH_REFUSAL_CAPABILITY_ABOVE_CEILING, field,
                              "capability %s is above pool %s's capability_ceiling", berth_capability_names[i],
                              pool->name);
            }
        return 0;
    case BERTH_FIELD_ENV: return check_env(pool, v, known, rf);
    case BERTH_FIELD_NETWORK_EGRESS_CLASS:
        idx = json_is_string(v) ? berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT, json_string_value(v)) : -1;
        if (idx < 0)
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, "network_egress_class",
                          "network_egress_class must be none, loopback, restricted or open");
        if (idx > (int)pool->egress)
            return refuse(rf, BERTH_REFUSAL_EGRESS_WIDENED, "network_egress_class",
                          "egress class %s is wider than pool %s's %s", berth_egress_names[idx], pool->name,
                          berth_egress_names[pool->egress]);
        return 0;
    case BERTH_FIELD_ROOT:
        if (!json_is_string(v) || !berth_guest_path_valid(json_string_value(v)))
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, "root",
                          "root must be an absolute path without . or .. components");
        return 0;
    case BERTH_FIELD_TIMEOUT_SECONDS:
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > MAX_TIMEOUT)
            return refuse(rf, BERTH_REFUSAL_MALFORMED_VALUE, "timeout_seconds",
                          "timeout_seconds must be an integer from 1 to %d", MAX_TIMEOUT);
        return 0;
    default: return -EINVAL;
    }
}

static json_t *credential_env_json(const struct berth_pool *pool, const json_t *env)
{
    _cleanup_free_ const char **keys = NULL;
    json_t *arr = json_array();
    size_t n = 0, i;

    keys = sorted_keys(env, &n);
    if (!arr || !keys) {
        json_decref(arr);
        return NULL;
    }
    /* Only the pool's own list and the fixed rule: the effective manifest
     * (and so the receipt) must not depend on which other pools exist. */
    for (i = 0; i < n; i++)
        if ((berth_credential_name(keys[i], NULL) ||
             in_list(pool->credential_allowlist, pool->n_credential_allowlist, keys[i])) &&
            json_array_append_new(arr, json_string(keys[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static int build_effective(const struct berth_pool *pool, const json_t *ov, const json_t *known,
                           struct berth_effective *e, struct berth_error *reterr)
{
    _cleanup_json_ json_t *env = json_deep_copy(pool->env), *tpl = NULL, *caps = NULL, *creds = NULL;
    const json_t *v, *timeout;
    const char *k;
    unsigned bits = 0;
    size_t bad;
    json_t *x;

    if (!env)
        return -ENOMEM;
    json_object_foreach((json_t *)json_object_get(ov, "env"), k, x) if (json_object_set(env, k, x) < 0) return -ENOMEM;
    timeout = json_object_get(ov, "timeout_seconds");
    if (!timeout)
        timeout = json_object_get(json_object_get(pool->manifest, "template"), "timeout_seconds");
    v = json_object_get(ov, "root");
    /* A copy, not a reference: the pool (kept parsed by the registry) stays its own. */
    tpl = json_pack("{s:O, s:s, s:o}", "env", env, "root", v ? json_string_value(v) : pool->root, "timeout_seconds",
                    json_deep_copy(timeout));
    (void)capability_bits(json_object_get(ov, "capabilities"), &bits, &bad); /* absent: no extra bits */
    e->capabilities = BERTH_CAP_BASE | bits;
    v = json_object_get(ov, "network_egress_class");
    e->egress = v ? (enum berth_egress)berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT, json_string_value(v))
                  : pool->egress;
    caps = capability_json(e->capabilities);
    creds = credential_env_json(pool, env);
    if (!tpl || !caps || !creds)
        return -ENOMEM;
    e->json =
        json_pack("{s:s, s:O, s:O, s:O, s:s, s:O}", "pool_hash", pool->pool_hash, "template", tpl, "backend_override",
                  json_object_get(ov, "backend") ? json_object_get(ov, "backend") : json_null(), "capabilities", caps,
                  "network_egress_class", berth_egress_names[e->egress], "credential_env", creds);
    if (!e->json)
        return -ENOMEM;
    v = json_object_get(e->json, "backend_override");
    e->backend_override = json_is_string(v) ? json_string_value(v) : NULL;
    return berth_hash_hex_json(e->json, e->effective_hash, reterr);
}

int berth_pool_merge(const struct berth_pool *pool, const json_t *overrides, const json_t *known_credentials,
                     struct berth_effective **ret, struct berth_refusal *refusal, struct berth_error *reterr)
{
    _cleanup_json_ json_t *empty = NULL;
    _cleanup_free_ const char **keys = NULL;
    struct berth_effective *e;
    size_t n = 0, i;
    int r, idx;

    if (!pool || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!overrides)
        overrides = empty = json_object();
    if (!overrides)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (!json_is_object(overrides))
        return refuse(refusal, BERTH_REFUSAL_MALFORMED_VALUE, "(overrides)", "overrides must be a JSON object");

    keys = sorted_keys(overrides, &n);
    if (!keys)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        idx = berth_name_index(berth_pool_field_names, BERTH_FIELD_COUNT, keys[i]);
        if (idx < 0)
            return refuse(refusal, BERTH_REFUSAL_UNKNOWN_FIELD, keys[i], "\"%.100s\" is not an override field",
                          keys[i]);
        if (!(pool->exposed & (1u << idx)))
            return refuse(refusal, BERTH_REFUSAL_NON_EXPOSED_FIELD, keys[i], "pool %s does not expose %s", pool->name,
                          keys[i]);
    }
    for (i = 0; i < n; i++) {
        idx = berth_name_index(berth_pool_field_names, BERTH_FIELD_COUNT, keys[i]);
        r = check_field(pool, (enum berth_pool_field)idx, json_object_get(overrides, keys[i]), known_credentials,
                        refusal);
        if (r == -ENOMEM)
            return berth_error_set(reterr, r, "out of memory");
        if (r < 0)
            return r;
    }

    e = calloc(1, sizeof(*e));
    if (!e)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    memcpy(e->pool_hash, pool->pool_hash, sizeof(e->pool_hash));
    e->overrides = normalise_overrides(overrides);
    r = e->overrides ? berth_hash_hex_json(e->overrides, e->overrides_hash, reterr) : -ENOMEM;
    if (r >= 0)
        r = build_effective(pool, e->overrides, known_credentials, e, reterr);
    if (r < 0) {
        berth_effective_free(e);
        return r == -ENOMEM ? berth_error_set(reterr, r, "out of memory") : r;
    }
    *ret = e;
    return 0;
}

void berth_effective_free(struct berth_effective *e)
{
    if (!e)
        return;
    json_decref(e->overrides);
    json_decref(e->json);
    free(e);
}
