/* SPDX-License-Identifier: MIT */
/* cmd-keygen.c -- berthctl keygen: a new Ed25519 signing key. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "berthctl.h"
#include "canon.h"
#include "fsutil.h"
#include "macro.h"
#include "sign.h"

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
                 "      --json             print {\"key_id\": ..., \"public_key\": ...} instead\n"
                 "  -h, --help             show this help\n"
                 "\n"
                 "Exit status: 0 key written, 1 failure (for example FILE exists), 2 usage\n"
                 "error.\n"
                 "\n"
                 "Example:\n"
                 "  berthctl keygen --out /etc/berth/keys/receipt.key --public-out receipt.pub\n");
}

int cmd_keygen(int argc, char **argv)
{
    static const struct option options[] = {
        {"out", required_argument, NULL, 'o'},
        {"public-out", required_argument, NULL, 'p'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {},
    };
    struct berth_error err = BERTH_ERROR_INIT;
    struct berth_signing_key *key = NULL;
    _cleanup_free_ char *out = NULL, *pub_out = NULL, *pub_pem = NULL;
    char pub_b64[BERTH_PUBLIC_KEY_B64_LEN + 1];
    size_t pub_len = 0;
    bool json = false;
    int c, r, ret = BCTL_EXIT_FAIL;

    while ((c = getopt_long(argc, argv, "o:p:h", options, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (bctl_absolute_arg("keygen", "--out", optarg, &out) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'p':
            if (bctl_absolute_arg("keygen", "--public-out", optarg, &pub_out) != 0)
                return BCTL_EXIT_USAGE;
            break;
        case 'j': json = true; break;
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

    r = berth_signing_key_generate(&key, &err);
    if (r < 0)
        return bctl_error("keygen", "%s", err.message);
    r = berth_public_key_to_b64url(berth_signing_key_public(key), pub_b64);
    if (r < 0) {
        bctl_error("keygen", "encoding the public key failed");
        goto out;
    }
    if (pub_out) {
        /* Prepare the public PEM first so that a failure leaves no private key behind. */
        r = berth_public_key_to_pem(berth_signing_key_public(key), &pub_pem, &pub_len, &err);
        if (r < 0) {
            bctl_error("keygen", "%s", err.message);
            goto out;
        }
    }
    r = berth_signing_key_save(key, out, &err);
    if (r < 0) {
        bctl_error("keygen", "%s", err.message);
        goto out;
    }
    if (pub_out) {
        r = berth_publish_path(pub_out, pub_pem, pub_len, 0644, 0, &err);
        if (r < 0) {
            bctl_error("keygen", "private key written to %s, but the public key was not: %s", out, err.message);
            goto out;
        }
    }

    if (json) {
        _cleanup_json_ json_t *o = json_pack("{s:s, s:s, s:s}", "key_id", berth_signing_key_id(key), "public_key",
                                             pub_b64, "private_key_file", out);
        _cleanup_free_ char *text = NULL;
        if (!o || berth_json_serialize(o, 0, &text, NULL, &err) < 0) {
            bctl_error("keygen", "formatting output failed");
            goto out;
        }
        printf("%s\n", text);
    } else {
        printf("key id:     %s\npublic key: %s\n", berth_signing_key_id(key), pub_b64);
    }
    if (fflush(stdout) != 0) {
        bctl_error("keygen", "writing standard output: %s", strerror(errno));
        goto out;
    }
    ret = BCTL_EXIT_OK;
out:
    berth_signing_key_free(key);
    return ret;
}
