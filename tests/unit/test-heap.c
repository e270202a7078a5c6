/* SPDX-License-Identifier: MIT */
/* test-heap.c -- glibc allocator settings (heap.h). */
#include "testutil.h"

#include <errno.h>
#include <unistd.h>

#include "heap.h"

/* ASan's allocator replaces glibc's: the heap's top is not brk's there. */
#if defined(__SANITIZE_ADDRESS__)
#define GLIBC_HEAP 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GLIBC_HEAP 0
#endif
#endif
#ifndef GLIBC_HEAP
#define GLIBC_HEAP 1
#endif
/* What berth_heap_tune() answers when it gets to set anything: ASan's
 * mallopt refuses every setting. */
#define TUNED (GLIBC_HEAP ? 0 : -EOPNOTSUPP)

#define BLOCKS 1024
#define BLOCK_BYTES 4096

/* Grow the main heap by about 4 MiB of small blocks, free them all, and
 * return how far the program break fell, bytes. */
static long break_drop_after_free(void)
{
    static void *blocks[BLOCKS];
    char *top;

    for (int i = 0; i < BLOCKS; i++) {
        blocks[i] = malloc(BLOCK_BYTES);
        ck_assert_ptr_nonnull(blocks[i]);
        memset(blocks[i], 1, BLOCK_BYTES);
    }
    top = sbrk(0);
    for (int i = BLOCKS - 1; i >= 0; i--)
        free(blocks[i]);
    return (long)(top - (char *)sbrk(0));
}

/* An operator's own GLIBC_TUNABLES for malloc win; others do not matter. */
START_TEST(environment_wins)
{
    ck_assert_int_eq(berth_heap_tune("glibc.malloc.trim_threshold=131072"), 1);
    ck_assert_int_eq(berth_heap_tune("glibc.rtld.optional_static_tls=512:glibc.malloc.mmap_max=0"), 1);
    ck_assert_int_eq(berth_heap_tune("glibc.rtld.optional_static_tls=512"), TUNED);
    ck_assert_int_eq(berth_heap_tune(NULL), TUNED);
}
END_TEST

/* Tuned, the freed top of the heap stays for reuse. */
START_TEST(tuned_keeps_freed_top)
{
    ck_assert_int_eq(berth_heap_tune(NULL), TUNED);
    if (GLIBC_HEAP)
        ck_assert_int_eq(break_drop_after_free(), 0);
}
END_TEST

/* The control: with glibc's defaults the same frees hand most of it back,
 * so the test above measures what the setting changes. */
START_TEST(default_gives_freed_top_back)
{
    if (GLIBC_HEAP)
        ck_assert_int_ge(break_drop_after_free(), (long)BLOCKS * BLOCK_BYTES / 2);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("heap");
    TCase *tc = test_case(s, "heap");

    /* The control first: each test runs in a process of its own (Check's
     * fork mode), but with CK_FORK=no a tuned heap would stay tuned. */
    tcase_add_test(tc, default_gives_freed_top_back);
    tcase_add_test(tc, environment_wins);
    tcase_add_test(tc, tuned_keeps_freed_top);
    return s;
}

TEST_MAIN()
