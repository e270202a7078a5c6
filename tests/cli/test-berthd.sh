# test-berthd.sh -- the real berthd on 127.0.0.1, driven by real curl and by
# berthctl, with credentials from the real "berthctl dev-init".
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

# Short HTTP timeouts so that the timeout cases below take a few seconds.
make_install '"http": {"header_timeout_ns": 2500000000, "request_timeout_ns": 4000000000, "idle_timeout_ns": 5000000000, "max_connections": 8, "refusal_log_interval_ns": 200000000}'
start_berthd
grep -q "pool default registered by berthd:pools_directory" "$TMP/berthd.log" || fail "the pools directory was not registered"

# --- health, and the TLS gate ----------------------------------------------
api dev GET /v1/health
expect_status 200
body_has '{"status":"ok"}'

# No client certificate: the handshake itself fails.
served=$(grep -c "GET /v1/health 200" "$TMP/berthd.log")
if curl -sS --cacert "$INST/tls/ca.pem" "$(URL /v1/health)" >/dev/null 2>"$TMP/curl.err"; then
    fail "a client without a certificate was served"
fi
[ "$(grep -c "GET /v1/health 200" "$TMP/berthd.log")" = "$served" ] || fail "berthd served a client without a certificate"

# A certificate from another CA: refused at TLS as well.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/evil-ca.key" \
    -out "$TMP/evil-ca.pem" -days 2 -subj "/CN=evil CA" 2>/dev/null
issue_client_cert "$TMP/evil" dev "$TMP/evil-ca"
if curl -sS --cacert "$INST/tls/ca.pem" --cert "$TMP/evil.pem" --key "$TMP/evil.key" "$(URL /v1/health)" \
    >/dev/null 2>"$TMP/curl.err"; then
    fail "a certificate from another CA was served"
fi
# TLS 1.2 is refused.
if curl -sS --tls-max 1.2 --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" \
    --key "$INST/tls/client-dev.key" "$(URL /v1/health)" >/dev/null 2>"$TMP/curl.err"; then
    fail "TLS 1.2 was accepted"
fi

# --- submit, identical retry, conflicting retry ---------------------------
job_doc hello '["echo","hello","world"]' >"$TMP/hello.json"
api dev POST /v1/jobs --data-binary "@$TMP/hello.json" -H 'Content-Type: application/json'
expect_status 201
cp "$TMP/body" "$TMP/receipt1.json"
body_has '"kind":"berth.receipt"'
body_has '"principal":"dev"'
body_has '"backend":"script"'
RUN=$(run_id_of "$TMP/receipt1.json")
[ -n "$RUN" ] || fail "no run_id in the receipt"

api dev POST /v1/jobs --data-binary "@$TMP/hello.json"
expect_status 200
cmp -s "$TMP/body" "$TMP/receipt1.json" || fail "an identical retry did not return the same receipt"

job_doc hello '["echo","something","else"]' >"$TMP/hello2.json"
api dev POST /v1/jobs --data-binary "@$TMP/hello2.json"
expect_status 409
body_has '"error":"conflict"'

# A job larger than the front threads parse (16 KiB, api.c) is parsed in the
# batch; one just under it on the front thread.  Both answer alike.
for size in 12000 20000; do
    job_doc "big-$size" "[\"echo\",\"$(head -c "$size" /dev/zero | tr '\0' x)\"]" >"$TMP/big.json"
    [ "$(wc -c <"$TMP/big.json")" -gt "$size" ] || fail "the $size-byte job document is too small"
    api dev POST /v1/jobs --data-binary "@$TMP/big.json"
    expect_status 201
    cp "$TMP/body" "$TMP/big.receipt.json"
    api dev POST /v1/jobs --data-binary "@$TMP/big.json"
    expect_status 200
    cmp -s "$TMP/body" "$TMP/big.receipt.json" || fail "a retry of the $size-byte job got another receipt"
    run 0 "$BERTHCTL" receipt verify "$TMP/big.receipt.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/big.json"
done

# The receipt verifies offline against the broker's public key, for this job only.
run 0 "$BERTHCTL" receipt verify "$TMP/receipt1.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/hello.json"
run 3 "$BERTHCTL" receipt verify "$TMP/receipt1.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/hello2.json"

# --- inspect, result, collect ------------------------------------------------
wait_state dev hello exited
body_has '"receipt":'
api dev GET /v1/jobs/hello/result
expect_status 200
cp "$TMP/body" "$TMP/result1.json"
body_has '"kind":"berth.result"'
body_has '"stdout":"aGVsbG8gd29ybGQK"'
run 0 "$BERTHCTL" result verify "$TMP/result1.json" --pubkey "$INST/keys/receipt.pub" --job "$TMP/hello.json" \
    --receipt "$TMP/receipt1.json"
stdout_has "status exited, exit code 0"
[ "$(starts "$RUN")" = 1 ] || fail "job hello was started $(starts "$RUN") times"

run 0 "$BERTHCTL" --config "$INST/client.json" collect hello --out "$TMP/collected"
[ "$(cat "$TMP/collected/stdout")" = "hello world" ] || fail "collected stdout is wrong"
cmp -s "$TMP/collected/receipt.json" "$TMP/receipt1.json" || fail "collected receipt differs"
run 0 "$BERTHCTL" result verify "$TMP/collected/result.json" --pubkey "$INST/keys/receipt.pub" \
    --job "$TMP/hello.json" --receipt "$TMP/collected/receipt.json"
# collect never overwrites
run 1 "$BERTHCTL" --config "$INST/client.json" collect hello --out "$TMP/collected"

# Unknown job, another principal's job.
api dev GET /v1/jobs/nope/result
expect_status 404
api other GET /v1/jobs/hello
expect_status 404
api dev GET '/v1/jobs/bad%2Fid'
expect_status 404

# --- berthctl: submit --wait, wait, cancel -----------------------------------
job_doc via-ctl '["echo","from","berthctl"]' >"$TMP/ctl.json"
run 0 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/ctl.json" --wait
stdout_is "from berthctl
"
stderr_has "exited with exit code 0"
# Its requests (berthd logs each): the submission and the result's long
# poll; the receipt it verified from the submission is not asked for again.
grep -q " POST /v1/jobs 201 " "$TMP/berthd.log" || fail "no submission in berthd's log"
grep -q " GET /v1/jobs/via-ctl/result 200 " "$TMP/berthd.log" ||
    fail "no long poll for via-ctl's result in berthd's log: $(grep via-ctl "$TMP/berthd.log")"
! grep -q " GET /v1/jobs/via-ctl 200 " "$TMP/berthd.log" ||
    fail "submit --wait asked for the job it had just been given the receipt of"
job_doc exit3 '["exit","3"]' >"$TMP/exit3.json"
run 1 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/exit3.json" --wait
stderr_has "exited with exit code 3"

job_doc sleeper '["sleep"]' >"$TMP/sleeper.json"
run 0 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/sleeper.json"
stdout_has '"job_id": "sleeper"'
wait_state dev sleeper running
api dev GET /v1/jobs/sleeper/result
expect_status 202
api dev POST /v1/jobs/sleeper/cancel
expect_status 202
body_has '"cancel_requested":true'
run 1 "$BERTHCTL" --config "$INST/client.json" wait sleeper --timeout 60
stderr_has "job sleeper cancelled"
grep -q "^cancel r" "$TMP/script/calls.log" || fail "the backend was never asked to cancel"

# A client pinning another broker key refuses what it receives (exit 3).
"$BERTHCTL" keygen --out "$TMP/other.key" >/dev/null
OTHER_PUB=$(openssl pkey -in "$TMP/other.key" -pubout -outform DER | tail -c 32 | base64 | tr '+/' '-_' | tr -d '=')
sed "s|\"broker_public_key\": *\"[^\"]*\"|\"broker_public_key\": \"$OTHER_PUB\"|" \
    "$INST/client.json" >"$TMP/client-wrongkey.json"
grep -qF -- "$OTHER_PUB" "$TMP/client-wrongkey.json" || fail "could not write the wrong-key client config"
job_doc pinned '["echo"]' >"$TMP/pinned.json"
run 3 "$BERTHCTL" --config "$TMP/client-wrongkey.json" submit "$TMP/pinned.json"
stderr_has "does not verify against the pinned broker key"

# --- grants: pools, capabilities, admin-only routes --------------------------
run 0 "$BERTHCTL" --config "$INST/client.json" capabilities --json
stdout_has '"principal":"dev"'
stdout_has '"admin":true'
api other GET /v1/capabilities
expect_status 200
body_has '"admin":false'
api other GET /metrics
expect_status 403
body_has 'metrics need an admin grant'
api dev GET /metrics
expect_status 200
body_has 'berth_jobs{state="exited"}'
body_has 'berth_journal_commit_duration_seconds_count'
api other GET '/v1/audit?after=0'
expect_status 403
api dev GET '/v1/audit?after=0'
expect_status 200
body_has '"type":"job.accepted"'
api dev GET '/v1/audit?after=-1'
expect_status 400
run 0 "$BERTHCTL" --config "$INST/client.json" pool list
stdout_has '"name": "default"'
sed 's/"name": *"default"/"name": "second"/' "$INST/pools/default.json" >"$TMP/second.json"
run 0 "$BERTHCTL" --config "$INST/client.json" pool register "$TMP/second.json"
stdout_has '"outcome": "registered"'
api other POST /v1/pools --data-binary "@$TMP/second.json"
expect_status 403

# --- policy changes take effect on the next request ----------------------------
# A revoked fingerprint stops an open keep-alive connection on its next request:
# curl runs two requests on one connection, 3 s apart (inside the 5 s idle
# timeout); the policy is replaced as soon as berthd has logged the first.
FP=$(der_fingerprint "$INST/tls/client-dev.pem")
cp "$INST/policy.json" "$TMP/policy.saved"
served_before=$(grep -c ' dev GET /v1/capabilities 200 ' "$TMP/berthd.log" || :)
(
    deadline=$((SECONDS + 30))
    until [ "$(grep -c ' dev GET /v1/capabilities 200 ' "$TMP/berthd.log" || :)" -gt "$served_before" ]; do
        [ "$SECONDS" -lt "$deadline" ] || exit 1
        sleep 0.02
    done
    set_policy "s/$FP/0000000000000000000000000000000000000000000000000000000000000000/"
) &
revoker=$!
curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
    --rate 20/m -w '%{http_code} %{num_connects}\n' -o /dev/null -o /dev/null \
    "$(URL /v1/capabilities)" "$(URL /v1/capabilities)" >"$TMP/keepalive" 2>"$TMP/curl.err" ||
    fail "curl failed: $(cat "$TMP/curl.err")"
wait "$revoker" || fail "berthd never logged the first request: $(cat "$TMP/keepalive")"
[ "$(sed -n 1p "$TMP/keepalive")" = "200 1" ] || fail "first request: $(cat "$TMP/keepalive")"
[ "$(sed -n 2p "$TMP/keepalive")" = "403 0" ] || fail "second request on the same connection: $(cat "$TMP/keepalive")"
# A new connection with the unlisted certificate is closed right after the
# handshake: no reply at all.
api dev GET /v1/jobs/hello
expect_status 000
log_has "closed connections without serving them: .*certificate not in the host policy" ||
    fail "the unlisted certificate's connection was not logged"
cp "$TMP/policy.saved" "$INST/policy.json.new" && mv "$INST/policy.json.new" "$INST/policy.json"
api dev GET /v1/jobs/hello
expect_status 200

# An expired policy denies everything.
set_policy 's/"not_after": *"[0-9]*"/"not_after": "1000"/g; s/"not_before": *"[0-9]*"/"not_before": "0"/g'
api dev GET /v1/capabilities
expect_status 403
body_has "denies every request"
grep -qF "$INST" "$TMP/body" && fail "an error message names a host path"
# A malformed one too; a missing one too.
printf '{"schema_version": 1' >"$INST/policy.json.new" && chmod 0600 "$INST/policy.json.new" &&
    mv "$INST/policy.json.new" "$INST/policy.json"
api dev GET /v1/jobs/hello
expect_status 403
rm "$INST/policy.json"
api dev POST /v1/jobs --data-binary "@$TMP/hello.json"
expect_status 403
cp "$TMP/policy.saved" "$INST/policy.json.new" && mv "$INST/policy.json.new" "$INST/policy.json"
api dev POST /v1/jobs --data-binary "@$TMP/hello.json"
expect_status 200

# --- bounds -------------------------------------------------------------------
head -c 1200000 /dev/zero | tr '\0' ' ' >"$TMP/huge.json"
api dev POST /v1/jobs --data-binary "@$TMP/huge.json"
expect_status 413
# Just over the job bound but under the body bound: the broker's JSON 413.
{ printf '{"schema_version":1,"id":"big","pad":"'; head -c 1048600 /dev/zero | tr '\0' 'x'; printf '"}'; } >"$TMP/big.json"
api dev POST /v1/jobs --data-binary "@$TMP/big.json"
expect_status 413
body_has '"error":"too_large"'
api dev POST /v1/jobs --data-binary '{"schema_version":1,"id":"x"'
expect_status 400
body_has '"error":"malformed"'
api dev POST /v1/jobs --data-binary '{"schema_version":1,"id":"dup","id":"dup"}'
expect_status 400
api dev DELETE /v1/jobs/hello
expect_status 405
api dev GET /v1/nothing-here
expect_status 404
# The route table: a known path with another method is 405, except /v1/jobs
# (there is no job listing: 404); a path the table does not know is 404.
for case in "GET /v1/jobs 404" "PUT /v1/jobs 404" "GET /v1/jobs/hello/other 404" "GET /v1/jobs/hello/ 404" \
    "PUT /v1/jobs/hello/result 405" "GET /v1/jobs/hello/cancel 405" "DELETE /v1/pools 405" \
    "POST /v1/pools/default 405" "GET /v1/pools/Bad!name 404" "GET /v1/pools/default/x 404" "PATCH /v1/health 405" \
    "GET /v1/health/ 404" "POST /metrics 405" "POST /v1/capabilities 405" "OPTIONS /v1/audit 405"; do
    set -- $case
    api dev "$1" "$2"
    [ "$(cat "$TMP/status")" = "$3" ] || fail "$1 $2 answered $(cat "$TMP/status"), not $3: $(cat "$TMP/body")"
done
api dev GET '/v1/audit?after=x'
expect_status 400
body_has 'after must be a decimal event sequence number'
# Oversized headers.
api dev GET /v1/health -H "X-Big: $(head -c 40000 /dev/zero | tr '\0' a)"
case "$(cat "$TMP/status")" in 4*|000) ;; *) fail "a 40 kB header was accepted: $(cat "$TMP/status")" ;; esac

# A client that sends half a request and stops is dropped (header timeout 2.5 s).
start_s=$SECONDS
timeout 20 openssl s_client -quiet -connect "127.0.0.1:$PORT" -cert "$INST/tls/client-dev.pem" \
    -key "$INST/tls/client-dev.key" -CAfile "$INST/tls/ca.pem" >"$TMP/slow.out" 2>"$TMP/slow.err" \
    < <(printf 'GET /v1/health HTTP/1.1\r\nHost: x\r\n'; sleep 10) || true
# (Dropped means before s_client's input ends at 10 s; the log line below
# says which deadline closed it.)
[ $((SECONDS - start_s)) -lt 10 ] || fail "a silent half request kept its connection"
# One that trickles a byte every half second is dropped by the header deadline
# (2.5 s after the handshake): the bytes do not extend it.
start_s=$SECONDS
timeout 30 openssl s_client -quiet -connect "127.0.0.1:$PORT" -cert "$INST/tls/client-dev.pem" \
    -key "$INST/tls/client-dev.key" -CAfile "$INST/tls/ca.pem" >"$TMP/trickle.out" 2>"$TMP/trickle.err" \
    < <(for c in G E T ' ' / v 1 / h e a l t h ' ' H T T P / 1 . 1 '' '' '' '' ''; do printf '%s' "$c"; sleep 0.5; done) ||
    true
[ $((SECONDS - start_s)) -lt 12 ] || fail "a trickling client kept its connection"
log_has "closed connections without serving them: .*no complete header block within http.header_timeout_ns" ||
    fail "berthd did not log the dropped connection"

# --- admission: more than max_connections clients --------------------------------
idlers=
for i in 1 2 3 4 5 6 7 8 9 10; do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT"; sleep 2) &
    idlers="$idlers $!"
done
sleep 0.5
api dev GET /v1/health --max-time 10
expect_status 200 # served once the idle ones are dropped or close
wait $idlers

# --- logs never carry secrets -------------------------------------------------
grep -qF "$(sed -n 2p "$INST/tls/client-dev.key")" "$TMP/berthd.log" && fail "a private key reached the log"
grep -q "dev POST /v1/jobs 201" "$TMP/berthd.log" || fail "requests are not logged"
grep -q "accepted -> claimed" "$TMP/berthd.log" || fail "state changes are not logged"

# --- clean stop ----------------------------------------------------------------
stop_berthd
grep -q "stopped" "$TMP/berthd.log" || fail "berthd did not log its stop"
# The journal is closed: berthctl can open and verify it.
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify
# Every run berthd started on its own host has its claim in the chain,
# signed with the receipt key: checked with --pubkey, counted otherwise.
CLAIMED=$(grep -c "accepted -> claimed" "$TMP/berthd.log")
stdout_has "$CLAIMED of the claims are the broker's own, their signatures not checked (pass --pubkey)"
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" --audit-key "$INST/keys/audit.key" pool verify \
    --pubkey "$INST/keys/receipt.pub"
stdout_has "$CLAIMED of the claims are the broker's own, their signatures checked"
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" audit export --out "$TMP/chain.jsonl"
run 0 "$BERTHCTL" audit verify "$TMP/chain.jsonl" --audit-key "$INST/keys/audit.key" --pubkey "$INST/keys/receipt.pub"
stdout_has "$CLAIMED of the claims are the broker's own, their signatures checked"
# Checked with another key, the first claim is refused.
run 0 "$BERTHCTL" keygen --out "$TMP/stranger.key" --public-out "$TMP/stranger.pub"
run 3 "$BERTHCTL" audit verify "$TMP/chain.jsonl" --audit-key "$INST/keys/audit.key" --pubkey "$TMP/stranger.pub"
stderr_has "pool.claim_receipt: claim.keyid is not the id of the key it is checked with"
