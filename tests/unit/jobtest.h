/* SPDX-License-Identifier: MIT */
/* jobtest.h -- a sample job document for the job, receipt and broker suites. */
#ifndef BERTH_JOBTEST_H
#define BERTH_JOBTEST_H

#define SAMPLE_IMAGE "sha256:6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a0987654321fedcba9876543210fedcba98"

#define SAMPLE_LIMITS                                                                                                  \
    "{\"cpu_millis\":1000,\"memory_bytes\":268435456,\"pids\":64,\"scratch_bytes\":67108864,"                          \
    "\"wall_time_ns\":60000000000,\"output_bytes\":65536,\"artifact_bytes\":1048576}"

/* A job in pool "sample" with id @id (a string literal). */
#define SAMPLE_JOB_ID(id)                                                                                              \
    "{\"schema_version\":1,\"id\":\"" id "\",\"pool\":\"sample\",\"image\":\"" SAMPLE_IMAGE "\","                      \
    "\"argv\":[\"/bin/echo\",\"hello\"],"                                                                              \
    "\"inputs\":[{\"path\":\"/inputs/data.csv\",\"ref\":{\"digest\":\"sha256:"                                         \
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\",\"size\":12}}],"                               \
    "\"outputs\":[{\"id\":\"summary\",\"path\":\"/tmp/outputs/summary.txt\",\"media_type\":\"text/plain\","            \
    "\"max_bytes\":4096}],"                                                                                            \
    "\"limits\":" SAMPLE_LIMITS "}"

#define SAMPLE_JOB SAMPLE_JOB_ID("job-1")

#endif
