/* SPDX-License-Identifier: MIT */
/* log.c -- the logging hook; see log.h. */
#include <stdio.h>

#include "log.h"

void berth_logv(const struct berth_logger *logger, int level, const char *fmt, va_list ap)
{
    char line[BERTH_LOG_LINE_MAX + 1];
    char *nl;

    if (!logger || !logger->sink || !fmt || level > logger->max_level)
        return;
    vsnprintf(line, sizeof(line), fmt, ap);
    /* One event, one printable line: a stray newline must not forge a second
     * entry, an escape sequence must not reach a terminal. */
    for (nl = line; *nl; nl++)
        if ((unsigned char)*nl < 0x20 || (unsigned char)*nl == 0x7f)
            *nl = ' ';
    logger->sink(logger->userdata, level, line);
}

void berth_logf(const struct berth_logger *logger, int level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    berth_logv(logger, level, fmt, ap);
    va_end(ap);
}

const char *berth_log_level_name(int level)
{
    switch (level) {
    case BERTH_LOG_ERR: return "err";
    case BERTH_LOG_WARNING: return "warning";
    case BERTH_LOG_NOTICE: return "notice";
    case BERTH_LOG_INFO: return "info";
    case BERTH_LOG_DEBUG: return "debug";
    default: return "unknown";
    }
}
