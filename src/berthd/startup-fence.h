/* SPDX-License-Identifier: MIT */
/*
 * startup-fence.h -- before admission opens, berthd fences and drains the
 * units of its contained backends that no job of its journal accounts for
 * (docs/containment.md, "Recovery at startup").
 *
 * For each runtime backend bound to a containment whose plugin lists its
 * units (ABI 1.3, units), every unit listed is looked up by its job id in
 * the journal (a runtime names a job's unit by the job's run id):
 *
 *   - no record (a unit started by hand, or by another journal), or a
 *     terminal one (the job ended; what is left of it must not run on):
 *     destroy() fences it (a persistent mask) and drains its cgroup, unless
 *     it is masked and empty already;
 *   - a record that is not terminal: left to the runtime, which owns the
 *     job and recovers it;
 *   - a unit whose name carries no job id berth makes (job_id null) cannot
 *     be addressed through the ops table: it is reported, for the operator
 *     to stop and mask by hand.
 *
 * Every unit of the pattern on the host is taken as this broker's: run one
 * berthd per service manager.  A unit that cannot be proven gone is logged
 * at error level and berthd still starts; the next start tries again.
 */
#ifndef BERTHD_STARTUP_FENCE_H
#define BERTHD_STARTUP_FENCE_H

#include <stddef.h>

#include "backend-load.h"
#include "journal.h"
#include "log.h"

/**
 * struct berthd_fence_counts - what berthd_fence_units() did, over every
 * backend: @fenced units destroyed with proof, @failed units destroy()
 * could not prove gone, @unaddressable units without a job id, @kept
 * units of non-terminal jobs, @already masked and empty units.
 */
struct berthd_fence_counts {
    size_t fenced, failed, unaddressable, kept, already;
};

/**
 * berthd_fence_units() - the scan above, for the @n backends in @runtimes
 * (names from their host tables); backends without a containment, or
 * whose containment has no units, are skipped.  Logs each unit it acts on
 * (or cannot) to @log.  @ret (optional) receives the counts.
 * Call from one thread before the broker exists (the journal is used
 * without the broker's lock).
 * Return: 0, also when units were left unproven (they are counted and
 * logged); -ENOMEM; a journal error reading a record.
 */
int berthd_fence_units(const struct berthd_backend_instance *runtimes, size_t n, struct berth_journal *journal,
                       const struct berth_logger *log, struct berthd_fence_counts *ret);

#endif
