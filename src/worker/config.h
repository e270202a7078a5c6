/* SPDX-License-Identifier: MIT */
/*
 * config.h -- berth-worker's configuration (berth-worker.json(5),
 * docs/workers.md):
 *
 *   {"schema_version": 1,
 *    "name": "worker-1",                  the worker's name: its principal in
 *                                         berthd's host policy (a subject that
 *                                         "serves" pools)
 *    "client": "/etc/berth-worker/client.json",   how to reach berthd: the
 *                                         client configuration berthctl reads
 *                                         too (https.h): URL, pinned broker
 *                                         key, client certificate, key, CA
 *    "identity": "/etc/berth-worker/identity.key"}  the worker's Ed25519
 *                                         install identity (berthctl keygen):
 *                                         it signs enrolments, claims and
 *                                         reports
 *
 * The file is read through the core's no-follow helpers: a regular file
 * with one link, owned by root or the caller, writable by no one else, at
 * most 64 KiB of strict JSON (no unknown member, no duplicate key).
 */
#ifndef BERTH_WORKER_CONFIG_H
#define BERTH_WORKER_CONFIG_H

#include <jansson.h>

#include <berth/error.h>

#define BERTH_WORKER_CONFIG_MAX (64 * 1024)

struct worker_config {
    json_t *doc; /* owns the strings below */
    const char *name, *client, *identity;
};

/**
 * worker_config_load() - read and check the configuration at the absolute
 * @path.  Return: 0; -EBADMSG (reterr names the member and the rule); the
 * errors of reading the file; -ENOMEM.
 */
int worker_config_load(const char *path, struct worker_config *ret, struct berth_error *reterr);

/** worker_config_clear() - release what worker_config_load() filled; accepts a zeroed one. */
void worker_config_clear(struct worker_config *c);

#endif /* BERTH_WORKER_CONFIG_H */
