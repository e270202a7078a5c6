# systemd-lib.sh -- a real systemd for the tests (bash; sourced after
# lib.sh).  PID 1 of this machine is not systemd, so the tests boot one in
# a container: systemd-nspawn with a volatile root (a tmpfs with this
# machine's /usr bound read-only, its own /etc, /run, /tmp and /var), no
# network and no registration with a host manager; the build tree, the
# source tree and $TMP are bound in at their own paths.  Never boot systemd
# in a namespace that shares this machine's root: its boot-time tmpfiles run
# would empty the host's /tmp (../shared/notes/platform-facts.md).
#
#   ct_boot             boot it; $CT_LEADER is the container's PID 1 as
#                       seen here, and the EXIT trap shuts it down
#   ct COMMAND...       run COMMAND inside (all of its namespaces)
#   ct_shutdown         power it off (SIGTERM to nspawn), at most 30 s, then
#                       SIGKILL; its cgroup (a new one per boot) is removed
#   ct_install_template install the built berth-job@.service in
#                       $UNITDIR (/etc/systemd/system) with the build tree's
#                       launcher ($BERTH_CONTAINED), and write the
#                       containment-systemd configuration for it to
#                       $TMP/contained.json
#   ct_berthd           berthd ($BERTHD --config $INST/berthd.json, berthd-lib.sh)
#                       as a unit of the container's manager, berthd-test-N,
#                       until it is ready; its log is $TMP/berthd.log; the
#                       array CT_BERTHD_PROPS holds more unit properties
#                       (systemd-run -p), such as berthd.service's sandboxing
#   ct_stop_berthd      stop that unit (SIGTERM: a clean stop)
[ "$(id -u)" = 0 ] || { echo "SKIP: booting systemd in a container needs root"; exit 77; }
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
[ -x /lib/systemd/systemd ] || require_tool /lib/systemd/systemd systemd

CT_NSPAWN=
CT_LEADER=
CT_CGROUP=
# The cgroup v2 hierarchy: /sys/fs/cgroup/unified on a hybrid host like this one.
CT_CGROOT=/sys/fs/cgroup/unified
[ -e "$CT_CGROOT/cgroup.procs" ] || CT_CGROOT=/sys/fs/cgroup
[ -e "$CT_CGROOT/cgroup.procs" ] || { echo "FAIL: no cgroup v2 hierarchy" >&2; exit 1; }
ct() { nsenter -t "$CT_LEADER" -a -- "$@"; }

ct_shutdown() {
    [ -n "$CT_NSPAWN" ] || return 0
    kill -TERM "$CT_NSPAWN" 2>/dev/null || :
    for _ in $(seq 300); do
        kill -0 "$CT_NSPAWN" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$CT_NSPAWN" 2>/dev/null || :
    wait "$CT_NSPAWN" 2>/dev/null || :
    CT_NSPAWN=
    # Empty once nspawn is gone (the kernel frees it after its last process).
    for _ in $(seq 50); do
        rmdir "$CT_CGROUP" 2>/dev/null && break
        find "$CT_CGROUP" -depth -type d -exec rmdir {} \; 2>/dev/null || :
        sleep 0.1
    done
}

ct_boot() {
    local bind=() d st=
    for d in "$BERTH_TOP_BUILDDIR" "$BERTH_TOP_SRCDIR"; do
        case $d in /usr | /usr/*) ;; *) bind+=("--bind-ro=$d") ;; esac
    done
    # The container's cgroup tree is the one nspawn starts in: a group of
    # its own, or two tests' containers would manage the same units.
    CT_CGROUP=$CT_CGROOT/berth-test-$$-$RANDOM
    mkdir "$CT_CGROUP" || fail "cannot make the container's cgroup $CT_CGROUP"
    (
        echo "$BASHPID" >"$CT_CGROUP/cgroup.procs"
        SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 exec systemd-nspawn -D / --volatile=yes --register=no --keep-unit \
            --private-network --console=passive --machine="berth-test-$$" "${bind[@]}" "--bind=$TMP" \
            -b -- systemd.firstboot=off
    ) >"$TMP/nspawn.log" 2>&1 &
    CT_NSPAWN=$!
    trap 'ct_shutdown; remove_tmp' EXIT
    for _ in $(seq 300); do
        CT_LEADER=$(pgrep -P "$CT_NSPAWN" -x systemd || :)
        if [ -n "$CT_LEADER" ]; then
            st=$(ct systemctl is-system-running 2>/dev/null || :)
            case $st in running | degraded) return 0 ;; esac
        fi
        kill -0 "$CT_NSPAWN" 2>/dev/null || fail "systemd-nspawn ended: $(cat "$TMP/nspawn.log")"
        sleep 0.1
    done
    fail "the container's systemd did not finish booting in 30 s (state '$st'): $(tail -20 "$TMP/nspawn.log")"
}

UNITDIR=/etc/systemd/system
ct_install_template() {
    : "${BERTH_CONTAINED:?}" "${BERTH_JOB_TEMPLATE:?}"
    sed "s|^ExecStart=.*|ExecStart=$BERTH_CONTAINED %i|" "$BERTH_JOB_TEMPLATE" >"$TMP/berth-job@.service"
    grep -q "^ExecStart=$BERTH_CONTAINED %i\$" "$TMP/berth-job@.service" || fail "the template has no ExecStart= line"
    ct sh -c "mkdir -p $UNITDIR && cp '$TMP/berth-job@.service' $UNITDIR/"
    ct systemctl daemon-reload
    cat >"$TMP/contained.json" <<JSON
{"template": "$UNITDIR/berth-job@.service", "launcher": "$BERTH_CONTAINED", "drain_timeout_ns": 10000000000}
JSON
}

CT_BERTHD_N=0
ct_berthd() {
    CT_BERTHD_N=$((CT_BERTHD_N + 1))
    : >"$TMP/berthd.log"
    run 0 ct systemd-run --unit="berthd-test-$CT_BERTHD_N" --collect -p "StandardOutput=append:$TMP/berthd.log" \
        -p "StandardError=append:$TMP/berthd.log" ${CT_BERTHD_PROPS[@]+"${CT_BERTHD_PROPS[@]}"} \
        "$BERTHD" --config "$INST/berthd.json"
    log_has "ready: https://" 30 || fail "berthd did not become ready: $(cat "$TMP/berthd.log")"
}
ct_stop_berthd() { run 0 ct systemctl stop "berthd-test-$CT_BERTHD_N"; }
