/* SPDX-License-Identifier: MIT */
/* fsutil.c -- trusted file access; see fsutil.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "encoding.h"
#include "fsutil.h"
#include "macro.h"

/* openat2(2) may fail with EAGAIN when a concurrent rename makes the ".."
 * check inconclusive; retrying is what the man page recommends. */
#define OPENAT2_RETRIES 8

static int openat2_checked(int dirfd, const char *path, int flags, mode_t mode, const char *shown,
                           struct berth_error *reterr)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = -1, i;

    for (i = 0; i < OPENAT2_RETRIES; i++) {
        fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
        if (fd >= 0 || errno != EAGAIN)
            break;
    }
    if (fd >= 0)
        return fd;
    switch (errno) {
    case ELOOP:
        return berth_error_set(reterr, -ELOOP, "%s: a component is a symbolic link, which is not allowed", shown);
    case EXDEV: return berth_error_set(reterr, -EXDEV, "%s: path leaves its base directory", shown);
    case ENOSYS:
        return berth_error_set(reterr, -ENOSYS, "%s: the kernel lacks openat2(2) (Linux >= 5.6 is required)", shown);
    default: return berth_error_set(reterr, -errno, "%s: %s", shown, strerror(errno));
    }
}

int berth_open_beneath(int dirfd, const char *path, int flags, mode_t mode, struct berth_error *reterr)
{
    if (!path || !*path)
        return berth_error_set(reterr, -EINVAL, "empty path");
    if (path[0] == '/')
        return berth_error_set(reterr, -EXDEV, "%s: absolute path where a relative one is required", path);
    return openat2_checked(dirfd, path, flags, mode, path, reterr);
}

int berth_open_trusted(const char *path, int flags, mode_t mode, struct berth_error *reterr)
{
    _cleanup_close_ int root = -1;
    const char *rel;

    if (!path || path[0] != '/')
        return berth_error_set(reterr, -EINVAL, "%s: an absolute path is required", path ? path : "(null)");
    rel = path;
    while (*rel == '/')
        rel++;
    root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return berth_error_set(reterr, -errno, "/: %s", strerror(errno));
    return openat2_checked(root, *rel ? rel : ".", flags, mode, path, reterr);
}

static const char *type_name(mode_t m)
{
    switch (m & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFLNK: return "a symbolic link";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    default: return "an unknown file type";
    }
}

int berth_file_check(int fd, const char *what, const struct berth_file_expect *expect, struct stat *ret_st,
                     struct berth_error *reterr)
{
    struct stat st;

    if (fd < 0 || !expect || (expect->mode & ~expect->mode_mask) || (expect->mode_mask & ~07777u) ||
        (expect->type & ~(uint32_t)S_IFMT))
        return berth_error_set(reterr, -EINVAL, "invalid file check");
    if (!what)
        what = "file";
    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "%s: fstat: %s", what, strerror(errno));
    if (expect->type && (st.st_mode & S_IFMT) != expect->type)
        return berth_error_set(reterr, -EBADFD, "%s is %s, expected %s", what, type_name(st.st_mode),
                               type_name(expect->type));
    if (expect->uid != BERTH_UID_ANY && st.st_uid != expect->uid)
        return berth_error_set(reterr, -EPERM, "%s is owned by uid %u, expected uid %u", what, (unsigned)st.st_uid,
                               (unsigned)expect->uid);
    if ((st.st_mode & expect->mode_mask) != expect->mode) {
        if (expect->mode == 0 && (expect->mode_mask & ~(mode_t)022) == 0)
            return berth_error_set(reterr, -EPERM, "%s has mode %04o, which is writable by group or others", what,
                                   (unsigned)(st.st_mode & 07777));
        return berth_error_set(reterr, -EPERM, "%s has mode %04o, expected %04o", what, (unsigned)(st.st_mode & 07777),
                               (unsigned)expect->mode);
    }
    if (expect->one_link && st.st_nlink != 1)
        return berth_error_set(reterr, -EMLINK, "%s has %lu hard links, expected exactly 1", what,
                               (unsigned long)st.st_nlink);
    if (expect->max_size && (uint64_t)st.st_size > expect->max_size)
        return berth_error_set(reterr, -EFBIG, "%s is %lld bytes, more than the %llu allowed", what,
                               (long long)st.st_size, (unsigned long long)expect->max_size);
    if (ret_st)
        *ret_st = st;
    return 0;
}

int berth_private_file_check(int fd, const char *what, struct stat *ret_st, struct berth_error *reterr)
{
    const struct berth_file_expect e = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .one_link = 1,
    };
    return berth_file_check(fd, what, &e, ret_st, reterr);
}

/* Rule 2 of berth_trusted_file_check(): root's or the caller's.  @above names
 * the file a directory was checked for, or is NULL for the file itself. */
static int trusted_owner(const struct stat *st, const char *shown, const char *above, struct berth_error *reterr)
{
    uid_t euid = geteuid();

    if (st->st_uid == 0 || st->st_uid == euid)
        return 0;
    if (euid == 0)
        return berth_error_set(reterr, -EPERM, "%s%s%s%s is owned by uid %u, expected root", shown,
                               above ? " (above " : "", above ? above : "", above ? ")" : "", (unsigned)st->st_uid);
    return berth_error_set(reterr, -EPERM, "%s%s%s%s is owned by uid %u, expected root or uid %u", shown,
                           above ? " (above " : "", above ? above : "", above ? ")" : "", (unsigned)st->st_uid,
                           (unsigned)euid);
}

/* Rule 6 for the directory open on @dfd, shown as @shown. */
static int trusted_parent(int dfd, const char *shown, const char *above, struct berth_error *reterr)
{
    struct stat st;
    int r;

    if (fstat(dfd, &st) < 0)
        return berth_error_set(reterr, -errno, "%s: fstat: %s", shown, strerror(errno));
    if ((r = trusted_owner(&st, shown, above, reterr)) < 0)
        return r;
    if ((st.st_mode & BERTH_UNTRUSTED_MODE) && !(st.st_mode & S_ISVTX))
        return berth_error_set(reterr, -EPERM,
                               "%s (above %s) has mode %04o, which is writable by group or others and not sticky",
                               shown, above, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* @path without empty, "." and ".." components, always starting with "/"
 * ("/" alone for the root); ".." removes the component before it. */
static char *path_normalise(const char *path)
{
    size_t len = 0;
    char *out = malloc(strlen(path) + 2);
    const char *c = path;

    if (!out)
        return NULL;
    while (*c) {
        const char *end;
        size_t n;

        while (*c == '/')
            c++;
        end = strchrnul(c, '/');
        n = (size_t)(end - c);
        if (n == 2 && c[0] == '.' && c[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the "/" before it */
        } else if (n > 0 && !(n == 1 && c[0] == '.')) {
            out[len++] = '/';
            memcpy(out + len, c, n);
            len += n;
        }
        c = end;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return out;
}

/* Rules 6 and 7: every directory above @path, then whether @path's last
 * component is still the inode @leaf describes. */
static int trusted_parents(const char *path, const struct stat *leaf, struct berth_error *reterr)
{
    _cleanup_free_ char *norm = NULL;
    _cleanup_close_ int cur = -1;
    struct stat st;
    char *comp, *slash;
    int r;

    norm = path_normalise(path);
    if (!norm)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    cur = berth_open_trusted("/", O_PATH | O_DIRECTORY, 0, reterr);
    if (cur < 0)
        return cur;
    if (streq(norm, "/")) {
        /* The root has no directory above it: only rule 7 is left. */
        if (fstat(cur, &st) < 0)
            return berth_error_set(reterr, -errno, "/: fstat: %s", strerror(errno));
        goto same;
    }
    if ((r = trusted_parent(cur, "/", path, reterr)) < 0)
        return r;
    for (comp = norm + 1; (slash = strchr(comp, '/')) != NULL; comp = slash + 1) {
        int next;

        *slash = '\0'; /* norm is now the directory's path */
        next = berth_open_beneath(cur, comp, O_PATH | O_DIRECTORY, 0, NULL);
        if (next == -ELOOP)
            return berth_error_set(reterr, -ELOOP, "%s (above %s) is a symbolic link, which is not allowed", norm,
                                   path);
        if (next < 0)
            return berth_error_set(reterr, next, "%s (above %s): %s", norm, path, strerror(-next));
        close(cur);
        cur = next;
        if ((r = trusted_parent(cur, norm, path, reterr)) < 0)
            return r;
        *slash = '/';
    }
    if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return berth_error_set(reterr, -EAGAIN, "%s was removed while it was being checked", path);
        return berth_error_set(reterr, -errno, "%s: %s", path, strerror(errno));
    }
    if (S_ISLNK(st.st_mode))
        return berth_error_set(reterr, -ELOOP, "%s is a symbolic link, which is not allowed", path);
same:
    if (st.st_dev != leaf->st_dev || st.st_ino != leaf->st_ino)
        return berth_error_set(reterr, -EAGAIN, "%s was replaced while it was being checked", path);
    return 0;
}

static int trusted_check(int fd, const char *path, uint32_t type, uint64_t max_size, struct stat *ret_st,
                         struct berth_error *reterr)
{
    /* Rules 1 and 3 to 5; for a directory, rule 3 admits no sticky bit. */
    const struct berth_file_expect expect = {
        .type = type,
        .uid = BERTH_UID_ANY,
        .mode_mask = BERTH_UNTRUSTED_MODE,
        .mode = 0,
        .max_size = max_size,
        .one_link = type == S_IFREG,
    };
    struct stat st;
    int r;

    if (fd < 0 || !path || path[0] != '/')
        return berth_error_set(reterr, -EINVAL, "%s: an absolute path and its descriptor are required",
                               path ? path : "(null)");
    if ((r = berth_file_check(fd, path, &expect, &st, reterr)) < 0 ||
        (r = trusted_owner(&st, path, NULL, reterr)) < 0 || (r = trusted_parents(path, &st, reterr)) < 0)
        return r;
    if (ret_st)
        *ret_st = st;
    return 0;
}

int berth_trusted_file_check(int fd, const char *path, uint64_t max_size, struct stat *ret_st,
                             struct berth_error *reterr)
{
    return trusted_check(fd, path, S_IFREG, max_size, ret_st, reterr);
}

int berth_trusted_dir_check(int fd, const char *path, struct berth_error *reterr)
{
    return trusted_check(fd, path, S_IFDIR, 0, NULL, reterr);
}

int berth_read_fd(int fd, size_t max_bytes, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, cap = 0;
    struct stat st;

    if (fd < 0 || !ret || max_bytes >= SIZE_MAX - 1)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* Start with the file size when it is known, plus one byte to see EOF. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 && (uint64_t)st.st_size <= max_bytes)
        cap = (size_t)st.st_size + 2;
    if (cap < 4096)
        cap = max_bytes + 2 < 4096 ? max_bytes + 2 : 4096;
    buf = malloc(cap);
    if (!buf)
        return berth_error_set(reterr, -ENOMEM, "out of memory");

    for (;;) {
        ssize_t n;

        if (len + 1 >= cap) {
            size_t ncap = cap * 2 > max_bytes + 2 ? max_bytes + 2 : cap * 2;
            char *nb;

            if (ncap <= cap)
                return berth_error_set(reterr, -EFBIG, "more than %zu bytes", max_bytes);
            nb = realloc(buf, ncap);
            if (!nb)
                return berth_error_set(reterr, -ENOMEM, "out of memory");
            buf = nb;
            cap = ncap;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return berth_error_set(reterr, -errno, "read: %s", strerror(errno));
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > max_bytes)
            return berth_error_set(reterr, -EFBIG, "more than %zu bytes", max_bytes);
    }
    buf[len] = '\0';
    *ret = TAKE_PTR(buf);
    if (ret_len)
        *ret_len = len;
    return 0;
}

int berth_read_file_at(int dirfd, const char *path, const struct berth_file_expect *expect, char **ret, size_t *ret_len,
                       struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r, flags;

    if (!path || !expect || !ret || expect->max_size == 0 || expect->max_size >= SIZE_MAX - 1)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* O_NONBLOCK so that a FIFO in the file's place cannot block the open;
     * the type check below refuses it, and blocking reads come back after. */
    if (dirfd == AT_FDCWD && path[0] == '/')
        fd = berth_open_trusted(path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    else
        fd = berth_open_beneath(dirfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    r = berth_file_check(fd, path, expect, NULL, reterr);
    if (r < 0)
        return r;
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return berth_error_set(reterr, -errno, "%s: fcntl: %s", path, strerror(errno));
    r = berth_read_fd(fd, (size_t)expect->max_size, ret, ret_len, reterr);
    if (r < 0)
        berth_error_prefix(reterr, "%s", path);
    return r;
}

bool berth_name_valid(const char *name)
{
    size_t n;

    if (!name)
        return false;
    n = strlen(name);
    return n > 0 && n <= NAME_MAX && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

int berth_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int berth_pwrite_all(int fd, const void *data, size_t len, uint64_t offset)
{
    const char *p = data;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

int berth_pread_all(int fd, void *buf, size_t len, uint64_t offset)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)offset);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -EIO;
        p += n;
        len -= (size_t)n;
        offset += (uint64_t)n;
    }
    return 0;
}

static int rename_into_place(int dirfd, const char *tmp, const char *name, unsigned flags)
{
    if (flags & BERTH_PUBLISH_REPLACE)
        return renameat(dirfd, tmp, dirfd, name) < 0 ? -errno : 0;
    if (renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    /* A filesystem without RENAME_NOREPLACE: link(2) never replaces either. */
    if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
        return -errno;
    if (unlinkat(dirfd, tmp, 0) < 0) {
        /* Never leave a published file with a second name (the temporary):
         * take the new name back; the caller removes the temporary. */
        int r = -errno;
        (void)unlinkat(dirfd, name, 0);
        return r;
    }
    return 0;
}

int berth_publish_begin(int dirfd, const char *name, struct berth_publish *p, struct berth_error *reterr)
{
    uint8_t rnd[8];
    char hex[BERTH_HEX_LEN(sizeof(rnd)) + 1];

    if (!p)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    p->fd = -1;
    if (dirfd < 0 || !berth_name_valid(name))
        return berth_error_set(reterr, -EINVAL, "%s: invalid file name or argument", name ? name : "(null)");
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return berth_error_set(reterr, -EIO, "getrandom failed");
    berth_hex_encode(rnd, sizeof(rnd), hex);
    p->dirfd = dirfd;
    snprintf(p->name, sizeof(p->name), "%s", name);
    /* ".#<name>.<random>", the name cut so that the whole fits NAME_MAX. */
    snprintf(p->tmp, sizeof(p->tmp), ".#%.*s.%s", (int)(NAME_MAX - 2 - 1 - BERTH_HEX_LEN(sizeof(rnd))), name, hex);
    p->fd = openat(dirfd, p->tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (p->fd < 0)
        return berth_error_set(reterr, -errno, "%s: creating temporary file: %s", name, strerror(errno));
    return 0;
}

void berth_publish_abort(struct berth_publish *p)
{
    if (!p || p->fd < 0)
        return;
    close(p->fd);
    p->fd = -1;
    (void)unlinkat(p->dirfd, p->tmp, 0);
}

int berth_publish_commit(struct berth_publish *p, mode_t mode, unsigned flags, struct berth_error *reterr)
{
    int r = 0;

    if (!p || p->fd < 0 || (flags & ~BERTH_PUBLISH_REPLACE) || (mode & ~(mode_t)07777)) {
        berth_publish_abort(p);
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    }
    if (fchmod(p->fd, mode) < 0 || fsync(p->fd) < 0)
        r = -errno;
    if (close(p->fd) < 0 && r == 0)
        r = -errno;
    p->fd = -1;
    if (r == 0)
        r = rename_into_place(p->dirfd, p->tmp, p->name, flags);
    if (r < 0) {
        (void)unlinkat(p->dirfd, p->tmp, 0);
        if (r == -EEXIST)
            return berth_error_set(reterr, r, "%s already exists; refusing to overwrite it", p->name);
        return berth_error_set(reterr, r, "%s: %s", p->name, strerror(-r));
    }
    if (fsync(p->dirfd) < 0)
        return berth_error_set(reterr, -EIO, "%s: published, but syncing its directory failed: %s", p->name,
                               strerror(errno));
    return 0;
}

int berth_publish_at(int dirfd, const char *name, const void *data, size_t len, mode_t mode, unsigned flags,
                     struct berth_error *reterr)
{
    struct berth_publish p;
    int r;

    if (dirfd < 0 || !berth_name_valid(name) || (!data && len > 0) || (flags & ~BERTH_PUBLISH_REPLACE) ||
        (mode & ~(mode_t)07777))
        return berth_error_set(reterr, -EINVAL, "%s: invalid file name or argument", name ? name : "(null)");
    if ((r = berth_publish_begin(dirfd, name, &p, reterr)) < 0)
        return r;
    if ((r = berth_write_all(p.fd, data, len)) < 0) {
        berth_publish_abort(&p);
        return berth_error_set(reterr, r, "%s: %s", name, strerror(-r));
    }
    return berth_publish_commit(&p, mode, flags, reterr);
}

int berth_tmpfile_open(int dirfd, mode_t mode, bool allow_named, struct berth_tmpfile *ret, struct berth_error *reterr)
{
    uint8_t rnd[8];
    int fd;

    if (dirfd < 0 || !ret || (mode & ~(mode_t)07777))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, mode);
    if (fd >= 0) {
        if (fchmod(fd, mode) < 0) {
            int e = errno;
            close(fd);
            return berth_error_set(reterr, -e, "temporary file: chmod: %s", strerror(e));
        }
        *ret = (struct berth_tmpfile){.fd = fd, .dirfd = dirfd, .name = ""};
        return 0;
    }
    /* EISDIR: a kernel that knows nothing of O_TMPFILE took it for O_DIRECTORY. */
    if (errno != EOPNOTSUPP && errno != EISDIR)
        return berth_error_set(reterr, -errno, "creating a temporary file: %s", strerror(errno));
    if (!allow_named)
        return berth_error_set(reterr, -EOPNOTSUPP, "the filesystem has no unnamed temporary files (O_TMPFILE)");
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return berth_error_set(reterr, -EIO, "getrandom failed");
    *ret = (struct berth_tmpfile){.fd = -1, .dirfd = dirfd};
    memcpy(ret->name, BERTH_TMPFILE_PREFIX, sizeof(BERTH_TMPFILE_PREFIX) - 1);
    berth_hex_encode(rnd, sizeof(rnd), ret->name + sizeof(BERTH_TMPFILE_PREFIX) - 1);
    fd = openat(dirfd, ret->name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 || fchmod(fd, mode) < 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            (void)unlinkat(dirfd, ret->name, 0);
        }
        ret->name[0] = '\0';
        return berth_error_set(reterr, -e, "creating a temporary file: %s", strerror(e));
    }
    ret->fd = fd;
    return 0;
}

/* Whether @name in @dirfd is the inode of @fd now. */
static int same_inode(int fd, int dirfd, const char *name)
{
    struct stat a, b;

    if (fstat(fd, &a) < 0 || fstatat(dirfd, name, &b, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino ? 0 : -EAGAIN;
}

int berth_link_unnamed(int fd, int dirfd, const char *name, struct berth_error *reterr)
{
    char proc[64];
    struct stat st;
    int r;

    if (fd < 0 || dirfd < 0 || !berth_name_valid(name))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "%s: fstat: %s", name, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_nlink != 0)
        return berth_error_set(reterr, -EINVAL, "%s: the file to publish is not an unnamed regular file", name);
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    if (linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0) {
        r = -errno;
        if (r == -EEXIST)
            return berth_error_set(reterr, r, "%s already exists; refusing to overwrite it", name);
        return berth_error_set(reterr, r, "%s: linking the new file: %s", name, strerror(-r));
    }
    /* The name must be the file we were given (not whatever /proc resolved). */
    r = same_inode(fd, dirfd, name);
    if (r < 0)
        return berth_error_set(reterr, r, "%s was not published as written", name);
    if (fsync(dirfd) < 0)
        return berth_error_set(reterr, -EIO, "%s: published, but syncing its directory failed: %s", name,
                               strerror(errno));
    return 0;
}

int berth_tmpfile_publish(struct berth_tmpfile *t, const char *name, struct berth_error *reterr)
{
    int r;

    if (!t || t->fd < 0 || !berth_name_valid(name))
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!t->name[0])
        return berth_link_unnamed(t->fd, t->dirfd, name, reterr);
    r = rename_into_place(t->dirfd, t->name, name, 0);
    if (r < 0) {
        if (r == -EEXIST)
            return berth_error_set(reterr, r, "%s already exists; refusing to overwrite it", name);
        return berth_error_set(reterr, r, "%s: %s", name, strerror(-r));
    }
    t->name[0] = '\0'; /* published: no temporary name to remove any more */
    if (fsync(t->dirfd) < 0)
        return berth_error_set(reterr, -EIO, "%s: published, but syncing its directory failed: %s", name,
                               strerror(errno));
    return 0;
}

void berth_tmpfile_discard(struct berth_tmpfile *t)
{
    if (!t)
        return;
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
    if (t->name[0])
        (void)unlinkat(t->dirfd, t->name, 0);
    t->name[0] = '\0';
}

int berth_publish_path(const char *path, const void *data, size_t len, mode_t mode, unsigned flags,
                       struct berth_error *reterr)
{
    _cleanup_free_ char *dir = NULL;
    _cleanup_close_ int dfd = -1;
    const char *slash, *base;
    int r;

    if (!path || path[0] != '/')
        return berth_error_set(reterr, -EINVAL, "%s: an absolute path is required", path ? path : "(null)");
    slash = strrchr(path, '/');
    base = slash + 1;
    if (!berth_name_valid(base))
        return berth_error_set(reterr, -EINVAL, "%s: does not end in a file name", path);
    dir = strndup(path, (size_t)(slash - path) + 1);
    if (!dir)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    dfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (dfd < 0)
        return dfd;
    r = berth_publish_at(dfd, base, data, len, mode, flags, reterr);
    if (r == -EEXIST)
        return berth_error_set(reterr, r, "%s already exists; refusing to overwrite it", path);
    if (r < 0)
        berth_error_prefix(reterr, "%s", dir);
    return r;
}

int berth_path_absolute(const char *path, char **ret)
{
    _cleanup_free_ char *cwd = NULL;
    char *out;

    if (!path || !*path || !ret)
        return -EINVAL;
    if (path[0] == '/') {
        out = strdup(path);
        if (!out)
            return -ENOMEM;
        *ret = out;
        return 0;
    }
    cwd = getcwd(NULL, 0);
    if (!cwd)
        return -errno;
    if (asprintf(&out, "%s%s%s", cwd, streq(cwd, "/") ? "" : "/", path) < 0)
        return -ENOMEM;
    *ret = out;
    return 0;
}
