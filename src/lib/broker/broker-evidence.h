/* SPDX-License-Identifier: MIT */
/*
 * broker-evidence.h -- the broker's evidence store (docs/evidence.md):
 * the one lock every call into the store goes through, and the operations
 * callers ask for (upload, commit, get, delete, list), with their grant
 * checks, quotas and audit events.
 *
 * One evidence-store instance (struct berth_broker_params.evidence_ops and
 * .evidence_state) is shared by every thread that needs it: berthd's API
 * (through the evidence helper thread, never the event loop itself) and the
 * backend worker (staging inputs, capturing outputs, pruning).  The plugin
 * ABI says the core never calls one instance from two threads at once;
 * this file keeps that promise with a mutex of its own, the *evidence
 * lock*, held for every store call.  It is never the broker's lock (a
 * 1 GiB commit holds it for seconds and must not stall admission).  Lock
 * order: the evidence lock may be taken first and the broker's lock inside
 * it (to authenticate, to append an audit event); the evidence lock is
 * never taken while the broker's lock is held.  A call that holds the
 * evidence lock may block for as long as the store takes (hashing and
 * fdatasync of up to max_object_bytes): none of these functions may run on
 * an event loop.
 *
 * Owners.  An object belongs to the (principal, scope) of the policy
 * subject that stored it (its key, <berth/plugin.h>).  A caller reads,
 * lists and deletes its own objects; an admin also lists every owner's and
 * deletes any.  Every operation authenticates the caller's certificate
 * fingerprint against the host policy in force now.
 *
 * Quota.  The subject's evidence_quota (policy.h) bounds what its principal
 * keeps, over all its scopes: at most quota.objects objects and
 * quota.bytes bytes of content (the store's usage(), tombstones not
 * counted).  It is checked when an upload starts (with the declared size
 * when there is one) and again, authoritatively, when it commits, with the
 * evidence lock held from the check to the put, so two commits cannot both
 * pass it.  An identical retry of a stored object does not count again.
 *
 * Audit.  A successful commit appends "evidence.put" {digest, size,
 * media_type, principal, scope, new} and a deletion "evidence.deleted"
 * {digest, principal, scope, reason}, actor the caller's principal,
 * chained like every other event.  The event is appended after the store
 * call succeeded, with the evidence lock still held (so events are in the
 * order the store saw the calls).  When it cannot be appended the reply is
 * 503 (the object is stored or deleted; a retry, being identical, appends
 * the event then).
 *
 * Replies: the @reply of each operation gets an HTTP status and, on
 * failure, a stable code: 400 malformed, 400 digest_mismatch (the bytes do
 * not match the digest or size: nothing stored), 403 denied, 404 not_found,
 * 409 conflict (the digest is stored with another size or media type), 410
 * gone (the key was deleted: never stored again), 413 too_large (over
 * max_object_bytes), 413 quota_exceeded, 500 corrupt (stored content fails
 * verification), 501 not_implemented (no evidence store, or one that lacks
 * the operation), 503 storage_full (the journal's or the store's filesystem
 * is full; Retry-After), 503 evidence_store (the store failed), 503 journal.
 *
 * Thread-safe: every function may be called from any thread but an event
 * loop's (see above).
 */
#ifndef BERTH_BROKER_EVIDENCE_H
#define BERTH_BROKER_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>

#include <berth/plugin.h>

#include "broker.h"
#include "policy.h"

/** Longest media type of an object, bytes (<berth/plugin.h>). */
#define BERTH_EVIDENCE_MEDIA_TYPE_MAX 255

/**
 * struct berth_evidence_owner - an authenticated caller, as the evidence
 * store sees it.
 * @principal, @scope: its policy subject: the owner of what it stores;
 *             @scope is the canonical JSON of the subject's scope (owned).
 * @admin:     the subject has an admin grant.
 * @quota:     the subject's evidence_quota.
 */
struct berth_evidence_owner {
    char principal[BERTH_PRINCIPAL_MAX + 1];
    char *scope;
    bool admin;
    struct berth_evidence_quota quota;
};

/** berth_evidence_owner_clear() - release @o's scope and zero it; NULL is fine. */
void berth_evidence_owner_clear(struct berth_evidence_owner *o);

/** berth_evidence_owner_same() - whether @a and @b are the same principal and scope. */
bool berth_evidence_owner_same(const struct berth_evidence_owner *a, const struct berth_evidence_owner *b);

/**
 * berth_broker_evidence_acquire() - take the evidence lock and lend the
 * store: for the broker's own callers (staging, capture, retention), which
 * call its ops directly and then release.  *@ret_state receives the
 * instance.  Return: the ops table, with the lock held; NULL (lock not
 * taken) when the broker has no evidence store.
 */
const struct berth_evidence_store_ops_v1 *berth_broker_evidence_acquire(struct berth_broker *b, void **ret_state);

/** berth_broker_evidence_release() - release the lock berth_broker_evidence_acquire() took. */
void berth_broker_evidence_release(struct berth_broker *b);

/**
 * berth_broker_evidence_caller() - authenticate @fingerprint for an
 * evidence operation (takes the broker's lock only; cheap, so an event loop
 * may call it).
 * Return: 0 with *@ret filled (clear it with berth_evidence_owner_clear());
 * -EACCES (@reply 403 denied, or 500 when the clock or memory failed);
 * -EOPNOTSUPP (@reply 501 not_implemented: the broker has no evidence
 * store).  *@ret is zeroed on failure.
 */
int berth_broker_evidence_caller(struct berth_broker *b, const char *fingerprint, struct berth_evidence_owner *ret,
                                 struct berth_reply *reply);

/**
 * berth_broker_evidence_begin() - start an upload for @who: check its
 * quota (and @size, the declared length of the whole object, when
 * @has_size; none when @digest, the object's digest if known already, is
 * stored by @who: an identical retry) and hand out a new unnamed file to
 * write it into (the
 * store's upload(), else an O_TMPFILE in the broker's evidence spool
 * directory).  Nothing of the file is ever visible; it vanishes when the
 * process dies or the caller closes it.
 * @ret_fd:   receives the file (O_RDWR | O_CLOEXEC, empty); the caller owns it.
 * @ret_room: receives the most bytes the upload may hold: max_object_bytes,
 *            or less when the quota leaves less room.
 * Return: 0; <0 with @reply filled: 413 too_large (@size over
 * max_object_bytes), 413 quota_exceeded (no object or not @size bytes left),
 * 503 storage_full (the journal's filesystem is full: nothing new is
 * accepted), 501 (the store cannot count usage: an ABI 1.0 plugin), 503
 * evidence_store.
 */
int berth_broker_evidence_begin(struct berth_broker *b, const struct berth_evidence_owner *who, bool has_size,
                                uint64_t size, const char *digest, int *ret_fd, uint64_t *ret_room,
                                struct berth_reply *reply);

/**
 * berth_broker_evidence_commit() - store the @size bytes of @fd (a file
 * from berth_broker_evidence_begin(), written from offset 0) as the object
 * @digest ("sha256:<hex>") of @who with @media_type, after checking the
 * quota again: the store verifies length and digest, publishes atomically
 * (fdatasync included) and the commit is audited.  @fd stays the caller's
 * to close, whatever the result; nothing is left in the store on failure.
 * @reply: 201 {digest, size, media_type} (new), 200 (the same object was
 * stored already: an identical retry), or 400 digest_mismatch, 409
 * conflict, 410 gone, 413 too_large, 413 quota_exceeded, 503 (see the top).
 */
void berth_broker_evidence_commit(struct berth_broker *b, const struct berth_evidence_owner *who, int fd,
                                  uint64_t size, const char *digest, const char *media_type,
                                  struct berth_reply *reply);

/**
 * struct berth_evidence_content - what berth_broker_evidence_get() found.
 * @fd:         a new unnamed file (O_RDWR | O_CLOEXEC) holding exactly the
 *              verified content from offset 0; the caller owns it.  -1 when
 *              nothing was found.
 * @size:       its length, bytes.
 * @media_type: the object's media type.
 */
struct berth_evidence_content {
    int fd;
    uint64_t size;
    char media_type[BERTH_EVIDENCE_MEDIA_TYPE_MAX + 1];
};

/**
 * berth_broker_evidence_get() - @who's object @digest, copied (and
 * verified by the store on the way) into a private unnamed file, so that
 * the caller can send it at the client's pace without holding the
 * evidence lock and knows before sending a byte that it is whole.
 * @ret: filled on 200 (@ret->fd >= 0), else @ret->fd is -1.
 * @reply: 200 (no body: the content is @ret), 404 not_found, 410 gone (the
 * message says who deleted it, when and why), 500 corrupt (the store holds
 * bytes that fail verification), 503 evidence_store or storage_full (no
 * room for the copy).
 */
void berth_broker_evidence_get(struct berth_broker *b, const struct berth_evidence_owner *who, const char *digest,
                               struct berth_evidence_content *ret, struct berth_reply *reply);

/**
 * berth_broker_evidence_remove() - delete the object @digest: the store
 * drops its content and keeps a tombstone, so the key is never stored
 * again.  @body (@len bytes) is the strict JSON {"reason": 1 to 1024 bytes
 * of text, "principal": P, "scope": [...]} where principal and scope
 * (both or neither) name another owner, which only an admin may.
 * @reply: 200 {the tombstone: digest, principal, scope, actor, reason,
 * deleted_at, kind} (also for a repeat: the first tombstone stays, and the
 * repeat is not audited again), 400 malformed, 403 denied, 404 not_found
 * (nothing of that key: nothing recorded), 503.
 */
void berth_broker_evidence_remove(struct berth_broker *b, const struct berth_evidence_owner *who, const char *digest,
                                  const char *body, size_t len, struct berth_reply *reply);

/**
 * berth_broker_evidence_list() - one page of objects: @who's own (its
 * principal and scope), or with @all (admin only) every owner's, after
 * the opaque cursor @after (NULL: from the start), at most @limit (1 to
 * BERTH_EVIDENCE_PAGE_MAX).
 * @reply: 200 {"objects": [{digest, size, media_type, principal, scope,
 * created_at, retain_until}], "next": cursor or null, and for @who's own
 * list "usage": {objects, bytes} (all of its principal's scopes) and
 * "quota": {objects, bytes}}; a page may hold fewer than @limit objects
 * while "next" is not null; 400 malformed (a cursor the store refuses),
 * 403 denied (@all without an admin grant), 501, 503.
 */
void berth_broker_evidence_list(struct berth_broker *b, const struct berth_evidence_owner *who, const char *after,
                                int64_t limit, bool all, struct berth_reply *reply);

/*
 * Runs of workers.  A remote worker (docs/workers.md) reads the inputs and
 * writes the declared outputs of a run only while it holds that run's
 * lease, checked at every call: the objects are the job owner's (its
 * principal and scope), never the worker's, and no grant or quota of the
 * owner is asked for (the job was admitted with them).  Outputs are stored
 * as berthd stores a local run's: the declared media type, within
 * max_bytes, kept for outputs_retention_ns; no audit event (the signed
 * result names them).  Replies as above, plus 403 not_a_worker and 403
 * denied (the caller holds no lease on the run, or the digest is not one
 * of its inputs) and 404 not_found (no such declared output).
 */

/**
 * berth_broker_run_input() - berth_broker_evidence_get() of @digest, an
 * input of run @run_id, for the worker whose certificate has @fingerprint
 * and holds the run's lease.  *@ret as there (ret->fd -1 on failure).
 */
void berth_broker_run_input(struct berth_broker *b, const char *fingerprint, const char *run_id, const char *digest,
                            struct berth_evidence_content *ret, struct berth_reply *reply);

/**
 * berth_broker_run_output_begin() - start the upload of output @output_id
 * of run @run_id for the worker @fingerprint that holds its lease, of
 * @size bytes when @has_size.  0 with *@ret_fd a new unnamed file to write
 * the content into from offset 0 (the caller's) and *@ret_room the most it
 * may hold (the output's max_bytes, at most max_object_bytes); else a
 * negative errno with @reply filled (403, 404, 413 too_large, 501, 503).
 */
int berth_broker_run_output_begin(struct berth_broker *b, const char *fingerprint, const char *run_id,
                                  const char *output_id, bool has_size, uint64_t size, int *ret_fd,
                                  uint64_t *ret_room, struct berth_reply *reply);

/**
 * berth_broker_run_output_commit() - store @size bytes of @fd (from offset
 * 0; the caller keeps it) as output @output_id of run @run_id, object
 * @digest of the job's owner, after checking the lease again.  @reply: 201
 * {run_id, output, digest, size, media_type}, or 400 digest_mismatch, 403,
 * 404, 409 conflict, 410 gone, 413 too_large, 503.  Idempotent: the same
 * bytes again answer 201 again.
 */
void berth_broker_run_output_commit(struct berth_broker *b, const char *fingerprint, const char *run_id,
                                    const char *output_id, int fd, uint64_t size, const char *digest,
                                    struct berth_reply *reply);

#endif /* BERTH_BROKER_EVIDENCE_H */
