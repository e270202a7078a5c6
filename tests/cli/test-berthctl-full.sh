#!/bin/sh
# berthctl and berthctl-full: the berthctl every client command starts links
# neither SQLite nor libarchive, and hands the verbs that need them (audit,
# image, pool, qualify) to berthctl-full with the command line as given;
# without berthctl-full it says so and fails.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

require_tool readelf binutils
: "${BERTHCTL_FULL:?BERTHCTL_FULL must point at the built berthctl-full}"

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' '; }
light=$(needed "$BERTHCTL")
full=$(needed "$BERTHCTL_FULL")
[ -n "$light" ] || fail "readelf found no NEEDED entry in $BERTHCTL"
for lib in libsqlite3 libarchive; do
    case " $light" in
    *" $lib."*) fail "berthctl needs $lib (it needs: $light)" ;;
    esac
done
case " $full" in
*" libsqlite3."*) ;;
*) fail "berthctl-full does not need libsqlite3 (it needs: $full)" ;;
esac
case " $light" in
*" libcurl."*) ;;
*) fail "berthctl does not need libcurl (it needs: $light)" ;;
esac

# Both list the same verbs.
run 0 "$BERTHCTL" --help
cp "$TMP/stdout" "$TMP/help.light"
run 0 "$BERTHCTL_FULL" --help
cmp -s "$TMP/stdout" "$TMP/help.light" || fail "berthctl --help and berthctl-full --help differ"

# A verb of berthctl-full, through berthctl: global options and all.
run 0 "$BERTHCTL" audit keygen --out "$TMP/audit.key"
[ "$(stat -c %a "$TMP/audit.key")" = 600 ] || fail "audit keygen through berthctl: mode $(stat -c %a "$TMP/audit.key")"
mkdir -m 0700 "$TMP/state"
run 0 "$BERTHCTL" --journal="$TMP/state/j.db" --audit-key="$TMP/audit.key" pool register \
    "$BERTH_TOP_SRCDIR/conf/pools/default.json"
stdout_has "registered pool default"
run 0 "$BERTHCTL" --journal="$TMP/state/j.db" --audit-key="$TMP/audit.key" pool list
cp "$TMP/stdout" "$TMP/list.light"
run 0 "$BERTHCTL_FULL" --journal="$TMP/state/j.db" --audit-key="$TMP/audit.key" pool list
cmp -s "$TMP/stdout" "$TMP/list.light" || fail "pool list through berthctl differs from berthctl-full's"
run 0 "$BERTHCTL" help pool
cp "$TMP/stdout" "$TMP/pool.light"
run 0 "$BERTHCTL_FULL" help pool
cmp -s "$TMP/stdout" "$TMP/pool.light" || fail "berthctl help pool differs from berthctl-full's"
grep -q "pool register" "$TMP/pool.light" || fail "berthctl help pool: $(cat "$TMP/pool.light")"
# Its exit status comes back (2: a usage error).
run 2 "$BERTHCTL" pool --no-such-option

# Without berthctl-full: a clear error, exit 1; the other verbs still work.
BERTHCTL_FULL=$TMP/missing run 1 "$BERTHCTL" pool list
grep -q "^berthctl pool: cannot run $TMP/missing, which runs the verbs audit, image, pool and qualify: No such file or directory" \
    "$TMP/stderr" || fail "missing berthctl-full: $(cat "$TMP/stderr")"
# Nor one that names berthctl itself, which would start itself forever.
BERTHCTL_FULL=$BERTHCTL run 1 "$BERTHCTL" pool list
grep -q "^berthctl pool: $BERTHCTL is this berthctl, not berthctl-full (check BERTHCTL_FULL)" "$TMP/stderr" ||
    fail "BERTHCTL_FULL naming berthctl: $(cat "$TMP/stderr")"
printf '{"b":1,"a":2}' >"$TMP/doc.json"
BERTHCTL_FULL=$TMP/missing run 0 "$BERTHCTL" canon "$TMP/doc.json"
stdout_is '{"a":2,"b":1}'
