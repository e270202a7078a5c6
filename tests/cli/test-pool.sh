#!/bin/sh
# berthctl pool: the example pools register, list, show, place and verify on
# a real journal; updates, refusals, enrolment and claims through the CLI.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

POOLS=$BERTH_TOP_SRCDIR/conf/pools
BACKENDS=$BERTH_TOP_SRCDIR/conf/backends.json
mkdir -m 0700 "$TMP/state"
J="--journal=$TMP/state/journal.db"
K="--audit-key=$TMP/audit.key"
run 0 "$BERTHCTL" audit keygen --out "$TMP/audit.key"

# Register every example pool; a second registration changes nothing.
for f in "$POOLS"/*.json; do
    name=$(basename "$f" .json)
    run 0 "$BERTHCTL" $J $K pool register "$f"
    stdout_has "registered pool $name"
    run 0 "$BERTHCTL" $J $K pool register "$f"
    stdout_has "pool $name unchanged"
done
default_hash=$("$BERTHCTL" $J $K --json pool register "$POOLS/default.json" | sed 's/.*"pool_hash":"\([0-9a-f]*\)".*/\1/')
[ ${#default_hash} -eq 64 ] || fail "no pool_hash in --json register output"

# The same manifest with members reordered and reformatted is the same pool.
cat >"$TMP/default-reordered.json" <<'JSON'
{
  "credential_env_allowlist": [],
  "network_egress_class": "none",
  "capability_ceiling": ["file_rw", "exec", "exec"],
  "max_concurrency": 16,
  "exposed_fields": ["timeout_seconds", "env"],
  "template": {"timeout_seconds": 600, "env": {"TZ": "UTC", "LANG": "C.UTF-8"}, "root": "/workspace"},
  "backend_allowlist": ["runsc", "crun"],
  "name": "default",
  "schema_version": 1
}
JSON
run 0 "$BERTHCTL" $J $K pool register "$TMP/default-reordered.json"
stdout_has "pool default unchanged"

run 0 "$BERTHCTL" $J pool list
stdout_has "default "
stdout_has "$default_hash"
stdout_has "runsc,crun"
[ "$(grep -c . "$TMP/stdout")" = 4 ] || fail "expected a header and three pools"
run 0 "$BERTHCTL" $J --json pool list
stdout_has '{"backend_allowlist":["runsc"],"name":"ci","network_egress_class":"loopback","pool_hash":"'

run 0 "$BERTHCTL" $J pool show default
stdout_has "\"pool_hash\": \"$default_hash\""
run 0 "$BERTHCTL" $J pool show --json default
printf '%s' "$(cat "$TMP/stdout")" >"$TMP/shown.json"
"$BERTHCTL" canon --check "$TMP/shown.json" || fail "pool show --json is not canonical"
run 1 "$BERTHCTL" $J pool show nope
stderr_has "no active pool is called nope"

# Placement on the example backends.
run 0 "$BERTHCTL" $J $K pool place default --backends "$BACKENDS"
stdout_has "placed on runsc"
stdout_has "placement_hash "
placement=$(sed -n 's/^placement_hash //p' "$TMP/stdout")
printf '{"backend": "crun"}' >"$TMP/crun.json"
run 1 "$BERTHCTL" $J $K pool place default --overrides "$TMP/crun.json" --backends "$BACKENDS"
stderr_has "refused: non_exposed_field at backend: pool default does not expose backend"
run 0 "$BERTHCTL" $J $K pool place graders --overrides "$TMP/crun.json" --backends "$BACKENDS"
stdout_has "placed on crun"
stdout_has "runsc                drop  not_requested"
printf '{"env": {"DB_PASSWORD": "x"}}' >"$TMP/cred.json"
run 1 "$BERTHCTL" $J $K --json pool place default --overrides "$TMP/cred.json" --backends "$BACKENDS"
stdout_has '"outcome":"refused"'
stdout_has '"reason":"credential_env_not_allowed"'
run 1 "$BERTHCTL" $J $K pool place ci
stderr_has "refused: no_backend"
stdout_has "runsc                drop  not_configured"

# An update records the previous hash.
sed 's/"timeout_seconds": 600/"timeout_seconds": 900/' "$POOLS/default.json" >"$TMP/default-900.json"
run 0 "$BERTHCTL" $J $K pool register "$TMP/default-900.json"
stdout_has "updated pool default"
stdout_has "(was $default_hash)"

# Enrolment and a claim of the placement made above (under the old hash, so
# it must be refused), then of a new one.
run 0 "$BERTHCTL" keygen --out "$TMP/worker.key"
run 0 "$BERTHCTL" $J $K pool enrol default --worker-key "$TMP/worker.key" --worker-name worker-1
stdout_has '"kind": "pool.enrolment"'
run 1 "$BERTHCTL" $J $K pool claim default --worker-key "$TMP/worker.key" --worker-name worker-1 --job-id job-1 \
    --placement-hash "$placement"
stderr_has "was not recorded in pool default"
run 0 "$BERTHCTL" $J $K pool place default --backends "$BACKENDS"
placement=$(sed -n 's/^placement_hash //p' "$TMP/stdout")
run 0 "$BERTHCTL" $J $K pool claim default --worker-key "$TMP/worker.key" --worker-name worker-1 --job-id job-1 \
    --placement-hash "$placement"
stdout_has '"kind": "pool.claim"'

# Retire, and verify everything.
run 0 "$BERTHCTL" $J $K --json pool retire graders
stdout_is '{"name":"graders","outcome":"retired"}
'
run 0 "$BERTHCTL" $J pool list
[ "$(grep -c . "$TMP/stdout")" = 3 ] || fail "expected two pools after retiring one"
run 0 "$BERTHCTL" $J $K pool verify
stdout_has "verified: 13 events, 2 active pools, 4 stored manifests, 3 placements, 1 enrolments, 1 claims"
run 0 "$BERTHCTL" $J $K --json pool verify
stdout_has '"verified":true'

# Another key: verification fails (exit 3) at the first event.
run 0 "$BERTHCTL" audit keygen --out "$TMP/other.key"
run 3 "$BERTHCTL" $J --audit-key="$TMP/other.key" pool verify
stderr_has "verification failed: event 1: mac does not match"
run 3 "$BERTHCTL" $J --audit-key="$TMP/other.key" --json pool verify
stdout_has '{"bad_event":1,"reason":"event 1: mac does not match'
stdout_has '"verified":false}'

# Usage and safety errors.
run 2 "$BERTHCTL" pool list
stderr_has "--journal=PATH is required"
run 2 "$BERTHCTL" $J pool register "$POOLS/default.json"
stderr_has "--audit-key=FILE is required"
run 2 "$BERTHCTL" $J pool frobnicate
run 2 "$BERTHCTL" $J pool show
# Against berthd, a NAME that no pool can have is refused before any request
# (it used to be sent whenever it was one path component).
run 2 "$BERTHCTL" --config "$TMP/no-client.json" pool show Default
stderr_has '"Default" is not a pool name (1 to 63 of [a-z0-9._-], starting with a letter or digit)'
mkdir -m 0755 "$TMP/open"
run 1 "$BERTHCTL" --journal="$TMP/open/journal.db" $K pool register "$POOLS/default.json"
stderr_has "must be private (chmod 0700"
printf '{"schema_version": 1, "name": "x", "backend_allowlist": ["runsc"], "colour": 1}' >"$TMP/bad.json"
run 1 "$BERTHCTL" $J $K pool register "$TMP/bad.json"
stderr_has 'pool: unknown member "colour"'
run 0 "$BERTHCTL" pool --help
stdout_has "Usage: berthctl --journal=PATH"
