/* SPDX-License-Identifier: MIT */
/* session.c -- a worker thread's connection to berthd; see session.h. */
#include <errno.h>
#include <string.h>

#include "canon.h"
#include "macro.h"
#include "session.h"

int worker_session_open(const char *client_path, struct worker_session *s, struct berth_error *reterr)
{
    memset(s, 0, sizeof(*s));
    return berth_https_open(client_path, &s->https, reterr);
}

void worker_session_close(struct worker_session *s)
{
    berth_https_free(s->https);
    memset(s, 0, sizeof(*s));
}

int worker_session_post(struct worker_session *s, const char *path, const json_t *body, int64_t wait_ns,
                        long *ret_status, json_t **ret_reply, struct berth_error *reterr)
{
    _cleanup_free_ char *text = NULL;
    size_t len = 0;
    int r;

    *ret_reply = NULL;
    *ret_status = 0;
    if ((r = berth_json_serialize(body, 0, &text, &len, reterr)) < 0)
        return r;
    berth_https_set_wait(s->https, wait_ns);
    r = berth_https_request(s->https, "POST", path, text, len, ret_status, ret_reply, NULL, NULL, reterr);
    berth_https_set_wait(s->https, 0);
    return r;
}
