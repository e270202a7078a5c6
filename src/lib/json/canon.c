/* SPDX-License-Identifier: MIT */
/* canon.c -- strict JSON parsing and canonical serialisation; see canon.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "canon.h"
#include "jsonobj.h"
#include "macro.h"
#include "utf8.h"

/* ------------------------------------------------------------------------- */
/* Member paths for error messages ("$.a[3].b").  A fixed stack of frames is  */
/* kept while walking and only formatted when something fails.                */

struct path {
    int depth;
    struct {
        const char *key; /* NULL: array element */
        size_t index;
    } frame[BERTH_JSON_MAX_DEPTH + 1];
};

/* Member names are shown as .name when they are plain identifiers and as
 * ["..."] otherwise, with quotes, backslashes and control characters escaped
 * and long names cut, so that a message stays one printable line. */
static size_t path_key(char *out, size_t outsz, const char *key)
{
    size_t n = 0, i;
    bool plain = key[0] != '\0';

    for (i = 0; key[i]; i++)
        if (!(isalnum((unsigned char)key[i]) || key[i] == '_' || key[i] == '-'))
            plain = false;
    if (plain && i <= 64)
        return (size_t)snprintf(out, outsz, ".%s", key);

    n = (size_t)snprintf(out, outsz, "[\"");
    for (i = 0; key[i] && n < outsz; i++) {
        unsigned char c = (unsigned char)key[i];
        if (i == 64) {
            n += (size_t)snprintf(out + n, outsz - n, "...");
            break;
        }
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(out + n, outsz - n, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            n += (size_t)snprintf(out + n, outsz - n, "\\u%04x", c);
        else
            n += (size_t)snprintf(out + n, outsz - n, "%c", c);
    }
    if (n < outsz)
        n += (size_t)snprintf(out + n, outsz - n, "\"]");
    return n;
}

static void path_format(const struct path *p, char *out, size_t outsz)
{
    size_t n;
    int i;

    n = (size_t)snprintf(out, outsz, "$");
    for (i = 0; i < p->depth && n < outsz; i++) {
        if (p->frame[i].key)
            n += path_key(out + n, outsz - n, p->frame[i].key);
        else
            n += (size_t)snprintf(out + n, outsz - n, "[%zu]", p->frame[i].index);
    }
}

BERTH_PRINTF(3, 4)
static int path_error(struct berth_error *reterr, const struct path *p, const char *fmt, ...)
{
    char where[256], what[256];
    va_list ap;

    path_format(p, where, sizeof(where));
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return berth_error_set(reterr, -EINVAL, "%s: %s", where, what);
}

/* ------------------------------------------------------------------------- */
/* Lexical pre-pass.  One linear scan over the bytes, before jansson builds   */
/* anything, for what jansson does not refuse or cannot bound: a NUL byte     */
/* (jansson skips one after a number or literal), nesting deeper than 32      */
/* (jansson's limit is compiled in at 2048), fractions, exponents and -0, and */
/* the number of items (jansson spends a few hundred bytes per object, so a   */
/* small document of many empty objects would otherwise cost gigabytes).     */

static int prescan(const char *buf, size_t len, struct berth_error *reterr)
{
    bool in_string = false;
    size_t i, j, items = 0, containers = 0;
    const char *nul;
    int depth = 0;

    nul = memchr(buf, '\0', len);
    if (nul)
        return berth_error_set(reterr, -EBADMSG, "byte %zu: a NUL byte is not allowed", (size_t)(nul - buf));
    if (len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0)
        return berth_error_set(reterr, -EBADMSG, "byte 0: a byte order mark is not allowed");

    for (i = 0; i < len; i++) {
        char c = buf[i];

        if (in_string) {
            if (c == '\\')
                i++; /* the escaped byte cannot end the string */
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"':
        case 't':
        case 'f':
        case 'n':
            in_string = c == '"';
            if (++items > BERTH_JSON_MAX_ITEMS)
                goto too_many;
            break;
        case '[':
        case '{':
            if (++depth > BERTH_JSON_MAX_DEPTH)
                return berth_error_set(reterr, -EBADMSG, "byte %zu: nesting deeper than %d levels", i,
                                       BERTH_JSON_MAX_DEPTH);
            if (++items > BERTH_JSON_MAX_ITEMS)
                goto too_many;
            if (++containers > BERTH_JSON_MAX_CONTAINERS)
                return berth_error_set(reterr, -EBADMSG, "byte %zu: more than %d arrays and objects", i,
                                       BERTH_JSON_MAX_CONTAINERS);
            break;
        case ']':
        case '}':
            if (depth > 0)
                depth--;
            break;
        case '-':
        case '0' ... '9': {
            bool fraction = false;

            for (j = i; j < len && strchr("0123456789+-.eE", buf[j]); j++)
                fraction = fraction || buf[j] == '.' || buf[j] == 'e' || buf[j] == 'E';
            if (fraction)
                return berth_error_set(reterr, -EBADMSG,
                                       "byte %zu: number '%.*s' is not an integer (fractions and exponents are "
                                       "not allowed)",
                                       i, (int)(j - i > 40 ? 40 : j - i), buf + i);
            if (j - i == 2 && buf[i] == '-' && buf[i + 1] == '0')
                return berth_error_set(reterr, -EBADMSG, "byte %zu: -0 is not allowed", i);
            if (++items > BERTH_JSON_MAX_ITEMS)
                goto too_many;
            i = j - 1;
            break;
        }
        default: break;
        }
    }
    return 0;

too_many:
    return berth_error_set(reterr, -EBADMSG, "byte %zu: more than %d values and member names", i, BERTH_JSON_MAX_ITEMS);
}

/* Integer range check after parsing; jansson already bounded to int64. */
static int check_value(const json_t *v, struct path *p, struct berth_error *reterr)
{
    const char *key;
    json_t *child;
    size_t i;
    int r;

    switch (json_typeof(v)) {
    case JSON_INTEGER: {
        json_int_t n = json_integer_value(v);
        if (n > BERTH_JSON_MAX_INTEGER || n < -BERTH_JSON_MAX_INTEGER)
            return path_error(reterr, p, "integer %" JSON_INTEGER_FORMAT " is outside +/-(2^53-1)", n);
        return 0;
    }
    case JSON_REAL: return path_error(reterr, p, "real numbers are not allowed");
    case JSON_OBJECT:
        if (p->depth >= BERTH_JSON_MAX_DEPTH)
            return path_error(reterr, p, "nesting deeper than %d levels", BERTH_JSON_MAX_DEPTH);
        json_object_foreach((json_t *)v, key, child)
        {
            p->frame[p->depth].key = key;
            p->depth++;
            r = check_value(child, p, reterr);
            p->depth--;
            if (r < 0)
                return r;
        }
        return 0;
    case JSON_ARRAY:
        if (p->depth >= BERTH_JSON_MAX_DEPTH)
            return path_error(reterr, p, "nesting deeper than %d levels", BERTH_JSON_MAX_DEPTH);
        json_array_foreach(v, i, child)
        {
            p->frame[p->depth].key = NULL;
            p->frame[p->depth].index = i;
            p->depth++;
            r = check_value(child, p, reterr);
            p->depth--;
            if (r < 0)
                return r;
        }
        return 0;
    default: return 0;
    }
}

int berth_json_parse(const char *buf, size_t len, size_t max_bytes, json_t **ret, struct berth_error *reterr)
{
    _cleanup_json_ json_t *v = NULL;
    struct path p = {0};
    json_error_t jerr;
    int r;

    if (!buf || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (len > max_bytes)
        return berth_error_set(reterr, -EFBIG, "document is %zu bytes, more than the %zu allowed", len, max_bytes);
    r = prescan(buf, len, reterr);
    if (r < 0)
        return r;

    v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (!v) {
        switch (json_error_code(&jerr)) {
        case json_error_out_of_memory: return berth_error_set(reterr, -ENOMEM, "out of memory");
        case json_error_null_character:
        case json_error_null_byte_in_key:
            return berth_error_set(reterr, -EBADMSG, "byte %d: a NUL character (\\u0000) is not allowed",
                                   jerr.position);
        case json_error_numeric_overflow:
            return berth_error_set(reterr, -EBADMSG, "byte %d: integer is outside +/-(2^53-1)", jerr.position);
        default:
            /* jansson leaves the text empty when an allocation failed. */
            if (jerr.text[0] == '\0')
                return berth_error_set(reterr, -ENOMEM, "out of memory while parsing");
            return berth_error_set(reterr, -EBADMSG, "byte %d: %s", jerr.position, jerr.text);
        }
    }
    r = check_value(v, &p, reterr);
    if (r < 0) {
        if (reterr)
            reterr->code = -EBADMSG;
        return -EBADMSG;
    }
    *ret = TAKE_PTR(v);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Serialiser.                                                                */

/* Bytes a string member cannot hold as they are (RFC 8785 section 3.2.2.2:
 * the control characters, '"' and '\\'); NUL is refused.  The rest are
 * copied in runs. */
static const unsigned char escape_of[256] = {
    [0x00] = 'X', [0x01] = 'u', [0x02] = 'u', [0x03] = 'u', [0x04] = 'u', [0x05] = 'u', [0x06] = 'u', [0x07] = 'u',
    [0x08] = 'b', [0x09] = 't', [0x0a] = 'n', [0x0b] = 'u', [0x0c] = 'f', [0x0d] = 'r', [0x0e] = 'u', [0x0f] = 'u',
    [0x10] = 'u', [0x11] = 'u', [0x12] = 'u', [0x13] = 'u', [0x14] = 'u', [0x15] = 'u', [0x16] = 'u', [0x17] = 'u',
    [0x18] = 'u', [0x19] = 'u', [0x1a] = 'u', [0x1b] = 'u', [0x1c] = 'u', [0x1d] = 'u', [0x1e] = 'u', [0x1f] = 'u',
    ['"'] = '"',  ['\\'] = '\\',
};

/* One byte; the common case, room in the buffer, without a call. */
static inline int emit_byte(struct berth_buf *b, char c)
{
    if (b->len + 2 <= b->cap && (!b->max || b->len < b->max)) {
        b->data[b->len++] = c;
        b->data[b->len] = '\0';
        return 0;
    }
    return berth_buf_putc(b, c);
}

/* The string's own refusal, a NUL before invalid UTF-8, or 0. */
static int string_refused(const char *s, size_t len, const struct path *p, bool is_key, struct berth_error *reterr)
{
    size_t bad;

    if (memchr(s, '\0', len))
        return path_error(reterr, p, "%s contains a NUL character", is_key ? "key" : "string");
    if (!berth_utf8_valid(s, len, &bad))
        return path_error(reterr, p, "%s is not valid UTF-8 (byte %zu)", is_key ? "key" : "string", bad);
    return 0;
}

/* @r, an append's failure; a string that is refused itself says so first,
 * whatever the output bound (the refusal comes before any output). */
static int string_failed(int r, const char *s, size_t len, const struct path *p, bool is_key,
                         struct berth_error *reterr)
{
    int own = string_refused(s, len, p, is_key, reterr);

    return own < 0 ? own : r;
}

static int emit_string(struct berth_buf *b, const char *s, size_t len, const struct path *p, bool is_key,
                       struct berth_error *reterr)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char high = 0;
    size_t i, run = 0;
    int r;

    /* One pass: escapes, a NUL (refused), and whether any byte is not
     * ASCII, in which case the whole string must be valid UTF-8. */
    if ((r = emit_byte(b, '"')) < 0)
        return string_failed(r, s, len, p, is_key, reterr);
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i], e = escape_of[c];
        char esc[6];
        size_t n = 2;

        high |= c;
        if (!e)
            continue;
        if (c == '\0')
            return string_refused(s, len, p, is_key, reterr);
        if ((r = berth_buf_append(b, s + run, i - run)) < 0)
            return string_failed(r, s, len, p, is_key, reterr);
        run = i + 1;
        esc[0] = '\\';
        esc[1] = (char)e;
        if (e == 'u') {
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            n = 6;
        }
        if ((r = berth_buf_append(b, esc, n)) < 0)
            return string_failed(r, s, len, p, is_key, reterr);
    }
    if ((high & 0x80) && (r = string_refused(s, len, p, is_key, reterr)) < 0)
        return r;
    if ((r = berth_buf_append(b, s + run, len - run)) < 0)
        return r;
    return emit_byte(b, '"');
}

struct member {
    const char *key;
    size_t key_len;
    json_t *value;
};

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    return berth_utf16_compare(x->key, x->key_len, y->key, y->key_len);
}

/* Objects up to this many members sort on the stack, by insertion. */
#define SMALL_OBJECT 16

static void sort_members(struct member *m, size_t n)
{
    size_t i, j;

    if (n > SMALL_OBJECT) {
        qsort(m, n, sizeof(*m), member_cmp);
        return;
    }
    for (i = 1; i < n; i++) {
        struct member x = m[i];

        for (j = i; j > 0 && member_cmp(&m[j - 1], &x) > 0; j--)
            m[j] = m[j - 1];
        m[j] = x;
    }
}

static int emit_value(struct berth_buf *b, const json_t *v, struct path *p, struct berth_error *reterr);

static int emit_object(struct berth_buf *b, const json_t *v, struct path *p, struct berth_error *reterr)
{
    _cleanup_free_ struct member *heap = NULL;
    struct member small[SMALL_OBJECT], *m = small;
    size_t n = json_object_size(v), i = 0;
    void *it;
    int r;

    if (n > SMALL_OBJECT) {
        m = heap = calloc(n, sizeof(*m));
        if (!m)
            return -ENOMEM;
    }
    for (it = json_object_iter((json_t *)v); it && i < n; it = json_object_iter_next((json_t *)v, it), i++) {
        m[i].key = json_object_iter_key(it);
        m[i].key_len = json_object_iter_key_len(it);
        m[i].value = json_object_iter_value(it);
    }
    n = i;
    sort_members(m, n);

    if ((r = emit_byte(b, '{')) < 0)
        return r;
    for (i = 0; i < n; i++) {
        if (i > 0 && (r = emit_byte(b, ',')) < 0)
            return r;
        p->frame[p->depth].key = m[i].key;
        p->depth++;
        r = emit_string(b, m[i].key, m[i].key_len, p, true, reterr);
        if (r >= 0)
            r = emit_byte(b, ':');
        if (r >= 0)
            r = emit_value(b, m[i].value, p, reterr);
        p->depth--;
        if (r < 0)
            return r;
    }
    return emit_byte(b, '}');
}

/* An integer in decimal, as ECMAScript's Number::toString() writes one
 * within +/-(2^53-1) (RFC 8785 section 3.2.2.3). */
static int emit_integer(struct berth_buf *b, json_int_t x)
{
    char num[24];
    size_t o = sizeof(num);
    uint64_t u = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;

    do {
        num[--o] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        num[--o] = '-';
    return berth_buf_append(b, num + o, sizeof(num) - o);
}

static int emit_value(struct berth_buf *b, const json_t *v, struct path *p, struct berth_error *reterr)
{
    json_t *child;
    size_t i;
    int r;

    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (p->depth >= BERTH_JSON_MAX_DEPTH)
            return path_error(reterr, p, "nesting deeper than %d levels", BERTH_JSON_MAX_DEPTH);
        return emit_object(b, v, p, reterr);
    case JSON_ARRAY:
        if (p->depth >= BERTH_JSON_MAX_DEPTH)
            return path_error(reterr, p, "nesting deeper than %d levels", BERTH_JSON_MAX_DEPTH);
        if ((r = emit_byte(b, '[')) < 0)
            return r;
        json_array_foreach(v, i, child)
        {
            if (i > 0 && (r = emit_byte(b, ',')) < 0)
                return r;
            p->frame[p->depth].key = NULL;
            p->frame[p->depth].index = i;
            p->depth++;
            r = emit_value(b, child, p, reterr);
            p->depth--;
            if (r < 0)
                return r;
        }
        return emit_byte(b, ']');
    case JSON_STRING: return emit_string(b, json_string_value(v), json_string_length(v), p, false, reterr);
    case JSON_INTEGER: {
        json_int_t x = json_integer_value(v);
        if (x > BERTH_JSON_MAX_INTEGER || x < -BERTH_JSON_MAX_INTEGER)
            return path_error(reterr, p, "integer %" JSON_INTEGER_FORMAT " is outside +/-(2^53-1)", x);
        return emit_integer(b, x);
    }
    case JSON_REAL: return path_error(reterr, p, "real numbers cannot be serialised canonically");
    case JSON_TRUE: return berth_buf_append(b, "true", 4);
    case JSON_FALSE: return berth_buf_append(b, "false", 5);
    case JSON_NULL: return berth_buf_append(b, "null", 4);
    }
    return path_error(reterr, p, "unknown JSON type");
}

int berth_json_serialize(const json_t *value, size_t max_bytes, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    struct berth_buf b = BERTH_BUF_INIT(max_bytes);
    struct path p = {0};
    char *out;
    int r;

    if (!value || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = emit_value(&b, value, &p, reterr);
    if (r < 0) {
        berth_buf_free(&b);
        if (r == -EFBIG)
            return berth_error_set(reterr, r, "canonical form is longer than %zu bytes", max_bytes);
        if (r == -ENOMEM)
            return berth_error_set(reterr, r, "out of memory");
        return r;
    }
    out = berth_buf_steal(&b, ret_len);
    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = out;
    return 0;
}

int berth_json_canonicalize(const char *buf, size_t len, size_t max_bytes, char **ret, size_t *ret_len,
                            struct berth_error *reterr)
{
    _cleanup_json_ json_t *v = NULL;
    int r;

    r = berth_json_parse(buf, len, max_bytes, &v, reterr);
    if (r < 0)
        return r;
    return berth_json_serialize(v, max_bytes, ret, ret_len, reterr);
}

int berth_json_emit(json_t *doc, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    int r;

    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = berth_json_serialize(doc, 0, ret, ret_len, reterr);
    json_decref(doc);
    return r;
}
