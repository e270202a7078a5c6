/* SPDX-License-Identifier: MIT */
/* test-slots.c -- berthd's admission bookkeeping (src/berthd/slots.h). */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "slots.h"

#define FP_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void source_of(const char *text, uint8_t key[BERTHD_SOURCE_LEN])
{
    struct sockaddr_in in4 = {.sin_family = AF_INET};
    struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};

    if (inet_pton(AF_INET, text, &in4.sin_addr) == 1) {
        berthd_slot_source((struct sockaddr *)&in4, sizeof(in4), key);
        return;
    }
    ck_assert_int_eq(inet_pton(AF_INET6, text, &in6.sin6_addr), 1);
    berthd_slot_source((struct sockaddr *)&in6, sizeof(in6), key);
}

static struct berthd_slot *add(struct berthd_slots *s, struct berthd_slot *slot, const char *from)
{
    source_of(from, slot->source);
    berthd_slots_add(s, slot);
    return slot;
}

START_TEST(sources)
{
    uint8_t a[BERTHD_SOURCE_LEN], b[BERTHD_SOURCE_LEN];
    char shown[64];

    source_of("127.0.0.2", a);
    source_of("::ffff:127.0.0.2", b);
    ck_assert_mem_eq(a, b, BERTHD_SOURCE_LEN); /* mapped IPv4 is the IPv4 address */
    berthd_slot_shown(a, shown, sizeof(shown));
    ck_assert_str_eq(shown, "127.0.0.2");
    source_of("127.0.0.3", b);
    ck_assert(memcmp(a, b, BERTHD_SOURCE_LEN) != 0);
    /* One /64 is one source. */
    source_of("2001:db8:1:2::1", a);
    source_of("2001:db8:1:2:ffff::9", b);
    ck_assert_mem_eq(a, b, BERTHD_SOURCE_LEN);
    berthd_slot_shown(a, shown, sizeof(shown));
    ck_assert_str_eq(shown, "2001:db8:1:2::/64");
    source_of("2001:db8:1:3::1", b);
    ck_assert(memcmp(a, b, BERTHD_SOURCE_LEN) != 0);
    /* Another family: all zero. */
    {
        struct sockaddr sa = {.sa_family = AF_UNIX};
        uint8_t zero[BERTHD_SOURCE_LEN] = {0};
        berthd_slot_source(&sa, sizeof(sa), a);
        ck_assert_mem_eq(a, zero, BERTHD_SOURCE_LEN);
    }
}
END_TEST

/* A source at its cap gives up its own oldest slot. */
START_TEST(per_source)
{
    struct berthd_slots s = {0};
    struct berthd_slot x[4] = {0};
    uint8_t src[BERTHD_SOURCE_LEN];

    add(&s, &x[0], "10.0.0.1");
    add(&s, &x[1], "10.0.0.2");
    add(&s, &x[2], "10.0.0.1");
    source_of("10.0.0.1", src);
    ck_assert_ptr_null(berthd_slots_victim(&s, src, 3, 16));
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 2, 16), &x[0]);
    add(&s, &x[3], "10.0.0.1");
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 3, 16), &x[0]);
    berthd_slots_remove(&s, &x[0]);
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 2, 16), &x[2]);
    ck_assert_uint_eq(s.total, 3);
    ck_assert_uint_eq(s.unauthenticated, 3);
}
END_TEST

/* With the share full, the heaviest source pays; a lone client keeps its slot. */
START_TEST(share)
{
    struct berthd_slots s = {0};
    struct berthd_slot good = {0}, x[5] = {0};
    uint8_t src[BERTHD_SOURCE_LEN];

    add(&s, &good, "127.0.0.1"); /* the oldest of all */
    add(&s, &x[0], "127.0.0.2");
    add(&s, &x[1], "127.0.0.3");
    add(&s, &x[2], "127.0.0.2");
    add(&s, &x[3], "127.0.0.3");
    add(&s, &x[4], "127.0.0.3");
    source_of("127.0.0.9", src);
    ck_assert_ptr_null(berthd_slots_victim(&s, src, 4, 7));
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 4, 6), &x[1]); /* .3 holds three */
    berthd_slots_remove(&s, &x[4]);
    /* .2 and .3 hold two each: the older of their oldest goes. */
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 4, 5), &x[0]);
    /* Authenticated slots are never victims and do not count against the share. */
    ck_assert(berthd_slots_authenticate(&s, &x[0], FP_A, 16));
    ck_assert(berthd_slots_authenticate(&s, &x[2], FP_A, 16));
    ck_assert_uint_eq(s.unauthenticated, 3);
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 4, 3), &x[1]);
    /* Only when every source holds one does the oldest slot, the lone client's, go. */
    berthd_slots_remove(&s, &x[3]);
    ck_assert_ptr_eq(berthd_slots_victim(&s, src, 4, 2), &good);
}
END_TEST

START_TEST(per_principal)
{
    struct berthd_slots s = {0};
    struct berthd_slot x[3] = {0};

    add(&s, &x[0], "10.0.0.1");
    add(&s, &x[1], "10.0.0.2");
    add(&s, &x[2], "10.0.0.3");
    ck_assert(berthd_slots_authenticate(&s, &x[0], FP_A, 2));
    ck_assert(berthd_slots_authenticate(&s, &x[1], FP_A, 2));
    ck_assert(!berthd_slots_authenticate(&s, &x[2], FP_A, 2));
    ck_assert(!x[2].authenticated);
    ck_assert_uint_eq(s.unauthenticated, 1);
    ck_assert(berthd_slots_authenticate(&s, &x[2], FP_B, 2));
    ck_assert_str_eq(x[2].fingerprint, FP_B);
    ck_assert_uint_eq(s.unauthenticated, 0);
    berthd_slots_remove(&s, &x[0]);
    ck_assert_uint_eq(s.total, 2);
    ck_assert_uint_eq(s.unauthenticated, 0);
    ck_assert_ptr_eq(s.head, &x[2]);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("slots");
    TCase *tc = test_case(s, "slots");

    tcase_add_test(tc, sources);
    tcase_add_test(tc, per_source);
    tcase_add_test(tc, share);
    tcase_add_test(tc, per_principal);
    return s;
}

TEST_MAIN()
