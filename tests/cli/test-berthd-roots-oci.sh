# test-berthd-roots-oci.sh -- the root cache (rootcache.h, docs/images.md
# "The root cache") through the real berthd, runtime-oci on real runsc and
# crun and the busybox image built here: two jobs of one image running at
# once (one per runtime) get one staged root, the same directory and inode,
# read-only inside each sandbox; a tampered entry (a file added at its top;
# after a restart, a mode changed deep in its tree) is refused and staged
# again, never used; a prune never removes the root of a running job, not
# even after berthd was killed and restarted mid-job; "berthctl image cache
# ls|prune" list and remove the roots no job uses.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

oci_install runsc crun
add_pool on-runsc runsc
add_pool on-crun crun
# A pool whose working directory the image lacks: it is made before the root is sealed.
add_pool deep-cwd crun
jq '.template.root = "/srv/job"' "$INST/pools/deep-cwd.json" >"$TMP/deep.json"
chmod 0644 "$TMP/deep.json"
mv "$TMP/deep.json" "$INST/pools/deep-cwd.json"
start_berthd
ROOTS=$INST/state/stage/roots
ENTRY=$ROOTS/sha256-${DIGEST#sha256:}
PROBE='if touch /probe 2>/dev/null; then echo ROOT-WRITABLE; else echo root-read-only; fi
if [ -e /evil ]; then echo TAMPERED; fi; cat /etc/os-release >/dev/null && echo done'

# staged_count: how many times berthd staged the image in this run of it.
staged_count() { grep -c "staged image $DIGEST" "$TMP/berthd.log" || true; }
# cache_json: berthctl image cache ls --json into $TMP/cache.json.
cache_json() {
    run 0 CLIENT image cache ls --json
    cp "$TMP/stdout" "$TMP/cache.json"
}
# jobs_using: how many running jobs hold the image's root, per berthd.
jobs_using() { cache_json; jq -r --arg d "$DIGEST" '[.roots[] | select(.digest == $d) | .jobs][0] // 0' "$TMP/cache.json"; }
# wait_jobs_using N: until berthd says N jobs hold the root (reaps come after results), 30 s at most.
wait_jobs_using() {
    local deadline=$((SECONDS + 30))
    until [ "$(jobs_using)" = "$1" ]; do
        [ "$SECONDS" -lt "$deadline" ] || fail "the root is held by $(jobs_using) jobs, not $1: $(cat "$TMP/cache.json")"
        sleep 0.1
    done
}
# bundle_root RUNTIME RUN_ID: root.path of that job's OCI bundle.
bundle_root() { jq -r .root.path "$TMP/state-$1/jobs/$2/bundle/config.json"; }
# check_clean ID: job ID exited 0, read-only root, no tampered file seen.
check_clean() {
    finish "$1"
    [ "$(result "$1" .status)" = exited ] || fail "$1: $(jq -c .result "$TMP/$1.out/result.json")"
    [ "$(cat "$TMP/$1.out/stdout")" = "$(printf 'root-read-only\ndone')" ] ||
        fail "$1 printed: $(cat "$TMP/$1.out/stdout")"
}

# --- two jobs of one image at once: one stage, one root ---------------------
# Long enough that both still run at the checks below, also when the
# second starts seconds after the first (ASan, two tests per CPU pair).
POOL=on-runsc bb_job share-runsc "sleep 10; $PROBE"
POOL=on-crun bb_job share-crun "sleep 10; $PROBE"
submit share-runsc
R1=$RUN_ID
submit share-crun
R2=$RUN_ID
wait_state dev share-runsc running
wait_state dev share-crun running
[ "$(bundle_root runsc "$R1")" = "$ENTRY/rootfs" ] || fail "runsc's bundle root is $(bundle_root runsc "$R1")"
[ "$(bundle_root crun "$R2")" = "$ENTRY/rootfs" ] || fail "crun's bundle root is $(bundle_root crun "$R2")"
[ "$(jq -r .root.readonly "$TMP/state-crun/jobs/$R2/bundle/config.json")" = true ] || fail "the root is not read-only"
[ "$(ls -A "$ROOTS")" = "sha256-${DIGEST#sha256:}" ] || fail "the cache holds $(ls -A "$ROOTS")"
[ "$(cat "$INST/state/stage/$R1/root")" = "$DIGEST" ] || fail "run $R1 does not record its root"
[ "$(jobs_using)" = 2 ] || fail "the root is not held by both jobs: $(cat "$TMP/cache.json")"
ino=$(stat -c %i "$ENTRY/rootfs")
check_clean share-runsc
check_clean share-crun
[ "$(staged_count)" = 1 ] || fail "the image was staged $(staged_count) times for two jobs"
[ "$(stat -c %i "$ENTRY/rootfs")" = "$ino" ] || fail "the root was replaced"
[ "$(stat -c %a "$ENTRY")" = 500 ] || fail "the entry is mode $(stat -c %a "$ENTRY")"
wait_jobs_using 0
[ -z "$(ls -A "$INST/state/stage" | grep -v '^roots$')" ] || fail "job stage directories left: $(ls -A "$INST/state/stage")"

# A third job, later: the cached root, no stage.
POOL=on-runsc bb_job third "$PROBE"
submit third
check_clean third
[ "$(staged_count)" = 1 ] || fail "the cached root was staged again"

# --- a file added at the top of the root: refused, staged again --------------
wait_jobs_using 0
echo evil >"$ENTRY/rootfs/evil"
POOL=on-crun bb_job after-add "$PROBE"
submit after-add
check_clean after-add
log_has "the entry of $DIGEST is refused and staged again: its rootfs was replaced or changed" ||
    fail "no refusal logged: $(grep -i root "$TMP/berthd.log" | tail -n 5)"
[ "$(staged_count)" = 2 ] || fail "the tampered root was not staged again ($(staged_count))"
[ ! -e "$ENTRY/rootfs/evil" ] || fail "the tampered root is still there"
[ -z "$(ls -A "$ROOTS" | grep -v '^sha256-')" ] || fail "leftovers in the cache: $(ls -A "$ROOTS")"

# --- a mode changed deep in the tree while berthd was stopped --------------
wait_jobs_using 0
stop_berthd
chmod 0700 "$ENTRY/rootfs/etc/os-release"
start_berthd
cache_json
[ "$(jq -r '.roots[0].verified' "$TMP/cache.json")" = false ] || fail "a loaded root counts as verified: $(cat "$TMP/cache.json")"
POOL=on-runsc bb_job after-chmod "$PROBE"
submit after-chmod
check_clean after-chmod
log_has "the entry of $DIGEST is refused and staged again: its tree does not match its marker" ||
    fail "no refusal logged: $(grep -i root "$TMP/berthd.log" | tail -n 5)"
[ "$(stat -c %a "$ENTRY/rootfs/etc/os-release")" != 700 ] || fail "the changed mode is still there"
cache_json
[ "$(jq -r '.roots[0].verified' "$TMP/cache.json")" = true ] || fail "the new root is not verified: $(cat "$TMP/cache.json")"

# --- prune never removes a root in use, even across a crash ----------------
wait_jobs_using 0
POOL=on-crun bb_job long "sleep 15; $PROBE" # still running after berthd's restart
submit long
wait_state dev long running
kill_berthd
start_berthd
[ "$(jobs_using)" = 1 ] || fail "after the restart the running job does not hold its root: $(cat "$TMP/cache.json")"
run 0 CLIENT image cache prune
stdout_has "removed 0 unused roots"
[ -d "$ENTRY/rootfs/bin" ] || fail "prune removed the root of a running job"
check_clean long
wait_jobs_using 0

# --- ls and prune ----------------------------------------------------------
run 0 CLIENT image cache ls
stdout_has "$DIGEST"
stdout_has "1 roots"
run 0 CLIENT image cache prune
stdout_has "removed 1 unused roots"
stdout_has "0 roots, 0 of 4294967296 bytes"
[ -z "$(ls -A "$ROOTS")" ] || fail "prune left $(ls -A "$ROOTS")"
run 2 CLIENT image cache frob
stderr_has "cache takes ls or prune"
# After a prune the next job stages it again, with its working directory
# (a runtime would otherwise create it in the shared root).
before=$(staged_count)
POOL=deep-cwd bb_job deep-1 "[ \"\$(pwd)\" = /srv/job ] && $PROBE"
submit deep-1
check_clean deep-1
[ -d "$ENTRY/rootfs/srv/job" ] || fail "the working directory was not made in the root"
POOL=deep-cwd bb_job deep-2 "$PROBE"
submit deep-2
check_clean deep-2
POOL=on-runsc bb_job after-prune "$PROBE"
submit after-prune
check_clean after-prune
[ "$(staged_count)" = $((before + 1)) ] || fail "staged $(($(staged_count) - before)) times after the prune, not once"
! grep -q "refused and staged again: its rootfs" "$TMP/berthd.log" || fail "a runtime changed the shared root"
stop_berthd
echo ok
