/* SPDX-License-Identifier: MIT */
/*
 * sign.h -- Ed25519 keys and signatures (RFC 8032).
 *
 * Key material and its encodings:
 *   - a private key file holds exactly one unencrypted PKCS#8 PEM block
 *     ("-----BEGIN PRIVATE KEY-----", RFC 5208 / RFC 8410), owned by the
 *     invoking user, mode 0600, one hard link, at most 4 KiB;
 *   - a public key is 32 raw bytes, written either as unpadded base64url
 *     (RFC 4648 section 5) or as a SubjectPublicKeyInfo PEM block
 *     ("-----BEGIN PUBLIC KEY-----", RFC 8410);
 *   - a key id is the RFC 7638 JWK thumbprint of the public key: unpadded
 *     base64url of SHA-256 over {"crv":"Ed25519","kty":"OKP","x":"<key>"}
 *     (RFC 8037 section 2 for the OKP members).
 *
 * OpenSSL parses and writes PEM (keypem.c, so that a program that only signs
 * and verifies does not link OpenSSL); libsodium signs and verifies (its verifier
 * rejects non-canonical signatures and small-order keys).  Private keys live
 * in libsodium guarded memory and are wiped when freed.
 *
 * Thread safety: all functions are thread-safe; a key may be used for
 * signing from several threads at once.
 */
#ifndef BERTH_SIGN_H
#define BERTH_SIGN_H

#include <stddef.h>
#include <stdint.h>

#include <berth/error.h>

#define BERTH_ED25519_PUBLIC_LEN 32     /**< raw public key bytes */
#define BERTH_ED25519_SEED_LEN 32       /**< private key (RFC 8032 seed) bytes */
#define BERTH_ED25519_SIGNATURE_LEN 64  /**< raw signature bytes */
#define BERTH_KEY_ID_LEN 43             /**< characters of a key id, without NUL */
#define BERTH_PUBLIC_KEY_B64_LEN 43     /**< characters of a base64url public key, without NUL */
#define BERTH_SIGNING_KEY_FILE_MAX 4096 /**< largest private key file accepted, in bytes */

/** An Ed25519 private key with its public key and key id (opaque). */
struct berth_signing_key;

/**
 * berth_signing_key_generate() - make a new key from the system CSPRNG.
 * Return: 0; -ENOMEM; -EIO when libsodium cannot initialise.
 */
int berth_signing_key_generate(struct berth_signing_key **ret, struct berth_error *reterr);

/**
 * berth_signing_key_from_seed() - the key whose RFC 8032 private key (the
 * 32-byte seed) is @seed, which the caller then wipes.
 * Return: 0; -EINVAL (a NULL argument); -ENOMEM; -EIO when libsodium
 * cannot initialise or derive it.
 */
int berth_signing_key_from_seed(const uint8_t seed[BERTH_ED25519_SEED_LEN], struct berth_signing_key **ret,
                                struct berth_error *reterr);

/**
 * berth_signing_key_from_pem() - parse one PKCS#8 "PRIVATE KEY" PEM block.
 * @pem, @len: the text; whitespace may surround the block, nothing else.
 * Return: 0; -EBADMSG when the text is not exactly one unencrypted Ed25519
 * PKCS#8 block; -ENOMEM; -EIO.
 */
int berth_signing_key_from_pem(const char *pem, size_t len, struct berth_signing_key **ret, struct berth_error *reterr);

/**
 * berth_signing_key_to_pem() - write the key as a PKCS#8 PEM block.
 * @ret: receives malloc'd NUL-terminated text holding the secret; release it
 *       with berth_secret_free().
 * Return: 0, -ENOMEM, -EIO.
 */
int berth_signing_key_to_pem(const struct berth_signing_key *key, char **ret, size_t *ret_len,
                             struct berth_error *reterr);

/**
 * berth_signing_key_load() - read a private key file.
 * @path: absolute path; opened with berth_open_trusted() (no symlinks) and
 *        checked: regular file, owned by the effective uid, mode exactly
 *        0600, one hard link, at most BERTH_SIGNING_KEY_FILE_MAX bytes.
 * Return: 0 or the errors of berth_read_file_at() and
 * berth_signing_key_from_pem().
 */
int berth_signing_key_load(const char *path, struct berth_signing_key **ret, struct berth_error *reterr);

/**
 * berth_signing_key_save() - publish the key at the absolute @path with mode
 * 0600, never overwriting (berth_publish_path()).
 * Return: 0; -EEXIST when @path exists; the errors of berth_publish_path().
 */
int berth_signing_key_save(const struct berth_signing_key *key, const char *path, struct berth_error *reterr);

/** berth_signing_key_free() - wipe and release; accepts NULL. */
void berth_signing_key_free(struct berth_signing_key *key);

/**
 * berth_signing_key_seed() - the key's 32-byte RFC 8032 private key (points
 * into @key), for writing it out (keypem.c); a secret: never log it.
 */
const uint8_t *berth_signing_key_seed(const struct berth_signing_key *key);

/** berth_signing_key_public() - the key's 32-byte public key (points into @key). */
const uint8_t *berth_signing_key_public(const struct berth_signing_key *key);

/** berth_signing_key_id() - the key's RFC 7638 key id (points into @key). */
const char *berth_signing_key_id(const struct berth_signing_key *key);

/**
 * berth_sign() - Ed25519 signature of @len bytes at @msg.
 * Return: 0, or -EINVAL for NULL arguments.
 */
int berth_sign(const struct berth_signing_key *key, const void *msg, size_t len,
               uint8_t sig[BERTH_ED25519_SIGNATURE_LEN]);

/**
 * berth_verify() - check an Ed25519 signature.
 * Return: 0 when valid; -EBADMSG when the signature does not verify (or the
 * key is not a valid point); -EINVAL for NULL arguments; -EIO.
 */
int berth_verify(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const void *msg, size_t len,
                 const uint8_t sig[BERTH_ED25519_SIGNATURE_LEN]);

/**
 * berth_public_key_id() - RFC 7638 thumbprint of @pub into @out
 * (BERTH_KEY_ID_LEN + 1 bytes).  Return: 0, -EINVAL, -EIO.
 */
int berth_public_key_id(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char out[BERTH_KEY_ID_LEN + 1]);

/** berth_public_key_to_b64url() - unpadded base64url of @pub into @out.  Return: 0 or -EINVAL. */
int berth_public_key_to_b64url(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char out[BERTH_PUBLIC_KEY_B64_LEN + 1]);

/**
 * berth_public_key_from_b64url() - parse exactly 43 base64url characters
 * (NUL-terminated).  Return: 0 or -EINVAL.
 */
int berth_public_key_from_b64url(const char *text, uint8_t pub[BERTH_ED25519_PUBLIC_LEN]);

/**
 * berth_public_key_to_pem() - SubjectPublicKeyInfo PEM of @pub.
 * @ret: receives malloc'd NUL-terminated text; free(3) it.
 * Return: 0, -ENOMEM, -EIO.
 */
int berth_public_key_to_pem(const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], char **ret, size_t *ret_len,
                            struct berth_error *reterr);

/**
 * berth_public_key_from_pem() - parse one "PUBLIC KEY" PEM block holding an
 * Ed25519 key.  Return: 0 or -EBADMSG.
 */
int berth_public_key_from_pem(const char *pem, size_t len, uint8_t pub[BERTH_ED25519_PUBLIC_LEN],
                              struct berth_error *reterr);

/** berth_secret_free() - wipe @len bytes at @buf, then free(3) it; accepts NULL. */
void berth_secret_free(char *buf, size_t len);

#endif /* BERTH_SIGN_H */
