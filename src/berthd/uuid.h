/* SPDX-License-Identifier: MIT */
/*
 * uuid.h -- random (version 4) UUIDs, RFC 9562 section 5.4, in their
 * canonical lowercase text form: the names of upload sessions
 * (/v1/evidence/uploads/<uuid>).
 *
 * Thread-safe; no global state.
 */
#ifndef BERTHD_UUID_H
#define BERTHD_UUID_H

#include <stdbool.h>

/** Characters of a UUID's text form, without the NUL. */
#define BERTHD_UUID_LEN 36

/**
 * berthd_uuid_new() - a new version 4 UUID from getrandom(2) (122 random
 * bits), as 36 lowercase characters and a NUL into @out.
 * Return: 0; -EIO when the kernel gave no random bytes; -EINVAL (NULL).
 */
int berthd_uuid_new(char out[BERTHD_UUID_LEN + 1]);

/**
 * berthd_uuid_valid() - whether @text (NUL-terminated) is exactly what
 * berthd_uuid_new() makes: 8-4-4-4-12 lowercase hex digits, version 4,
 * variant 10xx (RFC 9562 sections 4.1 and 4.2).  Uppercase, braces, "urn:"
 * and other versions are refused.  False for NULL.
 */
bool berthd_uuid_valid(const char *text);

#endif
