/* SPDX-License-Identifier: MIT */
/* cmd-keygen.c -- berthctl keygen: a new Ed25519 signing key. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "berthctl.h"
#include "canon.h"
#include "fsutil.h"
#include "jsonobj.h"
#include "macro.h"
#include "sign.h"
#include "utf8.h"

static void help(FILE *out)
{
    fprintf(out, "Usage: berthctl keygen --out=FILE [--public-out=FILE] [--json]\n"
                 "\n"
                 "Create a new Ed25519 signing key (RFC 8032) from the system's random\n"
                 "number generator, for example berthd's receipt-signing key.\n"
                 "\n"
                 "The private key is written to FILE as one unencrypted PKCS#8 PEM block\n"
                 "(\"-----BEGIN PRIVATE KEY-----\"), mode 0600, owned by the caller.  The file\n"
                 "is created atomically and never overwritten: if FILE exists, nothing is\n"
                 "written and keygen fails.  No component of FILE's path may be a symbolic\n"
                 "link.\n"
                 "\n"
                 "keygen then prints the key id, the RFC 7638 JWK thumbprint that receipts\n"
                 "and results name their signer by, and the 32-byte public key in unpadded\n"
                 "base64url.  Clients pin that public key to verify what berthd signs.\n"
                 "\n"
                 "Options:\n"
                 "  -o, --out=FILE         where to write the private key (required)\n"
                 "  -p, --public-out=FILE  also write the public key there as a PEM\n"
                 "                         SubjectPublicKeyInfo block (mode 0644, never\n"
                 "                         overwritten)\n"
                 "      --json             print one JSON object instead, with the members\n"
                 "                         key_id, public_key, private_key_file and (with\n"
                 "                         --public-out) public_key_file\n"
                 "  -h, --help             show this help\n"
                 "\n"
                 "Exit status: 0 key written, 1 failure (for example FILE exists), 2 usage\n"
                 "error.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl keygen --out /etc/berth/keys/receipt.key --public-out receipt.pub\n");
}

/* The text keygen prints, in a malloc'd string.  File names that are not
 * UTF-8 are shown with U+FFFD in --json output. */
static int format_output(const struct berth_signing_key *key, const char *pub_b64, const char *out, const char *pub_out,
                         bool json, char **ret)
{
    _cleanup_free_ char *out_u8 = NULL, *pub_u8 = NULL, *canon = NULL;
    _cleanup_json_ json_t *o = NULL;

    if (!json)
        return asprintf(ret, "key id:     %s\npublic key: %s\n", berth_signing_key_id(key), pub_b64) < 0 ? -ENOMEM : 0;
    if (berth_utf8_lossy(out, &out_u8) < 0 || (pub_out && berth_utf8_lossy(pub_out, &pub_u8) < 0))
        return -ENOMEM;
    o = json_pack("{s:s, s:s, s:s, s:s*}", "key_id", berth_signing_key_id(key), "public_key", pub_b64,
                  "private_key_file", out_u8, "public_key_file", pub_u8);
    if (!o || berth_json_serialize(o, 0, &canon, NULL, NULL) < 0)
        return -ENOMEM;
    return asprintf(ret, "%s\n", canon) < 0 ? -ENOMEM : 0;
}

int cmd_keygen(struct bctl_globals *g, int argc, char **argv)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, 'o'},
        {"public-out", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'h'},
        BCTL_GLOBAL_OPTIONS,
        {},
    };
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *key = NULL;
    _cleanup_free_ char *out = NULL, *pub_out = NULL, *pub_pem = NULL, *text = NULL;
    char pub_b64[BERTH_PUBLIC_KEY_B64_LEN + 1];
    bool written_out = false, written_pub = false;
    size_t pub_len = 0;
    int c, r, ret = BCTL_EXIT_FAIL;

    while ((c = getopt_long(argc, argv, "o:p:h", options, NULL)) != -1) {
        int gr = bctl_global_option(g, "keygen", c, optarg);
        if (gr < 0)
            return -gr;
        if (gr > 0)
            continue;
        switch (c) {
        case 'o':
            if (bctl_absolute_arg("keygen", "--out", optarg, &out) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'p':
            if (bctl_absolute_arg("keygen", "--public-out", optarg, &pub_out) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'h': help(stdout); return BCTL_EXIT_OK;
        default: return bctl_usage_hint("keygen");
        }
    }
    if (optind < argc)
        return bctl_usage_error("keygen", "unexpected argument \"%s\"", argv[optind]);
    if (!out)
        return bctl_usage_error("keygen", "--out=FILE is required");
    if (pub_out && streq(pub_out, out))
        return bctl_usage_error("keygen", "--out and --public-out name the same file");

    /* Fail before writing anything when the public key could not be written
     * afterwards; berth_publish_path() still refuses a file that appears in
     * between, and then the private key is removed again. */
    if (pub_out && access(pub_out, F_OK) == 0)
        return bctl_error("keygen", "%s already exists; refusing to overwrite it", pub_out);

    r = berth_signing_key_generate(&key, &err);
    if (r < 0)
        return bctl_error("keygen", "%s", err.message);
    /* Everything that can fail is prepared before the first file is written,
     * and the files are removed again if anything fails afterwards: a key
     * whose id and public key were never shown would be useless. */
    r = berth_public_key_to_b64url(berth_signing_key_public(key), pub_b64);
    if (r < 0) {
        bctl_error("keygen", "encoding the public key failed");
        goto out;
    }
    if (pub_out) {
        r = berth_public_key_to_pem(berth_signing_key_public(key), &pub_pem, &pub_len, &err);
        if (r < 0) {
            bctl_error("keygen", "%s", err.message);
            goto out;
        }
    }
    r = format_output(key, pub_b64, out, pub_out, g->json, &text);
    if (r < 0) {
        bctl_error("keygen", "formatting the output failed: %s", strerror(-r));
        goto out;
    }

    r = berth_signing_key_save(key, out, &err);
    if (r < 0) {
        bctl_error("keygen", "%s", err.message);
        goto out;
    }
    written_out = true;
    if (pub_out) {
        r = berth_publish_path(pub_out, pub_pem, pub_len, 0644, 0, &err);
        if (r < 0) {
            bctl_error("keygen", "%s", err.message);
            goto out;
        }
        written_pub = true;
    }
    if (fputs(text, stdout) == EOF || fflush(stdout) != 0) {
        bctl_error("keygen", "writing standard output: %s", strerror(errno));
        goto out;
    }
    ret = BCTL_EXIT_OK;
out:
    if (ret != BCTL_EXIT_OK) {
        if (written_pub && unlink(pub_out) < 0)
            bctl_error("keygen", "removing %s after the failure failed: %s", pub_out, strerror(errno));
        if (written_out && unlink(out) < 0)
            bctl_error("keygen", "removing %s after the failure failed: %s", out, strerror(errno));
        else if (written_out)
            bctl_error("keygen", "nothing was kept: %s was removed again", out);
    }
    berth_signing_key_free(key);
    return ret;
}
