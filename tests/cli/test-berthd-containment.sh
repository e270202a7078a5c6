# test-berthd-containment.sh -- a runtime backend's "containment" in
# berthd.json: berthd (and berthctl qualify) load the containment plugin,
# bind it to the backend's host table (ABI 1.4, host->containment), and
# refuse what cannot be bound; runtime-oci takes one.
#
# The containment here is the fixture plugin (tests/plugins/fixture-kinds.c,
# an ABI 1.0 table): containment-systemd needs a real systemd, which its own
# test boots (test-containment-systemd.sh).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
: "${BERTH_RUNTIME_PLUGIN_DIR:?}"

plugin_dir "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_TEST_PLUGIN_DIR/runtime-script-1-0.so" \
    "$BERTH_TEST_PLUGIN_DIR/fixture-containment.so" "$BERTH_TEST_PLUGIN_DIR/fixture-good.so" \
    "$BERTH_RUNTIME_PLUGIN_DIR/runtime-oci.so"
make_install
CONF=$INST/berthd.json
cp "$CONF" "$TMP/conf.plain"

# with_containment JQ_VALUE: berthd.json with backend script's containment set to it.
with_containment() {
    jq --argjson c "$1" '.backends.script.containment = $c' "$TMP/conf.plain" >"$CONF" ||
        fail "jq could not set the containment"
}

# Without a containment the backend sees none.
run 0 "$BERTHD" --config "$CONF" --check
[ ! -e "$TMP/script/containment.json" ] || fail "a backend without a containment was handed one"

# Bound: the backend's init() reached the fixture through the core's table,
# whose units is NULL as the fixture's 1.0 table has none.
with_containment '{"plugin": "fixture-containment", "config": {}}'
run 0 "$BERTHD" --config "$CONF" --check
stdout_has "is usable (1 backends)"
[ -s "$TMP/script/containment.json" ] || fail "the backend was not handed the containment"
jq -e '.capabilities == "{\"controllers\":[]}" and .units == false and .ops_size > 0' \
    "$TMP/script/containment.json" >/dev/null || fail "containment.json: $(cat "$TMP/script/containment.json")"
rm "$TMP/script/containment.json"

# berthd itself: loaded, logged, bound before the backend's init.
try_start_berthd || fail "berthd did not start with a containment: $(cat "$TMP/berthd.log")"
grep -qF "backend script: containment plugin fixture-containment" "$TMP/berthd.log" ||
    fail "berthd did not log the containment plugin: $(cat "$TMP/berthd.log")"
[ -s "$TMP/script/containment.json" ] || fail "berthd did not hand the containment to the backend"
kill_berthd
rm "$TMP/script/containment.json"

# berthctl qualify loads the backend the same way (the fixture's
# qualification fails: the scripted runtime claims none; what matters is
# that the backend was loaded with its containment).
run 1 "$BERTHCTL" qualify script --berthd-config "$CONF"
[ -s "$TMP/script/containment.json" ] || fail "berthctl qualify did not bind the containment: $(cat "$TMP/stderr")"

# A pin on the containment plugin is checked.
SHA=$(sha256sum "$PLUGINS/fixture-containment.so" | cut -d' ' -f1)
with_containment '{"plugin": "fixture-containment", "sha256": "sha256:'"$SHA"'"}'
run 0 "$BERTHD" --config "$CONF" --check
# refused JQ_VALUE MESSAGE...: berthd --check fails with that containment and says each MESSAGE.
refused() {
    local m
    with_containment "$1"
    shift
    run 1 "$BERTHD" --config "$CONF" --check
    for m in "$@"; do stderr_has "$m"; done
}
refused '{"plugin": "fixture-containment", "sha256": "sha256:'"$(printf '%064d' 0)"'"}' \
    "backend script: containment plugin fixture-containment in $PLUGINS:" "sha256"

# Not a containment plugin, none at all, or not even an object.
refused '{"plugin": "fixture-good"}' "backend script: containment plugin fixture-good in $PLUGINS:" \
    "this is a runtime plugin, expected containment"
refused '{"plugin": "containment-none"}' "backend script: containment plugin containment-none in $PLUGINS:"
refused '"systemd"' 'config.backends.script.containment must be an object such as {"plugin": "containment-systemd"}'
refused '{"plugin": "fixture-containment", "drain": 1}' 'config.backends.script.containment: unknown member "drain"'

# runtime-oci takes a containment (it runs each job in a unit of it:
# test-berthd-contained-oci.sh).
RT=$(readlink -f /bin/true)
OCI_CONFIG=$(jq -n --arg rt "$RT" --arg sha "sha256:$(sha256sum <"$RT" | cut -d' ' -f1)" \
    --argjson size "$(stat -c %s "$RT")" --arg mode "$(stat -c %04a "$RT")" --arg sd "$TMP/oci" \
    --arg shim "${BERTH_OCI_SHIM:?}" \
    '{runtime: {path: $rt, sha256: $sha, size: $size, mode: $mode}, isolation: "gvisor", state_directory: $sd,
      shim: $shim}')
jq --argjson c "$OCI_CONFIG" '.backends.runsc = {"plugin": "runtime-oci", "config": $c,
    "containment": {"plugin": "fixture-containment"}}' "$TMP/conf.plain" >"$CONF"
run 0 "$BERTHD" --config "$CONF" --check
[ -d "$TMP/oci/jobs" ] || fail "runtime-oci with a containment did not set up its state directory"

# A runtime of ABI 1.0 does not know host->containment: refused before its
# init() runs, which would otherwise have run every job uncontained.
jq --arg sd "$TMP/script" '.backends.script.plugin = "runtime-script-1-0"
    | .backends.script.containment = {"plugin": "fixture-containment"}' "$TMP/conf.plain" >"$CONF"
run 1 "$BERTHD" --config "$CONF" --check
stderr_has "backend script: plugin runtime-script-1-0 in $PLUGINS (with a containment):"
stderr_has "built for plugin ABI 1.0; this use of it needs ABI 1.4 or later"
run 1 "$BERTHCTL" qualify script --berthd-config "$CONF"
stderr_has "built for plugin ABI 1.0; this use of it needs ABI 1.4 or later"

# A runtime of ABI 1.4 whose init() never asks for the bound containment
# is refused as well, by berthd and by qualify.
rm -f "$TMP/script/containment.json"
jq '.backends.script.config.ignore_containment = true
    | .backends.script.containment = {"plugin": "fixture-containment"}' "$TMP/conf.plain" >"$CONF"
run 1 "$BERTHD" --config "$CONF" --check
stderr_has "plugin runtime-script in $PLUGINS: a containment is configured for this backend, but the plugin's init() never took it"
[ ! -e "$TMP/script/containment.json" ] || fail "the backend took the containment after all"
run 1 "$BERTHCTL" qualify script --berthd-config "$CONF"
stderr_has "init() never took it (host->containment), so its jobs would run uncontained"
st=0
try_start_berthd || st=$?
[ "$st" = 1 ] || fail "berthd did not exit at startup (status $st) with a backend that would run its jobs uncontained"
grep -qF "never took it" "$TMP/berthd.log" || fail "berthd did not say why it refused: $(cat "$TMP/berthd.log")"
