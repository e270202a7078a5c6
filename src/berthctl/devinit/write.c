/* SPDX-License-Identifier: MIT */
/* write.c -- writing the installation, and removing it again on failure (devinit.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit.h"
#include "devinit.h"
#include "fsutil.h"
#include "macro.h"
#include "sign.h"

/* Make directory @name in @dirfd with mode 0700 (umask does not apply) and open it. */
static int make_dir(int dirfd, const char *name, const char *shown, bool *created, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;

    if (mkdirat(dirfd, name, 0700) < 0) {
        if (errno == EEXIST)
            return berth_error_set(reterr, -EEXIST, "%s exists; dev-init never overwrites files", shown);
        return berth_error_set(reterr, -errno, "creating %s: %s", shown, strerror(errno));
    }
    *created = true;
    fd = berth_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (fd < 0)
        return fd;
    if (fchmod(fd, 0700) < 0)
        return berth_error_set(reterr, -errno, "%s: chmod: %s", shown, strerror(errno));
    return TAKE_FD(fd);
}

int devinit_write_plan(struct target *t, struct plan *p, struct written *w, struct berth_error *reterr)
{
    size_t i;
    int r;

    if (t->dir_fd < 0) {
        r = make_dir(t->parent_fd, t->new_name, t->dir, &w->dir, reterr);
        if (r < 0)
            return r;
        t->dir_fd = r;
    }
    for (i = 0; i < SUB_COUNT; i++) {
        _cleanup_free_ char *shown = devinit_path_join(t->dir, devinit_subdir_names[i]);
        if (!shown)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        r = make_dir(t->dir_fd, devinit_subdir_names[i], shown, &w->sub[i], reterr);
        if (r < 0)
            return r;
        t->sub_fd[i] = r;
    }
    for (i = p->n; i-- > 0;) {
        struct plan_file *f = &p->files[i];
        switch (f->kind) {
        case FILE_DATA:
            r = berth_publish_at(f->sub == SUB_TOP ? t->dir_fd : t->sub_fd[f->sub], f->name, f->data, f->len, f->mode,
                                 0, reterr);
            if (r == -EEXIST)
                berth_error_set(reterr, r, "%s exists; dev-init never overwrites files", f->path);
            else if (r < 0)
                berth_error_prefix(reterr, "writing %s", f->path);
            break;
        case FILE_RECEIPT_KEY: r = berth_signing_key_save(p->receipt, f->path, reterr); break;
        case FILE_AUDIT_KEY: r = berth_audit_key_create(f->path, reterr); break;
        default: r = berth_error_set(reterr, -EINVAL, "internal error: unknown file kind");
        }
        if (r < 0)
            return r;
        f->written = true;
    }
    /* The subdirectories were synced by each publication; make their names and DIR's durable too. */
    if (fsync(t->dir_fd) < 0 || (w->dir && fsync(t->parent_fd) < 0))
        return berth_error_set(reterr, -EIO, "syncing %s failed: %s", t->dir, strerror(errno));
    return 0;
}

bool devinit_wrote_anything(const struct plan *p, const struct written *w)
{
    size_t i;

    if (w->dir)
        return true;
    for (i = 0; i < SUB_COUNT; i++)
        if (w->sub[i])
            return true;
    for (i = 0; i < p->n; i++)
        if (p->files[i].written)
            return true;
    return false;
}

bool devinit_roll_back(struct target *t, struct plan *p, const struct written *w)
{
    bool clean = true;
    size_t i;
    int i_sub;

    for (i = 0; i < p->n; i++) {
        struct plan_file *f = &p->files[i];
        int dfd = f->sub == SUB_TOP ? t->dir_fd : t->sub_fd[f->sub];
        if (!f->written)
            continue;
        if (dfd < 0 || unlinkat(dfd, f->name, 0) < 0) {
            bctl_error(VERB, "removing %s after the failure failed: %s", f->path, strerror(dfd < 0 ? EBADF : errno));
            clean = false;
        }
    }
    for (i_sub = SUB_COUNT - 1; i_sub >= 0; i_sub--) {
        if (!w->sub[i_sub])
            continue;
        if (unlinkat(t->dir_fd, devinit_subdir_names[i_sub], AT_REMOVEDIR) < 0) {
            bctl_error(VERB, "removing %s/%s after the failure failed: %s", t->dir, devinit_subdir_names[i_sub],
                       strerror(errno));
            clean = false;
        }
    }
    if (w->dir && clean && unlinkat(t->parent_fd, t->new_name, AT_REMOVEDIR) < 0) {
        bctl_error(VERB, "removing %s after the failure failed: %s", t->dir, strerror(errno));
        clean = false;
    }
    return clean;
}
