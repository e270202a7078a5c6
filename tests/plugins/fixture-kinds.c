/* SPDX-License-Identifier: MIT */
/*
 * fixture-kinds.c -- one well-formed plugin of each non-runtime kind, chosen
 * with -DFIXTURE_IMAGE_SOURCE, -DFIXTURE_EVIDENCE_STORE or
 * -DFIXTURE_CONTAINMENT.  Every op except capabilities answers -EOPNOTSUPP; the
 * tests only check that the loader accepts the kind and exposes its table.
 * -DFIXTURE_EVIDENCE_V10 with -DFIXTURE_EVIDENCE_STORE makes an evidence store
 * built for ABI 1.0: its table ends after tombstone, so the ops appended in
 * 1.1 must read NULL.
 */
#include "fixture.h"

#define REFUSE(reterr) berth_error_set(reterr, -EOPNOTSUPP, "fixture")

#if defined(FIXTURE_IMAGE_SOURCE)
#define FIXTURE_NAME "fixture-image-source"
#define FIXTURE_KIND BERTH_PLUGIN_IMAGE_SOURCE
static int fx_resolve(void *s, const char *digest, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return fixture_json("{\"layers\":0}", ret_json, ret_len);
}
static int fx_stage(void *s, const char *digest, int dirfd, const char *limits, size_t limits_len, char **ret_json,
                    size_t *ret_len, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static const struct berth_image_source_ops_v1 fx_ops = {.resolve = fx_resolve, .stage = fx_stage};

#elif defined(FIXTURE_EVIDENCE_STORE)
#ifdef FIXTURE_EVIDENCE_V10
#define FIXTURE_NAME "fixture-evidence-v10"
#define FIXTURE_ABI_VERSION BERTH_PLUGIN_ABI_PACK(1, 0)
#define FIXTURE_OPS_SIZE BERTH_EVIDENCE_STORE_OPS_V1_0_SIZE
#else
#define FIXTURE_NAME "fixture-evidence-store"
#endif
#define FIXTURE_KIND BERTH_PLUGIN_EVIDENCE_STORE
static int fx_put(void *s, const char *meta, size_t meta_len, int fd, char **ret_ref, size_t *ret_len,
                  struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_get(void *s, const char *ref, size_t ref_len, int fd, uint64_t max, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_stat(void *s, const char *ref, size_t ref_len, char **ret_json, size_t *ret_len,
                   struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_remove(void *s, const char *ref, size_t ref_len, const char *reason, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_upload(void *s, int *ret_fd, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_prune(void *s, int64_t now_ns, uint32_t max, char **ret_json, size_t *ret_len,
                    struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static const struct berth_evidence_store_ops_v1 fx_ops = {
    .put = fx_put,
    .get = fx_get,
    .stat = fx_stat,
    .remove = fx_remove,
    .tombstone = fx_stat,
    /* ABI 1.1; a 1.0 table ends before them (FIXTURE_OPS_SIZE). */
    .upload = fx_upload,
    .list = fx_stat,
    .usage = fx_stat,
    .prune = fx_prune,
};

#elif defined(FIXTURE_CONTAINMENT)
#define FIXTURE_NAME "fixture-containment"
#define FIXTURE_KIND BERTH_PLUGIN_CONTAINMENT
static int fx_capabilities(void *s, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return fixture_json("{\"controllers\":[]}", ret_json, ret_len);
}
static int fx_create(void *s, const char *spec, size_t spec_len, char **ret_json, size_t *ret_len,
                     struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_attach(void *s, const char *job_id, int pidfd, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_kill(void *s, const char *job_id, int signo, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_status(void *s, const char *job_id, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static int fx_destroy(void *s, const char *job_id, struct berth_error *reterr)
{
    return REFUSE(reterr);
}
static const struct berth_containment_ops_v1 fx_ops = {
    .capabilities = fx_capabilities,
    .create = fx_create,
    .attach = fx_attach,
    .kill = fx_kill,
    .status = fx_status,
    .destroy = fx_destroy,
};
/* Built as ABI 1.0 tables are: without units (appended in 1.3). */
#define FIXTURE_OPS_SIZE BERTH_CONTAINMENT_OPS_V1_0_SIZE
#else
#error "define FIXTURE_IMAGE_SOURCE, FIXTURE_EVIDENCE_STORE or FIXTURE_CONTAINMENT"
#endif
#ifndef FIXTURE_ABI_VERSION
#define FIXTURE_ABI_VERSION BERTH_PLUGIN_ABI_VERSION
#endif
#ifndef FIXTURE_OPS_SIZE
#define FIXTURE_OPS_SIZE sizeof(fx_ops)
#endif

static const struct berth_plugin fx_descriptor = {
    .abi_version = FIXTURE_ABI_VERSION,
    .struct_size = sizeof(struct berth_plugin),
    .name = FIXTURE_NAME,
    .kind = FIXTURE_KIND,
    .version = FIXTURE_VERSION,
    .ops = &fx_ops,
    .ops_size = FIXTURE_OPS_SIZE,
};

const struct berth_plugin *berth_plugin_entry(void)
{
    return &fx_descriptor;
}
