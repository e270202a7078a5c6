/* SPDX-License-Identifier: MIT */
/*
 * berthctl.h -- shared declarations of the berthctl command-line tool.
 *
 * Each verb lives in its own cmd-*.c file and is called with argv[0] set to
 * the verb's name.  Verbs return one of the exit codes below and print their
 * own diagnostics (one line, prefixed "berthctl VERB: ") to standard error.
 */
#ifndef BERTHCTL_H
#define BERTHCTL_H

#include <stddef.h>

#include <berth/error.h>

enum {
    BCTL_EXIT_OK = 0,    /**< success */
    BCTL_EXIT_FAIL = 1,  /**< the operation failed or was refused */
    BCTL_EXIT_USAGE = 2, /**< bad command line */
};

/** Default bound for documents read by canon and digest --canonical: 16 MiB. */
#define BCTL_DEFAULT_MAX_BYTES ((size_t)16 * 1024 * 1024)

int cmd_canon(int argc, char **argv);
int cmd_digest(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_plugins(int argc, char **argv);

/**
 * bctl_error() - print "berthctl VERB: MESSAGE" to standard error.
 * Returns BCTL_EXIT_FAIL so verbs can `return bctl_error(...)`.
 */
int bctl_error(const char *verb, const char *fmt, ...) BERTH_PRINTF(2, 3);

/**
 * bctl_usage_error() - print the message and a pointer to --help; returns
 * BCTL_EXIT_USAGE.
 */
int bctl_usage_error(const char *verb, const char *fmt, ...) BERTH_PRINTF(2, 3);

/**
 * bctl_usage_hint() - print only the pointer to --help (getopt already said
 * what was wrong); returns BCTL_EXIT_USAGE.
 */
int bctl_usage_hint(const char *verb);

/**
 * bctl_absolute_arg() - store @arg, made absolute with berth_path_absolute(),
 * in *@dst (freeing what was there).  Returns 0, or BCTL_EXIT_USAGE after
 * printing a usage error naming @option.
 */
int bctl_absolute_arg(const char *verb, const char *option, const char *arg, char **dst);

/**
 * bctl_read_input() - read FILE, or standard input when @arg is NULL or "-",
 * into a malloc'd NUL-terminated buffer of at most @max_bytes bytes.
 * Return: 0 or a negative errno with @reterr filled (-EFBIG over the bound).
 */
int bctl_read_input(const char *arg, size_t max_bytes, char **ret, size_t *ret_len, struct berth_error *reterr);

/**
 * bctl_parse_size() - parse a positive decimal byte count (no sign, no
 * suffix).  Return: 0 or -EINVAL / -ERANGE.
 */
int bctl_parse_size(const char *text, size_t *ret);

/** bctl_input_name() - "standard input" for NULL/"-", else @arg. */
const char *bctl_input_name(const char *arg);

#endif /* BERTHCTL_H */
