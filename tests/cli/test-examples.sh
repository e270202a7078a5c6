#!/bin/sh
# The examples in conf/ that the docs point operators at: every one is
# strict JSON that berth's own parsers accept.  The pools register; the
# host policy passes the policy validator (through "policy allow-image");
# the example berthd.json, with its paths moved into a dev-init
# installation, passes "berthd --check" -- as root, with runsc and crun
# installed, including both runtime backends with their pins made for the
# binaries of this machine; elsewhere with its backends removed.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

require_tool jq jq
EX=$BERTH_TOP_SRCDIR/conf/examples

# Strict JSON (duplicate keys, trailing garbage and the like are refused).
for f in "$EX"/*.json "$BERTH_TOP_SRCDIR"/conf/pools/*.json "$BERTH_TOP_SRCDIR"/conf/backends.json; do
    "$BERTHCTL" canon <"$f" >/dev/null 2>"$TMP/stderr" || fail "$f is not strict JSON: $(cat "$TMP/stderr")"
done

# The pools register in a journal, each as a new pool.
mkdir -m 0700 "$TMP/j"
run 0 "$BERTHCTL" audit keygen --out "$TMP/audit.key"
for f in "$BERTH_TOP_SRCDIR"/conf/pools/*.json; do
    name=$(jq -r .name "$f")
    run 0 "$BERTHCTL" --journal "$TMP/j/journal.db" --audit-key "$TMP/audit.key" pool register "$f"
    stdout_has "registered pool $name"
done

# The example policy is valid now, and for years (its subjects too).
now=$(date +%s)000000000
jq -e --arg now "$now" '(.not_before | tonumber) <= ($now | tonumber) and
    ([.subjects[].not_after | tonumber] | min) > ($now | tonumber) + 3 * 365 * 86400 * 1e9' \
    "$EX/policy.json" >/dev/null || fail "conf/examples/policy.json is not valid from now for three years"

# The host policy: allow-image validates the whole document before writing.
cp "$EX/policy.json" "$TMP/policy.json"
chmod 0600 "$TMP/policy.json"
IMG=sha256:$(printf 'b%.0s' $(seq 64))
run 0 "$BERTHCTL" policy allow-image --policy "$TMP/policy.json" --principal alice "$IMG"
jq -e --arg i "$IMG" '.subjects[] | select(.principal == "alice") | .images | index($i)' "$TMP/policy.json" \
    >/dev/null || fail "the image was not granted to alice"
# ... and it would refuse a broken one (so the run above proves something).
jq '.subjects[1].fingerprints = .subjects[0].fingerprints' "$EX/policy.json" >"$TMP/dup-policy.json"
chmod 0600 "$TMP/dup-policy.json"
run 1 "$BERTHCTL" policy allow-image --policy "$TMP/dup-policy.json" --principal alice "$IMG"

# The example berthd.json, moved into a dev-init installation.
run 0 "$BERTHCTL" dev-init "$TMP/inst" --no-image-source
I=$TMP/inst
mkdir -m 0755 "$TMP/plugins"
with_runtimes=0
if [ "$(id -u)" = 0 ] && [ -x /usr/bin/runsc ] && [ -x /usr/bin/crun ] && [ -n "${BERTH_OCI_SHIM:-}" ]; then
    with_runtimes=1
    cp "$BERTH_RUNTIME_PLUGIN_DIR/runtime-oci.so" "$TMP/plugins/"
fi
cp "$BERTH_IMAGE_PLUGIN_DIR/image-oci-local.so" "$TMP/plugins/"
pin() {
    printf '{"path":"%s","sha256":"sha256:%s","size":%s,"mode":"%s"}' "$1" "$(sha256sum <"$1" | cut -d' ' -f1)" \
        "$(stat -c %s "$1")" "$(stat -c %04a "$1")"
}
if [ "$with_runtimes" = 1 ]; then
    backends_filter='.backends.runsc.config.runtime = $runsc | .backends.crun.config.runtime = $crun
        | .backends[].config.shim = $shim | .backends[].qualify_at_startup = false
        | .backends.runsc.config.state_directory = $i + "/runtime/runsc"
        | .backends.crun.config.state_directory = $i + "/runtime/crun"'
    if ! mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then
        backends_filter="$backends_filter | del(.backends.crun.config.unmount)"
    fi
    runsc_pin=$(pin /usr/bin/runsc)
    crun_pin=$(pin /usr/bin/crun)
else
    backends_filter='del(.backends)'
    runsc_pin='{}'
    crun_pin='{}'
fi
jq --arg i "$I" --arg p "$TMP/plugins" --arg shim "${BERTH_OCI_SHIM:-}" --argjson runsc "$runsc_pin" \
    --argjson crun "$crun_pin" '
    .tls = {certificate: ($i + "/tls/server.pem"), private_key: ($i + "/tls/server.key"),
            client_ca: ($i + "/tls/ca.pem")}
    | .receipt_key = $i + "/keys/receipt.key" | .audit_key = $i + "/keys/audit.key"
    | .policy = $i + "/policy.json" | .state_directory = $i + "/state" | .pools_directory = $i + "/pools"
    | .images.config.store = $i + "/images" | .plugin_directory = $p
    | '"$backends_filter" "$EX/berthd.json" >"$TMP/berthd.json" || fail "jq could not rewrite the example"
chmod 0600 "$TMP/berthd.json"
# Nothing but the paths (and, for the runtimes, the pins and shim) changed.
[ "$(jq 'del(.tls, .receipt_key, .audit_key, .policy, .state_directory, .pools_directory, .images.config.store,
    .plugin_directory, .backends)' "$TMP/berthd.json")" = "$(jq 'del(.tls, .receipt_key, .audit_key, .policy,
    .state_directory, .pools_directory, .images.config.store, .backends)' "$EX/berthd.json")" ] ||
    fail "the rewrite changed more than the paths"
run 0 "$BERTHD" --config "$TMP/berthd.json" --check
if [ "$with_runtimes" = 1 ]; then
    grep -q 'backend runsc' "$TMP/stdout" "$TMP/stderr" || fail "--check did not load the runsc backend"
    grep -q 'backend crun' "$TMP/stdout" "$TMP/stderr" || fail "--check did not load the crun backend"
else
    echo "note: runtime backends not checked (needs root, runsc, crun and BERTH_OCI_SHIM)"
fi
# An unknown member in the example would have been refused: prove --check reads it strictly.
jq '.bogus = 1' "$TMP/berthd.json" >"$TMP/bogus.json"
chmod 0600 "$TMP/bogus.json"
run 1 "$BERTHD" --config "$TMP/bogus.json" --check
stderr_has "bogus"

# The example job (conf/examples/job-sandbox-facts.json) is submitted to a
# real berthd by the quickstart, which tests/run-all.sh runs as root.
