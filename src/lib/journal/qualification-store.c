/* SPDX-License-Identifier: MIT */
/*
 * qualification-store.c -- sealed qualifications in the journal: recorded,
 * and found again by backend and runtime or by id (qualification.h).
 * Apart from qualification.c so that a program that only verifies one
 * (berthctl qualification verify) does not link the journal's SQLite.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "canon.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"

int berth_qualification_store(struct berth_journal *j, const json_t *env, struct berth_error *reterr)
{
    const json_t *body = json_object_get(env, "qualification");
    _cleanup_free_ char *text = NULL;
    sqlite3_stmt *st = NULL;
    int64_t qualified_at = 0, expires_at = 0;
    int r, rc;

    if (!j || !body)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_qualification_check(body, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "qualification", "qualified_at", &qualified_at, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "qualification", "expires_at", &expires_at, reterr)) < 0 ||
        (r = berth_json_serialize(env, 0, &text, NULL, reterr)) < 0)
        return r;
    if ((r = berth_journal_begin(j, reterr)) < 0)
        return r;
    if (berth_journal_prepare(j,
                              "INSERT INTO qualifications (id, backend, runtime_sha256, kernel, qualified_at, "
                              "expires_at, envelope, config_digest, passed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                              "preparing a statement", &st, NULL) < 0) {
        r = berth_journal_error(j, "recording a qualification", reterr);
        berth_journal_rollback(j);
        return r;
    }
    r = BERTH_JOURNAL_BIND(
        j, st, "recording a qualification", reterr, BERTH_SQL_TEXT(json_string_value(json_object_get(body, "id"))),
        BERTH_SQL_TEXT(json_string_value(json_object_get(body, "backend"))),
        BERTH_SQL_TEXT(json_string_value(json_object_get(json_object_get(body, "runtime"), "sha256"))),
        BERTH_SQL_TEXT(json_string_value(json_object_get(body, "kernel"))), BERTH_SQL_INT(qualified_at),
        BERTH_SQL_INT(expires_at), BERTH_SQL_TEXT(text),
        BERTH_SQL_TEXT(json_string_value(json_object_get(body, "config_digest"))),
        BERTH_SQL_INT(json_is_true(json_object_get(body, "passed"))));
    if (r < 0) {
        berth_journal_finish(j, st);
        berth_journal_rollback(j);
        return r;
    }
    rc = sqlite3_step(st);
    berth_journal_finish(j, st);
    if (rc != SQLITE_DONE) {
        r = (rc & 0xff) == SQLITE_CONSTRAINT ? berth_error_set(reterr, -EEXIST, "that qualification is recorded")
                                             : berth_journal_error(j, "recording a qualification", reterr);
        berth_journal_rollback(j);
        return r;
    }
    return berth_journal_commit(j, reterr);
}

int berth_qualification_current(struct berth_journal *j, const char *backend, const char *runtime_sha256,
                                const char *config_digest, const char *kernel, int64_t now_ns,
                                char ret_id[BERTH_QUALIFICATION_ID_LEN + 1], int64_t *ret_expires_ns,
                                struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    bool passed = false;
    int rc, r;

    if (!j || !backend || !runtime_sha256 || !config_digest || !kernel || !ret_id || !ret_expires_ns)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    /* The newest record decides: a failed re-run ends an earlier pass. */
    if (berth_journal_prepare(j,
                              "SELECT id, expires_at, passed FROM qualifications WHERE backend = ? AND "
                              "runtime_sha256 = ? AND config_digest = ? AND kernel = ? AND qualified_at <= ? "
                              "ORDER BY qualified_at DESC LIMIT 1",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading qualifications", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "reading qualifications", reterr, BERTH_SQL_TEXT(backend),
                           BERTH_SQL_TEXT(runtime_sha256), BERTH_SQL_TEXT(config_digest), BERTH_SQL_TEXT(kernel),
                           BERTH_SQL_INT(now_ns));
    if (r < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const unsigned char *id = sqlite3_column_text(st, 0);
        snprintf(ret_id, BERTH_QUALIFICATION_ID_LEN + 1, "%s", id ? (const char *)id : "");
        *ret_expires_ns = sqlite3_column_int64(st, 1);
        passed = sqlite3_column_int(st, 2) == 1;
    }
    berth_journal_finish(j, st);
    if (rc == SQLITE_DONE || (rc == SQLITE_ROW && (!passed || *ret_expires_ns <= now_ns)))
        return -ENOENT;
    return rc == SQLITE_ROW ? 0 : berth_journal_error(j, "reading qualifications", reterr);
}

int berth_qualification_lookup(struct berth_journal *j, const char *id, struct berth_qualification_binding *ret,
                               struct berth_error *reterr)
{
    sqlite3_stmt *st = NULL;
    int rc, r;

    if (!j || !id || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (berth_journal_prepare(j,
                              "SELECT backend, runtime_sha256, config_digest, kernel, passed, expires_at "
                              "FROM qualifications WHERE id = ?",
                              "preparing a statement", &st, NULL) < 0)
        return berth_journal_error(j, "reading qualifications", reterr);
    r = BERTH_JOURNAL_BIND(j, st, "reading qualifications", reterr, BERTH_SQL_TEXT(id));
    if (r < 0) {
        berth_journal_finish(j, st);
        return r;
    }
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(ret, 0, sizeof(*ret));
        snprintf(ret->backend, sizeof(ret->backend), "%s", (const char *)sqlite3_column_text(st, 0) ?: "");
        snprintf(ret->runtime_sha256, sizeof(ret->runtime_sha256), "%s",
                 (const char *)sqlite3_column_text(st, 1) ?: "");
        snprintf(ret->config_digest, sizeof(ret->config_digest), "%s", (const char *)sqlite3_column_text(st, 2) ?: "");
        snprintf(ret->kernel, sizeof(ret->kernel), "%s", (const char *)sqlite3_column_text(st, 3) ?: "");
        ret->passed = sqlite3_column_int(st, 4) == 1;
        ret->expires_ns = sqlite3_column_int64(st, 5);
    }
    berth_journal_finish(j, st);
    if (rc == SQLITE_DONE)
        return berth_error_set(reterr, -ENOENT, "no qualification %s is recorded", id);
    return rc == SQLITE_ROW ? 0 : berth_journal_error(j, "reading qualifications", reterr);
}
