/* SPDX-License-Identifier: MIT */
/* test-uploads.c -- berthd's evidence upload sessions (uploads.h): owners, bounds, expiry. */
#include "testutil.h"

#include "macro.h"
#include "uploads.h"

#define SCOPE "[\"dev\"]"

START_TEST(owners_and_bounds)
{
    struct berthd_uploads t = {0};
    struct berthd_upload *u, *v, *mine[BERTHD_UPLOADS_PER_OWNER];
    char name[32];
    size_t i;
    int err = 0;

    u = berthd_uploads_add(&t, "dev", SCOPE, 100, &err);
    ck_assert_ptr_nonnull(u);
    ck_assert(u->busy);    /* opening: not writable, not expired */
    ck_assert_int_eq(u->fd, -1);
    ck_assert(berthd_uuid_valid(u->id));
    ck_assert_ptr_eq(berthd_uploads_find(&t, u->id, "dev", SCOPE), u);
    /* Another owner's session is no session: another principal, or another scope. */
    ck_assert_ptr_null(berthd_uploads_find(&t, u->id, "other", SCOPE));
    ck_assert_ptr_null(berthd_uploads_find(&t, u->id, "dev", "[\"ci\"]"));
    ck_assert_ptr_null(berthd_uploads_find(&t, "00000000-0000-4000-8000-000000000000", "dev", SCOPE));
    mine[0] = u;
    for (i = 1; i < BERTHD_UPLOADS_PER_OWNER; i++)
        ck_assert_ptr_nonnull(mine[i] = berthd_uploads_add(&t, "dev", SCOPE, 100, &err));
    ck_assert_str_ne(mine[0]->id, mine[1]->id);
    ck_assert_ptr_null(berthd_uploads_add(&t, "dev", "[\"other-scope\"]", 100, &err));
    ck_assert_int_eq(err, -EUSERS); /* per principal, whatever the scope */
    v = berthd_uploads_add(&t, "other", SCOPE, 100, &err);
    ck_assert_ptr_nonnull(v);
    berthd_uploads_drop(&t, mine[1]);
    ck_assert_ptr_nonnull(berthd_uploads_add(&t, "dev", SCOPE, 100, &err)); /* room again */
    /* The whole table. */
    for (i = 0; t.n < BERTHD_UPLOADS_MAX; i++) {
        snprintf(name, sizeof(name), "p%zu", i / BERTHD_UPLOADS_PER_OWNER);
        ck_assert_ptr_nonnull(berthd_uploads_add(&t, name, SCOPE, 100, &err));
    }
    ck_assert_ptr_null(berthd_uploads_add(&t, "fresh", SCOPE, 100, &err));
    ck_assert_int_eq(err, -EUSERS);
    berthd_uploads_clear(&t);
    ck_assert_uint_eq(t.n, 0);
}
END_TEST

START_TEST(expiry)
{
    struct berthd_uploads t = {0};
    struct berthd_upload *idle, *busy, *recent;
    _cleanup_free_ char *dir = test_tmpdir();
    int err = 0;

    idle = berthd_uploads_add(&t, "a", SCOPE, 0, &err);
    busy = berthd_uploads_add(&t, "b", SCOPE, 0, &err);
    recent = berthd_uploads_add(&t, "c", SCOPE, BERTHD_UPLOAD_IDLE_NS, &err);
    ck_assert_ptr_nonnull(idle);
    idle->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600); /* closed when dropped */
    ck_assert_int_ge(idle->fd, 0);
    idle->busy = recent->busy = false;
    ck_assert_uint_eq(berthd_uploads_expire(&t, BERTHD_UPLOAD_IDLE_NS), 0); /* not past yet */
    ck_assert_uint_eq(berthd_uploads_expire(&t, BERTHD_UPLOAD_IDLE_NS + 1), 1);
    ck_assert_uint_eq(t.n, 2);
    ck_assert_ptr_eq(berthd_uploads_find(&t, busy->id, "b", SCOPE), busy);  /* a commit runs: kept */
    ck_assert_ptr_eq(berthd_uploads_find(&t, recent->id, "c", SCOPE), recent);
    ck_assert_uint_eq(berthd_uploads_expire(&t, 10 * BERTHD_UPLOAD_IDLE_NS), 1);
    ck_assert_uint_eq(t.n, 1);
    berthd_uploads_clear(&t);
    test_rm_rf(dir);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("uploads");
    TCase *tc = test_case(s, "uploads");

    tcase_add_test(tc, owners_and_bounds);
    tcase_add_test(tc, expiry);
    return s;
}

TEST_MAIN()
