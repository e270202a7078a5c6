/* SPDX-License-Identifier: MIT */
/* heap.c -- glibc allocator settings for long-running processes (heap.h). */
#include <errno.h>
#include <malloc.h>
#include <string.h>

#include "heap.h"

int berth_heap_tune(const char *tunables)
{
    if (tunables && strstr(tunables, "glibc.malloc."))
        return 1;
    /* mallopt() returns 1 on success, 0 on error (mallopt(3)).  glibc takes
     * any M_TRIM_THRESHOLD, so a refusal of it means another allocator
     * answers mallopt (AddressSanitizer's, jemalloc's): nothing to tune. */
    if (mallopt(M_TRIM_THRESHOLD, BERTH_HEAP_TRIM_THRESHOLD) != 1)
        return -EOPNOTSUPP;
    if (mallopt(M_MMAP_THRESHOLD, BERTH_HEAP_MMAP_THRESHOLD) != 1)
        return -EINVAL;
    return 0;
}
