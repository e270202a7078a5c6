/* SPDX-License-Identifier: MIT */
/*
 * job.h -- the sealed job a client submits (schema_version 1).
 *
 *   {
 *     "schema_version": 1,
 *     "id":        "job-1",                  1..128 of [A-Za-z0-9._-]
 *     "pool":      "default",                a pool name (berth_pool_name_valid())
 *     "overrides": {...},                    optional, governed by the pool
 *     "image":     "sha256:<64 hex>",        OCI manifest digest
 *     "argv":      ["/bin/sh", "-c", "..."], 1..256 strings, 64 KiB in all
 *     "inputs":    [{"path": "/inputs/data.csv",
 *                    "ref": {"digest": "sha256:...", "size": N}}],   0..64
 *     "outputs":   [{"id": "summary", "path": "/tmp/outputs/summary.txt",
 *                    "media_type": "text/plain", "max_bytes": N}],   0..16
 *     "limits": {"cpu_millis", "memory_bytes", "pids", "scratch_bytes",
 *                "wall_time_ns", "output_bytes", "artifact_bytes"}
 *   }
 *
 * Every member but overrides, inputs and outputs is required; every limit is
 * explicit, positive (artifact_bytes may be 0) and within the maxima below.
 * Input paths lie under /inputs/ and output paths under /tmp/outputs/, both
 * without "." or ".." components, each path and output id used once.  There
 * are no host paths, privileges, capabilities or network fields: the
 * network comes from the pool's egress class.  The whole document is at
 * most BERTH_JOB_MAX bytes.  The job digest is "sha256:" over its canonical
 * JSON.  Thread-safe; a parsed job is immutable.
 */
#ifndef BERTH_JOB_H
#define BERTH_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>
#include <berth/plugin.h>

#define BERTH_JOB_SCHEMA_VERSION 1
#define BERTH_JOB_MAX (1024 * 1024) /**< largest job document, bytes */
#define BERTH_JOB_ID_MAX 128
#define BERTH_JOB_MAX_INPUTS 64  /**< entries of job.inputs, at most */
#define BERTH_JOB_MAX_OUTPUTS 16 /**< entries of job.outputs, at most */

/** Limit maxima (inclusive). */
#define BERTH_LIMIT_CPU_MILLIS_MAX 256000        /**< 256 CPUs */
#define BERTH_LIMIT_MEMORY_BYTES_MAX (1LL << 40) /**< 1 TiB */
#define BERTH_LIMIT_PIDS_MAX 65536
#define BERTH_LIMIT_SCRATCH_BYTES_MAX (1LL << 40)                     /**< 1 TiB */
#define BERTH_LIMIT_WALL_TIME_NS_MAX (7LL * 24 * 3600 * 1000000000LL) /**< 7 days */
#define BERTH_LIMIT_OUTPUT_BYTES_MAX (1024 * 1024)                    /**< 1 MiB, carried in the signed result */
#define BERTH_LIMIT_ARTIFACT_BYTES_MAX (1LL << 34)                    /**< 16 GiB */

/** The limits of a job (or a ceiling on them), all explicit. */
struct berth_limits {
    int64_t cpu_millis;
    int64_t memory_bytes;
    int64_t pids;
    int64_t scratch_bytes;
    int64_t wall_time_ns;
    int64_t output_bytes;
    int64_t artifact_bytes;
};

/**
 * struct berth_job - a parsed, validated job.
 * @doc:    the job document (canonical when serialised).
 * @digest: "sha256:<hex>" of its canonical JSON.
 * The string members point into @doc.
 */
struct berth_job {
    json_t *doc;
    const char *id;
    const char *pool;
    const char *image;
    const json_t *overrides; /* NULL when absent */
    struct berth_limits limits;
    char digest[BERTH_DIGEST_BUFSZ];
};

/**
 * berth_job_parse() - parse a job document strictly (canon.h rules, at most
 * BERTH_JOB_MAX bytes, no unknown members) and validate it.
 * Return: 0; -EBADMSG with reterr naming the member and rule; -EFBIG;
 * -ENOMEM.
 */
int berth_job_parse(const char *json, size_t len, struct berth_job **ret, struct berth_error *reterr);

/** berth_job_from_json() - the same for a parsed document (copied). */
int berth_job_from_json(const json_t *doc, struct berth_job **ret, struct berth_error *reterr);

/** berth_job_free() - release; accepts NULL. */
void berth_job_free(struct berth_job *job);

/**
 * berth_limits_parse() - the seven limits of @obj (an object with exactly
 * those members), each within its maximum.  @what names the object.
 * Return: 0 or -EBADMSG.
 */
int berth_limits_parse(const json_t *obj, const char *what, struct berth_limits *ret, struct berth_error *reterr);

/**
 * berth_limits_within() - whether every limit of @l is at most the
 * corresponding one of @ceiling; when not, @ret_name (optional) names the
 * first limit over it.
 */
bool berth_limits_within(const struct berth_limits *l, const struct berth_limits *ceiling, const char **ret_name);

#endif /* BERTH_JOB_H */
