/* SPDX-License-Identifier: MIT */
/* qualification.c -- signed qualification records: made, sealed, verified;
 * see qualification.h (their rows in the journal: qualification-store.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "canon.h"
#include "digest.h"
#include "envelope.h"
#include "jsonobj.h"
#include "macro.h"
#include "qualification.h"

#define KIND "berth.qualification"

static const char *const members[] = {
    "backend", "broker",       "config_digest", "expires_at",     "id",     "isolation",      "kernel",
    "key_id",  "kind",         "machine",       "passed",         "plugin", "plugin_version", "probe_sha256",
    "probes",  "qualified_at", "runtime",       "schema_version", NULL,
};

void berth_kernel_release(char *buf, size_t size)
{
    struct utsname u;

    if (uname(&u) < 0)
        snprintf(buf, size, "unknown");
    else
        snprintf(buf, size, "%s", u.release);
}

json_t *berth_qualification_body(const char *broker, const char *backend, const char *plugin,
                                 const char *plugin_version, const char *config_digest, const char *probe_sha256,
                                 bool passed, const json_t *caps, json_t *probes, int64_t now_ns, int64_t validity_ns)
{
    const json_t *runtime = json_object_get(caps, "runtime"), *isolation = json_object_get(caps, "isolation");
    struct utsname u;

    if (!json_is_object(runtime) || !json_is_string(isolation) || uname(&u) < 0)
        return NULL;
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:O, s:O, s:s, s:s, s:O, s:o, s:o}", "broker", broker,
                     "backend", backend, "plugin", plugin, "plugin_version", plugin_version, "config_digest",
                     config_digest, "probe_sha256", probe_sha256, "passed", passed, "runtime", runtime, "isolation",
                     isolation, "kernel", u.release, "machine", u.machine, "probes", probes, "qualified_at",
                     berth_json_ns(now_ns), "expires_at", berth_json_ns(now_ns + validity_ns));
}

int berth_qualification_config_digest(const json_t *config, const char *plugin_sha256, const json_t *caps,
                                      const json_t *containment, char out[BERTH_DIGEST_BUFSZ],
                                      struct berth_error *reterr)
{
    _cleanup_json_ json_t *doc = NULL;
    const json_t *shim = json_object_get(caps, "shim_sha256");

    doc = config ? json_pack("{s:O, s:s?, s:O?}", "config", config, "plugin_sha256", plugin_sha256, "shim_sha256", shim)
                 : json_pack("{s:{}, s:s?, s:O?}", "config", "plugin_sha256", plugin_sha256, "shim_sha256", shim);
    if (doc && containment && json_object_set(doc, "containment", (json_t *)containment) < 0)
        json_decref(TAKE_PTR(doc));
    if (!doc)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_digest_json(doc, out, reterr);
}

/* "q" + 32 hex of the canonical body without "id". */
static int compute_id(const json_t *body, char out[BERTH_QUALIFICATION_ID_LEN + 1], struct berth_error *reterr)
{
    _cleanup_json_ json_t *copy = json_deep_copy(body);
    char digest[BERTH_DIGEST_BUFSZ];
    int r;

    if (!copy)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    /* json_object_del() fails when there is no id too: only a kept one is an error. */
    if (json_object_del(copy, "id") < 0 && json_object_get(copy, "id"))
        return berth_error_set(reterr, -EINVAL, "the qualification's id cannot be removed");
    if ((r = berth_digest_json(copy, digest, reterr)) < 0)
        return r;
    snprintf(out, BERTH_QUALIFICATION_ID_LEN + 1, "q%.*s", BERTH_QUALIFICATION_ID_LEN - 1, digest + strlen("sha256:"));
    return 0;
}

int berth_qualification_check(const json_t *body, struct berth_error *reterr)
{
    const char *s;
    int64_t ns;
    int r;

    if ((r = berth_json_only_members(body, "qualification", members, reterr)) < 0)
        return r;
    for (const char *const *k = (const char *const[]){"backend", "broker", "config_digest", "isolation", "kernel",
                                                      "machine", "plugin", "plugin_version", "probe_sha256", NULL};
         *k; k++)
        if ((r = berth_json_string_member(body, "qualification", *k, true, &s, reterr)) < 0)
            return r;
    if (!json_is_string(json_object_get(json_object_get(body, "runtime"), "sha256")) ||
        !json_is_string(json_object_get(json_object_get(body, "runtime"), "path")))
        return berth_error_set(reterr, -EBADMSG, "qualification.runtime needs its path and sha256");
    if (!json_is_boolean(json_object_get(body, "passed")))
        return berth_error_set(reterr, -EBADMSG, "qualification.passed must be true or false");
    if (!json_is_array(json_object_get(body, "probes")))
        return berth_error_set(reterr, -EBADMSG, "qualification.probes must be an array");
    if ((r = berth_json_ns_member(body, "qualification", "qualified_at", &ns, reterr)) < 0 ||
        (r = berth_json_ns_member(body, "qualification", "expires_at", &ns, reterr)) < 0)
        return r;
    return 0;
}

int berth_qualification_seal(const struct berth_signing_key *key, json_t *body, json_t **ret,
                             struct berth_error *reterr)
{
    _cleanup_json_ json_t *b = json_deep_copy(body);
    char id[BERTH_QUALIFICATION_ID_LEN + 1];
    int r;

    if (!key || !body || !ret)
        return berth_error_set(reterr, -EINVAL, "invalid argument");
    if (!b || json_object_set_new(b, "kind", json_string(KIND)) < 0 ||
        json_object_set_new(b, "schema_version", json_integer(1)) < 0 ||
        json_object_set_new(b, "key_id", json_string(berth_signing_key_id(key))) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    if (json_object_del(b, "id") < 0 && json_object_get(b, "id"))
        return berth_error_set(reterr, -EINVAL, "the qualification's id cannot be removed");
    if ((r = berth_qualification_check(b, reterr)) < 0 || (r = compute_id(b, id, reterr)) < 0)
        return r;
    if (json_object_set_new(b, "id", json_string(id)) < 0)
        return berth_error_set(reterr, -ENOMEM, "out of memory");
    return berth_envelope_seal(key, "qualification", b, ret, reterr);
}

int berth_qualification_verify(const json_t *env, const uint8_t pub[BERTH_ED25519_PUBLIC_LEN], const json_t **ret_body,
                               struct berth_error *reterr)
{
    char want[BERTH_KEY_ID_LEN + 1], id[BERTH_QUALIFICATION_ID_LEN + 1];
    const json_t *body = NULL;
    const char *kind = NULL, *kid = NULL, *got = NULL;
    int r;

    if ((r = berth_envelope_open(env, "qualification", pub, &body, reterr)) < 0)
        return r;
    if ((r = berth_qualification_check(body, reterr)) < 0 ||
        (r = berth_json_string_member(body, "qualification", "kind", true, &kind, reterr)) < 0 ||
        (r = berth_json_string_member(body, "qualification", "key_id", true, &kid, reterr)) < 0 ||
        (r = berth_json_string_member(body, "qualification", "id", true, &got, reterr)) < 0)
        return r;
    if (!streq(kind, KIND) || json_integer_value(json_object_get(body, "schema_version")) != 1)
        return berth_error_set(reterr, -EBADMSG, "not a schema_version 1 %s", KIND);
    if (berth_public_key_id(pub, want) < 0 || !streq(kid, want))
        return berth_error_set(reterr, -EBADMSG, "qualification.key_id is not the pinned broker key");
    if ((r = compute_id(body, id, reterr)) < 0)
        return r;
    if (!streq(got, id))
        return berth_error_set(reterr, -EBADMSG, "qualification.id %s does not match its body (%s)", got, id);
    if (ret_body)
        *ret_body = body;
    return 0;
}
