/* SPDX-License-Identifier: MIT */
/*
 * evstore-content.c -- evidence-sqlite's content files: objects/sha256/<hex>,
 * one per digest, mode 0600, one link, in 0700 directories.
 *
 * A file appears only whole: its bytes are written to an unnamed file
 * (O_TMPFILE; a hidden ".#tmp.*" name where the filesystem has none),
 * hashed, fdatasync'd, then linked in without replacing anything, and the
 * directory fsync'd (fsutil.h, berth_tmpfile_publish()).  An upload()
 * descriptor is that unnamed file already, so put() links it without a
 * copy.  Files are never modified; get() re-hashes what it streams.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evstore.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"

#define CONTENT_MODE 0600

static const char *hex_of(const char *digest)
{
    return digest + sizeof(BERTH_DIGEST_PREFIX) - 1;
}

/* Make (when missing) and open the private directory @name below @dirfd. */
static int open_private_dir(int dirfd, const char *name, const char *what, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFDIR, .uid = (uint32_t)geteuid(), .mode_mask = 07777, .mode = 0700};
    int fd, r;

    if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "creating %s: %s", what, strerror(errno));
    fd = berth_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (fd < 0) {
        berth_error_prefix(reterr, "%s", what);
        return fd;
    }
    r = berth_file_check(fd, what, &expect, NULL, reterr);
    if (r < 0) {
        close(fd);
        return r;
    }
    return fd;
}

int evc_open(struct evstore *s, struct berth_error *reterr)
{
    _cleanup_close_ int objects = -1;
    struct stat st;

    objects = open_private_dir(s->dirfd, "objects", "the store's objects directory", reterr);
    if (objects < 0)
        return objects;
    s->objfd = open_private_dir(objects, "sha256", "the store's objects/sha256 directory", reterr);
    if (s->objfd < 0)
        return s->objfd;
    if (fstat(s->objfd, &st) < 0)
        return berth_error_set(reterr, -errno, "objects/sha256: %s", strerror(errno));
    s->objdev = st.st_dev;
    return 0;
}

/* Whether @name is 64 lowercase hex digits: a content file's name. */
static bool content_name(const char *name)
{
    return strlen(name) == BERTH_SHA256_HEX_LEN && berth_is_hex(name, BERTH_SHA256_HEX_LEN);
}

int evc_sweep(struct evstore *s, struct berth_error *reterr)
{
    char digest[BERTH_DIGEST_BUFSZ];
    unsigned removed = 0;
    struct dirent *de;
    int fd, r = 0;
    DIR *d;

    fd = fcntl(s->objfd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0)
        return berth_error_set(reterr, -errno, "objects/sha256: %s", strerror(errno));
    d = fdopendir(fd);
    if (!d) {
        r = -errno;
        close(fd);
        return berth_error_set(reterr, r, "objects/sha256: %s", strerror(-r));
    }
    rewinddir(d);
    while ((errno = 0, de = readdir(d))) {
        bool orphan;

        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        if (strncmp(de->d_name, BERTH_TMPFILE_PREFIX, sizeof(BERTH_TMPFILE_PREFIX) - 1) == 0) {
            orphan = true; /* a temporary of a put that never finished */
        } else if (content_name(de->d_name)) {
            int64_t refs = 0;

            snprintf(digest, sizeof(digest), BERTH_DIGEST_PREFIX "%s", de->d_name);
            if ((r = evdb_refs(s, digest, &refs, reterr)) < 0)
                break;
            orphan = refs == 0; /* published, but its object was never committed (or removed) */
        } else {
            s->host->log(s->host, BERTH_LOG_WARNING, "objects/sha256/%s is not a file of this store; left alone",
                         de->d_name);
            continue;
        }
        if (!orphan)
            continue;
        if (unlinkat(s->objfd, de->d_name, 0) < 0 && errno != ENOENT) {
            r = berth_error_set(reterr, -errno, "removing orphan objects/sha256/%s: %s", de->d_name,
                                strerror(errno));
            break;
        }
        removed++;
    }
    if (r == 0 && errno != 0)
        r = berth_error_set(reterr, -errno, "reading objects/sha256: %s", strerror(errno));
    closedir(d);
    if (r == 0 && removed > 0) {
        s->host->log(s->host, BERTH_LOG_NOTICE, "removed %u unfinished or orphaned content file%s", removed,
                     removed == 1 ? "" : "s");
        if (fsync(s->objfd) < 0)
            r = berth_error_set(reterr, -EIO, "syncing objects/sha256: %s", strerror(errno));
    }
    return r;
}

/* Hash @fd from offset 0 (copying to @dst_fd unless -1) and compare with @m. */
static int verify(const struct ev_meta *m, int fd, int dst_fd, struct berth_error *reterr)
{
    uint8_t want[BERTH_SHA256_LEN], have[BERTH_SHA256_LEN];
    uint64_t len = 0;
    int r;

    if (berth_digest_parse(m->key.digest, want) < 0)
        return berth_error_set(reterr, -EINVAL, "not a sha256 digest");
    r = berth_sha256_copy(fd, 0, dst_fd, m->size, have, &len, reterr);
    if (r < 0)
        return r;
    if (len != m->size)
        return berth_error_set(reterr, -EBADMSG, "the data holds %s%llu bytes; meta.size is %llu",
                               len > m->size ? "more than " : "", (unsigned long long)(len > m->size ? m->size : len),
                               (unsigned long long)m->size);
    if (memcmp(want, have, sizeof(want)) != 0)
        return berth_error_set(reterr, -EBADMSG, "the data does not hash to meta.digest %s", m->key.digest);
    return 0;
}

/* Whether the content file of @m is there with the right size; a wrong one is removed. */
static int present(struct evstore *s, const struct ev_meta *m, bool *ret, struct berth_error *reterr)
{
    const char *hex = hex_of(m->key.digest);
    struct stat st;

    if (fstatat(s->objfd, hex, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return berth_error_set(reterr, -errno, "objects/sha256/%s: %s", hex, strerror(errno));
        *ret = false;
        return 0;
    }
    if (S_ISREG(st.st_mode) && (uint64_t)st.st_size == m->size && st.st_nlink == 1) {
        *ret = true;
        return 0;
    }
    /* Not what a verified publish leaves: replace it with the bytes being put. */
    s->host->log(s->host, BERTH_LOG_WARNING, "objects/sha256/%s is damaged (size %lld, %lu links); replacing it", hex,
                 (long long)st.st_size, (unsigned long)st.st_nlink);
    if (unlinkat(s->objfd, hex, 0) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "removing damaged objects/sha256/%s: %s", hex, strerror(errno));
    *ret = false;
    return 0;
}

/* The caller's unnamed file on our filesystem, verified: link it in.
 * 1 when it could not be linked (copy instead), 0 when published. */
static int link_upload(struct evstore *s, const struct ev_meta *m, int data_fd, const struct stat *st,
                       struct berth_error *reterr)
{
    int r;

    if ((uint64_t)st->st_size != m->size)
        return berth_error_set(reterr, -EBADMSG, "the data holds %lld bytes; meta.size is %llu",
                               (long long)st->st_size, (unsigned long long)m->size);
    if ((r = verify(m, data_fd, -1, reterr)) < 0)
        return r;
    if (fdatasync(data_fd) < 0 || fchmod(data_fd, CONTENT_MODE) < 0)
        return berth_error_set(reterr, -errno, "syncing the upload: %s", strerror(errno));
    r = berth_link_unnamed(data_fd, s->objfd, hex_of(m->key.digest), reterr);
    if (r == -ENOENT || r == -EXDEV || r == -EINVAL || r == -EPERM)
        return 1; /* O_TMPFILE | O_EXCL, or not ours after all: copy */
    return r;
}

int evc_store(struct evstore *s, const struct ev_meta *m, int data_fd, bool *ret_added, struct berth_error *reterr)
{
    struct berth_tmpfile t = {.fd = -1};
    struct stat st;
    bool have;
    int r;

    *ret_added = false;
    if ((r = present(s, m, &have, reterr)) < 0)
        return r;
    if (have)
        return verify(m, data_fd, -1, reterr); /* proof that the caller holds the bytes */
    if (fstat(data_fd, &st) < 0)
        return berth_error_set(reterr, -errno, "the data descriptor: %s", strerror(errno));
    if (S_ISREG(st.st_mode) && st.st_nlink == 0 && st.st_dev == s->objdev && st.st_uid == geteuid()) {
        r = link_upload(s, m, data_fd, &st, reterr);
        if (r <= 0) {
            *ret_added = r == 0;
            return r;
        }
    }
    /* Copy into a file of our own, verifying as it goes. */
    if ((r = berth_tmpfile_open(s->objfd, CONTENT_MODE, true, &t, reterr)) < 0)
        return r;
    r = verify(m, data_fd, t.fd, reterr);
    if (r == 0 && fdatasync(t.fd) < 0)
        r = berth_error_set(reterr, -errno, "syncing the content: %s", strerror(errno));
    if (r == 0) {
        r = berth_tmpfile_publish(&t, hex_of(m->key.digest), reterr);
        *ret_added = r == 0;
        if (r == -EEXIST)
            r = 0; /* cannot happen on one thread; the name holds these bytes */
    }
    berth_tmpfile_discard(&t);
    return r;
}

int evc_stream(struct evstore *s, const struct ev_object *o, int out_fd, struct berth_error *reterr)
{
    uint8_t want[BERTH_SHA256_LEN], have[BERTH_SHA256_LEN];
    const char *hex = hex_of(o->digest);
    _cleanup_close_ int fd = -1;
    uint64_t len = 0;
    struct stat st;
    int r;

    if (berth_digest_parse(o->digest, want) < 0)
        return berth_error_set(reterr, -EBADMSG, "the store names a malformed digest");
    fd = openat(s->objfd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ELOOP)
            return berth_error_set(reterr, -EBADMSG, "the content of %s is missing from the store", o->digest);
        return berth_error_set(reterr, -errno, "objects/sha256/%s: %s", hex, strerror(errno));
    }
    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "objects/sha256/%s: %s", hex, strerror(errno));
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != o->size)
        return berth_error_set(reterr, -EBADMSG, "the content of %s is damaged: %lld bytes, %llu recorded", o->digest,
                               (long long)st.st_size, (unsigned long long)o->size);
    r = berth_sha256_copy(fd, 0, out_fd, o->size, have, &len, reterr);
    if (r < 0)
        return r;
    if (len != o->size || memcmp(want, have, sizeof(want)) != 0)
        return berth_error_set(reterr, -EBADMSG, "the content of %s does not match its digest: the store is corrupt",
                               o->digest);
    return 0;
}

void evc_drop(struct evstore *s, const char *digest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int64_t refs = 1;

    if (evdb_refs(s, digest, &refs, &err) < 0) {
        s->host->log(s->host, BERTH_LOG_WARNING, "content of %s kept until the next start: %s", digest, err.message);
        return;
    }
    if (refs > 0)
        return;
    if (unlinkat(s->objfd, hex_of(digest), 0) < 0 && errno != ENOENT) {
        s->host->log(s->host, BERTH_LOG_WARNING, "content of %s kept until the next start: %s", digest,
                     strerror(errno));
        return;
    }
    if (fsync(s->objfd) < 0)
        s->host->log(s->host, BERTH_LOG_WARNING, "syncing objects/sha256 after removing %s: %s", digest,
                     strerror(errno));
}

int evc_upload(struct evstore *s, int *ret_fd, struct berth_error *reterr)
{
    struct berth_tmpfile t;
    int r = berth_tmpfile_open(s->objfd, CONTENT_MODE, false, &t, reterr);

    if (r < 0)
        return r;
    *ret_fd = t.fd;
    return 0;
}
