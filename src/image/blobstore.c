/* SPDX-License-Identifier: MIT */
/* blobstore.c -- the local OCI blob store; see blobstore.h. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blobstore.h"
#include "fsutil.h"
#include "macro.h"
#include "refusal.h"

#define COPY_CHUNK (256 * 1024)

struct berth_blob_store {
    int rootfd;
    int sha256fd; /* blobs/sha256, O_RDONLY|O_DIRECTORY */
    uid_t owner;
};

/* @fd must be a directory of the store's owner without group/other bits. */
static int check_dir(int fd, const char *what, uid_t owner, struct berth_error *reterr)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "%s: %s", what, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != owner || (st.st_mode & 077))
        return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE,
                                  "%s must be a directory owned by uid %u with mode 0700 (it is uid %u, mode %04o)",
                                  what, (unsigned)owner, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* Open (with @create, first make) the directory @name below @dirfd. */
static int open_subdir(int dirfd, const char *name, const char *what, bool create, uid_t owner,
                       struct berth_error *reterr)
{
    int fd, r;

    if (create && mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "creating %s: %s", what, strerror(errno));
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOTDIR || errno == ELOOP)
            return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE, "%s is not a directory", what);
        return berth_error_set(reterr, -errno, "%s: %s", what, strerror(errno));
    }
    if ((r = check_dir(fd, what, owner, reterr)) < 0) {
        close(fd);
        return r;
    }
    return fd;
}

int berth_blob_store_open(const char *root, bool create, struct berth_blob_store **ret, struct berth_error *reterr)
{
    _cleanup_close_ int rootfd = -1, blobsfd = -1, shafd = -1;
    struct berth_blob_store *s;
    uid_t owner = geteuid();
    int r;

    if (!root || root[0] != '/' || !ret)
        return berth_error_set(reterr, -EINVAL, "the image store must be an absolute path");
    if (create && mkdir(root, 0700) < 0) {
        int e = errno;
        if (e == ENOENT) {
            /* Missing parents are made as "mkdir -p" would (0755): they are
             * not the store, whose own directories stay 0700. */
            _cleanup_free_ char *parents = strdup(root);
            if (!parents)
                return -ENOMEM;
            for (char *c = parents + 1; *c; c++) {
                if (*c != '/')
                    continue;
                *c = '\0';
                if (mkdir(parents, 0755) < 0 && errno != EEXIST)
                    return berth_error_set(reterr, -errno, "creating %s: %s", parents, strerror(errno));
                *c = '/';
            }
            if (mkdir(root, 0700) < 0 && errno != EEXIST)
                return berth_error_set(reterr, -errno, "creating the image store %s: %s", root, strerror(errno));
        } else if (e != EEXIST)
            return berth_error_set(reterr, -e, "creating the image store %s: %s", root, strerror(e));
    }
    rootfd = berth_open_trusted(root, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (rootfd == -ELOOP || rootfd == -ENOTDIR)
        return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE,
                                  "the image store %s must be a directory reached without symlinks", root);
    if (rootfd < 0) {
        berth_error_prefix(reterr, "image store");
        return rootfd;
    }
    if ((r = check_dir(rootfd, "the image store", owner, reterr)) < 0)
        return r;
    blobsfd = open_subdir(rootfd, "blobs", "the image store's blobs", create, owner, reterr);
    if (blobsfd < 0)
        return blobsfd;
    shafd = open_subdir(blobsfd, "sha256", "the image store's blobs/sha256", create, owner, reterr);
    if (shafd < 0)
        return shafd;
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    s->rootfd = TAKE_FD(rootfd);
    s->sha256fd = TAKE_FD(shafd);
    s->owner = owner;
    *ret = s;
    return 0;
}

void berth_blob_store_free(struct berth_blob_store *store)
{
    if (!store)
        return;
    close(store->rootfd);
    close(store->sha256fd);
    free(store);
}

/* The hex part of @digest, or NULL when it is not sha256:<64 hex>. */
static const char *digest_hex(const char *digest)
{
    uint8_t raw[BERTH_SHA256_LEN];

    if (!digest || berth_digest_parse(digest, raw) < 0)
        return NULL;
    return digest + strlen("sha256:");
}

/* Check an open blob: type, owner, mode, links; *ret_size its size. */
static int check_blob(int fd, const struct berth_blob_store *store, const char *digest, uint64_t *ret_size,
                      struct berth_error *reterr)
{
    struct stat st;

    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "blob %s: %s", digest, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_uid != store->owner || (st.st_mode & 07777) != 0400 || st.st_nlink != 1)
        return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE,
                                  "blob %s must be a regular file owned by uid %u, mode 0400, one link "
                                  "(it is uid %u, mode %04o, %lu links)",
                                  digest, (unsigned)store->owner, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
                                  (unsigned long)st.st_nlink);
    *ret_size = (uint64_t)st.st_size;
    return 0;
}

int berth_blob_open(const struct berth_blob_store *store, const char *digest, uint64_t size, int *ret_fd,
                    struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    const char *hex = digest_hex(digest);
    uint64_t have = 0;
    int r;

    if (!store || !hex || !ret_fd)
        return berth_error_set(reterr, -EINVAL, "not a sha256 digest");
    fd = openat(store->sha256fd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return berth_image_refuse(reterr, BERTH_IMAGE_BLOB_MISSING, "the image store has no blob %s", digest);
        if (errno == ELOOP)
            return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE, "blob %s is a symlink", digest);
        return berth_error_set(reterr, -errno, "blob %s: %s", digest, strerror(errno));
    }
    if ((r = check_blob(fd, store, digest, &have, reterr)) < 0)
        return r;
    if (size != BERTH_BLOB_ANY_SIZE && have != size)
        return berth_image_refuse(reterr, BERTH_IMAGE_SIZE_MISMATCH,
                                  "blob %s holds %llu bytes; its descriptor says %llu", digest,
                                  (unsigned long long)have, (unsigned long long)size);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

/* Compare a finished hash and byte count with what @digest and @size say. */
static int compare(struct berth_sha256 *h, uint64_t got, const char *digest, uint64_t size, struct berth_error *reterr)
{
    uint8_t want[BERTH_SHA256_LEN], have[BERTH_SHA256_LEN];
    char text[BERTH_DIGEST_BUFSZ];
    int r;

    if (got != size)
        return berth_image_refuse(reterr, BERTH_IMAGE_SIZE_MISMATCH, "blob %s: %llu bytes where %llu are declared",
                                  digest, (unsigned long long)got, (unsigned long long)size);
    if ((r = berth_sha256_final(h, have)) < 0 || (r = berth_digest_parse(digest, want)) < 0)
        return berth_error_set(reterr, r, "hashing blob %s failed", digest);
    if (memcmp(want, have, sizeof(want)) != 0) {
        berth_digest_format(have, text);
        return berth_image_refuse(reterr, BERTH_IMAGE_DIGEST_MISMATCH, "blob %s hashes to %s", digest, text);
    }
    return 0;
}

int berth_blob_verify_fd(int fd, const char *digest, uint64_t size, struct berth_error *reterr)
{
    _cleanup_free_ uint8_t *buf = malloc(COPY_CHUNK);
    struct berth_sha256 *h = NULL;
    uint64_t off = 0;
    ssize_t n;
    int r;

    if (!buf || berth_sha256_new(&h) < 0) {
        berth_sha256_free(h);
        return -ENOMEM;
    }
    for (;;) {
        n = pread(fd, buf, COPY_CHUNK, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = berth_error_set(reterr, -errno, "reading blob %s: %s", digest, strerror(errno));
            berth_sha256_free(h);
            return r;
        }
        if (n == 0)
            break;
        off += (uint64_t)n;
        if (off > size)
            break; /* longer than declared: compare() says so */
        if ((r = berth_sha256_update(h, buf, (size_t)n)) < 0) {
            berth_sha256_free(h);
            return berth_error_set(reterr, r, "hashing blob %s failed", digest);
        }
    }
    r = compare(h, off, digest, size, reterr);
    berth_sha256_free(h);
    return r;
}

int berth_blob_read_fd(int fd, const char *digest, uint64_t size, size_t max_bytes, char **ret, size_t *ret_len,
                       struct berth_error *reterr)
{
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;
    uint8_t want[BERTH_SHA256_LEN], have[BERTH_SHA256_LEN];
    int r;

    if (berth_digest_parse(digest, want) < 0)
        return berth_error_set(reterr, -EINVAL, "not a sha256 digest");
    if ((r = berth_read_fd(fd, max_bytes, &buf, &len, reterr)) < 0) {
        berth_error_prefix(reterr, "blob %s", digest);
        return r; /* -EFBIG over @max_bytes: the caller says what that means */
    }
    if (size != BERTH_BLOB_ANY_SIZE && len != size)
        return berth_image_refuse(reterr, BERTH_IMAGE_SIZE_MISMATCH, "blob %s holds %zu bytes; %llu are declared",
                                  digest, len, (unsigned long long)size);
    if ((r = berth_sha256(buf, len, have)) < 0)
        return berth_error_set(reterr, r, "hashing blob %s failed", digest);
    if (memcmp(want, have, sizeof(want)) != 0)
        return berth_image_refuse(reterr, BERTH_IMAGE_DIGEST_MISMATCH, "blob %s does not hash to its digest", digest);
    *ret = TAKE_PTR(buf);
    *ret_len = len;
    return 0;
}

int berth_blob_read(const struct berth_blob_store *store, const char *digest, uint64_t size, size_t max_bytes,
                    char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r;

    if (size != BERTH_BLOB_ANY_SIZE && size > max_bytes)
        return berth_error_set(reterr, -EFBIG, "blob %s is declared as %llu bytes; at most %zu are read", digest,
                               (unsigned long long)size, max_bytes);
    if ((r = berth_blob_open(store, digest, size, &fd, reterr)) < 0)
        return r;
    return berth_blob_read_fd(fd, digest, size, max_bytes, ret, ret_len, reterr);
}

/* Copy @src_fd into @dst_fd, hashing; fails on more than @size bytes. */
static int copy_hashing(int src_fd, int dst_fd, const char *digest, uint64_t size, struct berth_error *reterr)
{
    _cleanup_free_ uint8_t *buf = malloc(COPY_CHUNK);
    struct berth_sha256 *h = NULL;
    uint64_t total = 0;
    ssize_t n, w, off;
    int r;

    if (!buf || berth_sha256_new(&h) < 0) {
        berth_sha256_free(h);
        return -ENOMEM;
    }
    for (;;) {
        n = read(src_fd, buf, COPY_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            r = berth_error_set(reterr, -errno, "reading blob %s: %s", digest, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        total += (uint64_t)n;
        if (total > size)
            break;
        if ((r = berth_sha256_update(h, buf, (size_t)n)) < 0) {
            r = berth_error_set(reterr, r, "hashing blob %s failed", digest);
            goto out;
        }
        for (off = 0; off < n; off += w) {
            w = write(dst_fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) {
                w = 0;
                continue;
            }
            if (w < 0) {
                r = berth_error_set(reterr, -errno, "writing blob %s: %s", digest, strerror(errno));
                goto out;
            }
        }
    }
    r = compare(h, total, digest, size, reterr);
out:
    berth_sha256_free(h);
    return r;
}

/* The verdict on a blob already in the store under @digest: 0 when it is
 * the expected blob, -ENOENT when there is none, "blob-conflict" otherwise. */
static int existing(const struct berth_blob_store *store, const char *digest, uint64_t size, bool *ret_added,
                    struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r = berth_blob_open(store, digest, size, &fd, reterr);

    if (r == -ENOENT || (r < 0 && r != -EPERM && r != -EBADMSG))
        return r;
    if (r == 0 && berth_blob_verify_fd(fd, digest, size, reterr) == 0) {
        if (ret_added)
            *ret_added = false;
        return 0;
    }
    return berth_image_refuse(reterr, BERTH_IMAGE_BLOB_CONFLICT,
                              "the store already holds a different or unsafe blob named %s; nothing was changed",
                              digest);
}

int berth_blob_import_fd(const struct berth_blob_store *store, int src_fd, const char *digest, uint64_t size,
                         bool *ret_added, struct berth_error *reterr)
{
    _cleanup_close_ int tmp = -1;
    const char *hex = digest_hex(digest);
    char proc[64];
    int r;

    if (!store || !hex || src_fd < 0)
        return berth_error_set(reterr, -EINVAL, "not a sha256 digest");
    /* Already there: verify, never overwrite. */
    r = existing(store, digest, size, ret_added, reterr);
    if (r != -ENOENT)
        return r;
    tmp = openat(store->sha256fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0400);
    if (tmp < 0)
        return berth_error_set(reterr, -errno, "creating a temporary blob: %s", strerror(errno));
    if ((r = copy_hashing(src_fd, tmp, digest, size, reterr)) < 0)
        return r;
    if (fchmod(tmp, 0400) < 0 || fsync(tmp) < 0)
        return berth_error_set(reterr, -errno, "writing blob %s: %s", digest, strerror(errno));
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tmp);
    if (linkat(AT_FDCWD, proc, store->sha256fd, hex, AT_SYMLINK_FOLLOW) < 0) {
        if (errno == EEXIST) /* a concurrent import won: it must be the same blob */
            return existing(store, digest, size, ret_added, reterr);
        return berth_error_set(reterr, -errno, "publishing blob %s: %s", digest, strerror(errno));
    }
    {
        /* The name must now be the file we wrote (not whatever /proc resolved). */
        struct stat a, b;
        if (fstat(tmp, &a) < 0 || fstatat(store->sha256fd, hex, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino)
            return berth_image_refuse(reterr, BERTH_IMAGE_UNSAFE_STORE, "blob %s was not published as written", digest);
    }
    if (fsync(store->sha256fd) < 0)
        return berth_error_set(reterr, -EIO, "blob %s is in place but syncing its directory failed: %s", digest,
                               strerror(errno));
    if (ret_added)
        *ret_added = true;
    return 0;
}
