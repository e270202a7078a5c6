/* SPDX-License-Identifier: MIT */
/*
 * berth-probe -- the program live qualification runs inside real sandboxes
 * (qualify/probes.h).  Statically linked, so it is the whole root filesystem of a
 * probe job.  Each subcommand checks one isolation property from the inside
 * and prints one line: "PASS <what>" (exit 0) or "FAIL <what>" (exit 1).
 * The ones that must be stopped from outside (sleep, ignore-term, flood)
 * never end on their own.
 *
 *   identity                 uid and gid are not 0; no effective, permitted
 *                            or ambient capability (/proc/self/status)
 *   rootfs                   "/" is mounted read-only and creating a file in
 *                            it fails
 *   scratch BYTES            writing to /tmp stops with ENOSPC after at most
 *                            BYTES (plus one 64 KiB write)
 *   network TCP_PORT UDP_PORT  only "lo" exists; a TCP connect to
 *                            127.0.0.1:TCP_PORT and a DNS query over UDP to
 *                            127.0.0.1:UDP_PORT both fail (the host listens on
 *                            those ports of its own loopback)
 *   pids LIMIT               fork stops with EAGAIN before LIMIT processes
 *   fork-exit TOKEN          leaves a detached "sleep TOKEN" and exits 0
 *   sleep TOKEN              sleeps until killed
 *   ignore-term TOKEN        ignores SIGTERM, starts a "sleep TOKEN" child
 *                            and sleeps until killed
 *   flood                    writes to stdout until killed
 *   inputs PATH CONTENT      PATH holds exactly CONTENT; writing it,
 *                            creating a file beside it or in /inputs,
 *                            removing or renaming it all fail, and its
 *                            content is intact afterwards
 *   outputs PATH CONTENT BYTES  writes CONTENT to PATH (a declared
 *                            output), then fills /tmp/outputs until ENOSPC,
 *                            which must come within BYTES (plus one 64 KiB
 *                            write), and removes the filler again
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static int result(int ok, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int result(int ok, const char *what, const char *fmt, ...)
{
    va_list ap;

    printf("%s %s: ", ok ? "PASS" : "FAIL", what);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    return ok ? 0 : 1;
}

static int identity(void)
{
    char line[256];
    unsigned long long eff = 1, prm = 1, amb = 0;
    FILE *f = fopen("/proc/self/status", "re");

    if (!f)
        return result(0, "identity", "cannot read /proc/self/status: %s", strerror(errno));
    while (fgets(line, sizeof(line), f)) {
        sscanf(line, "CapEff: %llx", &eff);
        sscanf(line, "CapPrm: %llx", &prm);
        sscanf(line, "CapAmb: %llx", &amb);
    }
    fclose(f);
    gid_t groups[64];
    int n = getgroups(64, groups);

    if (getuid() == 0 || geteuid() == 0 || getgid() == 0 || getegid() == 0)
        return result(0, "identity", "running as uid %u gid %u", (unsigned)geteuid(), (unsigned)getegid());
    if (n < 0)
        return result(0, "identity", "cannot read the supplementary groups: %s", strerror(errno));
    for (int k = 0; k < n; k++)
        if (groups[k] == 0)
            return result(0, "identity", "gid 0 is a supplementary group");
    if (eff || prm || amb)
        return result(0, "identity", "capabilities effective %llx permitted %llx ambient %llx", eff, prm, amb);
    return result(1, "identity", "uid %u gid %u, no capabilities", (unsigned)geteuid(), (unsigned)getegid());
}

static int rootfs(void)
{
    char dev[256], dir[256], type[64], opts[512];
    int ro = -1, fd;
    FILE *f = fopen("/proc/mounts", "re");

    if (!f)
        return result(0, "rootfs", "cannot read /proc/mounts: %s", strerror(errno));
    while (fscanf(f, "%255s %255s %63s %511s %*d %*d", dev, dir, type, opts) == 4)
        if (strcmp(dir, "/") == 0)
            ro = strncmp(opts, "ro", 2) == 0 && (opts[2] == ',' || opts[2] == '\0');
    fclose(f);
    fd = open("/berth-probe-write", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0)
        return result(0, "rootfs", "created /berth-probe-write in the root filesystem");
    if (ro != 1)
        return result(0, "rootfs", "\"/\" is not mounted read-only (%s)", ro < 0 ? "not in /proc/mounts" : opts);
    return result(1, "rootfs", "\"/\" mounted ro; create failed: %s", strerror(errno));
}

/* Write to @path until a write fails or more than @limit plus one 64 KiB
 * write went in; the file is removed again.  Returns the bytes written,
 * -1 when @path cannot be created; *@ret_err is the errno that stopped it
 * (0: none did). */
static long long fill(const char *path, long long limit, int *ret_err)
{
    static char buf[65536];
    long long total = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    *ret_err = 0;
    if (fd < 0)
        return -1;
    memset(buf, 'x', sizeof(buf));
    for (;;) {
        ssize_t n = write(fd, buf, sizeof(buf));
        if (n < 0) {
            *ret_err = errno;
            break;
        }
        total += n;
        if (total > limit + (long long)sizeof(buf))
            break;
    }
    close(fd);
    unlink(path);
    return total;
}

static int scratch(long long limit)
{
    int err;
    long long total = fill("/tmp/berth-probe-fill", limit, &err);

    if (total < 0)
        return result(0, "scratch", "cannot create a file in /tmp: %s", strerror(errno));
    if (err != ENOSPC)
        return result(0, "scratch", "wrote %lld bytes of a %lld byte scratch; stopped by %s", total, limit,
                      err ? strerror(err) : "nothing");
    return result(1, "scratch", "ENOSPC after %lld of %lld bytes", total, limit);
}

/* 1 when "lo" is the only interface, 0 when there are others, -1 when they
 * cannot be listed (a failure: the probe cannot vouch for anything then). */
static int only_lo(char *names, size_t size)
{
    struct if_nameindex *list = if_nameindex(), *i;
    int only = 1, n = 0;

    names[0] = '\0';
    if (!list)
        return -1;
    for (i = list; i->if_index != 0 && i->if_name; i++, n++) {
        if (strcmp(i->if_name, "lo") != 0)
            only = 0;
        if (names[0])
            strncat(names, " ", size - strlen(names) - 1);
        strncat(names, i->if_name, size - strlen(names) - 1);
    }
    if_freenameindex(list);
    return n == 0 ? -1 : only;
}

static int network(int tcp_port, int udp_port)
{
    /* A DNS query for "berth.invalid" A IN, id 0x4242. */
    static const unsigned char query[] = {0x42, 0x42, 1, 0,   0,   1,   0,   0,   0,   0,   0, 0, 5, 'b', 'e', 'r',
                                          't',  'h',  7, 'i', 'n', 'v', 'a', 'l', 'i', 'd', 0, 0, 1, 0,   1};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {.tv_sec = 2};
    char names[512], reply[512];
    int s, r, only = only_lo(names, sizeof(names));

    if (only < 0)
        return result(0, "network", "cannot list the network interfaces");
    if (only != 1)
        return result(0, "network", "interfaces other than lo: %s", names);
    s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return result(0, "network", "cannot create a TCP socket: %s", strerror(errno));
    a.sin_port = htons((unsigned short)tcp_port);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    r = connect(s, (struct sockaddr *)&a, sizeof(a));
    close(s);
    if (r == 0)
        return result(0, "network", "TCP connect to 127.0.0.1:%d succeeded", tcp_port);
    s = socket(AF_INET, SOCK_DGRAM, 0);
    if (s < 0)
        return result(0, "network", "cannot create a UDP socket: %s", strerror(errno));
    a.sin_port = htons((unsigned short)udp_port);
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    r = (int)sendto(s, query, sizeof(query), 0, (struct sockaddr *)&a, sizeof(a));
    if (r >= 0)
        r = (int)recv(s, reply, sizeof(reply), 0);
    close(s);
    if (r > 0)
        return result(0, "network", "a DNS query to 127.0.0.1:%d was answered", udp_port);
    return result(1, "network", "only lo (%s); TCP to 127.0.0.1:%d and DNS to 127.0.0.1:%d failed", names, tcp_port,
                  udp_port);
}

static int pids(long limit)
{
    long n = 0;
    int err = 0;

    for (;;) {
        pid_t pid = fork();
        if (pid < 0) {
            err = errno;
            break;
        }
        if (pid == 0) {
            pause();
            _exit(0);
        }
        if (++n >= limit)
            break;
    }
    signal(SIGTERM, SIG_IGN);
    kill(0, SIGTERM); /* the children die of SIGTERM; this process ignores it */
    while (wait(NULL) > 0)
        ;
    if (n >= limit)
        return result(0, "pids", "forked %ld processes with a limit of %ld", n, limit);
    if (err != EAGAIN)
        return result(0, "pids", "fork stopped after %ld processes with %s, not EAGAIN", n, strerror(err));
    return result(1, "pids", "fork failed with EAGAIN after %ld processes (limit %ld)", n, limit);
}

/* The whole content of @path (at most @size - 1 bytes) into @buf; -1 on error. */
static long read_all(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    long n = 0;
    ssize_t k;

    if (fd < 0)
        return -1;
    while ((k = read(fd, buf + n, size - 1 - (size_t)n)) > 0 && (size_t)n < size - 1)
        n += k;
    close(fd);
    buf[n] = '\0';
    return k < 0 ? -1 : n;
}

/* 1 when creating @path fails (and nothing was created). */
static int create_fails(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

    if (fd < 0)
        return 1;
    close(fd);
    return 0;
}

static int inputs(const char *path, const char *want)
{
    char buf[4096], beside[4200], renamed[4200], dir[4096], *slash;
    int fd;

    if (read_all(path, buf, sizeof(buf)) < 0)
        return result(0, "inputs", "cannot read %s: %s", path, strerror(errno));
    if (strcmp(buf, want) != 0)
        return result(0, "inputs", "%s does not hold the staged content", path);
    fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return result(0, "inputs", "%s could be opened for writing", path);
    }
    snprintf(dir, sizeof(dir), "%s", path);
    slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    snprintf(beside, sizeof(beside), "%s/berth-probe-new", dir);
    snprintf(renamed, sizeof(renamed), "%s.moved", path);
    if (!create_fails(beside))
        return result(0, "inputs", "created %s", beside);
    if (!create_fails("/inputs/berth-probe-new"))
        return result(0, "inputs", "created /inputs/berth-probe-new");
    if (unlink(path) == 0 || rename(path, renamed) == 0)
        return result(0, "inputs", "removed or renamed %s", path);
    if (read_all(path, buf, sizeof(buf)) < 0 || strcmp(buf, want) != 0)
        return result(0, "inputs", "%s changed", path);
    return result(1, "inputs", "%s holds the staged bytes; writing, creating beside it and in /inputs, removing "
                               "and renaming failed",
                  path);
}

static int outputs(const char *path, const char *content, long long limit)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), err;
    long long total;

    if (fd < 0 || write(fd, content, strlen(content)) != (ssize_t)strlen(content) || close(fd) < 0)
        return result(0, "outputs", "cannot write the declared output %s: %s", path, strerror(errno));
    total = fill("/tmp/outputs/berth-probe-fill", limit, &err);
    if (total < 0)
        return result(0, "outputs", "cannot create a file in /tmp/outputs: %s", strerror(errno));
    if (err != ENOSPC)
        return result(0, "outputs", "wrote %lld bytes into %lld bytes of outputs; stopped by %s", total, limit,
                      err ? strerror(err) : "nothing");
    return result(1, "outputs", "ENOSPC after %lld of %lld bytes", total, limit);
}

static void run_sleep(const char *self, const char *token, int detach)
{
    pid_t pid = fork();

    if (pid == 0) {
        if (detach)
            setsid();
        execl(self, self, "sleep", token, (char *)NULL);
        _exit(127);
    }
}

int main(int argc, char **argv)
{
    const char *cmd = argc > 1 ? argv[1] : "";

    if (strcmp(cmd, "identity") == 0 && argc == 2)
        return identity();
    if (strcmp(cmd, "rootfs") == 0 && argc == 2)
        return rootfs();
    if (strcmp(cmd, "scratch") == 0 && argc == 3)
        return scratch(atoll(argv[2]));
    if (strcmp(cmd, "network") == 0 && argc == 4)
        return network(atoi(argv[2]), atoi(argv[3]));
    if (strcmp(cmd, "pids") == 0 && argc == 3)
        return pids(atol(argv[2]));
    if (strcmp(cmd, "fork-exit") == 0 && argc == 3) {
        run_sleep(argv[0], argv[2], 1);
        return result(1, "fork-exit", "left a detached child behind");
    }
    if (strcmp(cmd, "sleep") == 0 && argc == 3) {
        for (;;)
            pause();
    }
    if (strcmp(cmd, "ignore-term") == 0 && argc == 3) {
        signal(SIGTERM, SIG_IGN);
        run_sleep(argv[0], argv[2], 0);
        printf("sleeping, SIGTERM ignored\n");
        fflush(stdout);
        for (;;)
            pause();
    }
    if (strcmp(cmd, "flood") == 0 && argc == 2) {
        static char buf[4096];
        memset(buf, 'x', sizeof(buf));
        for (;;)
            if (write(1, buf, sizeof(buf)) < 0 && errno != EINTR)
                return 1;
    }
    if (strcmp(cmd, "inputs") == 0 && argc == 4)
        return inputs(argv[2], argv[3]);
    if (strcmp(cmd, "outputs") == 0 && argc == 5)
        return outputs(argv[2], argv[3], atoll(argv[4]));
    fprintf(stderr, "usage: berth-probe identity|rootfs|scratch BYTES|network TCP UDP|pids LIMIT|\n"
                    "                   fork-exit TOKEN|sleep TOKEN|ignore-term TOKEN|flood|\n"
                    "                   inputs PATH CONTENT|outputs PATH CONTENT BYTES\n"
                    "(run inside a sandbox by live qualification; see berthctl qualify --help)\n");
    return 2;
}
