/* SPDX-License-Identifier: MIT */
/* test-audit.c -- the HMAC-chained audit log (audit.h). */
#include "pooltest.h"

#include "buf.h"
#include "encoding.h"
#include "hmac.h"
#include "jsonobj.h"

static char *dir;
static struct berth_journal *j;
static struct berth_audit_key key;

static void setup(void)
{
    dir = test_private_dir();
    j = test_journal_open(dir);
    test_audit_key(&key, 0x42);
}

static void teardown(void)
{
    berth_journal_close(j);
    test_rm_rf(dir);
    free(dir);
}

static void append(const char *type, const char *detail)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = json_pack("{s:s}", "note", detail);

    ck_assert_msg(berth_audit_append(j, &key, 1796342400000000000LL, type, "local:test", d, NULL, &err) == 0, "%s",
                  err.message);
}

static int collect(void *userdata, uint64_t seq, const char *line, size_t len)
{
    struct berth_buf *b = userdata;
    (void)seq;
    ck_assert_int_eq(berth_buf_append(b, line, len), 0);
    ck_assert_int_eq(berth_buf_putc(b, '\n'), 0);
    return 0;
}

/* The journal's chain as a JSON Lines export (malloc'd). */
static char *export_chain(size_t *ret_len)
{
    struct berth_buf b = BERTH_BUF_INIT(0);
    ck_assert_int_eq(berth_audit_foreach(j, 0, collect, &b, NULL), 0);
    return berth_buf_steal(&b, ret_len);
}

/* Verify @data; return the first bad event (0 when intact). */
static uint64_t verify(const char *data, size_t len, const struct berth_audit_key *k, char *msg, size_t msgsz)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_audit_summary sum;
    int r = berth_audit_verify(data, len, k, NULL, NULL, NULL, &sum, &err);

    if (msg)
        snprintf(msg, msgsz, "%s", err.message);
    if (r == 0)
        return 0;
    ck_assert_int_eq(r, -EBADMSG);
    ck_assert_uint_gt(sum.bad_seq, 0);
    return sum.bad_seq;
}

START_TEST(chain_links)
{
    _cleanup_free_ char *data = NULL;
    char first_mac[BERTH_AUDIT_MAC_HEX_LEN + 1] = {0}, expect[BERTH_AUDIT_MAC_HEX_LEN + 1];
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *e1 = NULL, *e2 = NULL;
    uint8_t mac[BERTH_HMAC_SHA256_LEN];
    uint64_t seq = 0;
    size_t len = 0;
    const char *nl;

    append("test.one", "first");
    {
        _cleanup_json_ json_t *d = json_pack("{s:s}", "note", "second");
        ck_assert_int_eq(berth_audit_append(j, &key, 5, "test.two", "local:test", d, &seq, &err), 0);
        ck_assert_uint_eq(seq, 2);
    }
    data = export_chain(&len);
    nl = strchr(data, '\n');
    ck_assert_ptr_nonnull(nl);
    e1 = json_loadb(data, (size_t)(nl - data), 0, NULL);
    e2 = json_loads(nl + 1, JSON_DISABLE_EOF_CHECK, NULL);
    ck_assert_ptr_nonnull(e1);
    ck_assert_ptr_nonnull(e2);
    ck_assert_str_eq(json_string_value(json_object_get(e1, "prev")),
                     "0000000000000000000000000000000000000000000000000000000000000000");
    ck_assert_str_eq(json_string_value(json_object_get(e1, "time_ns")), "1796342400000000000");
    snprintf(first_mac, sizeof(first_mac), "%s", json_string_value(json_object_get(e1, "mac")));
    ck_assert_str_eq(json_string_value(json_object_get(e2, "prev")), first_mac);
    ck_assert_int_eq(json_integer_value(json_object_get(e2, "seq")), 2);

    /* The MAC is HMAC-SHA256 over the canonical event without "mac" --
     * recomputed here independently of audit.c. */
    {
        const char *line1_end = strstr(data, ",\"mac\":");
        char unsigned_line[1024];
        size_t pre = (size_t)(line1_end - data);
        const char *after = strchr(line1_end + 7 + 1, '"') + 1; /* past the mac's closing quote */
        snprintf(unsigned_line, sizeof(unsigned_line), "%.*s%.*s", (int)pre, data, (int)(nl - after), after);
        ck_assert_int_eq(berth_hmac_sha256(key.bytes, sizeof(key.bytes), unsigned_line, strlen(unsigned_line), mac), 0);
        berth_hex_encode(mac, sizeof(mac), expect);
        ck_assert_str_eq(expect, first_mac);
    }
    {
        struct berth_audit_summary sum;
        ck_assert_int_eq(berth_audit_verify(data, len, &key, NULL, NULL, NULL, &sum, &err), 0);
        ck_assert_uint_eq(sum.count, 2);
        ck_assert_str_eq(sum.head_mac, json_string_value(json_object_get(e2, "mac")));
        ck_assert_int_eq(berth_audit_verify("", 0, &key, NULL, NULL, NULL, &sum, &err), 0); /* empty chain */
        ck_assert_uint_eq(sum.count, 0);
        ck_assert_str_eq(sum.head_mac, "");
    }
}
END_TEST

/* Flip every single byte of an export in turn: verification must fail, and
 * at the event (line) that holds the byte. */
START_TEST(any_flipped_byte)
{
    _cleanup_free_ char *data = NULL;
    size_t len = 0, i, line = 1;
    int e;

    for (e = 0; e < 4; e++)
        append("test.event", e % 2 ? "odd details" : "even details with \"quotes\" and \\");
    data = export_chain(&len);
    for (i = 0; i < len; i++) {
        char saved = data[i];
        uint64_t bad;

        data[i] ^= 0x01;
        bad = verify(data, len, &key, NULL, 0);
        data[i] = saved;
        if (saved == '\n' && i == len - 1)
            continue; /* the final newline: see below */
        ck_assert_msg(bad == line, "byte %zu ('%c') flipped: failure at event %llu, expected %zu", i, saved,
                      (unsigned long long)bad, line);
        if (saved == '\n')
            line++;
    }
    ck_assert_uint_eq(verify(data, len, &key, NULL, 0), 0);
}
END_TEST

START_TEST(named_places)
{
    _cleanup_free_ char *data = NULL;
    char msg[BERTH_ERROR_MESSAGE_MAX];
    size_t len = 0;
    char *p;

    append("test.a", "alpha");
    append("test.b", "bravo-value");
    append("test.c", "charlie");
    data = export_chain(&len);

    /* In a details value of event 2. */
    p = strstr(data, "bravo-value");
    *p = 'B';
    ck_assert_uint_eq(verify(data, len, &key, msg, sizeof(msg)), 2);
    ck_assert_ptr_nonnull(strstr(msg, "event 2: mac does not match"));
    *p = 'b';
    /* In the mac of event 3: its own MAC check fails there. */
    p = strrchr(data, '"');
    p = strstr(strstr(strchr(strchr(data, '\n') + 1, '\n') + 1, "\"mac\":\""), ":\"") + 2;
    *p = *p == 'a' ? 'b' : 'a';
    ck_assert_uint_eq(verify(data, len, &key, msg, sizeof(msg)), 3);
    ck_assert_ptr_nonnull(strstr(msg, "event 3: mac does not match"));
}
END_TEST

START_TEST(structure)
{
    _cleanup_free_ char *data = NULL, *swapped = NULL, *dropped = NULL, *spaced = NULL;
    struct berth_audit_key other;
    char msg[BERTH_ERROR_MESSAGE_MAX];
    size_t len = 0;
    const char *l2, *l3;

    append("test.a", "1");
    append("test.b", "2");
    append("test.c", "3");
    data = export_chain(&len);
    l2 = strchr(data, '\n') + 1;
    l3 = strchr(l2, '\n') + 1;

    /* Lines 2 and 3 swapped. */
    ck_assert_int_gt(asprintf(&swapped, "%.*s%s%.*s", (int)(l2 - data), data, l3, (int)(l3 - l2), l2), 0);
    ck_assert_uint_eq(verify(swapped, len, &key, msg, sizeof(msg)), 2);
    ck_assert_ptr_nonnull(strstr(msg, "seq is 3, expected 2"));
    /* Line 2 removed. */
    ck_assert_int_gt(asprintf(&dropped, "%.*s%s", (int)(l2 - data), data, l3), 0);
    ck_assert_uint_eq(verify(dropped, strlen(dropped), &key, msg, sizeof(msg)), 2);
    /* Not canonical (a space added), although every value is the same. */
    ck_assert_int_gt(asprintf(&spaced, "%.*s %s", (int)(l2 - data), data, l2), 0);
    ck_assert_uint_eq(verify(spaced, strlen(spaced), &key, msg, sizeof(msg)), 2);
    ck_assert_ptr_nonnull(strstr(msg, "not in canonical form"));
    /* The wrong key fails at once. */
    test_audit_key(&other, 0x43);
    ck_assert_uint_eq(verify(data, len, &other, msg, sizeof(msg)), 1);
    /* A missing final newline is fine; an empty line is not. */
    ck_assert_uint_eq(verify(data, len - 1, &key, NULL, 0), 0);
    ck_assert_uint_eq(verify("\n", 1, &key, NULL, 0), 1);
}
END_TEST

/* Removing events from the end leaves a valid shorter chain; only an anchor
 * -- an event noted earlier -- exposes it. */
START_TEST(anchors)
{
    _cleanup_free_ char *data = NULL;
    struct berth_audit_summary sum;
    struct berth_audit_anchor anchor, bad_anchor;
    struct berth_error err = BERTH_ERROR_INIT;
    char text[96];
    size_t len = 0, cut;

    append("test.a", "1");
    append("test.b", "2");
    append("test.c", "3");
    data = export_chain(&len);
    ck_assert_int_eq(berth_audit_verify(data, len, &key, NULL, NULL, NULL, &sum, &err), 0);
    snprintf(text, sizeof(text), "%llu:%s", (unsigned long long)sum.count, sum.head_mac);
    ck_assert_int_eq(berth_audit_anchor_parse(text, &anchor), 0);
    ck_assert_uint_eq(anchor.seq, 3);
    ck_assert_int_eq(berth_audit_verify(data, len, &key, &anchor, NULL, NULL, &sum, &err), 0);

    /* The last event removed: still a valid chain, but not with the anchor. */
    cut = (size_t)(strrchr(data, '\n') - data);
    cut = (size_t)((const char *)memrchr(data, '\n', cut) - data) + 1;
    ck_assert_int_eq(berth_audit_verify(data, cut, &key, NULL, NULL, NULL, &sum, &err), 0);
    ck_assert_uint_eq(sum.count, 2);
    ck_assert_int_eq(berth_audit_verify(data, cut, &key, &anchor, NULL, NULL, &sum, &err), -EBADMSG);
    ck_assert_uint_eq(sum.bad_seq, 3);
    ck_assert_ptr_nonnull(strstr(err.message, "the chain ends at event 2, before the anchored event"));

    /* An anchor whose mac differs (another chain). */
    bad_anchor = anchor;
    bad_anchor.seq = 2;
    ck_assert_int_eq(berth_audit_verify(data, len, &key, &bad_anchor, NULL, NULL, &sum, &err), -EBADMSG);
    ck_assert_uint_eq(sum.bad_seq, 2);
    ck_assert_ptr_nonnull(strstr(err.message, "not the anchored event"));

    ck_assert_int_eq(berth_audit_anchor_parse("0:abc", &anchor), -EINVAL);
    ck_assert_int_eq(berth_audit_anchor_parse("3", &anchor), -EINVAL);
    ck_assert_int_eq(
        berth_audit_anchor_parse("x:0000000000000000000000000000000000000000000000000000000000000000", &anchor),
        -EINVAL);
}
END_TEST

START_TEST(append_rules)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = json_object(), *arr = json_array();
    uint64_t seq = 0;

    ck_assert_int_eq(berth_audit_append(j, &key, 1, "Bad Type", "a", d, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "ok", "", d, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "ok", "a", arr, NULL, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_append(j, &key, -1, "ok", "a", d, NULL, &err), -EINVAL);

    /* Inside a transaction the event goes with it. */
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.rolled", "a", d, &seq, &err), 0);
    ck_assert_uint_eq(seq, 1);
    berth_journal_rollback(j);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.kept", "a", d, &seq, &err), 0);
    ck_assert_uint_eq(seq, 1);
}
END_TEST

/* The handle keeps the chain's last line in memory (journal.h "tail
 * memo"); whatever happens to the stored tail behind it, an append links to
 * what is stored. */
START_TEST(tail_memo)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *d = json_object();
    _cleanup_free_ char *data = NULL;
    uint64_t seq = 0;
    size_t len = 0;

    append("test.a", "1");
    append("test.b", "2");
    /* Rolled back after the memo took the rolled event. */
    ck_assert_int_eq(berth_journal_begin(j, &err), 0);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.rolled", "a", d, &seq, &err), 0);
    ck_assert_uint_eq(seq, 3);
    berth_journal_rollback(j);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.kept", "a", d, &seq, &err), 0);
    ck_assert_uint_eq(seq, 3);
    data = export_chain(&len);
    ck_assert_uint_eq(verify(data, len, &key, NULL, 0), 0);
    ck_assert_ptr_null(strstr(data, "test.rolled"));

    /* The stored tail's mac changed behind the memo: the next event links
     * to the stored line's mac, not to the memo's. */
    ck_assert_int_eq(sqlite3_exec(berth_journal_db(j),
                                  "UPDATE audit_events SET line = replace(line, mac, '"
                                  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef') WHERE seq = 3",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    ck_assert_int_eq(sqlite3_changes(berth_journal_db(j)), 1);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.next", "a", d, &seq, &err), 0);
    ck_assert_uint_eq(seq, 4);
    free(data);
    data = export_chain(&len);
    ck_assert_ptr_nonnull(
        strstr(data, "\"prev\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\""));
    ck_assert_uint_eq(verify(data, len, &key, NULL, 0), 3); /* the edited event */
    /* A damaged stored tail is refused, memo or not. */
    ck_assert_int_eq(
        sqlite3_exec(berth_journal_db(j), "UPDATE audit_events SET line = 'x' WHERE seq = 4", NULL, NULL, NULL),
        SQLITE_OK);
    ck_assert_int_eq(berth_audit_append(j, &key, 1, "test.after", "a", d, &seq, &err), -EBADMSG);
}
END_TEST

START_TEST(key_files)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *path = test_path(dir, "audit.key"), *bad = test_path(dir, "bad.key");
    struct berth_audit_key k;
    const size_t hex = BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN); /* the file: the key in hex and a newline */
    char text[BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) + 16];
    struct stat st;

    ck_assert_int_eq(berth_audit_key_create(path, &err), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_uint_eq(st.st_mode & 07777, 0600);
    ck_assert_uint_eq(test_read_file(path, text, sizeof(text)), hex + 1);
    ck_assert_int_eq(berth_audit_key_create(path, &err), -EEXIST);
    ck_assert_int_eq(berth_audit_key_load(path, &k, &err), 0);
    text[hex] = '\0';
    {
        uint8_t raw[BERTH_AUDIT_KEY_LEN];
        ck_assert_int_eq(berth_hex_decode(text, hex, raw, sizeof(raw)), 0);
        ck_assert_mem_eq(raw, k.bytes, sizeof(raw));
    }
    berth_audit_key_wipe(&k);

    test_write_file(bad, "abcd\n", 5, 0600);
    ck_assert_int_eq(berth_audit_key_load(bad, &k, &err), -EBADMSG);
    text[10] = 'X';
    text[hex] = '\n';
    test_write_file(bad, text, hex + 1, 0600);
    ck_assert_int_eq(berth_audit_key_load(bad, &k, &err), -EBADMSG);
    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(berth_audit_key_load(path, &k, &err), -EPERM);
}
END_TEST

static int count_events(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr)
{
    int *n = userdata;
    (void)reterr;
    ck_assert_uint_eq(ev->seq, (uint64_t)++ * n);
    return ev->seq == 2 ? berth_error_set(reterr, -EBADMSG, "stop here") : 0;
}

START_TEST(replay)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int n = 0;

    append("test.a", "1");
    append("test.b", "2");
    append("test.c", "3");
    ck_assert_int_eq(berth_audit_replay(j, count_events, &n, &err), -EBADMSG);
    ck_assert_int_eq(n, 2);
    ck_assert_str_eq(err.message, "audit event 2: stop here");
}
END_TEST

struct seen {
    uint64_t seq[8];
    size_t n;
};

static int note_event(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr)
{
    struct seen *s = userdata;
    (void)reterr;
    ck_assert_uint_lt(s->n, 8);
    ck_assert_int_eq(strncmp(ev->type, "pool.", 5), 0);
    s->seq[s->n++] = ev->seq;
    return 0;
}

/* Only the events of the prefix's types are replayed, chosen by the type
 * column; one whose line says another type than its column is refused. */
START_TEST(replay_types)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct seen s = {0};
    char long_prefix[34];

    append("test.a", "1");
    append("pool.x", "2");
    append("job.y", "3");
    append("pool.z", "4");
    append("poolx.w", "5"); /* "pool" without the dot: not a pool event */
    ck_assert_int_eq(berth_audit_replay_types(j, "pool.", note_event, &s, &err), 0);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_uint_eq(s.seq[0], 2);
    ck_assert_uint_eq(s.seq[1], 4);

    memset(long_prefix, 'a', 33);
    long_prefix[33] = '\0';
    ck_assert_int_eq(berth_audit_replay_types(j, NULL, note_event, &s, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_replay_types(j, "", note_event, &s, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_replay_types(j, long_prefix, note_event, &s, &err), -EINVAL);
    ck_assert_int_eq(berth_audit_replay_types(j, "pool.", NULL, &s, &err), -EINVAL);

    /* A job event whose column was changed to a pool type. */
    ck_assert_int_eq(
        sqlite3_exec(berth_journal_db(j), "UPDATE audit_events SET type = 'pool.y' WHERE seq = 3", NULL, NULL, NULL),
        SQLITE_OK);
    s.n = 0;
    ck_assert_int_eq(berth_audit_replay_types(j, "pool.", note_event, &s, &err), -EBADMSG);
    ck_assert_str_eq(err.message, "audit event 3: stored as type pool.y but says job.y");
    ck_assert_uint_eq(s.n, 1);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("audit");
    TCase *tc = test_case(s, "audit");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, chain_links);
    tcase_add_test(tc, any_flipped_byte);
    tcase_add_test(tc, named_places);
    tcase_add_test(tc, structure);
    tcase_add_test(tc, anchors);
    tcase_add_test(tc, append_rules);
    tcase_add_test(tc, tail_memo);
    tcase_add_test(tc, key_files);
    tcase_add_test(tc, replay);
    tcase_add_test(tc, replay_types);
    return s;
}

TEST_MAIN()
