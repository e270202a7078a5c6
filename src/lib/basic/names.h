/* SPDX-License-Identifier: MIT */
/*
 * names.h -- tables of names: the string forms of berth's enums (job
 * states, capabilities, egress classes, pool fields) are arrays of
 * NUL-terminated strings indexed by the enum; this looks a name up.
 *
 * Pure and thread-safe.
 */
#ifndef BERTH_NAMES_H
#define BERTH_NAMES_H

#include <stddef.h>

/**
 * berth_name_index() - the index of @name in @table.
 * @table: @n NUL-terminated strings (none NULL).
 * @name:  the name to look up; NULL finds nothing.
 *
 * Return: the first index i with table[i] equal to @name (byte for byte),
 * or -1 when there is none.
 */
int berth_name_index(const char *const *table, size_t n, const char *name);

#endif /* BERTH_NAMES_H */
