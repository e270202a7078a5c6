# test-berthd-evidence.sh -- evidence on a real berthd over mTLS with the
# real evidence-sqlite plugin, real curl and the real berthctl: uploads
# (monolithic and chunked), strict chunk ranges, quotas, the per-object
# bound, wrong digests, tombstones across a restart, owners and admins,
# kill -9 in the middle of an upload, and strict JSON bodies.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
: "${BERTH_EVIDENCE_PLUGIN_DIR:?}"

# One plugin directory: the scripted runtime and the evidence store.
evidence_plugins
run 0 "$BERTHCTL" dev-init "$INST" --port "$PORT" --principal dev --principal other \
    --backend "script=runtime-script,$TMP/script.json" --plugin-dir "$PLUGINS"
stdout_has "evidence put FILE"
STORE=$INST/state/evidence
run 0 "$BERTHCTL" dev-init "$TMP/plain" --port "$PORT" --plugin-dir "$PLUGINS" --no-evidence-store
[ "$(jq -r .evidence "$TMP/plain/berthd.json")" = null ] || fail "--no-evidence-store configured a store"
[ "$(jq -r .evidence.plugin "$INST/berthd.json")" = evidence-sqlite ] || fail "dev-init configured no evidence store"
[ "$(jq -r .evidence.config.directory "$INST/berthd.json")" = "$STORE" ] || fail "the store is not in state/evidence"
# Small bounds, so that chunks and limits are reached quickly: 64 KiB per
# request, 1 MiB per object; "other" may keep 200000 bytes in 2 objects.
publish "$INST/berthd.json" jq '.http = {"max_body_bytes": 65536} | .evidence.config.max_object_bytes = 1048576'
publish "$INST/policy.json" jq '(.subjects[] | select(.principal == "other")).evidence_quota = {"bytes": 200000, "objects": 2}'
run 0 "$BERTHD" --config "$INST/berthd.json" --check
stdout_has "an evidence store"
start_berthd
grep -q "evidence store: plugin evidence-sqlite" "$TMP/berthd.log" || fail "berthd did not log its evidence store"
[ "$(stat -c %a "$STORE")" = 700 ] || fail "the store directory is mode $(stat -c %a "$STORE")"

CTL() { "$BERTHCTL" --config "$INST/client.json" "$@"; }
# other's client configuration: client.json with its certificate.
jq --arg c "$INST/tls/client-other.pem" --arg k "$INST/tls/client-other.key" '.certificate = $c | .private_key = $k' \
    "$INST/client.json" >"$TMP/client-other.json"
OTHER() { "$BERTHCTL" --config "$TMP/client-other.json" "$@"; }
sha() { printf 'sha256:%s' "$(sha256sum "$1" | cut -d' ' -f1)"; }
objects_in_store() { find "$STORE/objects" -type f 2>/dev/null | wc -l; }
header_of() { tr -d '\r' <"$TMP/headers" | grep -i "^$1:" | head -n1 | cut -d' ' -f2-; }

# --- put and get: bytes identical, monolithic and chunked --------------------------
printf 'hello evidence\n' >"$TMP/small"
head -c 300000 /dev/urandom >"$TMP/medium" # five 64 KiB chunks
run 0 CTL evidence put "$TMP/small" --media-type text/plain
stdout_is "{\"digest\":\"$(sha "$TMP/small")\",\"size\":15}
"
stderr_has "stored (15 bytes, text/plain)"
run 0 CTL evidence put "$TMP/medium" --json
[ "$(jq -r .ref.digest "$TMP/stdout")" = "$(sha "$TMP/medium")" ] || fail "put answered $(cat "$TMP/stdout")"
[ "$(jq -r .ref.size "$TMP/stdout")" = 300000 ] || fail "put answered $(cat "$TMP/stdout")"
[ "$(jq -r .stored "$TMP/stdout")" = new ] || fail "put answered $(cat "$TMP/stdout")"
[ "$(jq -r .media_type "$TMP/stdout")" = application/octet-stream ] || fail "put answered $(cat "$TMP/stdout")"
# Four PATCHes and the last chunk with the PUT.
[ "$(grep -c 'PATCH /v1/evidence/uploads/' "$TMP/berthd.log")" = 4 ] || fail "the upload was not sent in 5 chunks"
# The same again: the same reference, nothing new.
run 0 CTL evidence put "$TMP/medium" --json
[ "$(jq -r .stored "$TMP/stdout")" = existing ] || fail "a repeated put answered $(cat "$TMP/stdout")"
run 0 CTL evidence get "$(sha "$TMP/medium")" --out "$TMP/medium.out"
cmp "$TMP/medium" "$TMP/medium.out" || fail "the downloaded bytes differ"
[ "$(stat -c %a "$TMP/medium.out")" = 600 ] || fail "the download is mode $(stat -c %a "$TMP/medium.out")"
run 1 CTL evidence get "$(sha "$TMP/medium")" --out "$TMP/medium.out"
stderr_has "exists; --force replaces it"
run 0 CTL evidence get "$(sha "$TMP/small")" --out "$TMP/medium.out" --force
cmp "$TMP/small" "$TMP/medium.out" || fail "--force did not replace the file"
# With curl: the body and the headers.
api dev GET "/v1/evidence/$(sha "$TMP/small")" -D "$TMP/headers"
expect_status 200
cmp "$TMP/small" "$TMP/body" || fail "curl received other bytes"
[ "$(header_of evidence-media-type)" = text/plain ] || fail "no Evidence-Media-Type: $(cat "$TMP/headers")"
run 0 CTL evidence ls
stdout_has "$(sha "$TMP/medium")"
stdout_has "2 object(s); usage 2 objects, 300015 bytes of a quota of 10000 objects, 1073741824 bytes"
api dev GET "/v1/evidence/sha256:$(printf '%064d' 0)"
expect_status 404
body_has '"error":"not_found"'

# --- chunks: each must continue exactly where the upload is -----------------------
head -c 300 /dev/urandom >"$TMP/three"
api dev POST /v1/evidence/uploads -D "$TMP/headers"
expect_status 202
LOC=$(header_of location)
case "$LOC" in /v1/evidence/uploads/????????-????-4???-????-????????????) ;; *) fail "Location is '$LOC'" ;; esac
[ "$(jq -r .location "$TMP/body")" = "$LOC" ] || fail "the body names another location: $(cat "$TMP/body")"
[ "$(jq -r .max_chunk_bytes "$TMP/body")" = 65536 ] || fail "max_chunk_bytes: $(cat "$TMP/body")"
chunk() { head -c "$2" "$TMP/three" | tail -c +$(($1 + 1)) >"$TMP/chunk"; }
chunk 0 100
api dev PATCH "$LOC" -H 'Content-Range: 0-99' --data-binary "@$TMP/chunk" -D "$TMP/headers"
expect_status 202
[ "$(header_of range)" = 0-99 ] || fail "Range after the first chunk: $(header_of range)"
chunk 50 150 # overlaps the first
api dev PATCH "$LOC" -H 'Content-Range: 50-149' --data-binary "@$TMP/chunk" -D "$TMP/headers"
expect_status 416
body_has '"error":"range"'
[ "$(header_of range)" = 0-99 ] || fail "the 416 does not say where the upload is: $(cat "$TMP/headers")"
chunk 200 300 # leaves a gap
api dev PATCH "$LOC" -H 'Content-Range: 200-299' --data-binary "@$TMP/chunk"
expect_status 416
chunk 100 200
api dev PATCH "$LOC" -H 'Content-Range: 100-198' --data-binary "@$TMP/chunk" # says 99 bytes, sends 100
expect_status 400
body_has 'the Content-Range names 99 bytes but the body holds 100'
api dev PATCH "$LOC" -H 'Content-Range: bytes 100-199/300' --data-binary "@$TMP/chunk"
expect_status 400
api dev PATCH "$LOC" -H 'Content-Range: 100-199' --data-binary "@$TMP/chunk"
expect_status 202
api dev GET "$LOC" -D "$TMP/headers"
expect_status 200
[ "$(jq -r .offset "$TMP/body")" = 200 ] || fail "status says $(cat "$TMP/body")"
[ "$(header_of range)" = 0-199 ] || fail "status Range: $(header_of range)"
# other cannot see, write or commit dev's session.
api other PATCH "$LOC" -H 'Content-Range: 200-299' --data-binary "@$TMP/chunk"
expect_status 404
api other GET "$LOC"
expect_status 404
# The last chunk with the commit, under a wrong digest: refused, nothing left.
chunk 200 300
before=$(objects_in_store)
WRONG=sha256:$(printf 'not these bytes' | sha256sum | cut -d' ' -f1)
api dev PUT "$LOC?digest=$WRONG" -H 'Content-Range: 200-299' --data-binary "@$TMP/chunk"
expect_status 400
body_has '"error":"digest_mismatch"'
[ "$(objects_in_store)" = "$before" ] || fail "a refused commit left a file in the store"
api dev GET "$LOC"
expect_status 404 # the session is gone
run 0 CTL evidence ls
grep -qF "$WRONG" "$TMP/stdout" && fail "the refused upload is listed"
grep -qF "$(sha "$TMP/three")" "$TMP/stdout" && fail "the refused upload is listed"
# A monolithic upload under a wrong digest: the same.
api dev POST "/v1/evidence/uploads?digest=$WRONG" --data-binary "@$TMP/three"
expect_status 400
body_has '"error":"digest_mismatch"'
[ "$(objects_in_store)" = "$before" ] || fail "a refused upload left a file in the store"
# The same bytes correctly: stored, and identical to a monolithic upload of them.
api dev POST /v1/evidence/uploads -D "$TMP/headers"
LOC=$(header_of location)
chunk 0 300
api dev PATCH "$LOC" -H 'Content-Range: 0-299' --data-binary "@$TMP/chunk"
expect_status 202
api dev PUT "$LOC?digest=$(sha "$TMP/three")&media_type=application/x-test%2Bbin" -D "$TMP/headers"
expect_status 201
[ "$(header_of location)" = "/v1/evidence/$(sha "$TMP/three")" ] || fail "the commit's Location: $(header_of location)"
body_has '"media_type":"application/x-test+bin"'
api dev POST "/v1/evidence/uploads?digest=$(sha "$TMP/three")&media_type=application/x-test%2Bbin" \
    --data-binary "@$TMP/three"
expect_status 200 # an identical retry
api dev POST "/v1/evidence/uploads?digest=$(sha "$TMP/three")&media_type=text/plain" --data-binary "@$TMP/three"
expect_status 409 # the same digest with another media type
# A cancelled session is gone.
api dev POST /v1/evidence/uploads -D "$TMP/headers"
LOC=$(header_of location)
api dev DELETE "$LOC"
expect_status 200
api dev PATCH "$LOC" --data-binary "@$TMP/chunk"
expect_status 404

# --- strict requests ----------------------------------------------------------------
D3=$(sha "$TMP/three")
api dev POST "/v1/evidence/uploads?digest=$D3&digest=$D3" --data-binary "@$TMP/three"
expect_status 400
body_has 'the query parameter digest is given twice'
api dev POST "/v1/evidence/uploads?name=x"
expect_status 400
api dev POST "/v1/evidence/uploads?digest=SHA256:abc" --data-binary "@$TMP/three"
expect_status 400
api dev POST /v1/evidence/uploads --data-binary "@$TMP/three" # a body without a digest
expect_status 400
api dev PUT "/v1/evidence/uploads/00000000-0000-4000-8000-000000000000?digest=$D3"
expect_status 404
api dev PATCH /v1/evidence/uploads/not-a-uuid --data-binary x
expect_status 404
api dev PATCH /v1/evidence --data-binary x
expect_status 405
api dev DELETE "/v1/evidence/$D3" --data-binary '{"reason":"x","extra":1}'
expect_status 400
body_has 'unknown member'
api dev DELETE "/v1/evidence/$D3" --data-binary '{"reason":"a","reason":"b"}'
expect_status 400
api dev DELETE "/v1/evidence/$D3" --data-binary 'reason=x'
expect_status 400
api dev DELETE "/v1/evidence/$D3" --data-binary '{"reason":""}'
expect_status 400
api dev DELETE "/v1/evidence/$D3" --data-binary '{"reason":"x","principal":"other"}'
expect_status 400 # principal without scope
api dev GET '/v1/evidence?limit=0'
expect_status 400
api dev GET '/v1/evidence?limit=10&limit=10'
expect_status 400
api dev GET '/v1/evidence?all=yes'
expect_status 400

# --- the per-object bound (1 MiB here) ----------------------------------------------
head -c 1048577 /dev/zero >"$TMP/big"
run 1 CTL evidence put "$TMP/big"
stderr_has "413 too_large"
api dev POST '/v1/evidence/uploads?size=1048577'
expect_status 413
body_has '"error":"too_large"'
# Chunks past the bound: refused and the session dropped.
api dev POST /v1/evidence/uploads -D "$TMP/headers"
LOC=$(header_of location)
head -c 65536 /dev/zero >"$TMP/64k"
for i in $(seq 0 15); do
    api dev PATCH "$LOC" --data-binary "@$TMP/64k"
    expect_status 202
done
api dev PATCH "$LOC" --data-binary "@$TMP/small"
expect_status 413
api dev GET "$LOC"
expect_status 404

# --- quotas: other may keep 200000 bytes in 2 objects --------------------------------
head -c 150000 /dev/urandom >"$TMP/q1"
head -c 60000 /dev/urandom >"$TMP/q2"
printf 'one\n' >"$TMP/q3"
printf 'two\n' >"$TMP/q4"
run 0 OTHER evidence put "$TMP/q1"
run 1 OTHER evidence put "$TMP/q2"
stderr_has "413 quota_exceeded"
api other POST '/v1/evidence/uploads?size=60000'
expect_status 413
body_has '"error":"quota_exceeded"'
run 0 OTHER evidence put "$TMP/q3"
run 1 OTHER evidence put "$TMP/q4"
stderr_has "413 quota_exceeded"
stderr_has "holds 2 evidence objects, its quota"
run 0 OTHER evidence put "$TMP/q3" # an identical retry is not a new object
run 0 OTHER evidence ls --json
[ "$(jq '.objects | length' "$TMP/stdout")" = 2 ] || fail "other lists $(cat "$TMP/stdout")"
[ "$(jq -c .usage "$TMP/stdout")" = '{"bytes":150004,"objects":2}' ] || fail "other's usage: $(cat "$TMP/stdout")"

# --- owners: other cannot read or delete dev's evidence; an admin can delete other's --
DS=$(sha "$TMP/small")
run 1 OTHER evidence get "$DS" --out "$TMP/stolen"
stderr_has "404 not_found"
[ ! -e "$TMP/stolen" ] || fail "a refused download left a file"
run 1 OTHER evidence rm "$DS" --reason mine
stderr_has "404 not_found"
run 1 OTHER evidence rm "$DS" --reason mine --owner dev --scope '["dev"]'
stderr_has "403 denied"
run 1 OTHER evidence ls --all
stderr_has "403 denied"
run 0 CTL evidence ls --all --json
jq -e '.objects[] | select(.principal == "other")' "$TMP/stdout" >/dev/null || fail "the admin does not see other's objects"
run 0 CTL evidence rm "$(sha "$TMP/q1")" --reason "admin cleanup" --owner other --scope '["dev"]' --json
[ "$(jq -r .actor "$TMP/stdout")" = dev ] || fail "the tombstone: $(cat "$TMP/stdout")"
run 1 OTHER evidence get "$(sha "$TMP/q1")" --out "$TMP/q1.out"
stderr_has "410 gone"
stderr_has "was deleted by dev: admin cleanup"
# Its room came back: q2 fits now (one object left, plus this one).
run 0 OTHER evidence put "$TMP/q2"

# --- tombstones: deleted means never again, across a restart ------------------------
run 0 CTL evidence rm "$DS" --reason "test: delete" --json
[ "$(jq -r .kind "$TMP/stdout")" = deleted ] || fail "rm printed $(cat "$TMP/stdout")"
deleted_at=$(jq -r .deleted_at "$TMP/stdout")
run 0 CTL evidence rm "$DS" --reason "again" --json # idempotent: the first tombstone stays
[ "$(jq -r .deleted_at "$TMP/stdout")" = "$deleted_at" ] || fail "a repeated rm changed the tombstone"
[ "$(jq -r .reason "$TMP/stdout")" = "test: delete" ] || fail "a repeated rm changed the reason"
run 1 CTL evidence put "$TMP/small"
stderr_has "410 gone"
stop_berthd
start_berthd
run 1 CTL evidence put "$TMP/small"
stderr_has "410 gone"
api dev POST "/v1/evidence/uploads?digest=$DS" --data-binary "@$TMP/small"
expect_status 410
api dev GET "/v1/evidence/$DS"
expect_status 410
run 0 CTL evidence get "$(sha "$TMP/medium")" --out "$TMP/medium.again" # the rest survived
cmp "$TMP/medium" "$TMP/medium.again" || fail "an object changed across the restart"

# --- audit: every put and delete is in the chain -----------------------------------
api dev GET /v1/audit
expect_status 200
grep -q '"type":"evidence.put"' "$TMP/body" || fail "no evidence.put event"
grep '"type":"evidence.deleted"' "$TMP/body" | grep -qF "\"reason\":\"test: delete\"" || fail "no evidence.deleted event"
[ "$(grep -c '"type":"evidence.deleted"' "$TMP/body")" = 2 ] || fail "a repeated delete was audited again"

# The journal statistics count the store's objects and tombstones.
api dev GET /v1/journal/stats
expect_status 200
jq -e '.evidence.objects == 4 and .evidence.tombstones == 2' "$TMP/body" >/dev/null ||
    fail "the statistics lack the evidence figures: $(cat "$TMP/body")"

# --- sessions are bounded per principal ---------------------------------------------
for i in 1 2 3 4; do
    api dev POST /v1/evidence/uploads
    expect_status 202
done
api dev POST /v1/evidence/uploads
expect_status 429
body_has '"error":"too_many_uploads"'

stop_berthd # sessions die with berthd: a new one may start after the restart
start_berthd

# --- kill -9 in the middle of an upload: nothing visible, the store opens again ----
ls -R "$STORE" | grep -v '^evidence.db' >"$TMP/store-before"
api dev POST /v1/evidence/uploads -D "$TMP/headers"
LOC=$(header_of location)
head -c 65536 /dev/urandom >"$TMP/partial"
api dev PATCH "$LOC" --data-binary "@$TMP/partial"
expect_status 202
kill_berthd
ls -R "$STORE" | grep -v '^evidence.db' >"$TMP/store-after"
cmp -s "$TMP/store-before" "$TMP/store-after" || fail "a killed upload left files: $(diff "$TMP/store-before" "$TMP/store-after")"
start_berthd
api dev GET "$LOC"
expect_status 404
run 0 CTL evidence ls
grep -qF "$(sha "$TMP/partial")" "$TMP/stdout" && fail "the killed upload is listed"
stdout_has "$(sha "$TMP/medium")"
stop_berthd
echo "PASS: test-berthd-evidence"
