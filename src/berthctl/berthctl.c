/* SPDX-License-Identifier: MIT */
/* berthctl.c -- entry point and verb dispatch of berthctl. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pwd.h>
#include <time.h>

#include <berth/version.h>

#include "audit.h"
#include "berthctl.h"
#include "canon.h"
#include "clock.h"
#include "fsutil.h"
#include "journal.h"
#include "macro.h"
#include "utf8.h"

#if !defined(BERTH_WITH_IMAGE) && !defined(BCTL_LIGHT)
int cmd_image(struct bctl_globals *g, int argc, char **argv)
{
    (void)g, (void)argc, (void)argv;
    return bctl_error("image", "this berthctl was built without image support (configure found no libarchive, or "
                               "--disable-image-oci-local was given)");
}
#endif

#ifdef BCTL_LIGHT
/* This berthctl, which every client command starts, links neither SQLite
 * nor libarchive (together about 3 ms of every start here): the verbs that
 * open a journal or an image store run in berthctl-full, the same program
 * with every verb, which run_full() starts in its place. */
#define FULL_ONLY(run) NULL
#else
#define FULL_ONLY(run) run
#endif

static const struct {
    const char *name;
    int (*run)(struct bctl_globals *g, int argc, char **argv); /* NULL: berthctl-full's */
    const char *summary;
} verbs[] = {
    {"audit", FULL_ONLY(cmd_audit), "create audit keys, export and verify the audit chain"},
    {"cancel", cmd_job, "ask berthd to cancel a job"},
    {"canon", cmd_canon, "print the canonical form of a JSON document"},
    {"capabilities", cmd_job, "show what this client may do on berthd"},
    {"collect", cmd_job, "fetch, verify and save a job's signed result"},
    {"dev-init", cmd_devinit, "write a complete local installation for trying berth"},
    {"digest", cmd_digest, "print the sha256 digest of a file or JSON document"},
    {"evidence", cmd_evidence, "upload, download, delete and list evidence on berthd"},
    {"image", FULL_ONLY(cmd_image), "import, inspect and stage OCI images in the local store"},
    {"inspect", cmd_job, "show a job's state and receipt"},
    {"journal", cmd_journal, "show berthd's journal and retention figures (admin)"},
    {"keygen", cmd_keygen, "create an Ed25519 signing key"},
    {"plugins", cmd_plugins, "list plugins and whether they would load"},
    {"policy", cmd_policy, "grant an imported image in the host policy (allow-image)"},
    {"pool", FULL_ONLY(cmd_pool), "register, inspect, place on and verify named sandbox pools"},
    {"qualification", cmd_verify, "verify a signed backend qualification offline"},
    {"qualify", FULL_ONLY(cmd_qualify), "run the live probes on a runtime backend and record its qualification"},
    {"receipt", cmd_verify, "verify a signed receipt offline"},
    {"result", cmd_verify, "verify a signed result offline"},
    {"submit", cmd_job, "send a sealed job to berthd (and wait for its result)"},
    {"wait", cmd_job, "wait for a job's signed result"},
};

static void help(FILE *out)
{
    size_t i;

    fprintf(out, "Usage: berthctl [--version] [--help] VERB [ARGS...]\n"
                 "\n"
                 "berthctl is the command-line client and offline toolbox of berth, the\n"
                 "sandbox broker.  submit, inspect, wait, cancel, collect, capabilities,\n"
                 "evidence and pool with --config talk to berthd over HTTPS (client\n"
                 "certificate, pinned broker key); the other verbs work on local files and\n"
                 "need no daemon.\n"
                 "\n"
                 "Verbs:\n");
    for (i = 0; i < ELEMENTSOF(verbs); i++)
        fprintf(out, "  %-13s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(out, "\n"
                 "Run \"berthctl VERB --help\" (or \"berthctl help VERB\") for a verb's options.\n"
                 "\n"
                 "Exit status: 0 success, 1 failure or refusal, 2 usage error, 3 verification\n"
                 "failed.\n");
}

void bctl_fputs_clean(const char *s, FILE *out)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\x%02x", *p);
        } else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
            fprintf(out, "\\u%04x", p[1]); /* a C1 control such as CSI, UTF-8 encoded */
            p++;
        } else {
            fputc(*p, out);
        }
    }
}

BERTH_PRINTF(2, 0)
static void vprint(const char *verb, const char *fmt, va_list ap)
{
    char *text = NULL;

    fprintf(stderr, "berthctl%s%s: ", verb[0] ? " " : "", verb);
    /* Messages quote files and broker replies: never pass their control
     * characters (terminal escapes, line breaks) through to a terminal. */
    if (vasprintf(&text, fmt, ap) < 0) {
        fputs("(out of memory formatting a message)", stderr);
    } else {
        bctl_fputs_clean(text, stderr);
        free(text);
    }
    fputc('\n', stderr);
}

int bctl_error(const char *verb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprint(verb, fmt, ap);
    va_end(ap);
    return BCTL_EXIT_FAIL;
}

int bctl_usage_error(const char *verb, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprint(verb, fmt, ap);
    va_end(ap);
    return bctl_usage_hint(verb);
}

int bctl_usage_hint(const char *verb)
{
    fprintf(stderr, "Try \"berthctl%s%s --help\".\n", verb[0] ? " " : "", verb);
    return BCTL_EXIT_USAGE;
}

int bctl_absolute_arg(const char *verb, const char *option, const char *arg, char **dst)
{
    char *abs = NULL;

    if (berth_path_absolute(arg, &abs) < 0)
        return bctl_usage_error(verb, "%s takes a path, not \"%s\"", option, arg);
    free(*dst);
    *dst = abs;
    return 0;
}

const char *bctl_input_name(const char *arg)
{
    return !arg || streq(arg, "-") ? "standard input" : arg;
}

int bctl_read_input(const char *arg, size_t max_bytes, char **ret, size_t *ret_len, struct berth_error *reterr)
{
    _cleanup_close_ int fd = -1;
    int r;

    if (!arg || streq(arg, "-")) {
        r = berth_read_fd(STDIN_FILENO, max_bytes, ret, ret_len, reterr);
    } else {
        fd = open(arg, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            return berth_error_set(reterr, -errno, "%s", strerror(errno));
        r = berth_read_fd(fd, max_bytes, ret, ret_len, reterr);
    }
    if (r == -EFBIG)
        return berth_error_set(reterr, r, "larger than %zu bytes (see --max-bytes)", max_bytes);
    return r;
}

int bctl_parse_size(const char *text, size_t *ret)
{
    unsigned long long v;
    char *end = NULL;

    if (!text || !*text || *text < '0' || *text > '9')
        return -EINVAL;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno == ERANGE || v > SIZE_MAX / 2)
        return -ERANGE;
    if (*end || v == 0)
        return -EINVAL;
    *ret = (size_t)v;
    return 0;
}

int bctl_global_option(struct bctl_globals *g, const char *verb, int c, const char *arg)
{
    switch (c) {
    case BCTL_OPT_JOURNAL: return bctl_absolute_arg(verb, "--journal", arg, &g->journal) == 0 ? 1 : -BCTL_EXIT_USAGE;
    case BCTL_OPT_AUDIT_KEY:
        return bctl_absolute_arg(verb, "--audit-key", arg, &g->audit_key) == 0 ? 1 : -BCTL_EXIT_USAGE;
    case BCTL_OPT_CONFIG: return bctl_absolute_arg(verb, "--config", arg, &g->config) == 0 ? 1 : -BCTL_EXIT_USAGE;
    case BCTL_OPT_JSON: g->json = true; return 1;
    default: return 0;
    }
}

const char *bctl_actor(char *buf, size_t bufsz)
{
    struct passwd *pw = getpwuid(geteuid());

    if (pw && pw->pw_name && berth_utf8_valid(pw->pw_name, strlen(pw->pw_name), NULL))
        snprintf(buf, bufsz, "local:%s", pw->pw_name);
    else
        snprintf(buf, bufsz, "local:uid:%u", (unsigned)geteuid());
    return buf;
}

int bctl_now(const char *verb, int64_t *ret_ns)
{
    struct berth_error err = BERTH_ERROR_INIT;

    if (berth_now_ns(CLOCK_REALTIME, ret_ns, &err) < 0)
        return bctl_error(verb, "%s", err.message);
    return BCTL_EXIT_OK;
}

int64_t bctl_now_ns(void)
{
    return berth_realtime_ns();
}

int bctl_print_json(const char *verb, const json_t *value, bool canonical)
{
    _cleanup_free_ char *text = NULL;

    if (canonical) {
        struct berth_error err = BERTH_ERROR_INIT;
        if (berth_json_serialize(value, 0, &text, NULL, &err) < 0)
            return bctl_error(verb, "%s", err.message);
    } else {
        text = json_dumps(value, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII * 0);
        if (!text)
            return bctl_error(verb, "formatting output failed");
    }
    if (printf("%s\n", text) < 0 || fflush(stdout) != 0)
        return bctl_error(verb, "writing standard output: %s", strerror(errno));
    return BCTL_EXIT_OK;
}

#ifdef BCTL_LIGHT
/* Run @argv, this command line as given, with berthctl-full: the program
 * BERTHCTL_FULL names (the build tree's tests set it; ignored in a
 * privileged process, secure_getenv(3)), else the installed one.  A path
 * that is this program itself is refused: it would start itself forever.
 * Returns only when it cannot be started. */
static int run_full(char **argv, const char *verb)
{
    const char *path = secure_getenv("BERTHCTL_FULL");
    struct stat self, full;

    if (!path || !*path)
        path = BERTHCTL_FULL_PATH;
    if (stat("/proc/self/exe", &self) == 0 && stat(path, &full) == 0 && self.st_dev == full.st_dev &&
        self.st_ino == full.st_ino)
        return bctl_error(verb, "%s is this berthctl, not berthctl-full (check BERTHCTL_FULL)", path);
    fflush(NULL); /* nothing buffered is lost to the exec */
    execv(path, argv);
    return bctl_error(verb, "cannot run %s, which runs the verbs audit, image, pool and qualify: %m", path);
}
#else
static int run_full(char **argv, const char *verb)
{
    (void)argv;
    return bctl_error(verb, "internal error: no such verb in this program");
}
#endif

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    struct bctl_globals g = {0};
    size_t i;
    int c, r;

    /* Messages are built piece by piece (bctl_fputs_clean() writes a quoted
     * string a byte at a time): line buffering writes each line at once, so
     * that it is one write(2), never interleaved with another process's. */
    if (setvbuf(stderr, NULL, _IOLBF, BUFSIZ) != 0)
        return BCTL_EXIT_FAIL;
    while ((c = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        r = bctl_global_option(&g, "", c, optarg);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (c) {
        case 'h': help(stdout); return BCTL_EXIT_OK;
        case 'V': printf("berthctl %s\n", BERTH_VERSION); return BCTL_EXIT_OK;
        default: fprintf(stderr, "Try \"berthctl --help\".\n"); return BCTL_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        help(stderr);
        return BCTL_EXIT_USAGE;
    }
    if (streq(argv[optind], "help")) {
        if (optind + 1 < argc) {
            char *hargv[] = {argv[optind + 1], (char *)"--help", NULL};
            for (i = 0; i < ELEMENTSOF(verbs); i++)
                if (streq(verbs[i].name, argv[optind + 1])) {
                    if (!verbs[i].run)
                        return run_full(argv, verbs[i].name);
                    optind = 0;
                    return verbs[i].run(&g, 2, hargv);
                }
            fprintf(stderr, "berthctl: unknown verb \"%s\"\n", argv[optind + 1]);
            return BCTL_EXIT_USAGE;
        }
        help(stdout);
        return BCTL_EXIT_OK;
    }
    for (i = 0; i < ELEMENTSOF(verbs); i++) {
        if (streq(verbs[i].name, argv[optind])) {
            int vargc = argc - optind;
            char **vargv = argv + optind;
            char name[64];

            if (!verbs[i].run)
                return run_full(argv, verbs[i].name);

            /* getopt names argv[0] in its messages: "berthctl canon: ...". */
            snprintf(name, sizeof(name), "berthctl %s", verbs[i].name);
            vargv[0] = name;
            optind = 0; /* restart getopt for the verb */
            r = verbs[i].run(&g, vargc, vargv);
            free(g.journal);
            free(g.audit_key);
            free(g.config);
            return r;
        }
    }
    fprintf(stderr, "berthctl: unknown verb \"%s\"\nTry \"berthctl --help\".\n", argv[optind]);
    return BCTL_EXIT_USAGE;
}

int bctl_read_pubkey(const char *verb, const char *file, uint8_t pub[BERTH_ED25519_PUBLIC_LEN])
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL;
    size_t len = 0;

    if (bctl_read_input(file, 64 * 1024, &text, &len, &err) < 0)
        return bctl_error(verb, "--pubkey %s: %s", file, err.message);
    if (strstr(text, "-----BEGIN")) {
        if (berth_public_key_from_pem(text, len, pub, &err) < 0)
            return bctl_error(verb, "--pubkey %s: %s", file, err.message);
        return BCTL_EXIT_OK;
    }
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    if (berth_public_key_from_b64url(text, pub) < 0)
        return bctl_error(verb, "--pubkey %s: neither a PEM public key nor 43 base64url characters", file);
    return BCTL_EXIT_OK;
}
