/* SPDX-License-Identifier: MIT */
/* inputs-stage.c -- a job's inputs staged for its runtime; see inputs-stage.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "fsutil.h"
#include "inputs-stage.h"
#include "macro.h"
#include "tree.h"

#define STAGED_MARKER "staged"

/* Stage input @i (@in) as the file "<i>" in @dirfd, verified. */
static int stage_one(int dirfd, size_t i, const json_t *in, berth_input_fetch_fn fetch, void *userdata,
                     struct berth_error *reterr)
{
    const json_t *ref = json_object_get(in, "ref");
    const char *digest = json_string_value(json_object_get(ref, "digest"));
    json_int_t size = json_integer_value(json_object_get(ref, "size"));
    struct berth_publish p;
    char name[32];
    int r;

    if (!digest || size < 0)
        return berth_error_set(reterr, -EBADMSG, "input %zu: the job is damaged", i);
    snprintf(name, sizeof(name), "%zu", i);
    if ((r = berth_publish_begin(dirfd, name, &p, reterr)) < 0)
        return r;
    r = fetch(userdata, i, digest, (uint64_t)size, p.fd, reterr);
    if (r == -EFBIG)
        r = berth_error_set(reterr, -EBADMSG, "input %zu (%s): more than its %lld bytes", i, digest, (long long)size);
    if (r == 0 && fdatasync(p.fd) < 0)
        r = berth_error_set(reterr, -errno, "input %zu: syncing it: %m", i);
    /* Read back what reached the disk: exactly its size and its digest. */
    if (r == 0 && (r = berth_digest_fd_matches(p.fd, (uint64_t)size, digest, reterr)) < 0)
        berth_error_prefix(reterr, "input %zu staged", i);
    if (r < 0) {
        berth_publish_abort(&p);
        return r;
    }
    return berth_publish_commit(&p, 0444, 0, reterr);
}

int berth_inputs_stage(const char *directory, const char *run_id, const json_t *inputs, berth_input_fetch_fn fetch,
                       void *userdata, char **ret_dir, int64_t *ret_bytes, struct berth_error *reterr)
{
    _cleanup_close_ int top = -1, dir = -1;
    _cleanup_free_ char *path = NULL;
    const json_t *in;
    int64_t bytes = 0;
    size_t i;
    int r;

    *ret_dir = NULL;
    if (ret_bytes)
        *ret_bytes = 0;
    if (asprintf(&path, "%s/%s", directory, run_id) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    top = berth_open_trusted(directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (top < 0)
        return top;
    if (mkdirat(top, run_id, 0700) < 0 && errno != EEXIST)
        return berth_error_set(reterr, -errno, "cannot create %s: %m", path);
    dir = openat(top, run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return berth_error_set(reterr, -errno, "cannot open %s: %m", path);
    if (faccessat(dir, STAGED_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
        *ret_dir = TAKE_PTR(path);
        return 0;
    }
    /* Cut short before: nothing of it is trusted. */
    if ((r = berth_tree_clear(dir, reterr)) < 0)
        return r;
    json_array_foreach(inputs, i, in)
    {
        if ((r = stage_one(dir, i, in, fetch, userdata, reterr)) < 0)
            return r;
        bytes += json_integer_value(json_object_get(json_object_get(in, "ref"), "size"));
    }
    if ((r = berth_publish_at(dir, STAGED_MARKER, "", 0, 0600, 0, reterr)) < 0)
        return r;
    if (ret_bytes)
        *ret_bytes = bytes;
    *ret_dir = TAKE_PTR(path);
    return 0;
}

int berth_inputs_unstage(const char *directory, const char *run_id, struct berth_error *reterr)
{
    _cleanup_close_ int top = -1, fd = -1;
    int r;

    top = berth_open_trusted(directory, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (top < 0)
        return top;
    fd = openat(top, run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "cannot open %s/%s: %m", directory, run_id);
    if ((r = berth_tree_clear(fd, reterr)) < 0)
        return r;
    if (unlinkat(top, run_id, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove %s/%s: %m", directory, run_id);
    return 0;
}
