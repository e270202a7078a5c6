/* SPDX-License-Identifier: MIT */
/*
 * slots.h -- who may hold berthd's connection slots.
 *
 * Every open connection is a slot.  Until its TLS handshake is complete and
 * its certificate is found in the host policy, a connection is
 * unauthenticated; unauthenticated connections share a small part of the
 * slots (http.max_unauthenticated) and each source address holds at most
 * http.max_per_source of them, so that clients that never authenticate
 * cannot take the slots authenticated clients need.  An authenticated
 * certificate holds at most http.max_per_principal connections.
 *
 * When a new connection would pass a limit, an older unauthenticated one
 * makes room (it is evicted), chosen so that a source with few connections
 * keeps them: the oldest of the new connection's own source when that
 * source is at its cap, else the oldest of the source that holds the most
 * unauthenticated connections.  A flood from a few addresses therefore
 * churns its own connections while a client from another address completes
 * its handshake.
 *
 * A source is an IPv4 address, or the /64 prefix of an IPv6 address (one
 * host commonly holds a whole /64, RFC 4291 section 2.5.1); an IPv4-mapped
 * IPv6 address counts as the IPv4 address.
 *
 * Pure bookkeeping on a list the caller owns; no I/O.  Not thread-safe.
 */
#ifndef BERTHD_SLOTS_H
#define BERTHD_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "policy.h" /* BERTH_FINGERPRINT_LEN */

#define BERTHD_SOURCE_LEN 16 /**< bytes of a source key */

/**
 * struct berthd_slot - one connection's entry.
 * @source:        its source key (berthd_slot_source()).
 * @seq:           the order of acceptance: smaller is older.
 * @authenticated: the handshake is complete and the certificate is listed.
 * @fingerprint:   the certificate's fingerprint once authenticated, else "".
 * @prev, @next:   the list (struct berthd_slots).
 */
struct berthd_slot {
    uint8_t source[BERTHD_SOURCE_LEN];
    uint64_t seq;
    bool authenticated;
    char fingerprint[BERTH_FINGERPRINT_LEN + 1];
    struct berthd_slot *prev, *next;
};

/**
 * struct berthd_slots - every open connection's slot.
 * @head:            the list, newest first.
 * @total:           entries in the list.
 * @unauthenticated: entries not yet authenticated.
 * @next_seq:        the next @seq to hand out.
 * Initialise to all zeroes.
 */
struct berthd_slots {
    struct berthd_slot *head;
    size_t total, unauthenticated;
    uint64_t next_seq;
};

/**
 * berthd_slot_source() - the source key of the peer address @sa (@len bytes).
 * @ret: receives BERTHD_SOURCE_LEN bytes; all zero for a family other than
 *       AF_INET and AF_INET6 (all such peers then share one source).
 */
void berthd_slot_source(const struct sockaddr *sa, socklen_t len, uint8_t ret[BERTHD_SOURCE_LEN]);

/**
 * berthd_slot_shown() - @source as text for logs ("127.0.0.2", "2001:db8::/64").
 * @buf: at least 64 bytes.
 */
void berthd_slot_shown(const uint8_t source[BERTHD_SOURCE_LEN], char *buf, size_t size);

/** berthd_slots_add() - add @slot (its @source set) as the newest, unauthenticated. */
void berthd_slots_add(struct berthd_slots *s, struct berthd_slot *slot);

/** berthd_slots_remove() - take @slot out of the list; the caller frees it. */
void berthd_slots_remove(struct berthd_slots *s, struct berthd_slot *slot);

/**
 * berthd_slots_victim() - the unauthenticated slot to evict before a new
 * connection from @source can be admitted, per the rule above.
 * @max_per_source:  http.max_per_source (>= 1).
 * @max_unauthenticated: http.max_unauthenticated (>= 1).
 * Return: NULL when the new connection fits without evicting anyone; else
 * the slot to close.  Never NULL when both limits are full, since an
 * unauthenticated slot then exists.
 */
struct berthd_slot *berthd_slots_victim(const struct berthd_slots *s, const uint8_t source[BERTHD_SOURCE_LEN],
                                        size_t max_per_source, size_t max_unauthenticated);

/**
 * berthd_slots_authenticate() - mark @slot authenticated as @fingerprint
 * (BERTH_FINGERPRINT_LEN hex characters), unless that certificate already
 * holds @max_per_principal authenticated slots.
 * Return: true when marked; false when over the cap (nothing changed).
 */
bool berthd_slots_authenticate(struct berthd_slots *s, struct berthd_slot *slot, const char *fingerprint,
                               size_t max_per_principal);

#endif
