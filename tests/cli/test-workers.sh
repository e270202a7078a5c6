# test-workers.sh -- remote workers run jobs (docs/workers.md): berthd and
# three berth-worker processes on this machine, each with its own identity,
# certificate, state directory and runtime (crun), on 127.0.0.1 only.
#
#   - jobs of a pool placed on "workers" spread across the workers, and
#     every signed result verifies, down to the worker's claim and report;
#   - a job's inputs reach the worker from berthd's evidence store and its
#     declared outputs come back into it, bound by the report; an invalid
#     output fails the run as it would on berthd's host; a worker reads and
#     writes only the inputs and outputs of runs it holds;
#   - a forged claim is refused, and so is a worker that is not enrolled;
#   - a worker killed mid-job: its lease lapses, berthd fences the run
#     (failed, worker_lost), nobody runs it again, and the worker, back,
#     stops the sandbox it left;
#   - a worker stopped (SIGSTOP) past its lease: fenced, and what it says
#     afterwards is refused;
#   - berthd killed while workers hold claims: after its restart the leases
#     go on from the journal and every run ends once, as its worker says;
#   - a pool update ends the enrolments for new jobs until the workers enrol
#     again, and a run placed before it still runs;
#   - a cancellation and a deadline reach the worker, which reports them;
#   - with workers.require_qualification, only a worker that qualified its
#     runtime itself gets work;
#   - a revoked worker certificate is turned away;
#   - "berthctl audit verify" re-derives every enrolment and claim offline.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/workers-lib.sh"

POOL=fleet
workers_install 3000000000
for w in w1 w2 w3; do make_worker "$w" 2; done
start_berthd
for w in w1 w2 w3; do enrol_worker "$w"; done
for w in w1 w2 w3; do start_worker "$w"; done

# --- Six jobs, two slots each: every worker takes two. ---
for i in 1 2 3 4 5 6; do
    bb_job "j$i" "sleep 2; echo hello from j$i"
    submit "j$i"
    [ "$(placed "j$i")" = workers ] || fail "j$i was placed on $(placed "j$i")"
done
for i in 1 2 3 4 5 6; do
    finish "j$i"
    [ "$(result "j$i" .status)" = exited ] || fail "j$i: $(cat "$TMP/j$i.out/result.json")"
    run 0 "$BERTHCTL" result verify "$TMP/j$i.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/j$i.job.json" \
        --receipt "$TMP/j$i.receipt.json"
    stdout_has "run by worker "
    echo "$(result "j$i" .worker.report.report.worker_name)" >>"$TMP/ran-on"
done
sort "$TMP/ran-on" | uniq -c
[ "$(sort -u "$TMP/ran-on" | wc -l)" = 3 ] || fail "the jobs did not spread over the three workers: $(sort "$TMP/ran-on" | uniq -c)"
echo "PASS: jobs spread across three workers and verify"

# --- Inputs from berthd's evidence store, declared outputs back into it. ---
sha() { printf 'sha256:%s' "$(sha256sum "$1" | cut -d' ' -f1)"; }
printf 'one\ntwo\nthree\nfour\n' >"$TMP/data.txt"
run 0 CLIENT evidence put "$TMP/data.txt" --media-type text/plain
REF=$(cat "$TMP/stdout")
INPUT_DIGEST=$(jq -r .digest <<<"$REF")
# io_job ID SCRIPT [MAX_BYTES]: the input at /inputs/data.txt, the declared output "report".
io_job() {
    jq -n --arg id "$1" --arg img "$DIGEST" --arg s "$2" --argjson ref "$REF" --argjson max "${3:-4096}" \
        '{schema_version: 1, id: $id, pool: "fleet", image: $img, argv: ["/bin/sh", "-c", $s],
          inputs: [{path: "/inputs/data.txt", ref: $ref}],
          outputs: [{id: "report", path: "/tmp/outputs/report.json", media_type: "application/json", max_bytes: $max}],
          limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 16777216,
                   wall_time_ns: 60000000000, output_bytes: 65536, artifact_bytes: 4194304}}' >"$TMP/$1.job.json"
}
COUNT='n=$(wc -l < /inputs/data.txt); printf "{\"lines\":%d}" "$n" > /tmp/outputs/report.json
if echo x 2>/dev/null > /inputs/data.txt; then echo INPUT-WRITABLE; else echo input-read-only; fi'
io_job count "$COUNT"
submit count
COUNT_RUN=$RUN_ID
[ "$(placed count)" = workers ] || fail "the job with inputs and outputs was placed on $(placed count)"
finish count
[ "$(result count .status)" = exited ] || fail "count: $(jq -c .result "$TMP/count.out/result.json")"
[ "$(cat "$TMP/count.out/stdout")" = input-read-only ] || fail "count: writing the input: $(cat "$TMP/count.out/stdout")"
[ "$(cat "$TMP/count.out/outputs/report")" = '{"lines":4}' ] || fail "the report is $(cat "$TMP/count.out/outputs/report")"
[ "$(result count '.outputs[0].digest')" = "$(sha "$TMP/count.out/outputs/report")" ] ||
    fail "the result lists $(result count .outputs)"
[ "$(result count '.worker.report.report.outputs[0].digest')" = "$(sha "$TMP/count.out/outputs/report")" ] ||
    fail "the worker's report lists $(result count .worker.report.report.outputs)"
run 0 "$BERTHCTL" result verify "$TMP/count.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/count.job.json" \
    --outputs "$TMP/count.out/outputs"
stdout_has "run by worker "
COUNT_WORKER=$(result count .worker.name)
wait_log "$TMP/$COUNT_WORKER.log" "run $COUNT_RUN: staged 1 input\(s\), 19 bytes, from berthd"
# The worker's staged inputs are gone once the run was reaped.
for i in $(seq 1 300); do [ -z "$(ls -A "$TMP/$COUNT_WORKER/state/inputs")" ] && break; sleep 0.1; done
[ -z "$(ls -A "$TMP/$COUNT_WORKER/state/inputs")" ] || fail "staged inputs left: $(ls "$TMP/$COUNT_WORKER/state/inputs")"

# A symlinked output: failed, output_invalid, as on berthd's host; the chain verifies.
io_job link 'ln -s /etc/passwd /tmp/outputs/report.json'
submit link
finish link
[ "$(result link .status)/$(result link .reason)" = failed/output_invalid ] ||
    fail "link: $(jq -c .result "$TMP/link.out/result.json")"
[ "$(result link .output_error.problem)/$(result link .output_error.id)" = symlink/report ] ||
    fail "link: $(result link .output_error)"
run 0 "$BERTHCTL" result verify "$TMP/link.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/link.job.json"
# An output of 300 KiB: more than one chunk of an upload (http.max_body_bytes is 256 KiB here).
io_job big 'head -c 307200 /dev/zero | tr "\0" x > /tmp/outputs/report.json' 1048576
submit big
finish big
[ "$(result big .status)" = exited ] || fail "big: $(jq -c .result "$TMP/big.out/result.json")"
[ "$(stat -c %s "$TMP/big.out/outputs/report")" = 307200 ] || fail "big: the output is $(stat -c %s "$TMP/big.out/outputs/report") bytes"
run 0 "$BERTHCTL" result verify "$TMP/big.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/big.job.json" \
    --outputs "$TMP/big.out/outputs"

# Only a run's lease holder reads its inputs and writes its outputs: an
# ended run gives nothing to anyone, and a client is no worker.
api "$COUNT_WORKER" GET "/v1/workers/runs/$COUNT_RUN/inputs/$INPUT_DIGEST"
expect_status 403
body_has "holds no lease on run $COUNT_RUN"
api "$COUNT_WORKER" POST "/v1/workers/runs/$COUNT_RUN/outputs/report"
expect_status 403
api dev GET "/v1/workers/runs/$COUNT_RUN/inputs/$INPUT_DIGEST"
expect_status 403
body_has not_a_worker
echo "PASS: inputs reach workers and declared outputs come back, bound by the report"

# poll_as WHO KEYID: a worker's poll sent by curl with WHO's certificate.
poll_as() {
    jq -n --arg k "$2" '{keyid: $k, slots: 1, busy: 0, capabilities: [], egress_classes: ["none"], qualification: null}' \
        >"$TMP/poll.json"
    api "$1" POST /v1/workers/poll -H 'Content-Type: application/json' --data-binary "@$TMP/poll.json"
}
keyid_of() { jq -r .keyid <<<"$("$BERTH_WORKER" enrol --config "$TMP/$1/worker.json" --pool fleet --dry-run |
    jq -c .enrolment)"; }

# --- Refusals: a worker that did not enrol, and forged claims. ---
make_worker w4 1
K1=$(keyid_of w1)
K4=$(keyid_of w4)
poll_as w4 "$K4"
expect_status 200
jq -e '.pools == [] and .offers == []' "$TMP/body" >/dev/null || fail "an unenrolled worker was offered: $(cat "$TMP/body")"
# With every worker stopped, a job waits; w1's certificate polls by hand.
# (Stopped by SIGTERM, not SIGSTOP: a frozen worker's parked polls would
# take the offer as their bounds pass, each for the offer's hold.)
for w in w1 w2 w3; do stop_worker "$w"; done
# Its id is longer than a run id: job ids run to 128 characters.
FORGED=a-job-whose-id-is-longer-than-any-run-id-and-that-forged-claims-try-to-take
bb_job "$FORGED" "echo ran once"
submit "$FORGED"
FORGED_RUN=$RUN_ID
# A stopped worker's poll parked in berthd may hold the offer a few seconds first.
for i in $(seq 1 100); do
    poll_as w1 "$K1"
    expect_status 200
    jq -c --arg r "$FORGED_RUN" '.offers[] | select(.run_id == $r)' "$TMP/body" >"$TMP/offer.json"
    [ -s "$TMP/offer.json" ] && break
    sleep 0.1
done
[ -s "$TMP/offer.json" ] || fail "w1 was not offered the queued run: $(cat "$TMP/body")"
# A claim with every member right and a signature that is not w1's.
jq -c --arg k "$K1" --arg sig "$(printf 'x%.0s' $(seq 1 86))" \
    '{claim: {claimant: "worker", created_ns: "1", job_digest, job_id, keyid: $k, kind: "pool.claim",
              lease_revision: (.revision + 1), placement_hash, pool_hash, receipt_digest, run_id,
              schema_version: 2, worker_name: "w1"}, signature: $sig}' "$TMP/offer.json" >"$TMP/forged-claim.json"
api w1 POST /v1/workers/claims -H 'Content-Type: application/json' --data-binary "@$TMP/forged-claim.json"
expect_status 400
body_has "the claim does not verify"
# w1's claim sent with w4's certificate: not w4's name.
api w4 POST /v1/workers/claims -H 'Content-Type: application/json' --data-binary "@$TMP/forged-claim.json"
expect_status 403
body_has "a claim's worker_name must be the caller's principal, w4"
# w4 claiming under its own name with a key that enrolled nowhere.
jq -c --arg k "$K4" '.claim.worker_name = "w4" | .claim.keyid = $k' "$TMP/forged-claim.json" >"$TMP/w4-claim.json"
api w4 POST /v1/workers/claims -H 'Content-Type: application/json' --data-binary "@$TMP/w4-claim.json"
expect_status 409
body_has '"error":"stale_pool"'
for w in w1 w2 w3; do start_worker "$w"; done
finish "$FORGED"
[ "$(result "$FORGED" .status)" = exited ] || fail "the job of the forged claims: $(cat "$TMP/$FORGED.out/result.json")"
echo "PASS: forged claims and unenrolled workers are refused"

# A poll that names capabilities and egress classes berthd does not know
# (a newer runtime's): they are left out, and placement goes on.
jq -n --arg k "$K1" '{keyid: $k, slots: 2, busy: 0, capabilities: ["exec", "file_rw", "gpu"],
                      egress_classes: ["none", "loopback", "teleport"], qualification: null}' >"$TMP/poll.json"
api w1 POST /v1/workers/poll -H 'Content-Type: application/json' --data-binary "@$TMP/poll.json"
expect_status 200
bb_job after-odd-poll "echo placed"
submit after-odd-poll
finish after-odd-poll
[ "$(result after-odd-poll .status)" = exited ] || fail "after an odd poll: $(cat "$TMP/after-odd-poll.out/result.json")"

# wait_claimed ID: wait until a worker claimed job ID (RUN_ID) and ran it
# (up to a minute: a worker's poll, claim and sandbox start); OWNER names it.
wait_claimed() {
    local i
    for i in $(seq 1 1200); do
        OWNER=$(worker_of "$RUN_ID")
        [ -n "$OWNER" ] && api dev GET "/v1/jobs/$1" && grep -qF '"state":"running"' "$TMP/body" && return 0
        sleep 0.05
    done
    fail "job $1 was not claimed and running: $(cat "$TMP/body")"
}
# result_reason ID: status/reason of job ID's result as berthctl wait prints it.
expect_lost() {
    finish "$1"
    [ "$(result "$1" .status)/$(result "$1" .reason)" = failed/worker_lost ] ||
        fail "$1 was not fenced as worker_lost: $(cat "$TMP/$1.out/result.json")"
    [ "$(result "$1" .worker)" = null ] || fail "$1: a fenced result names no worker"
    run 0 "$BERTHCTL" result verify "$TMP/$1.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/$1.job.json"
}

# --- While a worker holds a run: it reads that run's inputs only, and its
# output uploads are its own (no evidence caller and no other worker finds
# them; bytes that are not the digest are refused). ---
# It runs while the checks below use its lease (10 s: room for a slow build).
io_job held 'sleep 10; { echo held; cat /inputs/data.txt; } > /tmp/outputs/report.json'
submit held
HELD_RUN=$RUN_ID
wait_claimed held
HOLDER=$OWNER
OTHER=w1
[ "$HOLDER" != w1 ] || OTHER=w2
api "$HOLDER" GET "/v1/workers/runs/$HELD_RUN/inputs/$INPUT_DIGEST"
expect_status 200
cmp -s "$TMP/body" "$TMP/data.txt" || fail "the input read by $HOLDER differs: $(cat "$TMP/body")"
api "$HOLDER" GET "/v1/workers/runs/$HELD_RUN/inputs/sha256:$(printf '0%.0s' $(seq 1 64))"
expect_status 403
body_has "is not an input of run $HELD_RUN"
api "$OTHER" GET "/v1/workers/runs/$HELD_RUN/inputs/$INPUT_DIGEST"
expect_status 403
api "$HOLDER" POST "/v1/workers/runs/$HELD_RUN/outputs/nosuch"
expect_status 404
api "$HOLDER" POST "/v1/workers/runs/$HELD_RUN/outputs/report?size=99999"
expect_status 413
api "$HOLDER" POST "/v1/workers/runs/$HELD_RUN/outputs/report"
expect_status 202
UPLOAD=$(jq -r .upload "$TMP/body")
api dev PATCH "/v1/evidence/uploads/$UPLOAD" -H 'Content-Range: 0-2' --data-binary abc
expect_status 404
api "$OTHER" PATCH "/v1/workers/uploads/$UPLOAD" -H 'Content-Range: 0-2' --data-binary abc
expect_status 404
api "$HOLDER" PATCH "/v1/workers/uploads/$UPLOAD" -H 'Content-Range: 0-2' --data-binary abc
expect_status 202
digest_of() { printf '%s' "$1" | sha256sum | sed 's/ .*//; s/^/sha256:/'; }
api "$HOLDER" PUT "/v1/workers/uploads/$UPLOAD?digest=$(digest_of xyz)"
expect_status 400
body_has digest_mismatch
# One object per declared output and run: the first bytes stored are the
# output's, other bytes after them are refused (so the run's own output,
# uploaded last, fails it as output_invalid).
upload_as() {
    api "$HOLDER" POST "/v1/workers/runs/$HELD_RUN/outputs/report"
    expect_status 202
    UPLOAD=$(jq -r .upload "$TMP/body")
    api "$HOLDER" PUT "/v1/workers/uploads/$UPLOAD?digest=$(digest_of "$1")" -H "Content-Range: 0-$((${#1} - 1))" \
        --data-binary "$1"
}
upload_as '{"first":1}'
expect_status 201
upload_as '{"first":1}'
expect_status 201
upload_as '{"second":2}'
expect_status 409
body_has "was stored already as $(digest_of '{"first":1}')"
# A session given up.
api "$HOLDER" POST "/v1/workers/runs/$HELD_RUN/outputs/report"
UPLOAD=$(jq -r .upload "$TMP/body")
api dev DELETE "/v1/workers/uploads/$UPLOAD"
expect_status 404
api "$HOLDER" DELETE "/v1/workers/uploads/$UPLOAD"
expect_status 200
finish held
[ "$(result held .status)/$(result held .reason)" = failed/output_invalid ] ||
    fail "held: $(jq -c .result "$TMP/held.out/result.json")"
[ "$(result held .output_error.problem)" = digest_mismatch ] || fail "held: $(result held .output_error)"
run 0 "$BERTHCTL" result verify "$TMP/held.out/result.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/held.job.json"
echo "PASS: a worker reads and writes only what the run it holds declares"

# --- An input berthd can no longer serve: the run fails input_unavailable. ---
# gone_setup ID: a job ID whose input is deleted while every worker is
# stopped; false (with what was seen on stderr) when a worker claimed it
# before the deletion all the same, which the assertions below do not cover.
gone_setup() {
    local w ok=true
    printf 'soon gone (%s)\n' "$1" >"$TMP/$1.txt"
    run 0 CLIENT evidence put "$TMP/$1.txt" --media-type text/plain
    GONE_REF=$(cat "$TMP/stdout")
    for w in w1 w2 w3; do kill -STOP "${WPID[$w]}"; done
    for w in w1 w2 w3; do
        for _ in $(seq 1 100); do [ "$(ps -o stat= -p "${WPID[$w]}" | cut -c1)" = T ] && break; sleep 0.01; done
    done
    jq --argjson ref "$GONE_REF" --arg id "$1" '.id = $id | .inputs[0].ref = $ref' "$TMP/held.job.json" >"$TMP/$1.job.json"
    submit "$1"
    run 0 CLIENT evidence rm "$(jq -r .digest <<<"$GONE_REF")" --reason "a test takes it away"
    api dev GET "/v1/jobs/$1"
    if ! grep -qF '"state":"accepted"' "$TMP/body"; then
        printf '# %s was claimed before its input was deleted, with every worker stopped: %s; workers: %s\n' "$1" \
            "$(cat "$TMP/body")" "$(ps -o pid=,stat=,args= -p "${WPID[w1]},${WPID[w2]},${WPID[w3]}" | tr '\n' ';')" >&2
        grep -h "SIGHUP" "$TMP"/w?.log >&2 || :
        ok=false
    fi
    for w in w1 w2 w3; do kill -CONT "${WPID[$w]}"; done
    $ok
}
GONE=gone
EXTRA_CLAIMS=0
gone_setup gone || {
    finish gone
    GONE=gone-again
    EXTRA_CLAIMS=1
    gone_setup gone-again || fail "a stopped worker claimed twice"
}
finish "$GONE"
[ "$(result "$GONE" .status)/$(result "$GONE" .reason)" = failed/input_unavailable ] ||
    fail "$GONE: $(jq -c .result "$TMP/$GONE.out/result.json"); $(grep -h "$RUN_ID\|evidence" "$TMP"/w?.log "$TMP/berthd.log" | tail -n 20)"
[ "$(result "$GONE" .worker.name)" != null ] || fail "$GONE: the worker did not report it"
echo "PASS: an input that is gone fails the run as its worker reports"

# --- A cancellation and a deadline reach the worker: it stops the run and reports why. ---
bb_job cancelled "sleep 30; echo never"
submit cancelled
wait_claimed cancelled
run 0 CLIENT cancel cancelled
finish cancelled
[ "$(result cancelled .status)/$(result cancelled .reason)" = cancelled/cancelled ] ||
    fail "the cancelled run: $(cat "$TMP/cancelled.out/result.json"); $OWNER: $(tail -n 20 "$TMP/$OWNER.log"); berthd: $(tail -n 30 "$TMP/berthd.log")"
[ "$(result cancelled .worker.name)" = "$OWNER" ] || fail "the cancelled run's result names no worker"
run 0 "$BERTHCTL" result verify "$TMP/cancelled.out/result.json" --pubkey "$INST/keys/receipt.pub" \
    --job "$TMP/cancelled.job.json"
bb_job late "sleep 30; echo never" 2000000000
submit late
finish late
[ "$(result late .status)" = expired ] || fail "the run past its wall time: $(cat "$TMP/late.out/result.json")"
[ "$(result late .worker.name)" != null ] || fail "the expired run's result names no worker"
echo "PASS: cancellations and deadlines stop remote runs, as their workers report"

# --- A worker killed mid-job: fenced, never run again, its sandbox stopped when it is back. ---
bb_job killed "sleep 30; echo never"
submit killed
KILLED_RUN=$RUN_ID
wait_claimed killed
VICTIM=$OWNER
# Its claim sent again (as if its answer had been lost): the same answer,
# nothing recorded twice.
jq -c .claim "$TMP/$VICTIM/state/runs/$KILLED_RUN.json" >"$TMP/again.json"
api "$VICTIM" POST /v1/workers/claims -H 'Content-Type: application/json' --data-binary "@$TMP/again.json"
expect_status 201
jq -e --arg r "$KILLED_RUN" '.run_id == $r' "$TMP/body" >/dev/null || fail "the repeated claim got $(cat "$TMP/body")"
kill_worker "$VICTIM"
expect_lost killed
# Logged after the result is recorded (and the client woken): poll for it.
log_has "job killed run $KILLED_RUN: the lease of its worker ran out: fenced" 30 ||
    fail "berthd did not log the fence: $(tail -n 20 "$TMP/berthd.log")"
[ "$(grep -l "run $KILLED_RUN: claimed" "$TMP"/w*.log | wc -l)" = 1 ] || fail "run $KILLED_RUN was claimed twice"
# The sandbox outlived its worker; the worker, back, finds the run fenced and stops it.
crun --root "$TMP/$VICTIM/rt/root" list -q | grep -qx "$KILLED_RUN" || fail "the killed worker's sandbox is gone already"
start_worker "$VICTIM"
wait_log "$TMP/$VICTIM.log" "job killed run $KILLED_RUN: berthd fenced its lease"
for i in $(seq 1 300); do
    crun --root "$TMP/$VICTIM/rt/root" list -q | grep -qx "$KILLED_RUN" || break
    sleep 0.1
done
! crun --root "$TMP/$VICTIM/rt/root" list -q | grep -qx "$KILLED_RUN" || fail "the fenced run's sandbox still runs"
[ ! -e "$TMP/$VICTIM/state/runs/$KILLED_RUN.json" ] || fail "the fenced run's record is left"
echo "PASS: a killed worker's run is fenced, never rerun, and stopped when the worker is back"

# --- A worker stopped past its lease: fenced; what it says later is refused. ---
# Long enough that the worker is stopped before the job ends, even in the
# sanitizer build under load (with "sleep 2" it once reported in time).
bb_job paused "sleep 6; echo late"
submit paused
PAUSED_RUN=$RUN_ID
wait_claimed paused
kill -STOP "${WPID[$OWNER]}"
expect_lost paused
kill -CONT "${WPID[$OWNER]}"
wait_log "$TMP/$OWNER.log" "run $PAUSED_RUN: (berthd fenced its lease|berthd refused the report: 409 fenced)"
run_status_any CLIENT wait paused --json
jq -e '.result.reason == "worker_lost"' "$TMP/stdout" >/dev/null || fail "the late worker changed the result: $(cat "$TMP/stdout")"
echo "PASS: a worker paused past its lease is fenced, and refused afterwards"

# --- berthd killed while workers hold claims: after the restart every run ends once. ---
for i in 1 2 3; do
    bb_job "hold$i" "sleep 8; echo survived $i" # each still running when wait_claimed looks
    submit "hold$i"
done
for i in 1 2 3; do
    RUN_ID=$(run_id_of "$TMP/hold$i.receipt.json")
    wait_claimed "hold$i"
done
kill_berthd
sleep 1
start_berthd
for i in 1 2 3; do
    finish "hold$i"
    [ "$(result "hold$i" .status)" = exited ] || fail "hold$i: $(cat "$TMP/hold$i.out/result.json")"
    [ "$(cat "$TMP/hold$i.out/stdout")" = "survived $i" ] || fail "hold$i printed $(cat "$TMP/hold$i.out/stdout")"
done
echo "PASS: leases outlive a berthd crash; every run ends once"

# --- A pool update ends the enrolments for new jobs until the workers enrol
# again; a run placed before it still runs on workers enrolled into its manifest. ---
for w in w1 w2 w3; do kill -STOP "${WPID[$w]}"; done
bb_job before-update "echo placed before the update"
submit before-update
jq '.name = "fleet" | .backend_allowlist = ["workers"] | .template.timeout_seconds = 3000' \
    "$INST/pools/default.json" >"$TMP/fleet2.json"
run 0 CLIENT pool register "$TMP/fleet2.json"
for w in w1 w2 w3; do kill -CONT "${WPID[$w]}"; done
finish before-update
[ "$(result before-update .status)" = exited ] || fail "the run placed before the update: $(cat "$TMP/before-update.out/result.json")"
bb_job after-update "echo updated"
run 1 CLIENT submit "$TMP/after-update.job.json"
stderr_has "no_backend"
for w in w1 w2 w3; do enrol_worker "$w"; done
for i in $(seq 1 100); do
    CLIENT submit "$TMP/after-update.job.json" >/dev/null 2>&1 && break
    sleep 0.1
done
finish after-update
[ "$(result after-update .status)" = exited ] || fail "after-update: $(cat "$TMP/after-update.out/result.json")"
echo "PASS: a pool update needs the workers to enrol again"

# --- Qualification: with workers.require_qualification, only a worker that
# qualified its runtime itself gets work. ---
for w in w1 w2; do stop_worker "$w"; done
stop_berthd
edit_config '.workers.require_qualification = true'
start_berthd
bb_job unqualified "echo x"
# Refused while w3 (live, enrolled, unqualified) is the only worker; once
# its first poll after the restart arrived, the refusal says why.
for i in $(seq 1 50); do
    run_status_any CLIENT submit "$TMP/unqualified.job.json"
    grep -q no_backend "$TMP/stderr" || fail "an unqualified worker was given work: $(cat "$TMP/stdout" "$TMP/stderr")"
    api dev GET "/v1/audit?after=0"
    grep '"pool.placement_refused"' "$TMP/body" | tail -n1 | grep -q '"reason":"workers_unqualified"' && break
    sleep 0.1
done
grep '"pool.placement_refused"' "$TMP/body" | tail -n1 | grep -q '"reason":"workers_unqualified"' ||
    fail "the refusal does not say workers_unqualified: $(grep placement_refused "$TMP/body" | tail -n1)"
jq --arg p "${BERTH_PROBE:?}" '.qualify = true | .probe = $p' "$TMP/w1/worker.json" >"$TMP/w1/worker.json.new"
chmod 0600 "$TMP/w1/worker.json.new"
mv "$TMP/w1/worker.json.new" "$TMP/w1/worker.json"
START=$SECONDS
start_worker w1
echo "w1 qualified its runtime in $((SECONDS - START)) s"
grep -q "the runtime is qualified (q" "$TMP/w1.log" || fail "w1 did not qualify: $(tail -n 20 "$TMP/w1.log")"
grep -q "works for berthd with 2 slots, qualified" "$TMP/w1.log" || fail "w1 does not say it is qualified"
for i in $(seq 1 50); do
    CLIENT submit "$TMP/unqualified.job.json" >/dev/null 2>&1 && break
    sleep 0.1
done
RUN_ID=$(CLIENT submit "$TMP/unqualified.job.json" --json | jq -r .receipt.run_id)
finish unqualified
[ "$(result unqualified .status)" = exited ] || fail "the qualified worker's run: $(cat "$TMP/unqualified.out/result.json")"
[ "$(result unqualified .worker.name)" = w1 ] || fail "the run went to $(result unqualified .worker.name), not the qualified w1"
# Restarted, it reuses its qualification instead of probing again.
stop_worker w1
start_worker w1
[ "$(grep -c "no current qualification of the runtime: running the live probes" "$TMP/w1.log")" = 1 ] ||
    fail "w1 ran the probes again although its qualification is current"
echo "PASS: only qualified workers get work when berthd requires it"

# --- A revoked worker certificate is turned away. ---
K3=$(keyid_of w3)
publish "$INST/policy.json" jq 'del(.subjects[] | select(.principal == "w3"))'
# berthd rereads the policy on its next request: w3's certificate is then
# turned away at the door (the connection closes, no HTTP answer).
for i in $(seq 1 50); do
    poll_as w3 "$K3"
    [ "$(cat "$TMP/status")" = 000 ] && break
    sleep 0.1
done
expect_status 000
wait_log "$TMP/w3.log" "polling berthd failed"
echo "PASS: a revoked worker certificate is turned away"

# --- Offline, the audit chain re-derives every enrolment and claim. ---
for w in w1 w2 w3 w4; do kill_worker "$w"; done
stop_berthd
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" audit export --out "$TMP/chain.jsonl"
run 0 "$BERTHCTL" audit verify "$TMP/chain.jsonl" --audit-key "$INST/keys/audit.key" --pubkey "$INST/keys/receipt.pub"
CLAIMS=$(cat "$TMP"/w[0-9].log | grep -c ": claimed$")
stdout_has ", 6 enrolments, $CLAIMS claims"
[ "$CLAIMS" = $((23 + EXTRA_CLAIMS)) ] || fail "$CLAIMS runs were claimed, not $((23 + EXTRA_CLAIMS))"
echo "PASS: the audit chain verifies offline"
