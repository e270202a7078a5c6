/* SPDX-License-Identifier: MIT */
/* cmd-pool.c -- berthctl pool: named sandbox pools on a local journal. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "berthctl.h"
#include "canon.h"
#include "client.h"
#include "journal.h"
#include "jsonobj.h"
#include "macro.h"
#include "names.h"
#include "pool.h"
#include "registry.h"
#include "sign.h"

#define VERB "pool"

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl --journal=PATH [--audit-key=FILE] [--json] pool SUBCOMMAND ...\n"
                 "       berthctl --config=CLIENT.json [--json] pool register FILE | list | show NAME\n"
                 "\n"
                 "Named sandbox pools are the operator's placement contracts: which backends\n"
                 "work may run on (in preference order), the base workspace template, which\n"
                 "fields a submitter may override, and the ceilings on capabilities, network\n"
                 "egress and credential environment variables.  Every change and every\n"
                 "placement is recorded in the journal's HMAC-chained audit log.\n"
                 "\n"
                 "Subcommands:\n"
                 "  register FILE        register the manifest in FILE (\"-\": standard input);\n"
                 "                       a new name records pool.registered, a changed manifest\n"
                 "                       pool.updated, an identical one nothing (\"unchanged\")\n"
                 "  list                 the active pools\n"
                 "  show NAME            the active manifest of NAME, with its pool_hash (from\n"
                 "                       berthd also its warm targets' slots and counts)\n"
                 "  place NAME [--overrides=FILE] [--backends=FILE]\n"
                 "                       merge the overrides into the pool, choose a backend\n"
                 "                       and print the placement receipt, or the refusal;\n"
                 "                       either is recorded.  Without --backends no backend is\n"
                 "                       configured and placement is refused with no_backend\n"
                 "  retire NAME          deactivate NAME (pool.retired)\n"
                 "  enrol NAME --worker-key=FILE --worker-name=NAME\n"
                 "                       sign and record a worker's enrolment into the pool\n"
                 "  claim NAME --worker-key=FILE --worker-name=NAME --job-id=ID\n"
                 "        --placement-hash=HASH\n"
                 "                       sign and record an enrolled worker's claim of a job\n"
                 "  verify [--anchor=SEQ:MAC] [--pubkey=PUB]\n"
                 "                       re-check the whole audit chain (MACs and pool rules),\n"
                 "                       re-hash every stored manifest, check every active\n"
                 "                       pool's manifest is stored; print the head SEQ:MAC.\n"
                 "                       With --anchor, that event must still be in the chain\n"
                 "                       (detects events removed from the end).  With --pubkey\n"
                 "                       (berthd's receipt public key), the signature of every\n"
                 "                       claim berthd recorded for a run on its own host is\n"
                 "                       checked too\n"
                 "\n"
                 "With --config (or $BERTH_CLIENT_CONFIG) and no --journal, register, list and\n"
                 "show talk to berthd over HTTPS instead: registering needs an admin grant in\n"
                 "the host policy, and list and show see the pools this client is granted.\n"
                 "\n"
                 "The journal is created by the first register.  register, place, retire,\n"
                 "enrol, claim and verify need --audit-key.  Manifests, overrides and backend\n"
                 "sets are strict JSON (see \"berthctl canon\"); unknown members are refused.\n"
                 "\n"
                 "Exit status: 0 success; 1 failure, or a refused placement; 2 usage error;\n"
                 "3 verification failed.\n"
                 "\n"
                 "Examples:\n"
                 "  berthctl audit keygen --out audit.key\n"
                 "  berthctl --journal /var/lib/berth/journal.db --audit-key audit.key \\\n"
                 "      pool register conf/pools/default.json\n"
                 "  berthctl --journal /var/lib/berth/journal.db --audit-key audit.key \\\n"
                 "      pool place default --overrides overrides.json --backends backends.json\n");
}

/* register, list and show against berthd. */
static int do_remote(struct bctl_globals *g, const char *sub, const char *arg)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_https *c = NULL;
    _cleanup_free_ char *text = NULL;
    json_t *body = NULL;
    char path[128];
    size_t len = 0;
    long status = 0;
    int r;

    if (streq(sub, "register") && bctl_read_input(arg, BERTH_POOL_MANIFEST_MAX, &text, &len, &err) < 0)
        return bctl_error(VERB, "%s: %s", bctl_input_name(arg), err.message);
    if (streq(sub, "show") && !berth_pool_name_valid(arg))
        return bctl_usage_error(VERB, "\"%s\" is not a pool name (" BERTH_POOL_NAME_RULE ")", arg);
    if ((r = bctl_client_open(g, VERB, &c)) != BCTL_EXIT_OK)
        return r;
    if (streq(sub, "register"))
        r = berth_https_request(c, "POST", "/v1/pools", text, len, &status, &body, NULL, NULL, &err);
    else if (streq(sub, "list"))
        r = berth_https_request(c, "GET", "/v1/pools", NULL, 0, &status, &body, NULL, NULL, &err);
    else {
        snprintf(path, sizeof(path), "/v1/pools/%s", arg);
        r = berth_https_request(c, "GET", path, NULL, 0, &status, &body, NULL, NULL, &err);
    }
    if (r < 0)
        r = bctl_error(VERB, "%s", err.message);
    else if (status != 200 && status != 201)
        r = bctl_client_fail(VERB, status, body);
    else
        r = bctl_print_json(VERB, body, g->json);
    json_decref(body);
    berth_https_free(c);
    return r;
}

static inline void journal_closep(struct berth_journal **j)
{
    berth_journal_close(*j);
}
#define _cleanup_journal_ BERTH_CLEANUP(journal_closep)

static inline void registry_freep(struct berth_registry **r)
{
    berth_registry_free(*r);
}
#define _cleanup_registry_ BERTH_CLEANUP(registry_freep)

/* Open the journal and replay its registry; prints errors, returns an exit code. */
static int open_registry(struct bctl_globals *g, bool create, struct berth_journal **ret_j,
                         struct berth_registry **ret_reg)
{
    struct berth_error err = BERTH_ERROR_INIT;
    int r;

    if ((r = bctl_open_journal(g, VERB, create, ret_j)) != 0)
        return r;
    if (berth_registry_open(*ret_j, ret_reg, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    return BCTL_EXIT_OK;
}

/* Who records an offline event, and when. */
struct offline_actor {
    char name[BERTH_AUDIT_ACTOR_MAX + 1];
    int64_t now_ns; /* CLOCK_REALTIME */
};

/* The actor and the time of the next event; prints errors, returns an exit code. */
static int offline_actor(struct offline_actor *ret)
{
    bctl_actor(ret->name, sizeof(ret->name));
    return bctl_now(VERB, &ret->now_ns);
}

static inline void pool_freep(struct berth_pool **p)
{
    berth_pool_free(*p);
}

static inline void key_freep(struct berth_signing_key **k)
{
    berth_signing_key_free(*k);
}

/* Read and parse FILE as JSON (for overrides). */
static int read_json_file(const char *file, size_t max, json_t **ret)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0;

    if (bctl_read_input(file, max, &buf, &len, &err) < 0 || berth_json_parse(buf, len, max, ret, &err) < 0)
        return bctl_error(VERB, "%s: %s", bctl_input_name(file), err.message);
    return BCTL_EXIT_OK;
}

static int do_register(struct bctl_globals *g, const char *file)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    BERTH_CLEANUP(pool_freep) struct berth_pool *pool = NULL;
    _cleanup_free_ char *buf = NULL;
    struct berth_audit_key key;
    enum berth_register_outcome outcome;
    struct offline_actor who;
    char prev[BERTH_HASH_HEX_LEN + 1] = "";
    size_t len = 0;
    int r;

    if (bctl_read_input(file, BERTH_POOL_MANIFEST_MAX, &buf, &len, &err) < 0 ||
        berth_pool_parse(buf, len, &pool, &err) < 0)
        return bctl_error(VERB, "%s: %s", bctl_input_name(file), err.message);
    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        return r;
    if ((r = open_registry(g, true, &j, &reg)) != 0 || (r = offline_actor(&who)) != 0)
        goto out;
    /* The hash this name had, to report an update. */
    if (berth_pool_chain_find(berth_registry_chain(reg), pool->name))
        snprintf(prev, sizeof(prev), "%s", berth_pool_chain_find(berth_registry_chain(reg), pool->name)->pool_hash);
    if (berth_registry_register(reg, &key, pool, who.name, who.now_ns, &outcome, &err) < 0) {
        r = bctl_error(VERB, "%s", err.message);
        goto out;
    }
    if (g->json) {
        _cleanup_json_ json_t *o = json_pack("{s:s, s:s, s:s, s:s*}", "outcome",
                                             outcome == BERTH_REGISTER_NEW       ? "registered"
                                             : outcome == BERTH_REGISTER_UPDATED ? "updated"
                                                                                 : "unchanged",
                                             "name", pool->name, "pool_hash", pool->pool_hash, "prev_pool_hash",
                                             outcome == BERTH_REGISTER_UPDATED ? prev : NULL);
        r = bctl_print_json(VERB, o, true);
    } else if (outcome == BERTH_REGISTER_NEW) {
        printf("registered pool %s\npool_hash %s\n", pool->name, pool->pool_hash);
    } else if (outcome == BERTH_REGISTER_UPDATED) {
        printf("updated pool %s\npool_hash %s (was %s)\n", pool->name, pool->pool_hash, prev);
    } else {
        printf("pool %s unchanged\npool_hash %s\n", pool->name, pool->pool_hash);
    }
out:
    berth_audit_key_wipe(&key);
    return r;
}

static int do_list(struct bctl_globals *g)
{
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    const struct berth_pool_chain *chain;
    _cleanup_json_ json_t *arr = NULL;
    size_t i, n;
    int r;

    if ((r = open_registry(g, false, &j, &reg)) != 0)
        return r;
    chain = berth_registry_chain(reg);
    n = berth_pool_chain_count(chain);
    if (g->json) {
        arr = json_array();
        for (i = 0; arr && i < n; i++) {
            const struct berth_pool *p = berth_pool_chain_at(chain, i);
            if (json_array_append_new(arr,
                                      json_pack("{s:s, s:s, s:O, s:s}", "name", p->name, "pool_hash", p->pool_hash,
                                                "backend_allowlist", json_object_get(p->manifest, "backend_allowlist"),
                                                "network_egress_class", berth_egress_names[p->egress])) < 0)
                return bctl_error(VERB, "out of memory");
        }
        return arr ? bctl_print_json(VERB, arr, true) : bctl_error(VERB, "out of memory");
    }
    printf("%-24s %-64s  %-10s %s\n", "NAME", "POOL_HASH", "EGRESS", "BACKENDS");
    for (i = 0; i < n; i++) {
        const struct berth_pool *p = berth_pool_chain_at(chain, i);
        size_t k;
        printf("%-24s %-64s  %-10s ", p->name, p->pool_hash, berth_egress_names[p->egress]);
        for (k = 0; k < p->n_backends; k++)
            printf("%s%s", k ? "," : "", p->backends[k]);
        printf("\n");
    }
    return fflush(stdout) == 0 ? BCTL_EXIT_OK : bctl_error(VERB, "writing standard output: %s", strerror(errno));
}

static int do_show(struct bctl_globals *g, const char *name)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    BERTH_CLEANUP(pool_freep) struct berth_pool *pool = NULL;
    _cleanup_json_ json_t *doc = NULL;
    int r;

    if ((r = open_registry(g, false, &j, &reg)) != 0)
        return r;
    if (berth_registry_get(reg, name, &pool, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    doc = berth_pool_to_json(pool);
    if (!doc)
        return bctl_error(VERB, "out of memory");
    return bctl_print_json(VERB, doc, g->json);
}

static void print_inputs(const json_t *inputs)
{
    const json_t *in;
    size_t i;

    json_array_foreach(inputs, i, in) printf("  %-20s %-5s %s\n", json_string_value(json_object_get(in, "backend")),
                                             json_is_true(json_object_get(in, "kept")) ? "kept" : "drop",
                                             json_string_value(json_object_get(in, "reason")));
}

static int do_place(struct bctl_globals *g, const char *name, const char *overrides_file, const char *backends_file)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    _cleanup_json_ json_t *overrides = NULL, *backends_doc = NULL;
    struct berth_backend_set *backends = NULL;
    struct berth_placement_result res;
    struct berth_audit_key key;
    struct offline_actor who;
    int r;

    if (overrides_file && (r = read_json_file(overrides_file, BERTH_POOL_MANIFEST_MAX, &overrides)) != 0)
        return r;
    if (backends_file) {
        if ((r = read_json_file(backends_file, BERTH_BACKEND_SET_MAX, &backends_doc)) != 0)
            return r;
        if (berth_backend_set_from_json(backends_doc, &backends, &err) < 0)
            return bctl_error(VERB, "%s: %s", backends_file, err.message);
    } else if (berth_backend_set_empty(&backends) < 0) {
        return bctl_error(VERB, "out of memory");
    }
    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        goto out;
    if ((r = open_registry(g, false, &j, &reg)) != 0 || (r = offline_actor(&who)) != 0)
        goto out;

    r = berth_registry_place(reg, &key, name, overrides, backends, who.name, who.now_ns, &res, &err);
    if (r < 0 && r != -EPERM) {
        r = bctl_error(VERB, "%s", err.message);
        goto out;
    }
    if (g->json) {
        _cleanup_json_ json_t *o = NULL;
        if (r == 0)
            o = json_pack("{s:s, s:s, s:O}", "outcome", "placed", "placement_hash", res.placement_hash, "receipt",
                          res.receipt);
        else
            o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O*}", "outcome", "refused", "reason",
                          berth_refusal_names[res.refusal.reason], "field", res.refusal.field, "detail",
                          res.refusal.detail, "overrides_hash", res.overrides_hash, "selector_inputs",
                          res.selector_inputs);
        r = r == 0 ? bctl_print_json(VERB, o, true) : (bctl_print_json(VERB, o, true), BCTL_EXIT_FAIL);
    } else if (r == 0) {
        printf("placed on %s\nplacement_hash %s\n", json_string_value(json_object_get(res.receipt, "chosen_backend")),
               res.placement_hash);
        print_inputs(json_object_get(res.receipt, "selector_inputs"));
        r = bctl_print_json(VERB, res.receipt, false);
    } else {
        bctl_error(VERB, "refused: %s%s%s: %s", berth_refusal_names[res.refusal.reason],
                   res.refusal.field[0] ? " at " : "", res.refusal.field, res.refusal.detail);
        if (res.selector_inputs) {
            printf("candidates:\n");
            print_inputs(res.selector_inputs);
        }
        r = BCTL_EXIT_FAIL;
    }
    berth_placement_result_clear(&res);
out:
    berth_audit_key_wipe(&key);
    berth_backend_set_free(backends);
    return r;
}

static int do_retire(struct bctl_globals *g, const char *name)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    struct berth_audit_key key;
    struct offline_actor who;
    int r;

    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        return r;
    if ((r = open_registry(g, false, &j, &reg)) == 0 && (r = offline_actor(&who)) == 0) {
        if (berth_registry_retire(reg, &key, name, who.name, who.now_ns, &err) < 0) {
            r = bctl_error(VERB, "%s", err.message);
        } else if (g->json) {
            _cleanup_json_ json_t *o = json_pack("{s:s, s:s}", "outcome", "retired", "name", name);
            r = o ? bctl_print_json(VERB, o, true) : bctl_error(VERB, "out of memory");
        } else {
            printf("retired pool %s\n", name);
        }
    }
    berth_audit_key_wipe(&key);
    return r;
}

static int do_worker(struct bctl_globals *g, const char *name, const char *key_file, const char *worker_name,
                     const char *job_id, const char *placement_hash, bool claim)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    _cleanup_registry_ struct berth_registry *reg = NULL;
    BERTH_CLEANUP(key_freep) struct berth_signing_key *worker = NULL;
    _cleanup_json_ json_t *details = NULL;
    struct berth_audit_key key;
    struct offline_actor who;
    int r;

    if (!key_file || !worker_name)
        return bctl_usage_error(VERB, "--worker-key and --worker-name are required");
    if (claim && (!job_id || !placement_hash))
        return bctl_usage_error(VERB, "claim needs --job-id and --placement-hash");
    if (berth_signing_key_load(key_file, &worker, &err) < 0)
        return bctl_error(VERB, "%s", err.message);
    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        return r;
    if ((r = open_registry(g, false, &j, &reg)) == 0 && (r = offline_actor(&who)) == 0) {
        if (claim)
            r = berth_registry_claim(reg, &key, name, worker, worker_name, job_id, placement_hash, who.name, who.now_ns,
                                     &details, &err);
        else
            r = berth_registry_enrol(reg, &key, name, worker, worker_name, who.name, who.now_ns, &details, &err);
        r = r < 0 ? bctl_error(VERB, "%s", err.message) : bctl_print_json(VERB, details, g->json);
    }
    berth_audit_key_wipe(&key);
    return r;
}

static int do_verify(struct bctl_globals *g, const struct berth_audit_anchor *anchor, const char *pubkey)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_journal_ struct berth_journal *j = NULL;
    struct berth_verify_report rep;
    struct berth_audit_key key;
    uint8_t pub[BERTH_ED25519_PUBLIC_LEN];
    int r;

    if (pubkey && (r = bctl_read_pubkey(VERB, pubkey, pub)) != BCTL_EXIT_OK)
        return r;
    if ((r = bctl_load_audit_key(g, VERB, &key)) != 0)
        return r;
    if ((r = bctl_open_journal(g, VERB, false, &j)) != 0)
        goto out;
    r = berth_registry_verify_keyed(j, &key, anchor, pubkey ? pub : NULL, &rep, &err);
    if (r == -EBADMSG) {
        if (g->json) {
            _cleanup_json_ json_t *o = json_pack("{s:b, s:I, s:s}", "verified", 0, "bad_event", (json_int_t)rep.bad_seq,
                                                 "reason", err.message);
            bctl_print_json(VERB, o, true);
        }
        bctl_error(VERB, "verification failed: %s", err.message);
        r = BCTL_EXIT_VERIFY;
    } else if (r < 0) {
        r = bctl_error(VERB, "%s", err.message);
    } else if (g->json) {
        _cleanup_json_ json_t *o = json_pack(
            "{s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "verified", 1, "events", (json_int_t)rep.events,
            "pools", (json_int_t)rep.pools, "bodies", (json_int_t)rep.bodies, "placements", (json_int_t)rep.placements,
            "enrolments", (json_int_t)rep.enrolments, "claims", (json_int_t)rep.claims, "broker_claims",
            (json_int_t)rep.broker_claims, "broker_claims_unchecked", (json_int_t)rep.broker_unchecked, "head",
            rep.head_mac);
        r = bctl_print_json(VERB, o, true);
    } else {
        printf("verified: %llu events, %zu active pools, %zu stored manifests, %zu placements, %zu enrolments, "
               "%zu claims\n",
               (unsigned long long)rep.events, rep.pools, rep.bodies, rep.placements, rep.enrolments, rep.claims);
        if (rep.broker_claims)
            printf("%zu of the claims are the broker's own, %s\n", rep.broker_claims,
                   rep.broker_unchecked ? "their signatures not checked (pass --pubkey)" : "their signatures checked");
        if (rep.events)
            printf("head: %llu:%s (keep it; pass it as --anchor to detect removal from the end)\n",
                   (unsigned long long)rep.events, rep.head_mac);
    }
out:
    berth_audit_key_wipe(&key);
    return r;
}

int cmd_pool(struct bctl_globals *g, int argc, char **argv)
{
    enum {
        OPT_OVERRIDES = 1,
        OPT_BACKENDS,
        OPT_WORKER_KEY,
        OPT_WORKER_NAME,
        OPT_JOB_ID,
        OPT_PLACEMENT_HASH,
        OPT_ANCHOR,
        OPT_PUBKEY
    };
    static const struct option options[] = {
        {"anchor", required_argument, NULL, OPT_ANCHOR},
        {"pubkey", required_argument, NULL, OPT_PUBKEY},
        {"overrides", required_argument, NULL, OPT_OVERRIDES},
        {"backends", required_argument, NULL, OPT_BACKENDS},
        {"worker-key", required_argument, NULL, OPT_WORKER_KEY},
        {"worker-name", required_argument, NULL, OPT_WORKER_NAME},
        {"job-id", required_argument, NULL, OPT_JOB_ID},
        {"placement-hash", required_argument, NULL, OPT_PLACEMENT_HASH},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    _cleanup_free_ char *overrides = NULL, *backends = NULL, *worker_key = NULL;
    const char *worker_name = NULL, *job_id = NULL, *placement_hash = NULL, *pubkey = NULL, *sub, *arg;
    struct berth_audit_anchor anchor;
    bool anchored = false;
    int c, gr, nargs;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if ((gr = bctl_global_option(g, VERB, c, optarg)) != 0) {
            if (gr < 0)
                return -gr;
            continue;
        }
        switch (c) {
        case OPT_OVERRIDES:
            if (bctl_absolute_arg(VERB, "--overrides", optarg, &overrides) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case OPT_BACKENDS:
            if (bctl_absolute_arg(VERB, "--backends", optarg, &backends) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case OPT_WORKER_KEY:
            if (bctl_absolute_arg(VERB, "--worker-key", optarg, &worker_key) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case OPT_WORKER_NAME: worker_name = optarg; break;
        case OPT_JOB_ID: job_id = optarg; break;
        case OPT_PLACEMENT_HASH: placement_hash = optarg; break;
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
        return bctl_usage_error(VERB, "missing subcommand");
    sub = argv[optind];
    nargs = argc - optind - 1;
    arg = nargs > 0 ? argv[optind + 1] : NULL;

    if (!g->journal && (g->config || getenv("BERTH_CLIENT_CONFIG"))) {
        if (streq(sub, "list") && nargs == 0)
            return do_remote(g, sub, NULL);
        if ((streq(sub, "register") || streq(sub, "show")) && nargs == 1)
            return do_remote(g, sub, arg);
        return bctl_usage_error(VERB, "against berthd only register FILE, list and show NAME are available; "
                                      "the other subcommands work on a local --journal");
    }

    if (streq(sub, "list") || streq(sub, "verify")) {
        if (nargs != 0)
            return bctl_usage_error(VERB, "%s takes no arguments", sub);
        return streq(sub, "list") ? do_list(g) : do_verify(g, anchored ? &anchor : NULL, pubkey);
    }
    if (!streq(sub, "register") && !streq(sub, "show") && !streq(sub, "place") && !streq(sub, "retire") &&
        !streq(sub, "enrol") && !streq(sub, "claim"))
        return bctl_usage_error(VERB, "unknown subcommand \"%s\"", sub);
    if (nargs != 1)
        return bctl_usage_error(VERB, "%s takes exactly one %s", sub, streq(sub, "register") ? "FILE" : "NAME");
    if (streq(sub, "register"))
        return do_register(g, arg);
    if (streq(sub, "show"))
        return do_show(g, arg);
    if (streq(sub, "place"))
        return do_place(g, arg, overrides, backends);
    if (streq(sub, "retire"))
        return do_retire(g, arg);
    return do_worker(g, arg, worker_key, worker_name, job_id, placement_hash, streq(sub, "claim"));
}
