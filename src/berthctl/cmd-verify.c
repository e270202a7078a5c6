/* SPDX-License-Identifier: MIT */
/*
 * cmd-verify.c -- berthctl receipt verify and result verify: offline
 * checks of broker-signed documents with the broker's public key alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "berthctl.h"
#include "canon.h"
#include "digest.h"
#include "enrol.h"
#include "fsutil.h"
#include "job.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"
#include "receipt.h"
#include "sign.h"

#define DOC_MAX (16 * 1024 * 1024)

static void help(void)
{
    printf("Usage: berthctl receipt verify FILE --pubkey=PUB [--job=JOB.json] [--json]\n"
           "       berthctl result verify FILE --job=JOB.json --pubkey=PUB [--receipt=RECEIPT.json]\n"
           "                              [--outputs=DIR] [--json]\n"
           "       berthctl qualification verify FILE --pubkey=PUB [--json]\n"
           "\n"
           "Check a receipt, result or backend qualification (berthctl qualify --out)\n"
           "offline, with nothing but the broker's public key.  All are envelopes\n"
           "{\"receipt\"|\"result\"|\"qualification\": BODY, \"signature\": SIG} where SIG is an\n"
           "Ed25519 signature (RFC 8032) over the canonical JSON of BODY.  A result of a\n"
           "remote worker's run also carries the worker's signed claim and report: they\n"
           "must be signed by the worker's key, of this job, and say what the result says\n"
           "(docs/workers.md).\n"
           "\n"
           "  --pubkey=PUB        the broker's public key: a PEM \"PUBLIC KEY\" file such as\n"
           "                      keys/receipt.pub, or a file holding its 43-character\n"
           "                      base64url form\n"
           "  --job=JOB.json      the job document: the receipt or result must name this job\n"
           "                      (its id and the digest of its canonical form); required\n"
           "                      for result verify, where it also bounds the output size\n"
           "  --receipt=FILE      result verify only: the result must carry this receipt's\n"
           "                      digest\n"
           "  --outputs=DIR       result verify only: every output the result lists must be\n"
           "                      the file DIR/ID (no symlink) with exactly the size and\n"
           "                      digest the result signs (berthctl collect --out writes\n"
           "                      them to OUT/outputs)\n"
           "\n"
           "On success the document's main facts are printed (--json: the verified body).\n"
           "Exit status: 0 verified; 3 the document does not verify; 1 a file cannot be\n"
           "read, or a qualification that verifies records a failed run or has expired;\n"
           "2 usage error.\n");
}

/* Print what a verified qualification says; 0 only when it passed and has not expired. */
static int qualification_summary(const char *verb, const json_t *body)
{
    const json_t *pr;
    size_t i, passed = 0, na = 0, n = json_array_size(json_object_get(body, "probes"));
    int64_t expires = 0, now;
    char line[1024];
    int r;

    json_array_foreach(json_object_get(body, "probes"), i, pr)
    {
        const char *outcome = json_string_value(json_object_get(pr, "outcome"));
        passed += streq_ptr(outcome, "pass");
        na += streq_ptr(outcome, "not_applicable");
    }
    (void)berth_json_ns_value(json_object_get(body, "expires_at"), &expires);
    snprintf(line, sizeof(line),
             "qualification verified: %s, backend %s, runtime %s (%s) on kernel %s: %zu of %zu probes passed, %zu not "
             "applicable; expires_at %s; signed by %s\n",
             json_string_value(json_object_get(body, "id")), json_string_value(json_object_get(body, "backend")),
             json_string_value(json_object_get(json_object_get(body, "runtime"), "path")),
             json_string_value(json_object_get(json_object_get(body, "runtime"), "sha256")),
             json_string_value(json_object_get(body, "kernel")), passed, n, na,
             json_string_value(json_object_get(body, "expires_at")),
             json_string_value(json_object_get(body, "key_id")));
    bctl_fputs_clean(line, stdout);
    if (!json_is_true(json_object_get(body, "passed")) || passed + na != n)
        return bctl_error(verb, "the signature is good, but this records a FAILED qualification");
    if ((r = bctl_now(verb, &now)) != BCTL_EXIT_OK)
        return r;
    if (expires <= now)
        return bctl_error(verb, "the signature is good, but this qualification has expired");
    return BCTL_EXIT_OK;
}

static int read_json(const char *verb, const char *file, json_t **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (bctl_read_input(file, DOC_MAX, &text, &len, &err) < 0)
        return bctl_error(verb, "%s: %s", bctl_input_name(file), err.message);
    if (berth_json_parse(text, len, DOC_MAX, ret, &err) < 0) {
        bctl_error(verb, "%s: %s", bctl_input_name(file), err.message);
        return BCTL_EXIT_VERIFY;
    }
    return BCTL_EXIT_OK;
}

/* Every output the verified result @body lists is DIR/<id> with its size and digest. */
static int check_outputs(const char *verb, const char *dir, const json_t *body)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_close_ int dirfd = -1;
    const json_t *o;
    size_t i;

    dirfd = berth_open_trusted(dir, O_RDONLY | O_DIRECTORY, 0, &err);
    if (dirfd < 0)
        return bctl_error(verb, "--outputs %s: %s", dir, err.message);
    json_array_foreach(json_object_get(body, "outputs"), i, o)
    {
        const char *id = json_string_value(json_object_get(o, "id"));
        _cleanup_close_ int fd = -1;

        if (!berth_job_id_valid(id)) {
            bctl_error(verb, "output \"%s\" is not a file name", id);
            return BCTL_EXIT_VERIFY;
        }
        fd = berth_open_beneath(dirfd, id, O_RDONLY, 0, &err);
        if (fd < 0 || berth_digest_fd_matches(fd, (uint64_t)json_integer_value(json_object_get(o, "size")),
                                              json_string_value(json_object_get(o, "digest")), &err) < 0) {
            bctl_error(verb, "output %s (%s/%s) does NOT verify: %s", id, dir, id, err.message);
            return BCTL_EXIT_VERIFY;
        }
        printf("output %s verified: %s, %lld bytes\n", id, json_string_value(json_object_get(o, "digest")),
               (long long)json_integer_value(json_object_get(o, "size")));
    }
    return BCTL_EXIT_OK;
}

static int read_job(const char *verb, const char *file, struct berth_job **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (bctl_read_input(file, BERTH_JOB_MAX, &text, &len, &err) < 0)
        return bctl_error(verb, "--job %s: %s", file, err.message);
    if (berth_job_parse(text, len, ret, &err) < 0)
        return bctl_error(verb, "--job %s: %s", file, err.message);
    return BCTL_EXIT_OK;
}

int cmd_verify(struct bctl_globals *g, int argc, char **argv)
{
    enum { OPT_PUBKEY = 0x200, OPT_JOB, OPT_RECEIPT, OPT_OUTPUTS };
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"pubkey", required_argument, NULL, OPT_PUBKEY},
        {"job", required_argument, NULL, OPT_JOB},
        {"receipt", required_argument, NULL, OPT_RECEIPT},
        {"outputs", required_argument, NULL, OPT_OUTPUTS},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    const char *verb = argv[0] + strlen("berthctl ");
    bool is_result = streq(verb, "result"), is_qualification = streq(verb, "qualification");
    const char *pubkey = NULL, *job_file = NULL, *receipt_file = NULL, *outputs_dir = NULL;
    struct berth_error err = BERTH_ERROR_INIT;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    struct berth_job *job = NULL;
    json_t *doc = NULL, *receipt = NULL;
    const json_t *body = NULL;
    int ch, r;

    while ((ch = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        r = bctl_global_option(g, verb, ch, optarg);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (ch) {
        case 'h': help(); return BCTL_EXIT_OK;
        case OPT_PUBKEY: pubkey = optarg; break;
        case OPT_JOB: job_file = optarg; break;
        case OPT_RECEIPT:
            if (!is_result)
                return bctl_usage_error(verb, "--receipt belongs to result verify");
            receipt_file = optarg;
            break;
        case OPT_OUTPUTS:
            if (!is_result)
                return bctl_usage_error(verb, "--outputs belongs to result verify");
            outputs_dir = optarg;
            break;
        default: return bctl_usage_hint(verb);
        }
    }
    if (optind + 2 != argc || !streq(argv[optind], "verify"))
        return bctl_usage_error(verb, "usage: berthctl %s verify FILE --pubkey=PUB ...", verb);
    if (!pubkey)
        return bctl_usage_error(verb, "--pubkey=PUB is required");
    if (is_result && !job_file)
        return bctl_usage_error(verb, "--job=JOB.json is required: a result is only meaningful for its job");
    if ((r = bctl_read_pubkey(verb, pubkey, pub)) != BCTL_EXIT_OK || (job_file && (r = read_job(verb, job_file, &job))) ||
        (receipt_file && (r = read_json(verb, receipt_file, &receipt))) ||
        (r = read_json(verb, argv[optind + 1], &doc)) != BCTL_EXIT_OK)
        goto out;
    if (is_qualification && job)
        r = bctl_usage_error(verb, "--job belongs to receipt and result verify");
    else if (is_qualification)
        r = berth_qualification_verify(doc, pub, &body, &err);
    else if (is_result)
        r = berth_result_verify(doc, pub, job, receipt, &body, &err);
    else
        r = berth_receipt_verify(doc, pub, job, &body, &err);
    if (r == BCTL_EXIT_USAGE)
        goto out;
    if (r < 0) {
        bctl_error(verb, "%s does NOT verify: %s", argv[optind + 1], err.message);
        r = BCTL_EXIT_VERIFY;
        goto out;
    }
    if (outputs_dir && (r = check_outputs(verb, outputs_dir, body)) != BCTL_EXIT_OK)
        goto out;
    if (g->json) {
        r = bctl_print_json(verb, body, true);
    } else if (is_qualification) {
        r = qualification_summary(verb, body);
    } else if (is_result) {
        const json_t *code = json_object_get(body, "exit_code");
        printf("result verified: job %s, status %s", json_string_value(json_object_get(body, "job_id")),
               json_string_value(json_object_get(body, "status")));
        if (json_is_integer(code))
            printf(", exit code %lld", (long long)json_integer_value(code));
        if (json_is_string(json_object_get(body, "reason"))) {
            fputs(", reason ", stdout);
            bctl_fputs_clean(json_string_value(json_object_get(body, "reason")), stdout);
        }
        printf(", signed by %s%s", json_string_value(json_object_get(body, "key_id")),
               receipt ? ", bound to the receipt" : "");
        if (json_object_get(body, "worker")) {
            const json_t *claim = json_object_get(json_object_get(json_object_get(body, "worker"), "claim"), "claim");
            fputs(", run by worker ", stdout);
            bctl_fputs_clean(json_string_value(json_object_get(json_object_get(body, "worker"), "name")), stdout);
            printf(" (key %s; its claim and report verified)", json_string_value(json_object_get(claim, "keyid")));
        }
        putchar('\n');
        r = BCTL_EXIT_OK;
    } else {
        printf("receipt verified: job %s of %s in pool %s on backend %s, signed by %s%s\n",
               json_string_value(json_object_get(body, "job_id")),
               json_string_value(json_object_get(body, "principal")), json_string_value(json_object_get(body, "pool")),
               json_string_value(json_object_get(body, "backend")), json_string_value(json_object_get(body, "key_id")),
               job ? ", for that job" : "");
        r = BCTL_EXIT_OK;
    }
out:
    json_decref(doc);
    json_decref(receipt);
    berth_job_free(job);
    return r;
}
