# test-runtime-oci-start.sh -- the start handshake between the runtime-oci
# plugin and its shim, with stand-ins for a broken berth-oci-shim (scripts
# that answer --version as the shim does), driven through the core's loader
# (tests/tools/oci-drive):
#   - a shim that keeps the start pipe open and never answers: start()
#     gives up after the backend's start_timeout_ns with ETIMEDOUT (it used
#     to wait for as long as the pipe stayed open), and still watches the
#     job: when the shim publishes its result later, the plugin calls
#     job_changed (berthd hears at once, not on its next reconcile pass);
#   - a shim that ends without answering: start() fails with EIO at once
#     and points at the job's runtime.log.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root
. "$BERTH_TOP_SRCDIR/tests/cli/oci-drive-lib.sh"

drive_image
oci_plugins

# fake_shim NAME BODY: $TMP/shims/NAME, a shell script that answers
# --version as berth-oci-shim does and otherwise runs BODY; a backend
# NAME (runsc underneath) that runs it, with a start timeout of 1 s.
mkdir -m 0755 "$TMP/shims"
fake_shim() {
    printf '#!/bin/sh\n[ "$1" = --version ] && { echo "berth-oci-shim test"; exit 0; }\n%s\n' "$2" >"$TMP/shims/$1"
    chmod 0755 "$TMP/shims/$1"
    oci_config runsc
    jq --arg shim "$TMP/shims/$1" --arg d "$TMP/state-$1" \
        '.shim = $shim | .state_directory = $d | .start_timeout_ns = 1000000000' "$TMP/runsc.json" >"$TMP/$1.json"
}

# Holds the pipe (fd 3) in a child that outlives the shim's first process;
# 2 s later (after the 1 s start timeout) that child publishes a result
# file in the job directory ($2), as the real shim does when its job ends.
fake_shim hang "(sleep 2; echo '{}' >\"\$2/result.json.tmp\"; mv \"\$2/result.json.tmp\" \"\$2/result.json\"; sleep 60) & echo \$! >$TMP/hang.pid; exit 0"
new_job hang 'echo never' 0 # no outputs tmpfs to unmount afterwards
dispatch hang
OCI_DRIVE_AWAIT_CHANGE=20 drive_fails ETIMEDOUT hang start "$TMP/hang.dispatch.json"
stderr_has "the runtime did not start the job within 1000 ms"
[ -s "$TMP/hang.pid" ] || fail "the hanging shim did not run"
stderr_has "no answer from the shim within the start timeout; it keeps the job and may still start it"
stderr_has "job_changed $(run_of hang)"
# The shim keeps the id: berthd's retry finds the job started, never starts it twice.
drive_ok hang start "$TMP/hang.dispatch.json"
[ "$(cat "$TMP/stdout")" = already ] || fail "a retry after the start timeout: $(cat "$TMP/stdout")"
kill "$(cat "$TMP/hang.pid")" 2>/dev/null || fail "the hanging shim's child was gone before start() returned"

fake_shim quiet "exit 0"
new_job quiet 'echo never' 0
dispatch quiet
drive_fails EIO quiet start "$TMP/quiet.dispatch.json"
stderr_has "the shim ended before starting the job; see $TMP/state-quiet/jobs/$(run_of quiet)/runtime.log"
