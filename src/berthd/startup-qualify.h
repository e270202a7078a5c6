/* SPDX-License-Identifier: MIT */
/*
 * startup-qualify.h -- berthd qualifies the backends whose berthd.json entry
 * says "qualify_at_startup": true, before it opens its listener: a backend
 * without a current qualification (qualification.h) runs the live probes
 * (qualify/probes.h) with the probe program of berthd.json's "probe" (default: the
 * installed berth-probe); the signed record of the run goes into the
 * journal, valid for 30 days when every probe passed.  The sequence is
 * berth_qualify_backend() (qualify/qualify.h), the one "berthctl qualify"
 * runs too.  A failure is logged and leaves that backend unqualified;
 * berthd still starts.  Takes about 20 s per backend probed.
 */
#ifndef BERTHD_STARTUP_QUALIFY_H
#define BERTHD_STARTUP_QUALIFY_H

#include "backend-load.h"
#include "berthd-config.h"
#include "journal.h"
#include "loader.h"
#include "log.h"
#include "sign.h"

/**
 * berthd_qualify_at_startup() - see above.  Call before the broker and the
 * worker thread exist (the backends' instances are used from this thread).
 * @runtimes: the loaded runtime instance of each of @cfg's backends, with
 *           its containment, in the order of @cfg->backends (borrowed).
 * Return: 0; -EPERM or -ELOOP (state_directory/qualify is unsafe); -ENOMEM;
 * the errno of opening state_directory (-ENOENT, -EACCES, ...) or of
 * creating state_directory/qualify.
 */
int berthd_qualify_at_startup(const struct berthd_config *cfg, const struct berthd_backend_instance *runtimes,
                              struct berth_journal *journal, const struct berth_signing_key *key,
                              const struct berth_logger *log);

#endif
