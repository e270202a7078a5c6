# test-policy.sh -- berthctl policy allow-image on a real dev-init policy,
# and a real berthd taking the change on its next request.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

OTHER=sha256:1111111111111111111111111111111111111111111111111111111111111111
make_install
P=$INST/policy.json

# images_of PRINCIPAL: that principal's granted images, one per line.
images_of() {
    jq -r --arg p "$1" '.subjects[] | select(.principal == $p) | .images[]' "$P"
}

run 0 "$BERTHCTL" policy --help
stdout_has "Usage: berthctl policy allow-image --policy=FILE --principal=NAME DIGEST"

# Grant, then grant again: the second run changes nothing.
run 0 "$BERTHCTL" policy allow-image --policy "$P" --principal other "$OTHER"
stdout_has "other may now run $OTHER (1 subject changed)"
images_of other | grep -qx "$OTHER" || fail "other was not granted $OTHER: $(cat "$P")"
images_of dev | grep -qx "$OTHER" && fail "dev was granted $OTHER too"
[ "$(stat -c %a "$P")" = 600 ] || fail "the policy is now mode $(stat -c %a "$P")"
[ "$(find "$INST" -maxdepth 1 -name '.*' -newer "$INST/berthd.json" | wc -l)" = 0 ] || fail "a temporary file was left"
cp "$P" "$TMP/policy.before"
ino=$(stat -c %i "$P")
run 0 "$BERTHCTL" policy allow-image --policy "$P" --principal other "$OTHER"
stdout_has "already may run"
cmp -s "$P" "$TMP/policy.before" || fail "a repeated grant changed the policy"
[ "$(stat -c %i "$P")" = "$ino" ] || fail "a repeated grant replaced the file"

# Refusals change nothing.
run 1 "$BERTHCTL" policy allow-image --policy "$P" --principal nobody "$OTHER"
stderr_has 'no subject with principal "nobody"'
run 2 "$BERTHCTL" policy allow-image --policy "$P" --principal dev sha256:XYZ
stderr_has "sha256:<64 lowercase hex>"
run 2 "$BERTHCTL" policy allow-image --principal dev "$OTHER"
stderr_has "needs --policy=FILE and --principal=NAME"
run 2 "$BERTHCTL" policy frob
chmod 0644 "$P"
run 1 "$BERTHCTL" policy allow-image --policy "$P" --principal dev "$OTHER"
chmod 0600 "$P"
cmp -s "$P" "$TMP/policy.before" || fail "a refused grant changed the policy"
printf '{"schema_version": 1}' >"$TMP/bad.json"
chmod 0600 "$TMP/bad.json"
run 1 "$BERTHCTL" policy allow-image --policy "$TMP/bad.json" --principal dev "$OTHER"
stderr_has "is not a valid policy (nothing changed)"
[ "$(cat "$TMP/bad.json")" = '{"schema_version": 1}' ] || fail "an invalid policy was rewritten"

# A running berthd takes the change on the next request: a job on an
# ungranted image is refused, then accepted once granted.
start_berthd
printf '{"schema_version":1,"id":"img","pool":"default","image":"%s","argv":["echo","ok"],"limits":{"cpu_millis":1000,"memory_bytes":268435456,"pids":64,"scratch_bytes":67108864,"wall_time_ns":60000000000,"output_bytes":65536,"artifact_bytes":1048576}}' \
    "$OTHER" >"$TMP/img.json"
api dev POST /v1/jobs --data-binary "@$TMP/img.json"
expect_status 403
body_has "is not granted to dev"
run 0 "$BERTHCTL" policy allow-image --policy "$P" --principal dev "$OTHER"
api dev POST /v1/jobs --data-binary "@$TMP/img.json"
expect_status 201
stop_berthd
