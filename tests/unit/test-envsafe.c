/* SPDX-License-Identifier: MIT */
/*
 * test-envsafe.c -- the environment names overrides may not set (envsafe.h):
 * the list, the "env.NAME" exposure in a pool manifest, and the refusal the
 * merge gives (override.h: refused_env).
 */
#include "pooltest.h"

#include "canon.h"
#include "envsafe.h"
#include "jsonobj.h"
#include "override.h"

#define POOL_EXPOSING(extra)                                                                                           \
    "{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"runsc\"],"                                          \
    "\"template\":{\"env\":{\"PATH\":\"/usr/bin:/bin\",\"LD_LIBRARY_PATH\":\"/opt/lib\"}},"                            \
    "\"exposed_fields\":[\"env\"" extra "]}"

START_TEST(the_list)
{
    /* Every name of glibc's unsecvars.h, the shells' and interpreters' start-up variables, and PATH. */
    static const char *const refused[] = {
        "LD_PRELOAD",  "LD_LIBRARY_PATH", "LD_AUDIT",       "LD_DEBUG_OUTPUT", "LD_BIND_NOW",      "LD_",
        "MALLOC_TRACE", "MALLOC_CHECK_",  "MALLOC_ARENA_MAX", "GCONV_PATH",    "GETCONF_DIR",      "GLIBC_TUNABLES",
        "HOSTALIASES", "LOCALDOMAIN",     "LOCPATH",        "NIS_PATH",        "NLSPATH",          "RESOLV_HOST_CONF",
        "RES_OPTIONS", "TMPDIR",          "TZDIR",          "BASH_ENV",        "BASH_FUNC_x",      "BASHOPTS",
        "CDPATH",      "ENV",             "IFS",            "PS4",             "SHELLOPTS",        "NODE_OPTIONS",
        "PERL5LIB",    "PERL5OPT",        "PERLLIB",        "PYTHONHOME",      "PYTHONPATH",       "PYTHONSTARTUP",
        "RUBYLIB",     "RUBYOPT",         "PATH",
    };
    /* Near misses are ordinary names: exact, case-sensitive matches and real prefixes only. */
    static const char *const allowed[] = {"LD",    "XLD_PRELOAD", "ld_preload", "Ld_PRELOAD", "PATHS", "MY_PATH",
                                          "ENV_X", "MALLOC",      "LANG",       "TZ",         "HOME",  "IFS_",
                                          "PS1",   "BASH",        "PYTHONUNBUFFERED"};
    size_t i;

    for (i = 0; i < ELEMENTSOF(refused); i++) {
        const char *why = berth_env_unsafe(refused[i]);
        ck_assert_msg(why != NULL, "%s is not refused", refused[i]);
        ck_assert_msg(strstr(why, "(") != NULL, "%s: no source in \"%s\"", refused[i], why);
    }
    for (i = 0; i < ELEMENTSOF(allowed); i++)
        ck_assert_msg(berth_env_unsafe(allowed[i]) == NULL, "%s is refused", allowed[i]);
    ck_assert_ptr_null(berth_env_unsafe(NULL));
    ck_assert_ptr_nonnull(strstr(berth_env_unsafe("LD_PRELOAD"), "unsecvars.h"));
}
END_TEST

START_TEST(exposed_by_name)
{
    struct berth_pool *plain = test_pool(POOL_EXPOSING("")),
                      *some = test_pool(POOL_EXPOSING(",\"env.LD_LIBRARY_PATH\",\"env.PATH\",\"env.PATH\""));
    const char *why = NULL;

    ck_assert(berth_env_override_refused(plain, "LD_PRELOAD", &why));
    ck_assert_ptr_eq(why, berth_env_unsafe("LD_PRELOAD"));
    ck_assert(berth_env_override_refused(plain, "PATH", NULL));
    ck_assert(!berth_env_override_refused(plain, "LANG", NULL));
    /* Listed by name: allowed; the rest of the family stays refused. */
    ck_assert(!berth_env_override_refused(some, "LD_LIBRARY_PATH", NULL));
    ck_assert(!berth_env_override_refused(some, "PATH", NULL));
    ck_assert(berth_env_override_refused(some, "LD_PRELOAD", NULL));
    /* Normalised: sorted, de-duplicated; the plain manifest's hash is unchanged by the feature. */
    ck_assert_uint_eq(some->n_exposed_env, 2);
    ck_assert_uint_eq(plain->n_exposed_env, 0);
    {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(berth_json_serialize(json_object_get(some->manifest, "exposed_fields"), 0, &text, &len, NULL),
                         0);
        ck_assert_str_eq(text, "[\"env\",\"env.LD_LIBRARY_PATH\",\"env.PATH\"]");
    }
    ck_assert(plain->exposed == some->exposed);
    berth_pool_free(plain);
    berth_pool_free(some);
}
END_TEST

START_TEST(bad_manifests)
{
    static const char *const bad[] = {
        /* env.NAME without env */
        "{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"runsc\"],\"exposed_fields\":[\"env.PATH\"]}",
        POOL_EXPOSING(",\"env.1X\""),
        POOL_EXPOSING(",\"env.\""),
        POOL_EXPOSING(",\"env.A-B\""),
        POOL_EXPOSING(",\"image\""),
        POOL_EXPOSING(",7"),
    };
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *p = NULL;
    size_t i;

    for (i = 0; i < ELEMENTSOF(bad); i++) {
        ck_assert_msg(berth_pool_parse(bad[i], strlen(bad[i]), &p, &err) == -EBADMSG, "accepted: %s", bad[i]);
        ck_assert_ptr_nonnull(strstr(err.message, "exposed_fields"));
    }
}
END_TEST

/* Through the merge: refused_env names the variable; the template's own values are the operator's. */
START_TEST(merge_refuses)
{
    struct berth_pool *plain = test_pool(POOL_EXPOSING("")), *some = test_pool(POOL_EXPOSING(",\"env.LD_PRELOAD\""));
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *preload = test_json("{\"env\":{\"A\":\"1\",\"LD_PRELOAD\":\"/tmp/x.so\"}}"),
                          *path = test_json("{\"env\":{\"PATH\":\"/tmp\"}}"), *lang = test_json("{\"env\":{\"LANG\":\"C\"}}");
    struct berth_effective *e = NULL;
    struct berth_refusal rf;

    ck_assert_int_eq(berth_pool_merge(plain, preload, NULL, &e, &rf, &err), -EPERM);
    ck_assert_ptr_null(e);
    ck_assert_str_eq(berth_refusal_names[rf.reason], "refused_env");
    ck_assert_str_eq(rf.field, "env.LD_PRELOAD");
    ck_assert_ptr_nonnull(strstr(rf.detail, "LD_PRELOAD"));
    ck_assert_int_eq(berth_pool_merge(plain, path, NULL, &e, &rf, &err), -EPERM);
    ck_assert(rf.reason == BERTH_REFUSAL_REFUSED_ENV);
    ck_assert_str_eq(rf.field, "env.PATH");
    /* Safe names merge; the template's PATH and LD_LIBRARY_PATH stay as the operator set them. */
    ck_assert_int_eq(berth_pool_merge(plain, lang, NULL, &e, &rf, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(
                         json_object_get(json_object_get(e->json, "template"), "env"), "PATH")),
                     "/usr/bin:/bin");
    berth_effective_free(e);
    e = NULL;
    /* Exposed by name: accepted; PATH still refused there. */
    ck_assert_int_eq(berth_pool_merge(some, preload, NULL, &e, &rf, &err), 0);
    berth_effective_free(e);
    e = NULL;
    ck_assert_int_eq(berth_pool_merge(some, path, NULL, &e, &rf, &err), -EPERM);
    berth_pool_free(plain);
    berth_pool_free(some);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("envsafe");
    TCase *tc = test_case(s, "envsafe");

    tcase_add_test(tc, the_list);
    tcase_add_test(tc, exposed_by_name);
    tcase_add_test(tc, bad_manifests);
    tcase_add_test(tc, merge_refuses);
    return s;
}

TEST_MAIN()
