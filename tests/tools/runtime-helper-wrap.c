/* SPDX-License-Identifier: MIT */
/*
 * runtime-helper-wrap.c -- a test tool: an OCI runtime that is the real one
 * plus one helper process, so that the tests decide when a runtime helper
 * dies (the role runsc-gofer plays, plugins/runtime-oci/children.h).
 *
 *   runtime-helper-wrap ARGS...
 *
 * runs /usr/bin/runsc with ARGS.  When ARGS create a container (they name
 * --bundle: `create`, `run`), it first forks a helper in the caller's
 * session, with its descriptors on /dev/null, and writes its pid to the
 * file "PID_FILE.helper" beside the runtime's --pid-file: when the runtime's
 * command exits, the helper is left to the shim like runsc-gofer, started
 * before the sandbox.  The helper waits until it is killed, and exits 0 on
 * its own after 10 minutes.
 *
 * Installed under a name that ends in "-exiting", the helper is one that
 * has begun to exit: its main thread has exited while a second thread
 * waits, so it reads as exiting (a zombie leader, PF_EXITING) but cannot be
 * reaped until it is killed -- the state a killed runsc-gofer is in while
 * its threads exit, when its sandbox may already have ended.
 *
 * It also writes "PID_FILE.exe": the target of /proc/self/exe, the seals
 * of that file (fcntl F_GET_SEALS, -1 when it is not a memfd) and its inode
 * number, one line ("TARGET seals=N ino=N"), so that a test sees what the
 * shim ran: a runtime this small runs from a sealed copy, the one berthd
 * made for its backend (plugins/runtime-oci/ocicfg.h).
 *
 * The shim runs the runtime from its pinned descriptor (execveat), which a
 * script cannot be; hence a program.  Exit status: the runtime's, or 127
 * with one line on standard error when it cannot be run.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/syscall.h>

#define RUNTIME "/usr/bin/runsc"
#define HELPER_LIFE_S 600

/* The value of --pid-file in @argv, or NULL. */
static const char *pid_file(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--pid-file") == 0 && i + 1 < argc)
            return argv[i + 1];
        if (strncmp(argv[i], "--pid-file=", 11) == 0)
            return argv[i] + 11;
    }
    return NULL;
}

static int creates_container(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--bundle") == 0 || strncmp(argv[i], "--bundle=", 9) == 0)
            return 1;
    return 0;
}

static void *wait_then_exit(void *arg)
{
    (void)arg;
    sleep(HELPER_LIFE_S);
    _exit(0);
}

/* Whether this program was installed as the "-exiting" variant: by the
 * path it was run as (@argv0, the pinned path; /proc/self/exe names the
 * shim's sealed copy of it, plugins/runtime-oci/ocicfg.h). */
static int exiting_variant(const char *argv0)
{
    size_t n = strlen(argv0);

    return n > 8 && strcmp(argv0 + n - 8, "-exiting") == 0;
}

/* "PID_FILE.exe": what /proc/self/exe is, and its seals. */
static void record_exe(const char *pidfile)
{
    char self[4096], path[4096], line[4200];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    struct stat st = {0};
    int fd, seals, len;

    if (!pidfile || n < 0 || snprintf(path, sizeof(path), "%s.exe", pidfile) >= (int)sizeof(path))
        return;
    self[n] = '\0';
    fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    seals = fd < 0 ? -1 : fcntl(fd, F_GET_SEALS);
    if (fd >= 0) {
        if (fstat(fd, &st) < 0)
            st.st_ino = 0;
        close(fd);
    }
    len = snprintf(line, sizeof(line), "%s seals=%d ino=%llu\n", self, seals, (unsigned long long)st.st_ino);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)len) != len)
            perror("runtime-helper-wrap: write");
        close(fd);
    }
}

/* The helper: nothing inherited but /dev/null; its pid written down. */
static void helper(const char *pidfile, int exiting)
{
    char path[4096], line[32];
    int null = open("/dev/null", O_RDWR), fd, len;
    pthread_t t;

    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
        _exit(1);
    syscall(SYS_close_range, 3U, ~0U, 0U);
    if (pidfile && snprintf(path, sizeof(path), "%s.helper", pidfile) < (int)sizeof(path)) {
        len = snprintf(line, sizeof(line), "%d\n", (int)getpid());
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || write(fd, line, (size_t)len) != len || close(fd) < 0)
            _exit(1);
    }
    if (pthread_create(&t, NULL, wait_then_exit, NULL) != 0)
        _exit(1);
    if (exiting)
        pthread_exit(NULL);
    for (;;)
        pause();
}

int main(int argc, char **argv)
{
    if (creates_container(argc, argv)) {
        int exiting = exiting_variant(argv[0]);
        pid_t pid;

        record_exe(pid_file(argc, argv));
        pid = fork();

        if (pid < 0) {
            perror("runtime-helper-wrap: fork");
            return 127;
        }
        if (pid == 0)
            helper(pid_file(argc, argv), exiting);
    }
    argv[0] = (char *)RUNTIME;
    execv(RUNTIME, argv);
    fprintf(stderr, "runtime-helper-wrap: cannot run %s: %m\n", RUNTIME);
    return 127;
}
