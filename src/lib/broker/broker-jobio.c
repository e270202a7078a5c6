/* SPDX-License-Identifier: MIT */
/*
 * broker-jobio.c -- the evidence store calls the job paths make (admission
 * looks inputs up, dispatch stages them, reconcile captures outputs), each
 * under the broker's evidence lock (berth_broker_evidence_acquire(),
 * broker-evidence.h): the store has one instance, called from the request
 * threads and the worker, and a plugin instance is never called from two
 * threads at once (plugin.h).  The broker lock is never held here, so a
 * long put() does not stall admission.
 */
#include <errno.h>
#include <stdlib.h>

#include "broker-evidence.h"
#include "broker-internal.h"
#include "canon.h"
#include "jsonobj.h"
#include "macro.h"

#define EVIDENCE_DOC_MAX (64 * 1024)

int broker_evidence_key(const char *digest, const char *principal, const char *scope, char **ret, size_t *ret_len,
                        struct berth_error *reterr)
{
    _cleanup_json_ json_t *key = NULL;

    key = json_pack("{s:s, s:s, s:o}", "digest", digest, "principal", principal, "scope",
                    json_loads(scope, JSON_REJECT_DUPLICATES, NULL));
    if (!key)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_json_serialize(key, 0, ret, ret_len, reterr);
}

static int no_store(const struct berth_broker *b, struct berth_error *reterr)
{
    return b->p.evidence_ops ? 0 : berth_error_set(reterr, -EOPNOTSUPP, "this broker has no evidence store");
}

int broker_evidence_stat(struct berth_broker *b, const char *key, size_t key_len, json_t **ret,
                         struct berth_error *reterr)
{
    const struct berth_evidence_store_ops_v1 *ops;
    _cleanup_free_ char *text = NULL;
    void *state = NULL;
    size_t len = 0;
    int r;

    if ((r = no_store(b, reterr)) < 0)
        return r;
    ops = berth_broker_evidence_acquire(b, &state);
    r = ops->stat(state, key, key_len, &text, &len, reterr);
    berth_broker_evidence_release(b);
    if (r < 0)
        return r;
    return berth_json_parse(text, len, EVIDENCE_DOC_MAX, ret, reterr) < 0 ? -EIO : 0;
}

int broker_evidence_get(struct berth_broker *b, const char *key, size_t key_len, int out_fd, uint64_t max_bytes,
                        struct berth_error *reterr)
{
    const struct berth_evidence_store_ops_v1 *ops;
    void *state = NULL;
    int r;

    if ((r = no_store(b, reterr)) < 0)
        return r;
    ops = berth_broker_evidence_acquire(b, &state);
    r = ops->get(state, key, key_len, out_fd, max_bytes, reterr);
    berth_broker_evidence_release(b);
    return r;
}

int broker_evidence_put(struct berth_broker *b, const json_t *meta, int data_fd, json_t **ret_ref,
                        struct berth_error *reterr)
{
    const struct berth_evidence_store_ops_v1 *ops;
    _cleanup_free_ char *text = NULL, *ref = NULL;
    size_t len = 0, ref_len = 0;
    void *state = NULL;
    int r;

    if ((r = no_store(b, reterr)) < 0)
        return r;
    if ((r = berth_json_serialize(meta, 0, &text, &len, reterr)) < 0)
        return r;
    ops = berth_broker_evidence_acquire(b, &state);
    r = ops->put(state, text, len, data_fd, &ref, &ref_len, reterr);
    berth_broker_evidence_release(b);
    if (r < 0)
        return r;
    return berth_json_parse(ref, ref_len, EVIDENCE_DOC_MAX, ret_ref, reterr) < 0 ? -EIO : 0;
}
