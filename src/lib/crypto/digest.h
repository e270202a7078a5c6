/* SPDX-License-Identifier: MIT */
/*
 * digest.h -- SHA-256 digests as berth writes them.
 *
 * Two spellings exist: the OCI form "sha256:<64 lowercase hex>" (OCI
 * image-spec descriptor.md, "Digests") used for jobs, images and receipts,
 * and bare lowercase hex used for pool hashes (the pools reference).
 *
 * The hash is SHA-256 (FIPS 180-4): berth_sha256() and the berth_sha256_*
 * stream functions below.  Two implementations give the same digests
 * (sha256-impl.h), and a program links exactly one: OpenSSL's (sha256-openssl.c, in
 * BERTH_CORE_LIBS: berthd, berthctl, the plugins, which hash image layers
 * and benefit from the CPU's SHA extensions), or sha256-lazy.c (in
 * BERTH_SHIM_LIBS: berth-oci-shim, started for every job, for which
 * linking and initialising OpenSSL cost about 2.5 ms of a job's start on
 * the reference machine): libsodium for berth_sha256(), OpenSSL loaded
 * with dlopen(3) by the first stream.  Neither is part of libberth.la.
 */
#ifndef BERTH_DIGEST_H
#define BERTH_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h> /* BERTH_DIGEST_BUFSZ */

#define BERTH_SHA256_LEN 32     /**< raw digest bytes */
#define BERTH_SHA256_HEX_LEN 64 /**< hex characters, without NUL */
#define BERTH_DIGEST_PREFIX "sha256:"
#define BERTH_DIGEST_STRLEN 71 /**< "sha256:" + 64, without NUL */

/**
 * berth_sha256() - hash @len bytes at @data into @out.
 * Return: 0, -EINVAL (NULL @out, or NULL @data with @len > 0), -EIO when
 * OpenSSL fails.  Thread-safe.
 */
int berth_sha256(const void *data, size_t len, uint8_t out[BERTH_SHA256_LEN]);

/** berth_digest_format() - "sha256:<hex>" of a raw digest into @out (BERTH_DIGEST_BUFSZ bytes). */
void berth_digest_format(const uint8_t raw[BERTH_SHA256_LEN], char out[BERTH_DIGEST_BUFSZ]);

/**
 * berth_digest_bytes() - "sha256:<hex>" of @len bytes at @data.
 * Return: as berth_sha256().
 */
int berth_digest_bytes(const void *data, size_t len, char out[BERTH_DIGEST_BUFSZ]);

/**
 * berth_digest_fd() - "sha256:<hex>" of everything readable from @fd, from
 * its current offset to EOF, in 64 KiB reads (no size bound: callers bound
 * the file first when they need to).
 * Return: 0, -EINVAL, -ENOMEM, -EIO, or the read(2) error.
 */
int berth_digest_fd(int fd, char out[BERTH_DIGEST_BUFSZ]);

/**
 * berth_sha256_copy() - hash the bytes of @src_fd from byte @offset to its
 * end, read with pread(2) (the descriptor's position is neither used nor
 * moved), and, when @dst_fd is not -1, write the same bytes to @dst_fd
 * (write(2) at its position: a pipe or socket will do).
 * @max_bytes: read at most @max_bytes + 1 bytes: *@ret_len over @max_bytes
 *             means "longer"; then only @max_bytes were written and
 *             @ret_raw is not set.
 * @ret_raw:   receives the SHA-256 of the bytes when *@ret_len <= @max_bytes.
 * @ret_len:   receives the number of bytes read.
 * Return: 0; -EINVAL; -ENOMEM; -EIO (the hash failed); the errno of
 * pread(2) (reterr says "reading") or of write(2) (reterr says "writing",
 * for example -ENOSPC or -EPIPE).  Thread-safe.
 */
int berth_sha256_copy(int src_fd, uint64_t offset, int dst_fd, uint64_t max_bytes, uint8_t ret_raw[BERTH_SHA256_LEN],
                      uint64_t *ret_len, struct berth_error *reterr);

/**
 * berth_digest_fd_matches() - whether the file @fd holds exactly @size
 * bytes whose digest is @digest ("sha256:<hex>"), read from offset 0; @fd
 * is left at offset 0.
 * Return: 0 (it does); -EBADMSG (another size or digest; @reterr says
 * which); -EINVAL; or the errno of pread(2) or lseek(2).
 */
int berth_digest_fd_matches(int fd, uint64_t size, const char *digest, struct berth_error *reterr);

/**
 * berth_digest_json() - "sha256:<hex>" of the canonical serialisation of @value
 * (canon.h).  Return: 0, the errors of berth_json_serialize(), -EIO.
 */
int berth_digest_json(const json_t *value, char out[BERTH_DIGEST_BUFSZ], struct berth_error *reterr);

/**
 * berth_digest_parse() - parse exactly "sha256:" followed by 64 lowercase
 * hex digits (NUL-terminated) into @raw.
 * Return: 0, or -EINVAL for any other spelling (uppercase, other algorithm,
 * wrong length, trailing bytes).
 */
int berth_digest_parse(const char *text, uint8_t raw[BERTH_SHA256_LEN]);

/**
 * struct berth_sha256 - incremental SHA-256 for streams (opaque).
 *
 * berth_sha256_new() returns 0 and a new context in *@ret, or -ENOMEM/-EIO;
 * berth_sha256_update() adds bytes (0 or -EIO); berth_sha256_final() writes
 * the digest and may be called once (0 or -EIO); berth_sha256_free()
 * accepts NULL.  A context is not thread-safe; separate contexts are.
 */
struct berth_sha256;
int berth_sha256_new(struct berth_sha256 **ret);
int berth_sha256_update(struct berth_sha256 *ctx, const void *data, size_t len);
int berth_sha256_final(struct berth_sha256 *ctx, uint8_t out[BERTH_SHA256_LEN]);
void berth_sha256_free(struct berth_sha256 *ctx);

#endif /* BERTH_DIGEST_H */
