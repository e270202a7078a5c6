/* SPDX-License-Identifier: MIT */
/*
 * cmd-qualify.c -- berthctl qualify BACKEND: run the live probes (qualify/probes.h)
 * in real sandboxes of one backend configured in berthd.json, sign the
 * outcome with the broker's receipt key and record it in berthd's journal
 * (qualification.h); berth_qualify_backend() (qualify/qualify.h) is the
 * sequence, the one berthd runs at startup too.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "berthctl.h"
#include "berthd-config.h"
#include "canon.h"
#include "fsutil.h"
#include "backend-load.h"
#include "host-table.h"
#include "journal.h"
#include "jsonobj.h"
#include "macro.h"
#include "loader.h"
#include "qualify.h"
#include "sign.h"

#define VERB "qualify"
#define DEFAULT_BERTHD_CONFIG "/etc/berth/berthd.json"
#define DEFAULT_VALIDITY_DAYS 30
#define NS_PER_DAY (86400LL * 1000000000LL)

#ifndef BERTH_PROBE_PATH
#error "BERTH_PROBE_PATH must name the installed berth-probe"
#endif

static void help(FILE *out)
{
    fprintf(out,
            "Usage: berthctl qualify BACKEND [--berthd-config=FILE] [--probe=PATH]\n"
            "                        [--validity-days=N] [--out=FILE] [--json]\n"
            "\n"
            "Qualify the runtime backend BACKEND of berthd's configuration: run live probes\n"
            "as real jobs in real sandboxes of that backend (through its plugin, exactly as\n"
            "berthd runs jobs) and record the outcome, signed with berthd's receipt key, in\n"
            "berthd's journal.  When every probe passed, berthd offers the backend to\n"
            "placement as qualified until the qualification expires, the runtime binary\n"
            "changes (its pinned SHA-256), the backend's configuration changes or the kernel\n"
            "changes.  A failed run is recorded too, and the newest record decides, so a\n"
            "failure ends an earlier qualification.  A backend without a current one gets\n"
            "no work unless berthd.json says \"require_qualification\": false.\n"
            "\n"
            "Probes: the root filesystem is read-only; uid and gid are not 0 and no\n"
            "capability is held; /tmp stops with ENOSPC at its size; only lo exists, and a\n"
            "TCP connect and a DNS query to listeners this command opens on the host's\n"
            "127.0.0.1 both fail; a fork bomb stops at the pids limit; a job that leaves a\n"
            "detached child behind is fully reaped; cancel kills a job and its child;\n"
            "output over the bound is cut and reported; a job ignoring SIGTERM is killed at\n"
            "its deadline; a staged input is readable and nothing under /inputs can be\n"
            "written; a declared output is captured exactly and writing past\n"
            "artifact_bytes fails with ENOSPC (the last two are \"not_applicable\" on a\n"
            "backend that does not report the \"inputs\" / \"outputs\" capability).  A run\n"
            "takes 10 to 20 seconds.\n"
            "\n"
            "Run it as the user berthd runs as (root), while berthd is stopped: the journal\n"
            "is locked by a running berthd.\n"
            "\n"
            "Options:\n"
            "      --berthd-config=FILE  berthd's configuration (default %s)\n"
            "      --probe=PATH          the probe program, statically linked (default\n"
            "                            %s)\n"
            "      --validity-days=N     how long the qualification holds, 1 to 365 days\n"
            "                            (default %d)\n"
            "      --out=FILE            also write the signed qualification to FILE (a new\n"
            "                            file); check it with \"berthctl qualification verify\"\n"
            "      --json                print the report (the probes and the signed record)\n"
            "                            as JSON\n"
            "  -h, --help                show this help\n"
            "\n"
            "Exit status: 0 qualified and recorded; 1 a probe failed (the failure is\n"
            "recorded; --out writes nothing) or the backend, journal or key could not be\n"
            "used; 2 usage error.\n"
            "\n"
            "Example:\n"
            "  systemctl stop berthd && berthctl qualify runsc && systemctl start berthd\n",
            DEFAULT_BERTHD_CONFIG, BERTH_PROBE_PATH, DEFAULT_VALIDITY_DAYS);
}

static void log_sink(void *userdata, int level, const char *line)
{
    (void)userdata;
    if (level <= BERTH_LOG_WARNING)
        fprintf(stderr, "berthctl qualify: %s\n", line);
}

/* What begin() and progress() need. */
struct qrun {
    const struct bctl_globals *g;
    const char *backend;
};

static void progress(void *userdata, const char *name, const char *outcome, const char *detail)
{
    const struct bctl_globals *g = ((const struct qrun *)userdata)->g;

    if (g->json)
        return;
    printf("  %-15s %-25s ", streq(outcome, "pass") ? "pass" : streq(outcome, "fail") ? "FAIL" : outcome, name);
    bctl_fputs_clean(detail, stdout);
    printf("\n");
    fflush(stdout);
}

enum { OPT_BERTHD_CONFIG = 0x200, OPT_PROBE, OPT_VALIDITY, OPT_OUT };

struct qopts {
    const char *backend;
    char *berthd_config, *probe, *out;
    long validity_days;
};

static int parse(struct bctl_globals *g, int argc, char **argv, struct qopts *o)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"berthd-config", required_argument, NULL, OPT_BERTHD_CONFIG},
        {"probe", required_argument, NULL, OPT_PROBE},
        {"validity-days", required_argument, NULL, OPT_VALIDITY},
        {"out", required_argument, NULL, OPT_OUT},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    char *end;
    int ch, r;

    o->validity_days = DEFAULT_VALIDITY_DAYS;
    while ((ch = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        r = bctl_global_option(g, VERB, ch, optarg);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h': help(stdout); return -1;
        case OPT_BERTHD_CONFIG:
            if ((r = bctl_absolute_arg(VERB, "--berthd-config", optarg, &o->berthd_config)) != 0)
                return r;
            break;
        case OPT_PROBE:
            if ((r = bctl_absolute_arg(VERB, "--probe", optarg, &o->probe)) != 0)
                return r;
            break;
        case OPT_OUT:
            if ((r = bctl_absolute_arg(VERB, "--out", optarg, &o->out)) != 0)
                return r;
            break;
        case OPT_VALIDITY:
            errno = 0;
            o->validity_days = strtol(optarg, &end, 10);
            if (errno || *end || end == optarg || o->validity_days < 1 || o->validity_days > 365)
                return bctl_usage_error(VERB, "--validity-days takes whole days from 1 to 365, not \"%s\"", optarg);
            break;
        default: return bctl_usage_hint(VERB);
        }
    }
    if (optind + 1 != argc)
        return bctl_usage_error(VERB, "usage: berthctl qualify BACKEND [options]");
    o->backend = argv[optind];
    if (!o->berthd_config && !(o->berthd_config = strdup(DEFAULT_BERTHD_CONFIG)))
        return BCTL_EXIT_FAIL;
    if (!o->probe && !(o->probe = strdup(BERTH_PROBE_PATH)))
        return BCTL_EXIT_FAIL;
    return 0;
}

/* Before the probes run: what is being qualified. */
static void begin(void *userdata, const json_t *caps)
{
    const struct qrun *q = userdata;
    const json_t *rt = json_object_get(caps, "runtime");

    if (q->g->json)
        return;
    printf("berthctl qualify: backend %s (%s, runtime %s %s)\n", q->backend,
           json_string_value(json_object_get(caps, "isolation")), json_string_value(json_object_get(rt, "path")),
           json_string_value(json_object_get(rt, "version")));
    fflush(stdout);
}

static int qualify(struct bctl_globals *g, struct qopts *o)
{
    struct berthd_config cfg = {0};
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_logger logger = {.sink = log_sink, .max_level = BERTH_LOG_WARNING};
    struct berthd_backend_instance inst = {0};
    struct berth_plugin_handle *plugin = NULL;
    struct berth_journal *journal = NULL;
    struct berth_signing_key *key = NULL;
    const struct berthd_backend_config *bc = NULL;
    struct berth_qualify_outcome out = {0};
    _cleanup_free_ char *wd = NULL, *journal_path = NULL, *text = NULL;
    size_t len = 0, i;
    int r, rc = BCTL_EXIT_FAIL;

    if ((r = berthd_config_load(o->berthd_config, BERTH_PLUGINDIR, &cfg, &err)) < 0) {
        bctl_error(VERB, "%s: %s", o->berthd_config, err.message);
        goto out;
    }
    for (i = 0; i < cfg.n_backends; i++)
        if (streq(cfg.backends[i].name, o->backend))
            bc = &cfg.backends[i];
    if (!bc) {
        rc = bctl_usage_error(VERB, "%s has no backend \"%s\"", o->berthd_config, o->backend);
        goto out;
    }
    /* The journal first: a running berthd holds it (and its backends' state). */
    if (mkdir(cfg.state_directory, 0700) < 0 && errno != EEXIST) {
        bctl_error(VERB, "cannot create %s: %m", cfg.state_directory);
        goto out;
    }
    if (asprintf(&journal_path, "%s/journal.db", cfg.state_directory) < 0)
        goto out;
    if ((r = berth_journal_open(journal_path, BERTH_JOURNAL_CREATE, &journal, &err)) < 0) {
        bctl_error(VERB, "%s: %s%s", journal_path, err.message,
                   r == -EBUSY || r == -EWOULDBLOCK ? " (is berthd running? stop it first)" : "");
        goto out;
    }
    if ((r = berthd_backend_load(cfg.plugin_directory, bc, BERTH_PLUGIN_RUNTIME, &logger, &inst, &err)) < 0) {
        bctl_error(VERB, "backend %s: %s", bc->name, err.message);
        goto out;
    }
    plugin = inst.plugin;
    if ((r = berth_signing_key_load(cfg.receipt_key, &key, &err)) < 0) {
        bctl_error(VERB, "receipt_key %s: %s", cfg.receipt_key, err.message);
        goto out;
    }
    if ((r = berth_qualify_work_dir(cfg.state_directory, &wd, &err)) < 0) {
        bctl_error(VERB, "%s", err.message);
        goto out;
    }
    {
        struct qrun q = {.g = g, .backend = bc->name};
        const struct berth_qualify_backend_params qp = {
            .broker = cfg.broker_name,
            .backend = bc->name,
            .plugin = plugin,
            .config = bc->config,
            .containment = inst.containment_identity,
            .containment_ops = inst.containment ? &inst.binding.table : NULL,
            .containment_state = inst.containment ? &inst.binding : NULL,
            .probe = o->probe,
            .work_dir = wd,
            .key = key,
            .journal = journal,
            .validity_ns = o->validity_days * NS_PER_DAY,
            .now_ns = bctl_now_ns,
            .reuse_current = false, /* a deliberate re-run: its record is the newest */
            .begin = begin,
            .progress = progress,
            .userdata = &q,
        };
        if ((r = berth_qualify_backend(&qp, &out, &err)) < 0) {
            bctl_error(VERB, "backend %s cannot be qualified: %s", bc->name, err.message);
            goto out;
        }
    }
    if (out.passed && o->out &&
        (berth_json_serialize(out.envelope, 0, &text, &len, &err) < 0 ||
         berth_publish_path(o->out, text, len, 0644, 0, &err) < 0)) {
        bctl_error(VERB, "recorded, but cannot write %s: %s", o->out, err.message);
        goto out;
    }
    if (g->json) {
        _cleanup_json_ json_t *report = json_pack("{s:s, s:b, s:O, s:O*}", "backend", bc->name, "qualified", out.passed,
                                                  "probes", out.probes, "qualification", out.envelope);
        rc = report ? bctl_print_json(VERB, report, true) : BCTL_EXIT_FAIL;
        if (rc == BCTL_EXIT_OK && !out.passed)
            rc = BCTL_EXIT_FAIL;
    } else if (out.passed) {
        const json_t *q = json_object_get(out.envelope, "qualification");
        printf("berthctl qualify: backend %s qualified: %s, recorded in %s, expires_at %s (%ld days)\n", bc->name,
               out.id, journal_path, json_string_value(json_object_get(q, "expires_at")), o->validity_days);
        rc = BCTL_EXIT_OK;
    } else {
        bctl_error(VERB,
                   "backend %s is NOT qualified: a probe failed; the failure is recorded, which ends any "
                   "earlier qualification of this configuration",
                   bc->name);
    }
out:
    berth_qualify_outcome_clear(&out);
    berth_journal_close(journal);
    berth_signing_key_free(key);
    berthd_backend_unload(&inst);
    berthd_config_clear(&cfg);
    return rc;
}

int cmd_qualify(struct bctl_globals *g, int argc, char **argv)
{
    struct qopts o = {0};
    int r = parse(g, argc, argv, &o);

    if (r == 0)
        r = qualify(g, &o);
    else if (r < 0)
        r = BCTL_EXIT_OK; /* --help */
    free(o.berthd_config);
    free(o.probe);
    free(o.out);
    return r;
}
