# test-runtime-oci.sh -- real jobs through the real berthd on the runtime-oci
# plugin, on real runsc (gVisor) and real crun: exit codes, stdout/stderr
# separation, the output bound, the deadline, cancel with descendants, a
# berthd restart while a job runs, and the runtime pin steering placement.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

oci_install runsc crun
add_pool native crun
add_pool gvisor runsc
trap '' QUIT # berthd and what it starts inherit an ignored SIGQUIT; jobs must not

# Hostile backend configurations: berthd --check refuses each with its reason.
bad_config() {
    jq "$1" "$INST/berthd.json" >"$TMP/bad.json"
    chmod 0600 "$TMP/bad.json"
    run 1 "$BERTHD" --config "$TMP/bad.json" --check
    stderr_has "$2"
}
bad_config '.backends.runsc.config.runtme = 1' 'unknown member'
bad_config '.backends.runsc.config.state_directory = "state"' 'state_directory must be an absolute, normalised path'
bad_config '.backends.runsc.config.state_directory = "/tmp/../etc"' 'state_directory must be an absolute, normalised path'
bad_config '.backends.runsc.config.runtime.mode = "0777"' 'lets group or others write the runtime'
bad_config '.backends.runsc.config.runtime.mode = "755"' 'runtime.mode must be four octal digits'
bad_config '.backends.runsc.config.runtime.sha256 = "sha256:XYZ"' 'runtime.sha256 must be sha256:<64 lowercase hex>'
bad_config '.backends.runsc.config.uid = 0' 'uid'
bad_config '.backends.runsc.config.isolation = "vm"' 'isolation must be "gvisor" or "native"'
bad_config '.backends.runsc.config.global_args = ["--root=/tmp/x"]' '--root is set by the plugin'
bad_config '.backends.runsc.config.global_args = [range(40) | "--debug"]' 'global_args must be at most 32 strings'
bad_config '.backends.runsc.config.shim = "/nonexistent/berth-oci-shim"' 'shim: /nonexistent/berth-oci-shim'
# Go's flag syntax: -root sets --root too.
bad_config '.backends.runsc.config.global_args = ["-root=/tmp/x"]' '--root is set by the plugin'
bad_config '.backends.runsc.config.state_directory = "/tmp/x/.."' 'state_directory must be an absolute, normalised path'
bad_config '.backends.runsc.config.state_directory = "/tmp//x"' 'state_directory must be an absolute, normalised path'
# Two backends cannot share one state directory (one runtime root, one jobs/).
bad_config ".backends.crun.config.state_directory = \"$TMP/state-runsc\"" 'is in use by another backend'
# The shim runs as root: it must be trusted like the runtime, and be berth-oci-shim.
cp "$BERTH_OCI_SHIM" "$TMP/open-shim"
chmod 0777 "$TMP/open-shim"
bad_config ".backends.runsc.config.shim = \"$TMP/open-shim\"" "$TMP/open-shim"
bad_config '.backends.runsc.config.shim = "/usr/bin/true"' 'is not berth-oci-shim'
# The runtime and the shim are checked with the directories above them: below
# a directory its group can write, either could be swapped.
mkdir -m 0775 "$TMP/group-writable"
chmod 0775 "$TMP/group-writable"
install -m 0755 /usr/bin/crun "$TMP/group-writable/crun"
cp "$BERTH_OCI_SHIM" "$TMP/group-writable/berth-oci-shim"
bad_config ".backends.crun.config.runtime = $(pin_json "$TMP/group-writable/crun")" \
    "backend crun would get no work: runtime: $TMP/group-writable (above $TMP/group-writable/crun) has mode 0775"
bad_config ".backends.runsc.config.shim = \"$TMP/group-writable/berth-oci-shim\"" \
    "$TMP/group-writable (above $TMP/group-writable/berth-oci-shim) has mode 0775"
# A runtime that fails its pin: berthd --check says which backend would get no work.
bad_config '.backends.runsc.config.runtime.size = 1' "backend runsc would get no work: runtime /usr/bin/runsc is $(stat -c %s /usr/bin/runsc) bytes; its pin says 1"
bad_config '.backends.runsc.config.runtime.path = "/usr/bin/nonexistent-runtime"' 'backend runsc would get no work'
# berthd inherits a descriptor from its parent (as from a careless service
# manager or shell); no shim, runtime process or gofer of a job may hold it.
exec 7>"$TMP/inherited-descriptor"
start_berthd
exec 7>&-
grep -q "backend runsc: plugin runtime-oci" "$TMP/berthd.log" || fail "berthd did not load runsc: $(cat "$TMP/berthd.log")"
# Backends running without qualification (development) say so to clients.
run 0 CLIENT capabilities --json
jq -e '.backends.runsc.require_qualification == false and .backends.runsc.qualification == "unqualified" and
       .backends.runsc.isolation == "gvisor" and (.backends.runsc.runtime.sha256 | startswith("sha256:"))' \
    "$TMP/stdout" >/dev/null || fail "capabilities: $(cat "$TMP/stdout")"
# The version is what the pinned binary itself says (run from the checked
# descriptor, as /proc/self/fd/3, not by path).
for b in runsc crun; do
    want=$("/usr/bin/$b" --version | head -n1)
    [ "$(jq -r ".backends.$b.runtime.version" "$TMP/stdout")" = "$want" ] ||
        fail "capabilities: $b version $(jq -r ".backends.$b.runtime.version" "$TMP/stdout"), not $want"
done

# no_process PATTERN: nothing on the host matches PATTERN (a job's processes,
# or its gVisor sandbox).
no_process() {
    local i
    for i in $(seq 1 300); do
        pgrep -f -- "$1" >/dev/null || return 0
        sleep 0.1
    done
    fail "processes matching '$1' remain after 30 s: $(pgrep -af -- "$1")"
}

# no_container BACKEND RUN_ID: once the job is reaped (wait_reaped), the
# runtime no longer knows the container.
no_container() {
    wait_reaped "$1" "$2"
    local rt=(runsc --root "$TMP/state-runsc/root")
    [ "$1" = crun ] && rt=(crun --root "$TMP/state-crun/root")
    if "${rt[@]}" state "$2" >/dev/null 2>&1; then
        fail "$1 still has container $2"
    fi
    [ -z "$(state_records "$1" "$2")" ] || fail "$1 still keeps a state record of $2: $(state_records "$1" "$2")"
}

# state_records BACKEND RUN_ID: the entries of the runtime's --root that the
# shim takes for the container's state record (plugins/runtime-oci/runstate.h:
# named RUN_ID, or starting with RUN_ID_), one per line.
state_records() {
    find "$TMP/state-$1/root" -mindepth 1 -maxdepth 1 \( -name "$2" -o -name "$2_*" \) -printf '%f\n' 2>/dev/null
}

# Sleep durations unique to this run, so that no other test's process matches.
LATE=$((100000 + $$ % 50000 * 2))
CANCEL=$((LATE + 1))

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
    # berthd removes the job's stage directory once the runtime's reap returned.
    for _ in $(seq 1 300); do [ -e "$INST/state/stage/$RUN_ID" ] || break; sleep 0.1; done
    [ ! -e "$INST/state/stage/$RUN_ID" ] || fail "$be: the staged rootfs of $RUN_ID was not removed"

    # The job gets default signal handling, whatever berthd's parent ignored
    # (berthd was started with SIGQUIT ignored, see "trap" above).  Visible on
    # a native runtime, where the kernel's /proc shows it; gVisor's guest
    # processes start with the Sentry's own dispositions.
    if [ "$be" = crun ]; then
        bb_job "$be-signals" 'grep SigIgn /proc/self/status; true' # (busybox sh -c with one command execs it with SIGQUIT ignored)
        submit "$be-signals"
        finish "$be-signals"
        ign=$(awk '{ print $2 }' "$TMP/$be-signals.out/stdout")
        [ -n "$ign" ] && [ $((0x$ign & 0x4)) = 0 ] ||
            fail "$be: SIGQUIT, ignored by berthd's parent, is ignored in the job: SigIgn $ign"
    fi

    # Exit status 0.
    bb_job "$be-zero" 'test -r /etc/passwd'
    submit "$be-zero"
    finish "$be-zero"
    [ "$(result "$be-zero" .status)/$(result "$be-zero" .exit_code)" = exited/0 ] ||
        fail "$be: zero: $(cat "$TMP/$be-zero.out/result.json")"

    # A fast job's output in full, more than a pipe holds (200,000 bytes).
    bb_job "$be-bulk" 'head -c 200000 /dev/zero | tr "\\0" x' 60000000000 1048576
    submit "$be-bulk"
    finish "$be-bulk"
    [ "$(result "$be-bulk" .status)/$(result "$be-bulk" .exit_code)" = exited/0 ] ||
        fail "$be: bulk: $(cat "$TMP/$be-bulk.out/result.json")"
    [ "$(stat -c %s "$TMP/$be-bulk.out/stdout")" = 200000 ] ||
        fail "$be: bulk: kept $(stat -c %s "$TMP/$be-bulk.out/stdout") of 200000 bytes"
    [ "$(tr -d x <"$TMP/$be-bulk.out/stdout" | wc -c)" = 0 ] || fail "$be: bulk: the output is not all x"

    # Output over the bound: cut at 1000 bytes in all, killed, failed output_limit.
    bb_job "$be-flood" 'echo start >&2; while :; do echo 0123456789012345678901234567890123456789; done' 60000000000 1000
    submit "$be-flood"
    finish "$be-flood"
    [ "$(result "$be-flood" .status)/$(result "$be-flood" .reason)" = failed/output_limit ] ||
        fail "$be: flood: $(cat "$TMP/$be-flood.out/result.json")"
    total=$(($(stat -c %s "$TMP/$be-flood.out/stdout") + $(stat -c %s "$TMP/$be-flood.out/stderr")))
    [ "$total" = 1000 ] || fail "$be: flood kept $total bytes of output, expected exactly 1000"
    no_container "$be" "$RUN_ID"

    # The deadline kills a job that ignores SIGTERM, and its descendant.
    bb_job "$be-late" "trap '' TERM; sleep $LATE & sleep $LATE; echo never" 3000000000
    submit "$be-late"
    finish "$be-late"
    [ "$(result "$be-late" .status)" = expired ] || fail "$be: late: $(cat "$TMP/$be-late.out/result.json")"
    grep -q never "$TMP/$be-late.out/stdout" && fail "$be: the job outlived its deadline"
    no_process "sleep $LATE"
    no_process "$RUN_ID"
    no_container "$be" "$RUN_ID"

    # Cancel stops the job and a detached descendant.
    bb_job "$be-cancel" "(setsid sleep $CANCEL &) ; sleep $CANCEL; echo never"
    submit "$be-cancel"
    wait_state dev "$be-cancel" running
    # Every process of the job on the host (shim, runtime, gofer, sandbox):
    # none holds what berthd inherited.
    pids=$(pgrep -f -- "$RUN_ID") || fail "$be: no host process of the running job $RUN_ID"
    for pid in $pids; do
        if ls -l "/proc/$pid/fd" 2>/dev/null | grep -qF "$TMP/inherited-descriptor"; then
            fail "$be: pid $pid ($(tr '\0' ' ' <"/proc/$pid/cmdline")) holds berthd's inherited descriptor"
        fi
    done
    # While it runs, the runtime answers `state` and keeps the record the
    # shim looks for after delete instead of running `state` again.
    "${be}" --root "$TMP/state-$be/root" state "$RUN_ID" >/dev/null 2>&1 || fail "$be: no state of running $RUN_ID"
    [ -n "$(state_records "$be" "$RUN_ID")" ] ||
        fail "$be: no state record of running $RUN_ID in: $(ls "$TMP/state-$be/root")"
    run 0 CLIENT cancel "$be-cancel"
    finish "$be-cancel"
    [ "$(result "$be-cancel" .status)" = cancelled ] || fail "$be: cancel: $(cat "$TMP/$be-cancel.out/result.json")"
    no_process "sleep $CANCEL"
    no_process "$RUN_ID"
    no_container "$be" "$RUN_ID"
done
unset POOL

# A job that ends inside its deadline keeps its own outcome even when berthd
# only looks after the deadline (it was down): exited 0, not expired.
POOL=native bb_job intime 'sleep 1; echo ok' 10000000000
submit intime
wait_state dev intime running
kill_berthd
sleep 11 # past the deadline
start_berthd
finish intime
[ "$(result intime .status)/$(result intime .exit_code)" = exited/0 ] ||
    fail "a job that exited in time was recorded $(result intime .status): $(cat "$TMP/intime.out/result.json")"

# A deadline that passes before the job can start: expired.
bb_job tooshort 'true' 1000000
submit tooshort
finish tooshort
[ "$(result tooshort .status)" = expired ] || fail "tooshort: $(cat "$TMP/tooshort.out/result.json")"

# The shim runs the runtime it checked: replacing the file at the pinned path
# while a job runs changes nothing for that job (the wrapper never runs).
install -m 0755 /usr/bin/crun "$TMP/crun-pinned"
stop_berthd
edit_config '.backends.crun.config.runtime = $pin' --argjson pin "$(pin_json "$TMP/crun-pinned")"
start_berthd
POOL=native bb_job swapped 'sleep 2; echo done'
submit swapped
wait_state dev swapped running
printf '#!/bin/sh\necho "$@" >>%s/wrapper.log\nexec /usr/bin/crun "$@"\n' "$TMP" >"$TMP/crun-wrapper"
chmod 0755 "$TMP/crun-wrapper"
mv "$TMP/crun-wrapper" "$TMP/crun-pinned"
finish swapped
[ "$(result swapped .status)/$(cat "$TMP/swapped.out/stdout")" = exited/done ] ||
    fail "swapped: $(cat "$TMP/swapped.out/result.json")"
[ ! -e "$TMP/wrapper.log" ] || fail "the shim ran the replaced runtime: $(cat "$TMP/wrapper.log")"
no_container crun "$RUN_ID"
# ... and the swapped binary gets no new work.
POOL=native bb_job after-swap 'true'
run 1 CLIENT submit "$TMP/after-swap.job.json"
stderr_has "no_backend"

# A shim killed while its job runs: the next inspect finds its lock free, kills
# and deletes the container, and the job fails with runtime_lost.
bb_job orphan "sleep $((CANCEL + 1)); echo never"
submit orphan
wait_state dev orphan running
shim=$(pgrep -f "oci-shim supervise .*$RUN_ID") || fail "no shim supervises $RUN_ID"
kill -KILL $shim
finish orphan
[ "$(result orphan .status)/$(result orphan .reason)" = failed/runtime_lost ] ||
    fail "orphan: $(cat "$TMP/orphan.out/result.json")"
no_process "sleep $((CANCEL + 1))"
no_process "$RUN_ID"
no_container runsc "$RUN_ID"

# The shim itself: usage errors, and a job directory that start() left
# before it wrote shim.json is settled as start_interrupted.
run 2 "$BERTH_OCI_SHIM"
stderr_has "usage: berth-oci-shim supervise|provision|cleanup|contained JOBDIR"
run 2 "$BERTH_OCI_SHIM" supervise relative/dir
mkdir -m 0700 "$TMP/interrupted"
run 0 "$BERTH_OCI_SHIM" cleanup "$TMP/interrupted"
[ "$(jq -r '.state + "/" + .reason' "$TMP/interrupted/result.json")" = failed/start_interrupted ] ||
    fail "interrupted start: $(cat "$TMP/interrupted/result.json")"

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
edit_config '.backends.crun.config.runtime = $crun |
    .backends.runsc.config.runtime.sha256 = "sha256:0000000000000000000000000000000000000000000000000000000000000000"' \
    --argjson crun "$(pin_json /usr/bin/crun)"
start_berthd
grep -q "runtime /usr/bin/runsc has digest" "$TMP/berthd.log" || fail "berthd did not log the pin mismatch"
bb_job pinned 'echo on-crun'
submit pinned
[ "$(placed pinned)" = crun ] || fail "with runsc's pin broken the job went to $(placed pinned)"
finish pinned
[ "$(cat "$TMP/pinned.out/stdout")" = on-crun ] || fail "pinned: $(cat "$TMP/pinned.out/result.json")"
# crun ran from the sealed copy berthd holds for the backend.  Held open for
# writing (root can, though its mode is 0555), that copy can be executed by
# nobody (ETXTBSY): the shim runs the checked file instead, and jobs run.
copy=
for fd in /proc/"$BERTHD_PID"/fd/*; do
    [ "$(readlink "$fd")" = "/memfd:crun (deleted)" ] && copy=$fd
done
[ -n "$copy" ] || fail "berthd holds no sealed copy of crun: $(ls -l /proc/"$BERTHD_PID"/fd)"
[ "$(stat -L -c %a "$copy")" = 555 ] || fail "the sealed copy of crun has mode $(stat -L -c %a "$copy")"
exec 8<>"$copy"
POOL=native bb_job busy-copy 'sleep 2; echo ran'
submit busy-copy
wait_state dev busy-copy running
grep -q "the sealed copy of /usr/bin/crun cannot be executed (Text file busy); running the checked file" \
    "$TMP/state-crun/jobs/$RUN_ID/runtime.log" ||
    fail "busy-copy: the shim did not say why it ran the file: $(cat "$TMP/state-crun/jobs/$RUN_ID/runtime.log")"
finish busy-copy
exec 8>&-
[ "$(result busy-copy .status)/$(cat "$TMP/busy-copy.out/stdout")" = exited/ran ] ||
    fail "busy-copy: $(cat "$TMP/busy-copy.out/result.json")"
POOL=gvisor bb_job only-runsc 'true'
run 1 CLIENT submit "$TMP/only-runsc.job.json"
stderr_has "no_backend"
stop_berthd
