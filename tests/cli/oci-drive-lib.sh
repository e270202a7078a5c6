# oci-drive-lib.sh -- helpers for the tests that drive the runtime-oci plugin
# directly through tests/tools/oci-drive, without berthd (bash; sourced after
# oci-lib.sh and oci_plugins, with $TMP/BACKEND.json from oci_config).
: "${BERTH_OCI_DRIVE:?}"

# drive BACKEND OP ARGS...: the plugin, one operation (stdout/stderr in $TMP).
drive() { "$BERTH_OCI_DRIVE" "$PLUGINS" runtime-oci.so "$1" "$TMP/$1.json" "${@:2}"; }
# drive_ok / drive_fails ENAME BACKEND OP ARGS...
drive_ok() { run 0 drive "$@"; }
drive_fails() {
    local want=$1
    shift
    run 1 drive "$@"
    grep -q "^$want: " "$TMP/stderr" || fail "drive $*: expected $want: $(cat "$TMP/stderr")"
}
run_of() { cat "$TMP/$1.run"; }
# wait_job BACKEND NAME: the terminal inspect of job NAME in $TMP/NAME.inspect.json
wait_job() {
    drive_ok "$1" wait "$(run_of "$2")"
    cp "$TMP/stdout" "$TMP/$2.inspect.json"
}
# inspected NAME JQ_FILTER; job_stdout NAME: what the job printed (inspect's base64url stdout)
inspected() { jq -r "$2" "$TMP/$1.inspect.json"; }
job_stdout() {
    jq -r .stdout "$TMP/$1.inspect.json" | tr -- '-_' '+/' | awk '{ p = length($0) % 4; if (p) $0 = $0 substr("==", 1, 4 - p); print }' |
        base64 -d
}

# drive_image: the test busybox image built and imported into the store
# $TMP/store; DIGEST is its manifest digest.
drive_image() {
    "$BERTH_TOP_SRCDIR/tests/image/build-busybox-image.sh" "$TMP/bb" >"$TMP/bb.digest" 2>"$TMP/build.err" ||
        fail "building the busybox image failed: $(cat "$TMP/build.err")"
    DIGEST=$(tail -n1 "$TMP/bb.digest")
    mkdir -m 0700 "$TMP/store"
    run 0 "$BERTHCTL" image import "$TMP/bb" --store "$TMP/store"
}

# Cold jobs for drive's start (after drive_image):
# new_job NAME SCRIPT [ARTIFACT_BYTES] [OUTPUTS_JSON] [INPUTS_JSON]: $TMP/NAME.job.json
new_job() {
    jq -n --arg id "$1" --arg img "$DIGEST" --arg s "$2" --argjson a "${3:-1048576}" \
        --argjson outs "${4:-[]}" --argjson ins "${5:-[]}" \
        '{schema_version: 1, id: $id, pool: "default", image: $img, argv: ["/bin/sh", "-c", $s],
          inputs: $ins, outputs: $outs,
          limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 16777216,
                   wall_time_ns: 120000000000, output_bytes: 65536, artifact_bytes: $a}}' >"$TMP/$1.job.json"
}

# dispatch NAME [INPUTS_DIR]: a fresh run id in $TMP/NAME.run, a staged
# rootfs, and $TMP/NAME.dispatch.json (unsigned receipt: the configs here
# have no broker_public_key).
dispatch() {
    local run="r$(head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n')" dl
    dl="$(($(date +%s) + 120))000000000"
    echo "$run" >"$TMP/$1.run"
    mkdir -m 0700 "$TMP/$1.stage"
    "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store" --out "$TMP/$1.stage/rootfs" >/dev/null 2>&1 ||
        fail "staging the image for $1"
    chmod 0755 "$TMP/$1.stage/rootfs"
    jq -n --arg run "$run" --arg dl "$dl" --slurpfile job "$TMP/$1.job.json" --arg rootfs "$TMP/$1.stage/rootfs" \
        --arg in "${2:-}" \
        '{schema_version: 1, receipt: {receipt: {run_id: $run, deadline: $dl}}, job: $job[0],
          effective: {pool_hash: "00", template: {env: {}, root: "/workspace", timeout_seconds: 600},
                      backend_override: null, network_egress_class: "none", credential_env: []},
          rootfs: $rootfs} + (if $in == "" then {} else {inputs_dir: $in} end)' >"$TMP/$1.dispatch.json"
}
