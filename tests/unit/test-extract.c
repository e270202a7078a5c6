/* SPDX-License-Identifier: MIT */
/*
 * test-extract.c -- the safe layer extractor (extract.h): one hostile layer
 * per reason code, written here with tarforge.h, each checked for its exact
 * reason code and for nothing created outside the staging root; accepted
 * layouts; whiteouts across layers; budgets; berth_tree_clear().
 */
#include "testutil.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#include "digest.h"
#include "extract.h"
#include "fsutil.h"
#include "macro.h"
#include "tarforge.h"

/* The staging layout: tmp/root (the root), tmp/sentinel/keep (must survive). */
static char *tmp;
static int rootfd = -1;
static struct berth_extract *x;
static struct berth_stage_limits limits;
static int64_t deadline;
static char *tooldir; /* where the tool tests run tools (not beside the root) */

static void setup(void)
{
    char *p;

    tmp = test_tmpdir();
    p = test_path(tmp, "root");
    ck_assert_int_eq(mkdir(p, 0755), 0);
    rootfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ck_assert_int_ge(rootfd, 0);
    free(p);
    p = test_path(tmp, "sentinel");
    ck_assert_int_eq(mkdir(p, 0755), 0);
    free(p);
    p = test_path(tmp, "sentinel/keep");
    test_write_file(p, "sentinel", 8, 0644);
    free(p);
    berth_stage_limits_default(&limits);
    deadline = test_now_ns(CLOCK_MONOTONIC) + 60 * BERTH_NS_PER_SEC;
    x = NULL;
}

static void teardown(void)
{
    berth_extract_free(x);
    x = NULL;
    if (rootfd >= 0) {
        berth_tree_clear(rootfd, NULL);
        close(rootfd);
        rootfd = -1;
    }
    test_rm_rf(tmp);
    free(tmp);
    if (tooldir) {
        test_rm_rf(tooldir);
        free(tooldir);
        tooldir = NULL;
    }
}

/* Apply @len bytes as the next layer; its DiffID is the SHA-256 of @tar (uncompressed). */
static int apply_bytes(const void *blob, size_t len, enum berth_layer_compression c, const void *tar, size_t tarlen,
                       struct berth_error *err)
{
    uint8_t diff[BERTH_SHA256_LEN];
    int fd = memfd_create("layer", MFD_CLOEXEC), r;

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, blob, len), (ssize_t)len);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    ck_assert_int_eq(berth_sha256(tar, tarlen, diff), 0);
    if (!x)
        ck_assert_int_eq(berth_extract_new(rootfd, &limits, deadline, &x), 0);
    *err = (struct berth_error)BERTH_ERROR_INIT;
    r = berth_extract_layer(x, fd, c, diff, err);
    close(fd);
    return r;
}

static int apply(struct tarforge *t, struct berth_error *err)
{
    return apply_bytes(t->data, t->len, BERTH_LAYER_TAR, t->data, t->len, err);
}

/* The whole of tmp is root and sentinel, and the sentinel holds exactly its file. */
static void assert_nothing_outside(void)
{
    char *p, buf[64];
    DIR *d;
    struct dirent *de;
    int n = 0;

    d = opendir(tmp);
    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d))) {
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        ck_assert_msg(streq(de->d_name, "root") || streq(de->d_name, "sentinel"), "stray %s", de->d_name);
        n++;
    }
    closedir(d);
    ck_assert_int_eq(n, 2);
    p = test_path(tmp, "sentinel");
    d = opendir(p);
    free(p);
    ck_assert_ptr_nonnull(d);
    n = 0;
    while ((de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
            ck_assert_str_eq(de->d_name, "keep");
            n++;
        }
    closedir(d);
    ck_assert_int_eq(n, 1);
    p = test_path(tmp, "sentinel/keep");
    ck_assert_uint_eq(test_read_file(p, buf, sizeof(buf)), 8);
    ck_assert_str_eq(buf, "sentinel");
    free(p);
}

/* Apply the blob and expect the refusal @code; nothing may appear outside the root. */
static void expect_refusal_blob(const void *blob, size_t len, enum berth_layer_compression c, const void *tar,
                                size_t tarlen, const char *code)
{
    struct berth_error err;
    char prefix[64];
    int r = apply_bytes(blob, len, c, tar, tarlen, &err);

    snprintf(prefix, sizeof(prefix), "%s: ", code);
    ck_assert_msg(r < 0, "layer accepted, expected %s", code);
    ck_assert_msg(strncmp(err.message, prefix, strlen(prefix)) == 0, "expected %s, got \"%s\"", code, err.message);
    ck_assert_int_eq(err.code, r);
    assert_nothing_outside();
    /* The next refusal starts from a fresh extractor and an empty root. */
    berth_extract_free(x);
    x = NULL;
    ck_assert_int_eq(berth_tree_clear(rootfd, NULL), 0);
}

/* Apply @t and expect the refusal @code; @t is freed. */
static void expect_refusal(struct tarforge *t, const char *code)
{
    expect_refusal_blob(t->data, t->len, BERTH_LAYER_TAR, t->data, t->len, code);
    tf_free(t);
}

static void expect_ok(struct tarforge *t)
{
    struct berth_error err;
    int r = apply(t, &err);

    ck_assert_msg(r == 0, "refused: %s", err.message);
    assert_nothing_outside();
    tf_free(t);
}

static struct stat lstat_in_root(const char *path)
{
    struct stat st;
    ck_assert_msg(fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0, "%s missing", path);
    return st;
}

static bool exists_in_root(const char *path)
{
    struct stat st;
    return fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static void assert_content(const char *path, const char *content)
{
    char buf[256];
    char *p = NULL;

    ck_assert_int_gt(asprintf(&p, "%s/root/%s", tmp, path), 0);
    test_read_file(p, buf, sizeof(buf));
    ck_assert_str_eq(buf, content);
    free(p);
}

static int root_entries(void)
{
    int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
    DIR *d = fdopendir(fd);
    struct dirent *de;

    ck_assert_ptr_nonnull(d);
    while ((de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

/* ---- one test per reason code ------------------------------------------ */

START_TEST(refuse_absolute_path)
{
    struct tarforge t = {0};

    tf_file(&t, "/etc/evil", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "absolute-path");
}
END_TEST

START_TEST(refuse_path_traversal)
{
    static const char *const names[] = {"../evil", "a/../../evil", "./../evil", "a/.."};

    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        struct tarforge t = {0};
        tf_file(&t, names[i], 0644, "x");
        tf_end(&t);
        expect_refusal(&t, "path-traversal");
    }
}
END_TEST

START_TEST(refuse_invalid_path)
{
    static const char *const names[] = {"a//b", "a/./b", "././a", "bad\xff", "\xc0\xaf", "."};
    char longname[5000];

    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        struct tarforge t = {0};
        tf_file(&t, names[i], 0644, "x");
        tf_end(&t);
        expect_refusal(&t, "invalid-path");
    }
    /* More than PATH_MAX bytes, through a PAX path. */
    memset(longname, 'a', sizeof(longname) - 1);
    for (size_t i = 100; i < sizeof(longname) - 1; i += 100)
        longname[i] = '/';
    longname[sizeof(longname) - 1] = '\0';
    {
        struct tarforge t = {0};
        char *rec = NULL;
        ck_assert_int_gt(asprintf(&rec, "path=%s", longname), 0);
        tf_pax(&t, 'x', (const char *const[]){rec}, 1);
        free(rec);
        tf_file(&t, "short", 0644, "x");
        tf_end(&t);
        expect_refusal(&t, "invalid-path");
    }
    /* A NUL byte inside a PAX path. */
    {
        struct tarforge t = {0};
        tf_pax_raw(&t, "path", "a\0b", 3);
        tf_file(&t, "a", 0644, "x");
        tf_end(&t);
        expect_refusal(&t, "invalid-path");
    }
}
END_TEST

START_TEST(refuse_symlink_loop)
{
    struct tarforge t = {0};

    tf_symlink(&t, "a", "b");
    tf_symlink(&t, "b", "a");
    tf_file(&t, "a/file", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "symlink-loop");
}
END_TEST

START_TEST(refuse_hardlink_missing_target)
{
    struct tarforge t = {0};

    tf_hardlink(&t, "link", "missing");
    tf_end(&t);
    expect_refusal(&t, "hardlink-missing-target");

    tf_dir(&t, "dir", 0755);
    tf_hardlink(&t, "link", "dir");
    tf_end(&t);
    expect_refusal(&t, "hardlink-missing-target");

    tf_file(&t, "f", 0644, "x");
    tf_symlink(&t, "s", "f");
    tf_hardlink(&t, "link", "s");
    tf_end(&t);
    expect_refusal(&t, "hardlink-missing-target");

    /* A target outside the root is refused by name before any lookup. */
    tf_hardlink(&t, "link", "../sentinel/keep");
    tf_end(&t);
    expect_refusal(&t, "path-traversal");
}
END_TEST

START_TEST(refuse_device_node)
{
    struct tarforge t = {0};

    tf_member(&t, &(struct tf_member){.name = "null", .type = '3', .mode = 0666});
    tf_end(&t);
    expect_refusal(&t, "device-node");
    tf_member(&t, &(struct tf_member){.name = "sda", .type = '4', .mode = 0660});
    tf_end(&t);
    expect_refusal(&t, "device-node");
}
END_TEST

START_TEST(refuse_fifo)
{
    struct tarforge t = {0};

    tf_member(&t, &(struct tf_member){.name = "pipe", .type = '6', .mode = 0644});
    tf_end(&t);
    expect_refusal(&t, "fifo");
}
END_TEST

START_TEST(refuse_socket)
{
    struct tarforge t = {0};

    /* ustar has no socket type flag; star's PAX record is the only way to say it. */
    tf_pax(&t, 'x', (const char *const[]){"SCHILY.filetype=socket"}, 1);
    tf_file(&t, "sock", 0644, "");
    tf_end(&t);
    expect_refusal(&t, "socket");
}
END_TEST

START_TEST(refuse_sparse_file)
{
    struct tarforge t = {0};
    static const char *const sparse[] = {"GNU.sparse.major=1", "GNU.sparse.minor=0", "GNU.sparse.name=big",
                                         "GNU.sparse.realsize=1048576"};

    tf_member(&t, &(struct tf_member){.name = "big", .type = 'S', .gnu = true});
    tf_end(&t);
    expect_refusal(&t, "sparse-file");
    tf_pax(&t, 'x', sparse, ELEMENTSOF(sparse));
    tf_file(&t, "GNUSparseFile.0/big", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "sparse-file");
}
END_TEST

START_TEST(refuse_setuid)
{
    struct tarforge t = {0};

    tf_file(&t, "su", 04755, "x");
    tf_end(&t);
    expect_refusal(&t, "setuid");
    tf_dir(&t, "sg", 02755);
    tf_end(&t);
    expect_refusal(&t, "setuid");
}
END_TEST

START_TEST(refuse_xattr)
{
    struct tarforge t = {0};

    tf_pax(&t, 'x', (const char *const[]){"SCHILY.xattr.user.evil=1"}, 1);
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "xattr");
    tf_pax(&t, 'x', (const char *const[]){"SCHILY.acl.access=user::rwx,group::r-x,other::r-x,user:1:rwx,mask::rwx"}, 1);
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "xattr");
}
END_TEST

START_TEST(refuse_duplicate_entry)
{
    struct tarforge t = {0};

    tf_file(&t, "a", 0644, "1");
    tf_file(&t, "a", 0644, "2");
    tf_end(&t);
    expect_refusal(&t, "duplicate-entry");
    tf_dir(&t, "d/", 0755);
    tf_dir(&t, "./d", 0755);
    tf_end(&t);
    expect_refusal(&t, "duplicate-entry");
}
END_TEST

START_TEST(refuse_invalid_whiteout)
{
    static const char *const names[] = {".wh.", "d/.wh..", "d/.wh...", ".wh..wh.other", ".wh..wh..opq2"};
    struct tarforge t = {0};

    for (size_t i = 0; i < ELEMENTSOF(names); i++) {
        tf_file(&t, names[i], 0644, "");
        tf_end(&t);
        expect_refusal(&t, "invalid-whiteout");
    }
    tf_dir(&t, ".wh.dir", 0755);
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
    tf_symlink(&t, ".wh.x", "/etc");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
}
END_TEST

START_TEST(refuse_pax_global)
{
    struct tarforge t = {0};

    tf_pax(&t, 'g', (const char *const[]){"comment=hello"}, 1);
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "pax-global");
}
END_TEST

START_TEST(refuse_name_mismatch)
{
    struct tarforge t = {0};

    tf_pax(&t, 'x', (const char *const[]){"path=evil"}, 1);
    tf_file(&t, "good", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "name-mismatch");
    tf_file(&t, "f", 0644, "x");
    tf_pax(&t, 'x', (const char *const[]){"linkpath=other"}, 1);
    tf_symlink(&t, "s", "f");
    tf_end(&t);
    expect_refusal(&t, "name-mismatch");
    /* Fits in prefix/name: the ustar fields could have held it. */
    tf_pax(&t, 'x', (const char *const[]){"path=dir/file"}, 1);
    tf_member(&t, &(struct tf_member){.name = "file", .prefix = "other", .type = '0'});
    tf_end(&t);
    expect_refusal(&t, "name-mismatch");
}
END_TEST

START_TEST(refuse_archive_invalid)
{
    struct tarforge t = {0};
    char junk[2048];

    memset(junk, 'j', sizeof(junk));
    tf_raw(&t, junk, sizeof(junk));
    expect_refusal(&t, "archive-invalid");
    tf_member(&t, &(struct tf_member){.name = "f", .type = '0', .bad_checksum = true});
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    /* Truncated inside the data. */
    tf_member(&t, &(struct tf_member){.name = "f", .type = '0', .data = junk, .size = 1000});
    t.len -= 600;
    expect_refusal(&t, "archive-invalid");
    /* A symlink that claims data. */
    tf_member(&t, &(struct tf_member){.name = "s", .type = '2', .linkname = "t", .data = junk, .size = 10});
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    /* A malformed PAX record. */
    tf_member(&t, &(struct tf_member){.name = "PaxHeaders/f", .type = 'x', .data = "99 path=f\n", .size = 10});
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
}
END_TEST

START_TEST(refuse_gzip_invalid)
{
    struct tarforge t = {0};
    struct berth_error err;
    unsigned char *gz;
    size_t gzlen;
    int r;

    /* Plain tar announced as gzip. */
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    r = apply_bytes(t.data, t.len, BERTH_LAYER_GZIP, t.data, t.len, &err);
    ck_assert_int_eq(r, -EBADMSG);
    ck_assert_msg(strncmp(err.message, "archive-invalid: ", 17) == 0, "%s", err.message);
    /* Truncated gzip. */
    tf_gzip(t.data, t.len, &gz, &gzlen);
    berth_extract_free(x);
    x = NULL;
    r = apply_bytes(gz, gzlen / 2, BERTH_LAYER_GZIP, t.data, t.len, &err);
    ck_assert_int_eq(r, -EBADMSG);
    ck_assert_msg(strncmp(err.message, "archive-invalid: ", 17) == 0, "%s", err.message);
    assert_nothing_outside();
    free(gz);
    tf_free(&t);
}
END_TEST

START_TEST(refuse_unsupported_entry)
{
    struct tarforge t = {0};

    tf_member(&t, &(struct tf_member){.name = "vol", .type = 'V', .gnu = true});
    tf_end(&t);
    expect_refusal(&t, "unsupported-entry");
    tf_member(&t, &(struct tf_member){.name = "odd", .type = 'Z'});
    tf_end(&t);
    expect_refusal(&t, "unsupported-entry");
}
END_TEST

START_TEST(refuse_path_conflict)
{
    struct tarforge t = {0};

    tf_file(&t, "a", 0644, "x");
    tf_file(&t, "a/b", 0644, "y");
    tf_end(&t);
    expect_refusal(&t, "path-conflict");
    /* A directory this layer implied cannot be replaced by a file. */
    tf_file(&t, "d/f", 0644, "x");
    tf_file(&t, "d", 0644, "y");
    tf_end(&t);
    expect_refusal(&t, "path-conflict");
    /* A dangling symlink where a parent directory is needed. */
    tf_symlink(&t, "l", "/nowhere");
    tf_file(&t, "l/f", 0644, "y");
    tf_end(&t);
    expect_refusal(&t, "path-conflict");
}
END_TEST

START_TEST(refuse_expanded_budget_gzip_bomb)
{
    struct tarforge hdr = {0};
    struct berth_error err;
    struct berth_stage_stats st = {0};
    unsigned char *gz;
    size_t gzlen;
    uint64_t bomb = 200ULL << 20;
    uint8_t diff[BERTH_SHA256_LEN] = {0};
    int fd, r;

    tf_member(&hdr, &(struct tf_member){.name = "zeros", .type = '0', .size_field = (int64_t)bomb});
    tf_gzip_bomb(hdr.data, hdr.len, bomb + 1024, &gz, &gzlen);
    ck_assert_uint_lt(gzlen, 1u << 20);
    limits.expanded_bytes = 1u << 20;
    ck_assert_int_eq(berth_extract_new(rootfd, &limits, deadline, &x), 0);
    fd = memfd_create("bomb", MFD_CLOEXEC);
    ck_assert_int_eq(write(fd, gz, gzlen), (ssize_t)gzlen);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    r = berth_extract_layer(x, fd, BERTH_LAYER_GZIP, diff, &err);
    ck_assert_int_eq(r, -EFBIG);
    ck_assert_msg(strncmp(err.message, "expanded-budget: ", 17) == 0, "%s", err.message);
    /* It stopped at the budget: no more than the budget passed, and the
     * compressed blob was not read to its end. */
    berth_extract_stats(x, &st);
    ck_assert_uint_le(st.expanded_bytes, 1u << 20);
    ck_assert_int_lt(lseek(fd, 0, SEEK_CUR), (off_t)gzlen);
    close(fd);
    assert_nothing_outside();
    free(gz);
    tf_free(&hdr);
}
END_TEST

START_TEST(refuse_expanded_budget_plain)
{
    struct tarforge t = {0};
    char big[5000];

    memset(big, 'b', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    tf_file(&t, "big", 0644, big);
    tf_end(&t);
    limits.expanded_bytes = t.len - 1; /* one byte short, trailing blocks included */
    expect_refusal(&t, "expanded-budget");
}
END_TEST

START_TEST(entry_budget)
{
    struct tarforge t = {0};
    struct berth_stage_stats st = {0};

    /* "a/b/c" costs 4 units, the "./" root entry 1, "d" 2: 7 in all. */
    tf_dir(&t, "./", 0755);
    tf_file(&t, "a/b/c", 0644, "x");
    tf_dir(&t, "d", 0755);
    tf_end(&t);
    limits.entries = 7;
    expect_ok(&t);
    berth_extract_stats(x, &st);
    ck_assert_uint_eq(st.entries, 7);
    berth_extract_free(x);
    x = NULL;
    ck_assert_int_eq(berth_tree_clear(rootfd, NULL), 0);

    tf_dir(&t, "./", 0755);
    tf_file(&t, "a/b/c", 0644, "x");
    tf_dir(&t, "d", 0755);
    tf_end(&t);
    limits.entries = 6;
    expect_refusal(&t, "entry-budget");

    /* A symlink's target counts too: 1 + 1 + 3. */
    tf_symlink(&t, "s", "x/y/z");
    tf_end(&t);
    limits.entries = 4;
    expect_refusal(&t, "entry-budget");
}
END_TEST

START_TEST(time_budget)
{
    struct tarforge t = {0};

    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    deadline = test_now_ns(CLOCK_MONOTONIC) - 1;
    expect_refusal(&t, "time-budget");
}
END_TEST

START_TEST(diffid_mismatch_then_clear)
{
    struct tarforge t = {0}, other = {0};
    struct berth_error err;
    int r;

    tf_dir(&t, "d", 0755);
    tf_file(&t, "d/f", 0644, "content");
    tf_end(&t);
    tf_file(&other, "g", 0644, "y");
    tf_end(&other);
    r = apply_bytes(t.data, t.len, BERTH_LAYER_TAR, other.data, other.len, &err);
    ck_assert_int_eq(r, -EBADMSG);
    ck_assert_msg(strncmp(err.message, "diffid-mismatch: ", 17) == 0, "%s", err.message);
    assert_nothing_outside();
    /* Trailing bytes after the end blocks are part of the DiffID too. */
    berth_extract_free(x);
    x = NULL;
    ck_assert_int_eq(berth_tree_clear(rootfd, &err), 0);
    ck_assert_int_eq(root_entries(), 0);
    {
        struct tarforge longer = {0};
        tf_raw(&longer, t.data, t.len);
        tf_raw(&longer, (const char[512]){0}, 512); /* padding (only zeros may follow the end) */
        r = apply_bytes(longer.data, longer.len, BERTH_LAYER_TAR, t.data, t.len, &err);
        ck_assert_int_eq(r, -EBADMSG);
        ck_assert_msg(strncmp(err.message, "diffid-mismatch: ", 17) == 0, "%s", err.message);
        tf_free(&longer);
    }
    ck_assert_int_eq(berth_tree_clear(rootfd, &err), 0);
    ck_assert_int_eq(root_entries(), 0);
    assert_nothing_outside();
    tf_free(&t);
    tf_free(&other);
}
END_TEST

/* ---- accepted layouts ---------------------------------------------------- */

START_TEST(accept_basic_layout)
{
    struct tarforge t = {0};
    struct berth_stage_stats st = {0};
    struct stat s;
    unsigned char *gz;
    size_t gzlen;
    struct berth_error err;

    tf_dir(&t, "./", 0777); /* never applied to the staging directory */
    tf_dir(&t, "./etc/", 0755);
    tf_file(&t, "./etc/hostname", 0644, "guest\n");
    tf_file(&t, "a/b/c/deep", 0600, "deep");
    tf_end(&t);
    tf_gzip(t.data, t.len, &gz, &gzlen);
    ck_assert_int_eq(apply_bytes(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, &err), 0);
    free(gz);
    tf_free(&t);
    assert_nothing_outside();
    assert_content("etc/hostname", "guest\n");
    assert_content("a/b/c/deep", "deep");
    s = lstat_in_root("a/b");
    ck_assert(S_ISDIR(s.st_mode));
    ck_assert_uint_eq(s.st_mode & 07777, 0755); /* implicit */
    ck_assert_uint_eq(lstat_in_root("a/b/c/deep").st_mode & 07777, 0600);
    ck_assert_int_eq(fstat(rootfd, &s), 0);
    ck_assert_uint_eq(s.st_mode & 07777, 0755); /* as the test made it, whatever "./" says */
    berth_extract_stats(x, &st);
    ck_assert_uint_eq(st.files, 2);
    ck_assert_uint_eq(st.directories, 2);
    ck_assert_uint_eq(st.expanded_bytes, 8 * 512); /* 4 headers, 2 data blocks, 2 end blocks */
}
END_TEST

START_TEST(accept_symlinks_verbatim_and_confined)
{
    struct tarforge t = {0};
    char buf[64];
    ssize_t n;

    tf_dir(&t, "etc", 0755);
    tf_symlink(&t, "abs", "/etc");
    tf_symlink(&t, "up", "../../..");
    tf_symlink(&t, "esc", "../../etc");
    tf_file(&t, "abs/passwd", 0644, "root:x:0:0\n");
    tf_file(&t, "up/escaped", 0644, "no\n");
    tf_file(&t, "esc/shadow", 0600, "inside\n");
    tf_end(&t);
    expect_ok(&t);
    n = readlinkat(rootfd, "abs", buf, sizeof(buf));
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(memcmp(buf, "/etc", 4), 0);
    n = readlinkat(rootfd, "up", buf, sizeof(buf));
    ck_assert_int_eq(n, 8);
    ck_assert_int_eq(memcmp(buf, "../../..", 8), 0);
    assert_content("etc/passwd", "root:x:0:0\n");
    assert_content("escaped", "no\n"); /* "../../.." from the root is the root */
    assert_content("etc/shadow", "inside\n");
}
END_TEST

START_TEST(accept_hardlinks_and_modes)
{
    struct tarforge t = {0};
    struct stat a, b;

    tf_file(&t, "f", 0755, "data");
    tf_hardlink(&t, "g", "f");
    tf_hardlink(&t, "./h", "./f");
    tf_dir(&t, "tmp", 01777);
    tf_file(&t, "sticky", 01644, "s");
    tf_dir(&t, "ro", 0555);
    tf_file(&t, "ro/inside", 0444, "r");
    tf_dir(&t, "closed", 01000); /* sticky only: no permission bits left */
    tf_end(&t);
    expect_ok(&t);
    a = lstat_in_root("f");
    b = lstat_in_root("g");
    ck_assert_uint_eq(a.st_ino, b.st_ino);
    ck_assert_uint_eq(lstat_in_root("h").st_ino, a.st_ino);
    ck_assert_uint_eq(a.st_nlink, 3);
    ck_assert_uint_eq(lstat_in_root("tmp").st_mode & 07777, 01777); /* sticky kept on directories */
    ck_assert_uint_eq(lstat_in_root("sticky").st_mode & 07777, 0644);
    ck_assert_uint_eq(lstat_in_root("ro").st_mode & 07777, 0555);
    ck_assert_uint_eq(lstat_in_root("ro/inside").st_mode & 07777, 0444);
    ck_assert_uint_eq(lstat_in_root("closed").st_mode & 07777, 01000);
}
END_TEST

START_TEST(accept_pax_long_names)
{
    struct tarforge t = {0};
    char longname[300], rec[320];

    /* A PAX path the ustar fields cannot hold: the truncated ustar name is fine. */
    memset(longname, 'n', 250);
    longname[250] = '\0';
    snprintf(rec, sizeof(rec), "path=%s", longname);
    tf_pax(&t, 'x', (const char *const[]){rec}, 1);
    tf_file(&t, "nnnn-truncated", 0644, "long");
    /* Non-ASCII PAX path, ustar name differs (it could not hold UTF-8 exactly). */
    tf_pax(&t, 'x', (const char *const[]){"path=caf\xc3\xa9"}, 1);
    tf_file(&t, "cafe", 0644, "utf8");
    /* Same name in both. */
    tf_pax(&t, 'x', (const char *const[]){"path=same", "mtime=1.5"}, 1);
    tf_file(&t, "same", 0644, "same");
    tf_gnu_long(&t, 'L', "gnu-long-name");
    tf_file(&t, "gnu-long-n", 0644, "gnu");
    tf_end(&t);
    expect_ok(&t);
    assert_content(longname, "long");
    assert_content("caf\xc3\xa9", "utf8");
    assert_content("same", "same");
    assert_content("gnu-long-name", "gnu");
    ck_assert(!exists_in_root("cafe"));
}
END_TEST

/* ---- whiteouts across layers ------------------------------------------- */

START_TEST(whiteouts_across_layers)
{
    struct tarforge t = {0};

    /* Layer 0: the lower content. */
    tf_file(&t, "a/f1", 0644, "1");
    tf_file(&t, "a/f2", 0644, "2");
    tf_file(&t, "d/x", 0644, "x");
    tf_file(&t, "o/lower", 0644, "l");
    tf_file(&t, "o/sub/old", 0644, "o");
    tf_file(&t, "keep", 0644, "k");
    tf_end(&t);
    expect_ok(&t);

    /* Layer 1: file, directory and opaque whiteouts; a same-layer whiteout. */
    tf_file(&t, "a/.wh.f1", 0644, "");
    tf_file(&t, ".wh.d", 0644, "");
    tf_file(&t, "o/sub/new", 0644, "n");
    tf_file(&t, "o/.wh..wh..opq", 0644, "");
    tf_file(&t, "o/after", 0644, "a");
    tf_file(&t, "mine", 0644, "m");
    tf_file(&t, ".wh.mine", 0644, "");
    tf_file(&t, ".wh.absent", 0644, "");
    tf_end(&t);
    expect_ok(&t);
    ck_assert(!exists_in_root("a/f1"));
    assert_content("a/f2", "2");
    ck_assert(!exists_in_root("d"));
    ck_assert(!exists_in_root("o/lower"));
    ck_assert(!exists_in_root("o/sub/old"));
    assert_content("o/sub/new", "n");
    assert_content("o/after", "a");
    assert_content("mine", "m"); /* same layer: not removed */
    assert_content("keep", "k");
    ck_assert(!exists_in_root("a/.wh.f1"));
    ck_assert(!exists_in_root(".wh.d"));
    ck_assert(!exists_in_root("o/.wh..wh..opq"));
    ck_assert(!exists_in_root(".wh.mine"));

    /* Layer 2: remove what layer 1 made, recreate what layer 1 removed. */
    tf_file(&t, ".wh.mine", 0644, "");
    tf_file(&t, "o/.wh.sub", 0644, "");
    tf_file(&t, "d/again", 0644, "g");
    tf_file(&t, "a", 0644, "a is a file now");
    tf_end(&t);
    expect_ok(&t);
    ck_assert(!exists_in_root("mine"));
    ck_assert(!exists_in_root("o/sub"));
    assert_content("o/after", "a");
    assert_content("d/again", "g");
    assert_content("a", "a is a file now"); /* a lower directory replaced */
}
END_TEST

START_TEST(whiteout_through_symlink_refused)
{
    struct tarforge t = {0};

    /* A whiteout never acts through a symlink: not through an absolute
     * guest link, not through a dangling one, and not through a link to a
     * directory this layer made (which would remove this layer's own file). */
    tf_symlink(&t, "gone", "../nowhere");
    tf_file(&t, "sentinel/keep", 0644, "inner");
    tf_symlink(&t, "out2", "/sentinel");
    tf_end(&t);
    expect_ok(&t);
    tf_file(&t, "out2/.wh.keep", 0644, "");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");

    tf_symlink(&t, "gone", "../nowhere");
    tf_end(&t);
    expect_ok(&t);
    tf_file(&t, "gone/.wh.keep", 0644, "");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");

    tf_file(&t, "real/keep", 0644, "k");
    tf_symlink(&t, "l", "real");
    tf_file(&t, "l/.wh.keep", 0644, "");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
    tf_file(&t, "real/keep", 0644, "k");
    tf_symlink(&t, "l", "/real");
    tf_file(&t, "l/.wh..wh..opq", 0644, "");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
}
END_TEST

START_TEST(whiteout_names_as_directories_refused)
{
    struct tarforge t = {0};

    tf_file(&t, ".wh.x/.wh..wh..opq/f", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
    tf_file(&t, "a/.wh.b/c", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "invalid-whiteout");
    /* A whiteout in a directory that does not exist creates nothing. */
    tf_file(&t, "no/such/dir/.wh.f", 0644, "");
    tf_end(&t);
    expect_ok(&t);
    ck_assert_int_eq(root_entries(), 0);
}
END_TEST

/* The tar header walk and libarchive must agree on every entry's position and
 * size: each of these streams can be read two ways (a review found them). */
START_TEST(refuse_ambiguous_structure)
{
    struct tarforge t = {0}, hidden = {0};

    /* Hidden headers (a PAX global header, a PAX path override) inside the
     * data of a regular member that libarchive turns into a directory. */
    tf_pax(&hidden, 'g', (const char *const[]){"comment=hidden"}, 1);
    tf_pax(&hidden, 'x', (const char *const[]){"path=evil"}, 1);
    tf_file(&hidden, "good", 0644, "g");
    /* (a) PAX path ending in "/" */
    tf_pax(&t, 'x', (const char *const[]){"path=foo/"}, 1);
    tf_member(&t, &(struct tf_member){.name = "foo", .type = '0', .data = hidden.data, .size = hidden.len});
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    /* (b) an empty ustar name under a prefix */
    tf_member(&t,
              &(struct tf_member){.name = "", .prefix = "foo", .type = '0', .data = hidden.data, .size = hidden.len});
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    /* (c) a GNU long name ending in "/" */
    tf_gnu_long(&t, 'L', "foo/");
    tf_member(&t, &(struct tf_member){.name = "foo", .type = '0', .data = hidden.data, .size = hidden.len});
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    /* (d) a PAX record with a NUL in its key (libarchive stops there and
     * never applies the size record after it; the header walk would) */
    {
        /* One 'x' header holding both records: "<len> k\0j=1\n<len> size=N\n". */
        char body[128], rec2[64];
        int n1, n2 = 0;
        snprintf(rec2, sizeof(rec2), "size=%zu\n", hidden.len);
        /* A record's length counts its own digits: find the one that fits. */
        for (int d = 1; d < 4 && !n2; d++)
            if ((int)snprintf(NULL, 0, "%d", d + 1 + (int)strlen(rec2)) == d)
                n2 = d + 1 + (int)strlen(rec2);
        ck_assert_int_gt(n2, 0);
        /* "8 k\0j=1\n" is 8 bytes: a well-formed record whose key holds a NUL. */
        n1 = snprintf(body, sizeof(body), "8 k%cj=1\n%d %s", '\0', n2, rec2);
        tf_member(&t, &(struct tf_member){.name = "PaxHeader", .type = 'x', .data = body, .size = (size_t)n1});
        tf_member(&t, &(struct tf_member){.name = "foo", .type = '0', .data = "", .size = 0, .size_field = 0});
        tf_raw(&t, hidden.data, hidden.len);
    }
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
    tf_free(&hidden);
}
END_TEST

START_TEST(refuse_nested_gzip)
{
    struct tarforge t = {0};
    unsigned char *gz, *gz2;
    size_t gzlen, gz2len;
    struct berth_error err;

    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    tf_gzip(t.data, t.len, &gz, &gzlen);
    tf_gzip(gz, gzlen, &gz2, &gz2len);
    ck_assert_int_lt(apply_bytes(gz2, gz2len, BERTH_LAYER_GZIP, t.data, t.len, &err), 0);
    ck_assert_msg(strncmp(err.message, "archive-invalid: ", 17) == 0, "%s", err.message);
    assert_nothing_outside();
    ck_assert_int_eq(root_entries(), 0);
    free(gz);
    free(gz2);
    tf_free(&t);
}
END_TEST

/* ---- framing: exactly one tar stream, properly terminated, fills the layer */

static const char zeros[10240];

/* @t gzip'ed; the caller frees the buffer. */
static unsigned char *gzip_of(const struct tarforge *t, size_t *ret_len)
{
    unsigned char *gz;

    tf_gzip(t->data, t->len, &gz, ret_len);
    return gz;
}

/* Expect @code for @t, as plain tar and gzip'ed (the tar checks hold under
 * either compression); @t is freed. */
static void expect_refusal_both(struct tarforge *t, const char *code)
{
    size_t gzlen;
    unsigned char *gz = gzip_of(t, &gzlen);

    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t->data, t->len, code);
    free(gz);
    expect_refusal(t, code);
}

START_TEST(refuse_tar_end_missing)
{
    struct tarforge t = {0};

    /* No end-of-archive marker at all. */
    tf_file(&t, "f", 0644, "x");
    expect_refusal_both(&t, "tar-end-missing");
    /* The same after an entry without data (as "umoci insert" writes). */
    tf_file(&t, "f", 0644, "x");
    tf_symlink(&t, "l", "f");
    expect_refusal_both(&t, "tar-end-missing");
    /* One zero block: libarchive's end, not POSIX's. */
    tf_file(&t, "f", 0644, "x");
    tf_raw(&t, zeros, 512);
    expect_refusal_both(&t, "tar-end-missing");
    /* One zero block and part of a second. */
    tf_file(&t, "f", 0644, "x");
    tf_raw(&t, zeros, 512 + 100);
    expect_refusal_both(&t, "tar-end-missing");
    /* Nothing at all is no tar stream (libarchive says so first). */
    expect_refusal_blob("", 0, BERTH_LAYER_TAR, "", 0, "archive-invalid");
}
END_TEST

START_TEST(refuse_tar_trailing_data)
{
    struct tarforge t = {0};

    /* Garbage after the marker. */
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    tf_raw(&t, "garbage", 7);
    expect_refusal_both(&t, "tar-trailing-data");
    /* A lone zero block, then more members: libarchive stops at the zero
     * block, GNU tar --ignore-zeros reads "hidden" too. */
    tf_file(&t, "f", 0644, "x");
    tf_raw(&t, zeros, 512);
    tf_file(&t, "hidden", 0644, "y");
    tf_end(&t);
    expect_refusal_both(&t, "tar-trailing-data");
    /* One non-zero byte far into the padding. */
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    tf_raw(&t, zeros, 9000);
    tf_raw(&t, "\001", 1);
    expect_refusal_both(&t, "tar-trailing-data");
    /* A PAX header whose entry never comes. */
    tf_file(&t, "f", 0644, "x");
    tf_pax(&t, 'x', (const char *const[]){"path=orphan"}, 1);
    tf_end(&t);
    expect_refusal(&t, "archive-invalid");
}
END_TEST

START_TEST(accept_end_padding)
{
    struct tarforge t = {0};
    struct berth_error err;
    unsigned char *gz;
    size_t gzlen;

    /* GNU tar pads to its 10240-byte record; any count of zeros is padding. */
    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    tf_raw(&t, zeros, 10240 - t.len);
    tf_raw(&t, zeros, 3);
    gz = gzip_of(&t, &gzlen);
    ck_assert_msg(apply_bytes(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, &err) == 0, "%s", err.message);
    free(gz);
    assert_content("f", "x");
    berth_extract_free(x);
    x = NULL;
    ck_assert_int_eq(berth_tree_clear(rootfd, NULL), 0);
    expect_ok(&t);
    assert_content("f", "x");
}
END_TEST

/* @a's gzip followed by @b's: two members (RFC 1952 2.2), @a or @b may be empty. */
static unsigned char *two_members(const void *a, size_t alen, const void *b, size_t blen, size_t *ret_len)
{
    unsigned char *ga, *gb, *both;
    size_t la, lb;

    tf_gzip(a, alen, &ga, &la);
    tf_gzip(b, blen, &gb, &lb);
    both = malloc(la + lb);
    ck_assert_ptr_nonnull(both);
    memcpy(both, ga, la);
    memcpy(both + la, gb, lb);
    free(ga);
    free(gb);
    *ret_len = la + lb;
    return both;
}

START_TEST(refuse_gzip_multiple_members)
{
    struct tarforge t = {0};
    unsigned char *gz, *noise;
    size_t gzlen, split, n = 300000;
    uint32_t seed = 12345;

    tf_file(&t, "a", 0644, "first");
    split = t.len;
    tf_file(&t, "b", 0644, "second");
    tf_end(&t);
    /* One tar stream split across two members (libarchive reads both). */
    gz = two_members(t.data, split, t.data + split, t.len - split, &gzlen);
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "gzip-multiple-members");
    free(gz);
    /* An empty member first: the last trailer still matches the whole stream. */
    gz = two_members("", 0, t.data, t.len, &gzlen);
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "gzip-multiple-members");
    free(gz);
    /* An empty member last. */
    gz = two_members(t.data, t.len, "", 0, &gzlen);
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "gzip-multiple-members");
    free(gz);
    tf_free(&t);
    /* The second member far beyond the reader's first chunk. */
    noise = malloc(n + 1);
    ck_assert_ptr_nonnull(noise);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        noise[i] = (unsigned char)(seed >> 16);
    }
    noise[n] = '\0';
    for (size_t i = 0; i < n; i++)
        noise[i] = noise[i] ? noise[i] : 'z';
    tf_file(&t, "noise", 0644, (const char *)noise);
    split = t.len;
    tf_end(&t);
    gz = two_members(t.data, split, t.data + split, t.len - split, &gzlen);
    ck_assert_uint_gt(gzlen, 4 * 65536);
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "gzip-multiple-members");
    free(gz);
    free(noise);
    tf_free(&t);
}
END_TEST

/* The gzip of @t with @len bytes @extra appended. */
static void expect_gzip_suffix_refused(const struct tarforge *t, const void *extra, size_t len, const char *code)
{
    size_t gzlen;
    unsigned char *gz = gzip_of(t, &gzlen);

    gz = realloc(gz, gzlen + len);
    ck_assert_ptr_nonnull(gz);
    memcpy(gz + gzlen, extra, len);
    expect_refusal_blob(gz, gzlen + len, BERTH_LAYER_GZIP, t->data, t->len, code);
    free(gz);
}

START_TEST(refuse_gzip_trailing_data)
{
    struct tarforge t = {0};

    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    /* libarchive ignores what starts no member; gunzip warns, others refuse. */
    expect_gzip_suffix_refused(&t, "garbage", 7, "gzip-trailing-data");
    expect_gzip_suffix_refused(&t, zeros, 512, "gzip-trailing-data");
    expect_gzip_suffix_refused(&t, "\x1f", 1, "gzip-trailing-data");
    expect_gzip_suffix_refused(&t, "\x1f\x00", 2, "gzip-trailing-data");
    /* The start of another member is a second member, whatever follows. */
    expect_gzip_suffix_refused(&t, "\x1f\x8b", 2, "gzip-multiple-members");
    tf_free(&t);
}
END_TEST

START_TEST(refuse_gzip_bad_trailer)
{
    struct tarforge t = {0};
    unsigned char *gz;
    size_t gzlen;

    tf_file(&t, "f", 0644, "x");
    tf_end(&t);
    gz = gzip_of(&t, &gzlen);
    /* libarchive checks neither CRC32 nor ISIZE (RFC 1952 2.3.1). */
    gz[gzlen - 8] ^= 1;
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "archive-invalid");
    gz[gzlen - 8] ^= 1;
    gz[gzlen - 4] ^= 1;
    expect_refusal_blob(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, "archive-invalid");
    gz[gzlen - 4] ^= 1;
    /* No trailer at all. */
    expect_refusal_blob(gz, gzlen - 8, BERTH_LAYER_GZIP, t.data, t.len, "archive-invalid");
    /* The intact blob passes. */
    ck_assert_int_eq(apply_bytes(gz, gzlen, BERTH_LAYER_GZIP, t.data, t.len, &(struct berth_error){0}), 0);
    free(gz);
    tf_free(&t);
}
END_TEST

START_TEST(refuse_mixed_long_names)
{
    struct tarforge t = {0};

    /* Agreeing names or not: one entry gets PAX or GNU names, not both. */
    tf_pax(&t, 'x', (const char *const[]){"path=a"}, 1);
    tf_gnu_long(&t, 'L', "b");
    tf_file(&t, "b", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "mixed-long-names");
    tf_gnu_long(&t, 'L', "same");
    tf_pax(&t, 'x', (const char *const[]){"path=same"}, 1);
    tf_file(&t, "same", 0644, "x");
    tf_end(&t);
    expect_refusal(&t, "mixed-long-names");
    tf_pax(&t, 'x', (const char *const[]){"mtime=1"}, 1);
    tf_gnu_long(&t, 'K', "target");
    tf_symlink(&t, "s", "target");
    tf_end(&t);
    expect_refusal(&t, "mixed-long-names");
    /* Each kind alone, on separate entries, is fine. */
    tf_pax(&t, 'x', (const char *const[]){"path=p"}, 1);
    tf_file(&t, "p", 0644, "pax");
    tf_gnu_long(&t, 'L', "g");
    tf_file(&t, "g", 0644, "gnu");
    tf_end(&t);
    expect_ok(&t);
    assert_content("p", "pax");
    assert_content("g", "gnu");
}
END_TEST

START_TEST(refuse_contiguous_file)
{
    struct tarforge t = {0};

    tf_member(&t, &(struct tf_member){.name = "c", .type = '7', .data = "data", .size = 4});
    tf_end(&t);
    expect_refusal(&t, "unsupported-entry");
}
END_TEST

/* ---- layers real tools write ------------------------------------------- */

/* A case that needs a tool the machine lacks: skipped under plain make
 * check (said on stderr), failed where every suite must run
 * (BERTH_REQUIRE_TOOLS=1, tests/require-tool.sh). */
static void tool_missing(const char *what, const char *tool, const char *package)
{
    const char *req = getenv("BERTH_REQUIRE_TOOLS");

    ck_assert_msg(!req || strcmp(req, "1") != 0, "%s: %s is not installed (apt-get install %s)", what, tool, package);
    fprintf(stderr, "%s: %s is not installed (apt-get install %s), skipped\n", what, tool, package);
}

/* Run @cmd in tooldir (sh -c); true when it exited 0. */
static bool run_in_tooldir(const char *cmd)
{
    char *full = NULL;
    int st;

    if (!tooldir)
        tooldir = test_tmpdir();
    ck_assert_int_gt(asprintf(&full, "cd '%s' && %s", tooldir, cmd), 0);
    st = system(full);
    free(full);
    return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* The tree every tool archives, below tooldir/src: a directory, a file, a
 * symlink and a hard link to it, with @long_names a 194-byte file name
 * (more than ustar's 100-byte name field holds). */
static void make_tool_tree(bool long_names)
{
    char name[200];

    ck_assert(run_in_tooldir("mkdir -p src/d && printf 'hello\\n' >src/d/f && ln -s d/f src/l && ln src/d/f src/h"));
    if (long_names) {
        char cmd[300];
        memset(name, 'n', 194);
        name[194] = '\0';
        snprintf(cmd, sizeof(cmd), "printf 'long\\n' >src/d/%s", name);
        ck_assert(run_in_tooldir(cmd));
    }
}

/* The bytes of tooldir/@name. */
static unsigned char *read_tmp(const char *name, size_t *ret_len)
{
    char *p = test_path(tooldir, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    struct berth_error err = BERTH_ERROR_INIT;

    ck_assert_msg(fd >= 0, "%s: %m", p);
    ck_assert_int_eq(berth_read_fd(fd, 64u << 20, &buf, ret_len, &err), 0);
    close(fd);
    free(p);
    return (unsigned char *)buf;
}

/* Extract tooldir/layer.tar (and, when @gz names a file, that gzip of it) and check the tree. */
static void expect_tool_layer(const char *what, const char *gz, const char *prefix, bool long_names)
{
    char path[400];
    size_t tlen, glen;
    unsigned char *tar = read_tmp("layer.tar", &tlen), *blob = gz ? read_tmp(gz, &glen) : NULL;
    struct berth_error err;
    int r;

    berth_extract_free(x);
    x = NULL;
    ck_assert_int_eq(berth_tree_clear(rootfd, NULL), 0);
    r = blob ? apply_bytes(blob, glen, BERTH_LAYER_GZIP, tar, tlen, &err)
             : apply_bytes(tar, tlen, BERTH_LAYER_TAR, tar, tlen, &err);
    ck_assert_msg(r == 0, "%s%s%s refused: %s", what, gz ? " | " : "", gz ? gz : "", err.message);
    snprintf(path, sizeof(path), "%sd/f", prefix);
    assert_content(path, "hello\n");
    snprintf(path, sizeof(path), "%sh", prefix);
    assert_content(path, "hello\n");
    {
        char f[400];
        snprintf(f, sizeof(f), "%sd/f", prefix);
        ck_assert_uint_eq(lstat_in_root(path).st_ino, lstat_in_root(f).st_ino);
    }
    snprintf(path, sizeof(path), "%sl", prefix);
    ck_assert(S_ISLNK(lstat_in_root(path).st_mode));
    if (long_names) {
        char name[300];
        memset(name, 'n', 196);
        memcpy(name, "d/", 2);
        name[196] = '\0';
        snprintf(path, sizeof(path), "%s%s", prefix, name);
        assert_content(path, "long\n");
    }
    assert_nothing_outside();
    free(tar);
    free(blob);
}

START_TEST(accept_tool_layers)
{
    static const struct {
        const char *what, *cmd;
        bool long_names;
    } tools[] = {
        {"GNU tar (gnu)", "tar --format=gnu -C src -cf layer.tar d l h", true},
        {"GNU tar (oldgnu)", "tar --format=oldgnu -C src -cf layer.tar d l h", true},
        {"GNU tar (posix)", "tar --format=posix -C src -cf layer.tar d l h", true},
        {"GNU tar (ustar)", "tar --format=ustar -C src -cf layer.tar d l h", false},
        {"GNU tar (v7)", "tar --format=v7 -C src -cf layer.tar d l h", false},
        {"GNU tar (-b 1)", "tar -b 1 --format=gnu -C src -cf layer.tar d l h", true},
        {"bsdtar (default)", "bsdtar -C src -cf layer.tar d l h", true},
        {"bsdtar (pax)", "bsdtar --format pax -C src -cf layer.tar d l h", true},
        {"bsdtar (ustar)", "bsdtar --format ustar -C src -cf layer.tar d l h", false},
        {"bsdtar (gnutar)", "bsdtar --format gnutar -C src -cf layer.tar d l h", true},
    };
    bool have_bsdtar = run_in_tooldir("command -v bsdtar >/dev/null");

    for (int pass = 0; pass < 2; pass++) {
        make_tool_tree(pass == 1);
        for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
            if (tools[i].long_names != (pass == 1))
                continue;
            if (strncmp(tools[i].what, "bsdtar", 6) == 0 && !have_bsdtar) {
                tool_missing(tools[i].what, "bsdtar", "libarchive-tools");
                continue;
            }
            ck_assert_msg(run_in_tooldir(tools[i].cmd), "%s failed", tools[i].cmd);
            expect_tool_layer(tools[i].what, NULL, "", tools[i].long_names);
            ck_assert(run_in_tooldir("gzip -n -9 -c layer.tar >layer.n.gz && gzip -1 -c layer.tar >layer.1.gz"));
            expect_tool_layer(tools[i].what, "layer.n.gz", "", tools[i].long_names);
            expect_tool_layer(tools[i].what, "layer.1.gz", "", tools[i].long_names);
        }
        ck_assert(run_in_tooldir("rm -rf src layer.tar layer.n.gz layer.1.gz"));
    }
}
END_TEST

/* Build image oci:t with umoci (Go's archive/tar and a parallel gzip): @how
 * is the umoci step that adds the tree as its last layer; that layer goes
 * to tooldir/layer.gz, its uncompressed stream to tooldir/layer.tar, and
 * the DiffID umoci wrote must be that stream's digest. */
static void umoci_layer(const char *how)
{
    char *cmd = NULL, *diff_hex;
    size_t len, tlen;
    unsigned char *tar;
    uint8_t d[BERTH_SHA256_LEN];
    char text[BERTH_DIGEST_BUFSZ];

    ck_assert_int_gt(
        asprintf(&cmd,
                 "rm -rf oci bundle && umoci init --layout oci && umoci new --image oci:t && %s && "
                 "m=$(jq -r '.manifests[0].digest' oci/index.json | cut -d: -f2) && "
                 "l=$(jq -r '.layers[-1].digest' oci/blobs/sha256/$m | cut -d: -f2) && "
                 "c=$(jq -r '.config.digest' oci/blobs/sha256/$m | cut -d: -f2) && "
                 "cp oci/blobs/sha256/$l layer.gz && jq -r '.rootfs.diff_ids[-1]' oci/blobs/sha256/$c "
                 "| cut -d: -f2 | tr -d '\\n' >diffid && gzip -dc layer.gz >layer.tar",
                 how),
        0);
    ck_assert_msg(run_in_tooldir(cmd), "%s failed", cmd);
    free(cmd);
    diff_hex = (char *)read_tmp("diffid", &len);
    ck_assert_uint_eq(len, 64);
    tar = read_tmp("layer.tar", &tlen);
    ck_assert_int_eq(berth_sha256(tar, tlen, d), 0);
    berth_digest_format(d, text);
    ck_assert_str_eq(text + strlen("sha256:"), diff_hex);
    free(tar);
    free(diff_hex);
}

START_TEST(umoci_layers)
{
    const char *rootless = geteuid() == 0 ? "" : " --rootless";
    char how[256];
    size_t tlen;
    unsigned char *tar;
    bool marker;

    if (!run_in_tooldir("command -v umoci >/dev/null && command -v jq >/dev/null")) {
        tool_missing("umoci_layers", "umoci or jq", "umoci jq");
        return;
    }
    make_tool_tree(true);
    /* "umoci repack", the way images are built with umoci: accepted. */
    snprintf(how, sizeof(how),
             "umoci unpack%s --image oci:t bundle && mkdir bundle/rootfs/srv && cp -a src/. bundle/rootfs/srv/ && "
             "umoci repack --image oci:t bundle",
             rootless);
    umoci_layer(how);
    expect_tool_layer("umoci repack", "layer.gz", "srv/", true);
    /* "umoci insert" (0.4.7) ends its layer without the end-of-archive
     * marker: refused.  (Inserted at "/", it would also name the root entry
     * "/", refused as "absolute-path"; "./" is the accepted form.) */
    snprintf(how, sizeof(how), "umoci insert%s --image oci:t src /srv", rootless);
    umoci_layer(how);
    tar = read_tmp("layer.tar", &tlen);
    marker = tlen >= 1024 && memcmp(tar + tlen - 1024, zeros, 1024) == 0;
    if (marker)
        expect_tool_layer("umoci insert", "layer.gz", "srv/", true);
    else {
        size_t glen;
        unsigned char *gz = read_tmp("layer.gz", &glen);
        expect_refusal_blob(gz, glen, BERTH_LAYER_GZIP, tar, tlen, "tar-end-missing");
        free(gz);
    }
    free(tar);
}
END_TEST

/* ---- berth_tree_clear -------------------------------------------------- */

START_TEST(tree_clear_hostile_tree)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *outside = test_path(tmp, "sentinel");
    char *keep = test_path(tmp, "sentinel/keep");
    int fd;

    ck_assert_int_eq(mkdirat(rootfd, "d", 0755), 0);
    ck_assert_int_eq(mkdirat(rootfd, "d/e", 0755), 0);
    ck_assert_int_eq(symlinkat(outside, rootfd, "d/e/abs"), 0);
    ck_assert_int_eq(symlinkat(keep, rootfd, "d/file-link"), 0);
    ck_assert_int_eq(symlinkat("../../sentinel", rootfd, "rel"), 0);
    fd = openat(rootfd, "d/e/f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(mkdirat(rootfd, "closed", 0755), 0);
    ck_assert_int_eq(mkdirat(rootfd, "closed/inner", 0755), 0);
    fd = openat(rootfd, "closed/inner/f", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0000);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(fchmodat(rootfd, "closed/inner", 0000, 0), 0);
    ck_assert_int_eq(fchmodat(rootfd, "closed", 0000, 0), 0);
    /* A deep chain, deeper than any recursion should go. */
    {
        char path[64];
        int cur = dup(rootfd);
        for (int i = 0; i < 2000; i++) {
            int next;
            snprintf(path, sizeof(path), "%d", i);
            ck_assert_int_eq(mkdirat(cur, path, 0755), 0);
            next = openat(cur, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            ck_assert_int_ge(next, 0);
            close(cur);
            cur = next;
        }
        close(cur);
    }
    ck_assert_int_eq(berth_tree_clear(rootfd, &err), 0);
    ck_assert_int_eq(root_entries(), 0);
    assert_nothing_outside();
    free(outside);
    free(keep);
}
END_TEST

START_TEST(extract_new_arguments)
{
    struct berth_extract *y = NULL;
    struct berth_stage_limits bad = limits;

    ck_assert_int_eq(berth_extract_new(-1, &limits, deadline, &y), -EINVAL);
    ck_assert_int_eq(berth_extract_new(rootfd, NULL, deadline, &y), -EINVAL);
    bad.entries = 0;
    ck_assert_int_eq(berth_extract_new(rootfd, &bad, deadline, &y), -EINVAL);
    bad = limits;
    bad.expanded_bytes = BERTH_STAGE_MAX_EXPANDED_BYTES + 1;
    ck_assert_int_eq(berth_extract_new(rootfd, &bad, deadline, &y), -EINVAL);
    ck_assert_ptr_null(y);
    berth_extract_free(NULL);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("extract");
    TCase *tc = test_case(s, "refusals");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, refuse_absolute_path);
    tcase_add_test(tc, refuse_path_traversal);
    tcase_add_test(tc, refuse_invalid_path);
    tcase_add_test(tc, refuse_symlink_loop);
    tcase_add_test(tc, refuse_hardlink_missing_target);
    tcase_add_test(tc, refuse_device_node);
    tcase_add_test(tc, refuse_fifo);
    tcase_add_test(tc, refuse_socket);
    tcase_add_test(tc, refuse_sparse_file);
    tcase_add_test(tc, refuse_setuid);
    tcase_add_test(tc, refuse_xattr);
    tcase_add_test(tc, refuse_duplicate_entry);
    tcase_add_test(tc, refuse_invalid_whiteout);
    tcase_add_test(tc, refuse_pax_global);
    tcase_add_test(tc, refuse_name_mismatch);
    tcase_add_test(tc, refuse_archive_invalid);
    tcase_add_test(tc, refuse_gzip_invalid);
    tcase_add_test(tc, refuse_unsupported_entry);
    tcase_add_test(tc, refuse_path_conflict);
    tcase_add_test(tc, refuse_expanded_budget_gzip_bomb);
    tcase_add_test(tc, refuse_expanded_budget_plain);
    tcase_add_test(tc, entry_budget);
    tcase_add_test(tc, time_budget);
    tcase_add_test(tc, diffid_mismatch_then_clear);
    tcase_add_test(tc, extract_new_arguments);

    tc = test_case(s, "accepted");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, accept_basic_layout);
    tcase_add_test(tc, accept_symlinks_verbatim_and_confined);
    tcase_add_test(tc, accept_hardlinks_and_modes);
    tcase_add_test(tc, accept_pax_long_names);
    tcase_add_test(tc, whiteouts_across_layers);
    tcase_add_test(tc, whiteout_through_symlink_refused);
    tcase_add_test(tc, whiteout_names_as_directories_refused);
    tcase_add_test(tc, refuse_ambiguous_structure);
    tcase_add_test(tc, refuse_nested_gzip);
    tcase_add_test(tc, tree_clear_hostile_tree);
    tc = test_case(s, "framing");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, refuse_tar_end_missing);
    tcase_add_test(tc, refuse_tar_trailing_data);
    tcase_add_test(tc, accept_end_padding);
    tcase_add_test(tc, refuse_gzip_multiple_members);
    tcase_add_test(tc, refuse_gzip_trailing_data);
    tcase_add_test(tc, refuse_gzip_bad_trailer);
    tcase_add_test(tc, refuse_mixed_long_names);
    tcase_add_test(tc, refuse_contiguous_file);
    tcase_add_test(tc, accept_tool_layers);
    tcase_add_test(tc, umoci_layers);
    return s;
}

TEST_MAIN()
