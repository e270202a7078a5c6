/* SPDX-License-Identifier: MIT */
/* ocicfg.c -- a runtime-oci backend's configuration and runtime pin; see ocicfg.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "canon.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "ocicfg.h"
#include "sign.h"

#define WHAT "runtime-oci config"
#define DEFAULT_START_TIMEOUT_NS (60LL * 1000000000LL)

static const char *const members[] = {"broker_public_key",
                                      "cgroup_limits",
                                      "create_args",
                                      "gid",
                                      "global_args",
                                      "isolation",
                                      "pids_ceiling",
                                      "runtime",
                                      "sealed_copy",
                                      "shim",
                                      "slot_init",
                                      "start_timeout_ns",
                                      "state_directory",
                                      "uid",
                                      "unmount",
                                      NULL};
static const char *const runtime_members[] = {"mode", "path", "sha256", "size", NULL};

/* An absolute path without ".", ".." or empty components and without a trailing "/". */
static int absolute(const char *path, const char *name, struct berth_error *reterr)
{
    const char *c;

    if (!path || path[0] != '/' || strlen(path) >= 4096 || streq(path, "/"))
        goto bad;
    for (c = path; *c; c = strchr(c + 1, '/') ? strchr(c + 1, '/') : c + strlen(c)) {
        const char *next = strchr(c + 1, '/');
        size_t n = next ? (size_t)(next - c - 1) : strlen(c + 1);
        if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
            goto bad;
    }
    return 0;
bad:
    return berth_error_set(reterr, -EBADMSG,
                           WHAT ": %s must be an absolute, normalised path (no \".\", \"..\" or "
                                "empty component)",
                           name);
}

/* Whether the flag @a sets --root in Go's flag syntax (-root, --root, with or without =). */
static bool sets_root(const char *a)
{
    while (*a == '-')
        a++;
    return streq(a, "root") || strncmp(a, "root=", 5) == 0;
}

static int parse_runtime(const json_t *rt, struct oci_config *c, struct berth_error *reterr)
{
    const char *sha = NULL, *mode = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    char *end;
    long m;
    int r;

    if ((r = berth_json_only_members(rt, WHAT ".runtime", runtime_members, reterr)) < 0 ||
        (r = berth_json_string_member(rt, WHAT ".runtime", "path", true, &c->pin.path, reterr)) < 0 ||
        (r = berth_json_string_member(rt, WHAT ".runtime", "sha256", true, &sha, reterr)) < 0 ||
        (r = berth_json_string_member(rt, WHAT ".runtime", "mode", true, &mode, reterr)) < 0 ||
        (r = berth_json_int_member(rt, WHAT ".runtime", "size", true, 1, INT64_MAX, &c->pin.size, reterr)) < 0)
        return r;
    if ((r = absolute(c->pin.path, "runtime.path", reterr)) < 0)
        return r;
    if (berth_digest_parse(sha, raw) < 0)
        return berth_error_set(reterr, -EBADMSG, WHAT ": runtime.sha256 must be sha256:<64 lowercase hex>");
    snprintf(c->pin.sha256, sizeof(c->pin.sha256), "%s", sha);
    errno = 0;
    m = strtol(mode, &end, 8);
    if (errno || *end || strlen(mode) != 4 || mode[0] != '0' || m < 0 || m > 0777)
        return berth_error_set(reterr, -EBADMSG, WHAT ": runtime.mode must be four octal digits such as \"0755\"");
    if ((mode_t)m & BERTH_UNTRUSTED_MODE) /* berth_trusted_file_check() would refuse the file */
        return berth_error_set(reterr, -EBADMSG,
                               WHAT ": runtime.mode %s lets group or others write the runtime; refused", mode);
    c->pin.mode = (uint32_t)m;
    return 0;
}

/* "broker_public_key": the key receipts must verify with (binding.h), optional. */
static int parse_broker_key(struct oci_config *c, struct berth_error *reterr)
{
    const char *b64 = NULL;
    int r;

    if ((r = berth_json_string_member(c->doc, WHAT, "broker_public_key", false, &b64, reterr)) < 0)
        return r;
    if (!b64)
        return 0;
    if (berth_public_key_from_b64url(b64, c->broker_key) < 0)
        return berth_error_set(reterr, -EBADMSG,
                               WHAT ": broker_public_key must be 43 base64url characters (berthd's receipt key)");
    c->broker_key_b64 = b64;
    c->has_broker_key = true;
    return 0;
}

int oci_config_parse(const char *json, size_t len, const char *default_shim, struct oci_config *ret,
                     struct berth_error *reterr)
{
    struct oci_config c = {0};
    const json_t *v, *args;
    int64_t uid = 65534, gid = 65534;
    size_t i;
    int r;

    c.start_timeout_ns = DEFAULT_START_TIMEOUT_NS;
    if ((r = berth_json_parse(json, len, 64 * 1024, &c.doc, reterr)) < 0)
        return r;
    if ((r = berth_json_only_members(c.doc, WHAT, members, reterr)) < 0)
        goto fail;
    v = json_object_get(c.doc, "runtime");
    if (!json_is_object(v)) {
        r = berth_error_set(reterr, -EBADMSG,
                            WHAT ": runtime must be {\"path\", \"sha256\", \"size\", \"mode\"} (the pinned binary)");
        goto fail;
    }
    if ((r = parse_runtime(v, &c, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, WHAT, "isolation", true, &c.isolation, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, WHAT, "state_directory", true, &c.state_directory, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, WHAT, "shim", false, &c.shim, reterr)) < 0 ||
        (r = berth_json_string_member(c.doc, WHAT, "slot_init", false, &c.slot_init, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, WHAT, "uid", false, 1, 0xfffffffe, &uid, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, WHAT, "gid", false, 1, 0xfffffffe, &gid, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, WHAT, "pids_ceiling", false, 1, 1 << 22, &c.pids_ceiling, reterr)) < 0 ||
        (r = berth_json_int_member(c.doc, WHAT, "start_timeout_ns", false, 1000000, 3600LL * 1000000000LL,
                                   &c.start_timeout_ns, reterr)) < 0 ||
        (r = parse_broker_key(&c, reterr)) < 0)
        goto fail;
    if (strcmp(c.isolation, "gvisor") != 0 && strcmp(c.isolation, "native") != 0) {
        r = berth_error_set(reterr, -EBADMSG, WHAT ": isolation must be \"gvisor\" or \"native\"");
        goto fail;
    }
    if (!c.shim)
        c.shim = default_shim;
    if ((r = absolute(c.state_directory, "state_directory", reterr)) < 0 || (r = absolute(c.shim, "shim", reterr)) < 0 ||
        (c.slot_init && (r = absolute(c.slot_init, "slot_init", reterr)) < 0))
        goto fail;
    c.uid = (uint32_t)uid;
    c.gid = (uint32_t)gid;
    args = json_object_get(c.doc, "global_args");
    if (args && (!json_is_array(args) || json_array_size(args) > OCI_MAX_GLOBAL_ARGS)) {
        r = berth_error_set(reterr, -EBADMSG, WHAT ": global_args must be at most %d strings", OCI_MAX_GLOBAL_ARGS);
        goto fail;
    }
    json_array_foreach(args, i, v)
    {
        const char *a = json_string_value(v);
        if (!a || a[0] != '-' || sets_root(a)) {
            r = berth_error_set(reterr, -EBADMSG,
                                WHAT ": global_args[%zu] must be a flag (\"--...\"); --root is set by the plugin", i);
            goto fail;
        }
        c.global_args[c.n_global_args++] = a;
    }
    args = json_object_get(c.doc, "create_args");
    if (args && (!json_is_array(args) || json_array_size(args) > OCI_MAX_CREATE_ARGS)) {
        r = berth_error_set(reterr, -EBADMSG, WHAT ": create_args must be at most %d strings", OCI_MAX_CREATE_ARGS);
        goto fail;
    }
    json_array_foreach(args, i, v)
    {
        const char *a = json_string_value(v);
        /* Flags only: the bundle, the pid file, detaching and the id are the plugin's. */
        if (!a || a[0] != '-' || strchr(a, '\n') || strstr(a, "bundle") || strstr(a, "pid-file") ||
            strstr(a, "console-socket") || strstr(a, "detach")) {
            r = berth_error_set(reterr, -EBADMSG,
                                WHAT ": create_args[%zu] must be a flag (\"--...\") other than --bundle, --pid-file, "
                                     "--console-socket and --detach, which the shim sets",
                                i);
            goto fail;
        }
        c.create_args[c.n_create_args++] = a;
    }
    {
        const char *limits = NULL;
        if ((r = berth_json_string_member(c.doc, WHAT, "cgroup_limits", false, &limits, reterr)) < 0)
            goto fail;
        if (limits && !streq(limits, "required") && !streq(limits, "when_delegated")) {
            r = berth_error_set(reterr, -EBADMSG, WHAT ": cgroup_limits must be \"required\" or \"when_delegated\"");
            goto fail;
        }
        c.cgroup_limits_required = !limits || streq(limits, "required");
    }
    v = json_object_get(c.doc, "sealed_copy");
    if (v && !json_is_boolean(v)) {
        r = berth_error_set(reterr, -EBADMSG, WHAT ": sealed_copy must be true or false");
        goto fail;
    }
    c.sealed_copy = !v || json_is_true(v);
    c.unmount = json_object_get(c.doc, "unmount");
    if (c.unmount && (!json_is_array(c.unmount) || json_array_size(c.unmount) > 8)) {
        r = berth_error_set(reterr, -EBADMSG, WHAT ": unmount must be at most 8 absolute paths");
        goto fail;
    }
    json_array_foreach(c.unmount, i, v)
    {
        if ((r = absolute(json_string_value(v), "unmount[]", reterr)) < 0)
            goto fail;
    }
    *ret = c;
    return 0;
fail:
    json_decref(c.doc);
    return r;
}

void oci_config_clear(struct oci_config *c)
{
    json_decref(c->doc);
    memset(c, 0, sizeof(*c));
}

bool oci_pin_identity_matches(const struct oci_pin_cache *cache, const struct stat *st)
{
    return cache->valid && cache->dev == st->st_dev && cache->ino == st->st_ino && cache->size == st->st_size &&
           cache->mtime_ns == (int64_t)st->st_mtim.tv_sec * 1000000000LL + st->st_mtim.tv_nsec &&
           cache->ctime_ns == (int64_t)st->st_ctim.tv_sec * 1000000000LL + st->st_ctim.tv_nsec;
}

int oci_pin_verify_fd(int fd, const char *path, const struct oci_pin *pin, struct oci_pin_cache *cache,
                      struct berth_error *reterr)
{
    char digest[BERTH_DIGEST_BUFSZ];
    struct stat st;
    int64_t mtime, ctime;
    int r;

    if ((r = berth_trusted_file_check(fd, path, 0, &st, reterr)) < 0) {
        /* An untrusted runtime is refused like one that differs from its pin
         * (a job's start fails with backend_refused); only a file replaced
         * while it was checked is worth another try. */
        if (r == -EBADFD || r == -EMLINK || r == -ELOOP) {
            r = -EPERM;
            if (reterr)
                reterr->code = r;
        }
        berth_error_prefix(reterr, "runtime");
        return r;
    }
    if ((uint32_t)(st.st_mode & 07777) != pin->mode)
        return berth_error_set(reterr, -EPERM, "runtime %s has mode %04o; its pin says %04o", path,
                               (unsigned)(st.st_mode & 07777), (unsigned)pin->mode);
    if (st.st_size != pin->size)
        return berth_error_set(reterr, -EPERM, "runtime %s is %lld bytes; its pin says %lld", path,
                               (long long)st.st_size, (long long)pin->size);
    mtime = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    ctime = (int64_t)st.st_ctim.tv_sec * 1000000000LL + st.st_ctim.tv_nsec;
    /* The same file as last time gets the same digest without being read
     * again (a broken pin is reported on every pass; it must stay cheap). */
    if (cache && oci_pin_identity_matches(cache, &st)) {
        memcpy(digest, cache->digest, sizeof(digest));
    } else {
        if ((r = berth_digest_fd(fd, digest)) < 0)
            return berth_error_set(reterr, r, "runtime %s: cannot read it: %s", path, strerror(-r));
        if (cache) {
            *cache = (struct oci_pin_cache){.dev = st.st_dev,
                                            .ino = st.st_ino,
                                            .size = st.st_size,
                                            .mtime_ns = mtime,
                                            .ctime_ns = ctime,
                                            .valid = true};
            memcpy(cache->digest, digest, sizeof(digest));
        }
    }
    if (strcmp(digest, pin->sha256) != 0)
        return berth_error_set(reterr, -EPERM, "runtime %s has digest %s; its pin says %s", path, digest, pin->sha256);
    return 0;
}

/* memfd_create(2)'s flag of Linux 6.3 (include/uapi/linux/memfd.h), which
 * older headers lack: an executable memfd, also where vm.memfd_noexec = 1
 * makes memfds non-executable by default (with 2, it is refused: EACCES). */
#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

int oci_pin_sealed_copy(int fd, const char *path, const struct oci_pin *pin, struct berth_error *reterr)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    uint8_t raw[BERTH_SHA256_LEN];
    char digest[BERTH_DIGEST_BUFSZ];
    _cleanup_close_ int memfd = -1;
    uint64_t len = 0;
    int r;

    if (pin->size > OCI_SEALED_RUNTIME_MAX)
        return berth_error_set(reterr, -EFBIG, "the runtime is %lld bytes, more than the %d a sealed copy may take",
                               (long long)pin->size, OCI_SEALED_RUNTIME_MAX);
    if (!*name || strlen(name) > OCI_SEALED_NAME_MAX)
        name = "runtime";
    /* MFD_EXEC is refused as unknown (EINVAL) before Linux 6.3, where every memfd may be executed. */
    memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (memfd < 0 && errno == EINVAL)
        memfd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd < 0)
        return berth_error_set(reterr, -errno, "cannot make a sealed copy of the runtime: memfd_create: %m");
    /* No write bit: only its owner (berthd's or the shim's user) or root
     * can open it for writing again through /proc/PID/fd, and only after
     * changing its mode.  A writer, though the seals stop its writes, makes
     * every exec of it fail with ETXTBSY, which the shim then answers by
     * running the checked file (shim.c, run_runtime()).  A memfd that may
     * never be executed (F_SEAL_EXEC) refuses the mode. */
    if (fchmod(memfd, 0555) < 0)
        return berth_error_set(reterr, errno == EPERM ? -ENOEXEC : -errno,
                               "cannot make a sealed copy of the runtime: fchmod: %m");
    /* The copy is hashed as it is made: it holds the pinned bytes or is not used. */
    if ((r = berth_sha256_copy(fd, 0, memfd, (uint64_t)pin->size, raw, &len, reterr)) < 0) {
        berth_error_prefix(reterr, "cannot make a sealed copy of the runtime");
        return r;
    }
    if (len != (uint64_t)pin->size)
        return berth_error_set(reterr, -EPERM, "runtime %s changed while it was copied: %s bytes; its pin says %lld",
                               path, len > (uint64_t)pin->size ? "more" : "fewer", (long long)pin->size);
    berth_digest_format(raw, digest);
    if (strcmp(digest, pin->sha256) != 0)
        return berth_error_set(reterr, -EPERM, "runtime %s changed while it was copied: digest %s; its pin says %s",
                               path, digest, pin->sha256);
    if (fcntl(memfd, F_ADD_SEALS, OCI_SEALED_RUNTIME_SEALS) < 0)
        return berth_error_set(reterr, -errno, "cannot seal the copy of the runtime: %m");
    if ((r = oci_pin_sealed_check(memfd, pin, reterr)) < 0)
        return r;
    return TAKE_FD(memfd);
}

int oci_pin_sealed_check(int fd, const struct oci_pin *pin, struct berth_error *reterr)
{
    struct stat st;
    int seals;

    if (fstat(fd, &st) < 0)
        return berth_error_set(reterr, -errno, "the sealed copy of the runtime: fstat: %m");
    if (!S_ISREG(st.st_mode))
        return berth_error_set(reterr, -ENOEXEC, "the copy of the runtime is not a regular file");
    seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0)
        return berth_error_set(reterr, -ENOEXEC, "the copy of the runtime is not sealed (F_GET_SEALS: %m)");
    /* Exactly these seals (a memfd made non-executable has F_SEAL_EXEC
     * too, and crun would not take it for its copy), executable, and
     * writable by nobody (oci_pin_sealed_copy()). */
    if (seals != OCI_SEALED_RUNTIME_SEALS || !(st.st_mode & 0111) || (st.st_mode & 0222))
        return berth_error_set(reterr, -ENOEXEC,
                               "the sealed copy of the runtime cannot be executed (seals %#x, mode %04o; it needs "
                               "seals %#x, an execute bit and no write bit)",
                               (unsigned)seals, (unsigned)(st.st_mode & 07777), (unsigned)OCI_SEALED_RUNTIME_SEALS);
    if (st.st_size != pin->size)
        return berth_error_set(reterr, -EPERM, "the sealed copy of the runtime is %lld bytes; its pin says %lld",
                               (long long)st.st_size, (long long)pin->size);
    return 0;
}

int oci_pin_check(struct oci_config *c, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;

    fd = berth_open_trusted(c->pin.path, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (fd < 0)
        return fd;
    return oci_pin_verify_fd(fd, c->pin.path, &c->pin, &c->pin_cache, reterr);
}

json_t *oci_pin_identity_json(const struct oci_pin_cache *cache)
{
    /* Decimal strings (berth_json_ns()): canonical JSON keeps integers
     * within 2^53, and times in nanoseconds and inode numbers are larger.  A
     * value that is negative or beyond INT64_MAX (never seen) sends no
     * identity, and the shim hashes the runtime itself. */
    if (!cache->valid || (uint64_t)cache->dev > INT64_MAX || (uint64_t)cache->ino > INT64_MAX || cache->size < 0 ||
        cache->mtime_ns < 0 || cache->ctime_ns < 0)
        return NULL;
    return json_pack("{s:o, s:o, s:o, s:o, s:o}", "dev", berth_json_ns((int64_t)cache->dev), "ino",
                     berth_json_ns((int64_t)cache->ino), "size", berth_json_ns((int64_t)cache->size), "mtime_ns",
                     berth_json_ns(cache->mtime_ns), "ctime_ns", berth_json_ns(cache->ctime_ns));
}

int oci_pin_identity_parse(const json_t *identity, const char *digest, struct oci_pin_cache *ret,
                           struct berth_error *reterr)
{
    static const char *const identity_members[] = {"dev", "ino", "size", "mtime_ns", "ctime_ns", NULL};
    int64_t v[ELEMENTSOF(identity_members) - 1];
    int r;

    if ((r = berth_json_only_members(identity, "shim.pin.identity", identity_members, reterr)) < 0)
        return r;
    for (size_t i = 0; i < ELEMENTSOF(v); i++)
        if (berth_json_ns_value(json_object_get(identity, identity_members[i]), &v[i]) < 0)
            return berth_error_set(reterr, -EBADMSG, "shim.pin.identity.%s must be a decimal string",
                                   identity_members[i]);
    if (strlen(digest) >= sizeof(ret->digest))
        return berth_error_set(reterr, -EBADMSG, "shim.pin: sha256 is too long");
    *ret = (struct oci_pin_cache){.dev = (dev_t)v[0],
                                  .ino = (ino_t)v[1],
                                  .size = (off_t)v[2],
                                  .mtime_ns = v[3],
                                  .ctime_ns = v[4],
                                  .valid = true};
    memcpy(ret->digest, digest, strlen(digest) + 1);
    return 0;
}
