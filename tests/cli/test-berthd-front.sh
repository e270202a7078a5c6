# test-berthd-front.sh -- berthd's front threads (http.threads, issue 17),
# with the real berthd over real mTLS and real curl:
#   - the configured number of front threads runs (the startup log line and
#     the berth_front_threads gauge), the default is one per online CPU,
#     and a number out of range is refused at startup;
#   - many identical submissions (same job id, same body) fired at once,
#     each on a connection of its own, are handed to the front threads in
#     turn, so they race on different threads: exactly one is 201, the
#     others 200, every reply carries the same receipt and the journal
#     holds the job once (one job.accepted audit event);
#   - SIGTERM drains every thread and berthd exits 0.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

CLIENTS=48
make_install '"http": {"threads": 4, "handshake_timeout_ns": 30000000000, "header_timeout_ns": 30000000000, "max_connections": 256, "max_per_source": 128, "max_per_principal": 128, "max_unauthenticated": 128}'

# metric NAME: the value of an unlabelled metric on /metrics (dev is admin).
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v m="$1" '$1 == m { print $2 }' "$TMP/body"
}

start_berthd
log_has 'front: 4 threads' || fail "no startup line for 4 front threads: $(cat "$TMP/berthd.log")"
[ "$(metric berth_front_threads)" = 4 ] || fail "berth_front_threads is $(metric berth_front_threads), expected 4"

# race ID: CLIENTS identical POSTs of job ID at once, each its own curl (so
# its own connection); replies in $TMP/race-ID/N.{body,status}.
race() {
    local d=$TMP/race-$1 i pids=()
    mkdir -p "$d"
    job_doc "$1" '["true"]' >"$d/job.json"
    for i in $(seq 1 "$CLIENTS"); do
        curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
            -X POST --data-binary "@$d/job.json" -o "$d/$i.body" -w '%{http_code}' --max-time 60 \
            "$(URL /v1/jobs)" >"$d/$i.status" 2>"$d/$i.err" &
        pids+=($!)
    done
    wait "${pids[@]}" || true # not berthd
}

for id in race-a race-b race-c; do
    race "$id"
    d=$TMP/race-$id
    statuses=$(for f in "$d"/*.status; do cat "$f"; echo; done)
    created=$(grep -c '^201$' <<<"$statuses" || true)
    retried=$(grep -c '^200$' <<<"$statuses" || true)
    [ "$created" = 1 ] || fail "$id: $created replies were 201, expected exactly 1: $(sort <<<"$statuses" | uniq -c)"
    [ "$retried" = $((CLIENTS - 1)) ] ||
        fail "$id: $retried replies were 200, expected $((CLIENTS - 1)): $(sort <<<"$statuses" | uniq -c) $(cat "$d"/*.err)"
    # One receipt: every body is the same document.
    receipts=$(for f in "$d"/*.body; do jq -cS . "$f"; done | sort -u | wc -l)
    [ "$receipts" = 1 ] || fail "$id: $receipts different receipts in the replies"
    jq -e --arg id "$id" '.job_id == $id or .job.id == $id or (tostring | contains($id))' "$d/1.body" >/dev/null ||
        fail "$id: the reply is not its receipt: $(cat "$d/1.body")"
    # Recorded once.
    api dev GET /v1/audit
    expect_status 200
    accepted=$(grep '"type":"job.accepted"' "$TMP/body" | grep -c "\"job_id\":\"$id\"" || true)
    [ "$accepted" = 1 ] || fail "$id: $accepted job.accepted events, expected 1"
    api dev GET "/v1/jobs/$id"
    expect_status 200
done

# The same document with another body under the same id is still a conflict.
job_doc race-a '["false"]' >"$TMP/other.json"
api dev POST /v1/jobs --data-binary "@$TMP/other.json"
expect_status 409

stop_berthd
log_has 'front: 4 threads' || fail "the log lost its startup line"

# The default: one front thread per online CPU.
sed -i 's|"threads": 4, ||' "$INST/berthd.json"
start_berthd
[ "$(metric berth_front_threads)" = "$(nproc)" ] ||
    fail "berth_front_threads is $(metric berth_front_threads), expected $(nproc) (one per CPU)"
stop_berthd

# Out of range: refused at startup, with the member named.
sed -i '1s|^{ "http": {|{ "http": {"threads": 65, |' "$INST/berthd.json"
grep -qF '"threads": 65' "$INST/berthd.json" || fail "could not set threads to 65"
st=0
try_start_berthd || st=$?
[ "$st" = 1 ] || fail "berthd with http.threads 65 did not exit at startup ($st)"
grep -q 'threads' "$TMP/berthd.log" || fail "the refusal does not name threads: $(cat "$TMP/berthd.log")"
echo "ok"
