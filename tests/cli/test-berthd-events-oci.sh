# test-berthd-events-oci.sh -- events on the real runtime-oci plugin with
# real runsc (gVisor) and crun: the plugin's watcher tells berthd the
# moment the shim publishes a job's result, so with a reconcile interval of
# 60 s a job's result still arrives through the long poll of
# "berthctl submit --wait" with no reconcile pass in between
# (berth_reconcile_passes_total unchanged).  After a berthd restart the
# watch is re-armed for a job still running, so its end is heard too.
# Root only.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

oci_install runsc crun
edit_config '.reconcile_interval_ns = 60000000000'
add_pool only-runsc runsc
add_pool only-crun crun
start_berthd

# metric NAME: an unlabelled metric of /metrics (dev is the admin).
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v m="$1" '$1 == m { print $2 }' "$TMP/body"
}

passes=$(metric berth_reconcile_passes_total)
for rt in runsc crun; do
    # The job ends after the long poll began.
    POOL=only-$rt bb_job "late-$rt" "sleep 1; echo done on $rt"
    run 0 CLIENT submit "$TMP/late-$rt.job.json" --wait --timeout 50
    grep -qx "done on $rt" "$TMP/stdout" || fail "$rt: stdout $(cat "$TMP/stdout") $(cat "$TMP/stderr")"
    grep -q "job late-$rt exited with exit code 0" "$TMP/stderr" || fail "$rt: $(cat "$TMP/stderr")"
    # At once too: /bin/true.
    POOL=only-$rt bb_job "true-$rt" "true"
    run 0 CLIENT submit "$TMP/true-$rt.job.json" --wait --timeout 50
done
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] ||
    fail "a reconcile pass ran ($passes -> $(metric berth_reconcile_passes_total)): results did not come by the events"
[ "$(metric berth_job_events_total)" -ge 4 ] || fail "berth_job_events_total is $(metric berth_job_events_total)"

# A restart while a job runs: inspect re-arms its watch.
# Still running after the restart (well within the 60 s between timed passes).
POOL=only-runsc bb_job across "sleep 12; echo after the restart"
submit across
wait_state dev across running
stop_berthd
start_berthd
passes=$(metric berth_reconcile_passes_total)
api dev GET /v1/jobs/across
body_has '"state":"running"'
run 0 CLIENT wait across --timeout 50
grep -qx "after the restart" "$TMP/stdout" || fail "across: $(cat "$TMP/stdout") $(cat "$TMP/stderr")"
[ "$(metric berth_reconcile_passes_total)" = "$passes" ] ||
    fail "a reconcile pass ran after the restart: the watch was not re-armed"
stop_berthd
echo "PASS: runsc and crun results arrive by the plugin's notification, also after a restart"
