/* SPDX-License-Identifier: MIT */
/* options.c -- dev-init's command line and --help (devinit.h). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "berthd-config.h"
#include "canon.h"
#include "devinit.h"
#include "digest.h"
#include "macro.h"
#include "names.h"
#include "policy.h"
#include "pool.h"
#include "runtime.h"
#include "utf8.h"

#define DEFAULT_PORT 8443
#define DEFAULT_BROKER_NAME "dev"
#define DEFAULT_PRINCIPAL "dev"
#define DEFAULT_RUNTIME_DIR "/usr/bin" /**< where Debian installs runsc and crun */
/* Each backend is a member of berthd.json's "backends" and an entry of the pool's backend_allowlist. */
#define BACKENDS_MAX                                                                                                   \
    (BERTH_BERTHD_BACKENDS_MAX < BERTH_POOL_BACKENDS_MAX ? BERTH_BERTHD_BACKENDS_MAX : BERTH_POOL_BACKENDS_MAX)

/* The --help text, a manual page in brief. */
static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl dev-init DIR [--port=N] [--principal=NAME]...\n"
                 "                [--image=DIGEST]... [--backend=NAME=PLUGIN[,CONFIG_FILE]]...\n"
                 "                [--runtime=NAME[,PATH]]... [--plugin-dir=PATH]\n"
                 "                [--no-image-source] [--no-evidence-store]\n"
                 "                [--broker-name=NAME] [--json]\n"
                 "\n"
                 "Write a complete, self-contained berth installation into DIR, for trying\n"
                 "berth on one machine and for tests: a private certificate authority, TLS\n"
                 "certificates for berthd and for every principal, berthd's receipt and audit\n"
                 "keys, a host policy, a pool, and the configuration files of berthd and\n"
                 "berthctl.  berthd listens on 127.0.0.1 only, and its TLS certificates\n"
                 "come from a CA that exists only in DIR.\n"
                 "\n"
                 "DIR is created with mode 0700 if it does not exist (its parent must).  An\n"
                 "existing DIR must be a directory owned by the caller and not writable by\n"
                 "group or others.  No component of DIR's path may be a symbolic link.  The\n"
                 "files name each other by absolute path, so DIR cannot be moved afterwards.\n"
                 "\n"
                 "dev-init never overwrites anything: if any file or directory below exists,\n"
                 "it names it and writes nothing.  Every file is created atomically, and if\n"
                 "anything fails, everything written so far is removed again.\n"
                 "\n"
                 "Files written (mode; directories are 0700):\n"
                 "  berthd.json           0600  berthd's configuration: broker NAME, listens\n"
                 "                              on 127.0.0.1:PORT, the --backend entries\n"
                 "                              (require_qualification false) and --runtime\n"
                 "                              entries (require_qualification and\n"
                 "                              qualify_at_startup true), no journal,\n"
                 "                              http or reconcile members (berthd's defaults)\n"
                 "  client.json           0600  berthctl's client configuration for the\n"
                 "                              first principal: https://127.0.0.1:PORT, its\n"
                 "                              certificate, ca.pem, and the receipt public\n"
                 "                              key to pin\n"
                 "  policy.json           0600  host policy: one subject per principal, scope\n"
                 "                              [\"dev\"], the pool \"default\", the --image\n"
                 "                              digests, limits of 2 CPUs, 2 GiB memory, 512\n"
                 "                              pids, 1 GiB scratch, 1 hour wall time, 1 MiB\n"
                 "                              output and 1 GiB artifacts; valid from one\n"
                 "                              minute ago for 365 days; only the first\n"
                 "                              principal is admin\n"
                 "  tls/ca.pem            0644  the CA certificate, CN \"berth dev CA <DIR's\n"
                 "                              name>\"; clients and berthd trust only it\n"
                 "  tls/ca.key            0600  the CA's private key (see below)\n"
                 "  tls/server.pem        0644  berthd's certificate: CN localhost, subject\n"
                 "                              alternative names DNS:localhost,\n"
                 "                              IP:127.0.0.1 and IP:::1,\n"
                 "                              extended key usage serverAuth\n"
                 "  tls/server.key        0600  its private key\n"
                 "  tls/client-NAME.pem   0644  each principal's certificate: CN NAME (its\n"
                 "                              first 64 characters), extended key usage\n"
                 "                              clientAuth\n"
                 "  tls/client-NAME.key   0600  its private key\n"
                 "  keys/receipt.key      0600  the Ed25519 key berthd signs receipts and\n"
                 "                              results with (as \"berthctl keygen\" writes it)\n"
                 "  keys/receipt.pub      0644  its public key, PEM\n"
                 "  keys/audit.key        0600  the audit chain's HMAC key (as \"berthctl audit\n"
                 "                              keygen\" writes it)\n"
                 "  pools/default.json    0644  the pool \"default\": backend_allowlist is the\n"
                 "                              --backend and --runtime names in the order\n"
                 "                              given, or [\"runsc\"] without either\n"
                 "  state/                0700  empty; berthd keeps its journal here\n"
                 "  images/               0700  empty; the local OCI image store: fill it with\n"
                 "                              \"berthctl image import LAYOUT --store DIR/images\"\n"
                 "  runtime/              0700  empty; runtime/NAME is the state_directory of\n"
                 "                              each --runtime backend (its plugin creates it)\n"
                 "\n"
                 "When the plugin directory (--plugin-dir, or berthd's default) holds\n"
                 "image-oci-local.so (and without --no-image-source), berthd.json also\n"
                 "gets an image source serving DIR/images, and berthd then refuses jobs\n"
                 "whose image is not imported there.  Grant an imported image with --image,\n"
                 "or later with \"berthctl policy allow-image\".\n"
                 "\n"
                 "When it holds evidence-sqlite.so (and without --no-evidence-store),\n"
                 "berthd.json also gets an evidence store in DIR/state/evidence (the plugin\n"
                 "creates it, 0700, at berthd's first start), with the default 64 MiB bound\n"
                 "per object; each principal's evidence quota is the policy's default (1 GiB,\n"
                 "10,000 objects): see \"berthctl evidence --help\".\n"
                 "\n"
                 "Every key is new, from the system's random number generator.  TLS keys are\n"
                 "ECDSA P-256 in unencrypted PKCS#8 PEM; certificates are valid from one\n"
                 "minute ago for 365 days and are signed with SHA-256.  The policy lists each\n"
                 "client certificate by fingerprint: the SHA-256 of its DER encoding, as\n"
                 "\"openssl x509 -in tls/client-NAME.pem -outform DER | sha256sum\" prints it.\n"
                 "\n"
                 "tls/ca.key is kept so that principals can be added later: issue a client\n"
                 "certificate with it and add a subject with that certificate's fingerprint\n"
                 "to policy.json (berthd re-reads the policy when it changes), for example\n"
                 "  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \\\n"
                 "      -subj /CN=alice -keyout alice.key -out alice.pem -days 365 \\\n"
                 "      -CA DIR/tls/ca.pem -CAkey DIR/tls/ca.key \\\n"
                 "      -addext basicConstraints=critical,CA:FALSE \\\n"
                 "      -addext extendedKeyUsage=clientAuth\n"
                 "A certificate alone grants nothing (identity comes only from the policy),\n"
                 "but whoever holds ca.key can also make server certificates that the\n"
                 "installation's clients trust.  Delete it when no principal will be added.\n"
                 "\n"
                 "Options:\n"
                 "      --port=N          TCP port berthd listens on, 1-65535 (default 8443)\n"
                 "      --principal=NAME  a principal to create, 1-128 of [A-Za-z0-9._@-]; may\n"
                 "                        be repeated, no name twice (default: one, \"dev\").\n"
                 "                        The first is admin and is the one client.json uses\n"
                 "      --image=DIGEST    an image manifest digest (sha256:<64 lowercase hex>)\n"
                 "                        every principal may run; may be repeated (default:\n"
                 "                        none, so no image is granted)\n"
                 "      --backend=NAME=PLUGIN[,CONFIG_FILE]\n"
                 "                        a runtime backend NAME ([a-z0-9][a-z0-9._-], at most\n"
                 "                        63) served by the plugin file PLUGIN.so\n"
                 "                        ([a-z0-9][a-z0-9-], at most 63); its \"config\" is the\n"
                 "                        JSON object in CONFIG_FILE, or {}; may be repeated,\n"
                 "                        the order is the pool's preference order (default:\n"
                 "                        no backend, so berthd runs no job until one is added)\n"
                 "      --runtime=NAME[,PATH]\n"
                 "                        a backend NAME served by runtime-oci.so for the OCI\n"
                 "                        runtime binary at PATH (absolute; default\n"
                 "                        /usr/bin/NAME), which must be runsc (gVisor) or\n"
                 "                        crun.  dev-init pins the binary as it is now (path,\n"
                 "                        SHA-256, size, mode) and writes the settings of\n"
                 "                        docs/runtime-oci.md: runsc with --network=none,\n"
                 "                        --platform=ptrace and pids_ceiling 4096; crun with\n"
                 "                        /sys/fs/cgroup/unified detached when that is a\n"
                 "                        mount.  The job supervisor and probe are the\n"
                 "                        installed ones, so this needs \"make install\".  The\n"
                 "                        backend gets work only once qualified (berthctl\n"
                 "                        qualify, or berthd at startup).  Mixes with --backend;\n"
                 "                        may be repeated\n"
                 "      --plugin-dir=PATH write plugin_directory (default: omitted, so berthd\n"
                 "                        uses its configured plugin directory)\n"
                 "      --no-image-source\n"
                 "                        never configure the image source in berthd.json\n"
                 "                        (DIR/images is created all the same)\n"
                 "      --no-evidence-store\n"
                 "                        never configure the evidence store in berthd.json\n"
                 "      --broker-name=NAME\n"
                 "                        the broker's name in receipts, 1-64 of\n"
                 "                        [A-Za-z0-9._-] (default \"dev\")\n"
                 "      --json            print one JSON object instead: directory,\n"
                 "                        berthd_config, client_config and principals, an\n"
                 "                        array of {name, certificate, fingerprint}\n"
                 "  -h, --help            show this help\n"
                 "\n"
                 "On success dev-init prints how to start berthd and submit a job, and each\n"
                 "principal's certificate fingerprint.\n"
                 "\n"
                 "Exit status: 0 installation written, 1 failure (for example a file exists;\n"
                 "nothing is left behind), 2 usage error.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl dev-init ./berth-dev --runtime runsc --runtime crun \\\n"
                 "      --principal dev --principal ci\n"
                 "  berthd --config \"$PWD/berth-dev/berthd.json\"\n");
}

void devinit_opts_done(struct devinit_opts *o)
{
    size_t i;

    free(o->dir);
    free(o->plugin_dir);
    free(o->principals);
    free(o->images);
    for (i = 0; i < o->n_backends; i++) {
        free(o->backends[i].name);
        free(o->backends[i].plugin);
        free(o->backends[i].config_file);
        free(o->backends[i].runtime_path);
        if (o->backends[i].config)
            json_decref(o->backends[i].config);
    }
    free(o->backends);
}

/* A TCP port: decimal digits only, 1..65535.  Return: 0 or -EINVAL. */
static int parse_port(const char *text, unsigned *ret)
{
    unsigned long v;
    char *end = NULL;

    if (!text[0] || text[0] < '0' || text[0] > '9')
        return -EINVAL;
    errno = 0;
    v = strtoul(text, &end, 10);
    if (errno || *end || v < 1 || v > 65535)
        return -EINVAL;
    *ret = (unsigned)v;
    return 0;
}

/* True when another backend before @b already has @b's name. */
static bool backend_name_taken(const struct devinit_opts *o, const struct backend_opt *b)
{
    size_t i;

    for (i = 0; &o->backends[i] != b; i++)
        if (streq(o->backends[i].name, b->name))
            return true;
    return false;
}

/* Parse NAME=PLUGIN[,CONFIG_FILE] into @b.  Returns an exit code. */
static int parse_backend(const char *arg, const struct devinit_opts *o, struct backend_opt *b)
{
    const char *eq = strchr(arg, '='), *comma;

    if (!eq)
        return bctl_usage_error(VERB, "--backend takes NAME=PLUGIN[,CONFIG_FILE], not \"%s\"", arg);
    comma = strchr(eq + 1, ',');
    b->name = strndup(arg, (size_t)(eq - arg));
    b->plugin = comma ? strndup(eq + 1, (size_t)(comma - eq - 1)) : strdup(eq + 1);
    if (!b->name || !b->plugin)
        return bctl_error(VERB, "out of memory");
    if (!berth_backend_name_valid(b->name))
        return bctl_usage_error(VERB, "--backend: \"%s\" is not a backend name (" BERTH_BACKEND_NAME_RULE ")", b->name);
    if (!berth_plugin_name_valid(b->plugin))
        return bctl_usage_error(VERB, "--backend %s: \"%s\" is not a plugin name (" BERTH_PLUGIN_NAME_RULE ")", b->name,
                                b->plugin);
    if (backend_name_taken(o, b))
        return bctl_usage_error(VERB, "backend %s is given twice", b->name);
    if (comma) {
        if (!comma[1])
            return bctl_usage_error(VERB, "--backend %s: the CONFIG_FILE after the comma is empty", b->name);
        if (bctl_absolute_arg(VERB, "--backend CONFIG_FILE", comma + 1, &b->config_file) != 0)
            return BCTL_EXIT_USAGE;
    }
    return BCTL_EXIT_OK;
}

/* --runtime NAME[,PATH]: a runtime-oci backend for the OCI runtime at PATH (default /usr/bin/NAME). */
static int parse_runtime(const char *arg, const struct devinit_opts *o, struct backend_opt *b)
{
    const char *comma = strchr(arg, ',');

    b->name = comma ? strndup(arg, (size_t)(comma - arg)) : strdup(arg);
    b->plugin = strdup(RUNTIME_PLUGIN);
    if (!b->name || !b->plugin)
        return bctl_error(VERB, "out of memory");
    if (!berth_backend_name_valid(b->name))
        return bctl_usage_error(VERB, "--runtime: \"%s\" is not a backend name (" BERTH_BACKEND_NAME_RULE ")", b->name);
    if (backend_name_taken(o, b))
        return bctl_usage_error(VERB, "backend %s is given twice", b->name);
    if (comma) {
        if (!comma[1])
            return bctl_usage_error(VERB, "--runtime %s: the PATH after the comma is empty", b->name);
        if (comma[1] != '/')
            return bctl_usage_error(VERB, "--runtime %s: the runtime's PATH must be absolute, not \"%s\"", b->name,
                                    comma + 1);
        b->runtime_path = strdup(comma + 1);
    } else if (asprintf(&b->runtime_path, "%s/%s", DEFAULT_RUNTIME_DIR, b->name) < 0) {
        b->runtime_path = NULL;
    }
    if (!b->runtime_path)
        return bctl_error(VERB, "out of memory");
    if (!berth_utf8_valid(b->runtime_path, strlen(b->runtime_path), NULL))
        return bctl_usage_error(VERB, "--runtime %s: PATH must be valid UTF-8 (it is written into berthd.json)",
                                b->name);
    return BCTL_EXIT_OK;
}

int devinit_parse_args(struct bctl_globals *g, int argc, char **argv, struct devinit_opts *o)
{
    enum {
        OPT_PORT = 1,
        OPT_PRINCIPAL,
        OPT_IMAGE,
        OPT_BACKEND,
        OPT_RUNTIME,
        OPT_PLUGIN_DIR,
        OPT_BROKER_NAME,
        OPT_NO_IMAGE_SOURCE,
        OPT_NO_EVIDENCE_STORE
    };
    static const struct option options[] = {
        {"port", required_argument, NULL, OPT_PORT},
        {"principal", required_argument, NULL, OPT_PRINCIPAL},
        {"image", required_argument, NULL, OPT_IMAGE},
        {"backend", required_argument, NULL, OPT_BACKEND},
        {"runtime", required_argument, NULL, OPT_RUNTIME},
        {"plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR},
        {"broker-name", required_argument, NULL, OPT_BROKER_NAME},
        {"no-image-source", no_argument, NULL, OPT_NO_IMAGE_SOURCE},
        {"no-evidence-store", no_argument, NULL, OPT_NO_EVIDENCE_STORE},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    uint8_t raw[BERTH_SHA256_LEN];
    size_t i;
    int c, gr, r;

    o->port = DEFAULT_PORT;
    o->broker_name = DEFAULT_BROKER_NAME;
    /* Each occurrence takes at least one argv slot, so argc bounds every list. */
    o->principals = calloc((size_t)argc + 1, sizeof(*o->principals));
    o->images = calloc((size_t)argc + 1, sizeof(*o->images));
    o->backends = calloc((size_t)argc + 1, sizeof(*o->backends));
    if (!o->principals || !o->images || !o->backends)
        return bctl_error(VERB, "out of memory");

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if ((gr = bctl_global_option(g, VERB, c, optarg)) != 0) {
            if (gr < 0)
                return -gr;
            continue;
        }
        switch (c) {
        case OPT_PORT:
            if (parse_port(optarg, &o->port) < 0)
                return bctl_usage_error(VERB, "--port takes a TCP port number from 1 to 65535, not \"%s\"", optarg);
            break;
        case OPT_PRINCIPAL:
            if (!berth_principal_valid(optarg))
                return bctl_usage_error(VERB, "--principal: \"%s\" is not a principal name (" BERTH_PRINCIPAL_RULE ")",
                                        optarg);
            for (i = 0; i < o->n_principals; i++)
                if (streq(o->principals[i], optarg))
                    return bctl_usage_error(VERB, "--principal %s is given twice", optarg);
            if (o->n_principals == BERTH_POLICY_SUBJECTS_MAX)
                return bctl_usage_error(VERB, "at most %d principals", BERTH_POLICY_SUBJECTS_MAX);
            o->principals[o->n_principals++] = optarg;
            break;
        case OPT_IMAGE:
            if (berth_digest_parse(optarg, raw) < 0)
                return bctl_usage_error(VERB, "--image takes a manifest digest, sha256:<64 lowercase hex>, not \"%s\"",
                                        optarg);
            for (i = 0; i < o->n_images; i++)
                if (streq(o->images[i], optarg))
                    return bctl_usage_error(VERB, "--image %s is given twice", optarg);
            if (o->n_images == BERTH_POLICY_LIST_MAX)
                return bctl_usage_error(VERB, "at most %d images", BERTH_POLICY_LIST_MAX);
            o->images[o->n_images++] = optarg;
            break;
        case OPT_BACKEND:
            if (o->n_backends == BACKENDS_MAX)
                return bctl_usage_error(VERB, "at most %d backends", BACKENDS_MAX);
            /* Counted first, so that opts_done() frees a half-parsed entry. */
            r = parse_backend(optarg, o, &o->backends[o->n_backends++]);
            if (r != BCTL_EXIT_OK)
                return r;
            break;
        case OPT_RUNTIME:
            if (o->n_backends == BACKENDS_MAX)
                return bctl_usage_error(VERB, "at most %d backends", BACKENDS_MAX);
            r = parse_runtime(optarg, o, &o->backends[o->n_backends++]);
            if (r != BCTL_EXIT_OK)
                return r;
            break;
        case OPT_NO_IMAGE_SOURCE: o->no_image_source = true; break;
        case OPT_NO_EVIDENCE_STORE: o->no_evidence_store = true; break;
        case OPT_PLUGIN_DIR:
            if (bctl_absolute_arg(VERB, "--plugin-dir", optarg, &o->plugin_dir) != 0)
                return BCTL_EXIT_USAGE;
            if (!berth_utf8_valid(o->plugin_dir, strlen(o->plugin_dir), NULL))
                return bctl_usage_error(VERB, "--plugin-dir must be valid UTF-8 (it is written into berthd.json)");
            break;
        case OPT_BROKER_NAME:
            if (!berth_broker_name_valid(optarg))
                return bctl_usage_error(VERB, "--broker-name: \"%s\" is not a broker name (" BERTH_BROKER_NAME_RULE ")",
                                        optarg);
            o->broker_name = optarg;
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint(VERB);
        }
    }
    if (optind >= argc)
        return bctl_usage_error(VERB, "missing DIR, the directory to write the installation into");
    if (argc - optind > 1)
        return bctl_usage_error(VERB, "unexpected argument \"%s\"", argv[optind + 1]);
    if (bctl_absolute_arg(VERB, "DIR", argv[optind], &o->dir) != 0)
        return BCTL_EXIT_USAGE;
    if (!berth_utf8_valid(o->dir, strlen(o->dir), NULL))
        return bctl_usage_error(VERB, "DIR must be valid UTF-8 (it is written into berthd.json)");
    if (o->n_principals == 0)
        o->principals[o->n_principals++] = DEFAULT_PRINCIPAL;
    return BCTL_EXIT_OK;
}

int devinit_load_backend_configs(struct devinit_opts *o)
{
    struct berth_error err = BERTH_ERROR_INIT;
    size_t i, len = 0;

    for (i = 0; i < o->n_backends; i++) {
        struct backend_opt *b = &o->backends[i];
        _cleanup_free_ char *text = NULL;

        if (b->runtime_path) {
            if (bctl_runtime_config(b->runtime_path, &b->config, &err) < 0)
                return bctl_error(VERB, "--runtime %s: %s", b->name, err.message);
            continue;
        }
        if (!b->config_file)
            continue;
        if (bctl_read_input(b->config_file, BERTH_BERTHD_CONFIG_MAX, &text, &len, &err) < 0 ||
            berth_json_parse(text, len, BERTH_BERTHD_CONFIG_MAX, &b->config, &err) < 0)
            return bctl_error(VERB, "--backend %s: %s: %s", b->name, b->config_file, err.message);
        if (!json_is_object(b->config))
            return bctl_error(VERB, "--backend %s: %s: the configuration must be a JSON object", b->name,
                              b->config_file);
    }
    return BCTL_EXIT_OK;
}
