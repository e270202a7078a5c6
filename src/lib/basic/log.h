/* SPDX-License-Identifier: MIT */
/*
 * log.h -- the logging hook of libberth.
 *
 * libberth never writes to stderr or syslog itself.  Code that wants to tell
 * somebody something takes a `const struct berth_logger *` from its caller
 * and calls berth_logf(); the caller (berthd's or berthctl's main()) decides
 * where lines go.  A NULL logger discards everything, so library functions
 * can always be called without one.  There is no global logger.
 */
#ifndef BERTH_CORE_LOG_H
#define BERTH_CORE_LOG_H

#include <stdarg.h>

#include <berth/error.h>
#include <berth/log.h>

/** Longest line handed to a sink, in bytes, excluding the NUL. */
#define BERTH_LOG_LINE_MAX 1024

/**
 * struct berth_logger - where log lines go.
 * @sink:      called once per line with the level (BERTH_LOG_*) and the
 *             NUL-terminated text (no trailing newline, at most
 *             BERTH_LOG_LINE_MAX bytes).  Must be safe to call from every
 *             thread that uses the logger.
 * @userdata:  passed to @sink unchanged.
 * @max_level: lines with a level above this (less important) are dropped
 *             before formatting.
 */
struct berth_logger {
    void (*sink)(void *userdata, int level, const char *line);
    void *userdata;
    int max_level;
};

/**
 * berth_logf() - format and emit one line.
 * @logger: the logger, or NULL to discard.
 * @level:  BERTH_LOG_ERR .. BERTH_LOG_DEBUG.
 * @fmt:    printf-style format.  Callers never pass secrets.
 *
 * Thread safety: as safe as @logger->sink.
 */
void berth_logf(const struct berth_logger *logger, int level, const char *fmt, ...) BERTH_PRINTF(3, 4);

/** berth_logv() - va_list form of berth_logf(). */
void berth_logv(const struct berth_logger *logger, int level, const char *fmt, va_list ap) BERTH_PRINTF(3, 0);

/**
 * berth_log_level_name() - "err", "warning", "notice", "info", "debug".
 * Returns "unknown" for other values.  Thread-safe.
 */
const char *berth_log_level_name(int level);

#endif /* BERTH_CORE_LOG_H */
