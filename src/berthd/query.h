/* SPDX-License-Identifier: MIT */
/*
 * query.h -- the query string of a request-target (RFC 3986 section 3.4),
 * parsed strictly against the parameters a route takes.
 *
 * The form is key "=" value pairs separated by "&": every pair has a key
 * and an "=", no key appears twice, only keys the caller allows, at most
 * BERTHD_QUERY_PARAMS_MAX pairs in at most BERTHD_QUERY_MAX bytes.  Values
 * are percent-decoded (RFC 3986 section 2.1; "+" stays "+": this is not
 * HTML form encoding) into at most BERTHD_QUERY_VALUE_MAX bytes, and a
 * decoded value may hold only visible ASCII (0x21-0x7e).  Keys are taken
 * as sent (no decoding): [a-z_] only.  The framing layer already refused
 * bytes RFC 3986 does not allow in a request-target.
 *
 * Pure functions over caller memory; thread-safe.
 */
#ifndef BERTHD_QUERY_H
#define BERTHD_QUERY_H

#include <stddef.h>

#define BERTHD_QUERY_MAX 2048       /**< longest query string, bytes */
#define BERTHD_QUERY_PARAMS_MAX 8   /**< most parameters */
#define BERTHD_QUERY_VALUE_MAX 512  /**< longest decoded value, bytes */

/**
 * berthd_query_parse() - parse @query (the bytes after "?", NUL-terminated;
 * NULL or "" for none).
 * @allowed: the keys the route takes, NULL-terminated (at most
 *           BERTHD_QUERY_PARAMS_MAX).
 * @ret_values: an array parallel to @allowed: on 0, [i] is a malloc'd
 *           NUL-terminated decoded value of @allowed[i], or NULL when
 *           absent; the caller frees them (berthd_query_free()).  On
 *           failure every entry is NULL.
 * @why, @why_size: on -EBADMSG, one sentence saying which rule failed and
 *           where (the key, never the value).
 * Return: 0; -EBADMSG; -ENOMEM; -EINVAL (NULL @allowed or @ret_values, or
 * too many allowed keys).
 */
int berthd_query_parse(const char *query, const char *const *allowed, char **ret_values, char *why, size_t why_size);

/** berthd_query_free() - free the values of @allowed's length in @values and set them NULL. */
void berthd_query_free(const char *const *allowed, char **values);

#endif
