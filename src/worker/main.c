/* SPDX-License-Identifier: MIT */
/*
 * berth-worker -- a remote worker of berthd (docs/workers.md): it holds an
 * Ed25519 install identity and a client certificate, and talks to berthd
 * only by outbound HTTPS.
 *
 *   berth-worker enrol --config=FILE --pool=NAME [--json | --dry-run]
 *   berth-worker run --config=FILE
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

#include <berth/version.h>

#include "canon.h"
#include "clock.h"
#include "config.h"
#include "enrol.h"
#include "https.h"
#include "jsonobj.h"
#include "macro.h"
#include "pool.h"
#include "sign.h"
#ifdef BERTH_WITH_IMAGE
#include "worker.h"
#endif

enum { EXIT_USAGE = 2 };

static void usage(FILE *out)
{
    fputs("Usage: berth-worker enrol --config=FILE --pool=NAME [--json | --dry-run]\n"
          "       berth-worker run --config=FILE\n"
          "       berth-worker --version | --help\n"
          "\n"
          "A remote worker of berthd: it runs jobs of the pools the broker's host policy\n"
          "lets it serve, on this host, and talks to berthd only by outbound HTTPS with\n"
          "its own client certificate (docs/workers.md).\n"
          "\n"
          "  enrol     join the pool NAME: read the pool's current manifest from berthd,\n"
          "            sign an enrolment binding this worker's Ed25519 identity (the\n"
          "            configuration's \"identity\") to that manifest's pool_hash, and\n"
          "            send it.  berthd records it in its audit chain when the host\n"
          "            policy's subject of this certificate \"serves\" the pool and its\n"
          "            principal is the worker's \"name\".  An enrolment holds until the\n"
          "            pool's manifest changes; then enrol again.\n"
          "\n"
          "  run       work: poll berthd (outbound only) for the jobs of the pools this\n"
          "            worker enrolled into, claim each with a signed claim, fetch its\n"
          "            image from berthd, run it on the configured runtime (\"runtime\":\n"
          "            runtime-oci on runsc or crun), keep its lease with heartbeats\n"
          "            and report its outcome, signed.  At startup it qualifies its\n"
          "            runtime (\"qualify\") and goes on with the runs it held before a\n"
          "            restart.  SIGTERM or SIGINT: take no new work and stop once the\n"
          "            runs held are reported; a second signal: stop now (berthd then\n"
          "            fences those runs when their leases lapse).  Logs go to stderr.\n"
          "\n"
          "  --config=FILE  the worker's configuration (berth-worker(8): \"name\",\n"
          "                 \"client\", \"identity\"; for run also \"state_directory\",\n"
          "                 \"runtime\", \"slots\"), an absolute path\n"
          "  --pool=NAME    the pool to join\n"
          "  --json         print berthd's answer as JSON\n"
          "  --dry-run      print the signed enrolment (canonical JSON) instead of\n"
          "                 sending it\n"
          "\n"
          "Exit status: 0 success; 1 failure (the message says why: a refusal of\n"
          "berthd's names its status and code); 2 usage error.\n",
          out);
}

static int fail(const char *fmt, ...) BERTH_PRINTF(1, 2);
static int fail(const char *fmt, ...)
{
    va_list ap;

    fputs("berth-worker: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_FAILURE;
}

/* The pool's current pool_hash as berthd reports it, into @hash. */
static int pool_hash_of(struct berth_https *c, const char *pool, char hash[BERTH_HASH_HEX_LEN + 1])
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_json_ json_t *reply = NULL;
    char path[256];
    long status = 0;
    const char *h;

    snprintf(path, sizeof(path), "/v1/pools/%s", pool);
    if (berth_https_request(c, "GET", path, NULL, 0, &status, &reply, NULL, NULL, &err) < 0)
        return fail("%s", err.message);
    if (status != 200) {
        berth_https_error(status, reply, &err);
        return fail("reading pool %s: %s", pool, err.message);
    }
    h = json_string_value(json_object_get(reply, "pool_hash"));
    if (!berth_is_hex(h, BERTH_HASH_HEX_LEN))
        return fail("berthd's answer for pool %s has no pool_hash", pool);
    snprintf(hash, BERTH_HASH_HEX_LEN + 1, "%s", h);
    return EXIT_SUCCESS;
}

static int do_enrol(const char *config, const char *pool, bool json, bool dry_run)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct worker_config cfg = {0};
    struct berth_signing_key *identity = NULL;
    struct berth_https *c = NULL;
    _cleanup_json_ json_t *details = NULL, *reply = NULL;
    _cleanup_free_ char *body = NULL;
    char hash[BERTH_HASH_HEX_LEN + 1];
    size_t len = 0;
    long status = 0;
    int64_t now;
    int rc = EXIT_FAILURE;

    if (worker_config_load(config, &cfg, &err) < 0 || berth_signing_key_load(cfg.identity, &identity, &err) < 0 ||
        berth_https_open(cfg.client, &c, &err) < 0) {
        rc = fail("%s", err.message);
        goto out;
    }
    if ((rc = pool_hash_of(c, pool, hash)) != EXIT_SUCCESS)
        goto out;
    rc = EXIT_FAILURE;
    if (berth_now_ns(CLOCK_REALTIME, &now, &err) < 0 ||
        berth_enrolment_create(identity, hash, cfg.name, now, &details, &err) < 0 ||
        berth_json_serialize(details, 0, &body, &len, &err) < 0) {
        rc = fail("%s", err.message);
        goto out;
    }
    if (dry_run) {
        puts(body);
        rc = EXIT_SUCCESS;
        goto out;
    }
    if (berth_https_request(c, "POST", "/v1/workers/enrolments", body, len, &status, &reply, NULL, NULL, &err) < 0) {
        rc = fail("%s", err.message);
        goto out;
    }
    if (status != 201) {
        berth_https_error(status, reply, &err);
        rc = fail("enrolling into pool %s: %s", pool, err.message);
        goto out;
    }
    if (json) {
        char *text = json_dumps(reply, JSON_COMPACT | JSON_SORT_KEYS);
        if (!text) {
            rc = fail("out of memory");
            goto out;
        }
        puts(text);
        free(text);
    } else {
        printf("berth-worker: %s enrolled into pool %s (pool_hash %s) with key %s\n", cfg.name, pool, hash,
               berth_signing_key_id(identity));
    }
    rc = EXIT_SUCCESS;
out:
    berth_https_free(c);
    berth_signing_key_free(identity);
    worker_config_clear(&cfg);
    return rc;
}

int main(int argc, char **argv)
{
    enum { OPT_CONFIG = 1, OPT_POOL, OPT_JSON, OPT_DRY_RUN, OPT_VERSION };
    static const struct option options[] = {
        {"config", required_argument, NULL, OPT_CONFIG},
        {"pool", required_argument, NULL, OPT_POOL},
        {"json", no_argument, NULL, OPT_JSON},
        {"dry-run", no_argument, NULL, OPT_DRY_RUN},
        {"version", no_argument, NULL, OPT_VERSION},
        {"help", no_argument, NULL, 'h'},
        {},
    };
    const char *config = NULL, *pool = NULL;
    bool json = false, dry_run = false;
    int c;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case OPT_CONFIG: config = optarg; break;
        case OPT_POOL: pool = optarg; break;
        case OPT_JSON: json = true; break;
        case OPT_DRY_RUN: dry_run = true; break;
        case OPT_VERSION: printf("berth-worker %s\n", BERTH_VERSION); return EXIT_SUCCESS;
        case 'h': usage(stdout); return EXIT_SUCCESS;
        default: usage(stderr); return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fputs("berth-worker: missing subcommand (enrol or run)\n", stderr);
        usage(stderr);
        return EXIT_USAGE;
    }
    if ((!streq(argv[optind], "enrol") && !streq(argv[optind], "run")) || optind + 1 != argc) {
        fprintf(stderr, "berth-worker: unknown subcommand or extra arguments: \"%s\" (try --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (!config || config[0] != '/') {
        fprintf(stderr, "berth-worker: %s needs --config=FILE, an absolute path\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (streq(argv[optind], "run")) {
        if (pool || json || dry_run) {
            fputs("berth-worker: run takes only --config\n", stderr);
            return EXIT_USAGE;
        }
#ifdef BERTH_WITH_IMAGE
        return worker_daemon_run(config);
#else
        fputs("berth-worker: run needs the image library: this berth was built without image-oci-local\n", stderr);
        return EXIT_FAILURE;
#endif
    }
    if (!pool || !berth_pool_name_valid(pool)) {
        fputs("berth-worker: enrol needs --pool=NAME, a pool name\n", stderr);
        return EXIT_USAGE;
    }
    return do_enrol(config, pool, json, dry_run);
}
