# oci-lib.sh -- helpers for the tests that run jobs through berthd on the real
# runtime-oci plugin (bash; sourced after lib.sh and berthd-lib.sh).  Needs
# root, runsc and crun.

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: OCI runtimes need root"
    exit 77
fi
: "${BERTH_RUNTIME_PLUGIN_DIR:?}" "${BERTH_IMAGE_PLUGIN_DIR:?}" "${BERTH_OCI_SHIM:?}"
require_tool runsc runsc
require_tool crun crun
require_tool /bin/busybox busybox-static

# edit_config JQ_FILTER [JQ ARGS...]: rewrite berthd.json through jq (mode 0600, atomic).
edit_config() {
    local filter=$1
    shift
    jq "$@" "$filter" "$INST/berthd.json" >"$INST/berthd.json.new" || fail "cannot edit berthd.json with $filter"
    chmod 0600 "$INST/berthd.json.new"
    mv "$INST/berthd.json.new" "$INST/berthd.json"
}

# pin_json PATH: the runtime pin {"path","sha256","size","mode"} of PATH.
pin_json() {
    local p
    p=$(readlink -f "$1")
    printf '{"path":"%s","sha256":"sha256:%s","size":%s,"mode":"%s"}' "$p" \
        "$(sha256sum <"$p" | cut -d' ' -f1)" "$(stat -c %s "$p")" "$(stat -c %04a "$p")"
}

# oci_config NAME: write $TMP/NAME.json, the runtime-oci config of backend
# NAME (runsc or crun), state under $TMP/state-NAME.  contained-runsc and
# contained-crun are those runtimes as a backend bound to containment-systemd
# needs them in the test container of systemd-lib.sh (docs/containment.md):
# no cgroup of the runtime's own, crun without a new session keyring (the
# container's seccomp filter refuses keyctl(2)), and limits written where
# the container delegates a controller (it delegates none: cgroup v2 has no
# memory, pids or cpu controller there on this hybrid host).
oci_config() {
    local name=$1 rt
    rt=$(command -v "${name#contained-}") || fail "${name#contained-} is not installed"
    case $name in
    contained-runsc)
        printf '{"runtime":%s,"isolation":"gvisor","global_args":["--network=none","--platform=ptrace","--ignore-cgroups"],"state_directory":"%s","shim":"%s","pids_ceiling":4096,"cgroup_limits":"when_delegated"}' \
            "$(pin_json "$rt")" "$TMP/state-$name" "$BERTH_OCI_SHIM" >"$TMP/$name.json"
        ;;
    contained-crun)
        printf '{"runtime":%s,"isolation":"native","global_args":["--cgroup-manager=disabled"],"create_args":["--no-new-keyring"],"state_directory":"%s","shim":"%s","cgroup_limits":"when_delegated"}' \
            "$(pin_json "$rt")" "$TMP/state-$name" "$BERTH_OCI_SHIM" >"$TMP/$name.json"
        ;;
    runsc)
        printf '{"runtime":%s,"isolation":"gvisor","global_args":["--network=none","--platform=ptrace"],"state_directory":"%s","shim":"%s","slot_init":"%s","pids_ceiling":4096}' \
            "$(pin_json "$rt")" "$TMP/state-$name" "$BERTH_OCI_SHIM" "${BERTH_SLOT_INIT:?}" >"$TMP/$name.json"
        ;;
    crun)
        printf '{"runtime":%s,"isolation":"native","state_directory":"%s","shim":"%s","slot_init":"%s","unmount":["/sys/fs/cgroup/unified"]}' \
            "$(pin_json "$rt")" "$TMP/state-$name" "$BERTH_OCI_SHIM" "${BERTH_SLOT_INIT:?}" >"$TMP/$name.json"
        ;;
    esac
}

# oci_plugins: a plugin directory with runtime-oci and image-oci-local (and
# evidence-sqlite with OCI_EVIDENCE=1).
oci_plugins() {
    PLUGINS=$TMP/plugins
    mkdir -m 0755 "$PLUGINS"
    cp "$BERTH_RUNTIME_PLUGIN_DIR/runtime-oci.so" "$BERTH_IMAGE_PLUGIN_DIR/image-oci-local.so" "$PLUGINS/"
    # OCI_EVIDENCE=1: the evidence-sqlite store too (dev-init then configures it).
    [ -z "${OCI_EVIDENCE:-}" ] || cp "${BERTH_EVIDENCE_PLUGIN_DIR:?}/evidence-sqlite.so" "$PLUGINS/"
    # OCI_CONTAINED=1: containment-systemd too, for the contained-* backends.
    [ -z "${OCI_CONTAINED:-}" ] || cp "${BERTH_CONTAINMENT_PLUGIN_DIR:?}/containment-systemd.so" "$PLUGINS/"
    chmod 0755 "$PLUGINS"/*.so
}

# oci_install BACKEND...: dev-init with those backends (in that order in the
# default pool), the busybox image imported and granted, require_qualification
# false (qualification is tested on its own).
oci_install() {
    local b args=()
    "$BERTH_TOP_SRCDIR/tests/image/build-busybox-image.sh" "$TMP/bb" >"$TMP/bb.digest" 2>"$TMP/build.err" ||
        fail "building the busybox image failed: $(cat "$TMP/build.err")"
    DIGEST=$(tail -n1 "$TMP/bb.digest")
    oci_plugins
    for b in "$@"; do
        oci_config "$b"
        args+=(--backend "$b=runtime-oci,$TMP/$b.json")
    done
    pick_port
    run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --image "$DIGEST" "${args[@]}" \
        --plugin-dir "$PLUGINS"
    edit_config '.backends[].require_qualification = false'
    # The shim verifies every receipt with berthd's public key (binding.h);
    # dev-init writes it for --runtime backends only, these are --backend.
    edit_config '.backends[].config.broker_public_key = $k' --arg k "$(jq -r .broker_public_key "$INST/client.json")"
    # A contained-* backend is bound to containment-systemd, configured
    # by ct_install_template ($TMP/contained.json).
    for b in "$@"; do
        case $b in
        contained-*)
            edit_config '.backends[$b].containment = {plugin: "containment-systemd", config: $c[0]}' \
                --arg b "$b" --slurpfile c "$TMP/contained.json"
            ;;
        esac
    done
    run 0 "$BERTHCTL" image import "$TMP/bb" --store "$INST/images"
}

# bb_job ID SCRIPT [WALL_NS] [OUTPUT_BYTES]: $TMP/ID.job.json, a job running
# SCRIPT with /bin/sh in the busybox image, in pool $POOL (default "default").
bb_job() {
    jq -n --arg id "$1" --arg img "$DIGEST" --arg s "$2" --argjson w "${3:-60000000000}" --argjson o "${4:-65536}" \
        --arg pool "${POOL:-default}" \
        '{schema_version: 1, id: $id, pool: $pool, image: $img, argv: ["/bin/sh", "-c", $s],
          limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 16777216,
                   wall_time_ns: $w, output_bytes: $o, artifact_bytes: 0}}' >"$TMP/$1.job.json"
}

# CLIENT ARGS...: berthctl as the client "dev".
CLIENT() { "$BERTHCTL" --config "$INST/client.json" "$@"; }

# submit ID: submit $TMP/ID.job.json (fails unless accepted); RUN_ID is its
# run id and SUBMITTED its job id, for the messages of later checks.
submit() {
    run 0 CLIENT submit "$TMP/$1.job.json" --json
    cp "$TMP/stdout" "$TMP/$1.receipt.json"
    RUN_ID=$(run_id_of "$TMP/$1.receipt.json")
    SUBMITTED=$1
}

# finish ID: wait for job ID's signed result and collect it into $TMP/ID.out/.
finish() {
    run_status_any CLIENT wait "$1" --timeout=120 --json
    rm -rf "$TMP/$1.out"
    run 0 CLIENT collect "$1" --out="$TMP/$1.out"
}

run_status_any() {
    set +e
    "$@" >"$TMP/stdout" 2>"$TMP/stderr"
    set -e
}

# result ID JQ: a member of job ID's collected result.
result() { jq -r ".result$2" "$TMP/$1.out/result.json"; }

# placed ID: the backend job ID's receipt names.
placed() { jq -r '.receipt.backend' "$TMP/$1.receipt.json"; }

# wait_reaped BACKEND RUN_ID: until the job directory of RUN_ID in
# BACKEND's state directory ($TMP/state-BACKEND) is its tombstone, the file
# "reaped" alone (up to 30 s).  berthd asks the runtime to reap only after
# it recorded the result, and the shim deletes the container after an early
# result: a client can hold the result before either is done.
wait_reaped() {
    local d="$TMP/state-$1/jobs/$2" i
    for i in $(seq 1 300); do
        [ "$(ls "$d" 2>/dev/null)" = reaped ] && return 0
        sleep 0.1
    done
    fail "the job directory $d was not reaped to its tombstone: $(ls "$d" 2>&1)"
}

# sandbox_gone RUN_ID: once a job's result is recorded, no process of its
# sandbox is left (runsc-sandbox, runsc-gofer, the job's own: every host
# process naming RUN_ID but the job's shim and the runtime's `delete` of
# it, which may still remove the runtime's record of the container after an
# early result, docs/runtime-oci.md); and within 30 s, none at all.
sandbox_gone() {
    local left i
    left=$(pgrep -af -- "$1" | grep -v -e "berth-oci-shim " -e " delete --force $1\$" || true)
    [ -z "$left" ] || fail "processes of the sandbox of $1 remain after its result: $left"
    for i in $(seq 1 300); do
        pgrep -f -- "$1" >/dev/null || return 0
        sleep 0.1
    done
    fail "processes of $1 remain 30 s after its result: $(pgrep -af -- "$1")"
}
