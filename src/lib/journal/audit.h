/* SPDX-License-Identifier: MIT */
/*
 * audit.h -- the HMAC-chained audit log.
 *
 * Every event is the canonical JSON object
 *
 *   {"actor":..., "details":{...}, "mac":"<hex>", "prev":"<hex>",
 *    "seq":N, "time_ns":T, "type":"..."}
 *
 * where seq counts from 1 without gaps, prev is the previous event's mac
 * (64 zeros for the first event) and mac is the lowercase hex
 * HMAC-SHA256 (RFC 2104) under the audit key of the canonical JSON of the
 * event without its mac member.  Changing, removing, reordering or inserting
 * anything breaks the chain at that event.  The chain is stored in the
 * journal, one canonical line per event, and exported as JSON Lines (one
 * event per line, "\n"-terminated); an export is verified offline with the
 * key alone.
 *
 * The audit key is 32 random bytes, kept in a file as 64 lowercase hex
 * digits and a newline, owned by the effective uid, mode 0600.
 */
#ifndef BERTH_AUDIT_H
#define BERTH_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include <berth/error.h>

#include "hmac.h"
#include "journal.h"

#define BERTH_AUDIT_KEY_LEN 32              /**< bytes of key material */
#define BERTH_AUDIT_EVENT_MAX (1024 * 1024) /**< largest canonical event, bytes */
#define BERTH_AUDIT_TYPE_MAX 64             /**< longest event type */
#define BERTH_AUDIT_ACTOR_MAX 256           /**< longest actor */
#define BERTH_AUDIT_MAC_HEX_LEN (2 * BERTH_HMAC_SHA256_LEN) /**< hex characters of an event's mac, without NUL */

/** An audit key.  Wipe with berth_audit_key_wipe() when done. */
struct berth_audit_key {
    uint8_t bytes[BERTH_AUDIT_KEY_LEN];
};

/**
 * berth_audit_key_create() - write a new random key to the absolute @path
 * (mode 0600, never overwriting: -EEXIST).  Errors of berth_publish_path().
 */
int berth_audit_key_create(const char *path, struct berth_error *reterr);

/**
 * berth_audit_key_load() - read a key file (checked like a private key:
 * regular, owned by the effective uid, mode 0600, one link, no symlinks on
 * the way).  Return: 0, -EBADMSG (not 64 hex digits and an optional
 * newline), or the errors of berth_read_file_at().
 */
int berth_audit_key_load(const char *path, struct berth_audit_key *ret, struct berth_error *reterr);

/** berth_audit_key_wipe() - zero the key material. */
void berth_audit_key_wipe(struct berth_audit_key *key);

/**
 * berth_audit_append() - add one event at the end of the journal's chain.
 * @time_ns: event time, nanoseconds since the epoch.
 * @type:    event type, 1..BERTH_AUDIT_TYPE_MAX bytes of [a-z0-9._].
 * @actor:   who caused it, 1..BERTH_AUDIT_ACTOR_MAX bytes of UTF-8.
 * @details: a JSON object (borrowed; serialised canonically).
 * @ret_seq: optional; receives the new event's seq.
 *
 * Runs inside the caller's transaction when one is open (so the event
 * commits or rolls back with the change it records), otherwise in its own.
 * Return: 0; -EINVAL (bad type, actor or details); -EFBIG (event over
 * BERTH_AUDIT_EVENT_MAX); -EBADMSG (the stored chain's tail is damaged);
 * journal errors.
 */
int berth_audit_append(struct berth_journal *j, const struct berth_audit_key *key, int64_t time_ns, const char *type,
                       const char *actor, const json_t *details, uint64_t *ret_seq, struct berth_error *reterr);

/**
 * berth_audit_foreach() - call @fn with every stored event after @after_seq,
 * in order, as canonical bytes without a newline.  Stops at the first
 * negative return of @fn and returns it.
 */
int berth_audit_foreach(struct berth_journal *j, uint64_t after_seq,
                        int (*fn)(void *userdata, uint64_t seq, const char *line, size_t len), void *userdata,
                        struct berth_error *reterr);

/**
 * struct berth_audit_event - one parsed, MAC-checked event.
 * @root:    the whole event object, valid during the callback only.
 * @details: borrowed from @root.
 */
struct berth_audit_event {
    uint64_t seq;
    int64_t time_ns;
    const char *type;
    const char *actor;
    const json_t *details;
    const char *prev;
    const char *mac;
    const json_t *root;
};

/**
 * berth_audit_replay() - call @check with every stored event, in order,
 * parsed but *not* MAC-checked (for rebuilding projections such as the pool
 * registry; berth_audit_verify() is what proves the chain).  Stops at the
 * first negative return of @check.
 * Return: 0; -EBADMSG (a stored event is malformed); @check's error; journal
 * errors.  reterr names the event.
 */
int berth_audit_replay(struct berth_journal *j,
                       int (*check)(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr),
                       void *userdata, struct berth_error *reterr);

/**
 * berth_audit_replay_types() - berth_audit_replay() for the events whose
 * type starts with @type_prefix (1 to 32 bytes, e.g. "pool.") only, chosen
 * by the stored type column without parsing the others; each one replayed
 * must say the type its column does.  For a projection that reads a few
 * types of a long chain (the pool registry reads the pool.* events, half
 * or fewer of a broker's: each job adds job.* events of its own).
 * Return: as berth_audit_replay(); -EINVAL for a missing or overlong
 * @type_prefix; -EBADMSG also for an event whose type is not its column's.
 */
int berth_audit_replay_types(struct berth_journal *j, const char *type_prefix,
                             int (*check)(void *userdata, const struct berth_audit_event *ev,
                                          struct berth_error *reterr),
                             void *userdata, struct berth_error *reterr);

/**
 * struct berth_audit_anchor - an event known from elsewhere (seq and mac).
 *
 * A chain protects everything up to its last event, but nothing in it says
 * how long it should be: removing events from the end leaves a valid,
 * shorter chain.  An anchor -- the seq and mac of an event noted earlier,
 * for example the head printed by a previous verification -- closes that
 * gap: the chain must still hold that exact event (it may have grown since).
 */
struct berth_audit_anchor {
    uint64_t seq;
    char mac[BERTH_AUDIT_MAC_HEX_LEN + 1];
};

/**
 * berth_audit_anchor_parse() - parse "SEQ:MAC" (a positive decimal seq and
 * 64 lowercase hex digits).  Return: 0 or -EINVAL.
 */
int berth_audit_anchor_parse(const char *text, struct berth_audit_anchor *ret);

/**
 * struct berth_audit_summary - what a verification saw.
 * @count:    events verified.
 * @bad_seq:  on failure, the 1-based line number of the first bad event (its
 *            seq for an intact prefix), or count + 1 when the anchor is
 *            missing from the end.
 * @head_mac: the last event's mac ("" for an empty chain): with @count, the
 *            anchor to keep for the next verification.
 */
struct berth_audit_summary {
    uint64_t count;
    uint64_t bad_seq;
    char head_mac[BERTH_AUDIT_MAC_HEX_LEN + 1];
};

/**
 * berth_audit_verify() - verify a JSON Lines export of a chain.
 * @data, @len:   the export ("\n"-terminated lines; a missing final newline
 *                is accepted, an empty export is a valid empty chain).
 * @key:          the audit key.
 * @anchor:       optional; the chain must contain this exact event.
 * @check:        optional; called for every event whose MAC and link are
 *                good, for semantic checks (the pool registry's replay); a
 *                negative return fails verification at that event with
 *                reterr as the check filled it.
 * @ret_summary:  optional; see struct berth_audit_summary (filled on
 *                success and on failure).
 *
 * Each line must be the canonical form of an event with exactly the seven
 * members, seq must be the line number, prev the previous line's mac, and
 * mac the HMAC of the event without it.
 * Return: 0 when every event verifies; -EBADMSG with reterr naming the line
 * and the reason otherwise; -ENOMEM; -EINVAL.
 */
int berth_audit_verify(const char *data, size_t len, const struct berth_audit_key *key,
                       const struct berth_audit_anchor *anchor,
                       int (*check)(void *userdata, const struct berth_audit_event *ev, struct berth_error *reterr),
                       void *userdata, struct berth_audit_summary *ret_summary, struct berth_error *reterr);

/**
 * berth_audit_export_checked() - append every stored event, as JSON Lines, to
 * @out, checking that each row's seq, type and mac columns agree with its
 * line (the columns index the chain; only the lines are MAC'd).
 * Return: 0; -EBADMSG naming the first disagreeing row; -ENOMEM; journal
 * errors.
 */
struct berth_buf;
int berth_audit_export_checked(struct berth_journal *j, struct berth_buf *out, struct berth_error *reterr);

#endif /* BERTH_AUDIT_H */
