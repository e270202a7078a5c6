/* SPDX-License-Identifier: MIT */
/*
 * fixture-data-entry.c -- exports a *data object* named berth_plugin_entry.
 * Calling it would jump into data; the loader must refuse it (-ENOEXEC)
 * without calling it.  Deliberately does not include <berth/plugin.h>, which
 * declares the name as a function.
 */
__attribute__((visibility("default"))) const unsigned char berth_plugin_entry[64] = {0xff};
