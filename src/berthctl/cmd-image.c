/* SPDX-License-Identifier: MIT */
/* cmd-image.c -- berthctl image: import, inspect and stage OCI images. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "berthctl.h"
#include "blobstore.h"
#include "import.h"
#include "macro.h"
#include "refusal.h"
#include "stage.h"

#define DEFAULT_STORE "/var/lib/berth/images"

static void help(FILE *out)
{
    fprintf(out,
            "Usage: berthctl image import OCI_LAYOUT_DIR[:REF] [--store=DIR]\n"
            "       berthctl image inspect DIGEST [--store=DIR]\n"
            "       berthctl image stage DIGEST --out=NEWDIR [--store=DIR] [--max-compressed-bytes=N]\n"
            "                            [--max-expanded-bytes=N] [--max-entries=N] [--max-layers=N]\n"
            "                            [--timeout=SECONDS]\n"
            "       berthctl [--config=CLIENT.json] image cache ls|prune [--json]\n"
            "\n"
            "Manage the local OCI blob store that the image-oci-local plugin serves jobs'\n"
            "images from.  A job names its image by OCI manifest digest (sha256:<hex>);\n"
            "the store resolves explicit digests only: no tags, no registries, no network.\n"
            "\n"
            "  import   copy one image from an OCI image layout (as written by\n"
            "           \"skopeo copy ... oci:DIR:REF\", umoci or \"buildah push ... oci:DIR\")\n"
            "           into the store.  REF picks the image by its\n"
            "           org.opencontainers.image.ref.name annotation; without it the\n"
            "           layout must hold one image.  From an image index the manifest for\n"
            "           linux on this host's architecture is taken.  The manifest and\n"
            "           config are checked as a job's stage would check them, every blob's\n"
            "           digest and size are verified while it is copied, and blobs are\n"
            "           published atomically, owned by the caller, mode 0400.  Prints the\n"
            "           manifest digest.  Importing again verifies and succeeds; a blob that\n"
            "           differs from the stored one of the same name is an error and is never\n"
            "           overwritten.\n"
            "  inspect  verify an image's manifest and config in the store and print a\n"
            "           JSON summary (platform, layers, DiffIDs, sizes).\n"
            "  stage    build the image's root filesystem exactly as a job would get it,\n"
            "           into NEWDIR (created, mode 0700; it must not exist).  Every layer's\n"
            "           digest is verified before it is read and its DiffID while it is\n"
            "           extracted; hostile archives are refused.  On refusal NEWDIR is\n"
            "           removed again and one line says why:\n"
            "             refused: <reason-code>: <detail>\n"
            "           The reason codes are stable; docs/images.md lists them.\n"
            "  cache    ask berthd (an admin grant is needed) for its root cache: each\n"
            "           image is staged once into one sealed, read-only root that every job\n"
            "           of it shares.  \"ls\" (GET /v1/images/cache) lists the roots: digest,\n"
            "           file bytes, entries, running jobs using it, when last used, and\n"
            "           whether this berthd has verified its whole tree; then the total and\n"
            "           the bound (berthd.json root_cache_bytes).  \"prune\" (POST\n"
            "           /v1/images/cache/prune) removes every root no running job uses and\n"
            "           lists what is left.  --json prints berthd's document.\n"
            "\n"
            "Options:\n"
            "      --store=DIR               the blob store (default %s); its\n"
            "                                directories must be owned by the caller, mode 0700\n"
            "                                (import creates them)\n"
            "      --out=NEWDIR              stage: where to build the root filesystem\n"
            "      --max-compressed-bytes=N  stage budget: blob bytes read (default and\n"
            "                                maximum 4 GiB)\n"
            "      --max-expanded-bytes=N    stage budget: uncompressed tar bytes, headers and\n"
            "                                padding included (default and maximum 8 GiB)\n"
            "      --max-entries=N           stage budget: one unit per archive entry and per\n"
            "                                component of its path and link target (default and\n"
            "                                maximum 100000)\n"
            "      --max-layers=N            stage budget: layers (default and maximum 128)\n"
            "      --timeout=SECONDS         stage budget: wall time (default and maximum 600)\n"
            "  -h, --help                    show this help\n"
            "\n"
            "Exit status: 0 success; 1 refused or failed (one line on standard error);\n"
            "2 usage error.\n"
            "\n"
            "Examples:\n"
            "  berthctl image import ./busybox-oci:latest --store /var/lib/berth/images\n"
            "  berthctl image stage sha256:3f0c...e1 --store /var/lib/berth/images --out /tmp/rootfs\n",
            DEFAULT_STORE);
}

/* Split "DIR[:REF]": a path that exists as given is taken whole. */
static int split_layout(const char *arg, char **ret_dir, const char **ret_ref)
{
    struct stat st;
    const char *colon = strrchr(arg, ':');

    if (!colon || stat(arg, &st) == 0) {
        *ret_dir = strdup(arg);
        *ret_ref = NULL;
    } else {
        *ret_dir = strndup(arg, (size_t)(colon - arg));
        *ret_ref = colon + 1;
        if (!**ret_ref)
            return -EINVAL;
    }
    return *ret_dir ? 0 : -ENOMEM;
}

static int parse_u64(const char *verb, const char *opt, const char *arg, uint64_t max, uint64_t *ret)
{
    char *end = NULL;
    unsigned long long v;

    errno = 0;
    v = strtoull(arg, &end, 10);
    if (errno || arg[0] < '0' || arg[0] > '9' || *end || v < 1 || v > max)
        return bctl_usage_error(verb, "--%s takes a whole number from 1 to %llu, not \"%s\"", opt,
                                (unsigned long long)max, arg);
    *ret = v;
    return BCTL_EXIT_OK;
}

static int do_import(const char *store_dir, const char *arg)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *store = NULL;
    struct berth_import_stats stats = {0};
    _cleanup_free_ char *dir = NULL;
    char digest[BERTH_DIGEST_BUFSZ];
    const char *ref = NULL;
    int r;

    if ((r = split_layout(arg, &dir, &ref)) < 0)
        return r == -ENOMEM ? bctl_error("image import", "out of memory")
                            : bctl_usage_error("image import", "\"%s\" names an empty REF", arg);
    if (berth_blob_store_open(store_dir, true, &store, &err) < 0)
        return bctl_error("image import", "%s", err.message);
    r = berth_image_import(store, dir, ref, digest, &stats, &err);
    berth_blob_store_free(store);
    if (r < 0)
        return bctl_error("image import", "%s%s%s: %s", dir, ref ? ":" : "", ref ?: "", err.message);
    printf("%s\n", digest);
    fprintf(stderr, "berthctl image import: %zu blobs (%llu bytes) verified, %zu new in %s\n", stats.blobs,
            (unsigned long long)stats.bytes, stats.added, store_dir);
    return fflush(stdout) == 0 ? BCTL_EXIT_OK : bctl_error("image import", "writing standard output failed");
}

static int do_inspect(const struct bctl_globals *g, const char *store_dir, const char *digest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *store = NULL;
    _cleanup_free_ struct berth_oci_image *img = NULL;
    json_t *doc;
    int r;

    if (berth_blob_store_open(store_dir, false, &store, &err) < 0)
        return bctl_error("image inspect", "%s", err.message);
    r = berth_image_resolve(store, digest, &img, &err);
    berth_blob_store_free(store);
    if (r < 0)
        return bctl_error("image inspect", "%s", err.message);
    doc = berth_image_summary(img);
    if (!doc)
        return bctl_error("image inspect", "out of memory");
    r = bctl_print_json("image inspect", doc, g->json);
    json_decref(doc);
    return r;
}

/* One line for a failed stage: "refused: <code>: <detail>" for a refusal,
 * "berthctl image stage: <message>" for anything else (a host error). */
static int stage_failed(const struct berth_error *err)
{
    if (berth_image_reason_of(err->message)) {
        fputs("refused: ", stderr);
        bctl_fputs_clean(err->message, stderr);
        fputc('\n', stderr);
        return BCTL_EXIT_FAIL;
    }
    return bctl_error("image stage", "%s", err->message);
}

/* Make NEWDIR (mode 0700) through its parent's descriptor and open it: the
 * directory staged into is the one made here, whatever else happens to the
 * path meanwhile.  Return: the directory fd; -1 (failure) or -2 (usage)
 * with the error printed. */
static int make_out(const char *out, int *ret_parent, char **ret_base)
{
    _cleanup_free_ char *copy = strdup(out), *base = NULL;
    _cleanup_close_ int parent = -1;
    char *slash;
    struct stat st;
    int fd;

    if (!copy) {
        bctl_error("image stage", "out of memory");
        return -1;
    }
    while (strlen(copy) > 1 && copy[strlen(copy) - 1] == '/')
        copy[strlen(copy) - 1] = '\0';
    slash = strrchr(copy, '/');
    base = strdup(slash ? slash + 1 : copy);
    if (slash)
        *slash = '\0';
    if (!base || !base[0] || streq(base, ".") || streq(base, "..")) {
        bctl_usage_error("image", "--out must name a new directory, not \"%s\"", out);
        return -2;
    }
    parent = open(slash ? (copy[0] ? copy : "/") : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0) {
        bctl_error("image stage", "--out %s: %s", out, strerror(errno));
        return -1;
    }
    if (mkdirat(parent, base, 0700) < 0) {
        int e = errno;
        bctl_error("image stage", "--out %s: %s%s", out, strerror(e),
                   e == EEXIST ? " (the root filesystem goes into a new directory)" : "");
        return -1;
    }
    fd = openat(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 077)) {
        int e = fd < 0 ? errno : EPERM;
        if (fd >= 0)
            close(fd);
        (void)unlinkat(parent, base, AT_REMOVEDIR);
        bctl_error("image stage", "--out %s: %s", out, strerror(e));
        return -1;
    }
    *ret_parent = TAKE_FD(parent);
    *ret_base = TAKE_PTR(base);
    return fd;
}

static int do_stage(const char *store_dir, const char *digest, const char *out, const struct berth_stage_limits *limits)
{
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_blob_store *store = NULL;
    struct berth_stage_stats st = {0};
    _cleanup_close_ int rootfd = -1, parent = -1;
    _cleanup_free_ char *base = NULL;
    int r;

    if (berth_blob_store_open(store_dir, false, &store, &err) < 0)
        return stage_failed(&err);
    rootfd = make_out(out, &parent, &base);
    if (rootfd < 0) {
        berth_blob_store_free(store);
        return rootfd == -2 ? BCTL_EXIT_USAGE : BCTL_EXIT_FAIL;
    }
    r = berth_image_stage(store, digest, rootfd, limits, &st, &err);
    berth_blob_store_free(store);
    if (r < 0) {
        if (unlinkat(parent, base, AT_REMOVEDIR) < 0)
            fprintf(stderr, "berthctl image stage: could not remove %s: %s\n", out, strerror(errno));
        return stage_failed(&err);
    }
    fprintf(stderr,
            "berthctl image stage: %s staged in %s: %u layers, %llu entry units, %llu bytes expanded "
            "(%llu files, %llu directories, %llu symlinks, %llu hard links, %llu whiteouts)\n",
            digest, out, st.layers, (unsigned long long)st.entries, (unsigned long long)st.expanded_bytes,
            (unsigned long long)st.files, (unsigned long long)st.directories, (unsigned long long)st.symlinks,
            (unsigned long long)st.hardlinks, (unsigned long long)st.whiteouts);
    return BCTL_EXIT_OK;
}

int cmd_image(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"store", required_argument, NULL, 's'},
        {"out", required_argument, NULL, 'o'},
        {"max-compressed-bytes", required_argument, NULL, 'C'},
        {"max-expanded-bytes", required_argument, NULL, 'E'},
        {"max-entries", required_argument, NULL, 'N'},
        {"max-layers", required_argument, NULL, 'L'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    struct berth_stage_limits limits;
    const char *store = DEFAULT_STORE, *out = NULL, *sub;
    uint64_t v;
    int c, r;

    berth_stage_limits_default(&limits);
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "image", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 's': store = optarg; break;
        case 'o': out = optarg; break;
        case 'C':
            if ((r = parse_u64("image", "max-compressed-bytes", optarg, BERTH_STAGE_MAX_COMPRESSED_BYTES,
                               &limits.compressed_bytes)) != BCTL_EXIT_OK)
                return r;
            break;
        case 'E':
            if ((r = parse_u64("image", "max-expanded-bytes", optarg, BERTH_STAGE_MAX_EXPANDED_BYTES,
                               &limits.expanded_bytes)) != BCTL_EXIT_OK)
                return r;
            break;
        case 'N':
            if ((r = parse_u64("image", "max-entries", optarg, BERTH_STAGE_MAX_ENTRIES, &limits.entries)) !=
                BCTL_EXIT_OK)
                return r;
            break;
        case 'L':
            if ((r = parse_u64("image", "max-layers", optarg, BERTH_STAGE_MAX_LAYERS, &v)) != BCTL_EXIT_OK)
                return r;
            limits.layers = (unsigned)v;
            break;
        case 'T':
            if ((r = parse_u64("image", "timeout", optarg, BERTH_STAGE_MAX_WALL_TIME_NS / 1000000000LL, &v)) !=
                BCTL_EXIT_OK)
                return r;
            limits.wall_time_ns = (int64_t)v * 1000000000LL;
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("image");
        }
    }
    if (optind >= argc)
        return bctl_usage_error("image", "needs a subcommand: import, inspect, stage or cache");
    sub = argv[optind];
    if (streq(sub, "cache")) {
        if (argc - optind != 2)
            return bctl_usage_error("image", "cache takes exactly one of ls or prune");
        return cmd_image_cache(g, argv[optind + 1]);
    }
    if (!streq(sub, "import") && !streq(sub, "inspect") && !streq(sub, "stage"))
        return bctl_usage_error("image", "unknown subcommand \"%s\" (import, inspect, stage or cache)", sub);
    if (argc - optind != 2)
        return bctl_usage_error("image", "%s takes exactly one argument", sub);
    if (!streq(sub, "import")) {
        uint8_t raw[BERTH_SHA256_LEN];
        if (berth_digest_parse(argv[optind + 1], raw) < 0)
            return bctl_usage_error("image", "%s takes a manifest digest, sha256:<64 lowercase hex>, not \"%s\"", sub,
                                    argv[optind + 1]);
    }
    if (store[0] != '/')
        return bctl_usage_error("image", "--store must be an absolute path, not \"%s\"", store);
    if (streq(sub, "import"))
        return do_import(store, argv[optind + 1]);
    if (streq(sub, "inspect"))
        return do_inspect(g, store, argv[optind + 1]);
    if (streq(sub, "stage")) {
        if (!out)
            return bctl_usage_error("image", "stage needs --out=NEWDIR");
        return do_stage(store, argv[optind + 1], out, &limits);
    }
    return bctl_usage_error("image", "unknown subcommand \"%s\" (import, inspect, stage or cache)", sub);
}
