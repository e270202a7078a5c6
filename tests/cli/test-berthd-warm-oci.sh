# test-berthd-warm-oci.sh -- warm slots through the real berthd
# (docs/warm-slots.md), runtime-oci on real runsc and crun, the busybox image
# built here:
#
# - berthd keeps min_ready slots per warm target and refills after a claim;
# - a job of the target's shape runs in a slot: the same deny-all answers as
#   cold (uid, capabilities, read-only root, pid 1 is the job), and its
#   signed result names the slot and its provisioning time; a job of
#   another shape runs cold and its result has no "warm";
# - a pool update between provisioning and claim quarantines the slot with a
#   chained pool.warm_quarantine naming both hashes, and the job runs cold;
#   the slots that follow are of the new manifest and warm again;
# - a slot whose sandbox was killed while idle is replaced, berthd told by
#   the slot's notification (not the reconcile timer);
# - a runtime replaced under its pin: the claim quarantines the slot
#   (reason "runtime") and the job does not run;
# - slots count against their pool's max_concurrency and yield to its jobs;
# - kill -9 berthd with 4 ready slots: after the restart none of them is
#   left (directory, bundle, container, cgroup) and new ones are made;
# - "berthctl pool verify" re-derives every attach and quarantine;
# - /metrics counts hits, misses and quarantines; "berthctl pool show" and
#   /metrics show each warm target's slots and counts;
# - a bad "warm" configuration is refused at start-up, naming the member.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

# A failing run's slots outlive its berthd by design: end their shims too.
trap 'cleanup_berthd; pkill -KILL -f "berth-oci-shim provision $TMP/" 2>/dev/null || true' EXIT

oci_install runsc crun
add_pool on-runsc runsc
add_pool on-crun crun
LIMITS='{"cpu_millis": 1000, "memory_bytes": 268435456, "pids": 64, "scratch_bytes": 16777216,
         "wall_time_ns": 60000000000, "output_bytes": 65536, "artifact_bytes": 0}'

# --- a bad warm configuration is refused, naming the member -----------------
cp "$INST/berthd.json" "$TMP/berthd.good.json"
edit_config '.warm = {pools: {"on-crun": [{image: $d, limits: $l, min_ready: 3, max_ready: 1}]}}' \
    --arg d "$DIGEST" --argjson l "$LIMITS"
try_start_berthd && fail "berthd started with max_ready below min_ready"
grep -q "config.warm.pools.on-crun\[0\].max_ready must not be below min_ready" "$TMP/berthd.log" ||
    fail "no clear refusal: $(cat "$TMP/berthd.log")"
edit_config '.warm = {pools: {"on-crun": [{image: $d, limits: ($l | del(.pids)), min_ready: 1}]}}' \
    --arg d "$DIGEST" --argjson l "$LIMITS"
try_start_berthd && fail "berthd started with a warm target lacking a limit"
grep -q "config.warm.pools.on-crun\[0\].limits" "$TMP/berthd.log" || fail "no clear refusal: $(cat "$TMP/berthd.log")"
edit_config '.warm = {spare: 1}'
try_start_berthd && fail "berthd started with an unknown warm member"
grep -q "spare" "$TMP/berthd.log" || fail "no clear refusal: $(cat "$TMP/berthd.log")"
cp "$TMP/berthd.good.json" "$INST/berthd.json"

edit_config '.warm = {max_slots: 8, pools: {"on-runsc": [{image: $d, limits: $l, min_ready: 2}],
                                           "on-crun": [{image: $d, limits: $l, min_ready: 2}]}}' \
    --arg d "$DIGEST" --argjson l "$LIMITS"
start_berthd

# ready_slots BACKEND: the ids of the backend's ready slots, one per line.
ready_slots() {
    local d
    for d in "$TMP/state-$1"/slots/s*; do
        [ -f "$d/ready.json" ] && basename "$d"
    done 2>/dev/null || true
}
# wait_ready BACKEND N: until the backend holds N ready slots (30 s at most).
wait_ready() {
    local deadline=$((SECONDS + 30))
    until [ "$(ready_slots "$1" | wc -l)" = "$2" ]; do
        [ "$SECONDS" -lt "$deadline" ] ||
            fail "$1 holds $(ready_slots "$1" | wc -l) ready slots, not $2: $(grep -i slot "$TMP/berthd.log" | tail -n 5)"
        sleep 0.1
    done
}
# metric NAME: its value in /metrics.
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v n="$1" '$1 == n { print $2 }' "$TMP/body"
}
# cgroup_of BACKEND ID: the cgroup runtime-oci gives container ID.
cgroup_of() {
    echo "/sys/fs/cgroup/berth/$(printf '%s' "$TMP/state-$1" | sha256sum | cut -c1-16)/$2"
}
# gone BACKEND ID: nothing of slot ID is left: directory, bundle, container, cgroup.
gone() {
    [ ! -e "$TMP/state-$1/slots/$2" ] || fail "$1: slot $2's directory is left"
    [ ! -e "$TMP/state-$1/bundles/$2" ] || fail "$1: slot $2's bundle is left"
    [ -z "$(find "$TMP/state-$1/root" -maxdepth 1 \( -name "$2" -o -name "$2_*" \) 2>/dev/null)" ] ||
        fail "$1: slot $2's container is left"
    [ ! -e "$(cgroup_of "$1" "$2")" ] || fail "$1: slot $2's cgroup is left"
}

# destroyed BACKEND ID: wait (30 s at most) until slot ID's directory is gone, then gone.
destroyed() {
    local deadline=$((SECONDS + 30))
    while [ -e "$TMP/state-$1/slots/$2" ]; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$1: slot $2 was never destroyed"
        sleep 0.1
    done
    gone "$1" "$2"
}

PROBE='echo "uid $(id -u)"
grep "^CapEff:" /proc/self/status | tr -d "[:space:]"; echo
touch /rootfile 2>/dev/null && echo "root writable" || echo "root read-only"
echo "pid1 $(tr "\0" " " </proc/1/cmdline)"'
want_probe() { # ID: the deny-all answers, warm or cold
    local line
    for line in "uid 65534" "CapEff:0000000000000000" "root read-only" "pid1 /bin/sh -c $PROBE"; do
        grep -qxF -- "$line" "$TMP/$1.out/stdout" || fail "$1: no \"$line\" in: $(cat "$TMP/$1.out/stdout")"
    done
}

wait_ready runsc 2
wait_ready crun 2
# A slot is ready (ready.json) a moment before berthd counts it provisioned.
for _ in $(seq 1 300); do [ "$(metric berth_warm_provisioned_total)" = 4 ] && break; sleep 0.1; done
[ "$(metric berth_warm_provisioned_total)" = 4 ] || fail "provisioned: $(metric berth_warm_provisioned_total)"

# --- a warm hit on each runtime, and a refill ------------------------------
for be in runsc crun; do
    before=$(ready_slots "$be")
    POOL=on-$be bb_job "warm-$be" "$PROBE"
    submit "warm-$be"
    finish "warm-$be"
    [ "$(result "warm-$be" .status)" = exited ] || fail "warm-$be: $(jq -c .result "$TMP/warm-$be.out/result.json")"
    want_probe "warm-$be"
    slot=$(result "warm-$be" .warm.slot_id)
    grep -qxF "$slot" <<<"$before" || fail "warm-$be ran in $slot, not one of the ready slots: $before"
    [ "$(result "warm-$be" .warm.provision_ns)" -gt 0 ] || fail "warm-$be: no provisioning time"
    [ "$(result "warm-$be" .warm.slot_hash | wc -c)" = 65 ] || fail "warm-$be: no slot hash"
    wait_ready "$be" 2
    ready_slots "$be" | grep -qxF "$slot" && fail "$be: slot $slot is ready again after its job"
    log_has "job warm-$be run r[0-9a-f]* of dev: claimed -> running \(warm\)" || fail "no warm start logged"
done
[ "$(metric berth_warm_hits_total)" = 2 ] || fail "hits: $(metric berth_warm_hits_total)"

# --- another shape runs cold: no slot is used --------------------------------
before=$(ready_slots crun)
POOL=on-crun bb_job cold-shape "$PROBE" 30000000000
submit cold-shape
finish cold-shape
[ "$(result cold-shape .warm)" = null ] || fail "a job of another shape ran warm: $(result cold-shape .warm)"
want_probe cold-shape
[ "$(ready_slots crun)" = "$before" ] || fail "a cold job of another shape changed the slots"

# --- pool show and /metrics, per warm target ---------------------------------
wait_ready crun 2
run 0 CLIENT --json pool show on-crun
jq -e --arg d "$DIGEST" '.warm | length == 1 and .[0].image == $d and .[0].min_ready == 2 and
        .[0].max_ready >= 2 and .[0].slots == {ready: 2, provisioning: 0, claiming: 0} and .[0].hits == 1 and
        .[0].misses == 0 and .[0].quarantined == 0 and .[0].provisioned == 3 and .[0].limits.pids == 64' \
    "$TMP/stdout" >/dev/null || fail "pool show on-crun: $(jq -c .warm "$TMP/stdout")"
run 0 CLIENT --json pool show default
[ "$(jq 'has("warm")' "$TMP/stdout")" = false ] || fail "a pool without warm targets shows warm slots"
labels="pool=\"on-crun\",image=\"$DIGEST\""
[ "$(metric "berth_warm_target_events_total{$labels,event=\"hit\"}")" = 1 ] || fail "no hit counted for on-crun"
[ "$(metric "berth_warm_slots{$labels,state=\"ready\"}")" = 2 ] || fail "ready slots of on-crun not 2"
[ "$(metric "berth_warm_slots{$labels,state=\"provisioning\"}")" = 0 ] || fail "on-crun provisioning"

# --- a pool update: the old manifest's slots are quarantined --------------
# Either the job's claim finds only old slots (the attach check quarantines
# one and the job runs cold) or the next pass has retired them first (and
# the job runs cold or in a slot of the new manifest); either way each old
# slot gets a chained pool.warm_quarantine naming both hashes and is
# destroyed, and no job runs in a slot of the old manifest.
old=$(ready_slots crun)
jq '.template.env += {"GREETING": "updated"}' "$INST/pools/on-crun.json" >"$TMP/on-crun-2.json"
run 0 CLIENT pool register "$TMP/on-crun-2.json"
POOL=on-crun bb_job after-update "$PROBE; echo \"greeting \$GREETING\""
submit after-update
finish after-update
[ "$(result after-update .status)" = exited ] || fail "after-update: $(jq -c .result "$TMP/after-update.out/result.json")"
grep -qx "greeting updated" "$TMP/after-update.out/stdout" || fail "not the updated pool: $(cat "$TMP/after-update.out/stdout")"
want_probe after-update
if [ "$(result after-update .warm)" != null ]; then
    grep -qxF "$(result after-update .warm.slot_id)" <<<"$old" && fail "a job ran in a slot of the old manifest"
fi
for qslot in $old; do
    destroyed crun "$qslot"
    api dev GET /v1/audit
    expect_status 200
    q=$(grep '"type":"pool.warm_quarantine"' "$TMP/body" | grep -F "\"slot_id\":\"$qslot\"" | tail -n 1)
    [ -n "$q" ] || fail "no pool.warm_quarantine for the old slot $qslot"
    [ "$(jq -r .details.reason <<<"$q")" = manifest ] || fail "quarantine reason: $q"
    [ "$(jq -r '.details.slot_hash != .details.dispatch_hash' <<<"$q")" = true ] || fail "the hashes are equal: $q"
done
new_hash=$(jq -r .details.dispatch_hash <<<"$q")
wait_ready crun 2
POOL=on-crun bb_job after-update-w "$PROBE"
submit after-update-w
finish after-update-w
[ "$(result after-update-w .warm)" != null ] || fail "no warm start after the pool update"
[ "$(result after-update-w .warm.slot_hash)" = "$new_hash" ] || fail "the new slot is not of the new manifest"
[ "$(metric berth_warm_quarantined_total)" -ge 2 ] || fail "quarantines: $(metric berth_warm_quarantined_total)"

# --- every attach is in the chain, before its job started -------------------
api dev GET /v1/audit
expect_status 200
# An attach the runtime then refused (a "runtime" quarantine) is not a hit.
attached=$(grep -c '"type":"pool.warm_attached"' "$TMP/body" || true)
refused=$(grep '"type":"pool.warm_quarantine"' "$TMP/body" | grep -c '"reason":"runtime"' || true)
[ "$attached" = "$(($(metric berth_warm_hits_total) + refused))" ] ||
    fail "$attached pool.warm_attached events for $(metric berth_warm_hits_total) hits and $refused runtime refusals"

# --- kill -9 berthd with 4 ready slots: nothing of them is left ----------------
wait_ready runsc 2
wait_ready crun 2
before_runsc=$(ready_slots runsc)
before_crun=$(ready_slots crun)
kill_berthd
start_berthd
log_has "admission opens" 30 || fail "admission never opened: $(tail -n 20 "$TMP/berthd.log")"
[ "$(grep -cE "warm slot s[0-9a-f]{32} destroyed \(left by an earlier run\)" "$TMP/berthd.log")" -ge 4 ] ||
    fail "the slots of the earlier run were not destroyed: $(grep -i slot "$TMP/berthd.log")"
for s in $before_runsc; do gone runsc "$s"; done
for s in $before_crun; do gone crun "$s"; done
wait_ready runsc 2
wait_ready crun 2
for s in $(ready_slots runsc) $(ready_slots crun); do
    grep -qxF "$s" <<<"$before_runsc
$before_crun" && fail "slot $s of the earlier run is ready again"
done
POOL=on-runsc bb_job after-restart "$PROBE"
submit after-restart
finish after-restart
[ "$(result after-restart .warm)" != null ] || fail "no warm start after the restart"
want_probe after-restart
# A clean stop destroys the slots it made.
stop_berthd
[ -z "$(ready_slots runsc)$(ready_slots crun)" ] ||
    fail "slots outlived a clean stop: $(ready_slots runsc) $(ready_slots crun)"
[ -z "$(pgrep -f "berth-oci-shim provision $TMP/" || true)" ] || fail "slot shims outlived a clean stop"

# --- a slot whose sandbox dies while idle is replaced, on its notification --
# With the reconcile timer at its longest (60 s), nothing but the slot's own
# notification (runtime-oci's watch, job_changed with the slot id) makes
# berthd look at the slots within the 30 s that "destroyed" waits.
edit_config '.reconcile_interval_ns = 60000000000'
start_berthd
wait_ready runsc 2
wait_ready crun 2
sleep 1 # the passes the refill's own wake-ups caused are over
victim=$(ready_slots crun | head -n 1)
kill -9 "$(cat "$TMP/state-crun/slots/$victim/init.pid")"
destroyed crun "$victim"
wait_ready crun 2
[ "$(metric berth_warm_lost_total)" = 1 ] || fail "lost: $(metric berth_warm_lost_total)"
stop_berthd

# --- a runtime replaced under its pin: the slot is quarantined ---------------
# The crun backend runs a pinned copy of crun (path, sha256, size, mode).  The
# copy is then replaced by another file, as a package upgrade would.  With the
# reconcile timer at 60 s, berthd's capabilities still place jobs on the
# backend; the claim's pin check refuses (-EPERM), the slot gets a chained
# pool.warm_quarantine with reason "runtime", and the cold start that follows
# refuses the job too: nothing runs on a runtime that is not the pinned one.
mkdir -p "$TMP/bin"
cp "$(command -v crun)" "$TMP/bin/crun"
edit_config '.backends.crun.config.runtime = $p' --argjson p "$(pin_json "$TMP/bin/crun")"
start_berthd
wait_ready crun 2
sleep 1
pinned=$(ready_slots crun)
cp "$TMP/bin/crun" "$TMP/bin/crun.new"
printf '\0' >>"$TMP/bin/crun.new"
mv "$TMP/bin/crun.new" "$TMP/bin/crun"
POOL=on-crun bb_job pin-changed "$PROBE"
submit pin-changed
finish pin-changed
[ "$(result pin-changed .status)" != exited ] || fail "a job ran on a runtime that is not the pinned one"
[ "$(result pin-changed .warm)" = null ] || fail "pin-changed ran warm: $(result pin-changed .warm)"
api dev GET /v1/audit
expect_status 200
# The attach is recorded first (the hashes are equal), then the runtime's refusal.
a=$(grep '"type":"pool.warm_attached"' "$TMP/body" | grep -F "\"run_id\":\"$RUN_ID\"" | tail -n 1)
[ -n "$a" ] || fail "no pool.warm_attached for the job on the replaced runtime"
qslot=$(jq -r .details.slot_id <<<"$a")
grep -qxF "$qslot" <<<"$pinned" || fail "the claimed slot $qslot is not one of the ready ones: $pinned"
q=$(grep '"type":"pool.warm_quarantine"' "$TMP/body" | grep -F "\"slot_id\":\"$qslot\"" | tail -n 1)
[ -n "$q" ] || fail "no pool.warm_quarantine of slot $qslot: $(grep -F "$RUN_ID" "$TMP/berthd.log" | tail -n 5)"
[ "$(jq -r .details.reason <<<"$q")" = runtime ] || fail "quarantine reason: $q"
grep -q "job pin-changed run $RUN_ID: backend crun refused to start it: runtime $TMP/bin/crun is" "$TMP/berthd.log" ||
    fail "the cold start after the quarantine did not refuse the job: $(grep -F "$RUN_ID" "$TMP/berthd.log" | tail -n 3)"
destroyed crun "$qslot"
stop_berthd
edit_config '.backends.crun.config.runtime = $p' --argjson p "$(pin_json "$(command -v crun)")"

# --- slots yield to jobs within the pool's max_concurrency --------------------
# Pool "capped" (max_concurrency 2) keeps 2 slots; a job of another shape
# takes one of the 2 places, so one slot goes; when the job ends it comes back.
add_pool capped crun
jq '.max_concurrency = 2' "$INST/pools/capped.json" >"$TMP/capped.json" && cp "$TMP/capped.json" "$INST/pools/capped.json"
edit_config '.warm = {pools: {capped: [{image: $d, limits: $l, min_ready: 2}]}} | del(.reconcile_interval_ns)' \
    --arg d "$DIGEST" --argjson l "$LIMITS"
start_berthd
wait_ready crun 2
POOL=capped bb_job long 'sleep 60' 90000000000
submit long
wait_ready crun 1
log_has "warm slot s[0-9a-f]{32} yields to the jobs of its pool \(max_concurrency\)" ||
    fail "no slot yielded: $(grep -i slot "$TMP/berthd.log" | tail -n 5)"
sleep 1
[ "$(ready_slots crun | wc -l)" = 1 ] || fail "the pool passed its max_concurrency: $(ready_slots crun | wc -l) slots"
run 0 CLIENT cancel long
wait_ready crun 2
stop_berthd

# --- pool verify re-derives every attach and quarantine ----------------------
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify
# (A forged attach with a valid MAC is refused: test-registry, warm_forgeries_detected.)
echo ok
