/* SPDX-License-Identifier: MIT */
/*
 * openssl-error.h -- OpenSSL's reason for a failure, as a berth error.
 *
 * OpenSSL reports why a call failed on a per-thread error queue; berth
 * reports it in a struct berth_error.  This turns the one into the other
 * and empties the queue, so that a stale reason is never reported with a
 * later failure.  Thread-safe (the queue is per thread).
 */
#ifndef BERTH_OPENSSL_ERROR_H
#define BERTH_OPENSSL_ERROR_H

#include <berth/error.h>

/**
 * berth_openssl_error() - record "@what: <reason>" in @reterr (optional),
 * where the reason is OpenSSL's text for the last error on this thread's
 * queue ("@what" alone when the queue is empty), and empty the queue.
 * @code: the negative (or positive) errno to record and return.
 * Return: @code as a negative errno (berth_error_set()).
 */
int berth_openssl_error(struct berth_error *reterr, int code, const char *what);

#endif /* BERTH_OPENSSL_ERROR_H */
