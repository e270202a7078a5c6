/* SPDX-License-Identifier: MIT */
/*
 * offload.h -- work the event loop must not wait for, run on a helper
 * thread of its own: every evidence-store operation of the API
 * (broker-evidence.h: a commit hashes and fdatasyncs up to 1 GiB, and every
 * other call may wait for the evidence lock that a commit holds).
 *
 * A task is queued on the loop thread, run() on the helper thread (one
 * task at a time, in the order queued), and then done() back on the loop
 * thread, which is told through an event (libevent with evthread, so it
 * may be activated from the helper thread).  A task's memory is its
 * owner's; the helper thread touches only what run() touches.
 *
 * Not thread-safe but as said: berthd_offload_new(), _submit() and _free()
 * on the loop thread only.
 */
#ifndef BERTHD_OFFLOAD_H
#define BERTHD_OFFLOAD_H

#include <stdbool.h>

#include <event2/event.h>

struct berthd_offload_task;

/**
 * struct berthd_offload_task - one piece of work.
 * @run:  called on the helper thread.
 * @done: called on the loop thread after @run, or instead of it when the
 *        offload is freed first (@ran false); it releases the task.
 * @ran:  whether @run was called.
 * @next: the offload's own.
 */
struct berthd_offload_task {
    void (*run)(struct berthd_offload_task *t);
    void (*done)(struct berthd_offload_task *t);
    bool ran;
    struct berthd_offload_task *next;
};

struct berthd_offload;

/**
 * berthd_offload_new() - start the helper thread; done() calls arrive on
 * @base's loop at @priority.  Return: 0; -ENOMEM; the pthread_create(3)
 * error.
 */
int berthd_offload_new(struct event_base *base, int priority, struct berthd_offload **ret);

/** berthd_offload_submit() - queue @t (its @run and @done set). */
void berthd_offload_submit(struct berthd_offload *o, struct berthd_offload_task *t);

/**
 * berthd_offload_free() - let the task running finish, join the thread,
 * then call done() of every task left (queued ones with @ran false),
 * on the calling thread.  Accepts NULL.
 */
void berthd_offload_free(struct berthd_offload *o);

#endif
