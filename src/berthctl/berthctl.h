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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <berth/error.h>

#include "sign.h"

struct berth_journal;
struct berth_audit_key;

enum {
    BCTL_EXIT_OK = 0,     /**< success */
    BCTL_EXIT_FAIL = 1,   /**< the operation failed or was refused */
    BCTL_EXIT_USAGE = 2,  /**< bad command line */
    BCTL_EXIT_VERIFY = 3, /**< verification failed (pool verify, audit verify) */
};

/**
 * struct bctl_globals - options that every verb understands, given before
 * the verb or among its own options: --journal=PATH, --audit-key=FILE,
 * --config=FILE (the client configuration for verbs that talk to berthd),
 * --json.  Paths are absolute (made so when parsed).
 */
struct bctl_globals {
    char *journal;
    char *audit_key;
    char *config;
    bool json;
};

/** getopt codes of the global options, for verbs' option tables. */
enum {
    BCTL_OPT_JOURNAL = 0x100,
    BCTL_OPT_AUDIT_KEY,
    BCTL_OPT_JSON,
    BCTL_OPT_CONFIG,
};

/** The option table entries for the global options (spliced into verbs'). */
#define BCTL_GLOBAL_OPTIONS                                                                                            \
    {"journal", required_argument, NULL, BCTL_OPT_JOURNAL},                                                            \
        {"audit-key", required_argument, NULL, BCTL_OPT_AUDIT_KEY},                                                    \
        {"config", required_argument, NULL, BCTL_OPT_CONFIG},                                                          \
    {                                                                                                                  \
        "json", no_argument, NULL, BCTL_OPT_JSON                                                                       \
    }

/**
 * bctl_global_option() - handle getopt code @c if it is a global option.
 * Returns 1 when handled, 0 when @c is not a global option, or
 * BCTL_EXIT_USAGE (negated) on a bad value.
 */
int bctl_global_option(struct bctl_globals *g, const char *verb, int c, const char *arg);

/** Default bound for documents read by canon and digest --canonical: 16 MiB. */
#define BCTL_DEFAULT_MAX_BYTES ((size_t)16 * 1024 * 1024)

int cmd_canon(struct bctl_globals *g, int argc, char **argv);
int cmd_devinit(struct bctl_globals *g, int argc, char **argv);
int cmd_digest(struct bctl_globals *g, int argc, char **argv);
int cmd_evidence(struct bctl_globals *g, int argc, char **argv);
int cmd_keygen(struct bctl_globals *g, int argc, char **argv);
int cmd_plugins(struct bctl_globals *g, int argc, char **argv);
int cmd_policy(struct bctl_globals *g, int argc, char **argv);
int cmd_pool(struct bctl_globals *g, int argc, char **argv);
int cmd_audit(struct bctl_globals *g, int argc, char **argv);
int cmd_image(struct bctl_globals *g, int argc, char **argv);
/* berthctl image cache ls|prune (cmd-image-cache.c): @action is "ls" or "prune". */
int cmd_image_cache(const struct bctl_globals *g, const char *action);
int cmd_job(struct bctl_globals *g, int argc, char **argv);
int cmd_journal(struct bctl_globals *g, int argc, char **argv);
int cmd_verify(struct bctl_globals *g, int argc, char **argv);
int cmd_qualify(struct bctl_globals *g, int argc, char **argv);

/**
 * bctl_open_journal() - open g->journal (required: a usage error without
 * it), creating it when @create.  Prints the error; returns an exit code.
 */
int bctl_open_journal(const struct bctl_globals *g, const char *verb, bool create, struct berth_journal **ret);

/**
 * bctl_load_audit_key() - load g->audit_key (required).  Prints the error;
 * returns an exit code.
 */
int bctl_load_audit_key(const struct bctl_globals *g, const char *verb, struct berth_audit_key *ret);

/** bctl_actor() - who acts offline: "local:<user name>" or "local:uid:<N>". */
const char *bctl_actor(char *buf, size_t bufsz);

/**
 * bctl_now() - CLOCK_REALTIME in nanoseconds (berth_now_ns()) into *ret_ns.
 * Prints the error when the clock cannot be read; returns an exit code.
 */
int bctl_now(const char *verb, int64_t *ret_ns);

/**
 * bctl_now_ns() - CLOCK_REALTIME in nanoseconds, or the negative errno of
 * berth_now_ns() when the clock cannot be read.  Kept for the verbs that still call
 * it (qualify, dev-init); new code calls bctl_now(), which reports the error.
 */
int64_t bctl_now_ns(void);

/**
 * bctl_print_json() - print @value followed by a newline: canonical when
 * @canonical, otherwise indented for people.  Returns an exit code.
 */
int bctl_print_json(const char *verb, const json_t *value, bool canonical);

/**
 * bctl_fputs_clean() - write @s to @out with C0 controls, DEL and UTF-8
 * encoded C1 controls shown as \xNN / \u00NN, so text from a file or a
 * broker reply cannot move the cursor, recolour or rewrite a terminal.
 */
void bctl_fputs_clean(const char *s, FILE *out);

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

/**
 * bctl_read_pubkey() - read the broker's public key given as --pubkey @file
 * (a PEM "PUBLIC KEY" file, or its 43-character base64url form) into @pub.
 * Return: BCTL_EXIT_OK, or an exit status after printing the error.
 */
int bctl_read_pubkey(const char *verb, const char *file, uint8_t pub[BERTH_ED25519_PUBLIC_LEN]);

#endif /* BERTHCTL_H */
