/* SPDX-License-Identifier: MIT */
/*
 * broker-serial.c -- the plugin ABI's promise (plugin.h, "Threading"): a
 * runtime instance whose plugin does not declare BERTH_RUNTIME_CONCURRENT
 * is never called from two threads at once.  Such a backend's ops and
 * state are replaced by a wrapper that takes the instance's own lock
 * around every call, so starts, stops and reaps on different threads
 * queue up for it; every call site stays as it is.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "broker-internal.h"

struct broker_serial {
    struct berth_runtime_ops_v1 ops; /* the wrappers, NULL where the plugin's op is */
    const struct berth_runtime_ops_v1 *real;
    void *state;
    pthread_mutex_t lock;
};

#define SERIAL_CALL(st, member, ...)                                                                                   \
    ({                                                                                                                 \
        struct broker_serial *s_ = (st);                                                                               \
        int r_;                                                                                                        \
        pthread_mutex_lock(&s_->lock);                                                                                 \
        r_ = s_->real->member(s_->state, __VA_ARGS__);                                                                 \
        pthread_mutex_unlock(&s_->lock);                                                                               \
        r_;                                                                                                            \
    })

static int serial_capabilities(void *st, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, capabilities, ret_json, ret_len, reterr);
}

static int serial_start(void *st, const char *dispatch, size_t len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, start, dispatch, len, reterr);
}

static int serial_inspect(void *st, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, inspect, job_id, ret_json, ret_len, reterr);
}

static int serial_cancel(void *st, const char *job_id, struct berth_error *reterr)
{
    return SERIAL_CALL(st, cancel, job_id, reterr);
}

static int serial_reap(void *st, const char *job_id, struct berth_error *reterr)
{
    return SERIAL_CALL(st, reap, job_id, reterr);
}

static int serial_open_output(void *st, const char *job_id, const char *output_id, int *ret_fd, uint64_t *ret_size,
                              struct berth_error *reterr)
{
    return SERIAL_CALL(st, open_output, job_id, output_id, ret_fd, ret_size, reterr);
}

static int serial_forget(void *st, const char *job_id, struct berth_error *reterr)
{
    return SERIAL_CALL(st, forget, job_id, reterr);
}

static int serial_provision(void *st, const char *slot, size_t len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, provision, slot, len, reterr);
}

static int serial_claim(void *st, const char *slot_id, const char *dispatch, size_t len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, claim, slot_id, dispatch, len, reterr);
}

static int serial_discard(void *st, const char *slot_id, struct berth_error *reterr)
{
    return SERIAL_CALL(st, discard, slot_id, reterr);
}

static int serial_slots(void *st, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return SERIAL_CALL(st, slots, ret_json, ret_len, reterr);
}

int broker_serial_wrap(struct berth_broker *b)
{
    size_t i;

    b->serial = calloc(b->p.n_backends ? b->p.n_backends : 1, sizeof(*b->serial));
    if (!b->serial)
        return -ENOMEM;
    for (i = 0; i < b->p.n_backends; i++) {
        struct berth_broker_backend *be = &b->backends[i];
        const struct berth_runtime_ops_v1 *real = be->ops;
        struct broker_serial *s;

        if (!real || (real->flags & BERTH_RUNTIME_CONCURRENT))
            continue;
        s = calloc(1, sizeof(*s));
        if (!s)
            return -ENOMEM;
        s->real = real;
        s->state = be->state;
        pthread_mutex_init(&s->lock, NULL);
        s->ops.capabilities = real->capabilities ? serial_capabilities : NULL;
        s->ops.start = real->start ? serial_start : NULL;
        s->ops.inspect = real->inspect ? serial_inspect : NULL;
        s->ops.cancel = real->cancel ? serial_cancel : NULL;
        s->ops.reap = real->reap ? serial_reap : NULL;
        s->ops.open_output = real->open_output ? serial_open_output : NULL;
        s->ops.forget = real->forget ? serial_forget : NULL;
        s->ops.flags = real->flags;
        s->ops.provision = real->provision ? serial_provision : NULL;
        s->ops.claim = real->claim ? serial_claim : NULL;
        s->ops.discard = real->discard ? serial_discard : NULL;
        s->ops.slots = real->slots ? serial_slots : NULL;
        b->serial[i] = s;
        be->ops = &s->ops;
        be->state = s;
    }
    return 0;
}

void broker_serial_free(struct berth_broker *b)
{
    size_t i;

    for (i = 0; b->serial && i < b->p.n_backends; i++)
        if (b->serial[i]) {
            pthread_mutex_destroy(&b->serial[i]->lock);
            free(b->serial[i]);
        }
    free(b->serial);
    b->serial = NULL;
}
