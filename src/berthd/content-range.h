/* SPDX-License-Identifier: MIT */
/*
 * content-range.h -- the byte range of one upload chunk, as the OCI
 * distribution spec's chunked blob upload sends it in Content-Range
 * ("<start>-<end>", both inclusive, RFC 9110 section 14.1.1's
 * first-pos "-" last-pos without the "bytes " unit) and as berthd reports
 * the progress of an upload in Range ("0-<offset - 1>").
 *
 * Strict: exactly 1*DIGIT "-" 1*DIGIT, no sign, no whitespace (the framing
 * layer trimmed the field value's OWS), no leading zeros, each number at
 * most BERTHD_RANGE_POS_MAX (2^53 - 1, what JSON carries exactly) and
 * start <= end.  The RFC 9110 forms with a unit ("bytes 0-9/10"), a
 * suffix ("-5") or an open end ("5-") are refused.
 *
 * Pure functions; thread-safe.
 */
#ifndef BERTHD_CONTENT_RANGE_H
#define BERTHD_CONTENT_RANGE_H

#include <stddef.h>
#include <stdint.h>

/** Largest position accepted, 2^53 - 1. */
#define BERTHD_RANGE_POS_MAX 9007199254740991ULL
/** Buffer size for berthd_range_format(): "0-" + 16 digits + NUL, with room. */
#define BERTHD_RANGE_BUFSZ 40

/**
 * berthd_content_range_parse() - parse @text (NUL-terminated) as
 * "<start>-<end>".
 * @ret_start, @ret_end: the first and the last byte of the chunk (so it
 *             holds @ret_end - @ret_start + 1 bytes); written on 0 only.
 * Return: 0; -EBADMSG when @text is not that form (see the top); -EINVAL
 * for a NULL argument.
 */
int berthd_content_range_parse(const char *text, uint64_t *ret_start, uint64_t *ret_end);

/**
 * berthd_range_format() - the Range value for an upload holding @offset
 * bytes, "0-<offset - 1>", into @buf (BERTHD_RANGE_BUFSZ bytes).
 * Return: 0; -EINVAL when @offset is 0 (no byte: an OCI Range cannot say so,
 * so berthd sends no Range then) or above BERTHD_RANGE_POS_MAX + 1.
 */
int berthd_range_format(uint64_t offset, char buf[BERTHD_RANGE_BUFSZ]);

#endif
