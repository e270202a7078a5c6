/* SPDX-License-Identifier: MIT */
/*
 * envsafe.h -- the environment variables a submitter's overrides may not
 * set unless the pool exposes them by name: the one place that rule lives.
 *
 * These names change what runs before, or instead of, the job's own code
 * (the dynamic loader, libc's start-up, a shell's or an interpreter's
 * start-up files) or where commands are found.  The pool's template may set
 * any of them (the operator chose it); an override may set one only when
 * the pool's exposed_fields lists "env.NAME" for it (pool.h).  The list and
 * where each entry comes from:
 *
 *   glibc, sysdeps/generic/unsecvars.h (UNSECURE_ENVVARS, what ld.so strips
 *   for set-user-ID programs): GCONV_PATH GETCONF_DIR GLIBC_TUNABLES
 *   HOSTALIASES LD_* LOCALDOMAIN LOCPATH MALLOC_* NIS_PATH NLSPATH
 *   RESOLV_HOST_CONF RES_OPTIONS TMPDIR TZDIR.  Whole families are refused
 *   where glibc reads a family: every LD_* (ld.so(8)) and every MALLOC_*
 *   (glibc's tunable aliases MALLOC_CHECK_, MALLOC_ARENA_MAX, ...;
 *   mallopt(3)).
 *   Shells (bash(1) INVOCATION and Shell Variables; POSIX sh, XCU 2.5.3 and
 *   sh ENVIRONMENT VARIABLES; dash(1)): BASH_ENV ENV (files sourced at
 *   start-up), BASH_FUNC_* (exported functions), SHELLOPTS BASHOPTS (options
 *   set at start-up, xtrace among them), PS4 (expanded, command
 *   substitutions included, for every traced command), IFS (word
 *   splitting), CDPATH (what cd changes to).
 *   Interpreters' start-up hooks (python(1), perlrun(1), ruby(1), node(1)):
 *   PYTHONSTARTUP PYTHONPATH PYTHONHOME PERL5OPT PERL5LIB PERLLIB RUBYOPT
 *   RUBYLIB NODE_OPTIONS.
 *   The command search path: PATH (issue 15: only as the template sets it).
 *
 * Names are compared exactly (environment names are case-sensitive).
 * Thread-safe; no state.
 */
#ifndef BERTH_ENVSAFE_H
#define BERTH_ENVSAFE_H

#include <stdbool.h>

#include "pool.h"

/** What exposed_fields lists to let overrides set one listed name: "env.NAME". */
#define BERTH_EXPOSED_ENV_PREFIX "env."

/**
 * berth_env_unsafe() - whether overrides are refused @name unless the pool
 * exposes it by name.
 * @name: an environment variable name (any string; NULL is not unsafe).
 * Return: NULL when @name is not on the list; else a static phrase naming
 * what reads it and the source of the rule, e.g. "read by the dynamic
 * loader (ld.so(8); glibc unsecvars.h)".
 */
const char *berth_env_unsafe(const char *name);

/**
 * berth_env_override_refused() - the rule itself: whether an override may
 * not set @name in @pool: @name is on the list (berth_env_unsafe()) and
 * @pool's exposed_fields does not list "env.@name".
 * @ret_why: optional; receives berth_env_unsafe(@name) when refused.
 * Return: true when refused.
 */
bool berth_env_override_refused(const struct berth_pool *pool, const char *name, const char **ret_why);

#endif /* BERTH_ENVSAFE_H */
