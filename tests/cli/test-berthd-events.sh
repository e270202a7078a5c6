# test-berthd-events.sh -- events instead of polling (issue 17), with the
# real berthd over real mTLS and real curl, and the scripted runtime:
#   - its ABI 1.1 build notifies (host->job_changed) when a job is due, so
#     with a reconcile interval of 60 s a job's result is recorded and a
#     long poll (GET /v1/jobs/{id}/result?wait_ns=N) answered with no
#     reconcile pass in between (berth_reconcile_passes_total unchanged);
#   - a long poll returns its 202 at its bound when the job goes on, bad
#     wait_ns values are refused (400), a client that goes away frees its
#     parked request, one principal cannot park more than 64;
#   - a cancellation is an event too: parked polls of the job get its
#     cancelled result at once;
#   - the ABI 1.0 build (runtime-script-1-0) never notifies and its jobs
#     still reach their results, found by the reconcile passes;
#   - with fault injection: berthd killed (SIGKILL) between a notification
#     and the commit of the result records that result exactly once after
#     a restart;
#   - berthctl submit --wait and wait use the long poll (one request per
#     bound, no back-off polling).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

# Room for 64 parked polls of one principal and a 65th (all from 127.0.0.1).
make_install '"reconcile_interval_ns": 60000000000, "http": {"handshake_timeout_ns": 30000000000, "header_timeout_ns": 30000000000, "max_connections": 256, "max_per_source": 128, "max_per_principal": 128, "max_unauthenticated": 128}'

# metric NAME: the value of an unlabelled metric on /metrics (dev is admin).
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v m="$1" '$1 == m { print $2 }' "$TMP/body"
}

# submit ID ARGV: POST the job; it must be accepted.
submit() {
    job_doc "$1" "$2" >"$TMP/$1.json"
    api dev POST /v1/jobs --data-binary "@$TMP/$1.json"
    expect_status 201
}

# poll_bg WHO ID WAIT_NS OUT: a long poll in the background; status in OUT.status, body in OUT.
poll_bg() {
    curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-$1.pem" --key "$INST/tls/client-$1.key" \
        -o "$4" -w '%{http_code}' --max-time 70 "$(URL "/v1/jobs/$2/result?wait_ns=$3")" >"$4.status" 2>"$4.err" ||
        echo 000 >"$4.status"
}

# waits_are N: the berth_result_waits gauge reaches N (within 60 s: 64
# curl processes start at once on a busy machine).
waits_are() {
    local deadline=$((SECONDS + 60))
    until [ "$(metric berth_result_waits)" = "$1" ]; do
        [ "$SECONDS" -lt "$deadline" ] || fail "berth_result_waits is $(metric berth_result_waits), expected $1"
        sleep 0.05
    done
}

# finished_events ID: how many job.finished audit events job ID has.
finished_events() {
    api dev GET /v1/audit
    expect_status 200
    grep '"type":"job.finished"' "$TMP/body" | grep -c "\"job_id\":\"$1\"" || true
}

start_berthd

# --- wait_ns is bounded and checked -------------------------------------------
submit forever '["sleep"]'
wait_state dev forever running
for bad in 60000000001 -1 abc 1.5 "" 99999999999999999999; do
    api dev GET "/v1/jobs/forever/result?wait_ns=$bad"
    expect_status 400
    body_has '"error":"malformed"'
done
api dev GET "/v1/jobs/forever/result?wait=1"
expect_status 400
api dev GET "/v1/jobs/forever/result?wait_ns=1&wait_ns=2"
expect_status 400
# Absent (or 0): answered at once, as before.
api dev GET /v1/jobs/forever/result
expect_status 202
body_has '"state":"running"'
api dev GET "/v1/jobs/forever/result?wait_ns=0"
expect_status 202

# --- a long poll at its bound: the 202 it would have had ----------------------
api dev GET "/v1/jobs/forever/result?wait_ns=300000000"
expect_status 202
body_has '"state":"running"'
waits_are 0
# Someone else's job is not found, and nothing is parked for it.
api other GET "/v1/jobs/forever/result?wait_ns=300000000"
expect_status 404
waits_are 0

# --- a client that goes away frees its parked request -------------------------
api dev GET "/v1/jobs/forever/result?wait_ns=30000000000" --max-time 1
[ "$(cat "$TMP/status")" = 000 ] || fail "the poll answered $(cat "$TMP/status") before its bound"
waits_are 0

# --- a notified job: its result arrives through the long poll, no pass between -
passes=$(metric berth_reconcile_passes_total)
events=$(metric berth_job_events_total)
submit notified '["sleep-ms","4000"]'
poll_bg dev notified 50000000000 "$TMP/notified" &
poll=$!
waits_are 1
# Parked while the job still runs: the answer comes after the poll began.
api dev GET /v1/jobs/notified
body_has '"state":"running"'
wait "$poll"
[ "$(cat "$TMP/notified.status")" = 200 ] || fail "long poll: $(cat "$TMP/notified.status") $(cat "$TMP/notified")"
grep -qF '"status":"exited"' "$TMP/notified" || fail "long poll body: $(cat "$TMP/notified")"
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] ||
    fail "a reconcile pass ran ($passes -> $(metric berth_reconcile_passes_total)): the result did not come by the event"
[ "$(metric berth_job_events_total)" -gt "$events" ] || fail "no job notification was counted"
api dev GET /v1/jobs/notified/result
expect_status 200
cmp -s "$TMP/body" "$TMP/notified" || fail "the long poll's result differs from the stored one"
[ "$(finished_events notified)" = 1 ] || fail "job notified finished $(finished_events notified) times"
# A job that ends at once is notified from start(): dispatch and result at once too.
submit quick '["echo","quick"]'
api dev GET "/v1/jobs/quick/result?wait_ns=50000000000" --max-time 70
expect_status 200
body_has '"status":"exited"'
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] || fail "a reconcile pass ran for job quick"

# --- berthctl submit --wait and wait use the long poll ------------------------
job_doc ctl '["sleep-ms","1000"]' >"$TMP/ctl.json"
run 0 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/ctl.json" --wait
grep -q "job ctl exited with exit code 0" "$TMP/stderr" || fail "submit --wait: $(cat "$TMP/stderr")"
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] || fail "a reconcile pass ran for job ctl"
# No back-off polling: one long poll until --timeout, not a request every few ms.
before=$(grep -c "GET /v1/jobs/forever/result " "$TMP/berthd.log" || true)
run 1 "$BERTHCTL" --config "$INST/client.json" wait forever --timeout 2
grep -q "job forever is still running after 2 seconds" "$TMP/stderr" || fail "wait: $(cat "$TMP/stderr")"
polls=$(($(grep -c "GET /v1/jobs/forever/result " "$TMP/berthd.log" || true) - before))
[ "$polls" -ge 1 ] && [ "$polls" -le 2 ] || fail "berthctl wait asked $polls times in 2 s"

# --- one principal parks at most 64; a cancellation answers them all ----------
pids=
for i in $(seq 1 64); do
    poll_bg dev forever 50000000000 "$TMP/many.$i" &
    pids="$pids $!"
done
waits_are 64
api dev GET "/v1/jobs/forever/result?wait_ns=50000000000"
expect_status 429
body_has '"error":"too_many_waits"'
api dev POST /v1/jobs/forever/cancel
expect_status 202
# shellcheck disable=SC2086
wait $pids
for i in $(seq 1 64); do
    [ "$(cat "$TMP/many.$i.status")" = 200 ] || fail "poll $i: $(cat "$TMP/many.$i.status") $(cat "$TMP/many.$i")"
    grep -qF '"status":"cancelled"' "$TMP/many.$i" || fail "poll $i: $(cat "$TMP/many.$i")"
done
waits_are 0
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] || fail "a reconcile pass ran for the cancellation"

# --- shutdown answers parked polls at once ------------------------------------
submit parked '["sleep"]'
wait_state dev parked running
poll_bg dev parked 50000000000 "$TMP/parked" &
poll=$!
waits_are 1
stop_berthd
wait "$poll"
[ "$(cat "$TMP/parked.status")" = 202 ] || fail "at shutdown the poll got $(cat "$TMP/parked.status")"

# --- a plugin of ABI 1.0 is polled --------------------------------------------
publish "$INST/berthd.json" jq '.backends.script.plugin = "runtime-script-1-0" | .reconcile_interval_ns = 100000000'
start_berthd
passes=$(metric berth_reconcile_passes_total)
events=$(metric berth_job_events_total)
submit old '["sleep-ms","500"]'
api dev GET "/v1/jobs/old/result?wait_ns=50000000000" --max-time 70
expect_status 200
body_has '"status":"exited"'
[ "$(metric berth_job_events_total)" = "$events" ] || fail "a plugin of ABI 1.0 cannot notify"
[ "$(metric berth_reconcile_passes_total)" -gt "$passes" ] || fail "no reconcile pass found the result"
[ "$(finished_events old)" = 1 ] || fail "job old finished $(finished_events old) times"
stop_berthd

# --- killed between the notification and the commit ---------------------------
if [ "${BERTH_FAULT_INJECTION:-no}" = yes ]; then
    publish "$INST/berthd.json" jq '.backends.script.plugin = "runtime-script" | .reconcile_interval_ns = 60000000000'
    start_berthd BERTH_FAULT=event-before-commit
    submit crash '["sleep-ms","300"]'
    for i in $(seq 1 400); do
        kill -0 "$BERTHD_PID" 2>/dev/null || break
        sleep 0.05
    done
    st=0
    wait "$BERTHD_PID" || st=$?
    BERTHD_PID=
    [ "$st" = 137 ] || { cat "$TMP/berthd.log" >&2; fail "berthd exited $st, expected death by SIGKILL"; }
    grep -q "killed at event-before-commit" "$TMP/berthd.log" || fail "the fault point was not reached"
    start_berthd
    api dev GET "/v1/jobs/crash/result?wait_ns=50000000000" --max-time 70
    expect_status 200
    body_has '"status":"exited"'
    cp "$TMP/body" "$TMP/crash.result"
    api dev GET /v1/jobs/crash/result
    cmp -s "$TMP/body" "$TMP/crash.result" || fail "the recorded result changed"
    [ "$(finished_events crash)" = 1 ] || fail "job crash finished $(finished_events crash) times"
    api dev GET /v1/jobs/crash
    run_id=$(run_id_of "$TMP/body")
    [ "$(starts "$run_id")" = 1 ] || fail "job crash was started $(starts "$run_id") times"
    stop_berthd
    echo "# fault injection ran: kill -9 between the notification and the commit"
else
    echo "# berthd was built without --enable-fault-injection: the crash part is skipped"
fi
echo "ok"
