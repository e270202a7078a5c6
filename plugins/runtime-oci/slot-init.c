/* SPDX-License-Identifier: MIT */
/*
 * berth-slot-init -- the process of a warm slot's container (runtime-oci,
 * docs/warm-slots.md).
 *
 * A slot's container is created and started before its job exists, with
 * this program (linked statically, so it runs on any image) bound
 * read-only at BERTH_BUNDLE_SLOT_INIT as its process.  It waits on its
 * standard input, a pipe whose other end only the slot's shim holds (the
 * runtime hands the container the stdio of `create`).  When a job claims
 * the slot, the shim checks the job's receipt and config.json and writes
 * the job's argv into the pipe (its strings, each ending in a NUL byte)
 * and closes it.  This program reads up to end of file, puts /dev/null on
 * standard input (as a cold job has it) and execs the argv, with the
 * environment, identity, limits and working directory config.json gave it,
 * so nothing of it stays in the job's process.  argv[0] without a slash is
 * looked up in PATH, as the runtimes do for a job's own bundle, and a file
 * the kernel cannot execute is not run through a shell.  A shim that ends
 * without a claim closes the pipe with nothing in it: the init runs
 * nothing.
 *
 * Exit status (nothing was exec'ed): 127 when the program is not found,
 * 126 when it cannot be executed, 125 when the handoff is empty, malformed
 * or over its bound; the reason goes to standard error, which is the job's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bundle.h"

extern char **environ;

#define EXIT_HANDOFF 125

/* execve @args, looking a program name without a slash up in PATH as the
 * runtimes do for a cold start (the first regular, executable file).  Never
 * falls back to running a file through /bin/sh (execvp does on ENOEXEC), so
 * a file that cannot be exec'ed fails here as it fails cold.  Returns only
 * on failure, errno set. */
static void execute(char *const *args)
{
    static char path[4096];
    const char *dirs, *p;
    int saved = ENOENT;

    if (strchr(args[0], '/')) {
        execve(args[0], args, environ);
        return;
    }
    dirs = getenv("PATH");
    if (!dirs)
        dirs = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (p = dirs;; p++) {
        const char *end = strchrnul(p, ':');
        struct stat st;
        int n = snprintf(path, sizeof(path), "%.*s%s%s", (int)(end - p), p, end > p ? "/" : "", args[0]);

        if (n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            access(path, X_OK) == 0) {
            execve(path, args, environ);
            return; /* found but not executable as such: no further search */
        }
        if (errno == EACCES)
            saved = EACCES;
        if (!*end)
            break;
        p = end;
    }
    errno = saved;
}

static int refuse(const char *what)
{
    fprintf(stderr, "berth-slot-init: the handoff on standard input: %s\n", what);
    return EXIT_HANDOFF;
}

int main(int argc, char **argv)
{
    static char buf[BERTH_BUNDLE_SLOT_ARGV_MAX + 1];
    static char *args[BERTH_BUNDLE_SLOT_ARGC_MAX + 1];
    size_t n = 0, argn = 0, i;
    int null;

    (void)argv;
    if (argc != 1) {
        fputs("usage: berth-slot-init (the process of a berth warm slot; takes no arguments)\n", stderr);
        return 2;
    }
    for (;;) {
        ssize_t k = read(0, buf + n, sizeof(buf) - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return refuse(strerror(errno));
        if (k == 0)
            break;
        n += (size_t)k;
        if (n == sizeof(buf))
            return refuse("longer than " "the argv bound");
    }
    null = open("/dev/null", O_RDWR | O_NOCTTY);
    if (null < 0 || dup2(null, 0) < 0)
        return refuse("cannot put /dev/null on standard input");
    if (null != 0)
        close(null);
    if (n == 0 || buf[n - 1] != '\0' || buf[0] == '\0')
        return refuse("not a list of NUL-terminated strings with a program first");
    for (i = 0; i < n; i += strlen(buf + i) + 1) {
        if (argn == BERTH_BUNDLE_SLOT_ARGC_MAX)
            return refuse("too many arguments");
        args[argn++] = buf + i;
    }
    args[argn] = NULL;
    execute(args);
    fprintf(stderr, "berth-slot-init: %s: %s\n", args[0], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
