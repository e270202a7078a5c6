# test-berthd-hostile.sh -- what a hostile client, or a hostile broker,
# sends: each case is one that a review found accepted, or mishandled, before
# it was fixed.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

make_install '"http": {"handshake_timeout_ns": 5000000000, "header_timeout_ns": 5000000000, "request_timeout_ns": 20000000000, "idle_timeout_ns": 20000000000, "max_connections": 8, "refusal_log_interval_ns": 200000000}'
start_berthd

# raw TEXT: send TEXT (printf format) over one TLS connection as client dev;
# what came back goes to $TMP/raw.
raw() {
    # shellcheck disable=SC2059
    timeout 20 openssl s_client -quiet -connect "127.0.0.1:$PORT" -cert "$INST/tls/client-dev.pem" \
        -key "$INST/tls/client-dev.key" -CAfile "$INST/tls/ca.pem" >"$TMP/raw" 2>"$TMP/raw.err" \
        < <(printf "$1"; sleep 3) || true
}

# --- job ids made of dots name no job -----------------------------------------
job_doc . '["echo"]' >"$TMP/dot.json"
api dev POST /v1/jobs --data-binary "@$TMP/dot.json"
expect_status 400
body_has 'not all dots'
job_doc .. '["echo"]' >"$TMP/dotdot.json"
api dev POST /v1/jobs --data-binary "@$TMP/dotdot.json"
expect_status 400
api dev GET /v1/jobs/.. --path-as-is
expect_status 404
api dev GET /v1/jobs/./result --path-as-is
expect_status 404
run 2 "$BERTHCTL" --config "$INST/client.json" inspect ..
stderr_has "not all dots"
# ... while names that merely contain dots are fine.
job_doc .a '["echo","dotted"]' >"$TMP/dota.json"
api dev POST /v1/jobs --data-binary "@$TMP/dota.json"
expect_status 201

# --- audit cursors are SQLite integers -----------------------------------------
api dev GET '/v1/audit?after=9223372036854775808'
expect_status 400
body_has '"error":"malformed"'
api dev GET '/v1/audit?after=18446744073709551615'
expect_status 400
api dev GET '/v1/audit?after=%209'
expect_status 400
api dev GET '/v1/audit?after=9223372036854775807'
expect_status 200

# --- HEAD: berthd serves only GET and POST (405, and the connection closes) ------
api dev HEAD /v1/health --head
expect_status 405
# A HEAD followed by a GET on one connection: the GET is answered on its own
# connection, never read out of a stray body.
curl -sS --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
    -o /dev/null -w '%{http_code}\n' --head "$(URL /v1/health)" --next \
    --cacert "$INST/tls/ca.pem" --cert "$INST/tls/client-dev.pem" --key "$INST/tls/client-dev.key" \
    -o "$TMP/body" -w '%{http_code}\n' "$(URL /v1/health)" >"$TMP/two" 2>"$TMP/curl.err" ||
    fail "curl failed: $(cat "$TMP/curl.err")"
[ "$(tr '\n' ' ' <"$TMP/two")" = "405 200 " ] || fail "HEAD then GET answered $(cat "$TMP/two")"
body_has '{"status":"ok"}'

# --- two Content-Length headers: refused, and the connection closed -------------
raw 'POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}'
grep -q "^HTTP/1.1 400" "$TMP/raw" || fail "two Content-Length headers were not refused: $(head -c 300 "$TMP/raw")"
grep -qF "repeats Content-Length" "$TMP/raw" || fail "the refusal does not say why: $(cat "$TMP/raw")"
grep -qi "^Connection: close" "$TMP/raw" || fail "the connection was kept after two Content-Length headers"

# --- a path with control characters is refused; an odd one is logged escaped ---
raw 'GET /v1/x\033[31mred HTTP/1.1\r\nHost: x\r\n\r\n'
grep -q "^HTTP/1.1 400" "$TMP/raw" || fail "a control character in the target was not refused: $(head -c 300 "$TMP/raw")"
grep -qi "^Connection: close" "$TMP/raw" || fail "the connection was kept after a refused target"
raw 'GET /v1/x%%1Bred HTTP/1.1\r\nHost: x\r\n\r\n'
grep -q "^HTTP/1.1 404" "$TMP/raw" || fail "the odd path was not answered 404: $(head -c 300 "$TMP/raw")"
grep -qF "GET /v1/x%251Bred 404" "$TMP/berthd.log" || fail "the path was not logged escaped: $(tail -n 3 "$TMP/berthd.log")"
if grep -q "$(printf '\033')" "$TMP/berthd.log"; then fail "an escape character reached the log"; fi

# --- a connection that never finishes its TLS handshake ---------------------------
# It is closed by the handshake deadline (5 s), not the request timeout (20 s):
# berthd says which deadline closed it (before the fix it was the request one).
timeout 25 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT; printf '\\x16\\x03\\x01' >&3; cat <&3 >/dev/null" || true
log_has "closed connections without serving them: .*no TLS handshake within http.handshake_timeout_ns" ||
    fail "berthd did not log the stalled handshake: $(tail -n 3 "$TMP/berthd.log")"
grep -q "no complete request within" "$TMP/berthd.log" && fail "the stalled handshake was closed by the request timeout"

# --- berthctl never passes a terminal escape through ------------------------------
# Not from a file it reads (the JSON layer already shows such bytes as "?")...
printf '{"schema_version":1,"\\u001b]0;owned\\u0007":1}' >"$TMP/escape.json"
run 1 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/escape.json"
stderr_has 'unknown member "?]0;owned?"'
# --- the dynamic loader's and shells' start-up variables are not overrides ------
# (src/lib/pool/envsafe.h): refused with refused_env naming the variable, and
# nothing is recorded; an ordinary name in the same pool is accepted.
env_job() {
    job_doc "$1" '["echo"]' | jq --arg k "$2" '.overrides = {env: {($k): "/tmp/x"}}' >"$TMP/$1.json"
}
for var in LD_PRELOAD LD_AUDIT BASH_ENV PATH; do
    env_job "env-$var" "$var"
    api dev POST /v1/jobs --data-binary "@$TMP/env-$var.json"
    expect_status 403
    body_has '"error":"refused_env"'
    body_has "env.$var"
    api dev GET "/v1/jobs/env-$var"
    expect_status 404
done
run 1 "$BERTHCTL" --config "$INST/client.json" submit "$TMP/env-LD_PRELOAD.json"
stderr_has "refused_env"
stderr_has "LD_PRELOAD"
env_job env-ok MY_SETTING
api dev POST /v1/jobs --data-binary "@$TMP/env-ok.json"
expect_status 201

# --- jobs with inputs: no evidence store stages them, so no receipt ----------------
job_doc with-inputs '["cat","/inputs/data.csv"]' |
    jq '.inputs = [{path: "/inputs/data.csv", ref: {digest: ("sha256:" + ("0" * 64)), size: 3}}]' >"$TMP/inputs.json"
api dev POST /v1/jobs --data-binary "@$TMP/inputs.json"
expect_status 400
body_has '"error":"inputs_unsupported"'
body_has 'no evidence store'
grep -q '"kind":"berth.receipt"' "$TMP/body" && fail "a job with inputs got a receipt"
api dev GET /v1/jobs/with-inputs
expect_status 404

# --- a hostile broker ---------------------------------------------------------------
# A stand-in broker (openssl s_server -HTTP, with the real broker certificate)
# answers from files: for job "victim" the view of job ".a" (a real, validly
# signed receipt of another job), for job "evil" an error whose message
# carries terminal escapes.
job_doc victim '["echo"]' >"$TMP/victim.json"
api dev POST /v1/jobs --data-binary "@$TMP/victim.json"
expect_status 201
api dev GET /v1/jobs/.a
expect_status 200
mkdir -p "$TMP/www/v1/jobs"
{
    printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n' \
        "$(wc -c <"$TMP/body")"
    cat "$TMP/body"
} >"$TMP/www/v1/jobs/victim"
evil='{"error":"denied","message":"\u001b]0;owned\u0007\u001b[2J\u009b31m"}'
printf 'HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' \
    "${#evil}" "$evil" >"$TMP/www/v1/jobs/evil"
REAL_PORT=$PORT
pick_port
FAKE_PORT=$PORT
PORT=$REAL_PORT
(cd "$TMP/www" && exec openssl s_server -quiet -HTTP -accept "127.0.0.1:$FAKE_PORT" -cert "$INST/tls/server.pem" \
    -key "$INST/tls/server.key" -tls1_3 >"$TMP/fake.log" 2>&1) &
FAKE_PID=$!
deadline=$((SECONDS + 30))
until (exec 3<>"/dev/tcp/127.0.0.1/$FAKE_PORT") 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || fail "the stand-in broker (openssl s_server) never listened: $(cat "$TMP/fake.log")"
    sleep 0.05
done
sed "s|:$REAL_PORT\"|:$FAKE_PORT\"|" "$INST/client.json" >"$TMP/client-fake.json"
grep -qF ":$FAKE_PORT\"" "$TMP/client-fake.json" || fail "could not point a client at the stand-in broker"
# fake_run WANT ARGS...: berthctl against the stand-in broker.
fake_run() {
    local want=$1 st=0
    shift
    "$BERTHCTL" --config "$TMP/client-fake.json" "$@" >"$TMP/stdout" 2>"$TMP/stderr" || st=$?
    [ "$st" = "$want" ] || { kill "$FAKE_PID" 2>/dev/null || true; fail "berthctl $* exited $st, expected $want"; }
}
fake_run 3 inspect victim
stderr_has "the receipt of another job"
fake_run 1 inspect evil
stderr_has '403 denied: \x1b]0;owned\x07\x1b[2J\u009b31m'
if grep -q "$(printf '\033')" "$TMP/stderr"; then fail "berthctl printed a raw escape character"; fi
kill "$FAKE_PID" 2>/dev/null || true
wait "$FAKE_PID" 2>/dev/null || true
# The same client against the real broker verifies the real receipt.
run 0 "$BERTHCTL" --config "$INST/client.json" inspect victim
stdout_has '"job_id": "victim"'

stop_berthd
