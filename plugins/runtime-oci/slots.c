/* SPDX-License-Identifier: MIT */
/*
 * slots.c -- runtime-oci's warm slots (plugin.h ABI 1.2, docs/warm-slots.md).
 *
 * provision() builds a slot directory (jobdir.h) like start() builds a job
 * directory, but from the slot document: the bundle is the deny-all spec a
 * job with the slot's effective manifest, image, limits and root gets, in
 * slot form (its process is berth-slot-init), and `berth-oci-shim
 * provision` runs `create` and `start` (the init then waits on its standard
 * input, a socket whose other end the shim holds) and then holds the container until a claim,
 * a discard, the slot's retirement or the sandbox's death.
 *
 * claim() checks the dispatch as start() does and that the job fits the
 * slot, writes dispatch.json, then renames the slot directory to the job's
 * (RENAME_NOREPLACE: the same tombstone start() makes with mkdir) and only
 * then tells the shim, which checks the binding again (binding.h) and writes
 * the job's argv down the init's socket: the init execs it at once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binding.h"
#include "bundle.h"
#include "canon.h"
#include "clock.h"
#include "fsutil.h"
#include "jobdir.h"
#include "jsonobj.h"
#include "macro.h"
#include "oci.h"
#include "outmount.h"
#include "jobstore.h"
#include "tree.h"
#include "watch.h"

#define DISCARD_WAIT_NS (3LL * 1000000000LL)
#define ENDING_WAIT_NS (1000000000LL) /* an ending slot's shim exits this soon after its result */
#define CLAIM_MARGIN_NS (5LL * 1000000000LL) /* a slot this close to not_after is not claimed */
#define SLOTS_MAX 4096 /* listed by slots() */

static bool slot_id_ok(const char *id)
{
    char run[BERTH_RUN_ID_LEN + 1];

    if (!id || strlen(id) != BERTH_RUN_ID_LEN || id[0] != 's')
        return false;
    snprintf(run, sizeof(run), "r%s", id + 1);
    return oci_run_id_ok(run);
}

const char *oci_container_id(int dirfd, const char *job_id, char buf[64])
{
    const struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .max_size = 63};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (berth_read_file_at(dirfd, OCI_SLOT_ID, &expect, &text, &len, NULL) < 0 || !slot_id_ok(text))
        return job_id;
    snprintf(buf, 64, "%s", text);
    return buf;
}

int oci_remove_bundle(struct oci *o, const char *slot_id, struct berth_error *reterr)
{
    _cleanup_close_ int fd = openat(o->bundlesfd, slot_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int r;

    if (fd < 0)
        return errno == ENOENT ? 0 : berth_error_set(reterr, -errno, "%s/%s: %m", o->bundles_dir, slot_id);
    if ((r = berth_tree_clear(fd, reterr)) < 0)
        return r;
    if (unlinkat(o->bundlesfd, slot_id, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove %s/%s: %m", o->bundles_dir, slot_id);
    return 0;
}

/* The slot directory @slot_id, flock()ed (its own descriptor, not the
 * shim's lock file) so that no other claim or discard works on it at the
 * same time; -EBUSY when one does.  Checked to be still in slots/ once
 * locked: a claim that won renamed it away. */
static int open_slot(struct oci *o, const char *slot_id, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    struct stat locked, named;

    if (!slot_id_ok(slot_id))
        return berth_error_set(reterr, -ENOENT, "%.40s is not a slot id", slot_id ? slot_id : "(null)");
    fd = openat(o->slotsfd, slot_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return berth_error_set(reterr, -errno, errno == ENOENT ? "no slot %s" : "slot %s: %m", slot_id);
    /* A slot with a result is ending: its shim holds the lock from its
     * teardown until it exits, right after it published result.json (which
     * is what notified berthd).  Wait for that exit, 100 us doubling to
     * 10 ms, for at most ENDING_WAIT_NS. */
    for (int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, ENDING_WAIT_NS), nap_us = 100;
         flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK && oci_has_result(fd) &&
         !berth_deadline_passed(CLOCK_MONOTONIC, until);
         nap_us = nap_us < 10000 ? nap_us * 2 : 10000)
        usleep((useconds_t)nap_us);
    if (flock(fd, LOCK_EX | LOCK_NB) < 0)
        return berth_error_set(reterr, errno == EWOULDBLOCK ? -EBUSY : -errno,
                               errno == EWOULDBLOCK ? "slot %s is being claimed or discarded" : "slot %s: %m",
                               slot_id);
    if (fstat(fd, &locked) < 0 || fstatat(o->slotsfd, slot_id, &named, AT_SYMLINK_NOFOLLOW) < 0 ||
        locked.st_ino != named.st_ino || locked.st_dev != named.st_dev)
        return berth_error_set(reterr, -ENOENT, "no slot %s (claimed meanwhile)", slot_id);
    return TAKE_FD(fd);
}

static int read_json_at(int dirfd, const char *name, size_t max, json_t **ret, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {.type = S_IFREG, .uid = geteuid(), .mode_mask = 077, .max_size = max};
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    if ((r = berth_read_file_at(dirfd, name, &expect, &text, &len, reterr)) < 0)
        return r;
    return berth_json_parse(text, len, max, ret, reterr);
}

/* ------------------------------------------------------------------------- */
/* provision                                                                  */

int oci_provision(void *state, const char *slot, size_t slot_len, struct berth_error *reterr)
{
    struct oci *o = state;
    struct dispatch d = {.text = slot, .len = slot_len};
    struct berth_bundle_bounds bounds;
    _cleanup_json_ json_t *doc = NULL;
    _cleanup_free_ char *dir = NULL;
    _cleanup_close_ int fd = -1, initfd = -1;
    int p[2] = {-1, -1};
    int64_t now;
    int r;

    /* A slot's sandbox would be created before any job owns it, and a
     * contained job's unit is made for its run id only (plugin.h,
     * host->containment): a contained backend has no warm slots. */
    if (o->cops)
        return berth_error_set(reterr, -EBADMSG,
                               "backend %s runs its jobs in a containment, which has no warm slots: every job "
                               "starts cold (docs/containment.md)",
                               o->host->instance);
    if ((r = berth_json_parse(slot, slot_len, OCI_SLOT_MAX, &doc, reterr)) < 0)
        return r == -ENOMEM ? r : -EBADMSG;
    if ((r = oci_binding_slot(doc, &d.job, &d.doc, &d.deadline, reterr)) < 0)
        return r;
    d.run_id = d.job->id;
    d.effective = json_object_get(d.doc, "effective");
    d.rootfs = json_string_value(json_object_get(d.doc, "rootfs"));
    if (!slot_id_ok(d.run_id)) {
        r = berth_error_set(reterr, -EBADMSG, "slot.slot_id must be \"s\" and 32 lowercase hex digits");
        goto out;
    }
    /* The init is bound into the container: it must be trusted like the shim. */
    initfd = berth_open_trusted(o->cfg.slot_init, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0, reterr);
    if (initfd < 0 || berth_trusted_file_check(initfd, o->cfg.slot_init, 0, NULL, reterr) < 0) {
        berth_error_prefix(reterr, "slot_init");
        if (reterr)
            reterr->code = -EPERM;
        r = -EPERM;
        goto out;
    }
    if ((r = oci_take_state_lock(o, reterr)) < 0 || (r = berth_now_ns(CLOCK_REALTIME, &now, reterr)) < 0)
        goto out;
    if (d.deadline <= now) {
        r = berth_error_set(reterr, -EBADMSG, "slot.not_after has passed");
        goto out;
    }
    if ((r = oci_runtime_pin_check(o, &d.pin_seen, reterr)) < 0)
        goto out;
    if (berth_bundle_writable_bounds(&d.job->limits, &bounds) < 0) {
        r = berth_error_set(reterr, -EBADMSG, "slot.limits are invalid");
        goto out;
    }
    if (asprintf(&dir, "%s/%s", o->slots_dir, d.run_id) < 0) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto out;
    }
    /* The bundle directory outlives the slot's (a claimed slot's job keeps
     * it until reap), so it is the id's exclusive claim, taken first. */
    if (mkdirat(o->bundlesfd, d.run_id, 0700) < 0) {
        r = berth_error_set(reterr, errno == EEXIST ? -EEXIST : -errno,
                            errno == EEXIST ? "slot id %s is in use" : "cannot create %s/%s: %m",
                            errno == EEXIST ? d.run_id : o->bundles_dir, d.run_id);
        goto out;
    }
    if (mkdirat(o->slotsfd, d.run_id, 0700) < 0) {
        int e = errno;
        (void)unlinkat(o->bundlesfd, d.run_id, AT_REMOVEDIR);
        r = berth_error_set(reterr, e == EEXIST ? -EEXIST : -e, e == EEXIST ? "slot %s exists" : "cannot create %s",
                            e == EEXIST ? d.run_id : dir);
        goto out;
    }
    fd = openat(o->slotsfd, d.run_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        r = berth_error_set(reterr, -errno, "cannot open %s: %m", dir);
        goto out;
    }
    /* Held until the shim answers: slots() says "provisioning" meanwhile,
     * and no discard works on a slot still being built. */
    (void)flock(fd, LOCK_EX | LOCK_NB);
    r = oci_prepare(o, &d, fd, dir, bounds.outputs, o->cfg.slot_init, reterr);
    if (r == 0 && bounds.outputs)
        r = oci_outputs_mount(fd, OCI_JOB_OUTPUTS, bounds.outputs, o->cfg.uid, o->cfg.gid, reterr);
    if (r == 0 && pipe2(p, O_CLOEXEC) < 0)
        r = berth_error_set(reterr, -errno, "pipe: %m");
    if (r == 0) {
        r = oci_run_shim(o, "provision", dir, p[1], reterr);
        close(p[1]);
        if (r > 0)
            r = berth_error_set(reterr, -EIO, "the shim exited with status %d; see %s/%s", r, dir, OCI_JOB_RUNTIME_LOG);
        if (r == 0)
            r = oci_await_shim(o, p[0], dir, OCI_SHIM_SYNC_CREATED, reterr);
        if (r == 1)
            r = berth_error_set(reterr, -EIO, "the runtime could not create the slot's sandbox; see %s/%s", dir,
                                OCI_JOB_RUNTIME_LOG);
        close(p[0]);
        (void)flock(fd, LOCK_UN);
        if (r < 0) {
            /* The shim tears down what it created before it answers "failed". */
            struct berth_error ignored = BERTH_ERROR_INIT;
            if (oci_discard(o, d.run_id, &ignored) < 0)
                o->host->log(o->host, BERTH_LOG_WARNING, "slot %s: %s", d.run_id, ignored.message);
            goto out;
        }
    } else {
        oci_unclaim(o->slotsfd, fd, dir, d.run_id);
        (void)oci_remove_bundle(o, d.run_id, NULL);
        goto out;
    }
    /* berthd hears at once of a slot whose sandbox dies while idle (the
     * shim then publishes its result.json); claim() re-arms it for the job. */
    oci_watch_job(o->watch, fd, d.run_id);
    o->host->log(o->host, BERTH_LOG_INFO, "slot %s ready", d.run_id);
out:
    d.text = NULL;
    oci_dispatch_clear(&d);
    return r;
}

/* ------------------------------------------------------------------------- */
/* claim                                                                      */

/* Whether the slot @fd is ready: `create` done, its shim there, no result. */
static bool slot_ready(int fd)
{
    return faccessat(fd, OCI_SLOT_READY, F_OK, AT_SYMLINK_NOFOLLOW) == 0 && !oci_has_result(fd) &&
           oci_shim_alive(fd) == 1;
}

int oci_claim(void *state, const char *slot_id, const char *dispatch, size_t dispatch_len, struct berth_error *reterr)
{
    struct oci *o = state;
    struct dispatch d;
    _cleanup_json_ json_t *slot = NULL, *ready = NULL;
    _cleanup_free_ char *jobdir = NULL;
    _cleanup_close_ int fd = -1, answer = -1, ctl = -1;
    int r;

    /* 1: started before; never again, and the slot stays as it is. */
    r = oci_dispatch_admit(o, dispatch, dispatch_len, &d, reterr);
    if (r != 0)
        goto out;
    if ((fd = open_slot(o, slot_id, reterr)) < 0) {
        r = fd == -EBUSY ? -ESTALE : fd;
        if (reterr)
            reterr->code = r;
        goto out;
    }
    if ((r = read_json_at(fd, OCI_SLOT_DOC, OCI_SLOT_MAX, &slot, reterr)) < 0 ||
        (r = read_json_at(fd, OCI_JOB_SHIM_CONFIG, OCI_SHIM_CONFIG_MAX, &ready, reterr)) < 0) {
        berth_error_prefix(reterr, "slot %s is unreadable", slot_id);
        if (reterr)
            reterr->code = -ESTALE;
        r = -ESTALE;
        goto out;
    }
    if ((r = oci_binding_slot_match(slot, d.doc, d.job, reterr)) < 0)
        goto out;
    /* The runtime it was created with must still be the pinned one. */
    if (!streq_ptr(json_string_value(json_object_get(json_object_get(ready, "pin"), "sha256")), o->cfg.pin.sha256) ||
        !streq_ptr(json_string_value(json_array_get(json_object_get(ready, "runtime"), 0)), o->cfg.pin.path)) {
        r = berth_error_set(reterr, -ESTALE, "slot %s was created by another runtime than the pinned one", slot_id);
        goto out;
    }
    if (!slot_ready(fd)) {
        r = berth_error_set(reterr, -ESTALE, "slot %s is not ready", slot_id);
        goto out;
    }
    /* A slot about to retire could end under the claim: the job would then
     * fail instead of starting cold. */
    {
        int64_t not_after = 0, now = 0;
        if (berth_json_ns_value(json_object_get(slot, "not_after"), &not_after) < 0 ||
            berth_now_ns(CLOCK_REALTIME, &now, NULL) < 0 || not_after - now < CLAIM_MARGIN_NS) {
            r = berth_error_set(reterr, -ESTALE, "slot %s retires within %lld s", slot_id,
                                (long long)(CLAIM_MARGIN_NS / BERTH_NS_PER_SEC));
            goto out;
        }
    }
    if (asprintf(&jobdir, "%s/%s", o->jobs_dir, d.run_id) < 0) {
        r = berth_error_set(reterr, -ENOMEM, "out of memory");
        goto out;
    }
    /* The claim's answer is read from the shim's FIFO, opened before asking.
     * The shim holds its write end from provision on, so the open does not
     * block, and a shim that dies gives end of file, not a wait. */
    answer = openat(fd, OCI_SLOT_CLAIMED, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    ctl = openat(fd, OCI_JOB_CONTROL, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (answer < 0 || ctl < 0) {
        r = berth_error_set(reterr, -ESTALE, "slot %s: its shim does not listen: %m", slot_id);
        goto out;
    }
    /* Under the slot's flock (open_slot) no other claim is here: a
     * dispatch.json left by one whose rename failed is stale.  The shim acts
     * on it only once the directory is jobs/<its run_id>. */
    (void)unlinkat(fd, OCI_JOB_DISPATCH, 0);
    if ((r = berth_publish_at(fd, OCI_JOB_DISPATCH, d.text, d.len, 0600, 0, reterr)) < 0)
        goto out;
    /* The job's tombstone: from here on the id is consumed, as by start(). */
    if (renameat2(o->slotsfd, slot_id, o->jobsfd, d.run_id, RENAME_NOREPLACE) < 0) {
        int e = errno;
        (void)unlinkat(fd, OCI_JOB_DISPATCH, 0);
        /* EEXIST: start() took the id meanwhile; never run it twice. */
        r = e == EEXIST ? 1 : berth_error_set(reterr, -ESTALE, "cannot claim slot %s for %s: %s", slot_id, d.run_id,
                                               strerror(e));
        goto out;
    }
    if (fsync(o->jobsfd) < 0 || fsync(o->slotsfd) < 0)
        o->host->log(o->host, BERTH_LOG_WARNING, "fsync after claiming slot %s: %m", slot_id);
    /* A shim that died just now leaves a job without a result: inspect
     * settles it as runtime_lost, as for any job whose shim is gone. */
    if (oci_fifo_say(ctl, "claim\n") < 0)
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s: slot %s's shim did not take the claim: %m", d.run_id,
                     slot_id);
    r = oci_await_shim(o, answer, jobdir, OCI_SHIM_SYNC_STARTED, reterr);
    if (r == 1)
        r = 0; /* failed: result.json says why, and inspect reports it */
    if (r == 0) {
        o->host->log(o->host, BERTH_LOG_INFO, "job %s started in warm slot %s", d.run_id, slot_id);
    } else {
        /* The id is consumed; the job's outcome comes from inspect. */
        o->host->log(o->host, BERTH_LOG_WARNING, "job %s in slot %s: %s", d.run_id, slot_id,
                     reterr ? reterr->message : "no answer from the shim");
        r = 0;
    }
    /* Either way the directory is now the job's: its watch, armed under the
     * slot id at provision, names the job from here on, so that berthd hears
     * of its end at once also after a start that timed out. */
    oci_watch_job(o->watch, fd, d.run_id);
out:
    oci_dispatch_clear(&d);
    return r;
}

/* ------------------------------------------------------------------------- */
/* discard, slots                                                             */

int oci_discard(void *state, const char *slot_id, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_close_ int fd = -1;
    _cleanup_free_ char *dir = NULL, *outputs = NULL;
    int64_t until = berth_deadline_ns(CLOCK_MONOTONIC, DISCARD_WAIT_NS);
    int r;

    if ((r = oci_take_state_lock(o, reterr)) < 0)
        return r;
    if ((fd = open_slot(o, slot_id, reterr)) < 0)
        return fd;
    if (asprintf(&dir, "%s/%s", o->slots_dir, slot_id) < 0 ||
        asprintf(&outputs, "%s/%s", dir, OCI_JOB_OUTPUTS) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    while (!oci_has_result(fd)) {
        r = oci_shim_alive(fd);
        if (r < 0)
            return berth_error_set(reterr, r, "slot %s: cannot check its shim: %s", slot_id, strerror(-r));
        if (r == 0) {
            /* No shim: `cleanup` kills and deletes whatever container is left. */
            if (faccessat(fd, OCI_JOB_SHIM_CONFIG, F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
                (r = oci_run_shim(o, "cleanup", dir, -1, reterr)) != 0)
                return r < 0 ? r
                             : berth_error_set(reterr, -EBUSY, "cleanup of slot %s failed (%d); see %s/%s", slot_id, r,
                                               dir, OCI_JOB_RUNTIME_LOG);
            break;
        }
        {
            _cleanup_close_ int ctl = openat(fd, OCI_JOB_CONTROL, O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
            if (ctl >= 0)
                (void)oci_fifo_say(ctl, "discard\n");
        }
        if (berth_deadline_passed(CLOCK_MONOTONIC, until))
            return berth_error_set(reterr, -EBUSY, "slot %s: still there %lld s after discard", slot_id,
                                   (long long)(DISCARD_WAIT_NS / BERTH_NS_PER_SEC));
        usleep(10000);
    }
    if ((r = oci_prove_teardown(o, fd, slot_id, true, reterr)) < 0)
        return r;
    if ((r = oci_outputs_release(fd, OCI_JOB_OUTPUTS, outputs, reterr)) < 0) {
        berth_error_prefix(reterr, "slot %s", slot_id);
        return r == -ENOMEM ? r : -EBUSY;
    }
    if ((r = oci_remove_bundle(o, slot_id, reterr)) < 0 || (r = berth_tree_clear(fd, reterr)) < 0)
        return r;
    if (unlinkat(o->slotsfd, slot_id, AT_REMOVEDIR) < 0 && errno != ENOENT)
        return berth_error_set(reterr, -errno, "cannot remove %s: %m", dir);
    return 0;
}

static json_t *ns_or_null(const json_t *doc, const char *key)
{
    const json_t *v = json_object_get(doc, key);
    return json_is_string(v) ? json_copy((json_t *)v) : json_null();
}

static int compare_ids(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int oci_slots(void *state, char **ret_json, size_t *ret_len, struct berth_error *reterr)
{
    struct oci *o = state;
    _cleanup_json_ json_t *list = json_array();
    char *ids[SLOTS_MAX];
    size_t n = 0, i;
    DIR *dir;
    struct dirent *e;
    int dfd, r = 0;

    if (!list)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((dfd = openat(o->slotsfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || !(dir = fdopendir(dfd))) {
        if (dfd >= 0)
            close(dfd);
        return berth_error_set(reterr, -errno, "cannot read %s: %m", o->slots_dir);
    }
    while ((e = readdir(dir)) && n < SLOTS_MAX)
        if (slot_id_ok(e->d_name) && !(ids[n++] = strdup(e->d_name))) {
            n--;
            r = -ENOMEM;
            break;
        }
    closedir(dir);
    qsort(ids, n, sizeof(*ids), compare_ids);
    for (i = 0; i < n && r == 0; i++) {
        _cleanup_close_ int fd = openat(o->slotsfd, ids[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_json_ json_t *ready = NULL, *result = NULL;
        const char *st, *reason = NULL;
        bool busy;
        int alive;

        if (fd < 0)
            continue; /* claimed or discarded meanwhile */
        (void)read_json_at(fd, OCI_SLOT_READY, 4096, &ready, NULL);
        (void)read_json_at(fd, OCI_JOB_RESULT, OCI_RESULT_MAX, &result, NULL);
        busy = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
        alive = busy ? 1 : oci_shim_alive(fd);
        if (result) {
            /* Final, even while the ending shim still holds the lock: it
             * publishes result.json (which is what notified berthd) and
             * only then exits.  A claimed slot is not here any more. */
            st = "lost";
            reason = json_string_value(json_object_get(result, "reason"));
        } else if (busy) {
            /* provision, a claim, a discard or the shim's own end is at work on it */
            st = ready ? "ready" : "provisioning";
        } else if (alive != 1) {
            st = "lost";
            reason = "runtime_lost";
        } else {
            st = ready ? "ready" : "provisioning";
        }
        if (json_array_append_new(list, json_pack("{s:s, s:s, s:o, s:o, s:s?}", "slot_id", ids[i], "state", st,
                                                  "created_at", ns_or_null(ready, "created_at"), "provision_ns",
                                                  ns_or_null(ready, "provision_ns"), "reason", reason)) < 0)
            r = -ENOMEM;
    }
    for (i = 0; i < n; i++)
        free(ids[i]);
    if (r < 0)
        return berth_error_set(reterr, r, "out of memory");
    return oci_give_json(json_pack("{s:O}", "slots", list), ret_json, ret_len, reterr);
}
