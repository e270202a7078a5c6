/* SPDX-License-Identifier: MIT */
/*
 * berth/cleanup.h -- scope-bound release of owned pointers and descriptors.
 *
 * Needs GCC or clang (`__attribute__((cleanup))`); with other compilers the
 * header defines nothing.  The long names are always available; the short
 * names familiar from systemd (`_cleanup_`, `_cleanup_free_`,
 * `_cleanup_close_`, `TAKE_PTR`, `TAKE_FD`) are defined only when nothing
 * else defined them first, so the header can live beside such code.
 *
 *     _cleanup_free_ char *buf = malloc(n);
 *     _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
 *     ...
 *     *ret = TAKE_PTR(buf);     // ownership leaves the scope, nothing freed
 *
 * Header-only; every helper is safe with NULL / -1.
 */
#ifndef BERTH_CLEANUP_H
#define BERTH_CLEANUP_H

#if defined(__GNUC__)

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/** Run @func with a pointer to the variable when it leaves scope. */
#define BERTH_CLEANUP(func) __attribute__((cleanup(func)))

/** free(*p); for `char *` and friends. */
static inline void berth_freep(void *p)
{
    free(*(void **)p);
}

/**
 * close(*fd) if it is >= 0, preserving errno so that a cleanup on an error
 * path never changes the error being reported.
 */
static inline void berth_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno;
        (void)close(*fd);
        errno = saved;
    }
}

/** Take ownership out of a cleanup variable: yields its value and clears it. */
#define BERTH_TAKE_PTR(ptr)                                                                                            \
    ({                                                                                                                 \
        __typeof__(ptr) *_berth_pp = &(ptr);                                                                           \
        __typeof__(ptr) _berth_p = *_berth_pp;                                                                         \
        *_berth_pp = NULL;                                                                                             \
        _berth_p;                                                                                                      \
    })

/** Take a descriptor out of a cleanup variable: yields it and stores -1. */
#define BERTH_TAKE_FD(fd)                                                                                              \
    ({                                                                                                                 \
        int *_berth_fdp = &(fd);                                                                                       \
        int _berth_fd = *_berth_fdp;                                                                                   \
        *_berth_fdp = -1;                                                                                              \
        _berth_fd;                                                                                                     \
    })

/**
 * BERTH_DEFINE_CLEANUP(type, func) - define func##p(type *p) that calls
 * func(*p) when *p is not NULL, for use with BERTH_CLEANUP().
 */
#define BERTH_DEFINE_CLEANUP(type, func)                                                                               \
    static inline void func##p(type *p)                                                                                \
    {                                                                                                                  \
        if (*p)                                                                                                        \
            func(*p);                                                                                                  \
    }

#ifndef _cleanup_
#define _cleanup_(f) BERTH_CLEANUP(f)
#endif
#ifndef _cleanup_free_
#define _cleanup_free_ BERTH_CLEANUP(berth_freep)
#endif
#ifndef _cleanup_close_
#define _cleanup_close_ BERTH_CLEANUP(berth_closep)
#endif
#ifndef TAKE_PTR
#define TAKE_PTR(p) BERTH_TAKE_PTR(p)
#endif
#ifndef TAKE_FD
#define TAKE_FD(fd) BERTH_TAKE_FD(fd)
#endif

#endif /* __GNUC__ */

#endif /* BERTH_CLEANUP_H */
