# test-berthd-image.sh -- berthd with the real image-oci-local plugin as its
# image source: dev-init configures it, berthd --check loads it, and a job
# is accepted only when its image is imported in the store.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
: "${BERTH_IMAGE_PLUGIN_DIR:?}"

# One plugin directory with the scripted runtime and the image plugin.
image_plugins
busybox_image

# A manifest that is no manifest, stored under its true digest.
printf '{"schemaVersion":2,"layers":[]}' >"$TMP/broken"
BROKEN=sha256:$(sha256sum <"$TMP/broken" | cut -d' ' -f1)

pick_port
mkdir -p -m 0700 "$TMP/script"
printf '{"state_directory":"%s"}' "$TMP/script" >"$TMP/script.json"
run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --image "$DIGEST" --image "$SAMPLE_IMAGE" --image "$BROKEN" \
    --backend "script=runtime-script,$TMP/script.json" --plugin-dir "$PLUGINS"
stdout_has "berthctl image import LAYOUT_DIR[:REF] --store $INST/images"
grep -q '"images"' "$INST/berthd.json" || fail "dev-init did not configure the image source"
grep -qF "\"store\": \"$INST/images\"" "$INST/berthd.json" || grep -qF "\"store\":\"$INST/images\"" "$INST/berthd.json" ||
    fail "the image source does not serve $INST/images: $(cat "$INST/berthd.json")"
[ "$(stat -c %a "$INST/images")" = 700 ] || fail "images/ is mode $(stat -c %a "$INST/images")"

run 0 "$BERTHD" --config "$INST/berthd.json" --check
stdout_has "an image source"

run 0 "$BERTHCTL" image import "$TMP/bb" --store "$INST/images"
stdout_is "$DIGEST
"
start_berthd
grep -q "image source: plugin image-oci-local" "$TMP/berthd.log" || fail "berthd did not log its image source"

# The imported image: accepted and run.
printf '{"schema_version":1,"id":"bb","pool":"default","image":"%s","argv":["echo","hi"],"limits":{"cpu_millis":1000,"memory_bytes":268435456,"pids":64,"scratch_bytes":67108864,"wall_time_ns":60000000000,"output_bytes":65536,"artifact_bytes":1048576}}' \
    "$DIGEST" >"$TMP/bb.json"
api dev POST /v1/jobs --data-binary "@$TMP/bb.json"
expect_status 201
# A granted image that is not in the store: 400, nothing recorded.
job_doc ghost '["echo"]' >"$TMP/ghost.json"
api dev POST /v1/jobs --data-binary "@$TMP/ghost.json"
expect_status 400
body_has '"error":"image_unknown"'
api dev GET /v1/jobs/ghost
expect_status 404
# A manifest in the store that is refused: 400 image_refused with its reason.
install -m 0400 "$TMP/broken" "$INST/images/blobs/sha256/${BROKEN#sha256:}"
sed "s/\"id\":\"bb\"/\"id\":\"broken\"/; s/$DIGEST/$BROKEN/" "$TMP/bb.json" >"$TMP/broken.json"
api dev POST /v1/jobs --data-binary "@$TMP/broken.json"
expect_status 400
body_has '"error":"image_refused"'
body_has 'invalid-manifest'
# A store the plugin cannot trust: 503, nothing recorded.
chmod 0600 "$INST/images/blobs/sha256/${DIGEST#sha256:}"
api dev POST /v1/jobs --data-binary "@$TMP/bb.json"
expect_status 200 # a retry of an accepted job is answered from the journal
sed 's/"id":"bb"/"id":"bb2"/' "$TMP/bb.json" >"$TMP/bb2.json"
api dev POST /v1/jobs --data-binary "@$TMP/bb2.json"
expect_status 503
body_has '"error":"image_store"'
chmod 0400 "$INST/images/blobs/sha256/${DIGEST#sha256:}"
api dev POST /v1/jobs --data-binary "@$TMP/bb2.json"
expect_status 201
stop_berthd

# An unsafe store stops berthd at startup with a clear line.
chmod 0755 "$INST/images"
run 1 "$BERTHD" --config "$INST/berthd.json" --check
stderr_has "unsafe-store"
chmod 0700 "$INST/images"
