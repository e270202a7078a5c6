# test-berthd-fence.sh -- berthd fences and drains, before admission opens,
# the units of a contained backend that no live job accounts for
# (src/berthd/fence.h), against a real systemd booted in a
# container (systemd-lib.sh): a unit started by hand with no journal
# record, and one left behind by a job that has ended, are masked and
# drained, payloads that fork and ignore SIGTERM included; the unit named
# by a job that still runs is left alone; a unit whose name carries no job
# id is reported for the operator and left alone (a cgroup whose name is no
# unit name is reported escaped, with no command to paste); the periodic scan fences
# a unit started by hand while berthd runs, and the unit of a job once the
# job has ended.  The backend is the
# scripted runtime (it runs nothing in units itself) bound to the real
# containment-systemd plugin: runtime-oci cannot run its jobs contained yet.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/systemd-lib.sh" # skips (77) unless root
: "${BERTH_CONTAINMENT_PLUGIN_DIR:?}"

ct_boot
ct_install_template

# berthd and its clients run inside the container: its manager is PID 1 of
# their pid namespace, and its private network holds berthd's port.
curl() { ct /usr/bin/curl "$@"; }
plugin_dir "$BERTH_TEST_PLUGIN_DIR/runtime-script.so" "$BERTH_CONTAINMENT_PLUGIN_DIR/containment-systemd.so"
make_install
publish "$INST/berthd.json" jq --slurpfile c "$TMP/contained.json" \
    '.backends.script.containment = {"plugin": "containment-systemd", "config": $c[0]}
     | .containment_scan_interval_ns = 1000000000'

submit() {
    job_doc "$1" "$2" >"$TMP/$1.json"
    api dev POST /v1/jobs --data-binary "@$TMP/$1.json" --max-time 20
    expect_status 201
}

# A job that ends and one that runs on (until released).
ct_berthd
grep -qF "backend script: containment plugin containment-systemd" "$TMP/berthd.log" ||
    fail "berthd did not bind containment-systemd: $(cat "$TMP/berthd.log")"
submit done '["echo","hi"]'
submit live '["hold"]'
wait_state dev done exited
RUN_DONE=$(run_id_of "$TMP/body")
wait_state dev live running
RUN_LIVE=$(run_id_of "$TMP/body")
[ -n "$RUN_DONE" ] && [ -n "$RUN_LIVE" ] || fail "no run ids"
ct_stop_berthd

# Units by hand: for the ended job (its payload ignores SIGTERM), for the
# live one, for no job at all, and one whose instance is no job id.
LONG=$((300000 + $$ % 50000 * 2))
cat >"$TMP/supervisor.sh" <<SH
#!/bin/sh
trap '' TERM
sh -c 'echo \$\$ >"/sys/fs/cgroup\$BERTH_PAYLOAD_CGROUP/cgroup.procs"; sleep $LONG & sleep $LONG & echo \$\$ >"$TMP/\$1.payload"; wait' payload "\$1" &
wait
SH
chmod 0755 "$TMP/supervisor.sh"
hand_unit() { # INSTANCE TAG
    ct sh -c 'mkdir -p /run/berth/contained && printf "{\"argv\": [\"%s\", \"%s\"]}" "$1" "$2" >"/run/berth/contained/$3.json"' \
        sh "$TMP/supervisor.sh" "$2" "$1"
    run 0 ct systemctl start "berth-job@$1.service"
    for _ in $(seq 100); do [ -s "$TMP/$2.payload" ] && return 0; sleep 0.1; done
    fail "the payload of berth-job@$1 did not start"
}
hand_unit "$RUN_DONE" done
hand_unit "$RUN_LIVE" live
hand_unit handmade handmade
hand_unit '\x2dlead' lead
# A group the kernel has in the slice under a name systemd refuses (a space
# and a quote): its name reaches the log JSON-escaped, never as a command.
GHOST="/sys/fs/cgroup/system.slice/system-berth\\x2djob.slice/berth-job@it's bad.service"
ct mkdir "$GHOST"
# payload_of UNIT: the processes in UNIT's payload group
payload_of() { ct cat "/sys/fs/cgroup/system.slice/system-berth\\x2djob.slice/$1/payload/cgroup.procs" 2>/dev/null || :; }
PIDS_DONE=$(payload_of "berth-job@$RUN_DONE.service")
PIDS_HAND=$(payload_of berth-job@handmade.service)
[ "$(echo $PIDS_DONE | wc -w)" -ge 3 ] && [ "$(echo $PIDS_HAND | wc -w)" -ge 3 ] ||
    fail "the payloads hold only: '$PIDS_DONE' and '$PIDS_HAND'"

# berthd starts: the ended job's unit and the unknown one are fenced and
# drained before it is ready; the live job's and the unaddressable one run on.
ct_berthd
for want in "unit berth-job@handmade.service (no journal record): fenced, drained" \
    "unit berth-job@$RUN_DONE.service (exited): fenced, drained" \
    'unit berth-job@\x2dlead.service carries no job id berth makes' \
    "a cgroup named \"berth-job@it's bad.service\", which is no unit name systemd accepts, carries no job id" \
    "containment recovery: 2 units fenced, 0 not proven gone, 2 without a job id, 1 of live jobs kept"; do
    grep -qF "$want" "$TMP/berthd.log" || fail "berthd did not log '$want': $(cat "$TMP/berthd.log")"
done
grep -q "mask --now 'berth-job@it" "$TMP/berthd.log" && fail "berthd offered a command for the group $GHOST"
[ "$(grep -n 'containment recovery' "$TMP/berthd.log" | cut -d: -f1)" -lt "$(grep -n 'ready: https' "$TMP/berthd.log" | cut -d: -f1)" ] ||
    fail "the units were fenced after admission opened: $(cat "$TMP/berthd.log")"
for p in $PIDS_DONE $PIDS_HAND; do
    ct kill -0 "$p" 2>/dev/null && fail "payload process $p survived the fence"
done
for u in "berth-job@$RUN_DONE.service" berth-job@handmade.service; do
    [ "$(ct systemctl is-enabled "$u" || :)" = masked ] || fail "$u is not masked after the fence"
done
[ "$(ct systemctl is-active "berth-job@$RUN_LIVE.service" || :)" = active ] || fail "the live job's unit was stopped"
[ "$(ct systemctl is-enabled "berth-job@$RUN_LIVE.service" || :)" != masked ] || fail "the live job's unit was masked"
[ "$(ct systemctl is-active 'berth-job@\x2dlead.service' || :)" = active ] || fail "the unaddressable unit was stopped"
wait_state dev live running

# A second start finds nothing more to do: the fenced units are masked and empty.
ct_stop_berthd
ct_berthd
grep -qF "containment recovery: 0 units fenced, 0 not proven gone, 2 without a job id, 1 of live jobs kept" \
    "$TMP/berthd.log" || fail "the second start: $(cat "$TMP/berthd.log")"

# The periodic scan, every second here: a unit started by hand while berthd
# runs, and the unit of the live job once that job has ended.
hand_unit late late
PIDS_LATE=$(payload_of berth-job@late.service)
log_has 'unit berth-job@late.service \(no journal record\): fenced, drained' 20 ||
    fail "the periodic scan did not fence berth-job@late: $(cat "$TMP/berthd.log")"
PIDS_LIVE=$(payload_of "berth-job@$RUN_LIVE.service")
[ "$(ct systemctl is-active "berth-job@$RUN_LIVE.service" || :)" = active ] || fail "the live job's unit was stopped early"
touch "$TMP/script/$RUN_LIVE.release"
wait_state dev live exited
log_has "unit berth-job@$RUN_LIVE.service \(exited\): fenced, drained" 20 ||
    fail "the periodic scan did not fence the ended job's unit: $(cat "$TMP/berthd.log")"
for p in $PIDS_LATE $PIDS_LIVE; do
    ct kill -0 "$p" 2>/dev/null && fail "payload process $p survived the periodic fence"
done
grep -c 'carries no job id' "$TMP/berthd.log" | grep -qx 2 ||
    fail "the units without a job id were not reported once each: $(cat "$TMP/berthd.log")"
ct_stop_berthd
run 0 ct systemctl stop 'berth-job@\x2dlead.service'
run 0 ct rmdir "$GHOST"
echo "PASS: berthd fenced the units no live job accounts for"
