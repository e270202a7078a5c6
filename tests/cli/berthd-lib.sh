# berthd-lib.sh -- helpers for the tests that run the real berthd (bash).
#
# Sourced after lib.sh.  An installation is made with the real
# "berthctl dev-init" in $TMP/inst, with the scripted runtime plugin
# (tests/plugins/runtime-script.c) as backend "script" and two principals:
# "dev" (admin) and "other".  berthd listens on 127.0.0.1 only.

: "${BERTHD:?BERTHD must point at the built berthd}"
: "${BERTH_TEST_PLUGIN_DIR:?}"
# Real curl and openssl are the clients; jq edits the configuration.
require_tool curl curl
require_tool openssl openssl
require_tool jq jq

INST=$TMP/inst
SAMPLE_IMAGE=sha256:6f1c3b0a9e2d4c8b7a6f5e4d3c2b1a0987654321fedcba9876543210fedcba98
BERTHD_PID=
PORT=

# A port nobody listens on, from a range chosen by this shell's pid, below
# the kernel's ephemeral range (ip_local_port_range, 32768 and up by
# default): an outgoing connection of any test may take a port of that
# range as its source port, and so hold berthd's port between a stop and a
# restart ("Address already in use").
pick_port() {
    local p tries=0 lo hi=32768
    read -r hi _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || hi=32768
    lo=$((hi > 13024 ? hi - 12000 : 1024))
    [ "$hi" -gt "$lo" ] || fail "the ephemeral port range starts at $hi: no room below it"
    p=$((lo + ($$ * 7 + RANDOM) % (hi - lo)))
    while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
        p=$((lo + (p - lo + 97) % (hi - lo)))
        tries=$((tries + 1))
        [ $tries -lt 50 ] || fail "no free port found"
    done
    PORT=$p
}

# make_install [HTTP_JSON_MEMBERS]: dev-init, then splice extra top-level
# members (for example an "http" object) into berthd.json.  The plugins
# come from $PLUGINS when set (plugin_dir), else from the test plugins.
make_install() {
    pick_port
    mkdir -p -m 0700 "$TMP/script"
    printf '{"state_directory":"%s"}' "$TMP/script" >"$TMP/script.json"
    run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --principal other \
        --image "$SAMPLE_IMAGE" --backend "script=runtime-script,$TMP/script.json" \
        --plugin-dir "${PLUGINS:-$BERTH_TEST_PLUGIN_DIR}"
    if [ -n "${1:-}" ]; then
        # berthd.json starts with "{" on its own line: insert after it.
        sed -i "1s|^{\$|{ $1,|" "$INST/berthd.json"
        grep -qF "$1" "$INST/berthd.json" || fail "could not add $1 to berthd.json"
    fi
}

# wait_empty DIR [SECONDS]: wait up to SECONDS (default 30) for DIR to be
# empty; fails naming what is left.  For what berthd removes after it has
# recorded a result (a job's staged inputs go when it is reaped, which
# follows the result a waiting client already holds).
wait_empty() {
    local deadline=$((SECONDS + ${2:-30}))
    while [ -n "$(ls -A "$1")" ]; do
        [ "$SECONDS" -lt "$deadline" ] || fail "$1 still holds: $(ls -A "$1")"
        sleep 0.1
    done
}

# plugin_dir FILE...: $TMP/plugins, a trusted plugin directory with a copy
# of each FILE (a plugin's .so); sets PLUGINS to it.
plugin_dir() {
    PLUGINS=$TMP/plugins
    mkdir -m 0755 "$PLUGINS"
    cp "$@" "$PLUGINS/"
    chmod 0755 "$PLUGINS"/*.so
}

# evidence_plugins: $TMP/plugins, one plugin directory with the scripted
# runtime and the evidence-sqlite store ($BERTH_EVIDENCE_PLUGIN_DIR), for
# dev-init --plugin-dir (which then configures the store); sets PLUGINS to
# it, picks the port and makes the scripted runtime's state ($TMP/script,
# configuration $TMP/script.json: it reports the "inputs" and "outputs" needs).
evidence_plugins() {
    : "${BERTH_EVIDENCE_PLUGIN_DIR:?}"
    PLUGINS=$TMP/plugins
    mkdir -m 0755 "$PLUGINS"
    cp "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_EVIDENCE_PLUGIN_DIR/evidence-sqlite.so" "$PLUGINS/"
    chmod 0755 "$PLUGINS"/*.so
    pick_port
    mkdir -p -m 0700 "$TMP/script"
    printf '{"state_directory":"%s","needs":["inputs","outputs"]}' "$TMP/script" >"$TMP/script.json"
}

# image_plugins: $TMP/plugins, one plugin directory with the scripted
# runtime and the image-oci-local plugin ($BERTH_IMAGE_PLUGIN_DIR), for
# dev-init --plugin-dir of an installation with an image source; sets
# PLUGINS to it.
image_plugins() {
    : "${BERTH_IMAGE_PLUGIN_DIR:?}"
    PLUGINS=$TMP/plugins
    mkdir -m 0755 "$PLUGINS"
    cp "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_IMAGE_PLUGIN_DIR/image-oci-local.so" "$PLUGINS/"
    chmod 0755 "$PLUGINS"/*.so
}

# busybox_image: the test busybox image (tests/image/build-busybox-image.sh)
# as an OCI layout in $TMP/bb; sets DIGEST to its manifest digest.
busybox_image() {
    require_tool /bin/busybox busybox-static
    "$BERTH_TOP_SRCDIR/tests/image/build-busybox-image.sh" "$TMP/bb" >"$TMP/bb.digest" 2>"$TMP/build.err" ||
        fail "building the busybox image failed: $(cat "$TMP/build.err")"
    DIGEST=$(tail -n1 "$TMP/bb.digest")
}

# try_start_berthd [ENV=VALUE...]: start berthd in the background and wait
# until it logs that it is ready.  Returns 1 if it exited at startup (its
# log is $TMP/berthd.log), 2 if it did not become ready in time (it is
# killed).  "In time" is BERTHD_START_TRIES rounds of 50 ms, a minute by
# default: berthd says "ready" only after its startup reconcile, warm-slot
# sweep and containment recovery, which after a restart with live sandboxes
# (and under ASan) take seconds.
try_start_berthd() {
    local i
    : >"$TMP/berthd.log"
    env "$@" "$BERTHD" --config "$INST/berthd.json" >>"$TMP/berthd.log" 2>&1 &
    BERTHD_PID=$!
    for i in $(seq 1 "${BERTHD_START_TRIES:-1200}"); do
        grep -q "ready: https://" "$TMP/berthd.log" && return 0
        if ! kill -0 "$BERTHD_PID" 2>/dev/null; then
            wait "$BERTHD_PID" 2>/dev/null || true
            BERTHD_PID=
            return 1
        fi
        sleep 0.05
    done
    kill_berthd
    return 2
}

# start_berthd [ENV=VALUE...]: try_start_berthd, or fail with berthd's log.
start_berthd() {
    local st=0
    try_start_berthd "$@" || st=$?
    [ "$st" = 0 ] && return 0
    cat "$TMP/berthd.log" >&2
    [ "$st" = 1 ] && fail "berthd exited at startup"
    fail "berthd did not become ready"
}

# stop_berthd: SIGTERM and wait; fails unless it exits 0.
stop_berthd() {
    local st=0
    [ -n "$BERTHD_PID" ] || return 0
    kill -TERM "$BERTHD_PID"
    wait "$BERTHD_PID" || st=$?
    BERTHD_PID=
    [ "$st" = 0 ] || { cat "$TMP/berthd.log" >&2; fail "berthd exited $st after SIGTERM"; }
}

# kill_berthd: SIGKILL, as a crash.
kill_berthd() {
    [ -n "$BERTHD_PID" ] || return 0
    kill -KILL "$BERTHD_PID" 2>/dev/null || true
    wait "$BERTHD_PID" 2>/dev/null || true
    BERTHD_PID=
}

cleanup_berthd() {
    if [ -n "$BERTHD_PID" ]; then
        kill -KILL "$BERTHD_PID" 2>/dev/null || true
        wait "$BERTHD_PID" 2>/dev/null || true
    fi
    [ -n "${KEEP_TMP:-}" ] || remove_tmp
}
trap cleanup_berthd EXIT

URL() { printf 'https://127.0.0.1:%s%s' "$PORT" "$1"; }

# api WHO METHOD PATH [CURL ARGS...]: real curl with WHO's certificate;
# the body goes to $TMP/body and the status to $TMP/status.
# log_has PATTERN [SECONDS]: wait up to SECONDS (default 30) for a berthd.log
# line matching PATTERN (grep -E); connection refusals are logged as a
# summary at the end of http.refusal_log_interval_ns, not at once.
log_has() {
    local deadline=$((SECONDS + ${2:-30}))
    until grep -qE "$1" "$TMP/berthd.log"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.1
    done
}

api() {
    local who=$1 method=$2 path=$3
    shift 3
    curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-$who.pem" --key "$INST/tls/client-$who.key" \
        -X "$method" -o "$TMP/body" -w '%{http_code}' "$@" "$(URL "$path")" >"$TMP/status" 2>"$TMP/curl.err" ||
        { echo 000 >"$TMP/status"; }
}

# expect_status CODE: the last api call answered CODE.
expect_status() {
    [ "$(cat "$TMP/status")" = "$1" ] ||
        fail "status $(cat "$TMP/status"), expected $1: $(cat "$TMP/body" 2>/dev/null) $(cat "$TMP/curl.err")"
}

# body_has TEXT: the last reply body contains TEXT.
body_has() {
    grep -qF -- "$1" "$TMP/body" || fail "reply lacks '$1': $(cat "$TMP/body")"
}

# job_doc ID ARGV_JSON [WALL_NS]: a job in pool default on the sample image.
job_doc() {
    printf '{"schema_version":1,"id":"%s","pool":"default","image":"%s","argv":%s,"limits":{"cpu_millis":1000,"memory_bytes":268435456,"pids":64,"scratch_bytes":67108864,"wall_time_ns":%s,"output_bytes":65536,"artifact_bytes":1048576}}' \
        "$1" "$SAMPLE_IMAGE" "$2" "${3:-60000000000}"
}

# wait_state WHO ID STATE [SECONDS]: poll GET /v1/jobs/ID until its state
# is STATE, for up to SECONDS (default 60: a state the worker thread
# records after a sandbox starts or ends takes seconds under ASan).  Fails
# at once when the job reaches another terminal state, which it never
# leaves.
wait_state() {
    local deadline=$((SECONDS + ${4:-60})) got
    while :; do
        api "$1" GET "/v1/jobs/$2"
        grep -qF "\"state\":\"$3\"" "$TMP/body" && return 0
        got=$(grep -oE '"state":"(exited|failed|cancelled|expired)"' "$TMP/body" | head -n1 || :)
        [ -z "$got" ] || fail "job $2 ended ($got) without reaching $3: $(cat "$TMP/body")"
        [ "$SECONDS" -lt "$deadline" ] || fail "job $2 never reached $3 in ${4:-60} s: $(cat "$TMP/body")"
        sleep 0.05
    done
}

# starts RUN_ID: how many times the scripted runtime really started RUN_ID.
# A start is the exclusive creation of RUN_ID.job (a later start of the
# same id finds it and logs "again"), followed by a "start RUN_ID new" line
# in calls.log; berthd killed between the two leaves the file without the
# line, which is still one start.  The fence a cancel-before-start writes
# is not a start.
starts() {
    local n
    n=$(grep -c "^start $1 new\$" "$TMP/script/calls.log" 2>/dev/null || true)
    if [ "${n:-0}" = 0 ] && [ -f "$TMP/script/$1.job" ] &&
        ! grep -q cancelled-before-start "$TMP/script/$1.job"; then
        n=1
    fi
    echo "${n:-0}"
}

# run_id_of FILE: the run_id member of a receipt in FILE.
run_id_of() {
    grep -o '"run_id":"r[0-9a-f]*"' "$1" | head -n1 | cut -d'"' -f4
}

# publish FILE CMD...: replace FILE atomically with CMD's output (CMD reads
# the old FILE on standard input), mode 0600, as berthd wants its trusted files.
publish() {
    local f=$1
    shift
    "$@" <"$f" >"$f.new" || fail "could not rewrite $f with $*"
    chmod 0600 "$f.new"
    mv "$f.new" "$f"
}

# set_policy SED_EXPR: rewrite the policy atomically (a new file renamed over it).
set_policy() {
    publish "$INST/policy.json" sed "$1"
}

# add_client WHO: a certificate for WHO signed by the installation's CA
# ($INST/tls/client-WHO.pem and .key), in the policy as principal WHO with
# the grants of "other" (no admin) when the second argument is "listed".
add_client() {
    issue_client_cert "$INST/tls/client-$1" "$1" "$INST/tls/ca"
    [ "${2:-}" = listed ] || return 0
    publish "$INST/policy.json" jq --arg p "$1" --arg fp "$(der_fingerprint "$INST/tls/client-$1.pem")" \
        '.subjects += [.subjects[] | select(.principal == "other") | .principal = $p | .fingerprints = [$fp]]'
}

# add_pool NAME BACKEND...: a pool like "default" (registered from the pools
# directory at berthd's next start) with that allowlist, granted to dev.
add_pool() {
    local name=$1
    shift
    jq --arg n "$name" --args '.name = $n | .backend_allowlist = $ARGS.positional' "$@" \
        <"$INST/pools/default.json" >"$INST/pools/$name.json"
    chmod 0644 "$INST/pools/$name.json"
    publish "$INST/policy.json" jq --arg n "$name" '.subjects[0].pools += [$n]'
}
