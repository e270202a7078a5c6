# test-runtime-oci-io.sh -- job inputs and declared outputs (issue 16) on
# the real runtime-oci plugin with real runsc (gVisor) and real crun,
# driven directly through the core's loader (tests/tools/oci-drive: one
# operation per run, each a fresh init() on the same state directory, as
# after a berthd restart).  The staged inputs directory is made here, as
# berthd would make it.  For each runtime:
#   - a job reads its staged inputs (content checked inside), cannot write
#     to /inputs (the files, new files, the directory), and writes two
#     declared outputs: inspect lists their sha256 and size, and
#     open_output returns exactly those bytes, also after the job's
#     instance is gone; the staged inputs are unchanged on the host;
#   - open_output while the job runs is EBUSY; of an undeclared output
#     ENOENT;
#   - writing past artifact_bytes fails inside the job with ENOSPC while
#     the state directory's filesystem does not take the bytes;
#   - each invalid output kind gives output_error with its id and problem
#     (missing, too_large, symlink as the output and on its path,
#     hard_link, not_regular for a directory and, on crun, a FIFO; a FIFO
#     made in gVisor exists only in the sandbox: missing), and outputs [];
#   - a job without room for outputs gets no outputs tmpfs;
#   - reap unmounts the outputs tmpfs (EBUSY while a descriptor on it is
#     open) and leaves berthd's inputs directory alone; forget removes the
#     tombstone (EBUSY before reap, ENOENT after);
#   - a dispatch whose staged inputs are absent or the wrong size is
#     refused before anything is created.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root
. "$BERTH_TOP_SRCDIR/tests/cli/oci-drive-lib.sh"
: "${BERTH_OCI_DRIVE:?}"
require_tool mountpoint util-linux

KIB=1024
MIB=1048576

# The state directories on a filesystem of their own, so that its "used"
# figure moves only with them; unmounted (outputs tmpfs first) on exit.
mkdir "$TMP/statefs"
mount -t tmpfs -o size=256m,mode=0755 berth-test-statefs "$TMP/statefs"
cleanup_mounts() {
    grep -o "$TMP/statefs/[^ ]*/outputs" /proc/self/mounts 2>/dev/null | while read -r m; do umount "$m"; done
    umount -l "$TMP/statefs" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup_mounts EXIT

drive_image
oci_plugins
for be in runsc crun; do
    oci_config "$be"
    jq --arg d "$TMP/statefs/state-$be" '.state_directory = $d' "$TMP/$be.json" >"$TMP/$be.new"
    mv "$TMP/$be.new" "$TMP/$be.json"
done


jobdir() { echo "$TMP/statefs/state-$1/jobs/$(run_of "$2")"; }
# start BACKEND NAME: start job NAME cold
start() { drive_ok "$1" start "$TMP/$2.dispatch.json"; }
used_bytes() { df -B1 --output=used "$TMP/statefs" | tail -n1 | tr -d " "; }

# The staged inputs, as berthd stages them: a root-owned 0700 directory of
# 0444 files named by index.  Input 1 is nested and binary.
mkdir -m 0700 "$TMP/inputs"
printf 'a,b\n1,2\n' >"$TMP/inputs/0"
head -c 100000 /dev/urandom >"$TMP/inputs/1"
chmod 0444 "$TMP/inputs/0" "$TMP/inputs/1"
IN0_SHA=$(sha256sum <"$TMP/inputs/0" | cut -d' ' -f1)
IN1_SHA=$(sha256sum <"$TMP/inputs/1" | cut -d' ' -f1)
INPUTS=$(jq -n --arg a "sha256:$IN0_SHA" --arg b "sha256:$IN1_SHA" \
    '[{path: "/inputs/data.csv", ref: {digest: $a, size: 8}}, {path: "/inputs/sub/dir/blob", ref: {digest: $b, size: 100000}}]')

IO_SCRIPT='set -u
[ "$(cat /inputs/data.csv)" = "a,b
1,2" ] && echo "input0 ok" || echo "input0 WRONG"
echo "input1 $(sha256sum /inputs/sub/dir/blob | cut -d" " -f1)"
(echo x >>/inputs/data.csv) 2>/dev/null && echo "input writable" || echo "input read-only"
touch /inputs/x 2>/dev/null && echo "inputs dir writable" || echo "inputs dir read-only"
touch /inputs/sub/dir/y 2>/dev/null && echo "inputs subdir writable" || echo "inputs subdir read-only"
rm -f /inputs/data.csv 2>/dev/null; [ -e /inputs/data.csv ] && echo "input kept" || echo "input removed"
n=$(wc -l </inputs/data.csv)
printf "{\"lines\":%s}\n" "$n" >/tmp/outputs/report.json
mkdir /tmp/outputs/nested
head -c 200000 /dev/urandom >/tmp/outputs/nested/big.bin
echo "report $(sha256sum /tmp/outputs/report.json | cut -d" " -f1)"
echo "big $(sha256sum /tmp/outputs/nested/big.bin | cut -d" " -f1)"
echo "outputs dir $(stat -c "%A %u" /tmp/outputs)"
[ -e /tmp/outputs/.running ] || touch /tmp/outputs/.running
sleep 5'
OUTS='[{"id": "report", "path": "/tmp/outputs/report.json", "media_type": "application/json", "max_bytes": 4096},
       {"id": "big", "path": "/tmp/outputs/nested/big.bin", "media_type": "application/octet-stream", "max_bytes": 300000}]'

# The invalid outputs: one job each, the output "o" at /tmp/outputs/o (max 1000).
declare -A BAD=(
    [missing]='true'
    [too_large]='head -c 1001 /dev/zero >/tmp/outputs/o'
    [symlink]='echo x >/tmp/outputs/target; ln -s target /tmp/outputs/o'
    [hard_link]='echo x >/tmp/outputs/o; ln /tmp/outputs/o /tmp/outputs/o2'
    [dir]='mkdir /tmp/outputs/o'
    [fifo]='mkfifo /tmp/outputs/o'
)
BAD_OUTS='[{"id": "o", "path": "/tmp/outputs/o", "media_type": "text/plain", "max_bytes": 1000}]'
# A symlink on the way to the output, and an invalid second output after a valid first.
LINKDIR_OUTS='[{"id": "deep", "path": "/tmp/outputs/d/o", "media_type": "text/plain", "max_bytes": 1000}]'
SECOND_OUTS='[{"id": "first", "path": "/tmp/outputs/first", "media_type": "text/plain", "max_bytes": 1000},
              {"id": "second", "path": "/tmp/outputs/second", "media_type": "text/plain", "max_bytes": 1000}]'

for be in runsc crun; do
    drive_ok "$be" capabilities
    jq -e '.capabilities | index("inputs") and index("outputs")' "$TMP/stdout" >/dev/null ||
        fail "$be: capabilities lack inputs/outputs: $(cat "$TMP/stdout")"

    # --- refusals before anything is created --------------------------------
    new_job "$be-noinputs" 'true' "$MIB" '[]' "$INPUTS"
    dispatch "$be-noinputs"
    drive_fails EBADMSG "$be" start "$TMP/$be-noinputs.dispatch.json"
    stderr_has "names no absolute inputs_dir"
    rm -rf "$TMP/short-inputs"
    mkdir -m 0700 "$TMP/short-inputs"
    printf 'a,b\n' >"$TMP/short-inputs/0"
    cp "$TMP/inputs/1" "$TMP/short-inputs/1"
    chmod 0444 "$TMP/short-inputs/0" "$TMP/short-inputs/1"
    cp "$TMP/$be-noinputs.job.json" "$TMP/$be-short.job.json"
    dispatch "$be-short" "$TMP/short-inputs"
    drive_fails EBADMSG "$be" start "$TMP/$be-short.dispatch.json"
    stderr_has "staged input 0 in $TMP/short-inputs is 4 bytes; job.inputs[0] says 8"
    [ ! -e "$(jobdir "$be" "$be-short")" ] || fail "$be: a refused start created its job directory"
    [ ! -e "$(jobdir "$be" "$be-noinputs")" ] || fail "$be: a refused start created its job directory"

    # --- inputs in, outputs out ---------------------------------------------
    new_job "$be-io" "$IO_SCRIPT" "$MIB" "$OUTS" "$INPUTS"
    dispatch "$be-io" "$TMP/inputs"
    start "$be" "$be-io"
    J=$(jobdir "$be" "$be-io")
    mountpoint -q "$J/outputs" || fail "$be: no outputs tmpfs at $J/outputs"
    grep -q " $J/outputs tmpfs rw,nosuid,nodev,noexec,.*size=1024k,nr_inodes=1024,mode=700,uid=65534,gid=65534" \
        /proc/self/mounts || fail "$be: the outputs tmpfs: $(grep "$J/outputs" /proc/self/mounts)"
    for _ in $(seq 1 1200); do [ -e "$J/outputs/.running" ] && break; sleep 0.05; done
    [ -e "$J/outputs/.running" ] || fail "$be: the job never ran"
    drive_fails EBUSY "$be" open-output "$(run_of "$be-io")" report "$TMP/early"
    [ ! -e "$TMP/early" ] || fail "$be: open_output wrote something while the job ran"
    wait_job "$be" "$be-io"
    [ "$(inspected "$be-io" '.state + "/" + (.exit_code | tostring)')" = exited/0 ] ||
        fail "$be: $(cat "$TMP/$be-io.inspect.json")"
    job_stdout "$be-io" >"$TMP/$be-io.out"
    for line in "input0 ok" "input1 $IN1_SHA" "input read-only" "inputs dir read-only" "inputs subdir read-only" \
        "input kept" "outputs dir drwx------ 65534"; do
        grep -qx "$line" "$TMP/$be-io.out" || fail "$be: no \"$line\": $(cat "$TMP/$be-io.out")"
    done
    # inspect lists both, in declaration order, with what the job wrote.
    [ "$(inspected "$be-io" '[.outputs[].id] | join(",")')" = report,big ] ||
        fail "$be: outputs: $(cat "$TMP/$be-io.inspect.json")"
    [ "$(inspected "$be-io" 'has("output_error")')" = false ] || fail "$be: an output_error for valid outputs"
    for o in report big; do
        want=$(grep "^$o " "$TMP/$be-io.out" | cut -d' ' -f2)
        [ "$(inspected "$be-io" ".outputs[] | select(.id == \"$o\") | .digest")" = "sha256:$want" ] ||
            fail "$be: $o digest: $(cat "$TMP/$be-io.inspect.json") vs $want"
        # open_output from another instance (this run's init is a new one).
        drive_ok "$be" open-output "$(run_of "$be-io")" "$o" "$TMP/$be-$o.got"
        [ "$(cat "$TMP/stdout")" = "$(inspected "$be-io" ".outputs[] | select(.id == \"$o\") | .size")" ] ||
            fail "$be: $o: open_output size $(cat "$TMP/stdout")"
        [ "$(sha256sum <"$TMP/$be-$o.got" | cut -d' ' -f1)" = "$want" ] || fail "$be: open_output($o) bytes differ"
    done
    [ "$(cat "$TMP/$be-report.got")" = '{"lines":2}' ] || fail "$be: report: $(cat "$TMP/$be-report.got")"
    [ "$(inspected "$be-io" '.outputs[] | select(.id == "big") | .size')" = 200000 ] || fail "$be: big's size"
    drive_fails ENOENT "$be" open-output "$(run_of "$be-io")" undeclared "$TMP/undeclared"
    # The staged inputs are as berthd left them.
    [ "$(sha256sum <"$TMP/inputs/0" | cut -d' ' -f1)" = "$IN0_SHA" ] || fail "$be: input 0 changed on the host"
    [ "$(stat -c %a "$TMP/inputs/0")" = 444 ] || fail "$be: input 0's mode changed"
    [ "$(ls "$TMP/inputs" | tr '\n' ' ')" = "0 1 " ] || fail "$be: the inputs directory changed: $(ls "$TMP/inputs")"

    # forget before reap is refused; reap is refused while an output is open.
    drive_fails EBUSY "$be" forget "$(run_of "$be-io")"
    exec 9<"$J/outputs/report.json"
    drive_fails EBUSY "$be" reap "$(run_of "$be-io")"
    stderr_has "still in use"
    exec 9<&-
    mountpoint -q "$J/outputs" || fail "$be: a refused reap unmounted the outputs"
    drive_ok "$be" reap "$(run_of "$be-io")"
    ! grep -q " $J/outputs " /proc/self/mounts || fail "$be: reap left the outputs tmpfs mounted"
    [ "$(ls -A "$J")" = reaped ] || fail "$be: reap left $(ls -A "$J")"
    [ -d "$TMP/inputs" ] && [ "$(ls "$TMP/inputs" | tr '\n' ' ')" = "0 1 " ] || fail "$be: reap touched inputs_dir"
    drive_fails ENOENT "$be" open-output "$(run_of "$be-io")" report "$TMP/late"
    drive_fails ENOENT "$be" inspect "$(run_of "$be-io")"
    run 0 drive "$be" start "$TMP/$be-io.dispatch.json"
    stdout_has already # the tombstone
    drive_ok "$be" forget "$(run_of "$be-io")"
    [ ! -e "$J" ] || fail "$be: forget left $J"
    drive_fails ENOENT "$be" forget "$(run_of "$be-io")"
    drive_fails ENOENT "$be" inspect "$(run_of "$be-io")"

    # --- past artifact_bytes: ENOSPC inside, the host's disk untouched --------
    # It says "ready" (the capture files have their first page), waits, fills.
    new_job "$be-fill" 'echo ready; echo ready >&2; sleep 1
msg=$(dd if=/dev/zero of=/tmp/outputs/fill bs=65536 count=64 2>&1); st=$?
case $msg in *"No space left on device"*) e=ENOSPC ;; *) e="no ENOSPC" ;; esac
echo "fill status $st $e size $(stat -c %s /tmp/outputs/fill)"; touch /tmp/outputs/.filled; sleep 2' "$MIB"
    dispatch "$be-fill"
    start "$be" "$be-fill"
    J=$(jobdir "$be" "$be-fill")
    for _ in $(seq 1 1200); do grep -q ready "$J/stdout" "$J/stderr" 2>/dev/null && break; sleep 0.05; done
    base=$(used_bytes)
    for _ in $(seq 1 1200); do [ -e "$J/outputs/.filled" ] && break; sleep 0.05; done
    [ -e "$J/outputs/.filled" ] || fail "$be: the fill never finished"
    after=$(used_bytes)
    wait_job "$be" "$be-fill"
    job_stdout "$be-fill" >"$TMP/$be-fill.out"
    grep -qx "fill status 1 ENOSPC size $MIB" "$TMP/$be-fill.out" ||
        fail "$be: writing 4 MiB into 1 MiB of outputs: $(cat "$TMP/$be-fill.out")"
    # What the job wrote is in memory (the outputs tmpfs), not on the state
    # filesystem: it moved by at most a few pages of the shim's own files.
    [ $((after - base)) -le $((16 * KIB)) ] ||
        fail "$be: the state filesystem grew by $((after - base)) bytes while the job wrote 1 MiB of outputs"
    drive_ok "$be" reap "$(run_of "$be-fill")"

    # --- no room for outputs: no tmpfs, /tmp/outputs read-only ----------------
    new_job "$be-none" 'touch /tmp/outputs/x 2>/dev/null && echo writable || echo read-only' 0
    dispatch "$be-none"
    start "$be" "$be-none"
    wait_job "$be" "$be-none"
    [ "$(job_stdout "$be-none")" = read-only ] || fail "$be: /tmp/outputs with artifact_bytes 0: $(job_stdout "$be-none")"
    [ ! -e "$(jobdir "$be" "$be-none")/outputs" ] || fail "$be: an outputs directory for artifact_bytes 0"
    drive_ok "$be" reap "$(run_of "$be-none")"

    # --- invalid outputs: started together, judged one by one -----------------
    for kind in "${!BAD[@]}"; do
        new_job "$be-bad-$kind" "${BAD[$kind]}" "$MIB" "$BAD_OUTS"
        dispatch "$be-bad-$kind"
        start "$be" "$be-bad-$kind"
    done
    new_job "$be-bad-linkdir" 'mkdir /tmp/outputs/real; echo x >/tmp/outputs/real/o; ln -s real /tmp/outputs/d' \
        "$MIB" "$LINKDIR_OUTS"
    dispatch "$be-bad-linkdir"
    start "$be" "$be-bad-linkdir"
    new_job "$be-bad-second" 'echo one >/tmp/outputs/first; head -c 2000 /dev/zero >/tmp/outputs/second' \
        "$MIB" "$SECOND_OUTS"
    dispatch "$be-bad-second"
    start "$be" "$be-bad-second"
    for kind in "${!BAD[@]}" linkdir second; do
        wait_job "$be" "$be-bad-$kind"
        want=$kind id=o
        case $kind in
        dir) want=not_regular ;;
        fifo) want=not_regular && [ "$be" = runsc ] && want=missing ;; # a gVisor FIFO never reaches the host
        linkdir) want=symlink id=deep ;;
        second) want=too_large id=second ;;
        esac
        [ "$(inspected "$be-bad-$kind" '.state + "/" + (.exit_code | tostring)')" = exited/0 ] ||
            fail "$be: $kind: $(cat "$TMP/$be-bad-$kind.inspect.json")"
        [ "$(inspected "$be-bad-$kind" '.output_error | .id + "/" + .problem')" = "$id/$want" ] ||
            fail "$be: $kind: expected $id/$want: $(cat "$TMP/$be-bad-$kind.inspect.json")"
        [ "$(inspected "$be-bad-$kind" '.outputs | length')" = 0 ] || fail "$be: $kind: outputs listed"
        drive_fails ENOENT "$be" open-output "$(run_of "$be-bad-$kind")" "$id" "$TMP/$be-$kind.got"
        drive_ok "$be" reap "$(run_of "$be-bad-$kind")"
        ! grep -q " $(jobdir "$be" "$be-bad-$kind")/outputs " /proc/self/mounts || fail "$be: $kind: still mounted"
    done
done
