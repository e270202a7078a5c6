/* SPDX-License-Identifier: MIT */
/* test-names.c -- name tables and the rules of names (names.h). */
#include "testutil.h"

#include "macro.h"
#include "names.h"

/* A string of @n copies of @c, in a static buffer. */
static const char *repeat(char c, size_t n)
{
    static char buf[512];

    ck_assert_uint_lt(n, sizeof(buf));
    memset(buf, c, n);
    buf[n] = '\0';
    return buf;
}

START_TEST(index_lookup)
{
    static const char *const table[] = {"none", "loopback", "open"};

    ck_assert_int_eq(berth_name_index(table, 3, "open"), 2);
    ck_assert_int_eq(berth_name_index(table, 3, "closed"), -1);
    ck_assert_int_eq(berth_name_index(table, 3, NULL), -1);
}
END_TEST

START_TEST(plugin_names)
{
    ck_assert(berth_plugin_name_valid("runtime-oci"));
    ck_assert(berth_plugin_name_valid("0"));
    ck_assert(berth_plugin_name_valid("a-"));
    ck_assert(berth_plugin_name_valid(repeat('p', BERTH_PLUGIN_NAME_MAX)));
    ck_assert(!berth_plugin_name_valid(repeat('p', BERTH_PLUGIN_NAME_MAX + 1)));
    ck_assert(!berth_plugin_name_valid("-oci"));
    ck_assert(!berth_plugin_name_valid("Runtime-oci"));
    ck_assert(!berth_plugin_name_valid("runtime_oci"));
    ck_assert(!berth_plugin_name_valid("runtime.oci"));
    ck_assert(!berth_plugin_name_valid(""));
    ck_assert(!berth_plugin_name_valid(NULL));
    ck_assert_str_eq(BERTH_PLUGIN_NAME_RULE, "1 to 63 of [a-z0-9-], starting with a letter or digit");
}
END_TEST

START_TEST(backend_and_pool_names)
{
    bool (*const rules[])(const char *) = {berth_backend_name_valid, berth_pool_name_valid};
    size_t i;

    ck_assert_int_eq(BERTH_BACKEND_NAME_MAX, 63);
    ck_assert_int_eq(BERTH_POOL_NAME_MAX, 63);
    for (i = 0; i < ELEMENTSOF(rules); i++) {
        ck_assert(rules[i]("runsc"));
        ck_assert(rules[i]("ci.2_b-c"));
        ck_assert(rules[i]("9"));
        ck_assert(rules[i](repeat('b', 63)));
        ck_assert(!rules[i](repeat('b', 64)));
        ck_assert(!rules[i]("Runsc")); /* berthd.json used to accept upper case */
        ck_assert(!rules[i](".runsc"));
        ck_assert(!rules[i]("-runsc"));
        ck_assert(!rules[i]("_runsc"));
        ck_assert(!rules[i]("."));
        ck_assert(!rules[i](".."));
        ck_assert(!rules[i]("run sc"));
        ck_assert(!rules[i]("a/b"));
        ck_assert(!rules[i]("a@b"));
        ck_assert(!rules[i]("\xc3\xa9"));
        ck_assert(!rules[i](""));
        ck_assert(!rules[i](NULL));
    }
    ck_assert_str_eq(BERTH_BACKEND_NAME_RULE, "1 to 63 of [a-z0-9._-], starting with a letter or digit");
    ck_assert_str_eq(BERTH_POOL_NAME_RULE, BERTH_BACKEND_NAME_RULE);
}
END_TEST

START_TEST(principals)
{
    ck_assert(berth_principal_valid("dev"));
    ck_assert(berth_principal_valid("ci@build-host.example")); /* dev-init used to refuse "@" */
    ck_assert(berth_principal_valid("Alice_2"));
    ck_assert(berth_principal_valid("-"));
    ck_assert(berth_principal_valid(repeat('p', 128))); /* and more than 64 bytes */
    ck_assert(!berth_principal_valid(repeat('p', 129)));
    ck_assert(!berth_principal_valid("a/b"));
    ck_assert(!berth_principal_valid("al ice"));
    ck_assert(!berth_principal_valid("a:b"));
    ck_assert(!berth_principal_valid("\xc3\xa9"));
    ck_assert(!berth_principal_valid(""));
    ck_assert(!berth_principal_valid(NULL));
    ck_assert_str_eq(BERTH_PRINCIPAL_RULE, "1 to 128 of [A-Za-z0-9._@-]");
}
END_TEST

START_TEST(broker_names)
{
    ck_assert(berth_broker_name_valid("dev"));
    ck_assert(berth_broker_name_valid("Build-host_1.example"));
    ck_assert(berth_broker_name_valid(repeat('b', 64)));
    ck_assert(!berth_broker_name_valid(repeat('b', 65)));
    ck_assert(!berth_broker_name_valid("a@b"));
    ck_assert(!berth_broker_name_valid("no spaces"));
    ck_assert(!berth_broker_name_valid(""));
    ck_assert(!berth_broker_name_valid(NULL));
    ck_assert_str_eq(BERTH_BROKER_NAME_RULE, "1 to 64 of [A-Za-z0-9._-]");
}
END_TEST

START_TEST(media_types)
{
    char long_type[300];

    ck_assert(berth_media_type_valid("text/plain"));
    ck_assert(berth_media_type_valid("text/plain; charset=utf-8"));
    ck_assert(berth_media_type_valid("application/vnd.oci.image.manifest.v1+json"));
    ck_assert(!berth_media_type_valid(NULL));
    ck_assert(!berth_media_type_valid(""));
    ck_assert(!berth_media_type_valid("plain"));
    ck_assert(!berth_media_type_valid("/plain"));
    ck_assert(!berth_media_type_valid("text/"));
    ck_assert(!berth_media_type_valid("text/pl\tain"));
    ck_assert(!berth_media_type_valid("text/pl\x7f"));
    ck_assert(!berth_media_type_valid("text/\xc3\xa9"));
    memset(long_type, 'a', sizeof(long_type));
    long_type[1] = '/';
    long_type[BERTH_MEDIA_TYPE_MAX] = '\0';
    ck_assert(berth_media_type_valid(long_type));
    long_type[BERTH_MEDIA_TYPE_MAX] = 'a';
    long_type[BERTH_MEDIA_TYPE_MAX + 1] = '\0';
    ck_assert(!berth_media_type_valid(long_type));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("names");
    TCase *tc = test_case(s, "names");

    tcase_add_test(tc, index_lookup);
    tcase_add_test(tc, plugin_names);
    tcase_add_test(tc, backend_and_pool_names);
    tcase_add_test(tc, principals);
    tcase_add_test(tc, broker_names);
    tcase_add_test(tc, media_types);
    return s;
}

TEST_MAIN()
