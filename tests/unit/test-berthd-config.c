/* SPDX-License-Identifier: MIT */
/* test-berthd-config.c -- berthd.json, parsed and written (berthd-config.h). */
#include "testutil.h"

#include "berthd-config.h"
#include "canon.h"
#include "jsonobj.h"
#include "macro.h"

#define PLUGINDIR "/usr/lib/berth/plugins"
#define SHA_A "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* The required members, then @extra (", ..." or ""). */
#define DOC(extra)                                                                                                     \
    "{\"schema_version\":1,\"broker_name\":\"dev\",\"listen\":{\"address\":\"127.0.0.1\",\"port\":8443},"              \
    "\"tls\":{\"certificate\":\"/i/tls/server.pem\",\"private_key\":\"/i/tls/server.key\","                            \
    "\"client_ca\":\"/i/tls/ca.pem\"},\"receipt_key\":\"/i/keys/receipt.key\",\"audit_key\":\"/i/keys/audit.key\","    \
    "\"policy\":\"/i/policy.json\",\"state_directory\":\"/i/state\"" extra "}"

static void parse_ok(const char *doc, struct berthd_config *c)
{
    struct berth_error err = BERTH_ERROR_INIT;

    ck_assert_msg(berthd_config_parse(doc, strlen(doc), PLUGINDIR, c, &err) == 0, "%s: %s", doc, err.message);
}

static void refused(const char *doc, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berthd_config c;

    ck_assert_msg(berthd_config_parse(doc, strlen(doc), PLUGINDIR, &c, &err) == -EBADMSG, "accepted: %s", doc);
    ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
    ck_assert_ptr_null(c.doc);
}

/*
 * @c written, and parsed back in the order written (as dev-init's file has
 * it); the canonical text of the written document in *@ret_text.
 */
static void round_trip(const struct berthd_config *c, struct berthd_config *back, char **ret_text)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *written = NULL;
    size_t len = 0;

    ck_assert_msg(berthd_config_to_json(c, &doc, &err) == 0, "%s", err.message);
    ck_assert_ptr_nonnull(written = json_dumps(doc, JSON_INDENT(2)));
    parse_ok(written, back);
    ck_assert_int_eq(berth_json_serialize(doc, 0, ret_text, &len, &err), 0);
}

/* The integer settings of @a and @b are the same. */
static void same_settings(const struct berthd_config *a, const struct berthd_config *b)
{
    ck_assert_int_eq(a->max_active_jobs, b->max_active_jobs);
    ck_assert_int_eq(a->max_retained_jobs, b->max_retained_jobs);
    ck_assert_int_eq(a->max_connections, b->max_connections);
    ck_assert_int_eq(a->max_header_bytes, b->max_header_bytes);
    ck_assert_int_eq(a->max_body_bytes, b->max_body_bytes);
    ck_assert_int_eq(a->header_timeout_ns, b->header_timeout_ns);
    ck_assert_int_eq(a->request_timeout_ns, b->request_timeout_ns);
    ck_assert_int_eq(a->idle_timeout_ns, b->idle_timeout_ns);
    ck_assert_int_eq(a->shutdown_timeout_ns, b->shutdown_timeout_ns);
    ck_assert_int_eq(a->reconcile_interval_ns, b->reconcile_interval_ns);
    ck_assert_int_eq(a->containment_scan_interval_ns, b->containment_scan_interval_ns);
    ck_assert_int_eq(a->max_header_fields, b->max_header_fields);
    ck_assert_int_eq(a->max_unauthenticated, b->max_unauthenticated);
    ck_assert_int_eq(a->max_per_source, b->max_per_source);
    ck_assert_int_eq(a->max_per_principal, b->max_per_principal);
    ck_assert_int_eq(a->handshake_timeout_ns, b->handshake_timeout_ns);
    ck_assert_int_eq(a->inactivity_timeout_ns, b->inactivity_timeout_ns);
    ck_assert_int_eq(a->refusal_log_interval_ns, b->refusal_log_interval_ns);
    ck_assert_int_eq(a->jobs_ns, b->jobs_ns);
    ck_assert_int_eq(a->outputs_ns, b->outputs_ns);
}

START_TEST(defaults)
{
    struct berthd_config c, d;

    parse_ok(DOC(""), &c);
    berthd_config_defaults(&d);
    same_settings(&c, &d);
    ck_assert_int_eq(d.max_active_jobs, 16);
    ck_assert_int_eq(d.max_retained_jobs, 10000);
    ck_assert_int_eq(d.max_connections, 64);
    ck_assert_int_eq(d.max_body_bytes, 1536 * 1024 + 64 * 1024);
    ck_assert_int_eq(d.reconcile_interval_ns, 250000000);
    ck_assert_int_eq(d.containment_scan_interval_ns, 60000000000);
    ck_assert_int_eq(d.handshake_timeout_ns, 2000000000);
    ck_assert_int_eq(d.header_timeout_ns, 5000000000);
    ck_assert_int_eq(d.inactivity_timeout_ns, 5000000000);
    ck_assert_int_eq(d.max_unauthenticated, 16);
    ck_assert_int_eq(d.max_per_source, 8);
    ck_assert_int_eq(d.max_per_principal, 32);
    ck_assert_int_eq(d.max_header_fields, 64);
    ck_assert_int_eq(d.refusal_log_interval_ns, 10000000000);
    ck_assert_int_eq(d.jobs_ns, 7LL * 86400 * 1000000000);
    ck_assert_int_eq(d.outputs_ns, 7LL * 86400 * 1000000000);
    ck_assert_str_eq(c.plugin_directory, PLUGINDIR);
    ck_assert_ptr_null(c.pools_directory);
    ck_assert_ptr_null(d.plugin_directory);
    ck_assert_ptr_null(d.broker_name);
    ck_assert_uint_eq(c.n_backends, 0);
    ck_assert(!c.has_images);
    berthd_config_clear(&c);
    ck_assert_ptr_null(c.doc);
    berthd_config_clear(NULL);
}
END_TEST

/* retention: both members in ns; the bounds are 1 s and 100 days. */
START_TEST(retention)
{
    struct berthd_config c;

    parse_ok(DOC(",\"retention\":{\"jobs_ns\":1000000000,\"outputs_ns\":8640000000000000}"), &c);
    ck_assert_int_eq(c.jobs_ns, 1000000000);
    ck_assert_int_eq(c.outputs_ns, 8640000000000000LL);
    berthd_config_clear(&c);
    parse_ok(DOC(",\"retention\":{}"), &c);
    ck_assert_int_eq(c.jobs_ns, 7LL * 86400 * 1000000000);
    berthd_config_clear(&c);
    refused(DOC(",\"retention\":{\"jobs_ns\":2000000000,\"jobs_ns\":3000000000}"), "jobs_ns");
}
END_TEST

/* The unauthenticated share is never more than half the slots. */
START_TEST(unauthenticated_share)
{
    struct berthd_config c;

    berthd_config_defaults(&c);
    ck_assert_int_eq(berthd_config_unauthenticated_share(&c), 16);
    c.max_connections = 8;
    ck_assert_int_eq(berthd_config_unauthenticated_share(&c), 4);
    c.max_connections = 1;
    ck_assert_int_eq(berthd_config_unauthenticated_share(&c), 1);
    c.max_connections = 4096;
    c.max_unauthenticated = 100;
    ck_assert_int_eq(berthd_config_unauthenticated_share(&c), 100);
    refused(DOC(",\"http\":{\"handshake_timeout_ns\":1}"), "config.http.handshake_timeout_ns is 1, outside");
    refused(DOC(",\"http\":{\"max_header_fields\":1000}"), "config.http.max_header_fields is 1000, outside 8..256");
    refused(DOC(",\"http\":{\"max_per_source\":0}"), "config.http.max_per_source is 0, outside 1..4096");
}
END_TEST

START_TEST(refusals)
{
    refused(DOC(",\"debug\":true"), "config: unknown member \"debug\"");
    refused(DOC(",\"retention\":{\"evidence_ns\":1000000000}"), "config.retention: unknown member \"evidence_ns\"");
    refused(DOC(",\"retention\":{\"jobs_ns\":999999999}"), "config.retention.jobs_ns is 999999999, outside");
    refused(DOC(",\"retention\":{\"outputs_ns\":8640000000000001}"), "config.retention.outputs_ns is 8640000000000001, outside");
    refused(DOC(",\"retention\":{\"jobs_ns\":\"7d\"}"), "config.retention.jobs_ns");
    refused(DOC(",\"retention\":[]"), "config.retention");
    refused(DOC(",\"backends\":{\"Runsc\":{\"plugin\":\"runtime-oci\"}}"),
            "config.backends: a backend name must be 1 to 63 of [a-z0-9._-], starting with a letter or digit");
    refused(DOC(",\"backends\":{\".x\":{\"plugin\":\"runtime-oci\"}}"), "a backend name must be");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime_oci\"}}"),
            "config.backends.runsc.plugin must be a plugin name such as runtime-oci (1 to 63 of [a-z0-9-], starting "
            "with a letter or digit)");
    refused(DOC(",\"images\":{\"plugin\":\"-x\"}"),
            "config.images.plugin must be a plugin name such as image-oci-local");
    refused(DOC(",\"images\":{\"plugin\":\"image-oci-local\",\"require_qualification\":true}"),
            "config.images: unknown member \"require_qualification\"");
    refused(DOC(",\"journal\":{\"max_active_jobs\":0}"), "config.journal.max_active_jobs is 0, outside 1..1000000");
    refused(DOC(",\"http\":{\"max_connections\":5000}"), "config.http.max_connections is 5000, outside 1..4096");
    refused(DOC(",\"reconcile_interval_ns\":1"), "config.reconcile_interval_ns is 1, outside");
    refused(DOC(",\"containment_scan_interval_ns\":999999999"),
            "config.containment_scan_interval_ns is 999999999, outside 1000000000..3600000000000");
    refused(DOC(",\"http\":{\"header_timeout_ns\":60000000000,\"request_timeout_ns\":10000000000}"),
            "config.http.request_timeout_ns must not be below header_timeout_ns");
    refused(DOC(",\"journal\":{\"max_active_jobs\":20000}"),
            "config.journal.max_retained_jobs (10000, the default) must not be below max_active_jobs (20000)");
    refused(DOC(",\"pools_directory\":\"pools\""), "config.pools_directory must be an absolute path");
    {
        /* The broker name rule, at its bound. */
        char doc[4096];
        snprintf(doc, sizeof(doc), "%s", DOC(""));
        memcpy(strstr(doc, "\"dev\""), "\"d@v\"", 5);
        refused(doc, "config.broker_name must be 1 to 64 of [A-Za-z0-9._-]");
    }
}
END_TEST

/* The configuration dev-init writes: defaults everywhere, a --backend and a --runtime, an image source. */
static void devinit_like(struct berthd_config *c, json_t *empty, json_t *runtime_config, json_t *store)
{
    berthd_config_defaults(c);
    c->broker_name = "dev";
    c->address = "127.0.0.1";
    c->port = 9443;
    c->certificate = "/i/tls/server.pem";
    c->private_key = "/i/tls/server.key";
    c->client_ca = "/i/tls/ca.pem";
    c->receipt_key = "/i/keys/receipt.key";
    c->audit_key = "/i/keys/audit.key";
    c->policy = "/i/policy.json";
    c->state_directory = "/i/state";
    c->pools_directory = "/i/pools";
    c->backends[0] = (struct berthd_backend_config){.name = "script", .plugin = "runtime-script", .config = empty};
    c->backends[1] = (struct berthd_backend_config){
        .name = "runsc",
        .plugin = "runtime-oci",
        .config = runtime_config,
        .require_qualification = true,
        .qualify_at_startup = true,
    };
    c->n_backends = 2;
    c->images = (struct berthd_backend_config){.plugin = "image-oci-local", .sha256 = SHA_A, .config = store};
    c->has_images = true;
}

START_TEST(write_defaults)
{
    _cleanup_json_ json_t *empty = json_object(), *rc = json_pack("{s:s}", "isolation", "gvisor"),
                          *store = json_pack("{s:s}", "store", "/i/images");
    _cleanup_free_ char *text = NULL;
    struct berthd_config c, back;

    devinit_like(&c, empty, rc, store);
    round_trip(&c, &back, &text);
    /* Exactly what dev-init writes: no journal, http or reconcile member, and berthd's defaults. */
    ck_assert_str_eq(
        text, "{\"audit_key\":\"/i/keys/audit.key\",\"backends\":{\"runsc\":{\"config\":{\"isolation\":"
              "\"gvisor\"},\"plugin\":\"runtime-oci\",\"qualify_at_startup\":true,\"require_qualification\":"
              "true},\"script\":{\"config\":{},\"plugin\":\"runtime-script\",\"require_qualification\":false}},"
              "\"broker_name\":\"dev\",\"images\":{\"config\":{\"store\":\"/i/images\"},\"plugin\":"
              "\"image-oci-local\",\"sha256\":\"" SHA_A "\"},\"listen\":{\"address\":\"127.0.0.1\",\"port\":9443},"
              "\"policy\":\"/i/policy.json\",\"pools_directory\":\"/i/pools\",\"receipt_key\":\"/i/keys/"
              "receipt.key\",\"schema_version\":1,\"state_directory\":\"/i/state\",\"tls\":{\"certificate\":"
              "\"/i/tls/server.pem\",\"client_ca\":\"/i/tls/ca.pem\",\"private_key\":\"/i/tls/server.key\"}}");
    same_settings(&c, &back);
    ck_assert_str_eq(back.plugin_directory, PLUGINDIR);
    ck_assert_uint_eq(back.n_backends, 2);
    ck_assert_str_eq(back.backends[0].name, "script");
    ck_assert(!back.backends[0].require_qualification);
    ck_assert(!back.backends[0].qualify_at_startup);
    ck_assert_str_eq(back.backends[1].name, "runsc");
    ck_assert(back.backends[1].require_qualification);
    ck_assert(back.backends[1].qualify_at_startup);
    ck_assert(json_equal((json_t *)back.backends[1].config, rc));
    ck_assert(back.has_images);
    ck_assert_str_eq(back.images.sha256, SHA_A);
    berthd_config_clear(&back);
}
END_TEST

START_TEST(write_settings)
{
    _cleanup_json_ json_t *empty = json_object(), *rc = json_object(), *store = json_object(), *doc = NULL;
    _cleanup_free_ char *text = NULL;
    struct berthd_config c, back;

    devinit_like(&c, empty, rc, store);
    c.n_backends = 0;
    c.has_images = false;
    c.pools_directory = NULL;
    c.plugin_directory = "/opt/plugins";
    c.probe = "/opt/berth-probe";
    c.max_active_jobs = 20;
    c.max_connections = 10;
    c.shutdown_timeout_ns = 0;
    c.reconcile_interval_ns = 1000000000;
    c.containment_scan_interval_ns = 5000000000;
    c.jobs_ns = 2000000000;
    round_trip(&c, &back, &text);
    /* Only what differs from the defaults; "backends" even when empty. */
    ck_assert_msg(strstr(text, "\"backends\":{},"), "%s", text);
    ck_assert_msg(strstr(text, "\"containment_scan_interval_ns\":5000000000,"), "%s", text);
    ck_assert_msg(strstr(text, "\"http\":{\"max_connections\":10,\"shutdown_timeout_ns\":0},"), "%s", text);
    ck_assert_msg(strstr(text, "\"journal\":{\"max_active_jobs\":20},"), "%s", text);
    ck_assert_msg(strstr(text, "\"retention\":{\"jobs_ns\":2000000000},"), "%s", text);
    ck_assert_msg(strstr(text, "\"plugin_directory\":\"/opt/plugins\",\"policy\":\"/i/policy.json\","
                               "\"probe\":\"/opt/berth-probe\",\"receipt_key\":\"/i/keys/receipt.key\","
                               "\"reconcile_interval_ns\":1000000000,"),
                  "%s", text);
    ck_assert_msg(!strstr(text, "pools_directory") && !strstr(text, "images"), "%s", text);
    same_settings(&c, &back);
    ck_assert_str_eq(back.plugin_directory, "/opt/plugins");
    ck_assert_str_eq(back.probe, "/opt/berth-probe");
    berthd_config_clear(&back);

    /* What cannot be written. */
    c.broker_name = NULL;
    ck_assert_int_eq(berthd_config_to_json(&c, &doc, NULL), -EINVAL);
    c.broker_name = "dev";
    c.n_backends = BERTH_BERTHD_BACKENDS_MAX + 1;
    ck_assert_int_eq(berthd_config_to_json(&c, &doc, NULL), -EINVAL);
    c.backends[0] = (struct berthd_backend_config){.name = "a", .plugin = "p"};
    c.backends[1] = (struct berthd_backend_config){.name = "a", .plugin = "q"};
    c.n_backends = 2;
    ck_assert_int_eq(berthd_config_to_json(&c, &doc, NULL), -EINVAL); /* the same name twice */
    c.n_backends = 1;
    c.has_images = true;
    c.images.plugin = NULL;
    ck_assert_int_eq(berthd_config_to_json(&c, &doc, NULL), -EINVAL);
    ck_assert_int_eq(berthd_config_to_json(NULL, &doc, NULL), -EINVAL);
    ck_assert_int_eq(berthd_config_to_json(&c, NULL, NULL), -EINVAL);
    ck_assert_ptr_null(doc);
}
END_TEST

/* "evidence": parsed like "images", with max_object_bytes read from its config. */
START_TEST(evidence)
{
    _cleanup_json_ json_t *empty = json_object(), *rc = json_object(), *store = json_object(), *doc = NULL,
                          *ev = json_pack("{s:s, s:I}", "directory", "/i/state/evidence", "max_object_bytes",
                                          (json_int_t)1048576);
    _cleanup_free_ char *text = NULL;
    struct berthd_config c, back;

    parse_ok(DOC(""), &c);
    ck_assert(!c.has_evidence);
    ck_assert_int_eq(c.evidence_max_object_bytes, 64 * 1024 * 1024);
    berthd_config_clear(&c);
    parse_ok(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":{\"directory\":\"/i/e\"}}"), &c);
    ck_assert(c.has_evidence);
    ck_assert_str_eq(c.evidence.name, "evidence");
    ck_assert_str_eq(c.evidence.plugin, "evidence-sqlite");
    ck_assert_ptr_null(c.evidence.sha256);
    ck_assert_str_eq(json_string_value(json_object_get(c.evidence.config, "directory")), "/i/e");
    ck_assert_int_eq(c.evidence_max_object_bytes, BERTH_EVIDENCE_MAX_OBJECT_DEFAULT);
    berthd_config_clear(&c);
    parse_ok(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":{\"max_object_bytes\":1073741824}}"),
             &c);
    ck_assert_int_eq(c.evidence_max_object_bytes, 1073741824);
    berthd_config_clear(&c);

    refused(DOC(",\"evidence\":{\"plugin\":\"Evidence\"}"),
            "config.evidence.plugin must be a plugin name such as evidence-sqlite");
    refused(DOC(",\"evidence\":{}"), "config.evidence");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"qualify_at_startup\":true}"),
            "config.evidence: unknown member \"qualify_at_startup\"");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":[]}"),
            "config.evidence.config must be an object");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":{\"max_object_bytes\":1073741825}}"),
            "config.evidence.config.max_object_bytes is 1073741825, outside 1..1073741824");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":{\"max_object_bytes\":0}}"),
            "config.evidence.config.max_object_bytes is 0, outside");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"config\":{\"max_object_bytes\":\"64\"}}"),
            "config.evidence.config.max_object_bytes");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\"},\"evidence\":{\"plugin\":\"evidence-sqlite\"}"),
            "duplicate");

    /* Written as dev-init writes it, and read back. */
    devinit_like(&c, empty, rc, store);
    c.evidence = (struct berthd_backend_config){.plugin = "evidence-sqlite", .sha256 = SHA_A, .config = ev};
    c.has_evidence = true;
    round_trip(&c, &back, &text);
    ck_assert_msg(strstr(text, "\"evidence\":{\"config\":{\"directory\":\"/i/state/evidence\",\"max_object_bytes\":"
                               "1048576},\"plugin\":\"evidence-sqlite\",\"sha256\":\"" SHA_A "\"},"),
                  "%s", text);
    ck_assert(back.has_evidence);
    ck_assert_str_eq(back.evidence.plugin, "evidence-sqlite");
    ck_assert_str_eq(back.evidence.sha256, SHA_A);
    ck_assert_int_eq(back.evidence_max_object_bytes, 1048576);
    ck_assert(json_equal((json_t *)back.evidence.config, ev));
    berthd_config_clear(&back);
    c.evidence.plugin = NULL;
    ck_assert_int_eq(berthd_config_to_json(&c, &doc, NULL), -EINVAL);
    ck_assert_ptr_null(doc);
}
END_TEST

/* A runtime backend's containment: parsed, refused when malformed, written back. */
START_TEST(containment)
{
    struct berthd_config c, back;
    _cleanup_free_ char *text = NULL;
    const json_t *cc;

    parse_ok(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{\"plugin\":"
                 "\"containment-systemd\",\"sha256\":\"" SHA_A "\",\"config\":{\"drain_timeout_ns\":5}}},"
                 "\"plain\":{\"plugin\":\"runtime-oci\"}}"),
             &c);
    ck_assert_uint_eq(c.n_backends, 2);
    ck_assert_str_eq(c.backends[0].containment.plugin, "containment-systemd");
    ck_assert_str_eq(c.backends[0].containment.sha256, SHA_A);
    ck_assert_ptr_nonnull(cc = c.backends[0].containment.config);
    ck_assert_int_eq(json_integer_value(json_object_get(cc, "drain_timeout_ns")), 5);
    ck_assert_ptr_null(c.backends[1].containment.plugin);
    ck_assert_ptr_null(c.backends[1].containment.sha256);
    ck_assert_ptr_null(c.backends[1].containment.config);
    round_trip(&c, &back, &text);
    ck_assert_str_eq(back.backends[0].containment.plugin, "containment-systemd");
    ck_assert_str_eq(back.backends[0].containment.sha256, SHA_A);
    ck_assert_ptr_null(back.backends[1].containment.plugin);
    ck_assert_msg(strstr(text, "\"containment\":{\"config\":{\"drain_timeout_ns\":5},\"plugin\":"
                               "\"containment-systemd\",\"sha256\":\"" SHA_A "\"}"),
                  "%s", text);
    berthd_config_clear(&back);
    berthd_config_clear(&c);

    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":\"systemd\"}}"),
            "config.backends.runsc.containment must be an object such as {\"plugin\": \"containment-systemd\"}");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{}}}"),
            "config.backends.runsc.containment.plugin is missing");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{\"plugin\":\"Systemd\"}}}"),
            "config.backends.runsc.containment.plugin must be a plugin name such as containment-systemd");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{\"plugin\":"
                "\"containment-systemd\",\"sha256\":\"sha256:AA\"}}}"),
            "config.backends.runsc.containment.sha256 must be sha256:<64 lowercase hex>");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{\"plugin\":"
                "\"containment-systemd\",\"config\":[]}}}"),
            "config.backends.runsc.containment.config must be an object");
    refused(DOC(",\"backends\":{\"runsc\":{\"plugin\":\"runtime-oci\",\"containment\":{\"plugin\":"
                "\"containment-systemd\",\"require_qualification\":true}}}"),
            "config.backends.runsc.containment: unknown member \"require_qualification\"");
    /* Only runtime backends have one. */
    refused(DOC(",\"images\":{\"plugin\":\"image-oci-local\",\"containment\":{\"plugin\":\"containment-systemd\"}}"),
            "config.images: unknown member \"containment\"");
    refused(DOC(",\"evidence\":{\"plugin\":\"evidence-sqlite\",\"containment\":{\"plugin\":\"containment-systemd\"}}"),
            "config.evidence: unknown member \"containment\"");
}
END_TEST

/* workers: the lease term (1 s to 1 h), whether they must be qualified; the name is reserved. */
START_TEST(workers)
{
    _cleanup_json_ json_t *empty = json_object(), *rc = json_object(), *store = json_object();
    _cleanup_free_ char *text = NULL;
    struct berthd_config c, back;

    parse_ok(DOC(""), &c);
    ck_assert_int_eq(c.lease_ns, 30000000000LL);
    ck_assert(c.workers_require_qualification);
    berthd_config_clear(&c);
    parse_ok(DOC(",\"workers\":{\"lease_ns\":1000000000,\"require_qualification\":false}"), &c);
    ck_assert_int_eq(c.lease_ns, 1000000000);
    ck_assert(!c.workers_require_qualification);
    berthd_config_clear(&c);
    refused(DOC(",\"workers\":{\"lease_ns\":999999999}"), "config.workers.lease_ns is 999999999, outside");
    refused(DOC(",\"workers\":{\"lease_ns\":3600000000001}"), "config.workers.lease_ns");
    refused(DOC(",\"workers\":{\"require_qualification\":\"no\"}"),
            "config.workers.require_qualification must be true or false");
    refused(DOC(",\"workers\":{\"labels\":[]}"), "config.workers: unknown member \"labels\"");
    refused(DOC(",\"backends\":{\"workers\":{\"plugin\":\"runtime-oci\"}}"),
            "\"workers\" is the remote workers' name; configure them in config.workers");
    /* Written only when not the defaults, and read back the same. */
    devinit_like(&c, empty, rc, store);
    c.lease_ns = 5000000000LL;
    c.workers_require_qualification = false;
    round_trip(&c, &back, &text);
    ck_assert_msg(strstr(text, "\"workers\":{\"lease_ns\":5000000000,\"require_qualification\":false}"), "%s", text);
    ck_assert_int_eq(back.lease_ns, 5000000000LL);
    ck_assert(!back.workers_require_qualification);
    berthd_config_clear(&back);
    free(text);
    text = NULL;
    c.lease_ns = 30000000000LL;
    c.workers_require_qualification = true;
    round_trip(&c, &back, &text);
    ck_assert_msg(!strstr(text, "workers"), "%s", text);
    berthd_config_clear(&back);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("berthd-config");
    TCase *tc = test_case(s, "berthd-config");

    tcase_add_test(tc, defaults);
    tcase_add_test(tc, workers);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, unauthenticated_share);
    tcase_add_test(tc, write_defaults);
    tcase_add_test(tc, write_settings);
    tcase_add_test(tc, evidence);
    tcase_add_test(tc, retention);
    tcase_add_test(tc, containment);
    return s;
}

TEST_MAIN()
