/* SPDX-License-Identifier: MIT */
/* cmd-canon.c -- berthctl canon: canonical JSON of a document. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "berthctl.h"
#include "canon.h"
#include "macro.h"

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl canon [--check] [--max-bytes=N] [FILE|-]\n"
                 "\n"
                 "Print the canonical form of a JSON document: the exact bytes berth hashes\n"
                 "and signs.  Canonical JSON is RFC 8785 (JSON Canonicalization Scheme)\n"
                 "restricted to integers: no insignificant whitespace, object members sorted\n"
                 "by the UTF-16 code units of their keys, strings with only the escapes JSON\n"
                 "requires, integers in decimal.\n"
                 "\n"
                 "FILE is read whole; \"-\" or no FILE reads standard input.  The document is\n"
                 "refused when it contains a duplicate object key, a number with a fraction\n"
                 "or an exponent (1.0, 1e2), -0, an integer outside +/-(2^53-1), invalid\n"
                 "UTF-8, an escaped lone surrogate (\\ud800), a NUL character in a string,\n"
                 "nesting deeper than 32 levels, a byte order mark, or anything other than\n"
                 "whitespace after the value.\n"
                 "\n"
                 "The canonical bytes go to standard output with no trailing newline, so\n"
                 "that they can be piped into \"berthctl digest\"; a newline is added only\n"
                 "when standard output is a terminal.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --check        print nothing; succeed only if the input already is\n"
                 "                     canonical, byte for byte (a trailing newline is a\n"
                 "                     difference)\n"
                 "      --max-bytes=N  refuse input larger than N bytes (default 16777216)\n"
                 "  -h, --help         show this help\n"
                 "\n"
                 "Exit status:\n"
                 "  0  the canonical form was printed (--check: the input is canonical)\n"
                 "  1  the input is not acceptable JSON, or (--check) is not canonical; one\n"
                 "     line on standard error names the byte offset or member and the reason\n"
                 "  2  usage error\n"
                 "\n"
                 "Examples:\n"
                 "  berthctl canon job.json > job.canonical.json\n"
                 "  berthctl canon --check job.canonical.json && echo canonical\n"
                 "  berthctl canon job.json | berthctl digest\n");
}

int cmd_canon(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"check", no_argument, NULL, 'c'},
        {"max-bytes", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *in = NULL, *out = NULL;
    size_t max_bytes = BCTL_DEFAULT_MAX_BYTES, in_len = 0, out_len = 0, i;
    const char *file = NULL;
    bool check = false;
    int c, r;

    while ((c = getopt_long(argc, argv, "chm:", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "canon", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 'c': check = true; break;
        case 'm':
            if (bctl_parse_size(optarg, &max_bytes) < 0)
                return bctl_usage_error("canon", "--max-bytes takes a positive byte count, not \"%s\"", optarg);
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("canon");
        }
    }
    if (argc - optind > 1)
        return bctl_usage_error("canon", "takes at most one FILE");
    if (optind < argc)
        file = argv[optind];

    r = bctl_read_input(file, max_bytes, &in, &in_len, &err);
    if (r < 0)
        return bctl_error("canon", "%s: %s", bctl_input_name(file), err.message);
    r = berth_json_canonicalize(in, in_len, max_bytes, &out, &out_len, &err);
    if (r < 0)
        return bctl_error("canon", "%s: %s", bctl_input_name(file), err.message);

    if (check) {
        if (in_len == out_len && memcmp(in, out, in_len) == 0)
            return BCTL_EXIT_OK;
        for (i = 0; i < in_len && i < out_len && in[i] == out[i]; i++)
            ;
        return bctl_error("canon", "%s: not canonical: first difference at byte %zu", bctl_input_name(file), i);
    }
    if (fwrite(out, 1, out_len, stdout) != out_len || (isatty(STDOUT_FILENO) && fputc('\n', stdout) == EOF) ||
        fflush(stdout) != 0)
        return bctl_error("canon", "writing standard output: %s", strerror(errno));
    return BCTL_EXIT_OK;
}
