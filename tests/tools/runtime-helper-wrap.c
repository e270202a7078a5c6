/* SPDX-License-Identifier: MIT */
/*
 * runtime-helper-wrap.c -- a test tool: an OCI runtime that is the real one
 * plus one helper process, so that the tests decide when a runtime helper
 * dies (the role runsc-gofer plays, plugins/runtime-oci/children.h).
 *
 *   runtime-helper-wrap ARGS...
 *
 * runs RUNTIME_HELPER_WRAP_RUNTIME (default /usr/bin/runsc) with ARGS.
 * When ARGS create a container (they name --bundle: `create`, `run`), it
 * first forks a helper that waits until it is killed, in the caller's
 * session, with its descriptors on /dev/null: when the runtime's command
 * exits, the helper is left to the shim like runsc-gofer, started before
 * the sandbox.  Its command line is this program's as it was started (the
 * path the shim ran, then ARGS), so a test finds it by that path and the
 * container id.  The shim passes its own environment on, so the runtime is
 * normally the default.
 *
 * The shim runs the runtime from its pinned descriptor (execveat), which a
 * script cannot be; hence a program.  Exit status: the runtime's, or 127
 * with one line on standard error when it cannot be run.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/syscall.h>

static int creates_container(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--bundle") == 0 || strncmp(argv[i], "--bundle=", 9) == 0)
            return 1;
    return 0;
}

/* The helper: nothing inherited but /dev/null, waiting for its signal. */
static void helper(void)
{
    int null = open("/dev/null", O_RDWR);

    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
        _exit(1);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    const char *runtime = getenv("RUNTIME_HELPER_WRAP_RUNTIME");

    if (!runtime || !*runtime)
        runtime = "/usr/bin/runsc";
    if (creates_container(argc, argv)) {
        pid_t pid = fork();

        if (pid < 0) {
            perror("runtime-helper-wrap: fork");
            return 127;
        }
        if (pid == 0)
            helper();
    }
    argv[0] = (char *)runtime;
    execv(runtime, argv);
    fprintf(stderr, "runtime-helper-wrap: cannot run %s: %m\n", runtime);
    return 127;
}
