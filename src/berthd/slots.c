/* SPDX-License-Identifier: MIT */
/* slots.c -- who may hold berthd's connection slots; see slots.h. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "slots.h"

void berthd_slot_source(const struct sockaddr *sa, socklen_t len, uint8_t ret[BERTHD_SOURCE_LEN])
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

    memset(ret, 0, BERTHD_SOURCE_LEN);
    if (sa && sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        memcpy(ret, mapped, sizeof(mapped));
        memcpy(ret + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    } else if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const uint8_t *a = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
        if (memcmp(a, mapped, sizeof(mapped)) == 0)
            memcpy(ret, a, BERTHD_SOURCE_LEN); /* the IPv4 address itself */
        else
            memcpy(ret, a, 8); /* the /64 */
    }
}

void berthd_slot_shown(const uint8_t source[BERTHD_SOURCE_LEN], char *buf, size_t size)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    char text[INET6_ADDRSTRLEN];

    if (memcmp(source, mapped, sizeof(mapped)) == 0 && inet_ntop(AF_INET, source + 12, text, sizeof(text)))
        snprintf(buf, size, "%s", text);
    else if (inet_ntop(AF_INET6, source, text, sizeof(text)))
        snprintf(buf, size, "%s/64", text);
    else
        snprintf(buf, size, "?");
}

void berthd_slots_add(struct berthd_slots *s, struct berthd_slot *slot)
{
    slot->seq = s->next_seq++;
    slot->authenticated = false;
    slot->fingerprint[0] = '\0';
    slot->prev = NULL;
    slot->next = s->head;
    if (s->head)
        s->head->prev = slot;
    s->head = slot;
    s->total++;
    s->unauthenticated++;
}

void berthd_slots_remove(struct berthd_slots *s, struct berthd_slot *slot)
{
    if (slot->prev)
        slot->prev->next = slot->next;
    else
        s->head = slot->next;
    if (slot->next)
        slot->next->prev = slot->prev;
    slot->prev = slot->next = NULL;
    s->total--;
    if (!slot->authenticated)
        s->unauthenticated--;
}

/* How many unauthenticated slots @source holds, and the oldest of them. */
static size_t source_count(const struct berthd_slots *s, const uint8_t source[BERTHD_SOURCE_LEN],
                           struct berthd_slot **ret_oldest)
{
    struct berthd_slot *p, *oldest = NULL;
    size_t n = 0;

    for (p = s->head; p; p = p->next)
        if (!p->authenticated && memcmp(p->source, source, BERTHD_SOURCE_LEN) == 0) {
            n++;
            oldest = p; /* the list is newest first */
        }
    if (ret_oldest)
        *ret_oldest = oldest;
    return n;
}

struct berthd_slot *berthd_slots_victim(const struct berthd_slots *s, const uint8_t source[BERTHD_SOURCE_LEN],
                                        size_t max_per_source, size_t max_unauthenticated)
{
    struct berthd_slot *p, *victim = NULL, *oldest;
    size_t most = 0, n;

    if (source_count(s, source, &oldest) >= max_per_source)
        return oldest;
    if (s->unauthenticated < max_unauthenticated)
        return NULL;
    /* The heaviest source gives up its oldest; among equals, the oldest slot goes. */
    for (p = s->head; p; p = p->next) {
        if (p->authenticated)
            continue;
        n = source_count(s, p->source, &oldest);
        if (n > most || (n == most && victim && oldest->seq < victim->seq)) {
            most = n;
            victim = oldest;
        }
    }
    return victim;
}

bool berthd_slots_authenticate(struct berthd_slots *s, struct berthd_slot *slot, const char *fingerprint,
                               size_t max_per_principal)
{
    struct berthd_slot *p;
    size_t n = 0;

    for (p = s->head; p; p = p->next)
        if (p->authenticated && strcmp(p->fingerprint, fingerprint) == 0)
            n++;
    if (n >= max_per_principal)
        return false;
    if (!slot->authenticated)
        s->unauthenticated--;
    slot->authenticated = true;
    snprintf(slot->fingerprint, sizeof(slot->fingerprint), "%s", fingerprint);
    return true;
}
