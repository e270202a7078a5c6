# test-runtime-oci-warm.sh -- warm slots of the runtime-oci plugin (ABI 1.2,
# docs/warm-slots.md) on real runsc and real crun, driven through the core's
# loader without berthd: provision creates the container before the job
# exists; a claim runs the job's argv in it under the same deny-all spec a
# cold start gives (no capability, read-only root, no_new_privileges, the
# job's uid, outputs captured), with nothing of berth-slot-init left; a job
# that does not fit is refused and leaves the slot as it was, then runs cold;
# a slot whose sandbox dies while idle, or that retires, is reported lost,
# also while its ending shim still holds its lock;
# discard leaves no container, cgroup or directory behind.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root
. "$BERTH_TOP_SRCDIR/tests/cli/oci-drive-lib.sh"
: "${BERTH_OCI_DRIVE:?}" "${BERTH_SLOT_INIT:?}"

cleanup_mounts() {
    grep -o "$TMP/[^ ]*/outputs" /proc/self/mounts 2>/dev/null | while read -r m; do umount -l "$m"; done
    rm -rf "$TMP"
}
trap cleanup_mounts EXIT

"$BERTH_TOP_SRCDIR/tests/image/build-busybox-image.sh" "$TMP/bb" >"$TMP/bb.digest" 2>"$TMP/build.err" ||
    fail "building the busybox image failed: $(cat "$TMP/build.err")"
DIGEST=$(tail -n1 "$TMP/bb.digest")
mkdir -m 0700 "$TMP/store" "$TMP/stage"
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$TMP/store"
# One staged root, shared by every slot and job here (as berthd's root cache does).
"$BERTHCTL" image stage "$DIGEST" --store "$TMP/store" --out "$TMP/stage/rootfs" >/dev/null 2>&1 ||
    fail "staging the image"
chmod 0755 "$TMP/stage/rootfs"
ROOTFS=$TMP/stage/rootfs
oci_plugins
for be in runsc crun; do oci_config "$be"; done

hex32() { head -c16 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
LIMITS='{"cpu_millis": 1000, "memory_bytes": 268435456, "pids": 64, "scratch_bytes": 16777216,
         "wall_time_ns": 120000000000, "output_bytes": 65536, "artifact_bytes": 1048576}'
EFFECTIVE='{"pool_hash": "00", "template": {"env": {"GREETING": "warm"}, "root": "/workspace", "timeout_seconds": 600},
            "backend_override": null, "network_egress_class": "none", "credential_env": []}'

# new_slot NAME [NOT_AFTER_SECONDS] [LIMITS]: $TMP/NAME.slot.json, its id in $TMP/NAME.id
new_slot() {
    local id="s$(hex32)"
    echo "$id" >"$TMP/$1.id"
    jq -n --arg id "$id" --arg img "$DIGEST" --arg root "$ROOTFS" --argjson eff "$EFFECTIVE" \
        --argjson lim "${3:-$LIMITS}" --arg na "$(($(date +%s) + ${2:-300}))000000000" \
        '{schema_version: 1, slot_id: $id, pool: "default", image: $img, effective: $eff, limits: $lim,
          rootfs: $root, not_after: $na}' >"$TMP/$1.slot.json"
}
id_of() { cat "$TMP/$1.id"; }
# new_job NAME SCRIPT [LIMITS] [OUTPUTS]: $TMP/NAME.dispatch.json, its run id in $TMP/NAME.run
new_job() {
    local run="r$(hex32)"
    echo "$run" >"$TMP/$1.run"
    jq -n --arg run "$run" --arg dl "$(($(date +%s) + 120))000000000" --arg img "$DIGEST" --arg s "$2" \
        --argjson lim "${3:-$LIMITS}" --argjson outs "${4:-[]}" --arg root "$ROOTFS" --argjson eff "$EFFECTIVE" \
        '{schema_version: 1, receipt: {receipt: {run_id: $run, deadline: $dl}},
          job: {schema_version: 1, id: "j", pool: "default", image: $img, argv: ["/bin/sh", "-c", $s],
                inputs: [], outputs: $outs, limits: $lim},
          effective: $eff, rootfs: $root}' >"$TMP/$1.dispatch.json"
}
# discard_ok BACKEND NAME: discard the slot (its runtime.log on failure)
discard_ok() {
    drive "$1" discard "$(id_of "$2")" >"$TMP/stdout" 2>"$TMP/stderr" ||
        fail "$1: discard of slot $2: $(cat "$TMP/stderr"; tail -n 20 "$TMP/state-$1/slots/$(id_of "$2")/runtime.log")"
}
slot_state() {
    drive_ok "$1" slots
    jq -r --arg id "$(id_of "$2")" '.slots[] | select(.slot_id == $id) | .state + "/" + (.reason // "-")' "$TMP/stdout"
}
# runtime_has BACKEND ID: whether the runtime still keeps the container ID
runtime_has() {
    local root="$TMP/state-$1/root"
    [ -n "$(find "$root" -maxdepth 1 \( -name "$2" -o -name "$2_*" \) 2>/dev/null)" ]
}
cgroup_of() {
    local h
    h=$(printf '%s' "$TMP/state-$1" | sha256sum | cut -c1-16)
    echo "/sys/fs/cgroup/berth/$h/$2"
}

# What the job reports about itself: the same lines whether it ran cold or warm.
PROBE='echo "uid $(id -u)"
grep -q "^NoNewPrivs:[[:space:]]*1" /proc/self/status && echo "nnp on" || echo "nnp off"
grep "^CapEff:" /proc/self/status | tr -d "[:space:]"; echo
touch /rootfile 2>/dev/null && echo "root writable" || echo "root read-only"
echo "pid1 $(tr "\0" " " </proc/1/cmdline)"
echo "greeting $GREETING"
echo "cwd $(pwd)"
echo "args $0 $*"
echo report >/tmp/outputs/out.txt'
OUTS='[{"id": "out", "path": "/tmp/outputs/out.txt", "media_type": "text/plain", "max_bytes": 100}]'
want_probe() { # NAME BACKEND: the probe's lines, as a cold start gives them
    local out=$TMP/$1.out
    job_stdout "$1" >"$out"
    # gVisor's /proc/PID/status has no NoNewPrivs line; warm and cold are compared below.
    [ "$2" = runsc ] || grep -qx "nnp on" "$out" || fail "$1: no_new_privileges is off: $(cat "$out")"
    for line in "uid 65534" "CapEff:0000000000000000" "root read-only" "greeting warm" "cwd /workspace" \
        "args sh a b"; do
        grep -qx "$line" "$out" || fail "$1: no \"$line\": $(cat "$out")"
    done
    # pid 1 is the job's own shell (runsc, crun): berth-slot-init exec'ed it.
    grep -qx "pid1 /bin/sh -c .*" "$out" || fail "$1: pid 1 is not the job: $(grep pid1 "$out")"
    grep -q "berth-slot-init" "$out" && fail "$1: berth-slot-init is still there: $(cat "$out")"
    [ "$(inspected "$1" '.outputs[0].id + " " + .outputs[0].digest')" = "out sha256:$(printf 'report\n' | sha256sum | cut -d' ' -f1)" ] ||
        fail "$1: outputs: $(cat "$TMP/$1.inspect.json")"
}
PROBE_ARGV='["/bin/sh", "-c", $s, "sh", "a", "b"]'
probe_job() { # NAME: a job running PROBE with arguments
    new_job "$1" "$PROBE" "$LIMITS" "$OUTS"
    jq --arg s "$PROBE" ".job.argv = $PROBE_ARGV" "$TMP/$1.dispatch.json" >"$TMP/$1.d" && mv "$TMP/$1.d" "$TMP/$1.dispatch.json"
}

mkdir -m 0700 "$TMP/inputs"
printf x >"$TMP/inputs/0"
chmod 0444 "$TMP/inputs/0"
IN_SHA="sha256:$(printf x | sha256sum | cut -d' ' -f1)"

# --- hostile slot documents: refused, nothing created ---------------------
new_slot bad
jq '.extra = 1' "$TMP/bad.slot.json" >"$TMP/bad-extra.json"
drive_fails EBADMSG crun provision "$TMP/bad-extra.json"
stderr_has "extra"
jq '.slot_id = "r0123456789abcdef0123456789abcdef"' "$TMP/bad.slot.json" >"$TMP/bad-id.json"
drive_fails EBADMSG crun provision "$TMP/bad-id.json"
stderr_has 'slot_id must be "s" and 32 lowercase hex digits'
jq '.slot_id = "../../x"' "$TMP/bad.slot.json" >"$TMP/bad-path.json"
drive_fails EBADMSG crun provision "$TMP/bad-path.json"
jq '.not_after = "1000000000"' "$TMP/bad.slot.json" >"$TMP/bad-old.json"
drive_fails EBADMSG crun provision "$TMP/bad-old.json"
stderr_has "not_after has passed"
jq 'del(.limits.pids)' "$TMP/bad.slot.json" >"$TMP/bad-limits.json"
drive_fails EBADMSG crun provision "$TMP/bad-limits.json"
[ -z "$(ls "$TMP/state-crun/slots")" ] || fail "a refused provision left: $(ls "$TMP/state-crun/slots")"
# berth-slot-init takes its handoff from a socket only: a file (or a pipe,
# which others could open again through /proc) runs nothing.
set +e
printf 'x' | "$BERTH_SLOT_INIT" >"$TMP/init.out" 2>&1
st=$?
set -e
[ "$st" = 125 ] && grep -q "not a socket" "$TMP/init.out" || fail "berth-slot-init on a pipe: $st $(cat "$TMP/init.out")"
# An init anyone may replace is not bound into a container.
cp "$BERTH_SLOT_INIT" "$TMP/open-init"
chmod 0777 "$TMP/open-init"
jq --arg p "$TMP/open-init" '.slot_init = $p' "$TMP/crun.json" >"$TMP/crun-open.json"
run 1 "$BERTH_OCI_DRIVE" "$PLUGINS" runtime-oci.so crun "$TMP/crun-open.json" provision "$TMP/bad.slot.json"
grep -q "^EPERM: slot_init" "$TMP/stderr" || fail "an untrusted slot_init: $(cat "$TMP/stderr")"
new_job nosuch 'true'
drive_fails ENOENT crun claim "s$(hex32)" "$TMP/nosuch.dispatch.json"
stderr_has "no slot"

for be in runsc crun; do
    # --- a warm hit -----------------------------------------------------------
    new_slot "$be-a"
    drive_ok "$be" provision "$TMP/$be-a.slot.json"
    [ "$(slot_state "$be" "$be-a")" = "ready/-" ] || fail "$be: slot a: $(cat "$TMP/stdout")"
    jq -e --arg id "$(id_of "$be-a")" '.slots[] | select(.slot_id == $id) | (.provision_ns | tonumber) > 0' \
        "$TMP/stdout" >/dev/null || fail "$be: no provision_ns: $(cat "$TMP/stdout")"
    runtime_has "$be" "$(id_of "$be-a")" || fail "$be: the runtime keeps no container for slot a"
    # Started when provisioned: the claim runs no runtime command, and the
    # slot's init waits on its pipe (its stdin) for the job's argv.
    st=$("$be" --root "$TMP/state-$be/root" state "$(id_of "$be-a")" | jq -r .status)
    [ "$st" = running ] || fail "$be: a ready slot's container is $st, not running"
    probe_job "$be-hit"
    drive_ok "$be" claim "$(id_of "$be-a")" "$TMP/$be-hit.dispatch.json"
    [ "$(cat "$TMP/stdout")" = started ] || fail "$be: claim said $(cat "$TMP/stdout")"
    [ ! -e "$TMP/state-$be/slots/$(id_of "$be-a")" ] || fail "$be: the claimed slot's directory is still a slot"
    [ -d "$TMP/state-$be/jobs/$(run_of "$be-hit")" ] || fail "$be: the claimed job has no job directory"
    wait_job "$be" "$be-hit"
    [ "$(inspected "$be-hit" '.state + "/" + (.exit_code | tostring)')" = exited/0 ] ||
        fail "$be: warm job: $(cat "$TMP/$be-hit.inspect.json"; tail -n 20 "$TMP/state-$be/jobs/$(run_of "$be-hit")/runtime.log")"
    want_probe "$be-hit" "$be"
    # The same job cold: the same answers.
    probe_job "$be-cold"
    drive_ok "$be" start "$TMP/$be-cold.dispatch.json"
    wait_job "$be" "$be-cold"
    want_probe "$be-cold" "$be"
    diff <(grep -v '^pid1' "$TMP/$be-hit.out") <(grep -v '^pid1' "$TMP/$be-cold.out") >/dev/null ||
        fail "$be: warm and cold differ: $(diff "$TMP/$be-hit.out" "$TMP/$be-cold.out")"
    # A second claim of that job id: never run again (the slot is gone anyway).
    new_slot "$be-b"
    drive_ok "$be" provision "$TMP/$be-b.slot.json"
    drive_ok "$be" claim "$(id_of "$be-b")" "$TMP/$be-hit.dispatch.json"
    [ "$(cat "$TMP/stdout")" = already ] || fail "$be: a second claim said $(cat "$TMP/stdout")"
    [ "$(slot_state "$be" "$be-b")" = "ready/-" ] || fail "$be: an 'already' claim touched slot b"
    # Reap and forget of a job that ran warm: its container, named by the slot, is gone.
    drive_ok "$be" reap "$(run_of "$be-hit")"
    drive_ok "$be" forget "$(run_of "$be-hit")"
    runtime_has "$be" "$(id_of "$be-a")" && fail "$be: slot a's container outlived its job"
    [ ! -e "$(cgroup_of "$be" "$(id_of "$be-a")")" ] || fail "$be: slot a's cgroup outlived its job"

    # --- the handoff is the shim's alone ------------------------------------
    # A host process of the init's own uid (crun's init is a host process
    # running as the job's uid) can neither open the init's stdin again
    # through /proc (a socket, not a pipe) nor read its descriptors (the init
    # is not dumpable): it cannot put an argv of its own before the
    # claiming job's.  The claim below runs exactly that job.
    ipid=$(cat "$TMP/state-$be/slots/$(id_of "$be-b")/init.pid")
    iuid=$(awk '$1 == "Uid:" { print $2 }' "/proc/$ipid/status")
    if setpriv --reuid="$iuid" --regid="$iuid" --clear-groups sh -c \
        "printf '/bin/echo\\0injected\\0' >/proc/$ipid/fd/0" 2>/dev/null; then
        fail "$be: a process of uid $iuid wrote into slot b's handoff"
    fi
    # (On runsc the host process is runsc-sandbox, gVisor's; the init is inside it.)
    [ "$be" = runsc ] || ! setpriv --reuid="$iuid" --regid="$iuid" --clear-groups ls "/proc/$ipid/fd/" >/dev/null 2>&1 ||
        fail "$be: a process of uid $iuid lists the descriptors of slot b's init"

    # --- exit status, and a job that does not fit --------------------------
    new_job "$be-exit" 'echo out; echo err >&2; exit 7'
    drive_ok "$be" claim "$(id_of "$be-b")" "$TMP/$be-exit.dispatch.json"
    wait_job "$be" "$be-exit"
    [ "$(inspected "$be-exit" '.state + "/" + (.exit_code | tostring)')" = exited/7 ] ||
        fail "$be: $(cat "$TMP/$be-exit.inspect.json")"
    [ "$(job_stdout "$be-exit")" = out ] || fail "$be: stdout of the warm job: $(job_stdout "$be-exit")"
    # Slot b's id is its job's until that is reaped: no new slot may take it.
    drive_fails EEXIST "$be" provision "$TMP/$be-b.slot.json"
    stderr_has "is in use"
    [ -e "$TMP/state-$be/bundles/$(id_of "$be-b")/config.json" ] || fail "$be: a refused provision removed a job's bundle"
    new_slot "$be-c"
    drive_ok "$be" provision "$TMP/$be-c.slot.json"
    new_job "$be-big" 'echo cold' "$(jq -c '.memory_bytes = 134217728' <<<"$LIMITS")"
    drive_fails ESTALE "$be" claim "$(id_of "$be-c")" "$TMP/$be-big.dispatch.json"
    stderr_has "provisioned for another limits"
    chmod 0644 "$TMP/state-$be/slots/$(id_of "$be-c")/slot.json"
    drive_fails ESTALE "$be" claim "$(id_of "$be-c")" "$TMP/$be-big.dispatch.json"
    grep -q "is unreadable: .*slot.json" "$TMP/stderr" || fail "$be: an unreadable slot: $(cat "$TMP/stderr")"
    chmod 0600 "$TMP/state-$be/slots/$(id_of "$be-c")/slot.json"
    new_job "$be-egress" 'true'
    jq '.effective.network_egress_class = "loopback"' "$TMP/$be-egress.dispatch.json" >"$TMP/$be-egress.d" &&
        mv "$TMP/$be-egress.d" "$TMP/$be-egress.dispatch.json"
    drive_fails ESTALE "$be" claim "$(id_of "$be-c")" "$TMP/$be-egress.dispatch.json"
    stderr_has "another effective manifest"
    # Inputs are bound at create: a job with inputs never takes a slot.
    jq --arg d "$TMP/inputs" --arg sha "$IN_SHA" '.job.inputs = [{path: "/inputs/x", ref: {digest: $sha, size: 1}}] |
        .inputs_dir = $d' "$TMP/$be-exit.dispatch.json" >"$TMP/$be-in.dispatch.json"
    jq '.receipt.receipt.run_id = "r'"$(hex32)"'"' "$TMP/$be-in.dispatch.json" >"$TMP/$be-in.d" &&
        mv "$TMP/$be-in.d" "$TMP/$be-in.dispatch.json"
    drive_fails ESTALE "$be" claim "$(id_of "$be-c")" "$TMP/$be-in.dispatch.json"
    stderr_has "a job with inputs cannot run in a warm slot"
    [ ! -e "$TMP/state-$be/jobs/$(run_of "$be-big")" ] || fail "$be: a refused claim consumed the job id"
    [ "$(slot_state "$be" "$be-c")" = "ready/-" ] || fail "$be: a refused claim changed slot c"
    drive_ok "$be" start "$TMP/$be-big.dispatch.json" # the cold fallback
    wait_job "$be" "$be-big"
    [ "$(job_stdout "$be-big")" = cold ] || fail "$be: the cold fallback: $(cat "$TMP/$be-big.inspect.json")"
    discard_ok "$be" "$be-c"
    [ ! -e "$TMP/state-$be/slots/$(id_of "$be-c")" ] || fail "$be: discard left slot c's directory"
    runtime_has "$be" "$(id_of "$be-c")" && fail "$be: discard left slot c's container"
    [ ! -e "$(cgroup_of "$be" "$(id_of "$be-c")")" ] || fail "$be: discard left slot c's cgroup"
    drive_fails ENOENT "$be" discard "$(id_of "$be-c")"

    # --- one claim or discard at a time; a claim cut short -----------------
    new_slot "$be-f"
    drive_ok "$be" provision "$TMP/$be-f.slot.json"
    F=$TMP/state-$be/slots/$(id_of "$be-f")
    exec 8<"$F"
    flock -x 8
    new_job "$be-racing" 'true'
    drive_fails ESTALE "$be" claim "$(id_of "$be-f")" "$TMP/$be-racing.dispatch.json"
    stderr_has "is being claimed or discarded"
    drive_fails EBUSY "$be" discard "$(id_of "$be-f")"
    exec 8<&-
    [ ! -e "$TMP/state-$be/jobs/$(run_of "$be-racing")" ] || fail "$be: a refused claim consumed the job id"
    # A dispatch.json in a slot that was not renamed to its job (a claim
    # whose rename failed, or a forged one) is not acted on.
    install -m 0600 "$TMP/$be-racing.dispatch.json" "$F/dispatch.json"
    sleep 1
    [ "$(slot_state "$be" "$be-f")" = "ready/-" ] || fail "$be: a stray dispatch.json moved slot f: $(cat "$TMP/stdout")"
    st=$("$be" --root "$TMP/state-$be/root" state "$(id_of "$be-f")" | jq -r .status)
    [ "$st" = running ] && [ ! -s "$F/stdout" ] && [ ! -s "$F/stderr" ] ||
        fail "$be: a stray dispatch.json was handed over (the slot's container is $st)"
    # The plugin died between its rename (the job's tombstone) and "claim":
    # the shim finds the claim itself and runs the job.
    mv "$F" "$TMP/state-$be/jobs/$(run_of "$be-racing")"
    wait_job "$be" "$be-racing"
    [ "$(inspected "$be-racing" '.state + "/" + (.exit_code | tostring)')" = exited/0 ] ||
        fail "$be: a claim cut short: $(cat "$TMP/$be-racing.inspect.json")"
    drive_ok "$be" reap "$(run_of "$be-racing")"
    runtime_has "$be" "$(id_of "$be-f")" && fail "$be: slot f's container outlived its job"

    # --- a slot whose sandbox dies while idle, and one that retires --------
    new_slot "$be-d"
    drive_ok "$be" provision "$TMP/$be-d.slot.json"
    kill -9 "$(cat "$TMP/state-$be/slots/$(id_of "$be-d")/init.pid")"
    for _ in $(seq 1 100); do [ "$(slot_state "$be" "$be-d")" = "lost/slot_lost" ] && break; sleep 0.1; done
    [ "$(slot_state "$be" "$be-d")" = "lost/slot_lost" ] || fail "$be: a killed slot: $(cat "$TMP/stdout")"
    new_job "$be-late" 'true'
    drive_fails ESTALE "$be" claim "$(id_of "$be-d")" "$TMP/$be-late.dispatch.json"
    stderr_has "is not ready"
    # An ending slot: its result is written and its lock still held (as the
    # shim holds it until it exits).  It is lost all the same, and discard
    # waits for the lock instead of failing "being claimed" (the CI failure
    # of stop 30: berthd's discard right after the notification).
    D=$TMP/state-$be/slots/$(id_of "$be-d")
    rm -f "$TMP/locked" "$TMP/release"
    flock -x "$D" sh -c 'touch "$1/locked"; while [ ! -e "$1/release" ]; do sleep 0.05; done' holder "$TMP" &
    HOLDER=$!
    for _ in $(seq 1 100); do [ -e "$TMP/locked" ] && break; sleep 0.1; done
    [ -e "$TMP/locked" ] || fail "$be: could not take slot d's lock"
    [ "$(slot_state "$be" "$be-d")" = "lost/slot_lost" ] ||
        fail "$be: an ending slot (result written, lock held): $(cat "$TMP/stdout")"
    (sleep 0.2 && touch "$TMP/release") &
    discard_ok "$be" "$be-d"
    wait "$HOLDER"
    runtime_has "$be" "$(id_of "$be-d")" && fail "$be: slot d's container is still there"
    new_slot "$be-e" 4
    drive_ok "$be" provision "$TMP/$be-e.slot.json"
    # Too close to retiring: the job would fail instead of starting cold.
    new_job "$be-retiring" 'true'
    drive_fails ESTALE "$be" claim "$(id_of "$be-e")" "$TMP/$be-retiring.dispatch.json"
    stderr_has "retires within 5 s"
    for _ in $(seq 1 100); do [ "$(slot_state "$be" "$be-e")" = "lost/slot_expired" ] && break; sleep 0.1; done
    [ "$(slot_state "$be" "$be-e")" = "lost/slot_expired" ] || fail "$be: a retired slot: $(cat "$TMP/stdout")"
    discard_ok "$be" "$be-e"
    drive_ok "$be" slots
    [ "$(jq -c .slots "$TMP/stdout")" = "[]" ] || fail "$be: slots left: $(cat "$TMP/stdout")"
    [ -z "$(ls "$TMP/state-$be/slots")" ] || fail "$be: slot directories left: $(ls "$TMP/state-$be/slots")"
    for j in "$be-cold" "$be-exit" "$be-big"; do
        drive_ok "$be" reap "$(run_of "$j")"
    done
    [ -z "$(find "$TMP/state-$be/root" -mindepth 1 -maxdepth 1)" ] ||
        fail "$be: the runtime keeps containers: $(ls "$TMP/state-$be/root")"
done
# A state directory whose own path has a "slots" component: the shim still
# finds its claim (it once looked for the jobs directory in the wrong place).
mkdir -p "$TMP/slots/deep"
jq --arg d "$TMP/slots/deep/state-crun" '.state_directory = $d' "$TMP/crun.json" >"$TMP/deep.json"
new_slot deep-a
drive_ok deep provision "$TMP/deep-a.slot.json"
new_job deep-job 'echo deep'
drive_ok deep claim "$(id_of deep-a)" "$TMP/deep-job.dispatch.json"
drive_ok deep wait "$(run_of deep-job)" 30
cp "$TMP/stdout" "$TMP/deep-job.inspect.json"
[ "$(job_stdout deep-job)" = deep ] || fail "a claim under $TMP/slots/deep: $(cat "$TMP/deep-job.inspect.json")"
drive_ok deep reap "$(run_of deep-job)"
echo "ok"
