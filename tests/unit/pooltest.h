/* SPDX-License-Identifier: MIT */
/*
 * pooltest.h -- fixtures shared by the pool, audit and journal suites:
 * private journal directories, a fixed audit key, sample manifests.
 */
#ifndef BERTH_POOLTEST_H
#define BERTH_POOLTEST_H

#include "testutil.h"

#include "audit.h"
#include "journal.h"
#include "macro.h"
#include "pool.h"

/* A pool exposing every field, for the merge and placement tests. */
#define SAMPLE_POOL                                                                                                    \
    "{\"schema_version\":1,\"name\":\"sample\",\"backend_allowlist\":[\"runsc\",\"crun\"],"                            \
    "\"template\":{\"env\":{\"LANG\":\"C.UTF-8\"},\"timeout_seconds\":600},"                                           \
    "\"exposed_fields\":[\"root\",\"env\",\"timeout_seconds\",\"backend\",\"capabilities\",\"network_egress_class\"]," \
    "\"capability_ceiling\":[\"exec\",\"file_rw\",\"network\"],\"network_egress_class\":\"loopback\","                 \
    "\"credential_env_allowlist\":[\"GITHUB_TOKEN\"]}"

/* A directory only we can enter, as journals require. */
static inline char *test_private_dir(void)
{
    char *d = test_tmpdir();
    ck_assert_int_eq(chmod(d, 0700), 0);
    return d;
}

static inline struct berth_journal *test_journal_open(const char *dir)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "journal.db");
    struct berth_journal *j = NULL;

    ck_assert_msg(berth_journal_open(path, BERTH_JOURNAL_CREATE, &j, &err) == 0, "%s", err.message);
    return j;
}

/* A fixed key, so chains are reproducible. */
static inline void test_audit_key(struct berth_audit_key *k, uint8_t fill)
{
    memset(k->bytes, fill, sizeof(k->bytes));
}

static inline struct berth_pool *test_pool(const char *json)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *p = NULL;

    ck_assert_msg(berth_pool_parse(json, strlen(json), &p, &err) == 0, "%s", err.message);
    return p;
}

static inline json_t *test_json(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, &e);
    ck_assert_msg(v != NULL, "test JSON: %s", e.text);
    return v;
}

#endif
