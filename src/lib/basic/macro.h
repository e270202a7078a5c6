/* SPDX-License-Identifier: MIT */
/*
 * macro.h -- small helpers used all over libberth, berthd and berthctl.
 *
 * The cleanup helpers come from the public <berth/cleanup.h> (so plugins and
 * the core use the same ones); this header adds the core-only cleanup of a
 * FILE stream.  It sees no third-party library: the jansson cleanup lives in
 * json/jsonobj.h.  Not installed.
 */
#ifndef BERTH_MACRO_H
#define BERTH_MACRO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <berth/cleanup.h>
#include <berth/error.h>

/** Number of elements of a true array. */
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

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
