/* SPDX-License-Identifier: MIT */
/*
 * client.h -- berthctl's HTTPS client for berthd: the programs' shared one
 * (src/client/https.h, libcurl), opened from berthctl's --config or
 * $BERTH_CLIENT_CONFIG, with its errors printed as berthctl's.
 */
#ifndef BERTHCTL_CLIENT_H
#define BERTHCTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "berthctl.h"
#include "https.h"
#include "digest.h"
#include "sign.h"

/**
 * bctl_client_open() - read the client configuration (g->config, else
 * $BERTH_CLIENT_CONFIG) and prepare a connection (berth_https_open()).
 * Prints the error.  Return: an exit code (BCTL_EXIT_OK with *@ret set).
 */
int bctl_client_open(const struct bctl_globals *g, const char *verb, struct berth_https **ret);

/**
 * bctl_client_fail() - print the error of a non-success reply
 * ("berthctl VERB: 403 denied: message") and return BCTL_EXIT_FAIL.
 */
int bctl_client_fail(const char *verb, long status, const json_t *body);

#endif
