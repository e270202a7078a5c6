# test-berthd-retention.sh -- retention in the real berthd over real mTLS
# (broker.h, "Retention"): with retention.jobs_ns of 4 s and a journal that
# holds three jobs, finished jobs are pruned by the reconcile loop, the
# runtime forgets them, the exported audit chain verifies and shows one
# job.pruned event per job, an identical retry of a pruned job gets its
# receipt back byte for byte and starts nothing, a changed one conflicts,
# its result answers 410 pruned with the result digest, a full journal
# takes new jobs again once pruning made room, and "berthctl journal stats"
# shows the figures -- all across a berthd restart.  The scripted runtime
# plugin stands in for a sandbox: what is tested is the broker's retention.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

RETENTION_NS=4000000000
make_install "\"retention\": {\"jobs_ns\": $RETENTION_NS}, \"journal\": {\"max_active_jobs\": 3, \"max_retained_jobs\": 3}, \"reconcile_interval_ns\": 100000000"
start_berthd
CTL=("$BERTHCTL" --config "$INST/client.json")

# stats_json: berthctl journal stats --json into $TMP/stats.json.
stats_json() {
    run 0 "${CTL[@]}" journal stats --json
    cp "$TMP/stdout" "$TMP/stats.json"
}
stat_of() { jq -r "$1" "$TMP/stats.json"; }

# wait_tombstones N: poll journal stats until N jobs are pruned (60 s at most).
wait_tombstones() {
    local deadline=$((SECONDS + 60))
    while :; do
        stats_json
        [ "$(stat_of .tombstones)" = "$1" ] && return 0
        [ "$SECONDS" -lt "$deadline" ] || fail "expected $1 pruned jobs: $(cat "$TMP/stats.json")"
        sleep 0.1
    done
}

# submit_as WHO ID ARGV: POST the job, the receipt (or error) in $TMP/body.
submit_as() {
    job_doc "$2" "$3" >"$TMP/$2.json"
    api "$1" POST /v1/jobs --data-binary "@$TMP/$2.json"
}

# release ID...: let the held jobs ID... end (the scripted runtime's "hold").
release() {
    local id
    for id in "$@"; do
        : >"$TMP/script/$(run_id_of "$TMP/$id.receipt").release"
    done
}

# Three held jobs fill the journal: a fourth is refused, and nothing that
# has not finished is ever pruned to make room.
for id in r1 r2 r3; do
    submit_as dev "$id" '["hold"]'
    expect_status 201
    cp "$TMP/body" "$TMP/$id.receipt"
done
for id in r1 r2 r3; do wait_state dev "$id" running; done
R1=$(run_id_of "$TMP/r1.receipt")
submit_as dev r4 '["echo","r4"]'
expect_status 503
body_has '"error":"full"'
stats_json
[ "$(stat_of .retained)" = 3 ] && [ "$(stat_of .max_retained)" = 3 ] && [ "$(stat_of .tombstones)" = 0 ] ||
    fail "stats before pruning: $(cat "$TMP/stats.json")"
[ "$(stat_of .jobs.running)" = 3 ] || fail "three running jobs expected: $(cat "$TMP/stats.json")"
[ "$(stat_of .next_expiry.jobs)" = null ] || fail "no job has finished: $(cat "$TMP/stats.json")"
[ "$(stat_of .retention.jobs_ns)" = "$RETENTION_NS" ] || fail "retention.jobs_ns: $(cat "$TMP/stats.json")"
[ "$(stat_of .evidence)" = null ] || fail "no evidence store is configured: $(cat "$TMP/stats.json")"
# Only an admin reads the statistics.
api other GET /v1/journal/stats
expect_status 403

# r1 ends: its result and its expiry, read well within its retention.
release r1
wait_state dev r1 exited
api dev GET /v1/jobs/r1/result
expect_status 200
RESULT_DIGEST=$("$BERTHCTL" digest --canonical "$TMP/body")
stats_json
NEXT=$(stat_of .next_expiry.jobs)
[ "$NEXT" != null ] || fail "no next job expiry: $(cat "$TMP/stats.json")"
release r2 r3
for id in r2 r3; do wait_state dev "$id" exited; done

# Pruned within a few reconcile passes of their expiry.
wait_tombstones 3
[ "$(stat_of .retained)" = 0 ] || fail "retained after pruning: $(cat "$TMP/stats.json")"
[ "$(stat_of .next_expiry.jobs)" = null ] || fail "nothing is left to expire: $(cat "$TMP/stats.json")"
NOW=$(date +%s%N)
[ "$NOW" -ge "$NEXT" ] || fail "pruned before its expiry ($NEXT, now $NOW)"
# Logged just after the prune commits (and the lock is released): allow the gap.
for i in $(seq 1 100); do
    grep -q "job r1 run $R1 of dev: pruned (exited" "$TMP/berthd.log" && break
    sleep 0.1
done
grep -q "job r1 run $R1 of dev: pruned (exited" "$TMP/berthd.log" || fail "the pruning was not logged: $(cat "$TMP/berthd.log")"
[ "$(grep -c "^forget $R1\$" "$TMP/script/calls.log")" = 1 ] || fail "the runtime did not forget $R1 once"
[ ! -e "$TMP/script/$R1.job" ] && [ ! -e "$TMP/script/$R1.reaped" ] || fail "the runtime tombstone of $R1 is still there"

# Across a restart: the tombstones answer for the pruned jobs.
stop_berthd
start_berthd
# An identical retry: the same receipt bytes, and nothing runs.
api dev POST /v1/jobs --data-binary "@$TMP/r1.json"
expect_status 200
cmp -s "$TMP/body" "$TMP/r1.receipt" || fail "the retry's receipt differs: $(cat "$TMP/body") vs $(cat "$TMP/r1.receipt")"
sleep 0.5 # five reconcile and dispatch passes
[ "$(grep -c "^start $R1 " "$TMP/script/calls.log")" = 1 ] || fail "the runtime saw a second start of $R1"
[ ! -e "$TMP/script/$R1.job" ] || fail "job r1 ran again"
# berthctl submit of the same document: the same receipt, verified.
run 0 "${CTL[@]}" submit "$TMP/r1.json" --json
[ "$("$BERTHCTL" digest --canonical "$TMP/stdout")" = "$("$BERTHCTL" digest --canonical "$TMP/r1.receipt")" ] ||
    fail "berthctl submit printed another receipt: $(cat "$TMP/stdout")"
# A changed job with the same id conflicts, as for a retained job.
submit_as dev r1 '["echo","changed"]'
expect_status 409
body_has '"error":"conflict"'
# Collection: 410 pruned with the final state and the result digest.
api dev GET /v1/jobs/r1/result
expect_status 410
body_has '"error":"pruned"'
body_has '"state":"exited"'
body_has "\"result_digest\":\"$RESULT_DIGEST\""
api dev GET /v1/jobs/r1
expect_status 410
run 1 "${CTL[@]}" collect r1
grep -q "410 pruned" "$TMP/stderr" || fail "collect did not say pruned: $(cat "$TMP/stderr")"
# Another principal still sees no such job.
api other GET /v1/jobs/r1/result
expect_status 404

# No longer wedged: the journal takes jobs again, fills, and empties again.
for id in r4 r5 r6; do
    submit_as dev "$id" '["hold"]'
    expect_status 201
    cp "$TMP/body" "$TMP/$id.receipt"
done
submit_as dev r7 '["echo","r7"]'
expect_status 503
body_has '"error":"full"'
release r4 r5 r6
for id in r4 r5 r6; do wait_state dev "$id" exited; done
wait_tombstones 6
# r7 is held while the statistics are read: once it ends it is pruned 4 s
# later, and "retained: 1" must not depend on reading them in time.
submit_as dev r7 '["hold"]'
expect_status 201
cp "$TMP/body" "$TMP/r7.receipt"
wait_state dev r7 running

# The human-readable statistics.
run 0 "${CTL[@]}" journal stats
grep -q "^tombstones:  6 pruned jobs" "$TMP/stdout" || fail "journal stats: $(cat "$TMP/stdout")"
grep -q "^retention:   jobs 4 s, outputs 7 d" "$TMP/stdout" || fail "journal stats: $(cat "$TMP/stdout")"
grep -q "^retained:    1 of 3" "$TMP/stdout" || fail "journal stats: $(cat "$TMP/stdout")"
grep -q "^evidence:    no evidence store" "$TMP/stdout" || fail "journal stats: $(cat "$TMP/stdout")"
release r7
wait_state dev r7 exited
run 1 "$BERTHCTL" --config "$TMP/nowhere.json" journal stats
run 2 "${CTL[@]}" journal stats extra
run 2 "${CTL[@]}" journal list

# The chain, exported offline after berthd stopped, verifies with every prune in it.
wait_tombstones 7
stop_berthd
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" audit export --out "$TMP/chain.jsonl"
run 0 "$BERTHCTL" audit verify "$TMP/chain.jsonl" --audit-key "$INST/keys/audit.key"
[ "$(grep -c '"type":"job.pruned"' "$TMP/chain.jsonl")" = 7 ] || fail "7 job.pruned events expected"
grep '"type":"job.pruned"' "$TMP/chain.jsonl" | grep -q "\"run_id\":\"$R1\"" || fail "no job.pruned event for $R1"
grep '"type":"job.pruned"' "$TMP/chain.jsonl" | grep "\"run_id\":\"$R1\"" | grep -q "\"result_digest\":\"$RESULT_DIGEST\"" ||
    fail "the job.pruned event of $R1 lacks its result digest"
# A tampered prune event breaks the chain.
sed "0,/\"type\":\"job.pruned\"/s/\"state\":\"exited\"/\"state\":\"failed\"/" "$TMP/chain.jsonl" >"$TMP/bad.jsonl"
cmp -s "$TMP/chain.jsonl" "$TMP/bad.jsonl" && fail "the tamper did not change the chain"
run 3 "$BERTHCTL" audit verify "$TMP/bad.jsonl" --audit-key "$INST/keys/audit.key"
echo "PASS: retention prunes, answers for pruned jobs and never wedges, across a restart"
