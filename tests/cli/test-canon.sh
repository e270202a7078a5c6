#!/bin/sh
# berthctl canon: canonical output, --check, and the refusals the issue names.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

cat >"$TMP/pretty.json" <<'JSON'
{
    "pool": "default",
    "argv": ["/bin/echo", "h\u00e9llo\tworld"],
    "limits": {"wall_time_ns": 5000000000, "pids": 64},
    "id": "job-1"
}
JSON
want='{"argv":["/bin/echo","h'"$(printf '\303\251')"'llo\tworld"],"id":"job-1","limits":{"pids":64,"wall_time_ns":5000000000},"pool":"default"}'

# The canonical form, byte for byte, with no trailing newline (not a tty).
run 0 "$BERTHCTL" canon "$TMP/pretty.json"
stdout_is "$want"
cp "$TMP/stdout" "$TMP/canonical.json"

# Standard input, with and without "-".
run_stdin 0 "$TMP/pretty.json" "$BERTHCTL" canon
stdout_is "$want"
run_stdin 0 "$TMP/pretty.json" "$BERTHCTL" canon -
stdout_is "$want"

# --check: canonical input passes silently; the pretty one fails at byte 1.
run 0 "$BERTHCTL" canon --check "$TMP/canonical.json"
stdout_is ""
run 1 "$BERTHCTL" canon --check "$TMP/pretty.json"
stderr_has "not canonical: first difference at byte 1"
stderr_one_line
printf '\n' >>"$TMP/canonical.json"
run 1 "$BERTHCTL" canon -c "$TMP/canonical.json"
stderr_has "first difference at byte $(printf '%s' "$want" | wc -c)"

# Refusals: exit 1, one line naming the byte offset and the reason.
refused() {
    printf '%s' "$1" >"$TMP/bad.json"
    run 1 "$BERTHCTL" canon "$TMP/bad.json"
    stderr_has "$2"
    stderr_one_line
    stdout_is ""
}
refused '{"a": 1, "a": 2}' "byte 12: duplicate object key near '\"a\"'"
refused '{"x": 1.0}' "byte 6: number '1.0' is not an integer"
refused '[1e2]' "byte 1: number '1e2' is not an integer"
refused '"\ud800"' "invalid Unicode '\\uD800'"
refused '[-0]' "byte 1: -0 is not allowed"
refused '[9007199254740992]' '$[0]: integer 9007199254740992 is outside'
refused '{} {}' "end of file expected"
refused '"a\u0000b"' "is not allowed"

# 10,000 nested arrays: refused at the 33rd level, no stack exhaustion.
awk 'BEGIN { for (i = 0; i < 10000; i++) printf "["; for (i = 0; i < 10000; i++) printf "]" }' >"$TMP/deep.json"
run 1 "$BERTHCTL" canon "$TMP/deep.json"
stderr_has "byte 32: nesting deeper than 32 levels"
stderr_one_line

# A byte order mark and invalid UTF-8.
printf '\357\273\277{}' >"$TMP/bom.json"
run 1 "$BERTHCTL" canon "$TMP/bom.json"
stderr_has "byte 0: a byte order mark is not allowed"
printf '"\377"' >"$TMP/utf8.json"
run 1 "$BERTHCTL" canon "$TMP/utf8.json"
stderr_has "unable to decode byte 0xff"

# Size bound.
run 1 "$BERTHCTL" canon --max-bytes=10 "$TMP/pretty.json"
stderr_has "larger than 10 bytes"
run 0 "$BERTHCTL" canon --max-bytes=1000 "$TMP/pretty.json"

# Errors about the command line exit 2.
run 1 "$BERTHCTL" canon "$TMP/missing.json"
stderr_has "missing.json: No such file or directory"
run 2 "$BERTHCTL" canon --max-bytes=0 "$TMP/pretty.json"
run 2 "$BERTHCTL" canon --max-bytes=12k "$TMP/pretty.json"
run 2 "$BERTHCTL" canon --frobnicate
stderr_has "berthctl canon: unrecognized option '--frobnicate'"
stderr_has 'Try "berthctl canon --help".'
run 2 "$BERTHCTL" canon a.json b.json
run 2 "$BERTHCTL" no-such-verb
run 2 "$BERTHCTL"

# Help.
run 0 "$BERTHCTL" canon --help
stdout_has "Usage: berthctl canon"
stdout_has "Exit status:"
run 0 "$BERTHCTL" help canon
stdout_has "Usage: berthctl canon"
run 0 "$BERTHCTL" --help
stdout_has "canon"
run 0 "$BERTHCTL" --version
stdout_has "berthctl "
