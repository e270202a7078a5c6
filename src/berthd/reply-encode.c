/* SPDX-License-Identifier: MIT */
/* reply-encode.c -- a reply's JSON body; see reply-encode.h. */
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "reply-encode.h"

char *berthd_reply_encode(struct berth_reply *reply, size_t *ret_len)
{
    json_t *doc = berth_reply_json(reply);
    char *text = NULL, *t;
    size_t len = 0;

    if (!doc || berth_json_serialize(doc, 0, &text, &len, NULL) < 0) {
        reply->status = 500;
        free(text);
        text = strdup("{\"error\":\"internal\",\"message\":\"the reply could not be encoded\"}");
        len = text ? strlen(text) : 0;
    }
    json_decref(doc);
    /* The JSON and its newline, in one piece. */
    if (text) {
        t = realloc(text, len + 2);
        if (t) {
            t[len++] = '\n';
            t[len] = '\0';
            text = t;
        }
    }
    *ret_len = text ? len : 0;
    return text;
}
