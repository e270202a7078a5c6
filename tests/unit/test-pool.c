/* SPDX-License-Identifier: MIT */
/* test-pool.c -- pool manifests: defaults, normalisation, hashes, refusals (pool.h). */
#include "pooltest.h"

#include "canon.h"
#include "jsonobj.h"
#include "names.h"

#define MINIMAL "{\"schema_version\":1,\"name\":\"minimal\",\"backend_allowlist\":[\"runsc\",\"crun\"]}"
/* The normalised form of MINIMAL, written out by hand, and its hashes as
 * computed by an independent SHA-256 (Python's hashlib) over these bytes. */
#define MINIMAL_CANONICAL                                                                                              \
    "{\"backend_allowlist\":[\"runsc\",\"crun\"],\"capability_ceiling\":[\"exec\",\"file_rw\"],"                       \
    "\"credential_env_allowlist\":[],\"exposed_fields\":[],\"max_concurrency\":0,\"name\":\"minimal\","                \
    "\"network_egress_class\":\"none\",\"schema_version\":1,"                                                          \
    "\"template\":{\"env\":{},\"root\":\"/workspace\",\"timeout_seconds\":1800}}"
#define MINIMAL_HASH "d596d671a7cfb009d85f36c3eba522d0cb1f76e6965bd067563223851f83a8ea"
#define MINIMAL_TEMPLATE_HASH "77181627213815b8304a4320134a3764cc07320a4543a476737f2313129de767"

START_TEST(defaults_and_hash)
{
    struct berth_pool *p = test_pool(MINIMAL);
    _cleanup_free_ char *canon = NULL;
    _cleanup_json_ json_t *shown = NULL;

    ck_assert_int_eq(berth_json_serialize(p->manifest, 0, &canon, NULL, NULL), 0);
    ck_assert_str_eq(canon, MINIMAL_CANONICAL);
    ck_assert_str_eq(p->pool_hash, MINIMAL_HASH);
    ck_assert_str_eq(p->template_hash, MINIMAL_TEMPLATE_HASH);
    ck_assert_str_eq(p->name, "minimal");
    ck_assert_uint_eq(p->n_backends, 2);
    ck_assert_str_eq(p->backends[0], "runsc");
    ck_assert_str_eq(p->root, "/workspace");
    ck_assert_int_eq(p->timeout_seconds, 1800);
    ck_assert_uint_eq(p->exposed, 0);
    ck_assert_uint_eq(p->ceiling, BERTH_CAP_BASE);
    ck_assert_int_eq(p->egress, BERTH_EGRESS_NONE);
    ck_assert_int_eq(p->max_concurrency, 0);

    /* Writing the defaults out explicitly is the same pool. */
    {
        struct berth_pool *q = test_pool(MINIMAL_CANONICAL);
        ck_assert_str_eq(q->pool_hash, MINIMAL_HASH);
        berth_pool_free(q);
    }
    shown = berth_pool_to_json(p);
    ck_assert_str_eq(json_string_value(json_object_get(shown, "pool_hash")), MINIMAL_HASH);
    berth_pool_free(p);
}
END_TEST

/* Key order, whitespace, set order and duplicates never change the hash. */
START_TEST(hash_stable)
{
    struct berth_pool *a =
        test_pool("{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"a\",\"b\"],"
                  "\"template\":{\"root\":\"/w\",\"env\":{\"X\":\"1\",\"A\":\"2\"},\"timeout_seconds\":60},"
                  "\"exposed_fields\":[\"env\",\"backend\"],\"capability_ceiling\":[\"network\",\"file_rw\",\"exec\"],"
                  "\"credential_env_allowlist\":[\"B_TOKEN\",\"A_TOKEN\"],\"network_egress_class\":\"loopback\"}");
    struct berth_pool *b = test_pool(
        "{\n  \"network_egress_class\": \"loopback\",\n  \"credential_env_allowlist\": [\"A_TOKEN\", \"B_TOKEN\", "
        "\"A_TOKEN\"],\n  \"capability_ceiling\": [\"exec\", \"file_rw\", \"network\", \"exec\"],\n"
        "  \"exposed_fields\": [\"backend\", \"env\", \"env\"],\n"
        "  \"template\": {\"timeout_seconds\": 60, \"env\": {\"A\": \"2\", \"X\": \"1\"}, \"root\": \"/w\"},\n"
        "  \"backend_allowlist\": [\"a\", \"b\"], \"name\": \"p\", \"schema_version\": 1\n}\n");
    struct berth_pool *c =
        test_pool("{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"b\",\"a\"],"
                  "\"template\":{\"root\":\"/w\",\"env\":{\"X\":\"1\",\"A\":\"2\"},\"timeout_seconds\":60},"
                  "\"exposed_fields\":[\"env\",\"backend\"],\"capability_ceiling\":[\"network\",\"file_rw\",\"exec\"],"
                  "\"credential_env_allowlist\":[\"B_TOKEN\",\"A_TOKEN\"],\"network_egress_class\":\"loopback\"}");

    ck_assert_str_eq(a->pool_hash, b->pool_hash);
    ck_assert_str_eq(a->template_hash, b->template_hash);
    /* The allowlist is the preference order: reordering it is another pool. */
    ck_assert_str_ne(a->pool_hash, c->pool_hash);
    ck_assert_str_eq(a->template_hash, c->template_hash);
    ck_assert_uint_eq(b->n_credential_allowlist, 2);
    ck_assert_str_eq(b->credential_allowlist[0], "A_TOKEN");
    berth_pool_free(a);
    berth_pool_free(b);
    berth_pool_free(c);
}
END_TEST

START_TEST(claimed_hash)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *p = NULL;
    char doc[1024];

    snprintf(doc, sizeof(doc),
             "{\"schema_version\":1,\"name\":\"minimal\",\"backend_allowlist\":[\"runsc\",\"crun\"],"
             "\"pool_hash\":\"%s\"}",
             MINIMAL_HASH);
    ck_assert_int_eq(berth_pool_parse(doc, strlen(doc), &p, &err), 0);
    berth_pool_free(p);
    p = NULL;
    doc[strlen(doc) - 3] ^= 1;
    ck_assert_int_eq(berth_pool_parse(doc, strlen(doc), &p, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "but the manifest hashes to " MINIMAL_HASH));
    ck_assert_ptr_null(p);
}
END_TEST

static void refused(const char *members, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *p = NULL;
    char doc[2048];

    snprintf(doc, sizeof(doc), "{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"runsc\"]%s%s}",
             members[0] ? "," : "", members);
    ck_assert_msg(berth_pool_parse(doc, strlen(doc), &p, &err) == -EBADMSG, "accepted %s", doc);
    ck_assert_msg(strstr(err.message, needle), "%s: \"%s\" lacks \"%s\"", doc, err.message, needle);
    ck_assert_ptr_null(p);
}

static int parse_doc(const char *doc, struct berth_error *err)
{
    struct berth_pool *p = NULL;
    int r = berth_pool_parse(doc, strlen(doc), &p, err);

    berth_pool_free(p);
    return r;
}

START_TEST(refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;

    refused("\"colour\":\"blue\"", "pool: unknown member \"colour\"");
    refused("\"template\":{\"cwd\":\"/\"}", "template: unknown member \"cwd\"");
    refused("\"schema_version\":2", "duplicate");
    ck_assert_int_eq(parse_doc("{\"schema_version\":2,\"name\":\"p\",\"backend_allowlist\":[\"a\"]}", &err), -EBADMSG);
    ck_assert_str_eq(err.message, "pool.schema_version must be 1");
    ck_assert_int_eq(parse_doc("{\"schema_version\":1,\"backend_allowlist\":[\"a\"]}", &err), -EBADMSG);
    ck_assert_str_eq(err.message, "pool.name is missing");
    ck_assert_int_eq(parse_doc("{\"schema_version\":1,\"name\":\"Bad Name\",\"backend_allowlist\":[\"a\"]}", &err),
                     -EBADMSG);
    ck_assert_int_eq(parse_doc("{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[]}", &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "backend_allowlist must list 1 to 64"));
    ck_assert_int_eq(parse_doc("{\"schema_version\":1,\"name\":\"p\",\"backend_allowlist\":[\"a\",\"a\"]}", &err),
                     -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "lists \"a\" twice"));
    refused("\"exposed_fields\":[\"image\"]", "pool.exposed_fields[0] is neither an override field nor env.NAME");
    refused("\"capability_ceiling\":[\"exec\"]", "must include exec and file_rw");
    refused("\"capability_ceiling\":[\"exec\",\"file_rw\",\"root\"]", "capability_ceiling[2]");
    refused("\"network_egress_class\":\"internet\"", "network_egress_class must be");
    refused("\"template\":{\"env\":{\"A\":1}}", "template.env.A must be a string");
    refused("\"template\":{\"env\":{\"1A\":\"x\"}}", "is not an environment variable name");
    refused("\"template\":{\"timeout_seconds\":0}", "template.timeout_seconds is 0, outside 1..604800");
    refused("\"template\":{\"root\":\"work\"}", "template.root must be an absolute path");
    refused("\"template\":{\"root\":\"/a/../b\"}", "template.root must be an absolute path");
    refused("\"credential_env_allowlist\":[\"NOT-A-NAME\"]", "credential_env_allowlist[0]");
    refused("\"max_concurrency\":-1", "pool.max_concurrency is -1");
    refused("\"pool_hash\":5", "pool.pool_hash must be a string");
}
END_TEST

/* A manifest that fits the bound only before its defaults are added is
 * refused, instead of being stored as a body that cannot be read back. */
START_TEST(normalised_size)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *head =
        "{\"schema_version\":1,\"name\":\"big\",\"backend_allowlist\":[\"runsc\"],\"template\":{\"env\":{";
    size_t len = strlen(head), vars = 0;
    char *doc = malloc(BERTH_POOL_MANIFEST_MAX + 1);
    struct berth_pool *p = NULL;

    ck_assert_ptr_nonnull(doc);
    memcpy(doc, head, len);
    /* Fill with long variables until about 120 bytes short of the bound. */
    for (;;) {
        size_t room = BERTH_POOL_MANIFEST_MAX - 120 - len, value;
        if (room < 64)
            break;
        value = room - 20 > 32000 ? 32000 : room - 20;
        len += (size_t)sprintf(doc + len, "%s\"V%02zu\":\"", vars ? "," : "", vars);
        memset(doc + len, 'x', value);
        len += value;
        doc[len++] = '"';
        vars++;
    }
    len += (size_t)sprintf(doc + len, "}}}");
    ck_assert_uint_le(len, BERTH_POOL_MANIFEST_MAX);
    ck_assert_int_eq(berth_pool_parse(doc, len, &p, &err), -EBADMSG);
    ck_assert_msg(strstr(err.message, "the normalised manifest is longer than 262144 bytes"), "%s", err.message);
    ck_assert_ptr_null(p);
    free(doc);
}
END_TEST

START_TEST(validators)
{
    ck_assert(berth_guest_path_valid("/"));
    ck_assert(berth_guest_path_valid("/workspace"));
    ck_assert(berth_guest_path_valid("/a/b.c/d"));
    ck_assert(!berth_guest_path_valid("relative"));
    ck_assert(!berth_guest_path_valid("/a//b"));
    ck_assert(!berth_guest_path_valid("/a/"));
    ck_assert(!berth_guest_path_valid("/a/./b"));
    ck_assert(!berth_guest_path_valid("/a/.."));
    ck_assert(berth_env_name_valid("PATH"));
    ck_assert(berth_env_name_valid("_x1"));
    ck_assert(!berth_env_name_valid("1X"));
    ck_assert(!berth_env_name_valid("A-B"));
    ck_assert(!berth_env_name_valid(""));
    ck_assert(!berth_env_name_valid("\xc3\xa9"));
    ck_assert_int_eq(berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT, "restricted"), BERTH_EGRESS_RESTRICTED);
    ck_assert_int_eq(berth_name_index(berth_egress_names, BERTH_EGRESS_COUNT, "closed"), -1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = test_case(s, "manifest");

    tcase_add_test(tc, defaults_and_hash);
    tcase_add_test(tc, hash_stable);
    tcase_add_test(tc, claimed_hash);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, normalised_size);
    tcase_add_test(tc, validators);
    return s;
}

TEST_MAIN()
