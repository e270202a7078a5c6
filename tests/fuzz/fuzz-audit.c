/* SPDX-License-Identifier: MIT */
/*
 * fuzz-audit.c -- libFuzzer target for the audit chain verifier and the pool
 * rules it replays (src/lib/journal/audit.c, pool/poolchain.c, pool/enrol.c).
 *
 * A fuzzer cannot forge MACs, so the harness plays a key holder: each input
 * line is parsed as an event, given the right seq and prev, MAC'd with a
 * fixed key and chained.  Verification then exercises every pool rule on
 * arbitrary details.  It must never crash, and a chain that verifies must
 * verify again identically (the projection is deterministic).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "buf.h"
#include "canon.h"
#include "encoding.h"
#include "hmac.h"
#include "jsonobj.h"
#include "poolchain.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int chain_line(json_t *ev, uint64_t seq, char prev[BERTH_AUDIT_MAC_HEX_LEN + 1],
                      const struct berth_audit_key *key, struct berth_buf *out)
{
    char *bytes = NULL;
    uint8_t mac[BERTH_HMAC_SHA256_LEN];
    size_t len = 0;

    json_object_del(ev, "mac");
    json_object_set_new(ev, "seq", json_integer((json_int_t)seq));
    json_object_set_new(ev, "prev", json_string(prev));
    if (!json_object_get(ev, "time_ns"))
        json_object_set_new(ev, "time_ns", json_string("1"));
    if (berth_json_serialize(ev, BERTH_AUDIT_EVENT_MAX, &bytes, &len, NULL) < 0)
        return -1;
    berth_hmac_sha256(key->bytes, sizeof(key->bytes), bytes, len, mac);
    free(bytes);
    berth_hex_encode(mac, sizeof(mac), prev);
    json_object_set_new(ev, "mac", json_string(prev));
    if (berth_json_serialize(ev, BERTH_AUDIT_EVENT_MAX, &bytes, &len, NULL) < 0)
        return -1;
    berth_buf_append(out, bytes, len);
    berth_buf_putc(out, '\n');
    free(bytes);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct berth_audit_key key;
    struct berth_buf out = BERTH_BUF_INIT(8u << 20);
    struct berth_pool_chain *c1 = NULL, *c2 = NULL;
    char prev[BERTH_AUDIT_MAC_HEX_LEN + 1];
    struct berth_audit_summary s1, s2;
    uint64_t seq = 0;
    size_t pos = 0;
    int r1, r2;

    memset(key.bytes, 7, sizeof(key.bytes));
    memset(prev, '0', 64);
    prev[BERTH_AUDIT_MAC_HEX_LEN] = '\0';
    while (pos < size) {
        const char *line = (const char *)data + pos;
        const char *nl = memchr(line, '\n', size - pos);
        size_t len = nl ? (size_t)(nl - line) : size - pos;
        json_t *ev = NULL;

        if (berth_json_parse(line, len, BERTH_AUDIT_EVENT_MAX, &ev, NULL) == 0 && json_is_object(ev))
            chain_line(ev, ++seq, prev, &key, &out);
        json_decref(ev);
        pos += len + 1;
    }
    if (berth_pool_chain_new(&c1) < 0 || berth_pool_chain_new(&c2) < 0)
        abort();
    r1 = berth_audit_verify(out.data, out.len, &key, NULL, berth_pool_chain_check, c1, &s1, NULL);
    r2 = berth_audit_verify(out.data, out.len, &key, NULL, berth_pool_chain_check, c2, &s2, NULL);
    if (r1 != r2 || s1.count != s2.count || s1.bad_seq != s2.bad_seq ||
        berth_pool_chain_count(c1) != berth_pool_chain_count(c2))
        abort(); /* the replay is not deterministic */
    berth_pool_chain_free(c1);
    berth_pool_chain_free(c2);
    berth_buf_free(&out);
    return 0;
}
