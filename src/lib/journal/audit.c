/* SPDX-License-Identifier: MIT */
/* audit.c -- the HMAC-chained audit log; see audit.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "audit.h"
#include "buf.h"
#include "canon.h"
#include "encoding.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "utf8.h"

static const char zero_mac[BERTH_AUDIT_MAC_HEX_LEN + 1] =
    "0000000000000000000000000000000000000000000000000000000000000000";

static const char *const event_members[] = {"actor", "details", "mac", "prev", "seq", "time_ns", "type", NULL};

static bool type_ok(const char *type)
{
    size_t i;

    if (!type || !type[0] || strlen(type) > BERTH_AUDIT_TYPE_MAX)
        return false;
    for (i = 0; type[i]; i++)
        if (!((type[i] >= 'a' && type[i] <= 'z') || (type[i] >= '0' && type[i] <= '9') || type[i] == '.' ||
              type[i] == '_'))
            return false;
    return true;
}

static bool actor_ok(const char *actor)
{
    size_t n;

    if (!actor)
        return false;
    n = strlen(actor);
    return n > 0 && n <= BERTH_AUDIT_ACTOR_MAX && berth_utf8_valid(actor, n, NULL);
}

/* The hex MAC of the canonical serialisation of @event (which has no mac). */
static int event_mac(const struct berth_audit_key *key, const json_t *event, char out[BERTH_AUDIT_MAC_HEX_LEN + 1],
                     struct berth_error *reterr)
{
    _cleanup_free_ char *bytes = NULL;
    uint8_t mac[BERTH_HMAC_SHA256_LEN];
    size_t len = 0;
    int r;

    r = berth_json_serialize(event, BERTH_AUDIT_EVENT_MAX, &bytes, &len, reterr);
    if (r < 0)
        return r;
    r = berth_hmac_sha256(key->bytes, sizeof(key->bytes), bytes, len, mac);
    if (r < 0)
        return berth_error_set(reterr, r, "HMAC failed");
    berth_hex_encode(mac, sizeof(mac), out);
    return 0;
}

static int parse_event(const char *line, size_t len, json_t **ret_root, struct berth_audit_event *ev,
                       struct berth_error *reterr);

/* Keep @line (@len bytes; its @seq and @mac) as @memo; on no memory the
 * memo is only emptied. */
static void remember_tail(struct berth_journal_tail *memo, const char *line, size_t len, uint64_t seq, const char *mac)
{
    char *copy = malloc(len + 1);

    free(memo->line);
    *memo = (struct berth_journal_tail){0};
    if (!copy)
        return;
    memcpy(copy, line, len);
    copy[len] = '\0';
    memo->line = copy;
    memo->len = len;
    memo->seq = seq;
    memcpy(memo->mac, mac, BERTH_AUDIT_MAC_HEX_LEN + 1);
}

/* seq and mac of the last stored event: (0, zeros) for an empty chain.  Read
 * from the MAC'd line itself, never from the index columns. */
static int chain_tail(struct berth_journal *j, uint64_t *ret_seq, char ret_mac[BERTH_AUDIT_MAC_HEX_LEN + 1],
                      struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r = 0;

    if (berth_journal_prepare(j, "SELECT seq, line FROM audit_events ORDER BY seq DESC LIMIT 1",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading the audit chain", reterr);
    rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        *ret_seq = 0;
        memcpy(ret_mac, zero_mac, sizeof(zero_mac));
    } else if (rc == SQLITE_ROW) {
        struct berth_journal_tail *memo = berth_journal_tail_memo(j);
        struct berth_audit_event ev = {0};
        json_t *root = NULL;
        const char *line = (const char *)sqlite3_column_text(st, 1);
        size_t len = (size_t)sqlite3_column_bytes(st, 1);
        sqlite3_int64 seq = sqlite3_column_int64(st, 0);

        /* The line this handle last read or wrote, unchanged: its seq and
         * mac are known without parsing it again. */
        if (line && memo->line && memo->len == len && memo->seq == (uint64_t)seq &&
            memcmp(memo->line, line, len) == 0) {
            *ret_seq = memo->seq;
            memcpy(ret_mac, memo->mac, BERTH_AUDIT_MAC_HEX_LEN + 1);
            berth_journal_finish(j, st);
            return 0;
        }
        r = parse_event(line ? line : "", len, &root, &ev, reterr);
        if (r == 0 && (seq <= 0 || ev.seq != (uint64_t)seq))
            r = -EBADMSG;
        if (r == 0) {
            *ret_seq = ev.seq;
            memcpy(ret_mac, ev.mac, BERTH_AUDIT_MAC_HEX_LEN + 1);
            remember_tail(memo, line, len, ev.seq, ev.mac);
        } else if (r != -ENOMEM) {
            r = berth_error_set(reterr, -EBADMSG, "the stored audit chain ends in a damaged event");
        }
        json_decref(root);
    } else {
        r = berth_journal_error(j, "reading the audit chain", reterr);
    }
    berth_journal_finish(j, st);
    return r;
}

static int append_locked(struct berth_journal *j, const struct berth_audit_key *key, int64_t time_ns, const char *type,
                         const char *actor, const json_t *details, uint64_t *ret_seq, struct berth_error *reterr)
{
    _cleanup_json_ json_t *ev = NULL;
    _cleanup_free_ char *line = NULL;
    char prev[BERTH_AUDIT_MAC_HEX_LEN + 1], mac[BERTH_AUDIT_MAC_HEX_LEN + 1];
    sqlite3_stmt *st = NULL;
    uint64_t seq = 0;
    size_t len = 0;
    int r, rc;

    r = chain_tail(j, &seq, prev, reterr);
    if (r < 0)
        return r;
    seq++;
    ev = json_pack("{s:I, s:o, s:s, s:s, s:O, s:s}", "seq", (json_int_t)seq, "time_ns", berth_json_ns(time_ns), "type",
                   type, "actor", actor, "details", details, "prev", prev);
    if (!ev)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = event_mac(key, ev, mac, reterr);
    if (r < 0)
        return r;
    if (json_object_set_new(ev, "mac", json_string(mac)) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = berth_json_serialize(ev, BERTH_AUDIT_EVENT_MAX, &line, &len, reterr);
    if (r < 0)
        return r;

    if (berth_journal_prepare(j, "INSERT INTO audit_events (seq, type, mac, line) VALUES (?, ?, ?, ?)",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "recording an audit event", reterr);
    if ((r = BERTH_JOURNAL_BIND(j, st, "recording an audit event", reterr, BERTH_SQL_INT(seq), BERTH_SQL_TEXT(type),
                                BERTH_SQL_TEXT(mac), BERTH_SQL_TEXTN(line, (int)len))) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    if (rc != SQLITE_DONE)
        return berth_journal_error(j, "recording an audit event", reterr);
    /* Should this transaction roll back, the stored tail is no longer this
     * line and the next append reads and parses the stored one. */
    remember_tail(berth_journal_tail_memo(j), line, len, seq, mac);
    if (ret_seq)
        *ret_seq = seq;
    return 0;
}

int berth_audit_append(struct berth_journal *j, const struct berth_audit_key *key, int64_t time_ns, const char *type,
                       const char *actor, const json_t *details, uint64_t *ret_seq, struct berth_error *reterr)
{
    bool own;
    int r;

    if (!j || !key || time_ns < 0)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!type_ok(type))
        return berth_error_set(reterr, -EINVAL, "invalid audit event type");
    if (!actor_ok(actor))
        return berth_error_set(reterr, -EINVAL, "invalid audit actor");
    if (!json_is_object(details))
        return berth_error_set(reterr, -EINVAL, "audit details must be a JSON object");

    own = !berth_journal_in_transaction(j);
    if (own && (r = berth_journal_begin(j, reterr)) < 0)
        return r;
    r = append_locked(j, key, time_ns, type, actor, details, ret_seq, reterr);
    if (own) {
        if (r < 0)
            berth_journal_rollback(j);
        else
            r = berth_journal_commit(j, reterr);
    }
    return r;
}

/* Each row (seq, type, line) of the prepared and bound @st, to @fn, until
 * it returns a negative value; finishes @st. */
static int each_row(struct berth_journal *j, sqlite3_stmt *st,
                    int (*fn)(void *userdata, uint64_t seq, const char *type, const char *line, size_t len),
                    void *userdata, struct berth_error *reterr)
{
    int rc, r = 0;

    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 1);
        const char *line = (const char *)sqlite3_column_text(st, 2);
        int n = sqlite3_column_bytes(st, 2);
        r = fn(userdata, (uint64_t)sqlite3_column_int64(st, 0), type ? type : "", line ? line : "", (size_t)n);
        if (r < 0)
            break;
    }
    if (r >= 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "reading the audit chain", reterr);
    berth_journal_finish(j, st);
    return r < 0 ? r : 0;
}

struct untyped {
    int (*fn)(void *userdata, uint64_t seq, const char *line, size_t len);
    void *userdata;
};

static int untyped_row(void *userdata, uint64_t seq, const char *type, const char *line, size_t len)
{
    struct untyped *u = userdata;

    (void)type;
    return u->fn(u->userdata, seq, line, len);
}

int berth_audit_foreach(struct berth_journal *j, uint64_t after_seq,
                        int (*fn)(void *userdata, uint64_t seq, const char *line, size_t len), void *userdata,
                        struct berth_error *reterr)
{
    struct untyped u = {fn, userdata};
    sqlite3_stmt *st = NULL;
    int r;

    if (!j || !fn || after_seq > INT64_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j, "SELECT seq, type, line FROM audit_events WHERE seq > ? ORDER BY seq",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading the audit chain", reterr);
    if ((r = BERTH_JOURNAL_BIND(j, st, "reading the audit chain", reterr, BERTH_SQL_INT(after_seq))) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    return each_row(j, st, untyped_row, &u, reterr);
}

/* Parse one stored or exported line: canonical, exactly the seven members,
 * well-formed values.  Fills @ev pointing into *@ret_root.  No MAC check. */
static int parse_event(const char *line, size_t len, json_t **ret_root, struct berth_audit_event *ev,
                       struct berth_error *reterr)
{
    _cleanup_json_ json_t *root = NULL;
    _cleanup_free_ char *canon = NULL;
    const char *type, *actor, *mac, *prevmac;
    int64_t seq = 0, time_ns;
    size_t clen = 0;
    int r;

    r = berth_json_parse(line, len, BERTH_AUDIT_EVENT_MAX, &root, reterr);
    if (r < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    r = berth_json_serialize(root, 0, &canon, &clen, reterr);
    if (r < 0)
        return -EBADMSG;
    if (clen != len || memcmp(canon, line, len) != 0)
        return berth_error_set(reterr, -EBADMSG, "not in canonical form");
    if ((r = berth_json_only_members(root, "event", event_members, reterr)) < 0 ||
        (r = berth_json_int_member(root, "event", "seq", true, 1, BERTH_JSON_MAX_INTEGER, &seq, reterr)) < 0 ||
        (r = berth_json_ns_member(root, "event", "time_ns", &time_ns, reterr)) < 0 ||
        (r = berth_json_string_member(root, "event", "type", true, &type, reterr)) < 0 ||
        (r = berth_json_string_member(root, "event", "actor", true, &actor, reterr)) < 0 ||
        (r = berth_json_string_member(root, "event", "prev", true, &prevmac, reterr)) < 0 ||
        (r = berth_json_string_member(root, "event", "mac", true, &mac, reterr)) < 0)
        return r;
    if (!json_is_object(json_object_get(root, "details")))
        return berth_error_set(reterr, -EBADMSG, "details must be a JSON object");
    if (!type_ok(type) || !actor_ok(actor))
        return berth_error_set(reterr, -EBADMSG, "invalid type or actor");
    if (!berth_is_hex(mac, BERTH_AUDIT_MAC_HEX_LEN) || !berth_is_hex(prevmac, BERTH_AUDIT_MAC_HEX_LEN))
        return berth_error_set(reterr, -EBADMSG, "prev and mac must be 64 lowercase hex digits");
    ev->seq = (uint64_t)seq;
    ev->time_ns = time_ns;
    ev->type = type;
    ev->actor = actor;
    ev->details = json_object_get(root, "details");
    ev->prev = prevmac;
    ev->mac = mac;
    ev->root = root;
    *ret_root = TAKE_PTR(root);
    return 0;
}

/* Check one line's place in the chain and its MAC. */
static int verify_line(const char *line, size_t len, uint64_t lineno, const char *prev,
                       const struct berth_audit_key *key, json_t **ret_root, struct berth_audit_event *ev,
                       char ret_mac[BERTH_AUDIT_MAC_HEX_LEN + 1], struct berth_error *reterr)
{
    _cleanup_json_ json_t *root = NULL, *unsigned_ev = NULL;
    uint8_t a[BERTH_HMAC_SHA256_LEN], b[BERTH_HMAC_SHA256_LEN];
    char want[BERTH_AUDIT_MAC_HEX_LEN + 1];
    int r;

    r = parse_event(line, len, &root, ev, reterr);
    if (r < 0)
        return r;
    if (ev->seq != lineno)
        return berth_error_set(reterr, -EBADMSG,
                               "seq is %" PRIu64 ", expected %" PRIu64 " (events missing or reordered)", ev->seq,
                               lineno);
    if (strcmp(ev->prev, prev) != 0)
        return berth_error_set(reterr, -EBADMSG, "prev does not match the previous event's mac (the chain is broken)");
    unsigned_ev = json_copy(root); /* shallow: shares the members */
    if (!unsigned_ev || json_object_del(unsigned_ev, "mac") < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    r = event_mac(key, unsigned_ev, want, reterr);
    if (r < 0)
        return r;
    if (berth_hex_decode(want, BERTH_AUDIT_MAC_HEX_LEN, a, sizeof(a)) < 0 ||
        berth_hex_decode(ev->mac, BERTH_AUDIT_MAC_HEX_LEN, b, sizeof(b)) < 0 || sodium_memcmp(a, b, sizeof(a)) != 0)
        return berth_error_set(reterr, -EBADMSG, "mac does not match (the event was changed, or the key is wrong)");
    memcpy(ret_mac, ev->mac, BERTH_AUDIT_MAC_HEX_LEN + 1);
    *ret_root = TAKE_PTR(root);
    return 0;
}

struct replay {
    int (*check)(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr);
    void *userdata;
    struct berth_error *reterr;
    const char *type; /* the stored type column of the event replayed, or NULL: not compared */
};

static int replay_one(void *userdata, uint64_t seq, const char *line, size_t len)
{
    struct replay *rp = userdata;
    struct berth_audit_event ev = {0};
    json_t *root = NULL;
    int r;

    r = parse_event(line, len, &root, &ev, rp->reterr);
    if (r == 0 && ev.seq != seq)
        r = berth_error_set(rp->reterr, -EBADMSG, "stored under seq %" PRIu64 " but says %" PRIu64, seq, ev.seq);
    if (r == 0 && rp->type && strcmp(ev.type, rp->type) != 0)
        r = berth_error_set(rp->reterr, -EBADMSG, "stored as type %s but says %s", rp->type, ev.type);
    if (r == 0)
        r = rp->check(rp->userdata, &ev, rp->reterr);
    json_decref(root);
    if (r < 0)
        berth_error_prefix(rp->reterr, "audit event %" PRIu64, seq);
    return r;
}

int berth_audit_replay(struct berth_journal *j,
                       int (*check)(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr),
                       void *userdata, struct berth_error *reterr)
{
    struct replay rp = {check, userdata, reterr, NULL};

    if (!check)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    return berth_audit_foreach(j, 0, replay_one, &rp, reterr);
}

#define TYPE_PREFIX_MAX 32

/* replay_one() of a row, which must say the type of its column. */
static int replay_typed(void *userdata, uint64_t seq, const char *type, const char *line, size_t len)
{
    struct replay *rp = userdata;

    rp->type = type;
    return replay_one(rp, seq, line, len);
}

int berth_audit_replay_types(struct berth_journal *j, const char *type_prefix,
                             int (*check)(void *userdata, const struct berth_audit_event *ev,
                                          struct berth_error *reterr),
                             void *userdata, struct berth_error *reterr)
{
    struct replay rp = {check, userdata, reterr, NULL};
    sqlite3_stmt *st = NULL;
    size_t n = type_prefix ? strlen(type_prefix) : 0;
    int r;

    if (!j || !check || n == 0 || n > TYPE_PREFIX_MAX)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* Types are ASCII (type_ok()), so substr() counts bytes here; a row
     * whose column was edited otherwise is still checked against its line. */
    if (berth_journal_prepare(j, "SELECT seq, type, line FROM audit_events WHERE substr(type, 1, ?) = ? ORDER BY seq",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading the audit chain", reterr);
    if ((r = BERTH_JOURNAL_BIND(j, st, "reading the audit chain", reterr, BERTH_SQL_INT((int64_t)n),
                                BERTH_SQL_TEXT(type_prefix))) < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    return each_row(j, st, replay_typed, &rp, reterr);
}

int berth_audit_anchor_parse(const char *text, struct berth_audit_anchor *ret)
{
    unsigned long long seq;
    char *end = NULL;

    if (!text || !ret || text[0] < '1' || text[0] > '9')
        return -EINVAL;
    errno = 0;
    seq = strtoull(text, &end, 10);
    if (errno || !end || *end != ':' || seq > INT64_MAX || !berth_is_hex(end + 1, BERTH_AUDIT_MAC_HEX_LEN))
        return -EINVAL;
    ret->seq = seq;
    memcpy(ret->mac, end + 1, BERTH_AUDIT_MAC_HEX_LEN + 1);
    return 0;
}

int berth_audit_verify(const char *data, size_t len, const struct berth_audit_key *key,
                       const struct berth_audit_anchor *anchor,
                       int (*check)(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr),
                       void *userdata, struct berth_audit_summary *ret_summary, struct berth_error *reterr)
{
    struct berth_audit_summary sum = {0};
    char prev[BERTH_AUDIT_MAC_HEX_LEN + 1], mac[BERTH_AUDIT_MAC_HEX_LEN + 1];
    uint64_t lineno = 0;
    size_t pos = 0;
    int r = 0;

    if ((!data && len > 0) || !key)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    memcpy(prev, zero_mac, sizeof(prev));
    while (pos < len) {
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - data) : len;
        struct berth_audit_event ev = {0};
        json_t *root = NULL;

        lineno++;
        if (end == pos)
            r = berth_error_set(reterr, -EBADMSG, "empty line");
        else
            r = verify_line(data + pos, end - pos, lineno, prev, key, &root, &ev, mac, reterr);
        if (r == 0 && anchor && anchor->seq == lineno && strcmp(anchor->mac, mac) != 0)
            r = berth_error_set(reterr, -EBADMSG, "this is not the anchored event (its mac differs)");
        if (r == 0 && check)
            r = check(userdata, &ev, reterr);
        json_decref(root);
        if (r < 0) {
            if (r != -ENOMEM) {
                r = -EBADMSG;
                berth_error_prefix(reterr, "event %" PRIu64, lineno);
                if (reterr)
                    reterr->code = r;
            }
            sum.bad_seq = lineno;
            goto out;
        }
        memcpy(prev, mac, sizeof(prev));
        sum.count = lineno;
        memcpy(sum.head_mac, mac, sizeof(mac));
        pos = nl ? end + 1 : len;
    }
    if (anchor && anchor->seq > lineno) {
        sum.bad_seq = lineno + 1;
        r = berth_error_set(reterr, -EBADMSG,
                            "event %" PRIu64 ": the chain ends at event %" PRIu64
                            ", before the anchored event: events were removed from its end",
                            anchor->seq, lineno);
    }
out:
    if (ret_summary)
        *ret_summary = sum;
    return r;
}

int berth_audit_export_checked(struct berth_journal *j, struct berth_buf *out, struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r = 0;

    if (!j || !out)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j, "SELECT seq, type, mac, line FROM audit_events ORDER BY seq", "preparing a statement",
                              &st, NULL) < 0)
        return berth_journal_error(j, "reading the audit chain", reterr);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 1), *mac = (const char *)sqlite3_column_text(st, 2);
        const char *line = (const char *)sqlite3_column_text(st, 3);
        size_t len = (size_t)sqlite3_column_bytes(st, 3);
        uint64_t seq = (uint64_t)sqlite3_column_int64(st, 0);
        struct berth_audit_event ev = {0};
        json_t *root = NULL;

        r = parse_event(line ? line : "", len, &root, &ev, reterr);
        if (r == 0 && (ev.seq != seq || !type || strcmp(type, ev.type) != 0 || !mac || strcmp(mac, ev.mac) != 0))
            r = berth_error_set(reterr, -EBADMSG, "the stored seq, type or mac column disagrees with the event");
        json_decref(root);
        if (r == 0 && (berth_buf_append(out, line, len) < 0 || berth_buf_putc(out, '\n') < 0))
            r = berth_error_set(reterr, -ENOMEM, "out of memory");
        if (r < 0) {
            if (r != -ENOMEM) {
                berth_error_prefix(reterr, "event %" PRIu64, seq);
                r = -EBADMSG;
                if (reterr)
                    reterr->code = r;
            }
            break;
        }
    }
    if (r == 0 && rc != SQLITE_DONE)
        r = berth_journal_error(j, "reading the audit chain", reterr);
    berth_journal_finish(j, st);
    return r;
}
