/* SPDX-License-Identifier: MIT */
/*
 * canon.h -- strict JSON parsing and canonical JSON serialisation.
 *
 * berth hashes and signs JSON documents, so every document has exactly one
 * byte representation: RFC 8785 (JSON Canonicalization Scheme) restricted to
 * integers:
 *
 *   - no insignificant whitespace;
 *   - object members sorted by their keys' UTF-16 code units (RFC 8785
 *     section 3.2.3);
 *   - strings as UTF-8 with only the escapes JSON requires: \" \\ \b \f \n
 *     \r \t, and \u00XX (lowercase hex) for the other control characters
 *     below U+0020 (RFC 8785 section 3.2.2.2); everything else literal,
 *     including "/" and U+007F;
 *   - numbers are integers in [-(2^53-1), 2^53-1], written in decimal
 *     without leading zeros or "+" (the range in which RFC 8785's ECMAScript
 *     number serialisation and plain integer printing agree); floats,
 *     exponents and -0 do not exist in berth documents.
 *
 * Parsing is strict: jansson (with JSON_REJECT_DUPLICATES) validates the
 * grammar, UTF-8, escapes (lone surrogates are errors) and duplicate keys;
 * this module adds a caller-given byte bound, a nesting bound of
 * BERTH_JSON_MAX_DEPTH, and refuses a byte-order mark, fractions, exponents,
 * -0, NUL (raw or escaped), integers outside the range above, and documents
 * with more than BERTH_JSON_MAX_ITEMS items or BERTH_JSON_MAX_CONTAINERS
 * arrays and objects.  Whitespace around the value (including a final
 * newline) is allowed; any other trailing byte is an error.
 *
 * Error messages name a byte offset (counting from 0: the start of the
 * offending token for the checks above, the point where parsing stopped for
 * grammar errors) or a member path such as $.limits.pids or $["odd key"][2].
 *
 * All functions are thread-safe (no shared state).
 */
#ifndef BERTH_CANON_H
#define BERTH_CANON_H

#include <stddef.h>

#include <jansson.h>

#include <berth/error.h>

/** Deepest nesting of arrays and objects accepted; a top-level [] is depth 1. */
#define BERTH_JSON_MAX_DEPTH 32

/** Most values plus member names in one document (each string, number,
 * literal, array, object and key counts once). */
#define BERTH_JSON_MAX_ITEMS 1048576

/** Most arrays plus objects in one document.  Each costs jansson a few hundred
 * bytes, so this bounds the memory a small hostile document can claim. */
#define BERTH_JSON_MAX_CONTAINERS 131072

/** Largest magnitude of an integer in a berth document: 2^53 - 1. */
#define BERTH_JSON_MAX_INTEGER 9007199254740991LL

/**
 * berth_json_parse() - parse one JSON document strictly.
 * @buf:       the bytes; need not be NUL-terminated.
 * @len:       number of bytes at @buf.
 * @max_bytes: largest accepted @len, in bytes (the per-document-type bound).
 * @ret:       receives a new reference to the parsed value (any JSON type).
 * @reterr:    optional detail: syntax errors name the byte offset, value
 *             errors name the member path (for example "$.limits.pids").
 *
 * Return: 0; -EFBIG when @len > @max_bytes; -EBADMSG when the bytes are not
 * an acceptable document; -EINVAL for NULL arguments; -ENOMEM.
 */
int berth_json_parse(const char *buf, size_t len, size_t max_bytes, json_t **ret, struct berth_error *reterr);

/**
 * berth_json_serialize() - write the canonical form of @value.
 * @value:     any JSON value built from objects, arrays, strings, integers,
 *             true, false and null.
 * @max_bytes: largest output accepted, in bytes; 0 means no bound.
 * @ret:       receives malloc'd, NUL-terminated canonical bytes; free(3) it.
 * @ret_len:   receives their length (without the NUL); may be NULL.
 * @reterr:    optional detail naming the offending member path.
 *
 * Return: 0; -EINVAL when @value holds something a berth document cannot
 * (a real number, an integer out of range, NUL or invalid UTF-8 in a string
 * or key, nesting over BERTH_JSON_MAX_DEPTH) or an argument is NULL;
 * -EFBIG when the output would exceed @max_bytes; -ENOMEM.
 */
int berth_json_serialize(const json_t *value, size_t max_bytes, char **ret, size_t *ret_len,
                         struct berth_error *reterr);

/**
 * berth_json_emit() - berth_json_serialize() of @doc without a bound, then
 * release @doc: for ops that build a document and hand back its bytes.
 * @doc: stolen, may be NULL (a json_pack() that failed): -ENOMEM then.
 * Return: 0 or the errors of berth_json_serialize(); -ENOMEM.
 */
int berth_json_emit(json_t *doc, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * berth_json_canonicalize() - parse @len bytes and serialise them canonically.
 *
 * Arguments and errors are those of berth_json_parse() followed by
 * berth_json_serialize() (the output bound is @max_bytes as well; canonical
 * output is never longer than an acceptable input).  serialize(parse(x)) == x
 * for every canonical x.
 */
int berth_json_canonicalize(const char *buf, size_t len, size_t max_bytes, char **ret, size_t *ret_len,
                            struct berth_error *reterr);

#endif /* BERTH_CANON_H */
