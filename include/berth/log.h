/* SPDX-License-Identifier: MIT */
/*
 * berth/log.h -- log levels shared by the core and plugins.
 *
 * The values are syslog(3) priorities, so berthd can hand them to journald
 * unchanged (sd-daemon(3) "<N>" prefixes use the same numbers).
 */
#ifndef BERTH_LOG_H
#define BERTH_LOG_H

#define BERTH_LOG_ERR 3     /**< an operation failed */
#define BERTH_LOG_WARNING 4 /**< something is wrong but work continues */
#define BERTH_LOG_NOTICE 5  /**< normal but significant (state changes) */
#define BERTH_LOG_INFO 6    /**< informational */
#define BERTH_LOG_DEBUG 7   /**< detail for developers */

#endif /* BERTH_LOG_H */
