/* SPDX-License-Identifier: MIT */
/*
 * tarforge.h -- a test-only tar writer that emits raw 512-byte headers
 * exactly as a test asks, hostile ones included: ustar and GNU headers with
 * any type flag, mode, name, prefix or link name; PAX extended ('x') and
 * global ('g') headers with arbitrary records; GNU long names ('L', 'K');
 * GNU sparse ('S') headers; member data with its padding; and gzip (zlib)
 * compression, including a streamed "bomb" of zeros that is never held
 * uncompressed in memory.  Header layout: POSIX.1-2008 "pax" ustar format.
 *
 * Every function aborts on failure (tests only).  Not thread-safe.
 */
#ifndef BERTH_TEST_TARFORGE_H
#define BERTH_TEST_TARFORGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** struct tarforge - a growing in-memory archive. */
struct tarforge {
    unsigned char *data;
    size_t len, cap;
};

/** struct tf_member - one header as the test wants it written. */
struct tf_member {
    const char *name;     /* the ustar name field (at most 100 bytes written) */
    const char *prefix;   /* the ustar prefix field, or NULL */
    char type;            /* type flag: '0', '5', '2', 'g', ... */
    unsigned mode;        /* mode field, octal; 0 means 0644 (0755 for directories) */
    const char *linkname; /* link name field, or NULL */
    const void *data;     /* member data, or NULL */
    size_t size;          /* bytes of @data written after the header */
    bool gnu;             /* write the GNU magic ("ustar  ") instead of POSIX */
    bool bad_checksum;    /* store a wrong checksum */
    int64_t size_field;   /* when non-zero, the size field written instead of @size */
};

/** tf_member() - append a header (and its padded data). */
void tf_member(struct tarforge *t, const struct tf_member *m);

/** tf_file(), tf_dir(), tf_symlink(), tf_hardlink() - common members. */
void tf_file(struct tarforge *t, const char *name, unsigned mode, const char *content);
void tf_dir(struct tarforge *t, const char *name, unsigned mode);
void tf_symlink(struct tarforge *t, const char *name, const char *target);
void tf_hardlink(struct tarforge *t, const char *name, const char *target);

/**
 * tf_pax() - append a PAX header of @type ('x' or 'g') whose body holds the
 * @n records @records[i] ("key=value", the value may hold any byte except
 * that the string ends at its NUL; use tf_pax_raw() for NUL bytes).
 */
void tf_pax(struct tarforge *t, char type, const char *const *records, size_t n);

/** tf_pax_raw() - one PAX 'x' record "key=<vlen bytes of value>". */
void tf_pax_raw(struct tarforge *t, const char *key, const void *value, size_t vlen);

/** tf_gnu_long() - a GNU long name ('L') or long link ('K') header for @name. */
void tf_gnu_long(struct tarforge *t, char type, const char *name);

/** tf_raw() - append @len raw bytes. */
void tf_raw(struct tarforge *t, const void *data, size_t len);

/** tf_end() - the end-of-archive marker: two zero blocks. */
void tf_end(struct tarforge *t);

/** tf_free() - release the buffer. */
void tf_free(struct tarforge *t);

/** tf_gzip() - gzip @len bytes at @data into a malloc'd buffer. */
void tf_gzip(const void *data, size_t len, unsigned char **ret, size_t *ret_len);

/**
 * tf_gzip_bomb() - gzip @prefix followed by @zeros zero bytes, streamed so
 * the zeros are never in memory.
 */
void tf_gzip_bomb(const void *prefix, size_t plen, uint64_t zeros, unsigned char **ret, size_t *ret_len);

#endif
