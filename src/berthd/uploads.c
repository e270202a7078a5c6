/* SPDX-License-Identifier: MIT */
/* uploads.c -- evidence upload sessions; see uploads.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "uploads.h"

struct berthd_upload *berthd_uploads_add(struct berthd_uploads *t, const char *principal, const char *scope,
                                         int64_t now, int *ret_err)
{
    struct berthd_upload *u;
    size_t i, mine = 0;

    for (i = 0; i < t->n; i++)
        mine += streq(t->v[i]->principal, principal);
    if (t->n == BERTHD_UPLOADS_MAX || mine >= BERTHD_UPLOADS_PER_OWNER) {
        *ret_err = -EUSERS;
        return NULL;
    }
    u = calloc(1, sizeof(*u));
    if (!u || !(u->scope = strdup(scope))) {
        free(u);
        *ret_err = -ENOMEM;
        return NULL;
    }
    if (berthd_uuid_new(u->id) < 0) {
        free(u->scope);
        free(u);
        *ret_err = -EIO;
        return NULL;
    }
    snprintf(u->principal, sizeof(u->principal), "%s", principal);
    u->fd = -1;
    u->touched = now;
    u->busy = true;
    t->v[t->n++] = u;
    return u;
}

struct berthd_upload *berthd_uploads_find(struct berthd_uploads *t, const char *id, const char *principal,
                                          const char *scope)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (streq(t->v[i]->id, id))
            return streq(t->v[i]->principal, principal) && streq(t->v[i]->scope, scope) ? t->v[i] : NULL;
    return NULL;
}

static void upload_free(struct berthd_upload *u)
{
    if (u->fd >= 0)
        close(u->fd);
    free(u->scope);
    free(u);
}

void berthd_uploads_drop(struct berthd_uploads *t, struct berthd_upload *u)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (t->v[i] == u) {
            t->v[i] = t->v[--t->n];
            upload_free(u);
            return;
        }
}

size_t berthd_uploads_expire(struct berthd_uploads *t, int64_t now)
{
    size_t i = 0, n = 0;

    while (i < t->n) {
        struct berthd_upload *u = t->v[i];

        if (!u->busy && now - u->touched > BERTHD_UPLOAD_IDLE_NS) {
            t->v[i] = t->v[--t->n];
            upload_free(u);
            n++;
        } else {
            i++;
        }
    }
    return n;
}

void berthd_uploads_clear(struct berthd_uploads *t)
{
    while (t->n)
        upload_free(t->v[--t->n]);
}
