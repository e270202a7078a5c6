/* SPDX-License-Identifier: MIT */
/* cmd-image-cache.c -- berthctl image cache ls|prune: berthd's root cache, over the API (an admin grant). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "berthctl.h"
#include "client.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"

#define VERB "image cache"

/* An ns string as a UTC instant. */
static void print_utc(const json_t *v)
{
    char text[64];
    int64_t ns = 0;
    time_t secs;
    struct tm tm;

    if (berth_json_ns_value(v, &ns) < 0) {
        fputs("-", stdout);
        return;
    }
    secs = (time_t)(ns / BERTH_NS_PER_SEC);
    if (!gmtime_r(&secs, &tm) || !strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(text, sizeof(text), "%" PRId64, ns);
    fputs(text, stdout);
}

static int print_cache(const json_t *b, bool prune)
{
    const json_t *roots = json_object_get(b, "roots"), *e;
    size_t i;

    if (prune)
        printf("removed %" JSON_INTEGER_FORMAT " unused roots (%" JSON_INTEGER_FORMAT " bytes)\n",
               json_integer_value(json_object_get(b, "removed")), json_integer_value(json_object_get(b, "removed_bytes")));
    printf("%-71s %12s %8s %4s %-20s %s\n", "DIGEST", "BYTES", "ENTRIES", "JOBS", "LAST USED", "VERIFIED");
    json_array_foreach(roots, i, e)
    {
        printf("%-71s %12" JSON_INTEGER_FORMAT " %8" JSON_INTEGER_FORMAT " %4" JSON_INTEGER_FORMAT " ",
               json_string_value(json_object_get(e, "digest")), json_integer_value(json_object_get(e, "bytes")),
               json_integer_value(json_object_get(e, "entries")), json_integer_value(json_object_get(e, "jobs")));
        print_utc(json_object_get(e, "last_used_ns"));
        printf(" %s\n", json_is_true(json_object_get(e, "verified")) ? "yes" : "no");
    }
    printf("%zu roots, %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " bytes\n", json_array_size(roots),
           json_integer_value(json_object_get(b, "bytes")), json_integer_value(json_object_get(b, "max_bytes")));
    return BCTL_EXIT_OK;
}

int cmd_image_cache(const struct bctl_globals *g, const char *action)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_https *c = NULL;
    json_t *body = NULL;
    long status = 0;
    bool prune;
    int r;

    if (!streq(action, "ls") && !streq(action, "prune"))
        return bctl_usage_error("image", "cache takes ls or prune, not \"%s\"", action);
    prune = streq(action, "prune");
    if ((r = bctl_client_open(g, VERB, &c)) != BCTL_EXIT_OK)
        return r;
    if (berth_https_request(c, prune ? "POST" : "GET", prune ? "/v1/images/cache/prune" : "/v1/images/cache", "", 0,
                            &status, &body, NULL, NULL, &err) < 0)
        r = bctl_error(VERB, "%s", err.message);
    else if (status != 200)
        r = bctl_client_fail(VERB, status, body);
    else if (!json_is_object(body) || !json_is_array(json_object_get(body, "roots")))
        r = bctl_error(VERB, "the broker's reply is not a root cache document");
    else
        r = g->json ? bctl_print_json(VERB, body, true) : print_cache(body, prune);
    json_decref(body);
    berth_https_free(c);
    return r;
}
