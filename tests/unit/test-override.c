/* SPDX-License-Identifier: MIT */
/* test-override.c -- governed overrides: every refusal reason, the merge, the hashes (override.h). */
#include "pooltest.h"

#include "canon.h"
#include "jsonobj.h"
#include "override.h"

static struct berth_pool *pool, *narrow;

static void setup(void)
{
    pool = test_pool(SAMPLE_POOL);
    /* Exposes only env; no credentials allowed. */
    narrow = test_pool("{\"schema_version\":1,\"name\":\"narrow\",\"backend_allowlist\":[\"runsc\"],"
                       "\"exposed_fields\":[\"env\"]}");
}

static void teardown(void)
{
    berth_pool_free(pool);
    berth_pool_free(narrow);
}

/* Merge @overrides (JSON text) into @p; assert a refusal with @reason at @field. */
static void assert_refused(const struct berth_pool *p, const char *overrides, enum berth_refusal_reason reason,
                           const char *field, const json_t *known)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *ov = test_json(overrides);
    struct berth_effective *e = NULL;
    struct berth_refusal rf;

    ck_assert_int_eq(berth_pool_merge(p, ov, known, &e, &rf, &err), -EPERM);
    ck_assert_ptr_null(e);
    ck_assert_msg(rf.reason == reason, "%s: reason %s, expected %s", overrides, berth_refusal_names[rf.reason],
                  berth_refusal_names[reason]);
    ck_assert_str_eq(rf.field, field);
    ck_assert_str_ne(rf.detail, "");
}

static struct berth_effective *merge(const struct berth_pool *p, const char *overrides)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *ov = overrides ? test_json(overrides) : NULL;
    struct berth_effective *e = NULL;
    struct berth_refusal rf;

    ck_assert_msg(berth_pool_merge(p, ov, NULL, &e, &rf, &err) == 0, "%s refused: %s %s", overrides,
                  berth_refusal_names[rf.reason], rf.field);
    return e;
}

START_TEST(every_refusal_reason)
{
    assert_refused(pool, "{\"image\":\"x\"}", BERTH_REFUSAL_UNKNOWN_FIELD, "image", NULL);
    assert_refused(narrow, "{\"timeout_seconds\":5}", BERTH_REFUSAL_NON_EXPOSED_FIELD, "timeout_seconds", NULL);
    assert_refused(pool, "{\"timeout_seconds\":\"5\"}", BERTH_REFUSAL_MALFORMED_VALUE, "timeout_seconds", NULL);
    assert_refused(pool, "{\"backend\":\"firecracker\"}", BERTH_REFUSAL_BACKEND_NOT_ALLOWED, "backend", NULL);
    assert_refused(pool, "{\"capabilities\":[\"gpu\"]}", BERTH_REFUSAL_CAPABILITY_ABOVE_CEILING, "capabilities.gpu",
                   NULL);
    assert_refused(pool, "{\"network_egress_class\":\"open\"}", BERTH_REFUSAL_EGRESS_WIDENED, "network_egress_class",
                   NULL);
    assert_refused(pool, "{\"env\":{\"AWS_SECRET\":\"s\"}}", BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED, "env.AWS_SECRET",
                   NULL);
    assert_refused(pool, "{\"env\":{\"LD_PRELOAD\":\"/x.so\"}}", BERTH_REFUSAL_REFUSED_ENV, "env.LD_PRELOAD", NULL);
}
END_TEST

START_TEST(malformed_values)
{
    assert_refused(pool, "[]", BERTH_REFUSAL_MALFORMED_VALUE, "(overrides)", NULL);
    assert_refused(pool, "{\"root\":\"relative\"}", BERTH_REFUSAL_MALFORMED_VALUE, "root", NULL);
    assert_refused(pool, "{\"root\":\"/a/../etc\"}", BERTH_REFUSAL_MALFORMED_VALUE, "root", NULL);
    assert_refused(pool, "{\"env\":[]}", BERTH_REFUSAL_MALFORMED_VALUE, "env", NULL);
    assert_refused(pool, "{\"env\":{\"A\":1}}", BERTH_REFUSAL_MALFORMED_VALUE, "env.A", NULL);
    assert_refused(pool, "{\"env\":{\"A-B\":\"x\"}}", BERTH_REFUSAL_MALFORMED_VALUE, "env.A-B", NULL);
    assert_refused(pool, "{\"timeout_seconds\":0}", BERTH_REFUSAL_MALFORMED_VALUE, "timeout_seconds", NULL);
    assert_refused(pool, "{\"timeout_seconds\":604801}", BERTH_REFUSAL_MALFORMED_VALUE, "timeout_seconds", NULL);
    assert_refused(pool, "{\"capabilities\":\"network\"}", BERTH_REFUSAL_MALFORMED_VALUE, "capabilities", NULL);
    assert_refused(pool, "{\"capabilities\":[\"exec\",\"fly\"]}", BERTH_REFUSAL_MALFORMED_VALUE, "capabilities[1]",
                   NULL);
    assert_refused(pool, "{\"network_egress_class\":\"internet\"}", BERTH_REFUSAL_MALFORMED_VALUE,
                   "network_egress_class", NULL);
    assert_refused(pool, "{\"backend\":7}", BERTH_REFUSAL_MALFORMED_VALUE, "backend", NULL);
}
END_TEST

/* The order of the checks, over the fields in sorted order, is fixed. */
START_TEST(check_order)
{
    /* Unknown and non-exposed fields are found before any value is looked at. */
    assert_refused(narrow, "{\"env\":{\"X_TOKEN\":\"t\"},\"zzz\":1}", BERTH_REFUSAL_UNKNOWN_FIELD, "zzz", NULL);
    assert_refused(narrow, "{\"backend\":\"nope\",\"env\":{\"A\":1}}", BERTH_REFUSAL_NON_EXPOSED_FIELD, "backend",
                   NULL);
    /* Then field by field, in sorted order: backend before env. */
    assert_refused(pool, "{\"env\":{\"A\":1},\"backend\":\"nope\"}", BERTH_REFUSAL_BACKEND_NOT_ALLOWED, "backend",
                   NULL);
}
END_TEST

START_TEST(credentials)
{
    _cleanup_json_ json_t *known = test_json("[\"DEPLOY_HOOK\"]");
    struct berth_effective *e;

    ck_assert(berth_credential_name("GITHUB_TOKEN", NULL));
    ck_assert(berth_credential_name("api_key", NULL)); /* case does not matter */
    ck_assert(berth_credential_name("DB_PASSWORD", NULL));
    ck_assert(berth_credential_name("SSH_PASSWD", NULL));
    ck_assert(berth_credential_name("GOOGLE_APPLICATION_CREDENTIALS", NULL));
    ck_assert(berth_credential_name("SECRET", NULL));
    ck_assert(berth_credential_name("PGPASSWORD", NULL));
    ck_assert(!berth_credential_name("KEYBOARD", NULL));
    ck_assert(!berth_credential_name("MONKEY", NULL)); /* ends in KEY, but not _KEY */
    ck_assert(!berth_credential_name("LANG", NULL));
    ck_assert(!berth_credential_name("DEPLOY_HOOK", NULL));
    ck_assert(berth_credential_name("DEPLOY_HOOK", known)); /* allowlisted by some pool */

    assert_refused(pool, "{\"env\":{\"DEPLOY_HOOK\":\"x\"}}", BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED,
                   "env.DEPLOY_HOOK", known);
    /* Allowed by this pool's own allowlist. */
    e = merge(pool, "{\"env\":{\"GITHUB_TOKEN\":\"t\",\"MODE\":\"fast\"}}");
    {
        const json_t *creds = json_object_get(e->json, "credential_env");
        ck_assert_uint_eq(json_array_size(creds), 1);
        ck_assert_str_eq(json_string_value(json_array_get(creds, 0)), "GITHUB_TOKEN");
    }
    berth_effective_free(e);
}
END_TEST

START_TEST(effective_manifest)
{
    struct berth_effective *e = merge(pool, "{\"env\":{\"MODE\":\"x\",\"LANG\":\"C\"},\"root\":\"/src\","
                                            "\"timeout_seconds\":60,\"capabilities\":[\"network\",\"network\"],"
                                            "\"network_egress_class\":\"none\",\"backend\":\"crun\"}");
    _cleanup_free_ char *canon = NULL, *ov = NULL;
    char want[BERTH_HASH_HEX_LEN + 1], pre[1024];

    ck_assert_int_eq(berth_json_serialize(e->json, 0, &canon, NULL, NULL), 0);
    snprintf(pre, sizeof(pre),
             "{\"backend_override\":\"crun\",\"capabilities\":[\"exec\",\"file_rw\",\"network\"],"
             "\"credential_env\":[],\"network_egress_class\":\"none\",\"pool_hash\":\"%s\","
             "\"template\":{\"env\":{\"LANG\":\"C\",\"MODE\":\"x\"},\"root\":\"/src\",\"timeout_seconds\":60}}",
             pool->pool_hash);
    ck_assert_str_eq(canon, pre); /* env overlaid, capabilities unioned with the base set */
    ck_assert_str_eq(e->backend_override, "crun");
    ck_assert_int_eq(e->egress, BERTH_EGRESS_NONE);
    ck_assert_uint_eq(e->capabilities, BERTH_CAP_BASE | BERTH_CAP_BIT(BERTH_CAP_NETWORK));
    ck_assert_int_eq(berth_hash_hex_json(e->json, want, NULL), 0);
    ck_assert_str_eq(e->effective_hash, want);

    /* overrides_hash covers the normalised overrides: capabilities de-duplicated. */
    ck_assert_int_eq(berth_json_serialize(e->overrides, 0, &ov, NULL, NULL), 0);
    ck_assert_str_eq(ov, "{\"backend\":\"crun\",\"capabilities\":[\"network\"],\"env\":{\"LANG\":\"C\",\"MODE\":\"x\"},"
                         "\"network_egress_class\":\"none\",\"root\":\"/src\",\"timeout_seconds\":60}");
    ck_assert_int_eq(berth_hash_hex_json(e->overrides, want, NULL), 0);
    ck_assert_str_eq(e->overrides_hash, want);
    berth_effective_free(e);
}
END_TEST

START_TEST(no_overrides)
{
    struct berth_effective *a = merge(pool, NULL), *b = merge(pool, "{}"), *c = merge(pool, "{\"env\":{}}");
    _cleanup_free_ char *canon = NULL;

    ck_assert_str_eq(a->effective_hash, b->effective_hash);
    ck_assert_str_eq(a->overrides_hash, b->overrides_hash);
    ck_assert_str_eq(a->effective_hash, c->effective_hash); /* same effective manifest ... */
    ck_assert_str_ne(a->overrides_hash, c->overrides_hash); /* ... from different overrides */
    ck_assert_ptr_null(a->backend_override);
    ck_assert_int_eq(a->egress, BERTH_EGRESS_LOOPBACK); /* the pool's class */
    ck_assert_int_eq(berth_json_serialize(json_object_get(a->json, "backend_override"), 0, &canon, NULL, NULL), 0);
    ck_assert_str_eq(canon, "null");
    {
        char h[BERTH_HASH_HEX_LEN + 1];
        ck_assert_int_eq(berth_overrides_hash(NULL, h, NULL), 0);
        ck_assert_str_eq(h, a->overrides_hash);
    }
    berth_effective_free(a);
    berth_effective_free(b);
    berth_effective_free(c);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("override");
    TCase *tc = test_case(s, "merge");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, every_refusal_reason);
    tcase_add_test(tc, malformed_values);
    tcase_add_test(tc, check_order);
    tcase_add_test(tc, credentials);
    tcase_add_test(tc, effective_manifest);
    tcase_add_test(tc, no_overrides);
    return s;
}

TEST_MAIN()
