/* SPDX-License-Identifier: MIT */
/* host-table.c -- host table functions lent to plugins; see host-table.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "canon.h"
#include "clock.h"
#include "digest.h"
#include "fsutil.h"
#include "host-table.h"
#include "enrol.h"

static const struct berth_host_instance *instance_of(const struct berth_host *h)
{
    return h ? (const struct berth_host_instance *)h->host_data : NULL;
}

BERTH_PRINTF(3, 4)
static void host_log(const struct berth_host *h, int level, const char *fmt, ...)
{
    const struct berth_host_instance *inst = instance_of(h);
    char line[BERTH_LOG_LINE_MAX + 1];
    va_list ap;

    if (!inst || !inst->logger || !fmt)
        return;
    if (level < BERTH_LOG_ERR)
        level = BERTH_LOG_ERR; /* a plugin cannot raise an alert or emergency */
    if (level > BERTH_LOG_DEBUG)
        level = BERTH_LOG_DEBUG;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    berth_logf(inst->logger, level, "%s: %s", inst->instance[0] ? inst->instance : "plugin", line);
}

static int64_t host_now_ns(const struct berth_host *h, int clock)
{
    clockid_t id;
    int64_t now;
    int r;

    (void)h;
    switch (clock) {
    case BERTH_CLOCK_REALTIME: id = CLOCK_REALTIME; break;
    case BERTH_CLOCK_MONOTONIC: id = CLOCK_MONOTONIC; break;
    default: return -EINVAL;
    }
    r = berth_now_ns(id, &now, NULL);
    return r < 0 ? r : now;
}

static int host_digest(const struct berth_host *h, const void *data, size_t len, char ret_digest[BERTH_DIGEST_BUFSZ])
{
    (void)h;
    if (!ret_digest)
        return -EINVAL;
    return berth_digest_bytes(data, len, ret_digest);
}

static int host_canonicalize(const struct berth_host *h, const char *json, size_t len, size_t max_bytes,
                             char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    (void)h;
    return berth_json_canonicalize(json, len, max_bytes, ret_json, ret_len, reterr);
}

static int host_open_beneath(const struct berth_host *h, int dirfd, const char *path, int flags, uint32_t mode,
                             struct berth_error *reterr)
{
    (void)h;
    return berth_open_beneath(dirfd, path, flags, (mode_t)mode, reterr);
}

static int host_read_file(const struct berth_host *h, int dirfd, const char *path,
                          const struct berth_file_expect *expect, char **ret_buf, size_t *ret_len,
                          struct berth_error *reterr)
{
    (void)h;
    if (path && path[0] == '/')
        return berth_error_set(reterr, -EXDEV, "%s: absolute path where a relative one is required", path);
    return berth_read_file_at(dirfd, path, expect, ret_buf, ret_len, reterr);
}

static int host_publish_file(const struct berth_host *h, int dirfd, const char *name, const void *data, size_t len,
                             uint32_t mode, uint32_t flags, struct berth_error *reterr)
{
    (void)h;
    return berth_publish_at(dirfd, name, data, len, (mode_t)mode, flags, reterr);
}

static void host_job_changed(const struct berth_host *h, const char *job_id)
{
    struct berth_host_instance *inst = h ? (struct berth_host_instance *)h->host_data : NULL;

    if (!inst || !berth_job_id_valid(job_id))
        return;
    pthread_mutex_lock(&inst->notify_lock);
    if (inst->notify)
        inst->notify(inst->notify_userdata, inst->instance, job_id);
    pthread_mutex_unlock(&inst->notify_lock);
}

void berth_host_instance_set_notify(struct berth_host_instance *inst, berth_host_notify_fn *fn, void *userdata)
{
    pthread_mutex_lock(&inst->notify_lock);
    inst->notify = fn;
    inst->notify_userdata = userdata;
    pthread_mutex_unlock(&inst->notify_lock);
}

static int host_containment(const struct berth_host *h, const struct berth_containment_ops_v1 **ret_ops,
                            size_t *ret_ops_size, void **ret_state)
{
    /* host_data is the caller's writable struct berth_host_instance. */
    struct berth_host_instance *inst = h ? (struct berth_host_instance *)h->host_data : NULL;

    if (!inst || !ret_ops || !ret_ops_size || !ret_state)
        return -EINVAL;
    if (!inst->containment)
        return -ENOENT;
    *ret_ops = &inst->containment->table;
    *ret_ops_size = sizeof(inst->containment->table);
    *ret_state = inst->containment;
    atomic_store(&inst->containment_taken, true);
    return 0;
}

void berth_host_instance_set_containment(struct berth_host_instance *inst, struct berth_containment_binding *b)
{
    inst->containment = b;
}

bool berth_host_instance_containment_taken(const struct berth_host_instance *inst)
{
    return atomic_load(&inst->containment_taken);
}

const struct berth_host *berth_host_instance_init(struct berth_host_instance *inst, const char *instance,
                                                  const struct berth_logger *logger)
{
    memset(inst, 0, sizeof(*inst));
    snprintf(inst->instance, sizeof(inst->instance), "%s", instance ? instance : "");
    inst->logger = logger;
    inst->host.struct_size = sizeof(struct berth_host);
    inst->host.abi_version = BERTH_PLUGIN_ABI_VERSION;
    inst->host.instance = inst->instance;
    inst->host.host_data = inst;
    inst->host.log = host_log;
    inst->host.now_ns = host_now_ns;
    inst->host.digest = host_digest;
    inst->host.canonicalize = host_canonicalize;
    inst->host.open_beneath = host_open_beneath;
    inst->host.read_file = host_read_file;
    inst->host.publish_file = host_publish_file;
    inst->host.job_changed = host_job_changed;
    inst->host.containment = host_containment;
    /* A statically initialised mutex needs no pthread_mutex_destroy(). */
    inst->notify_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    atomic_init(&inst->containment_taken, false);
    return &inst->host;
}
