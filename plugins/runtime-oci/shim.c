/* SPDX-License-Identifier: MIT */
/*
 * berth-oci-shim -- supervises one job's OCI container for the runtime-oci
 * plugin, outside berthd, so that a job survives a berthd restart and its
 * exit status, output and deadline never depend on berthd being up.
 *
 *   berth-oci-shim supervise JOBDIR   (started by the plugin's start())
 *   berth-oci-shim provision SLOTDIR  (started by the plugin's provision())
 *   berth-oci-shim cleanup JOBDIR     (the plugin, when no shim holds the lock)
 *   berth-oci-shim contained JOBDIR   (the job's unit, for a contained backend)
 *
 * contained: supervise, run by berth-contained as the main process of the
 * job's unit (docs/containment.md) instead of a detached child of berthd.
 * It does not fork: the unit lives as long as it does.  It answers start()
 * on the job directory's "sync" FIFO instead of fd 3, refuses a second
 * launch of the same job (the "launched" marker), checks that it runs in
 * the "supervisor" group of berth-job@<id>.service, writes the job's
 * limits into the unit's payload group ($BERTH_PAYLOAD_CGROUP), runs every
 * runtime command in that group, and after `create` checks that the
 * runtime's processes are there (the runtime itself must make no cgroup of
 * its own: runsc --ignore-cgroups, crun --cgroup-manager=disabled).  It
 * mounts the outputs tmpfs itself, in a mount namespace of its own, and
 * leaves checked copies of the captured outputs in the job directory
 * (jobdir.h "captured").  SIGTERM (its unit being stopped) ends the job,
 * recorded failed with reason "unit_stopped".
 *
 * provision: supervise for a warm slot (slots.c, docs/warm-slots.md):
 * `create` from slot.json with a socket as the container's stdin, `start`
 * (berth-slot-init waits on that socket), "created" on fd 3, then the slot is
 * held until "claim" on the control FIFO (the job's argv goes down the socket,
 * and from then on it is supervised as a job, answering on the slot's
 * "claimed" FIFO), "discard", its not_after, or the death of its sandbox.
 *
 * supervise: detaches (fork, setsid), takes JOBDIR/lock for its whole life,
 * becomes a child subreaper (so the container's init, re-parented when the
 * runtime's `create` exits, is its child and its exit status is exact),
 * runs `run --detach` with the job's stdout and stderr on two pipes (a
 * contained job: `create`, its checks, then `start`), tells the plugin on
 * fd 3, and then waits: for the init to exit, for the
 * output bound, for the receipt's deadline (a CLOCK_REALTIME timerfd) and for
 * "cancel" on the control FIFO.  Each of the last three kills everything
 * with `kill --all ID KILL`.  At the end it reaps what is left, runs
 * `delete --force`, confirms that the container is gone, and writes
 * result.json atomically; for a job that declares no outputs, result.json
 * comes as soon as no process of the job is left (helpers reaped, cgroup
 * drained), before `delete`, marked by "teardown" until the rest is done.
 * See jobdir.h for the files.
 *
 * cleanup of a job whose "teardown" marker is still there (its shim died
 * after such an early result): delete the container and remove the
 * marker; the result stands.
 *
 * cleanup: for a job whose shim is gone without a result (killed, or the
 * machine rebooted): kill and delete the container, then record the job
 * failed with reason "runtime_lost".
 *
 * Honest statuses: the job fails with "runtime_lost" when a runtime process
 * dies under it (runsc-sandbox killed by a signal, runsc-gofer ending while
 * the job runs or already dying when the sandbox ended, or the shim itself:
 * cleanup), and exits with reason "oom"
 * when its cgroup's memory controller counted an OOM kill.  Before
 * `create` the receipt, config.json, the staged inputs and the outputs
 * tmpfs are checked (binding.h, outmount.h); after `delete` the job's
 * cgroup is drained (cgroup.h), and the declared outputs of a job that
 * exited on its own are checked and hashed into result.json (outcheck.h).
 *
 * The runtime's global flags are passed to every subcommand (runsc needs
 * them all each time).  With "unmount" in shim.json, the shim first enters a
 * private mount namespace and detaches those mounts (crun refuses a hybrid
 * cgroup layout while /sys/fs/cgroup/unified is mounted).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/pidfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "canon.h"
#include "cgroup.h"
#include "children.h"
#include "cgroup2.h"
#include "clock.h"
#include "fsutil.h"
#include "jobdir.h"
#include "jsonobj.h"
#include "macro.h"
#include "ocicfg.h"
#include "outcheck.h"
#include "outmount.h"
#include "runstate.h"
#include "binding.h"
#include "bundle.h"

#define KILL_RETRY_NS (2LL * 1000000000LL) /* kill --all again while the init lives */
#define DRAIN_NS (2LL * 1000000000LL)      /* output still read after the init exited */
#define REAP_NS (5LL * 1000000000LL)       /* waiting for the runtime's helpers (gofer) */
#define COMMAND_TIMEOUT_NS (60LL * 1000000000LL)
#define DRAIN_CGROUP_NS (2LL * 1000000000LL) /* cgroup members killed after delete */
#define HELPERS_MAX 8
#define HANDOFF_NS (5LL * 1000000000LL) /* a slot's init reading its job's argv, at most */

extern char **environ;

struct shim {
    int jobfd;
    const char *jobdir;
    json_t *cfg;
    const char *id, *bundle;
    size_t n_prefix;
    const char *runtime_root; /* the value of --root in the prefix, or NULL */
    const char **argv;        /* runtime prefix + subcommand arguments */
    int runtime_fd;           /* the runtime binary, checked against its pin: its sealed copy, or the file */
    int runtime_file_fd;      /* the checked file when runtime_fd is its copy (the fallback), else -1 */
    int given_copy_fd;        /* the backend's sealed copy runtime-oci handed over (jobdir.h), else -1 */
    const char *given_copy_problem; /* why a copy named in the environment was not taken, else NULL */
    char given_copy_digest[BERTH_DIGEST_BUFSZ]; /* the pin's digest the given copy was made for */
    int64_t deadline_ns, output_bytes, written;
    int out_fd, err_fd; /* the capture files */
    int log_fd;         /* runtime.log */
    int sigfd;          /* signalfd of SIGCHLD and the termination signals, once supervise set it up */
    pid_t init_pid;
    bool init_exited;
    bool end_judged;     /* judge_end() ran: later deaths of helpers are the teardown's */
    bool children_stuck; /* judge_end() waited REAP_NS in vain for every child to end */
    int init_status;
    const char *state, *reason;       /* a verdict the shim reached itself */
    int64_t started_at;               /* CLOCK_REALTIME; -1 = not started, or the clock could not be read */
    bool killed;                      /* kill --all was run */
    int64_t kill_again_at;            /* CLOCK_MONOTONIC deadline (clock.h): kill again while the init lives */
    int64_t drain_until;              /* CLOCK_MONOTONIC deadline: output is read until then after the init exited */
    const char *cgroup;               /* linux.cgroupsPath of the job (cgroup.h), or NULL */
    bool gvisor;                      /* the init is runsc-sandbox, not the job's own process */
    pid_t helpers[HELPERS_MAX];       /* the runtime's other processes, children of the shim (runsc-gofer) */
    bool helper_exiting[HELPERS_MAX]; /* when the init was reaped: that helper had begun to exit */
    size_t n_helpers;
    json_t *dispatch;          /* dispatch.json, once check_binding() read it */
    struct berth_job *job;     /* its sealed job */
    json_t *outputs;           /* result.json "outputs" (an array) */
    json_t *output_error;      /* result.json "output_error", or NULL */
    const json_t *create_args; /* shim.json "create_args", or NULL */
    const json_t *contained;   /* shim.json "contained", or NULL */
    char *payload;             /* contained: the unit's payload group (below the cgroup2 mount) */
    int payload_procs;         /* contained: its cgroup.procs, which the runtime's create joins */
    bool no_limit[3];          /* contained: limit_files[i] cannot be set (when_delegated) */
    bool stopping;             /* contained: SIGTERM came, the unit is being stopped */
    int create_stdin;          /* a slot: what `create` gets as stdin (the init's end of the handoff), or -1 */
    int handoff_fd;            /* a slot: the shim's end of the handoff socket until the claim, or -1 */
};

static void logf_shim(struct shim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_shim(struct shim *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    n = snprintf(line, sizeof(line), "berth-oci-shim[%d] %s: ", (int)getpid(), s->id ? s->id : "?");
    va_start(ap, fmt);
    n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (s->log_fd >= 0)
        (void)berth_write_all(s->log_fd, line, (size_t)n);
}

/* Wait until @fd has @events (POLLIN: a pidfd or the signalfd readable;
 * POLLOUT: the handoff socket writable), or until @until (CLOCK_MONOTONIC,
 * clock.h) passed, at most 1 s; without @fd (-1), 5 ms. */
static void wait_fd(int fd, short events, int64_t until)
{
    struct pollfd p = {.fd = fd, .events = events};
    int64_t now = 0, ms = 5;

    if (fd >= 0 && berth_now_ns(CLOCK_MONOTONIC, &now, NULL) == 0)
        ms = until > now ? (until - now + 999999) / 1000000 : 0;
    if (ms > 1000)
        ms = 1000;
    (void)poll(&p, fd >= 0 ? 1 : 0, (int)ms);
}

/* Run the runtime with @args appended to its prefix; stdio as given (-1 =
 * /dev/null, and stderr -1 = runtime.log).  Returns the wait status, or -errno. */
static int run_runtime(struct shim *s, const char *const *args, int out, int err)
{
    size_t n = s->n_prefix, i;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, COMMAND_TIMEOUT_NS);
    _cleanup_close_ int pidfd = -1;
    bool killed = false;
    pid_t pid;
    int st;

    for (i = 0; args[i]; i++)
        s->argv[n++] = args[i];
    s->argv[n] = NULL;
    /* The runtime runs from the descriptor whose content was checked against
     * its pin (execveat), never again by path: replacing the file at the path
     * later changes nothing for this job. */
    pid = fork();
    if (pid < 0) {
        logf_shim(s, "cannot run %s %s: %m", s->argv[0], args[0]);
        return -errno;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        sigset_t none;
        char msg[256];

        /* The runtime (and what it starts) gets default signal handling, not the shim's mask. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (null < 0 || dup2(streq(args[0], "create") && s->create_stdin >= 0 ? s->create_stdin : null, 0) < 0 ||
            dup2(out >= 0 ? out : null, 1) < 0 || dup2(err >= 0 ? err : s->log_fd, 2) < 0)
            _exit(127);
        /* A contained job's create runs in the unit's payload group, and
         * so does everything it starts (the sandbox): never anywhere else.
         * The runtime's other commands start nothing that stays and run
         * in the shim's own group, so that the job's limits, written after
         * create, bound the job alone. */
        if (s->payload_procs >= 0 && streq(args[0], "create") && write(s->payload_procs, "0", 1) != 1) {
            snprintf(msg, sizeof(msg), "berth-oci-shim: cannot join the payload group: %s\n", strerror(errno));
            (void)!write(2, msg, strlen(msg));
            _exit(127);
        }
        syscall(SYS_execveat, s->runtime_fd, "", (char *const *)s->argv, environ, AT_EMPTY_PATH);
        /* A security module may let the file run but not a memfd; and a
         * copy someone holds open for writing (its owner or root, after a
         * chmod: it is 0555) is busy (ETXTBSY), though it cannot be written.
         * Said in runtime.log, whatever this command's stderr is. */
        if (s->runtime_file_fd >= 0 && (errno == EACCES || errno == EPERM || errno == ENOEXEC || errno == ETXTBSY)) {
            snprintf(msg, sizeof(msg), "berth-oci-shim: the sealed copy of %s cannot be executed (%s); running the "
                     "checked file\n", s->argv[0], strerror(errno));
            (void)!write(s->log_fd >= 0 ? s->log_fd : 2, msg, strlen(msg));
            syscall(SYS_execveat, s->runtime_file_fd, "", (char *const *)s->argv, environ, AT_EMPTY_PATH);
        }
        snprintf(msg, sizeof(msg), "berth-oci-shim: cannot execute the runtime %s: %s\n", s->argv[0], strerror(errno));
        (void)!write(2, msg, strlen(msg));
        _exit(127);
    }
    /* Only this pid: the container's init and helpers are reaped elsewhere.
     * Its pidfd turns readable when it exits (pidfd_open(2)), so the wait
     * ends at its exit, not at the next tick of a poll loop; without one
     * (pidfd_open fails only on a kernel before 5.3) it naps 5 ms a turn. */
    pidfd = pidfd_open(pid, 0);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -errno;
        if (!killed && berth_deadline_passed(CLOCK_MONOTONIC, until)) {
            logf_shim(s, "%s %s did not finish in %lld s; killing it", s->argv[0], args[0],
                      (long long)(COMMAND_TIMEOUT_NS / BERTH_NS_PER_SEC));
            kill(pid, SIGKILL);
            killed = true;
        }
        wait_fd(pidfd, POLLIN, killed ? berth_deadline_ns(CLOCK_MONOTONIC, BERTH_NS_PER_SEC) : until);
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        logf_shim(s, "%s %s: %s %d", s->argv[0], args[0], WIFEXITED(st) ? "exit status" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    return st;
}

static bool runtime_ok(struct shim *s, const char *const *args, int out, int err)
{
    int st = run_runtime(s, args, out, err);
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void kill_all(struct shim *s)
{
    const char *args[] = {"kill", "--all", s->id, "KILL", NULL};

    (void)run_runtime(s, args, -1, -1);
    /* A contained job's runtime makes no cgroup of its own, and crun's
     * "kill --all" finds the container's processes through it: the
     * payload group's cgroup.kill reaches every one of them (and the
     * runtime's helpers), whatever the runtime could do. */
    if (s->payload) {
        struct berth_error err = BERTH_ERROR_INIT;
        int r = berth_cgroup2_kill(s->payload, 0, &err);
        if (r < 0 && r != -ETIMEDOUT)
            logf_shim(s, "cannot kill the payload group: %s", err.message);
    }
    s->killed = true;
    s->kill_again_at = berth_deadline_ns(CLOCK_MONOTONIC, KILL_RETRY_NS);
}

/* Whether a contained job's unit is being stopped: a SIGTERM came (looked
 * for in the signal descriptor's queue, whose SIGCHLDs the callers' waitpid
 * loops do not need). */
static bool unit_stopping(struct shim *s)
{
    struct signalfd_siginfo si;

    if (!s->contained || s->sigfd < 0)
        return false;
    while (!s->stopping && read(s->sigfd, &si, sizeof(si)) == sizeof(si))
        if (si.ssi_signo == SIGTERM)
            s->stopping = true;
    return s->stopping;
}

/* Whether the init has ended, or has begun to: its exit status is
 * waiting (waitid(2) WNOWAIT: it stays for child_ended()) or was already
 * taken, or it is a zombie whose other threads are still exiting (waitid
 * reports a thread group leader only once all of them are gone; the
 * sandbox's children come to the shim before that). */
static bool init_ended(struct shim *s)
{
    struct oci_proc_stat st;
    siginfo_t si = {0};

    if (s->init_exited)
        return true;
    if (s->init_pid <= 0)
        return false;
    if (waitid(P_PID, (id_t)s->init_pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0)
        return errno == ECHILD;
    if (si.si_pid == s->init_pid)
        return true;
    return oci_proc_stat(s->init_pid, &st) == 0 ? st.state == 'Z' || st.state == 'X' : true;
}

/* Whether @pid is a child of the shim not yet reaped (alive or a zombie):
 * a pid the runtime read back from its pid file may belong to a process
 * the runtime reaped itself (runsc's `run` destroys a sandbox that failed
 * to start), and then to anything. */
static bool own_child(pid_t pid)
{
    siginfo_t si = {0};

    return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

/* Note that child @w ended with wait status @st: the init's is the job's. */

static void child_ended(struct shim *s, pid_t w, int st)
{
    for (size_t i = 0; i < s->n_helpers; i++) {
        if (w != s->helpers[i])
            continue;
        s->helpers[i] = 0;
        /* A runtime process killed (or failing) while the job runs and nobody
         * stopped it: the sandbox is lost.  runsc-gofer exits 0 when the
         * sandbox shuts down, which may be seen before the sandbox's own exit.
         * The sandbox's own processes (gVisor's ptrace stubs) are never
         * helpers (note_helpers()).  A sandbox ends as soon as its killed
         * gofer has closed its files, which is before the kernel lets the
         * shim reap the gofer (its other threads are still exiting): so a
         * helper that had begun to exit when the init was reaped, and then
         * turns out to have been killed by a signal, is the runtime's death
         * too, if the init's end is not judged yet.  One killed only after
         * the init ended (a unit stopped after its job ended) is not. */
        bool lost = s->init_exited ? !s->end_judged && s->helper_exiting[i] && WIFSIGNALED(st)
                                   : !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
        if (lost && !s->state && !s->killed) {
            logf_shim(s, "runtime process %d ended (%s %d) %s", (int)w, WIFEXITED(st) ? "exit status" : "signal",
                      WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
                      s->init_exited ? "as the sandbox ended: the sandbox is lost"
                                     : "while the job ran: killing the job");
            s->state = "failed";
            /* The unit's stop signals every process of it, the runtime's too. */
            s->reason = unit_stopping(s) ? "unit_stopped" : "runtime_lost";
            if (!s->init_exited)
                kill_all(s);
        }
    }
    if (w == s->init_pid && !s->init_exited) {
        for (size_t i = 0; i < s->n_helpers; i++) {
            struct oci_proc_stat hs;
            s->helper_exiting[i] = s->helpers[i] > 0 && (oci_proc_stat(s->helpers[i], &hs) != 0 || hs.exiting);
        }
        s->init_exited = true;
        s->init_status = st;
        s->drain_until = berth_deadline_ns(CLOCK_MONOTONIC, DRAIN_NS);
    }
}

/* Reap every child that has exited; notes the init's status. */
static void reap_children(struct shim *s)
{
    int st;
    pid_t w;

    while ((w = waitpid(-1, &st, WNOHANG)) > 0)
        child_ended(s, w, st);
}

/* Wait (bounded) until no child is left: the runtime's helpers exit after
 * the sandbox.  True when none is left. */
static bool reap_all(struct shim *s)
{
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, REAP_NS);

    for (;;) {
        struct signalfd_siginfo si;
        int st;
        pid_t w;

        /* Queued signals are read before waitpid(): a SIGCHLD for a child
         * that exits after it leaves the signalfd readable for the wait
         * below; a unit's SIGTERM is noted (unit_stopping()). */
        while (s->sigfd >= 0 && read(s->sigfd, &si, sizeof(si)) == sizeof(si))
            if (si.ssi_signo == SIGTERM && s->contained)
                s->stopping = true;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0)
            child_ended(s, w, st);
        if (w < 0 && errno == ECHILD)
            return true;
        if (berth_deadline_passed(CLOCK_MONOTONIC, until)) {
            logf_shim(s, "helper processes still running after %lld s", (long long)(REAP_NS / BERTH_NS_PER_SEC));
            return false;
        }
        wait_fd(s->sigfd, POLLIN, until);
    }
}

static int write_json(struct shim *s, const char *name, json_t *doc)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    if (!doc)
        return -ENOMEM;
    r = berth_json_serialize(doc, 0, &text, &len, &err);
    json_decref(doc);
    if (r == 0)
        r = berth_publish_at(s->jobfd, name, text, len, 0600, 0, &err);
    if (r < 0 && r != -EEXIST)
        logf_shim(s, "cannot write %s: %s", name, err.message);
    return r;
}

/* @ns as a decimal string (berth_json_ns()); null when negative (unknown). */
static json_t *ns_json(int64_t ns)
{
    return ns < 0 ? json_null() : berth_json_ns(ns);
}

static int write_result(struct shim *s, const char *state, const char *reason, int exit_code)
{
    int64_t finished_at;

    if (berth_now_ns(CLOCK_REALTIME, &finished_at, NULL) < 0)
        finished_at = -1; /* null: berthd records the time it learns of the result */
    return write_json(s, OCI_JOB_RESULT,
                      json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:O*}", "state", state, "exit_code",
                                exit_code >= 0 ? json_integer(exit_code) : json_null(), "reason",
                                reason ? json_string(reason) : json_null(), "started_at", ns_json(s->started_at),
                                "finished_at", ns_json(finished_at), "outputs",
                                s->outputs ? json_incref(s->outputs) : json_array(), "output_error", s->output_error));
}

/* Copy what a pipe has into its capture file, within the combined bound.
 * Returns false at EOF. */
static bool pump(struct shim *s, int pipefd, int filefd)
{
    char buf[65536];
    ssize_t n = read(pipefd, buf, sizeof(buf));

    if (n < 0)
        return errno == EINTR || errno == EAGAIN;
    if (n == 0)
        return false;
    if (s->written + n > s->output_bytes) {
        int64_t room = s->output_bytes - s->written;
        if (room > 0)
            (void)berth_write_all(filefd, buf, (size_t)room);
        s->written = s->output_bytes;
        if (!s->state) {
            logf_shim(s, "output over %lld bytes: killing the job", (long long)s->output_bytes);
            s->state = "failed";
            s->reason = "output_limit";
            kill_all(s);
        }
        return true; /* keep draining (and discarding) until EOF */
    }
    if (berth_write_all(filefd, buf, (size_t)n) < 0)
        logf_shim(s, "cannot record output: %m");
    s->written += n;
    return true;
}

/* Whether a non-blocking pipe has more to read right now. */
static bool drain_more(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

static int read_pid(struct shim *s)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = 32};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    char *end;
    long v;

    if (berth_read_file_at(s->jobfd, OCI_JOB_PIDFILE, &expect, &text, &len, &err) < 0) {
        logf_shim(s, "no pid file: %s", err.message);
        return -ENOENT;
    }
    errno = 0;
    v = strtol(text, &end, 10);
    if (errno || end == text || v <= 1 || v > 1 << 22)
        return -EBADMSG;
    s->init_pid = (pid_t)v;
    return 0;
}

/* Confirm the runtime no longer knows the container (after delete): its
 * state record is gone from the runtime's --root (runstate.h), or, for a
 * runtime given no --root, `state` fails. */
static bool container_absent(struct shim *s)
{
    const char *args[] = {"state", s->id, NULL};
    bool present = true;
    int st, r;

    if (s->runtime_root) {
        r = oci_runstate_present(s->runtime_root, s->id, &present);
        if (r < 0)
            logf_shim(s, "cannot read the runtime's state directory %s: %s", s->runtime_root, strerror(-r));
        return r == 0 && !present;
    }
    st = run_runtime(s, args, -1, s->log_fd);
    return st >= 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void delete_container(struct shim *s)
{
    const char *del[] = {"delete", "--force", s->id, NULL};
    int i;

    for (i = 0; i < 3; i++) {
        (void)run_runtime(s, del, -1, -1);
        if (container_absent(s))
            return;
        kill_all(s);
        reap_all(s);
    }
    logf_shim(s, "the runtime still reports the container after delete");
}

static void sync_line(int fd, const char *line)
{
    if (fd >= 0) {
        (void)berth_write_all(fd, line, strlen(line));
        close(fd);
    }
}

static int open_capture(struct shim *s, const char *name)
{
    int fd = openat(s->jobfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        logf_shim(s, "cannot create %s: %m", name);
    return fd;
}

/* The shim's children other than the init (children.h), into @out; their
 * number, or -1 (logged) when they cannot be listed. */
static int list_children(struct shim *s, pid_t *out, size_t max)
{
    int n = oci_children_list(s->init_pid, out, max);

    if (n < 0)
        logf_shim(s, "cannot list the runtime's processes: %s", strerror(-n));
    return n < 0 ? -1 : n;
}

/* The runtime's processes the shim became parent of when the runtime's
 * `create` (or `run --detach`) exited, besides the init, which is watched
 * on its own: runsc-gofer.  A helper is a child in the shim's own session,
 * where the runtime started it, or one started no later than the init
 * (newer runsc puts the gofer in a session of its own, but starts it
 * before the sandbox); zombies included (a helper that died during `run`
 * is judged when it is reaped).  Not helpers: what comes to the shim from
 * the sandbox's own session, started after it, when the sandbox ends:
 * gVisor's ptrace stubs, which die with it (children.h).  Listed only
 * while the init lives. */
static void note_helpers(struct shim *s)
{
    pid_t kids[HELPERS_MAX], own = getsid(0);
    struct oci_proc_stat init, st;
    int n = list_children(s, kids, HELPERS_MAX);

    s->n_helpers = 0;
    if (n <= 0 || init_ended(s) || oci_proc_stat(s->init_pid, &init) < 0)
        return;
    for (int i = 0; i < n; i++)
        if (oci_proc_stat(kids[i], &st) == 0 && (st.session == own || st.start_ticks <= init.start_ticks))
            s->helpers[s->n_helpers++] = kids[i];
}

/* The init ended: first the runtime's helpers are reaped (bounded), so
 * that one that was already dying with the sandbox is judged as the
 * runtime's death (child_ended()), whichever of the two the kernel handed
 * the shim first.  Then, without a verdict of the shim's own: whose end
 * was it?  The memory controller's oom_kill count of the job's cgroup says
 * whether the memory limit killed it (for gVisor the host kills the whole sandbox,
 * so the count is all it can tell: not which guest process grew).  For
 * gVisor the init is runsc-sandbox, which exits with the guest's status
 * (128 + signal for a signalled guest): a sandbox killed by a signal
 * nobody sent through the runtime is the runtime's death, not the job's. */
static void judge_end(struct shim *s)
{
    int64_t ooms;

    if (!s->init_exited)
        return;
    if (!s->state && s->n_helpers > 0)
        s->children_stuck = !reap_all(s);
    s->end_judged = true;
    if (s->state)
        return;
    ooms = s->cgroup ? oci_cgroup_oom_kills(OCI_CGROUP_ROOT, s->cgroup) : -ENOENT;
    if (ooms > 0) {
        logf_shim(s, "the memory limit killed %lld process(es) of the job", (long long)ooms);
        s->state = "exited";
        s->reason = "oom";
    } else if (s->gvisor && WIFSIGNALED(s->init_status)) {
        logf_shim(s, "runsc-sandbox was killed by signal %d: the sandbox is lost", WTERMSIG(s->init_status));
        s->state = "failed";
        s->reason = "runtime_lost";
    }
}

/* Nothing of the job may be left in its cgroup (cgroup.h): after delete,
 * or before it for an early result.  True when proven (or the job has no
 * cgroup of its own: a contained job's unit is proven by its containment). */
static bool drain_cgroup(struct shim *s)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (s->cgroup && oci_cgroup_drain(OCI_CGROUP_ROOT, s->cgroup, DRAIN_CGROUP_NS, &err) < 0) {
        logf_shim(s, "teardown not proven: %s", err.message);
        return false;
    }
    return true;
}

/* Before create: the outputs tmpfs shim.json announces is mounted, so
 * that nothing the job writes to /tmp/outputs can reach the job directory's
 * own filesystem.  Returns NULL or the reason code the job fails with. */
static const char *check_outputs_mount(struct shim *s)
{
    const json_t *m = json_object_get(s->cfg, "outputs_mount");
    struct statfs fs;
    _cleanup_close_ int rootfd = -1;
    int r;

    if (!m)
        return NULL;
    r = oci_outputs_mounted(s->jobfd, OCI_JOB_OUTPUTS);
    rootfd = r == 1 ? berth_open_beneath(s->jobfd, OCI_JOB_OUTPUTS, O_RDONLY | O_DIRECTORY, 0, NULL) : -1;
    if (rootfd < 0 || fstatfs(rootfd, &fs) < 0 || fs.f_type != TMPFS_MAGIC ||
        (uint64_t)fs.f_blocks * (uint64_t)fs.f_bsize != (uint64_t)json_integer_value(json_object_get(m, "size"))) {
        logf_shim(s, "refusing the job before create: its outputs tmpfs (%s/%s) is not mounted as shim.json says",
                  s->jobdir, OCI_JOB_OUTPUTS);
        return "outputs_unmounted";
    }
    return NULL;
}

/*
 * A contained job's output, once checked and hashed (@digest, @size): a copy
 * in the job directory's "captured" directory (jobdir.h), which is what
 * open_output() hands berthd, since berthd cannot see the outputs tmpfs of
 * the shim's mount namespace.  The copy is made from the checked
 * descriptor, published atomically and hashed again: it is exactly the
 * bytes of @digest, or it is not there.  0, or -errno.
 */
static int copy_output(struct shim *s, int rootfd, const char *rel, uint64_t max, const char *id, const char *digest,
                       uint64_t size)
{
    struct berth_error err = BERTH_ERROR_INIT;
    enum oci_output_problem problem;
    _cleanup_close_ int in = -1, dirfd = -1, out = -1;
    char again[BERTH_DIGEST_BUFSZ], buf[65536], tmp[160];
    uint64_t n = 0, got = 0;
    int r;

    if (mkdirat(s->jobfd, OCI_JOB_CAPTURED, 0700) < 0 && errno != EEXIST)
        return -errno;
    dirfd = berth_open_beneath(s->jobfd, OCI_JOB_CAPTURED, O_RDONLY | O_DIRECTORY, 0, &err);
    if (dirfd < 0)
        return dirfd;
    if ((r = oci_output_open(rootfd, rel, max, &in, &got, &problem)) < 0)
        return r;
    if (got != size)
        return -EIO; /* changed since it was hashed: nothing of the job runs any more, so it cannot */
    snprintf(tmp, sizeof(tmp), "%s~", id); /* '~' is in no output id */
    (void)unlinkat(dirfd, tmp, 0);
    out = openat(dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600); /* read back: the digest */
    if (out < 0)
        return -errno;
    for (r = 0; r == 0 && n < size;) {
        ssize_t k;
        /* The unit's stop gives the shim TimeoutStopSec= to write its
         * result: a large copy gives way (the caller records it). */
        if (unit_stopping(s)) {
            r = -ECANCELED;
            break;
        }
        k = pread(in, buf, sizeof(buf) < size - n ? sizeof(buf) : (size_t)(size - n), (off_t)n);
        if (k <= 0)
            r = k < 0 ? -errno : -EIO;
        else if (berth_write_all(out, buf, (size_t)k) < 0)
            r = -errno;
        else
            n += (uint64_t)k;
    }
    if (r == 0 && fsync(out) < 0)
        r = -errno;
    if (r == 0 && (r = oci_output_digest(out, size, again)) == 0 && !streq(again, digest))
        r = -EIO;
    if (r == 0 && renameat(dirfd, tmp, dirfd, id) < 0)
        r = -errno;
    if (r < 0) {
        (void)unlinkat(dirfd, tmp, 0); /* no half-written copy is left behind */
        return r;
    }
    return fsync(dirfd) < 0 ? -errno : 0;
}

/* After the sandbox stopped: check and hash every declared output, in
 * order (outcheck.h), into s->outputs, or name the first invalid one in
 * s->output_error (s->outputs is then []). */
static void capture_outputs(struct shim *s)
{
    const json_t *declared = s->job ? json_object_get(s->job->doc, "outputs") : NULL, *v;
    _cleanup_close_ int rootfd = -1;
    size_t i;

    s->outputs = json_array();
    if (json_array_size(declared) == 0 || !s->outputs)
        return;
    /* No outputs tmpfs (no room for outputs): the job could write none. */
    if (oci_outputs_mounted(s->jobfd, OCI_JOB_OUTPUTS) == 1)
        rootfd = berth_open_beneath(s->jobfd, OCI_JOB_OUTPUTS, O_PATH | O_DIRECTORY, 0, NULL);
    json_array_foreach(declared, i, v) {
        const char *id = json_string_value(json_object_get(v, "id"));
        const char *rel = oci_output_relpath(json_string_value(json_object_get(v, "path")));
        enum oci_output_problem problem = OCI_OUTPUT_MISSING;
        char digest[BERTH_DIGEST_BUFSZ];
        uint64_t size = 0;
        int r = -ENOENT;

        if (rootfd >= 0 && rel)
            r = oci_output_capture(rootfd, rel, (uint64_t)json_integer_value(json_object_get(v, "max_bytes")), digest,
                                   &size, &problem);
        else if (!rel)
            problem = OCI_OUTPUT_UNREADABLE;
        if (r == 0 && s->contained &&
            (r = copy_output(s, rootfd, rel, (uint64_t)json_integer_value(json_object_get(v, "max_bytes")), id, digest,
                             size)) == -ECANCELED) {
            logf_shim(s, "its unit is being stopped: the outputs are not captured");
            json_array_clear(s->outputs);
            s->state = "failed";
            s->reason = "unit_stopped";
            return;
        }
        if (r < 0 && problem == OCI_OUTPUT_OK)
            problem = OCI_OUTPUT_UNREADABLE;
        if (r < 0) {
            logf_shim(s, "output %s (%s) is invalid: %s (%s)", id ? id : "?", rel ? rel : "?",
                      oci_output_problem_name(problem), strerror(-r));
            json_array_clear(s->outputs);
            s->output_error = json_pack("{s:s, s:s}", "id", id ? id : "", "problem", oci_output_problem_name(problem));
            return;
        }
        if (json_array_append_new(
                s->outputs, json_pack("{s:s, s:s, s:I}", "id", id, "digest", digest, "size", (json_int_t)size)) < 0) {
            json_array_clear(s->outputs);
            s->output_error = json_pack("{s:s, s:s}", "id", id, "problem", "unreadable");
            return;
        }
    }
    logf_shim(s, "captured %zu output(s)", json_array_size(s->outputs));
}

/* The bundle's config.json, from shim.json's "bundle" (a job's is in its
 * directory, a warm slot's in STATE/bundles). */
static int read_config(struct shim *s, char **ret, size_t *ret_len, struct berth_error *err)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .max_size = 4 << 20};
    _cleanup_close_ int fd = berth_open_trusted(s->bundle, O_RDONLY | O_DIRECTORY, 0, err);

    if (fd < 0)
        return fd;
    return berth_read_file_at(fd, "config.json", &expect, ret, ret_len, err);
}

/* Before create: the receipt verifies with the broker key of shim.json,
 * config.json is the deny-all spec rebuilt from the sealed job and the
 * staged inputs it binds are there (binding.h).  Keeps the dispatch and its
 * job in @s.  Returns NULL, or the reason code the job fails with. */
static const char *check_binding(struct shim *s)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .max_size = 4 << 20};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL, *config = NULL;
    _cleanup_json_ json_t *doc = NULL;
    struct berth_job *job = NULL;
    const char *b64 = json_string_value(json_object_get(s->cfg, "broker_public_key"));
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    size_t len = 0, clen = 0;
    const char *reason = NULL;
    int r;

    if (b64 && berth_public_key_from_b64url(b64, pub) < 0) {
        logf_shim(s, "refusing the job: shim.json broker_public_key is not a key");
        return "receipt_rejected";
    }
    if (berth_read_file_at(s->jobfd, OCI_JOB_DISPATCH, &expect, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, 4 << 20, &doc, &err) < 0 ||
        berth_job_from_json(json_object_get(doc, "job"), &job, &err) < 0 || read_config(s, &config, &clen, &err) < 0) {
        logf_shim(s, "refusing the job: %s", err.message);
        berth_job_free(job);
        return "binding_unreadable";
    }
    if ((r = oci_binding_verify(doc, job, b64 ? pub : NULL, &err)) < 0)
        reason = "receipt_rejected";
    else if ((r = oci_binding_check_config(doc, job, json_object_get(s->cfg, "bundle_params"), config, clen, &err)) < 0)
        reason = "config_mismatch";
    else if ((r = oci_binding_check_inputs(doc, job, &err)) < 0)
        reason = "inputs_unavailable";
    else if (!b64)
        logf_shim(s, "no broker_public_key configured: the receipt's signature was not checked");
    if (reason)
        logf_shim(s, "refusing the job before create: %s", err.message);
    s->dispatch = TAKE_PTR(doc);
    s->job = job;
    return reason ? reason : check_outputs_mount(s);
}

/* Before a slot's create: config.json is the deny-all spec in slot form
 * rebuilt from slot.json (binding.h), and the outputs tmpfs is mounted.
 * Returns NULL or the reason code the slot fails with. */
static const char *check_slot(struct shim *s)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .max_size = OCI_SLOT_MAX};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL, *config = NULL;
    _cleanup_json_ json_t *doc = NULL, *shape = NULL;
    struct berth_job *job = NULL;
    size_t len = 0, clen = 0;
    const char *reason = NULL;

    if (berth_read_file_at(s->jobfd, OCI_SLOT_DOC, &expect, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, OCI_SLOT_MAX, &doc, &err) < 0 ||
        oci_binding_slot(doc, &job, &shape, NULL, &err) < 0 || read_config(s, &config, &clen, &err) < 0)
        reason = "binding_unreadable";
    else if (!json_object_get(json_object_get(s->cfg, "bundle_params"), "slot_init") ||
             oci_binding_check_config(shape, job, json_object_get(s->cfg, "bundle_params"), config, clen, &err) < 0)
        reason = "config_mismatch";
    berth_job_free(job);
    if (reason) {
        logf_shim(s, "refusing the slot before create: %s", err.message[0] ? err.message : "not in slot form");
        return reason;
    }
    return check_outputs_mount(s);
}

/* The host-side limits of a contained job: controller, interface file. */
static const char *const limit_files[][2] = {{"memory", "memory.max"}, {"pids", "pids.max"}, {"cpu", "cpu.max"}};

/*
 * A contained job, before anything else: the shim runs in the "supervisor"
 * group of its own unit, berth-job@<id>.service; the unit's payload group
 * ($BERTH_PAYLOAD_CGROUP, berth-contained) is that unit's, and has the
 * controllers the job's limits need (missing ones refuse the job when
 * "cgroup_limits" is required); the outputs tmpfs is mounted, in the
 * shim's own mount namespace (unmount_listed).  The limits themselves are
 * written after create (payload_limits).  Returns NULL, or the reason the
 * job fails with before create.
 */
static const char *enter_unit(struct shim *s)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const char *payload = getenv("BERTH_PAYLOAD_CGROUP"), *base;
    _cleanup_free_ char *own = NULL, *unit = NULL, *procs = NULL, *want = NULL;
    bool required = json_is_true(json_object_get(s->contained, "cgroup_limits_required"));
    const json_t *m = json_object_get(s->cfg, "outputs_mount");
    size_t len;

    if (!payload || !berth_cgroup2_path_valid(payload) || (len = strlen(payload)) < 9 ||
        strcmp(payload + len - 8, "/payload") != 0 || !(unit = strndup(payload, len - 8)) ||
        asprintf(&want, "berth-job@%s.service", s->id) < 0) {
        logf_shim(s,
                  "refusing the job: BERTH_PAYLOAD_CGROUP (%s) is not a unit's payload group: not started by "
                  "berth-contained",
                  payload ? payload : "unset");
        return "containment_invalid";
    }
    base = strrchr(unit, '/');
    if (!base || !streq(base + 1, want)) {
        logf_shim(s, "refusing the job: its payload group %s is not the one of %s", payload, want);
        return "containment_invalid";
    }
    if (berth_cgroup2_of(0, &own, &err) < 0 || strncmp(own, unit, strlen(unit)) != 0 ||
        !streq(own + strlen(unit), "/supervisor")) {
        logf_shim(s, "refusing the job: the shim runs in %s, not in %s/supervisor%s%s",
                  own ? own : "no cgroup v2 group", unit, err.message[0] ? ": " : "", err.message);
        return "containment_invalid";
    }
    s->payload = strdup(payload);
    if (!s->payload || asprintf(&procs, "%s%s/cgroup.procs", BERTH_CGROUP2_ROOT, payload) < 0)
        return "containment_invalid";
    s->payload_procs = berth_open_trusted(procs, O_WRONLY | O_CLOEXEC, 0, &err);
    if (s->payload_procs < 0) {
        logf_shim(s, "refusing the job: %s", err.message);
        return "containment_invalid";
    }
    /* The shim's own bookkeeping of "the job's cgroup" (OOM kills, the
     * drain after delete) is the payload group. */
    s->cgroup = s->payload;
    for (size_t i = 0; i < ELEMENTSOF(limit_files); i++) {
        int r = berth_cgroup2_has_controller(s->payload, limit_files[i][0], &err);
        if (r == 1)
            continue;
        if (r < 0)
            logf_shim(s, "cannot tell whether the unit has the %s controller: %s", limit_files[i][0], err.message);
        else
            logf_shim(s, "the unit was not delegated the %s controller", limit_files[i][0]);
        if (required) {
            logf_shim(s, "refusing the job: its limits cannot all be set (cgroup_limits: required)");
            return "cgroup_limits_unavailable";
        }
        logf_shim(s, "running without its %s limit (cgroup_limits: when_delegated)", limit_files[i][1]);
        s->no_limit[i] = true;
    }
    if (m && oci_outputs_mount(s->jobfd, OCI_JOB_OUTPUTS, (uint64_t)json_integer_value(json_object_get(m, "size")),
                               (uint32_t)json_integer_value(json_object_get(m, "uid")),
                               (uint32_t)json_integer_value(json_object_get(m, "gid")), &err) < 0) {
        logf_shim(s, "refusing the job: cannot mount its outputs tmpfs: %s", err.message);
        return "outputs_unmounted";
    }
    return NULL;
}

/*
 * After create, before start: the job's limits into the payload group,
 * from its sealed job (checked by check_binding()): memory.max and
 * memory.swap.max (0) from memory_bytes, pids.max from the bundle's pids
 * ceiling (gVisor, whose sandbox takes several host tasks per guest
 * process) or pids, cpu.max as cpu_millis per 1000 ms.  Only the
 * sandbox is in the group then: the runtime's create has exited, and its
 * later commands run in the supervisor group (run_runtime).  Returns NULL,
 * or the reason the job fails with: any failure to write a limit whose
 * controller the unit has is one.
 */
static const char *payload_limits(struct shim *s)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t ceiling = json_integer_value(json_object_get(json_object_get(s->cfg, "bundle_params"), "pids_ceiling"));
    const struct berth_limits *l = &s->job->limits;
    char value[3][64];

    snprintf(value[0], sizeof(value[0]), "%lld", (long long)l->memory_bytes);
    snprintf(value[1], sizeof(value[1]), "%lld", (long long)(ceiling > 0 ? ceiling : l->pids));
    /* a quota of cpu_millis per 1000 ms, per 100 ms period (at least the kernel's 1 ms) */
    snprintf(value[2], sizeof(value[2]), "%lld 100000",
             (long long)(l->cpu_millis * 100 > 1000 ? l->cpu_millis * 100 : 1000));
    for (size_t i = 0; i < ELEMENTSOF(limit_files); i++) {
        if (s->no_limit[i])
            continue;
        if (berth_cgroup2_write(s->payload, limit_files[i][1], value[i], &err) < 0 ||
            (i == 0 && berth_cgroup2_write(s->payload, "memory.swap.max", "0", &err) < 0 && err.code != -ENOENT)) {
            logf_shim(s, "refusing the job: %s", err.message);
            return "cgroup_limits_unavailable";
        }
    }
    return NULL;
}

/* After create: the runtime's processes (its init and the helpers it left
 * with the shim) are in the payload group, not in a group of their own. */
static bool in_payload(struct shim *s)
{
    pid_t pids[HELPERS_MAX + 1];
    size_t n = 0, i;
    int r;

    pids[n++] = s->init_pid;
    r = list_children(s, pids + 1, HELPERS_MAX);
    if (r < 0)
        return false; /* what the runtime left cannot be checked: refused, never assumed inside */
    n += (size_t)r;
    for (i = 0; i < n; i++) {
        struct berth_error err = BERTH_ERROR_INIT;
        _cleanup_free_ char *cg = NULL;
        r = berth_cgroup2_of(pids[i], &cg, &err);
        if (r == -ESRCH)
            continue; /* ended already: it left no process outside */
        if (r < 0 || !streq(cg, s->payload)) {
            logf_shim(s,
                      "refusing the job: runtime process %d is in %s, not in the unit's payload group %s "
                      "(does the runtime make a cgroup of its own?  runsc needs --ignore-cgroups, crun "
                      "--cgroup-manager=disabled)",
                      (int)pids[i], cg ? cg : err.message, s->payload);
            return false;
        }
    }
    return true;
}

/* Hand the claiming job's argv to berth-slot-init (bundle.h): the length
 * header, then its strings, each ending in a NUL byte, down the handoff
 * socket, which is then shut (end of file: the init execs them).  The
 * socket's send buffer was made large enough for the whole bound, so the
 * write does not wait for the init; where it could not be, the write waits
 * for the init to read, at most HANDOFF_NS (an init stopped by a signal
 * never holds the shim, and with it the job's deadline, for longer).
 * 0, or -errno (the init is gone: -EPIPE; -ETIMEDOUT). */
static int write_handoff(struct shim *s)
{
    const json_t *argv = json_object_get(s->job->doc, "argv"), *v;
    _cleanup_close_ int fd = TAKE_FD(s->handoff_fd);
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, HANDOFF_NS);
    char *buf = NULL;
    size_t size = 0, off = 0, i;
    uint32_t len = 0;
    FILE *f = open_memstream(&buf, &size);
    int r = 0;

    if (!f)
        return -ENOMEM;
    fwrite(&len, sizeof(len), 1, f); /* filled in below */
    json_array_foreach(argv, i, v) {
        const char *a = json_string_value(v);
        if (a)
            fwrite(a, 1, strlen(a) + 1, f);
    }
    if (fclose(f) != 0) {
        free(buf);
        return -ENOMEM;
    }
    if (size <= sizeof(len) || size - sizeof(len) > BERTH_BUNDLE_SLOT_ARGV_MAX ||
        json_array_size(argv) > BERTH_BUNDLE_SLOT_ARGC_MAX) {
        free(buf);
        logf_shim(s, "the job's argv does not fit the slot's handoff (%zu bytes)", size);
        return -E2BIG;
    }
    len = (uint32_t)(size - sizeof(len));
    memcpy(buf, &len, sizeof(len));
    while (r == 0 && off < size) {
        ssize_t n = fd < 0 ? -1 : send(fd, buf + off, size - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
        } else if (fd >= 0 && (errno == EAGAIN || errno == EINTR)) {
            if (berth_deadline_passed(CLOCK_MONOTONIC, until))
                r = -ETIMEDOUT;
            else
                wait_fd(fd, POLLOUT, until);
        } else {
            r = fd < 0 ? -EBADF : -errno;
        }
    }
    free(buf);
    if (r == 0 && shutdown(fd, SHUT_WR) < 0)
        r = -errno;
    if (r < 0)
        logf_shim(s, "cannot hand the argv to the slot's init: %s", strerror(-r));
    return r;
}

/* Tear a slot (or a claimed job that cannot start) down and record @reason.
 * No job runs in it: its init (runsc-sandbox, or crun's container process,
 * berth-slot-init waiting on its socket, or waiting for `start` if that
 * failed; runsc cannot signal a container that was only created) is
 * killed directly -- a child of the shim not yet reaped, so the pid is
 * still its -- and reaped, so that `delete` finds no sandbox left to wait
 * for. */
static void end_slot(struct shim *s, const char *reason, const char *state)
{
    if (s->init_pid > 0 && !s->init_exited)
        (void)kill(s->init_pid, SIGKILL);
    reap_all(s);
    delete_container(s);
    reap_all(s);
    drain_cgroup(s);
    s->started_at = -1;
    write_result(s, state, reason, -1);
}

static bool run_id_shaped(const char *id)
{
    size_t i;

    if (!id || strlen(id) != 33 || id[0] != 'r')
        return false;
    for (i = 1; i < 33; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return false;
    return true;
}

/* Whether a claim has made this slot's directory a job's: dispatch.json is
 * in it and STATE/jobs/<its run id> is this very directory (claim() renames
 * it there, RENAME_NOREPLACE, before it says "claim").  A dispatch.json
 * that names another place -- a claim whose rename failed, or a forged one
 * -- is not acted on. */
static bool claimed_here(struct shim *s)
{
    struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .max_size = 4 << 20};
    _cleanup_free_ char *text = NULL, *path = NULL;
    _cleanup_json_ json_t *doc = NULL;
    const char *run_id, *slots;
    struct stat here, named;
    size_t len = 0, jl;

    if (faccessat(s->jobfd, OCI_JOB_DISPATCH, F_OK, AT_SYMLINK_NOFOLLOW) < 0 ||
        berth_read_file_at(s->jobfd, OCI_JOB_DISPATCH, &expect, &text, &len, NULL) < 0 ||
        berth_json_parse(text, len, 4 << 20, &doc, NULL) < 0)
        return false;
    run_id = json_string_value(json_object_get(json_object_get(json_object_get(doc, "receipt"), "receipt"), "run_id"));
    /* The shim was started on STATE/slots/<slot id> (33 characters): the
     * last "/slots/" of its path, wherever else STATE has one. */
    jl = strlen(s->jobdir);
    slots = jl > 40 ? s->jobdir + jl - 40 : NULL;
    if (!run_id_shaped(run_id) || !slots || strncmp(slots, "/slots/", 7) != 0 ||
        asprintf(&path, "%.*s/jobs/%s", (int)(slots - s->jobdir), s->jobdir, run_id) < 0)
        return false;
    return fstat(s->jobfd, &here) == 0 && fstatat(AT_FDCWD, path, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
           here.st_dev == named.st_dev && here.st_ino == named.st_ino;
}

/*
 * A slot after `create`: `start` it (berth-slot-init then waits on its
 * handoff socket), tell provision() it is ready, then hold it until "claim"
 * (dispatch.json is there: check it as supervise does before create, arm
 * the job's deadline, hand the argv over, and the job runs; returns 0 with
 * *@syncfd the claimed FIFO, for the claim's answer) or until it ends
 * ("discard", not_after, the sandbox's death: torn down, result written;
 * returns 1).
 */
static int hold_slot(struct shim *s, int *syncfd, int *claimfd, int ctlfd, int timerfd, int64_t create_started)
{
    const char *start[] = {"start", s->id, NULL};
    struct itimerspec its = {0};
    const char *end = NULL, *refused;
    bool cancelled = false, claimed = false, asked = false;
    int64_t now = 0;
    const json_t *dl;

    if (!runtime_ok(s, start, -1, -1)) {
        end_slot(s, unit_stopping(s) ? "unit_stopped" : "start_failed", "failed");
        sync_line(*syncfd, OCI_SHIM_SYNC_FAILED);
        *syncfd = -1;
        return 1;
    }
    if (berth_now_ns(CLOCK_REALTIME, &now, NULL) < 0)
        now = create_started;
    write_json(s, OCI_SLOT_READY,
               json_pack("{s:o, s:o}", "created_at", ns_json(now), "provision_ns", ns_json(now - create_started)));
    sync_line(*syncfd, OCI_SHIM_SYNC_CREATED);
    *syncfd = -1;
    logf_shim(s, "slot ready, init pid %d", (int)s->init_pid);
    while (!end) {
        struct pollfd p[3] = {
            {.fd = s->sigfd, .events = POLLIN},
            {.fd = timerfd, .events = POLLIN},
            {.fd = ctlfd, .events = POLLIN},
        };
        char buf[64];
        ssize_t n;

        if (poll(p, ELEMENTSOF(p), 500) < 0 && errno != EINTR) {
            logf_shim(s, "poll: %m");
            end = "slot_lost";
            break;
        }
        if (p[0].revents) {
            struct signalfd_siginfo si;
            while (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
                ;
        }
        reap_children(s);
        claimed = claimed_here(s); /* "claim" only wakes the loop; a claim cut short is found too */
        if (s->init_exited || s->state) {
            logf_shim(s, "the slot's sandbox ended while idle");
            end = "slot_lost";
            break;
        }
        if (claimed)
            break;
        if (p[1].revents) {
            uint64_t ticks;
            if (read(timerfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
                logf_shim(s, "the slot retires (not_after)");
                end = "slot_expired";
                break;
            }
        }
        if (!p[2].revents)
            continue;
        n = read(ctlfd, buf, sizeof(buf));
        if (n > 0 && memmem(buf, (size_t)n, "discard", 7)) {
            logf_shim(s, "discard requested");
            asked = true;
            end = "slot_discarded";
        } else if (n > 0 && memmem(buf, (size_t)n, "cancel", 6)) {
            /* A claim cut short after its rename (the plugin died before
             * "claim"): the directory is the job's, and berthd cancels it. */
            logf_shim(s, "cancel requested before the job started");
            cancelled = asked = true;
            end = "cancelled";
        }
    }
    /* Ending on its own (not asked by discard or cancel, which hold or need
     * no lock): first the slot's flock, so that no claim is between its
     * checks and its rename; a claim that holds it either renames the slot
     * (then it is claimed after all) or gives up. */
    while (end && !asked && flock(s->jobfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
        if (claimed_here(s)) {
            logf_shim(s, "claimed while it ended (%s): the job will find out at start", end);
            end = NULL;
            break;
        }
        usleep(10000);
    }
    if (end) {
        end_slot(s, end, cancelled ? "cancelled" : "failed");
        return 1; /* claimfd closes with the shim: a claim in flight reads end of file */
    }
    /* Claimed: the directory is the job's now (claim() renamed it). */
    *syncfd = TAKE_FD(*claimfd);
    refused = check_binding(s);
    dl = json_object_get(json_object_get(json_object_get(s->dispatch, "receipt"), "receipt"), "deadline");
    if (!refused && berth_json_ns_value(dl, &s->deadline_ns) < 0)
        refused = "receipt_rejected";
    its.it_value.tv_sec = s->deadline_ns / 1000000000LL;
    its.it_value.tv_nsec = s->deadline_ns % 1000000000LL;
    if (!refused && timerfd_settime(timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        logf_shim(s, "cannot arm the deadline: %m");
        refused = "start_failed";
    }
    if (!refused && berth_now_ns(CLOCK_REALTIME, &s->started_at, NULL) < 0)
        s->started_at = -1;
    /* The job runs from here on: its argv, then end of file. */
    if (!refused && write_handoff(s) < 0)
        refused = "handoff_failed";
    if (refused) {
        s->started_at = -1;
        end_slot(s, refused, "failed");
        sync_line(*syncfd, OCI_SHIM_SYNC_FAILED);
        *syncfd = -1;
        return 1;
    }
    logf_shim(s, "claimed by job %s", s->job->id);
    return 0;
}

static int supervise(struct shim *s, int syncfd, bool slot)
{
    int64_t create_started = 0;
    /* A slot's answer FIFO, held open for writing from now on (jobdir.h). */
    _cleanup_close_ int claimfd =
        slot ? openat(s->jobfd, OCI_SLOT_CLAIMED, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC) : -1;

    if (slot && claimfd < 0) {
        logf_shim(s, "cannot open the slot's %s FIFO: %m", OCI_SLOT_CLAIMED);
        write_result(s, "failed", "slot_setup", -1);
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    _cleanup_close_ int out_r = -1, err_r = -1, sigfd = -1, timerfd = -1, ctlfd = -1;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    char pidfile[PATH_MAX];
    struct itimerspec its = {0};
    bool out_open = true, err_open = true, early, marked = false, one_step = !slot && !s->contained;
    sigset_t mask;
    int code;

    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        logf_shim(s, "cannot become a child subreaper: %m");
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    s->out_fd = open_capture(s, OCI_JOB_STDOUT);
    s->err_fd = open_capture(s, OCI_JOB_STDERR);
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGPIPE);
    if (s->out_fd < 0 || s->err_fd < 0 || sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
        (sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
        (timerfd = timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC | TFD_NONBLOCK)) < 0 ||
        (ctlfd = openat(s->jobfd, OCI_JOB_CONTROL, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
        pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
        logf_shim(s, "cannot set up: %m");
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    s->sigfd = sigfd;
    out_r = outp[0];
    err_r = errp[0];
    if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_r, F_SETFL, O_NONBLOCK) < 0) {
        logf_shim(s, "cannot set up the output pipes: %m");
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    its.it_value.tv_sec = s->deadline_ns / 1000000000LL;
    its.it_value.tv_nsec = s->deadline_ns % 1000000000LL;
    if (timerfd_settime(timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        logf_shim(s, "cannot arm the deadline: %m");
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }

    snprintf(pidfile, sizeof(pidfile), "%s/%s", s->jobdir, OCI_JOB_PIDFILE);
    if (slot) {
        /* The slot init's stdin (bundle.h): a socket, which no other
         * process can open again through /proc/PID/fd as it could a pipe,
         * with a send buffer roomy enough for the largest argv
         * (SO_SNDBUFFORCE, socket(7)); only the shim keeps its end. */
        int hp[2], room = 2 * (BERTH_BUNDLE_SLOT_ARGV_MAX + 4096);
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, hp) < 0) {
            logf_shim(s, "cannot make the slot's handoff socket: %m");
            close(outp[1]);
            close(errp[1]);
            write_result(s, "failed", "slot_setup", -1);
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 0;
        }
        s->create_stdin = hp[0];
        s->handoff_fd = hp[1];
        if (setsockopt(hp[1], SOL_SOCKET, SO_SNDBUFFORCE, &room, sizeof(room)) < 0)
            logf_shim(s, "the handoff socket keeps its default buffer (%m): a long argv waits for the init to read it");
    }
    {
        const char *refused = s->contained ? enter_unit(s) : NULL;
        if (!refused)
            refused = slot ? check_slot(s) : check_binding(s);
        if (refused) {
            close(outp[1]);
            close(errp[1]);
            write_result(s, "failed", refused, -1);
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 0;
        }
    }
    {
        const char *create[8 + OCI_MAX_CREATE_ARGS];
        const char *refused = NULL;
        size_t n = 0, i;
        const json_t *v;

        /* A cold job that is not contained is created and started by one
         * runtime process (`run --detach`): a second process, `start`, is
         * 25 ms of runsc's Go start-up and a crun re-exec.  A contained job
         * is checked in its unit between create and start, and a slot
         * waits between them for its claim. */
        create[n++] = one_step ? "run" : "create";
        if (one_step)
            create[n++] = "--detach";
        json_array_foreach(s->create_args, i, v)
            create[n++] = json_string_value(v);
        create[n++] = "--bundle";
        create[n++] = s->bundle;
        create[n++] = "--pid-file";
        create[n++] = pidfile;
        create[n++] = s->id;
        create[n] = NULL;
        if (berth_now_ns(CLOCK_REALTIME, &create_started, NULL) < 0)
            create_started = 0;
        if (one_step)
            s->started_at = create_started ? create_started : -1;
        /* The container inherits create's stdout and stderr: the pipes
         * (and a slot's init its end of the handoff socket as stdin). */
        bool ok = runtime_ok(s, create, outp[1], errp[1]);
        close(outp[1]);
        close(errp[1]);
        if (s->create_stdin >= 0) {
            close(s->create_stdin);
            s->create_stdin = -1;
        }
        if (ok && read_pid(s) == 0 && s->contained && !in_payload(s)) {
            refused = "containment_escaped";
            ok = false;
        }
        if (ok && s->init_pid > 0 && s->contained && (refused = payload_limits(s)))
            ok = false;
        if (!ok || s->init_pid <= 0) {
            const char *reason = refused ? refused : unit_stopping(s) ? "unit_stopped" : "create_failed";

            /* `run --detach` may have failed (or been killed at its bound)
             * after it created, even started, the container. */
            if (one_step && s->init_pid <= 0)
                (void)read_pid(s);
            if (refused || one_step) {
                /* The container may be there (outside its unit's payload,
                 * or running): stop it first. */
                kill_all(s);
                if (own_child(s->init_pid))
                    (void)kill(s->init_pid, SIGKILL); /* not reaped yet: its pid cannot be reused */
                reap_all(s);
            }
            while (drain_more(out_r) && pump(s, out_r, s->out_fd) && !s->state)
                ;
            while (drain_more(err_r) && pump(s, err_r, s->err_fd) && !s->state)
                ;
            delete_container(s);
            reap_all(s);
            drain_cgroup(s);
            if (one_step && (ok || s->init_pid > 0) && !refused)
                reason = unit_stopping(s) ? "unit_stopped" : "start_failed"; /* started_at stands: it may have run */
            else
                s->started_at = -1;
            write_result(s, "failed", reason, -1);
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 0;
        }
    }
    /* The runtime's helpers (runsc-gofer), not the sandbox's ptrace stubs,
     * which die with it (note_helpers()). */
    note_helpers(s);
    if (slot && hold_slot(s, &syncfd, &claimfd, ctlfd, timerfd, create_started) != 0)
        return 0;
    if (!slot && !one_step) {
        const char *start[] = {"start", s->id, NULL};
        if (berth_now_ns(CLOCK_REALTIME, &s->started_at, NULL) < 0)
            s->started_at = -1;
        if (!runtime_ok(s, start, -1, -1)) {
            kill_all(s);
            reap_all(s);
            delete_container(s);
            reap_all(s);
            drain_cgroup(s);
            s->started_at = -1;
            write_result(s, "failed", unit_stopping(s) ? "unit_stopped" : "start_failed", -1);
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 0;
        }
    }
    write_json(s, OCI_JOB_STARTED, json_pack("{s:o}", "started_at", ns_json(s->started_at)));
    sync_line(syncfd, OCI_SHIM_SYNC_STARTED);
    logf_shim(s, "started, init pid %d", (int)s->init_pid);

    reap_children(s);
    while (!s->init_exited || out_open || err_open) {
        struct pollfd p[5] = {
            {.fd = out_open ? out_r : -1, .events = POLLIN},
            {.fd = err_open ? err_r : -1, .events = POLLIN},
            {.fd = sigfd, .events = POLLIN},
            {.fd = s->init_exited ? -1 : timerfd, .events = POLLIN},
            {.fd = ctlfd, .events = POLLIN},
        };
        int timeout = 500;

        if (s->init_exited && berth_deadline_passed(CLOCK_MONOTONIC, s->drain_until)) {
            logf_shim(s, "output still open %lld s after the job exited; closing it",
                      (long long)(DRAIN_NS / BERTH_NS_PER_SEC));
            break;
        }
        if (poll(p, ELEMENTSOF(p), timeout) < 0 && errno != EINTR) {
            logf_shim(s, "poll: %m");
            break;
        }
        if (p[0].revents && !pump(s, out_r, s->out_fd))
            out_open = false;
        if (p[1].revents && !pump(s, err_r, s->err_fd))
            err_open = false;
        if (p[2].revents) {
            struct signalfd_siginfo si;
            /* SIGCHLD is handled below.  Termination signals are ignored
             * (the job outlives berthd), but for SIGTERM to a contained
             * job's shim: its unit is being stopped (by an operator, or at
             * shutdown), and the job ends now, recorded as stopped, rather
             * than be killed with the shim when the stop times out. */
            while (read(sigfd, &si, sizeof(si)) == sizeof(si))
                if (si.ssi_signo == SIGTERM && s->contained)
                    s->stopping = true;
            if (s->stopping && !s->state && !s->init_exited) {
                logf_shim(s, "its unit is being stopped: killing the job");
                s->state = "failed";
                s->reason = "unit_stopped";
                kill_all(s);
            }
        }
        if (p[3].revents) {
            uint64_t ticks;
            if (read(timerfd, &ticks, sizeof(ticks)) == sizeof(ticks) && !s->state) {
                logf_shim(s, "deadline reached: killing the job");
                s->state = "expired";
                s->reason = "deadline";
                kill_all(s);
            }
        }
        if (p[4].revents) {
            char buf[64];
            ssize_t n = read(ctlfd, buf, sizeof(buf));
            /* A job that already exited keeps its own outcome. */
            if (n > 0 && memmem(buf, (size_t)n, "cancel", 6) && !s->state && !s->init_exited) {
                logf_shim(s, "cancel requested: killing the job");
                s->state = "cancelled";
                s->reason = "cancelled";
                kill_all(s);
            }
        }
        if (!s->init_exited) {
            reap_children(s);
            if (!s->init_exited && s->killed && berth_deadline_passed(CLOCK_MONOTONIC, s->kill_again_at))
                kill_all(s);
        }
    }

    /* Whatever is still buffered in the pipes belongs to the job's output. */
    while (out_open && pump(s, out_r, s->out_fd) && drain_more(out_r))
        ;
    while (err_open && pump(s, err_r, s->err_fd) && drain_more(err_r))
        ;
    judge_end(s); /* before delete: the runtime removes the cgroup that counted OOM kills */
    if (WIFEXITED(s->init_status))
        code = WEXITSTATUS(s->init_status);
    else
        code = 128 + WTERMSIG(s->init_status);
    if (streq_ptr(s->reason, "runtime_lost"))
        code = -1; /* the sandbox's status, not the job's */
    /* The result is final now, unless outputs are to be read from the
     * stopped container: then it waits for the whole teardown.  Otherwise,
     * once no process of the job is left (the runtime's helpers reaped, the
     * job's cgroup drained), it is written before the runtime's `delete`,
     * which only removes the runtime's record of the container; the
     * "teardown" marker (jobdir.h) says that this is under way. */
    early = (!s->job || json_array_size(json_object_get(s->job->doc, "outputs")) == 0) && !s->children_stuck &&
            reap_all(s) && drain_cgroup(s);
    if (early) {
        s->outputs = json_array();
        logf_shim(s, "finished: %s, exit code %d (teardown follows)", s->state ? s->state : "exited", code);
        marked = berth_publish_at(s->jobfd, OCI_JOB_TEARDOWN, "", 0, 0600, 0, NULL) == 0;
        if (!marked || write_result(s, s->state ? s->state : "exited", s->reason, code) < 0)
            early = false; /* written after the teardown instead */
    }
    if (!s->children_stuck) /* judge_end() waited once already: delete ends them */
        reap_all(s);
    delete_container(s);
    reap_all(s);
    drain_cgroup(s);
    if (marked && unlinkat(s->jobfd, OCI_JOB_TEARDOWN, 0) < 0)
        logf_shim(s, "cannot remove %s: %m", OCI_JOB_TEARDOWN);
    if (early)
        return 0;
    /* Only a job that ended on its own has outputs (whatever its exit code). */
    if (!s->state)
        capture_outputs(s);
    logf_shim(s, "finished: %s, exit code %d", s->state ? s->state : "exited", code);
    write_result(s, s->state ? s->state : "exited", s->reason, code);
    return 0;
}

static int cleanup(struct shim *s)
{
    /* A shim that ended after its job's result, during the teardown that
     * follows it: the result stands, the teardown is finished here. */
    bool after_result = faccessat(s->jobfd, OCI_JOB_TEARDOWN, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
                        faccessat(s->jobfd, OCI_JOB_RESULT, F_OK, AT_SYMLINK_NOFOLLOW) == 0;

    logf_shim(s, "%s: killing and deleting its container",
              after_result ? "the job's shim ended during its teardown" : "no shim supervises this job");
    s->started_at = -1;
    kill_all(s);
    delete_container(s);
    drain_cgroup(s);
    if (!after_result)
        return write_result(s, "failed", "runtime_lost", -1) < 0 ? 1 : 0;
    if (!container_absent(s))
        return 1;
    return unlinkat(s->jobfd, OCI_JOB_TEARDOWN, 0) < 0 && errno != ENOENT ? 1 : 0;
}

static int load_config(struct shim *s)
{
    struct berth_file_expect expect = {
        .type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .mode = 0, .max_size = OCI_SHIM_CONFIG_MAX, .one_link = 1};
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    const json_t *prefix, *v;
    const char *deadline;
    size_t len = 0, i;

    if (berth_read_file_at(s->jobfd, OCI_JOB_SHIM_CONFIG, &expect, &text, &len, &err) < 0 ||
        berth_json_parse(text, len, OCI_SHIM_CONFIG_MAX, &s->cfg, &err) < 0 ||
        berth_json_string_member(s->cfg, "shim", "id", true, &s->id, &err) < 0 ||
        berth_json_string_member(s->cfg, "shim", "bundle", true, &s->bundle, &err) < 0 ||
        berth_json_string_member(s->cfg, "shim", "deadline_ns", true, &deadline, &err) < 0 ||
        berth_json_int_member(s->cfg, "shim", "output_bytes", true, 0, INT64_MAX, &s->output_bytes, &err) < 0 ||
        berth_json_ns_value(json_object_get(s->cfg, "deadline_ns"), &s->deadline_ns) < 0) {
        fprintf(stderr, "berth-oci-shim: %s/%s: %s\n", s->jobdir, OCI_JOB_SHIM_CONFIG,
                err.message[0] ? err.message : "deadline_ns is not a nanosecond string");
        return -EBADMSG;
    }
    (void)deadline;
    s->cgroup = json_string_value(json_object_get(s->cfg, "cgroup"));
    if (s->cgroup && (s->cgroup[0] != '/' || strstr(s->cgroup, "..")))
        return fprintf(stderr, "berth-oci-shim: shim.json: cgroup must be an absolute path\n"), -EBADMSG;
    s->gvisor = streq_ptr(json_string_value(json_object_get(s->cfg, "isolation")), "gvisor");
    s->create_args = json_object_get(s->cfg, "create_args");
    if (s->create_args) {
        const json_t *a;
        if (!json_is_array(s->create_args) || json_array_size(s->create_args) > OCI_MAX_CREATE_ARGS)
            return fprintf(stderr, "berth-oci-shim: shim.json: create_args must be at most %d flags\n",
                           OCI_MAX_CREATE_ARGS),
                   -EBADMSG;
        json_array_foreach(s->create_args, i, a)
            if (!json_is_string(a) || json_string_value(a)[0] != '-')
                return fprintf(stderr, "berth-oci-shim: shim.json: create_args must be flags\n"), -EBADMSG;
    }
    s->contained = json_object_get(s->cfg, "contained");
    if (s->contained && (!json_is_boolean(json_object_get(s->contained, "cgroup_limits_required")) || s->cgroup))
        return fprintf(stderr, "berth-oci-shim: shim.json: contained must be {\"cgroup_limits_required\": bool}, "
                               "without a cgroup\n"),
               -EBADMSG;
    prefix = json_object_get(s->cfg, "runtime");
    if (!json_is_array(prefix) || json_array_size(prefix) < 1 || json_array_size(prefix) > 64)
        return fprintf(stderr, "berth-oci-shim: shim.json: runtime must be 1 to 64 strings\n"), -EBADMSG;
    s->n_prefix = json_array_size(prefix);
    s->argv = calloc(s->n_prefix + 16 + OCI_MAX_CREATE_ARGS, sizeof(*s->argv));
    if (!s->argv)
        return -ENOMEM;
    json_array_foreach(prefix, i, v) {
        if (!json_is_string(v))
            return fprintf(stderr, "berth-oci-shim: shim.json: runtime must be strings\n"), -EBADMSG;
        s->argv[i] = json_string_value(v);
    }
    if (s->argv[0][0] != '/')
        return fprintf(stderr, "berth-oci-shim: shim.json: the runtime must be an absolute path\n"), -EBADMSG;
    for (i = 1; i + 1 < s->n_prefix; i++)
        if (streq(s->argv[i], "--root") && s->argv[i + 1][0] == '/')
            s->runtime_root = s->argv[i + 1];
    {
        const json_t *pin = json_object_get(s->cfg, "pin");
        struct oci_pin want = {.path = s->argv[0]};
        struct oci_pin_cache seen = {0};
        const json_t *identity;
        int64_t mode = 0;
        const char *sha = NULL;
        int copy;

        if (berth_json_string_member(pin, "shim.pin", "sha256", true, &sha, &err) < 0 ||
            berth_json_int_member(pin, "shim.pin", "size", true, 1, INT64_MAX, &want.size, &err) < 0 ||
            berth_json_int_member(pin, "shim.pin", "mode", true, 0, 0777, &mode, &err) < 0) {
            fprintf(stderr, "berth-oci-shim: shim.json: %s\n", err.message);
            return -EBADMSG;
        }
        snprintf(want.sha256, sizeof(want.sha256), "%s", sha);
        want.mode = (uint32_t)mode;
        /* The file the plugin hashed for this start is not hashed again by
         * the check (its sealed copy below is, as it is made); any other
         * file at the path (another inode, size, mtime or ctime) is. */
        identity = json_object_get(pin, "identity");
        if (identity && oci_pin_identity_parse(identity, want.sha256, &seen, &err) < 0) {
            fprintf(stderr, "berth-oci-shim: shim.json: %s\n", err.message);
            return -EBADMSG;
        }
        s->runtime_fd = berth_open_trusted(want.path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, &err);
        if (s->runtime_fd < 0 ||
            oci_pin_verify_fd(s->runtime_fd, want.path, &want, identity ? &seen : NULL, &err) < 0) {
            logf_shim(s, "refusing to run the runtime: %s", err.message);
            return -EPERM;
        }
        /* A small runtime runs from a sealed copy of the pinned bytes (crun
         * then skips copying itself on every command); a larger one, one
         * whose backend says "sealed_copy": false, or one where no
         * executable memfd can be made, from the checked file. */
        if (json_is_false(json_object_get(s->cfg, "sealed_copy")))
            return 0;
        /* The backend's copy, made and hashed once by runtime-oci for every
         * job: sealed, it still holds the pinned bytes it was made of. */
        if (s->given_copy_problem)
            logf_shim(s, "not taking the runtime's sealed copy from %s: %s", OCI_SHIM_RUNTIME_ENV,
                      s->given_copy_problem);
        if (s->given_copy_fd >= 0) {
            /* Made for this job's pin (not for a pin berthd had before a
             * restart), and still as it was made: sealed, of its size. */
            if (strcmp(s->given_copy_digest, want.sha256) != 0) {
                berth_error_set(&err, -EPERM, "it was made for %s; this job's pin says %s", s->given_copy_digest,
                                want.sha256);
            } else if (oci_pin_sealed_check(s->given_copy_fd, &want, &err) == 0) {
                s->runtime_file_fd = s->runtime_fd;
                s->runtime_fd = TAKE_FD(s->given_copy_fd);
                return 0;
            }
            logf_shim(s, "not taking the runtime's sealed copy from %s: %s", OCI_SHIM_RUNTIME_ENV, err.message);
            close(TAKE_FD(s->given_copy_fd));
            err = (struct berth_error)BERTH_ERROR_INIT;
        }
        copy = oci_pin_sealed_copy(s->runtime_fd, want.path, &want, &err);
        if (copy >= 0) {
            s->runtime_file_fd = s->runtime_fd;
            s->runtime_fd = copy;
        } else if (copy == -EPERM) {
            logf_shim(s, "refusing to run the runtime: %s", err.message);
            return -EPERM;
        } else if (copy != -EFBIG) {
            logf_shim(s, "the runtime %s runs from its file: %s", want.path, err.message);
        }
    }
    return 0;
}

/* A private mount namespace without the mounts shim.json lists (for a
 * contained job, one whether or not it lists any). */
static int unmount_listed(struct shim *s)
{
    const json_t *list = json_object_get(s->cfg, "unmount"), *v;
    size_t i;

    /* A contained job's shim always has a mount namespace of its own: the
     * outputs tmpfs it mounts there is the runtime's and nobody else's,
     * and goes with the last of the job's processes. */
    if (!s->contained && (!list || json_array_size(list) == 0))
        return 0;
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        logf_shim(s, "cannot enter a private mount namespace: %m");
        return -errno;
    }
    {
        /* The job directory's descriptor still names the directory of the
         * namespace left behind, where nothing can be mounted any more
         * (move_mount(2) wants a target in the caller's namespace): open it
         * again here, and make sure it is the same directory. */
        struct stat was, now;
        int fd = open(s->jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &now) < 0 || fstat(s->jobfd, &was) < 0 || was.st_dev != now.st_dev ||
            was.st_ino != now.st_ino || dup3(fd, s->jobfd, O_CLOEXEC) < 0) {
            logf_shim(s, "cannot open %s again in its own mount namespace%s", s->jobdir,
                      fd >= 0 ? ": it is another directory" : "");
            if (fd >= 0)
                close(fd);
            return -EIO;
        }
        close(fd);
    }
    json_array_foreach(list, i, v) {
        const char *path = json_string_value(v);
        if (path && path[0] == '/' && umount2(path, MNT_DETACH) < 0 && errno != EINVAL && errno != ENOENT) {
            logf_shim(s, "cannot unmount %s: %m", path);
            return -errno;
        }
    }
    return 0;
}

/* Close every descriptor from 3 up but @a and @b (-1: none). */
static int close_other_fds(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    unsigned from = 3;

    if (lo < 0) { /* one of them, or none */
        lo = hi;
        hi = -1;
    }
    if (lo >= 3) {
        if ((unsigned)lo > from && close_range(from, (unsigned)lo - 1, 0) < 0)
            return -errno;
        from = (unsigned)lo + 1;
    }
    if (hi >= 3) {
        if ((unsigned)hi > from && close_range(from, (unsigned)hi - 1, 0) < 0)
            return -errno;
        from = (unsigned)hi + 1;
    }
    return close_range(from, ~0U, 0) < 0 ? -errno : 0;
}

/* The backend's sealed copy of the runtime, when runtime-oci handed one
 * over (jobdir.h, OCI_SHIM_RUNTIME_ENV: "FD DIGEST"): moved to a
 * descriptor of 10 or more, close-on-exec, into s->given_copy_fd, with the
 * pinned digest it was made for in s->given_copy_digest; checked against
 * the job's pin once shim.json is read (load_config()).  The variable
 * leaves the environment the runtime inherits.  @sync: the sync pipe is on
 * OCI_SHIM_SYNC_FD. */
static void take_given_copy(struct shim *s, bool sync)
{
    const char *v = getenv(OCI_SHIM_RUNTIME_ENV);
    int fd;

    if (!v)
        return;
    /* One digit, after the standard streams and the sync pipe, a space and
     * a digest. */
    if (v[0] < '3' || v[0] > '9' || (sync && v[0] - '0' == OCI_SHIM_SYNC_FD)) {
        s->given_copy_problem = "its descriptor number is not one the plugin hands over";
    } else if (v[1] != ' ' || strlen(v + 2) >= sizeof(s->given_copy_digest)) {
        s->given_copy_problem = "it does not name the pinned digest the copy was made for";
    } else {
        snprintf(s->given_copy_digest, sizeof(s->given_copy_digest), "%s", v + 2);
        fd = fcntl(v[0] - '0', F_DUPFD_CLOEXEC, 10);
        if (fd < 0) {
            s->given_copy_problem = "its descriptor is not open";
        } else {
            close(v[0] - '0');
            s->given_copy_fd = fd;
        }
    }
    unsetenv(OCI_SHIM_RUNTIME_ENV);
}

/* Dispositions ignored by whoever started berthd (a shell ignores SIGQUIT
 * for background jobs; berthd ignores SIGPIPE) survive exec: without this,
 * they would reach the runtime and every process of the job. */
static void reset_signals(void)
{
    sigset_t none;

    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)signal(sig, SIG_DFL);
    sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static int usage(void)
{
    fputs("usage: berth-oci-shim supervise|provision|cleanup|contained JOBDIR\n"
          "       berth-oci-shim --version\n"
          "\n"
          "Supervises one job of berth's runtime-oci plugin (started by berthd; not for\n"
          "interactive use).  JOBDIR is the job's directory below the backend's\n"
          "state_directory/jobs (or, for provision, a warm slot's below\n"
          "state_directory/slots); its shim.json says what to run.  contained is\n"
          "supervise as the main process of the job's berth-job@ unit (run by\n"
          "berth-contained).\n",
          stderr);
    return 2;
}

int main(int argc, char **argv)
{
    struct shim s = {.jobfd = -1,
                     .out_fd = -1,
                     .err_fd = -1,
                     .log_fd = -1,
                     .runtime_fd = -1,
                     .runtime_file_fd = -1,
                     .given_copy_fd = -1,
                     .sigfd = -1,
                     .started_at = -1,
                     .payload_procs = -1,
                     .create_stdin = -1,
                     .handoff_fd = -1};
    _cleanup_close_ int lockfd = -1;
    bool sup, slot, contained;
    int syncfd = -1, r;

    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("berth-oci-shim %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (argc != 3 ||
        (strcmp(argv[1], "supervise") != 0 && strcmp(argv[1], "provision") != 0 && strcmp(argv[1], "cleanup") != 0 &&
         strcmp(argv[1], "contained") != 0) ||
        argv[2][0] != '/')
        return usage();
    reset_signals();
    /* The runtime makes the mount points of the job's binds (/inputs/...)
     * with the umask it inherits: the job's uid must be able to traverse
     * them, whatever umask whoever started the shim had (berth-job@.service
     * has UMask=0077).  Every file of the shim's own has an explicit mode. */
    umask(022);
    slot = strcmp(argv[1], "provision") == 0;
    contained = strcmp(argv[1], "contained") == 0;
    sup = slot || contained || strcmp(argv[1], "supervise") == 0;
    s.jobdir = argv[2];
    take_given_copy(&s, sup && !contained);
    if (sup && !contained) {
        syncfd = fcntl(OCI_SHIM_SYNC_FD, F_DUPFD_CLOEXEC, 10);
        if (syncfd < 0) {
            fprintf(stderr, "berth-oci-shim: supervise needs the sync pipe on fd %d\n", OCI_SHIM_SYNC_FD);
            return 2;
        }
        close(OCI_SHIM_SYNC_FD);
        /* Nothing else of whoever started us reaches the runtime. */
        if (close_other_fds(syncfd, s.given_copy_fd) < 0)
            return 1;
        /* Detach: the plugin waits only for this first process. */
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid > 0)
            _exit(0);
        if (setsid() < 0)
            return 1;
    } else if (close_other_fds(s.given_copy_fd, -1) < 0) {
        return 1;
    }
    s.jobfd = open(s.jobdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (s.jobfd < 0) {
        fprintf(stderr, "berth-oci-shim: %s: %m\n", s.jobdir);
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    s.log_fd = openat(s.jobfd, OCI_JOB_RUNTIME_LOG, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    lockfd = openat(s.jobfd, OCI_JOB_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s.log_fd < 0 || lockfd < 0) {
        fprintf(stderr, "berth-oci-shim: %s: %m\n", s.jobdir);
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    if (flock(lockfd, LOCK_EX | LOCK_NB) < 0) {
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return errno == EWOULDBLOCK ? OCI_SHIM_EXIT_BUSY : 1;
    }
    if (contained) {
        /* In the unit, the plugin's start() reads the job directory's sync
         * FIFO; without a reader (it is gone) the job runs all the same and
         * berthd finds it started. */
        syncfd = openat(s.jobfd, OCI_JOB_SYNC, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (syncfd >= 0 && fcntl(syncfd, F_SETFL, 0) < 0) {
            close(syncfd);
            syncfd = -1;
        }
    }
    /* Already finished: nothing to do, but for cleanup of a teardown cut
     * short after an early result (jobdir.h "teardown"). */
    if (faccessat(s.jobfd, OCI_JOB_RESULT, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
        (sup || faccessat(s.jobfd, OCI_JOB_TEARDOWN, F_OK, AT_SYMLINK_NOFOLLOW) < 0)) {
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 0;
    }
    if (contained) {
        /* One launch per job: a unit started again (by hand, or a start
         * that was lost and retried) runs nothing a second time. */
        int fd = openat(s.jobfd, OCI_JOB_LAUNCHED, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            logf_shim(&s, "refusing to run: %s",
                      errno == EEXIST ? "the job was launched before (a second start of "
                                        "its unit runs nothing)"
                                      : strerror(errno));
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 1;
        }
        close(fd);
    }
    if (!sup && faccessat(s.jobfd, OCI_JOB_SHIM_CONFIG, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
        /* start() was interrupted before it wrote shim.json (published
         * atomically, before any shim ran): no container can exist. */
        return write_result(&s, "failed", "start_interrupted", -1) < 0 ? 1 : 0;
    }
    r = load_config(&s);
    if (r == 0 && sup && (s.contained != NULL) != contained) {
        /* A contained job runs in its unit and nowhere else, and nothing else runs there
         * (cleanup, which only stops and deletes, serves both). */
        logf_shim(&s, "refusing to run: shim.json %s a contained job, and the shim was run as %s",
                  s.contained ? "is" : "is not", argv[1]);
        r = -EBADMSG;
    }
    if (r < 0 || unmount_listed(&s) < 0) {
        if (r == -EPERM && sup) {
            /* The runtime changed under its pin before this job ran: nothing of it may run. */
            write_result(&s, "failed", "runtime_pin", -1);
            sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
            return 0;
        }
        /* cleanup: a container may still run, and no checked runtime can stop it.
         * No result is written, so the job stays visible (inspect and cancel keep
         * failing with the reason in runtime.log) until an operator sees to it. */
        sync_line(syncfd, OCI_SHIM_SYNC_FAILED);
        return 1;
    }
    if (sup) {
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            close(devnull);
        }
        dup2(s.log_fd, 2);
    }
    r = sup ? supervise(&s, syncfd, slot) : cleanup(&s);
    json_decref(s.cfg);
    json_decref(s.dispatch);
    json_decref(s.outputs);
    json_decref(s.output_error);
    berth_job_free(s.job);
    free(s.argv);
    free(s.payload);
    if (s.payload_procs >= 0)
        close(s.payload_procs);
    return r;
}
