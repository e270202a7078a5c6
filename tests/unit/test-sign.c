/* SPDX-License-Identifier: MIT */
/*
 * test-sign.c -- Ed25519 keys and signatures (sign.h).
 *
 * Known answers: RFC 8032 section 7.1 TEST 1 and TEST 2 (keys and
 * signatures) and RFC 8037 appendix A (the same TEST 1 key as a JWK, and
 * its RFC 7638 thumbprint in A.3).
 */
#include "testutil.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "encoding.h"
#include "macro.h"
#include "sign.h"

#define T1_SEED "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
#define T1_PUB "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
#define T1_SIG                                                                                                         \
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24" \
    "655141438e7a100b"
#define T2_SEED "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"
#define T2_SIG                                                                                                         \
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302a"   \
    "eeb00d291612bb0c00"
#define T1_X_B64 "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
#define T1_THUMBPRINT "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"

/* PKCS#8 PEM of a raw seed, written independently of sign.c: the RFC 8410
 * DER prefix followed by the seed, base64 by OpenSSL's encoder. */
static char *pem_from_seed_hex(const char *hex)
{
    static const uint8_t prefix[] = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06,
                                     0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20};
    uint8_t der[48];
    unsigned char b64[80];
    char *pem = NULL;

    memcpy(der, prefix, sizeof(prefix));
    ck_assert_int_eq(berth_hex_decode(hex, 64, der + 16, 32), 0);
    ck_assert_int_eq(EVP_EncodeBlock(b64, der, sizeof(der)), 64);
    ck_assert_int_gt(asprintf(&pem, "-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n", b64), 0);
    return pem;
}

static struct berth_signing_key *key_from_seed_hex(const char *hex)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *pem = pem_from_seed_hex(hex);
    struct berth_signing_key *k = NULL;

    ck_assert_msg(berth_signing_key_from_pem(pem, strlen(pem), &k, &err) == 0, "%s", err.message);
    return k;
}

START_TEST(rfc8032_vectors)
{
    struct berth_signing_key *k1 = key_from_seed_hex(T1_SEED), *k2 = key_from_seed_hex(T2_SEED);
    uint8_t sig[BERTH_ED25519_SIGNATURE_LEN], msg2 = 0x72;
    char hex[2 * BERTH_ED25519_SIGNATURE_LEN + 1];

    berth_hex_encode(berth_signing_key_public(k1), BERTH_ED25519_PUBLIC_LEN, hex);
    ck_assert_str_eq(hex, T1_PUB);
    ck_assert_int_eq(berth_sign(k1, NULL, 0, sig), 0);
    berth_hex_encode(sig, sizeof(sig), hex);
    ck_assert_str_eq(hex, T1_SIG);
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k1), "", 0, sig), 0);

    ck_assert_int_eq(berth_sign(k2, &msg2, 1, sig), 0);
    berth_hex_encode(sig, sizeof(sig), hex);
    ck_assert_str_eq(hex, T2_SIG);
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k2), &msg2, 1, sig), 0);
    /* The other key does not verify it. */
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k1), &msg2, 1, sig), -EBADMSG);
    berth_signing_key_free(k1);
    berth_signing_key_free(k2);
}
END_TEST

START_TEST(rfc8037_key_id)
{
    struct berth_signing_key *k = key_from_seed_hex(T1_SEED);
    char b64[BERTH_PUBLIC_KEY_B64_LEN + 1], kid[BERTH_KEY_ID_LEN + 1];
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];

    ck_assert_int_eq(berth_public_key_to_b64url(berth_signing_key_public(k), b64), 0);
    ck_assert_str_eq(b64, T1_X_B64);
    ck_assert_str_eq(berth_signing_key_id(k), T1_THUMBPRINT);
    ck_assert_int_eq(berth_public_key_from_b64url(T1_X_B64, pub), 0);
    ck_assert_int_eq(berth_public_key_id(pub, kid), 0);
    ck_assert_str_eq(kid, T1_THUMBPRINT);
    ck_assert_int_eq(berth_public_key_from_b64url("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR", pub), -EINVAL);
    ck_assert_int_eq(berth_public_key_from_b64url("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo=", pub), -EINVAL);
    ck_assert_int_eq(berth_public_key_from_b64url("11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo", pub), -EINVAL);
    berth_signing_key_free(k);
}
END_TEST

START_TEST(tamper_detected)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *k = NULL;
    uint8_t sig[BERTH_ED25519_SIGNATURE_LEN];
    const char msg[] = "{\"job\":\"j1\"}";

    ck_assert_int_eq(berth_signing_key_generate(&k, &err), 0);
    ck_assert_int_eq(berth_sign(k, msg, sizeof(msg) - 1, sig), 0);
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k), msg, sizeof(msg) - 1, sig), 0);
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k), "{\"job\":\"j2\"}", sizeof(msg) - 1, sig), -EBADMSG);
    sig[10] ^= 0x40;
    ck_assert_int_eq(berth_verify(berth_signing_key_public(k), msg, sizeof(msg) - 1, sig), -EBADMSG);
    ck_assert_int_eq(berth_verify(NULL, msg, 1, sig), -EINVAL);
    ck_assert_int_eq(berth_sign(NULL, msg, 1, sig), -EINVAL);
    berth_signing_key_free(k);
    berth_signing_key_free(NULL);
}
END_TEST

START_TEST(pem_round_trip)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *k = NULL, *back = NULL;
    char *pem = NULL, *pub_pem = NULL;
    size_t len = 0, pub_len = 0;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];

    ck_assert_int_eq(berth_signing_key_generate(&k, &err), 0);
    ck_assert_int_eq(berth_signing_key_to_pem(k, &pem, &len, &err), 0);
    ck_assert_uint_eq(strlen(pem), len);
    ck_assert_ptr_nonnull(strstr(pem, "-----BEGIN PRIVATE KEY-----\n"));
    ck_assert_int_eq(berth_signing_key_from_pem(pem, len, &back, &err), 0);
    ck_assert_str_eq(berth_signing_key_id(back), berth_signing_key_id(k));
    ck_assert_mem_eq(berth_signing_key_public(back), berth_signing_key_public(k), 32);

    ck_assert_int_eq(berth_public_key_to_pem(berth_signing_key_public(k), &pub_pem, &pub_len, &err), 0);
    ck_assert_ptr_nonnull(strstr(pub_pem, "-----BEGIN PUBLIC KEY-----\n"));
    ck_assert_int_eq(berth_public_key_from_pem(pub_pem, pub_len, pub, &err), 0);
    ck_assert_mem_eq(pub, berth_signing_key_public(k), 32);
    /* A public key is not a private key and vice versa. */
    ck_assert_int_eq(berth_signing_key_from_pem(pub_pem, pub_len, &back, &err), -EBADMSG);
    ck_assert_int_eq(berth_public_key_from_pem(pem, len, pub, &err), -EBADMSG);

    berth_secret_free(pem, len);
    free(pub_pem);
    berth_signing_key_free(k);
    berth_signing_key_free(back);
}
END_TEST

static void assert_pem_refused(const char *pem, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *k = NULL;

    ck_assert_int_eq(berth_signing_key_from_pem(pem, strlen(pem), &k, &err), -EBADMSG);
    ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
    ck_assert_ptr_null(k);
}

START_TEST(pem_strict)
{
    _cleanup_free_ char *good = pem_from_seed_hex(T1_SEED), *two = NULL, *junk = NULL, *lead = NULL, *spaced = NULL,
                        *ec_pem = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *k = NULL;
    EVP_PKEY *ec;
    BIO *bio;
    char *data;
    long n;

    ck_assert_int_gt(asprintf(&two, "%s%s", good, good), 0);
    assert_pem_refused(two, "unexpected data after the PEM block");
    ck_assert_int_gt(asprintf(&junk, "%sgarbage\n", good), 0);
    assert_pem_refused(junk, "unexpected data after the PEM block");
    ck_assert_int_gt(asprintf(&lead, "comment\n%s", good), 0);
    assert_pem_refused(lead, "not a PEM file");
    assert_pem_refused("", "not a PEM file");
    assert_pem_refused("-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n", "PEM");
    assert_pem_refused("-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAA=\n-----END ENCRYPTED PRIVATE KEY-----\n",
                       "expected an unencrypted \"PRIVATE KEY\"");
    /* Whitespace around the block is fine. */
    ck_assert_int_gt(asprintf(&spaced, "\n  %s\n\n", good), 0);
    ck_assert_int_eq(berth_signing_key_from_pem(spaced, strlen(spaced), &k, &err), 0);
    berth_signing_key_free(k);

    /* A well-formed PKCS#8 key of another type. */
    ec = EVP_EC_gen("P-256");
    ck_assert_ptr_nonnull(ec);
    bio = BIO_new(BIO_s_mem());
    ck_assert_int_eq(PEM_write_bio_PrivateKey(bio, ec, NULL, NULL, 0, NULL, NULL), 1);
    n = BIO_get_mem_data(bio, &data);
    ec_pem = strndup(data, (size_t)n);
    BIO_free(bio);
    EVP_PKEY_free(ec);
    assert_pem_refused(ec_pem, "expected Ed25519");
}
END_TEST

START_TEST(save_and_load)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *dir = test_tmpdir(), *path = test_path(dir, "receipt.key"), *lnk = test_path(dir, "link.key"),
                        *hard = test_path(dir, "hard.key"), *big = test_path(dir, "big.key");
    struct berth_signing_key *k = NULL, *back = NULL;
    char before[512], after[512], filler[5000];
    struct stat st;

    ck_assert_int_eq(berth_signing_key_generate(&k, &err), 0);
    ck_assert_int_eq(berth_signing_key_save(k, path, &err), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(st.st_uid, geteuid());
    test_read_file(path, before, sizeof(before));

    /* Never overwritten. */
    berth_signing_key_free(k);
    ck_assert_int_eq(berth_signing_key_generate(&k, &err), 0);
    ck_assert_int_eq(berth_signing_key_save(k, path, &err), -EEXIST);
    test_read_file(path, after, sizeof(after));
    ck_assert_str_eq(before, after);

    ck_assert_int_eq(berth_signing_key_load(path, &back, &err), 0);
    ck_assert_ptr_nonnull(back);
    berth_signing_key_free(back);
    back = NULL;

    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(berth_signing_key_load(path, &back, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "has mode 0640, expected 0600"));
    ck_assert_int_eq(chmod(path, 0600), 0);

    ck_assert_int_eq(symlink(path, lnk), 0);
    ck_assert_int_eq(berth_signing_key_load(lnk, &back, &err), -ELOOP);
    ck_assert_int_eq(link(path, hard), 0);
    ck_assert_int_eq(berth_signing_key_load(path, &back, &err), -EMLINK);
    ck_assert_int_eq(unlink(hard), 0);

    memset(filler, ' ', sizeof(filler));
    test_write_file(big, filler, sizeof(filler), 0600);
    ck_assert_int_eq(berth_signing_key_load(big, &back, &err), -EFBIG);

    if (geteuid() == 0) {
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        ck_assert_int_eq(berth_signing_key_load(path, &back, &err), -EPERM);
        ck_assert_ptr_nonnull(strstr(err.message, "owned by uid 65534"));
    }
    ck_assert_ptr_null(back);
    berth_signing_key_free(k);
    test_rm_rf(dir);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("sign");
    TCase *tc = test_case(s, "sign");

    tcase_add_test(tc, rfc8032_vectors);
    tcase_add_test(tc, rfc8037_key_id);
    tcase_add_test(tc, tamper_detected);
    tcase_add_test(tc, pem_round_trip);
    tcase_add_test(tc, pem_strict);
    tcase_add_test(tc, save_and_load);
    return s;
}

TEST_MAIN()
