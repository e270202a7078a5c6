# test-bundle-runtimes.sh -- the deny-all config.json (src/lib/job/bundle.h) of a
# real job on a real staged busybox image, run by real runsc (gVisor, ptrace
# platform, --network=none) and real crun: what the configuration promises
# is what the sandbox shows.  Needs root (OCI runtimes create namespaces);
# skipped (77) otherwise, and tests/run-all.sh checks it passed in CI.
#
# crun 1.8 refuses this machine's hybrid cgroup layout (see
# ../shared/notes/platform-facts.md); it runs in a private mount namespace
# with the cgroup v2 "unified" mount removed, as the runtime-oci plugin does
# (its "unmount" setting).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
: "${BERTH_MKBUNDLE:?}"

if [ "$(id -u)" != 0 ]; then
    echo "SKIP: OCI runtimes need root"
    exit 77
fi
require_tool runsc runsc
require_tool crun crun
require_tool /bin/busybox busybox-static
require_tool jq jq

"$BERTH_TOP_SRCDIR/tests/image/build-busybox-image.sh" "$TMP/bb" >/dev/null 2>"$TMP/build.err" ||
    fail "building the busybox image failed: $(cat "$TMP/build.err")"
mkdir -m 0700 "$TMP/store"
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$TMP/store"
DIGEST=$(cat "$TMP/stdout")
printf 'a,b\n1,2\n' >"$TMP/data.csv"
chmod 0666 "$TMP/data.csv" # writable by anyone on the host: only the mount keeps it read-only

# The probe: each line names what it shows.
SCRIPT='echo "uid $(id -u) gid $(id -g)"
awk '\''$2 == "/" { split($4, o, ","); print "root", o[1] }'\'' /proc/mounts
touch /workspace/x 2>/dev/null && echo "root writable" || echo "root not writable"
echo scratch >/tmp/ok && cat /tmp/ok
dd if=/dev/zero of=/tmp/big bs=1024 count=2048 2>&1 | grep -q "No space left" && echo "scratch full at its size"
echo "ifaces $(ls /sys/class/net | tr "\n" " ")"
grep CapEff /proc/self/status | tr -d "\t"
echo "cwd $(pwd)"
echo "input $(cat /inputs/data.csv | tr "\n" " ")"
(echo x >>/inputs/data.csv) 2>/dev/null && echo "input writable" || echo "input read-only"
echo result >/tmp/outputs/o && cat /tmp/outputs/o
dd if=/dev/zero of=/tmp/outputs/big bs=1024 count=1024 2>&1 | grep -q "No space left" && echo "outputs full at their size"
dd if=/dev/zero of=/dev/shm/big bs=1024 count=1024 2>&1 | grep -q "No space left" && echo "shm full at its size"
touch /dev/x 2>/dev/null && echo "dev writable" || echo "dev not writable"
echo to-stderr >&2
exit 3'

# /tmp/outputs is a bind of a host tmpfs of artifact_bytes (512 KiB), as
# the runtime-oci plugin mounts one per job: unmounted before $TMP goes.
trap 'for m in "$TMP"/*-outputs; do umount "$m" 2>/dev/null; done; rm -rf "$TMP"' EXIT

# bundle NAME: a fresh bundle directory with the staged rootfs and config.json.
bundle() {
    local b=$TMP/$1
    mkdir -m 0700 "$b" "$TMP/$1-outputs"
    mount -t tmpfs -o size=524288,nr_inodes=64,mode=0700,uid=65534,gid=65534,nosuid,nodev,noexec \
        berth-test-outputs "$TMP/$1-outputs"
    run 0 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store" --out "$b/rootfs"
    chmod 0755 "$b/rootfs" # the guest's "/"; the bundle directory stays private
    jq -n --arg d "$DIGEST" --arg s "$SCRIPT" '{schema_version: 1, id: "probe", pool: "default", image: $d,
        argv: ["/bin/sh", "-c", $s],
        inputs: [{path: "/inputs/data.csv", ref: {digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", size: 8}}],
        limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 1048576,
                 wall_time_ns: 60000000000, output_bytes: 65536, artifact_bytes: 524288}}' >"$b.job.json"
    printf '%s' '{"pool_hash":"00","template":{"env":{"LANG":"C.UTF-8"},"root":"/workspace","timeout_seconds":600},"backend_override":null,"network_egress_class":"none","credential_env":[]}' \
        >"$b.effective.json"
    run 0 "$BERTH_MKBUNDLE" "$b" "$b.job.json" "$b.effective.json" \
        --input "/inputs/data.csv=$TMP/data.csv" --outputs "$TMP/$1-outputs" --nproc 64 --pids 4096
    [ "$(stat -c %a "$b/config.json")" = 600 ] || fail "config.json is mode $(stat -c %a "$b/config.json")"
}

# probe_ok NAME: what the sandbox of bundle NAME reported.
probe_ok() {
    local b=$TMP/$1 out=$TMP/$1.stdout err=$TMP/$1.stderr
    grep -qx "uid 65534 gid 65534" "$out" || fail "$1: not uid/gid 65534: $(cat "$out")"
    grep -qx "root ro" "$out" || fail "$1: the root is not mounted read-only: $(cat "$out")"
    grep -qx "root not writable" "$out" || fail "$1: the root was writable"
    grep -qx "scratch full at its size" "$out" || fail "$1: /tmp took more than scratch_bytes"
    grep -qx "scratch" "$out" || fail "$1: /tmp is not writable"
    grep -qx "ifaces lo " "$out" || fail "$1: network interfaces other than lo: $(grep ifaces "$out")"
    grep -qx "CapEff:0000000000000000" "$out" || fail "$1: effective capabilities: $(grep CapEff "$out")"
    grep -qx "cwd /workspace" "$out" || fail "$1: cwd: $(grep cwd "$out")"
    grep -qx "input a,b 1,2 " "$out" || fail "$1: the input: $(grep input "$out")"
    grep -qx "input read-only" "$out" || fail "$1: the input was writable"
    [ "$(cat "$TMP/data.csv")" = "a,b
1,2" ] || fail "$1: the input changed on the host"
    grep -q "to-stderr" "$out" && fail "$1: stderr reached stdout"
    grep -qx "to-stderr" "$err" || fail "$1: stderr lost: $(cat "$err")"
    # /tmp/outputs: the host tmpfs of artifact_bytes (512 KiB), which keeps
    # what the job wrote after it ended; /dev/shm a quarter of scratch
    # (256 KiB): nothing reaches a host directory.
    grep -qx "result" "$out" || fail "$1: /tmp/outputs is not writable"
    [ "$(cat "$TMP/$1-outputs/o")" = result ] || fail "$1: the output is not on the outputs tmpfs"
    grep -qx "outputs full at their size" "$out" || fail "$1: /tmp/outputs took more than artifact_bytes"
    [ "$(stat -c %s "$TMP/$1-outputs/big")" -le 524288 ] || fail "$1: the outputs tmpfs holds more than its size"
    grep -qx "shm full at its size" "$out" || fail "$1: /dev/shm took more than its share of scratch_bytes"
    grep -qx "dev not writable" "$out" || fail "$1: /dev was writable"
    [ ! -e "$b/outputs" ] || fail "$1: a host outputs directory exists"
}

# --- runsc (gVisor) --------------------------------------------------------------
bundle runsc
st=0
timeout 120 runsc --root "$TMP/runsc-state" --network=none --platform=ptrace run --bundle "$TMP/runsc" probe-runsc \
    >"$TMP/runsc.stdout" 2>"$TMP/runsc.stderr" || st=$?
[ "$st" = 3 ] || fail "runsc: exit status $st, expected 3: $(tail -n 5 "$TMP/runsc.stderr")"
probe_ok runsc
timeout 60 runsc --root "$TMP/runsc-state" --network=none --platform=ptrace delete --force probe-runsc 2>/dev/null || true

# --- crun ------------------------------------------------------------------------------
bundle crun
st=0
timeout 120 unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun --root "$1" run --bundle "$2" probe-crun' \
    sh "$TMP/crun-state" "$TMP/crun" >"$TMP/crun.stdout" 2>"$TMP/crun.stderr" || st=$?
[ "$st" = 3 ] || fail "crun: exit status $st, expected 3: $(tail -n 5 "$TMP/crun.stderr")"
probe_ok crun

# --- an existing config.json is never overwritten ---------------------------------
run 1 "$BERTH_MKBUNDLE" "$TMP/crun" "$TMP/crun.job.json" "$TMP/crun.effective.json" --outputs "$TMP/crun-outputs"
stderr_has "already exists; refusing to overwrite it"
