#!/bin/sh
# berthctl dev-init: the layout and its modes, certificates that the openssl
# CLI verifies (and a real TLS 1.3 handshake with client certificates), a
# policy and pool that berth's own parsers accept, keys that agree with each
# other, and never overwriting anything.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

require_tool openssl openssl
require_tool curl curl

SERVER_PID=
trap 'if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || :; fi; rm -rf "$TMP"' EXIT

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
# mode_is PATH MODE
mode_is() {
    [ "$(stat -c %a "$1")" = "$2" ] || fail "$1 has mode $(stat -c %a "$1"), expected $2"
}
# snapshot DIR: every path with its mode, and every file's checksum.
snapshot() {
    (cd "$1" && find . -exec stat -c '%n %a %s %Y' {} + | sort && find . -type f -exec sha256sum {} + | sort)
}
# canonical FILE: the file's canonical JSON on one line (berthctl canon).
canonical() {
    "$BERTHCTL" canon <"$1" || fail "$1 is not strict JSON"
    echo
}

# ---------------------------------------------------------------------------
# Defaults: one principal "dev", port 8443, no backend (and no image source
# or evidence store, whatever the default plugin directory of this machine
# holds: one where berth is installed has both).

D=$TMP/dev
run 0 "$BERTHCTL" dev-init "$D" --no-image-source --no-evidence-store
stdout_has "berth dev installation written to $D"
stdout_has "  start the daemon:  berthd --config $D/berthd.json"
stdout_has "  submit a job:      berthctl --config $D/client.json submit JOB.json --wait"
fp_dev=$(der_fingerprint "$D/tls/client-dev.pem")
stdout_has "principal dev:"
stdout_has "fingerprint $fp_dev (admin; client.json)"
[ -s "$TMP/stderr" ] && fail "dev-init wrote to stderr on success"

# The layout, exactly, and every mode.
(cd "$D" && find . | sort) >"$TMP/layout"
cat >"$TMP/expected-layout" <<'EOF'
.
./berthd.json
./client.json
./images
./keys
./keys/audit.key
./keys/receipt.key
./keys/receipt.pub
./policy.json
./pools
./pools/default.json
./runtime
./state
./tls
./tls/ca.key
./tls/ca.pem
./tls/client-dev.key
./tls/client-dev.pem
./tls/server.key
./tls/server.pem
EOF
cmp -s "$TMP/layout" "$TMP/expected-layout" || fail "unexpected layout: $(cat "$TMP/layout")"
for d in "$D" "$D/tls" "$D/keys" "$D/pools" "$D/state" "$D/images" "$D/runtime"; do
    mode_is "$d" 700
    [ -d "$d" ] && [ ! -L "$d" ] || fail "$d is not a directory"
done
for f in berthd.json client.json policy.json tls/ca.key tls/server.key tls/client-dev.key keys/receipt.key \
    keys/audit.key; do
    mode_is "$D/$f" 600
done
for f in tls/ca.pem tls/server.pem tls/client-dev.pem keys/receipt.pub pools/default.json; do
    mode_is "$D/$f" 644
done
for f in $(cd "$D" && find . -type f); do
    [ "$(stat -c %u "$D/$f")" = "$(id -u)" ] || fail "$f is not owned by the caller"
    [ "$(stat -c %h "$D/$f")" = 1 ] || fail "$f has more than one link"
done

# Keys: unencrypted PKCS#8 PEM that openssl reads; TLS keys on P-256.
for k in ca server client-dev; do
    head -n1 "$D/tls/$k.key" | grep -qx -- '-----BEGIN PRIVATE KEY-----' || fail "tls/$k.key is not PKCS#8 PEM"
    openssl pkey -in "$D/tls/$k.key" -noout -text 2>/dev/null | grep -q 'NIST CURVE: P-256' ||
        fail "tls/$k.key is not an EC P-256 key"
    # Each certificate holds its key's public half.
    [ "$(openssl pkey -in "$D/tls/$k.key" -pubout)" = "$(openssl x509 -in "$D/tls/$k.pem" -noout -pubkey)" ] ||
        fail "tls/$k.pem does not belong to tls/$k.key"
done

# ---------------------------------------------------------------------------
# Certificates, checked by openssl.

T=$D/tls
openssl verify -CAfile "$T/ca.pem" "$T/server.pem" >/dev/null || fail "server.pem does not verify against ca.pem"
openssl verify -CAfile "$T/ca.pem" -purpose sslserver "$T/server.pem" >/dev/null ||
    fail "server.pem is not usable by a TLS server"
openssl verify -CAfile "$T/ca.pem" -purpose sslclient "$T/client-dev.pem" >/dev/null ||
    fail "client-dev.pem is not usable by a TLS client"
# Neither leaf can stand in for the other.
openssl verify -CAfile "$T/ca.pem" -purpose sslserver "$T/client-dev.pem" >/dev/null 2>&1 &&
    fail "a client certificate verifies as a server certificate"
openssl verify -CAfile "$T/ca.pem" -purpose sslclient "$T/server.pem" >/dev/null 2>&1 &&
    fail "the server certificate verifies as a client certificate"

openssl x509 -in "$T/ca.pem" -noout -subject -nameopt RFC2253 | grep -qx 'subject=CN=berth dev CA dev' ||
    fail "CA subject: $(openssl x509 -in "$T/ca.pem" -noout -subject)"
openssl x509 -in "$T/ca.pem" -noout -text >"$TMP/ca.txt"
grep -A1 'Basic Constraints: critical' "$TMP/ca.txt" | grep -q 'CA:TRUE, pathlen:0' || fail "CA basicConstraints"
grep -A1 'Key Usage: critical' "$TMP/ca.txt" | grep -qx ' *Certificate Sign, CRL Sign' || fail "CA keyUsage"
grep -q 'Subject Key Identifier' "$TMP/ca.txt" || fail "CA lacks a subjectKeyIdentifier"
grep -q 'Signature Algorithm: ecdsa-with-SHA256' "$TMP/ca.txt" || fail "CA not signed with ECDSA-SHA256"

openssl x509 -in "$T/server.pem" -noout -subject -nameopt RFC2253 | grep -qx 'subject=CN=localhost' ||
    fail "server subject"
openssl x509 -in "$T/server.pem" -noout -ext subjectAltName,extendedKeyUsage,keyUsage,authorityKeyIdentifier \
    >"$TMP/server.ext"
grep -qx ' *DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1' "$TMP/server.ext" ||
    fail "server subjectAltName: $(cat "$TMP/server.ext")"
grep -qx ' *TLS Web Server Authentication' "$TMP/server.ext" || fail "server lacks serverAuth"
grep -q 'Client Authentication' "$TMP/server.ext" && fail "server has clientAuth"
grep -qx ' *Digital Signature' "$TMP/server.ext" || fail "server keyUsage"
grep -q 'Authority Key Identifier' "$TMP/server.ext" || fail "server lacks an authorityKeyIdentifier"

openssl x509 -in "$T/client-dev.pem" -noout -subject -nameopt RFC2253 | grep -qx 'subject=CN=dev' ||
    fail "client subject"
openssl x509 -in "$T/client-dev.pem" -noout -ext subjectAltName,extendedKeyUsage >"$TMP/client.ext"
grep -qx ' *TLS Web Client Authentication' "$TMP/client.ext" || fail "client lacks clientAuth"
grep -q 'Server Authentication' "$TMP/client.ext" && fail "client has serverAuth"
grep -q 'Subject Alternative Name' "$TMP/client.ext" && fail "client has a subjectAltName"

# Validity: from about a minute ago for 365 days; random, distinct serials.
now=$(date +%s)
for c in ca server client-dev; do
    nb=$(date -d "$(openssl x509 -in "$T/$c.pem" -noout -startdate | cut -d= -f2)" +%s)
    na=$(date -d "$(openssl x509 -in "$T/$c.pem" -noout -enddate | cut -d= -f2)" +%s)
    [ $((now - nb)) -ge 59 ] && [ $((now - nb)) -le 120 ] || fail "$c.pem notBefore is $((now - nb)) s ago"
    [ $((na - nb)) -eq $((365 * 86400 + 60)) ] || fail "$c.pem is valid for $((na - nb)) s"
    openssl x509 -in "$T/$c.pem" -noout -serial | cut -d= -f2 >>"$TMP/serials"
done
[ "$(sort -u "$TMP/serials" | wc -l)" = 3 ] || fail "serial numbers repeat: $(cat "$TMP/serials")"
while read -r s; do
    [ ${#s} -ge 30 ] || fail "serial $s is shorter than about 128 bits"
done <"$TMP/serials"

# ---------------------------------------------------------------------------
# The JSON documents: strict, and what docs/berthd.md says.

canonical "$D/berthd.json" >"$TMP/berthd.canon"
printf '%s\n' \
    '{"audit_key":"'"$D"'/keys/audit.key","backends":{},"broker_name":"dev","listen":{"address":"127.0.0.1","port":8443},"policy":"'"$D"'/policy.json","pools_directory":"'"$D"'/pools","receipt_key":"'"$D"'/keys/receipt.key","schema_version":1,"state_directory":"'"$D"'/state","tls":{"certificate":"'"$D"'/tls/server.pem","client_ca":"'"$D"'/tls/ca.pem","private_key":"'"$D"'/tls/server.key"}}' \
    >"$TMP/expected"
cmp -s "$TMP/expected" "$TMP/berthd.canon" || fail "berthd.json is $(cat "$TMP/berthd.canon")"

pub=$(openssl pkey -pubin -in "$D/keys/receipt.pub" -outform DER | tail -c 32 | b64url)
[ ${#pub} -eq 43 ] || fail "cannot read keys/receipt.pub"
# The private receipt key derives the same public key.
[ "$(openssl pkey -in "$D/keys/receipt.key" -pubout -outform DER | tail -c 32 | b64url)" = "$pub" ] ||
    fail "keys/receipt.pub does not belong to keys/receipt.key"
canonical "$D/client.json" >"$TMP/client.canon"
printf '%s\n' \
    '{"broker_public_key":"'"$pub"'","ca":"'"$D"'/tls/ca.pem","certificate":"'"$D"'/tls/client-dev.pem","private_key":"'"$D"'/tls/client-dev.key","schema_version":1,"url":"https://127.0.0.1:8443"}' \
    >"$TMP/expected"
cmp -s "$TMP/expected" "$TMP/client.canon" || fail "client.json is $(cat "$TMP/client.canon")"
grep -qx '[0-9a-f]\{64\}' "$D/keys/audit.key" || fail "keys/audit.key is not 64 hex digits"

canonical "$D/policy.json" >"$TMP/policy.canon"
nb=$(sed 's/.*"not_before":"\([0-9]*\)".*/\1/' "$TMP/policy.canon")
na=$(sed 's/.*"not_after":"\([0-9]*\)".*/\1/' "$TMP/policy.canon")
[ $((na - nb)) -eq $(((365 * 86400 + 60) * 1000000000)) ] || fail "policy interval is $((na - nb)) ns"
[ $((now - nb / 1000000000)) -ge 59 ] && [ $((now - nb / 1000000000)) -le 120 ] ||
    fail "policy not_before is not about a minute ago"
limits='{"artifact_bytes":1073741824,"cpu_millis":2000,"memory_bytes":2147483648,"output_bytes":1048576,"pids":512,"scratch_bytes":1073741824,"wall_time_ns":3600000000000}'
printf '%s\n' \
    '{"not_after":"'"$na"'","not_before":"'"$nb"'","schema_version":1,"subjects":[{"admin":true,"fingerprints":["'"$fp_dev"'"],"images":[],"limits":'"$limits"',"not_after":"'"$na"'","not_before":"'"$nb"'","pools":["default"],"principal":"dev","scope":["dev"]}]}' \
    >"$TMP/expected"
cmp -s "$TMP/expected" "$TMP/policy.canon" || fail "policy.json is $(cat "$TMP/policy.canon")"

# The pool is conf/pools/default.json with this installation's backends.
sed 's/"backend_allowlist": \[[^]]*\]/"backend_allowlist": ["runsc"]/' "$BERTH_TOP_SRCDIR/conf/pools/default.json" \
    >"$TMP/pool-expected.json"
[ "$(canonical "$D/pools/default.json")" = "$(canonical "$TMP/pool-expected.json")" ] ||
    fail "pools/default.json is $(canonical "$D/pools/default.json")"
# berth's pool parser accepts it: register it in a fresh journal, with the
# installation's own audit key.
mkdir -m 0700 "$TMP/j"
run 0 "$BERTHCTL" --journal="$TMP/j/journal.db" --audit-key="$D/keys/audit.key" pool register "$D/pools/default.json"
stdout_has "registered pool default"

# ---------------------------------------------------------------------------
# A real TLS 1.3 handshake: openssl s_server with the server pair, requiring
# a client certificate from the CA; curl with and without one.

port=
for attempt in 1 2 3 4 5 6 7 8 9 10; do
    p=$((20000 + $(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 40000))
    openssl s_server -accept "127.0.0.1:$p" -cert "$T/server.pem" -key "$T/server.key" -CAfile "$T/ca.pem" \
        -Verify 1 -verify_return_error -tls1_3 -www >"$TMP/s_server.log" 2>&1 </dev/null &
    SERVER_PID=$!
    i=0
    while [ $i -lt 50 ] && kill -0 "$SERVER_PID" 2>/dev/null && ! grep -q '^ACCEPT' "$TMP/s_server.log"; do
        sleep 0.1
        i=$((i + 1))
    done
    if grep -q '^ACCEPT' "$TMP/s_server.log" && kill -0 "$SERVER_PID" 2>/dev/null; then
        port=$p
        break
    fi
    kill "$SERVER_PID" 2>/dev/null || :
    wait "$SERVER_PID" 2>/dev/null || :
    SERVER_PID=
done
[ -n "$port" ] || fail "openssl s_server did not start: $(cat "$TMP/s_server.log")"
CURL="curl -sS --noproxy * --max-time 10 --cacert $T/ca.pem"

set -f # keep the * of --noproxy
run 0 $CURL --cert "$T/client-dev.pem" --key "$T/client-dev.key" "https://127.0.0.1:$port/"
stdout_has "Protocol  : TLSv1.3"
# The server certificate also matches the name localhost (still 127.0.0.1).
run 0 $CURL --cert "$T/client-dev.pem" --key "$T/client-dev.key" --resolve "localhost:$port:127.0.0.1" \
    "https://localhost:$port/"
# No client certificate: the handshake fails.
set +e
$CURL "https://127.0.0.1:$port/" >"$TMP/stdout" 2>"$TMP/stderr"
st=$?
set -e
[ "$st" != 0 ] || fail "a TLS connection without a client certificate succeeded"
# A client certificate from another installation's CA: refused too.
run 0 "$BERTHCTL" dev-init "$TMP/other" --principal dev
set +e
$CURL --cert "$TMP/other/tls/client-dev.pem" --key "$TMP/other/tls/client-dev.key" "https://127.0.0.1:$port/" \
    >"$TMP/stdout" 2>"$TMP/stderr"
st=$?
set -e
[ "$st" != 0 ] || fail "a client certificate from another CA was accepted"
# And the client refuses a server certificate from another CA.
set +e
curl -sS --noproxy '*' --max-time 10 --cacert "$TMP/other/tls/ca.pem" --cert "$T/client-dev.pem" \
    --key "$T/client-dev.key" "https://127.0.0.1:$port/" >"$TMP/stdout" 2>"$TMP/stderr"
st=$?
set -e
set +f
[ "$st" != 0 ] || fail "curl trusted berthd's certificate under another CA"

kill "$SERVER_PID" 2>/dev/null || :
wait "$SERVER_PID" 2>/dev/null || :
SERVER_PID=

# ---------------------------------------------------------------------------
# Never overwriting: a second run names the first existing file, changes
# nothing and leaves no temporary file.

snapshot "$D" >"$TMP/before"
run 1 "$BERTHCTL" dev-init "$D"
stderr_has "berthctl dev-init: $D/berthd.json exists; dev-init never overwrites files"
stderr_one_line
[ -s "$TMP/stdout" ] && fail "a refused dev-init printed to stdout"
snapshot "$D" >"$TMP/after"
cmp -s "$TMP/before" "$TMP/after" || fail "a refused dev-init changed the installation"
# Any one of the files is enough, and it is named.
rm "$D/berthd.json"
snapshot "$D" >"$TMP/before"
run 1 "$BERTHCTL" dev-init "$D"
stderr_has "$D/client.json exists; dev-init never overwrites files"
snapshot "$D" >"$TMP/after"
cmp -s "$TMP/before" "$TMP/after" || fail "a refused dev-init changed the installation"
mkdir -m 0700 "$TMP/partial"
mkdir -m 0700 "$TMP/partial/state"
run 1 "$BERTHCTL" dev-init "$TMP/partial"
stderr_has "$TMP/partial/state exists; dev-init never overwrites files"
[ "$(ls -A "$TMP/partial")" = state ] || fail "dev-init wrote into a refused directory"
mkdir -m 0700 "$TMP/partial2" "$TMP/partial2/tls"
touch "$TMP/partial2/tls/client-dev.key"
ln -s /nonexistent "$TMP/partial2/policy.json"
run 1 "$BERTHCTL" dev-init "$TMP/partial2"
stderr_has "$TMP/partial2/policy.json exists"
rm "$TMP/partial2/policy.json"
run 1 "$BERTHCTL" dev-init "$TMP/partial2"
stderr_has "$TMP/partial2/tls/client-dev.key exists"
mkdir -m 0700 "$TMP/partial3"
ln -s "$TMP/partial2/tls" "$TMP/partial3/tls"
run 1 "$BERTHCTL" dev-init "$TMP/partial3"
stderr_has "$TMP/partial3/tls exists"
[ "$(ls -A "$TMP/partial2/tls")" = client-dev.key ] || fail "dev-init wrote through a symlinked tls"

# An existing, empty, private directory is used (a trailing slash is fine).
mkdir -m 0700 "$TMP/empty"
run 0 "$BERTHCTL" dev-init "$TMP/empty/"
grep -qx "berth dev installation written to $TMP/empty" "$TMP/stdout" || fail "DIR shown as $(head -n1 "$TMP/stdout")"
grep -q "\"$TMP/empty/tls/server.pem\"" "$TMP/empty/berthd.json" || fail "paths are not normalised"

# ---------------------------------------------------------------------------
# Several principals; options end up where they belong.

IMG1=sha256:$(printf 'a%.0s' $(seq 64))
IMG2=sha256:$(printf '0%.0s' $(seq 64))
printf '{"root": "/var/lib/berth/oci", "runtime": {"path": "/usr/bin/runsc", "args": ["--x"]}}\n' >"$TMP/oci.json"
M=$TMP/multi
run 0 "$BERTHCTL" dev-init "$M" --principal dev --principal ci --image "$IMG1" --image "$IMG2" --port 9443 \
    --backend "runsc=runtime-oci,$TMP/oci.json" --backend script=runtime-script --plugin-dir "$TMP/plugins" \
    --broker-name ci.example-1
for p in dev ci; do
    mode_is "$M/tls/client-$p.key" 600
    mode_is "$M/tls/client-$p.pem" 644
    openssl verify -CAfile "$M/tls/ca.pem" -purpose sslclient "$M/tls/client-$p.pem" >/dev/null ||
        fail "client-$p.pem does not verify"
    openssl x509 -in "$M/tls/client-$p.pem" -noout -subject -nameopt RFC2253 | grep -qx "subject=CN=$p" ||
        fail "client-$p.pem subject"
done
fp_dev=$(der_fingerprint "$M/tls/client-dev.pem")
fp_ci=$(der_fingerprint "$M/tls/client-ci.pem")
[ "$fp_dev" != "$fp_ci" ] || fail "two principals share a certificate"
stdout_has "fingerprint $fp_dev (admin; client.json)"
grep -q "principal ci: *fingerprint $fp_ci\$" "$TMP/stdout" || fail "no fingerprint line for ci: $(cat "$TMP/stdout")"
canonical "$M/policy.json" >"$TMP/policy.canon"
imgs='["'"$IMG1"'","'"$IMG2"'"]'
grep -qF '"subjects":[{"admin":true,"fingerprints":["'"$fp_dev"'"],"images":'"$imgs"',"limits":'"$limits"',' \
    "$TMP/policy.canon" || fail "dev's grant: $(cat "$TMP/policy.canon")"
# ci's grant has no admin member (so it is not admin), and its own certificate.
grep -qF '},{"fingerprints":["'"$fp_ci"'"],"images":'"$imgs"',"limits":'"$limits"',' "$TMP/policy.canon" ||
    fail "ci's grant: $(cat "$TMP/policy.canon")"
grep -qF '"pools":["default"],"principal":"ci","scope":["dev"]}]}' "$TMP/policy.canon" || fail "ci's grant"
[ "$(grep -o '"admin"' "$TMP/policy.canon" | wc -l)" = 1 ] || fail "more than one admin"

canonical "$M/berthd.json" >"$TMP/berthd.canon"
grep -qF '"backends":{"runsc":{"config":{"root":"/var/lib/berth/oci","runtime":{"args":["--x"],"path":"/usr/bin/runsc"}},"plugin":"runtime-oci","require_qualification":false},"script":{"config":{},"plugin":"runtime-script","require_qualification":false}}' \
    "$TMP/berthd.canon" || fail "backends: $(cat "$TMP/berthd.canon")"
grep -qF '"broker_name":"ci.example-1","listen":{"address":"127.0.0.1","port":9443}' "$TMP/berthd.canon" ||
    fail "broker_name or listen: $(cat "$TMP/berthd.canon")"
grep -qF '"plugin_directory":"'"$TMP"'/plugins"' "$TMP/berthd.canon" || fail "plugin_directory"
canonical "$M/client.json" | grep -qF '"certificate":"'"$M"'/tls/client-dev.pem"' || fail "client.json is not dev's"
canonical "$M/client.json" | grep -qF '"url":"https://127.0.0.1:9443"' || fail "client.json url"
canonical "$M/pools/default.json" | grep -qF '"backend_allowlist":["runsc","script"]' || fail "pool backends"
run 0 "$BERTHCTL" --journal="$TMP/j/journal.db" --audit-key="$D/keys/audit.key" pool register "$M/pools/default.json"
stdout_has "updated pool default"

# --runtime pins an OCI runtime binary and writes runtime-oci's settings for
# it, in the pool's order among --backend entries.  Stand-in binaries named
# runsc and crun, so this runs without the real ones; berthd itself checks the
# pins against the real runtimes in test-qualify.sh and the quickstart.
mkdir -m 0755 "$TMP/rt"
printf 'not really gvisor\n' >"$TMP/rt/runsc"
printf 'not really crun, longer\n' >"$TMP/rt/crun"
chmod 0750 "$TMP/rt/runsc"
chmod 0755 "$TMP/rt/crun"
pin_of() {
    printf '{"mode":"%s","path":"%s","sha256":"sha256:%s","size":%s}' "$(stat -c %04a "$1")" "$1" \
        "$(sha256sum <"$1" | cut -d' ' -f1)" "$(stat -c %s "$1")"
}
R=$TMP/rtinst
run 0 "$BERTHCTL" dev-init "$R" --no-image-source --runtime "gvisor,$TMP/rt/runsc" \
    --backend script=runtime-script --runtime "crun,$TMP/rt/crun"
canonical "$R/berthd.json" >"$TMP/berthd.canon"
# Each runtime backend gets berthd's receipt public key (the client's copy).
KEY=$(jq -r .broker_public_key "$R/client.json")
grep -qF '"gvisor":{"config":{"broker_public_key":"'"$KEY"'","global_args":["--network=none","--platform=ptrace"],"isolation":"gvisor","pids_ceiling":4096,"runtime":'"$(pin_of "$TMP/rt/runsc")"',"state_directory":"'"$R"'/runtime/gvisor"},"plugin":"runtime-oci","qualify_at_startup":true,"require_qualification":true}' \
    "$TMP/berthd.canon" || fail "runsc backend: $(cat "$TMP/berthd.canon")"
if mountpoint -q /sys/fs/cgroup/unified 2>/dev/null; then
    crun_unmount='"unmount":["/sys/fs/cgroup/unified"]'
else
    crun_unmount=
fi
grep -qF '"crun":{"config":{"broker_public_key":"'"$KEY"'","isolation":"native","runtime":'"$(pin_of "$TMP/rt/crun")"',"state_directory":"'"$R"'/runtime/crun"'"${crun_unmount:+,$crun_unmount}"'},"plugin":"runtime-oci","qualify_at_startup":true,"require_qualification":true}' \
    "$TMP/berthd.canon" || fail "crun backend: $(cat "$TMP/berthd.canon")"
grep -qF '"script":{"config":{},"plugin":"runtime-script","require_qualification":false}' "$TMP/berthd.canon" ||
    fail "script backend: $(cat "$TMP/berthd.canon")"
canonical "$R/pools/default.json" | grep -qF '"backend_allowlist":["gvisor","script","crun"]' ||
    fail "pool order with --runtime"
[ -z "$(ls -A "$R/runtime")" ] || fail "runtime/ is not empty"
# What cannot be pinned is refused before anything is written.
U2=$TMP/rtfail
run 1 "$BERTHCTL" dev-init "$U2" --runtime "runc,$TMP/rt/runc"
stderr_has "dev-init knows the runtimes runsc and crun"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/nosuch/runsc"
stderr_has "--runtime x: "
mkdir "$TMP/rt/dirlink" && ln -s "$TMP/rt/runsc" "$TMP/rt/dirlink/runsc"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/dirlink/runsc"
stderr_has "symbolic link"
mkdir "$TMP/rt/d" && mkdir "$TMP/rt/d/crun"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/d/crun"
stderr_has "$TMP/rt/d/crun is a directory, expected a regular file"
# What runtime-oci would refuse to run as root is refused here too.
mkdir -m 0755 "$TMP/rt/open"
cp "$TMP/rt/runsc" "$TMP/rt/open/runsc"
chmod 0777 "$TMP/rt/open/runsc"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/open/runsc"
stderr_has "$TMP/rt/open/runsc has mode 0777, which is writable by group or others"
mkdir -m 0777 "$TMP/rt/shared"
chmod 0777 "$TMP/rt/shared"
cp "$TMP/rt/crun" "$TMP/rt/shared/crun"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/shared/crun"
stderr_has "$TMP/rt/shared (above $TMP/rt/shared/crun) has mode 0777, which is writable by group or others and not sticky"
# A second hard link: the file can be changed through a name elsewhere.
mkdir -m 0755 "$TMP/rt/linked"
cp "$TMP/rt/crun" "$TMP/rt/linked/crun"
ln "$TMP/rt/linked/crun" "$TMP/rt/crun-other-name"
run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/linked/crun"
stderr_has "$TMP/rt/linked/crun has 2 hard links, expected exactly 1"
rm "$TMP/rt/crun-other-name"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -m 0755 "$TMP/rt/theirs"
    cp "$TMP/rt/crun" "$TMP/rt/theirs/crun"
    chown nobody "$TMP/rt/theirs/crun"
    run 1 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/theirs/crun"
    stderr_has "$TMP/rt/theirs/crun is owned by uid $(id -u nobody), expected root"
fi
# A FIFO is refused at once (it used to block the open for ever).
mkdir -m 0755 "$TMP/rt/fifo"
mkfifo "$TMP/rt/fifo/runsc"
run 1 timeout 20 "$BERTHCTL" dev-init "$U2" --runtime "x,$TMP/rt/fifo/runsc"
stderr_has "$TMP/rt/fifo/runsc is a FIFO, expected a regular file"
run 2 "$BERTHCTL" dev-init "$U2" --runtime "x,rel/runsc"
stderr_has "the runtime's PATH must be absolute"
run 2 "$BERTHCTL" dev-init "$U2" --runtime "x,"
stderr_has "the PATH after the comma is empty"
run 2 "$BERTHCTL" dev-init "$U2" --runtime "X"
stderr_has "is not a backend name"
run 2 "$BERTHCTL" dev-init "$U2" --runtime "a,$TMP/rt/runsc" --backend a=runtime-oci
stderr_has "backend a is given twice"
[ -e "$U2" ] && fail "a refused --runtime created $U2"

# The first --principal is the admin and the client.json one, in any order.
run 0 "$BERTHCTL" dev-init "$TMP/ci-first" --principal ci --principal dev
canonical "$TMP/ci-first/policy.json" | grep -qF '"pools":["default"],"principal":"ci","scope":["dev"]},' ||
    fail "ci is not the first subject"
canonical "$TMP/ci-first/policy.json" | grep -qF '"subjects":[{"admin":true,' || fail "the first subject is not admin"
canonical "$TMP/ci-first/client.json" | grep -qF 'tls/client-ci.pem"' || fail "client.json is not ci's"

# --json, and a relative DIR (made absolute in every file).
mkdir -p "$TMP/cwd/sub"
(cd "$TMP/cwd" && "$BERTHCTL" --json dev-init ./sub/../inst >"$TMP/json") || fail "relative DIR failed"
fp=$(der_fingerprint "$TMP/cwd/inst/tls/client-dev.pem")
printf '%s\n' \
    '{"berthd_config":"'"$TMP"'/cwd/inst/berthd.json","client_config":"'"$TMP"'/cwd/inst/client.json","directory":"'"$TMP"'/cwd/inst","principals":[{"certificate":"'"$TMP"'/cwd/inst/tls/client-dev.pem","fingerprint":"'"$fp"'","name":"dev"}]}' \
    >"$TMP/expected"
cmp -s "$TMP/expected" "$TMP/json" || fail "--json output: $(cat "$TMP/json")"
grep -q "\"$TMP/cwd/inst/policy.json\"" "$TMP/cwd/inst/berthd.json" || fail "relative DIR not made absolute"

# ---------------------------------------------------------------------------
# Refusals.

# Usage errors (exit 2) create nothing.
U=$TMP/usage
run 2 "$BERTHCTL" dev-init "$U" --port 0
stderr_has '--port takes a TCP port number from 1 to 65535, not "0"'
run 2 "$BERTHCTL" dev-init "$U" --port 65536
stderr_has "--port takes a TCP port number"
run 2 "$BERTHCTL" dev-init "$U" --port 8443x
stderr_has "--port takes a TCP port number"
run 2 "$BERTHCTL" dev-init "$U" --port=-1
run 2 "$BERTHCTL" dev-init "$U" --principal 'a/b'
stderr_has '--principal: "a/b" is not a principal name (1 to 128 of [A-Za-z0-9._@-])'
run 2 "$BERTHCTL" dev-init "$U" --principal ''
run 2 "$BERTHCTL" dev-init "$U" --principal "$(printf 'p%.0s' $(seq 129))"
stderr_has "is not a principal name"
# Every principal the host policy accepts is accepted (dev-init used to stop
# at 64 bytes and refuse "@"): the longest, and an e-mail style name.  The
# client certificate's CN is the principal's first 64 characters.
long=$(printf 'p%.0s' $(seq 128))
run 0 "$BERTHCTL" dev-init "$TMP/long" --principal "$long" --principal ci@build-host.example
canonical "$TMP/long/policy.json" | grep -qF '"principal":"'"$long"'"' || fail "the long principal's grant"
canonical "$TMP/long/policy.json" | grep -qF '"principal":"ci@build-host.example"' || fail "ci@build-host.example's grant"
openssl x509 -in "$TMP/long/tls/client-$long.pem" -noout -subject -nameopt RFC2253 |
    grep -qx "subject=CN=$(printf 'p%.0s' $(seq 64))" || fail "the long principal's certificate subject"
openssl x509 -in "$TMP/long/tls/client-ci@build-host.example.pem" -noout -subject -nameopt RFC2253 |
    grep -qx 'subject=CN=ci@build-host.example' || fail "ci@build-host.example's certificate subject"
run 2 "$BERTHCTL" dev-init "$U" --principal dev --principal ci --principal dev
stderr_has "--principal dev is given twice"
run 2 "$BERTHCTL" dev-init "$U" --image sha256:abc
stderr_has '--image takes a manifest digest, sha256:<64 lowercase hex>, not "sha256:abc"'
run 2 "$BERTHCTL" dev-init "$U" --image "sha256:$(printf 'A%.0s' $(seq 64))"
run 2 "$BERTHCTL" dev-init "$U" --image "$IMG1" --image "$IMG1"
stderr_has "is given twice"
run 2 "$BERTHCTL" dev-init "$U" --backend runsc
stderr_has "--backend takes NAME=PLUGIN[,CONFIG_FILE]"
run 2 "$BERTHCTL" dev-init "$U" --backend Runsc=runtime-oci
stderr_has "is not a backend name"
run 2 "$BERTHCTL" dev-init "$U" --backend runsc=runtime_oci
stderr_has "is not a plugin name"
run 2 "$BERTHCTL" dev-init "$U" --backend runsc=runtime-oci,
stderr_has "CONFIG_FILE after the comma is empty"
run 2 "$BERTHCTL" dev-init "$U" --backend a=x --backend a=y
stderr_has "backend a is given twice"
run 2 "$BERTHCTL" dev-init "$U" --broker-name 'no spaces'
stderr_has "is not a broker name"
run 2 "$BERTHCTL" dev-init
stderr_has "missing DIR"
run 2 "$BERTHCTL" dev-init "$U" "$U.2"
stderr_has "unexpected argument"
run 2 "$BERTHCTL" dev-init "$U" --bogus
[ -e "$U" ] && fail "a usage error created $U"

# Backend configuration files must exist and hold a JSON object (exit 1).
run 1 "$BERTHCTL" dev-init "$U" --backend "runsc=runtime-oci,$TMP/missing.json"
stderr_has "--backend runsc: $TMP/missing.json: "
printf '[1]' >"$TMP/array.json"
run 1 "$BERTHCTL" dev-init "$U" --backend "runsc=runtime-oci,$TMP/array.json"
stderr_has "the configuration must be a JSON object"
printf '{"a": 1, "a": 2}' >"$TMP/dup.json"
run 1 "$BERTHCTL" dev-init "$U" --backend "runsc=runtime-oci,$TMP/dup.json"
[ -e "$U" ] && fail "a failed dev-init created $U"

# berthd.json is checked with berthd's own parser before anything is written
# (it used to be checked as JSON only): under a DIR of 4080 bytes
# keys/receipt.key is 4097 bytes long, which berthd could never open, so
# berthd.json would not load.
deep=$TMP/deep
while [ ${#deep} -lt 3870 ]; do deep=$deep/$(printf 'd%.0s' $(seq 200)); done
deep=$deep/$(printf 'e%.0s' $(seq $((4080 - ${#deep} - 1))))
mkdir -p "$deep"
run 1 "$BERTHCTL" dev-init "$deep"
stderr_has "berthd.json would not be valid: config.receipt_key must be an absolute path (shorter than 4096 bytes)"
[ -z "$(ls -A "$deep")" ] || fail "a refused dev-init wrote into $deep"

# DIR must be private to the caller, reached without symlinks, and its
# parent must exist.
mkdir -m 0770 "$TMP/gw"
chmod 0770 "$TMP/gw"
run 1 "$BERTHCTL" dev-init "$TMP/gw"
stderr_has "$TMP/gw has mode 0770, which is writable by group or others"
[ -z "$(ls -A "$TMP/gw")" ] || fail "dev-init wrote into a group-writable directory"
mkdir -m 0702 "$TMP/ow"
chmod 0702 "$TMP/ow"
run 1 "$BERTHCTL" dev-init "$TMP/ow"
stderr_has "which is writable by group or others"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    mkdir -m 0700 "$TMP/theirs"
    chown nobody "$TMP/theirs"
    run 1 "$BERTHCTL" dev-init "$TMP/theirs"
    stderr_has "is owned by uid $(id -u nobody), expected uid 0"
fi
touch "$TMP/file"
run 1 "$BERTHCTL" dev-init "$TMP/file"
mkdir -m 0700 "$TMP/real"
ln -s "$TMP/real" "$TMP/link"
run 1 "$BERTHCTL" dev-init "$TMP/link"
stderr_has "symbolic link"
run 1 "$BERTHCTL" dev-init "$TMP/link/sub"
stderr_has "symbolic link"
[ -z "$(ls -A "$TMP/real")" ] || fail "dev-init wrote through a symlink"
run 1 "$BERTHCTL" dev-init "$TMP/no/such/dir"
stderr_has "cannot create $TMP/no/such/dir"

# If writing fails half-way, nothing is kept.
if [ -w /dev/full ]; then
    set +e
    "$BERTHCTL" dev-init "$TMP/full" >/dev/full 2>"$TMP/stderr"
    st=$?
    set -e
    [ "$st" = 1 ] || fail "dev-init >/dev/full exited $st"
    stderr_has "nothing was kept"
    [ -e "$TMP/full" ] && fail "an installation was kept although its summary could not be printed"
fi

run 0 "$BERTHCTL" dev-init --help
stdout_has "Usage: berthctl dev-init DIR"
stdout_has "tls/ca.key"
run 0 "$BERTHCTL" --help
stdout_has "dev-init"
