/* SPDX-License-Identifier: MIT */
/*
 * cmd-evidence.c -- berthctl evidence put, get, rm and ls: evidence on
 * berthd (docs/evidence.md).
 *
 * put uploads in the shape of the OCI distribution spec's chunked blob
 * upload: a session (POST), chunks of at most the broker's
 * http.max_body_bytes (PATCH, each with its Content-Range) hashed as they
 * are sent, then the commit naming the digest (PUT), all over one kept-alive
 * connection; a small file goes in one monolithic POST.  get writes into an
 * unnamed file beside the target, checks length and digest, and only then
 * gives it its name.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "berthctl.h"
#include "canon.h"
#include "client.h"
#include "digest.h"
#include "encoding.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"

#define VERB "evidence"
#define MONOLITHIC_MAX 1024                       /* a file this small goes in one request (any broker's bound) */
#define CHUNK_DEFAULT (1024 * 1024)               /* a chunk when the broker names no bound */
#define OBJECT_MAX ((uint64_t)1024 * 1024 * 1024) /* the largest object any broker takes, bytes */
#define LIST_PAGE 1000
#define LIST_MAX 10000000 /* objects ls --json keeps in memory */

static void help(void)
{
    printf("Usage: berthctl [--config=CLIENT.json] evidence put FILE [--media-type=TYPE] [--json]\n"
           "       berthctl [--config=CLIENT.json] evidence get DIGEST --out=FILE [--force]\n"
           "       berthctl [--config=CLIENT.json] evidence rm DIGEST --reason=TEXT\n"
           "                [--owner=PRINCIPAL --scope=JSON] [--json]\n"
           "       berthctl [--config=CLIENT.json] evidence ls [--all] [--json]\n"
           "\n"
           "Evidence is immutable content on berthd named by its SHA-256 digest and owned\n"
           "by the client's principal and scope (the host policy subject of its\n"
           "certificate): a job's inputs are evidence, and so are its captured outputs.\n"
           "Every owner's evidence is bounded by its evidence_quota in the host policy,\n"
           "and every object by the broker's max_object_bytes.  See docs/evidence.md.\n"
           "\n"
           "  put FILE      upload the regular file FILE and print its reference,\n"
           "                {\"digest\":\"sha256:...\",\"size\":N}, on one line, ready to paste\n"
           "                into a job's inputs[].ref; standard error says what was stored.\n"
           "                A file over 1 KiB goes in chunks of the broker's\n"
           "                http.max_body_bytes over one connection, hashed as it is sent;\n"
           "                the broker checks the digest and the size before it stores\n"
           "                anything, and a file that changes while it is sent is refused.\n"
           "                Uploading what is stored already is safe: the same reference.\n"
           "                --media-type names its media type (type/subtype, default\n"
           "                application/octet-stream); --json prints {\"media_type\",\n"
           "                \"ref\", \"stored\": \"new\"|\"existing\"} instead\n"
           "  get DIGEST    download the object DIGEST into --out=FILE: written to an\n"
           "                unnamed file beside FILE, checked against DIGEST and its size,\n"
           "                synced, and only then named FILE (mode 0600), so FILE is\n"
           "                either absent or whole.  An existing FILE is an error unless\n"
           "                --force replaces it\n"
           "  rm DIGEST     delete the object: its content is dropped and a tombstone\n"
           "                (who, when, --reason) kept, so DIGEST can never be uploaded\n"
           "                again by its owner (410 gone).  Repeating it is safe.  An admin\n"
           "                deletes another owner's object with --owner=PRINCIPAL and\n"
           "                --scope='[\"...\"]' (the scope as a JSON array).  Prints the\n"
           "                tombstone\n"
           "  ls            list this client's objects (digest, size, media type, when\n"
           "                stored) and its usage against its quota; --all (admin) lists\n"
           "                every owner's, with the owner; --json prints {\"objects\": [...],\n"
           "                \"usage\", \"quota\"} as one JSON document\n"
           "\n"
           "Exit status: 0 success; 1 refused or failed (the broker's error code and\n"
           "message are printed: quota_exceeded, too_large, digest_mismatch, gone, ...);\n"
           "2 usage error; 3 a downloaded object does not match its digest (nothing is\n"
           "written).\n"
           "\n"
           "Examples:\n"
           "  berthctl evidence put submission.tar --media-type application/x-tar\n"
           "  berthctl evidence get sha256:5891b5b5... --out report.json\n"
           "  berthctl evidence rm sha256:5891b5b5... --reason 'uploaded by mistake'\n");
}

/* ------------------------------------------------------------------------ */
/* put                                                                       */

/* @s escaped for a query string (malloc'd), or NULL. */
static char *escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0), *copy;

    if (!e)
        return NULL;
    copy = strdup(e);
    curl_free(e);
    return copy;
}

/* Send one request and require @want (or @want2); *@ret the JSON reply. */
static int call(struct berth_https *c, const char *method, const char *path, const char *const *headers,
                const char *type, const char *body, size_t len, long want, long want2, long *ret_status, json_t **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    json_t *reply = NULL;
    long status = 0;
    int r;

    if (berth_https_send(c, method, path, headers, type, body, len, &status, &reply, NULL, NULL, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    if (status != want && status != want2) {
        r = bctl_client_fail(VERB, status, reply);
        json_decref(reply);
        return r;
    }
    if (!reply)
        return bctl_error(VERB, "the broker's reply to %s %s is not JSON", method, path);
    if (ret_status)
        *ret_status = status;
    *ret = reply;
    return BCTL_EXIT_OK;
}

/* The session path the broker named: "/v1/evidence/uploads/" and a UUID. */
static bool location_ok(const char *loc)
{
    static const char prefix[] = "/v1/evidence/uploads/";
    size_t i, n;

    if (!loc || strncmp(loc, prefix, sizeof(prefix) - 1) != 0)
        return false;
    loc += sizeof(prefix) - 1;
    n = strlen(loc);
    for (i = 0; i < n; i++)
        if (!strchr("0123456789abcdef-", loc[i]))
            return false;
    return n == 36;
}

/* The file still is what it was when the upload started. */
static bool unchanged(int fd, const struct stat *before)
{
    struct stat st;

    return fstat(fd, &st) == 0 && st.st_size == before->st_size && st.st_mtim.tv_sec == before->st_mtim.tv_sec &&
           st.st_mtim.tv_nsec == before->st_mtim.tv_nsec && st.st_ino == before->st_ino;
}

/* A small file: hash it, then one POST ?digest=. */
static int put_monolithic(struct berth_https *c, int fd, const struct stat *st, const char *media,
                          char digest[BERTH_DIGEST_BUFSZ], long *ret_status, json_t **ret_ref)
{
    _cleanup_free_ char *buf = malloc(st->st_size ? (size_t)st->st_size : 1), *path = NULL, *emedia = NULL;
    int r;

    if (!buf || !(emedia = escape(media)))
        return bctl_error(VERB, "out of memory");
    if ((r = berth_pread_all(fd, buf, (size_t)st->st_size, 0)) < 0)
        return bctl_error(VERB, "reading the file: %s", strerror(-r));
    if (!unchanged(fd, st))
        return bctl_error(VERB, "the file changed while it was read; nothing was uploaded");
    if (berth_digest_bytes(buf, (size_t)st->st_size, digest) < 0)
        return bctl_error(VERB, "hashing the file failed");
    if (asprintf(&path, "/v1/evidence/uploads?digest=%s&media_type=%s&size=%lld", digest, emedia,
                 (long long)st->st_size) < 0)
        return bctl_error(VERB, "out of memory");
    return call(c, "POST", path, NULL, "application/octet-stream", buf, (size_t)st->st_size, 201, 200, ret_status,
                ret_ref);
}

/* Cancel the session @loc, best effort (the broker also drops it when idle). */
static void cancel(struct berth_https *c, const char *loc)
{
    struct berth_error err = BERTH_ERROR_INIT;
    long status = 0;

    (void)berth_https_send(c, "DELETE", loc, NULL, NULL, NULL, 0, &status, NULL, NULL, NULL, &err);
}

/* A chunk hashed on a thread of its own while it is being sent. */
struct hashing {
    struct berth_sha256 *h;
    const char *buf;
    size_t n;
    int r;
};

static void *hash_chunk(void *arg)
{
    struct hashing *x = arg;

    x->r = berth_sha256_update(x->h, x->buf, x->n);
    return NULL;
}

/* The chunks of a session at @loc, hashed as they go (each while it is
 * sent: the two take about as long), the last one with the commit (so a
 * file of one chunk takes two requests in all). */
static int put_chunks(struct berth_https *c, int fd, const struct stat *st, const char *loc, size_t chunk,
                      const char *media, char digest[BERTH_DIGEST_BUFSZ], long *ret_status, json_t **ret_ref)
{
    _cleanup_free_ char *buf = malloc(chunk), *path = NULL, *emedia = escape(media);
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    uint64_t off = 0, size = (uint64_t)st->st_size;
    char range[96];
    const char *headers[] = {range, NULL};
    size_t n = 0;
    int r = BCTL_EXIT_OK, e;

    if (!buf || !emedia || berth_sha256_new(&h) < 0)
        return bctl_error(VERB, "out of memory");
    for (;;) {
        json_t *reply = NULL;
        struct hashing x;
        pthread_t hasher;
        bool threaded;

        n = size - off < chunk ? (size_t)(size - off) : chunk;
        if ((e = berth_pread_all(fd, buf, n, off)) < 0) {
            r = bctl_error(VERB, "reading the file at %" PRIu64 ": %s", off, strerror(-e));
            break;
        }
        snprintf(range, sizeof(range), "Content-Range: %" PRIu64 "-%" PRIu64, off, off + n - 1);
        x = (struct hashing){.h = h, .buf = buf, .n = n};
        /* The last chunk goes with the commit, which names the digest: hashed first. */
        threaded = off + n < size && pthread_create(&hasher, NULL, hash_chunk, &x) == 0;
        if (!threaded)
            hash_chunk(&x);
        if (off + n < size)
            r = call(c, "PATCH", loc, headers, "application/octet-stream", buf, n, 202, 202, NULL, &reply);
        if (threaded)
            pthread_join(hasher, NULL);
        if (x.r < 0 && r == BCTL_EXIT_OK)
            r = bctl_error(VERB, "hashing the file failed");
        if (off + n == size || r != BCTL_EXIT_OK) {
            json_decref(reply);
            break;
        }
        if (json_integer_value(json_object_get(reply, "offset")) != (json_int_t)(off + n))
            r = bctl_error(VERB, "the broker holds %lld bytes of the upload, not %" PRIu64,
                           (long long)json_integer_value(json_object_get(reply, "offset")), off + n);
        json_decref(reply);
        if (r != BCTL_EXIT_OK)
            break;
        off += n;
    }
    if (r == BCTL_EXIT_OK && !unchanged(fd, st))
        r = bctl_error(VERB, "the file changed while it was uploaded; nothing was stored");
    if (r == BCTL_EXIT_OK && berth_sha256_final(h, raw) < 0)
        r = bctl_error(VERB, "hashing the file failed");
    berth_sha256_free(h);
    if (r == BCTL_EXIT_OK) {
        berth_digest_format(raw, digest);
        if (asprintf(&path, "%s?digest=%s&media_type=%s", loc, digest, emedia) < 0)
            r = bctl_error(VERB, "out of memory");
    }
    if (r != BCTL_EXIT_OK) {
        cancel(c, loc);
        return r;
    }
    return call(c, "PUT", path, headers, "application/octet-stream", buf, n, 201, 200, ret_status, ret_ref);
}

static int do_put(const struct bctl_globals *g, struct berth_https *c, const char *file, const char *media)
{
    _cleanup_close_ int fd = -1;
    _cleanup_free_ char *path = NULL;
    json_t *session = NULL, *ref = NULL, *out = NULL;
    char digest[BERTH_DIGEST_BUFSZ];
    const char *loc;
    struct stat st;
    long status = 0;
    json_int_t max_chunk;
    int r;

    fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return bctl_error(VERB, "%s: %s", file, strerror(errno));
    if (fstat(fd, &st) < 0)
        return bctl_error(VERB, "%s: %s", file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return bctl_error(VERB, "%s is not a regular file", file);
    if ((uint64_t)st.st_size > OBJECT_MAX)
        return bctl_error(VERB, "%s is larger than any evidence object may be (1 GiB)", file);
    if (st.st_size <= MONOLITHIC_MAX) {
        r = put_monolithic(c, fd, &st, media, digest, &status, &ref);
    } else {
        if (asprintf(&path, "/v1/evidence/uploads?size=%lld", (long long)st.st_size) < 0)
            return bctl_error(VERB, "out of memory");
        if ((r = call(c, "POST", path, NULL, NULL, NULL, 0, 202, 202, NULL, &session)) != BCTL_EXIT_OK)
            return r;
        loc = json_string_value(json_object_get(session, "location"));
        max_chunk = json_integer_value(json_object_get(session, "max_chunk_bytes"));
        if (!location_ok(loc)) {
            json_decref(session);
            return bctl_error(VERB, "the broker named no usable upload location");
        }
        r = put_chunks(c, fd, &st, loc, max_chunk >= 1024 && max_chunk <= 64 * 1024 * 1024 ? (size_t)max_chunk
                                                                                               : CHUNK_DEFAULT,
                       media, digest, &status, &ref);
        json_decref(session);
    }
    if (r != BCTL_EXIT_OK)
        return r;
    if (!streq_ptr(json_string_value(json_object_get(ref, "digest")), digest) ||
        json_integer_value(json_object_get(ref, "size")) != (json_int_t)st.st_size) {
        json_decref(ref);
        return bctl_error(VERB, "the broker answered with a reference to other content");
    }
    out = json_pack("{s:s, s:I}", "digest", digest, "size", (json_int_t)st.st_size);
    if (out && g->json)
        out = json_pack("{s:O, s:o, s:s}", "media_type", json_object_get(ref, "media_type"), "ref", out, "stored",
                        status == 201 ? "new" : "existing");
    r = out ? bctl_print_json(VERB, out, true) : bctl_error(VERB, "out of memory");
    if (r == BCTL_EXIT_OK && !g->json) {
        fprintf(stderr, "berthctl %s: %s %s (%lld bytes, ", VERB, digest, status == 201 ? "stored" : "was stored already",
                (long long)st.st_size);
        bctl_fputs_clean(json_string_value(json_object_get(ref, "media_type")) ?: "?", stderr);
        fputs(")\n", stderr);
    }
    json_decref(out);
    json_decref(ref);
    return r;
}

/* ------------------------------------------------------------------------ */
/* get                                                                       */

/* Give the unnamed file @fd the name @name in @dirfd; @force replaces what is there. */
static int name_file(int dirfd, int fd, const char *name, bool force)
{
    char proc[64], tmp[NAME_MAX + 1];
    uint8_t rnd[8];
    char hex[17];

    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    if (!force)
        return linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -EIO;
    berth_hex_encode(rnd, sizeof(rnd), hex);
    snprintf(tmp, sizeof(tmp), ".berthctl-%s", hex);
    if (linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0)
        return -errno;
    if (renameat(dirfd, tmp, dirfd, name) < 0) {
        int e = errno;
        unlinkat(dirfd, tmp, 0);
        return -e;
    }
    return 0;
}

static int do_get(struct berth_https *c, const char *digest, const char *out, bool force)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *dcopy = strdup(out), *bcopy = strdup(out);
    _cleanup_close_ int dirfd = -1, fd = -1;
    struct berth_sha256 *h = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    char got[BERTH_DIGEST_BUFSZ], path[128];
    const char *dir, *name;
    json_t *error = NULL;
    uint64_t bytes = 0;
    long status = 0;
    int r;

    if (!dcopy || !bcopy || berth_sha256_new(&h) < 0)
        return bctl_error(VERB, "out of memory");
    dir = dirname(dcopy);
    name = basename(bcopy);
    if (!berth_name_valid(name))
        return bctl_usage_error(VERB, "--out must name a file, not \"%s\"", out);
    dirfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, &err);
    if (dirfd < 0) {
        berth_sha256_free(h);
        return bctl_error(VERB, "%s: %s", dir, err.message);
    }
    if (!force && faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        berth_sha256_free(h);
        return bctl_error(VERB, "%s exists; --force replaces it", out);
    }
    fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) {
        berth_sha256_free(h);
        return bctl_error(VERB, "%s: cannot make an unnamed file there: %s", dir, strerror(errno));
    }
    snprintf(path, sizeof(path), "/v1/evidence/%s", digest);
    r = berth_https_download(c, path, fd, OBJECT_MAX, h, &bytes, &status, &error, &err);
    if (r < 0) {
        berth_sha256_free(h);
        return bctl_error(VERB, "%s (nothing was written to %s)", err.message, out);
    }
    if (status != 200) {
        berth_sha256_free(h);
        r = bctl_client_fail(VERB, status, error);
        json_decref(error);
        return r;
    }
    r = berth_sha256_final(h, raw);
    berth_sha256_free(h);
    if (r < 0)
        return bctl_error(VERB, "hashing what arrived failed");
    berth_digest_format(raw, got);
    if (!streq(got, digest)) {
        bctl_error(VERB, "the %" PRIu64 " bytes received are %s, not %s: nothing was written to %s", bytes, got,
                   digest, out);
        return BCTL_EXIT_VERIFY;
    }
    if (fsync(fd) < 0)
        return bctl_error(VERB, "%s: %s", out, strerror(errno));
    r = name_file(dirfd, fd, name, force);
    if (r == -EEXIST)
        return bctl_error(VERB, "%s exists; --force replaces it", out);
    if (r < 0)
        return bctl_error(VERB, "%s: %s", out, strerror(-r));
    if (fsync(dirfd) < 0)
        return bctl_error(VERB, "%s: %s", dir, strerror(errno));
    fprintf(stderr, "berthctl %s: %s written to %s (%" PRIu64 " bytes, digest verified)\n", VERB, digest, out, bytes);
    return BCTL_EXIT_OK;
}

/* ------------------------------------------------------------------------ */
/* rm and ls                                                                 */

static int do_rm(const struct bctl_globals *g, struct berth_https *c, const char *digest, const char *reason,
                 const char *owner, const char *scope)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *doc = json_pack("{s:s}", "reason", reason), *s = NULL, *tomb = NULL;
    _cleanup_free_ char *body = NULL;
    char path[128];
    size_t len = 0;
    int r;

    if (!doc)
        return bctl_error(VERB, "out of memory");
    if (owner) {
        if (berth_json_parse(scope, strlen(scope), 65536, &s, &err) < 0 || !json_is_array(s))
            return bctl_usage_error(VERB, "--scope takes a JSON array of strings, such as '[\"team\"]'");
        if (json_object_set_new(doc, "principal", json_string(owner)) < 0 || json_object_set(doc, "scope", s) < 0)
            return bctl_error(VERB, "out of memory");
    }
    if (berth_json_serialize(doc, 0, &body, &len, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    snprintf(path, sizeof(path), "/v1/evidence/%s", digest);
    if ((r = call(c, "DELETE", path, NULL, "application/json", body, len, 200, 200, NULL, &tomb)) != BCTL_EXIT_OK)
        return r;
    return bctl_print_json(VERB, tomb, g->json);
}

static void print_object(const json_t *o, bool all)
{
    _cleanup_free_ char *scope = NULL;

    printf("%s %12lld ", json_string_value(json_object_get(o, "digest")) ?: "?",
           (long long)json_integer_value(json_object_get(o, "size")));
    bctl_fputs_clean(json_string_value(json_object_get(o, "media_type")) ?: "?", stdout);
    printf(" %s", json_string_value(json_object_get(o, "created_at")) ?: "-");
    if (all && berth_json_serialize(json_object_get(o, "scope"), 0, &scope, NULL, NULL) == 0) {
        fputs(" ", stdout);
        bctl_fputs_clean(json_string_value(json_object_get(o, "principal")) ?: "?", stdout);
        fputs(" ", stdout);
        bctl_fputs_clean(scope, stdout);
    }
    fputs("\n", stdout);
}

static int do_ls(const struct bctl_globals *g, struct berth_https *c, bool all)
{
    _cleanup_json_ json_t *objects = json_array(), *last = NULL;
    _cleanup_free_ char *cursor = NULL;
    json_t *page = NULL, *o;
    size_t i, n = 0;
    int r;

    if (!objects)
        return bctl_error(VERB, "out of memory");
    if (!g->json)
        printf("%-71s %12s %s %s%s\n", "DIGEST", "SIZE", "MEDIA_TYPE", "CREATED_NS", all ? " PRINCIPAL SCOPE" : "");
    for (;;) {
        _cleanup_free_ char *path = NULL, *ecur = cursor ? escape(cursor) : NULL;
        const char *next;

        if ((cursor && !ecur) ||
            asprintf(&path, "/v1/evidence?limit=%d%s%s%s", LIST_PAGE, all ? "&all=true" : "",
                     cursor ? "&after=" : "", cursor ? ecur : "") < 0)
            return bctl_error(VERB, "out of memory");
        if ((r = call(c, "GET", path, NULL, NULL, NULL, 0, 200, 200, NULL, &page)) != BCTL_EXIT_OK)
            return r;
        json_array_foreach(json_object_get(page, "objects"), i, o)
        {
            n++;
            if (!g->json)
                print_object(o, all);
            else if (n > LIST_MAX || json_array_append(objects, o) < 0) {
                json_decref(page);
                return bctl_error(VERB, "more than %d objects: list them without --json", LIST_MAX);
            }
        }
        next = json_string_value(json_object_get(page, "next"));
        free(cursor);
        cursor = next ? strdup(next) : NULL;
        json_decref(last);
        last = page;
        if (!next)
            break;
        if (!cursor)
            return bctl_error(VERB, "out of memory");
    }
    if (g->json) {
        _cleanup_json_ json_t *doc = json_pack("{s:O}", "objects", objects);
        if (!doc || (!all && (json_object_set(doc, "usage", json_object_get(last, "usage")) < 0 ||
                              json_object_set(doc, "quota", json_object_get(last, "quota")) < 0)))
            return bctl_error(VERB, "out of memory");
        return bctl_print_json(VERB, doc, true);
    }
    if (!all)
        printf("%zu object(s); usage %lld objects, %lld bytes of a quota of %lld objects, %lld bytes\n", n,
               (long long)json_integer_value(json_object_get(json_object_get(last, "usage"), "objects")),
               (long long)json_integer_value(json_object_get(json_object_get(last, "usage"), "bytes")),
               (long long)json_integer_value(json_object_get(json_object_get(last, "quota"), "objects")),
               (long long)json_integer_value(json_object_get(json_object_get(last, "quota"), "bytes")));
    else
        printf("%zu object(s)\n", n);
    return BCTL_EXIT_OK;
}

/* ------------------------------------------------------------------------ */

static int digest_arg(const char *arg)
{
    uint8_t raw[BERTH_SHA256_LEN];

    if (berth_digest_parse(arg, raw) < 0)
        return bctl_usage_error(VERB, "\"%s\" is not a digest (sha256: and 64 lowercase hex digits)", arg);
    return BCTL_EXIT_OK;
}

int cmd_evidence(struct bctl_globals *g, int argc, char **argv)
{
    enum { OPT_MEDIA = 0x200, OPT_OUT, OPT_FORCE, OPT_REASON, OPT_OWNER, OPT_SCOPE, OPT_ALL };
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"media-type", required_argument, NULL, OPT_MEDIA},
        {"out", required_argument, NULL, OPT_OUT},
        {"force", no_argument, NULL, OPT_FORCE},
        {"reason", required_argument, NULL, OPT_REASON},
        {"owner", required_argument, NULL, OPT_OWNER},
        {"scope", required_argument, NULL, OPT_SCOPE},
        {"all", no_argument, NULL, OPT_ALL},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    const char *media = "application/octet-stream", *reason = NULL, *owner = NULL, *scope = NULL, *sub;
    _cleanup_free_ char *out = NULL;
    struct berth_https *c = NULL;
    bool force = false, all = false, want_arg;
    int ch, r;

    while ((ch = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        r = bctl_global_option(g, VERB, ch, optarg);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h': help(); return BCTL_EXIT_OK;
        case OPT_MEDIA: media = optarg; break;
        case OPT_OUT:
            if ((r = bctl_absolute_arg(VERB, "--out", optarg, &out)) != 0)
                return r;
            break;
        case OPT_FORCE: force = true; break;
        case OPT_REASON: reason = optarg; break;
        case OPT_OWNER: owner = optarg; break;
        case OPT_SCOPE: scope = optarg; break;
        case OPT_ALL: all = true; break;
        default: return bctl_usage_hint(VERB);
        }
    }
    if (optind >= argc)
        return bctl_usage_error(VERB, "a subcommand is required: put, get, rm or ls");
    sub = argv[optind];
    if (!streq(sub, "put") && !streq(sub, "get") && !streq(sub, "rm") && !streq(sub, "ls"))
        return bctl_usage_error(VERB, "unknown subcommand \"%s\"", sub);
    want_arg = !streq(sub, "ls");
    if (argc - optind != (want_arg ? 2 : 1))
        return bctl_usage_error(VERB, want_arg ? "%s takes exactly one argument" : "%s takes no argument", sub);
    if (media != NULL && strcmp(media, "application/octet-stream") != 0 && !streq(sub, "put"))
        return bctl_usage_error(VERB, "--media-type belongs to put");
    if ((out || force) && !streq(sub, "get"))
        return bctl_usage_error(VERB, "--out and --force belong to get");
    if (streq(sub, "get") && !out)
        return bctl_usage_error(VERB, "get needs --out=FILE");
    if ((reason || owner || scope) && !streq(sub, "rm"))
        return bctl_usage_error(VERB, "--reason, --owner and --scope belong to rm");
    if (streq(sub, "rm") && (!reason || !reason[0]))
        return bctl_usage_error(VERB, "rm needs --reason=TEXT (kept in the tombstone)");
    if (!!owner != !!scope)
        return bctl_usage_error(VERB, "--owner and --scope go together");
    if (owner && !berth_principal_valid(owner))
        return bctl_usage_error(VERB, "--owner must be " BERTH_PRINCIPAL_RULE);
    if (all && !streq(sub, "ls"))
        return bctl_usage_error(VERB, "--all belongs to ls");
    if ((streq(sub, "get") || streq(sub, "rm")) && (r = digest_arg(argv[optind + 1])) != BCTL_EXIT_OK)
        return r;
    if ((r = bctl_client_open(g, VERB, &c)) != BCTL_EXIT_OK)
        return r;
    if (streq(sub, "put"))
        r = do_put(g, c, argv[optind + 1], media);
    else if (streq(sub, "get"))
        r = do_get(c, argv[optind + 1], out, force);
    else if (streq(sub, "rm"))
        r = do_rm(g, c, argv[optind + 1], reason, owner, scope);
    else
        r = do_ls(g, c, all);
    berth_https_free(c);
    return r;
}
