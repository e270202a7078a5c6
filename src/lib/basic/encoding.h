/* SPDX-License-Identifier: MIT */
/*
 * encoding.h -- hex and base64url (RFC 4648 section 5, no padding) codecs.
 *
 * Decoders are strict: the exact alphabet, no whitespace, no padding, and
 * (for base64url) unused trailing bits must be zero, so each byte string has
 * exactly one accepted text form.  Pure and thread-safe.
 */
#ifndef BERTH_ENCODING_H
#define BERTH_ENCODING_H

#include <stddef.h>
#include <stdint.h>

/** Characters berth_hex_encode() writes for @n bytes, without the NUL. */
#define BERTH_HEX_LEN(n) (2 * (n))

/**
 * berth_hex_encode() - lowercase hex of @len bytes into @out.
 * @out must hold BERTH_HEX_LEN(@len) + 1 bytes; it is NUL-terminated.
 */
void berth_hex_encode(const uint8_t *data, size_t len, char *out);

/**
 * berth_hex_decode() - decode exactly 2 * @outlen lowercase hex characters.
 * @hex:    the text; exactly @hexlen characters are read.
 * @out:    receives @outlen bytes.
 * Return: 0, or -EINVAL when @hexlen != 2 * @outlen or a character is not
 * in [0-9a-f] (uppercase is refused: digests have one spelling).
 */
int berth_hex_decode(const char *hex, size_t hexlen, uint8_t *out, size_t outlen);

/** Characters berth_base64url_encode() writes for @n bytes, without the NUL. */
#define BERTH_BASE64URL_LEN(n) (((n) / 3) * 4 + (((n) % 3) ? ((n) % 3) + 1 : 0))

/**
 * berth_base64url_encode() - unpadded base64url of @len bytes.
 * @out must hold BERTH_BASE64URL_LEN(@len) + 1 bytes; it is NUL-terminated.
 * Return: 0, or -EINVAL for NULL arguments.
 */
int berth_base64url_encode(const uint8_t *data, size_t len, char *out, size_t outsz);

/**
 * berth_base64url_decode() - decode unpadded base64url text.
 * @text, @textlen: the characters (no NUL needed).
 * @out, @outsz:    destination and its size in bytes.
 * @ret_len:        receives the number of bytes decoded.
 * Return: 0; -EINVAL for characters outside the alphabet, padding,
 * whitespace, an impossible length or non-zero trailing bits; -ENOBUFS when
 * the result does not fit in @outsz.
 */
int berth_base64url_decode(const char *text, size_t textlen, uint8_t *out, size_t outsz, size_t *ret_len);

#endif /* BERTH_ENCODING_H */
