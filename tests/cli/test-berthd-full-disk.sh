# test-berthd-full-disk.sh -- berthd with its state directory on a full
# 8 MiB tmpfs (issue #14, "a full disk degrades, never stops"): it stays up
# while a finishing job cannot be recorded, serves reads, records a
# cancellation (from the journal's space reserve), refuses new jobs with
# 503 storage_full and never logs "accepted" for them, restarts on the full
# disk, and once space returns records every kept result exactly once.
# Staging an image on a full disk backs off and logs once per change.
# Needs root (mount -t tmpfs); skipped otherwise.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root to mount a tmpfs"
    exit 77
fi
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

MOUNTS=
cleanup_full_disk() {
    local m
    if [ -n "$BERTHD_PID" ]; then
        kill -KILL "$BERTHD_PID" 2>/dev/null || true
        wait "$BERTHD_PID" 2>/dev/null || true
        BERTHD_PID=
    fi
    for m in $MOUNTS; do umount -l "$m" 2>/dev/null || true; done
    cleanup_berthd
}
trap cleanup_full_disk EXIT

# on_tmpfs DIR: mount a fresh 8 MiB tmpfs (mode 0700) on DIR.
on_tmpfs() {
    mount -t tmpfs -o size=8m,mode=0700 berth-full-disk "$1" || fail "cannot mount a tmpfs on $1"
    MOUNTS="$1 $MOUNTS"
}

# fill DIR NAME: write zeros to DIR/NAME until the filesystem has no block left.
fill() {
    dd if=/dev/zero of="$1/$2" bs=4096 oflag=append conv=notrunc 2>/dev/null || true
    [ "$(df --output=avail -B1 "$1" | tail -n1 | tr -d ' ')" = 0 ] || fail "$1 is not full: $(df -B1 "$1")"
}

# alive: berthd is still running.
alive() {
    kill -0 "$BERTHD_PID" 2>/dev/null || { cat "$TMP/berthd.log" >&2; fail "berthd exited: $1"; }
}

# wait_log TEXT [TRIES]: the log gets a line with TEXT (0.1 s per try).
wait_log() {
    local i
    for i in $(seq 1 "${2:-200}"); do
        grep -qF -- "$1" "$TMP/berthd.log" && return 0
        alive "waiting for '$1'"
        sleep 0.1
    done
    cat "$TMP/berthd.log" >&2
    fail "the log never said '$1'"
}

# submit ID ARGV: POST a job (status and body as api()).
submit() {
    job_doc "$1" "$2" >"$TMP/$1.json"
    api dev POST /v1/jobs --data-binary "@$TMP/$1.json" --max-time 20
}

# metric NAME: its value in the last /metrics reply.
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v n="$1" '$1 == n { print $2 }' "$TMP/body"
}

# finished_events RUN: job.finished events of RUN in the audit chain.
finished_events() {
    api dev GET "/v1/audit"
    expect_status 200
    grep '"type":"job.finished"' "$TMP/body" | grep -c "\"run_id\":\"$1\"" || true
}

# ============================================================================
# A full journal filesystem.
# ============================================================================
make_install
STATE=$INST/state
on_tmpfs "$STATE"
start_berthd
RESERVE=$STATE/journal.db.reserve
[ "$(stat -c %s "$RESERVE" 2>/dev/null)" = 1048576 ] || fail "no 1 MiB space reserve beside the journal: $(ls -l "$STATE")"
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'

# One job done before, one to finish while full, one to cancel while full.
submit before '["echo","before"]'
expect_status 201
wait_state dev before exited
submit fin '["hold"]'
expect_status 201
FIN=$(run_id_of "$TMP/body")
submit victim '["sleep"]'
expect_status 201
VICTIM=$(run_id_of "$TMP/body")
wait_state dev fin running
wait_state dev victim running

fill "$STATE" filler

# The first write on the full disk is a submission: its commit fails, so it
# is refused with storage_full and the log never calls it accepted.
submit refused1 '["echo","x"]'
expect_status 503
body_has '"error":"storage_full"'
body_has 'retry in '
alive "a submission's commit failed for space"
api dev GET /v1/jobs/refused1
expect_status 404
! grep -q "job refused1 .*accepted" "$TMP/berthd.log" || fail "the log says a refused job was accepted"
# From now on berthd knows: refused before anything is written.
submit refused2 '["echo","x"]'
expect_status 503
body_has '"error":"storage_full"'
! grep -q "job refused2 .*accepted" "$TMP/berthd.log" || fail "the log says a refused job was accepted"

# The held job finishes: its result cannot be recorded, berthd stays up.
touch "$TMP/script/$FIN.release"
wait_log "job fin run $FIN of dev: exited, but the journal has no space"
sleep 1
alive "a finishing job could not be recorded"

# Reads work while full.
api dev GET /v1/jobs/fin
expect_status 200
body_has '"state":"running"'
api dev GET /v1/jobs/fin/result
expect_status 202
api dev GET /v1/jobs/before/result
expect_status 200
body_has '"status":"exited"'
api dev GET /v1/capabilities
expect_status 200
body_has '"broker":"dev"'
[ "$(metric berth_storage_degraded)" = 1 ] || fail "berth_storage_degraded is not 1: $(cat "$TMP/body")"
[ "$(metric berth_results_unrecorded)" = 1 ] || fail "berth_results_unrecorded is not 1"
[ "$(metric 'berth_admissions_refused_total{reason="storage_full"}')" = 2 ] || fail "refusals not counted"
api dev GET /v1/health
expect_status 200
body_has '"status":"degraded"'
body_has '"reason":"storage_full"'
body_has '"unrecorded_results":1'

# A cancellation is recorded (the space reserve makes room) and the sandbox is stopped.
api dev POST /v1/jobs/victim/cancel
expect_status 202
body_has '"cancel_requested":true'
[ ! -e "$RESERVE" ] || fail "the space reserve was not released for the cancellation"
for _ in $(seq 1 100); do
    grep -q "^cancel $VICTIM\$" "$TMP/script/calls.log" && break
    sleep 0.1
done
grep -q "^cancel $VICTIM\$" "$TMP/script/calls.log" || fail "the cancelled job's sandbox was never stopped"
wait_state dev victim reaping
body_has '"cancel_requested":true'
wait_log "job victim run $VICTIM of dev: cancelled, but the journal has no space"
[ "$(metric berth_results_unrecorded)" = 2 ] || fail "berth_results_unrecorded is not 2"
alive "after the cancellation"

# ============================================================================
# Restart on the full disk: it comes up and serves reads.
# ============================================================================
stop_berthd
cp "$TMP/berthd.log" "$TMP/berthd-1.log"
fill "$STATE" filler2
start_berthd
grep -q "startup reconcile" "$TMP/berthd.log" && fail "startup reconcile failed: $(cat "$TMP/berthd.log")"
api dev GET /v1/health
expect_status 200
body_has '"status":"degraded"'
api dev GET /v1/jobs/before/result
expect_status 200
body_has '"status":"exited"'
api dev GET /v1/jobs/fin
expect_status 200
submit refused3 '["echo","x"]'
expect_status 503
body_has '"error":"storage_full"'
# Reconcile found both results again and keeps them.
for _ in $(seq 1 100); do
    [ "$(metric berth_results_unrecorded)" = 2 ] && break
    sleep 0.1
done
[ "$(metric berth_results_unrecorded)" = 2 ] || fail "the restarted berthd does not keep the two results"

# ============================================================================
# Space returns: the kept results are recorded, exactly once.
# ============================================================================
rm -f "$STATE/filler" "$STATE/filler2"
wait_log "storage space is back" 400
wait_state dev fin exited
api dev GET /v1/jobs/fin/result
expect_status 200
body_has '"status":"exited"'
wait_state dev victim cancelled
api dev GET /v1/jobs/victim/result
expect_status 200
body_has '"status":"cancelled"'
[ "$(finished_events "$FIN")" = 1 ] || fail "job fin was recorded $(finished_events "$FIN") times"
[ "$(finished_events "$VICTIM")" = 1 ] || fail "job victim was recorded $(finished_events "$VICTIM") times"
[ "$(stat -c %s "$RESERVE" 2>/dev/null)" = 1048576 ] || fail "the space reserve was not re-created"
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'
[ "$(metric berth_storage_degraded)" = 0 ] || fail "berth_storage_degraded is not 0"
[ "$(metric berth_results_unrecorded)" = 0 ] || fail "berth_results_unrecorded is not 0"
# New work is accepted again, and logged as accepted after its commit.
submit after '["echo","after"]'
expect_status 201
wait_state dev after exited
grep -q "job after run .* accepted on backend script" "$TMP/berthd.log" || fail "no accepted line for an accepted job"
stop_berthd
# Still the same journal rows: one terminal record each, and an intact audit chain.
run 0 "$BERTHCTL" --journal "$STATE/journal.db" --audit-key "$INST/keys/audit.key" pool verify

# ============================================================================
# Staging an image on a full disk: backoff, one line per change.
# ============================================================================
if [ ! -f "$BERTH_IMAGE_PLUGIN_DIR/image-oci-local.so" ] || [ ! -x /bin/busybox ]; then
    echo "the staging part needs the image-oci-local plugin and /bin/busybox: not run"
    exit 0
fi
image_plugins
busybox_image
SAMPLE_IMAGE=$DIGEST # job_doc's image from here on
INST=$TMP/inst-stage
STATE=$INST/state
pick_port
run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --image "$SAMPLE_IMAGE" \
    --backend "script=runtime-script,$TMP/script.json" --plugin-dir "$PLUGINS"
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$INST/images"
on_tmpfs "$STATE"
start_berthd
submit staged-ok '["echo","ok"]'
expect_status 201
wait_state dev staged-ok exited
# Its staged rootfs is removed right after its result is recorded.
for _ in $(seq 1 100); do
    [ -z "$(ls -A "$STATE/stage")" ] && break
    sleep 0.1
done
[ -z "$(ls -A "$STATE/stage")" ] || fail "the staged rootfs of a finished job stays: $(ls "$STATE/stage")"

# Room for the journal's commits, not for a staged rootfs (busybox: about 2 MiB).
avail=$(df --output=avail -B1 "$STATE" | tail -n1 | tr -d ' ')
fallocate -l $((avail - 512 * 1024)) "$STATE/filler" || fail "fallocate on the tmpfs failed"
submit unstaged '["echo","late"]'
expect_status 201
wait_log "job unstaged run"
wait_log "staging image $SAMPLE_IMAGE failed, will retry with backoff"
api dev GET /v1/health
expect_status 200
body_has '"status":"degraded"'
submit refused-stage '["echo","x"]'
expect_status 503
body_has '"error":"storage_full"'
# Six seconds of failing: one line, not one per 250 ms reconcile pass.
sleep 6
alive "staging kept failing"
n=$(grep -c "staging image .* failed" "$TMP/berthd.log" || true)
[ "$n" = 1 ] || fail "$n log lines for one failing staging: $(grep "staging image" "$TMP/berthd.log")"
api dev GET /v1/jobs/unstaged
expect_status 200
body_has '"state":"claimed"'

# Space returns: the next try (backoff, at most 30 s away) stages and starts it.
rm -f "$STATE/filler"
wait_log "job unstaged run $(run_id_of "$TMP/body") of dev: claimed -> running" 400
grep -q "staging works again" "$TMP/berthd.log" || fail "no line when staging worked again"
wait_state dev unstaged exited
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'
stop_berthd
