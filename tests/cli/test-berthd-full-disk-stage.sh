# test-berthd-full-disk-stage.sh -- staging an image (the real
# image-oci-local plugin, the test busybox image) into a state directory on
# an 8 MiB tmpfs with no room for the rootfs: the job waits claimed, new
# jobs get 503 storage_full, health says degraded, the retry backs off and
# logs one line per change (not one per reconcile pass), and once space
# returns the job is staged, runs and health is ok again (issue #14).
# Needs root (mount -t tmpfs); skipped otherwise (full-disk-lib.sh).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/full-disk-lib.sh"

: "${BERTH_IMAGE_PLUGIN_DIR:?}"

mkdir -p -m 0700 "$TMP/script"
printf '{"state_directory":"%s"}' "$TMP/script" >"$TMP/script.json"
image_plugins
busybox_image
SAMPLE_IMAGE=$DIGEST # job_doc's image from here on
INST=$TMP/inst-stage
STATE=$INST/state
pick_port
run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --image "$SAMPLE_IMAGE" \
    --backend "script=runtime-script,$TMP/script.json" --plugin-dir "$PLUGINS"
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$INST/images"
# No root kept once its job ended, so that the second job stages it again.
publish "$INST/berthd.json" jq '.root_cache_bytes = 0'
on_tmpfs "$STATE"
start_berthd
submit staged-ok '["echo","ok"]'
expect_status 201
wait_state dev staged-ok exited
# Its staged root (bound 0: nothing kept) is removed right after its result is recorded.
for _ in $(seq 1 100); do
    [ "$(ls -A "$STATE/stage")" = roots ] && [ -z "$(ls -A "$STATE/stage/roots")" ] && break
    sleep 0.1
done
[ "$(ls -A "$STATE/stage")" = roots ] || fail "the stage of a finished job stays: $(ls -A "$STATE/stage")"
[ -z "$(ls -A "$STATE/stage/roots")" ] || fail "the root of a finished job stays: $(ls -A "$STATE/stage/roots")"

# Room for the journal's commits, not for a staged rootfs (busybox: about 2 MiB).
avail=$(df --output=avail -B1 "$STATE" | tail -n1 | tr -d ' ')
fallocate -l $((avail - 512 * 1024)) "$STATE/filler" || fail "fallocate on the tmpfs failed"
submit unstaged '["echo","late"]'
expect_status 201
wait_log "job unstaged run"
wait_log "staging image $SAMPLE_IMAGE failed, will retry with backoff"
api dev GET /v1/health
expect_status 200
body_has '"status":"degraded"'
submit refused-stage '["echo","x"]'
expect_status 503
body_has '"error":"storage_full"'
# Six seconds of failing: one line, not one per 250 ms reconcile pass.
sleep 6
alive "staging kept failing"
n=$(grep -c "staging image .* failed" "$TMP/berthd.log" || true)
[ "$n" = 1 ] || fail "$n log lines for one failing staging: $(grep "staging image" "$TMP/berthd.log")"
api dev GET /v1/jobs/unstaged
expect_status 200
body_has '"state":"claimed"'

# Space returns: the next try (backoff, at most 30 s away) stages and starts it.
rm -f "$STATE/filler"
wait_log "job unstaged run $(run_id_of "$TMP/body") of dev: claimed -> running" 400
grep -q "staging works again" "$TMP/berthd.log" || fail "no line when staging worked again"
wait_state dev unstaged exited
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'
stop_berthd
