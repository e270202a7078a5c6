/* SPDX-License-Identifier: MIT */
/* envelope.c -- Ed25519-signed JSON documents; see envelope.h. */
#include <errno.h>
#include <string.h>

#include "canon.h"
#include "encoding.h"
#include "envelope.h"
#include "jsonobj.h"
#include "macro.h"

int berth_envelope_seal(const struct berth_signing_key *key, const char *member, json_t *body, json_t **ret,
                        struct berth_error *reterr)
{
    _cleanup_free_ char *bytes = NULL;
    uint8_t sig[BERTH_ED25519_SIGNATURE_LEN];
    char b64[BERTH_SIGNATURE_B64_LEN + 1];
    size_t len = 0;
    json_t *out;
    int r;

    if (!key || !member || !json_is_object(body) || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    r = berth_json_serialize(body, 0, &bytes, &len, reterr);
    if (r < 0)
        return r;
    if (berth_sign(key, bytes, len, sig) < 0 || berth_base64url_encode(sig, sizeof(sig), b64, sizeof(b64)) < 0)
        return berth_error_set(reterr, -EIO, "signing failed");
    out = json_pack("{s:O, s:s}", member, body, "signature", b64);
    if (!out)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    *ret = out;
    return 0;
}

int berth_envelope_open(const json_t *env, const char *member, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN],
                        const json_t **ret_body, struct berth_error *reterr)
{
    const char *const members[] = {member, "signature", NULL};
    _cleanup_free_ char *bytes = NULL;
    uint8_t sig[BERTH_ED25519_SIGNATURE_LEN];
    const json_t *body;
    const char *s = NULL;
    size_t len = 0, n = 0;
    int r;

    if (!member || !pub)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if ((r = berth_json_only_members(env, "signed document", members, reterr)) < 0 ||
        (r = berth_json_string_member(env, "signed document", "signature", true, &s, reterr)) < 0)
        return r;
    body = json_object_get(env, member);
    if (!json_is_object(body))
        return berth_error_set(reterr, -EBADMSG, "signed document: %s must be an object", member);
    if (strlen(s) != BERTH_SIGNATURE_B64_LEN ||
        berth_base64url_decode(s, BERTH_SIGNATURE_B64_LEN, sig, sizeof(sig), &n) < 0 || n != sizeof(sig))
        return berth_error_set(reterr, -EBADMSG, "the signature is not 64 bytes of base64url");
    r = berth_json_serialize(body, 0, &bytes, &len, reterr);
    if (r < 0)
        return -EBADMSG;
    if (berth_verify(pub, bytes, len, sig) < 0)
        return berth_error_set(reterr, -EBADMSG, "the %s signature does not verify", member);
    if (ret_body)
        *ret_body = body;
    return 0;
}
