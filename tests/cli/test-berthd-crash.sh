# test-berthd-crash.sh -- berthd killed with SIGKILL around acknowledgements
# and dispatch, then restarted: every acknowledged job is there with its
# receipt, no job is started twice, and unacknowledged jobs are either
# absent or complete.  Needs a build with --enable-fault-injection (the
# sanitizer build of tests/run-all.sh has it); elsewhere it is skipped.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
if [ "${BERTH_FAULT_INJECTION:-no}" != yes ]; then
    echo "SKIP: berthd was built without --enable-fault-injection"
    exit 77
fi
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

make_install '"reconcile_interval_ns": 50000000'

# run_id_for ID: the run id berthd derives for dev's job ID (jobstore.h:
# the broker's key id, principal, scope and job id).  KEY_ID is read from
# /v1/capabilities after the first start.
run_id_for() {
    printf 'r%s' "$(printf '%s\0dev\0["dev"]\0%s' "${KEY_ID:?}" "$1" | sha256sum | cut -c1-32)"
}

# wait_killed: berthd must die by SIGKILL (the fault point) within 20 s.
wait_killed() {
    local i st=0
    for i in $(seq 1 400); do
        kill -0 "$BERTHD_PID" 2>/dev/null || break
        sleep 0.05
    done
    wait "$BERTHD_PID" || st=$?
    BERTHD_PID=
    [ "$st" = 137 ] || { cat "$TMP/berthd.log" >&2; fail "berthd exited $st, expected death by SIGKILL"; }
}

# submit ID ARGV: POST the job; status in $TMP/status ("000": no reply).
submit() {
    job_doc "$1" "$2" >"$TMP/$1.json"
    api dev POST /v1/jobs --data-binary "@$TMP/$1.json" --max-time 20
}

# finished_once ID: the job reaches "exited" and was started exactly once.
finished_once() {
    wait_state dev "$1" exited
    local run
    run=$(run_id_of "$TMP/body")
    [ "$(starts "$run")" = 1 ] || fail "job $1 (run $run) was started $(starts "$run") times"
}

# --- killed right after a 201 --------------------------------------------------
start_berthd
api dev GET /v1/capabilities
expect_status 200
KEY_ID=$(jq -r .key_id "$TMP/body")
submit after201 '["sleep-ms","300"]'
expect_status 201
kill_berthd
cp "$TMP/body" "$TMP/after201.receipt"
start_berthd
api dev GET /v1/jobs/after201
expect_status 200
grep -qF "$(cat "$TMP/after201.receipt")" "$TMP/body" || fail "the receipt changed across the crash"
finished_once after201
# The derivation above is berthd's: it names this job's run.
[ "$(run_id_for after201)" = "$(run_id_of "$TMP/after201.receipt")" ] ||
    fail "run_id_for after201 gives $(run_id_for after201), the receipt says $(run_id_of "$TMP/after201.receipt")"

# --- killed after the commit, before the 201 was sent ------------------------------
stop_berthd
start_berthd BERTH_FAULT=submit-after-commit
submit unacked '["echo","x"]'
expect_status 000
wait_killed
start_berthd
# Unacknowledged but committed: present, and a retry is acknowledged with the same receipt.
api dev GET /v1/jobs/unacked
expect_status 200
submit unacked '["echo","x"]'
expect_status 200
finished_once unacked

# --- killed before the commit -----------------------------------------------------------
stop_berthd
start_berthd BERTH_FAULT=submit-before-commit
submit uncommitted '["echo","x"]'
expect_status 000
wait_killed
start_berthd
api dev GET /v1/jobs/uncommitted
expect_status 404
submit uncommitted '["echo","x"]'
expect_status 201
finished_once uncommitted

# The worker is woken by the commit, so the process may die before or after
# the 201 leaves: either way the job was committed first.
expect_committed() {
    case "$(cat "$TMP/status")" in 201|000) ;; *) fail "submission answered $(cat "$TMP/status")" ;; esac
}

# --- killed between "claimed" and start() ---------------------------------------------
stop_berthd
start_berthd BERTH_FAULT=dispatch-after-claim
submit claimed '["echo","x"]'
expect_committed
wait_killed
[ "$(starts "$(run_id_for claimed)")" = 0 ] || fail "start() ran although berthd died before calling it"
start_berthd
finished_once claimed

# --- killed after start(), before "running" was recorded -------------------------------
stop_berthd
start_berthd BERTH_FAULT=dispatch-after-start
submit started '["echo","x"]'
expect_committed
wait_killed
[ "$(starts "$(run_id_for started)")" = 1 ] || fail "the start before the crash was not recorded by the backend"
start_berthd
finished_once started

# --- SIGKILL at an arbitrary moment under concurrent load ---------------------------------
stop_berthd
start_berthd
for c in 1 2 3 4; do
    (
        for n in $(seq 1 12); do
            id="load-$c-$n"
            job_doc "$id" '["sleep-ms","20"]' >"$TMP/$id.json"
            code=$(curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" \
                --key "$INST/tls/client-dev.key" --max-time 20 -o "$TMP/$id.reply" -w '%{http_code}' \
                --data-binary "@$TMP/$id.json" "$(URL /v1/jobs)" 2>/dev/null) || code=000
            echo "$id $code" >>"$TMP/load-$c.log"
        done
    ) &
    loaders="${loaders:-} $!"
done
# Kill once the first submission is acknowledged (under load, and in the
# sanitizer build, that can take a while), while the others are in flight.
deadline=$((SECONDS + 60))
until grep -qs ' 20[01]$' "$TMP"/load-*.log || [ "$SECONDS" -ge "$deadline" ]; do
    sleep 0.05
done
kill_berthd
wait $loaders
start_berthd
acked=0
for f in "$TMP"/load-*.log; do
    while read -r id code; do
        api dev GET "/v1/jobs/$id"
        case "$code" in
        200|201)
            acked=$((acked + 1))
            expect_status 200
            grep -qF "$(cat "$TMP/$id.reply")" "$TMP/body" || fail "$id: its receipt changed across the crash"
            finished_once "$id"
            ;;
        *)
            # Unacknowledged: absent, or present and then it completes once.
            case "$(cat "$TMP/status")" in
            404) ;;
            200) finished_once "$id" ;;
            *) fail "$id: unexpected status $(cat "$TMP/status")" ;;
            esac
            ;;
        esac
    done <"$f"
done
[ "$acked" -gt 0 ] || fail "no submission was acknowledged before the kill; the test proved nothing"
# Nothing anywhere was started twice.
if grep '^start r[0-9a-f]* new$' "$TMP/script/calls.log" | sort | uniq -d | grep -q .; then
    fail "a job was started twice: $(grep '^start r[0-9a-f]* new$' "$TMP/script/calls.log" | sort | uniq -d)"
fi
stop_berthd
# The journal's audit chain survived every crash intact.
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify
