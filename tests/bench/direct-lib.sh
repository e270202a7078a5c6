# shellcheck shell=bash
# direct-lib.sh -- the OCI runtimes run by hand, without berth, for the
# benchmarks that compare against them (overhead, starts).  Sourced after
# tests/cli/oci-lib.sh and oci_install (needs $DIGEST, $INST, $TMP).

# direct_bundle DIR: an OCI bundle in DIR with the busybox image staged once
# into DIR/rootfs and the deny-all config.json berth writes for a job running
# /bin/true (tests/tools/mkbundle).  Its root is read-only, so concurrent
# runs may share it.
direct_bundle() {
    local b=$1
    : "${BERTH_MKBUNDLE:?}"
    mkdir -m 0700 "$b"
    run 0 "$BERTHCTL" image stage "$DIGEST" --store "$INST/images" --out "$b/rootfs"
    chmod 0755 "$b/rootfs"
    POOL=gvisor bb_job direct 'true'
    jq '.argv = ["/bin/true"]' "$TMP/direct.job.json" >"$TMP/direct.job.json.new"
    mv "$TMP/direct.job.json.new" "$TMP/direct.job.json"
    printf '%s' '{"pool_hash":"00","template":{"env":{"LANG":"C.UTF-8"},"root":"/","timeout_seconds":600},"backend_override":null,"network_egress_class":"none","credential_env":[]}' \
        >"$TMP/effective.json"
    run 0 "$BERTH_MKBUNDLE" "$b" "$TMP/direct.job.json" "$TMP/effective.json" --nproc 64 --pids 4096
}

# direct_run RUNTIME BUNDLE ID: run the container ID of BUNDLE to its end with
# RUNTIME (runsc or crun) as the runtime-oci backend would (runsc: no
# network, ptrace platform; crun: in a private mount namespace without
# /sys/fs/cgroup/unified); state under $TMP/direct-RUNTIME.  Fails with the
# runtime's error output.  runsc keeps the stopped container's state until
# direct_delete.
direct_run() {
    local rt=$1 b=$2 id=$3 err="$TMP/direct-$3.err"
    case $rt in
    runsc)
        runsc --root "$TMP/direct-runsc" --network=none --platform=ptrace run --bundle "$b" "$id" >/dev/null 2>"$err" ||
            fail "runsc run failed: $(cat "$err")"
        ;;
    crun)
        unshare -m sh -c 'umount /sys/fs/cgroup/unified 2>/dev/null; exec crun --root "$1" run --bundle "$2" "$3"' \
            sh "$TMP/direct-crun" "$b" "$id" >/dev/null 2>"$err" || fail "crun run failed: $(cat "$err")"
        ;;
    *) fail "direct_run: unknown runtime $rt" ;;
    esac
    rm -f "$err"
}

# direct_delete RUNTIME ID: remove what is left of the container ID (runsc's
# state of a stopped container; crun run removes its own).
direct_delete() {
    [ "$1" = runsc ] || return 0
    runsc --root "$TMP/direct-runsc" --network=none --platform=ptrace delete --force "$2" >/dev/null 2>&1 || :
}
