/* SPDX-License-Identifier: MIT */
/*
 * fuzz-pool.c -- libFuzzer target for pool manifests, governed overrides and
 * placement (src/lib/pool/pool.c, override.c, placement.c).
 *
 * Input: a manifest, a newline, then overrides.  Properties checked:
 *   - normalisation is a fixed point: the manifest printed by "pool show"
 *     (with its pool_hash) parses to the same pool_hash;
 *   - merging is deterministic and its hashes are the hashes of what it
 *     returns;
 *   - a merge never yields an egress class wider than the pool's or a
 *     capability above the ceiling, and a placement always chooses the first
 *     kept candidate of the allowlist.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"
#include "override.h"
#include "placement.h"
#include "pool.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char backends_json[] =
    "{\"runsc\":{\"capabilities\":[\"exec\",\"file_rw\"],\"egress_classes\":[\"none\",\"loopback\"],"
    "\"qualification\":{\"id\":\"q\",\"expires_ns\":\"9000000000000000000\"}},"
    "\"crun\":{\"capabilities\":[\"exec\",\"file_rw\",\"network\",\"gpu\"],\"egress_classes\":[\"none\",\"open\"],"
    "\"qualification\":\"unqualified\",\"require_qualification\":false},"
    "\"a\":{\"capabilities\":[\"exec\",\"file_rw\",\"network\",\"gpu\",\"snapshot\",\"persistent_volumes\"],"
    "\"egress_classes\":[\"none\",\"loopback\",\"restricted\",\"open\"],\"qualification\":\"unqualified\"}}";

static void check_merge(const struct berth_pool *pool, const json_t *ov)
{
    struct berth_effective *e1 = NULL, *e2 = NULL;
    struct berth_backend_set *set = NULL;
    json_t *receipt = NULL;
    char h[BERTH_HASH_HEX_LEN + 1];
    struct berth_refusal rf;
    int r1, r2;

    r1 = berth_pool_merge(pool, ov, NULL, &e1, &rf, NULL);
    r2 = berth_pool_merge(pool, ov, NULL, &e2, &rf, NULL);
    if (r1 != r2)
        abort();
    if (r1 < 0)
        return;
    if (strcmp(e1->effective_hash, e2->effective_hash) || strcmp(e1->overrides_hash, e2->overrides_hash))
        abort();
    if (berth_hash_hex_json(e1->json, h, NULL) < 0 || strcmp(h, e1->effective_hash))
        abort();
    if (e1->egress > pool->egress || (e1->capabilities & ~pool->ceiling))
        abort(); /* a ceiling was widened */
    if (berth_backend_set_parse(backends_json, sizeof(backends_json) - 1, &set, NULL) < 0)
        abort();
    if (berth_place(pool, e1, set, 1, &receipt, h, &rf, NULL, NULL) == 0) {
        const json_t *inputs = json_object_get(receipt, "selector_inputs");
        const char *chosen = json_string_value(json_object_get(receipt, "chosen_backend"));
        size_t i;
        for (i = 0; i < json_array_size(inputs); i++)
            if (json_is_true(json_object_get(json_array_get(inputs, i), "kept")))
                break;
        if (i == json_array_size(inputs) || !chosen || strcmp(chosen, pool->backends[i]))
            abort(); /* not the first kept candidate */
        if (e1->backend_override && strcmp(chosen, e1->backend_override))
            abort(); /* an override fell back */
        json_decref(receipt);
    }
    berth_backend_set_free(set);
    berth_effective_free(e1);
    berth_effective_free(e2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data, *nl = memchr(data, '\n', size);
    size_t mlen = nl ? (size_t)(nl - text) : size;
    struct berth_pool *pool = NULL, *again = NULL;
    json_t *shown, *ov = NULL;

    if (berth_pool_parse(text, mlen, &pool, NULL) < 0)
        return 0;
    shown = berth_pool_to_json(pool);
    if (!shown || berth_pool_from_json(shown, &again, NULL) < 0 || strcmp(pool->pool_hash, again->pool_hash))
        abort(); /* normalisation is not a fixed point */
    json_decref(shown);
    berth_pool_free(again);

    if (nl && berth_json_parse(nl + 1, size - mlen - 1, 1 << 20, &ov, NULL) == 0) {
        check_merge(pool, ov);
        json_decref(ov);
    } else {
        check_merge(pool, NULL);
    }
    berth_pool_free(pool);
    return 0;
}
