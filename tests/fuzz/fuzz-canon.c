/* SPDX-License-Identifier: MIT */
/*
 * fuzz-canon.c -- libFuzzer target for the strict JSON parser and the
 * canonical serialiser (src/lib/json/canon.c).
 *
 * For every input the parser accepts, it checks the properties berth relies
 * on when it hashes documents:
 *   - the accepted value serialises canonically;
 *   - the canonical bytes parse again and serialise to the same bytes
 *     (serialise(parse(x)) == x for canonical x);
 *   - the canonical form is never longer than the accepted input.
 * A violated property aborts, which libFuzzer reports as a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "canon.h"

#define MAX_INPUT ((size_t)1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = NULL, *again = NULL;
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;

    if (berth_json_parse((const char *)data, size, MAX_INPUT, &v, NULL) < 0)
        return 0;
    if (berth_json_serialize(v, 0, &a, &alen, NULL) < 0)
        abort(); /* accepted but not serialisable */
    if (alen > size)
        abort(); /* canonical form longer than its source */
    if (berth_json_parse(a, alen, MAX_INPUT, &again, NULL) < 0)
        abort(); /* our own output refused */
    if (berth_json_serialize(again, 0, &b, &blen, NULL) < 0)
        abort();
    if (alen != blen || memcmp(a, b, alen) != 0)
        abort(); /* not a fixed point */
    if (!json_equal(v, again))
        abort();
    json_decref(v);
    json_decref(again);
    free(a);
    free(b);
    return 0;
}
