# test-berthd-contained-fallback.sh -- placement over a contained backend
# whose service manager cannot be reached: runtime-oci bound to the real
# containment-systemd plugin reports itself "unavailable"
# (containment_unreachable) in its capabilities, berthd logs it once, the
# pool [contained, script] places on script with that reason in the signed
# placement's selector_inputs, a pool of the contained backend alone refuses
# (no_backend), and berthctl qualify runs no probe and records nothing; a
# backend whose "unavailable" is no reason code gets no work, alone.
#
# The manager "cannot be reached" for real: the containment's socket is a
# path where nothing listens (this machine's PID 1 is not systemd anyway).
# The contained backend never runs a job, so its runtime is pinned to
# /bin/true; the scripted runtime takes the jobs.  No root needed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
: "${BERTH_RUNTIME_PLUGIN_DIR:?}" "${BERTH_CONTAINMENT_PLUGIN_DIR:?}" "${BERTH_OCI_SHIM:?}"

plugin_dir "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_RUNTIME_PLUGIN_DIR/runtime-oci.so" \
    "$BERTH_CONTAINMENT_PLUGIN_DIR/containment-systemd.so"
make_install
RT=$(readlink -f /bin/true)
jq --arg rt "$RT" --arg sha "sha256:$(sha256sum <"$RT" | cut -d' ' -f1)" --argjson size "$(stat -c %s "$RT")" \
    --arg mode "$(stat -c %04a "$RT")" --arg sd "$TMP/state-contained" --arg shim "$BERTH_OCI_SHIM" \
    --arg sock "$TMP/no-manager.sock" \
    '.backends.contained = {plugin: "runtime-oci", require_qualification: false,
        config: {runtime: {path: $rt, sha256: $sha, size: $size, mode: $mode}, isolation: "gvisor",
                 state_directory: $sd, shim: $shim},
        containment: {plugin: "containment-systemd", config: {socket: $sock}}}' \
    "$INST/berthd.json" >"$TMP/berthd.json"
install -m 0600 "$TMP/berthd.json" "$INST/berthd.json"
# A backend whose capabilities carry an "unavailable" that is no reason
# code: it alone gets no work (it must not make every offer unreadable).
mkdir -m 0700 "$TMP/odd"
publish "$INST/berthd.json" jq --arg sd "$TMP/odd" \
    '.backends.odd = {plugin: "runtime-script", require_qualification: false,
                      config: {state_directory: $sd, unavailable: "Not Now"}}'

add_pool fallback contained script
add_pool only contained

# Qualification needs the backend: with its manager out of reach, nothing runs.
run 1 "$BERTHCTL" qualify contained --berthd-config "$INST/berthd.json"
stderr_has "the backend is unavailable (containment_unreachable: "
stderr_has "$TMP/no-manager.sock"
# No probe ran (each prints its line, after the backend's header line).
[ ! -s "$TMP/stdout" ] || fail "qualify ran probes on an unavailable backend: $(cat "$TMP/stdout")"

start_berthd
grep -qF "backend contained is unavailable (containment_unreachable: " "$TMP/berthd.log" ||
    fail "berthd did not say the contained backend is unavailable: $(cat "$TMP/berthd.log")"
api dev GET /v1/capabilities
expect_status 200
jq -e '.backends.contained.unavailable == "containment_unreachable" and
       (.backends.contained.containment.error | test("no-manager.sock"))' "$TMP/body" >/dev/null ||
    fail "capabilities do not say why: $(cat "$TMP/body")"

grep -qF "backend odd: capabilities failed, so it gets no work: capabilities: unavailable is not a reason code" \
    "$TMP/berthd.log" || fail "berthd did not refuse the odd backend's capabilities: $(cat "$TMP/berthd.log")"

# The pool falls back to the scripted runtime, and the placement says why.
job_doc fb '["echo","hi"]' | jq '.pool = "fallback"' >"$TMP/fb.json"
api dev POST /v1/jobs --data-binary "@$TMP/fb.json"
expect_status 201
[ "$(jq -r .receipt.backend "$TMP/body")" = script ] || fail "placed on $(jq -r .receipt.backend "$TMP/body")"
wait_state dev fb exited
job_doc none '["echo","hi"]' | jq '.pool = "only"' >"$TMP/none.json"
api dev POST /v1/jobs --data-binary "@$TMP/none.json"
body_has no_backend
# The berthd log says it once, not on every pass.
[ "$(grep -c 'backend contained is unavailable' "$TMP/berthd.log")" = 1 ] ||
    fail "the unavailable backend was logged more than once: $(cat "$TMP/berthd.log")"
stop_berthd
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" audit export --out "$TMP/audit.jsonl"
grep '"pool.placed"' "$TMP/audit.jsonl" | grep -qF '{"backend":"contained","kept":false,"reason":"containment_unreachable"}' ||
    fail "selector_inputs do not say why the contained backend was passed over: $(grep pool.placed "$TMP/audit.jsonl")"
# Offline, the chain re-derives that placement from the recorded offers.
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify
echo "PASS: a contained backend out of its manager's reach gets no work, and the placement says why"
