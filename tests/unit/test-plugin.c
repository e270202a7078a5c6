/* SPDX-License-Identifier: MIT */
/*
 * test-plugin.c -- the plugin loader (plugin/loader.h) against the real
 * fixture shared objects in $BERTH_TEST_PLUGIN_DIR (tests/plugins/.libs).
 *
 * Each refusal asserts the exact error code and that the object is not
 * mapped into the process afterwards (checked in /proc/self/maps by device
 * and inode, so it cannot be fooled by the /proc/self/fd name it was
 * loaded through).
 */
#include "testutil.h"

#include <stdbool.h>
#include <sys/sysmacros.h>

#include "digest.h"

#include "host-table.h"
#include "macro.h"
#include "loader.h"

static const char *dir;

static void setup(void)
{
    dir = getenv("BERTH_TEST_PLUGIN_DIR");
    ck_assert_msg(dir && dir[0] == '/', "BERTH_TEST_PLUGIN_DIR must name the fixture directory");
}

/* Whether the file at @path (followed if a symlink) is mapped in this process. */
static bool mapped(const char *path)
{
    char line[4096];
    struct stat st;
    bool found = false;
    FILE *f;

    ck_assert_int_eq(stat(path, &st), 0);
    f = fopen("/proc/self/maps", "re");
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f)) {
        unsigned maj, min;
        unsigned long long ino;
        if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &min, &ino) == 3 && ino == (unsigned long long)st.st_ino &&
            maj == major(st.st_dev) && min == minor(st.st_dev))
            found = true;
    }
    fclose(f);
    return found;
}

static int load(const char *d, const char *file, unsigned flags, const struct berth_host *host, uint32_t host_abi,
                struct berth_plugin_handle **h, struct berth_plugin_info *info, struct berth_error *err)
{
    const struct berth_plugin_load_options o = {
        .dir = d,
        .file = file,
        .flags = flags,
        .host = host,
        .host_abi = host_abi,
    };
    return berth_plugin_load(&o, h, info, err);
}

/* Load @file with a host table and assert refusal with @code, @needle in the
 * message, and nothing left mapped. */
static void assert_refused(const char *d, const char *file, int code, const char *needle)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "test", NULL);
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    _cleanup_free_ char *path = test_path(d, file);
    int r;

    r = load(d, file, 0, host, 0, &h, &info, &err);
    ck_assert_msg(r == code, "%s: expected %d, got %d (%s)", file, code, r, err.message);
    ck_assert_ptr_null(h);
    ck_assert_msg(strstr(err.message, needle), "%s: \"%s\" lacks \"%s\"", file, err.message, needle);
    ck_assert_str_eq(info.path, path);
    ck_assert_msg(!strstr(err.message, "/proc/self/fd"), "message names the descriptor path: %s", err.message);
    if (access(path, F_OK) == 0)
        ck_assert_msg(!mapped(path), "%s is still mapped after a refused load", file);
}

START_TEST(good_loads_and_inits)
{
    struct test_log c = {0};
    const struct berth_logger logger = {test_log_sink, &c, BERTH_LOG_DEBUG};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "runsc", &logger);
    const struct berth_plugin_load_options o = {
        .dir = dir,
        .file = "fixture-good.so",
        .host = host,
        .config = "{ \"b\": 2, \"a\": 1 }",
        .config_len = 18,
    };
    _cleanup_free_ char *path = test_path(dir, "fixture-good.so"), *caps = NULL;
    const struct berth_runtime_ops_v1 *ops;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    size_t len = 0;

    ck_assert(!mapped(path));
    ck_assert_msg(berth_plugin_load(&o, &h, &info, &err) == 0, "%s", err.message);
    ck_assert(mapped(path)); /* the mapping check can see a loaded plugin */
    ck_assert_str_eq(info.name, "fixture-good");
    ck_assert_str_eq(info.version, "1.2.3");
    ck_assert_uint_eq(info.kind, BERTH_PLUGIN_RUNTIME);
    ck_assert_uint_eq(info.abi_version, BERTH_PLUGIN_ABI_VERSION);
    ck_assert_str_eq(info.path, path);
    ck_assert_uint_eq(strlen(info.sha256), BERTH_DIGEST_STRLEN);
    ck_assert_str_eq(berth_plugin_get_info(h)->name, "fixture-good");

    /* init ran: it logged through the host table and holds state. */
    ck_assert_int_eq(c.calls, 1);
    ck_assert_str_eq(c.line, "runsc: initialised with {\"a\":1,\"b\":2}");
    ck_assert_ptr_nonnull(berth_plugin_state(h));

    ops = berth_plugin_runtime_ops(h);
    ck_assert_ptr_nonnull(ops);
    ck_assert_ptr_null(berth_plugin_image_source_ops(h));
    ck_assert_ptr_null(berth_plugin_evidence_store_ops(h));
    ck_assert_ptr_null(berth_plugin_containment_ops(h));
    ck_assert_int_eq(ops->capabilities(berth_plugin_state(h), &caps, &len, &err), 0);
    ck_assert_str_eq(caps, "{\"backend\":\"fixture\",\"config\":{\"a\":1,\"b\":2},\"instance\":\"runsc\"}");
    ck_assert_int_eq(ops->inspect(berth_plugin_state(h), "job-1", &caps, &len, &err), -ENOENT);

    berth_plugin_unload(h);
    ck_assert(!mapped(path));
}
END_TEST

START_TEST(peek_never_inits)
{
    struct test_log c = {0};
    const struct berth_logger logger = {test_log_sink, &c, BERTH_LOG_DEBUG};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", &logger);
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    ck_assert_int_eq(load(dir, "fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, host, 0, &h, &info, &err), 0);
    ck_assert_int_eq(c.calls, 0);
    ck_assert_ptr_null(berth_plugin_state(h));
    ck_assert_str_eq(info.name, "fixture-good");
    berth_plugin_unload(h);
    ck_assert_int_eq(c.calls, 0);
    /* The init-failing fixture peeks fine: its init is never called. */
    ck_assert_int_eq(load(dir, "fixture-init-fail.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err), 0);
    berth_plugin_unload(h);
}
END_TEST

START_TEST(other_kinds)
{
    static const struct {
        const char *file;
        uint32_t kind;
    } k[] = {
        {"fixture-image-source.so", BERTH_PLUGIN_IMAGE_SOURCE},
        {"fixture-evidence-store.so", BERTH_PLUGIN_EVIDENCE_STORE},
        {"fixture-containment.so", BERTH_PLUGIN_CONTAINMENT},
    };
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    size_t i;

    for (i = 0; i < ELEMENTSOF(k); i++) {
        struct berth_plugin_load_options o = {.dir = dir, .file = k[i].file, .host = host, .kind = k[i].kind};
        struct berth_plugin_handle *h = NULL;
        struct berth_plugin_info info;

        ck_assert_msg(berth_plugin_load(&o, &h, &info, &err) == 0, "%s: %s", k[i].file, err.message);
        ck_assert_uint_eq(info.kind, k[i].kind);
        ck_assert_ptr_null(berth_plugin_runtime_ops(h));
        ck_assert_ptr_null(berth_plugin_state(h)); /* no init: NULL state */
        switch (k[i].kind) {
        case BERTH_PLUGIN_IMAGE_SOURCE: {
            _cleanup_free_ char *json = NULL;
            size_t len = 0;
            ck_assert_ptr_nonnull(berth_plugin_image_source_ops(h));
            ck_assert_int_eq(berth_plugin_image_source_ops(h)->resolve(NULL, "sha256:x", &json, &len, &err), 0);
            ck_assert_str_eq(json, "{\"layers\":0}");
            break;
        }
        case BERTH_PLUGIN_EVIDENCE_STORE:
            ck_assert_ptr_nonnull(berth_plugin_evidence_store_ops(h));
            ck_assert_ptr_nonnull(berth_plugin_evidence_store_ops(h)->tombstone);
            /* A 1.1 plugin: the appended ops are there. */
            ck_assert_ptr_nonnull(berth_plugin_evidence_store_ops(h)->upload);
            ck_assert_ptr_nonnull(berth_plugin_evidence_store_ops(h)->prune);
            break;
        default:
            ck_assert_ptr_nonnull(berth_plugin_containment_ops(h));
            ck_assert_ptr_nonnull(berth_plugin_containment_ops(h)->destroy);
            break;
        }
        berth_plugin_unload(h);

        /* Asking for another kind is refused. */
        o.kind = BERTH_PLUGIN_RUNTIME;
        ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), -EPROTOTYPE);
        ck_assert_ptr_nonnull(strstr(err.message, "expected runtime"));
    }
    ck_assert_str_eq(berth_plugin_kind_name(BERTH_PLUGIN_EVIDENCE_STORE), "evidence-store");
    ck_assert_ptr_null(berth_plugin_kind_name(99));
}
END_TEST

/* A containment table of ABI 1.0 size (ending after destroy) is accepted,
 * and units (appended in 1.3) reads NULL. */
START_TEST(containment_v10)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    struct berth_plugin_load_options o = {
        .dir = dir, .file = "fixture-containment.so", .host = host, .kind = BERTH_PLUGIN_CONTAINMENT};
    const struct berth_containment_ops_v1 *ops;
    struct berth_plugin_handle *h = NULL;

    ck_assert_msg(berth_plugin_load(&o, &h, NULL, &err) == 0, "%s", err.message);
    ops = berth_plugin_containment_ops(h);
    ck_assert_ptr_nonnull(ops);
    ck_assert_ptr_nonnull(ops->destroy);
    ck_assert_ptr_null(ops->units);
    berth_plugin_unload(h);
}
END_TEST

/* An evidence store built for ABI 1.0 (its table ends after tombstone) is
 * accepted: the five ops of 1.0 are required, the ones appended in 1.1 read
 * NULL, whatever lies in memory after its shorter table. */
START_TEST(evidence_store_v10)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    struct berth_plugin_load_options o = {
        .dir = dir, .file = "fixture-evidence-v10.so", .host = host, .kind = BERTH_PLUGIN_EVIDENCE_STORE};
    const struct berth_evidence_store_ops_v1 *ops;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    ck_assert_msg(berth_plugin_load(&o, &h, &info, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(info.abi_version, BERTH_PLUGIN_ABI_PACK(1, 0));
    ops = berth_plugin_evidence_store_ops(h);
    ck_assert_ptr_nonnull(ops);
    ck_assert_ptr_nonnull(ops->put);
    ck_assert_ptr_nonnull(ops->get);
    ck_assert_ptr_nonnull(ops->stat);
    ck_assert_ptr_nonnull(ops->remove);
    ck_assert_ptr_nonnull(ops->tombstone);
    ck_assert_ptr_null(ops->upload);
    ck_assert_ptr_null(ops->list);
    ck_assert_ptr_null(ops->usage);
    ck_assert_ptr_null(ops->prune);
    berth_plugin_unload(h);
}
END_TEST

START_TEST(abi_rules)
{
    char want[128];

    snprintf(want, sizeof(want), "built for plugin ABI %d.%d; this berth provides ABI %d.%d", BERTH_PLUGIN_ABI_MAJOR,
             BERTH_PLUGIN_ABI_MINOR + 1, BERTH_PLUGIN_ABI_MAJOR, BERTH_PLUGIN_ABI_MINOR);
    assert_refused(dir, "fixture-newer-minor.so", -EPROTO, want);
    snprintf(want, sizeof(want), "built for plugin ABI %d.0", BERTH_PLUGIN_ABI_MAJOR + 1);
    assert_refused(dir, "fixture-other-major.so", -EPROTO, want);
    assert_refused(dir, "fixture-short-descriptor.so", -EPROTO, "less than the");
    assert_refused(dir, "fixture-null-op.so", -ENOSYS, "required runtime operation start() is NULL");
    assert_refused(dir, "fixture-no-entry.so", -ENOEXEC, "does not export berth_plugin_entry()");
    assert_refused(dir, "fixture-init-fail.so", -ENOTRECOVERABLE, "init failed: fixture-init-fail refuses");
    assert_refused(dir, "fixture-data-entry.so", -ENOEXEC, "berth_plugin_entry is not a function");
}
END_TEST

/* A core one or two minors newer accepts plugins built for older minors
 * (the ABI only appends); a newer major still refuses them. */
START_TEST(older_minor_accepted)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    const uint32_t newer_core = BERTH_PLUGIN_ABI_PACK(BERTH_PLUGIN_ABI_MAJOR, BERTH_PLUGIN_ABI_MINOR + 2);
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    ck_assert_msg(load(dir, "fixture-newer-minor.so", 0, host, newer_core, &h, &info, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(BERTH_PLUGIN_ABI_MINOR_OF(info.abi_version), BERTH_PLUGIN_ABI_MINOR + 1);
    ck_assert_ptr_nonnull(berth_plugin_runtime_ops(h)->start);
    berth_plugin_unload(h);
    ck_assert_int_eq(load(dir, "fixture-good.so", 0, host, newer_core, &h, &info, &err), 0);
    berth_plugin_unload(h);
    ck_assert_int_eq(
        load(dir, "fixture-good.so", 0, host, BERTH_PLUGIN_ABI_PACK(BERTH_PLUGIN_ABI_MAJOR + 1, 0), &h, &info, &err),
        -EPROTO);
}
END_TEST

/* ABI 1.1 appends open_output and forget to the runtime ops: a 1.0 plugin
 * (whose table ends at reap) still loads, and the appended ops read NULL
 * even though its object happens to define them past its ops_size; a 1.1
 * plugin's are there. */
START_TEST(runtime_ops_1_1_optional)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    const struct berth_runtime_ops_v1 *ops;
    uint64_t size = 7;
    int fd = -1;

    ck_assert_msg(load(dir, "fixture-runtime-1-0.so", 0, host, 0, &h, &info, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(info.abi_version, BERTH_PLUGIN_ABI_PACK(1, 0));
    ops = berth_plugin_runtime_ops(h);
    ck_assert_ptr_nonnull(ops->reap);
    ck_assert_ptr_null(ops->open_output);
    ck_assert_ptr_null(ops->forget);
    berth_plugin_unload(h);
    ck_assert_int_eq(load(dir, "fixture-good.so", 0, host, 0, &h, &info, &err), 0);
    ops = berth_plugin_runtime_ops(h);
    ck_assert_ptr_nonnull(ops->open_output);
    ck_assert_ptr_nonnull(ops->forget);
    ck_assert_int_eq(ops->open_output(berth_plugin_state(h), "r1", "o", &fd, &size, &err), -ENOENT);
    ck_assert_int_eq(fd, -1); /* nothing written on failure */
    ck_assert_uint_eq(size, 7);
    ck_assert_int_eq(ops->forget(berth_plugin_state(h), "r1", &err), -ENOENT);
    berth_plugin_unload(h);
}
END_TEST

/* min_abi: a caller that relies on a newer minor refuses an older plugin
 * before its init() runs, and accepts one built against it. */
START_TEST(min_abi_refuses_older_minor)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_host_instance inst;
    const struct berth_host *host = berth_host_instance_init(&inst, "x", NULL);
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    struct berth_plugin_load_options o = {
        .dir = dir, .file = "fixture-runtime-1-0.so", .host = host, .min_abi = BERTH_PLUGIN_ABI_PACK(1, 4)};

    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), -EPROTO);
    ck_assert_ptr_null(h);
    ck_assert_uint_eq(info.abi_version, BERTH_PLUGIN_ABI_PACK(1, 0));
    ck_assert_msg(strstr(err.message, "built for plugin ABI 1.0; this use of it needs ABI 1.4 or later"), "%s",
                  err.message);
    o.file = "fixture-good.so";
    berth_error_clear(&err);
    ck_assert_msg(berth_plugin_load(&o, &h, &info, &err) == 0, "%s", err.message);
    berth_plugin_unload(h);
}
END_TEST

/* An object that cannot be unloaded keeps the name /proc/self/fd/N after
 * the loader closed N.  glibc matches loaded objects by name, so a later
 * load through the same number got the old object back: the next plugin
 * (and its sha256 pin) was silently replaced by the first. */
START_TEST(fd_name_reuse)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    struct berth_plugin_load_options o = {.dir = dir, .file = "fixture-nodelete.so", .flags = BERTH_PLUGIN_LOAD_PEEK};
    _cleanup_free_ char *nodelete = test_path(dir, "fixture-nodelete.so"), *good = test_path(dir, "fixture-good.so");
    char pin[BERTH_DIGEST_BUFSZ];
    int i;

    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), 0);
    berth_plugin_unload(h);
    ck_assert(mapped(nodelete)); /* still there: -z nodelete */

    o.file = "fixture-good.so";
    for (i = 0; i < 3; i++) { /* the same descriptor number every time */
        ck_assert_msg(berth_plugin_load(&o, &h, &info, &err) == 0, "%s", err.message);
        ck_assert_str_eq(info.name, "fixture-good");
        ck_assert(mapped(good));
        snprintf(pin, sizeof(pin), "%s", info.sha256);
        berth_plugin_unload(h);
    }
    o.sha256 = pin;
    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), 0);
    ck_assert_str_eq(berth_plugin_get_info(h)->name, "fixture-good");
    berth_plugin_unload(h);
}
END_TEST

START_TEST(file_rules)
{
    assert_refused(dir, "fixture-world-writable.so", -EPERM, "writable by group or others");
    assert_refused(dir, "fixture-symlink.so", -ELOOP, "symbolic link");
    assert_refused(dir, "no-such-plugin.so", -ENOENT, "No such file");
}
END_TEST

/* Copy a fixture into a private directory the test can tamper with. */
static char *private_copy(const char *file)
{
    char *d = test_tmpdir();
    _cleanup_free_ char *src = test_path(dir, file), *dst = test_path(d, file);

    test_copy_file(src, dst, 0755);
    return d;
}

START_TEST(directory_and_owner_rules)
{
    _cleanup_free_ char *d = private_copy("fixture-good.so"), *so = test_path(d, "fixture-good.so"),
                        *sub = test_path(d, "dir.so"), *junk = test_path(d, "junk.so"), *link = test_path(d, "linkdir"),
                        *renamed = test_path(d, "renamed.so");
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    /* The copy itself is fine. */
    ck_assert_int_eq(load(d, "fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err), 0);
    berth_plugin_unload(h);
    ck_assert_int_eq(chmod(d, 0775), 0);
    assert_refused(d, "fixture-good.so", -EPERM, "plugin directory: ");
    assert_refused(d, "fixture-good.so", -EPERM, "has mode 0775, which is writable by group or others");
    ck_assert_int_eq(chmod(d, 0755), 0);

    ck_assert_int_eq(chmod(so, 0775), 0);
    assert_refused(d, "fixture-good.so", -EPERM, "plugin file: ");
    assert_refused(d, "fixture-good.so", -EPERM, "fixture-good.so has mode 0775, which is writable by group or others");
    ck_assert_int_eq(chmod(so, 0755), 0);

    if (geteuid() == 0) {
        ck_assert_int_eq(chown(so, 65534, 65534), 0);
        assert_refused(d, "fixture-good.so", -EPERM, "owned by uid 65534, expected root");
        ck_assert_int_eq(chown(so, 0, 0), 0);
    }

    ck_assert_int_eq(mkdir(sub, 0755), 0);
    assert_refused(d, "dir.so", -EBADFD, "dir.so is a directory, expected a regular file");
    test_write_file(junk, "not an ELF object", 17, 0755);
    assert_refused(d, "junk.so", -ELIBBAD, "dlopen failed: file too short");

    /* The file name must be the descriptor's name plus ".so". */
    ck_assert_int_eq(rename(so, renamed), 0);
    assert_refused(d, "renamed.so", -EPROTO, "plugin \"fixture-good\" must be installed as fixture-good.so");
    ck_assert_int_eq(rename(renamed, so), 0);

    /* A symlinked directory component is refused too. */
    ck_assert_int_eq(symlink(d, link), 0);
    assert_refused(link, "fixture-good.so", -ELOOP, "symbolic link");
    test_rm_rf(d);
}
END_TEST

/* The directories above the plugin directory are held to the rule too, and
 * the file may have no second name (berth_trusted_file_check()); the loader
 * accepted both before. */
START_TEST(parent_and_link_rules)
{
    _cleanup_free_ char *base = test_tmpdir(), *open = test_path(base, "open"), *d = test_path(open, "plugins"),
                        *src = test_path(dir, "fixture-good.so"), *so = test_path(d, "fixture-good.so"),
                        *other = test_path(base, "second-name.so"), *needle = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    ck_assert_int_eq(mkdir(open, 0755), 0);
    ck_assert_int_eq(mkdir(d, 0755), 0);
    test_copy_file(src, so, 0755);
    ck_assert_int_eq(load(d, "fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err), 0);
    berth_plugin_unload(h);

    /* A parent anyone can write (not sticky): the plugin directory could be swapped. */
    ck_assert_int_eq(chmod(open, 0777), 0);
    ck_assert_int_gt(asprintf(&needle, "%s (above %s) has mode 0777", open, d), 0);
    assert_refused(d, "fixture-good.so", -EPERM, needle);
    ck_assert_int_eq(chmod(open, 01777), 0); /* sticky, like /tmp: accepted */
    ck_assert_int_eq(load(d, "fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err), 0);
    berth_plugin_unload(h);
    ck_assert_int_eq(chmod(open, 0755), 0);

    /* A second hard link: whoever owns the other name's directory can change the file. */
    ck_assert_int_eq(link(so, other), 0);
    assert_refused(d, "fixture-good.so", -EMLINK, "has 2 hard links");
    ck_assert_int_eq(unlink(other), 0);
    test_rm_rf(base);
}
END_TEST

START_TEST(sha256_pin)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;
    struct berth_plugin_load_options o = {.dir = dir, .file = "fixture-good.so", .flags = BERTH_PLUGIN_LOAD_PEEK};
    _cleanup_free_ char *path = test_path(dir, "fixture-good.so");
    char pin[BERTH_DIGEST_BUFSZ];

    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), 0);
    snprintf(pin, sizeof(pin), "%s", info.sha256);
    berth_plugin_unload(h);

    o.sha256 = pin;
    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), 0);
    berth_plugin_unload(h);

    pin[BERTH_DIGEST_STRLEN - 1] = pin[BERTH_DIGEST_STRLEN - 1] == '0' ? '1' : '0';
    ck_assert_int_eq(berth_plugin_load(&o, &h, &info, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "but the configuration pins"));
    ck_assert(!mapped(path)); /* refused before dlopen */
}
END_TEST

START_TEST(argument_rules)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_plugin_handle *h = NULL;
    struct berth_plugin_info info;

    ck_assert_int_eq(load("tests/plugins/.libs", "fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err),
                     -EINVAL);
    ck_assert_int_eq(load(dir, "../.libs/fixture-good.so", BERTH_PLUGIN_LOAD_PEEK, NULL, 0, &h, &info, &err), -EINVAL);
    ck_assert_int_eq(load(dir, "fixture-good.so", 0, NULL, 0, &h, &info, &err), -EINVAL); /* init needs a host */
    ck_assert_int_eq(load(dir, "fixture-good.so", 0x100, NULL, 0, &h, &info, &err), -EINVAL);
    ck_assert_int_eq(berth_plugin_load(NULL, &h, &info, &err), -EINVAL);
    berth_plugin_unload(NULL);
}
END_TEST

START_TEST(list_dir)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char **names = NULL;
    size_t n = 0, i;
    bool good = false, link = false;

    ck_assert_int_eq(berth_plugin_list_dir(dir, &names, &n, &err), 0);
    ck_assert_uint_ge(n, 14);
    for (i = 0; i < n; i++) {
        size_t len = strlen(names[i]);
        ck_assert_str_eq(names[i] + len - 3, ".so");
        if (i > 0)
            ck_assert_int_lt(strcmp(names[i - 1], names[i]), 0);
        good = good || streq(names[i], "fixture-good.so");
        link = link || streq(names[i], "fixture-symlink.so");
    }
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    ck_assert(good && link);
    ck_assert_int_eq(berth_plugin_list_dir("/nonexistent-berth-dir", &names, &n, &err), -ENOENT);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("plugin");
    TCase *tc = test_case(s, "loader");

    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, good_loads_and_inits);
    tcase_add_test(tc, peek_never_inits);
    tcase_add_test(tc, other_kinds);
    tcase_add_test(tc, evidence_store_v10);
    tcase_add_test(tc, containment_v10);
    tcase_add_test(tc, abi_rules);
    tcase_add_test(tc, older_minor_accepted);
    tcase_add_test(tc, runtime_ops_1_1_optional);
    tcase_add_test(tc, min_abi_refuses_older_minor);
    tcase_add_test(tc, fd_name_reuse);
    tcase_add_test(tc, file_rules);
    tcase_add_test(tc, directory_and_owner_rules);
    tcase_add_test(tc, parent_and_link_rules);
    tcase_add_test(tc, sha256_pin);
    tcase_add_test(tc, argument_rules);
    tcase_add_test(tc, list_dir);
    return s;
}

TEST_MAIN()
