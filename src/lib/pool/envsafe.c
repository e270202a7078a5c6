/* SPDX-License-Identifier: MIT */
/* envsafe.c -- environment names overrides may not set; see envsafe.h. */
#include <string.h>

#include "envsafe.h"
#include "macro.h"

#define GLIBC "read by glibc (glibc sysdeps/generic/unsecvars.h)"
#define LOADER "read by the dynamic loader (ld.so(8); glibc sysdeps/generic/unsecvars.h)"
#define SHELL "read by shells at start-up (bash(1), dash(1), POSIX sh)"
#define INTERP "an interpreter's start-up hook (python(1), perlrun(1), ruby(1), node(1))"

struct env_rule {
    const char *name;
    bool prefix; /* @name is a prefix: the whole family */
    const char *why;
};

static const struct env_rule rules[] = {
    {"LD_", true, LOADER},
    {"MALLOC_", true, "read by glibc's malloc (mallopt(3) tunables; glibc sysdeps/generic/unsecvars.h)"},
    {"GCONV_PATH", false, GLIBC},
    {"GETCONF_DIR", false, GLIBC},
    {"GLIBC_TUNABLES", false, GLIBC},
    {"HOSTALIASES", false, GLIBC},
    {"LOCALDOMAIN", false, GLIBC},
    {"LOCPATH", false, GLIBC},
    {"NIS_PATH", false, GLIBC},
    {"NLSPATH", false, GLIBC},
    {"RESOLV_HOST_CONF", false, GLIBC},
    {"RES_OPTIONS", false, GLIBC},
    {"TMPDIR", false, GLIBC},
    {"TZDIR", false, GLIBC},
    {"BASH_ENV", false, SHELL},
    {"BASH_FUNC_", true, SHELL},
    {"BASHOPTS", false, SHELL},
    {"CDPATH", false, SHELL},
    {"ENV", false, SHELL},
    {"IFS", false, SHELL},
    {"PS4", false, SHELL},
    {"SHELLOPTS", false, SHELL},
    {"NODE_OPTIONS", false, INTERP},
    {"PERL5LIB", false, INTERP},
    {"PERL5OPT", false, INTERP},
    {"PERLLIB", false, INTERP},
    {"PYTHONHOME", false, INTERP},
    {"PYTHONPATH", false, INTERP},
    {"PYTHONSTARTUP", false, INTERP},
    {"RUBYLIB", false, INTERP},
    {"RUBYOPT", false, INTERP},
    {"PATH", false, "the command search path, which only the pool's template sets (issue 15)"},
};

const char *berth_env_unsafe(const char *name)
{
    size_t i;

    if (!name)
        return NULL;
    for (i = 0; i < ELEMENTSOF(rules); i++)
        if (rules[i].prefix ? strncmp(name, rules[i].name, strlen(rules[i].name)) == 0 : streq(name, rules[i].name))
            return rules[i].why;
    return NULL;
}

bool berth_env_override_refused(const struct berth_pool *pool, const char *name, const char **ret_why)
{
    const char *why = berth_env_unsafe(name);
    size_t i;

    if (!why)
        return false;
    for (i = 0; pool && i < pool->n_exposed_env; i++)
        if (streq(pool->exposed_env[i], name))
            return false;
    if (ret_why)
        *ret_why = why;
    return true;
}
