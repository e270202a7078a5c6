/* SPDX-License-Identifier: MIT */
/*
 * macro.h -- small helpers used all over libberth, berthd and berthctl.
 *
 * The cleanup helpers come from the public <berth/cleanup.h> (so plugins and
 * the core use the same ones); this header adds the core-only cleanups for
 * third-party types.  Not installed.
 */
#ifndef BERTH_MACRO_H
#define BERTH_MACRO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <berth/cleanup.h>
#include <berth/error.h>

/** Number of elements of a true array. */
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

/** json_decref() on scope exit. */
static inline void berth_json_decrefp(json_t **p)
{
    if (*p)
        json_decref(*p);
}
#define _cleanup_json_ BERTH_CLEANUP(berth_json_decrefp)

/** fclose() on scope exit. */
static inline void berth_fclosep(FILE **f)
{
    if (*f)
        (void)fclose(*f);
}
#define _cleanup_fclose_ BERTH_CLEANUP(berth_fclosep)

/** True when the two NUL-terminated strings are equal; NULLs compare equal only to NULL. */
static inline int streq_ptr(const char *a, const char *b)
{
    if (!a || !b)
        return a == b;
    return strcmp(a, b) == 0;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

#endif /* BERTH_MACRO_H */
