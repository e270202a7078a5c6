/* SPDX-License-Identifier: MIT */
/*
 * test-evidence-sqlite.c -- the real evidence-sqlite plugin, loaded by the
 * core's loader from the built .so, on a real SQLite file and real content
 * files in a temporary directory: immutable put (identical retry, size
 * conflict, wrong bytes), get streaming and re-verifying (a corrupted
 * content file is -EBADMSG), tombstones that refuse a put forever (also
 * after a reopen), expired tombstones that do not, upload() files linked
 * without a copy, list paging, usage, prune, the strict parsers, the modes
 * and application_id of what is on disk, and a child killed with SIGKILL in
 * the middle of a large put leaving nothing visible.
 */
#include <check.h>
#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include "digest.h"
#include "host-table.h"
#include "journal.h"
#include "loader.h"
#include "macro.h"
#include "testutil.h"

#define P1 "alice"
#define P2 "bob"
#define SCOPE "[\"team\",\"dev\"]"
#define EV_APPLICATION_ID 0x62726576 /* "brev" */

static char *dir, *plugins, *store;

struct ev {
    struct berth_host_instance inst;
    struct berth_plugin_handle *h;
    const struct berth_evidence_store_ops_v1 *ops;
    void *st;
};

static void setup(void)
{
    const char *src = getenv("BERTH_EVIDENCE_PLUGIN_DIR");
    char *so, *to;

    ck_assert_ptr_nonnull(src);
    dir = test_tmpdir();
    plugins = test_path(dir, "plugins");
    store = test_path(dir, "store");
    ck_assert_int_eq(mkdir(plugins, 0755), 0);
    so = test_path(src, "evidence-sqlite.so");
    to = test_path(plugins, "evidence-sqlite.so");
    test_copy_file(so, to, 0755);
    free(so);
    free(to);
}

static void teardown(void)
{
    if (!getenv("KEEP_TMP"))
        test_rm_rf(dir);
    free(dir);
    free(plugins);
    free(store);
}

/* Load the plugin with @config; returns init's error (0 on success). */
static int ev_open_config(struct ev *e, const char *config, struct berth_error *err)
{
    const struct berth_host *host = berth_host_instance_init(&e->inst, "evidence", NULL);
    struct berth_plugin_load_options o = {
        .dir = plugins,
        .file = "evidence-sqlite.so",
        .host = host,
        .kind = BERTH_PLUGIN_EVIDENCE_STORE,
        .config = config,
        .config_len = strlen(config),
    };
    int r = berth_plugin_load(&o, &e->h, NULL, err);

    if (r < 0)
        return r;
    e->ops = berth_plugin_evidence_store_ops(e->h);
    e->st = berth_plugin_state(e->h);
    return 0;
}

static void ev_open_max(struct ev *e, uint64_t max)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char config[512];

    snprintf(config, sizeof(config), "{\"directory\":\"%s\",\"max_object_bytes\":%llu}", store,
             (unsigned long long)max);
    ck_assert_msg(ev_open_config(e, config, &err) == 0, "init: %s", err.message);
}

static void ev_open(struct ev *e)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char config[512];

    snprintf(config, sizeof(config), "{\"directory\":\"%s\"}", store);
    ck_assert_msg(ev_open_config(e, config, &err) == 0, "init: %s", err.message);
}

static void ev_close(struct ev *e)
{
    berth_plugin_unload(e->h);
    e->h = NULL;
}

static char *digest_of(const void *data, size_t len)
{
    char *d = malloc(BERTH_DIGEST_BUFSZ);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(berth_digest_bytes(data, len, d), 0);
    return d;
}

static char *key(const char *principal, const char *digest)
{
    char *k = NULL;
    ck_assert_int_gt(asprintf(&k, "{\"digest\":\"%s\",\"principal\":\"%s\",\"scope\":" SCOPE "}", digest, principal),
                     0);
    return k;
}

static char *rm_key(const char *principal, const char *digest, const char *actor)
{
    char *k = NULL;
    ck_assert_int_gt(asprintf(&k, "{\"actor\":\"%s\",\"digest\":\"%s\",\"principal\":\"%s\",\"scope\":" SCOPE "}",
                              actor, digest, principal),
                     0);
    return k;
}

static char *meta(const char *principal, const char *digest, uint64_t size, const char *media, const char *retain)
{
    char *m = NULL;
    ck_assert_int_gt(asprintf(&m,
                              "{\"digest\":\"%s\",\"media_type\":\"%s\",\"principal\":\"%s\",%s%s%s\"scope\":" SCOPE
                              ",\"size\":%llu}",
                              digest, media, principal, retain ? "\"retain_until\":\"" : "", retain ? retain : "",
                              retain ? "\"," : "", (unsigned long long)size),
                     0);
    return m;
}

/* A regular file in the test directory holding @len bytes of @data, open for reading. */
static int data_file(const void *data, size_t len)
{
    char *path = test_path(dir, "data");
    int fd;

    (void)unlink(path);
    test_write_file(path, data, len, 0600);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(unlink(path), 0);
    free(path);
    return fd;
}

/* put() @data as @principal's; returns the op's result and the reference in *@ref. */
static int put_as(struct ev *e, const char *principal, const void *data, size_t len, const char *media,
                  const char *retain, char **ref)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *d = digest_of(data, len), *m = meta(principal, d, len, media, retain), *out = NULL;
    size_t outlen = 0;
    int fd = data_file(data, len), r;

    r = e->ops->put(e->st, m, strlen(m), fd, &out, &outlen, &err);
    close(fd);
    if (ref)
        *ref = out;
    else
        free(out);
    free(m);
    free(d);
    return r;
}

/* get() into a file; returns the result and, on success, the bytes in @buf. */
static int get_as(struct ev *e, const char *principal, const char *digest, uint64_t max, char *buf, size_t bufsz,
                  size_t *len, struct berth_error *err)
{
    char *k = key(principal, digest), *path = test_path(dir, "out");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600), r;
    ssize_t n;

    ck_assert_int_ge(fd, 0);
    r = e->ops->get(e->st, k, strlen(k), fd, max, err);
    n = pread(fd, buf, bufsz, 0);
    ck_assert_int_ge(n, 0);
    *len = (size_t)n;
    close(fd);
    unlink(path);
    free(path);
    free(k);
    return r;
}

static int stat_as(struct ev *e, const char *principal, const char *digest, char **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *k = key(principal, digest), *out = NULL;
    size_t len = 0;
    int r = e->ops->stat(e->st, k, strlen(k), &out, &len, &err);

    free(k);
    if (ret)
        *ret = out;
    else
        free(out);
    return r;
}

static int remove_as(struct ev *e, const char *principal, const char *digest, const char *actor, const char *reason)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *k = rm_key(principal, digest, actor);
    int r = e->ops->remove(e->st, k, strlen(k), reason, &err);

    free(k);
    return r;
}

static char *tombstone_of(struct ev *e, const char *principal, const char *digest, int *ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *k = key(principal, digest), *out = NULL;
    size_t len = 0;

    *ret = e->ops->tombstone(e->st, k, strlen(k), &out, &len, &err);
    free(k);
    return out;
}

static char *content_path(const char *digest)
{
    char *p = NULL;
    ck_assert_int_gt(asprintf(&p, "%s/objects/sha256/%s", store, digest + 7), 0);
    return p;
}

/* Entries of objects/sha256 (what is visible of the content). */
static int content_files(void)
{
    char *p = test_path(store, "objects/sha256");
    int n = test_count_entries(p);

    free(p);
    return n;
}

static const char hello[] = "hello evidence\n";
#define HELLO_LEN (sizeof(hello) - 1)

START_TEST(put_get_stat)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *ref = NULL, *doc = NULL, *d = digest_of(hello, HELLO_LEN), buf[256], want[512];
    size_t len = 0;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, &ref), 0);
    snprintf(want, sizeof(want), "{\"digest\":\"%s\",\"media_type\":\"text/plain\",\"size\":%zu}", d, HELLO_LEN);
    ck_assert_str_eq(ref, want);
    free(ref);

    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), 0);
    ck_assert_uint_eq(len, HELLO_LEN);
    ck_assert(memcmp(buf, hello, HELLO_LEN) == 0);
    /* Exactly the size is enough; one byte less is -EFBIG and writes nothing. */
    ck_assert_int_eq(get_as(&e, P1, d, HELLO_LEN, buf, sizeof(buf), &len, &err), 0);
    ck_assert_int_eq(get_as(&e, P1, d, HELLO_LEN - 1, buf, sizeof(buf), &len, &err), -EFBIG);
    ck_assert_uint_eq(len, 0);

    ck_assert_int_eq(stat_as(&e, P1, d, &doc), 0);
    ck_assert_ptr_nonnull(strstr(doc, "\"media_type\":\"text/plain\",\"principal\":\"alice\",\"retain_until\":null,"
                                      "\"scope\":[\"team\",\"dev\"],\"size\":15}"));
    ck_assert_ptr_nonnull(strstr(doc, "{\"created_at\":\"1"));
    free(doc);

    /* Another owner, or another scope, does not see it. */
    ck_assert_int_eq(stat_as(&e, P2, d, NULL), -ENOENT);
    ck_assert_int_eq(get_as(&e, P2, d, 1024, buf, sizeof(buf), &len, &err), -ENOENT);
    {
        char k[256];
        snprintf(k, sizeof(k), "{\"digest\":\"%s\",\"principal\":\"alice\",\"scope\":[\"team\"]}", d);
        ck_assert_int_eq(e.ops->stat(e.st, k, strlen(k), &doc, &len, &err), -ENOENT);
    }
    /* An empty object is an object. */
    ck_assert_int_eq(put_as(&e, P1, "", 0, "application/octet-stream", NULL, NULL), 0);
    {
        char *d0 = digest_of("", 0);
        ck_assert_int_eq(get_as(&e, P1, d0, 0, buf, sizeof(buf), &len, &err), 0);
        ck_assert_uint_eq(len, 0);
        free(d0);
    }
    ev_close(&e);
    free(d);
}
END_TEST

START_TEST(put_is_immutable)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *ref1 = NULL, *ref2 = NULL, *m, *out = NULL;
    size_t len = 0;
    int fd;

    ev_open_max(&e, 64);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, &ref1), 0);
    /* An identical retry: 0 and the same reference. */
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, &ref2), 0);
    ck_assert_str_eq(ref1, ref2);
    ck_assert_int_eq(content_files(), 1);

    /* The same key with another size, or another media type: -EEXIST. */
    m = meta(P1, d, HELLO_LEN + 1, "text/plain", NULL);
    fd = data_file(hello, HELLO_LEN);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EEXIST);
    free(m);
    m = meta(P1, d, HELLO_LEN, "text/csv", NULL);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EEXIST);
    free(m);
    close(fd);

    /* Bytes that do not match the digest or the size: -EBADMSG, nothing stored. */
    m = meta(P2, d, HELLO_LEN, "text/plain", NULL);
    fd = data_file("hello evidencE\n", HELLO_LEN);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EBADMSG);
    close(fd);
    fd = data_file(hello, HELLO_LEN - 1);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EBADMSG);
    close(fd);
    fd = data_file("hello evidence\nX", HELLO_LEN + 1);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EBADMSG);
    close(fd);
    ck_assert_int_eq(stat_as(&e, P2, d, NULL), -ENOENT);
    /* Knowing a digest is not having the bytes: another owner's put of
     * existing content is verified too. */
    fd = data_file("HELLO EVIDENCE\n", HELLO_LEN);
    ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err), -EBADMSG);
    close(fd);
    ck_assert_int_eq(stat_as(&e, P2, d, NULL), -ENOENT);

    /* data_fd is read from offset 0, whatever its position; it is not moved. */
    fd = data_file(hello, HELLO_LEN);
    ck_assert_int_eq(lseek(fd, 0, SEEK_END), (off_t)HELLO_LEN);
    ck_assert_msg(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err) == 0, "%s", err.message);
    ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), (off_t)HELLO_LEN);
    close(fd);
    free(out);
    free(m);
    ck_assert_int_eq(content_files(), 1); /* one file for both owners */

    /* Over max_object_bytes (64 here): -EFBIG before anything is read. */
    {
        char big[65] = {0};
        char *bd = digest_of(big, sizeof(big));
        m = meta(P1, bd, sizeof(big), "application/octet-stream", NULL);
        ck_assert_int_eq(e.ops->put(e.st, m, strlen(m), 0 /* never read */, &out, &len, &err), -EFBIG);
        free(m);
        free(bd);
        ck_assert_int_eq(put_as(&e, P1, big, 64, "application/octet-stream", NULL, NULL), 0);
    }
    ev_close(&e);
    free(ref1);
    free(ref2);
    free(d);
}
END_TEST

/* A later retain_until extends retention; absent (forever) wins. */
START_TEST(retention_extends)
{
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *doc = NULL;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", "200", NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", "100", NULL), 0);
    ck_assert_int_eq(stat_as(&e, P1, d, &doc), 0);
    ck_assert_ptr_nonnull(strstr(doc, "\"retain_until\":\"200\""));
    free(doc);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", "300", NULL), 0);
    ck_assert_int_eq(stat_as(&e, P1, d, &doc), 0);
    ck_assert_ptr_nonnull(strstr(doc, "\"retain_until\":\"300\""));
    free(doc);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", "400", NULL), 0);
    ck_assert_int_eq(stat_as(&e, P1, d, &doc), 0);
    ck_assert_ptr_nonnull(strstr(doc, "\"retain_until\":null"));
    free(doc);
    ev_close(&e);
    free(d);
}
END_TEST

START_TEST(remove_leaves_tombstone)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *path = content_path(d), *t, buf[64], *k;
    size_t len;
    struct stat st;
    int r;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(put_as(&e, P2, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    t = tombstone_of(&e, P1, d, &r);
    ck_assert_int_eq(r, -ENOENT);

    /* P1 deletes its object: the shared content stays for P2. */
    ck_assert_int_eq(remove_as(&e, P1, d, "admin", "leaked a secret"), 0);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(stat_as(&e, P1, d, NULL), -EIDRM);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), -EIDRM);
    ck_assert_int_eq(get_as(&e, P2, d, 1024, buf, sizeof(buf), &len, &err), 0);
    t = tombstone_of(&e, P1, d, &r);
    ck_assert_int_eq(r, 0);
    ck_assert_ptr_nonnull(strstr(t, "{\"actor\":\"admin\",\"deleted_at\":\"1"));
    ck_assert_ptr_nonnull(strstr(t, "\"kind\":\"deleted\",\"principal\":\"alice\",\"reason\":\"leaked a secret\","
                                    "\"scope\":[\"team\",\"dev\"]}"));
    /* A repeat, even with another reason, is 0 and keeps the first tombstone. */
    ck_assert_int_eq(remove_as(&e, P1, d, "other", "again"), 0);
    {
        char *t2 = tombstone_of(&e, P1, d, &r);
        ck_assert_str_eq(t, t2);
        free(t2);
    }
    free(t);
    /* Refused forever. */
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), -EIDRM);

    /* The last owner goes: the content file goes. */
    ck_assert_int_eq(remove_as(&e, P2, d, P2, "done"), 0);
    ck_assert_int_eq(stat(path, &st), -1);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(content_files(), 0);

    /* A key never stored: the tombstone still stops a later put. */
    {
        char *d2 = digest_of("never", 5);
        ck_assert_int_eq(remove_as(&e, P1, d2, "admin", "pre-emptive"), 0);
        ck_assert_int_eq(stat_as(&e, P1, d2, NULL), -EIDRM);
        ck_assert_int_eq(put_as(&e, P1, "never", 5, "text/plain", NULL, NULL), -EIDRM);
        ck_assert_int_eq(content_files(), 0);
        free(d2);
    }

    /* remove needs an actor and a sane reason. */
    k = key(P1, d);
    ck_assert_int_eq(e.ops->remove(e.st, k, strlen(k), "why", &err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "actor"));
    free(k);
    ck_assert_int_eq(remove_as(&e, P2, d, "admin", ""), -EINVAL);
    ck_assert_int_eq(remove_as(&e, P2, d, "admin", "line\nbreak"), -EINVAL);
    ck_assert_int_eq(remove_as(&e, P2, d, "admin", "\xff"), -EINVAL);
    ck_assert_int_eq(remove_as(&e, P2, d, "bad actor", "x"), -EINVAL);
    ev_close(&e);
    free(path);
    free(d);
}
END_TEST

/* Tombstones and objects survive a reopen (a restart of berthd). */
START_TEST(reopen_persists)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *d2 = digest_of("two", 3), buf[64];
    size_t len;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, "two", 3, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(remove_as(&e, P1, d2, "admin", "gone"), 0);
    ev_close(&e);

    ev_open(&e);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), 0);
    ck_assert(len == HELLO_LEN && memcmp(buf, hello, len) == 0);
    ck_assert_int_eq(stat_as(&e, P1, d2, NULL), -EIDRM);
    ck_assert_int_eq(put_as(&e, P1, "two", 3, "text/plain", NULL, NULL), -EIDRM);
    /* One instance per directory: a second one is refused while it is open. */
    {
        struct ev e2;
        char config[512];
        snprintf(config, sizeof(config), "{\"directory\":\"%s\"}", store);
        ck_assert_int_eq(ev_open_config(&e2, config, &err), -EBUSY);
    }
    ev_close(&e);
    free(d);
    free(d2);
}
END_TEST

static void assert_mode(const char *rel, mode_t type, mode_t mode)
{
    char *p = test_path(store, rel);
    struct stat st;

    ck_assert_msg(lstat(p, &st) == 0, "%s: %s", p, strerror(errno));
    ck_assert_msg((st.st_mode & S_IFMT) == type, "%s has the wrong type", rel);
    ck_assert_msg((st.st_mode & 07777) == mode, "%s is %04o, not %04o", rel, st.st_mode & 07777, mode);
    ck_assert_uint_eq(st.st_uid, geteuid());
    free(p);
}

static int db_pragma(const char *pragma)
{
    char *p = test_path(store, "evidence.db");
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int v;

    ck_assert_int_eq(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_prepare_v2(db, pragma, -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    free(p);
    return v;
}

START_TEST(files_on_disk)
{
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), rel[128];

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    assert_mode(".", S_IFDIR, 0700);
    assert_mode("objects", S_IFDIR, 0700);
    assert_mode("objects/sha256", S_IFDIR, 0700);
    assert_mode("evidence.db", S_IFREG, 0600);
    assert_mode("evidence.db.lock", S_IFREG, 0600);
    assert_mode("evidence.db-wal", S_IFREG, 0600);
    snprintf(rel, sizeof(rel), "objects/sha256/%s", d + 7);
    assert_mode(rel, S_IFREG, 0600);
    ev_close(&e);
    /* The database is the plugin's own kind, not a berth journal. */
    ck_assert_int_eq(db_pragma("PRAGMA application_id"), EV_APPLICATION_ID);
    ck_assert_int_ne(db_pragma("PRAGMA application_id"), 0x62727468);
    ck_assert_int_eq(db_pragma("PRAGMA user_version"), 1);

    /* A directory others can enter is refused. */
    {
        struct berth_error err = BERTH_ERROR_INIT;
        char config[512];
        ck_assert_int_eq(chmod(store, 0750), 0);
        snprintf(config, sizeof(config), "{\"directory\":\"%s\"}", store);
        ck_assert_int_eq(ev_open_config(&e, config, &err), -EPERM);
        ck_assert_ptr_nonnull(strstr(err.message, "private"));
        ck_assert_int_eq(chmod(store, 0700), 0);
    }
    /* A berth journal is not an evidence database. */
    {
        struct berth_journal *j = NULL;
        struct berth_error err = BERTH_ERROR_INIT;
        char *other = test_path(dir, "other"), *jp = test_path(other, "evidence.db"), config[512];

        ck_assert_int_eq(mkdir(other, 0700), 0);
        ck_assert_int_eq(berth_journal_open(jp, BERTH_JOURNAL_CREATE, &j, &err), 0);
        berth_journal_close(j);
        snprintf(config, sizeof(config), "{\"directory\":\"%s\"}", other);
        ck_assert_int_eq(ev_open_config(&e, config, &err), -EMEDIUMTYPE);
        free(jp);
        free(other);
    }
    free(d);
}
END_TEST

START_TEST(corruption_detected)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *path = content_path(d), buf[64];
    size_t len;
    int fd;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    /* One byte flipped, same size: found while streaming. */
    fd = open(path, O_WRONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "J", 1, 0), 1);
    close(fd);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), -EBADMSG);
    ck_assert_ptr_nonnull(strstr(err.message, "corrupt"));
    /* Truncated: found before streaming. */
    ck_assert_int_eq(truncate(path, 3), 0);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), -EBADMSG);
    ck_assert_uint_eq(len, 0);
    /* Missing. */
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), -EBADMSG);
    /* A put of the right bytes by another owner repairs the file. */
    ck_assert_int_eq(put_as(&e, P2, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(get_as(&e, P1, d, 1024, buf, sizeof(buf), &len, &err), 0);
    ck_assert(len == HELLO_LEN && memcmp(buf, hello, len) == 0);
    ev_close(&e);
    free(path);
    free(d);
}
END_TEST

/* upload(): an unnamed file that put() links without a copy. */
START_TEST(upload_links_without_copy)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *m = meta(P1, d, HELLO_LEN, "text/plain", NULL), *out = NULL,
         *path = content_path(d);
    struct stat up, pub;
    size_t len = 0;
    int fd = -1;

    ev_open(&e);
    ck_assert_ptr_nonnull(e.ops->upload);
    /* An upload never put leaves nothing. */
    ck_assert_int_eq(e.ops->upload(e.st, &fd, &err), 0);
    ck_assert_int_eq(write(fd, "junk", 4), 4);
    close(fd);
    ck_assert_int_eq(content_files(), 0);

    ck_assert_int_eq(e.ops->upload(e.st, &fd, &err), 0);
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
    ck_assert_int_eq(write(fd, hello, HELLO_LEN), (ssize_t)HELLO_LEN);
    ck_assert_int_eq(fstat(fd, &up), 0);
    ck_assert_uint_eq(up.st_nlink, 0);
    ck_assert_int_eq(content_files(), 0); /* nothing visible before put */
    ck_assert_msg(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err) == 0, "%s", err.message);
    ck_assert_int_eq(stat(path, &pub), 0);
    ck_assert_uint_eq(pub.st_ino, up.st_ino); /* the very file: no copy */
    ck_assert_uint_eq(pub.st_dev, up.st_dev);
    ck_assert_uint_eq(pub.st_nlink, 1);
    ck_assert_uint_eq(pub.st_mode & 07777, 0600);
    close(fd);
    free(out);

    /* An upload with the wrong bytes: -EBADMSG, nothing visible. */
    {
        char *d2 = digest_of("other", 5), *m2 = meta(P1, d2, 5, "text/plain", NULL);
        ck_assert_int_eq(e.ops->upload(e.st, &fd, &err), 0);
        ck_assert_int_eq(write(fd, "OTHER", 5), 5);
        ck_assert_int_eq(e.ops->put(e.st, m2, strlen(m2), fd, &out, &len, &err), -EBADMSG);
        close(fd);
        ck_assert_int_eq(content_files(), 1);
        ck_assert_int_eq(stat_as(&e, P1, d2, NULL), -ENOENT);
        free(m2);
        free(d2);
    }
    /* An upload of content already there (another owner) is verified and dropped. */
    {
        char *m3 = meta(P2, d, HELLO_LEN, "text/plain", NULL);
        ck_assert_int_eq(e.ops->upload(e.st, &fd, &err), 0);
        ck_assert_int_eq(write(fd, hello, HELLO_LEN), (ssize_t)HELLO_LEN);
        ck_assert_int_eq(e.ops->put(e.st, m3, strlen(m3), fd, &out, &len, &err), 0);
        close(fd);
        free(out);
        ck_assert_int_eq(stat(path, &pub), 0);
        ck_assert_uint_eq(pub.st_ino, up.st_ino);
        ck_assert_uint_eq(pub.st_nlink, 1);
        free(m3);
    }
    ev_close(&e);
    free(path);
    free(m);
    free(d);
}
END_TEST

typedef int (*query_op)(void *state, const char *query, size_t query_len, char **ret_json, size_t *ret_len,
                        struct berth_error *reterr);

/* Call list() or usage() with @query; its result in *@ret, its document returned. */
static char *query(struct ev *e, query_op op, const char *q, int *ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char *out = NULL;
    size_t len = 0;

    *ret = op(e->st, q, strlen(q), &out, &len, &err);
    return out;
}

static char *list(struct ev *e, const char *q, int *ret)
{
    return query(e, e->ops->list, q, ret);
}

START_TEST(list_pages)
{
    struct ev e;
    char data[8], q[512], *page, *next;
    int r, seen = 0, pages = 0;

    ev_open(&e);
    for (int i = 0; i < 5; i++) {
        snprintf(data, sizeof(data), "a%d", i);
        ck_assert_int_eq(put_as(&e, P1, data, 2, "text/plain", NULL, NULL), 0);
    }
    ck_assert_int_eq(put_as(&e, P2, "b0", 2, "text/plain", NULL, NULL), 0);

    /* P1's five, two per page, each once. */
    snprintf(q, sizeof(q), "{\"limit\":2,\"principal\":\"alice\"}");
    for (;;) {
        json_t *doc, *objects;
        const json_t *n;

        page = list(&e, q, &r);
        ck_assert_int_eq(r, 0);
        doc = json_loads(page, 0, NULL);
        ck_assert_ptr_nonnull(doc);
        objects = json_object_get(doc, "objects");
        ck_assert(json_array_size(objects) <= 2);
        seen += (int)json_array_size(objects);
        for (size_t i = 0; i < json_array_size(objects); i++)
            ck_assert_str_eq(json_string_value(json_object_get(json_array_get(objects, i), "principal")), P1);
        pages++;
        n = json_object_get(doc, "next");
        if (json_is_null(n)) {
            json_decref(doc);
            free(page);
            break;
        }
        next = strdup(json_string_value(n));
        snprintf(q, sizeof(q), "{\"after\":\"%s\",\"limit\":2,\"principal\":\"alice\"}", next);
        json_decref(doc);
        free(page);
        free(next);
        ck_assert_int_lt(pages, 10);
    }
    ck_assert_int_eq(seen, 5);
    ck_assert_int_eq(pages, 3);

    /* Every owner, in one page. */
    page = list(&e, "{\"limit\":1000}", &r);
    ck_assert_int_eq(r, 0);
    ck_assert_ptr_nonnull(strstr(page, "\"principal\":\"bob\""));
    ck_assert_ptr_nonnull(strstr(page, "\"next\":null"));
    free(page);

    /* A cursor of P1 with another principal, a forged cursor, bad limits. */
    page = list(&e, "{\"limit\":1,\"principal\":\"alice\"}", &r);
    {
        json_t *doc = json_loads(page, 0, NULL);
        snprintf(q, sizeof(q), "{\"after\":\"%s\",\"limit\":1,\"principal\":\"bob\"}",
                 json_string_value(json_object_get(doc, "next")));
        json_decref(doc);
    }
    free(page);
    free(list(&e, q, &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{\"after\":\"bm90IGEgY3Vyc29y\",\"limit\":1}", &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{\"after\":\"\",\"limit\":1}", &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{\"limit\":0}", &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{\"limit\":1001}", &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{}", &r));
    ck_assert_int_eq(r, -EINVAL);
    free(list(&e, "{\"limit\":1,\"owner\":\"x\"}", &r));
    ck_assert_int_eq(r, -EINVAL);
    ev_close(&e);
}
END_TEST

static char *usage(struct ev *e, const char *q, int *ret)
{
    return query(e, e->ops->usage, q, ret);
}

START_TEST(usage_counts)
{
    struct ev e;
    char *u, *d;
    int r;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, "1234", 4, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, "123456", 6, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(put_as(&e, P2, "1234", 4, "text/plain", NULL, NULL), 0);
    d = digest_of("123456", 6);
    ck_assert_int_eq(remove_as(&e, P1, d, P1, "x"), 0);
    free(d);
    d = digest_of("never", 5);
    ck_assert_int_eq(remove_as(&e, P2, d, P2, "x"), 0);
    free(d);
    u = usage(&e, "{\"principal\":\"alice\"}", &r);
    ck_assert_int_eq(r, 0);
    ck_assert_str_eq(u, "{\"bytes\":4,\"objects\":1,\"tombstones\":1}");
    free(u);
    u = usage(&e, "{}", &r);
    ck_assert_str_eq(u, "{\"bytes\":8,\"objects\":2,\"tombstones\":2}");
    free(u);
    u = usage(&e, "{\"principal\":\"nobody\"}", &r);
    ck_assert_str_eq(u, "{\"bytes\":0,\"objects\":0,\"tombstones\":0}");
    free(u);
    free(usage(&e, "{\"principal\":\"alice\",\"limit\":1}", &r));
    ck_assert_int_eq(r, -EINVAL);
    ev_close(&e);
}
END_TEST

START_TEST(prune_expires)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *out = NULL, *t, *d1 = digest_of("one", 3), *d2 = digest_of("two", 3);
    size_t len = 0;
    int r;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, "one", 3, "text/plain", "100", NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, "two", 3, "text/plain", "200", NULL), 0);
    ck_assert_int_eq(put_as(&e, P1, "kept", 4, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(e.ops->prune(e.st, 99, 10, &out, &len, &err), 0);
    ck_assert_str_eq(out, "{\"more\":false,\"pruned\":[]}");
    free(out);
    ck_assert_int_eq(e.ops->prune(e.st, 1000, 1, &out, &len, &err), 0);
    ck_assert_str_eq(strstr(out, "\"more\":true"), out + 1);
    ck_assert_ptr_nonnull(strstr(out, d1));
    ck_assert_ptr_null(strstr(out, d2));
    ck_assert_ptr_nonnull(strstr(out, "\"scope\":[\"team\",\"dev\"],\"size\":3}"));
    free(out);
    ck_assert_int_eq(stat_as(&e, P1, d1, NULL), -EIDRM);
    t = tombstone_of(&e, P1, d1, &r);
    ck_assert_int_eq(r, 0);
    ck_assert_ptr_nonnull(strstr(t, "\"actor\":\"retention\""));
    ck_assert_ptr_nonnull(strstr(t, "\"kind\":\"expired\""));
    free(t);
    ck_assert_int_eq(e.ops->prune(e.st, 1000, 5, &out, &len, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "\"more\":false"));
    ck_assert_ptr_nonnull(strstr(out, d2));
    free(out);
    ck_assert_int_eq(content_files(), 1); /* only "kept" */

    /* An expired tombstone does not block a put: the key comes back, clean. */
    ck_assert_int_eq(put_as(&e, P1, "one", 3, "text/plain", NULL, NULL), 0);
    ck_assert_int_eq(stat_as(&e, P1, d1, NULL), 0);
    t = tombstone_of(&e, P1, d1, &r);
    ck_assert_int_eq(r, -ENOENT);
    /* remove turns an expired tombstone into a deleted one, which does. */
    ck_assert_int_eq(remove_as(&e, P1, d2, "admin", "really"), 0);
    t = tombstone_of(&e, P1, d2, &r);
    ck_assert_ptr_nonnull(strstr(t, "\"kind\":\"deleted\""));
    free(t);
    ck_assert_int_eq(put_as(&e, P1, "two", 3, "text/plain", NULL, NULL), -EIDRM);

    ck_assert_int_eq(e.ops->prune(e.st, 1000, 0, &out, &len, &err), -EINVAL);
    ck_assert_int_eq(e.ops->prune(e.st, 1000, 1001, &out, &len, &err), -EINVAL);
    ck_assert_int_eq(e.ops->prune(e.st, -1, 1, &out, &len, &err), -EINVAL);
    ev_close(&e);
    free(d1);
    free(d2);
}
END_TEST

/* @tmpl with every "@" replaced by @v, into @out (@outsz bytes). */
static void fill(char *out, size_t outsz, const char *tmpl, const char *v)
{
    size_t n = 0;

    for (; *tmpl; tmpl++) {
        const char *add = *tmpl == '@' ? v : (char[]){*tmpl, '\0'};
        size_t l = strlen(add);
        ck_assert_uint_lt(n + l, outsz);
        memcpy(out + n, add, l);
        n += l;
    }
    out[n] = '\0';
}

/* Every document is parsed strictly: -EINVAL, naming what is wrong. */
START_TEST(strict_documents)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), doc[1024], *out = NULL;
    size_t len = 0;
    int fd;
    static const char *const bad_keys[] = {
        "{\"digest\":\"@\",\"principal\":\"alice\",\"scope\":[\"a\"],\"extra\":1}",
        "{\"digest\":\"@\",\"principal\":\"alice\",\"principal\":\"bob\",\"scope\":[\"a\"]}",
        "{\"digest\":\"@\",\"principal\":\"alice\",\"scope\":[]}",
        "{\"digest\":\"@\",\"principal\":\"alice\",\"scope\":\"a\"}",
        "{\"digest\":\"@\",\"principal\":\"alice\",\"scope\":[\"\"]}",
        "{\"digest\":\"@\",\"principal\":\"al ice\",\"scope\":[\"a\"]}",
        "{\"digest\":\"sha256:0123456789abcdef0123\",\"principal\":\"alice\",\"scope\":[\"a\"]}",
        "{\"digest\":\"@\",\"scope\":[\"a\"]}",
        "[\"@\"]",
        "{\"digest\":\"@\",\"principal\":\"alice\",\"scope\":[\"a\"]",
    };

    ev_open(&e);
    for (size_t i = 0; i < ELEMENTSOF(bad_keys); i++) {
        fill(doc, sizeof(doc), bad_keys[i], d);
        ck_assert_msg(e.ops->stat(e.st, doc, strlen(doc), &out, &len, &err) == -EINVAL, "accepted %s", doc);
    }
    /* The same key with uppercase hex is not a key. */
    fill(doc, sizeof(doc), "{\"digest\":\"sha256:@\",\"principal\":\"alice\",\"scope\":[\"a\"]}",
         "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789");
    ck_assert_int_eq(e.ops->stat(e.st, doc, strlen(doc), &out, &len, &err), -EINVAL);
    /* Documents over 64 KiB, or nested deeper than 32. */
    {
        size_t n = BERTH_EVIDENCE_DOC_MAX + 10;
        char *huge = malloc(n + 1);
        memset(huge, ' ', n);
        huge[0] = '{';
        huge[n - 1] = '}';
        huge[n] = '\0';
        ck_assert_int_eq(e.ops->stat(e.st, huge, n, &out, &len, &err), -EINVAL);
        memset(huge, '[', 40);
        memset(huge + 40, ']', 40);
        ck_assert_int_eq(e.ops->stat(e.st, huge, 80, &out, &len, &err), -EINVAL);
        free(huge);
    }
    /* meta: unknown members, bad media types, sizes and times. */
    fd = data_file(hello, HELLO_LEN);
    {
        const char *const bad_meta[] = {
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"scope\":[\"a\"],\"size\":15,"
            "\"x\":0}",
            "{\"digest\":\"@\",\"media_type\":\"plain\",\"principal\":\"alice\",\"scope\":[\"a\"],\"size\":15}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\\n\",\"principal\":\"alice\",\"scope\":[\"a\"],"
            "\"size\":15}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"scope\":[\"a\"],\"size\":-1}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"scope\":[\"a\"],\"size\":\"15\"}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"retain_until\":100,"
            "\"scope\":[\"a\"],\"size\":15}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"retain_until\":\"-1\","
            "\"scope\":[\"a\"],\"size\":15}",
            "{\"digest\":\"@\",\"media_type\":\"text/plain\",\"principal\":\"alice\",\"scope\":[\"a\"]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_meta); i++) {
            fill(doc, sizeof(doc), bad_meta[i], d);
            ck_assert_msg(e.ops->put(e.st, doc, strlen(doc), fd, &out, &len, &err) == -EINVAL, "accepted %s", doc);
        }
    }
    close(fd);
    ck_assert_int_eq(content_files(), 0);
    ev_close(&e);

    /* config: unknown members, relative or missing directory, bounds. */
    {
        char config[512];
        const char *const bad_config[] = {
            "{}",
            "{\"directory\":\"relative/dir\"}",
            "{\"directory\":\"@\",\"max_object_bytes\":1073741825}",
            "{\"directory\":\"@\",\"max_object_bytes\":0}",
            "{\"directory\":\"@\",\"other\":true}",
            "{\"directory\":\"@\",\"directory\":\"@\"}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_config); i++) {
            fill(config, sizeof(config), bad_config[i], store);
            ck_assert_msg(ev_open_config(&e, config, &err) == -EINVAL, "accepted %s: %s", config, err.message);
        }
        fill(config, sizeof(config), "{\"directory\":\"@\",\"max_object_bytes\":1073741824}", store);
        ck_assert_msg(ev_open_config(&e, config, &err) == 0, "%s", err.message);
        ev_close(&e);
    }
    free(d);
}
END_TEST

/* A crash after a content file was published but before its row was
 * committed, or in the middle of writing a named temporary, leaves files no
 * object names: the next init removes them and keeps the rest. */
START_TEST(init_sweeps_orphans)
{
    struct ev e;
    char *d = digest_of(hello, HELLO_LEN), *orphan = content_path(d), *tmp = test_path(store, "objects/sha256/.#tmp.0123456789abcdef"),
         *stranger = test_path(store, "objects/sha256/README");
    char *kd = digest_of("kept", 4), *kept = content_path(kd);
    struct stat st;

    ev_open(&e);
    ck_assert_int_eq(put_as(&e, P1, "kept", 4, "text/plain", NULL, NULL), 0);
    ev_close(&e);
    test_write_file(orphan, hello, HELLO_LEN, 0600);
    test_write_file(tmp, "partial", 7, 0600);
    test_write_file(stranger, "x", 1, 0600);
    ev_open(&e);
    ck_assert_int_eq(stat(orphan, &st), -1);
    ck_assert_int_eq(stat(tmp, &st), -1);
    ck_assert_int_eq(stat(kept, &st), 0);
    ck_assert_int_eq(stat(stranger, &st), 0); /* not the store's: left alone */
    ck_assert_int_eq(stat_as(&e, P1, d, NULL), -ENOENT);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ev_close(&e);
    free(orphan);
    free(tmp);
    free(stranger);
    free(kept);
    free(kd);
    free(d);
}
END_TEST

/* The bytes @pid has read so far (rchar of /proc/PID/io); 0 when unknown. */
static uint64_t proc_rchar(pid_t pid)
{
    char path[64], line[128];
    unsigned long long v = 0;
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    f = fopen(path, "re");
    if (!f)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "rchar: %llu", &v) == 1)
            break;
    fclose(f);
    return v;
}

/* kill -9 of a process in the middle of a large put: nothing visible, and
 * the next init succeeds and leaves the store clean. */
START_TEST(kill_mid_put)
{
    const size_t size = 256u << 20;
    char *path = test_path(dir, "big"), *d = NULL, *m = NULL;
    int fd, pipefd[2], status = 0;
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    char *chunk = malloc(1 << 20);
    struct ev e;
    pid_t pid;
    char c;

    /* 256 MiB of non-zero bytes, and their digest. */
    ck_assert_ptr_nonnull(chunk);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(berth_sha256_new(&h), 0);
    for (size_t off = 0; off < size; off += 1 << 20) {
        memset(chunk, (int)(off >> 20) | 1, 1 << 20);
        ck_assert_int_eq(write(fd, chunk, 1 << 20), 1 << 20);
        ck_assert_int_eq(berth_sha256_update(h, chunk, 1 << 20), 0);
    }
    ck_assert_int_eq(berth_sha256_final(h, raw), 0);
    berth_sha256_free(h);
    free(chunk);
    d = malloc(BERTH_DIGEST_BUFSZ);
    berth_digest_format(raw, d);
    m = meta(P1, d, size, "application/octet-stream", NULL);

    ck_assert_int_eq(pipe2(pipefd, O_CLOEXEC), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        struct berth_error err = BERTH_ERROR_INIT;
        char *out = NULL;
        size_t len = 0;

        ev_open_max(&e, 1u << 30);
        if (write(pipefd[1], "s", 1) != 1)
            _exit(2);
        (void)e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err);
        _exit(3); /* the put finished before the kill: the test cannot say anything */
    }
    close(pipefd[1]);
    ck_assert_int_eq(read(pipefd[0], &c, 1), 1);
    close(pipefd[0]);
    /* Kill it once put() has read 32 MiB of the 256: in the middle. */
    {
        uint64_t base = proc_rchar(pid), now = base;
        for (int i = 0; i < 20000 && now < base + (32u << 20); i++) {
            usleep(500);
            now = proc_rchar(pid);
        }
        ck_assert_uint_ge(now, base + (32u << 20));
    }
    ck_assert_int_eq(kill(pid, SIGKILL), 0);
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the put finished before it was killed");

    ck_assert_int_eq(content_files(), 0); /* nothing half-written is visible */
    ev_open_max(&e, 1u << 30);
    ck_assert_int_eq(stat_as(&e, P1, d, NULL), -ENOENT);
    ck_assert_int_eq(content_files(), 0);
    /* And the same put, uninterrupted, works. */
    {
        struct berth_error err = BERTH_ERROR_INIT;
        char *out = NULL;
        size_t len = 0;
        ck_assert_msg(e.ops->put(e.st, m, strlen(m), fd, &out, &len, &err) == 0, "%s", err.message);
        free(out);
    }
    ck_assert_int_eq(content_files(), 1);
    ev_close(&e);
    close(fd);
    unlink(path);
    free(path);
    free(m);
    free(d);
}
END_TEST

/* A full filesystem: -ENOSPC, nothing visible, and the space comes back. */
START_TEST(full_filesystem)
{
    struct berth_error err = BERTH_ERROR_INIT;
    const size_t big = 8u << 20;
    char *data = malloc(big), *d;
    ssize_t n;
    struct ev e;
    int fd, r;

    ck_assert_ptr_nonnull(data);
    free(store);
    store = test_path(test_fs(), "store"); /* on the 4 MiB tmpfs */
    memset(data, 'x', big);
    ev_open_max(&e, 1u << 30);
    r = put_as(&e, P1, data, big, "application/octet-stream", NULL, NULL);
    ck_assert_msg(r == -ENOSPC || r == -EDQUOT, "put on a full filesystem: %d", r);
    ck_assert_int_eq(content_files(), 0);
    d = digest_of(data, big);
    ck_assert_int_eq(stat_as(&e, P1, d, NULL), -ENOENT);
    /* An upload fills it too; closing it gives the space back. */
    ck_assert_int_eq(e.ops->upload(e.st, &fd, &err), 0);
    n = write(fd, data, big);
    ck_assert(n < (ssize_t)big);
    close(fd);
    ck_assert_int_eq(content_files(), 0);
    ck_assert_int_eq(put_as(&e, P1, hello, HELLO_LEN, "text/plain", NULL, NULL), 0);
    ev_close(&e);
    free(d);
    free(data);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("evidence-sqlite");
    TCase *tc = test_case(s, "store");

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, put_get_stat);
    tcase_add_test(tc, put_is_immutable);
    tcase_add_test(tc, retention_extends);
    tcase_add_test(tc, remove_leaves_tombstone);
    tcase_add_test(tc, reopen_persists);
    tcase_add_test(tc, files_on_disk);
    tcase_add_test(tc, corruption_detected);
    tcase_add_test(tc, upload_links_without_copy);
    tcase_add_test(tc, list_pages);
    tcase_add_test(tc, usage_counts);
    tcase_add_test(tc, prune_expires);
    tcase_add_test(tc, strict_documents);
    tcase_add_test(tc, init_sweeps_orphans);
    tcase_add_test(tc, kill_mid_put);
    tc = test_tmpfs_case(s, "full filesystem", "4m");
    if (tc) {
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, full_filesystem);
    }
    return s;
}

TEST_MAIN()
