/* SPDX-License-Identifier: MIT */
/*
 * fuzz-outputs.c -- libFuzzer target for the reader of declared outputs
 * (plugins/runtime-oci/outcheck.c).
 *
 * The input is a list of 3-byte operations that build a tree in a fresh
 * temporary directory, as a hostile job could leave its outputs tmpfs:
 *   op % 6 == 0  mkdir PATH(a)
 *            1   a regular file PATH(a) of b * 37 bytes
 *            2   a symlink PATH(a) to one of: a sibling, "../sentinel",
 *                the sentinel's absolute path, PATH(b), "."
 *            3   a hard link PATH(a) to PATH(b), or to the sentinel
 *            4   a FIFO PATH(a)
 *            5   check PATH(a) with max_bytes b * 50
 * where PATH(x) is one to three components of "a", "b", "c" chosen by x.
 * A sentinel file lies beside the root.  Each check is compared with an
 * independent oracle that walks the path with lstat(2) component by
 * component: the verdict must be the oracle's, a valid output's size must
 * be within max_bytes and its digest that of the bytes the oracle reads,
 * and the descriptor read-only at offset 0.  Afterwards the sentinel keeps
 * its content.  Any difference aborts, which libFuzzer reports.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "outcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SENTINEL "sentinel-content"

static const char *const names[] = {"a", "b", "c"};

/* PATH(x) relative to the root. */
static void path_of(uint8_t x, char *out, size_t len)
{
    unsigned depth = 1 + x % 3, v = x / 3;

    out[0] = '\0';
    for (unsigned i = 0; i < depth; i++, v /= 3) {
        if (i)
            strncat(out, "/", len - strlen(out) - 1);
        strncat(out, names[v % 3], len - strlen(out) - 1);
    }
}

/* 1 when a proper prefix of @rel below @root is a symlink or missing (creation would follow or fail). */
static int parents_unsafe(const char *root, const char *rel)
{
    char full[512];
    struct stat st;
    const char *s;

    for (s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
        snprintf(full, sizeof(full), "%s/%.*s", root, (int)(s - rel), rel);
        if (lstat(full, &st) < 0 || !S_ISDIR(st.st_mode))
            return 1;
    }
    return 0;
}

/* The oracle: walk @rel with lstat(2), never following anything. */
static enum oci_output_problem oracle(const char *root, const char *rel, uint64_t max, char digest[BERTH_DIGEST_BUFSZ],
                                      uint64_t *ret_size)
{
    char full[512];
    struct stat st;
    const char *s = rel;

    for (;;) {
        const char *slash = strchr(s, '/');
        snprintf(full, sizeof(full), "%s/%.*s", root, slash ? (int)(slash - rel) : (int)strlen(rel), rel);
        if (lstat(full, &st) < 0)
            return OCI_OUTPUT_MISSING;
        if (S_ISLNK(st.st_mode))
            return OCI_OUTPUT_SYMLINK;
        if (!slash)
            break;
        if (!S_ISDIR(st.st_mode))
            return OCI_OUTPUT_MISSING;
        s = slash + 1;
    }
    if (!S_ISREG(st.st_mode))
        return OCI_OUTPUT_NOT_REGULAR;
    if (st.st_nlink != 1)
        return OCI_OUTPUT_HARD_LINK;
    if ((uint64_t)st.st_size > max)
        return OCI_OUTPUT_TOO_LARGE;
    {
        int fd = open(full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || berth_digest_fd(fd, digest) < 0)
            abort();
        close(fd);
    }
    *ret_size = (uint64_t)st.st_size;
    return OCI_OUTPUT_OK;
}

static void check(int rootfd, const char *root, const char *rel, uint64_t max)
{
    char want[BERTH_DIGEST_BUFSZ] = "", got[BERTH_DIGEST_BUFSZ] = "";
    uint64_t want_size = 0, got_size = UINT64_MAX;
    enum oci_output_problem expected = oracle(root, rel, max, want, &want_size), p = OCI_OUTPUT_OK;
    int fd = -1, r = oci_output_open(rootfd, rel, max, &fd, &got_size, &p);

    if (p != expected) {
        fprintf(stderr, "%s (max %llu): reader says %d, the lstat walk %d\n", rel, (unsigned long long)max, p,
                expected);
        abort();
    }
    if ((r == 0) != (p == OCI_OUTPUT_OK))
        abort();
    if (r < 0) {
        if (fd != -1 || got_size != UINT64_MAX) /* nothing written on failure */
            abort();
        return;
    }
    if (got_size > max || got_size != want_size || lseek(fd, 0, SEEK_CUR) != 0 ||
        (fcntl(fd, F_GETFL) & O_ACCMODE) != O_RDONLY)
        abort();
    if (oci_output_digest(fd, got_size, got) < 0 || strcmp(got, want) != 0)
        abort();
    close(fd);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path) < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char top[] = "/tmp/berth-fuzz-outputs-XXXXXX", root[128], sentinel[128], buf[64];
    uint8_t content[255 * 37];
    int rootfd, fd, checks = 0;

    if (size > 3 * 64)
        return 0;
    if (!mkdtemp(top))
        abort();
    snprintf(root, sizeof(root), "%s/root", top);
    snprintf(sentinel, sizeof(sentinel), "%s/sentinel", top);
    if (mkdir(root, 0700) < 0)
        abort();
    fd = open(sentinel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || write(fd, SENTINEL, strlen(SENTINEL)) != (ssize_t)strlen(SENTINEL))
        abort();
    close(fd);
    rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        abort();

    for (size_t i = 0; i + 3 <= size; i += 3) {
        uint8_t op = data[i] % 6, a = data[i + 1], b = data[i + 2];
        char rel[32], other[32], full[512];

        path_of(a, rel, sizeof(rel));
        path_of(b, other, sizeof(other));
        snprintf(full, sizeof(full), "%s/%s", root, rel);
        if (op == 5) {
            check(rootfd, root, rel, (uint64_t)b * 50);
            checks++;
            continue;
        }
        if (parents_unsafe(root, rel))
            continue;
        switch (op) {
        case 0: (void)mkdir(full, 0755); break;
        case 1:
            fd = open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
            if (fd >= 0) {
                for (size_t k = 0; k < (size_t)b * 37; k++)
                    content[k] = (uint8_t)(k * 31 + a);
                if (write(fd, content, (size_t)b * 37) < 0)
                    abort();
                close(fd);
            }
            break;
        case 2: {
            const char *targets[] = {"a", "../sentinel", sentinel, other, "."};
            (void)symlink(targets[b % 5], full);
            break;
        }
        case 3: {
            char src[512];
            if (b % 5 == 0)
                snprintf(src, sizeof(src), "%s", sentinel);
            else if (parents_unsafe(root, other))
                break;
            else
                snprintf(src, sizeof(src), "%s/%s", root, other);
            (void)linkat(AT_FDCWD, src, AT_FDCWD, full, 0); /* never follows a link at src */
            break;
        }
        case 4: (void)mkfifo(full, 0644); break;
        }
    }
    if (!checks)
        for (uint8_t x = 0; x < 12; x++) {
            char rel[32];
            path_of(x, rel, sizeof(rel));
            check(rootfd, root, rel, 4096);
        }

    /* The reader never wrote anything, least of all outside the root. */
    fd = open(sentinel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    memset(buf, 0, sizeof(buf));
    if (fd < 0 || read(fd, buf, sizeof(buf)) != (ssize_t)strlen(SENTINEL) || strcmp(buf, SENTINEL) != 0)
        abort();
    close(fd);
    close(rootfd);
    if (nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0)
        abort();
    return 0;
}
