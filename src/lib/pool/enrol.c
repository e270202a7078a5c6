/* SPDX-License-Identifier: MIT */
/* enrol.c -- signed worker enrolment and claim receipts; see enrol.h. */
#include <errno.h>
#include <string.h>

#include "canon.h"
#include "digest.h"
#include "enrol.h"
#include "jsonobj.h"
#include "macro.h"
#include "pool.h"

#define SCHEMA_VERSION 1

static const char *const enrolment_members[] = {
    "created_ns", "keyid", "kind", "pool_hash", "public_key", "schema_version", "worker_name", NULL,
};
static const char *const claim_members[] = {
    "created_ns", "job_id", "keyid", "kind", "placement_hash", "pool_hash", "schema_version", "worker_name", NULL,
};
static const char *const claim2_members[] = {
    "claimant",       "created_ns", "job_digest",     "job_id",         "keyid",
    "kind",           "lease_revision", "placement_hash", "pool_hash", "receipt_digest",
    "run_id",         "schema_version", "worker_name",    NULL,
};

static bool token_valid(const char *s)
{
    size_t i;

    if (!s || !s[0] || strlen(s) > 128)
        return false;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    /* "." and ".." (any all-dot name) would name a directory, not a job,
     * wherever the token becomes a path or URL segment. */
    return strspn(s, ".") != i;
}

bool berth_worker_name_valid(const char *name)
{
    return token_valid(name);
}

bool berth_job_id_valid(const char *id)
{
    return token_valid(id);
}

int berth_enrolment_create(const struct berth_signing_key *worker, const char *pool_hash, const char *worker_name,
                           int64_t created_ns, json_t **ret_details, struct berth_error *reterr)
{
    _cleanup_json_ json_t *receipt = NULL;
    char pub[BERTH_PUBLIC_KEY_B64_LEN + 1];

    if (!worker || !berth_is_hex(pool_hash, BERTH_HASH_HEX_LEN) || !berth_worker_name_valid(worker_name) ||
        created_ns < 0 || !ret_details)
        return berth_error_set(reterr, -EINVAL, "invalid enrolment arguments");
    if (berth_public_key_to_b64url(berth_signing_key_public(worker), pub) < 0)
        return berth_error_set(reterr, -EIO, "encoding the public key failed");
    receipt = json_pack("{s:o, s:s, s:s, s:s, s:s, s:i, s:s}", "created_ns", berth_json_ns(created_ns), "keyid",
                        berth_signing_key_id(worker), "kind", "pool.enrolment", "pool_hash", pool_hash, "public_key",
                        pub, "schema_version", SCHEMA_VERSION, "worker_name", worker_name);
    if (!receipt)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(worker, "enrolment", receipt, ret_details, reterr);
}

int berth_claim_create(const struct berth_signing_key *worker, const char *pool_hash, const char *worker_name,
                       const char *job_id, const char *placement_hash, int64_t created_ns, json_t **ret_details,
                       struct berth_error *reterr)
{
    _cleanup_json_ json_t *receipt = NULL;

    if (!worker || !berth_is_hex(pool_hash, BERTH_HASH_HEX_LEN) || !berth_is_hex(placement_hash, BERTH_HASH_HEX_LEN) ||
        !berth_worker_name_valid(worker_name) || !berth_job_id_valid(job_id) || created_ns < 0 || !ret_details)
        return berth_error_set(reterr, -EINVAL, "invalid claim arguments");
    receipt =
        json_pack("{s:o, s:s, s:s, s:s, s:s, s:s, s:i, s:s}", "created_ns", berth_json_ns(created_ns), "job_id", job_id,
                  "keyid", berth_signing_key_id(worker), "kind", "pool.claim", "placement_hash", placement_hash,
                  "pool_hash", pool_hash, "schema_version", SCHEMA_VERSION, "worker_name", worker_name);
    if (!receipt)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(worker, "claim", receipt, ret_details, reterr);
}

int berth_claim2_create(const struct berth_signing_key *key, const struct berth_claim_params *p, json_t **ret_details,
                        struct berth_error *reterr)
{
    _cleanup_json_ json_t *receipt = NULL;
    uint8_t raw[BERTH_SHA256_LEN];

    if (!key || !p || !ret_details || !berth_is_hex(p->pool_hash, BERTH_HASH_HEX_LEN) ||
        !berth_is_hex(p->placement_hash, BERTH_HASH_HEX_LEN) || !berth_worker_name_valid(p->worker_name) ||
        !berth_job_id_valid(p->job_id) || !berth_job_id_valid(p->run_id) || !p->job_digest ||
        berth_digest_parse(p->job_digest, raw) < 0 || !p->receipt_digest ||
        berth_digest_parse(p->receipt_digest, raw) < 0 || p->lease_revision < 1 || p->created_ns < 0)
        return berth_error_set(reterr, -EINVAL, "invalid claim arguments");
    receipt = json_pack("{s:s, s:o, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:i, s:s}", "claimant",
                        p->by_broker ? "broker" : "worker", "created_ns", berth_json_ns(p->created_ns), "job_digest",
                        p->job_digest, "job_id", p->job_id, "keyid", berth_signing_key_id(key), "kind", "pool.claim",
                        "lease_revision", (json_int_t)p->lease_revision, "placement_hash", p->placement_hash,
                        "pool_hash", p->pool_hash, "receipt_digest", p->receipt_digest, "run_id", p->run_id,
                        "schema_version", 2, "worker_name", p->worker_name);
    if (!receipt)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(key, "claim", receipt, ret_details, reterr);
}

int berth_claim_version(const json_t *details)
{
    const json_t *v = json_object_get(json_object_get(details, "claim"), "schema_version");

    if (!json_is_integer(v) || (json_integer_value(v) != 1 && json_integer_value(v) != 2))
        return -EBADMSG;
    return (int)json_integer_value(v);
}

/* The receipt's common members; returns it (borrowed from @details). */
static int check_receipt(const json_t *details, const char *what, const char *const *receipt_members, const char *kind,
                         const json_t **ret_receipt, struct berth_error *reterr)
{
    const json_t *receipt = json_object_get(details, what);
    const char *k = NULL, *ph = NULL, *wn = NULL;
    int64_t version = 0, created;
    int64_t want = receipt_members == claim2_members ? 2 : 1;
    int r;

    if ((r = berth_json_only_members(receipt, what, receipt_members, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, what, "kind", true, &k, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, what, "pool_hash", true, &ph, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, what, "worker_name", true, &wn, reterr)) < 0 ||
        (r = berth_json_int_member(receipt, what, "schema_version", true, want, want, &version, reterr)) < 0 ||
        (r = berth_json_ns_member(receipt, what, "created_ns", &created, reterr)) < 0)
        return r;
    if (!streq(k, kind))
        return berth_error_set(reterr, -EBADMSG, "%s.kind must be \"%s\"", what, kind);
    if (!berth_is_hex(ph, BERTH_HASH_HEX_LEN) || !berth_worker_name_valid(wn))
        return berth_error_set(reterr, -EBADMSG, "%s has a malformed pool_hash or worker_name", what);
    *ret_receipt = receipt;
    return 0;
}

int berth_enrolment_verify(const json_t *details, uint8_t ret_public_key[BERTH_ED25519_PUBLIC_LEN],
                           struct berth_error *reterr)
{
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    char kid[BERTH_KEY_ID_LEN + 1];
    const json_t *receipt = NULL;
    const char *pk = NULL, *keyid = NULL;
    int r;

    if ((r = check_receipt(details, "enrolment", enrolment_members, "pool.enrolment", &receipt, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, "enrolment", "public_key", true, &pk, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, "enrolment", "keyid", true, &keyid, reterr)) < 0)
        return r;
    if (berth_public_key_from_b64url(pk, pub) < 0)
        return berth_error_set(reterr, -EBADMSG, "enrolment.public_key is not a base64url Ed25519 key");
    if (berth_public_key_id(pub, kid) < 0 || !streq(kid, keyid))
        return berth_error_set(reterr, -EBADMSG, "enrolment.keyid is not the thumbprint of enrolment.public_key");
    r = berth_envelope_open(details, "enrolment", pub, NULL, reterr);
    if (r < 0)
        return r;
    memcpy(ret_public_key, pub, sizeof(pub));
    return 0;
}

int berth_claim_verify(const json_t *details, const uint8_t public_key[BERTH_ED25519_PUBLIC_LEN],
                       struct berth_error *reterr)
{
    int version = berth_claim_version(details);
    const json_t *receipt = NULL;
    const char *job = NULL, *ph = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    int r;

    if (version < 0)
        return berth_error_set(reterr, -EBADMSG, "claim.schema_version must be 1 or 2");
    if ((r = check_receipt(details, "claim", version == 2 ? claim2_members : claim_members, "pool.claim", &receipt,
                           reterr)) < 0 ||
        (r = berth_json_string_member(receipt, "claim", "job_id", true, &job, reterr)) < 0 ||
        (r = berth_json_string_member(receipt, "claim", "placement_hash", true, &ph, reterr)) < 0)
        return r;
    if (!berth_job_id_valid(job) || !berth_is_hex(ph, BERTH_HASH_HEX_LEN))
        return berth_error_set(reterr, -EBADMSG, "claim has a malformed job_id or placement_hash");
    if (version == 2) {
        const char *claimant = NULL, *run = NULL, *jd = NULL, *rd = NULL, *keyid = NULL;
        char kid[BERTH_KEY_ID_LEN + 1];
        int64_t rev = 0;
        if ((r = berth_json_string_member(receipt, "claim", "claimant", true, &claimant, reterr)) < 0 ||
            (r = berth_json_string_member(receipt, "claim", "run_id", true, &run, reterr)) < 0 ||
            (r = berth_json_string_member(receipt, "claim", "job_digest", true, &jd, reterr)) < 0 ||
            (r = berth_json_string_member(receipt, "claim", "receipt_digest", true, &rd, reterr)) < 0 ||
            (r = berth_json_string_member(receipt, "claim", "keyid", true, &keyid, reterr)) < 0 ||
            (r = berth_json_int_member(receipt, "claim", "lease_revision", true, 1, INT64_MAX, &rev, reterr)) < 0)
            return r;
        if ((!streq(claimant, "broker") && !streq(claimant, "worker")) || !berth_job_id_valid(run) ||
            berth_digest_parse(jd, raw) < 0 || berth_digest_parse(rd, raw) < 0)
            return berth_error_set(reterr, -EBADMSG, "claim has a malformed claimant, run_id or digest");
        if (!public_key && streq(claimant, "broker")) /* the form alone: checked without the broker's key */
            return json_is_string(json_object_get(details, "signature")) && json_object_size(details) == 2
                       ? 0
                       : berth_error_set(reterr, -EBADMSG, "the claim is not {\"claim\", \"signature\"}");
        if (public_key && (berth_public_key_id(public_key, kid) < 0 || !streq(kid, keyid)))
            return berth_error_set(reterr, -EBADMSG, "claim.keyid is not the id of the key it is checked with");
    }
    if (!public_key)
        return berth_error_set(reterr, -EBADMSG, "a worker's claim needs its enrolled key to be checked");
    return berth_envelope_open(details, "claim", public_key, NULL, reterr);
}
