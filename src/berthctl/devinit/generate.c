/* SPDX-License-Identifier: MIT */
/*
 * generate.c -- the contents of dev-init's files: keys, certificates,
 * berthd.json, client.json, the host policy and the pool (devinit.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "berthd-config.h"
#include "canon.h"
#include "client.h"
#include "devinit.h"
#include "job.h"
#include "jsonobj.h"
#include "macro.h"
#include "policy.h"
#include "pool.h"
#include "sign.h"
#include "utf8.h"

#define SCOPE "dev"
#define LISTEN_ADDRESS "127.0.0.1"
#define CA_CN_PREFIX "berth dev CA "

#define NS_PER_S 1000000000LL
#define BACKDATE_S 60                         /**< validity starts this long before now (clock skew) */
#define VALIDITY_S ((int64_t)365 * 24 * 3600) /**< and ends this long after now */

/** The ceiling granted to every principal (host policy "limits"). */
#define LIMIT_CPU_MILLIS 2000
#define LIMIT_MEMORY_BYTES 2147483648LL
#define LIMIT_PIDS 512
#define LIMIT_SCRATCH_BYTES 1073741824LL
#define LIMIT_WALL_TIME_NS 3600000000000LL
#define LIMIT_OUTPUT_BYTES BERTH_LIMIT_OUTPUT_BYTES_MAX /**< 1 MiB: all that a signed result carries */
#define LIMIT_ARTIFACT_BYTES 1073741824LL

/* @doc pretty-printed with a final newline, in a malloc'd string. */
static int dump_pretty(const json_t *doc, char **ret, size_t *ret_len)
{
    _cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(2));
    char *out = NULL;
    int n;

    if (!text)
        return -ENOMEM;
    n = asprintf(&out, "%s\n", text);
    if (n < 0)
        return -ENOMEM;
    *ret = out;
    *ret_len = (size_t)n;
    return 0;
}

/*
 * @prefix and then @name, cut to BCTL_DEVCERT_CN_MAX characters at a
 * character boundary: the CA's "berth dev CA <DIR's name>", a principal's
 * name.  Return: 0 or -ENOMEM.
 */
static int common_name(const char *prefix, const char *name, char **ret)
{
    size_t len = strlen(name), pos = 0, chars = strlen(prefix);
    uint32_t cp;

    while (pos < len && chars < BCTL_DEVCERT_CN_MAX) {
        size_t next = pos;
        if (berth_utf8_decode(name, len, &next, &cp) < 0)
            break;
        pos = next;
        chars++;
    }
    return asprintf(ret, "%s%.*s", prefix, (int)pos, streq(name, "") ? "/" : name) < 0 ? -ENOMEM : 0;
}

/* Store a PEM key of @key as file @idx (secret). */
static int plan_key_pem(struct plan *p, size_t idx, EVP_PKEY *key, struct berth_error *reterr)
{
    return bctl_devcert_key_pem(key, &p->files[idx].data, &p->files[idx].len, reterr);
}

/* Store the PEM of @cert as file @idx. */
static int plan_cert_pem(struct plan *p, size_t idx, X509 *cert, struct berth_error *reterr)
{
    return bctl_devcert_cert_pem(cert, &p->files[idx].data, &p->files[idx].len, reterr);
}

/*
 * The CA, the server certificate and one client certificate per principal,
 * each with its key; @fingerprints receives the clients' fingerprints.
 */
static int make_certificates(const struct devinit_opts *o, const struct target *t, int64_t now_ns, struct plan *p,
                             struct fingerprint *fingerprints, struct berth_error *reterr)
{
    _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = NULL, *server_key = NULL;
    _cleanup_(X509_freep) X509 *ca = NULL, *server = NULL;
    _cleanup_free_ char *cn = NULL;
    const struct bctl_cert_validity validity = {
        .not_before = now_ns / NS_PER_S - BACKDATE_S,
        .not_after = now_ns / NS_PER_S + VALIDITY_S,
    };
    size_t i;
    int r;

    if (common_name(CA_CN_PREFIX, t->base, &cn) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = bctl_devcert_key_new(&ca_key, reterr)) < 0 ||
        (r = bctl_devcert_ca_new(cn, ca_key, &validity, &ca, reterr)) < 0 ||
        (r = plan_cert_pem(p, F_CA_PEM, ca, reterr)) < 0 || (r = plan_key_pem(p, F_CA_KEY, ca_key, reterr)) < 0)
        return r;
    if ((r = bctl_devcert_key_new(&server_key, reterr)) < 0 ||
        (r = bctl_devcert_leaf_new(BCTL_LEAF_SERVER, NULL, server_key, ca, ca_key, &validity, &server, reterr)) < 0 ||
        (r = plan_cert_pem(p, F_SERVER_PEM, server, reterr)) < 0 ||
        (r = plan_key_pem(p, F_SERVER_KEY, server_key, reterr)) < 0)
        return r;
    for (i = 0; i < o->n_principals; i++) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;
        _cleanup_free_ char *client_cn = NULL;

        if (common_name("", o->principals[i], &client_cn) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        if ((r = bctl_devcert_key_new(&key, reterr)) < 0 ||
            (r = bctl_devcert_leaf_new(BCTL_LEAF_CLIENT, client_cn, key, ca, ca_key, &validity, &cert, reterr)) < 0 ||
            (r = plan_cert_pem(p, F_CLIENT_PEM(i), cert, reterr)) < 0 ||
            (r = plan_key_pem(p, F_CLIENT_KEY(i), key, reterr)) < 0 ||
            (r = bctl_devcert_fingerprint(cert, fingerprints[i].hex, reterr)) < 0)
            return r;
    }
    return 0;
}

/* Whether the plugin directory holds @plugin.so, a regular file. */
static bool plugin_present(const struct devinit_opts *o, const char *plugin)
{
    _cleanup_free_ char *path = NULL;
    struct stat st;

    if (asprintf(&path, "%s/%s.so", o->plugin_dir ? o->plugin_dir : BERTH_PLUGINDIR, plugin) < 0)
        return false;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool devinit_image_plugin_present(const struct devinit_opts *o)
{
    return !o->no_image_source && plugin_present(o, IMAGE_PLUGIN);
}

bool devinit_evidence_plugin_present(const struct devinit_opts *o)
{
    return !o->no_evidence_store && plugin_present(o, EVIDENCE_PLUGIN);
}

/*
 * berthd.json, with the library's writer: berthd's defaults for everything
 * this installation does not set.  A --backend needs no qualification; a
 * --runtime gets its state directory runtime/NAME and is qualified at
 * startup.  Return: 0, -ENOMEM (and -EINVAL from the writer for a bug here).
 */
static int berthd_document(const struct devinit_opts *o, const struct plan *p, const char *dir, const char *pub_b64,
                           json_t **ret, struct berth_error *reterr)
{
    _cleanup_free_ char *state = devinit_path_join(dir, devinit_subdir_names[SUB_STATE]),
                        *pools = devinit_path_join(dir, devinit_subdir_names[SUB_POOLS]),
                        *store = devinit_path_join(dir, devinit_subdir_names[SUB_IMAGES]);
    /* Holds what c.backends[].config and c.images.config point at. */
    _cleanup_json_ json_t *configs = json_array(), *empty = json_object();
    struct berthd_config c;
    size_t i;

    if (!state || !pools || !store || !configs || !empty)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    berthd_config_defaults(&c);
    c.broker_name = o->broker_name;
    c.address = LISTEN_ADDRESS;
    c.port = (int)o->port;
    c.certificate = p->files[F_SERVER_PEM].path;
    c.private_key = p->files[F_SERVER_KEY].path;
    c.client_ca = p->files[F_CA_PEM].path;
    c.receipt_key = p->files[F_RECEIPT_KEY].path;
    c.audit_key = p->files[F_AUDIT_KEY].path;
    c.policy = p->files[F_POLICY].path;
    c.state_directory = state;
    c.pools_directory = pools;
    c.plugin_directory = o->plugin_dir;
    for (i = 0; i < o->n_backends; i++) {
        const struct backend_opt *b = &o->backends[i];
        struct berthd_backend_config *bc = &c.backends[c.n_backends++];

        bc->name = b->name;
        bc->plugin = b->plugin;
        if (b->runtime_path) {
            /* A pinned runtime can be qualified: berthd holds it to that. */
            _cleanup_free_ char *runtime_state = NULL;
            json_t *config = json_copy(b->config);
            if (json_array_append_new(configs, config) < 0 ||
                asprintf(&runtime_state, "%s/%s/%s", dir, devinit_subdir_names[SUB_RUNTIME], b->name) < 0) {
                runtime_state = NULL;
                return berth_error_set(reterr, -ENOMEM, "out of memory");
            }
            /* runtime-oci's shim verifies each receipt with berthd's key before it creates anything. */
            if (json_object_set_new(config, "state_directory", json_string(runtime_state)) < 0 ||
                json_object_set_new(config, "broker_public_key", json_string(pub_b64)) < 0)
                return berth_error_set(reterr, -ENOMEM, "out of memory");
            bc->config = config;
            bc->require_qualification = bc->qualify_at_startup = true;
        } else {
            bc->config = b->config ? b->config : empty;
            bc->require_qualification = false;
        }
    }
    if (devinit_image_plugin_present(o)) {
        json_t *config = json_pack("{s:s}", "store", store);
        if (json_array_append_new(configs, config) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        c.images.plugin = IMAGE_PLUGIN;
        c.images.config = config;
        c.has_images = true;
    }
    if (devinit_evidence_plugin_present(o)) {
        /* The plugin creates its directory (0700) at berthd's first start. */
        _cleanup_free_ char *evidence = devinit_path_join(state, EVIDENCE_SUBDIR);
        json_t *config = evidence ? json_pack("{s:s}", "directory", evidence) : NULL;
        if (json_array_append_new(configs, config) < 0)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        c.evidence.plugin = EVIDENCE_PLUGIN;
        c.evidence.config = config;
        c.has_evidence = true;
    }
    return berthd_config_to_json(&c, ret, reterr);
}

/* client.json for the first principal. */
static json_t *client_config(const struct devinit_opts *o, const struct plan *p, const char *pub_b64)
{
    _cleanup_free_ char *url = NULL;

    if (asprintf(&url, "https://%s:%u", LISTEN_ADDRESS, o->port) < 0)
        return NULL;
    return json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}", "schema_version", 1, "url", url, "broker_public_key", pub_b64,
                     "certificate", p->files[F_CLIENT_PEM(0)].path, "private_key", p->files[F_CLIENT_KEY(0)].path, "ca",
                     p->files[F_CA_PEM].path);
}

/* policy.json: one subject per principal, valid over [@not_before, @not_after]. */
static json_t *host_policy(const struct devinit_opts *o, const struct fingerprint *fingerprints, int64_t not_before,
                           int64_t not_after)
{
    _cleanup_json_ json_t *doc = NULL, *subjects = json_array(), *images = json_array(), *limits = NULL,
                          *nb = berth_json_ns(not_before), *na = berth_json_ns(not_after);
    size_t i;

    if (!subjects || !images || !nb || !na)
        return NULL;
    for (i = 0; i < o->n_images; i++)
        if (json_array_append_new(images, json_string(o->images[i])) < 0)
            return NULL;
    limits = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "cpu_millis", (json_int_t)LIMIT_CPU_MILLIS,
                       "memory_bytes", (json_int_t)LIMIT_MEMORY_BYTES, "pids", (json_int_t)LIMIT_PIDS, "scratch_bytes",
                       (json_int_t)LIMIT_SCRATCH_BYTES, "wall_time_ns", (json_int_t)LIMIT_WALL_TIME_NS, "output_bytes",
                       (json_int_t)LIMIT_OUTPUT_BYTES, "artifact_bytes", (json_int_t)LIMIT_ARTIFACT_BYTES);
    if (!limits)
        return NULL;
    for (i = 0; i < o->n_principals; i++) {
        json_t *s = json_pack("{s:s, s:[s], s:[s], s:[s], s:O, s:O, s:O, s:O}", "principal", o->principals[i], "scope",
                              SCOPE, "fingerprints", fingerprints[i].hex, "pools", POOL_NAME, "images", images,
                              "limits", limits, "not_before", nb, "not_after", na);
        if (!s || json_array_append_new(subjects, s) < 0)
            return NULL;
        if (i == 0 && json_object_set_new(s, "admin", json_true()) < 0)
            return NULL;
    }
    doc =
        json_pack("{s:i, s:O, s:O, s:O}", "schema_version", 1, "not_before", nb, "not_after", na, "subjects", subjects);
    return TAKE_PTR(doc);
}

/* pools/default.json: conf/pools/default.json with the backends of this installation. */
static json_t *pool_manifest(const struct devinit_opts *o)
{
    _cleanup_json_ json_t *allow = json_array();
    size_t i;

    if (!allow)
        return NULL;
    for (i = 0; i < o->n_backends; i++)
        if (json_array_append_new(allow, json_string(o->backends[i].name)) < 0)
            return NULL;
    if (o->n_backends == 0 && json_array_append_new(allow, json_string(DEFAULT_BACKEND)) < 0)
        return NULL;
    return json_pack("{s:i, s:s, s:O, s:{s:s, s:{s:s, s:s}, s:i}, s:[s, s], s:i, s:[s, s], s:s, s:[]}",
                     "schema_version", 1, "name", POOL_NAME, "backend_allowlist", allow, "template", "root",
                     "/workspace", "env", "LANG", "C.UTF-8", "TZ", "UTC", "timeout_seconds", 600, "exposed_fields",
                     "env", "timeout_seconds", "max_concurrency", 16, "capability_ceiling", "exec", "file_rw",
                     "network_egress_class", "none", "credential_env_allowlist");
}

/*
 * Check the generated documents with the parsers that will read them:
 * berthd.json with berthd's, client.json as strict JSON within berthctl's
 * bound for it, the host policy and the pool.
 */
static int self_check(const struct plan *p, struct berth_error *reterr)
{
    const struct plan_file *berthd = &p->files[F_BERTHD], *client = &p->files[F_CLIENT];
    _cleanup_json_ json_t *client_doc = NULL;
    struct berthd_config config;
    struct berth_policy *policy = NULL;
    struct berth_pool *pool = NULL;
    int r;

    r = berthd_config_parse(berthd->data, berthd->len, BERTH_PLUGINDIR, &config, reterr);
    berthd_config_clear(&config);
    if (r < 0) {
        berth_error_prefix(reterr, "%s would not be valid", berthd->rel);
        return r;
    }
    if ((r = berth_json_parse(client->data, client->len, BERTH_HTTPS_CONFIG_MAX, &client_doc, reterr)) < 0) {
        berth_error_prefix(reterr, "%s would not be valid", client->rel);
        return r;
    }
    r = berth_policy_parse(p->files[F_POLICY].data, p->files[F_POLICY].len, &policy, reterr);
    berth_policy_free(policy);
    if (r < 0) {
        berth_error_prefix(reterr, "%s would not be valid", p->files[F_POLICY].rel);
        return r;
    }
    r = berth_pool_parse(p->files[F_POOL].data, p->files[F_POOL].len, &pool, reterr);
    berth_pool_free(pool);
    if (r < 0) {
        berth_error_prefix(reterr, "%s would not be valid", p->files[F_POOL].rel);
        return r;
    }
    return 0;
}

int devinit_generate(const struct devinit_opts *o, const struct target *t, struct plan *p,
                     struct fingerprint *fingerprints, struct berth_error *reterr)
{
    _cleanup_json_ json_t *berthd = NULL, *client = NULL, *policy = NULL, *pool = NULL;
    char pub_b64[BERTH_PUBLIC_KEY_B64_LEN + 1];
    int64_t now_ns = bctl_now_ns();
    int r;

    if (now_ns < 0)
        return berth_error_set(reterr, (int)now_ns, "cannot read the clock");
    if ((r = make_certificates(o, t, now_ns, p, fingerprints, reterr)) < 0)
        return r;
    if ((r = berth_signing_key_generate(&p->receipt, reterr)) < 0 ||
        (r = berth_public_key_to_pem(berth_signing_key_public(p->receipt), &p->files[F_RECEIPT_PUB].data,
                                     &p->files[F_RECEIPT_PUB].len, reterr)) < 0)
        return r;
    if ((r = berth_public_key_to_b64url(berth_signing_key_public(p->receipt), pub_b64)) < 0)
        return berth_error_set(reterr, r, "encoding the receipt public key failed");

    if ((r = berthd_document(o, p, t->dir, pub_b64, &berthd, reterr)) < 0)
        return r;
    client = client_config(o, p, pub_b64);
    policy = host_policy(o, fingerprints, now_ns - (int64_t)BACKDATE_S * NS_PER_S, now_ns + VALIDITY_S * NS_PER_S);
    pool = pool_manifest(o);
    if (!client || !policy || !pool || dump_pretty(berthd, &p->files[F_BERTHD].data, &p->files[F_BERTHD].len) < 0 ||
        dump_pretty(client, &p->files[F_CLIENT].data, &p->files[F_CLIENT].len) < 0 ||
        dump_pretty(policy, &p->files[F_POLICY].data, &p->files[F_POLICY].len) < 0 ||
        dump_pretty(pool, &p->files[F_POOL].data, &p->files[F_POOL].len) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return self_check(p, reterr);
}
