#!/bin/sh
# berthctl digest: raw bytes (streamed) and canonical JSON.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

printf 'abc' >"$TMP/abc"
run 0 "$BERTHCTL" digest "$TMP/abc"
stdout_is "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
"
run_stdin 0 "$TMP/abc" "$BERTHCTL" digest -
stdout_has "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

# Agrees with coreutils, including for a file larger than --max-bytes' default.
head -c 20000000 /dev/zero | tr '\0' 'z' >"$TMP/big"
run 0 "$BERTHCTL" digest "$TMP/big"
stdout_is "sha256:$(sha256sum "$TMP/big" | cut -d' ' -f1)
"

# --canonical: whitespace and member order do not change the digest.
printf '{ "b": [1, 2],\n  "a": "x" }\n' >"$TMP/pretty.json"
printf '{"a":"x","b":[1,2]}' >"$TMP/canonical.json"
run 0 "$BERTHCTL" digest --canonical "$TMP/pretty.json"
cp "$TMP/stdout" "$TMP/d1"
run 0 "$BERTHCTL" digest "$TMP/canonical.json"
cmp -s "$TMP/d1" "$TMP/stdout" || fail "canonical digest differs from the digest of the canonical bytes"
run 0 "$BERTHCTL" digest "$TMP/pretty.json"
cmp -s "$TMP/d1" "$TMP/stdout" && fail "raw digest of the pretty file equals the canonical digest"

run 1 "$BERTHCTL" digest --canonical "$TMP/abc"
stderr_has "invalid token"
run 1 "$BERTHCTL" digest "$TMP/missing"
stderr_has "No such file or directory"
run 2 "$BERTHCTL" digest a b
run 0 "$BERTHCTL" digest --help
stdout_has "Usage: berthctl digest"
