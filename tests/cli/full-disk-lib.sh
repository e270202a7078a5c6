# full-disk-lib.sh -- helpers of the full state filesystem tests
# (test-berthd-full-disk.sh, test-berthd-full-disk-stage.sh): 8 MiB tmpfs
# mounts removed on exit, filling one, and berthd log, API and metric probes.
# Source after lib.sh and berthd-lib.sh; needs root (mount -t tmpfs), and
# skips the test otherwise.

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: needs root to mount a tmpfs"
    exit 77
fi

MOUNTS=
cleanup_full_disk() {
    local m
    if [ -n "$BERTHD_PID" ]; then
        kill -KILL "$BERTHD_PID" 2>/dev/null || true
        wait "$BERTHD_PID" 2>/dev/null || true
        BERTHD_PID=
    fi
    for m in $MOUNTS; do umount -l "$m" 2>/dev/null || true; done
    cleanup_berthd
}
trap cleanup_full_disk EXIT

# on_tmpfs DIR: mount a fresh 8 MiB tmpfs (mode 0700) on DIR.
on_tmpfs() {
    mount -t tmpfs -o size=8m,mode=0700 berth-full-disk "$1" || fail "cannot mount a tmpfs on $1"
    MOUNTS="$1 $MOUNTS"
}

# fill DIR NAME: write zeros to DIR/NAME until the filesystem has no block left.
fill() {
    dd if=/dev/zero of="$1/$2" bs=4096 oflag=append conv=notrunc 2>/dev/null || true
    [ "$(df --output=avail -B1 "$1" | tail -n1 | tr -d ' ')" = 0 ] || fail "$1 is not full: $(df -B1 "$1")"
}

# alive: berthd is still running.
alive() {
    kill -0 "$BERTHD_PID" 2>/dev/null || { cat "$TMP/berthd.log" >&2; fail "berthd exited: $1"; }
}

# wait_log TEXT [TRIES]: the log gets a line with TEXT (0.1 s per try).
wait_log() {
    local i
    for i in $(seq 1 "${2:-200}"); do
        grep -qF -- "$1" "$TMP/berthd.log" && return 0
        alive "waiting for '$1'"
        sleep 0.1
    done
    cat "$TMP/berthd.log" >&2
    fail "the log never said '$1'"
}

# submit ID ARGV: POST a job (status and body as api()).
submit() {
    job_doc "$1" "$2" >"$TMP/$1.json"
    api dev POST /v1/jobs --data-binary "@$TMP/$1.json" --max-time 20
}

# metric NAME: its value in the last /metrics reply.
metric() {
    api dev GET /metrics
    expect_status 200
    awk -v n="$1" '$1 == n { print $2 }' "$TMP/body"
}

# finished_events RUN: job.finished events of RUN in the audit chain.
finished_events() {
    api dev GET "/v1/audit"
    expect_status 200
    grep '"type":"job.finished"' "$TMP/body" | grep -c "\"run_id\":\"$1\"" || true
}
