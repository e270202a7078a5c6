/* SPDX-License-Identifier: MIT */
/*
 * utf8.h -- strict UTF-8 decoding and UTF-16 code-unit ordering.
 *
 * "Valid" follows RFC 3629 section 4: shortest form only, no surrogate code
 * points (U+D800..U+DFFF), nothing above U+10FFFF.  All functions are pure and
 * thread-safe.
 */
#ifndef BERTH_UTF8_H
#define BERTH_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * berth_utf8_decode() - decode one code point.
 * @s:   the bytes.
 * @len: number of bytes at @s.
 * @pos: in: offset of the first byte of the sequence (< @len); out: offset
 *       just past it.  Left alone on failure.
 * @ret_cp: the code point.
 *
 * Return: 0, or -EILSEQ for a truncated, overlong, surrogate or out-of-range
 * sequence.
 */
int berth_utf8_decode(const char *s, size_t len, size_t *pos, uint32_t *ret_cp);

/**
 * berth_utf8_valid() - whether @len bytes at @s are valid UTF-8.
 * @ret_bad: when not NULL and the bytes are invalid, receives the offset of
 *           the first bad sequence.
 */
bool berth_utf8_valid(const char *s, size_t len, size_t *ret_bad);

/**
 * berth_utf8_lossy() - copy @s (NUL-terminated) into a new string in which
 * every byte that does not start a valid UTF-8 sequence is replaced by
 * U+FFFD, for showing arbitrary bytes (file names) in JSON output.
 * @ret: receives the malloc'd result.
 * Return: 0, -EINVAL, -ENOMEM.
 */
int berth_utf8_lossy(const char *s, char **ret);

/**
 * berth_utf16_compare() - order two valid UTF-8 strings by UTF-16 code units.
 *
 * This is the key order RFC 8785 section 3.2.3 requires: it equals
 * code-point order except that characters above U+FFFF (encoded as
 * surrogate pairs, 0xD800..0xDFFF) sort before U+E000..U+FFFF.  A proper
 * prefix sorts first.  Invalid input compares bytewise from the first bad
 * sequence on, so the order stays total.
 *
 * Return: negative, zero or positive like strcmp().
 */
int berth_utf16_compare(const char *a, size_t alen, const char *b, size_t blen);

#endif /* BERTH_UTF8_H */
