#!/bin/sh
# berth-oci-shim is started for every job: it must link neither OpenSSL nor
# SQLite, whose loading and start-up would be paid by every job's start
# (src/lib/crypto/digest.h: the shim hashes one buffer with libsodium and
# loads OpenSSL only for its first stream, sha256-lazy.c).  Reads the built
# shim's dynamic section; a library it needs that is named here fails.
set -eu

: "${BERTH_OCI_SHIM:?}"
. "${BERTH_TOP_SRCDIR:?}/tests/require-tool.sh"
require_tool readelf binutils
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

[ -x "$BERTH_OCI_SHIM" ] || fail "$BERTH_OCI_SHIM is not built"
needed=$(readelf -d "$BERTH_OCI_SHIM" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p')
[ -n "$needed" ] || fail "readelf found no NEEDED entry in $BERTH_OCI_SHIM"
for lib in libcrypto libssl libsqlite3 libcurl libarchive; do
    case " $(echo $needed) " in
    *" $lib."*) fail "berth-oci-shim needs $lib (it needs: $(echo $needed))" ;;
    esac
done
# What it does need: libsodium (signatures and SHA-256) and jansson.
for lib in libsodium libjansson; do
    case " $(echo $needed) " in
    *" $lib."*) ;;
    *) fail "berth-oci-shim does not need $lib (it needs: $(echo $needed))" ;;
    esac
done
echo "berth-oci-shim needs: $(echo $needed)"
