/* SPDX-License-Identifier: MIT */
/* test-placement.c -- backend selection and placement receipts (placement.h). */
#include "pooltest.h"

#include "canon.h"
#include "jsonobj.h"
#include "override.h"
#include "placement.h"

#define NOW 1796342400000000000LL
#define LATER "9000000000000000000"
#define EARLIER "1000000000000000000"

static struct berth_pool *pool;

static void setup(void)
{
    pool = test_pool(SAMPLE_POOL); /* allowlist [runsc, crun], egress up to loopback */
}

static void teardown(void)
{
    berth_pool_free(pool);
}

static struct berth_backend_set *backends(const char *json)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_backend_set *set = NULL;

    ck_assert_msg(berth_backend_set_parse(json, strlen(json), &set, &err) == 0, "%s", err.message);
    return set;
}

static struct berth_effective *effective(const char *overrides)
{
    _cleanup_json_ json_t *ov = overrides ? test_json(overrides) : NULL;
    struct berth_effective *e = NULL;
    struct berth_refusal rf;

    ck_assert_int_eq(berth_pool_merge(pool, ov, NULL, &e, &rf, NULL), 0);
    return e;
}

/* Place and return the serialised selector inputs; *ret_chosen gets the
 * chosen backend or "" when refused. */
static char *place(const char *overrides, const char *set_json, char *chosen, size_t chosensz)
{
    struct berth_effective *e = effective(overrides);
    struct berth_backend_set *set = backends(set_json);
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *receipt = NULL, *inputs = NULL;
    char hash[BERTH_HASH_HEX_LEN + 1];
    struct berth_refusal rf;
    char *out = NULL;
    int r;

    r = berth_place(pool, e, set, NOW, &receipt, hash, &rf, &inputs, &err);
    if (r == 0) {
        snprintf(chosen, chosensz, "%s", json_string_value(json_object_get(receipt, "chosen_backend")));
        ck_assert_int_eq(berth_json_serialize(json_object_get(receipt, "selector_inputs"), 0, &out, NULL, NULL), 0);
    } else {
        ck_assert_int_eq(r, -EPERM);
        ck_assert_int_eq(rf.reason, BERTH_REFUSAL_NO_BACKEND);
        chosen[0] = '\0';
        ck_assert_int_eq(berth_json_serialize(inputs, 0, &out, NULL, NULL), 0);
    }
    berth_effective_free(e);
    berth_backend_set_free(set);
    return out;
}

#define QUALIFIED "\"qualification\":{\"id\":\"q\",\"expires_ns\":\"" LATER "\"}"
#define BOTH                                                                                                           \
    "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\",\"loopback\"]," QUALIFIED "},"   \
    "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\",\"network\"],\"egress_classes\":[\"none\"]," QUALIFIED "}}"

START_TEST(first_eligible)
{
    char chosen[64];
    _cleanup_free_ char *in = place(NULL, BOTH, chosen, sizeof(chosen));

    ck_assert_str_eq(chosen, "runsc");
    ck_assert_str_eq(in, "[{\"backend\":\"runsc\",\"kept\":true,\"reason\":\"eligible\"},"
                         "{\"backend\":\"crun\",\"kept\":false,\"reason\":\"egress_unsupported:loopback\"}]");
}
END_TEST

START_TEST(drop_reasons)
{
    char chosen[64];
    _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL, *f = NULL;

    /* A capability only crun offers, at an egress class it can enforce. */
    a = place("{\"capabilities\":[\"network\"],\"network_egress_class\":\"none\"}", BOTH, chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "crun");
    ck_assert_str_eq(a, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"missing_capability:network\"},"
                        "{\"backend\":\"crun\",\"kept\":true,\"reason\":\"eligible\"}]");
    /* Only one backend configured. */
    b = place("{\"network_egress_class\":\"none\"}",
              "{\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED "}}",
              chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "crun");
    ck_assert_str_eq(b, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"not_configured\"},"
                        "{\"backend\":\"crun\",\"kept\":true,\"reason\":\"eligible\"}]");
    /* Unqualified, expired, and a development backend that does not require it. */
    c = place("{\"network_egress_class\":\"none\"}",
              "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
              "\"qualification\":{\"id\":\"old\",\"expires_ns\":\"" EARLIER "\"}},"
              "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
              "\"qualification\":\"unqualified\"}}",
              chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "");
    ck_assert_str_eq(c, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"qualification_expired\"},"
                        "{\"backend\":\"crun\",\"kept\":false,\"reason\":\"unqualified\"}]");
    d = place("{\"network_egress_class\":\"none\"}",
              "{\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
              "\"qualification\":\"unqualified\",\"require_qualification\":false}}",
              chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "crun");
    ck_assert_ptr_nonnull(strstr(d, "\"reason\":\"eligible_unqualified\""));
    /* Nothing configured at all. */
    f = place(NULL, "{}", chosen, sizeof(chosen));
    ck_assert_str_eq(f, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"not_configured\"},"
                        "{\"backend\":\"crun\",\"kept\":false,\"reason\":\"not_configured\"}]");
}
END_TEST

/* A backend that says it is unavailable is passed over with its reason
 * code, whatever else it offers; the next one of the pool is chosen. */
START_TEST(unavailable_passed_over)
{
    char chosen[64];
    _cleanup_free_ char *a = NULL, *b = NULL;

    a = place("{\"network_egress_class\":\"none\"}",
              "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED
              ",\"unavailable\":\"containment_unreachable\"},"
              "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED "}}",
              chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "crun");
    ck_assert_str_eq(a, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"containment_unreachable\"},"
                        "{\"backend\":\"crun\",\"kept\":true,\"reason\":\"eligible\"}]");
    /* Alone, it leaves nothing: refused with the reason. */
    b = place("{\"network_egress_class\":\"none\"}",
              "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED
              ",\"unavailable\":\"containment_unreachable\"}}",
              chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "");
    ck_assert_ptr_nonnull(strstr(b, "\"reason\":\"containment_unreachable\""));
    /* An offer that lists the pools it serves (remote workers): another pool passes it over. */
    {
        _cleanup_free_ char *c = place("{\"network_egress_class\":\"none\"}",
                                       "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
                                       QUALIFIED ",\"pools\":[\"1111111111111111111111111111111111111111111111111111111111111111\"]},"
                                       "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
                                       QUALIFIED "}}",
                                       chosen, sizeof(chosen));
        _cleanup_free_ char *d = NULL;
        char with_pool[512];
        ck_assert_str_eq(chosen, "crun");
        ck_assert_ptr_nonnull(strstr(c, "{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"not_serving_pool\"}"));
        /* ... and the pool it serves keeps it. */
        snprintf(with_pool, sizeof(with_pool),
                 "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED
                 ",\"pools\":[\"%s\"]}}",
                 pool->pool_hash);
        d = place("{\"network_egress_class\":\"none\"}", with_pool, chosen, sizeof(chosen));
        ck_assert_str_eq(chosen, "runsc");
    }
    /* An offer may say why it takes no work of this pool now (the remote
     * workers' does, under the name "workers"; the pool here lists runsc). */
    {
        char busy[640];
        _cleanup_free_ char *e = NULL;
        snprintf(busy, sizeof(busy),
                 "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED
                 ",\"pools\":[],\"pools_unavailable\":{\"%s\":\"workers_busy\"}},"
                 "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"]," QUALIFIED "}}",
                 pool->pool_hash);
        e = place("{\"network_egress_class\":\"none\"}", busy, chosen, sizeof(chosen));
        ck_assert_str_eq(chosen, "crun");
        ck_assert_ptr_nonnull(strstr(e, "{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"workers_busy\"}"));
        /* A reason that is no reason code makes the set unreadable. */
        {
            static const char bad_reason[] =
                "{\"workers\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":\"unqualified\","
                "\"pools_unavailable\":{\"1111111111111111111111111111111111111111111111111111111111111111\":"
                "\"Busy!\"}}}";
            struct berth_backend_set *bad = NULL;
            struct berth_error err = BERTH_ERROR_INIT;
            ck_assert_int_eq(berth_backend_set_parse(bad_reason, strlen(bad_reason), &bad, &err), -EBADMSG);
            ck_assert_ptr_nonnull(strstr(err.message, "pools_unavailable"));
        }
    }
    ck_assert(berth_reason_code_valid("containment_unreachable"));
    ck_assert(!berth_reason_code_valid(""));
    ck_assert(!berth_reason_code_valid("Containment"));
    ck_assert(!berth_reason_code_valid("a:b"));
    ck_assert(!berth_reason_code_valid("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")); /* 49 */
    ck_assert(!berth_reason_code_valid(NULL));
}
END_TEST

/* An exposed backend override wins or fails: there is no fallback. */
START_TEST(override_no_fallback)
{
    char chosen[64];
    _cleanup_free_ char *a = NULL, *b = NULL;

    a = place("{\"backend\":\"crun\",\"network_egress_class\":\"none\"}", BOTH, chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "crun");
    ck_assert_str_eq(a, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"not_requested\"},"
                        "{\"backend\":\"crun\",\"kept\":true,\"reason\":\"eligible\"}]");
    /* crun cannot do loopback; runsc could, but was not asked for. */
    b = place("{\"backend\":\"crun\"}", BOTH, chosen, sizeof(chosen));
    ck_assert_str_eq(chosen, "");
    ck_assert_str_eq(b, "[{\"backend\":\"runsc\",\"kept\":false,\"reason\":\"not_requested\"},"
                        "{\"backend\":\"crun\",\"kept\":false,\"reason\":\"egress_unsupported:loopback\"}]");
}
END_TEST

START_TEST(receipt_shape)
{
    struct berth_effective *e = effective("{\"env\":{\"A\":\"1\"}}");
    struct berth_backend_set *set = backends(BOTH);
    _cleanup_json_ json_t *r1 = NULL, *r2 = NULL;
    _cleanup_free_ char *c1 = NULL, *c2 = NULL;
    char h1[BERTH_HASH_HEX_LEN + 1], h2[BERTH_HASH_HEX_LEN + 1], want[2048], hash[BERTH_HASH_HEX_LEN + 1];

    ck_assert_int_eq(berth_place(pool, e, set, NOW, &r1, h1, NULL, NULL, NULL), 0);
    ck_assert_int_eq(berth_place(pool, e, set, NOW + 1000, &r2, h2, NULL, NULL, NULL), 0);
    ck_assert_int_eq(berth_json_serialize(r1, 0, &c1, NULL, NULL), 0);
    ck_assert_int_eq(berth_json_serialize(r2, 0, &c2, NULL, NULL), 0);
    ck_assert_str_eq(c1, c2); /* no time inside */
    ck_assert_str_eq(h1, h2);
    snprintf(
        want, sizeof(want),
        "{\"chosen_backend\":\"runsc\",\"effective_manifest_hash\":\"%s\",\"overrides_hash\":\"%s\","
        "\"pool_hash\":\"%s\",\"schema_version\":1,\"selector_inputs\":[{\"backend\":\"runsc\",\"kept\":true,"
        "\"reason\":\"eligible\"},{\"backend\":\"crun\",\"kept\":false,\"reason\":\"egress_unsupported:loopback\"}],"
        "\"template_hash\":\"%s\"}",
        e->effective_hash, e->overrides_hash, pool->pool_hash, pool->template_hash);
    ck_assert_str_eq(c1, want);
    ck_assert_int_eq(berth_hash_hex_json(r1, hash, NULL), 0);
    ck_assert_str_eq(h1, hash);
    berth_effective_free(e);
    berth_backend_set_free(set);
}
END_TEST

/* A job with inputs or outputs goes only where the need is reported; its receipt names the needs. */
START_TEST(job_needs)
{
    struct berth_effective *e = effective(NULL);
    struct berth_backend_set *set = backends(
        "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\",\"outputs\"],\"egress_classes\":[\"none\",\"loopback\"]," QUALIFIED "},"
        "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\",\"inputs\",\"outputs\"],\"egress_classes\":[\"none\",\"loopback\"],"
        QUALIFIED "}}");
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *receipt = NULL, *inputs = NULL;
    char hash[BERTH_HASH_HEX_LEN + 1], plain[BERTH_HASH_HEX_LEN + 1];
    struct berth_refusal rf;
    _cleanup_free_ char *text = NULL;

    /* No needs: the first eligible, and no job_needs member (receipts as before). */
    ck_assert_int_eq(berth_place(pool, e, set, NOW, &receipt, plain, &rf, NULL, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(receipt, "chosen_backend")), "runsc");
    ck_assert_ptr_null(json_object_get(receipt, "job_needs"));
    json_decref(receipt);
    /* Outputs: runsc serves them. */
    e->needs = BERTH_NEED_BIT(BERTH_NEED_OUTPUTS);
    ck_assert_int_eq(berth_place(pool, e, set, NOW, &receipt, hash, &rf, NULL, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(receipt, "chosen_backend")), "runsc");
    ck_assert_int_eq(berth_json_serialize(json_object_get(receipt, "job_needs"), 0, &text, NULL, NULL), 0);
    ck_assert_str_eq(text, "[\"outputs\"]");
    ck_assert_str_ne(hash, plain);
    json_decref(receipt);
    /* Inputs too: only crun. */
    e->needs |= BERTH_NEED_BIT(BERTH_NEED_INPUTS);
    ck_assert_int_eq(berth_place(pool, e, set, NOW, &receipt, hash, &rf, &inputs, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(receipt, "chosen_backend")), "crun");
    ck_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(receipt, "selector_inputs"), 0),
                                                       "reason")),
                     "missing_capability:inputs");
    json_decref(receipt);
    berth_backend_set_free(set);
    /* Nobody stages inputs: refused. */
    set = backends("{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\",\"loopback\"]," QUALIFIED "}}");
    ck_assert_int_eq(berth_place(pool, e, set, NOW, &receipt, hash, &rf, &inputs, &err), -EPERM);
    json_decref(inputs);
    berth_backend_set_free(set);
    /* A name that is neither a capability nor a need is still refused. */
    {
        const char *bad = "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\",\"teleport\"],\"egress_classes\":[\"none\",\"loopback\"],"
                          QUALIFIED "}}";
        ck_assert_int_eq(berth_backend_set_parse(bad, strlen(bad), &set, &err), -EBADMSG);
    }
    berth_effective_free(e);
}
END_TEST

START_TEST(backend_set_refusals)
{
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"[]", "must be a JSON object of backends"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":\"unqualified\",\"x\":1}}",
         "backend runsc: unknown member \"x\""},
        {"{\"runsc\":{\"capabilities\":[\"fly\"],\"egress_classes\":[],\"qualification\":\"unqualified\"}}",
         "backend runsc: capabilities[0]"},
        {"{\"runsc\":{\"capabilities\":[\"inputs\",\"fly\"],\"egress_classes\":[],\"qualification\":\"unqualified\"}}",
         "backend runsc: capabilities[1] is not"},
        {"{\"runsc\":{\"capabilities\":{},\"egress_classes\":[],\"qualification\":\"unqualified\"}}",
         "capabilities must be an array"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[\"web\"],\"qualification\":\"unqualified\"}}",
         "egress_classes[0]"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":\"yes\"}}", "qualification must be"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":{\"id\":\"q\",\"expires_ns\":5}}}",
         "expires_ns must be nanoseconds"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":\"unqualified\","
         "\"require_qualification\":\"no\"}}",
         "require_qualification must be true or false"},
        {"{\"runsc\":{\"capabilities\":[],\"egress_classes\":[],\"qualification\":\"unqualified\","
         "\"unavailable\":\"Not Now\"}}",
         "backend runsc: unavailable must be a reason code"},
    };
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        struct berth_backend_set *set = NULL;
        ck_assert_int_eq(berth_backend_set_parse(bad[i].json, strlen(bad[i].json), &set, &err), -EBADMSG);
        ck_assert_msg(strstr(err.message, bad[i].needle), "\"%s\" lacks \"%s\"", err.message, bad[i].needle);
        ck_assert_ptr_null(set);
    }
}
END_TEST

/* Runtime ABI 1.1 backends name "inputs" and "outputs", no pool capability. */
START_TEST(backend_set_io_capabilities)
{
    struct berth_backend_set *set =
        backends("{\"crun\":{\"capabilities\":[\"exec\",\"inputs\",\"file_rw\",\"outputs\"],"
                 "\"egress_classes\":[\"none\"],\"qualification\":\"unqualified\"},"
                 "\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\"],"
                 "\"qualification\":\"unqualified\"}}");
    size_t i;

    ck_assert_uint_eq(set->n, 2);
    for (i = 0; i < set->n; i++) {
        bool io = streq(set->v[i].name, "crun");
        ck_assert_uint_eq(set->v[i].capabilities, (1u << BERTH_CAP_EXEC) | (1u << BERTH_CAP_FILE_RW));
        ck_assert_uint_eq(set->v[i].needs, io ? BERTH_NEED_BIT(BERTH_NEED_INPUTS) | BERTH_NEED_BIT(BERTH_NEED_OUTPUTS) : 0);
    }
    berth_backend_set_free(set);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("placement");
    TCase *tc = test_case(s, "placement");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, first_eligible);
    tcase_add_test(tc, backend_set_io_capabilities);
    tcase_add_test(tc, drop_reasons);
    tcase_add_test(tc, unavailable_passed_over);
    tcase_add_test(tc, override_no_fallback);
    tcase_add_test(tc, receipt_shape);
    tcase_add_test(tc, backend_set_refusals);
    tcase_add_test(tc, job_needs);
    return s;
}

TEST_MAIN()
