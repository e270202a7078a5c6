/* SPDX-License-Identifier: MIT */
/*
 * runstate.h -- whether an OCI runtime still keeps the state record of a
 * container, read from the runtime's --root directory instead of running
 * `RUNTIME state ID` (a process start: about 8 ms for crun and 25 ms for
 * runsc on the 2-vCPU build machine, on every job's teardown path).
 *
 * The runtimes berth drives keep one record per container directly under
 * their --root directory, and `state` answers from it alone:
 *   - crun and runc: a directory named after the container id
 *     (crun: ROOT/ID/status; runc: ROOT/ID/state.json);
 *   - runsc: files named "ID_sandbox:SANDBOX_ID.state" and ".lock"
 *     (SANDBOX_ID is ID for a container that is its own sandbox).
 * `delete` removes that record, so after a successful delete no entry of
 * ROOT is named ID or starts with "ID_".  berth's run ids are "r" and hex
 * (berth_run_id(), journal/jobstore.h), so the prefix never matches
 * another container.
 */
#ifndef BERTH_OCI_RUNSTATE_H
#define BERTH_OCI_RUNSTATE_H

#include <stdbool.h>

/**
 * oci_runstate_present() - whether the runtime root @root holds a state
 * record of container @id (see above).
 * @root: the absolute --root directory the runtime was given; opened with no
 *        symlink in any component.  An absent @root holds nothing.
 * @id:   the container id: non-empty, no "/" and no "_".
 * @ret_present: set on success.
 *
 * Reads the directory once (it holds one record per container of this
 * backend).  Thread-safe (no shared state).
 * Return: 0; -EINVAL (bad @root or @id), or the negative errno of opening
 * or reading @root (the caller must then treat the container as present).
 */
int oci_runstate_present(const char *root, const char *id, bool *ret_present);

#endif
