/* SPDX-License-Identifier: MIT */
/* cmd-digest.c -- berthctl digest: sha256 of bytes or of canonical JSON. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <fcntl.h>
#include <unistd.h>

#include "berthctl.h"
#include "canon.h"
#include "digest.h"
#include "macro.h"

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl digest [--canonical] [--max-bytes=N] [FILE|-]\n"
                 "\n"
                 "Print the SHA-256 digest of FILE as \"sha256:\" followed by 64 lowercase\n"
                 "hex digits, the form OCI and berth use for content addresses.  \"-\" or no\n"
                 "FILE reads standard input.\n"
                 "\n"
                 "By default the digest covers the file's bytes exactly as they are.  With\n"
                 "--canonical the input is parsed as JSON (with the rules of \"berthctl\n"
                 "canon\") and the digest covers its canonical form, which is how berth\n"
                 "identifies jobs, receipts and results: two files that differ only in\n"
                 "whitespace or member order have the same canonical digest.\n"
                 "\n"
                 "Options:\n"
                 "  -c, --canonical    digest the canonical form of a JSON document\n"
                 "      --max-bytes=N  with --canonical, refuse documents larger than N bytes\n"
                 "                     (default 16777216); plain digests stream any size\n"
                 "  -h, --help         show this help\n"
                 "\n"
                 "Exit status: 0 success, 1 unreadable input or (--canonical) invalid JSON,\n"
                 "2 usage error.\n"
                 "\n"
                 "Examples:\n"
                 "  berthctl digest layer.tar.gz\n"
                 "  berthctl digest --canonical job.json\n");
}

int cmd_digest(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"canonical", no_argument, NULL, 'c'},
        {"max-bytes", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *in = NULL, *canon = NULL;
    size_t max_bytes = BCTL_DEFAULT_MAX_BYTES, in_len = 0, canon_len = 0;
    char digest[BERTH_DIGEST_BUFSZ];
    const char *file = NULL;
    bool canonical = false;
    int c, r;

    while ((c = getopt_long(argc, argv, "chm:", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "digest", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 'c': canonical = true; break;
        case 'm':
            if (bctl_parse_size(optarg, &max_bytes) < 0)
                return bctl_usage_error("digest", "--max-bytes takes a positive byte count, not \"%s\"", optarg);
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("digest");
        }
    }
    if (argc - optind > 1)
        return bctl_usage_error("digest", "takes at most one FILE");
    if (optind < argc)
        file = argv[optind];

    if (canonical) {
        r = bctl_read_input(file, max_bytes, &in, &in_len, &err);
        if (r < 0)
            return bctl_error("digest", "%s: %s", bctl_input_name(file), err.message);
        r = berth_json_canonicalize(in, in_len, max_bytes, &canon, &canon_len, &err);
        if (r < 0)
            return bctl_error("digest", "%s: %s", bctl_input_name(file), err.message);
        r = berth_digest_bytes(canon, canon_len, digest);
    } else if (!file || streq(file, "-")) {
        r = berth_digest_fd(STDIN_FILENO, digest); /* plain digests stream any size */
    } else {
        _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
            return bctl_error("digest", "%s: %s", file, strerror(errno));
        r = berth_digest_fd(fd, digest);
    }
    if (r < 0)
        return bctl_error("digest", "%s: %s", bctl_input_name(file), strerror(-r));
    if (printf("%s\n", digest) < 0 || fflush(stdout) != 0)
        return bctl_error("digest", "writing standard output: %s", strerror(errno));
    return BCTL_EXIT_OK;
}
