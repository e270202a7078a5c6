/* SPDX-License-Identifier: MIT */
/* names.c -- looking names up in enum name tables; see names.h. */
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
