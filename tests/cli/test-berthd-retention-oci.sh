# test-berthd-retention-oci.sh -- retention on the real runtime-oci plugin
# and real runsc (gVisor): a finished job's runtime tombstone
# (STATE/jobs/<run_id>, the reaped job directory) is dropped when berthd
# prunes the job, and an identical retry of the pruned job gets its receipt
# back and starts no sandbox (no job directory is made again).  Root only.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

oci_install runsc
edit_config '.retention = {"jobs_ns": 5000000000} | .reconcile_interval_ns = 100000000'
start_berthd

bb_job gone 'echo pruned-soon'
submit gone
finish gone
[ "$(result gone .status)/$(result gone .exit_code)" = exited/0 ] || fail "the job: $(cat "$TMP/gone.out/result.json")"
wait_reaped runsc "$RUN_ID"
DIGEST_RESULT=$("$BERTHCTL" digest --canonical "$TMP/gone.out/result.json")

# Pruned: the runtime's tombstone goes with the job's record.
for i in $(seq 1 200); do
    [ -e "$TMP/state-runsc/jobs/$RUN_ID" ] || break
    sleep 0.1
done
[ ! -e "$TMP/state-runsc/jobs/$RUN_ID" ] || fail "the runtime tombstone of $RUN_ID was not pruned: $(cat "$TMP/berthd.log")"
# The runtime drops its tombstone first; the journal's prune commits, and
# is logged, after it (broker-prune.c): wait for the line, not just the
# directory (an ASan build showed the gap).
for i in $(seq 1 200); do
    grep -q "job gone run $RUN_ID of dev: pruned (exited" "$TMP/berthd.log" && break
    sleep 0.1
done
grep -q "job gone run $RUN_ID of dev: pruned (exited" "$TMP/berthd.log" || fail "the pruning was not logged"
run 1 CLIENT collect gone
grep -q "410 pruned" "$TMP/stderr" || fail "collect: $(cat "$TMP/stderr")"
api dev GET /v1/jobs/gone/result
expect_status 410
body_has "\"result_digest\":\"$DIGEST_RESULT\""

# An identical retry, after a restart: the receipt, and no sandbox.
stop_berthd
start_berthd
run 0 CLIENT submit "$TMP/gone.job.json" --json
[ "$("$BERTHCTL" digest --canonical "$TMP/stdout")" = "$("$BERTHCTL" digest --canonical "$TMP/gone.receipt.json")" ] ||
    fail "the retry got another receipt: $(cat "$TMP/stdout")"
sleep 1 # ten dispatch passes
[ ! -e "$TMP/state-runsc/jobs/$RUN_ID" ] || fail "the pruned job $RUN_ID was started again"
run 0 CLIENT journal stats --json
[ "$(jq -r .tombstones "$TMP/stdout")" = 1 ] || fail "journal stats: $(cat "$TMP/stdout")"
stop_berthd
echo "PASS: runsc's tombstone is pruned with its job, and the job never runs again"
