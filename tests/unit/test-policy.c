/* SPDX-License-Identifier: MIT */
/* test-policy.c -- host policy documents and the watched policy file (policy.h). */
#include "testutil.h"

#include <time.h>

#include "jobtest.h"
#include "macro.h"
#include "policy.h"

#define FP_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

#define SUBJECT(principal, fp, extra)                                                                                  \
    "{\"principal\":\"" principal "\",\"scope\":[\"team\"],\"fingerprints\":[\"" fp "\"],"                             \
    "\"pools\":[\"sample\"],\"images\":[\"" SAMPLE_IMAGE "\"],\"limits\":" SAMPLE_LIMITS ","                           \
    "\"not_before\":\"1000\",\"not_after\":\"5000\"" extra "}"

/* Alice's subject with the pools @pools (a JSON array). */
#define SUBJECT_POOLS(pools)                                                                                           \
    "{\"principal\":\"alice\",\"scope\":[\"team\"],\"fingerprints\":[\"" FP_A "\"],\"pools\":" pools                   \
    ",\"images\":[],\"limits\":" SAMPLE_LIMITS ",\"not_before\":\"1000\",\"not_after\":\"5000\"}"

#define POLICY(subjects)                                                                                               \
    "{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[" subjects "]}"

static struct berth_policy *parse_ok(const char *doc)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_policy *p = NULL;

    ck_assert_msg(berth_policy_parse(doc, strlen(doc), &p, &err) == 0, "%s", err.message);
    return p;
}

static void refused(const char *doc, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_policy *p = NULL;

    ck_assert_msg(berth_policy_parse(doc, strlen(doc), &p, &err) == -EBADMSG, "accepted: %s", doc);
    ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
    ck_assert_ptr_null(p);
}

START_TEST(lookup)
{
    struct berth_policy *p = parse_ok(
        POLICY(SUBJECT("alice", FP_A, ",\"admin\":true,\"serves\":[\"sample\"]") "," SUBJECT("bob", FP_B, "")));
    const struct berth_subject *s;
    const char *why = NULL;

    ck_assert_int_eq(p->n_subjects, 2);
    s = berth_policy_subject(p, FP_A, 2000, &why);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->principal, "alice");
    ck_assert(s->admin);
    ck_assert(berth_subject_allows_pool(s, "sample"));
    ck_assert(!berth_subject_allows_pool(s, "other"));
    ck_assert(berth_subject_allows_image(s, SAMPLE_IMAGE));
    ck_assert(
        !berth_subject_allows_image(s, "sha256:0000000000000000000000000000000000000000000000000000000000000000"));
    ck_assert(berth_subject_serves_pool(s, "sample")); /* a worker of pool sample */
    ck_assert(!berth_subject_serves_pool(s, "other"));
    s = berth_policy_subject(p, FP_B, 2000, &why);
    ck_assert_ptr_nonnull(s);
    ck_assert_str_eq(s->principal, "bob");
    ck_assert(!s->admin);
    ck_assert(!berth_subject_serves_pool(s, "sample")); /* no "serves": no worker */
    ck_assert_int_eq(s->limits.pids, 64);
    /* Unknown fingerprint and outside the subject's interval. */
    ck_assert_ptr_null(
        berth_policy_subject(p, "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", 2000, &why));
    ck_assert_str_eq(why, "the client certificate is not in the host policy");
    ck_assert_ptr_null(berth_policy_subject(p, FP_A, 5001, &why));
    ck_assert_str_eq(why, "the grant is not valid now");
    ck_assert_ptr_nonnull(berth_policy_subject(p, FP_A, 5000, &why)); /* the interval is inclusive */
    berth_policy_free(p);
}
END_TEST

/* Which certificates the front door knows, and what it does with the others. */
START_TEST(unlisted_clients)
{
    struct berth_policy *p = parse_ok(POLICY(SUBJECT("alice", FP_A, "")));

    ck_assert(berth_policy_lists(p, FP_A));
    ck_assert(!berth_policy_lists(p, FP_B));
    ck_assert(!berth_policy_lists(NULL, FP_A));
    ck_assert(!berth_policy_lists(p, NULL));
    ck_assert(!p->unlisted_health); /* refused by default */
    /* Listed whatever the validity period: an expired grant is the broker's 403 to explain. */
    ck_assert_ptr_null(berth_policy_subject(p, FP_A, 9000, NULL));
    ck_assert(berth_policy_lists(p, FP_A));
    berth_policy_free(p);
    p = parse_ok("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[],"
                 "\"unlisted_clients\":\"health\"}");
    ck_assert(p->unlisted_health);
    berth_policy_free(p);
    p = parse_ok("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[],"
                 "\"unlisted_clients\":\"refuse\"}");
    ck_assert(!p->unlisted_health);
    berth_policy_free(p);
    refused("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[],"
            "\"unlisted_clients\":\"all\"}",
            "policy.unlisted_clients must be \"refuse\" or \"health\"");
    refused("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[],"
            "\"unlisted_clients\":true}",
            "unlisted_clients");
}
END_TEST

START_TEST(names)
{
    /* The principal rule (berth_principal_valid()), at its bounds, and pool names. */
    static const char p128[] = "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp"
                               "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp";
    berth_policy_free(parse_ok(POLICY(SUBJECT("ci@build-host.example", FP_A, ""))));
    berth_policy_free(parse_ok(POLICY(SUBJECT("-._@", FP_A, ""))));
    berth_policy_free(parse_ok(POLICY(SUBJECT_POOLS("[\"sample\",\"ci.2_x-y\",\"0\"]"))));
    {
        char doc[4096], principal[sizeof(p128) + 1];
        snprintf(doc, sizeof(doc), POLICY(SUBJECT("%s", FP_A, "")), p128);
        berth_policy_free(parse_ok(doc));
        snprintf(principal, sizeof(principal), "%sp", p128);
        snprintf(doc, sizeof(doc), POLICY(SUBJECT("%s", FP_A, "")), principal);
        refused(doc, "policy.subjects[0].principal must be 1 to 128 of [A-Za-z0-9._@-]");
    }
}
END_TEST

START_TEST(refusals)
{
    refused("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[],\"x\":1}",
            "unknown member \"x\"");
    refused("{\"schema_version\":2,\"not_before\":\"1000\",\"not_after\":\"5000\",\"subjects\":[]}", "schema_version");
    refused("{\"schema_version\":1,\"not_before\":\"6000\",\"not_after\":\"5000\",\"subjects\":[]}",
            "policy.not_before is after policy.not_after");
    refused(POLICY(SUBJECT("alice", FP_A, "") "," SUBJECT("bob", FP_A, "")), "fingerprint " FP_A " is used twice");
    refused(POLICY(SUBJECT("alice", FP_A, "") "," SUBJECT("alice", FP_B, "")),
            "principal alice with that scope appears twice");
    refused(POLICY(SUBJECT("alice", "AAAA", "")), "policy.subjects[0].fingerprints[0] is not valid");
    refused(POLICY(SUBJECT("al ice", FP_A, "")), "policy.subjects[0].principal must be 1 to 128 of [A-Za-z0-9._@-]");
    /* Pools are granted by pool name (berth_pool_name_valid()): the
     * principal rule, which used to be applied, let "Sample", "a@b" and
     * ".." through, names no pool can have. */
    refused(POLICY(SUBJECT_POOLS("[\"Sample\"]")), "policy.subjects[0].pools[0] is not valid");
    refused(POLICY(SUBJECT_POOLS("[\"sample\",\"a@b\"]")), "policy.subjects[0].pools[1] is not valid");
    refused(POLICY(SUBJECT_POOLS("[\"..\"]")), "policy.subjects[0].pools[0] is not valid");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"admin\":\"yes\"")), "admin must be true or false");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"serves\":[\"Sample\"]")), "policy.subjects[0].serves[0] is not valid");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"serves\":\"sample\"")), "policy.subjects[0].serves must be an array");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"role\":\"root\"")), "unknown member \"role\"");
    refused("{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"4000\",\"subjects\":[" SUBJECT("alice", FP_A,
                                                                                                          "") "]}",
            "must lie inside the policy's");
    refused(POLICY(SUBJECT("alice", FP_A, "") "," SUBJECT("alice", FP_A, "")), "is used twice");
    /* Duplicate keys are refused by the parser itself. */
    {
        struct berth_error err = BERTH_ERROR_INIT;
        struct berth_policy *p = NULL;
        const char *dup = "{\"schema_version\":1,\"schema_version\":1,\"not_before\":\"1\",\"not_after\":\"2\","
                          "\"subjects\":[]}";
        ck_assert_int_eq(berth_policy_parse(dup, strlen(dup), &p, &err), -EBADMSG);
    }
}
END_TEST

/* A policy valid from 1000 ns after the epoch until 2100, with one subject. */
#define LIVE_POLICY(fp)                                                                                                \
    "{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"4102444800000000000\",\"subjects\":["               \
    "{\"principal\":\"alice\",\"scope\":[\"team\"],\"fingerprints\":[\"" fp "\"],\"pools\":[\"sample\"],"              \
    "\"images\":[],\"limits\":" SAMPLE_LIMITS ",\"not_before\":\"1000\",\"not_after\":\"4102444800000000000\"}]}"

/* Replace the policy file the way an operator's tool does: write a new file, rename over. */
static void replace(const char *dir, const char *path, const char *text, mode_t mode)
{
    char *tmp = test_path(dir, "policy.new");
    test_write_file(tmp, text, strlen(text), mode);
    ck_assert_int_eq(rename(tmp, path), 0);
    free(tmp);
}

/* evidence_quota: defaults, both members optional, bounded, no unknown member. */
START_TEST(evidence_quota)
{
    struct berth_policy *p = parse_ok(POLICY(
        SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"bytes\":1048576,\"objects\":3}") "," SUBJECT("bob", FP_B, "")));

    ck_assert_int_eq(p->subjects[0].evidence_quota.bytes, 1048576);
    ck_assert_int_eq(p->subjects[0].evidence_quota.objects, 3);
    ck_assert_int_eq(p->subjects[1].evidence_quota.bytes, BERTH_EVIDENCE_QUOTA_BYTES_DEFAULT);
    ck_assert_int_eq(p->subjects[1].evidence_quota.bytes, 1073741824);
    ck_assert_int_eq(p->subjects[1].evidence_quota.objects, 10000);
    berth_policy_free(p);
    p = parse_ok(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"objects\":0}")));
    ck_assert_int_eq(p->subjects[0].evidence_quota.bytes, BERTH_EVIDENCE_QUOTA_BYTES_DEFAULT);
    ck_assert_int_eq(p->subjects[0].evidence_quota.objects, 0);
    berth_policy_free(p);
    p = parse_ok(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{}")));
    ck_assert_int_eq(p->subjects[0].evidence_quota.objects, BERTH_EVIDENCE_QUOTA_OBJECTS_DEFAULT);
    berth_policy_free(p);

    refused(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"bytes\":-1}")),
            "policy.subjects[0].evidence_quota.bytes is -1, outside");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"objects\":100000001}")),
            "policy.subjects[0].evidence_quota.objects is 100000001, outside 0..100000000");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"bytes\":1,\"files\":1}")),
            "policy.subjects[0].evidence_quota: unknown member \"files\"");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":[1,2]")),
            "policy.subjects[0].evidence_quota must be a JSON object");
    refused(POLICY(SUBJECT("alice", FP_A, ",\"evidence_quota\":{\"bytes\":\"1\"}")),
            "policy.subjects[0].evidence_quota.bytes");
}
END_TEST

START_TEST(watched_file)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *dir = test_tmpdir(), *path = test_path(dir, "policy.json");
    struct berth_policy_source *src = NULL;
    const struct berth_policy *p = NULL;

    ck_assert_int_eq(berth_policy_source_new(path, &src), 0);
    /* Missing: deny. */
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    ck_assert_ptr_nonnull(strstr(err.message, "no host policy"));
    /* Present: allow; the same file is read once. */
    replace(dir, path, LIVE_POLICY(FP_A), 0600);
    ck_assert_msg(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err) == 0, "%s", err.message);
    ck_assert_ptr_nonnull(berth_policy_subject(p, FP_A, test_now_ns(CLOCK_REALTIME), NULL));
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), 0);
    ck_assert_int_eq(berth_policy_reloads(src), 1);
    /* The fingerprint is revoked: the next check sees it. */
    replace(dir, path, LIVE_POLICY(FP_B), 0600);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), 0);
    ck_assert_ptr_null(berth_policy_subject(p, FP_A, test_now_ns(CLOCK_REALTIME), NULL));
    ck_assert_ptr_nonnull(berth_policy_subject(p, FP_B, test_now_ns(CLOCK_REALTIME), NULL));
    ck_assert_int_eq(berth_policy_reloads(src), 2);
    /* Malformed: deny everything, and keep denying until it changes. */
    replace(dir, path, "{\"schema_version\":1", 0600);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    ck_assert_ptr_nonnull(strstr(err.message, "everything is denied"));
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    /* Writable by others: refused like a malformed file. */
    replace(dir, path, LIVE_POLICY(FP_A), 0666);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    /* Expired policy: deny. */
    replace(dir, path, "{\"schema_version\":1,\"not_before\":\"1000\",\"not_after\":\"2000\",\"subjects\":[]}", 0600);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    ck_assert_ptr_nonnull(strstr(err.message, "not valid now"));
    /* Good again. */
    replace(dir, path, LIVE_POLICY(FP_A), 0600);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), 0);
    /* Deleted: deny. */
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(berth_policy_current(src, test_now_ns(CLOCK_REALTIME), &p, &err), -EACCES);
    berth_policy_source_free(src);
    test_rm_rf(dir);
    free(path);
    free(dir);
}
END_TEST

START_TEST(source_arguments)
{
    struct berth_policy_source *src = NULL;

    ck_assert_int_eq(berth_policy_source_new("relative/policy.json", &src), -EINVAL);
    ck_assert_ptr_null(src);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("policy");
    TCase *tc = test_case(s, "policy");

    tcase_add_test(tc, lookup);
    tcase_add_test(tc, names);
    tcase_add_test(tc, unlisted_clients);
    tcase_add_test(tc, refusals);
    tcase_add_test(tc, evidence_quota);
    tcase_add_test(tc, watched_file);
    tcase_add_test(tc, source_arguments);
    return s;
}

TEST_MAIN()
