/* SPDX-License-Identifier: MIT */
/* cmd-audit.c -- berthctl audit: keys, export and offline verification. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "berthctl.h"
#include "buf.h"
#include "fsutil.h"
#include "journal.h"
#include "jsonobj.h"
#include "macro.h"
#include "poolchain.h"
#include "utf8.h"

#define VERB "audit"
/** Largest export "audit verify" reads: 1 GiB. */
#define EXPORT_MAX ((size_t)1 << 30)

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl audit keygen --out=FILE\n"
                 "       berthctl --journal=PATH audit export [--after=SEQ] [--out=FILE]\n"
                 "       berthctl audit verify FILE --audit-key=KEY [--anchor=SEQ:MAC] [--pubkey=PUB]\n"
                 "\n"
                 "berth records every pool change, placement, refusal, enrolment and claim\n"
                 "as an event in an HMAC-SHA256 chain: each event carries the MAC of the\n"
                 "previous one (\"prev\") and its own (\"mac\"), computed with the audit key\n"
                 "over the event's canonical JSON.  Changing any byte of any event, or\n"
                 "removing, reordering or inserting events, breaks the chain there.\n"
                 "\n"
                 "  keygen    write a new random audit key (64 hex digits) to FILE, mode 0600;\n"
                 "            an existing FILE is never overwritten\n"
                 "  export    write the chain as JSON Lines (one canonical event per line) to\n"
                 "            standard output or, with --out, atomically to a new FILE (0600);\n"
                 "            --after=SEQ starts after that event\n"
                 "  verify    check an exported chain offline, with the key alone: every\n"
                 "            line, link and MAC, and every pool rule (manifests hash to\n"
                 "            their pool_hash, placements re-derive from pool and overrides,\n"
                 "            enrolments and claims carry valid worker signatures, and no run\n"
                 "            is claimed twice); names the first bad event and why.  With\n"
                 "            --pubkey=PUB (berthd's receipt public key, PEM or base64url),\n"
                 "            the claims berthd signed for the runs on its own host are\n"
                 "            checked against it too; without, they are counted unchecked\n"
                 "\n"
                 "Exit status: 0 success (verify: the chain is intact); 1 failure; 2 usage\n"
                 "error; 3 verification failed.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl --journal journal.db audit export --out chain.jsonl\n"
                 "  berthctl audit verify chain.jsonl --audit-key audit.key\n");
}

static int do_keygen(struct bctl_globals *g, const char *out)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (!out)
        return bctl_usage_error(VERB, "keygen needs --out=FILE");
    if (berth_audit_key_create(out, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    if (g->json) {
        _cleanup_free_ char *path = NULL;
        _cleanup_json_ json_t *o = NULL;
        if (berth_utf8_lossy(out, &path) < 0 || !(o = json_pack("{s:s}", "audit_key_file", path)))
            return bctl_error(VERB, "out of memory");
        return bctl_print_json(VERB, o, true);
    }
    printf("audit key written to %s\n", out);
    return BCTL_EXIT_OK;
}

static int append_line(void *userdata, uint64_t seq, const char *line, size_t len)
{
    struct berth_buf *b = userdata;
    (void)seq;
    return berth_buf_append(b, line, len) < 0 || berth_buf_putc(b, '\n') < 0 ? -ENOMEM : 0;
}

static int do_export(struct bctl_globals *g, const char *out, uint64_t after)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_journal *j = NULL;
    struct berth_buf b = BERTH_BUF_INIT(0);
    int r;

    if ((r = bctl_open_journal(g, VERB, false, &j)) != 0)
        return r;
    r = berth_audit_foreach(j, after, append_line, &b, &err);
    berth_journal_close(j);
    if (r < 0) {
        berth_buf_free(&b);
        return r == -ENOMEM ? bctl_error(VERB, "out of memory") : bctl_error(VERB, "%s", err.message);
    }
    if (out)
        r = berth_publish_path(out, b.data ? b.data : "", b.len, 0600, 0, &err) < 0
                ? bctl_error(VERB, "%s", err.message)
                : BCTL_EXIT_OK;
    else
        r = (b.len && fwrite(b.data, 1, b.len, stdout) != b.len) || fflush(stdout) != 0
                ? bctl_error(VERB, "writing standard output: %s", strerror(errno))
                : BCTL_EXIT_OK;
    berth_buf_free(&b);
    return r;
}

static int do_verify(struct bctl_globals *g, const char *file, const struct berth_audit_anchor *anchor,
                     const char *pubkey)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_pool_chain *chain = NULL;
    struct berth_audit_summary sum = {0};
    _cleanup_free_ char *data = NULL;
    struct berth_audit_key key;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    size_t len = 0, placements = 0, enrolments = 0, claims = 0, broker_claims = 0, unchecked = 0;
    int r;

    if (pubkey && (r = bctl_read_pubkey(VERB, pubkey, pub)) != BCTL_EXIT_OK)
        return r;
    if (bctl_read_input(file, EXPORT_MAX, &data, &len, &err) < 0)
        return bctl_error(VERB, "%s: %s", bctl_input_name(file), err.message);
    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        return r;
    if (berth_pool_chain_new(&chain) < 0) {
        berth_audit_key_wipe(&key);
        return bctl_error(VERB, "out of memory");
    }
    if (pubkey)
        berth_pool_chain_set_broker_key(chain, pub);
    r = berth_audit_verify(data, len, &key, anchor, berth_pool_chain_check, chain, &sum, &err);
    berth_audit_key_wipe(&key);
    if (r == 0) {
        berth_pool_chain_stats(chain, NULL, &placements, &enrolments, &claims);
        berth_pool_chain_broker_claims(chain, &broker_claims, &unchecked);
        if (g->json) {
            _cleanup_json_ json_t *o = json_pack(
                "{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "verified", 1, "events", (json_int_t)sum.count, "pools",
                (json_int_t)berth_pool_chain_count(chain), "placements", (json_int_t)placements, "enrolments",
                (json_int_t)enrolments, "claims", (json_int_t)claims, "broker_claims", (json_int_t)broker_claims,
                "broker_claims_unchecked", (json_int_t)unchecked, "head", sum.head_mac);
            r = bctl_print_json(VERB, o, true);
        } else {
            printf("verified: %" PRIu64 " events, %zu active pools, %zu placements, %zu enrolments, %zu claims\n",
                   sum.count, berth_pool_chain_count(chain), placements, enrolments, claims);
            if (broker_claims)
                printf("%zu of the claims are the broker's own, %s\n", broker_claims,
                       unchecked ? "their signatures not checked (pass --pubkey)" : "their signatures checked");
            if (sum.count)
                printf("head: %" PRIu64 ":%s (keep it; pass it as --anchor to detect removal from the end)\n",
                       sum.count, sum.head_mac);
            r = BCTL_EXIT_OK;
        }
    } else if (r == -EBADMSG) {
        if (g->json) {
            _cleanup_json_ json_t *o = json_pack("{s:b, s:I, s:s}", "verified", 0, "bad_event", (json_int_t)sum.bad_seq,
                                                 "reason", err.message);
            bctl_print_json(VERB, o, true);
        }
        bctl_error(VERB, "%s: verification failed at %s", bctl_input_name(file), err.message);
        r = BCTL_EXIT_VERIFY;
    } else {
        r = bctl_error(VERB, "%s", err.message);
    }
    berth_pool_chain_free(chain);
    return r;
}

int cmd_audit(struct bctl_globals *g, int argc, char **argv)
{
    enum { OPT_OUT = 1, OPT_AFTER, OPT_ANCHOR, OPT_PUBKEY };
    static const struct option options[] = {
        {"out", required_argument, NULL, OPT_OUT},
        {"pubkey", required_argument, NULL, OPT_PUBKEY},
        {"after", required_argument, NULL, OPT_AFTER},
        {"anchor", required_argument, NULL, OPT_ANCHOR},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    _cleanup_free_ char *out = NULL;
    struct berth_audit_anchor anchor;
    const char *pubkey = NULL;
    bool anchored = false;
    uint64_t after = 0;
    const char *sub;
    char *end = NULL;
    int c, gr;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if ((gr = bctl_global_option(g, VERB, c, optarg)) != 0) {
            if (gr < 0)
                return -gr;
            continue;
        }
        switch (c) {
        case OPT_OUT:
            if (bctl_absolute_arg(VERB, "--out", optarg, &out) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case OPT_AFTER:
            errno = 0;
            after = strtoull(optarg, &end, 10);
            if (errno || !end || *end || optarg[0] < '0' || optarg[0] > '9' || after > INT64_MAX)
                return bctl_usage_error(VERB, "--after takes an event number, not \"%s\"", optarg);
            break;
        case OPT_ANCHOR:
            if (berth_audit_anchor_parse(optarg, &anchor) < 0)
                return bctl_usage_error(VERB, "--anchor takes SEQ:MAC (as verify prints it), not \"%s\"", optarg);
            anchored = true;
            break;
        case OPT_PUBKEY: pubkey = optarg; break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint(VERB);
        }
    }
    if (optind >= argc)
        return bctl_usage_error(VERB, "missing subcommand (keygen, export or verify)");
    sub = argv[optind];
    if (streq(sub, "keygen") || streq(sub, "export")) {
        if (argc - optind != 1)
            return bctl_usage_error(VERB, "%s takes no arguments", sub);
        return streq(sub, "keygen") ? do_keygen(g, out) : do_export(g, out, after);
    }
    if (streq(sub, "verify")) {
        if (argc - optind != 2)
            return bctl_usage_error(VERB, "verify takes exactly one FILE");
        return do_verify(g, argv[optind + 1], anchored ? &anchor : NULL, pubkey);
    }
    return bctl_usage_error(VERB, "unknown subcommand \"%s\"", sub);
}
