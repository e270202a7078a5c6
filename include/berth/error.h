/* SPDX-License-Identifier: MIT */
/*
 * berth/error.h -- the error convention shared by libberth and plugins.
 *
 * Every berth function that can fail returns 0 (or a non-negative count) on
 * success and exactly a negative errno value (-ENOENT, -EPROTO, ...) on
 * failure.  Human-readable detail travels in an optional `struct berth_error`
 * out-parameter, conventionally the last argument and named `reterr`; callers
 * that do not want the detail pass NULL.
 *
 * The structure is part of the plugin ABI: its size and layout never change.
 * Everything here is header-only so that a plugin needs no library to use it.
 */
#ifndef BERTH_ERROR_H
#define BERTH_ERROR_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes reserved for an error message, including the terminating NUL. */
#define BERTH_ERROR_MESSAGE_MAX 512

/**
 * struct berth_error - detail for a failed call.
 * @code:    the negative errno value the call returned, or 0 when unset.
 * @message: NUL-terminated, single-line, human-readable text without control
 *           characters.  Messages never contain secrets (key bytes, tokens);
 *           they may name files.
 *
 * Initialise with BERTH_ERROR_INIT or zero it.  Not thread-safe: give each
 * thread its own.
 */
struct berth_error {
    int code;
    char message[BERTH_ERROR_MESSAGE_MAX];
};

/** Static initialiser for an empty error. */
#define BERTH_ERROR_INIT                                                                                               \
    {                                                                                                                  \
        0,                                                                                                             \
        {                                                                                                              \
            0                                                                                                          \
        }                                                                                                              \
    }

#if defined(__GNUC__)
#define BERTH_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define BERTH_PRINTF(fmt, args)
#endif

/**
 * berth_error_sanitize() - make @text one printable line in place: every
 * control character (below U+0020, and U+007F) becomes '?', so that text
 * quoted from hostile input can neither break a log line nor carry terminal
 * escapes.  Bytes from 0x80 up (UTF-8) are kept, except an incomplete UTF-8
 * sequence at the very end (left by truncation), which is dropped.  Accepts
 * NULL.
 */
static inline void berth_error_sanitize(char *text)
{
    size_t n, lead, need;
    char *p;

    if (!text)
        return;
    for (p = text; *p; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p == 0x7f)
            *p = '?';
    /* A message cut to fit its buffer may end inside a UTF-8 sequence:
     * drop the incomplete character so the text stays valid UTF-8. */
    n = (size_t)(p - text);
    for (lead = n; lead > 0 && n - lead < 4 && ((unsigned char)text[lead - 1] & 0xc0) == 0x80; lead--)
        ;
    if (lead == 0 || ((unsigned char)text[lead - 1] & 0xc0) != 0xc0)
        return;
    need = ((unsigned char)text[lead - 1] & 0xe0) == 0xc0 ? 2 : ((unsigned char)text[lead - 1] & 0xf0) == 0xe0 ? 3 : 4;
    if (n - (lead - 1) < need)
        text[lead - 1] = '\0';
}

/**
 * berth_error_setv() - record an error and return its code.
 * @reterr: where to record it; may be NULL, in which case only the code is
 *          returned.
 * @code:   an errno value, negative or positive; it is stored and returned
 *          negative.  0 is turned into -EIO so that a failure always fails.
 * @fmt:    printf-style message, truncated to BERTH_ERROR_MESSAGE_MAX - 1 bytes
 *          and passed through berth_error_sanitize().
 *
 * Return: the negative errno value, for `return berth_error_set(...)`.
 */
BERTH_PRINTF(3, 0)
static inline int berth_error_setv(struct berth_error *reterr, int code, const char *fmt, va_list ap)
{
    if (code > 0)
        code = -code;
    if (code == 0)
        code = -EIO;
    if (reterr) {
        reterr->code = code;
        vsnprintf(reterr->message, sizeof(reterr->message), fmt, ap);
        berth_error_sanitize(reterr->message);
    }
    return code;
}

/** berth_error_set() - printf-style front end of berth_error_setv(). */
BERTH_PRINTF(3, 4)
static inline int berth_error_set(struct berth_error *reterr, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    code = berth_error_setv(reterr, code, fmt, ap);
    va_end(ap);
    return code;
}

/**
 * berth_error_prefix() - put context in front of an existing message.
 * @reterr: the error to amend; may be NULL (nothing happens).
 * @fmt:    printf-style prefix; ": " is inserted between prefix and message.
 *
 * Used when passing a callee's error up: "reading key.pem: mode is 0644".
 * The code is left alone.  When the message was empty the prefix alone is
 * kept.  The result is truncated to fit.
 */
BERTH_PRINTF(2, 3)
static inline void berth_error_prefix(struct berth_error *reterr, const char *fmt, ...)
{
    char old[BERTH_ERROR_MESSAGE_MAX];
    va_list ap;
    size_t n;

    if (!reterr)
        return;
    memcpy(old, reterr->message, sizeof(old));
    old[sizeof(old) - 1] = '\0';
    va_start(ap, fmt);
    vsnprintf(reterr->message, sizeof(reterr->message), fmt, ap);
    va_end(ap);
    if (old[0] == '\0')
        return;
    n = strlen(reterr->message);
    snprintf(reterr->message + n, sizeof(reterr->message) - n, ": %s", old);
    berth_error_sanitize(reterr->message);
}

/** berth_error_clear() - reset to the empty state; accepts NULL. */
static inline void berth_error_clear(struct berth_error *reterr)
{
    if (reterr) {
        reterr->code = 0;
        reterr->message[0] = '\0';
    }
}

#ifdef __cplusplus
}
#endif

#endif /* BERTH_ERROR_H */
