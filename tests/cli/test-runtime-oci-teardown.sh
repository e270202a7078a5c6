# test-runtime-oci-teardown.sh -- issue 15 on real runsc (gVisor) and real
# crun through the real berthd: a runtime process killed under a running job
# ends it failed/runtime_lost, and a burst of fast gVisor jobs (whose
# sandboxes end before the shim looks at its children) ends exited/0 every
# time; a job over its memory limit on crun ends
# exited/oom; a teardown that cannot be proven (a process of the test's own
# kept in the job's cgroup) keeps the job reaping until the process is gone;
# a receipt signed by another key is refused by runtime-oci and by the shim,
# and nothing is created.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root
command -v runsc >/dev/null || { echo "SKIP: runsc is not installed"; exit 77; }
command -v crun >/dev/null || { echo "SKIP: crun is not installed"; exit 77; }
[ -d /sys/fs/cgroup/memory ] && [ -d /sys/fs/cgroup/freezer ] ||
    { echo "SKIP: needs the cgroup v1 memory and freezer hierarchies (as runsc uses them here)"; exit 77; }

oci_install runsc crun
add_pool native crun
add_pool gvisor runsc
start_berthd

# A sleep duration unique to this run, so that no other test's process matches.
LONG=$((200000 + $$ % 50000 * 2))

# job_cgroup BACKEND RUN_ID: the job's cgroupsPath (plugins/runtime-oci/cgroup.h).
job_cgroup() {
    echo "/berth/$(printf %s "$TMP/state-$1" | sha256sum | cut -c1-16)/$2"
}

# wait_for_state ID STATE [TRIES]: poll `berthctl inspect` (0.1 s apart) until ID is in STATE.
wait_for_state() {
    local i
    for i in $(seq 1 "${3:-600}"); do
        run_status_any CLIENT inspect "$1" --json
        [ "$(jq -r .state "$TMP/stdout" 2>/dev/null)" = "$2" ] && return 0
        sleep 0.1
    done
    fail "job $1 never reached $2: $(cat "$TMP/stdout" "$TMP/stderr")"
}

# --- kill -9 runsc-sandbox, then runsc-gofer, of a running job ---------------
export POOL=gvisor
for victim in runsc-sandbox runsc-gofer; do
    bb_job "kill-$victim" "sleep $LONG; echo never"
    submit "kill-$victim"
    wait_state dev "kill-$victim" running
    pid=
    for i in $(seq 1 100); do
        pid=$(pgrep -f "^$victim .*$RUN_ID" | head -n1)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || fail "no $victim runs for $RUN_ID: $(pgrep -af runsc)"
    kill -KILL "$pid"
    finish "kill-$victim"
    [ "$(result "kill-$victim" .status)/$(result "kill-$victim" .reason)" = failed/runtime_lost ] ||
        fail "kill $victim: $(cat "$TMP/kill-$victim.out/result.json")"
    [ "$(result "kill-$victim" .exit_code)" = null ] ||
        fail "kill $victim: the sandbox's status is reported as the job's: $(result "kill-$victim" .exit_code)"
    for i in $(seq 1 100); do
        pgrep -f "sleep $LONG" >/dev/null || break
        sleep 0.1
    done
    sandbox_gone "$RUN_ID"
done

# --- a burst of fast gVisor jobs: each one's end is the job's own -----------
# A sandbox that ends before the shim has looked at its children hands the
# shim gVisor's ptrace stubs (they are in the sandbox's session), which die
# with it: they are not the runtime's helpers, and their deaths are no
# runtime_lost.  Forty /bin/true jobs, eight queued at a time, load the two
# CPUs so that many sandboxes end that early (a stub taken for a helper
# turned about one job in a hundred into runtime_lost; children.h).
for round in $(seq 1 5); do
    for k in $(seq 1 8); do
        bb_job "burst-$round-$k" 'true'
        submit "burst-$round-$k"
    done
    for k in $(seq 1 8); do
        finish "burst-$round-$k"
        [ "$(result "burst-$round-$k" .status)/$(result "burst-$round-$k" .exit_code)/$(result "burst-$round-$k" .reason)" = \
            exited/0/null ] || fail "burst-$round-$k: $(cat "$TMP/burst-$round-$k.out/result.json")"
    done
done

# The job's own death by SIGKILL inside gVisor is the job's: exited 137, no reason.
bb_job self-kill 'kill -9 $$'
submit self-kill
finish self-kill
[ "$(result self-kill .status)/$(result self-kill .exit_code)/$(result self-kill .reason)" = exited/137/null ] ||
    fail "self-kill: $(cat "$TMP/self-kill.out/result.json")"

# --- crun: over the memory limit -> exited/oom ------------------------------
POOL=native
bb_job oom 'head -c 268435456 /dev/zero | tail -c 268435456 >/dev/null && echo survived'
jq '.limits.memory_bytes = 33554432' "$TMP/oom.job.json" >"$TMP/oom.tmp" && mv "$TMP/oom.tmp" "$TMP/oom.job.json"
submit oom
finish oom
[ "$(result oom .status)/$(result oom .reason)" = exited/oom ] || fail "oom: $(cat "$TMP/oom.out/result.json")"
[ "$(cat "$TMP/oom.out/stdout")" != survived ] || fail "oom: the job was not limited"
# A job that stays within its limit has no reason.
bb_job no-oom 'head -c 1048576 /dev/zero | tail -c 1048576 >/dev/null; echo fine'
submit no-oom
finish no-oom
[ "$(result no-oom .status)/$(result no-oom .reason)/$(cat "$TMP/no-oom.out/stdout")" = exited/null/fine ] ||
    fail "no-oom: $(cat "$TMP/no-oom.out/result.json")"

# --- a teardown that cannot be proven ----------------------------------------
# A process of the test's own joins the job's memory cgroup and is frozen in a
# freezer cgroup of the test's own (a frozen task does not die of SIGKILL
# until it is thawed), so the runtime's delete and the plugin's drain cannot
# empty the group: the job must stay reaping, with no result, until the test
# thaws (and so releases) it.
POOL=gvisor
FRZ=/sys/fs/cgroup/freezer/berth-test-$$
keeper=
release() {
    [ -d "$FRZ" ] || return 0
    [ -n "$keeper" ] && kill -KILL "$keeper" 2>/dev/null
    echo THAWED >"$FRZ/freezer.state" 2>/dev/null
    for i in $(seq 1 50); do rmdir "$FRZ" 2>/dev/null && break; sleep 0.1; done
}
trap 'release; cleanup_berthd' EXIT
bb_job unproven 'sleep 2; echo done'
submit unproven
wait_state dev unproven running
cg=/sys/fs/cgroup/memory$(job_cgroup runsc "$RUN_ID")
[ -d "$cg" ] || fail "the job's memory cgroup $cg does not exist: $(ls /sys/fs/cgroup/memory/berth/*)"
sleep "$((LONG + 1))" &
keeper=$!
echo "$keeper" >"$cg/cgroup.procs"
mkdir "$FRZ"
echo "$keeper" >"$FRZ/cgroup.procs"
echo FROZEN >"$FRZ/freezer.state"
wait_for_state unproven reaping
api dev GET /metrics
grep -q '^berth_jobs{state="reaping"} 1$' "$TMP/body" || fail "metrics: $(grep berth_jobs "$TMP/body")"
# Still reaping a while later: the plugin keeps saying the teardown is not proven.
sleep 5
run 0 CLIENT inspect unproven --json
[ "$(jq -r .state "$TMP/stdout")" = reaping ] || fail "unproven: $(cat "$TMP/stdout")"
log_has "job unproven run $RUN_ID: teardown not proven" || fail "berthd did not log the unproven teardown"
grep -q "cgroup /sys/fs/cgroup/memory/berth/.*/$RUN_ID still holds 1 process (pid $keeper)" "$TMP/berthd.log" ||
    fail "berthd did not say what is left: $(grep "$RUN_ID" "$TMP/berthd.log" | tail -n 3)"
# Released: the job becomes terminal with its own outcome, and its group is gone.
release
finish unproven
[ "$(result unproven .status)/$(result unproven .exit_code)/$(cat "$TMP/unproven.out/stdout")" = exited/0/done ] ||
    fail "unproven: $(cat "$TMP/unproven.out/result.json")"
[ ! -e "$cg" ] || fail "the job's cgroup $cg is left"

# --- the result before delete; a shim killed during that teardown -----------
# A job that declares no outputs gets its result once its processes are gone
# (the runtime's helpers reaped, its cgroup drained), before the runtime's
# `delete`, which only removes runsc's record of the container.  The test
# holds that record's lock (runsc takes it for delete), so delete blocks:
# the result must be recorded all the same.  berthd's reap right after the
# result waits 10 s for the shim and fails; it is owed, and asked again
# with backoff.  Then the shim is killed in the middle of that teardown
# (with its blocked delete): the next reap finds its "teardown" marker,
# finishes the teardown with `berth-oci-shim cleanup`, and runsc keeps no
# record of the container.
POOL=gvisor
bb_job early 'sleep 2; echo early'
submit early
wait_state dev early running
RROOT=$TMP/state-runsc/root # the plugin's --root for runsc
LOCKF=$RROOT/${RUN_ID}_sandbox:${RUN_ID}.lock
[ -f "$LOCKF" ] || fail "runsc keeps no lock file $LOCKF: $(ls "$RROOT")"
flock -o -x "$LOCKF" sleep 120 & # -o: flock itself holds the lock, not the sleep
holder=$!
finish early
[ "$(result early .status)/$(result early .exit_code)/$(cat "$TMP/early.out/stdout")" = exited/0/early ] ||
    fail "early: $(cat "$TMP/early.out/result.json")"
JOBDIR=$TMP/state-runsc/jobs/$RUN_ID
[ -e "$JOBDIR/teardown" ] || fail "the result was recorded, but the shim is not in its teardown: $(ls "$JOBDIR")"
shim=$(pgrep -f "berth-oci-shim (supervise|provision) .*$RUN_ID" | head -n1)
[ -n "$shim" ] || fail "no shim of $RUN_ID runs while its delete is blocked: $(pgrep -af berth-oci-shim)"
# The shim starts its delete after it wrote the result: poll for it.
for _ in $(seq 1 300); do
    deleter=$(pgrep -f "runsc .*delete --force $RUN_ID" | head -n1)
    [ -n "$deleter" ] && break
    sleep 0.1
done
[ -n "$deleter" ] || fail "no blocked runsc delete of $RUN_ID: $(pgrep -af runsc)"
log_has "job early run $RUN_ID: backend runsc reap failed, will retry with backoff" 30 ||
    fail "the reap after the result did not fail while the shim was held: $(grep "$RUN_ID" "$TMP/berthd.log" | tail -n 3)"
[ -e "$JOBDIR/teardown" ] && [ ! -e "$JOBDIR/reaped" ] || fail "the held job was reaped: $(ls "$JOBDIR")"
kill -KILL "$shim" "$deleter"
kill "$holder"
wait "$holder" 2>/dev/null || :
log_has "job $RUN_ID: its shim ended during the teardown: finishing it" 30 ||
    fail "berthd did not finish the teardown: $(grep "$RUN_ID" "$TMP/berthd.log" | tail -n 3)"
for i in $(seq 1 300); do
    [ -e "$JOBDIR/reaped" ] && break
    sleep 0.1
done
[ -e "$JOBDIR/reaped" ] || fail "the job was not reaped after the cleanup: $(ls "$JOBDIR")"
! ls "$RROOT" | grep -q "^${RUN_ID}_" || fail "runsc still keeps a record of $RUN_ID: $(ls "$RROOT")"

# --- a runtime helper that dies as the sandbox ends ----------------------------
# A killed runsc-gofer closes its files (and so ends its sandbox) before
# its other threads have exited and the kernel lets the shim reap it: the
# shim may reap the sandbox first.  tests/tools/runtime-helper-wrap gives
# real runsc one more helper whose death the test decides; its job ends on
# its own with 137, as a guest killed by the runtime would, and the helper
# is killed only once the shim has reaped the sandbox.
#  - "-exiting": the helper had begun to exit when the sandbox ended (its
#    main thread gone, a second one waiting): the runtime's death, failed
#    with runtime_lost and no exit code.
#  - plain: the helper was healthy when the sandbox ended, and was killed
#    after it (as a unit stopped after its job ended kills the gofer): the
#    job's own end stands, exited 137.
: "${BERTH_RUNTIME_WRAP:?BERTH_RUNTIME_WRAP must point at tests/tools/runtime-helper-wrap}"
[ -x /usr/bin/runsc ] || fail "runtime-helper-wrap runs /usr/bin/runsc, which is not there (runsc is $(command -v runsc))"
cp "$INST/berthd.json" "$TMP/berthd.plain.json"
# helper_dies_late NAME VARIANT SEALED: run job NAME under the wrapper
# installed as $TMP/runsc-wrapVARIANT, with the backend's sealed_copy set to
# SEALED; kill its helper once the sandbox is reaped.
helper_dies_late() {
    local name=$1 wrap=$TMP/runsc-wrap$2 jobdir helper init i want exe copy_ino fd
    install -m 0755 "$BERTH_RUNTIME_WRAP" "$wrap"
    stop_berthd
    install -m 0600 "$TMP/berthd.plain.json" "$INST/berthd.json"
    edit_config '.backends.runsc.config.runtime = $pin | .backends.runsc.config.sealed_copy = $sealed' \
        --argjson pin "$(pin_json "$wrap")" --argjson sealed "$3"
    start_berthd
    POOL=gvisor bb_job "$name" "sleep 5; exit 137"
    submit "$name"
    jobdir=$TMP/state-runsc/jobs/$RUN_ID
    for i in $(seq 1 600); do
        helper=$(cat "$jobdir/init.pid.helper" 2>/dev/null || :)
        init=$(cat "$jobdir/init.pid" 2>/dev/null || :)
        [ -n "$helper" ] && [ -n "$init" ] && break
        sleep 0.1
    done
    [ -n "$helper" ] && [ -n "$init" ] || fail "$name: no helper ($helper) or init ($init): $(ls "$jobdir")"
    LEFT="${LEFT:-} $helper"
    # A runtime this small ran from a sealed copy of its pinned bytes,
    # named after it (F_SEAL_SEAL|SHRINK|GROW|WRITE = 15), unless the
    # backend says "sealed_copy": false; then from its file (no seals).
    want="/memfd:runsc-wrap$2 (deleted) seals=15"
    [ "$3" = true ] || want="$wrap seals=-1"
    exe=$(cat "$jobdir/init.pid.exe")
    [ "${exe% ino=*}" = "$want" ] || fail "$name: the runtime ran from $exe, not $want"
    # The copy is the one berthd made for the backend and holds for every
    # job's shim (no shim copied or hashed the runtime itself).
    if [ "$3" = true ]; then
        copy_ino=
        for fd in /proc/"$BERTHD_PID"/fd/*; do
            [ "$(readlink "$fd")" = "/memfd:runsc-wrap$2 (deleted)" ] && copy_ino=$(stat -L -c %i "$fd")
        done
        [ -n "$copy_ino" ] || fail "$name: berthd holds no sealed copy of runsc-wrap$2: $(ls -l /proc/"$BERTHD_PID"/fd)"
        [ "${exe##* ino=}" = "$copy_ino" ] ||
            fail "$name: the runtime ran from another copy (inode ${exe##* ino=}) than berthd's ($copy_ino)"
    fi
    tail -n +1 -F "$jobdir/runtime.log" >"$TMP/$name.shim.log" 2>/dev/null &
    TAILS="${TAILS:-} $!"
    # kill -0 answers for a zombie too: this waits until the shim reaped it.
    for i in $(seq 1 3000); do
        kill -0 "$init" 2>/dev/null || break
        sleep 0.02
    done
    ! kill -0 "$init" 2>/dev/null || fail "$name: the sandbox ($init) was not reaped"
    kill -KILL "$helper"
    finish "$name"
}
# (the helpers, should the test stop early, and the log readers go too)
trap 'kill -KILL $LEFT $TAILS 2>/dev/null; release; cleanup_berthd' EXIT
helper_dies_late dying-helper -exiting true
[ "$(result dying-helper .status)/$(result dying-helper .reason)/$(result dying-helper .exit_code)" = \
    failed/runtime_lost/null ] || fail "a helper dying with the sandbox: $(cat "$TMP/dying-helper.out/result.json")"
grep -q "ended (signal 9) as the sandbox ended: the sandbox is lost" "$TMP/dying-helper.shim.log" ||
    fail "the shim did not judge the helper's death: $(cat "$TMP/dying-helper.shim.log")"
helper_dies_late healthy-helper "" false
[ "$(result healthy-helper .status)/$(result healthy-helper .exit_code)" = exited/137 ] ||
    fail "a helper killed after the job's own end: $(cat "$TMP/healthy-helper.out/result.json")"
stop_berthd
install -m 0600 "$TMP/berthd.plain.json" "$INST/berthd.json"
start_berthd

# --- a receipt signed by another key ------------------------------------------
run 0 "$BERTHCTL" keygen --out "$TMP/other.key" --json
other=$(jq -r .public_key "$TMP/stdout")
# The shim, driven directly: a real receipt (signed by berthd) against a
# shim.json whose broker key is another one.  Nothing is created.
bb_job forged 'echo ran'
submit forged
finish forged
J=$TMP/forged-job
mkdir -m 0700 "$J" "$J/bundle" "$TMP/forged-root"
mkfifo -m 0600 "$J/control"
echo '{}' >"$J/bundle/config.json"
jq -n --slurpfile r "$TMP/forged.receipt.json" --slurpfile j "$TMP/forged.job.json" \
    '{schema_version: 1, receipt: $r[0], job: $j[0], effective: {}, rootfs: "/nonexistent"}' >"$J/dispatch.json"
jq -n --arg id "$RUN_ID" --arg b "$J/bundle" --arg root "$TMP/forged-root" --argjson pin "$(pin_json /usr/bin/runsc)" \
    --arg key "$other" --arg dl "$(($(date +%s) + 60))000000000" \
    '{id: $id, bundle: $b, runtime: [$pin.path, "--root", $root, "--network=none", "--platform=ptrace"],
      pin: {sha256: $pin.sha256, size: $pin.size, mode: ($pin.mode | ltrimstr("0") | tonumber)},
      deadline_ns: $dl, output_bytes: 65536, isolation: "gvisor", broker_public_key: $key,
      bundle_params: {}}' >"$J/shim.json"
# mode: an integer holding the permission bits (0755 = 493)
jq '.pin.mode = 493' "$J/shim.json" >"$J/shim.tmp" && mv "$J/shim.tmp" "$J/shim.json"
chmod 0600 "$J"/*.json "$J/bundle/config.json"
# It is also handed a "sealed copy" of the runtime, made for its pin, that
# is none (a plain file on the descriptor BERTH_OCI_RUNTIME_FD names): it
# says so and does not take it.
run 0 env BERTH_OCI_RUNTIME_FD="4 $(jq -r .pin.sha256 "$J/shim.json")" "$BERTH_OCI_SHIM" supervise "$J" \
    3>"$TMP/forged.sync" 4<"$J/shim.json"
for i in $(seq 1 100); do [ -e "$J/result.json" ] && break; sleep 0.1; done
[ "$(jq -r '.state + "/" + .reason' "$J/result.json")" = failed/receipt_rejected ] ||
    fail "forged: $(cat "$J/result.json" "$J/runtime.log")"
grep -q "refusing the job before create: receipt rejected (broker_public_key)" "$J/runtime.log" ||
    fail "forged: $(cat "$J/runtime.log")"
grep -q "not taking the runtime's sealed copy from BERTH_OCI_RUNTIME_FD: the copy of the runtime is not sealed" \
    "$J/runtime.log" || fail "forged: the shim took a plain file for the runtime's sealed copy: $(cat "$J/runtime.log")"
[ ! -e "$J/init.pid" ] || fail "forged: the shim ran create"
[ -z "$(ls -A "$TMP/forged-root")" ] || fail "forged: the runtime has state: $(ls -A "$TMP/forged-root")"
# The same shim with berthd's key accepts the receipt and goes on to compare
# config.json with the spec rebuilt from the sealed job, which differs here.
rm -f "$J/result.json" "$J/runtime.log"
jq --arg k "$(jq -r .broker_public_key "$INST/client.json")" \
    '.broker_public_key = $k | .bundle_params = {uid: 65534, gid: 65534, nproc: 64, pids_ceiling: 4096,
      outputs_dir: "/nonexistent", cgroups_path: "/berth/test"}' "$J/shim.json" >"$J/shim.tmp"
mv "$J/shim.tmp" "$J/shim.json"
chmod 0600 "$J/shim.json"
jq '.effective = {template: {env: {}, root: "/", timeout_seconds: 600}, network_egress_class: "none",
      credential_env: []}' "$J/dispatch.json" >"$J/d.tmp" && mv "$J/d.tmp" "$J/dispatch.json"
chmod 0600 "$J/dispatch.json"
# Its "sealed copy" this time was made for another pin (as one handed over
# by a berthd whose pin changed since this job started): not taken either.
other_pin=sha256:$(printf '%064d' 0)
run 0 env BERTH_OCI_RUNTIME_FD="4 $other_pin" "$BERTH_OCI_SHIM" supervise "$J" 3>"$TMP/forged.sync" 4<"$J/shim.json"
for i in $(seq 1 100); do [ -e "$J/result.json" ] && break; sleep 0.1; done
[ "$(jq -r '.state + "/" + .reason' "$J/result.json")" = failed/config_mismatch ] ||
    fail "mismatch: $(cat "$J/result.json" "$J/runtime.log")"
[ ! -e "$J/init.pid" ] || fail "mismatch: the shim ran create"
grep -qF "not taking the runtime's sealed copy from BERTH_OCI_RUNTIME_FD: it was made for $other_pin; this job's pin says" \
    "$J/runtime.log" || fail "mismatch: the shim took a copy made for another pin: $(cat "$J/runtime.log")"

# The plugin, through berthd: a backend whose broker_public_key is another
# key refuses every dispatch before it creates anything.
stop_berthd
edit_config '.backends.runsc.config.broker_public_key = $k' --arg k "$other"
start_berthd
bb_job refused 'echo never'
submit refused
finish refused
[ "$(result refused .status)/$(result refused .reason)" = failed/start_refused ] ||
    fail "refused: $(cat "$TMP/refused.out/result.json")"
log_has "receipt rejected \(broker_public_key\)" || fail "berthd did not log the rejected receipt"
[ ! -e "$TMP/state-runsc/jobs/$RUN_ID" ] || fail "refused: the plugin created $TMP/state-runsc/jobs/$RUN_ID"
stop_berthd
