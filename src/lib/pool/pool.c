/* SPDX-License-Identifier: MIT */
/* pool.c -- pool manifests: validation, normalisation, hashes; see pool.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "encoding.h"
#include "envsafe.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "pool.h"

const char *const berth_capability_names[BERTH_CAP_COUNT] = {
    "exec", "file_rw", "gpu", "network", "persistent_volumes", "snapshot",
};
const char *const berth_pool_field_names[BERTH_FIELD_COUNT] = {
    "backend", "capabilities", "env", "network_egress_class", "root", "timeout_seconds",
};
const char *const berth_egress_names[BERTH_EGRESS_COUNT] = {"none", "loopback", "restricted", "open"};

#define DEFAULT_ROOT "/workspace"
#define DEFAULT_TIMEOUT 1800
#define MAX_TIMEOUT 604800
#define MAX_CONCURRENCY 1000000
#define MAX_ENV 256
#define MAX_ENV_VALUE (32 * 1024)
#define MAX_CREDENTIALS 256
#define MAX_EXPOSED_ENV 256

static const char *const manifest_members[] = {
    "backend_allowlist",
    "capability_ceiling",
    "credential_env_allowlist",
    "exposed_fields",
    "max_concurrency",
    "name",
    "network_egress_class",
    "pool_hash",
    "schema_version",
    "template",
    NULL,
};
static const char *const template_members[] = {"env", "root", "timeout_seconds", NULL};

int berth_hash_hex_json(const json_t *value, char out[BERTH_HASH_HEX_LEN + 1], struct berth_error *reterr)
{
    _cleanup_free_ char *bytes = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    size_t len = 0;
    int r;

    r = berth_json_serialize(value, 0, &bytes, &len, reterr);
    if (r < 0)
        return r;
    r = berth_sha256(bytes, len, raw);
    if (r < 0)
        return berth_error_set(reterr, r, "SHA-256 failed");
    berth_hex_encode(raw, sizeof(raw), out);
    return 0;
}

bool berth_env_name_valid(const char *name)
{
    size_t i;

    if (!name || !name[0] || strlen(name) > 128 || isdigit((unsigned char)name[0]))
        return false;
    for (i = 0; name[i]; i++)
        if (!(isalnum((unsigned char)name[i]) || name[i] == '_') || (unsigned char)name[i] >= 0x80)
            return false;
    return true;
}

bool berth_guest_path_valid(const char *path)
{
    const char *p, *next;
    size_t n;

    if (!path || path[0] != '/' || strlen(path) > 1024)
        return false;
    if (streq(path, "/"))
        return true;
    for (p = path + 1;; p = next + 1) {
        next = strchr(p, '/');
        n = next ? (size_t)(next - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        if (!next)
            return true;
    }
}

int berth_name_set_parse(const json_t *arr, const char *what, const char *const *table, size_t n, unsigned *ret,
                         size_t *ret_bad, struct berth_error *reterr)
{
    unsigned bits = 0;
    json_t *v;
    size_t i;
    int idx;

    if (ret_bad)
        *ret_bad = 0;
    if (!json_is_array(arr))
        return berth_error_set(reterr, -EBADMSG, "%s must be an array of names", what);
    json_array_foreach(arr, i, v)
    {
        idx = json_is_string(v) ? berth_name_index(table, n, json_string_value(v)) : -1;
        if (idx < 0) {
            if (ret_bad)
                *ret_bad = i;
            return berth_error_set(reterr, -EBADMSG, "%s[%zu] is not one of the known names", what, i);
        }
        bits |= 1u << idx;
    }
    *ret = bits;
    return 0;
}

json_t *berth_name_set_json(unsigned bits, const char *const *table, size_t n)
{
    json_t *arr = json_array();
    size_t i;

    for (i = 0; arr && i < n; i++)
        if ((bits & (1u << i)) && json_array_append_new(arr, json_string(table[i])) < 0) {
            json_decref(arr);
            return NULL;
        }
    return arr;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* @names (@n of them, borrowed) as a new JSON array, sorted and de-duplicated. */
static int sorted_unique(const char **names, size_t n, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *out = json_array();
    size_t i;

    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_str);
    for (i = 0; i < n; i++)
        if ((i == 0 || !streq(names[i - 1], names[i])) && json_array_append_new(out, json_string(names[i])) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(out);
    return 0;
}

/* credential_env_allowlist: env names, sorted and de-duplicated. */
static int parse_credentials(const json_t *arr, json_t **ret, struct berth_error *reterr)
{
    _cleanup_free_ const char **names = NULL;
    size_t i, n = json_array_size(arr);
    json_t *v;

    if (!json_is_array(arr))
        return berth_error_set(reterr, -EBADMSG, "credential_env_allowlist must be an array of strings");
    if (n > MAX_CREDENTIALS)
        return berth_error_set(reterr, -EBADMSG, "credential_env_allowlist has more than %d names", MAX_CREDENTIALS);
    names = calloc(n ? n : 1, sizeof(*names));
    if (!names)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    json_array_foreach(arr, i, v)
    {
        if (!json_is_string(v) || !berth_env_name_valid(json_string_value(v)))
            return berth_error_set(reterr, -EBADMSG,
                                   "credential_env_allowlist[%zu] is not an environment variable name", i);
        names[i] = json_string_value(v);
    }
    return sorted_unique(names, n, ret, reterr);
}

/* The env name an exposed_fields entry "env.NAME" exposes, or NULL. */
static const char *exposed_env_name(const char *entry)
{
    size_t n = strlen(BERTH_EXPOSED_ENV_PREFIX);

    return entry && strncmp(entry, BERTH_EXPOSED_ENV_PREFIX, n) == 0 ? entry + n : NULL;
}

/* exposed_fields: override field names and "env.NAME" entries (envsafe.h),
 * sorted and de-duplicated; @ret_bits gets the fields. */
static int parse_exposed(const json_t *arr, unsigned *ret_bits, json_t **ret, struct berth_error *reterr)
{
    _cleanup_free_ const char **names = NULL;
    size_t i, n = json_array_size(arr), n_env = 0;
    unsigned bits = 0;
    json_t *v;
    int idx;

    if (!json_is_array(arr) || n > BERTH_FIELD_COUNT + MAX_EXPOSED_ENV)
        return berth_error_set(reterr, -EBADMSG, "pool.exposed_fields must be an array of at most %d names",
                               BERTH_FIELD_COUNT + MAX_EXPOSED_ENV);
    names = calloc(n ? n : 1, sizeof(*names));
    if (!names)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    json_array_foreach(arr, i, v)
    {
        const char *name = json_string_value(v), *env = exposed_env_name(name);

        idx = name ? berth_name_index(berth_pool_field_names, BERTH_FIELD_COUNT, name) : -1;
        if (idx < 0 && !berth_env_name_valid(env))
            return berth_error_set(reterr, -EBADMSG,
                                   "pool.exposed_fields[%zu] is neither an override field nor env.NAME", i);
        if (idx >= 0)
            bits |= 1u << idx;
        else
            n_env++;
        names[i] = name;
    }
    if (n_env && !(bits & (1u << BERTH_FIELD_ENV)))
        return berth_error_set(reterr, -EBADMSG, "pool.exposed_fields lists env.NAME entries but not env");
    *ret_bits = bits;
    return sorted_unique(names, n, ret, reterr);
}

static int parse_env(const json_t *env, const char *what, struct berth_error *reterr)
{
    const char *key;
    json_t *v;

    if (!json_is_object(env))
        return berth_error_set(reterr, -EBADMSG, "%s must be an object of strings", what);
    if (json_object_size(env) > MAX_ENV)
        return berth_error_set(reterr, -EBADMSG, "%s has more than %d variables", what, MAX_ENV);
    json_object_foreach((json_t *)env, key, v)
    {
        if (!berth_env_name_valid(key))
            return berth_error_set(reterr, -EBADMSG, "%s: \"%s\" is not an environment variable name", what, key);
        if (!json_is_string(v) || json_string_length(v) > MAX_ENV_VALUE)
            return berth_error_set(reterr, -EBADMSG, "%s.%s must be a string of at most %d bytes", what, key,
                                   MAX_ENV_VALUE);
    }
    return 0;
}

static int parse_template(const json_t *tpl, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *out = NULL;
    const char *root = DEFAULT_ROOT;
    int64_t timeout = DEFAULT_TIMEOUT;
    const json_t *env = NULL;
    int r;

    if (tpl) {
        if ((r = berth_json_only_members(tpl, "template", template_members, reterr)) < 0 ||
            (r = berth_json_string_member(tpl, "template", "root", false, &root, reterr)) < 0 ||
            (r = berth_json_int_member(tpl, "template", "timeout_seconds", false, 1, MAX_TIMEOUT, &timeout, reterr)) <
                0)
            return r;
        if (!root)
            root = DEFAULT_ROOT;
        env = json_object_get(tpl, "env");
    }
    if (!berth_guest_path_valid(root))
        return berth_error_set(reterr, -EBADMSG, "template.root must be an absolute path without . or .. components");
    if (env && (r = parse_env(env, "template.env", reterr)) < 0)
        return r;
    /* A private copy: the pool must not share mutable values with @tpl. */
    out = json_pack("{s:s, s:o, s:I}", "root", root, "env", env ? json_deep_copy(env) : json_object(),
                    "timeout_seconds", (json_int_t)timeout);
    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(out);
    return 0;
}

/* Build the normalised manifest (without pool_hash) from a parsed document. */
static int normalise(const json_t *doc, json_t **ret, const char **ret_claimed_hash, struct berth_error *reterr)
{
    _cleanup_json_ json_t *out = NULL, *tpl = NULL, *allow = NULL, *creds = NULL, *exposed = NULL, *ceiling = NULL;
    const char *name = NULL, *egress = "none", *claimed = NULL;
    int64_t version = 0, maxc = 0;
    unsigned exp_bits = 0, ceil_bits = BERTH_CAP_BASE;
    const json_t *v;
    size_t i, j;
    int r;

    if ((r = berth_json_only_members(doc, "pool", manifest_members, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "pool", "schema_version", true, 0, BERTH_JSON_MAX_INTEGER, &version, reterr)) <
            0 ||
        (r = berth_json_string_member(doc, "pool", "name", true, &name, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "pool", "network_egress_class", false, &egress, reterr)) < 0 ||
        (r = berth_json_string_member(doc, "pool", "pool_hash", false, &claimed, reterr)) < 0 ||
        (r = berth_json_int_member(doc, "pool", "max_concurrency", false, 0, MAX_CONCURRENCY, &maxc, reterr)) < 0)
        return r;
    if (version != BERTH_POOL_SCHEMA_VERSION)
        return berth_error_set(reterr, -EBADMSG, "pool.schema_version must be %d", BERTH_POOL_SCHEMA_VERSION);
    if (!berth_pool_name_valid(name))
        return berth_error_set(reterr, -EBADMSG, "pool.name must be " BERTH_POOL_NAME_RULE);
    if (!egress)
        egress = "none";
    if (berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT, egress) < 0)
        return berth_error_set(reterr, -EBADMSG,
                               "pool.network_egress_class must be none, loopback, restricted or open");

    /* backend_allowlist: order kept, no duplicates, at least one. */
    v = json_object_get(doc, "backend_allowlist");
    if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > BERTH_POOL_BACKENDS_MAX)
        return berth_error_set(reterr, -EBADMSG, "pool.backend_allowlist must list 1 to %d backends",
                               BERTH_POOL_BACKENDS_MAX);
    for (i = 0; i < json_array_size(v); i++) {
        const json_t *b = json_array_get(v, i);
        if (!json_is_string(b) || !berth_backend_name_valid(json_string_value(b)))
            return berth_error_set(
                reterr, -EBADMSG, "pool.backend_allowlist[%zu] is not a backend name (" BERTH_BACKEND_NAME_RULE ")", i);
        for (j = 0; j < i; j++)
            if (json_equal(b, json_array_get(v, j)))
                return berth_error_set(reterr, -EBADMSG,
                                       "pool.backend_allowlist lists \"%s\" twice (its order is the preference order)",
                                       json_string_value(b));
    }
    allow = json_deep_copy(v);

    if ((v = json_object_get(doc, "exposed_fields")) && (r = parse_exposed(v, &exp_bits, &exposed, reterr)) < 0)
        return r;
    if ((v = json_object_get(doc, "capability_ceiling"))) {
        if ((r = berth_name_set_parse(v, "pool.capability_ceiling", berth_capability_names, BERTH_CAP_COUNT, &ceil_bits,
                                      NULL, reterr)) < 0)
            return r;
        if ((ceil_bits & BERTH_CAP_BASE) != BERTH_CAP_BASE)
            return berth_error_set(reterr, -EBADMSG, "pool.capability_ceiling must include exec and file_rw");
    }
    if ((v = json_object_get(doc, "credential_env_allowlist"))) {
        if ((r = parse_credentials(v, &creds, reterr)) < 0)
            return r;
    } else {
        creds = json_array();
    }
    if ((r = parse_template(json_object_get(doc, "template"), &tpl, reterr)) < 0)
        return r;
    if (!exposed)
        exposed = json_array();
    ceiling = berth_name_set_json(ceil_bits, berth_capability_names, BERTH_CAP_COUNT);
    if (!allow || !creds || !exposed || !ceiling)
        return berth_error_set(reterr, -ENOMEM, "out of memory");

    out = json_pack("{s:i, s:s, s:O, s:O, s:O, s:I, s:O, s:s, s:O}", "schema_version", BERTH_POOL_SCHEMA_VERSION,
                    "name", name, "backend_allowlist", allow, "template", tpl, "exposed_fields", exposed,
                    "max_concurrency", (json_int_t)maxc, "capability_ceiling", ceiling, "network_egress_class", egress,
                    "credential_env_allowlist", creds);
    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(out);
    *ret_claimed_hash = claimed;
    return 0;
}

static const char **string_array(const json_t *arr, size_t *ret_n)
{
    size_t i, n = json_array_size(arr);
    const char **v = calloc(n ? n : 1, sizeof(*v));

    if (!v)
        return NULL;
    for (i = 0; i < n; i++)
        v[i] = json_string_value(json_array_get(arr, i));
    *ret_n = n;
    return v;
}

int berth_pool_from_json(const json_t *doc, struct berth_pool **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *manifest = NULL;
    _cleanup_free_ char *canon = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    size_t canon_len = 0;
    const json_t *tpl;
    struct berth_pool *p;
    const char *claimed = NULL;
    json_t *v;
    size_t i;
    int r;

    if (!doc || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = normalise(doc, &manifest, &claimed, reterr);
    if (r < 0)
        return r;
    p = calloc(1, sizeof(*p));
    if (!p)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    p->manifest = TAKE_PTR(manifest);
    /* Defaults make the normalised form longer than its source: it must fit
     * the bound too, or the stored body could never be read back. */
    r = berth_json_serialize(p->manifest, BERTH_POOL_MANIFEST_MAX, &canon, &canon_len, reterr);
    if (r == -EFBIG)
        r = berth_error_set(reterr, -EBADMSG, "the normalised manifest is longer than %d bytes",
                            BERTH_POOL_MANIFEST_MAX);
    if (r < 0)
        goto fail;
    if ((r = berth_sha256(canon, canon_len, raw)) < 0) {
        r = berth_error_set(reterr, r, "SHA-256 failed");
        goto fail;
    }
    berth_hex_encode(raw, sizeof(raw), p->pool_hash);
    if (claimed && !streq(claimed, p->pool_hash)) {
        r = berth_error_set(reterr, -EBADMSG, "pool.pool_hash is %.64s but the manifest hashes to %s", claimed,
                            p->pool_hash);
        goto fail;
    }
    tpl = json_object_get(p->manifest, "template");
    r = berth_hash_hex_json(tpl, p->template_hash, reterr);
    if (r < 0)
        goto fail;

    p->name = json_string_value(json_object_get(p->manifest, "name"));
    p->backends = string_array(json_object_get(p->manifest, "backend_allowlist"), &p->n_backends);
    p->credential_allowlist =
        string_array(json_object_get(p->manifest, "credential_env_allowlist"), &p->n_credential_allowlist);
    if (!p->backends || !p->credential_allowlist) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto fail;
    }
    p->root = json_string_value(json_object_get(tpl, "root"));
    p->env = json_object_get(tpl, "env");
    p->timeout_seconds = json_integer_value(json_object_get(tpl, "timeout_seconds"));
    p->max_concurrency = json_integer_value(json_object_get(p->manifest, "max_concurrency"));
    p->egress =
        (enum berth_egress)berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT,
                                            json_string_value(json_object_get(p->manifest, "network_egress_class")));
    v = json_object_get(p->manifest, "exposed_fields");
    p->exposed_env = calloc(json_array_size(v) + 1, sizeof(*p->exposed_env));
    if (!p->exposed_env) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto fail;
    }
    for (i = 0; i < json_array_size(v); i++) {
        const char *name = json_string_value(json_array_get(v, i));
        if (exposed_env_name(name))
            p->exposed_env[p->n_exposed_env++] = exposed_env_name(name);
        else
            p->exposed |= 1u << berth_name_index(berth_pool_field_names, BERTH_FIELD_COUNT, name);
    }
    json_array_foreach(json_object_get(p->manifest, "capability_ceiling"), i, v) p->ceiling |=
        1u << berth_name_index(berth_capability_names, BERTH_CAP_COUNT, json_string_value(v));
    *ret = p;
    return 0;
fail:
    berth_pool_free(p);
    return r;
}

int berth_pool_parse(const char *json, size_t len, struct berth_pool **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    int r;

    r = berth_json_parse(json, len, BERTH_POOL_MANIFEST_MAX, &doc, reterr);
    if (r < 0)
        return r;
    return berth_pool_from_json(doc, ret, reterr);
}

void berth_pool_free(struct berth_pool *pool)
{
    if (!pool)
        return;
    free(pool->backends);
    free(pool->credential_allowlist);
    free(pool->exposed_env);
    json_decref(pool->manifest);
    free(pool);
}

json_t *berth_pool_to_json(const struct berth_pool *pool)
{
    json_t *out;

    if (!pool)
        return NULL;
    out = json_deep_copy(pool->manifest);
    if (out && json_object_set_new(out, "pool_hash", json_string(pool->pool_hash)) < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}
