#!/bin/bash
# test-layers.sh -- libberth's layers include only downwards.
#
# src/lib/ has one folder per layer, lowest first:
#
#   basic < json < crypto < journal < pool < job < plugin < qualify < broker
#     < config
#
# The build enforces the rule by giving each layer -I paths only to itself
# and the layers below (src/lib/local.mk); this test checks the same rule on
# the text, so that it also holds for a header nobody compiles yet and the
# message names the file and line:
#
#   - every #include "NAME" in src/lib/LAYER/ names a header of LAYER or of
#     a layer below it (an include of a higher layer, or of a name that is
#     not libberth's, fails);
#   - each header name exists in exactly one layer (includes are bare names,
#     so a name in two layers would make the direction ambiguous);
#   - basic/ includes no third-party header but libsodium's (its base64
#     codec backs encoding.c): only the C library, the kernel UAPI and
#     berth's public <berth/...>; the jansson cleanup lives in json/;
#   - no source file is left directly in src/lib/, outside the layers.
#
# With --self-test it also proves that it fails: it copies the tree, adds an
# upward include to a basic/ file and expects a failure that names it.
set -euo pipefail

src=${BERTH_TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
layers=(basic json crypto journal pool job plugin qualify broker config)

check_tree() {
    local lib=$1/src/lib status=0 rank=0 layer f line name target r
    declare -A layer_of=() rank_of=()
    for layer in "${layers[@]}"; do
        rank_of[$layer]=$rank
        rank=$((rank + 1))
        [ -d "$lib/$layer" ] || { echo "test-layers: missing layer folder src/lib/$layer" >&2; status=1; continue; }
        for f in "$lib/$layer"/*.h; do
            [ -e "$f" ] || continue
            name=${f##*/}
            if [ -n "${layer_of[$name]:-}" ]; then
                echo "test-layers: header $name is in both ${layer_of[$name]}/ and $layer/" >&2
                status=1
            fi
            layer_of[$name]=$layer
        done
    done
    for f in "$lib"/*.[ch]; do
        [ -e "$f" ] || continue
        echo "test-layers: src/lib/${f##*/} is not in a layer folder" >&2
        status=1
    done
    for layer in "${layers[@]}"; do
        for f in "$lib/$layer"/*.[ch]; do
            [ -e "$f" ] || continue
            while IFS=: read -r line name; do
                name=${name#*\"}
                name=${name%%\"*}
                target=${layer_of[$name]:-}
                if [ -z "$target" ]; then
                    echo "test-layers: src/lib/$layer/${f##*/}:$line includes \"$name\", which is no header of libberth's layers" >&2
                    status=1
                    continue
                fi
                r=${rank_of[$target]}
                if [ "$r" -gt "${rank_of[$layer]}" ]; then
                    echo "test-layers: src/lib/$layer/${f##*/}:$line includes \"$name\" from $target/, a higher layer than $layer/" >&2
                    status=1
                fi
            done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
            if [ "$layer" = basic ]; then
                while IFS=: read -r line name; do
                    name=${name#*<}
                    name=${name%%>*}
                    case $name in
                    berth/* | sodium.h) ;;
                    # The C library, POSIX and Linux UAPI headers.
                    [a-z]*.h | sys/* | linux/* | arpa/* | netinet/* | asm/*) ;;
                    *) name=bad ;;
                    esac
                    case $name in
                    jansson.h | sqlite3.h | openssl/* | event2/* | systemd/* | curl/* | archive*.h | check.h | bad)
                        echo "test-layers: src/lib/basic/${f##*/}:$line includes a third-party header; basic/ sees only libc, libsodium and <berth/...>" >&2
                        status=1
                        ;;
                    esac
                done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<' "$f" || true)
            fi
        done
    done
    return $status
}

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d)
    trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/src"
    cp -R "$src/src/lib" "$tmp/src/lib"
    # make distcheck's source tree is read-only, and so is the copy.
    chmod -R u+w "$tmp/src"
    check_tree "$tmp" || { echo "test-layers: the unchanged tree already fails" >&2; exit 1; }
    printf '#include "registry.h"\n' >>"$tmp/src/lib/basic/buf.c"
    if check_tree "$tmp" 2>"$tmp/err"; then
        echo "test-layers: an upward include (basic/buf.c -> pool/registry.h) was not refused" >&2
        exit 1
    fi
    grep -q 'src/lib/basic/buf.c:.*includes "registry.h" from pool/, a higher layer than basic/' "$tmp/err" || {
        cat "$tmp/err" >&2
        echo "test-layers: the refusal does not name the upward include" >&2
        exit 1
    }
    cp "$src/src/lib/basic/buf.c" "$tmp/src/lib/basic/buf.c"
    printf '#include <jansson.h>\n' >>"$tmp/src/lib/basic/buf.h"
    if check_tree "$tmp" 2>"$tmp/err"; then
        echo "test-layers: jansson in basic/ was not refused" >&2
        exit 1
    fi
    grep -q 'src/lib/basic/buf.h:.*third-party header' "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    echo "test-layers: self-test passed (an upward include and jansson in basic/ are refused)"
    exit 0
fi

if [ "${1:-}" = "" ]; then
    # As a test: the self-test first (the check can fail), then the tree.
    "$0" --self-test
fi
check_tree "$src"
echo "test-layers: every include in src/lib points at the same layer or a lower one"
