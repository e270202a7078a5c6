#!/bin/bash
# bench-evidence.sh -- evidence uploads through a real berthd over mTLS
# with the real berthctl and the real evidence-sqlite plugin:
#
#   upload_mb_s=<x> limit_mb_s=<y> ratio=<r>
#       "berthctl evidence put" of a 256 MiB file (wall time, from the
#       command's start until it printed the reference: the session, the
#       http.max_body_bytes chunks over one connection, the commit with its
#       hash check and fdatasync), next to the disk's limit for the same
#       bytes in the same directory (bench-disk-limit: sha256 + write +
#       fdatasync) and their ratio;
#   stage_1m_ms=<a> stage_64m_ms=<b> capture_1m_ms=<c> capture_64m_ms=<d>
#       a job's input staged from the store (get bounded to its size,
#       fdatasync, read back and hashed) and a declared output captured into
#       it (open_output, put), 1 MiB and 64 MiB, as berthd logs them
#       ("staged ... in N ms", "captured ... in N ms"), with the scripted
#       runtime as the sandbox;
#   rss_idle_kib=<a> rss_peak_kib=<b> rss_delta_kib=<c>
#       berthd's resident set before a 1 GiB upload and its peak during it
#       (VmHWM of /proc/PID/status, its high-water mark reset just before
#       the upload by writing 5 to /proc/PID/clear_refs).
#
# MB are 10^6 bytes.  It prints figures and asserts nothing about time.
# Environment: BERTHD, BERTHCTL, BERTH_TEST_PLUGIN_DIR, BERTH_EVIDENCE_PLUGIN_DIR,
# BENCH_DISK_LIMIT (the bench-disk-limit program), BENCH_DIR (the work
# directory, default the current one: the disk measured), BENCH_MIB (256),
# BENCH_RSS_MIB (1024), BENCH_MAX_BODY (http.max_body_bytes, the chunk:
# default berthd's default, 1114112).
set -eu

: "${BERTHD:?}" "${BERTHCTL:?}" "${BERTH_TEST_PLUGIN_DIR:?}" "${BERTH_EVIDENCE_PLUGIN_DIR:?}" "${BENCH_DISK_LIMIT:?}"
MIB=${BENCH_MIB:-256}
RSS_MIB=${BENCH_RSS_MIB:-1024}
WORK=$(mktemp -d "${BENCH_DIR:-$PWD}/bench-evidence-XXXXXX")
PID=
cleanup() {
    [ -z "$PID" ] || { kill -TERM "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -m 0755 "$WORK/plugins"
cp "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_EVIDENCE_PLUGIN_DIR/evidence-sqlite.so" "$WORK/plugins/"
chmod 0755 "$WORK/plugins"/*.so
mkdir -m 0700 "$WORK/script"
printf '{"state_directory":"%s","needs":["inputs","outputs"]}' "$WORK/script" >"$WORK/script.json"
# Below the ephemeral range, where a client's connection may hold the port.
read -r EPHEMERAL _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || EPHEMERAL=32768
[ "$EPHEMERAL" -gt 13024 ] || { echo "bench-evidence.sh: the ephemeral port range starts at $EPHEMERAL" >&2; exit 1; }
PORT=$((EPHEMERAL - 12000 + ($$ * 13 + RANDOM) % 12000))
IMAGE=sha256:6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a0987654321fedcba9876543210fedcba98 # the scripted runtime runs no image
"$BERTHCTL" dev-init "$WORK/inst" --port "$PORT" --backend "script=runtime-script,$WORK/script.json" \
    --image "$IMAGE" --plugin-dir "$WORK/plugins" >/dev/null
# Objects up to 1 GiB, and room for both in dev's quota.
jq --argjson body "${BENCH_MAX_BODY:-1114112}" '.evidence.config.max_object_bytes = 1073741824 |
    .http = {"max_body_bytes": $body}' "$WORK/inst/berthd.json" >"$WORK/b.json"
install -m 0600 "$WORK/b.json" "$WORK/inst/berthd.json"
jq '.subjects[0].evidence_quota = {"bytes": 8589934592}' "$WORK/inst/policy.json" >"$WORK/p.json"
install -m 0600 "$WORK/p.json" "$WORK/inst/policy.json"

"$BERTHD" --config "$WORK/inst/berthd.json" 2>"$WORK/berthd.log" &
PID=$!
for _ in $(seq 1 200); do
    grep -q "ready: https://" "$WORK/berthd.log" && break
    sleep 0.05
done
grep -q "ready: https://" "$WORK/berthd.log" || { cat "$WORK/berthd.log" >&2; exit 1; }

rss() { awk -v f="$1" '$1 == f ":" {print $2}' "/proc/$PID/status"; }
now() { date +%s.%N; }

# berthd's memory during a 1 GiB upload, first: idle is berthd as it starts.
head -c $((RSS_MIB * 1048576)) /dev/urandom >"$WORK/large"
idle=$(rss VmRSS)
echo 5 >"/proc/$PID/clear_refs"
"$BERTHCTL" --config "$WORK/inst/client.json" evidence put "$WORK/large" >"$WORK/ref-large" 2>>"$WORK/berthctl.log"
peak=$(rss VmHWM)
rm -f "$WORK/large"
echo "bench-evidence: berthd during a ${RSS_MIB} MiB upload"
echo "rss_idle_kib=$idle rss_peak_kib=$peak rss_delta_kib=$((peak - idle))"

# The disk's limit, in the directory the store is in.
limit=$("$BENCH_DISK_LIMIT" --dir "$WORK/inst/state" --mib "$MIB" | grep -o 'limit_mb_s=[0-9.]*' | cut -d= -f2)

# The upload; the file is read once first, so that the client reads from the page cache.
head -c $((MIB * 1048576)) /dev/urandom >"$WORK/object"
cat "$WORK/object" >/dev/null
t0=$(now)
"$BERTHCTL" --config "$WORK/inst/client.json" evidence put "$WORK/object" >"$WORK/ref" 2>>"$WORK/berthctl.log"
t1=$(now)
upload=$(awk -v b=$((MIB * 1048576)) -v a="$t0" -v z="$t1" 'BEGIN {printf "%.1f", b / 1e6 / (z - a)}')
ratio=$(awk -v u="$upload" -v l="$limit" 'BEGIN {printf "%.2f", u / l}')
echo "bench-evidence: ${MIB} MiB with berthctl evidence put, chunks of http.max_body_bytes ${BENCH_MAX_BODY:-1114112}"
echo "upload_mb_s=$upload limit_mb_s=$limit ratio=$ratio"
# Where the time went: the commit (PUT: the last chunk, the store's hash
# check, fdatasync and link) as berthd logged it, the rest in the chunks.
commit_ms=$(grep ' PUT /v1/evidence/uploads/.* 201 ' "$WORK/berthd.log" | tail -n1 | awk '{print $(NF-1)}')
chunks=$(grep -c ' PATCH /v1/evidence/uploads/' "$WORK/berthd.log" || true)
awk -v a="$t0" -v z="$t1" -v c="$commit_ms" -v n="$chunks" \
    'BEGIN {printf "total_s=%.2f commit_s=%.2f chunks_s=%.2f requests=%d\n", z - a, c / 1000, z - a - c / 1000, n + 3}'

# Input staging and output capture, 1 MiB and 64 MiB.
figures=
for m in 1 64; do
    head -c $((m * 1048576)) /dev/urandom >"$WORK/in-$m"
    ref=$("$BERTHCTL" --config "$WORK/inst/client.json" evidence put "$WORK/in-$m" 2>>"$WORK/berthctl.log")
    rm -f "$WORK/in-$m"
    for kind in stage capture; do
        if [ "$kind" = stage ]; then
            extra=$(jq -nc --argjson r "$ref" '{argv: ["echo"], inputs: [{path: "/inputs/data", ref: $r}]}')
        else
            extra=$(jq -nc --arg s "report@$((m * 1048576))" --argjson n $((m * 1048576)) \
                '{argv: ["outputs", $s], outputs: [{id: "report", path: "/tmp/outputs/report",
                  media_type: "application/octet-stream", max_bytes: $n}]}')
        fi
        jq -n --arg id "$kind-$m" --arg img "$IMAGE" --argjson x "$extra" --argjson a $((m * 1048576)) \
            '{schema_version: 1, id: $id, pool: "default", image: $img,
              limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 16777216,
                       wall_time_ns: 60000000000, output_bytes: 65536, artifact_bytes: $a}} + $x' >"$WORK/$kind-$m.json"
        "$BERTHCTL" --config "$WORK/inst/client.json" submit "$WORK/$kind-$m.json" --wait >/dev/null 2>>"$WORK/berthctl.log" ||
            { echo "bench-evidence: job $kind-$m did not exit 0: $(tail -n1 "$WORK/berthctl.log")" >&2; }
        word=$([ "$kind" = stage ] && echo staged || echo captured)
        ms=$(grep "job $kind-$m run .*: $word 1 " "$WORK/berthd.log" | tail -n1 | sed -n 's/.* in \([0-9]*\) ms.*/\1/p')
        figures="$figures ${kind}_${m}m_ms=${ms:-?}"
    done
done
echo "bench-evidence: a job's input staged and its declared output captured, 1 MiB and 64 MiB"
echo "$figures" | awk '{print $1, $3, $2, $4}'
