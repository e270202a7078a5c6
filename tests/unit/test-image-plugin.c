/* SPDX-License-Identifier: MIT */
/*
 * test-image-plugin.c -- the real image-oci-local plugin, loaded by the
 * core's loader: init, resolve and stage on an image the test builds (a
 * gzip layer forged with tests/image/tarforge.c, its config and manifest).
 */
#include "imagetest.h"

#include <jansson.h>
#include <dirent.h>
#include <sys/mman.h>

#include "blobstore.h"
#include "canon.h"
#include "digest.h"
#include "host-table.h"
#include "jsonobj.h"
#include "log.h"
#include "macro.h"
#include "oci.h"
#include "loader.h"
#include "tarforge.h"

static char *dir, *store, *plugins;
static char digest[BERTH_DIGEST_BUFSZ];

/* Store @len bytes as a blob; its digest into @ret. */
static void put_blob(const void *data, size_t len, char ret[BERTH_DIGEST_BUFSZ])
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *s = NULL;
    int fd = memfd_create("blob", MFD_CLOEXEC);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    ck_assert_int_eq(berth_digest_bytes(data, len, ret), 0);
    ck_assert_int_eq(berth_blob_store_open(store, true, &s, &err), 0);
    ck_assert_msg(berth_blob_import_fd(s, fd, ret, len, NULL, &err) == 0, "%s", err.message);
    berth_blob_store_free(s);
    close(fd);
}

static void setup(void)
{
    struct tarforge t = {0};
    unsigned char *gz = NULL;
    size_t gzlen = 0;
    char layer[BERTH_DIGEST_BUFSZ], diff_id[BERTH_DIGEST_BUFSZ], config[BERTH_DIGEST_BUFSZ], text[2048];
    const char *src = getenv("BERTH_IMAGE_PLUGIN_DIR");
    char *from, *to;
    size_t clen;

    dir = test_tmpdir();
    store = test_path(dir, "store");
    plugins = test_path(dir, "plugins");
    ck_assert_int_eq(mkdir(store, 0700), 0);
    ck_assert_int_eq(mkdir(plugins, 0755), 0);
    /* The plugin, copied into a directory only this test writes. */
    ck_assert_ptr_nonnull(src);
    from = test_path(src, "image-oci-local.so");
    to = test_path(plugins, "image-oci-local.so");
    test_copy_file(from, to, 0755);
    free(from);
    free(to);

    tf_dir(&t, "./", 0755);
    tf_dir(&t, "etc/", 0755);
    tf_file(&t, "etc/hello", 0644, "hi\n");
    tf_symlink(&t, "greeting", "/etc/hello");
    tf_end(&t);
    ck_assert_int_eq(berth_digest_bytes(t.data, t.len, diff_id), 0);
    tf_gzip(t.data, t.len, &gz, &gzlen);
    put_blob(gz, gzlen, layer);
    clen = (size_t)snprintf(
        text, sizeof(text),
        "{\"architecture\":\"%s\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"%s\"]}}",
        berth_oci_host_architecture(), diff_id);
    put_blob(text, clen, config);
    snprintf(
        text, sizeof(text),
        "{\"schemaVersion\":2,\"mediaType\":\"" BERTH_OCI_MANIFEST_TYPE
        "\",\"config\":{\"mediaType\":\"" BERTH_OCI_CONFIG_TYPE
        "\",\"digest\":\"%s\",\"size\":%zu},\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
        "\"digest\":\"%s\",\"size\":%zu}]}",
        config, clen, layer, gzlen);
    put_blob(text, strlen(text), digest);
    free(gz);
    tf_free(&t);
}

static void teardown(void)
{
    test_rm_rf(dir);
    free(dir);
    free(store);
    free(plugins);
}

static void quiet(void *userdata, int level, const char *line)
{
    (void)userdata, (void)level, (void)line;
}

/* Load the plugin with @config; NULL and the error in @err when that fails. */
static struct berth_plugin_handle *load(const char *config, struct berth_host_instance *inst, struct berth_error *err)
{
    static const struct berth_logger logger = {.sink = quiet, .max_level = BERTH_LOG_WARNING};
    struct berth_plugin_load_options o = {0};
    struct berth_plugin_handle *h = NULL;

    o.dir = plugins;
    o.file = "image-oci-local.so";
    o.kind = BERTH_PLUGIN_IMAGE_SOURCE;
    o.host = berth_host_instance_init(inst, "images", &logger);
    o.config = config;
    o.config_len = strlen(config);
    return berth_plugin_load(&o, &h, NULL, err) == 0 ? h : NULL;
}

static char *store_config(void)
{
    char *c = NULL;
    ck_assert_int_gt(asprintf(&c, "{\"store\":\"%s\"}", store), 0);
    return c;
}

START_TEST(resolve_and_stage)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    _cleanup_free_ char *config = store_config(), *json = NULL, *rootdir = test_path(dir, "root");
    struct berth_plugin_handle *h = load(config, &inst, &err);
    const struct berth_image_source_ops_v1 *ops;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_close_ int rootfd = -1;
    char buf[64] = "";
    size_t len = 0;

    ck_assert_msg(h != NULL, "%s", err.message);
    ops = berth_plugin_image_source_ops(h);

    /* resolve: the verified summary; an absent image is -ENOENT. */
    ck_assert_msg(ops->resolve(berth_plugin_state(h), digest, &json, &len, &err) == 0, "%s", err.message);
    ck_assert_int_eq(berth_json_parse(json, len, 1 << 20, &doc, NULL), 0);
    ck_assert_str_eq(json_string_value(json_object_get(doc, "digest")), digest);
    ck_assert_uint_eq(json_array_size(json_object_get(doc, "layers")), 1);
    free(json);
    json = NULL;
    ck_assert_int_eq(ops->resolve(berth_plugin_state(h),
                                  "sha256:0000000000000000000000000000000000000000000000000000000000000000", &json,
                                  &len, &err),
                     -ENOENT);
    image_assert_reason(&err, "blob-missing");
    ck_assert_ptr_null(json);

    /* stage: into the caller's empty directory, with the default budgets. */
    ck_assert_int_eq(mkdir(rootdir, 0700), 0);
    rootfd = open(rootdir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(rootfd, 0);
    ck_assert_msg(ops->stage(berth_plugin_state(h), digest, rootfd, "{}", 2, &json, &len, &err) == 0, "%s",
                  err.message);
    json_decref(doc);
    ck_assert_int_eq(berth_json_parse(json, len, 1 << 20, &doc, NULL), 0);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "files")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "symlinks")), 1);
    ck_assert_int_eq(json_integer_value(json_object_get(doc, "layers")), 1);
    free(json);
    json = NULL;
    {
        _cleanup_free_ char *hello = test_path(rootdir, "etc/hello"), *link = test_path(rootdir, "greeting");
        ck_assert_uint_eq(test_read_file(hello, buf, sizeof(buf)), 3);
        ck_assert_str_eq(buf, "hi\n");
        ck_assert_int_eq(readlink(link, buf, sizeof(buf) - 1), 10);
    }
    test_rm_rf(rootdir);
    ck_assert_int_eq(mkdir(rootdir, 0700), 0);
    close(rootfd);
    rootfd = open(rootdir, O_RDONLY | O_DIRECTORY);

    /* A budget from the limits document: refused, and the directory left empty. */
    ck_assert_int_eq(ops->stage(berth_plugin_state(h), digest, rootfd, "{\"entries\":3}", 13, &json, &len, &err),
                     -EFBIG);
    image_assert_reason(&err, "entry-budget");
    ck_assert_ptr_null(json);
    {
        DIR *d = opendir(rootdir);
        struct dirent *e;
        int n = 0;
        ck_assert_ptr_nonnull(d);
        while ((e = readdir(d)))
            n += e->d_name[0] != '.';
        closedir(d);
        ck_assert_int_eq(n, 0);
    }
    /* A limits document with an unknown member is refused before anything. */
    ck_assert_int_eq(ops->stage(berth_plugin_state(h), digest, rootfd, "{\"bytes\":3}", 11, &json, &len, &err),
                     -EBADMSG);
    berth_plugin_unload(h);
}
END_TEST

START_TEST(bad_config)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;

    ck_assert_ptr_null(load("{}", &inst, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "store"));
    ck_assert_ptr_null(load("{\"store\":\"relative\"}", &inst, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "absolute"));
    ck_assert_ptr_null(load("{\"store\":\"/x\",\"extra\":1}", &inst, &err));
    ck_assert_ptr_nonnull(strstr(err.message, "extra"));
    /* An unsafe store stops init. */
    ck_assert_int_eq(chmod(store, 0755), 0);
    {
        _cleanup_free_ char *config = store_config();
        ck_assert_ptr_null(load(config, &inst, &err));
        ck_assert_ptr_nonnull(strstr(err.message, "unsafe-store"));
    }
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("image-plugin");
    TCase *tc = test_case(s, "image-plugin");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, resolve_and_stage);
    tcase_add_test(tc, bad_config);
    return s;
}

TEST_MAIN()
