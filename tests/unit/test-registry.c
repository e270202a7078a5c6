/* SPDX-License-Identifier: MIT */
/*
 * test-registry.c -- pool operations on a real journal (registry.h), the
 * projection rules (poolchain.h), and tamper detection.
 */
#include "pooltest.h"

#include <sqlite3.h>

#include "buf.h"
#include "canon.h"
#include "enrol.h"
#include "jsonobj.h"
#include "registry.h"

#define NOW 1796342400000000000LL
#define ACTOR "local:test"
#define BACKENDS                                                                                                       \
    "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\",\"loopback\"],"                  \
    "\"qualification\":{\"id\":\"q\",\"expires_ns\":\"9000000000000000000\"}},"                                        \
    "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\",\"network\"],\"egress_classes\":[\"none\"],"                     \
    "\"qualification\":\"unqualified\",\"require_qualification\":false}}"

static char *dir;
static struct berth_journal *j;
static struct berth_registry *reg;
static struct berth_audit_key key;
static struct berth_backend_set *backends;

static void setup(void)
{
    dir = test_private_dir();
    j = test_journal_open(dir);
    ck_assert_int_eq(berth_registry_open(j, &reg, NULL), 0);
    test_audit_key(&key, 0x17);
    ck_assert_int_eq(berth_backend_set_parse(BACKENDS, strlen(BACKENDS), &backends, NULL), 0);
}

static void teardown(void)
{
    berth_registry_free(reg);
    berth_journal_close(j);
    berth_backend_set_free(backends);
    test_rm_rf(dir);
    free(dir);
}

static enum berth_register_outcome register_pool(const char *manifest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *p = test_pool(manifest);
    enum berth_register_outcome out;

    ck_assert_msg(berth_registry_register(reg, &key, p, ACTOR, NOW, &out, &err) == 0, "%s", err.message);
    berth_pool_free(p);
    return out;
}

static uint64_t event_count(void)
{
    sqlite3_stmt *st;
    uint64_t n;

    ck_assert_int_eq(sqlite3_prepare_v2(berth_journal_db(j), "SELECT count(*) FROM audit_events", -1, &st, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    n = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* The stored event @seq, parsed. */
static json_t *event(uint64_t seq)
{
    sqlite3_stmt *st;
    json_t *v;

    ck_assert_int_eq(
        sqlite3_prepare_v2(berth_journal_db(j), "SELECT line FROM audit_events WHERE seq = ?", -1, &st, NULL),
        SQLITE_OK);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)seq);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    v = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    sqlite3_finalize(st);
    ck_assert_ptr_nonnull(v);
    return v;
}

static int verify(struct berth_verify_report *rep, char *msg, size_t msgsz)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r = berth_registry_verify(j, &key, NULL, rep, &err);

    if (msg)
        snprintf(msg, msgsz, "%s", err.message);
    return r;
}

static void raw_exec(const char *sql)
{
    ck_assert_msg(sqlite3_exec(berth_journal_db(j), sql, NULL, NULL, NULL) == SQLITE_OK, "%s",
                  sqlite3_errmsg(berth_journal_db(j)));
}

START_TEST(register_update_retire)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const struct berth_pool_chain *chain = berth_registry_chain(reg);
    struct berth_pool *got = NULL, *sample = test_pool(SAMPLE_POOL);
    _cleanup_json_ json_t *e2 = NULL;
    const char *changed = "{\"schema_version\":1,\"name\":\"sample\",\"backend_allowlist\":[\"crun\",\"runsc\"]}";

    ck_assert_int_eq(register_pool(SAMPLE_POOL), BERTH_REGISTER_NEW);
    ck_assert_uint_eq(event_count(), 1);
    ck_assert_int_eq(register_pool(SAMPLE_POOL), BERTH_REGISTER_UNCHANGED);
    ck_assert_uint_eq(event_count(), 1); /* nothing recorded */
    ck_assert_int_eq(register_pool(changed), BERTH_REGISTER_UPDATED);
    ck_assert_uint_eq(event_count(), 2);
    e2 = event(2);
    ck_assert_str_eq(json_string_value(json_object_get(e2, "type")), "pool.updated");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e2, "details"), "prev_pool_hash")),
                     sample->pool_hash);

    ck_assert_uint_eq(berth_pool_chain_count(chain), 1);
    ck_assert_int_eq(berth_registry_get(reg, "sample", &got, &err), 0);
    ck_assert_str_eq(got->backends[0], "crun");
    ck_assert_int_eq(berth_registry_get(reg, "nope", &got, &err), -ENOENT);
    berth_pool_free(got);

    ck_assert_int_eq(berth_registry_retire(reg, &key, "sample", ACTOR, NOW, &err), 0);
    ck_assert_int_eq(berth_registry_retire(reg, &key, "sample", ACTOR, NOW, &err), -ENOENT);
    ck_assert_uint_eq(berth_pool_chain_count(chain), 0);
    ck_assert(berth_pool_chain_known(chain, sample->pool_hash));
    /* A fresh replay of the journal agrees with the incremental projection. */
    {
        struct berth_registry *fresh = NULL;
        ck_assert_int_eq(berth_registry_open(j, &fresh, &err), 0);
        ck_assert_uint_eq(berth_pool_chain_count(berth_registry_chain(fresh)), 0);
        berth_registry_free(fresh);
    }
    /* The old manifest comes back as a fresh registration, not an update. */
    ck_assert_int_eq(register_pool(SAMPLE_POOL), BERTH_REGISTER_NEW);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
    berth_pool_free(sample);
}
END_TEST

START_TEST(place_records_every_outcome)
{
    struct berth_placement_result res;
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *ov_bad = test_json("{\"capabilities\":[\"gpu\"]}"),
                          *ov_none = test_json("{\"backend\":\"crun\"}"), *ev = NULL;
    struct berth_verify_report rep;

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, &err), 0);
    ck_assert_str_eq(json_string_value(json_object_get(res.receipt, "chosen_backend")), "runsc");
    ck_assert_uint_eq(res.seq, 2);
    ev = event(2);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "pool.placed");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "details"), "placement_hash")),
                     res.placement_hash);
    berth_placement_result_clear(&res);
    json_decref(ev);

    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", ov_bad, backends, ACTOR, NOW, &res, &err), -EPERM);
    ck_assert(res.refused);
    ck_assert_int_eq(res.refusal.reason, BERTH_REFUSAL_CAPABILITY_ABOVE_CEILING);
    ev = event(3);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "pool.override_refused");
    {
        const json_t *d = json_object_get(ev, "details");
        ck_assert_str_eq(json_string_value(json_object_get(d, "reason")), "capability_above_ceiling");
        ck_assert_str_eq(json_string_value(json_object_get(d, "refused_field")), "capabilities.gpu");
        ck_assert_str_eq(json_string_value(json_object_get(d, "overrides_hash")), res.overrides_hash);
        ck_assert_str_eq(json_string_value(json_object_get(d, "actor")), ACTOR);
    }
    berth_placement_result_clear(&res);
    json_decref(ev);

    /* crun cannot enforce the pool's loopback class and there is no fallback. */
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", ov_none, backends, ACTOR, NOW, &res, &err), -EPERM);
    ck_assert_int_eq(res.refusal.reason, BERTH_REFUSAL_NO_BACKEND);
    ck_assert_uint_eq(json_array_size(res.selector_inputs), 2);
    ev = event(4);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "pool.placement_refused");
    berth_placement_result_clear(&res);

    ck_assert_int_eq(berth_registry_place(reg, &key, "missing", NULL, backends, ACTOR, NOW, &res, &err), -ENOENT);
    ck_assert_uint_eq(event_count(), 4); /* nothing recorded for an unknown pool */
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
    ck_assert_uint_eq(rep.events, 4);
    ck_assert_uint_eq(rep.placements, 1);
}
END_TEST

/* Two hosts with the same pool, overrides and backends seal byte-identical
 * receipts: run the whole path in two separate state directories. */
START_TEST(identical_receipts_across_hosts)
{
    _cleanup_free_ char *dir2 = test_private_dir(), *c1 = NULL, *c2 = NULL;
    struct berth_journal *j2 = test_journal_open(dir2);
    struct berth_registry *reg2 = NULL, *reg1 = reg;
    _cleanup_json_ json_t *ov = test_json("{\"env\":{\"MODE\":\"ci\"},\"timeout_seconds\":99}");
    struct berth_placement_result r1, r2;
    struct berth_audit_key key2;
    struct berth_pool *p = test_pool(SAMPLE_POOL);

    test_audit_key(&key2, 0x99); /* another host, another audit key */
    ck_assert_int_eq(berth_registry_open(j2, &reg2, NULL), 0);
    /* The second host also holds an unrelated pool that calls LANG -- which
     * the sample template sets -- a credential: the receipt must not care. */
    {
        struct berth_pool *other = test_pool("{\"schema_version\":1,\"name\":\"other\",\"backend_allowlist\":"
                                             "[\"runsc\"],\"credential_env_allowlist\":[\"LANG\"]}");
        ck_assert_int_eq(berth_registry_register(reg2, &key2, other, "host-b", NOW, NULL, NULL), 0);
        berth_pool_free(other);
    }
    ck_assert_int_eq(berth_registry_register(reg1, &key, p, "host-a", NOW, NULL, NULL), 0);
    ck_assert_int_eq(berth_registry_register(reg2, &key2, p, "host-b", NOW + 12345, NULL, NULL), 0);
    ck_assert_int_eq(berth_registry_place(reg1, &key, "sample", ov, backends, "host-a", NOW, &r1, NULL), 0);
    ck_assert_int_eq(berth_registry_place(reg2, &key2, "sample", ov, backends, "host-b", NOW + 777, &r2, NULL), 0);
    ck_assert_int_eq(berth_json_serialize(r1.receipt, 0, &c1, NULL, NULL), 0);
    ck_assert_int_eq(berth_json_serialize(r2.receipt, 0, &c2, NULL, NULL), 0);
    ck_assert_str_eq(c1, c2);
    ck_assert_str_eq(r1.placement_hash, r2.placement_hash);
    berth_placement_result_clear(&r1);
    berth_placement_result_clear(&r2);
    berth_pool_free(p);
    berth_registry_free(reg2);
    berth_journal_close(j2);
    test_rm_rf(dir2);
}
END_TEST

/* A name some pool declared a credential stays one after that pool is
 * retired: retiring a pool must not open a hole in another. */
/* The index columns are not MAC'd: the verifier checks them against the
 * events, and appending reads the chain's tail from the event itself. */
START_TEST(tampered_columns_detected)
{
    struct berth_verify_report rep;
    char msg[BERTH_ERROR_MESSAGE_MAX];

    register_pool(SAMPLE_POOL);
    register_pool("{\"schema_version\":1,\"name\":\"b\",\"backend_allowlist\":[\"runsc\"]}");
    raw_exec("UPDATE audit_events SET mac = printf('%064d', 0) WHERE seq = 2");
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "event 2: the stored seq, type or mac column disagrees"));
    /* The next append links to the real mac, not the column. */
    raw_exec("UPDATE audit_events SET mac = json_extract(line, '$.mac') WHERE seq = 2");
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
    raw_exec("UPDATE audit_events SET type = 'pool.retired' WHERE seq = 1");
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "event 1: the stored seq, type or mac column disagrees"));
}
END_TEST

START_TEST(anchored_verify)
{
    struct berth_verify_report rep;
    struct berth_audit_anchor anchor;
    char msg[BERTH_ERROR_MESSAGE_MAX];
    struct berth_error err = BERTH_ERROR_INIT;

    register_pool(SAMPLE_POOL);
    register_pool("{\"schema_version\":1,\"name\":\"b\",\"backend_allowlist\":[\"runsc\"]}");
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
    ck_assert_uint_eq(rep.events, 2);
    anchor.seq = rep.events;
    memcpy(anchor.mac, rep.head_mac, sizeof(anchor.mac));
    raw_exec("DELETE FROM audit_events WHERE seq = 2");                              /* truncate the tail */
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);                                      /* a valid, shorter chain ... */
    ck_assert_int_eq(berth_registry_verify(j, &key, &anchor, &rep, &err), -EBADMSG); /* ... but not the anchored one */
    snprintf(msg, sizeof(msg), "%s", err.message);
    ck_assert_ptr_nonnull(strstr(msg, "before the anchored event"));
}
END_TEST

START_TEST(retired_credentials_still_count)
{
    struct berth_placement_result res;
    _cleanup_json_ json_t *ov = test_json("{\"env\":{\"DATABASE_URL\":\"postgres://x\"}}");

    register_pool(SAMPLE_POOL);
    register_pool("{\"schema_version\":1,\"name\":\"db\",\"backend_allowlist\":[\"runsc\"],"
                  "\"credential_env_allowlist\":[\"DATABASE_URL\"]}");
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", ov, backends, ACTOR, NOW, &res, NULL), -EPERM);
    ck_assert_int_eq(res.refusal.reason, BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED);
    berth_placement_result_clear(&res);
    ck_assert_int_eq(berth_registry_retire(reg, &key, "db", ACTOR, NOW, NULL), 0);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", ov, backends, ACTOR, NOW, &res, NULL), -EPERM);
    ck_assert_int_eq(res.refusal.reason, BERTH_REFUSAL_CREDENTIAL_ENV_NOT_ALLOWED);
    berth_placement_result_clear(&res);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
}
END_TEST

START_TEST(tampered_body_detected)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool *got = NULL;
    char msg[BERTH_ERROR_MESSAGE_MAX];

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
    /* The same manifest, re-indented: equivalent, but not the stored bytes. */
    raw_exec("UPDATE pool_bodies SET body = replace(body, ',', ', ')");
    ck_assert_int_eq(verify(NULL, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "is damaged: it is not in canonical form"));
    raw_exec("UPDATE pool_bodies SET body = replace(body, ', ', ',')");
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
    raw_exec("UPDATE pool_bodies SET body = replace(body, 'C.UTF-8', 'C.UTF-9')");
    ck_assert_int_eq(verify(NULL, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "is damaged: it hashes to"));
    ck_assert_int_eq(berth_registry_get(reg, "sample", &got, &err), -EBADMSG); /* re-hashed on every load */
    raw_exec("DELETE FROM pool_bodies");
    ck_assert_int_eq(verify(NULL, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "is missing from the journal"));
}
END_TEST

/* A placement reads the pool's stored body every time; the pool parsed
 * from it is reused only while those bytes are the ones checked before, so
 * a body changed after a placement is refused at the next one, and more
 * pools than the registry keeps parsed are placed alike. */
START_TEST(placement_rechecks_stored_body)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_placement_result first, res;
    char pool[128], name[16];

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &first, NULL), 0);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    ck_assert(json_equal(first.receipt, res.receipt));
    berth_placement_result_clear(&res);

    raw_exec("UPDATE pool_bodies SET body = replace(body, 'C.UTF-8', 'C.UTF-9')");
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "is damaged: it hashes to"));
    raw_exec("UPDATE pool_bodies SET body = replace(body, 'C.UTF-9', 'C.UTF-8')");
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    berth_placement_result_clear(&res);
    raw_exec("UPDATE pool_bodies SET body = replace(body, ',', ', ')");
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "is damaged: it is not in canonical form"));
    raw_exec("UPDATE pool_bodies SET body = replace(body, ', ', ',')");

    /* More pools than are kept parsed, each placed twice, then the first. */
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof(name), "p%d", i);
        snprintf(pool, sizeof(pool), "{\"schema_version\":1,\"name\":\"%s\",\"backend_allowlist\":[\"runsc\"]}",
                 name);
        register_pool(pool);
        for (int k = 0; k < 2; k++) {
            ck_assert_int_eq(berth_registry_place(reg, &key, name, NULL, backends, ACTOR, NOW, &res, NULL), 0);
            berth_placement_result_clear(&res);
        }
    }
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    ck_assert(json_equal(first.receipt, res.receipt));
    berth_placement_result_clear(&res);
    berth_placement_result_clear(&first);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);

    raw_exec("DELETE FROM pool_bodies");
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "is missing from the journal"));
}
END_TEST

START_TEST(tampered_event_detected)
{
    struct berth_verify_report rep;
    char msg[BERTH_ERROR_MESSAGE_MAX];

    struct berth_placement_result res;

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    berth_placement_result_clear(&res);
    register_pool("{\"schema_version\":1,\"name\":\"other\",\"backend_allowlist\":[\"runsc\"]}");
    /* Change the chosen backend in the recorded placement (event 2). */
    raw_exec("UPDATE audit_events SET line = replace(line, '\"chosen_backend\":\"runsc\"', "
             "'\"chosen_backend\":\"crun\"') WHERE seq = 2");
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_uint_eq(rep.bad_seq, 2);
    ck_assert_ptr_nonnull(strstr(msg, "event 2: mac does not match"));
}
END_TEST

/* Events with valid MACs that break the pool rules: a key holder cannot
 * write a placement the pool and overrides do not derive. */
START_TEST(chain_rules)
{
    struct berth_placement_result res;
    struct berth_verify_report rep;
    _cleanup_json_ json_t *ev = NULL, *d = NULL;
    char msg[BERTH_ERROR_MESSAGE_MAX];

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    berth_placement_result_clear(&res);
    ev = event(2);
    d = json_deep_copy(json_object_get(ev, "details"));
    /* A forged placement: the receipt says crun although runsc was first eligible. */
    json_object_set_new(json_object_get(d, "receipt"), "chosen_backend", json_string("crun"));
    {
        char h[BERTH_HASH_HEX_LEN + 1];
        ck_assert_int_eq(berth_hash_hex_json(json_object_get(d, "receipt"), h, NULL), 0);
        json_object_set_new(d, "placement_hash", json_string(h));
    }
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.placed", ACTOR, d, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_uint_eq(rep.bad_seq, 3);
    ck_assert_ptr_nonnull(strstr(msg, "the receipt does not follow from the pool, overrides and backends"));
}
END_TEST

/* Forge an event from a recorded one with @edit applied (valid MAC: the
 * forger holds the key) and return the verification message. */
static void forge_and_verify(uint64_t from_seq, const char *type, void (*edit)(json_t *d), uint64_t want_bad,
                             const char *needle)
{
    _cleanup_json_ json_t *ev = event(from_seq), *d = NULL;
    struct berth_verify_report rep;
    char msg[BERTH_ERROR_MESSAGE_MAX];

    d = json_deep_copy(json_object_get(ev, "details"));
    edit(d);
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, type, ACTOR, d, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_uint_eq(rep.bad_seq, want_bad);
    ck_assert_msg(strstr(msg, needle), "\"%s\" lacks \"%s\"", msg, needle);
}

/* The override named crun; a forger drops it and keeps runsc, with
 * self-consistent selector inputs and a recomputed placement_hash. */
static void drop_override(json_t *d)
{
    json_t *receipt = json_object_get(d, "receipt"), *inputs = json_object_get(receipt, "selector_inputs");
    char h[BERTH_HASH_HEX_LEN + 1];

    json_object_set_new(json_array_get(inputs, 0), "kept", json_true());
    json_object_set_new(json_array_get(inputs, 0), "reason", json_string("eligible"));
    json_object_set_new(receipt, "chosen_backend", json_string("runsc"));
    ck_assert_int_eq(berth_hash_hex_json(receipt, h, NULL), 0);
    json_object_set_new(d, "placement_hash", json_string(h));
}

static void other_reason(json_t *d)
{
    json_object_set_new(d, "reason", json_string("egress_widened"));
}

static void keep_a_candidate(json_t *d)
{
    json_object_set_new(json_array_get(json_object_get(d, "selector_inputs"), 1), "kept", json_true());
}

/* A refused field name that is long and non-ASCII is cut on a character
 * boundary: the refusal is still recorded and verifies. */
START_TEST(long_utf8_field_recorded)
{
    struct berth_placement_result res;
    char doc[512], key_name[400];
    json_t *ov;
    size_t i;

    for (i = 0; i < 158; i++)
        key_name[i] = 'a';
    strcpy(key_name + 158, "\xc3\xa9");
    snprintf(doc, sizeof(doc), "{\"%s\":1}", key_name);
    ov = test_json(doc);
    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", ov, backends, ACTOR, NOW, &res, NULL), -EPERM);
    ck_assert_int_eq(res.refusal.reason, BERTH_REFUSAL_UNKNOWN_FIELD);
    ck_assert_uint_eq(strlen(res.refusal.field), 158); /* the cut character dropped */
    ck_assert_uint_eq(event_count(), 2);
    berth_placement_result_clear(&res);
    json_decref(ov);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
}
END_TEST

START_TEST(forged_decisions)
{
    struct berth_placement_result res;
    _cleanup_json_ json_t *crun = test_json("{\"backend\":\"crun\",\"network_egress_class\":\"none\"}"),
                          *gpu = test_json("{\"capabilities\":[\"gpu\"]}"),
                          *to_crun = test_json("{\"backend\":\"crun\"}");

    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", crun, backends, ACTOR, NOW, &res, NULL), 0); /* 2 */
    ck_assert_str_eq(json_string_value(json_object_get(res.receipt, "chosen_backend")), "crun");
    berth_placement_result_clear(&res);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", gpu, backends, ACTOR, NOW, &res, NULL), -EPERM); /* 3 */
    berth_placement_result_clear(&res);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", to_crun, backends, ACTOR, NOW, &res, NULL), -EPERM);
    berth_placement_result_clear(&res); /* 4: no_backend */
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);

    forge_and_verify(2, "pool.placed", drop_override, 5, "the receipt does not follow");
    raw_exec("DELETE FROM audit_events WHERE seq = 5");
    forge_and_verify(3, "pool.override_refused", other_reason, 5, "not refused for that reason and field");
    raw_exec("DELETE FROM audit_events WHERE seq = 5");
    forge_and_verify(4, "pool.placement_refused", keep_a_candidate, 5, "the refusal does not follow");
}
END_TEST

START_TEST(chain_rules_registration)
{
    struct berth_verify_report rep;
    char msg[BERTH_ERROR_MESSAGE_MAX];
    _cleanup_json_ json_t *first = NULL, *unknown = json_object();
    const json_t *again;

    register_pool(SAMPLE_POOL);
    first = event(1);
    again = json_object_get(first, "details");
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.registered", ACTOR, again, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_uint_eq(rep.bad_seq, 2);
    ck_assert_ptr_nonnull(strstr(msg, "registered again while active"));
    raw_exec("DELETE FROM audit_events WHERE seq = 2");
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.frobnicated", ACTOR, unknown, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "unknown pool event type pool.frobnicated"));
    /* Events of other subsystems pass through. */
    raw_exec("DELETE FROM audit_events WHERE seq = 2");
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "job.accepted", ACTOR, unknown, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
}
END_TEST

#define SOME_DIGEST_HEX "3333333333333333333333333333333333333333333333333333333333333333"

START_TEST(enrol_and_claim)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *w = NULL, *stranger = NULL;
    struct berth_placement_result res;
    struct berth_verify_report rep;
    const char *other_placement = "0000000000000000000000000000000000000000000000000000000000000000";

    ck_assert_int_eq(berth_signing_key_generate(&w, NULL), 0);
    ck_assert_int_eq(berth_signing_key_generate(&stranger, NULL), 0);
    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    ck_assert_int_eq(
        berth_registry_claim(reg, &key, "sample", w, "w1", "job-1", res.placement_hash, ACTOR, NOW, NULL, &err),
        -EPERM); /* not enrolled yet */
    ck_assert_ptr_nonnull(strstr(err.message, "is not enrolled in pool sample"));
    ck_assert_int_eq(berth_registry_enrol(reg, &key, "sample", w, "w1", ACTOR, NOW, NULL, &err), 0);
    ck_assert_int_eq(
        berth_registry_claim(reg, &key, "sample", w, "w1", "job-1", other_placement, ACTOR, NOW, NULL, &err), -EPERM);
    ck_assert_ptr_nonnull(strstr(err.message, "was not recorded in pool sample"));
    ck_assert_int_eq(
        berth_registry_claim(reg, &key, "sample", w, "w1", "job-1", res.placement_hash, ACTOR, NOW, NULL, &err), 0);
    ck_assert_int_eq(
        berth_registry_claim(reg, &key, "sample", stranger, "w9", "job-1", res.placement_hash, ACTOR, NOW, NULL, &err),
        -EPERM);
    ck_assert_int_eq(berth_registry_enrol(reg, &key, "nope", w, "w1", ACTOR, NOW, NULL, &err), -ENOENT);
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
    ck_assert_uint_eq(rep.enrolments, 1);
    ck_assert_uint_eq(rep.claims, 1);

    /* A claim signed by a stranger, forged into the chain with a valid MAC. */
    {
        _cleanup_json_ json_t *forged = NULL;
        char msg[BERTH_ERROR_MESSAGE_MAX];
        ck_assert_int_eq(berth_claim_create(stranger, json_string_value(json_object_get(res.receipt, "pool_hash")),
                                            "w9", "job-2", res.placement_hash, NOW, &forged, NULL),
                         0);
        ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.claim_receipt", ACTOR, forged, NULL, NULL), 0);
        ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(msg, "which is not enrolled in that pool"));
        raw_exec("DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events)");
    }
    /* A claim of schema 2 by w1's enrolled key under another worker's name:
     * a key's claims are those of the name it enrolled with. */
    {
        _cleanup_json_ json_t *renamed = NULL;
        char msg[BERTH_ERROR_MESSAGE_MAX];
        const struct berth_claim_params p = {
            .pool_hash = json_string_value(json_object_get(res.receipt, "pool_hash")), .worker_name = "w2",
            .job_id = "job-3", .job_digest = "sha256:" SOME_DIGEST_HEX, .receipt_digest = "sha256:" SOME_DIGEST_HEX,
            .run_id = "r11111111111111111111111111111111", .placement_hash = res.placement_hash, .lease_revision = 2,
            .created_ns = NOW};
        ck_assert_int_eq(verify(&rep, NULL, 0), 0);
        ck_assert_int_eq(berth_claim2_create(w, &p, &renamed, NULL), 0);
        ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.claim_receipt", ACTOR, renamed, NULL, NULL), 0);
        ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(msg, "under another name than it enrolled with (w1)"));
    }
    berth_placement_result_clear(&res);
    berth_signing_key_free(w);
    berth_signing_key_free(stranger);
}
END_TEST

/* Two effective_manifest_hash values and a run id for the warm-slot events. */
#define WARM_HASH_A "1111111111111111111111111111111111111111111111111111111111111111"
#define WARM_HASH_B "2222222222222222222222222222222222222222222222222222222222222222"
#define WARM_RUN "r0123456789abcdef0123456789abcdef"

START_TEST(warm_slot)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *a = WARM_HASH_A, *b = WARM_HASH_B, *run = WARM_RUN;
    _cleanup_json_ json_t *ev = NULL, *ev2 = NULL, *ev3 = NULL;

    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-1", a, a, run, ACTOR, NOW, &err), 1);
    ck_assert_uint_eq(event_count(), 1);
    ev = event(1);
    ck_assert_str_eq(json_string_value(json_object_get(ev, "type")), "pool.warm_attached");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev, "details"), "run_id")), run);
    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-2", a, b, run, ACTOR, NOW, &err), 0);
    ck_assert_uint_eq(event_count(), 2);
    ev2 = event(2);
    ck_assert_str_eq(json_string_value(json_object_get(ev2, "type")), "pool.warm_quarantine");
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev2, "details"), "slot_hash")), a);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev2, "details"), "dispatch_hash")), b);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev2, "details"), "reason")), "manifest");
    /* Equal hashes, another reason: the runtime refused the claim. */
    ck_assert_int_eq(berth_registry_warm_quarantine(reg, &key, "p", "slot-3", a, a, "runtime", ACTOR, NOW, &err), 0);
    ev3 = event(3);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(ev3, "details"), "reason")), "runtime");
    ck_assert_int_eq(berth_registry_warm_quarantine(reg, &key, "p", "slot-3", a, a, "whim", ACTOR, NOW, &err),
                     -EINVAL);
    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot 1", a, b, run, ACTOR, NOW, &err), -EINVAL);
    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-1", "short", b, run, ACTOR, NOW, &err),
                     -EINVAL);
    ck_assert_uint_eq(event_count(), 3);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
}
END_TEST

static void attach_other_hash(json_t *d)
{
    json_object_set_new(d, "dispatch_hash",
                        json_string("3333333333333333333333333333333333333333333333333333333333333333"));
}

static void quarantine_matching(json_t *d)
{
    json_object_set_new(d, "dispatch_hash", json_incref(json_object_get(d, "slot_hash")));
}

/* A forged attach of a slot to a dispatch with another manifest, and a
 * "manifest" quarantine of a slot whose hash matched, fail verification. */
START_TEST(warm_forgeries_detected)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *a = WARM_HASH_A, *b = WARM_HASH_B, *run = WARM_RUN;

    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-1", a, a, run, ACTOR, NOW, &err), 1);
    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-2", a, b, run, ACTOR, NOW, &err), 0);
    ck_assert_int_eq(verify(NULL, NULL, 0), 0);
    forge_and_verify(1, "pool.warm_attached", attach_other_hash, 3, "hash differs");
}
END_TEST

START_TEST(warm_quarantine_forgery_detected)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *a = WARM_HASH_A, *b = WARM_HASH_B, *run = WARM_RUN;

    ck_assert_int_eq(berth_registry_warm_attach(reg, &key, "p", "slot-2", a, b, run, ACTOR, NOW, &err), 0);
    forge_and_verify(1, "pool.warm_quarantine", quarantine_matching, 2, "although its hash matched");
}
END_TEST

/* Claims of schema 2 by the broker (its own runs): checked against the
 * broker's key when the verifier has it, counted unchecked otherwise; a
 * run is claimed once; a claim by another key is found. */
START_TEST(broker_claims)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *broker = NULL, *stranger = NULL;
    struct berth_placement_result res;
    struct berth_verify_report rep;
    _cleanup_json_ json_t *claim = NULL, *again = NULL, *forged = NULL;
    char msg[BERTH_ERROR_MESSAGE_MAX];
    const char *pool_hash;
    struct berth_claim_params p = {.by_broker = true,
                                   .worker_name = "dev",
                                   .job_id = "job-1",
                                   .job_digest = "sha256:" WARM_HASH_A,
                                   .receipt_digest = "sha256:" WARM_HASH_B,
                                   .run_id = WARM_RUN,
                                   .lease_revision = 2,
                                   .created_ns = NOW};

    ck_assert_int_eq(berth_signing_key_generate(&broker, NULL), 0);
    ck_assert_int_eq(berth_signing_key_generate(&stranger, NULL), 0);
    register_pool(SAMPLE_POOL);
    ck_assert_int_eq(berth_registry_place(reg, &key, "sample", NULL, backends, ACTOR, NOW, &res, NULL), 0);
    pool_hash = json_string_value(json_object_get(res.receipt, "pool_hash"));
    p.pool_hash = pool_hash;
    p.placement_hash = res.placement_hash;
    ck_assert_int_eq(berth_claim2_create(broker, &p, &claim, &err), 0);
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.claim_receipt", ACTOR, claim, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
    ck_assert_uint_eq(rep.claims, 1);
    ck_assert_uint_eq(rep.broker_claims, 1);
    ck_assert_uint_eq(rep.broker_unchecked, 1);
    ck_assert_int_eq(berth_registry_verify_keyed(j, &key, NULL, berth_signing_key_public(broker), &rep, &err), 0);
    ck_assert_uint_eq(rep.broker_unchecked, 0);
    /* The same run claimed again. */
    ck_assert_int_eq(berth_claim2_create(broker, &p, &again, &err), 0);
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.claim_receipt", ACTOR, again, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, msg, sizeof(msg)), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(msg, "was already claimed"));
    raw_exec("DELETE FROM audit_events WHERE seq = (SELECT max(seq) FROM audit_events)");
    /* Another key posing as the broker, with a valid MAC: only the broker's key finds it. */
    p.run_id = "r00000000000000000000000000000000";
    ck_assert_int_eq(berth_claim2_create(stranger, &p, &forged, &err), 0);
    ck_assert_int_eq(berth_audit_append(j, &key, NOW, "pool.claim_receipt", ACTOR, forged, NULL, NULL), 0);
    ck_assert_int_eq(verify(&rep, NULL, 0), 0);
    ck_assert_uint_eq(rep.broker_unchecked, 2);
    ck_assert_int_eq(berth_registry_verify_keyed(j, &key, NULL, berth_signing_key_public(broker), &rep, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "claim.keyid is not the id of the key it is checked with"));
    berth_placement_result_clear(&res);
    berth_signing_key_free(broker);
    berth_signing_key_free(stranger);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = test_case(s, "registry");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, register_update_retire);
    tcase_add_test(tc, place_records_every_outcome);
    tcase_add_test(tc, identical_receipts_across_hosts);
    tcase_add_test(tc, tampered_columns_detected);
    tcase_add_test(tc, anchored_verify);
    tcase_add_test(tc, retired_credentials_still_count);
    tcase_add_test(tc, tampered_body_detected);
    tcase_add_test(tc, placement_rechecks_stored_body);
    tcase_add_test(tc, tampered_event_detected);
    tcase_add_test(tc, chain_rules);
    tcase_add_test(tc, long_utf8_field_recorded);
    tcase_add_test(tc, forged_decisions);
    tcase_add_test(tc, chain_rules_registration);
    tcase_add_test(tc, enrol_and_claim);
    tcase_add_test(tc, broker_claims);
    tcase_add_test(tc, warm_slot);
    tcase_add_test(tc, warm_forgeries_detected);
    tcase_add_test(tc, warm_quarantine_forgery_detected);
    return s;
}

TEST_MAIN()
