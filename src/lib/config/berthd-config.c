/* SPDX-License-Identifier: MIT */
/* berthd-config.c -- berthd.json, parsed and written; see berthd-config.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "berthd-config.h"
#include "broker.h"
#include "canon.h"
#include "digest.h"
#include "fsutil.h"
#include "journal.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "job.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL
#define NS_PER_DAY (86400 * NS_PER_S)
/* 100 days: berth's JSON integers stop at 2^53 - 1, about 104 days in ns */
#define RETENTION_MAX_NS (100 * NS_PER_DAY)

static const char *const top_members[] = {
    "audit_key",       "backends", "broker_name", "containment_scan_interval_ns", "evidence",    "http",
    "images",          "journal",  "listen",      "plugin_directory",      "policy",
    "pools_directory", "probe",    "receipt_key", "reconcile_interval_ns", "retention",
    "root_cache_bytes", "schema_version",  "start_concurrency", "state_directory", "tls",  "warm", "workers", NULL,
};
static const char *const workers_members[] = {"lease_ns", "require_qualification", NULL};
static const char *const warm_members[] = {"max_age_ns", "max_memory_bytes", "max_slots", "pools", NULL};
static const char *const warm_target_members[] = {"image", "limits", "max_ready", "min_ready", "overrides", NULL};
static const char *const listen_members[] = {"address", "port", NULL};
static const char *const tls_members[] = {"certificate", "client_ca", "private_key", NULL};
static const char *const journal_members[] = {"max_active_jobs", "max_retained_jobs", "reserve_bytes", NULL};
static const char *const retention_members[] = {"jobs_ns", "outputs_ns", NULL};
static const char *const http_members[] = {
    "handshake_timeout_ns", "header_timeout_ns",  "idle_timeout_ns",   "inactivity_timeout_ns",
    "max_body_bytes",       "max_connections",    "max_header_bytes",  "max_header_fields",
    "max_per_principal",    "max_per_source",     "max_unauthenticated", "refusal_log_interval_ns",
    "request_timeout_ns",   "shutdown_timeout_ns", "threads",           NULL,
};
static const char *const backend_members[] = {"config",  "containment", "plugin", "qualify_at_startup",
                                              "require_qualification", "sha256", NULL};
static const char *const plugin_members[] = {"config", "plugin", "sha256", NULL};

/**
 * struct int_setting - an optional integer member, its range and its
 * default: the one definition that parsing, the defaults and writing use.
 * @section: the object it is a member of ("journal", "http"), or NULL for
 *           the top level.
 * @key:     its name, which is also the field's name.
 * @offset:  of its int64_t in struct berthd_config.
 */
struct int_setting {
    const char *section;
    const char *key;
    size_t offset;
    int64_t min, max, def;
};
#define INT_SETTING(section, field, min, max, def)                                                                     \
    {                                                                                                                  \
        section, #field, offsetof(struct berthd_config, field), min, max, def                                          \
    }

static const struct int_setting int_settings[] = {
    INT_SETTING(NULL, reconcile_interval_ns, 10 * NS_PER_MS, 60 * NS_PER_S, 250 * NS_PER_MS),
    /* How often the units of contained backends are scanned (fence.h). */
    INT_SETTING(NULL, containment_scan_interval_ns, NS_PER_S, 3600 * NS_PER_S, 60 * NS_PER_S),
    /* 0: twice the CPUs online (berthd_config_start_concurrency()). */
    INT_SETTING(NULL, start_concurrency, 0, 1024, 0),
    /* The staged roots kept for reuse (rootcache.h): default 4 GiB; 0 keeps none a job does not use. */
    INT_SETTING(NULL, root_cache_bytes, 0, (INT64_C(1) << 53) - 1, INT64_C(4) << 30),
    INT_SETTING("journal", max_active_jobs, 1, 1000000, 16),
    INT_SETTING("journal", max_retained_jobs, 1, 100000000, 10000),
    INT_SETTING("journal", reserve_bytes, 0, (int64_t)BERTH_JOURNAL_RESERVE_MAX,
                (int64_t)BERTH_JOURNAL_RESERVE_DEFAULT),
    /* Retention: 1 s (short enough for a test) to 100 days, default 7 days. */
    INT_SETTING("retention", jobs_ns, NS_PER_S, RETENTION_MAX_NS, 7 * NS_PER_DAY),
    INT_SETTING("retention", outputs_ns, NS_PER_S, RETENTION_MAX_NS, 7 * NS_PER_DAY),
    /* Warm slots (docs/warm-slots.md): at most 64 on the host, 8 by default, retired after 10 min. */
    INT_SETTING("warm", max_slots, 0, BERTH_WARM_SLOTS_MAX, 8),
    INT_SETTING("warm", max_memory_bytes, 0, (INT64_C(1) << 53) - 1, INT64_C(4) << 30),
    INT_SETTING("warm", max_age_ns, NS_PER_S, NS_PER_DAY, 600 * NS_PER_S),
    /* Remote workers (docs/workers.md): a lease of 1 s to 1 h, 30 s by default. */
    INT_SETTING("workers", lease_ns, NS_PER_S, 3600 * NS_PER_S, 30 * NS_PER_S),
    INT_SETTING("http", max_connections, 1, 4096, 64),
    INT_SETTING("http", max_header_bytes, 1024, 65536, 16384),
    INT_SETTING("http", max_body_bytes, 1024, 16 * 1024 * 1024, 1536 * 1024 + 64 * 1024),
    INT_SETTING("http", max_header_fields, 8, 256, 64),
    INT_SETTING("http", max_unauthenticated, 1, 4096, 16),
    INT_SETTING("http", max_per_source, 1, 4096, 8),
    INT_SETTING("http", max_per_principal, 1, 4096, 32),
    INT_SETTING("http", handshake_timeout_ns, 10 * NS_PER_MS, 60 * NS_PER_S, 2 * NS_PER_S),
    INT_SETTING("http", header_timeout_ns, 10 * NS_PER_MS, 60 * NS_PER_S, 5 * NS_PER_S),
    INT_SETTING("http", inactivity_timeout_ns, 10 * NS_PER_MS, 300 * NS_PER_S, 5 * NS_PER_S),
    INT_SETTING("http", request_timeout_ns, 10 * NS_PER_MS, 300 * NS_PER_S, 30 * NS_PER_S),
    INT_SETTING("http", idle_timeout_ns, 10 * NS_PER_MS, 300 * NS_PER_S, 30 * NS_PER_S),
    INT_SETTING("http", shutdown_timeout_ns, 0, 300 * NS_PER_S, 10 * NS_PER_S),
    INT_SETTING("http", refusal_log_interval_ns, 100 * NS_PER_MS, 3600 * NS_PER_S, 10 * NS_PER_S),
    /* 0: one per CPU online (berthd_config_front_threads()). */
    INT_SETTING("http", threads, 0, BERTH_BERTHD_FRONT_THREADS_MAX, 0),
};

static int64_t *setting_of(struct berthd_config *c, const struct int_setting *s)
{
    return (int64_t *)(void *)((char *)c + s->offset);
}

static int64_t setting_value(const struct berthd_config *c, const struct int_setting *s)
{
    return *(const int64_t *)(const void *)((const char *)c + s->offset);
}

static bool same_section(const char *a, const char *b)
{
    return a == b || (a && b && streq(a, b));
}

/* The members of @o (NULL: absent) that the settings of @section are; "config[.@section]" in messages. */
static int parse_settings(const json_t *o, const char *section, struct berthd_config *c, struct berth_error *reterr)
{
    char what[64];
    size_t i;
    int r;

    snprintf(what, sizeof(what), "config%s%s", section ? "." : "", section ? section : "");
    for (i = 0; i < ELEMENTSOF(int_settings); i++) {
        const struct int_setting *s = &int_settings[i];
        if (!same_section(s->section, section))
            continue;
        if ((r = berth_json_int_member(o, what, s->key, false, s->min, s->max, setting_of(c, s), reterr)) < 0)
            return r;
    }
    return 0;
}

int64_t berthd_config_unauthenticated_share(const struct berthd_config *c)
{
    int64_t half = c->max_connections / 2 > 0 ? c->max_connections / 2 : 1;

    return c->max_unauthenticated < half ? c->max_unauthenticated : half;
}

void berthd_config_defaults(struct berthd_config *c)
{
    size_t i;

    memset(c, 0, sizeof(*c));
    for (i = 0; i < ELEMENTSOF(int_settings); i++)
        *setting_of(c, &int_settings[i]) = int_settings[i].def;
    c->evidence_max_object_bytes = BERTH_EVIDENCE_MAX_OBJECT_DEFAULT;
    c->workers_require_qualification = true;
}

/* A required (or optional) absolute path member. */
static int path_member(const json_t *o, const char *what, const char *key, bool required, const char **ret,
                       struct berth_error *reterr)
{
    int r = berth_json_string_member(o, what, key, required, ret, reterr);

    if (r < 0)
        return r;
    if (*ret && ((*ret)[0] != '/' || strlen(*ret) >= PATH_MAX))
        return berth_error_set(reterr, -EBADMSG, "%s.%s must be an absolute path (shorter than %d bytes)", what, key,
                               PATH_MAX);
    return 0;
}

/* An optional object member: NULL when absent. */
static int object_member(const json_t *o, const char *what, const char *key, const char *const *allowed,
                         const json_t **ret, struct berth_error *reterr)
{
    char sub[64];

    *ret = json_object_get(o, key);
    if (!*ret)
        return 0;
    snprintf(sub, sizeof(sub), "%s.%s", what, key);
    return berth_json_only_members(*ret, sub, allowed, reterr);
}

/* The members every plugin instance has, {plugin, sha256?, config?}, of the object @v (already checked for
 * unknown members); @example names a plugin in messages. */
static int parse_plugin_ref(const json_t *v, const char *what, const char *example, const char **ret_plugin,
                            const char **ret_sha256, const json_t **ret_config, struct berth_error *reterr)
{
    int r;

    if ((r = berth_json_string_member(v, what, "plugin", true, ret_plugin, reterr)) < 0 ||
        (r = berth_json_string_member(v, what, "sha256", false, ret_sha256, reterr)) < 0)
        return r;
    if (!berth_plugin_name_valid(*ret_plugin))
        return berth_error_set(reterr, -EBADMSG,
                               "%s.plugin must be a plugin name such as %s (" BERTH_PLUGIN_NAME_RULE ")", what,
                               example);
    if (*ret_sha256) {
        uint8_t raw[BERTH_SHA256_LEN];
        if (berth_digest_parse(*ret_sha256, raw) < 0)
            return berth_error_set(reterr, -EBADMSG, "%s.sha256 must be sha256:<64 lowercase hex>", what);
    }
    *ret_config = json_object_get(v, "config");
    if (*ret_config && !json_is_object(*ret_config))
        return berth_error_set(reterr, -EBADMSG, "%s.config must be an object", what);
    return 0;
}

/* A runtime backend's containment, when @v has one: {plugin, sha256?, config?}. */
static int parse_containment(const json_t *v, const char *what, struct berthd_containment_config *c,
                             struct berth_error *reterr)
{
    const json_t *o = json_object_get(v, "containment");
    char sub[160];
    int r;

    if (!o)
        return 0;
    snprintf(sub, sizeof(sub), "%s.containment", what);
    if (!json_is_object(o))
        return berth_error_set(reterr, -EBADMSG,
                               "%s must be an object such as {\"plugin\": \"containment-systemd\"}", sub);
    if ((r = berth_json_only_members(o, sub, plugin_members, reterr)) < 0)
        return r;
    return parse_plugin_ref(o, sub, "containment-systemd", &c->plugin, &c->sha256, &c->config, reterr);
}

/*
 * One plugin instance: {plugin, sha256, config[, require_qualification,
 * qualify_at_startup, containment]}; @runtime: a runtime backend, with the
 * qualification members and its containment, else the image source or the
 * evidence store; @example names a plugin in messages.
 */
static int parse_backend(const json_t *v, const char *what, bool runtime, const char *example,
                         struct berthd_backend_config *b, struct berth_error *reterr)
{
    const json_t *rq;
    int r;

    b->require_qualification = true;
    if ((r = berth_json_only_members(v, what, runtime ? backend_members : plugin_members, reterr)) < 0 ||
        (r = parse_plugin_ref(v, what, example, &b->plugin, &b->sha256, &b->config, reterr)) < 0 ||
        (runtime && (r = parse_containment(v, what, &b->containment, reterr)) < 0))
        return r;
    rq = json_object_get(v, "qualify_at_startup");
    if (rq && !json_is_boolean(rq))
        return berth_error_set(reterr, -EBADMSG, "%s.qualify_at_startup must be true or false", what);
    b->qualify_at_startup = rq && json_is_true(rq);
    rq = json_object_get(v, "require_qualification");
    if (rq && !json_is_boolean(rq))
        return berth_error_set(reterr, -EBADMSG, "%s.require_qualification must be true or false", what);
    if (rq)
        b->require_qualification = json_is_true(rq);
    return 0;
}

int berthd_backend_config_parse(const json_t *v, const char *what, bool runtime, struct berthd_backend_config *ret,
                                struct berth_error *reterr)
{
    const char *name = ret ? ret->name : NULL;
    int r;

    if (!v || !what || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!json_is_object(v))
        return berth_error_set(reterr, -EBADMSG, "%s must be an object such as {\"plugin\": \"%s\"}", what,
                               runtime ? "runtime-oci" : "image-oci-local");
    memset(ret, 0, sizeof(*ret));
    ret->name = name;
    r = parse_backend(v, what, runtime, runtime ? "runtime-oci" : "image-oci-local", ret, reterr);
    return r == -ENOMEM ? r : r < 0 ? -EBADMSG : 0;
}

static int parse_backends(const json_t *o, struct berthd_config *c, struct berth_error *reterr)
{
    const char *name;
    json_t *v;

    if (!o)
        return 0;
    if (!json_is_object(o))
        return berth_error_set(reterr, -EBADMSG, "config.backends must be an object");
    if (json_object_size(o) > BERTH_BERTHD_BACKENDS_MAX)
        return berth_error_set(reterr, -EBADMSG, "config.backends: at most %d backends", BERTH_BERTHD_BACKENDS_MAX);
    json_object_foreach((json_t *)o, name, v)
    {
        struct berthd_backend_config *b = &c->backends[c->n_backends];
        char what[128];
        int r;

        if (!berth_backend_name_valid(name))
            return berth_error_set(reterr, -EBADMSG,
                                   "config.backends: a backend name must be " BERTH_BACKEND_NAME_RULE);
        if (streq(name, BERTH_WORKERS_BACKEND))
            return berth_error_set(reterr, -EBADMSG,
                                   "config.backends: \"%s\" is the remote workers' name; configure them in "
                                   "config.workers",
                                   name);
        snprintf(what, sizeof(what), "config.backends.%s", name);
        b->name = name;
        if ((r = parse_backend(v, what, true, "runtime-oci", b, reterr)) < 0)
            return r;
        c->n_backends++;
    }
    return 0;
}

/* One warm target of pool @pool: {image, limits, overrides?, min_ready, max_ready?}. */
static int parse_warm_target(const json_t *v, const char *what, const char *pool, struct berthd_config *c,
                             struct berth_error *reterr)
{
    struct berth_warm_target *t = &c->warm[c->n_warm];
    struct berth_limits limits;
    uint8_t raw[BERTH_SHA256_LEN];
    char sub[192];
    int r;

    t->pool = pool;
    t->max_ready = -1;
    if ((r = berth_json_only_members(v, what, warm_target_members, reterr)) < 0 ||
        (r = berth_json_string_member(v, what, "image", true, &t->image, reterr)) < 0 ||
        (r = berth_json_int_member(v, what, "min_ready", true, 0, BERTH_WARM_SLOTS_MAX, &t->min_ready, reterr)) <
            0 ||
        (r = berth_json_int_member(v, what, "max_ready", false, 0, BERTH_WARM_SLOTS_MAX, &t->max_ready, reterr)) < 0)
        return r;
    if (berth_digest_parse(t->image, raw) < 0)
        return berth_error_set(reterr, -EBADMSG, "%s.image must be an image digest, sha256:<64 lowercase hex>", what);
    if (t->max_ready < 0)
        t->max_ready = t->min_ready;
    if (t->max_ready < t->min_ready)
        return berth_error_set(reterr, -EBADMSG, "%s.max_ready must not be below min_ready", what);
    t->limits = json_object_get(v, "limits");
    snprintf(sub, sizeof(sub), "%s.limits", what);
    if (!t->limits)
        return berth_error_set(reterr, -EBADMSG, "%s is missing", sub);
    if ((r = berth_limits_parse(t->limits, sub, &limits, reterr)) < 0)
        return r;
    t->memory_bytes = limits.memory_bytes;
    t->overrides = json_object_get(v, "overrides");
    if (t->overrides && !json_is_object(t->overrides))
        return berth_error_set(reterr, -EBADMSG, "%s.overrides must be an object", what);
    c->n_warm++;
    return 0;
}

/* "warm": host bounds, and per pool a list of warm targets. */
static int parse_warm(const json_t *o, struct berthd_config *c, struct berth_error *reterr)
{
    const json_t *pools;
    const char *pool;
    json_t *list;
    int r;

    if (!o)
        return 0;
    if ((r = berth_json_only_members(o, "config.warm", warm_members, reterr)) < 0 ||
        (r = parse_settings(o, "warm", c, reterr)) < 0)
        return r;
    pools = json_object_get(o, "pools");
    if (!pools)
        return 0;
    if (!json_is_object(pools))
        return berth_error_set(reterr, -EBADMSG, "config.warm.pools must be an object of pool names");
    json_object_foreach((json_t *)pools, pool, list)
    {
        char what[160];
        size_t i;

        if (!berth_pool_name_valid(pool))
            return berth_error_set(reterr, -EBADMSG, "config.warm.pools: a pool name must be " BERTH_POOL_NAME_RULE);
        if (!json_is_array(list))
            return berth_error_set(reterr, -EBADMSG, "config.warm.pools.%s must be a list of warm targets", pool);
        for (i = 0; i < json_array_size(list); i++) {
            if (c->n_warm >= BERTH_WARM_TARGETS_MAX)
                return berth_error_set(reterr, -EBADMSG, "config.warm: at most %d warm targets",
                                       BERTH_WARM_TARGETS_MAX);
            snprintf(what, sizeof(what), "config.warm.pools.%s[%zu]", pool, i);
            if ((r = parse_warm_target(json_array_get(list, i), what, pool, c, reterr)) < 0)
                return r;
        }
    }
    return 0;
}

/* "evidence": the evidence store, and the one member of its config berthd reads itself. */
static int parse_evidence(struct berthd_config *c, struct berth_error *reterr)
{
    int r;

    c->evidence.name = "evidence";
    if ((r = parse_backend(json_object_get(c->doc, "evidence"), "config.evidence", false, "evidence-sqlite",
                           &c->evidence, reterr)) < 0 ||
        (r = berth_json_int_member(c->evidence.config, "config.evidence.config", "max_object_bytes", false, 1,
                                   BERTH_EVIDENCE_MAX_OBJECT_LIMIT, &c->evidence_max_object_bytes, reterr)) < 0)
        return r;
    c->has_evidence = true;
    return 0;
}

int berthd_config_parse(const char *text, size_t len, const char *default_plugindir, struct berthd_config *c,
                        struct berth_error *reterr)
{
    const json_t *listen = NULL, *tls = NULL, *journal = NULL, *http = NULL, *retention = NULL, *workers = NULL;
    int64_t version = 0, port = 0;
    unsigned char addr[sizeof(struct in6_addr)];
    int r;

    berthd_config_defaults(c);
    c->plugin_directory = default_plugindir;

    r = berth_json_parse(text, len, BERTH_BERTHD_CONFIG_MAX, &c->doc, reterr);
    if (r < 0)
        return r;
    if ((r = berth_json_only_members(c->doc, "config", top_members, reterr)) < 0 ||
        (r = berth_json_int_member(c->doc, "config", "schema_version", true, 1, 1, &version, reterr)) < 0 ||
        (r = berth_json_string_member(c->doc, "config", "broker_name", true, &c->broker_name, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "receipt_key", true, &c->receipt_key, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "audit_key", true, &c->audit_key, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "policy", true, &c->policy, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "state_directory", true, &c->state_directory, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "pools_directory", false, &c->pools_directory, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "plugin_directory", false, &c->plugin_directory, reterr)) < 0 ||
        (r = path_member(c->doc, "config", "probe", false, &c->probe, reterr)) < 0 ||
        (r = parse_settings(c->doc, NULL, c, reterr)) < 0)
        goto fail;
    if (!c->plugin_directory)
        c->plugin_directory = default_plugindir;
    if (!berth_broker_name_valid(c->broker_name)) {
        r = berth_error_set(reterr, -EBADMSG, "config.broker_name must be " BERTH_BROKER_NAME_RULE);
        goto fail;
    }

    listen = json_object_get(c->doc, "listen");
    if (!listen) {
        r = berth_error_set(reterr, -EBADMSG, "config.listen is missing");
        goto fail;
    }
    if ((r = berth_json_only_members(listen, "config.listen", listen_members, reterr)) < 0 ||
        (r = berth_json_string_member(listen, "config.listen", "address", true, &c->address, reterr)) < 0 ||
        (r = berth_json_int_member(listen, "config.listen", "port", true, 1, 65535, &port, reterr)) < 0)
        goto fail;
    c->port = (int)port;
    if (inet_pton(AF_INET, c->address, addr) != 1 && inet_pton(AF_INET6, c->address, addr) != 1) {
        r = berth_error_set(reterr, -EBADMSG, "config.listen.address must be an IPv4 or IPv6 address");
        goto fail;
    }

    tls = json_object_get(c->doc, "tls");
    if (!tls) {
        r = berth_error_set(reterr, -EBADMSG, "config.tls is missing");
        goto fail;
    }
    if ((r = berth_json_only_members(tls, "config.tls", tls_members, reterr)) < 0 ||
        (r = path_member(tls, "config.tls", "certificate", true, &c->certificate, reterr)) < 0 ||
        (r = path_member(tls, "config.tls", "private_key", true, &c->private_key, reterr)) < 0 ||
        (r = path_member(tls, "config.tls", "client_ca", true, &c->client_ca, reterr)) < 0)
        goto fail;

    if ((r = object_member(c->doc, "config", "journal", journal_members, &journal, reterr)) < 0 ||
        (r = parse_settings(journal, "journal", c, reterr)) < 0 ||
        (r = object_member(c->doc, "config", "http", http_members, &http, reterr)) < 0 ||
        (r = parse_settings(http, "http", c, reterr)) < 0 ||
        (r = object_member(c->doc, "config", "retention", retention_members, &retention, reterr)) < 0 ||
        (r = parse_settings(retention, "retention", c, reterr)) < 0)
        goto fail;
    if (c->request_timeout_ns < c->header_timeout_ns) {
        r = berth_error_set(reterr, -EBADMSG, "config.http.request_timeout_ns must not be below header_timeout_ns");
        goto fail;
    }
    /* Also when max_retained_jobs is the default: the journal would be full
     * before max_active_jobs could be reached. */
    if (c->max_retained_jobs < c->max_active_jobs) {
        r = berth_error_set(
            reterr, -EBADMSG, "config.journal.max_retained_jobs (%lld%s) must not be below max_active_jobs (%lld)",
            (long long)c->max_retained_jobs, json_object_get(journal, "max_retained_jobs") ? "" : ", the default",
            (long long)c->max_active_jobs);
        goto fail;
    }
    if ((r = parse_backends(json_object_get(c->doc, "backends"), c, reterr)) < 0)
        goto fail;
    if (json_object_get(c->doc, "images")) {
        c->images.name = "images";
        if ((r = parse_backend(json_object_get(c->doc, "images"), "config.images", false, "image-oci-local",
                               &c->images, reterr)) < 0)
            goto fail;
        c->has_images = true;
    }
    if (json_object_get(c->doc, "evidence") && (r = parse_evidence(c, reterr)) < 0)
        goto fail;
    if ((r = parse_warm(json_object_get(c->doc, "warm"), c, reterr)) < 0)
        goto fail;
    if ((r = object_member(c->doc, "config", "workers", workers_members, &workers, reterr)) < 0 ||
        (r = parse_settings(workers, "workers", c, reterr)) < 0)
        goto fail;
    if (workers && json_object_get(workers, "require_qualification")) {
        const json_t *rq = json_object_get(workers, "require_qualification");
        if (!json_is_boolean(rq)) {
            r = berth_error_set(reterr, -EBADMSG, "config.workers.require_qualification must be true or false");
            goto fail;
        }
        c->workers_require_qualification = json_is_true(rq);
    }
    return 0;
fail:
    berthd_config_clear(c);
    return r == -ENOMEM ? r : -EBADMSG;
}

void berthd_config_clear(struct berthd_config *c)
{
    if (!c)
        return;
    json_decref(c->doc);
    memset(c, 0, sizeof(*c));
}

/* Set @key of @o to the new reference @v (NULL, as jansson returns when out of memory, fails).  Return: 0 or -ENOMEM. */
static int put(json_t *o, const char *key, json_t *v)
{
    return json_object_set_new(o, key, v) < 0 ? -ENOMEM : 0;
}

/* put() of the string @s, when it is not NULL. */
static int put_string(json_t *o, const char *key, const char *s)
{
    return s ? put(o, key, json_string(s)) : 0;
}

/* The settings of @section (NULL: the top level) that differ from their defaults, into @doc. */
static int put_settings(json_t *doc, const char *section, const struct berthd_config *c)
{
    _cleanup_json_ json_t *o = section ? json_object() : json_incref(doc);
    size_t i;

    if (!o)
        return -ENOMEM;
    for (i = 0; i < ELEMENTSOF(int_settings); i++) {
        const struct int_setting *s = &int_settings[i];
        if (same_section(s->section, section) && setting_value(c, s) != s->def &&
            put(o, s->key, json_integer(setting_value(c, s))) < 0)
            return -ENOMEM;
    }
    if (section && json_object_size(o) > 0 && put(doc, section, TAKE_PTR(o)) < 0)
        return -ENOMEM;
    return 0;
}

/* One plugin instance; @runtime: a backend, with its qualification members, else the image source or the
 * evidence store.  NULL: -ENOMEM. */
static json_t *backend_json(const struct berthd_backend_config *b, bool runtime)
{
    _cleanup_json_ json_t *o = json_object();

    if (!o || put(o, "plugin", json_string(b->plugin)) < 0 || put_string(o, "sha256", b->sha256) < 0)
        return NULL;
    if (runtime && (put(o, "require_qualification", json_boolean(b->require_qualification)) < 0 ||
                    (b->qualify_at_startup && put(o, "qualify_at_startup", json_true()) < 0)))
        return NULL;
    if (b->config && put(o, "config", json_deep_copy(b->config)) < 0)
        return NULL;
    if (runtime && b->containment.plugin) {
        json_t *c = json_pack("{s:s}", "plugin", b->containment.plugin);

        if (put(o, "containment", c) < 0 || put_string(c, "sha256", b->containment.sha256) < 0 ||
            (b->containment.config && put(c, "config", json_deep_copy(b->containment.config)) < 0))
            return NULL;
    }
    return TAKE_PTR(o);
}

/* Whether @c has every string berthd_config_to_json() requires, and backends it can key by name. */
static bool writable(const struct berthd_config *c)
{
    size_t i, j;

    if (!c->broker_name || !c->address || !c->certificate || !c->private_key || !c->client_ca || !c->receipt_key ||
        !c->audit_key || !c->policy || !c->state_directory || c->n_backends > BERTH_BERTHD_BACKENDS_MAX ||
        (c->has_images && !c->images.plugin) || (c->has_evidence && !c->evidence.plugin))
        return false;
    for (i = 0; i < c->n_backends; i++) {
        if (!c->backends[i].name || !c->backends[i].plugin)
            return false;
        for (j = 0; j < i; j++)
            if (streq(c->backends[i].name, c->backends[j].name))
                return false;
    }
    return true;
}

int berthd_config_to_json(const struct berthd_config *c, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL, *backends = NULL;
    size_t i;

    if (!c || !ret || !writable(c))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    doc = json_pack("{s:i, s:s, s:{s:s, s:i}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:s}", "schema_version", 1,
                    "broker_name", c->broker_name, "listen", "address", c->address, "port", c->port, "tls",
                    "certificate", c->certificate, "private_key", c->private_key, "client_ca", c->client_ca,
                    "receipt_key", c->receipt_key, "audit_key", c->audit_key, "policy", c->policy, "state_directory",
                    c->state_directory);
    backends = json_object();
    if (!doc || !backends || put_string(doc, "pools_directory", c->pools_directory) < 0 ||
        put_string(doc, "plugin_directory", c->plugin_directory) < 0 || put_string(doc, "probe", c->probe) < 0 ||
        put_settings(doc, NULL, c) < 0 || put_settings(doc, "journal", c) < 0 || put_settings(doc, "http", c) < 0 ||
        put_settings(doc, "retention", c) < 0 || put_settings(doc, "workers", c) < 0 ||
        (!c->workers_require_qualification &&
         (!json_object_get(doc, "workers") && put(doc, "workers", json_object()) < 0)) ||
        (!c->workers_require_qualification &&
         put(json_object_get(doc, "workers"), "require_qualification", json_false()) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    for (i = 0; i < c->n_backends; i++)
        if (put(backends, c->backends[i].name, backend_json(&c->backends[i], true)) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (put(doc, "backends", TAKE_PTR(backends)) < 0 ||
        (c->has_images && put(doc, "images", backend_json(&c->images, false)) < 0) ||
        (c->has_evidence && put(doc, "evidence", backend_json(&c->evidence, false)) < 0))
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = TAKE_PTR(doc);
    return 0;
}

/* Open and check a trusted file; @secret: owner euid, no group/other access. */
static int read_checked(const char *path, bool secret, size_t max, char **ret, size_t *ret_len,
                        struct berth_error *reterr)
{
    struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = BERTH_UID_ANY,
        .mode_mask = secret ? 077 : 022,
        .mode = 0,
        .max_size = max,
        .one_link = 1,
    };
    struct stat st;
    _cleanup_close_ int fd = -1;
    int r;

    fd = berth_open_trusted(path, O_RDONLY | O_NOCTTY, 0, reterr);
    if (fd < 0) {
        berth_error_prefix(reterr, "%s", path);
        return fd;
    }
    r = berth_file_check(fd, path, &expect, &st, reterr);
    if (r < 0)
        return r;
    if (st.st_uid != geteuid() && (secret || st.st_uid != 0))
        return berth_error_set(reterr, -EPERM, "%s is owned by uid %u; it must belong to uid %u%s", path,
                               (unsigned)st.st_uid, (unsigned)geteuid(), secret ? "" : " or root");
    r = berth_read_fd(fd, max, ret, ret_len, reterr);
    if (r < 0)
        berth_error_prefix(reterr, "%s", path);
    return r;
}

int berthd_read_public_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    return read_checked(path, false, max, ret, ret_len, reterr);
}

int berthd_read_secret_file(const char *path, size_t max, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    return read_checked(path, true, max, ret, ret_len, reterr);
}

int berthd_config_load(const char *path, const char *default_plugindir, struct berthd_config *ret,
                       struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    r = berthd_read_public_file(path, BERTH_BERTHD_CONFIG_MAX, &text, &len, reterr);
    if (r < 0)
        return r;
    r = berthd_config_parse(text, len, default_plugindir, ret, reterr);
    if (r < 0)
        berth_error_prefix(reterr, "%s", path);
    return r;
}

int64_t berthd_config_front_threads(const struct berthd_config *c)
{
    long cpus;

    if (c->threads > 0)
        return c->threads;
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (cpus > BERTH_BERTHD_FRONT_THREADS_MAX ? BERTH_BERTHD_FRONT_THREADS_MAX : cpus) : 1;
}

int64_t berthd_config_start_concurrency(const struct berthd_config *c)
{
    long cpus;

    if (c->start_concurrency > 0)
        return c->start_concurrency;
    cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus > 0 ? (cpus > 512 ? 1024 : 2 * cpus) : 2;
}
