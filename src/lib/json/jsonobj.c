/* SPDX-License-Identifier: MIT */
/* jsonobj.c -- strict member access; see jsonobj.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoding.h"
#include "jsonobj.h"
#include "macro.h"

int berth_json_only_members(const json_t *obj, const char *what, const char *const *allowed, struct berth_error *reterr)
{
    const char *key;
    json_t *v;
    size_t i;

    if (!json_is_object(obj))
        return berth_error_set(reterr, -EBADMSG, "%s must be a JSON object", what);
    json_object_foreach((json_t *)obj, key, v)
    {
        for (i = 0; allowed[i]; i++)
            if (streq(allowed[i], key))
                break;
        if (!allowed[i])
            return berth_error_set(reterr, -EBADMSG, "%s: unknown member \"%s\"", what, key);
    }
    return 0;
}

int berth_json_string_member(const json_t *obj, const char *what, const char *key, bool required, const char **ret,
                             struct berth_error *reterr)
{
    json_t *v = json_object_get(obj, key);

    if (!v) {
        if (required)
            return berth_error_set(reterr, -EBADMSG, "%s.%s is missing", what, key);
        *ret = NULL;
        return 0;
    }
    if (!json_is_string(v))
        return berth_error_set(reterr, -EBADMSG, "%s.%s must be a string", what, key);
    *ret = json_string_value(v);
    return 0;
}

int berth_json_int_member(const json_t *obj, const char *what, const char *key, bool required, int64_t min, int64_t max,
                          int64_t *ret, struct berth_error *reterr)
{
    json_t *v = json_object_get(obj, key);
    int64_t x;

    if (!v) {
        if (required)
            return berth_error_set(reterr, -EBADMSG, "%s.%s is missing", what, key);
        return 0;
    }
    if (!json_is_integer(v))
        return berth_error_set(reterr, -EBADMSG, "%s.%s must be an integer", what, key);
    x = json_integer_value(v);
    if (x < min || x > max)
        return berth_error_set(reterr, -EBADMSG, "%s.%s is %" PRId64 ", outside %" PRId64 "..%" PRId64, what, key, x,
                               min, max);
    *ret = x;
    return 0;
}

json_t *berth_json_ns(int64_t ns)
{
    char buf[BERTH_NS_STRLEN + 2];

    if (ns < 0)
        return NULL;
    snprintf(buf, sizeof(buf), "%" PRId64, ns);
    return json_string(buf);
}

int berth_json_ns_value(const json_t *v, int64_t *ret)
{
    const char *s;
    int64_t x = 0;
    size_t i, n;

    if (!json_is_string(v))
        return -EBADMSG;
    s = json_string_value(v);
    n = json_string_length(v);
    if (n == 0 || n > BERTH_NS_STRLEN || (n > 1 && s[0] == '0'))
        return -EBADMSG;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EBADMSG;
        if (x > (INT64_MAX - (s[i] - '0')) / 10)
            return -EBADMSG;
        x = x * 10 + (s[i] - '0');
    }
    *ret = x;
    return 0;
}

int berth_json_ns_member(const json_t *obj, const char *what, const char *key, int64_t *ret, struct berth_error *reterr)
{
    json_t *v = json_object_get(obj, key);

    if (!v)
        return berth_error_set(reterr, -EBADMSG, "%s.%s is missing", what, key);
    if (berth_json_ns_value(v, ret) < 0)
        return berth_error_set(reterr, -EBADMSG, "%s.%s must be nanoseconds as a string of decimal digits", what, key);
    return 0;
}

int berth_json_b64_value(const json_t *v, uint8_t **ret, size_t *ret_len)
{
    size_t n = json_string_length(v);

    *ret = NULL;
    *ret_len = 0;
    if (!v)
        return 0;
    if (!json_is_string(v))
        return -EBADMSG;
    *ret = malloc(n + 1);
    if (!*ret)
        return -ENOMEM;
    if (berth_base64url_decode(json_string_value(v), n, *ret, n + 1, ret_len) < 0) {
        free(*ret);
        *ret = NULL;
        *ret_len = 0;
        return -EBADMSG;
    }
    (*ret)[*ret_len] = '\0';
    return 0;
}

bool berth_is_hex(const char *s, size_t len)
{
    size_t i;

    if (!s || strlen(s) != len)
        return false;
    for (i = 0; i < len; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}
