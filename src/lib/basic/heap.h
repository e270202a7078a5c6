/* SPDX-License-Identifier: MIT */
/*
 * heap.h -- how a long-running berth process asks glibc's allocator to keep
 * freed memory instead of handing it back to the kernel at once.
 *
 * glibc returns the free top of a heap to the kernel (brk, or madvise for a
 * thread's arena) as soon as it exceeds M_TRIM_THRESHOLD, 128 KiB to start
 * with (mallopt(3)).  SQLite's page cache frees and allocates pages all the
 * time once a journal outgrows it, so the heap top shrinks and grows on
 * nearly every statement; each shrink unmaps pages, which on a virtual
 * machine costs a TLB shootdown across every CPU, and each regrowth a page
 * fault per page.  Measured with tests/bench/bench-pipeline on the 2-vCPU
 * build machine: 770-840 accepted jobs/s with glibc's defaults and 11,000
 * jobs queued, 2,400-2,500 with a 32 MiB threshold, flat as the queue grows.
 */
#ifndef BERTH_HEAP_H
#define BERTH_HEAP_H

/** Free memory at a heap's top kept for reuse before it is given back, bytes. */
#define BERTH_HEAP_TRIM_THRESHOLD (32 * 1024 * 1024)
/** Allocations at least this large get their own mapping, bytes (mallopt(3) M_MMAP_THRESHOLD). */
#define BERTH_HEAP_MMAP_THRESHOLD (4 * 1024 * 1024)

/**
 * berth_heap_tune() - set M_TRIM_THRESHOLD to BERTH_HEAP_TRIM_THRESHOLD and
 * M_MMAP_THRESHOLD to BERTH_HEAP_MMAP_THRESHOLD for the whole process
 * (mallopt(3); setting either turns off glibc's own adjustment of both),
 * unless the operator chose allocator settings of their own.
 * @tunables: the value of GLIBC_TUNABLES in the environment, or NULL; when
 *            it names any glibc.malloc.* tunable nothing is changed.
 * Call it once from main(), before any thread starts: it changes
 * process-wide allocator state and is not thread-safe.
 * Return: 0 when set; 1 when left to GLIBC_TUNABLES; -EOPNOTSUPP when the
 * process's allocator is not glibc's (AddressSanitizer's, or one preloaded)
 * and refuses M_TRIM_THRESHOLD, so nothing was changed; -EINVAL when glibc
 * refuses M_MMAP_THRESHOLD (over its maximum, 32 MiB on 64-bit).
 */
int berth_heap_tune(const char *tunables);

#endif
