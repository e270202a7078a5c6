# test-containment-systemd.sh -- the containment-systemd plugin against a
# real systemd (booted in a container, tests/cli/systemd-lib.sh), driven
# through the core's loader by tests/tools/oci-drive: a job's instance of
# berth-job@.service runs its supervisor and payload in the unit's
# delegated subgroups; the launch file is consumed once; attach moves a
# process into the payload group; a killed supervisor takes its payload
# with it; destroy masks, stops and drains with cgroup.kill what ignores
# SIGTERM and forks, and the id can never start again; a drop-in on the
# template, or the template altered in place, refuses every launch until it
# is undone; a restart by hand runs nothing; kill reaches every process;
# units lists a unit
# started by hand with no record, and destroy drains it, and lists instances
# whose names are no job id (escaped, too long) with what they hold; a socket not served by
# root's PID 1 is refused.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/systemd-lib.sh" # skips (77) unless root
: "${BERTH_OCI_DRIVE:?}" "${BERTH_CONTAINMENT_PLUGIN_DIR:?}" "${BERTH_CONTAINED:?}" "${BERTH_JOB_TEMPLATE:?}"

ct_boot

ct_install_template

cdrive() { ct "$BERTH_OCI_DRIVE" "$BERTH_CONTAINMENT_PLUGIN_DIR" containment-systemd.so contained "$TMP/contained.json" "$@"; }
cdrive_ok() { run 0 cdrive "$@"; }
# cdrive_fails ENAME OP ARGS...
cdrive_fails() {
    local want=$1
    shift
    run 1 cdrive "$@"
    grep -q "^$want: " "$TMP/stderr" || fail "$*: expected $want: $(cat "$TMP/stderr")"
}
# status_of ID JQ: a member of the unit's status
status_of() {
    cdrive_ok status "$1"
    jq -r "$2" "$TMP/stdout"
}

# A sleep duration unique to this run.
LONG=$((300000 + $$ % 50000 * 2))
# The stand-in for a job's shim: its payload moves itself into the payload
# group, then sleeps in two forked children; "ignore-term" ignores SIGTERM in
# both (SIG_IGN is inherited across exec).
cat >"$TMP/supervisor.sh" <<SH
#!/bin/sh
exec 2>>"$TMP/\$1.err"
echo \$\$ >"$TMP/\$1.sup"
[ "\$2" = ignore-term ] && trap '' TERM
sh -c 'echo \$\$ >"/sys/fs/cgroup\$BERTH_PAYLOAD_CGROUP/cgroup.procs"; sleep $LONG & sleep $LONG & echo \$\$ >"$TMP/\$1.payload"; wait' payload "\$1" &
wait
SH
chmod 0755 "$TMP/supervisor.sh"
spec() { printf '{"job_id": "%s", "argv": ["%s", "%s", "%s"]}\n' "$1" "$TMP/supervisor.sh" "$1" "${2:-plain}" >"$TMP/$1.spec"; }
# wait_file F: until F exists and is not empty (10 s)
wait_file() {
    for _ in $(seq 100); do
        [ -s "$1" ] && return 0
        sleep 0.1
    done
    fail "$1 did not appear"
}
cgroup_of() { ct cat "/proc/$1/cgroup" | sed -n 's/^0:://p'; }
alive() { ct kill -0 "$1" 2>/dev/null; }
# payload_pids CG: every process of the group CG's payload subgroup
payload_pids() { ct cat "/sys/fs/cgroup$1/payload/cgroup.procs"; }

# --- the peer must be root's PID 1: a socket served by another process is refused
require_tool systemd-socket-activate systemd
systemd-socket-activate --accept -l "$TMP/fake.sock" cat >/dev/null 2>&1 &
FAKE=$!
for _ in $(seq 100); do [ -S "$TMP/fake.sock" ] && break; sleep 0.1; done
printf '{"socket": "%s"}\n' "$TMP/fake.sock" >"$TMP/fake.json"
run 1 "$BERTH_OCI_DRIVE" "$BERTH_CONTAINMENT_PLUGIN_DIR" containment-systemd.so fake "$TMP/fake.json" capabilities
grep -q "^EACCES: .*not the service manager" "$TMP/stderr" || fail "a fake manager: $(cat "$TMP/stderr")"
kill "$FAKE"
wait "$FAKE" 2>/dev/null || :
# No manager at all: a clear error, not a hang.
printf '{"socket": "%s"}\n' "$TMP/none.sock" >"$TMP/none.json"
run 1 "$BERTH_OCI_DRIVE" "$BERTH_CONTAINMENT_PLUGIN_DIR" containment-systemd.so none "$TMP/none.json" capabilities
grep -q "^ECONNREFUSED: cannot reach the service manager" "$TMP/stderr" || fail "no manager: $(cat "$TMP/stderr")"
printf '{"socket": "/run/systemd/private", "x": 1}\n' >"$TMP/bad.json"
run 1 "$BERTH_OCI_DRIVE" "$BERTH_CONTAINMENT_PLUGIN_DIR" containment-systemd.so bad "$TMP/bad.json" capabilities
stderr_has "x"
grep -q '^EBADMSG: ' "$TMP/stderr" || fail "an unknown config member: $(cat "$TMP/stderr")"
printf '{"socket": "relative"}\n' >"$TMP/bad.json"
run 1 "$BERTH_OCI_DRIVE" "$BERTH_CONTAINMENT_PLUGIN_DIR" containment-systemd.so bad "$TMP/bad.json" capabilities
grep -q '^EINVAL: .*config.socket must be an absolute path' "$TMP/stderr" || fail "a relative socket: $(cat "$TMP/stderr")"

# --- the mechanism
cdrive_ok capabilities
[ "$(jq -r '.manager + " " + .kill' "$TMP/stdout")" = "systemd cgroup" ] || fail "capabilities: $(cat "$TMP/stdout")"

# --- a job: supervisor and payload in their subgroups, the launch file consumed
spec alpha
cdrive_ok create "$TMP/alpha.spec"
[ "$(jq -r .unit "$TMP/stdout")" = "berth-job@alpha.service" ] || fail "create: $(cat "$TMP/stdout")"
CG_A=$(jq -r .cgroup "$TMP/stdout")
case $CG_A in */berth-job@alpha.service) ;; *) fail "the unit's cgroup is $CG_A" ;; esac
wait_file "$TMP/alpha.sup"
wait_file "$TMP/alpha.payload"
[ "$(cgroup_of "$(cat "$TMP/alpha.sup")")" = "$CG_A/supervisor" ] || fail "the supervisor is in $(cgroup_of "$(cat "$TMP/alpha.sup")")"
[ "$(cgroup_of "$(cat "$TMP/alpha.payload")")" = "$CG_A/payload" ] || fail "the payload is in $(cgroup_of "$(cat "$TMP/alpha.payload")")"
[ "$(status_of alpha '.active_state + " " + (.populated | tostring) + " " + (.masked | tostring)')" = "active true false" ] ||
    fail "status of alpha: $(cat "$TMP/stdout")"
ct test ! -e /run/berth/contained/alpha.json || fail "the launch file of alpha is still there"
cdrive_fails EEXIST create "$TMP/alpha.spec"

# A second start of an instance by hand finds no launch file: nothing runs.
run 1 ct systemctl start berth-job@byhand.service
[ "$(status_of byhand .populated)" = false ] || fail "berth-job@byhand runs: $(cat "$TMP/stdout")"

# attach: a process of another unit into alpha's payload group
run 0 ct systemd-run --unit="berth-test-stray-$$" --collect sleep "$LONG"
STRAY=$(ct systemctl show -p MainPID --value "berth-test-stray-$$.service")
[ "${STRAY:-0}" -gt 0 ] || fail "no stray process"
cdrive_ok attach alpha "$STRAY"
[ "$(cgroup_of "$STRAY")" = "$CG_A/payload" ] || fail "attach: the process is in $(cgroup_of "$STRAY")"

# kill -9 of the supervisor: the unit ends and the manager kills what is
# left of its group (KillMode=control-group); destroy then proves it.
PAY_A=$(payload_pids "$CG_A" | tr '\n' ' ')
[ "$(echo "$PAY_A" | wc -w)" -ge 4 ] || fail "alpha's payload holds only: $PAY_A"
ct kill -KILL "$(cat "$TMP/alpha.sup")"
for _ in $(seq 150); do
    case $(status_of alpha .active_state) in active | deactivating) sleep 0.1 ;; *) break ;; esac
done
case $(status_of alpha .active_state) in active | deactivating) fail "alpha did not end: $(cat "$TMP/stdout")" ;; esac
[ "$(jq -r .populated "$TMP/stdout")" = false ] || fail "the manager left processes in alpha: $(cat "$TMP/stdout")"
for p in $PAY_A; do alive "$p" && fail "payload process $p of alpha outlived its supervisor"; done
# The same instance started again by hand: its launch file was consumed, so
# the launcher refuses and no supervisor runs (it would rewrite alpha.sup).
SUP_A=$(cat "$TMP/alpha.sup")
run 1 ct systemctl start berth-job@alpha.service
[ "$(status_of alpha .populated)" = false ] || fail "a restart of alpha runs: $(cat "$TMP/stdout")"
[ "$(cat "$TMP/alpha.sup")" = "$SUP_A" ] || fail "a restart of alpha ran its supervisor again"
# Proven gone either way: destroy says it removed it, or that nothing was left.
run_status=0
cdrive destroy alpha >"$TMP/stdout" 2>"$TMP/stderr" || run_status=$?
[ "$run_status" = 0 ] || grep -q '^ENOENT: ' "$TMP/stderr" || fail "destroy alpha: $(cat "$TMP/stderr")"
[ "$(status_of alpha .populated)" = false ] || fail "alpha's group still holds processes: $(cat "$TMP/stdout")"
[ "$(status_of alpha .masked)" = true ] || fail "alpha is not masked: $(cat "$TMP/stdout")"
cdrive_fails EPERM create "$TMP/alpha.spec"
stderr_has "masked"

# --- destroy drains what ignores SIGTERM and forks
spec bravo ignore-term
cdrive_ok create "$TMP/bravo.spec"
CG_B=$(jq -r .cgroup "$TMP/stdout")
wait_file "$TMP/bravo.payload"
PAY_B="$(cat "$TMP/bravo.sup") $(payload_pids "$CG_B" | tr '\n' ' ')"
[ "$(echo "$PAY_B" | wc -w)" -ge 4 ] || fail "bravo holds only: $PAY_B"
cdrive_ok destroy bravo
for p in $PAY_B; do alive "$p" && fail "process $p of bravo survived destroy"; done
[ "$(status_of bravo '(.masked | tostring) + " " + (.populated | tostring) + " " + (.job_pending | tostring)')" = \
    "true false false" ] || fail "status of bravo after destroy: $(cat "$TMP/stdout")"
[ "$(ct readlink "$UNITDIR/berth-job@bravo.service")" = /dev/null ] ||
    fail "bravo's mask is not persistent (no link to /dev/null in $UNITDIR)"
cdrive_fails EPERM create "$TMP/bravo.spec"

# --- an id that never ran: fenced all the same
cdrive_fails ENOENT destroy charlie
spec charlie
cdrive_fails EPERM create "$TMP/charlie.spec"

# --- discovery: a unit started by hand, with a launch file of its own and
# no record anywhere, is listed, and destroy drains it
ct sh -c "mkdir -p /run/berth/contained && printf '{\"argv\": [\"%s\", \"echo\"]}' '$TMP/supervisor.sh' >/run/berth/contained/echo.json"
run 0 ct systemctl start berth-job@echo.service
wait_file "$TMP/echo.payload"
cdrive_ok units
jq -e '.truncated == false' "$TMP/stdout" >/dev/null || fail "units: $(cat "$TMP/stdout")"
[ "$(jq -c '[.units[] | select(.job_id == "echo") | .active_state, .populated, .masked]' "$TMP/stdout")" = \
    '["active",true,false]' ] || fail "units does not list the hand-started echo: $(cat "$TMP/stdout")"
# A fenced unit may have been unloaded by now; listed, it is masked and empty.
[ "$(jq '[.units[] | select(.job_id == "bravo" and (.populated or (.masked | not)))] | length' "$TMP/stdout")" = 0 ] ||
    fail "units lists bravo as running or unfenced: $(cat "$TMP/stdout")"
PAY_E="$(cat "$TMP/echo.sup") $(payload_pids "$(jq -r '.units[] | select(.job_id == "echo") | .unit' "$TMP/stdout" |
    sed 's|^|/system.slice/system-berth\\x2djob.slice/|')" | tr '\n' ' ')"
[ "$(echo "$PAY_E" | wc -w)" -ge 4 ] || fail "echo holds only: $PAY_E"
cdrive_ok destroy echo
for p in $PAY_E; do alive "$p" && fail "process $p of the hand-started echo survived destroy"; done
[ "$(status_of echo '(.masked | tostring) + " " + (.populated | tostring)')" = "true false" ] ||
    fail "echo after destroy: $(cat "$TMP/stdout")"
cdrive_ok units
[ "$(jq '[.units[] | select(.job_id == "echo" and (.populated or (.masked | not)))] | length' "$TMP/stdout")" = 0 ] ||
    fail "units lists echo as running or unfenced after destroy: $(cat "$TMP/stdout")"

# --- discovery of instances whose names are no job id: a 150-byte instance
# (longer than any id) and an escaped one, both started by hand from the
# template with launch files of their own: listed with job_id null and the
# kernel's word on their processes, never skipped or reported empty
LONGID=$(printf 'x%.0s' $(seq 150))
ct sh -c "printf '{\"argv\": [\"%s\", \"long\"]}' '$TMP/supervisor.sh' >/run/berth/contained/$LONGID.json"
ct sh -c "printf '{\"argv\": [\"%s\", \"lead\"]}' '$TMP/supervisor.sh' >'/run/berth/contained/\\x2dlead.json'"
run 0 ct systemctl start "berth-job@$LONGID.service" 'berth-job@\x2dlead.service'
wait_file "$TMP/long.payload"
wait_file "$TMP/lead.payload"
cdrive_ok units
for u in "berth-job@$LONGID.service" 'berth-job@\x2dlead.service'; do
    [ "$(jq -c --arg u "$u" '[.units[] | select(.unit == $u) | .job_id, .active_state, .populated, .masked]' \
        "$TMP/stdout")" = '[null,"active",true,false]' ] || fail "units does not list $u as running: $(cat "$TMP/stdout")"
done
run 0 ct systemctl stop "berth-job@$LONGID.service" 'berth-job@\x2dlead.service'

# --- a group the kernel has below the slice whose name the manager refuses
# as a unit name (a space): listed with "error", "active_state" "unknown"
# and the kernel's word on its processes, empty and then holding one
GHOST='/sys/fs/cgroup/system.slice/system-berth\x2djob.slice/berth-job@bad name.service'
ghost_entry() {
    cdrive_ok units
    jq -c '[.units[] | select(.unit == "berth-job@bad name.service") | .job_id, .active_state, .populated,
        (.error | type)]' "$TMP/stdout"
}
ct mkdir "$GHOST"
[ "$(ghost_entry)" = '[null,"unknown",false,"string"]' ] || fail "units and an unknown empty group: $(cat "$TMP/stdout")"
ct sh -c 'sleep '"$LONG"' </dev/null >/dev/null 2>&1 & echo $! >"$1/cgroup.procs"; echo $! >"$2"' sh "$GHOST" "$TMP/ghost.pid"
[ "$(ghost_entry)" = '[null,"unknown",true,"string"]' ] || fail "units and an unknown busy group: $(cat "$TMP/stdout")"
jq -e '.units[] | select(.unit == "berth-job@bad name.service") | .error | test("name")' "$TMP/stdout" >/dev/null ||
    fail "the error does not say what the manager refused: $(cat "$TMP/stdout")"
ct kill -KILL "$(cat "$TMP/ghost.pid")"
for _ in $(seq 50); do ct rmdir "$GHOST" 2>/dev/null && break; sleep 0.1; done
ct test ! -e "$GHOST" || fail "the test's group $GHOST is still there"

# --- a drop-in on the template refuses every launch
ct mkdir -p "$UNITDIR/berth-job@.service.d"
ct sh -c "printf '[Service]\nEnvironment=BERTH_TEST=1\n' >$UNITDIR/berth-job@.service.d/override.conf"
ct systemctl daemon-reload
spec delta
cdrive_fails EPERM create "$TMP/delta.spec"
stderr_has "drop-in"
[ "$(status_of delta .active_state)" = inactive ] || fail "delta started: $(cat "$TMP/stdout")"
[ ! -e "$TMP/delta.sup" ] || fail "delta's supervisor ran"
ct rm -r "$UNITDIR/berth-job@.service.d"
ct systemctl daemon-reload
cdrive_ok create "$TMP/delta.spec"
wait_file "$TMP/delta.payload"
cdrive_ok destroy delta

# --- the template altered in place (not by a drop-in) refuses every launch
# and says which property differs; put back, it launches again.
spec golf
alter() {
    ct sh -c "sed -i '$1' $UNITDIR/berth-job@.service"
    ct systemctl daemon-reload
}
restore() {
    ct cp "$TMP/berth-job@.service" "$UNITDIR/berth-job@.service"
    ct systemctl daemon-reload
}
alter 's/^KillMode=control-group$/KillMode=mixed/'
cdrive_fails EPERM create "$TMP/golf.spec"
grep -q "KillMode=mixed, the template says control-group" "$TMP/stderr" || fail "KillMode=mixed: $(cat "$TMP/stderr")"
restore
alter 's/^Delegate=yes$/Delegate=no/'
cdrive_fails EPERM create "$TMP/golf.spec"
stderr_has "Delegate=no"
restore
alter 's/^Restart=no$/Restart=always/'
cdrive_fails EPERM create "$TMP/golf.spec"
grep -q "Restart=always, the template says no" "$TMP/stderr" || fail "Restart=always: $(cat "$TMP/stderr")"
restore
alter 's/^Type=exec$/Type=simple/'
cdrive_fails EPERM create "$TMP/golf.spec"
grep -q "Type=simple, the template says exec" "$TMP/stderr" || fail "Type=simple: $(cat "$TMP/stderr")"
restore
alter 's/^\[Service\]$/[Service]\nSlice=system.slice/'
cdrive_fails EPERM create "$TMP/golf.spec"
stderr_has "Slice=system.slice"
restore
alter "s|^ExecStart=.*|ExecStart=$BERTH_CONTAINED %i extra|"
cdrive_fails EPERM create "$TMP/golf.spec"
stderr_has "passes the argument list of another command"
restore
alter "s|^ExecStart=.*|ExecStart=/bin/sleep $LONG|"
cdrive_fails EPERM create "$TMP/golf.spec"
stderr_has "runs /bin/sleep, not $BERTH_CONTAINED"
restore
[ "$(status_of golf .active_state)" = inactive ] || fail "golf started: $(cat "$TMP/stdout")"
[ ! -e "$TMP/golf.sup" ] || fail "golf's supervisor ran under an altered template"

# --- kill: a signal reaches every process of the unit, the payload's too
cdrive_ok create "$TMP/golf.spec"
wait_file "$TMP/golf.payload"
CG_G=$(status_of golf .cgroup)
PAY_G=$(payload_pids "$CG_G")
[ -n "$PAY_G" ] || fail "golf has no payload process"
cdrive_ok kill golf 9
for _ in $(seq 100); do
    [ "$(status_of golf .populated)" = false ] && break
    sleep 0.1
done
[ "$(status_of golf .populated)" = false ] || fail "golf still holds processes after kill 9: $(cat "$TMP/stdout")"
alive "$(cat "$TMP/golf.sup")" && fail "golf's supervisor survived kill 9"
for p in $PAY_G; do alive "$p" && fail "payload process $p of golf survived kill 9"; done
# Nothing left to signal, a signal out of range, a unit that never was.
cdrive_fails ESRCH kill golf 15
cdrive_fails EINVAL kill golf 65
cdrive_fails ESRCH kill never-was 15
# Nothing of golf is left to drain: destroy says so, and fences it all the same.
cdrive_fails ENOENT destroy golf
[ "$(status_of golf .masked)" = true ] || fail "golf is not masked after destroy: $(cat "$TMP/stdout")"

# --- bad input
printf '{"job_id": "../x", "argv": ["/bin/true"]}' >"$TMP/bad.spec"
cdrive_fails EINVAL create "$TMP/bad.spec"
printf '{"job_id": "echo", "argv": ["true"]}' >"$TMP/bad.spec"
cdrive_fails EBADMSG create "$TMP/bad.spec"
printf '{"job_id": "echo", "argv": ["/bin/true"], "unit": "x"}' >"$TMP/bad.spec"
cdrive_fails EBADMSG create "$TMP/bad.spec"

ct systemctl stop "berth-test-stray-$$.service" 2>/dev/null || :
ct_shutdown
echo "PASS: containment-systemd against $(systemctl --version | head -1)"
