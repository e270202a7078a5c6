/* SPDX-License-Identifier: MIT */
/* cmd-devinit.c -- berthctl dev-init: a complete local installation for trying berth. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"
#include "berthctl.h"
#include "canon.h"
#include "devcerts.h"
#include "devinit-runtime.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "policy.h"
#include "pool.h"
#include "sign.h"
#include "utf8.h"

#define VERB "dev-init"

#define DEFAULT_PORT 8443
#define DEFAULT_BROKER_NAME "dev"
#define DEFAULT_PRINCIPAL "dev"
#define DEFAULT_BACKEND "runsc"
#define POOL_NAME "default"
#define SCOPE "dev"
#define LISTEN_ADDRESS "127.0.0.1"

#define NAME_LEN_MAX 64                  /**< longest principal or broker name */
#define OBJECT_NAME_LEN_MAX 63           /**< longest backend or plugin name */
#define MAX_PRINCIPALS 512               /**< the host policy's subject limit */
#define MAX_IMAGES 256                   /**< the host policy's per-subject image limit */
#define MAX_BACKENDS 64                  /**< the pool's backend_allowlist limit */
#define CONFIG_MAX ((size_t)1024 * 1024) /**< largest berthd.json, and so largest backend config */
#define CA_CN_PREFIX "berth dev CA "
#define CA_CN_CHARS 64 /**< RFC 5280 ub-common-name */

#define NS_PER_S 1000000000LL
#define BACKDATE_S 60                         /**< validity starts this long before now (clock skew) */
#define VALIDITY_S ((int64_t)365 * 24 * 3600) /**< and ends this long after now */

/** The ceiling granted to every principal (host policy "limits"). */
#define LIMIT_CPU_MILLIS 2000
#define LIMIT_MEMORY_BYTES 2147483648LL
#define LIMIT_PIDS 512
#define LIMIT_SCRATCH_BYTES 1073741824LL
#define LIMIT_WALL_TIME_NS 3600000000000LL
#define LIMIT_OUTPUT_BYTES 1048576
#define LIMIT_ARTIFACT_BYTES 1073741824LL
#define IMAGE_PLUGIN "image-oci-local"
#define RUNTIME_PLUGIN "runtime-oci"
#define DEFAULT_RUNTIME_DIR "/usr/bin" /**< where Debian installs runsc and crun */

/* The --help text, a manual page in brief. */
static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl dev-init DIR [--port=N] [--principal=NAME]...\n"
                 "                [--image=DIGEST]... [--backend=NAME=PLUGIN[,CONFIG_FILE]]...\n"
                 "                [--runtime=NAME[,PATH]]... [--plugin-dir=PATH]\n"
                 "                [--no-image-source] [--broker-name=NAME] [--json]\n"
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
                 "  tls/client-NAME.pem   0644  each principal's certificate: CN NAME,\n"
                 "                              extended key usage clientAuth\n"
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
                 "      --principal=NAME  a principal to create, 1-64 of [A-Za-z0-9._-]; may\n"
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

/* ---------------------------------------------------------------------------
 * Options
 */

/**
 * struct backend_opt - one --backend NAME=PLUGIN[,CONFIG_FILE].
 * @config: the parsed CONFIG_FILE object, or NULL until loaded / without one.
 */
struct backend_opt {
    char *name;
    char *plugin;
    char *config_file;
    char *runtime_path; /**< --runtime: the OCI runtime binary */
    json_t *config;
};

/**
 * struct devinit_opts - the parsed command line.
 * @dir:        DIR made absolute, not yet normalised.
 * @plugin_dir: --plugin-dir made absolute, or NULL.
 * @principals, @images: point into argv.
 */
struct devinit_opts {
    char *dir;
    char *plugin_dir;
    const char *broker_name;
    unsigned port;
    const char **principals;
    size_t n_principals;
    const char **images;
    size_t n_images;
    struct backend_opt *backends;
    size_t n_backends;
    bool no_image_source;
};

/* Release what parse_args() and load_backend_configs() allocated. */
static void opts_done(struct devinit_opts *o)
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

/* Principal and broker names: 1..NAME_LEN_MAX of [A-Za-z0-9._-]. */
static bool simple_name_valid(const char *s)
{
    size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");

    return n > 0 && n <= NAME_LEN_MAX && s[n] == '\0';
}

/*
 * Backend names as pools spell them: [a-z0-9][a-z0-9._-]{0,62}; plugin names
 * as the loader does: [a-z0-9][a-z0-9-]{0,62}.
 */
static bool object_name_valid(const char *s, const char *more)
{
    static const char lower_digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    size_t n;

    if (!s[0] || !strchr(lower_digits, s[0]))
        return false;
    for (n = 0; s[n]; n++)
        if (!strchr(lower_digits, s[n]) && !strchr(more, s[n]))
            return false;
    return n <= OBJECT_NAME_LEN_MAX;
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

/* Parse NAME=PLUGIN[,CONFIG_FILE] into @b.  Returns an exit code. */
/* True when another backend before @b already has @b's name. */
static bool backend_name_taken(const struct devinit_opts *o, const struct backend_opt *b)
{
    size_t i;

    for (i = 0; &o->backends[i] != b; i++)
        if (streq(o->backends[i].name, b->name))
            return true;
    return false;
}

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
    if (!object_name_valid(b->name, "._-"))
        return bctl_usage_error(VERB,
                                "--backend: \"%s\" is not a backend name (1 to 63 of [a-z0-9._-], starting "
                                "with a letter or digit)",
                                b->name);
    if (!object_name_valid(b->plugin, "-"))
        return bctl_usage_error(VERB,
                                "--backend %s: \"%s\" is not a plugin name (1 to 63 of [a-z0-9-], starting "
                                "with a letter or digit)",
                                b->name, b->plugin);
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
    if (!object_name_valid(b->name, "._-"))
        return bctl_usage_error(VERB,
                                "--runtime: \"%s\" is not a backend name (1 to 63 of [a-z0-9._-], starting "
                                "with a letter or digit)",
                                b->name);
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

/*
 * Parse the command line into @o (defaults filled in; --help prints and
 * leaves o->dir NULL).  Returns an exit code; usage errors are printed.
 */
static int parse_args(struct bctl_globals *g, int argc, char **argv, struct devinit_opts *o)
{
    enum {
        OPT_PORT = 1,
        OPT_PRINCIPAL,
        OPT_IMAGE,
        OPT_BACKEND,
        OPT_RUNTIME,
        OPT_PLUGIN_DIR,
        OPT_BROKER_NAME,
        OPT_NO_IMAGE_SOURCE
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
            if (!simple_name_valid(optarg))
                return bctl_usage_error(VERB, "--principal: \"%s\" is not a principal name (1 to %d of [A-Za-z0-9._-])",
                                        optarg, NAME_LEN_MAX);
            for (i = 0; i < o->n_principals; i++)
                if (streq(o->principals[i], optarg))
                    return bctl_usage_error(VERB, "--principal %s is given twice", optarg);
            if (o->n_principals == MAX_PRINCIPALS)
                return bctl_usage_error(VERB, "at most %d principals", MAX_PRINCIPALS);
            o->principals[o->n_principals++] = optarg;
            break;
        case OPT_IMAGE:
            if (berth_digest_parse(optarg, raw) < 0)
                return bctl_usage_error(VERB, "--image takes a manifest digest, sha256:<64 lowercase hex>, not \"%s\"",
                                        optarg);
            for (i = 0; i < o->n_images; i++)
                if (streq(o->images[i], optarg))
                    return bctl_usage_error(VERB, "--image %s is given twice", optarg);
            if (o->n_images == MAX_IMAGES)
                return bctl_usage_error(VERB, "at most %d images", MAX_IMAGES);
            o->images[o->n_images++] = optarg;
            break;
        case OPT_BACKEND:
            if (o->n_backends == MAX_BACKENDS)
                return bctl_usage_error(VERB, "at most %d backends", MAX_BACKENDS);
            /* Counted first, so that opts_done() frees a half-parsed entry. */
            r = parse_backend(optarg, o, &o->backends[o->n_backends++]);
            if (r != BCTL_EXIT_OK)
                return r;
            break;
        case OPT_RUNTIME:
            if (o->n_backends == MAX_BACKENDS)
                return bctl_usage_error(VERB, "at most %d backends", MAX_BACKENDS);
            r = parse_runtime(optarg, o, &o->backends[o->n_backends++]);
            if (r != BCTL_EXIT_OK)
                return r;
            break;
        case OPT_NO_IMAGE_SOURCE: o->no_image_source = true; break;
        case OPT_PLUGIN_DIR:
            if (bctl_absolute_arg(VERB, "--plugin-dir", optarg, &o->plugin_dir) != 0)
                return BCTL_EXIT_USAGE;
            if (!berth_utf8_valid(o->plugin_dir, strlen(o->plugin_dir), NULL))
                return bctl_usage_error(VERB, "--plugin-dir must be valid UTF-8 (it is written into berthd.json)");
            break;
        case OPT_BROKER_NAME:
            if (!simple_name_valid(optarg))
                return bctl_usage_error(VERB, "--broker-name: \"%s\" is not a broker name (1 to %d of [A-Za-z0-9._-])",
                                        optarg, NAME_LEN_MAX);
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

/* Read and parse every --backend CONFIG_FILE (a JSON object).  Returns an exit code. */
static int load_backend_configs(struct devinit_opts *o)
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
        if (bctl_read_input(b->config_file, CONFIG_MAX, &text, &len, &err) < 0 ||
            berth_json_parse(text, len, CONFIG_MAX, &b->config, &err) < 0)
            return bctl_error(VERB, "--backend %s: %s: %s", b->name, b->config_file, err.message);
        if (!json_is_object(b->config))
            return bctl_error(VERB, "--backend %s: %s: the configuration must be a JSON object", b->name,
                              b->config_file);
    }
    return BCTL_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * The target directory
 */

/** Subdirectories, all created 0700. */
enum { SUB_TOP = -1, SUB_TLS, SUB_KEYS, SUB_POOLS, SUB_STATE, SUB_IMAGES, SUB_RUNTIME, SUB_COUNT };
static const char *const subdir_names[SUB_COUNT] = {"tls", "keys", "pools", "state", "images", "runtime"};

/**
 * struct target - DIR, opened without following symlinks.
 * @dir:       the normalised absolute path (written into the files).
 * @base:      its last component ("" for "/"), for the CA's name.
 * @raw:       the absolute path as given, trailing slashes removed (opened).
 * @parent_fd: DIR's parent, when DIR must be created; else -1.
 * @new_name:  the name to create in @parent_fd (points into a copy of the path).
 * @dir_fd:    DIR (O_RDONLY | O_DIRECTORY), -1 until it exists.
 * @sub_fd:    the subdirectories, -1 until created.
 */
struct target {
    char *dir;
    const char *base;
    char *raw;
    int parent_fd;
    const char *new_name;
    int dir_fd;
    int sub_fd[SUB_COUNT];
};

/* Close and release everything target_open() and write_plan() left in @t. */
static void target_done(struct target *t)
{
    size_t i;

    free(t->dir);
    free(t->raw);
    berth_closep(&t->parent_fd);
    berth_closep(&t->dir_fd);
    for (i = 0; i < SUB_COUNT; i++)
        berth_closep(&t->sub_fd[i]);
}

/*
 * Normalise the absolute @path: drop empty and "." components and resolve
 * ".." textually.  Exact only for a path already opened with no symlink on
 * the way (so every component before a ".." is a real directory).
 */
static int normalise_path(const char *path, char **ret)
{
    _cleanup_free_ char *out = malloc(strlen(path) + 2);
    const char *p = path, *next;
    size_t len = 0, n;

    if (!out)
        return -ENOMEM;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        next = strchr(p, '/');
        n = next ? (size_t)(next - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--; /* the slash before the removed component */
        } else if (!(n == 1 && p[0] == '.')) {
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    *ret = TAKE_PTR(out);
    return 0;
}

/* Path @rel below @dir ("/" + @rel when @dir is the root). */
static char *path_join(const char *dir, const char *rel)
{
    char *s = NULL;

    if (asprintf(&s, "%s/%s", streq(dir, "/") ? "" : dir, rel) < 0)
        return NULL;
    return s;
}

/*
 * Open DIR (or, when it does not exist, its parent), with no symlink on the
 * way, and check an existing DIR.  Returns an exit code.
 */
static int target_open(const char *abs_dir, struct target *t)
{
    const struct berth_file_expect expect = {
        .type = S_IFDIR,
        .uid = (uint32_t)geteuid(),
        .mode_mask = 022,
        .mode = 0,
    };
    struct berth_error err = BERTH_ERROR_INIT;
    char *slash;
    int fd;

    t->raw = strdup(abs_dir);
    if (!t->raw)
        return bctl_error(VERB, "out of memory");
    /* Trailing slashes name the same directory; drop them to find the last component. */
    for (slash = t->raw + strlen(t->raw); slash > t->raw + 1 && slash[-1] == '/'; slash--)
        slash[-1] = '\0';

    fd = berth_open_trusted(t->raw, O_RDONLY | O_DIRECTORY, 0, &err);
    if (fd >= 0) {
        t->dir_fd = fd;
        if (berth_file_check(fd, t->raw, &expect, NULL, &err) < 0)
            return bctl_error(VERB, "%s; refusing to write an installation into it", err.message);
    } else if (fd == -ENOENT) {
        /* Create DIR in its parent, which must exist. */
        slash = strrchr(t->raw, '/');
        t->new_name = slash + 1;
        if (!berth_name_valid(t->new_name))
            return bctl_error(VERB, "%s", err.message);
        *slash = '\0';
        fd = berth_open_trusted(slash == t->raw ? "/" : t->raw, O_RDONLY | O_DIRECTORY, 0, &err);
        *slash = '/';
        if (fd < 0)
            return bctl_error(VERB, "cannot create %s: %s", t->raw, err.message);
        t->parent_fd = fd;
    } else {
        return bctl_error(VERB, "%s", err.message);
    }
    if (normalise_path(t->raw, &t->dir) < 0)
        return bctl_error(VERB, "out of memory");
    slash = strrchr(t->dir, '/');
    t->base = slash + 1;
    return BCTL_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * The plan: every file, its place, mode and contents
 */

enum file_kind {
    FILE_DATA,        /**< @data, published with berth_publish_at() */
    FILE_RECEIPT_KEY, /**< the receipt key, berth_signing_key_save() */
    FILE_AUDIT_KEY,   /**< a new audit key, berth_audit_key_create() */
};

/**
 * struct plan_file - one file of the installation.
 * @sub:     its directory (SUB_TOP for DIR itself).
 * @name:    its name in that directory.
 * @rel:     its path relative to DIR ("tls/ca.pem").
 * @path:    its absolute path.
 * @secret:  @data holds key material: wiped when released.
 * @written: published by this run (removed again on failure).
 */
struct plan_file {
    int sub;
    char *name;
    char *rel;
    char *path;
    enum file_kind kind;
    mode_t mode;
    bool secret;
    char *data;
    size_t len;
    bool written;
};

/** Fixed files, in the order they are checked (and written backwards). */
enum {
    F_BERTHD,
    F_CLIENT,
    F_POLICY,
    F_CA_PEM,
    F_CA_KEY,
    F_SERVER_PEM,
    F_SERVER_KEY,
    F_RECEIPT_KEY,
    F_RECEIPT_PUB,
    F_AUDIT_KEY,
    F_POOL,
    F_FIXED_COUNT, /**< then tls/client-NAME.pem and .key for each principal */
};
#define F_CLIENT_PEM(i) (F_FIXED_COUNT + 2 * (i))
#define F_CLIENT_KEY(i) (F_FIXED_COUNT + 2 * (i) + 1)

/**
 * struct plan - the installation to write.
 * @receipt: the receipt signing key (F_RECEIPT_KEY).
 */
struct plan {
    struct plan_file *files;
    size_t n;
    struct berth_signing_key *receipt;
};

/* Release the plan, wiping key material. */
static void plan_done(struct plan *p)
{
    size_t i;

    for (i = 0; i < p->n; i++) {
        struct plan_file *f = &p->files[i];
        if (f->secret)
            berth_secret_free(f->data, f->len);
        else
            free(f->data);
        free(f->name);
        free(f->rel);
        free(f->path);
    }
    free(p->files);
    berth_signing_key_free(p->receipt);
}

/* Fill entry @idx: file @name in subdirectory @sub.  Return: 0 or -ENOMEM. */
static int plan_entry(struct plan *p, const char *dir, size_t idx, int sub, const char *name, enum file_kind kind,
                      mode_t mode, bool secret)
{
    struct plan_file *f = &p->files[idx];

    f->sub = sub;
    f->kind = kind;
    f->mode = mode;
    f->secret = secret;
    f->name = strdup(name);
    if (!f->name)
        return -ENOMEM;
    if (sub == SUB_TOP)
        f->rel = strdup(name);
    else if (asprintf(&f->rel, "%s/%s", subdir_names[sub], name) < 0)
        f->rel = NULL;
    if (!f->rel)
        return -ENOMEM;
    f->path = path_join(dir, f->rel);
    return f->path ? 0 : -ENOMEM;
}

/* Lay out every file (names and modes, no contents yet).  Return: 0 or -ENOMEM. */
static int plan_layout(const struct devinit_opts *o, const char *dir, struct plan *p)
{
    static const struct {
        int sub;
        const char *name;
        enum file_kind kind;
        mode_t mode;
        bool secret;
    } fixed[F_FIXED_COUNT] = {
        [F_BERTHD] = {SUB_TOP, "berthd.json", FILE_DATA, 0600, false},
        [F_CLIENT] = {SUB_TOP, "client.json", FILE_DATA, 0600, false},
        [F_POLICY] = {SUB_TOP, "policy.json", FILE_DATA, 0600, false},
        [F_CA_PEM] = {SUB_TLS, "ca.pem", FILE_DATA, 0644, false},
        [F_CA_KEY] = {SUB_TLS, "ca.key", FILE_DATA, 0600, true},
        [F_SERVER_PEM] = {SUB_TLS, "server.pem", FILE_DATA, 0644, false},
        [F_SERVER_KEY] = {SUB_TLS, "server.key", FILE_DATA, 0600, true},
        [F_RECEIPT_KEY] = {SUB_KEYS, "receipt.key", FILE_RECEIPT_KEY, 0600, false},
        [F_RECEIPT_PUB] = {SUB_KEYS, "receipt.pub", FILE_DATA, 0644, false},
        [F_AUDIT_KEY] = {SUB_KEYS, "audit.key", FILE_AUDIT_KEY, 0600, false},
        [F_POOL] = {SUB_POOLS, POOL_NAME ".json", FILE_DATA, 0644, false},
    };
    size_t i;
    int r;

    p->files = calloc(F_FIXED_COUNT + 2 * o->n_principals, sizeof(*p->files));
    if (!p->files)
        return -ENOMEM;
    p->n = F_FIXED_COUNT + 2 * o->n_principals;
    for (i = 0; i < F_FIXED_COUNT; i++)
        if ((r = plan_entry(p, dir, i, fixed[i].sub, fixed[i].name, fixed[i].kind, fixed[i].mode, fixed[i].secret)) < 0)
            return r;
    for (i = 0; i < o->n_principals; i++) {
        _cleanup_free_ char *pem = NULL, *key = NULL;
        if (asprintf(&pem, "client-%s.pem", o->principals[i]) < 0 ||
            asprintf(&key, "client-%s.key", o->principals[i]) < 0)
            return -ENOMEM;
        if ((r = plan_entry(p, dir, F_CLIENT_PEM(i), SUB_TLS, pem, FILE_DATA, 0644, false)) < 0 ||
            (r = plan_entry(p, dir, F_CLIENT_KEY(i), SUB_TLS, key, FILE_DATA, 0600, true)) < 0)
            return r;
    }
    return 0;
}

/* Whether @rel exists below @dirfd (a symlink counts).  Return: 1, 0 or a negative errno. */
static int exists_beneath(int dirfd, const char *rel, struct berth_error *reterr)
{
    int fd = berth_open_beneath(dirfd, rel, O_PATH, 0, reterr);

    if (fd >= 0) {
        (void)close(fd);
        return 1;
    }
    if (fd == -ELOOP)
        return 1;
    if (fd == -ENOENT)
        return 0;
    return fd;
}

/* "berthctl dev-init: DIR/REL exists; ..."; returns BCTL_EXIT_FAIL. */
static int refuse_existing(const struct target *t, const char *rel)
{
    return bctl_error(VERB, "%s%s%s exists; dev-init never overwrites files", t->dir, streq(t->dir, "/") ? "" : "/",
                      rel);
}

/*
 * Refuse an existing DIR that already holds any file or directory of the
 * plan, naming the first: DIR's own files, then for each subdirectory that
 * exists the first planned file in it, or else the subdirectory itself.
 * Returns an exit code.
 */
static int check_absent(const struct target *t, const struct plan *p)
{
    struct berth_error err = BERTH_ERROR_INIT;
    size_t i;
    int sub, r;

    for (i = 0; i < p->n; i++) {
        if (p->files[i].sub != SUB_TOP)
            continue;
        if ((r = exists_beneath(t->dir_fd, p->files[i].rel, &err)) < 0)
            return bctl_error(VERB, "%s", err.message);
        if (r > 0)
            return refuse_existing(t, p->files[i].rel);
    }
    for (sub = 0; sub < SUB_COUNT; sub++) {
        _cleanup_close_ int fd = berth_open_beneath(t->dir_fd, subdir_names[sub], O_PATH | O_DIRECTORY, 0, &err);

        if (fd == -ENOENT)
            continue;
        if (fd == -ELOOP || fd == -ENOTDIR) /* a symlink or not a directory: name it */
            return refuse_existing(t, subdir_names[sub]);
        if (fd < 0)
            return bctl_error(VERB, "%s", err.message);
        for (i = 0; i < p->n; i++) {
            if (p->files[i].sub != sub)
                continue;
            if ((r = exists_beneath(fd, p->files[i].name, &err)) < 0)
                return bctl_error(VERB, "%s", err.message);
            if (r > 0)
                return refuse_existing(t, p->files[i].rel);
        }
        return refuse_existing(t, subdir_names[sub]);
    }
    return BCTL_EXIT_OK;
}

/* ---------------------------------------------------------------------------
 * Generating the contents
 */

/* @doc pretty-printed with a final newline, in a malloc'd string. */
static int dump_pretty(const json_t *doc, char **ret, size_t *ret_len)
{
    _cleanup_free_ char *text = json_dumps(doc, JSON_INDENT(2));
    char *out = NULL;
    int n;

    if (!text)
        return -ENOMEM;
    n = asprintf(&out, "%s\n", text);
    if (n < 0)
        return -ENOMEM;
    *ret = out;
    *ret_len = (size_t)n;
    return 0;
}

/** struct fingerprint - a client certificate's fingerprint (bctl_devcert_fingerprint()). */
struct fingerprint {
    char hex[BCTL_FINGERPRINT_HEX_LEN + 1];
};

/* "berth dev CA <base>", cut to CA_CN_CHARS characters at a character boundary. */
static int ca_common_name(const char *base, char **ret)
{
    size_t len = strlen(base), pos = 0, chars = strlen(CA_CN_PREFIX);
    uint32_t cp;

    while (pos < len && chars < CA_CN_CHARS) {
        size_t next = pos;
        if (berth_utf8_decode(base, len, &next, &cp) < 0)
            break;
        pos = next;
        chars++;
    }
    return asprintf(ret, "%s%.*s", CA_CN_PREFIX, (int)pos, streq(base, "") ? "/" : base) < 0 ? -ENOMEM : 0;
}

/* Store a PEM key of @key as file @idx (secret). */
static int plan_key_pem(struct plan *p, size_t idx, EVP_PKEY *key, struct berth_error *reterr)
{
    return bctl_devcert_key_pem(key, &p->files[idx].data, &p->files[idx].len, reterr);
}

/* Store the PEM of @cert as file @idx. */
static int plan_cert_pem(struct plan *p, size_t idx, X509 *cert, struct berth_error *reterr)
{
    return bctl_devcert_cert_pem(cert, &p->files[idx].data, &p->files[idx].len, reterr);
}

/*
 * The CA, the server certificate and one client certificate per principal,
 * each with its key; @fingerprints receives the clients' fingerprints.
 */
static int make_certificates(const struct devinit_opts *o, const struct target *t, int64_t now_ns, struct plan *p,
                             struct fingerprint *fingerprints, struct berth_error *reterr)
{
    _cleanup_(EVP_PKEY_freep) EVP_PKEY *ca_key = NULL, *server_key = NULL;
    _cleanup_(X509_freep) X509 *ca = NULL, *server = NULL;
    _cleanup_free_ char *cn = NULL;
    const struct bctl_cert_validity validity = {
        .not_before = now_ns / NS_PER_S - BACKDATE_S,
        .not_after = now_ns / NS_PER_S + VALIDITY_S,
    };
    size_t i;
    int r;

    if (ca_common_name(t->base, &cn) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if ((r = bctl_devcert_key_new(&ca_key, reterr)) < 0 ||
        (r = bctl_devcert_ca_new(cn, ca_key, &validity, &ca, reterr)) < 0 ||
        (r = plan_cert_pem(p, F_CA_PEM, ca, reterr)) < 0 || (r = plan_key_pem(p, F_CA_KEY, ca_key, reterr)) < 0)
        return r;
    if ((r = bctl_devcert_key_new(&server_key, reterr)) < 0 ||
        (r = bctl_devcert_leaf_new(BCTL_LEAF_SERVER, NULL, server_key, ca, ca_key, &validity, &server, reterr)) < 0 ||
        (r = plan_cert_pem(p, F_SERVER_PEM, server, reterr)) < 0 ||
        (r = plan_key_pem(p, F_SERVER_KEY, server_key, reterr)) < 0)
        return r;
    for (i = 0; i < o->n_principals; i++) {
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = NULL;
        _cleanup_(X509_freep) X509 *cert = NULL;

        if ((r = bctl_devcert_key_new(&key, reterr)) < 0 ||
            (r = bctl_devcert_leaf_new(BCTL_LEAF_CLIENT, o->principals[i], key, ca, ca_key, &validity, &cert, reterr)) <
                0 ||
            (r = plan_cert_pem(p, F_CLIENT_PEM(i), cert, reterr)) < 0 ||
            (r = plan_key_pem(p, F_CLIENT_KEY(i), key, reterr)) < 0 ||
            (r = bctl_devcert_fingerprint(cert, fingerprints[i].hex, reterr)) < 0)
            return r;
    }
    return 0;
}

/* Whether the plugin directory berthd will use holds the image plugin. */
static bool image_plugin_present(const struct devinit_opts *o)
{
    _cleanup_free_ char *path = NULL;
    struct stat st;

    if (o->no_image_source ||
        asprintf(&path, "%s/%s.so", o->plugin_dir ? o->plugin_dir : BERTH_PLUGINDIR, IMAGE_PLUGIN) < 0)
        return false;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* berthd.json.  Return: 0, -ENOMEM. */
static json_t *berthd_config(const struct devinit_opts *o, const struct plan *p, const char *dir)
{
    _cleanup_free_ char *state = path_join(dir, subdir_names[SUB_STATE]), *pools = path_join(dir, "pools");
    _cleanup_json_ json_t *doc = NULL, *backends = json_object();
    size_t i;

    if (!state || !pools || !backends)
        return NULL;
    for (i = 0; i < o->n_backends; i++) {
        const struct backend_opt *b = &o->backends[i];
        _cleanup_json_ json_t *empty = json_object(), *entry = NULL;
        if (!empty)
            return NULL;
        if (b->runtime_path) {
            /* A pinned runtime can be qualified: berthd holds it to that. */
            _cleanup_free_ char *runtime_state = NULL;
            _cleanup_json_ json_t *config = json_copy(b->config);
            if (!config || asprintf(&runtime_state, "%s/%s/%s", dir, subdir_names[SUB_RUNTIME], b->name) < 0) {
                runtime_state = NULL;
                return NULL;
            }
            if (json_object_set_new(config, "state_directory", json_string(runtime_state)) < 0)
                return NULL;
            entry = json_pack("{s:s, s:b, s:b, s:O}", "plugin", b->plugin, "require_qualification", 1,
                              "qualify_at_startup", 1, "config", config);
        } else {
            entry = json_pack("{s:s, s:b, s:O}", "plugin", b->plugin, "require_qualification", 0, "config",
                              b->config ? b->config : empty);
        }
        if (!entry || json_object_set(backends, b->name, entry) < 0)
            return NULL;
    }
    doc = json_pack("{s:i, s:s, s:{s:s, s:i}, s:{s:s, s:s, s:s}, s:s, s:s, s:s, s:s, s:s}", "schema_version", 1,
                    "broker_name", o->broker_name, "listen", "address", LISTEN_ADDRESS, "port", (int)o->port, "tls",
                    "certificate", p->files[F_SERVER_PEM].path, "private_key", p->files[F_SERVER_KEY].path, "client_ca",
                    p->files[F_CA_PEM].path, "receipt_key", p->files[F_RECEIPT_KEY].path, "audit_key",
                    p->files[F_AUDIT_KEY].path, "policy", p->files[F_POLICY].path, "state_directory", state,
                    "pools_directory", pools);
    if (!doc)
        return NULL;
    if (o->plugin_dir && json_object_set_new(doc, "plugin_directory", json_string(o->plugin_dir)) < 0)
        return NULL;
    if (json_object_set(doc, "backends", backends) < 0)
        return NULL;
    if (image_plugin_present(o)) {
        _cleanup_free_ char *store = path_join(dir, subdir_names[SUB_IMAGES]);
        if (!store ||
            json_object_set_new(doc, "images",
                                json_pack("{s:s, s:{s:s}}", "plugin", IMAGE_PLUGIN, "config", "store", store)) < 0)
            return NULL;
    }
    return TAKE_PTR(doc);
}

/* client.json for the first principal. */
static json_t *client_config(const struct devinit_opts *o, const struct plan *p, const char *pub_b64)
{
    _cleanup_free_ char *url = NULL;

    if (asprintf(&url, "https://%s:%u", LISTEN_ADDRESS, o->port) < 0)
        return NULL;
    return json_pack("{s:i, s:s, s:s, s:s, s:s, s:s}", "schema_version", 1, "url", url, "broker_public_key", pub_b64,
                     "certificate", p->files[F_CLIENT_PEM(0)].path, "private_key", p->files[F_CLIENT_KEY(0)].path, "ca",
                     p->files[F_CA_PEM].path);
}

/* policy.json: one subject per principal, valid over [@not_before, @not_after]. */
static json_t *host_policy(const struct devinit_opts *o, const struct fingerprint *fingerprints, int64_t not_before,
                           int64_t not_after)
{
    _cleanup_json_ json_t *doc = NULL, *subjects = json_array(), *images = json_array(), *limits = NULL,
                          *nb = berth_json_ns(not_before), *na = berth_json_ns(not_after);
    size_t i;

    if (!subjects || !images || !nb || !na)
        return NULL;
    for (i = 0; i < o->n_images; i++)
        if (json_array_append_new(images, json_string(o->images[i])) < 0)
            return NULL;
    limits = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "cpu_millis", (json_int_t)LIMIT_CPU_MILLIS,
                       "memory_bytes", (json_int_t)LIMIT_MEMORY_BYTES, "pids", (json_int_t)LIMIT_PIDS, "scratch_bytes",
                       (json_int_t)LIMIT_SCRATCH_BYTES, "wall_time_ns", (json_int_t)LIMIT_WALL_TIME_NS, "output_bytes",
                       (json_int_t)LIMIT_OUTPUT_BYTES, "artifact_bytes", (json_int_t)LIMIT_ARTIFACT_BYTES);
    if (!limits)
        return NULL;
    for (i = 0; i < o->n_principals; i++) {
        json_t *s = json_pack("{s:s, s:[s], s:[s], s:[s], s:O, s:O, s:O, s:O}", "principal", o->principals[i], "scope",
                              SCOPE, "fingerprints", fingerprints[i].hex, "pools", POOL_NAME, "images", images,
                              "limits", limits, "not_before", nb, "not_after", na);
        if (!s || json_array_append_new(subjects, s) < 0)
            return NULL;
        if (i == 0 && json_object_set_new(s, "admin", json_true()) < 0)
            return NULL;
    }
    doc =
        json_pack("{s:i, s:O, s:O, s:O}", "schema_version", 1, "not_before", nb, "not_after", na, "subjects", subjects);
    return TAKE_PTR(doc);
}

/* pools/default.json: conf/pools/default.json with the backends of this installation. */
static json_t *pool_manifest(const struct devinit_opts *o)
{
    _cleanup_json_ json_t *allow = json_array();
    size_t i;

    if (!allow)
        return NULL;
    for (i = 0; i < o->n_backends; i++)
        if (json_array_append_new(allow, json_string(o->backends[i].name)) < 0)
            return NULL;
    if (o->n_backends == 0 && json_array_append_new(allow, json_string(DEFAULT_BACKEND)) < 0)
        return NULL;
    return json_pack("{s:i, s:s, s:O, s:{s:s, s:{s:s, s:s}, s:i}, s:[s, s], s:i, s:[s, s], s:s, s:[]}",
                     "schema_version", 1, "name", POOL_NAME, "backend_allowlist", allow, "template", "root",
                     "/workspace", "env", "LANG", "C.UTF-8", "TZ", "UTC", "timeout_seconds", 600, "exposed_fields",
                     "env", "timeout_seconds", "max_concurrency", 16, "capability_ceiling", "exec", "file_rw",
                     "network_egress_class", "none", "credential_env_allowlist");
}

/*
 * Check the generated documents with the parsers that will read them:
 * strict JSON within berthd's 1 MiB bound, the host policy and the pool.
 */
static int self_check(const struct plan *p, struct berth_error *reterr)
{
    static const size_t plain[] = {F_BERTHD, F_CLIENT};
    struct berth_policy *policy = NULL;
    struct berth_pool *pool = NULL;
    size_t i;
    int r;

    for (i = 0; i < ELEMENTSOF(plain); i++) {
        const struct plan_file *f = &p->files[plain[i]];
        _cleanup_json_ json_t *doc = NULL;
        if ((r = berth_json_parse(f->data, f->len, CONFIG_MAX, &doc, reterr)) < 0) {
            berth_error_prefix(reterr, "%s would not be valid", f->rel);
            return r;
        }
    }
    r = berth_policy_parse(p->files[F_POLICY].data, p->files[F_POLICY].len, &policy, reterr);
    berth_policy_free(policy);
    if (r < 0) {
        berth_error_prefix(reterr, "%s would not be valid", p->files[F_POLICY].rel);
        return r;
    }
    r = berth_pool_parse(p->files[F_POOL].data, p->files[F_POOL].len, &pool, reterr);
    berth_pool_free(pool);
    if (r < 0) {
        berth_error_prefix(reterr, "%s would not be valid", p->files[F_POOL].rel);
        return r;
    }
    return 0;
}

/* Everything the files hold, in memory.  Return: 0 or a negative errno with @reterr set. */
static int generate(const struct devinit_opts *o, const struct target *t, struct plan *p,
                    struct fingerprint *fingerprints, struct berth_error *reterr)
{
    _cleanup_json_ json_t *berthd = NULL, *client = NULL, *policy = NULL, *pool = NULL;
    char pub_b64[BERTH_PUBLIC_KEY_B64_LEN + 1];
    int64_t now_ns = bctl_now_ns();
    int r;

    if ((r = make_certificates(o, t, now_ns, p, fingerprints, reterr)) < 0)
        return r;
    if ((r = berth_signing_key_generate(&p->receipt, reterr)) < 0 ||
        (r = berth_public_key_to_pem(berth_signing_key_public(p->receipt), &p->files[F_RECEIPT_PUB].data,
                                     &p->files[F_RECEIPT_PUB].len, reterr)) < 0)
        return r;
    if ((r = berth_public_key_to_b64url(berth_signing_key_public(p->receipt), pub_b64)) < 0)
        return berth_error_set(reterr, r, "encoding the receipt public key failed");

    berthd = berthd_config(o, p, t->dir);
    client = client_config(o, p, pub_b64);
    policy = host_policy(o, fingerprints, now_ns - (int64_t)BACKDATE_S * NS_PER_S, now_ns + VALIDITY_S * NS_PER_S);
    pool = pool_manifest(o);
    if (!berthd || !client || !policy || !pool ||
        dump_pretty(berthd, &p->files[F_BERTHD].data, &p->files[F_BERTHD].len) < 0 ||
        dump_pretty(client, &p->files[F_CLIENT].data, &p->files[F_CLIENT].len) < 0 ||
        dump_pretty(policy, &p->files[F_POLICY].data, &p->files[F_POLICY].len) < 0 ||
        dump_pretty(pool, &p->files[F_POOL].data, &p->files[F_POOL].len) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return self_check(p, reterr);
}

/* ---------------------------------------------------------------------------
 * Writing, and removing again on failure
 */

/**
 * struct written - what this run created, to be removed if it fails.
 */
struct written {
    bool dir;
    bool sub[SUB_COUNT];
};

/* Make directory @name in @dirfd with mode 0700 (umask does not apply) and open it. */
static int make_dir(int dirfd, const char *name, const char *shown, bool *created, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;

    if (mkdirat(dirfd, name, 0700) < 0) {
        if (errno == EEXIST)
            return berth_error_set(reterr, -EEXIST, "%s exists; dev-init never overwrites files", shown);
        return berth_error_set(reterr, -errno, "creating %s: %s", shown, strerror(errno));
    }
    *created = true;
    fd = berth_open_beneath(dirfd, name, O_RDONLY | O_DIRECTORY, 0, reterr);
    if (fd < 0)
        return fd;
    if (fchmod(fd, 0700) < 0)
        return berth_error_set(reterr, -errno, "%s: chmod: %s", shown, strerror(errno));
    return TAKE_FD(fd);
}

/* Create the directories and publish every file, config files last.  Return: 0 or a negative errno. */
static int write_plan(struct target *t, struct plan *p, struct written *w, struct berth_error *reterr)
{
    size_t i;
    int r;

    if (t->dir_fd < 0) {
        r = make_dir(t->parent_fd, t->new_name, t->dir, &w->dir, reterr);
        if (r < 0)
            return r;
        t->dir_fd = r;
    }
    for (i = 0; i < SUB_COUNT; i++) {
        _cleanup_free_ char *shown = path_join(t->dir, subdir_names[i]);
        if (!shown)
            return berth_error_set(reterr, -ENOMEM, "out of memory");
        r = make_dir(t->dir_fd, subdir_names[i], shown, &w->sub[i], reterr);
        if (r < 0)
            return r;
        t->sub_fd[i] = r;
    }
    for (i = p->n; i-- > 0;) {
        struct plan_file *f = &p->files[i];
        switch (f->kind) {
        case FILE_DATA:
            r = berth_publish_at(f->sub == SUB_TOP ? t->dir_fd : t->sub_fd[f->sub], f->name, f->data, f->len, f->mode,
                                 0, reterr);
            if (r == -EEXIST)
                berth_error_set(reterr, r, "%s exists; dev-init never overwrites files", f->path);
            else if (r < 0)
                berth_error_prefix(reterr, "writing %s", f->path);
            break;
        case FILE_RECEIPT_KEY: r = berth_signing_key_save(p->receipt, f->path, reterr); break;
        case FILE_AUDIT_KEY: r = berth_audit_key_create(f->path, reterr); break;
        default: r = berth_error_set(reterr, -EINVAL, "internal error: unknown file kind");
        }
        if (r < 0)
            return r;
        f->written = true;
    }
    /* The subdirectories were synced by each publication; make their names and DIR's durable too. */
    if (fsync(t->dir_fd) < 0 || (w->dir && fsync(t->parent_fd) < 0))
        return berth_error_set(reterr, -EIO, "syncing %s failed: %s", t->dir, strerror(errno));
    return 0;
}

/* Whether write_plan() created anything at all. */
static bool wrote_anything(const struct plan *p, const struct written *w)
{
    size_t i;

    if (w->dir)
        return true;
    for (i = 0; i < SUB_COUNT; i++)
        if (w->sub[i])
            return true;
    for (i = 0; i < p->n; i++)
        if (p->files[i].written)
            return true;
    return false;
}

/* Remove what write_plan() created, newest first.  Returns whether everything went. */
static bool roll_back(struct target *t, struct plan *p, const struct written *w)
{
    bool clean = true;
    size_t i;
    int i_sub;

    for (i = 0; i < p->n; i++) {
        struct plan_file *f = &p->files[i];
        int dfd = f->sub == SUB_TOP ? t->dir_fd : t->sub_fd[f->sub];
        if (!f->written)
            continue;
        if (dfd < 0 || unlinkat(dfd, f->name, 0) < 0) {
            bctl_error(VERB, "removing %s after the failure failed: %s", f->path, strerror(dfd < 0 ? EBADF : errno));
            clean = false;
        }
    }
    for (i_sub = SUB_COUNT - 1; i_sub >= 0; i_sub--) {
        if (!w->sub[i_sub])
            continue;
        if (unlinkat(t->dir_fd, subdir_names[i_sub], AT_REMOVEDIR) < 0) {
            bctl_error(VERB, "removing %s/%s after the failure failed: %s", t->dir, subdir_names[i_sub],
                       strerror(errno));
            clean = false;
        }
    }
    if (w->dir && clean && unlinkat(t->parent_fd, t->new_name, AT_REMOVEDIR) < 0) {
        bctl_error(VERB, "removing %s after the failure failed: %s", t->dir, strerror(errno));
        clean = false;
    }
    return clean;
}

/* ---------------------------------------------------------------------------
 * Output
 */

/*
 * What a successful run prints, in a malloc'd string: the next steps and
 * each principal's fingerprint, or (@json) one canonical JSON object.
 * Return: 0 or -ENOMEM.
 */
static int format_output(const struct devinit_opts *o, const struct target *t, const struct plan *p,
                         const struct fingerprint *fingerprints, bool json, char **ret)
{
    size_t i;

    if (json) {
        _cleanup_json_ json_t *doc = NULL, *principals = json_array();
        if (!principals)
            return -ENOMEM;
        for (i = 0; i < o->n_principals; i++)
            if (json_array_append_new(principals, json_pack("{s:s, s:s, s:s}", "name", o->principals[i], "certificate",
                                                            p->files[F_CLIENT_PEM(i)].path, "fingerprint",
                                                            fingerprints[i].hex)) < 0)
                return -ENOMEM;
        doc = json_pack("{s:s, s:s, s:s, s:O}", "directory", t->dir, "berthd_config", p->files[F_BERTHD].path,
                        "client_config", p->files[F_CLIENT].path, "principals", principals);
        if (!doc || berth_json_serialize(doc, 0, ret, NULL, NULL) < 0)
            return -ENOMEM;
        return 0;
    } else {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        bool ok;

        if (!f)
            return -ENOMEM;
        ok = fprintf(f,
                     "berth dev installation written to %s\n"
                     "  start the daemon:  berthd --config %s\n"
                     "  submit a job:      berthctl --config %s submit JOB.json --wait\n",
                     t->dir, p->files[F_BERTHD].path, p->files[F_CLIENT].path) >= 0;
        ok = ok && fprintf(f, "  import an image:   berthctl image import LAYOUT_DIR[:REF] --store %s/%s%s\n", t->dir,
                           subdir_names[SUB_IMAGES],
                           image_plugin_present(o) || o->no_image_source
                               ? ""
                               : "\n  note: image-oci-local.so is not in the plugin directory, so "
                                 "berthd.json has no image source") >= 0;
        if (o->n_backends == 0)
            ok = ok && fprintf(f,
                               "  note: without --backend, berthd.json has no backend: add one named %s\n"
                               "        (the pool's backend) before submitting jobs\n",
                               DEFAULT_BACKEND) >= 0;
        for (i = 0; i < o->n_principals; i++) {
            _cleanup_free_ char *label = NULL;
            if (asprintf(&label, "principal %s:", o->principals[i]) < 0) {
                (void)fclose(f);
                return -ENOMEM;
            }
            ok = ok && fprintf(f, "  %-18s fingerprint %s%s\n", label, fingerprints[i].hex,
                               i == 0 ? " (admin; client.json)" : "") >= 0;
        }
        if (fclose(f) != 0 || !ok)
            return -ENOMEM;
        *ret = TAKE_PTR(text);
        return 0;
    }
}

/*
 * berthctl dev-init: check everything that can be checked before writing
 * (arguments, backend configurations, DIR and every target name), generate
 * all keys, certificates and documents in memory and validate them with the
 * parsers that will read them, then write; on any failure after the first
 * write, remove everything written.
 */
int cmd_devinit(struct bctl_globals *g, int argc, char **argv)
{
    struct devinit_opts o = {0};
    struct target t = {.parent_fd = -1, .dir_fd = -1, .sub_fd = {-1, -1, -1, -1}};
    struct plan p = {0};
    struct written w = {0};
    struct berth_error err = BERTH_ERROR_INIT;
    struct fingerprint *fingerprints = NULL;
    _cleanup_free_ char *text = NULL;
    int ret, r;

    if ((ret = parse_args(g, argc, argv, &o)) != BCTL_EXIT_OK || !o.dir)
        goto out;
    if ((ret = load_backend_configs(&o)) != BCTL_EXIT_OK || (ret = target_open(o.dir, &t)) != BCTL_EXIT_OK)
        goto out;
    fingerprints = calloc(o.n_principals, sizeof(*fingerprints));
    if (!fingerprints || plan_layout(&o, t.dir, &p) < 0) {
        ret = bctl_error(VERB, "out of memory");
        goto out;
    }
    /* Nothing is generated, let alone written, when a file is in the way. */
    if (t.dir_fd >= 0 && (ret = check_absent(&t, &p)) != BCTL_EXIT_OK)
        goto out;
    if (generate(&o, &t, &p, fingerprints, &err) < 0) {
        ret = bctl_error(VERB, "%s", err.message);
        goto out;
    }
    if ((r = format_output(&o, &t, &p, fingerprints, g->json, &text)) < 0) {
        ret = bctl_error(VERB, "formatting the output failed: %s", strerror(-r));
        goto out;
    }
    ret = BCTL_EXIT_FAIL;
    if (write_plan(&t, &p, &w, &err) < 0)
        bctl_error(VERB, "%s", err.message);
    else if ((g->json ? printf("%s\n", text) : fputs(text, stdout)) < 0 || fflush(stdout) != 0)
        bctl_error(VERB, "writing standard output: %s", strerror(errno));
    else
        ret = BCTL_EXIT_OK;
    if (ret != BCTL_EXIT_OK && wrote_anything(&p, &w) && roll_back(&t, &p, &w))
        bctl_error(VERB, "nothing was kept: everything written was removed again");
out:
    free(fingerprints);
    plan_done(&p);
    target_done(&t);
    opts_done(&o);
    return ret;
}
