/* SPDX-License-Identifier: MIT */
/* test-enrol.c -- signed worker enrolments and claims (enrol.h). */
#include "pooltest.h"

#include "enrol.h"
#include "jsonobj.h"

#define POOL_HASH "d596d671a7cfb009d85f36c3eba522d0cb1f76e6965bd067563223851f83a8ea"
#define PLACEMENT "9379186c1eca96f14b7fd8a6bcb2afdbdbfb004162260f1847f9634dd549617c"

static struct berth_signing_key *worker, *other;

static void setup(void)
{
    ck_assert_int_eq(berth_signing_key_generate(&worker, NULL), 0);
    ck_assert_int_eq(berth_signing_key_generate(&other, NULL), 0);
}

static void teardown(void)
{
    berth_signing_key_free(worker);
    berth_signing_key_free(other);
}

START_TEST(enrolment)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = NULL;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    json_t *e;

    ck_assert_int_eq(berth_enrolment_create(worker, POOL_HASH, "worker-1", 1796342400000000000LL, &d, &err), 0);
    e = json_object_get(d, "enrolment");
    ck_assert_str_eq(json_string_value(json_object_get(e, "kind")), "pool.enrolment");
    ck_assert_str_eq(json_string_value(json_object_get(e, "keyid")), berth_signing_key_id(worker));
    ck_assert_str_eq(json_string_value(json_object_get(e, "created_ns")), "1796342400000000000");
    ck_assert_uint_eq(strlen(json_string_value(json_object_get(d, "signature"))), BERTH_SIGNATURE_B64_LEN);
    ck_assert_int_eq(berth_enrolment_verify(d, pub, &err), 0);
    ck_assert_mem_eq(pub, berth_signing_key_public(worker), sizeof(pub));

    /* Any change breaks the signature. */
    json_object_set_new(e, "worker_name", json_string("worker-2"));
    ck_assert_int_eq(berth_enrolment_verify(d, pub, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "the enrolment signature does not verify");
    json_object_set_new(e, "worker_name", json_string("worker-1"));
    ck_assert_int_eq(berth_enrolment_verify(d, pub, &err), 0);

    /* Someone else's public key under the worker's key id. */
    {
        char b64[BERTH_PUBLIC_KEY_B64_LEN + 1];
        ck_assert_int_eq(berth_public_key_to_b64url(berth_signing_key_public(other), b64), 0);
        json_object_set_new(e, "public_key", json_string(b64));
        ck_assert_int_eq(berth_enrolment_verify(d, pub, &err), -EBADMSG);
        ck_assert_str_eq(err.message, "enrolment.keyid is not the thumbprint of enrolment.public_key");
    }
    json_object_set_new(e, "extra", json_true());
    ck_assert_int_eq(berth_enrolment_verify(d, pub, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "enrolment: unknown member \"extra\"");
}
END_TEST

START_TEST(claim)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = NULL;

    ck_assert_int_eq(berth_claim_create(worker, POOL_HASH, "worker-1", "job-7", PLACEMENT, 5, &d, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(d, "claim"), "kind")), "pool.claim");
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(worker), &err), 0);
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(other), &err), -EBADMSG);
    json_object_set_new(json_object_get(d, "claim"), "job_id", json_string("job-8"));
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(worker), &err), -EBADMSG);
    json_object_set_new(d, "signature", json_string("short"));
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(worker), &err), -EBADMSG);
    ck_assert_str_eq(err.message, "the signature is not 64 bytes of base64url");
}
END_TEST

/* Schema 2: the run, the job and its receipt bound, and who claimed it. */
START_TEST(claim_v2)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = NULL, *w = NULL;
    const struct berth_claim_params p = {.by_broker = true,
                                         .pool_hash = POOL_HASH,
                                         .worker_name = "dev",
                                         .job_id = "job-7",
                                         .job_digest = "sha256:" POOL_HASH,
                                         .receipt_digest = "sha256:" PLACEMENT,
                                         .run_id = "r0123456789abcdef0123456789abcdef",
                                         .placement_hash = PLACEMENT,
                                         .lease_revision = 2,
                                         .created_ns = 5};
    json_t *c;

    ck_assert_int_eq(berth_claim2_create(worker, &p, &d, &err), 0);
    c = json_object_get(d, "claim");
    ck_assert_int_eq(berth_claim_version(d), 2);
    ck_assert_str_eq(json_string_value(json_object_get(c, "claimant")), "broker");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "lease_revision")), 2);
    ck_assert_str_eq(json_string_value(json_object_get(c, "run_id")), "r0123456789abcdef0123456789abcdef");
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(worker), &err), 0);
    /* Another key: its id is not the claim's keyid. */
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(other), &err), -EBADMSG);
    ck_assert_str_eq(err.message, "claim.keyid is not the id of the key it is checked with");
    /* Without a key, a broker claim's form alone passes, nothing else. */
    ck_assert_int_eq(berth_claim_verify(d, NULL, &err), 0);
    /* Any change breaks the signature. */
    json_object_set_new(c, "lease_revision", json_integer(3));
    ck_assert_int_eq(berth_claim_verify(d, berth_signing_key_public(worker), &err), -EBADMSG);
    ck_assert_str_eq(err.message, "the claim signature does not verify");
    json_object_set_new(c, "claimant", json_string("someone"));
    ck_assert_int_eq(berth_claim_verify(d, NULL, &err), -EBADMSG);
    json_object_set_new(c, "claimant", json_string("broker"));
    json_object_del(c, "receipt_digest");
    ck_assert_int_eq(berth_claim_verify(d, NULL, &err), -EBADMSG);

    /* A worker's claim needs its key. */
    {
        struct berth_claim_params q = p;
        q.by_broker = false;
        q.worker_name = "worker-1";
        ck_assert_int_eq(berth_claim2_create(other, &q, &w, &err), 0);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(w, "claim"), "claimant")), "worker");
        ck_assert_int_eq(berth_claim_verify(w, NULL, &err), -EBADMSG);
        ck_assert_int_eq(berth_claim_verify(w, berth_signing_key_public(other), &err), 0);
    }
    /* Malformed arguments are refused before anything is signed. */
    {
        struct berth_claim_params q = p;
        json_t *none = NULL;
        q.lease_revision = 0;
        ck_assert_int_eq(berth_claim2_create(worker, &q, &none, NULL), -EINVAL);
        q = p;
        q.receipt_digest = "sha256:abc";
        ck_assert_int_eq(berth_claim2_create(worker, &q, &none, NULL), -EINVAL);
        q = p;
        q.run_id = "r/1";
        ck_assert_int_eq(berth_claim2_create(worker, &q, &none, NULL), -EINVAL);
        ck_assert_ptr_null(none);
    }
}
END_TEST

START_TEST(arguments)
{
    json_t *d = NULL;

    ck_assert_int_eq(berth_enrolment_create(worker, "nothex", "w", 1, &d, NULL), -EINVAL);
    ck_assert_int_eq(berth_enrolment_create(worker, POOL_HASH, "bad name", 1, &d, NULL), -EINVAL);
    ck_assert_int_eq(berth_enrolment_create(worker, POOL_HASH, "w", -1, &d, NULL), -EINVAL);
    ck_assert_int_eq(berth_claim_create(worker, POOL_HASH, "w", "job/1", PLACEMENT, 1, &d, NULL), -EINVAL);
    ck_assert_int_eq(berth_claim_create(worker, POOL_HASH, "w", "job", "abc", 1, &d, NULL), -EINVAL);
    ck_assert_ptr_null(d);
    ck_assert(berth_job_id_valid("job-1.a_B"));
    ck_assert(!berth_job_id_valid(""));
    ck_assert(!berth_job_id_valid("."));
    ck_assert(!berth_job_id_valid(".."));
    ck_assert(!berth_job_id_valid("..."));
    ck_assert(berth_job_id_valid(".a"));
    ck_assert(berth_job_id_valid("..-"));
    ck_assert(!berth_worker_name_valid(".."));
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("enrol");
    TCase *tc = test_case(s, "enrol");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, enrolment);
    tcase_add_test(tc, claim);
    tcase_add_test(tc, claim_v2);
    tcase_add_test(tc, arguments);
    return s;
}

TEST_MAIN()
