/* SPDX-License-Identifier: MIT */
/*
 * names.h -- names: the string forms of berth's enums (job states,
 * capabilities, egress classes, pool fields) are arrays of NUL-terminated
 * strings indexed by the enum, and berth_name_index() looks one up; and
 * the one rule of each kind of name that berth's documents and command
 * lines carry (plugins, backends, pools, principals, brokers), so that
 * every parser, the loader and "berthctl dev-init" accept the same names.
 *
 * Every rule counts bytes and accepts ASCII only, so a length in bytes is
 * also one in characters.  Each BERTH_*_NAME_RULE macro is the rule in
 * words, for messages ("%s must be " BERTH_BACKEND_NAME_RULE).
 *
 * Pure and thread-safe; NULL is never a valid name.
 */
#ifndef BERTH_NAMES_H
#define BERTH_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/** BERTH_STRINGIFY() - @x, after macro expansion, as a string literal. */
#define BERTH_STRINGIFY(x) BERTH_STRINGIFY_(x)
#define BERTH_STRINGIFY_(x) #x

/**
 * berth_name_index() - the index of @name in @table.
 * @table: @n NUL-terminated strings (none NULL).
 * @name:  the name to look up; NULL finds nothing.
 *
 * Return: the first index i with table[i] equal to @name (byte for byte),
 * or -1 when there is none.
 */
int berth_name_index(const char *const *table, size_t n, const char *name);

/** Longest plugin name, bytes (the loader's, berth-plugin(7)). */
#define BERTH_PLUGIN_NAME_MAX 63
#define BERTH_PLUGIN_NAME_RULE                                                                                         \
    "1 to " BERTH_STRINGIFY(BERTH_PLUGIN_NAME_MAX) " of [a-z0-9-], starting with a letter or digit"

/**
 * berth_plugin_name_valid() - whether @name is a plugin name: 1 to
 * BERTH_PLUGIN_NAME_MAX of [a-z0-9-], the first a lowercase letter or a
 * digit.  The plugin's descriptor carries it and its file is "<name>.so"
 * (berth-plugin(7)), so it is also a file name that no option parser
 * takes for an option.
 */
bool berth_plugin_name_valid(const char *name);

/** Longest backend name, bytes. */
#define BERTH_BACKEND_NAME_MAX 63
#define BERTH_BACKEND_NAME_RULE                                                                                        \
    "1 to " BERTH_STRINGIFY(BERTH_BACKEND_NAME_MAX) " of [a-z0-9._-], starting with a letter or digit"

/**
 * berth_backend_name_valid() - whether @name is a runtime backend name (a
 * member of berthd.json's "backends", an entry of a pool's
 * backend_allowlist, the backend of a receipt): 1 to
 * BERTH_BACKEND_NAME_MAX of [a-z0-9._-], the first a lowercase letter or
 * a digit (so never "." or "..": dev-init makes runtime/NAME a directory).
 */
bool berth_backend_name_valid(const char *name);

/** Longest pool name, bytes. */
#define BERTH_POOL_NAME_MAX 63
#define BERTH_POOL_NAME_RULE                                                                                           \
    "1 to " BERTH_STRINGIFY(BERTH_POOL_NAME_MAX) " of [a-z0-9._-], starting with a letter or digit"

/**
 * berth_pool_name_valid() - whether @name is a pool name (a manifest's
 * "name", a job's "pool", a policy subject's "pools" entry, the NAME of
 * GET /v1/pools/NAME): the grammar of backend names, 1 to
 * BERTH_POOL_NAME_MAX of [a-z0-9._-], the first a lowercase letter or a
 * digit, so that a name is safe as one URL path segment.
 */
bool berth_pool_name_valid(const char *name);

/** Longest principal, bytes. */
#define BERTH_PRINCIPAL_MAX 128
#define BERTH_PRINCIPAL_RULE "1 to " BERTH_STRINGIFY(BERTH_PRINCIPAL_MAX) " of [A-Za-z0-9._@-]"

/**
 * berth_principal_valid() - whether @name is a principal, the name a host
 * policy subject gives its client certificates (written into receipts and
 * logs): 1 to BERTH_PRINCIPAL_MAX of [A-Za-z0-9._@-], so that an e-mail
 * style "ci@build-host" is one.
 */
bool berth_principal_valid(const char *name);

/** Longest broker name, bytes. */
#define BERTH_BROKER_NAME_MAX 64
#define BERTH_BROKER_NAME_RULE "1 to " BERTH_STRINGIFY(BERTH_BROKER_NAME_MAX) " of [A-Za-z0-9._-]"

/**
 * berth_broker_name_valid() - whether @name is a broker name (berthd.json's
 * "broker_name", written into every receipt, result and qualification):
 * 1 to BERTH_BROKER_NAME_MAX of [A-Za-z0-9._-].
 */
bool berth_broker_name_valid(const char *name);

/** Longest media type, bytes. */
#define BERTH_MEDIA_TYPE_MAX 255
#define BERTH_MEDIA_TYPE_RULE                                                                                          \
    "a media type such as text/plain: 1 to " BERTH_STRINGIFY(BERTH_MEDIA_TYPE_MAX) " printable ASCII bytes with a \"/\""

/**
 * berth_media_type_valid() - whether @s is a media type as berth records it
 * (a job output's "media_type", an evidence object's): 1 to
 * BERTH_MEDIA_TYPE_MAX bytes of printable ASCII (spaces allowed, for
 * parameters such as "; charset=utf-8") with a "/" that is neither the
 * first nor the last byte.  It is stored as given, not parsed further.
 */
bool berth_media_type_valid(const char *s);

#endif /* BERTH_NAMES_H */
