/* SPDX-License-Identifier: MIT */
/* openssl-error.c -- OpenSSL's reason as a berth error; see openssl-error.h. */
#include <openssl/err.h>

#include "openssl-error.h"

int berth_openssl_error(struct berth_error *reterr, int code, const char *what)
{
    char reason[256] = "";
    unsigned long e = ERR_peek_last_error();

    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    return berth_error_set(reterr, code, "%s%s%s", what, reason[0] ? ": " : "", reason);
}
