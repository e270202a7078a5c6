#!/bin/bash
# bench-stage.sh -- staging throughput: "berthctl image stage" of an image
# into a tmpfs, next to plain "tar -xzf" of the same layers into the same
# tmpfs, measured in the same run.  Prints figures; asserts nothing about
# time.
#
# Usage: bench-stage.sh [--reps N] [--tar-only] LAYOUT
#
# LAYOUT is an OCI image layout with a manifest tagged "latest", normally
# the Debian image of tests/image/build-debian-image.sh:
#     tests/image/build-debian-image.sh /tmp/debian-layout
#     BERTHCTL=src/berthctl/berthctl tests/bench/bench-stage.sh /tmp/debian-layout
#
# What it does:
#   1. reads the manifest's layers and measures them: expanded bytes (the
#      sum of the uncompressed layer tar sizes) and entries (the sum of
#      "tar -tzf LAYER | wc -l"), then reads every blob once so that all
#      runs start with a warm page cache;
#   2. mounts a tmpfs (mount -t tmpfs -o size=2g) on a temporary directory
#      (unmounted on exit), or uses BENCH_TMPFS if set (an existing tmpfs);
#   3. "$BERTHCTL" image import LAYOUT:latest --store STORE (STORE is a
#      fresh directory under TMPDIR, on disk; the command prints the
#      manifest digest sha256:<hex>), then N times (default 3):
#      "$BERTHCTL" image stage DIGEST --store STORE --out TMPFS/stage-I
#      (a directory that does not exist yet), timed, then removed;
#   4. N times: a fresh directory TMPFS/tar-I, "tar -xzf LAYER -C DIR" for
#      every layer in manifest order (no whiteout processing: meant for
#      the single-layer Debian image), timed, then removed;
#   5. prints a table of the median time of each method, with MB/s
#      (expanded bytes / 10^6 / seconds) and entries/s.
# --tar-only skips step 3 (for a berthctl without "image" commands).
#
# Needs root (mount), bash, jq, GNU tar, gzip, date +%N.  Environment:
# BERTHCTL (default: src/berthctl/berthctl in the current directory, i.e.
# run from the build tree), BENCH_TMPFS, TMPDIR.
set -euo pipefail

PROG=bench-stage.sh
die() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    exit 1
}
usage() {
    sed -n '2,/^set -euo pipefail$/{/^set -euo pipefail$/d;s/^# \{0,1\}//;p;}' "$0"
}

reps=3
taronly=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    --reps)
        [ $# -ge 2 ] || die "--reps needs a number"
        reps=$2
        shift 2
        ;;
    --tar-only)
        taronly=1
        shift
        ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || die "usage: $PROG [--reps N] [--tar-only] LAYOUT (see --help)"
[[ $reps =~ ^[1-9][0-9]*$ ]] || die "--reps must be a positive number"
layout=$(cd "$1" && pwd) || die "no such directory $1"
BERTHCTL=${BERTHCTL:-$(pwd)/src/berthctl/berthctl}
# The verbs audit, image, pool and qualify run in berthctl-full, beside it.
export BERTHCTL_FULL="${BERTHCTL_FULL:-${BERTHCTL%/*}/berthctl-full}"
for p in jq tar gzip mount umount; do
    command -v "$p" >/dev/null 2>&1 || die "$p is not installed"
done
if [ "$taronly" = 0 ]; then
    [ -x "$BERTHCTL" ] || die "$BERTHCTL is not built (set BERTHCTL, or use --tar-only)"
fi
[ -f "$layout/index.json" ] || die "$layout is not an OCI image layout (no index.json)"

# --- 1. the layers and their size ------------------------------------------
blob() { printf '%s/blobs/sha256/%s\n' "$layout" "${1#sha256:}"; }
mdigest=$(jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == "latest") | .digest' \
    "$layout/index.json" | head -n1)
[ -n "$mdigest" ] || die "$layout has no manifest tagged latest"
manifest=$(blob "$mdigest")
mapfile -t layers < <(jq -r '.layers[].digest' "$manifest")
[ "${#layers[@]}" -gt 0 ] || die "the manifest has no layers"
expanded=0
entries=0
compressed=0
for l in "${layers[@]}"; do
    f=$(blob "$l")
    [ -f "$f" ] || die "layer blob $l is missing"
    jq -e --arg d "$l" '.layers[] | select(.digest == $d) | .mediaType | endswith("tar+gzip")' "$manifest" >/dev/null ||
        die "layer $l is not tar+gzip (tar -xzf could not read it)"
    compressed=$((compressed + $(wc -c <"$f")))
    expanded=$((expanded + $(gzip -dc <"$f" | wc -c)))
    entries=$((entries + $(tar -tzf "$f" | wc -l)))
    cat "$f" >/dev/null # warm the page cache: every run reads from memory
done

# --- 2. the tmpfs ----------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/berth-bench-stage-XXXXXX")
mnt=
cleanup() {
    if [ -n "$mnt" ]; then
        umount "$mnt" 2>/dev/null || umount -l "$mnt" || true
    fi
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
if [ -n "${BENCH_TMPFS:-}" ]; then
    target=$BENCH_TMPFS
    [ "$(stat -f -c %T "$target")" = tmpfs ] || die "BENCH_TMPFS=$target is not a tmpfs"
else
    [ "$(id -u)" = 0 ] || die "mounting a tmpfs needs root (or set BENCH_TMPFS to an existing tmpfs)"
    mkdir "$work/tmpfs"
    mount -t tmpfs -o size=2g,mode=0755 berth-bench "$work/tmpfs"
    mnt=$work/tmpfs
    target=$mnt
fi

now() { date +%s%N; }
# median SECONDS...: the middle value (the upper one of two).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int(NR / 2) + 1] }'; }
# row NAME SECONDS: one line of the table.
row() {
    awk -v n="$1" -v s="$2" -v b="$expanded" -v e="$entries" -v r="$reps" \
        'BEGIN { printf "%-22s %4d %10.3f %10.1f %12.0f\n", n, r, s, b / 1e6 / s, e / s }'
}

# --- 3. berthctl image stage -----------------------------------------------
stage_times=()
if [ "$taronly" = 0 ]; then
    store=$work/store
    mkdir -m 0700 "$store"
    digest=$("$BERTHCTL" image import "$layout:latest" --store "$store") ||
        die "berthctl image import $layout:latest failed"
    digest=$(printf '%s\n' "$digest" | tail -n1)
    [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]] || die "berthctl image import printed '$digest', not a digest"
    for ((i = 1; i <= reps; i++)); do
        out=$target/stage-$i
        t0=$(now)
        "$BERTHCTL" image stage "$digest" --store "$store" --out "$out" >/dev/null ||
            die "berthctl image stage $digest failed"
        t1=$(now)
        stage_times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')")
        rm -rf --one-file-system "$out"
    done
fi

# --- 4. tar -xzf -------------------------------------------------------------
tar_times=()
for ((i = 1; i <= reps; i++)); do
    out=$target/tar-$i
    mkdir "$out"
    t0=$(now)
    for l in "${layers[@]}"; do
        tar -xzf "$(blob "$l")" -C "$out"
    done
    t1=$(now)
    tar_times+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')")
    rm -rf --one-file-system "$out"
done

# --- 5. the table --------------------------------------------------------------
printf 'image %s: %d layer(s), %d compressed bytes, %d expanded bytes, %d entries\n' \
    "$mdigest" "${#layers[@]}" "$compressed" "$expanded" "$entries"
printf 'target: tmpfs at %s; medians of %d runs; MB = 10^6 bytes of uncompressed tar\n\n' "$target" "$reps"
printf '%-22s %4s %10s %10s %12s\n' method runs 'median s' 'MB/s' 'entries/s'
if [ "$taronly" = 0 ]; then
    row "berthctl image stage" "$(median "${stage_times[@]}")"
else
    printf '%-22s %4s %10s %10s %12s\n' "berthctl image stage" - skipped - -
fi
row "tar -xzf" "$(median "${tar_times[@]}")"
