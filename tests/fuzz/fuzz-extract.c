/* SPDX-License-Identifier: MIT */
/*
 * fuzz-extract.c -- libFuzzer target for the layer extractor
 * (src/image/extract.c, tarwalk.c, rootfs.c, tree.c).
 *
 * The first input byte chooses the compression (even: tar, odd: gzip); the
 * rest is the layer blob, applied to a fresh root in a fresh temporary
 * directory with small budgets.  For plain tar the DiffID given is the
 * blob's own digest, so accepted layers reach the end of the extractor.
 * Whatever the outcome, it checks the properties the extractor promises:
 *   - nothing is created beside the root, and a sentinel directory next to
 *     it keeps exactly its one file with its content;
 *   - a refusal carries a message;
 *   - berth_tree_clear() empties the root without error.
 * A violated property aborts, which libFuzzer reports as a crash.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "digest.h"
#include "extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Entries of @dirfd other than "." and ".."; -1 on error. */
static int count_entries(int dirfd, const char *only)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), n = 0;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;

    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (only && strcmp(de->d_name, "root") != 0 && strcmp(de->d_name, "sentinel") != 0)
            n += 1000; /* a stray entry beside the root */
        n++;
    }
    closedir(d);
    return n;
}

static void check_sentinel(int topfd)
{
    char buf[16] = {0};
    int sfd, kfd;

    if (count_entries(topfd, "root/sentinel") != 2)
        abort(); /* something was created beside the root */
    sfd = openat(topfd, "sentinel", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0 || count_entries(sfd, NULL) != 1)
        abort();
    kfd = openat(sfd, "keep", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (kfd < 0 || read(kfd, buf, sizeof(buf)) != 8 || memcmp(buf, "sentinel", 8) != 0)
        abort();
    close(kfd);
    close(sfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct berth_stage_limits limits;
    struct berth_extract *x = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    uint8_t diff[BERTH_SHA256_LEN] = {0};
    char top[] = "/tmp/berth-fuzz-extract-XXXXXX";
    int topfd, rootfd, fd, kfd, r;

    if (size < 1)
        return 0;
    if (!mkdtemp(top))
        abort();
    topfd = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (topfd < 0 || mkdirat(topfd, "root", 0755) < 0 || mkdirat(topfd, "sentinel", 0755) < 0)
        abort();
    kfd = openat(topfd, "sentinel/keep", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (kfd < 0 || write(kfd, "sentinel", 8) != 8)
        abort();
    close(kfd);
    rootfd = openat(topfd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fd = memfd_create("layer", MFD_CLOEXEC);
    if (rootfd < 0 || fd < 0 || (size > 1 && write(fd, data + 1, size - 1) != (ssize_t)(size - 1)) ||
        lseek(fd, 0, SEEK_SET) != 0)
        abort();
    if (berth_sha256(data + 1, size - 1, diff) < 0)
        abort();

    berth_stage_limits_default(&limits);
    limits.expanded_bytes = 4u << 20;
    limits.entries = 2000;
    if (berth_extract_new(rootfd, &limits, berth_deadline_ns(CLOCK_MONOTONIC, 5 * BERTH_NS_PER_SEC), &x) < 0)
        abort();
    r = berth_extract_layer(x, fd, (data[0] & 1) ? BERTH_LAYER_GZIP : BERTH_LAYER_TAR, diff, &err);
    if (r < 0 && (err.code != r || err.message[0] == '\0'))
        abort(); /* a refusal without its detail */
    berth_extract_free(x);
    close(fd);

    check_sentinel(topfd);
    if (berth_tree_clear(rootfd, &err) != 0 || count_entries(rootfd, NULL) != 0)
        abort();
    close(rootfd);
    if (unlinkat(topfd, "sentinel/keep", 0) < 0 || unlinkat(topfd, "sentinel", AT_REMOVEDIR) < 0 ||
        unlinkat(topfd, "root", AT_REMOVEDIR) < 0)
        abort();
    close(topfd);
    if (rmdir(top) < 0)
        abort();
    return 0;
}
