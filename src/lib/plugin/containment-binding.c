/* SPDX-License-Identifier: MIT */
/* containment-binding.c -- serialized forwarding of containment ops; see containment-binding.h. */
#include <string.h>

#include "containment-binding.h"

/* Each forwarder runs the plugin's op under the binding's lock.  The
 * forwarders exist only for ops the plugin has (the table says NULL
 * otherwise), so the target member is never NULL here. */

static int fw_capabilities(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->capabilities(b->state, ret_json, ret_len, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_create(void *state, const char *spec, size_t spec_len, char **ret_json, size_t *ret_len,
                     struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->create(b->state, spec, spec_len, ret_json, ret_len, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_attach(void *state, const char *job_id, int pidfd, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->attach(b->state, job_id, pidfd, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_kill(void *state, const char *job_id, int signo, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->kill(b->state, job_id, signo, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_status(void *state, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->status(b->state, job_id, ret_json, ret_len, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_destroy(void *state, const char *job_id, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->destroy(b->state, job_id, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

static int fw_units(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct berth_containment_binding *b = state;
    int r;

    pthread_mutex_lock(&b->lock);
    r = b->target->units(b->state, ret_json, ret_len, reterr);
    pthread_mutex_unlock(&b->lock);
    return r;
}

void berth_containment_binding_init(struct berth_containment_binding *b, const struct berth_containment_ops_v1 *target,
                                    void *state)
{
    memset(b, 0, sizeof(*b));
    b->target = target;
    b->state = state;
    /* A statically initialised mutex needs no pthread_mutex_destroy(). */
    b->lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    b->table.capabilities = target->capabilities ? fw_capabilities : NULL;
    b->table.create = target->create ? fw_create : NULL;
    b->table.attach = target->attach ? fw_attach : NULL;
    b->table.kill = target->kill ? fw_kill : NULL;
    b->table.status = target->status ? fw_status : NULL;
    b->table.destroy = target->destroy ? fw_destroy : NULL;
    b->table.units = target->units ? fw_units : NULL;
}
