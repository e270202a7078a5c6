/* SPDX-License-Identifier: MIT */
/* names.c -- name tables and the rules of names; see names.h. */
#include <string.h>

#include "names.h"

int berth_name_index(const char *const *table, size_t n, const char *name)
{
    size_t i;

    if (!name)
        return -1;
    for (i = 0; i < n; i++)
        if (strcmp(table[i], name) == 0)
            return (int)i;
    return -1;
}

/* Not isalnum(): the rules are ASCII whatever the locale. */
static bool is_lower_or_digit(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/*
 * 1 to @max bytes, each a lowercase letter, a digit, one of @punct or (with
 * @upper) an uppercase letter; with @alnum_first the first byte is a
 * lowercase letter or a digit.
 */
static bool name_of(const char *s, size_t max, bool upper, bool alnum_first, const char *punct)
{
    size_t i;

    if (!s || !s[0] || (alnum_first && !is_lower_or_digit(s[0])))
        return false;
    for (i = 0; s[i]; i++) {
        if (i == max)
            return false;
        if (!is_lower_or_digit(s[i]) && !(upper && s[i] >= 'A' && s[i] <= 'Z') && !strchr(punct, s[i]))
            return false;
    }
    return true;
}

bool berth_plugin_name_valid(const char *name)
{
    return name_of(name, BERTH_PLUGIN_NAME_MAX, false, true, "-");
}

bool berth_backend_name_valid(const char *name)
{
    return name_of(name, BERTH_BACKEND_NAME_MAX, false, true, "._-");
}

bool berth_pool_name_valid(const char *name)
{
    return name_of(name, BERTH_POOL_NAME_MAX, false, true, "._-");
}

bool berth_principal_valid(const char *name)
{
    return name_of(name, BERTH_PRINCIPAL_MAX, true, false, "._@-");
}

bool berth_broker_name_valid(const char *name)
{
    return name_of(name, BERTH_BROKER_NAME_MAX, true, false, "._-");
}

bool berth_media_type_valid(const char *s)
{
    const char *slash;
    size_t i;

    if (!s || !s[0])
        return false;
    for (i = 0; s[i]; i++)
        if (i >= BERTH_MEDIA_TYPE_MAX || s[i] < 0x20 || s[i] > 0x7e)
            return false;
    slash = strchr(s, '/');
    return slash && slash != s && slash[1];
}
