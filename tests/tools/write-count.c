/* SPDX-License-Identifier: MIT */
/*
 * write-count.c -- a test tool: how many write(2) calls a program makes to
 * its standard error.
 *
 *   write-count PROGRAM [ARGS...]
 *
 * runs PROGRAM with its standard error on one end of a SOCK_SEQPACKET
 * socket pair, which keeps the boundary of every write as one message
 * (unix(7)), and its standard input and output on /dev/null.  Prints
 * "writes=N partial=M" on a line of its own, M being the writes that did
 * not end at a line end (a line split over writes), then the bytes PROGRAM
 * wrote, as they were.  Exit status: PROGRAM's (128 + the signal when it was killed), or
 * 127 with a line on standard error when it cannot be run.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MESSAGE_MAX 65536
#define OUTPUT_MAX (1024 * 1024)

int main(int argc, char **argv)
{
    static char out[OUTPUT_MAX], msg[MESSAGE_MAX];
    size_t used = 0, writes = 0, partial = 0;
    int sv[2], st;
    pid_t pid;

    if (argc < 2) {
        fprintf(stderr, "usage: write-count PROGRAM [ARGS...]\n");
        return 127;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        perror("write-count: socketpair");
        return 127;
    }
    pid = fork();
    if (pid < 0) {
        perror("write-count: fork");
        return 127;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(sv[1], 2) < 0)
            _exit(127);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(sv[1]);
    for (;;) {
        ssize_t n = recv(sv[0], msg, sizeof(msg), 0);
        if (n <= 0)
            break; /* 0: every holder of the other end closed it */
        writes++;
        if (msg[n - 1] != '\n')
            partial++;
        if (used + (size_t)n <= sizeof(out)) {
            memcpy(out + used, msg, (size_t)n);
            used += (size_t)n;
        }
    }
    if (waitpid(pid, &st, 0) < 0) {
        perror("write-count: waitpid");
        return 127;
    }
    printf("writes=%zu partial=%zu\n", writes, partial);
    fwrite(out, 1, used, stdout);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
