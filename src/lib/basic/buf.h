/* SPDX-License-Identifier: MIT */
/*
 * buf.h -- a growable byte buffer with a hard size bound.
 *
 * Used by serialisers that build output piece by piece.  The bound is part
 * of the buffer so that no producer can grow memory without limit.
 */
#ifndef BERTH_BUF_H
#define BERTH_BUF_H

#include <stddef.h>

/**
 * struct berth_buf - bytes at @data, @len used, @cap allocated.
 * @max: largest @len the buffer may reach, in bytes; appends beyond it fail
 *       with -EFBIG.  0 means SIZE_MAX / 2.
 *
 * Initialise with BERTH_BUF_INIT(max).  @data is always NUL-terminated once
 * anything was appended (the NUL is not counted in @len).  Not thread-safe.
 */
struct berth_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;
};

#define BERTH_BUF_INIT(limit)                                                                                          \
    {                                                                                                                  \
        NULL, 0, 0, (limit)                                                                                            \
    }

/**
 * berth_buf_append() - append @n bytes at @p.
 * Return: 0, -EFBIG (would pass @max; nothing appended), -ENOMEM.
 */
int berth_buf_append(struct berth_buf *b, const void *p, size_t n);

/** berth_buf_putc() - append one byte; errors as berth_buf_append(). */
int berth_buf_putc(struct berth_buf *b, char c);

/**
 * berth_buf_steal() - hand the bytes to the caller.
 * Returns the malloc'd, NUL-terminated data (an empty string when nothing
 * was appended, NULL only when that allocation fails) and stores its length
 * in *@ret_len when @ret_len is not NULL.  The buffer is left empty.
 */
char *berth_buf_steal(struct berth_buf *b, size_t *ret_len);

/** berth_buf_free() - release the bytes; the buffer is left empty. */
void berth_buf_free(struct berth_buf *b);

#endif /* BERTH_BUF_H */
