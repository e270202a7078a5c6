# test-berthd-sweep.sh -- reconcile sweeps in the real berthd over real mTLS
# (broker.h, "Sweeps"): a principal whose fingerprint is removed from the
# host policy mid-job has its running and queued jobs cancelled by berthd
# within two reconcile intervals, with reason "revoked" in the signed
# result, while another principal's job runs on; restoring the policy does
# not bring the jobs back.  The scripted runtime plugin stands in for a
# sandbox: what is tested is the broker's sweep.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

INTERVAL_NS=500000000
make_install "\"reconcile_interval_ns\": $INTERVAL_NS"
# One sandbox at a time in pool default, so that a second job queues.
publish "$INST/pools/default.json" jq '.max_concurrency = 1'
start_berthd
# berthd is ready only once its startup reconcile opened admission.
grep -q "admission opens: the startup pass checked every open job (0)" "$TMP/berthd.log" ||
    fail "berthd was ready before its startup reconcile completed: $(cat "$TMP/berthd.log")"
[ "$(grep -n "admission opens" "$TMP/berthd.log" | cut -d: -f1)" -lt "$(grep -n "ready: https://" "$TMP/berthd.log" | cut -d: -f1)" ] ||
    fail "ready was logged before admission opened"
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'

# other: one running job and one queued behind it (the pool is full).
job_doc long '["sleep"]' >"$TMP/long.json"
job_doc queued '["echo","never"]' >"$TMP/queued.json"
api other POST /v1/jobs --data-binary "@$TMP/long.json"
expect_status 201
cp "$TMP/body" "$TMP/long.receipt"
wait_state other long running
api other POST /v1/jobs --data-binary "@$TMP/queued.json"
expect_status 201
cp "$TMP/body" "$TMP/queued.receipt"
sleep 0.6 # more than a reconcile interval: it stays queued (the pool is full)
api other GET /v1/jobs/queued
body_has '"state":"accepted"'
LONG=$(run_id_of "$TMP/long.receipt")
QUEUED=$(run_id_of "$TMP/queued.receipt")

# Revoke: other's fingerprint leaves the policy file (atomic replacement).
FP=$(der_fingerprint "$INST/tls/client-other.pem")
cp "$INST/policy.json" "$TMP/policy.saved"
set_policy "s/$FP/1111111111111111111111111111111111111111111111111111111111111111/"
t0=$(date +%s%N)
# The next reconcile pass (within one interval) decides; the running job
# ends once its sandbox is stopped, on that pass or the next.  The bound on
# the decision is two intervals plus 2 s for a busy machine (make -j2 check
# runs another suite beside this one, and its commits are fsync'd); a sweep
# that waits for a later pass still fails it.
until grep -q "job long run $LONG of other no longer qualifies (revoked)" "$TMP/berthd.log" &&
    grep -q "job queued run $QUEUED of other: accepted -> cancelled" "$TMP/berthd.log"; do
    [ $(($(date +%s%N) - t0)) -le $((2 * INTERVAL_NS + 2000000000)) ] ||
        fail "the sweep did not cancel other's jobs within two reconcile intervals: $(cat "$TMP/berthd.log")"
    sleep 0.02
done
deadline=$((SECONDS + 60))
until grep -q "job long run $LONG of other: reaping -> cancelled" "$TMP/berthd.log"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the revoked running job never ended cancelled: $(cat "$TMP/berthd.log")"
    sleep 0.05
done
grep -q "^cancel $LONG\$" "$TMP/script/calls.log" || fail "the running sandbox was not stopped"
[ "$(starts "$QUEUED")" = 0 ] || fail "the queued job of a revoked principal was started"

# dev is not affected: its job runs on the slot that was freed.
job_doc devjob '["sleep-ms","300"]' >"$TMP/devjob.json"
api dev POST /v1/jobs --data-binary "@$TMP/devjob.json"
expect_status 201
wait_state dev devjob exited

# Restoring the grant does not bring the jobs back: they are terminal, and
# the signed results say why.
cp "$TMP/policy.saved" "$INST/policy.json.new" && mv "$INST/policy.json.new" "$INST/policy.json"
for job in long queued; do
    api other GET "/v1/jobs/$job/result"
    expect_status 200
    cp "$TMP/body" "$TMP/$job.result"
    body_has '"status":"cancelled"'
    body_has '"reason":"revoked"'
    run 0 "$BERTHCTL" result verify "$TMP/$job.result" --pubkey "$INST/keys/receipt.pub" --job "$TMP/$job.json" \
        --receipt "$TMP/$job.receipt"
    stdout_has "status cancelled, reason revoked"
done

# The audit chain names berthd as the one who cancelled, and why.
api dev GET '/v1/audit?after=0'
expect_status 200
cp "$TMP/body" "$TMP/audit.jsonl"
grep '"job.cancel_requested"' "$TMP/audit.jsonl" | grep -q '"actor":"berthd"' ||
    fail "the cancellation is not in the audit chain as berthd's"
grep '"job.cancel_requested"' "$TMP/audit.jsonl" | grep -q '"reason":"revoked"' ||
    fail "the audit event lacks the reason"
stop_berthd
