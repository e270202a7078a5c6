# test-berthd-contained-oci.sh -- real jobs on real runsc and crun, each in
# its own unit of a real systemd (docs/containment.md): berthd, runtime-oci
# bound to containment-systemd, the template unit and berth-contained, in
# the container systemd-lib.sh boots.
#
#   - a job on each runtime: its shim in the unit's "supervisor" group, its
#     sandbox in "payload", nothing of it in berthd's own unit; its result
#     recorded only after the unit is gone
#   - kill -9 of the shim mid-job, its payload ignoring SIGTERM: the unit is
#     fenced and drained, the job recorded failed (runtime_lost), no process
#     of it left
#   - the unit stopped by hand: the job is recorded failed (unit_stopped)
#   - kill -9 of berthd mid-job: the job runs on in its unit and its result
#     is recorded once after the restart; kill -9 of berthd and of the shim:
#     after the restart the unit is drained and the job recorded failed
#   - a contained job whose backend lost its containment across a restart
#     stays reaping until the containment is back
#   - a drop-in added to the template: the launch is refused and the job
#     fails (backend_refused), until the drop-in is removed
#   - "cgroup_limits": "required" (the default): the container delegates no
#     memory, pids or cpu controller, so a job fails before it runs
#     (cgroup_limits_unavailable); the other tests say "when_delegated"
#   - live qualification of both backends, the containment probes included
#     (contained-crun fails pids-limit here, as it must: nothing bounds a
#     native job's processes without a pids controller)
#
# berthd runs with the shipped berthd.service's file system sandboxing (a
# mount namespace of its own), and the jobs read an input and write a
# declared output, which berthd captures from the shim's copies.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh"      # skips (77) unless root
. "$BERTH_TOP_SRCDIR/tests/cli/systemd-lib.sh"
: "${BERTH_CONTAINMENT_PLUGIN_DIR:?}"

ct_boot
ct_install_template

# berthd and its clients run inside the container: its manager is PID 1 of
# their pid namespace, and its private network holds berthd's port.
curl() { ct /usr/bin/curl "$@"; }
CLIENT() { ct "$BERTHCTL" --config "$INST/client.json" "$@"; }
OCI_CONTAINED=1 OCI_EVIDENCE=1 oci_install contained-runsc contained-crun
add_pool crun contained-crun
# berthd runs with the file system sandboxing of the shipped berthd.service
# (conf/berthd.service.in): a mount namespace of its own, so that nothing a
# contained job needs may depend on berthd's mounts.  (Its /tmp stays the
# container's: the test's files are there.)
CT_BERTHD_PROPS=(-p ProtectSystem=strict -p ProtectHome=yes -p "ReadWritePaths=$TMP /sys/fs/cgroup"
    -p RuntimeDirectory=berth -p RuntimeDirectoryMode=0700 -p UMask=0077)

# The container's cgroup tree, seen from here: nspawn runs it in "payload".
SLICE="$CT_CGROUP/payload/system.slice/system-berth\\x2djob.slice"
unit_dir() { echo "$SLICE/berth-job@$1.service"; }
# procs RUN_ID GROUP: the pids (as seen here) in that group of the job's unit.
procs() { cat "$(unit_dir "$1")/$2/cgroup.procs" 2>/dev/null || :; }
# unit_gone RUN_ID: its unit holds no process (its group is gone or empty).
unit_gone() {
    local d
    d=$(unit_dir "$1")
    [ ! -d "$d" ] || grep -qx 'populated 0' "$d/cgroup.events"
}
# sole_supervisor RUN_ID: the one process of the job's supervisor group, its
# shim (the runtime's own commands after create run there too, briefly).
# Up to a minute: under ASan, and right after a restart of berthd (whose
# startup reconcile fences and drains units first), a start takes seconds.
sole_supervisor() {
    local p
    for _ in $(seq 1200); do
        p=$(procs "$1" supervisor)
        [ "$(echo $p | wc -w)" = 1 ] && { echo "$p"; return 0; }
        sleep 0.05
    done
    fail "the supervisor group of berth-job@$1.service holds '$p', not the shim alone"
}
# wait_procs RUN_ID GROUP: until that group of the job's unit holds a
# process (up to a minute, as sole_supervisor); the job is the one submit
# last sent ($SUBMITTED).
wait_procs() {
    for _ in $(seq 1200); do
        [ -n "$(procs "$1" "$2")" ] && return 0
        sleep 0.05
    done
    run_status_any CLIENT wait "$SUBMITTED" --timeout=10 --json
    fail "the $2 group of berth-job@$1.service never held a process; job $SUBMITTED: $(cat "$TMP/stdout")
--- berthd.log:
$(tail -n 40 "$TMP/berthd.log")"
}

ct_berthd
grep -qF "backend contained-runsc: containment plugin containment-systemd" "$TMP/berthd.log" ||
    fail "berthd did not bind containment-systemd: $(cat "$TMP/berthd.log")"
BERTHD_CG=$(ct systemctl show -P ControlGroup "berthd-test-$CT_BERTHD_N")

printf 'one\ntwo\nthree\n' >"$TMP/data.txt"
run 0 CLIENT evidence put "$TMP/data.txt" --media-type text/plain
REF=$(cat "$TMP/stdout")

# 1. A job on each runtime, with an input and a declared output: while it
# runs, its shim is the one process of its unit's supervisor group, its
# sandbox is in the payload group, and berthd's own unit holds berthd
# alone; its result, with the output captured, comes once the unit is gone.
for rt in runsc crun; do
    POOL=$([ $rt = runsc ] && echo default || echo crun) \
        bb_job "one-$rt" 'echo out; cat /proc/self/cgroup; sleep 3; wc -l </inputs/data.txt >/tmp/outputs/count; echo done'
    jq --argjson ref "$REF" '.inputs = [{path: "/inputs/data.txt", ref: $ref}] | .limits.artifact_bytes = 65536
        | .outputs = [{id: "count", path: "/tmp/outputs/count", media_type: "text/plain", max_bytes: 64}]' \
        "$TMP/one-$rt.job.json" >"$TMP/one-$rt.job.new"
    mv "$TMP/one-$rt.job.new" "$TMP/one-$rt.job.json"
    submit "one-$rt"
    [ "$(placed "one-$rt")" = "contained-$rt" ] || fail "one-$rt went to $(placed "one-$rt")"
    RUN=$RUN_ID
    wait_procs "$RUN" payload
    SUP=$(sole_supervisor "$RUN")
    tr '\0' ' ' <"/proc/$SUP/cmdline" | grep -q "berth-oci-shim contained $TMP/state-contained-$rt/jobs/$RUN" ||
        fail "the supervisor of $RUN is not its shim: $(tr '\0' ' ' <"/proc/$SUP/cmdline")"
    # runsc: its sandbox, gofer and their helpers; crun: the job's own processes.
    for p in $(procs "$RUN" payload); do
        case $rt in
        runsc) grep -qE '^(runsc|exe)' "/proc/$p/comm" || fail "payload process $p is $(cat "/proc/$p/comm")" ;;
        crun) grep -qxE 'sh|sleep' "/proc/$p/comm" || fail "payload process $p is $(cat "/proc/$p/comm")" ;;
        esac
    done
    [ "$(cat "$CT_CGROUP/payload$BERTHD_CG/cgroup.procs" | wc -l)" = 1 ] ||
        fail "berthd's unit holds more than berthd: $(cat "$CT_CGROUP/payload$BERTHD_CG/cgroup.procs")"
    finish "one-$rt"
    [ "$(result "one-$rt" .status)" = exited ] && [ "$(result "one-$rt" .exit_code)" = 0 ] ||
        fail "one-$rt: $(cat "$TMP/one-$rt.out/result.json")"
    grep -qx out "$TMP/one-$rt.out/stdout" && grep -qx done "$TMP/one-$rt.out/stdout" ||
        fail "one-$rt printed: $(cat "$TMP/one-$rt.out/stdout")"
    unit_gone "$RUN" || fail "berth-job@$RUN.service still holds processes after its result"
    [ "$(tr -d ' ' <"$TMP/one-$rt.out/outputs/count")" = 3 ] ||
        fail "one-$rt: the output is '$(cat "$TMP/one-$rt.out/outputs/count")'"
    run 0 "$BERTHCTL" result verify "$TMP/one-$rt.out/result.json" --pubkey "$INST/keys/receipt.pub" \
        --job "$TMP/one-$rt.job.json" --outputs "$TMP/one-$rt.out/outputs"
done
# crun's job sees its own cgroup: the unit's payload group.
grep -qxF "0::/system.slice/system-berth\\x2djob.slice/berth-job@$RUN.service/payload" "$TMP/one-crun.out/stdout" ||
    fail "the crun job did not run in its unit's payload group: $(cat "$TMP/one-crun.out/stdout")"
grep -q 'did not empty on its own' "$TMP/berthd.log" &&
    fail "a job's unit needed a fence after a normal end: $(cat "$TMP/berthd.log")"

# 1b. A process left in the unit when the shim has ended (here one started
# in the container, moved into the supervisor group, ignoring SIGTERM): the
# manager's stop does not end it, so no result is recorded until the unit
# is fenced and drained.
POOL=crun bb_job linger 'echo started; sleep 2'
submit linger
RUN=$RUN_ID
wait_procs "$RUN" payload
LONG=$((300000 + $$ % 50000 * 2))
ct setsid sh -c "trap '' TERM; exec sleep $LONG" </dev/null >/dev/null 2>&1 &
for _ in $(seq 100); do LEFT=$(pgrep -f "^sleep $LONG\$" || :); [ -n "$LEFT" ] && break; sleep 0.05; done
[ -n "$LEFT" ] || fail "the lingering process did not start"
echo "$LEFT" >"$(unit_dir "$RUN")/supervisor/cgroup.procs"
finish linger
kill -0 "$LEFT" 2>/dev/null && fail "the result came while process $LEFT was still in the unit"
[ "$(result linger .status)/$(result linger .exit_code)" = exited/0 ] ||
    fail "linger: $(cat "$TMP/linger.out/result.json")"
grep -q "job $RUN: its unit did not empty on its own" "$TMP/berthd.log" ||
    fail "berthd did not say it fenced the unit: $(cat "$TMP/berthd.log")"
unit_gone "$RUN" || fail "berth-job@$RUN.service still holds processes"

# start_held NAME POOL SCRIPT: submit a job that runs until killed; once its
# payload runs, RUN is its run id, SUP its shim and PAYLOAD its sandbox's pids.
start_held() {
    POOL=$2 bb_job "$1" "$3" 600000000000
    submit "$1"
    RUN=$RUN_ID
    wait_procs "$RUN" payload
    SUP=$(sole_supervisor "$RUN")
    PAYLOAD=$(procs "$RUN" payload)
}
# gone_for_good NAME: job NAME failed with runtime_lost, its unit is masked
# and empty, and no process of its payload is left.
gone_for_good() {
    finish "$1"
    [ "$(result "$1" .status)/$(result "$1" .reason)" = failed/runtime_lost ] ||
        fail "$1: $(cat "$TMP/$1.out/result.json")"
    unit_gone "$RUN" || fail "berth-job@$RUN.service still holds: $(procs "$RUN" payload) $(procs "$RUN" supervisor)"
    [ "$(ct systemctl is-enabled "berth-job@$RUN.service" || :)" = masked ] ||
        fail "berth-job@$RUN.service was not fenced"
    for p in $PAYLOAD; do
        kill -0 "$p" 2>/dev/null && fail "payload process $p of $1 survived ($(cat "/proc/$p/comm"))"
    done
    return 0
}
HOLD='trap "" TERM; (trap "" TERM; sleep 600) & echo up; sleep 600'

# 2. kill -9 of the shim mid-job (its payload forks and ignores SIGTERM):
# the manager stops the unit, berthd's next look finds no shim and no
# result, fences and drains the unit, and only then records the job failed.
for rt in runsc crun; do
    start_held "shim-$rt" "$([ $rt = runsc ] && echo default || echo crun)" "$HOLD"
    [ -n "$PAYLOAD" ] || fail "shim-$rt: no payload"
    kill -KILL "$SUP"
    gone_for_good "shim-$rt"
done
grep -q "job $RUN has no shim and no result: cleaning up" "$TMP/berthd.log" ||
    fail "berthd did not settle the job whose shim died: $(cat "$TMP/berthd.log")"

# 2b. A unit stopped by hand (as an operator, or a shutdown, would): the
# shim ends the job before the stop times out, and records it stopped.
start_held stopped crun "$HOLD"
run 0 ct systemctl stop "berth-job@$RUN.service"
finish stopped
[ "$(result stopped .status)/$(result stopped .reason)" = failed/unit_stopped ] ||
    fail "stopped: $(cat "$TMP/stopped.out/result.json")"
unit_gone "$RUN" || fail "berth-job@$RUN.service still holds processes"
for p in $PAYLOAD; do
    kill -0 "$p" 2>/dev/null && fail "payload process $p of the stopped job survived"
done

# 3. kill -9 of berthd mid-job: the job runs on in its unit (berthd's own
# unit is stopped with it, the job's is not), and after the restart its
# result is recorded, once.
POOL=default bb_job survive 'echo start; sleep 4; echo end'
submit survive
RUN=$RUN_ID
wait_procs "$RUN" payload
run 0 ct systemctl kill -s KILL "berthd-test-$CT_BERTHD_N"
for _ in $(seq 100); do
    [ "$(ct systemctl is-active "berthd-test-$CT_BERTHD_N" || :)" = active ] || break
    sleep 0.1
done
[ -n "$(procs "$RUN" supervisor)" ] || fail "the job's shim did not outlive berthd"
for _ in $(seq 300); do unit_gone "$RUN" && break; sleep 0.1; done
unit_gone "$RUN" || fail "the job did not end while berthd was down"
ct_berthd
finish survive
[ "$(result survive .status)/$(result survive .exit_code)" = exited/0 ] ||
    fail "survive: $(cat "$TMP/survive.out/result.json")"
[ "$(grep -c . "$TMP/survive.out/stdout")" = 2 ] && grep -qx end "$TMP/survive.out/stdout" ||
    fail "survive did not run exactly once: $(cat "$TMP/survive.out/stdout")"
[ "$(ct systemctl is-enabled "berth-job@$RUN.service" || :)" != masked ] ||
    fail "the unit of a job that ended on its own was fenced"

# ... and of berthd and the shim together: after the restart the job's
# unit is fenced and drained before the job is recorded failed.
start_held both default "$HOLD"
run 0 ct systemctl kill -s KILL "berthd-test-$CT_BERTHD_N"
kill -KILL "$SUP"
ct_berthd
gone_for_good both

# 3c. Whether a job runs in a unit is decided when it starts: a job started
# contained, whose backend lost its containment across a restart, is never
# recorded without the containment's proof (it stays reaping and the log
# says why), and is once the containment is back.
POOL=default bb_job moved 'sleep 3; echo end'
submit moved
RUN=$RUN_ID
wait_procs "$RUN" payload
ct_stop_berthd
cp "$INST/berthd.json" "$TMP/berthd.contained.json"
edit_config 'del(.backends["contained-runsc"].containment)'
ct_berthd
for _ in $(seq 300); do unit_gone "$RUN" && break; sleep 0.1; done
log_has "job $RUN was started in a unit of a containment this backend no longer has" 20 ||
    fail "berthd did not say why the job waits: $(cat "$TMP/berthd.log")"
# (logged as the teardown is found unproven; the move to reaping follows)
wait_state dev moved reaping
ct_stop_berthd
install -m 0600 "$TMP/berthd.contained.json" "$INST/berthd.json"
ct_berthd
finish moved
[ "$(result moved .status)/$(result moved .exit_code)" = exited/0 ] && grep -qx end "$TMP/moved.out/stdout" ||
    fail "moved: $(cat "$TMP/moved.out/result.json")"

# 4. A drop-in on the template: every launch is refused, with the reason,
# and the job fails without running; once it is removed, jobs run again.
ct sh -c "mkdir -p $UNITDIR/berth-job@.service.d && printf '[Service]\nEnvironment=SNEAKY=1\n' >$UNITDIR/berth-job@.service.d/override.conf"
run 0 ct systemctl daemon-reload
POOL=crun bb_job refused 'echo ran'
submit refused
finish refused
[ "$(result refused .status)/$(result refused .reason)" = failed/backend_refused ] ||
    fail "refused: $(cat "$TMP/refused.out/result.json")"
[ ! -s "$TMP/refused.out/stdout" ] || fail "the refused job ran: $(cat "$TMP/refused.out/stdout")"
grep -q "refused to start it: the containment refused the job's unit: berth-job@$RUN_ID.service has a drop-in" \
    "$TMP/berthd.log" || fail "berthd did not say why: $(cat "$TMP/berthd.log")"
run 0 ct rm -r "$UNITDIR/berth-job@.service.d"
run 0 ct systemctl daemon-reload
POOL=crun bb_job after 'echo ran'
submit after
finish after
[ "$(result after .status)" = exited ] && grep -qx ran "$TMP/after.out/stdout" ||
    fail "after: $(cat "$TMP/after.out/result.json")"

# ... and with "cgroup_limits": "required" (the default), a job whose unit
# got no controller to enforce its limits with fails before anything runs.
ct_stop_berthd
edit_config '.backends["contained-crun"].config |= del(.cgroup_limits)'
ct_berthd
POOL=crun bb_job strict 'echo ran'
submit strict
finish strict
[ "$(result strict .status)/$(result strict .reason)" = failed/cgroup_limits_unavailable ] ||
    fail "strict: $(cat "$TMP/strict.out/result.json")"
[ ! -s "$TMP/strict.out/stdout" ] || fail "the job ran without its limits: $(cat "$TMP/strict.out/stdout")"
ct_stop_berthd
edit_config '.backends["contained-crun"].config.cgroup_limits = "when_delegated"'

# 5. Live qualification of contained backends: the probes of every backend
# and the three of its containment (probes.h).  runsc qualifies.  crun does
# not, and must not: the container delegates no pids controller (cgroup v2
# there has none on this hybrid host), so nothing bounds a native job's
# processes, and the pids-limit probe says so; every other probe passes.
ALL="rootfs-read-only identity scratch-limit network pids-limit descendant-reaped cancel-kills-descendants
output-limit deadline inputs-read-only outputs-limit containment-payload containment-supervisor-lost containment-drain"
for rt in runsc crun; do
    SECONDS=0
    run_status_any ct "$BERTHCTL" qualify "contained-$rt" --berthd-config "$INST/berthd.json" --probe "${BERTH_PROBE:?}"
    echo "qualify contained-$rt (${SECONDS} s):"
    cat "$TMP/stdout" "$TMP/stderr"
    for p in $ALL; do
        if [ "$rt/$p" = crun/pids-limit ]; then
            grep -Eq "^  FAIL +pids-limit +exited \(exit code 1\): FAIL pids: forked 256 processes" "$TMP/stdout" ||
                fail "contained-crun: pids-limit did not fail as it must here: $(cat "$TMP/stdout")"
        else
            grep -Eq "^  pass +$p " "$TMP/stdout" || fail "contained-$rt: probe $p did not pass: $(cat "$TMP/stdout")"
        fi
    done
    grep -q "containment-payload *supervisor 1 process, payload [0-9]*; every process of the job is in /system.slice/system-berth" \
        "$TMP/stdout" || fail "containment-payload: $(grep containment-payload "$TMP/stdout")"
    [ $rt = crun ] || stdout_has "backend contained-runsc qualified: q"
done
echo "PASS: contained jobs on runsc and crun"
