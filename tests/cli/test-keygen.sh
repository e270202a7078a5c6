#!/bin/sh
# berthctl keygen: PKCS#8 PEM at 0600, never overwritten, and key id / public
# key that agree with an independent computation by the openssl CLI.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

require_tool openssl openssl

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

run 0 "$BERTHCTL" keygen --out "$TMP/receipt.key" --public-out "$TMP/receipt.pub"
kid=$(sed -n 's/^key id: *//p' "$TMP/stdout")
pub=$(sed -n 's/^public key: *//p' "$TMP/stdout")
[ ${#kid} -eq 43 ] || fail "key id '$kid' is not 43 characters"
[ ${#pub} -eq 43 ] || fail "public key '$pub' is not 43 characters"
[ "$(stat -c %a "$TMP/receipt.key")" = 600 ] || fail "private key mode is $(stat -c %a "$TMP/receipt.key")"
[ "$(stat -c %a "$TMP/receipt.pub")" = 644 ] || fail "public key mode is $(stat -c %a "$TMP/receipt.pub")"
head -n1 "$TMP/receipt.key" | grep -qx -- '-----BEGIN PRIVATE KEY-----' || fail "not a PKCS#8 PEM"

# openssl reads the key and derives the same public key ...
openssl pkey -in "$TMP/receipt.key" -noout || fail "openssl cannot read the private key"
raw=$(openssl pkey -in "$TMP/receipt.key" -pubout -outform DER | tail -c 32 | b64url)
[ "$raw" = "$pub" ] || fail "openssl derives public key $raw, keygen printed $pub"
raw=$(openssl pkey -pubin -in "$TMP/receipt.pub" -outform DER | tail -c 32 | b64url)
[ "$raw" = "$pub" ] || fail "public key file holds $raw, keygen printed $pub"
# ... and the RFC 7638 thumbprint of that key is the printed key id.
want=$(printf '{"crv":"Ed25519","kty":"OKP","x":"%s"}' "$pub" | openssl dgst -sha256 -binary | b64url)
[ "$want" = "$kid" ] || fail "thumbprint is $want, keygen printed $kid"

# A signature made with the key verifies with openssl.
printf 'message' >"$TMP/msg"
openssl pkeyutl -sign -rawin -inkey "$TMP/receipt.key" -in "$TMP/msg" -out "$TMP/sig"
openssl pkeyutl -verify -rawin -pubin -inkey "$TMP/receipt.pub" -in "$TMP/msg" -sigfile "$TMP/sig" >/dev/null ||
    fail "openssl cannot verify with the public key file"

# Never overwritten: refused, and the file is unchanged.
sum=$(sha256sum "$TMP/receipt.key")
run 1 "$BERTHCTL" keygen --out "$TMP/receipt.key"
stderr_has "already exists; refusing to overwrite it"
stderr_one_line
[ "$(sha256sum "$TMP/receipt.key")" = "$sum" ] || fail "existing key was modified"
ls -A "$TMP" | grep -q '^\.#' && fail "a temporary file was left behind"

# --json, and a relative path.
mkdir "$TMP/rel"
(cd "$TMP/rel" && "$BERTHCTL" keygen --out rel.key --json >"$TMP/json") || fail "relative --out failed"
[ "$(stat -c %a "$TMP/rel/rel.key")" = 600 ] || fail "relative key mode"
grep -q '^{"key_id":"[A-Za-z0-9_-]\{43\}","private_key_file":"'"$TMP"'/rel/rel.key","public_key":"[A-Za-z0-9_-]\{43\}"}$' \
    "$TMP/json" || fail "unexpected --json output: $(cat "$TMP/json")"

# An existing --public-out is refused before anything is written.
touch "$TMP/exists.pub"
run 1 "$BERTHCTL" keygen --out "$TMP/new.key" --public-out "$TMP/exists.pub"
stderr_has "exists.pub already exists; refusing to overwrite it"
[ -e "$TMP/new.key" ] && fail "a private key was left behind although keygen failed"
run 0 "$BERTHCTL" keygen --out "$TMP/new.key" --public-out "$TMP/new.pub" --json
stdout_has '"public_key_file":"'"$TMP"'/new.pub"'

# If the key id cannot be shown, no key is kept.
if [ -w /dev/full ]; then
    set +e
    "$BERTHCTL" keygen --out "$TMP/full.key" >/dev/full 2>"$TMP/stderr"
    st=$?
    set -e
    [ "$st" = 1 ] || fail "keygen >/dev/full exited $st"
    stderr_has "nothing was kept"
    [ -e "$TMP/full.key" ] && fail "a key was kept although its id could not be printed"
fi
# A file name that is not UTF-8 is shown lossily in --json, not refused.
run 0 "$BERTHCTL" keygen --json --out "$TMP/$(printf 'k\377').key"
stdout_has '"private_key_file":"'"$TMP"'/k'"$(printf '\357\277\275')"'.key"'

# No symlink on the way to the key.
ln -s "$TMP/rel" "$TMP/link"
run 1 "$BERTHCTL" keygen --out "$TMP/link/other.key"
stderr_has "symbolic link"
[ -e "$TMP/rel/other.key" ] && fail "key written through a symlink"

run 2 "$BERTHCTL" keygen
stderr_has "--out=FILE is required"
run 2 "$BERTHCTL" keygen --out "$TMP/a" --public-out "$TMP/a"
run 0 "$BERTHCTL" keygen --help
stdout_has "Usage: berthctl keygen"
