#!/bin/sh
# berthctl's messages on standard error: each line is written whole, by
# one write(2) (or with the next lines), so that another process writing to the same terminal or log
# cannot split it.  (The quoted parts of a message are written a byte at a
# time, bctl_fputs_clean(); stderr is line-buffered for that.)
# tests/tools/write-count counts the writes through a SOCK_SEQPACKET pair.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
: "${BERTH_WRITE_COUNT:?BERTH_WRITE_COUNT must point at the built tests/tools/write-count}"

# count_writes WANT_STATUS ARGS...: berthctl ARGS; "writes=N" and what it
# wrote to stderr in $TMP/stdout.
count_writes() {
    want=$1
    shift
    run "$want" "$BERTH_WRITE_COUNT" "$BERTHCTL" "$@"
}

# lines_once: the message in $TMP/stdout was written whole lines at a time:
# no write ended inside a line, and none was needed beyond one per line.
lines_once() {
    counts=$(sed -n 1p "$TMP/stdout")
    writes=$(echo "$counts" | sed -n 's/^writes=\([0-9]*\) partial=.*/\1/p')
    lines=$(tail -n +2 "$TMP/stdout" | wc -l)
    [ "$lines" -gt 0 ] || fail "no message was written: $(cat "$TMP/stdout")"
    case $counts in *" partial=0") ;; *) fail "a line was split over writes ($counts): $(tail -n +2 "$TMP/stdout")" ;; esac
    [ "$writes" -ge 1 ] && [ "$writes" -le "$lines" ] || fail "$lines lines took $writes writes"
}

# An error quoting a path (bctl_error(): prefix, the quoted text, the line end).
count_writes 1 digest "$TMP/no-such-file"
message=$(tail -n +2 "$TMP/stdout")
[ "$message" = "berthctl digest: $TMP/no-such-file: No such file or directory" ] ||
    fail "unexpected message: $message"
lines_once

# A usage error of two lines.
count_writes 2 no-such-verb
grep -q 'unknown verb "no-such-verb"' "$TMP/stdout" || fail "unexpected message: $(cat "$TMP/stdout")"
lines_once

# A verb run by berthctl-full (exec): what it writes is one write per line too.
count_writes 1 audit verify "$TMP/no-such-chain.jsonl" --audit-key "$TMP/no-such.key"
lines_once
echo "PASS: berthctl writes its messages whole lines at a time"
