# steps-lib.sh -- where one job's time went through berthd, for the
# benchmarks (sourced by tests/bench/overhead and tests/bench/bench-warm,
# after tests/cli/berthd-lib.sh, with INST set).  From the clocks of the
# client, the journal's audit events (job.accepted, job.started,
# job.finished) and the signed result (started_at, finished_at: the
# shim's, or the slot's for a warm start):
#   submit     client start -> job.accepted (berthctl, TLS, admission,
#              receipt signature, commit)
#   to_start   job.accepted -> started_at (dispatch, claim commit, staging,
#              bundle, shim spawn; a warm claim instead)
#   run        started_at -> finished_at (the runtime's run --detach, which
#              creates and starts the container, /bin/true, exit)
#   record     finished_at -> job.finished (exit noticed, inspect, reap,
#              result signature, commit)
#   deliver    job.finished -> client exit (long-poll answer, result
#              verification, berthctl exit)
#   recorded_running  job.started - job.accepted (when berthd recorded the
#              job running: the runtime plugin's start() or claim returned)

# audit_ms JOB TYPE: the time (ms since the epoch) of JOB's audit event TYPE.
audit_ms() {
    sqlite3 -readonly "$(jq -r .state_directory "$INST/berthd.json")/journal.db" \
        "SELECT line FROM audit_events WHERE type = '$2' ORDER BY seq" |
        jq -r --arg id "$1" 'select(.details.job_id == $id) | .time_ns' | tail -n1 |
        awk '{ printf "%.3f", $1 / 1e6 }'
}

# job_steps JOB T0_MS T1_MS RESULT: the steps of job JOB, submitted at T0_MS
# and its result verified by the client at T1_MS (ms since the epoch), whose
# "submit --wait --json" output is in file RESULT; one line of name=ms.
job_steps() {
    local id=$1 t0=$2 t1=$3 acc run fin started finished
    acc=$(audit_ms "$id" job.accepted)
    run=$(audit_ms "$id" job.started)
    fin=$(audit_ms "$id" job.finished)
    started=$(jq -r '.result.started_at // empty' "$4" | awk '{ printf "%.3f", $1 / 1e6 }')
    finished=$(jq -r '.result.finished_at // empty' "$4" | awk '{ printf "%.3f", $1 / 1e6 }')
    [ -n "$acc" ] && [ -n "$run" ] && [ -n "$fin" ] && [ -n "$started" ] && [ -n "$finished" ] ||
        fail "job $id: its audit events or result times are missing: $(cat "$4")"
    awk -v t0="$t0" -v acc="$acc" -v st="$started" -v en="$finished" -v fin="$fin" -v t1="$t1" -v run="$run" \
        'BEGIN { printf "submit=%.1f to_start=%.1f run=%.1f record=%.1f deliver=%.1f recorded_running=%.1f\n",
                 acc - t0, st - acc, en - st, fin - en, t1 - fin, run - acc }'
}
