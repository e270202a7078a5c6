/* SPDX-License-Identifier: MIT */
/* plan.c -- every file of the installation: its place and mode (devinit.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devinit.h"
#include "fsutil.h"
#include "macro.h"
#include "sign.h"

void devinit_plan_done(struct plan *p)
{
    size_t i;

    for (i = 0; i < p->n; i++) {
        struct plan_file *f = &p->files[i];
        if (f->secret)
            berth_secret_free(f->data, f->len);
        else
            free(f->data);
        free(f->name);
        free(f->rel);
        free(f->path);
    }
    free(p->files);
    berth_signing_key_free(p->receipt);
}

/* Fill entry @idx: file @name in subdirectory @sub.  Return: 0 or -ENOMEM. */
static int plan_entry(struct plan *p, const char *dir, size_t idx, int sub, const char *name, enum file_kind kind,
                      mode_t mode, bool secret)
{
    struct plan_file *f = &p->files[idx];

    f->sub = sub;
    f->kind = kind;
    f->mode = mode;
    f->secret = secret;
    f->name = strdup(name);
    if (!f->name)
        return -ENOMEM;
    if (sub == SUB_TOP)
        f->rel = strdup(name);
    else if (asprintf(&f->rel, "%s/%s", devinit_subdir_names[sub], name) < 0)
        f->rel = NULL;
    if (!f->rel)
        return -ENOMEM;
    f->path = devinit_path_join(dir, f->rel);
    return f->path ? 0 : -ENOMEM;
}

int devinit_plan_layout(const struct devinit_opts *o, const char *dir, struct plan *p)
{
    static const struct {
        int sub;
        const char *name;
        enum file_kind kind;
        mode_t mode;
        bool secret;
    } fixed[F_FIXED_COUNT] = {
        [F_BERTHD] = {SUB_TOP, "berthd.json", FILE_DATA, 0600, false},
        [F_CLIENT] = {SUB_TOP, "client.json", FILE_DATA, 0600, false},
        [F_POLICY] = {SUB_TOP, "policy.json", FILE_DATA, 0600, false},
        [F_CA_PEM] = {SUB_TLS, "ca.pem", FILE_DATA, 0644, false},
        [F_CA_KEY] = {SUB_TLS, "ca.key", FILE_DATA, 0600, true},
        [F_SERVER_PEM] = {SUB_TLS, "server.pem", FILE_DATA, 0644, false},
        [F_SERVER_KEY] = {SUB_TLS, "server.key", FILE_DATA, 0600, true},
        [F_RECEIPT_KEY] = {SUB_KEYS, "receipt.key", FILE_RECEIPT_KEY, 0600, false},
        [F_RECEIPT_PUB] = {SUB_KEYS, "receipt.pub", FILE_DATA, 0644, false},
        [F_AUDIT_KEY] = {SUB_KEYS, "audit.key", FILE_AUDIT_KEY, 0600, false},
        [F_POOL] = {SUB_POOLS, POOL_NAME ".json", FILE_DATA, 0644, false},
    };
    size_t i;
    int r;

    p->files = calloc(F_FIXED_COUNT + 2 * o->n_principals, sizeof(*p->files));
    if (!p->files)
        return -ENOMEM;
    p->n = F_FIXED_COUNT + 2 * o->n_principals;
    for (i = 0; i < F_FIXED_COUNT; i++)
        if ((r = plan_entry(p, dir, i, fixed[i].sub, fixed[i].name, fixed[i].kind, fixed[i].mode, fixed[i].secret)) < 0)
            return r;
    for (i = 0; i < o->n_principals; i++) {
        _cleanup_free_ char *pem = NULL, *key = NULL;
        if (asprintf(&pem, "client-%s.pem", o->principals[i]) < 0 ||
            asprintf(&key, "client-%s.key", o->principals[i]) < 0)
            return -ENOMEM;
        if ((r = plan_entry(p, dir, F_CLIENT_PEM(i), SUB_TLS, pem, FILE_DATA, 0644, false)) < 0 ||
            (r = plan_entry(p, dir, F_CLIENT_KEY(i), SUB_TLS, key, FILE_DATA, 0600, true)) < 0)
            return r;
    }
    return 0;
}

/* Whether @rel exists below @dirfd (a symlink counts).  Return: 1, 0 or a negative errno. */
static int exists_beneath(int dirfd, const char *rel, struct berth_error *reterr)
{
    int fd = berth_open_beneath(dirfd, rel, O_PATH, 0, reterr);

    if (fd >= 0) {
        (void)close(fd);
        return 1;
    }
    if (fd == -ELOOP)
        return 1;
    if (fd == -ENOENT)
        return 0;
    return fd;
}

/* "berthctl dev-init: DIR/REL exists; ..."; returns BCTL_EXIT_FAIL. */
static int refuse_existing(const struct target *t, const char *rel)
{
    return bctl_error(VERB, "%s%s%s exists; dev-init never overwrites files", t->dir, streq(t->dir, "/") ? "" : "/",
                      rel);
}

int devinit_check_absent(const struct target *t, const struct plan *p)
{
    struct berth_error err = BERTH_ERROR_INIT;
    size_t i;
    int sub, r;

    for (i = 0; i < p->n; i++) {
        if (p->files[i].sub != SUB_TOP)
            continue;
        if ((r = exists_beneath(t->dir_fd, p->files[i].rel, &err)) < 0)
            return bctl_error(VERB, "%s", err.message);
        if (r > 0)
            return refuse_existing(t, p->files[i].rel);
    }
    for (sub = 0; sub < SUB_COUNT; sub++) {
        _cleanup_close_ int fd =
            berth_open_beneath(t->dir_fd, devinit_subdir_names[sub], O_PATH | O_DIRECTORY, 0, &err);

        if (fd == -ENOENT)
            continue;
        if (fd == -ELOOP || fd == -ENOTDIR) /* a symlink or not a directory: name it */
            return refuse_existing(t, devinit_subdir_names[sub]);
        if (fd < 0)
            return bctl_error(VERB, "%s", err.message);
        for (i = 0; i < p->n; i++) {
            if (p->files[i].sub != sub)
                continue;
            if ((r = exists_beneath(fd, p->files[i].name, &err)) < 0)
                return bctl_error(VERB, "%s", err.message);
            if (r > 0)
                return refuse_existing(t, p->files[i].rel);
        }
        return refuse_existing(t, devinit_subdir_names[sub]);
    }
    return BCTL_EXIT_OK;
}
