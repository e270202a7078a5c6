/* SPDX-License-Identifier: MIT */
/*
 * jsonobj.h -- strict access to members of parsed JSON objects.
 *
 * Schema code (pools, audit events, jobs) reads documents that
 * berth_json_parse() already accepted; these helpers refuse unknown members
 * and wrong types with messages that name the member, and carry the one
 * encoding berth adds to JSON: 64-bit nanosecond times.
 *
 * Nanosecond timestamps (about 1.8e18 today) do not fit the +/-(2^53-1)
 * integers of canonical JSON, so they travel as strings of decimal digits,
 * "1796342400000000000" -- the encoding the proto3 JSON mapping uses for
 * 64-bit integers.  Durations stay plain integers.
 *
 * All functions are pure and thread-safe.  Errors are -EBADMSG with reterr
 * naming "<what>.<member>".
 */
#ifndef BERTH_JSONOBJ_H
#define BERTH_JSONOBJ_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/cleanup.h>
#include <berth/error.h>

/** json_decref() on scope exit. */
static inline void berth_json_decrefp(json_t **p)
{
    if (*p)
        json_decref(*p);
}
#define _cleanup_json_ BERTH_CLEANUP(berth_json_decrefp)

/**
 * berth_json_only_members() - refuse members of @obj not in @allowed
 * (a NULL-terminated list).  -EBADMSG if @obj is not an object or has an
 * unknown member.
 */
int berth_json_only_members(const json_t *obj, const char *what, const char *const *allowed,
                            struct berth_error *reterr);

/**
 * berth_json_string_member() - the string member @key of @obj.
 * @required: when false, a missing member yields *ret = NULL and 0.
 * Return: 0, or -EBADMSG (missing while required, or not a string).
 */
int berth_json_string_member(const json_t *obj, const char *what, const char *key, bool required, const char **ret,
                             struct berth_error *reterr);

/**
 * berth_json_int_member() - the integer member @key of @obj, checked
 * against [@min, @max].  A missing member is -EBADMSG when @required, else
 * leaves *ret untouched and returns 0 (so *ret can hold the default).
 */
int berth_json_int_member(const json_t *obj, const char *what, const char *key, bool required, int64_t min, int64_t max,
                          int64_t *ret, struct berth_error *reterr);

/** Characters of the longest decimal nanosecond string, without NUL. */
#define BERTH_NS_STRLEN 19

/** berth_json_ns() - a new JSON string holding @ns (>= 0) in decimal; NULL on error. */
json_t *berth_json_ns(int64_t ns);

/**
 * berth_json_ns_value() - parse a nanosecond string: decimal digits, no sign,
 * no leading zero (except "0"), at most INT64_MAX.  Return: 0 or -EBADMSG.
 */
int berth_json_ns_value(const json_t *v, int64_t *ret);

/**
 * berth_json_ns_member() - berth_json_ns_value() of the member @key
 * (required).  Return: 0 or -EBADMSG naming the member.
 */
int berth_json_ns_member(const json_t *obj, const char *what, const char *key, int64_t *ret,
                         struct berth_error *reterr);

/**
 * berth_json_b64_value() - the bytes of @v, a JSON string of unpadded
 * base64url (RFC 4648, section 5): *@ret a malloc'd copy (the caller frees
 * it; NUL-terminated, not counted), *@ret_len its length.  @v NULL (an
 * absent member) gives no bytes: *@ret NULL, *@ret_len 0.
 * Return: 0; -EBADMSG (not a string, or not base64url; *@ret NULL);
 * -ENOMEM.
 */
int berth_json_b64_value(const json_t *v, uint8_t **ret, size_t *ret_len);

/** berth_is_hex() - whether @s is exactly @len lowercase hex digits. */
bool berth_is_hex(const char *s, size_t len);

#endif /* BERTH_JSONOBJ_H */
