/* SPDX-License-Identifier: MIT */
/* cmd-plugins.c -- berthctl plugins list: what is in a plugin directory. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "berthctl.h"
#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "loader.h"
#include "utf8.h"

#ifndef BERTH_PLUGINDIR
#error "BERTH_PLUGINDIR must be defined by the build"
#endif

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl plugins list [--plugin-dir=DIR] [--json]\n"
                 "\n"
                 "List the plugins (*.so files) in a plugin directory and check each one\n"
                 "exactly as berthd would before using it, without initialising it: the\n"
                 "directory and file must be owned by root (or by you) and not writable by\n"
                 "group or others, the file must be a regular file and not a symbolic link,\n"
                 "it must load, export berth_plugin_entry(), and its descriptor must match\n"
                 "this berth's plugin ABI (same major version, minor not newer) with every\n"
                 "required operation present.  Loading runs the object's ELF constructors,\n"
                 "so list only directories whose contents you trust as code.\n"
                 "\n"
                 "Columns: NAME, KIND (runtime, image-source, evidence-store, containment),\n"
                 "VERSION (the plugin's own), ABI (major.minor it was built for), PATH and\n"
                 "STATUS, which is \"ok\" or \"refused: REASON\".  Fields that could not be\n"
                 "read are shown as \"-\".\n"
                 "\n"
                 "Options:\n"
                 "  -d, --plugin-dir=DIR  directory to list (default " BERTH_PLUGINDIR ")\n"
                 "      --json            print a JSON array of objects with the members\n"
                 "                        name, kind, version, abi, path, sha256, status and\n"
                 "                        (when refused) reason\n"
                 "  -h, --help            show this help\n"
                 "\n"
                 "Exit status: 0 every plugin is ok (or there are none), 1 at least one was\n"
                 "refused or the directory cannot be read, 2 usage error.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl plugins list --plugin-dir /usr/local/lib/berth/plugins\n");
}

struct row {
    struct berth_plugin_info info;
    char abi[24];
    const char *kind;
    bool refused;
    char reason[BERTH_ERROR_MESSAGE_MAX];
};

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

static void print_table(const struct row *rows, size_t n)
{
    int w[5] = {4, 4, 7, 3, 4}; /* NAME KIND VERSION ABI PATH */
    size_t i;

#define WIDEN(col, s)                                                                                                  \
    do {                                                                                                               \
        int l_ = (int)strlen(s);                                                                                       \
        if (l_ > w[col])                                                                                               \
            w[col] = l_;                                                                                               \
    } while (0)
    for (i = 0; i < n; i++) {
        WIDEN(0, or_dash(rows[i].info.name));
        WIDEN(1, or_dash(rows[i].kind));
        WIDEN(2, or_dash(rows[i].info.version));
        WIDEN(3, rows[i].abi);
        WIDEN(4, rows[i].info.path);
    }
#undef WIDEN
    printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], "NAME", w[1], "KIND", w[2], "VERSION", w[3], "ABI", w[4], "PATH",
           "STATUS");
    for (i = 0; i < n; i++)
        printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s%s\n", w[0], or_dash(rows[i].info.name), w[1], or_dash(rows[i].kind),
               w[2], or_dash(rows[i].info.version), w[3], rows[i].abi, w[4], rows[i].info.path,
               rows[i].refused ? "refused: " : "ok", rows[i].refused ? rows[i].reason : "");
}

static int print_json(const struct row *rows, size_t n)
{
    _cleanup_json_ json_t *array = json_array();
    _cleanup_free_ char *text = NULL;
    size_t i;

    if (!array)
        return -ENOMEM;
    for (i = 0; i < n; i++) {
        const struct berth_plugin_info *in = &rows[i].info;
        _cleanup_free_ char *path = NULL, *reason = NULL;
        json_t *o;

        /* File names are bytes; JSON strings are UTF-8. */
        if (berth_utf8_lossy(in->path, &path) < 0 || berth_utf8_lossy(rows[i].reason, &reason) < 0)
            return -ENOMEM;
        o = json_pack("{s:s?, s:s?, s:s?, s:s?, s:s, s:s?, s:s, s:s*}", "name", in->name[0] ? in->name : NULL, "kind",
                      rows[i].kind, "version", in->version[0] ? in->version : NULL, "abi",
                      streq(rows[i].abi, "-") ? NULL : rows[i].abi, "path", path, "sha256",
                      in->sha256[0] ? in->sha256 : NULL, "status", rows[i].refused ? "refused" : "ok", "reason",
                      rows[i].refused ? reason : NULL);
        if (!o || json_array_append_new(array, o) < 0)
            return -ENOMEM;
    }
    if (berth_json_serialize(array, 0, &text, NULL, NULL) < 0)
        return -ENOMEM;
    printf("%s\n", text);
    return 0;
}

static int list(const char *dir, bool json)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ struct row *rows = NULL;
    char **names = NULL;
    size_t n = 0, i;
    int r, refused = 0;

    r = berth_plugin_list_dir(dir, &names, &n, &err);
    if (r < 0)
        return bctl_error("plugins", "%s", err.message);
    rows = calloc(n ? n : 1, sizeof(*rows));
    if (!rows) {
        r = -ENOMEM;
        goto out;
    }
    for (i = 0; i < n; i++) {
        const struct berth_plugin_load_options opts = {
            .dir = dir,
            .file = names[i],
            .flags = BERTH_PLUGIN_LOAD_PEEK,
        };
        struct berth_plugin_handle *h = NULL;
        struct row *row = &rows[i];

        berth_error_clear(&err);
        r = berth_plugin_load(&opts, &h, &row->info, &err);
        berth_plugin_unload(h);
        row->refused = r < 0;
        refused += row->refused;
        snprintf(row->reason, sizeof(row->reason), "%s", err.message);
        row->kind = berth_plugin_kind_name(row->info.kind);
        snprintf(row->abi, sizeof(row->abi), "-");
        if (row->info.abi_version)
            snprintf(row->abi, sizeof(row->abi), "%u.%u", BERTH_PLUGIN_ABI_MAJOR_OF(row->info.abi_version),
                     BERTH_PLUGIN_ABI_MINOR_OF(row->info.abi_version));
    }
    r = 0;
    if (json)
        r = print_json(rows, n);
    else
        print_table(rows, n);
out:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (r < 0)
        return bctl_error("plugins", "%s", strerror(-r));
    if (fflush(stdout) != 0)
        return bctl_error("plugins", "writing standard output: %s", strerror(errno));
    return refused ? BCTL_EXIT_FAIL : BCTL_EXIT_OK;
}

int cmd_plugins(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"plugin-dir", required_argument, NULL, 'd'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    _cleanup_free_ char *dir = NULL;
    int c;

    while ((c = getopt_long(argc, argv, "d:h", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "plugins", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 'd':
            if (bctl_absolute_arg("plugins", "--plugin-dir", optarg, &dir) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("plugins");
        }
    }
    if (optind >= argc)
        return bctl_usage_error("plugins", "missing subcommand (list)");
    if (!streq(argv[optind], "list"))
        return bctl_usage_error("plugins", "unknown subcommand \"%s\"", argv[optind]);
    if (optind + 1 < argc)
        return bctl_usage_error("plugins", "unexpected argument \"%s\"", argv[optind + 1]);
    if (!dir) {
        dir = strdup(BERTH_PLUGINDIR);
        if (!dir)
            return bctl_error("plugins", "out of memory");
    }
    return list(dir, g->json);
}
