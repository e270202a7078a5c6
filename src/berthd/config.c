/* SPDX-License-Identifier: MIT */
/* config.c -- berthd.json; see config.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canon.h"
#include "config.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static const char *const top_members[] = {
    "audit_key", "backends",    "broker_name",           "http",           "images",
    "journal",   "listen",      "plugin_directory",      "policy",         "pools_directory",
    "probe",     "receipt_key", "reconcile_interval_ns", "schema_version", "state_directory",
    "tls",       NULL,
};
static const char *const listen_members[] = {"address", "port", NULL};
static const char *const tls_members[] = {"certificate", "client_ca", "private_key", NULL};
static const char *const journal_members[] = {"max_active_jobs", "max_retained_jobs", NULL};
static const char *const http_members[] = {
    "header_timeout_ns", "idle_timeout_ns",    "max_body_bytes",      "max_connections",
    "max_header_bytes",  "request_timeout_ns", "shutdown_timeout_ns", NULL,
};
static const char *const backend_members[] = {"config", "plugin", "qualify_at_startup", "require_qualification",
                                              "sha256", NULL};

static bool name_ok(const char *s, size_t max)
{
    size_t i;

    if (!s || !s[0] || strlen(s) > max)
        return false;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              strchr("._-", s[i])))
            return false;
    return true;
}

/* A plugin name as the loader accepts it: 1 to 63 of [a-z0-9-], starting with a letter or digit. */
static bool plugin_name_ok(const char *s)
{
    size_t i;

    if (!s || !s[0] || s[0] == '-' || strlen(s) > 63)
        return false;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* A required (or optional) absolute path member. */
static int path_member(const json_t *o, const char *what, const char *key, bool required, const char **ret,
                       struct berth_error *reterr)
{
    int r = berth_json_string_member(o, what, key, required, ret, reterr);

    if (r < 0)
        return r;
    if (*ret && ((*ret)[0] != '/' || strlen(*ret) >= 4096))
        return berth_error_set(reterr, -EBADMSG, "%s.%s must be an absolute path", what, key);
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

/* One plugin instance: {plugin, sha256, config[, require_qualification]}. */
static int parse_backend(const json_t *v, const char *what, bool runtime, struct berthd_backend_config *b,
                         struct berth_error *reterr)
{
    static const char *const image_members[] = {"config", "plugin", "sha256", NULL};
    const json_t *rq;
    int r;

    b->require_qualification = true;
    if ((r = berth_json_only_members(v, what, runtime ? backend_members : image_members, reterr)) < 0 ||
        (r = berth_json_string_member(v, what, "plugin", true, &b->plugin, reterr)) < 0 ||
        (r = berth_json_string_member(v, what, "sha256", false, &b->sha256, reterr)) < 0)
        return r;
    if (!plugin_name_ok(b->plugin))
        return berth_error_set(reterr, -EBADMSG,
                               "%s.plugin must be a plugin name such as %s (1 to 63 of [a-z0-9-], starting with a "
                               "letter or digit)",
                               what, runtime ? "runtime-oci" : "image-oci-local");
    if (b->sha256) {
        uint8_t raw[BERTH_SHA256_LEN];
        if (berth_digest_parse(b->sha256, raw) < 0)
            return berth_error_set(reterr, -EBADMSG, "%s.sha256 must be sha256:<64 lowercase hex>", what);
    }
    b->config = json_object_get(v, "config");
    if (b->config && !json_is_object(b->config))
        return berth_error_set(reterr, -EBADMSG, "%s.config must be an object", what);
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

static int parse_backends(const json_t *o, struct berthd_config *c, struct berth_error *reterr)
{
    const char *name;
    json_t *v;

    if (!o)
        return 0;
    if (!json_is_object(o))
        return berth_error_set(reterr, -EBADMSG, "config.backends must be an object");
    if (json_object_size(o) > BERTHD_MAX_BACKENDS)
        return berth_error_set(reterr, -EBADMSG, "config.backends: at most %d backends", BERTHD_MAX_BACKENDS);
    json_object_foreach((json_t *)o, name, v)
    {
        struct berthd_backend_config *b = &c->backends[c->n_backends];
        char what[128];
        int r;

        if (!name_ok(name, 63))
            return berth_error_set(reterr, -EBADMSG,
                                   "config.backends: a backend name must be 1 to 63 of [A-Za-z0-9._-]");
        snprintf(what, sizeof(what), "config.backends.%s", name);
        b->name = name;
        if ((r = parse_backend(v, what, true, b, reterr)) < 0)
            return r;
        c->n_backends++;
    }
    return 0;
}

int berthd_config_parse(const char *text, size_t len, const char *default_plugindir, struct berthd_config *c,
                        struct berth_error *reterr)
{
    const json_t *listen = NULL, *tls = NULL, *journal = NULL, *http = NULL;
    int64_t version = 0, port = 0;
    unsigned char addr[sizeof(struct in6_addr)];
    int r;

    memset(c, 0, sizeof(*c));
    c->max_active_jobs = 16;
    c->max_retained_jobs = 10000;
    c->max_connections = 64;
    c->max_header_bytes = 16384;
    c->max_body_bytes = 1024 * 1024 + 64 * 1024;
    c->header_timeout_ns = 5 * NS_PER_S;
    c->request_timeout_ns = 30 * NS_PER_S;
    c->idle_timeout_ns = 30 * NS_PER_S;
    c->shutdown_timeout_ns = 10 * NS_PER_S;
    c->reconcile_interval_ns = 250 * NS_PER_MS;
    c->plugin_directory = default_plugindir;

    r = berth_json_parse(text, len, BERTHD_CONFIG_MAX, &c->doc, reterr);
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
        (r = berth_json_int_member(c->doc, "config", "reconcile_interval_ns", false, 10 * NS_PER_MS, 60 * NS_PER_S,
                                   &c->reconcile_interval_ns, reterr)) < 0)
        goto fail;
    if (!c->plugin_directory)
        c->plugin_directory = default_plugindir;
    if (!name_ok(c->broker_name, 64)) {
        r = berth_error_set(reterr, -EBADMSG, "config.broker_name must be 1 to 64 of [A-Za-z0-9._-]");
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
        (r = berth_json_int_member(journal, "config.journal", "max_active_jobs", false, 1, 1000000, &c->max_active_jobs,
                                   reterr)) < 0 ||
        (r = berth_json_int_member(journal, "config.journal", "max_retained_jobs", false, 1, 100000000,
                                   &c->max_retained_jobs, reterr)) < 0)
        goto fail;
    if ((r = object_member(c->doc, "config", "http", http_members, &http, reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "max_connections", false, 1, 4096, &c->max_connections,
                                   reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "max_header_bytes", false, 1024, 65536, &c->max_header_bytes,
                                   reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "max_body_bytes", false, 1024, 16 * 1024 * 1024,
                                   &c->max_body_bytes, reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "header_timeout_ns", false, 10 * NS_PER_MS, 60 * NS_PER_S,
                                   &c->header_timeout_ns, reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "request_timeout_ns", false, 10 * NS_PER_MS, 300 * NS_PER_S,
                                   &c->request_timeout_ns, reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "idle_timeout_ns", false, 10 * NS_PER_MS, 300 * NS_PER_S,
                                   &c->idle_timeout_ns, reterr)) < 0 ||
        (r = berth_json_int_member(http, "config.http", "shutdown_timeout_ns", false, 0, 300 * NS_PER_S,
                                   &c->shutdown_timeout_ns, reterr)) < 0)
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
        if ((r = parse_backend(json_object_get(c->doc, "images"), "config.images", false, &c->images, reterr)) < 0)
            goto fail;
        c->has_images = true;
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

    r = berthd_read_public_file(path, BERTHD_CONFIG_MAX, &text, &len, reterr);
    if (r < 0)
        return r;
    r = berthd_config_parse(text, len, default_plugindir, ret, reterr);
    if (r < 0)
        berth_error_prefix(reterr, "%s", path);
    return r;
}
