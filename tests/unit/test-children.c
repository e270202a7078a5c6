/* SPDX-License-Identifier: MIT */
/*
 * test-children.c -- berth-oci-shim's child processes
 * (plugins/runtime-oci/children.h): the children of this thread are
 * listed, zombies included and the excluded one left out; /proc/PID/stat
 * gives the state, the session (the caller's, as the runtime starts
 * runsc-gofer, or one of the child's own, as a sandbox and its ptrace stubs
 * make) and the start time, for a live child and for a zombie alike.  The shim
 * on real runsc is covered by tests/cli/test-runtime-oci*.sh and by
 * "make bench-starts" (hundreds of fast gVisor jobs, none may be
 * runtime_lost).  As root, the same is read in a PID namespace of its own,
 * where the caller's session leader is outside and the session reads 0, as
 * under an init that never called setsid(2) (CI's machines run the suite
 * so; oci_proc_stat() once refused session 0 there).  A process whose
 * main thread has exited while another thread lives reads as exiting but
 * cannot be reaped yet: the state of a runsc-gofer half-way through its
 * death.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "children.h"

/* A child that stays (@stay) or exits at once, in a session of its own
 * when @own_session; it has done both before this returns. */
static pid_t spawn(bool own_session, bool stay)
{
    int p[2];
    char c;
    pid_t pid;

    ck_assert_int_eq(pipe(p), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (own_session && setsid() < 0)
            _exit(1);
        (void)!write(p[1], "x", 1);
        if (stay)
            for (;;)
                pause();
        _exit(0);
    }
    close(p[1]);
    ck_assert_int_eq(read(p[0], &c, 1), 1);
    close(p[0]);
    return pid;
}

/* Wait until @pid is a zombie (its exit status waiting, WNOWAIT). */
static void until_zombie(pid_t pid)
{
    siginfo_t si;

    memset(&si, 0, sizeof(si));
    ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(si.si_pid, pid);
}

static bool listed(const pid_t *v, int n, pid_t pid)
{
    for (int i = 0; i < n; i++)
        if (v[i] == pid)
            return true;
    return false;
}

START_TEST(children_and_their_sessions)
{
    pid_t same = spawn(false, true), other = spawn(true, true);
    pid_t same_zombie = spawn(false, false), other_zombie = spawn(true, false);
    pid_t kids[16], own = getsid(0);
    struct oci_proc_stat me, st;
    int n;

    until_zombie(same_zombie);
    until_zombie(other_zombie);

    n = oci_children_list(0, kids, 16);
    ck_assert_int_eq(n, 4);
    ck_assert(listed(kids, n, same) && listed(kids, n, other) && listed(kids, n, same_zombie) &&
              listed(kids, n, other_zombie));
    /* The excluded one (the init) is left out; the room is respected. */
    n = oci_children_list(other, kids, 16);
    ck_assert_int_eq(n, 3);
    ck_assert(!listed(kids, n, other));
    ck_assert_int_eq(oci_children_list(0, kids, 2), 2);

    /* The session, live or zombie: the caller's, or the child's own; the
     * state; the start time, never before the parent's. */
    ck_assert_int_eq(oci_proc_stat(getpid(), &me), 0);
    ck_assert_int_eq(me.session, own);
    ck_assert(me.state == 'R');
    ck_assert(!me.exiting);
    ck_assert_int_eq(oci_proc_stat(same, &st), 0);
    ck_assert_int_eq(st.session, own);
    ck_assert(st.state != 'Z' && st.state != 'X'); /* alive (just paused, or about to) */
    ck_assert(!st.exiting);
    ck_assert_uint_ge(st.start_ticks, me.start_ticks);
    ck_assert_int_eq(oci_proc_stat(same_zombie, &st), 0);
    ck_assert_int_eq(st.session, own);
    ck_assert(st.state == 'Z');
    ck_assert(st.exiting);
    ck_assert_int_eq(oci_proc_stat(other, &st), 0);
    ck_assert_int_eq(st.session, other);
    ck_assert_int_eq(oci_proc_stat(other_zombie, &st), 0);
    ck_assert_int_eq(st.session, other_zombie);
    ck_assert(st.state == 'Z');
    /* A later child started no earlier (clock ticks: maybe the same one). */
    {
        struct oci_proc_stat a, b;
        ck_assert_int_eq(oci_proc_stat(same, &a), 0);
        ck_assert_int_eq(oci_proc_stat(other_zombie, &b), 0);
        ck_assert_uint_ge(b.start_ticks, a.start_ticks);
    }

    ck_assert_int_eq(kill(same, SIGKILL), 0);
    ck_assert_int_eq(kill(other, SIGKILL), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_gt(waitpid(-1, NULL, 0), 0);
    ck_assert_int_eq(oci_children_list(0, kids, 16), 0);
    /* Gone: no such process. */
    ck_assert_int_eq(oci_proc_stat(same_zombie, &st), -ESRCH);
    ck_assert_int_eq(oci_proc_stat(0, &st), -ESRCH);
}
END_TEST

static void *wait_forever(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* A child whose main thread exits while its second thread waits: its
 * leader is a zombie with PF_EXITING, the process is not yet reapable. */
START_TEST(exiting_but_not_yet_reapable)
{
    struct oci_proc_stat st = {0};
    siginfo_t si;
    int status, i;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, wait_forever, NULL) != 0)
            _exit(1);
        pthread_exit(NULL);
    }
    for (i = 0; i < 500; i++) {
        ck_assert_int_eq(oci_proc_stat(pid, &st), 0);
        if (st.exiting)
            break;
        usleep(10000);
    }
    ck_assert(st.exiting);
    memset(&si, 0, sizeof(si));
    ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT), 0);
    ck_assert_int_eq(si.si_pid, 0); /* nothing to reap while a thread lives */
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
END_TEST

/* As root (with CAP_SYS_ADMIN): in a new PID namespace with its own /proc (the process that reads it is
 * its pid 1): the session of the caller, whose leader is outside, reads 0;
 * so does a zombie child's, and one that made its own session reads its own
 * pid.  Runs in a grandchild; each failed check is a distinct exit code. */
static int in_new_pid_namespace(void)
{
    struct oci_proc_stat me, st;
    pid_t kids[4], zombie, other;
    siginfo_t si;

    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount("proc", "/proc", "proc", 0, NULL) < 0)
        return 10;
    if (getpid() != 1 || getsid(0) != 0)
        return 11;
    if (oci_proc_stat(getpid(), &me) != 0 || me.session != 0 || me.state != 'R')
        return 12;
    zombie = fork();
    if (zombie < 0)
        return 13;
    if (zombie == 0)
        _exit(0);
    other = fork();
    if (other < 0)
        return 13;
    if (other == 0) {
        if (setsid() < 0)
            _exit(1);
        _exit(0);
    }
    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t)zombie, &si, WEXITED | WNOWAIT) < 0 ||
        waitid(P_PID, (id_t)other, &si, WEXITED | WNOWAIT) < 0)
        return 14;
    if (oci_children_list(0, kids, 4) != 2 || !listed(kids, 2, zombie) || !listed(kids, 2, other))
        return 15;
    if (oci_proc_stat(zombie, &st) != 0 || st.session != 0 || st.state != 'Z')
        return 16;
    if (oci_proc_stat(other, &st) != 0 || st.session != other || st.state != 'Z' || si.si_status != 0)
        return 17;
    return 0;
}

START_TEST(session_zero_in_a_pid_namespace)
{
    int status;
    pid_t pid = fork();

    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* The namespace's first process is the next child. */
        if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
            _exit(2);
        pid_t init = fork();
        if (init < 0)
            _exit(3);
        if (init == 0)
            _exit(in_new_pid_namespace());
        if (waitpid(init, &status, 0) != init || !WIFEXITED(status))
            _exit(4);
        _exit(WEXITSTATUS(status));
    }
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/* Whether this process may make a PID and mount namespace (CAP_SYS_ADMIN:
 * root on CI's machines; not root in a default container). */
static bool may_unshare(void)
{
    int status;
    pid_t pid = fork();

    if (pid == 0)
        _exit(unshare(CLONE_NEWPID | CLONE_NEWNS) == 0 ? 0 : 1);
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static Suite *make_suite(void)
{
    Suite *s = suite_create("children");
    TCase *tc = test_case(s, "children");

    tcase_add_test(tc, children_and_their_sessions);
    tcase_add_test(tc, exiting_but_not_yet_reapable);
    if (may_unshare())
        tcase_add_test(tc, session_zero_in_a_pid_namespace);
    else
        printf("test-children: no CAP_SYS_ADMIN, so session_zero_in_a_pid_namespace is not run\n");
    return s;
}

TEST_MAIN()
