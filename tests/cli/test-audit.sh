#!/bin/sh
# berthctl audit: export and offline verification; flipping one byte fails
# verification at exactly the event that holds it.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

mkdir -m 0700 "$TMP/state"
J="--journal=$TMP/state/journal.db"
K="--audit-key=$TMP/audit.key"
run 0 "$BERTHCTL" audit keygen --out "$TMP/audit.key"
[ "$(stat -c %a "$TMP/audit.key")" = 600 ] || fail "audit key mode"
run 1 "$BERTHCTL" audit keygen --out "$TMP/audit.key"
stderr_has "already exists"
for f in "$BERTH_TOP_SRCDIR"/conf/pools/*.json; do
    run 0 "$BERTHCTL" $J $K pool register "$f"
done
run 0 "$BERTHCTL" $J $K pool place default --backends "$BERTH_TOP_SRCDIR/conf/backends.json"

run 0 "$BERTHCTL" $J audit export --out "$TMP/chain.jsonl"
[ "$(wc -l <"$TMP/chain.jsonl")" = 4 ] || fail "expected 4 events"
run 1 "$BERTHCTL" $J audit export --out "$TMP/chain.jsonl"
run 0 "$BERTHCTL" $J audit export
cmp -s "$TMP/stdout" "$TMP/chain.jsonl" || fail "export to stdout differs from --out"
run 0 "$BERTHCTL" $J audit export --after=2
[ "$(wc -l <"$TMP/stdout")" = 2 ] || fail "--after=2 should leave 2 events"
head -n1 "$TMP/stdout" | grep -q '"seq":3,' || fail "--after=2 should start at seq 3"

run 0 "$BERTHCTL" audit verify "$TMP/chain.jsonl" $K
stdout_has "verified: 4 events, 3 active pools, 1 placements"
head=$(sed -n 's/^head: \([0-9]*:[0-9a-f]*\) .*/\1/p' "$TMP/stdout")
case $head in 4:????????????????????????????????????????????????????????????????) ;; *) fail "no head printed" ;; esac

# Removing events from the end leaves a valid, shorter chain; the anchor
# (the head noted earlier) exposes it.
head -n 3 "$TMP/chain.jsonl" >"$TMP/short.jsonl"
run 0 "$BERTHCTL" audit verify "$TMP/short.jsonl" $K
run 3 "$BERTHCTL" audit verify "$TMP/short.jsonl" $K --anchor="$head"
stderr_has "the chain ends at event 3, before the anchored event"
run 0 "$BERTHCTL" audit verify "$TMP/chain.jsonl" $K --anchor="$head"
run 2 "$BERTHCTL" audit verify "$TMP/chain.jsonl" $K --anchor=4
run 0 "$BERTHCTL" --json audit verify "$TMP/chain.jsonl" $K
stdout_has '"verified":true'

# flip FILE OFFSET: XOR the byte at OFFSET (0-based) with 1.
flip() {
    b=$(dd if="$1" bs=1 skip="$2" count=1 2>/dev/null | od -An -tu1 | tr -d ' ')
    printf "\\$(printf '%03o' $((b ^ 1)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
# line_of FILE OFFSET: the 1-based line holding byte OFFSET.
line_of() { head -c "$2" "$1" | wc -l | awk '{ print $1 + 1 }'; }

expect_bad_at() { # FILE EVENT
    run 3 "$BERTHCTL" audit verify "$1" $K
    stderr_has "verification failed at event $2:"
}

size=$(wc -c <"$TMP/chain.jsonl")
# A byte in the middle of the file.
cp "$TMP/chain.jsonl" "$TMP/t1.jsonl"
mid=$((size / 2))
flip "$TMP/t1.jsonl" $mid
expect_bad_at "$TMP/t1.jsonl" "$(line_of "$TMP/chain.jsonl" $mid)"
# A byte inside a details value: the name of the third pool, in event 3.
cp "$TMP/chain.jsonl" "$TMP/t2.jsonl"
off=$(grep -bo '"name":"graders"' "$TMP/chain.jsonl" | head -n1 | cut -d: -f1)
off=$((off + 9))
[ "$(line_of "$TMP/chain.jsonl" $off)" = 3 ] || fail "expected the graders registration on line 3"
flip "$TMP/t2.jsonl" $off
expect_bad_at "$TMP/t2.jsonl" 3
stderr_has "mac does not match"
# A byte of a mac: the second event's.
cp "$TMP/chain.jsonl" "$TMP/t3.jsonl"
off=$(grep -bo '"mac":"' "$TMP/chain.jsonl" | sed -n 2p | cut -d: -f1)
off=$((off + 10))
flip "$TMP/t3.jsonl" $off
expect_bad_at "$TMP/t3.jsonl" 2
# A whole event removed.
sed 2d "$TMP/chain.jsonl" >"$TMP/t4.jsonl"
expect_bad_at "$TMP/t4.jsonl" 2
stderr_has "seq is 3, expected 2"

# The wrong key.
run 0 "$BERTHCTL" audit keygen --out "$TMP/other.key"
run 3 "$BERTHCTL" audit verify "$TMP/chain.jsonl" --audit-key="$TMP/other.key"
stderr_has "verification failed at event 1: mac does not match"

run 2 "$BERTHCTL" audit verify
run 2 "$BERTHCTL" audit frob
run 2 "$BERTHCTL" audit export --after=x
run 0 "$BERTHCTL" audit --help
stdout_has "Usage: berthctl audit keygen"
