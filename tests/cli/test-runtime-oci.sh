# test-runtime-oci.sh -- real jobs through the real berthd on the runtime-oci
# plugin, on real runsc (gVisor) and real crun: exit codes, stdout/stderr
# separation, the output bound, the deadline, cancel with descendants, a
# berthd restart while a job runs, and the runtime pin steering placement.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: OCI runtimes need root"
    exit 77
fi
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh"

oci_install runsc crun
add_pool native crun
add_pool gvisor runsc
start_berthd
grep -q "backend runsc: plugin runtime-oci" "$TMP/berthd.log" || fail "berthd did not load runsc: $(cat "$TMP/berthd.log")"

# no_process PATTERN: nothing on the host matches PATTERN (a job's processes,
# or its gVisor sandbox).
no_process() {
    local i
    for i in $(seq 1 100); do
        pgrep -f -- "$1" >/dev/null || return 0
        sleep 0.1
    done
    fail "processes matching '$1' remain: $(pgrep -af -- "$1")"
}

# no_container BACKEND RUN_ID: the runtime no longer knows the container.
no_container() {
    local rt=(runsc --root "$TMP/state-runsc/root")
    [ "$1" = crun ] && rt=(crun --root "$TMP/state-crun/root")
    if "${rt[@]}" state "$2" >/dev/null 2>&1; then
        fail "$1 still has container $2"
    fi
}

for POOL in default native; do
    export POOL
    be=runsc
    [ "$POOL" = native ] && be=crun

    # Exit status 3, stdout and stderr apart, the guest identity.
    bb_job "$be-three" 'echo hello; echo err >&2; id -u; exit 3'
    submit "$be-three"
    [ "$(placed "$be-three")" = "$be" ] || fail "pool $POOL placed on $(placed "$be-three"), expected $be"
    finish "$be-three"
    [ "$(result "$be-three" .status)" = exited ] || fail "$be: status $(result "$be-three" .status)"
    [ "$(result "$be-three" .exit_code)" = 3 ] || fail "$be: exit code $(result "$be-three" .exit_code)"
    [ "$(cat "$TMP/$be-three.out/stdout")" = "hello
65534" ] || fail "$be: stdout: $(cat "$TMP/$be-three.out/stdout")"
    [ "$(cat "$TMP/$be-three.out/stderr")" = err ] || fail "$be: stderr: $(cat "$TMP/$be-three.out/stderr")"
    [ "$(result "$be-three" .started_at)" != null ] || fail "$be: no started_at"
    no_container "$be" "$RUN_ID"
    [ ! -e "$INST/state/stage/$RUN_ID" ] || fail "$be: the staged rootfs of $RUN_ID was not removed"
    [ "$(ls "$TMP/state-$be/jobs/$RUN_ID")" = reaped ] ||
        fail "$be: the job directory was not reaped to its tombstone: $(ls "$TMP/state-$be/jobs/$RUN_ID")"

    # Exit status 0.
    bb_job "$be-zero" 'test -r /etc/passwd'
    submit "$be-zero"
    finish "$be-zero"
    [ "$(result "$be-zero" .status)/$(result "$be-zero" .exit_code)" = exited/0 ] ||
        fail "$be: zero: $(cat "$TMP/$be-zero.out/result.json")"

    # Output over the bound: cut at 1000 bytes in all, killed, failed output_limit.
    bb_job "$be-flood" 'echo start >&2; while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done' 60000000000 1000
    submit "$be-flood"
    finish "$be-flood"
    [ "$(result "$be-flood" .status)/$(result "$be-flood" .reason)" = failed/output_limit ] ||
        fail "$be: flood: $(cat "$TMP/$be-flood.out/result.json")"
    total=$(($(stat -c %s "$TMP/$be-flood.out/stdout") + $(stat -c %s "$TMP/$be-flood.out/stderr")))
    [ "$total" = 1000 ] || fail "$be: flood kept $total bytes of output, expected exactly 1000"
    no_container "$be" "$RUN_ID"

    # The deadline kills a job that ignores SIGTERM, and its descendant.
    bb_job "$be-late" "trap '' TERM; sleep 7311 & sleep 7311; echo never" 3000000000
    submit "$be-late"
    finish "$be-late"
    [ "$(result "$be-late" .status)" = expired ] || fail "$be: late: $(cat "$TMP/$be-late.out/result.json")"
    grep -q never "$TMP/$be-late.out/stdout" && fail "$be: the job outlived its deadline"
    no_process "sleep 7311"
    no_process "$RUN_ID"
    no_container "$be" "$RUN_ID"

    # Cancel stops the job and a detached descendant.
    bb_job "$be-cancel" "(setsid sleep 7312 &) ; sleep 7312; echo never"
    submit "$be-cancel"
    wait_state dev "$be-cancel" running
    run 0 CLIENT cancel "$be-cancel"
    finish "$be-cancel"
    [ "$(result "$be-cancel" .status)" = cancelled ] || fail "$be: cancel: $(cat "$TMP/$be-cancel.out/result.json")"
    no_process "sleep 7312"
    no_process "$RUN_ID"
    no_container "$be" "$RUN_ID"
done
unset POOL

# berthd killed while a job runs: the job goes on under its shim, and after the
# restart its result is recorded exactly once.
bb_job restart 'sleep 3; echo done'
submit restart
wait_state dev restart running
kill_berthd
sleep 4
start_berthd
finish restart
[ "$(result restart .status)/$(result restart .exit_code)" = exited/0 ] ||
    fail "restart: $(cat "$TMP/restart.out/result.json")"
[ "$(cat "$TMP/restart.out/stdout")" = done ] || fail "restart: stdout $(cat "$TMP/restart.out/stdout")"
n=$(grep -c "job restart run $RUN_ID of dev: .* -> exited" "$TMP/berthd.log" || true)
[ "$n" = 1 ] || fail "restart: the result was recorded $n times in this run's log"

# A runtime that no longer matches its pin gets no work: [runsc, crun] places
# on crun, [runsc] alone is refused with no_backend.
stop_berthd
jq '.backends.runsc.config.runtime.sha256 = "sha256:0000000000000000000000000000000000000000000000000000000000000000"' \
    "$INST/berthd.json" >"$INST/berthd.json.new"
chmod 0600 "$INST/berthd.json.new"
mv "$INST/berthd.json.new" "$INST/berthd.json"
start_berthd
grep -q "runtime /usr/bin/runsc has digest" "$TMP/berthd.log" || fail "berthd did not log the pin mismatch"
bb_job pinned 'echo on-crun'
submit pinned
[ "$(placed pinned)" = crun ] || fail "with runsc's pin broken the job went to $(placed pinned)"
finish pinned
[ "$(cat "$TMP/pinned.out/stdout")" = on-crun ] || fail "pinned: $(cat "$TMP/pinned.out/result.json")"
POOL=gvisor bb_job only-runsc 'true'
run 1 CLIENT submit "$TMP/only-runsc.job.json"
stderr_has "no_backend"
stop_berthd
