/* SPDX-License-Identifier: MIT */
/*
 * audit-key.c -- the audit chain's HMAC key: made, loaded, wiped (audit.h).
 * Apart from audit.c, which appends to and verifies the chain in a journal,
 * so that a program that only makes keys (berthctl dev-init) does not link
 * the journal's SQLite.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "audit.h"
#include "encoding.h"
#include "fsutil.h"

void berth_audit_key_wipe(struct berth_audit_key *key)
{
    if (key)
        sodium_memzero(key, sizeof(*key));
}

int berth_audit_key_create(const char *path, struct berth_error *reterr)
{
    struct berth_audit_key key;
    char text[BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) + 2];
    int r;

    if (getrandom(key.bytes, sizeof(key.bytes), 0) != (ssize_t)sizeof(key.bytes))
        return berth_error_set(reterr, -EIO, "getrandom failed");
    berth_hex_encode(key.bytes, sizeof(key.bytes), text);
    text[BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN)] = '\n';
    text[BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) + 1] = '\0';
    r = berth_publish_path(path, text, BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) + 1, 0600, 0, reterr);
    sodium_memzero(text, sizeof(text));
    berth_audit_key_wipe(&key);
    return r;
}

int berth_audit_key_load(const char *path, struct berth_audit_key *ret, struct berth_error *reterr)
{
    const struct berth_file_expect expect = {
        .type = S_IFREG,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 07777,
        .mode = 0600,
        .max_size = 128,
        .one_link = 1,
    };
    char *text = NULL;
    size_t len = 0;
    int r;

    if (!path || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_read_file_at(AT_FDCWD, path, &expect, &text, &len, reterr);
    if (r < 0)
        return r;
    if (len == BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) + 1 && text[len - 1] == '\n')
        len--;
    if (len != BERTH_HEX_LEN(BERTH_AUDIT_KEY_LEN) || berth_hex_decode(text, len, ret->bytes, sizeof(ret->bytes)) < 0)
        r = berth_error_set(reterr, -EBADMSG, "%s: an audit key is 64 lowercase hex digits and a newline", path);
    sodium_memzero(text, len);
    free(text);
    return r;
}
