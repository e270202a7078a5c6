/* SPDX-License-Identifier: MIT */
/* cmd-journal.c -- berthctl journal stats: berthd's journal and retention figures, over the API. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "berthctl.h"
#include "client.h"
#include "clock.h"
#include "jsonobj.h"
#include "macro.h"

#define VERB "journal"

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl [--config=CLIENT.json] journal stats [--json]\n"
                 "\n"
                 "Ask berthd (GET /v1/journal/stats; an admin grant is needed) for the figures of\n"
                 "its journal and its retention:\n"
                 "  jobs          job records per state, and how many are retained of the\n"
                 "                journal's max_retained_jobs\n"
                 "  tombstones    jobs pruned by retention (they do not count against\n"
                 "                max_retained_jobs; an identical retry of one still gets its\n"
                 "                receipt, its result answers 410 pruned)\n"
                 "  journal       the journal file's size and the part of it free for reuse\n"
                 "  retention     retention.jobs_ns and retention.outputs_ns of berthd.json\n"
                 "  next expiry   when the oldest finished job is due for pruning (\"due\" while\n"
                 "                pruning catches up) and when the next captured outputs expire\n"
                 "  evidence      objects and bytes of the evidence store, when there is one\n"
                 "--json prints the broker's document in canonical JSON.\n"
                 "\n"
                 "Exit status: 0 success; 1 refused or failed; 2 usage error.\n");
}

/* "2 s", "7 d", ... for a duration given as an ns string; "never" for "0". */
static void print_duration(const json_t *v)
{
    int64_t ns = 0;

    if (berth_json_ns_value(v, &ns) < 0 || ns <= 0) {
        fputs("never", stdout);
        return;
    }
    if (ns % (86400 * BERTH_NS_PER_SEC) == 0)
        printf("%lld d", (long long)(ns / (86400 * BERTH_NS_PER_SEC)));
    else if (ns % BERTH_NS_PER_SEC == 0)
        printf("%lld s", (long long)(ns / BERTH_NS_PER_SEC));
    else
        printf("%" PRId64 " ns", ns);
}

/* An instant (ns string) in UTC and relative to now; "none" for null. */
static void print_instant(const json_t *v, int64_t now)
{
    char text[64];
    int64_t ns = 0;
    time_t secs;
    struct tm tm;

    if (!v || json_is_null(v) || berth_json_ns_value(v, &ns) < 0) {
        fputs("none", stdout);
        return;
    }
    secs = (time_t)(ns / BERTH_NS_PER_SEC);
    if (!gmtime_r(&secs, &tm) || !strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(text, sizeof(text), "%" PRId64 " ns", ns);
    if (ns <= now)
        printf("%s (due)", text);
    else
        printf("%s (in %.1f s)", text, (double)(ns - now) / 1e9);
}

static int print_stats(const json_t *b)
{
    const json_t *jobs = json_object_get(b, "jobs"), *ev = json_object_get(b, "evidence"), *v;
    const json_t *next = json_object_get(b, "next_expiry"), *ret = json_object_get(b, "retention");
    const char *state;
    bool first = true;
    int64_t now = 0;

    (void)berth_now_ns(CLOCK_REALTIME, &now, NULL);
    fputs("jobs:        ", stdout);
    json_object_foreach((json_t *)jobs, state, v)
    {
        printf("%s%s %" JSON_INTEGER_FORMAT, first ? "" : ", ", state, json_integer_value(v));
        first = false;
    }
    printf("\nretained:    %" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT " (max_retained_jobs)\n",
           json_integer_value(json_object_get(b, "retained")), json_integer_value(json_object_get(b, "max_retained")));
    printf("tombstones:  %" JSON_INTEGER_FORMAT " pruned jobs (not counted against max_retained_jobs)\n",
           json_integer_value(json_object_get(b, "tombstones")));
    printf("journal:     %" JSON_INTEGER_FORMAT " bytes, %" JSON_INTEGER_FORMAT " of them free for reuse\n",
           json_integer_value(json_object_get(b, "journal_bytes")),
           json_integer_value(json_object_get(b, "journal_free_bytes")));
    fputs("retention:   jobs ", stdout);
    print_duration(json_object_get(ret, "jobs_ns"));
    fputs(", outputs ", stdout);
    print_duration(json_object_get(ret, "outputs_ns"));
    fputs("\nnext expiry: jobs ", stdout);
    print_instant(json_object_get(next, "jobs"), now);
    fputs(", outputs ", stdout);
    print_instant(json_object_get(next, "outputs"), now);
    if (!ev || json_is_null(ev))
        fputs("\nevidence:    no evidence store\n", stdout);
    else
        printf("\nevidence:    %" JSON_INTEGER_FORMAT " objects, %" JSON_INTEGER_FORMAT " bytes, %" JSON_INTEGER_FORMAT
               " tombstones\n",
               json_integer_value(json_object_get(ev, "objects")), json_integer_value(json_object_get(ev, "bytes")),
               json_integer_value(json_object_get(ev, "tombstones")));
    return fflush(stdout) == 0 ? BCTL_EXIT_OK : bctl_error(VERB, "writing standard output failed");
}

static int do_stats(const struct bctl_globals *g)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_https *c = NULL;
    json_t *body = NULL;
    long status = 0;
    int r;

    if ((r = bctl_client_open(g, VERB, &c)) != BCTL_EXIT_OK)
        return r;
    if (berth_https_request(c, "GET", "/v1/journal/stats", NULL, 0, &status, &body, NULL, NULL, &err) < 0)
        r = bctl_error(VERB, "%s", err.message);
    else if (status != 200)
        r = bctl_client_fail(VERB, status, body);
    else if (!json_is_object(body) || !json_is_object(json_object_get(body, "jobs")))
        r = bctl_error(VERB, "the broker's reply to /v1/journal/stats is not a statistics document");
    else
        r = g->json ? bctl_print_json(VERB, body, true) : print_stats(body);
    json_decref(body);
    berth_https_free(c);
    return r;
}

int cmd_journal(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    int c, gr;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if ((gr = bctl_global_option(g, VERB, c, optarg)) != 0) {
            if (gr < 0)
                return -gr;
            continue;
        }
        switch (c) {
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint(VERB);
        }
    }
    if (optind >= argc)
        return bctl_usage_error(VERB, "missing subcommand (stats)");
    if (!streq(argv[optind], "stats"))
        return bctl_usage_error(VERB, "unknown subcommand \"%s\"", argv[optind]);
    if (argc - optind != 1)
        return bctl_usage_error(VERB, "stats takes no arguments");
    return do_stats(g);
}
