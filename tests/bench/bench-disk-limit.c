/* SPDX-License-Identifier: MIT */
/*
 * bench-disk-limit.c -- how fast this disk can take an evidence object, and
 * how close evidence-sqlite's put() comes to that.
 *
 *   bench-disk-limit [--dir DIR] [--mib N] [--plugin-dir DIR] [--blob]
 *
 * Always prints the raw limit for N MiB (default 256) in DIR (default
 * $TMPDIR or /tmp): SHA-256 of the bytes, write(2) to a new file in 1 MiB
 * chunks, one fdatasync(2) -- what any store that verifies and makes an
 * object durable must do at least --
 *
 *     limit_mb_s=<x>
 *
 * (the line tests/bench scripts parse).  With --plugin-dir (the directory
 * of a built evidence-sqlite.so) it also times put() of an N MiB object
 * into a fresh store in DIR: from an upload() descriptor (linked, no copy)
 * and from a plain file (copied), and the write into the upload descriptor
 * followed by put() (what berthd's upload API does):
 *
 *     put_upload_mb_s=<x> put_plain_fd_mb_s=<y> upload_write_put_mb_s=<z>
 *
 * With --blob it times the alternative the plugin did not take: the same
 * bytes hashed and written as one SQLite BLOB (incremental blob I/O, WAL,
 * synchronous=FULL, as the metadata database is opened), committed and
 * checkpointed into the database file:
 *
 *     sqlite_blob_mb_s=<x>
 *
 * MB are 10^6 bytes.  It prints figures and asserts nothing about time.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "clock.h"
#include "digest.h"
#include "fsutil.h"
#include "host-table.h"
#include "journal.h"
#include "loader.h"
#include "macro.h"

#define CHUNK (1u << 20)

static double now_s(void)
{
    int64_t ns;

    if (berth_now_ns(CLOCK_MONOTONIC, &ns, NULL) < 0)
        abort();
    return (double)ns / 1e9;
}

static void die(const char *what, int r, const struct berth_error *err)
{
    fprintf(stderr, "bench-disk-limit: %s: %s%s%s\n", what, strerror(r < 0 ? -r : r), err && err->message[0] ? ": " : "",
            err && err->message[0] ? err->message : "");
    exit(1);
}

/* A chunk of bytes that no filesystem can compress away. */
static uint8_t *pattern(void)
{
    uint8_t *buf = malloc(CHUNK);
    uint64_t x = 0x9e3779b97f4a7c15ULL;

    if (!buf)
        die("malloc", -ENOMEM, NULL);
    for (size_t i = 0; i < CHUNK; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)x;
    }
    return buf;
}

/* Write @mib chunks of @buf to @fd, hashing them; the digest into @out. */
static void write_hashing(int fd, const uint8_t *buf, unsigned mib, char out[BERTH_DIGEST_BUFSZ])
{
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    int r;

    if ((r = berth_sha256_new(&h)) < 0)
        die("sha256", r, NULL);
    for (unsigned i = 0; i < mib; i++) {
        if ((r = berth_sha256_update(h, buf, CHUNK)) < 0 || (r = berth_write_all(fd, buf, CHUNK)) < 0)
            die("write", r, NULL);
    }
    if ((r = berth_sha256_final(h, raw)) < 0)
        die("sha256", r, NULL);
    berth_sha256_free(h);
    berth_digest_format(raw, out);
}

static double mb_s(unsigned mib, double secs)
{
    return (double)mib * CHUNK / secs / 1e6;
}

static double limit(const char *dir, const uint8_t *buf, unsigned mib)
{
    char path[4096], digest[BERTH_DIGEST_BUFSZ];
    double t0, t1;
    int fd;

    snprintf(path, sizeof(path), "%s/bench-disk-limit.%d", dir, (int)getpid());
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        die(path, -errno, NULL);
    t0 = now_s();
    write_hashing(fd, buf, mib, digest);
    if (fdatasync(fd) < 0)
        die("fdatasync", -errno, NULL);
    t1 = now_s();
    close(fd);
    unlink(path);
    return mb_s(mib, t1 - t0);
}

struct store {
    struct berth_host_instance inst;
    struct berth_plugin_handle *h;
    const struct berth_evidence_store_ops_v1 *ops;
    void *st;
};

static void store_open(struct store *s, const char *plugin_dir, const char *store_dir)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char config[4200];
    struct berth_plugin_load_options o = {
        .dir = plugin_dir,
        .file = "evidence-sqlite.so",
        .host = berth_host_instance_init(&s->inst, "bench", NULL),
        .kind = BERTH_PLUGIN_EVIDENCE_STORE,
        .config = config,
    };
    int r;

    snprintf(config, sizeof(config), "{\"directory\":\"%s\",\"max_object_bytes\":1073741824}", store_dir);
    o.config_len = strlen(config);
    if ((r = berth_plugin_load(&o, &s->h, NULL, &err)) < 0)
        die("loading evidence-sqlite", r, &err);
    s->ops = berth_plugin_evidence_store_ops(s->h);
    s->st = berth_plugin_state(s->h);
}

/* put() @fd holding @mib MiB with @digest as @principal; seconds it took. */
static double timed_put(struct store *s, int fd, const char *principal, const char *digest, unsigned mib)
{
    struct berth_error err = BERTH_ERROR_INIT;
    char meta[512], *ref = NULL;
    size_t len = 0;
    double t0;
    int r;

    snprintf(meta, sizeof(meta),
             "{\"digest\":\"%s\",\"media_type\":\"application/octet-stream\",\"principal\":\"%s\","
             "\"scope\":[\"bench\"],\"size\":%llu}",
             digest, principal, (unsigned long long)mib * CHUNK);
    t0 = now_s();
    if ((r = s->ops->put(s->st, meta, strlen(meta), fd, &ref, &len, &err)) < 0)
        die("put", r, &err);
    free(ref);
    return now_s() - t0;
}

static void bench_store(const char *dir, const char *plugin_dir, const uint8_t *buf, unsigned mib)
{
    char store_dir[4096], plain[4200], digest[BERTH_DIGEST_BUFSZ];
    struct berth_error err = BERTH_ERROR_INIT;
    struct store s;
    double t0, up, pl, wp;
    uint8_t *other = malloc(CHUNK);
    int fd, r;

    snprintf(store_dir, sizeof(store_dir), "%s/bench-evidence.%d", dir, (int)getpid());
    store_open(&s, plugin_dir, store_dir);
    if (!other)
        die("malloc", -ENOMEM, NULL);

    /* From an upload() descriptor: written first (not timed), then put. */
    if ((r = s.ops->upload(s.st, &fd, &err)) < 0)
        die("upload", r, &err);
    write_hashing(fd, buf, mib, digest);
    up = timed_put(&s, fd, "upload", digest, mib);
    close(fd);

    /* Write into an upload and put, timed together; other bytes (no dedup). */
    memcpy(other, buf, CHUNK);
    other[0] ^= 0xff;
    if ((r = s.ops->upload(s.st, &fd, &err)) < 0)
        die("upload", r, &err);
    t0 = now_s();
    write_hashing(fd, other, mib, digest);
    wp = now_s() - t0;
    wp += timed_put(&s, fd, "write", digest, mib);
    close(fd);

    /* From a plain file on the same disk (in the page cache): copied. */
    other[1] ^= 0xff;
    snprintf(plain, sizeof(plain), "%s/plain", store_dir);
    fd = open(plain, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        die(plain, -errno, NULL);
    write_hashing(fd, other, mib, digest);
    pl = timed_put(&s, fd, "plain", digest, mib);
    close(fd);
    unlink(plain);

    printf("put_upload_mb_s=%.1f put_plain_fd_mb_s=%.1f upload_write_put_mb_s=%.1f\n", mb_s(mib, up), mb_s(mib, pl),
           mb_s(mib, wp));
    berth_plugin_unload(s.h);
    free(other);
    {
        char cmd[4200];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "bench-disk-limit: could not remove %s\n", store_dir);
    }
}

/* The road not taken: the object as one SQLite BLOB in a WAL database. */
static void bench_blob(const char *dir, const uint8_t *buf, unsigned mib)
{
    static const char *const migrations[] = {"CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL);"};
    static const struct berth_journal_schema schema = {
        .what = "blob benchmark", .application_id = 0x62726562, .format = 1, .migrations = migrations};
    struct berth_error err = BERTH_ERROR_INIT;
    char d[4096], path[4200], digest[BERTH_DIGEST_BUFSZ];
    struct berth_journal *j = NULL;
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    sqlite3_blob *blob = NULL;
    sqlite3_stmt *st = NULL;
    sqlite3 *db;
    double t0, t1;
    int r;

    snprintf(d, sizeof(d), "%s/bench-blob.%d", dir, (int)getpid());
    if (mkdir(d, 0700) < 0)
        die(d, -errno, NULL);
    snprintf(path, sizeof(path), "%s/blobs.db", d);
    if ((r = berth_journal_open_schema(path, BERTH_JOURNAL_CREATE, &schema, &j, &err)) < 0)
        die("opening the blob database", r, &err);
    db = berth_journal_db(j);
    if ((long long)mib * CHUNK > sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1))
        printf("sqlite_blob_note=\"%u MiB is over SQLite's %d-byte value limit\"\n", mib,
               sqlite3_limit(db, SQLITE_LIMIT_LENGTH, -1));
    t0 = now_s();
    if ((r = berth_journal_begin(j, &err)) < 0)
        die("begin", r, &err);
    if (sqlite3_prepare_v2(db, "INSERT INTO blobs (id, data) VALUES (1, zeroblob(?1))", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_int64(st, 1, (sqlite3_int64)mib * CHUNK) != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
        die("insert", berth_journal_error(j, "insert", &err), &err);
    sqlite3_finalize(st);
    if (sqlite3_blob_open(db, "main", "blobs", "data", 1, 1, &blob) != SQLITE_OK)
        die("blob_open", berth_journal_error(j, "blob_open", &err), &err);
    if ((r = berth_sha256_new(&h)) < 0)
        die("sha256", r, NULL);
    for (unsigned i = 0; i < mib; i++) {
        if (berth_sha256_update(h, buf, CHUNK) < 0 ||
            sqlite3_blob_write(blob, buf, (int)CHUNK, (int)(i * CHUNK)) != SQLITE_OK)
            die("blob_write", berth_journal_error(j, "blob_write", &err), &err);
    }
    sqlite3_blob_close(blob);
    if (berth_sha256_final(h, raw) < 0)
        die("sha256", -EIO, NULL);
    berth_sha256_free(h);
    berth_digest_format(raw, digest);
    if ((r = berth_journal_commit(j, &err)) < 0)
        die("commit", r, &err);
    if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL) != SQLITE_OK)
        die("checkpoint", berth_journal_error(j, "checkpoint", &err), &err);
    t1 = now_s();
    printf("sqlite_blob_mb_s=%.1f\n", mb_s(mib, t1 - t0));
    berth_journal_close(j);
    {
        char cmd[4300];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
        if (system(cmd) != 0)
            fprintf(stderr, "bench-disk-limit: could not remove %s\n", d);
    }
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {{"dir", required_argument, NULL, 'd'},
                                         {"mib", required_argument, NULL, 'm'},
                                         {"plugin-dir", required_argument, NULL, 'p'},
                                         {"blob", no_argument, NULL, 'b'},
                                         {NULL, 0, NULL, 0}};
    const char *dir = getenv("TMPDIR"), *plugin_dir = NULL;
    unsigned long mib = 256;
    bool blob = false;
    uint8_t *buf;
    char *end;
    int c;

    if (!dir || !*dir)
        dir = "/tmp";
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': dir = optarg; break;
        case 'm':
            errno = 0;
            mib = strtoul(optarg, &end, 10);
            if (errno || *end || mib < 1 || mib > 4096) {
                fprintf(stderr, "bench-disk-limit: --mib takes 1 to 4096\n");
                return 2;
            }
            break;
        case 'p': plugin_dir = optarg; break;
        case 'b': blob = true; break;
        default:
            fprintf(stderr, "usage: bench-disk-limit [--dir DIR] [--mib N] [--plugin-dir DIR] [--blob]\n");
            return 2;
        }
    }
    if (optind != argc || dir[0] != '/') {
        fprintf(stderr, "usage: bench-disk-limit [--dir ABSOLUTE-DIR] [--mib N] [--plugin-dir DIR] [--blob]\n");
        return 2;
    }
    buf = pattern();
    printf("limit_mb_s=%.1f\n", limit(dir, buf, (unsigned)mib));
    fflush(stdout);
    if (plugin_dir)
        bench_store(dir, plugin_dir, buf, (unsigned)mib);
    fflush(stdout);
    if (blob)
        bench_blob(dir, buf, (unsigned)mib);
    free(buf);
    return 0;
}
