/* SPDX-License-Identifier: MIT */
/*
 * startup-qualify.h -- berthd qualifies the backends whose berthd.json entry
 * says "qualify_at_startup": true, before it opens its listener: a backend
 * without a current qualification (qualification.h) runs the live probes
 * (qualify/probes.h) with the probe program of berthd.json's "probe" (default: the
 * installed berth-probe); when all pass, the signed record goes into the
 * journal, valid for 30 days.  A failure is logged and leaves that backend
 * unqualified; berthd still starts.  Takes about 20 s per backend probed.
 */
#ifndef BERTHD_STARTUP_QUALIFY_H
#define BERTHD_STARTUP_QUALIFY_H

#include "berthd-config.h"
#include "broker.h"
#include "journal.h"
#include "log.h"
#include "sign.h"

/**
 * berthd_qualify_at_startup() - see above.  Call before the broker and the
 * worker thread exist (the backends' instances are used from this thread).
 * Return: 0; -EPERM (state_directory/qualify is unsafe); -ENOMEM.
 */
int berthd_qualify_at_startup(const struct berthd_config *cfg, const struct berth_broker_backend *backends,
                              struct berth_journal *journal, const struct berth_signing_key *key,
                              const struct berth_logger *log);

#endif
