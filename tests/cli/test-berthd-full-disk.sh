# test-berthd-full-disk.sh -- berthd with its state directory on a full
# 8 MiB tmpfs (issue #14, "a full disk degrades, never stops"): it stays up
# while a finishing job cannot be recorded, serves reads, records a
# cancellation (from the journal's space reserve), refuses new jobs with
# 503 storage_full and never logs "accepted" for them, restarts on the full
# disk, and once space returns records every kept result exactly once.
# Staging on a full disk: test-berthd-full-disk-stage.sh.
# Needs root (mount -t tmpfs); skipped otherwise (full-disk-lib.sh).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/full-disk-lib.sh"

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
# The 503 says when to retry (RFC 9110 section 10.2.3): 1..30 s, the backoff's range.
api dev POST /v1/jobs --data-binary "@$TMP/refused2.json" -D "$TMP/headers"
expect_status 503
retry=$(tr -d '\r' <"$TMP/headers" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')
[ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 30 ] || fail "no Retry-After of 1..30 s: $(cat "$TMP/headers")"

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
[ "$(metric 'berth_admissions_refused_total{reason="storage_full"}')" = 3 ] || fail "refusals not counted"
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
