/* SPDX-License-Identifier: MIT */
/* test-oci.c -- strict OCI manifest, config and index parsing (src/image/oci.h). */
#include "imagetest.h"

#include "macro.h"
#include "oci.h"
#include "refusal.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"
#define TGZ "application/vnd.oci.image.layer.v1.tar+gzip"
#define CFG "{\"mediaType\":\"" BERTH_OCI_CONFIG_TYPE "\",\"digest\":\"" D1 "\",\"size\":100}"

static const char *arch(void)
{
    const char *a = berth_oci_host_architecture();
    ck_assert_ptr_nonnull(a);
    return a;
}

/* A manifest with one layer of media type @mt and extra descriptor members @extra. */
static int manifest_with_layer(const char *mt, const char *extra, struct berth_oci_image **img, struct berth_error *err)
{
    char buf[1024];

    snprintf(buf, sizeof(buf),
             "{\"schemaVersion\":2,\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"config\":" CFG
             ",\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"" D2 "\",\"size\":5%s}]}",
             mt, extra);
    return berth_oci_manifest_parse(buf, strlen(buf), img, err);
}

static int parse_manifest(const char *text, struct berth_error *err)
{
    struct berth_oci_image *img = NULL;
    int r = berth_oci_manifest_parse(text, strlen(text), &img, err);

    free(img);
    return r;
}

START_TEST(manifest_ok)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    const char *m = "{\"schemaVersion\":2,\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"config\":" CFG
                    ",\"layers\":[{\"mediaType\":\"" TGZ "\",\"digest\":\"" D2 "\",\"size\":5},"
                    "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"" D3
                    "\",\"size\":7,\"annotations\":{\"a\":\"b\"}}],\"annotations\":{\"x\":\"y\"}}";

    ck_assert_int_eq(berth_oci_manifest_parse(m, strlen(m), &img, &err), 0);
    ck_assert_uint_eq(img->n_layers, 2);
    ck_assert_str_eq(img->config.digest, D1);
    ck_assert_uint_eq(img->config.size, 100);
    ck_assert_str_eq(img->layers[0].blob.digest, D2);
    ck_assert_int_eq(img->layers[0].compression, BERTH_LAYER_GZIP);
    ck_assert_int_eq(img->layers[1].compression, BERTH_LAYER_TAR);
    ck_assert_uint_eq(img->compressed_bytes, 112);
    ck_assert_str_eq(img->layers[0].diff_id, "");
}
END_TEST

START_TEST(manifest_layer_types)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_oci_image *img = NULL;

    ck_assert_int_eq(manifest_with_layer("application/vnd.docker.image.rootfs.diff.tar.gzip", "", &img, &err), 0);
    ck_assert_int_eq(img->layers[0].compression, BERTH_LAYER_GZIP);
    free(img);
    img = NULL;
    ck_assert_int_eq(manifest_with_layer("application/vnd.oci.image.layer.v1.tar+zstd", "", &img, &err), -EBADMSG);
    image_assert_reason(&err, "media-type");
    ck_assert_int_eq(
        manifest_with_layer("application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", "", &img, &err), -EBADMSG);
    image_assert_reason(&err, "foreign-layer");
    ck_assert_int_eq(manifest_with_layer("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", "", &img, &err),
                     -EBADMSG);
    image_assert_reason(&err, "foreign-layer");
    ck_assert_int_eq(manifest_with_layer("application/x-tar", "", &img, &err), -EBADMSG);
    image_assert_reason(&err, "media-type");
    ck_assert_int_eq(manifest_with_layer(TGZ, ",\"urls\":[\"http://x\"]", &img, &err), -EBADMSG);
    image_assert_reason(&err, "descriptor-urls");
    ck_assert_int_eq(manifest_with_layer(TGZ, ",\"data\":\"aGk=\"", &img, &err), -EBADMSG);
    image_assert_reason(&err, "descriptor-data");
    ck_assert_int_eq(manifest_with_layer(TGZ, ",\"platform\":{}", &img, &err), -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_ptr_null(img);
}
END_TEST

START_TEST(manifest_refusals)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *big;
    size_t i;
    int n;

    /* Unknown member, duplicate key, wrong schema version, no layers. */
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[{\"mediaType\":\"" TGZ
                                    "\",\"digest\":\"" D2 "\",\"size\":5}],\"extra\":1}",
                                    &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[]}", &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":1,\"config\":" CFG ",\"layers\":[{\"mediaType\":\"" TGZ
                                    "\",\"digest\":\"" D2 "\",\"size\":5}]}",
                                    &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[]}", &err), -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    /* An index where a manifest is pinned. */
    ck_assert_int_eq(
        parse_manifest("{\"schemaVersion\":2,\"mediaType\":\"" BERTH_OCI_INDEX_TYPE "\",\"manifests\":[]}", &err),
        -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_ptr_nonnull(strstr(err.message, "image index"));
    /* Config of another media type; a sha512 digest; two sizes for one digest. */
    ck_assert_int_eq(
        parse_manifest("{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/json\",\"digest\":\"" D1
                       "\",\"size\":1},\"layers\":[{\"mediaType\":\"" TGZ "\",\"digest\":\"" D2 "\",\"size\":5}]}",
                       &err),
        -EBADMSG);
    image_assert_reason(&err, "media-type");
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[{\"mediaType\":\"" TGZ
                                    "\",\"digest\":\"sha512:00\",\"size\":5}]}",
                                    &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[{\"mediaType\":\"" TGZ
                                    "\",\"digest\":\"" D2 "\",\"size\":5},{\"mediaType\":\"" TGZ "\",\"digest\":\"" D2
                                    "\",\"size\":6}]}",
                                    &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    ck_assert_ptr_nonnull(strstr(err.message, "two sizes"));
    /* A subject that is no descriptor. */
    ck_assert_int_eq(parse_manifest("{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[{\"mediaType\":\"" TGZ
                                    "\",\"digest\":\"" D2 "\",\"size\":5}],\"subject\":7}",
                                    &err),
                     -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    /* 129 layers. */
    big = malloc(200 * 1024);
    ck_assert_ptr_nonnull(big);
    n = sprintf(big, "{\"schemaVersion\":2,\"config\":" CFG ",\"layers\":[");
    for (i = 0; i < 129; i++)
        n += sprintf(big + n, "%s{\"mediaType\":\"" TGZ "\",\"digest\":\"" D2 "\",\"size\":5}", i ? "," : "");
    sprintf(big + n, "]}");
    ck_assert_int_eq(parse_manifest(big, &err), -EFBIG);
    image_assert_reason(&err, "layer-budget");
    free(big);
    /* Over 1 MiB. */
    big = malloc(BERTH_IMAGE_METADATA_MAX + 64);
    ck_assert_ptr_nonnull(big);
    memset(big, ' ', BERTH_IMAGE_METADATA_MAX + 63);
    big[0] = '{';
    big[BERTH_IMAGE_METADATA_MAX + 62] = '}';
    big[BERTH_IMAGE_METADATA_MAX + 63] = '\0';
    ck_assert_int_eq(parse_manifest(big, &err), -EBADMSG);
    image_assert_reason(&err, "invalid-manifest");
    free(big);
}
END_TEST

/* A config for @img (two layers) with platform fields @platform. */
static int check_config(struct berth_oci_image *img, const char *platform, const char *rootfs, struct berth_error *err)
{
    char buf[2048];

    snprintf(buf, sizeof(buf),
             "{%s,\"config\":{\"Env\":[\"PATH=/bin\"],\"Cmd\":[\"sh\"]},\"created\":\"1970-01-01T00:00:00Z\","
             "\"rootfs\":%s,\"history\":[]}",
             platform, rootfs);
    return berth_oci_config_check(img, buf, strlen(buf), arch(), err);
}

START_TEST(config_checks)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    char platform[128], other[128];
    const char *ids = "{\"type\":\"layers\",\"diff_ids\":[\"" D2 "\"]}";

    ck_assert_int_eq(manifest_with_layer(TGZ, "", &img, &err), 0);
    snprintf(platform, sizeof(platform), "\"os\":\"linux\",\"architecture\":\"%s\"", arch());
    snprintf(other, sizeof(other), "\"os\":\"linux\",\"architecture\":\"%s\"",
             streq(arch(), "amd64") ? "arm64" : "amd64");

    ck_assert_int_eq(check_config(img, other, ids, &err), -EBADMSG);
    image_assert_reason(&err, "platform");
    ck_assert_int_eq(check_config(img, "\"os\":\"windows\",\"architecture\":\"amd64\"", ids, &err), -EBADMSG);
    image_assert_reason(&err, "platform");
    ck_assert_str_eq(img->layers[0].diff_id, ""); /* unchanged on failure */
    {
        char v[192];
        snprintf(v, sizeof(v), "%s,\"variant\":\"v7\"", platform);
        ck_assert_int_eq(check_config(img, v, ids, &err), -EBADMSG);
        image_assert_reason(&err, "platform");
        snprintf(v, sizeof(v), "%s,\"os.features\":[\"x\"]", platform);
        ck_assert_int_eq(check_config(img, v, ids, &err), -EBADMSG);
        image_assert_reason(&err, "platform");
        snprintf(v, sizeof(v), "%s,\"container_config\":{}", platform);
        ck_assert_int_eq(check_config(img, v, ids, &err), -EBADMSG);
        image_assert_reason(&err, "invalid-config");
    }
    {
        char v[192], buf[512];
        snprintf(v, sizeof(v), "%s,\"author\":7", platform);
        ck_assert_int_eq(check_config(img, v, ids, &err), -EBADMSG);
        image_assert_reason(&err, "invalid-config");
        snprintf(buf, sizeof(buf), "{%s,\"history\":[1],\"rootfs\":%s}", platform, ids);
        ck_assert_int_eq(berth_oci_config_check(img, buf, strlen(buf), arch(), &err), -EBADMSG);
        image_assert_reason(&err, "invalid-config");
    }
    ck_assert_int_eq(check_config(img, platform, "{\"type\":\"layers\",\"diff_ids\":[]}", &err), -EBADMSG);
    image_assert_reason(&err, "invalid-config");
    ck_assert_int_eq(check_config(img, platform, "{\"type\":\"tarball\",\"diff_ids\":[\"" D2 "\"]}", &err), -EBADMSG);
    image_assert_reason(&err, "invalid-config");
    ck_assert_int_eq(check_config(img, platform, "{\"type\":\"layers\",\"diff_ids\":[\"sha256:AB\"]}", &err), -EBADMSG);
    image_assert_reason(&err, "invalid-config");

    ck_assert_int_eq(check_config(img, platform, ids, &err), 0);
    ck_assert_str_eq(img->layers[0].diff_id, D2);
    ck_assert_str_eq(img->os, "linux");
    ck_assert_str_eq(img->architecture, arch());
}
END_TEST

static int parse_index(const char *text, struct berth_oci_index **ret, struct berth_error *err)
{
    return berth_oci_index_parse(text, strlen(text), ret, err);
}

START_TEST(index_select)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_oci_index *idx = NULL;
    char buf[2048];
    const char *a = arch(), *b = streq(arch(), "amd64") ? "arm64" : "amd64";

    /* Two refs: a name is needed, and chooses. */
    ck_assert_int_eq(parse_index("{\"schemaVersion\":2,\"manifests\":["
                                 "{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"digest\":\"" D1
                                 "\",\"size\":10,\"annotations\":{\"" BERTH_OCI_REF_NAME "\":\"one\"}},"
                                 "{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"digest\":\"" D2
                                 "\",\"size\":10,\"annotations\":{\"" BERTH_OCI_REF_NAME "\":\"two\"}}]}",
                                 &idx, &err),
                     0);
    ck_assert_uint_eq(idx->n, 2);
    ck_assert_int_eq(berth_oci_index_select(idx, "two", a, &err), 1);
    ck_assert_int_eq(berth_oci_index_select(idx, "one", a, &err), 0);
    ck_assert_int_eq(berth_oci_index_select(idx, "three", a, &err), -ENOENT);
    image_assert_reason(&err, "invalid-index");
    ck_assert_int_eq(berth_oci_index_select(idx, NULL, a, &err), -EBADMSG);
    image_assert_reason(&err, "invalid-index");
    free(idx);

    /* One ref, two platforms: this host's is chosen; variants are not. */
    snprintf(buf, sizeof(buf),
             "{\"schemaVersion\":2,\"mediaType\":\"" BERTH_OCI_INDEX_TYPE "\",\"manifests\":["
             "{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"digest\":\"" D1
             "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"%s\"}},"
             "{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"digest\":\"" D3
             "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"%s\",\"variant\":\"v7\"}},"
             "{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE "\",\"digest\":\"" D2
             "\",\"size\":10,\"platform\":{\"os\":\"linux\",\"architecture\":\"%s\"}}]}",
             b, a, a);
    ck_assert_int_eq(parse_index(buf, &idx, &err), 0);
    ck_assert_int_eq(berth_oci_index_select(idx, NULL, a, &err), 2);
    ck_assert_int_eq(berth_oci_index_select(idx, NULL, "s390x", &err), -ENOENT);
    image_assert_reason(&err, "platform");
    free(idx);
    idx = NULL;

    /* Refusals. */
    ck_assert_int_eq(parse_index("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE
                                 "\",\"digest\":\"" D1 "\",\"size\":10,\"urls\":[\"https://x\"]}]}",
                                 &idx, &err),
                     -EBADMSG);
    image_assert_reason(&err, "descriptor-urls");
    ck_assert_int_eq(parse_index("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"" TGZ "\",\"digest\":\"" D1
                                 "\",\"size\":10}]}",
                                 &idx, &err),
                     -EBADMSG);
    image_assert_reason(&err, "media-type");
    ck_assert_int_eq(parse_index("{\"schemaVersion\":2,\"manifests\":{}}", &idx, &err), -EBADMSG);
    image_assert_reason(&err, "invalid-index");
    ck_assert_int_eq(parse_index("{\"schemaVersion\":2,\"manifests\":[],\"tags\":[]}", &idx, &err), -EBADMSG);
    image_assert_reason(&err, "invalid-index");
    ck_assert_ptr_null(idx);
}
END_TEST

START_TEST(reason_names)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int i, j;

    /* Every code has a distinct name; the errno classes are as documented. */
    for (i = 0; i < BERTH_IMAGE_REASON_COUNT; i++) {
        ck_assert_ptr_nonnull(berth_image_reason_name(i));
        for (j = 0; j < i; j++)
            ck_assert_str_ne(berth_image_reason_name(i), berth_image_reason_name(j));
    }
    ck_assert_ptr_null(berth_image_reason_name(BERTH_IMAGE_REASON_COUNT));
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_EXPANDED_BUDGET, "x"), -EFBIG);
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_TIME_BUDGET, "x"), -ETIME);
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_BLOB_MISSING, "x"), -ENOENT);
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_UNSAFE_STORE, "x"), -EPERM);
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_BLOB_CONFLICT, "x"), -EEXIST);
    ck_assert_int_eq(berth_image_refuse(&err, BERTH_IMAGE_PATH_TRAVERSAL, "a\nb %d", 7), -EBADMSG);
    ck_assert_str_eq(err.message, "path-traversal: a?b 7");
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("oci");
    TCase *tc = test_case(s, "oci");

    tcase_add_test(tc, manifest_ok);
    tcase_add_test(tc, manifest_layer_types);
    tcase_add_test(tc, manifest_refusals);
    tcase_add_test(tc, config_checks);
    tcase_add_test(tc, index_select);
    tcase_add_test(tc, reason_names);
    return s;
}

TEST_MAIN()
