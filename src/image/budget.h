/* SPDX-License-Identifier: MIT */
/*
 * budget.h -- the budgets of one image stage.
 *
 * Every budget is enforced while streaming: a stage stops at the first byte,
 * entry or layer over its budget and removes what it created.  The maxima are
 * hard ceilings (a configuration can only lower them).
 */
#ifndef BERTH_IMAGE_BUDGET_H
#define BERTH_IMAGE_BUDGET_H

#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#define BERTH_STAGE_MAX_COMPRESSED_BYTES (4ULL << 30) /* 4 GiB: manifest, config and layer blobs */
#define BERTH_STAGE_MAX_EXPANDED_BYTES (8ULL << 30)   /* 8 GiB: tar streams incl. headers and padding */
#define BERTH_STAGE_MAX_ENTRIES 100000ULL             /* entry units, see struct berth_stage_limits */
#define BERTH_STAGE_MAX_LAYERS 128U
#define BERTH_STAGE_MAX_WALL_TIME_NS (600LL * 1000000000LL) /* 10 minutes */
#define BERTH_IMAGE_METADATA_MAX (1U << 20)                 /* manifest, config, index: 1 MiB each */

/**
 * struct berth_stage_limits - budgets of one stage.
 * @compressed_bytes: bytes of every blob read (manifest, config, layers), 1..4 GiB.
 * @expanded_bytes:   bytes of the uncompressed tar streams, headers and
 *                    padding included, summed over layers, 1..8 GiB.
 * @entries:          entry units summed over layers: each archive header
 *                    costs one, plus one per component of its path and of its
 *                    link target (so "a/b/c" costs 4), 1..100,000.
 * @layers:           layers in the manifest, 1..128.
 * @wall_time_ns:     the whole stage, 1 ns..10 min (CLOCK_MONOTONIC).
 */
struct berth_stage_limits {
    uint64_t compressed_bytes;
    uint64_t expanded_bytes;
    uint64_t entries;
    unsigned layers;
    int64_t wall_time_ns;
};

/** berth_stage_limits_default() - every budget at its maximum. */
void berth_stage_limits_default(struct berth_stage_limits *ret);

/**
 * berth_stage_limits_from_json() - read budgets from a JSON object with the
 * optional members "compressed_bytes", "expanded_bytes", "entries", "layers"
 * and "wall_time_ns" (integers); members absent keep their maximum.
 * @obj: the object, or NULL for all defaults.
 * Return: 0; -EBADMSG for an unknown member, a non-integer or a value outside
 * its range (named in @reterr).  *@ret is written only on success.
 */
int berth_stage_limits_from_json(const json_t *obj, struct berth_stage_limits *ret, struct berth_error *reterr);

/** struct berth_stage_stats - what a stage consumed (bytes, units, layers). */
struct berth_stage_stats {
    uint64_t compressed_bytes;
    uint64_t expanded_bytes;
    uint64_t entries;
    unsigned layers;
    uint64_t files, directories, symlinks, hardlinks, whiteouts;
};

#endif /* BERTH_IMAGE_BUDGET_H */
