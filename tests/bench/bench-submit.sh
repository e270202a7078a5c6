# bench-submit.sh -- job submissions to a real berthd on 127.0.0.1, next to
# the raw fsync rate of the disk its journal is on (bash; run by "make bench"
# from the build tree).
#
# Makes an installation with "berthctl dev-init" (the scripted runtime plugin
# as backend "script", admission limits raised so nothing is refused), starts
# berthd, measures the fsync rate in its state directory, then submits with
# 1, 8 and 64 concurrent keep-alive clients (tests/bench/bench-submit), and
# prints berthd's group-commit metrics, one line per client count in the
# form "clients=N rate=R limit=L ratio=Q p50_ms=X p99_ms=Y", berthd's CPU
# seconds per 1,000 jobs, and its RSS idle and with 10,000 retained jobs.
# L is the in-process accept pipeline measured first, in the same run, on a
# second installation made the same way (tests/bench/bench-pipeline: the
# functions berthd calls with a request body, batches of 64, no TLS, no
# HTTP), and Q = R / L.  Prints figures; asserts nothing about time.  Fails
# when a submission is refused or berthd does not stop cleanly.
#
# Environment: BERTHCTL, BERTHD, BERTH_TEST_PLUGIN_DIR, BENCH_SUBMIT,
# BENCH_PIPELINE (default: the build tree in the current directory),
# BENCH_PIPELINE_JOBS (default 8000), BENCH_SCALE (multiplies the job
# counts, default 1), BENCH_FSYNC_SECONDS (default 2), BENCH_THREADS (berthd's
# http.threads; default: berthd's own, one per CPU), TMPDIR.
# shellcheck shell=bash disable=SC2317
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -eu

top_builddir=$(pwd)
BERTHCTL=${BERTHCTL:-$top_builddir/src/berthctl/berthctl}
# The verbs audit, image, pool and qualify run in berthctl-full, beside it.
export BERTHCTL_FULL="${BERTHCTL_FULL:-${BERTHCTL%/*}/berthctl-full}"
BERTHD=${BERTHD:-$top_builddir/src/berthd/berthd}
BERTH_TEST_PLUGIN_DIR=${BERTH_TEST_PLUGIN_DIR:-$top_builddir/tests/plugins/.libs}
BENCH_SUBMIT=${BENCH_SUBMIT:-$top_builddir/tests/bench/bench-submit}
BENCH_PIPELINE=${BENCH_PIPELINE:-$top_builddir/tests/bench/bench-pipeline}
BENCH_PIPELINE_JOBS=${BENCH_PIPELINE_JOBS:-8000}
BENCH_SCALE=${BENCH_SCALE:-1}
BENCH_FSYNC_SECONDS=${BENCH_FSYNC_SECONDS:-2}

SAMPLE_IMAGE=sha256:6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a0987654321fedcba9876543210fedcba98
# clients:jobs-per-client, before BENCH_SCALE
RUNS="1:400 8:100 64:40"

die() {
    echo "bench-submit.sh: $*" >&2
    exit 1
}

for f in "$BERTHCTL" "$BERTHD" "$BENCH_SUBMIT" "$BENCH_PIPELINE"; do
    [ -x "$f" ] || die "$f is not built (run from the build tree, or set BERTHCTL, BERTHD, BENCH_SUBMIT, BENCH_PIPELINE)"
done
[ -f "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" ] ||
    die "no runtime-script.so in $BERTH_TEST_PLUGIN_DIR (make check builds it; or set BERTH_TEST_PLUGIN_DIR)"
case $BENCH_SCALE in
'' | *[!0-9]* | 0) die "BENCH_SCALE must be a positive integer" ;;
esac
case $BENCH_PIPELINE_JOBS in
'' | *[!0-9]* | 0) die "BENCH_PIPELINE_JOBS must be a positive integer" ;;
esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-submit.XXXXXX")
INST=$TMP/inst
BERTHD_PID=
cleanup() {
    if [ -n "$BERTHD_PID" ]; then
        kill -KILL "$BERTHD_PID" 2>/dev/null || true
        wait "$BERTHD_PID" 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port nobody listens on, below the ephemeral range (a client's connection
# may hold any port in it, and then berthd could not bind that port).
read -r EPHEMERAL _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || EPHEMERAL=32768
[ "$EPHEMERAL" -gt 13024 ] || die "the ephemeral port range starts at $EPHEMERAL: no room below it"
PORT=$((EPHEMERAL - 12000 + ($$ * 7 + RANDOM) % 12000))
tries=0
while (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; do
    PORT=$((EPHEMERAL - 12000 + (PORT + 97) % 12000))
    tries=$((tries + 1))
    [ $tries -lt 50 ] || die "no free port found"
done

# make_installation DIR STATE: "berthctl dev-init" into DIR, the scripted
# runtime keeping its state in STATE, with the admission and connection
# limits raised.
make_installation() {
    mkdir -m 0700 "$2"
    printf '{"state_directory":"%s"}' "$2" >"$2.json"
    "$BERTHCTL" dev-init "$1" --port "$PORT" --principal dev --image "$SAMPLE_IMAGE" \
        --backend "script=runtime-script,$2.json" --plugin-dir "$BERTH_TEST_PLUGIN_DIR" \
        >"$1.dev-init.log" 2>&1 || { cat "$1.dev-init.log" >&2; die "berthctl dev-init failed"; }
    # berthd.json starts with "{" on its own line: raise the admission limits.
    sed -i "1s|^{\$|{ $JOURNAL,|" "$1/berthd.json"
    grep -qF "$JOURNAL" "$1/berthd.json" || die "could not add the journal limits to berthd.json"
    sed -i "1s|^{ |{ $HTTP, |" "$1/berthd.json"
    grep -qF "$HTTP" "$1/berthd.json" || die "could not add the connection limits to berthd.json"
}
JOURNAL='"journal": {"max_active_jobs": 1000000, "max_retained_jobs": 10000000}'
# 64 clients of one certificate on one address open their connections at
# once: more than the front door's defaults let one host and one principal
# hold (http.max_per_source, http.max_per_principal).
HTTP='"http": {'"${BENCH_THREADS:+\"threads\": $BENCH_THREADS, }"'"max_connections": 256, "max_unauthenticated": 128, "max_per_source": 128, "max_per_principal": 128}'
make_installation "$INST" "$TMP/script"

# The pipeline limit first, on an installation of its own (its journal is
# not berthd's), while nothing else runs.
make_installation "$TMP/pipe" "$TMP/pipe-script"
FINGERPRINT=$(openssl x509 -in "$TMP/pipe/tls/client-dev.pem" -outform DER | sha256sum | cut -d' ' -f1)
"$BENCH_PIPELINE" --config "$TMP/pipe/berthd.json" --fingerprint "$FINGERPRINT" --image "$SAMPLE_IMAGE" \
    --jobs "$BENCH_PIPELINE_JOBS" >"$TMP/pipeline.txt" || { cat "$TMP/pipeline.txt" >&2; die "bench-pipeline failed"; }
cat "$TMP/pipeline.txt"
LIMIT=$(sed -n 's/^pipeline .* rate=\([0-9]*\)$/\1/p' "$TMP/pipeline.txt")
[ -n "$LIMIT" ] && [ "$LIMIT" -gt 0 ] || die "bench-pipeline printed no rate"

# The top-level member (two spaces in); the backend's own comes later, deeper.
STATE=$(sed -n 's|^  "state_directory": *"\([^"]*\)".*|\1|p' "$INST/berthd.json" | head -n 1)
[ -n "$STATE" ] || die "no state_directory in berthd.json"

: >"$TMP/berthd.log"
"$BERTHD" --config "$INST/berthd.json" >>"$TMP/berthd.log" 2>&1 &
BERTHD_PID=$!
for i in $(seq 1 200); do
    grep -q "ready: https://" "$TMP/berthd.log" && break
    kill -0 "$BERTHD_PID" 2>/dev/null || { cat "$TMP/berthd.log" >&2; die "berthd exited at startup"; }
    [ "$i" -lt 200 ] || { cat "$TMP/berthd.log" >&2; die "berthd did not become ready"; }
    sleep 0.05
done
[ -d "$STATE" ] || die "berthd did not create its state directory $STATE"

echo "berthd on 127.0.0.1:$PORT, journal in $STATE ($(nproc) CPUs, $(sed -n 's/.*front: \([0-9]*\) threads.*/\1/p' "$TMP/berthd.log" | head -n 1) front threads)"

# berthd's CPU seconds (user + system) so far, and its resident set in KiB.
TICKS=$(getconf CLK_TCK)
cpu_s() { awk -v t="$TICKS" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "/proc/$BERTHD_PID/stat"; }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$BERTHD_PID/status"; }
sleep 0.5
RSS_IDLE=$(rss_kib)
"$BENCH_SUBMIT" --fsync "$STATE" --seconds "$BENCH_FSYNC_SECONDS"

URL=https://127.0.0.1:$PORT
failed=0
results=
total=0
CPU0=$(cpu_s)
for run in $RUNS; do
    clients=${run%%:*}
    per=$((${run#*:} * BENCH_SCALE))
    st=0
    line=$("$BENCH_SUBMIT" --url "$URL" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
        --cacert "$INST/tls/ca.pem" --clients "$clients" --jobs-per-client "$per" --image "$SAMPLE_IMAGE" \
        --tag "bench$clients") || st=$?
    total=$((total + clients * per))
    [ "$st" = 0 ] || { echo "bench-submit.sh: $clients clients: exit status $st" >&2; failed=1; }
    echo "$line"
    results="$results$line
"
done

CPU1=$(cpu_s)

# Fill the journal to 10,000 retained jobs (64 clients), then berthd's RSS.
if [ "$total" -lt 10000 ]; then
    per=$(((10000 - total + 63) / 64))
    "$BENCH_SUBMIT" --url "$URL" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
        --cacert "$INST/tls/ca.pem" --clients 64 --jobs-per-client "$per" --image "$SAMPLE_IMAGE" \
        --tag "fill" >"$TMP/fill.txt" || { cat "$TMP/fill.txt" >&2; failed=1; }
fi
RSS_10K=$(rss_kib)

# The issue's lines: one per client count, limit= the in-process accept
# pipeline measured above.
echo
printf '%s' "$results" | awk -v limit="$LIMIT" '
    /^clients=/ {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        sub(/ms$/, "", v["p50"]); sub(/ms$/, "", v["p99"])
        printf "clients=%s rate=%s limit=%s ratio=%.2f p50_ms=%s p99_ms=%s\n", v["clients"], v["rate"], limit,
            v["rate"] / limit, v["p50"], v["p99"]
    }'
awk -v a="$CPU0" -v b="$CPU1" -v n="$total" 'BEGIN { printf "berthd_cpu_s_per_1000_jobs=%.3f (%.2f s for %d jobs)\n", (b - a) * 1000 / n, b - a, n }'
echo "rss_idle_kib=$RSS_IDLE rss_10k_kib=$RSS_10K"

echo
printf '%8s %8s %10s %8s %10s %10s %10s\n' clients jobs "jobs/s" errors "p50 ms" "p99 ms" "max ms"
printf '%s' "$results" | awk '
    /^clients=/ {
        for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        sub(/ms$/, "", v["p50"]); sub(/ms$/, "", v["p99"]); sub(/ms$/, "", v["max"])
        printf "%8s %8s %10s %8s %10s %10s %10s\n", v["clients"], v["jobs"], v["rate"], v["errors"], v["p50"], v["p99"], v["max"]
    }'

# Group commit: submissions per journal commit, and the time of one commit.
curl -sS --noproxy '*' --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" \
    --key "$INST/tls/client-dev.key" -o "$TMP/metrics" -w '%{http_code}' "$URL/metrics" >"$TMP/metrics.status" ||
    die "GET /metrics failed"
[ "$(cat "$TMP/metrics.status")" = 200 ] || die "GET /metrics: status $(cat "$TMP/metrics.status")"
echo
grep -E '^berth_(submission_batch_size|journal_commit_duration_seconds)_(sum|count) ' "$TMP/metrics" ||
    die "berthd's metrics lack the batch histograms"
awk '
    $1 == "berth_submission_batch_size_sum" { bs = $2 }
    $1 == "berth_submission_batch_size_count" { bc = $2 }
    $1 == "berth_journal_commit_duration_seconds_sum" { cs = $2 }
    $1 == "berth_journal_commit_duration_seconds_count" { cc = $2 }
    $1 == "berth_http_request_duration_seconds_sum" { rs = $2 }
    $1 == "berth_http_request_duration_seconds_count" { rc = $2 }
    END {
        mb = 0; mc = 0; mr = 0
        if (bc > 0) mb = bs / bc
        if (cc > 0) mc = cs / cc * 1000
        if (rc > 0) mr = rs / rc * 1000
        printf "group commit: %d batches, mean batch %.2f submissions, mean commit %.2f ms\n", bc, mb, mc
        printf "berthd side: %d requests, mean %.2f ms from request to reply\n", rc, mr
    }' "$TMP/metrics"
grep -E '^berth_(http_requests_total|admissions_refused_total|jobs)\{' "$TMP/metrics" | grep -v ' 0$' || true

t0=$(date +%s%N)
kill -TERM "$BERTHD_PID"
st=0
wait "$BERTHD_PID" || st=$?
t1=$(date +%s%N)
BERTHD_PID=
echo "berthd: exit status $st $(((t1 - t0) / 1000000)) ms after SIGTERM; $(wc -l <"$TMP/berthd.log") log lines"
if [ "$st" != 0 ]; then
    tail -n 20 "$TMP/berthd.log" >&2
    failed=1
fi
exit $failed
