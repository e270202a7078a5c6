# test-runtime-oci-disk.sh -- what a job writes stays within its limits and
# off the host's disks (issue 15), through the real berthd, the runtime-oci
# plugin and real runsc (gVisor) and crun: a job with artifact_bytes 1 MiB
# that writes 64 MiB into /tmp/outputs stops at 1 MiB inside the job
# (ENOSPC), /tmp and /dev/shm stop at their shares of scratch_bytes, the
# root, the working directory and /dev cannot be written, and the
# filesystem holding the backends' state directories (a private tmpfs here,
# so that nothing else on the machine moves its figures) grows by less than
# the bound while the job holds what it wrote.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

MIB=1048576
oci_install runsc crun
add_pool native crun
add_pool gvisor runsc
# The state directories (job directories, runtime roots, captured output)
# on a filesystem of their own: its "used" figure moves only with them.
mkdir "$TMP/statefs"
mount -t tmpfs -o size=512m,mode=0755 berth-test-statefs "$TMP/statefs"
trap 'kill_berthd; umount -l "$TMP/statefs" 2>/dev/null; cleanup_berthd' EXIT
edit_config '.backends[].config.state_directory |= ($d + "/" + (split("/") | last))' --arg d "$TMP/statefs"
start_berthd

# The probe: it fills every writable place, reports what each took, then
# holds it all for a while so that the host can be measured meanwhile.
SCRIPT='fill() { msg=$(dd if=/dev/zero of="$1" bs=1048576 count=64 2>&1); st=$?
  case $msg in *"No space left on device"*) enospc=ENOSPC ;; *) enospc="no ENOSPC" ;; esac
  echo "$2 status $st $enospc size $(stat -c %s "$1")"; }
fill /tmp/outputs/big outputs
fill /tmp/big tmp
fill /dev/shm/big shm
for d in / /workspace /dev /etc; do touch "$d/x" 2>/dev/null && echo "$d writable" || echo "$d not writable"; done
echo held
sleep 4'

# used_bytes: what the state filesystem holds.
used_bytes() { df -B1 --output=used "$TMP/statefs" | tail -n1 | tr -d " "; }

for POOL in gvisor native; do
    export POOL
    be=runsc
    [ "$POOL" = native ] && be=crun
    bb_job "$be-fill" "$SCRIPT"
    jq --argjson a "$MIB" '.limits.artifact_bytes = $a' "$TMP/$be-fill.job.json" >"$TMP/job.new"
    mv "$TMP/job.new" "$TMP/$be-fill.job.json"
    base=$(used_bytes)
    peak=$base
    submit "$be-fill"
    [ "$(placed "$be-fill")" = "$be" ] || fail "pool $POOL placed on $(placed "$be-fill"), expected $be"
    # Sample the state filesystem until the job has finished (its shim wrote
    # result.json), the 64 MiB writes and the hold included.
    for _ in $(seq 1 600); do
        u=$(used_bytes)
        [ "$u" -gt "$peak" ] && peak=$u
        [ -e "$TMP/statefs/state-$be/jobs/$RUN_ID/result.json" ] || [ -e "$TMP/statefs/state-$be/jobs/$RUN_ID/reaped" ] && break
        sleep 0.1
    done
    finish "$be-fill"
    out=$TMP/$be-fill.out/stdout
    [ "$(result "$be-fill" .status)/$(result "$be-fill" .exit_code)" = exited/0 ] ||
        fail "$be: $(cat "$TMP/$be-fill.out/result.json")"
    grep -qx "held" "$out" || fail "$be: the probe did not finish: $(cat "$out")"
    # Each write stops at its bound inside the job, with ENOSPC.
    grep -qx "outputs status 1 ENOSPC size $MIB" "$out" ||
        fail "$be: /tmp/outputs (artifact_bytes 1 MiB): $(grep outputs "$out")"
    grep -qx "tmp status 1 ENOSPC size $((12 * MIB))" "$out" ||
        fail "$be: /tmp (scratch 16 MiB less /dev/shm's 4): $(grep '^tmp' "$out")"
    grep -qx "shm status 1 ENOSPC size $((4 * MIB))" "$out" ||
        fail "$be: /dev/shm (a quarter of scratch): $(grep shm "$out")"
    for d in / /workspace /dev /etc; do
        grep -qx "$d not writable" "$out" || fail "$be: $d was writable"
    done
    # The host's filesystem did not take what the job wrote (64 MiB were
    # written into /tmp/outputs alone): it grew by less than the bound.
    [ $((peak - base)) -lt "$MIB" ] ||
        fail "$be: the state filesystem grew by $((peak - base)) bytes while the job wrote (bound $MIB)"
    # The outputs tmpfs went with reap (which follows the recorded result).
    for _ in $(seq 1 300); do [ -e "$TMP/statefs/state-$be/jobs/$RUN_ID/reaped" ] && break; sleep 0.1; done
    [ ! -e "$TMP/statefs/state-$be/jobs/$RUN_ID/outputs" ] || fail "$be: the outputs tmpfs outlived reap"
    ! grep -q " $TMP/statefs/state-$be/jobs/$RUN_ID/outputs " /proc/self/mounts || fail "$be: outputs still mounted"
done
