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
