/* SPDX-License-Identifier: MIT */
/* broker-internal.h -- what broker.c and broker-worker.c share; not installed. */
#ifndef BERTH_BROKER_INTERNAL_H
#define BERTH_BROKER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "broker.h"
#include "placement.h"
#include "registry.h"

/* Back-off for unproven teardowns: 1 s doubling to 60 s, for this many jobs at once (more are asked every pass). */
#define BROKER_TEARDOWN_RETRY_MAX 64
#define BROKER_TEARDOWN_RETRY_FIRST_NS 1000000000LL
#define BROKER_TEARDOWN_RETRY_MAX_NS (60LL * 1000000000LL)

struct berth_broker {
    struct berth_broker_params p;
    struct berth_broker_backend *backends;
    pthread_mutex_t lock; /* journal, registry, policy source, backend set */
    struct berth_registry *reg;
    struct berth_backend_set *offers; /* from the last capabilities refresh */
    json_t *capabilities;             /* {backend: capabilities()} from that refresh */
    atomic_bool stopping;             /* berth_broker_stop() was called */
    char (*caps_errors)[512];         /* per backend: the last capabilities() error logged, "" when fine */
    struct broker_teardown_retry {    /* jobs whose teardown was not proven: when to ask again (worker thread) */
        char run_id[64];
        unsigned attempts;
        int64_t next_ns; /* CLOCK_MONOTONIC */
    } teardown_retry[BROKER_TEARDOWN_RETRY_MAX];
};

/* The authenticated caller, resolved under the lock. */
struct broker_caller {
    const struct berth_subject *subject; /* borrowed from the current policy */
    char *scope;                         /* canonical JSON of subject->scope */
};

void broker_caller_clear(struct broker_caller *c);

/* Resolve @fingerprint against the current policy (lock held); fills
 * @reply with 403 and returns -EACCES when denied. */
int broker_authenticate(struct berth_broker *b, const char *fingerprint, struct broker_caller *c,
                        struct berth_reply *reply);

/* Fill @reply with an error. */
void broker_fail(struct berth_reply *reply, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The backend named @name, or NULL. */
const struct berth_broker_backend *broker_backend(const struct berth_broker *b, const char *name);

/* Append a job.* audit event in the open transaction. */
int broker_audit(struct berth_broker *b, const char *type, const struct berth_job_record *rec, const char *actor,
                 json_t *extra, struct berth_error *reterr);

/* Stage @rec's @image below stage_directory (broker-stage.c) unless staged
 * already; *@ret_rootfs = its absolute path, or NULL without a stager.
 * -EBADMSG: the image source refused it (reterr starts with the reason code);
 * other errors may pass. */
int broker_stage(struct berth_broker *b, const struct berth_job_record *rec, const char *image, char **ret_rootfs,
                 struct berth_error *reterr);

/* Remove @rec's staged rootfs, if any (best effort; logged). */
void broker_unstage(struct berth_broker *b, const struct berth_job_record *rec);

/* Call the fault hook. */
void broker_fault(struct berth_broker *b, const char *point);

#endif
