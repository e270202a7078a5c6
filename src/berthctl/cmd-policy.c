/* SPDX-License-Identifier: MIT */
/* cmd-policy.c -- berthctl policy allow-image: grant an image without hand-editing JSON. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "berthctl.h"
#include "canon.h"
#include "digest.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "policy.h"

#define VERB "policy allow-image"
#define MAX_IMAGES 256

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl policy allow-image --policy=FILE --principal=NAME DIGEST\n"
                 "\n"
                 "Grant the image with manifest digest DIGEST (sha256:<64 lowercase hex>, as\n"
                 "\"berthctl image import\" prints it) to every subject of the host policy FILE\n"
                 "whose principal is NAME.  The policy is read with the checks berthd applies\n"
                 "(a regular file of the caller, mode 0600, one link, at most 1 MiB, no\n"
                 "symlink on its path), changed, validated again as a whole, and published by\n"
                 "atomic replacement, so berthd (which re-reads it when it changes) never sees\n"
                 "a half-written file.  Granting an image that is already granted changes\n"
                 "nothing.  docs/berthd.md describes the policy.\n"
                 "\n"
                 "Options:\n"
                 "      --policy=FILE     the host policy (berthd.json's \"policy\")\n"
                 "      --principal=NAME  the principal to grant the image to; a name no subject\n"
                 "                        has is refused\n"
                 "  -h, --help            show this help\n"
                 "\n"
                 "Exit status: 0 granted (or already granted), 1 refused or failed (nothing\n"
                 "changed), 2 usage error.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl policy allow-image --policy /etc/berth/policy.json --principal dev \\\n"
                 "      \"$(berthctl image import ./busybox-oci --store /var/lib/berth/images)\"\n");
}

/* Add @digest to the images of every subject of @principal; the count of subjects changed, or -1. */
static int grant(json_t *doc, const char *principal, const char *digest, size_t *ret_matched)
{
    json_t *subject, *images, *v;
    size_t i, j;
    int changed = 0;

    *ret_matched = 0;
    json_array_foreach(json_object_get(doc, "subjects"), i, subject)
    {
        bool present = false;

        if (!streq(json_string_value(json_object_get(subject, "principal")) ?: "", principal))
            continue;
        (*ret_matched)++;
        images = json_object_get(subject, "images");
        if (!images) {
            images = json_array();
            if (!images || json_object_set_new(subject, "images", images) < 0)
                return -1;
        }
        json_array_foreach(images, j, v) present |= json_is_string(v) && streq(json_string_value(v), digest);
        if (present)
            continue;
        if (json_array_size(images) >= MAX_IMAGES || json_array_append_new(images, json_string(digest)) < 0)
            return -1;
        changed++;
    }
    return changed;
}

static int allow_image(const char *path, const char *principal, const char *digest)
{
    struct berth_error err = BERTH_ERROR_INIT;
    _cleanup_free_ char *text = NULL, *pretty = NULL, *out = NULL;
    _cleanup_json_ json_t *doc = NULL;
    struct berth_policy *check = NULL;
    size_t len = 0, matched = 0;
    int changed, n;

    if (berth_policy_read_file(path, &text, &len, &err) < 0)
        return bctl_error(VERB, "%s: %s", path, err.message);
    if (berth_policy_parse(text, len, &check, &err) < 0)
        return bctl_error(VERB, "%s is not a valid policy (nothing changed): %s", path, err.message);
    berth_policy_free(check);
    check = NULL;
    if (berth_json_parse(text, len, BERTH_POLICY_MAX, &doc, &err) < 0)
        return bctl_error(VERB, "%s: %s", path, err.message);
    changed = grant(doc, principal, digest, &matched);
    if (changed < 0)
        return bctl_error(VERB, "a subject of %s already holds %d images, or out of memory (nothing changed)",
                          principal, MAX_IMAGES);
    if (matched == 0)
        return bctl_error(VERB, "%s has no subject with principal \"%s\" (nothing changed)", path, principal);
    if (changed == 0) {
        printf("%s: %s already may run %s\n", path, principal, digest);
        return BCTL_EXIT_OK;
    }
    pretty = json_dumps(doc, JSON_INDENT(2));
    if (!pretty || (n = asprintf(&out, "%s\n", pretty)) < 0)
        return bctl_error(VERB, "out of memory");
    /* The whole new document passes the same checks berthd will apply. */
    if (berth_policy_parse(out, (size_t)n, &check, &err) < 0)
        return bctl_error(VERB, "the changed policy would be invalid (nothing changed): %s", err.message);
    berth_policy_free(check);
    if (berth_publish_path(path, out, (size_t)n, 0600, BERTH_PUBLISH_REPLACE, &err) < 0)
        return bctl_error(VERB, "%s: %s", path, err.message);
    printf("%s: %s may now run %s (%d subject%s changed)\n", path, principal, digest, changed, changed == 1 ? "" : "s");
    return fflush(stdout) == 0 ? BCTL_EXIT_OK : bctl_error(VERB, "writing standard output failed");
}

int cmd_policy(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"policy", required_argument, NULL, 'p'},
        {"principal", required_argument, NULL, 'P'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    _cleanup_free_ char *policy = NULL;
    const char *principal = NULL;
    uint8_t raw[BERTH_SHA256_LEN];
    int c;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "policy", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 'p':
            if (bctl_absolute_arg("policy", "--policy", optarg, &policy) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'P': principal = optarg; break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("policy");
        }
    }
    if (optind >= argc || !streq(argv[optind], "allow-image"))
        return bctl_usage_error("policy", "the only subcommand is allow-image");
    if (argc - optind != 2)
        return bctl_usage_error("policy", "allow-image takes one DIGEST");
    if (!policy || !principal)
        return bctl_usage_error("policy", "allow-image needs --policy=FILE and --principal=NAME");
    if (berth_digest_parse(argv[optind + 1], raw) < 0)
        return bctl_usage_error("policy", "DIGEST must be sha256:<64 lowercase hex>, not \"%s\"", argv[optind + 1]);
    return allow_image(policy, principal, argv[optind + 1]);
}
