/* SPDX-License-Identifier: MIT */
/*
 * berth-slot-init -- the process of a warm slot's container (runtime-oci,
 * docs/warm-slots.md).
 *
 * A slot's container is created and started before its job exists, with
 * this program (linked statically, so it runs on any image) bound
 * read-only at BERTH_BUNDLE_SLOT_INIT as its process.  It first makes
 * itself non-dumpable (PR_SET_DUMPABLE, prctl(2)), so that no other process
 * of its uid can reach its descriptors through /proc or ptrace, and waits
 * on its standard input: a socket whose other end only the slot's shim
 * holds (the runtime hands the container the stdio of `create`; a socket,
 * unlike a pipe, cannot be opened again through /proc/PID/fd).  When a job
 * claims the slot, the shim checks the job's receipt and config.json,
 * sends the argv's length (a uint32_t in host byte order) and the argv
 * (its strings, each ending in a NUL byte), and shuts the socket.  This
 * program reads exactly that many bytes and then end of file, puts
 * /dev/null on standard input (as a cold job has it) and execs the argv,
 * with the environment, identity, limits and working directory config.json
 * gave it, so nothing of it stays in the job's process (execve(2) makes
 * the job dumpable again as usual).  argv[0] without a slash is looked up
 * in PATH, as the runtimes do for a job's own bundle, and a file the kernel
 * cannot execute is not run through a shell.  A shim that ends without a
 * claim closes the socket with nothing sent, and one cut short sends less
 * than the length: either way the init runs nothing.
 *
 * Exit status (nothing was exec'ed): 127 when the program is not found,
 * 126 when it cannot be executed, 125 when the handoff is empty, short,
 * malformed or over its bound; the reason goes to standard error, which
 * is the job's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/prctl.h>
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

/* Read exactly @len bytes from fd 0 into @buf: 0, or -1 with errno (EPIPE:
 * end of file first). */
static int read_exactly(char *buf, size_t len)
{
    size_t n = 0;

    while (n < len) {
        ssize_t k = read(0, buf + n, len - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EPIPE;
            return -1;
        }
        n += (size_t)k;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static char buf[BERTH_BUNDLE_SLOT_ARGV_MAX + 1];
    static char *args[BERTH_BUNDLE_SLOT_ARGC_MAX + 1];
    struct stat st;
    size_t n, argn = 0, i;
    uint32_t len;
    char more;
    int null;

    (void)argv;
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        return refuse("cannot make itself non-dumpable");
    if (argc != 1) {
        fputs("usage: berth-slot-init (the process of a berth warm slot; takes no arguments)\n", stderr);
        return 2;
    }
    if (fstat(0, &st) < 0 || !S_ISSOCK(st.st_mode))
        return refuse("not a socket");
    if (read_exactly((char *)&len, sizeof(len)) < 0)
        return refuse(errno == EPIPE ? "closed before a job claimed the slot" : strerror(errno));
    if (len == 0 || len > BERTH_BUNDLE_SLOT_ARGV_MAX)
        return refuse("a length out of bounds");
    n = len;
    if (read_exactly(buf, n) < 0)
        return refuse(errno == EPIPE ? "shorter than its length" : strerror(errno));
    for (;;) {
        ssize_t k = read(0, &more, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k != 0)
            return refuse(k > 0 ? "longer than its length" : strerror(errno));
        break;
    }
    null = open("/dev/null", O_RDWR | O_NOCTTY);
    if (null < 0 || dup2(null, 0) < 0)
        return refuse("cannot put /dev/null on standard input");
    if (null != 0)
        close(null);
    if (buf[n - 1] != '\0' || buf[0] == '\0')
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
