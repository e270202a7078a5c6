/* SPDX-License-Identifier: MIT */
/*
 * local-state.c -- the journal and audit key arguments of the verbs that
 * work on a local journal (audit, pool, qualify).  Only in berthctl-full,
 * which links SQLite (berthctl.c says why the client berthctl does not).
 */
#include <stdbool.h>

#include "audit.h"
#include "berthctl.h"
#include "journal.h"

int bctl_open_journal(const struct bctl_globals *g, const char *verb, bool create, struct berth_journal **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (!g->journal)
        return bctl_usage_error(verb, "--journal=PATH is required");
    if (berth_journal_open(g->journal, create ? BERTH_JOURNAL_CREATE : 0, ret, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    return BCTL_EXIT_OK;
}

int bctl_load_audit_key(const struct bctl_globals *g, const char *verb, struct berth_audit_key *ret)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (!g->audit_key)
        return bctl_usage_error(verb, "--audit-key=FILE is required");
    if (berth_audit_key_load(g->audit_key, ret, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    return BCTL_EXIT_OK;
}
