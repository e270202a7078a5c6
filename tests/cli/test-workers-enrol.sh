# test-workers-enrol.sh -- a remote worker's enrolment (docs/workers.md):
# berth-worker signs an enrolment binding its Ed25519 identity to a pool's
# current manifest and berthd records it (pool.worker_enrolled) when the
# host policy's subject of the worker's certificate "serves" the pool and
# the worker's name is that subject's principal.  Refused: a subject that
# serves nothing, a name that is not the caller's, a pool the subject may
# read but not serve, a forged signature, an enrolment into a manifest the
# pool no longer has (after an update the worker enrols again), and a
# certificate the policy does not list.  No root needed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
: "${BERTH_WORKER:?}"

make_install
# worker NAME: a client certificate for NAME, listed in the policy with the
# grants of "other" and "serves": ["default"]; its client.json, identity key
# and berth-worker configuration in $TMP/NAME/.
worker() {
    mkdir -m 0700 "$TMP/$1"
    add_client "$1" listed
    publish "$INST/policy.json" jq --arg p "$1" '(.subjects[] | select(.principal == $p)).serves = ["default"]'
    jq --arg c "$INST/tls/client-$1.pem" --arg k "$INST/tls/client-$1.key" '.certificate = $c | .private_key = $k' \
        "$INST/client.json" >"$TMP/$1/client.json"
    run 0 "$BERTHCTL" keygen --out "$TMP/$1/identity.key"
    printf '{"schema_version":1,"name":"%s","client":"%s","identity":"%s"}' "$1" "$TMP/$1/client.json" \
        "$TMP/$1/identity.key" >"$TMP/$1/worker.json"
}
worker w1
enrol() { run "$1" "$BERTH_WORKER" enrol --config "$2" --pool "${3:-default}"; }

# Usage errors.
run 2 "$BERTH_WORKER" enrol --pool default
stderr_has "enrol needs --config=FILE, an absolute path"
run 2 "$BERTH_WORKER" enrol --config "$TMP/w1/worker.json" --pool 'no such'
stderr_has "enrol needs --pool=NAME, a pool name"
run 2 "$BERTH_WORKER" fly
run 0 "$BERTH_WORKER" --help
stdout_has "berth-worker enrol --config=FILE --pool=NAME"
# A configuration with an unknown member, or a relative path.
printf '{"schema_version":1,"name":"w1","client":"c.json","identity":"/k"}' >"$TMP/bad.json"
enrol 1 "$TMP/bad.json"
stderr_has "worker.client and worker.identity must be absolute paths"
printf '{"schema_version":1,"name":"w1","client":"/c","identity":"/k","x":1}' >"$TMP/bad.json"
enrol 1 "$TMP/bad.json"
stderr_has 'worker: unknown member "x"'

start_berthd
enrol 0 "$TMP/w1/worker.json"
stdout_has "berth-worker: w1 enrolled into pool default (pool_hash "
KEYID=$(sed -n 's/.* with key \(.*\)$/\1/p' "$TMP/stdout")
grep -qF "worker w1 (key $KEYID) enrolled into pool default" "$TMP/berthd.log" ||
    fail "berthd did not log the enrolment: $(cat "$TMP/berthd.log")"

# A subject that serves no pool (dev) is no worker.
jq '.name = "dev"' "$TMP/w1/worker.json" >"$TMP/dev-worker.json"
jq --arg c "$INST/tls/client-dev.pem" --arg k "$INST/tls/client-dev.key" '.certificate = $c | .private_key = $k' \
    "$INST/client.json" >"$TMP/dev-client.json"
jq --arg c "$TMP/dev-client.json" '.client = $c' "$TMP/dev-worker.json" >"$TMP/dev-worker2.json"
enrol 1 "$TMP/dev-worker2.json"
stderr_has "403 not_a_worker: dev serves no pool"
# w1's certificate under another name.
jq '.name = "w2"' "$TMP/w1/worker.json" >"$TMP/w1-as-w2.json"
enrol 1 "$TMP/w1-as-w2.json"
stderr_has "403 denied: an enrolment's worker_name must be the caller's principal, w1"
# A pool w1 may read (its grant lists it) but does not serve.
jq '.name = "gamma"' "$INST/pools/default.json" >"$INST/pools/gamma.json"
publish "$INST/policy.json" jq '(.subjects[] | select(.principal == "w1")).pools += ["gamma"]'
stop_berthd
start_berthd
enrol 1 "$TMP/w1/worker.json" gamma
stderr_has "403 denied: w1 may not serve pool gamma"

# Enrolments sent as berth-worker would send them (w1's own certificate).
wpost() { # BODY_FILE
    curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-w1.pem" --key "$INST/tls/client-w1.key" \
        -X POST -H 'Content-Type: application/json' --data-binary "@$1" -o "$TMP/body" -w '%{http_code}' \
        "$(URL /v1/workers/enrolments)" >"$TMP/status" 2>"$TMP/curl.err" || echo 000 >"$TMP/status"
}
run 0 "$BERTH_WORKER" enrol --config "$TMP/w1/worker.json" --pool default --dry-run
cp "$TMP/stdout" "$TMP/signed.json"
jq -e --arg k "$KEYID" '.enrolment.keyid == $k and .enrolment.worker_name == "w1"' "$TMP/signed.json" >/dev/null ||
    fail "the dry run printed $(cat "$TMP/signed.json")"
# One byte changed in the signed enrolment: its signature no longer verifies.
jq -c '.enrolment.created_ns = "1"' "$TMP/signed.json" >"$TMP/forged.json"
wpost "$TMP/forged.json"
expect_status 400
body_has "the enrolment signature does not verify"
wpost "$TMP/signed.json"
expect_status 201

# The pool's manifest changes: an enrolment into the old one is refused,
# and the worker enrols again into the new one.
jq '.template.timeout_seconds = 3000' "$INST/pools/default.json" >"$TMP/default2.json"
run 0 "$BERTHCTL" --config "$INST/client.json" pool register "$TMP/default2.json"
wpost "$TMP/signed.json"
expect_status 409
body_has '"error":"stale_pool"'
enrol 0 "$TMP/w1/worker.json"

# A certificate the policy does not list is turned away at the door.
issue_client_cert "$INST/tls/client-ghost" ghost "$INST/tls/ca"
jq --arg c "$INST/tls/client-ghost.pem" --arg k "$INST/tls/client-ghost.key" '.certificate = $c | .private_key = $k' \
    "$INST/client.json" >"$TMP/ghost-client.json"
jq --arg c "$TMP/ghost-client.json" '.client = $c | .name = "ghost"' "$TMP/w1/worker.json" >"$TMP/ghost.json"
enrol 1 "$TMP/ghost.json"

stop_berthd
# Offline, the chain re-derives every enrolment: three (w1 twice into the
# first manifest, once into the second), each a valid self-signed one.
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify
stdout_has ", 3 enrolments, "
echo "PASS: workers enrol with their own identity, into the pools they serve"
