# workers-lib.sh -- helpers for the tests and the benchmark that run berthd
# with remote workers (docs/workers.md) on this machine (bash; sourced after
# lib.sh, berthd-lib.sh and oci-lib.sh).  Every worker is its own
# berth-worker process with its own identity, client certificate, state
# directory and runtime-oci configuration (crun), talking to berthd on
# 127.0.0.1 only.
: "${BERTH_WORKER:?}"

# workers_install [LEASE_NS]: oci_install crun with the evidence store
# (inputs and outputs), and pool "fleet" placed on
# the workers only, granted to dev; berthd's workers lease LEASE_NS
# (default 3 s), qualification not required (tested on its own), request
# bodies of 256 KiB at most.
workers_install() {
    OCI_EVIDENCE=1 oci_install crun
    add_pool fleet workers
    # Request bodies of 256 KiB at most: an output of more is uploaded in chunks.
    edit_config '.workers = {lease_ns: $l, require_qualification: false} | .http.max_body_bytes = 262144' \
        --argjson l "${1:-3000000000}"
}

# make_worker NAME [SLOTS]: a client certificate for NAME in the policy as a
# subject that serves "fleet", its client.json, identity key, runtime-oci
# configuration (crun, its own state) and berth-worker configuration, all
# in $TMP/NAME/ (0700).
make_worker() {
    local n=$1 d=$TMP/$1
    mkdir -m 0700 "$d"
    issue_client_cert "$INST/tls/client-$n" "$n" "$INST/tls/ca"
    publish "$INST/policy.json" jq --arg p "$n" --arg fp "$(der_fingerprint "$INST/tls/client-$n.pem")" \
        '.subjects += [.subjects[0] | del(.admin) | .principal = $p | .scope = [$p] | .fingerprints = [$fp]
                       | .pools = [] | .images = [] | .serves = ["fleet"]]'
    jq --arg c "$INST/tls/client-$n.pem" --arg k "$INST/tls/client-$n.key" '.certificate = $c | .private_key = $k' \
        "$INST/client.json" >"$d/client.json"
    chmod 0600 "$d/client.json"
    run 0 "$BERTHCTL" keygen --out "$d/identity.key"
    jq --arg s "$d/rt" --arg k "$(jq -r .broker_public_key "$INST/client.json")" \
        '.state_directory = $s | .broker_public_key = $k' "$TMP/crun.json" >"$d/runtime.json"
    jq -n --arg n "$n" --arg d "$d" --arg p "$PLUGINS" --argjson slots "${2:-2}" --slurpfile rt "$d/runtime.json" \
        '{schema_version: 1, name: $n, client: ($d + "/client.json"), identity: ($d + "/identity.key"),
          state_directory: ($d + "/state"), plugin_directory: $p, slots: $slots, qualify: false,
          runtime: {plugin: "runtime-oci", config: $rt[0]}}' >"$d/worker.json"
    chmod 0600 "$d/worker.json"
}

# enrol_worker NAME: enrol NAME into the current manifest of "fleet".
enrol_worker() {
    run 0 "$BERTH_WORKER" enrol --config "$TMP/$1/worker.json" --pool fleet
}

# start_worker NAME: run NAME in the background (log $TMP/NAME.log, pid in
# WPID[NAME]) and wait until it polls.  Each worker runs in a session of its
# own (setsid(1) execs it, so the pid stays): the tests stop workers with
# SIGSTOP, and a stopped process in the test's own process group gets
# SIGHUP and SIGCONT from the kernel whenever that group is orphaned
# (POSIX; kernel/exit.c kill_orphaned_pgrp()), e.g. when an orphan of the
# group exits while the workers are stopped.
declare -A WPID
start_worker() {
    local i from
    from=$(($(cat "$TMP/$1.log" 2>/dev/null | wc -l) + 1))
    setsid "$BERTH_WORKER" run --config "$TMP/$1/worker.json" >>"$TMP/$1.log" 2>&1 &
    WPID[$1]=$!
    # Up to two minutes: a worker that qualifies its runtime runs the live probes first.
    for i in $(seq 1 2400); do
        tail -n "+$from" "$TMP/$1.log" | grep -q "works for berthd" && return 0
        kill -0 "${WPID[$1]}" 2>/dev/null || { cat "$TMP/$1.log" >&2; fail "worker $1 exited at startup"; }
        sleep 0.05
    done
    cat "$TMP/$1.log" >&2
    fail "worker $1 did not start"
}

# stop_worker NAME: SIGTERM and wait (it drains its runs); fails unless it exits 0.
stop_worker() {
    local st=0
    [ -n "${WPID[$1]:-}" ] || return 0
    kill -TERM "${WPID[$1]}" 2>/dev/null || true
    wait "${WPID[$1]}" || st=$?
    unset "WPID[$1]"
    [ "$st" = 0 ] || { cat "$TMP/$1.log" >&2; fail "worker $1 exited $st after SIGTERM"; }
}

# kill_worker NAME: SIGKILL, as a crash.
kill_worker() {
    [ -n "${WPID[$1]:-}" ] || return 0
    kill -KILL "${WPID[$1]}" 2>/dev/null || true
    wait "${WPID[$1]}" 2>/dev/null || true
    unset "WPID[$1]"
}

cleanup_workers() {
    local n
    for n in "${!WPID[@]}"; do
        kill -KILL "${WPID[$n]}" 2>/dev/null || true
    done
    # A killed worker leaves its sandboxes: stop them (crun, each worker's state).
    for n in "$TMP"/*/rt; do
        [ -d "$n" ] || continue
        crun --root "$n/root" list -q 2>/dev/null | while read -r c; do crun --root "$n/root" delete -f "$c"; done
    done
    cleanup_berthd
}
trap cleanup_workers EXIT

# worker_of RUN_ID: the worker whose log says it claimed RUN_ID ("" none).
worker_of() {
    grep -l "run $1: claimed" "$TMP"/*.log 2>/dev/null | sed -n 's|.*/\(.*\)\.log$|\1|p' | head -n1
}

# wait_log FILE PATTERN [SECONDS]: wait up to SECONDS (default 30) for a
# line of FILE matching PATTERN (grep -E); fails showing its end.
wait_log() {
    local deadline=$((SECONDS + ${3:-30}))
    until grep -qE "$2" "$1" 2>/dev/null; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$1 has no line matching '$2': $(tail -n 5 "$1")"
        sleep 0.1
    done
}
