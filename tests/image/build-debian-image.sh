#!/bin/sh
# build-debian-image.sh -- a realistic OCI image layout: a real Debian 12
# (bookworm) minbase root filesystem, for integration tests and benchmarks.
#
# Usage: build-debian-image.sh [--force] [--no-cache] OUTDIR [CACHEDIR]
#
# Writes an OCI image layout (oci-layout, index.json, blobs/sha256/) into
# OUTDIR (which must not exist or be empty; --force replaces an existing
# OCI layout there), one manifest tagged "latest" for linux on this host's
# architecture, with a single gzip'ed layer; prints the manifest digest
# "sha256:<hex>" on standard output.  Progress goes to standard error.
#
# How: debootstrap --variant=minbase bookworm ROOT http://deb.debian.org/debian
# (the Debian archive is the only network host contacted), then the tree is
# made acceptable to berth's extractor, then packed with GNU tar and gzip
# and described with JSON written by printf (oci-lib.sh).  What is stripped
# from the tree, and why:
#   - dev/ is emptied: debootstrap creates device nodes there (null, zero,
#     tty, ...; berth refuses "device-node") plus links to /proc; the
#     sandbox runtime provides its own /dev.  Any other device node, FIFO or
#     socket anywhere in the tree is deleted too (refused: device-node,
#     fifo; tar cannot store sockets).
#   - setuid and setgid bits are cleared on every file and directory
#     (chmod u-s,g-s): su, mount, umount, passwd, chsh, chfn, gpasswd,
#     newgrp (setuid root), chage, expiry, unix_chkpwd (setgid shadow), and
#     the setgid directories var/local and var/mail.  Berth refuses
#     "setuid" entries, and sandboxes must not gain privileges anyway.
#   - extended attributes, file capabilities and ACLs: removed with setfattr
#     when the attr package is installed (a minbase system normally has
#     none; ping's cap_net_raw would be one, but iputils-ping is not in
#     minbase), and never recorded by tar (--no-xattrs --no-acls
#     --no-selinux), because berth refuses "xattr".
#   - apt's downloaded .debs and package lists (var/cache/apt/archives,
#     var/cache/apt/*.bin, var/lib/apt/lists), as Debian's official
#     container images do: about 80 MB nobody needs at run time.
# Ownership (numeric uids/gids, e.g. etc/shadow root:shadow) and whole-second
# mtimes are kept; hard links are kept.  check-layout.sh validates the
# result, and so do "umoci stat" and "skopeo inspect" when installed.
#
# Why not umoci: umoci 0.4.7 (Debian 12) "insert" was tried and wrote a
# layer whose tar stream stops without the end-of-archive blocks (GNU tar:
# "Unexpected EOF in archive"), keeps setuid bits, real ctime-dependent
# content and blob modes 0600, and its index has no platform.  GNU tar gives
# us full control of the headers, so umoci is only used to check the result.
#
# Cache: debootstrap takes about two minutes and downloads ~40 MB, so the
# finished layout is kept in CACHEDIR/debian-<suite>-minbase-<arch>-v<N>/
# (N = BUILDER_VERSION below: bump it whenever this script changes what it
# builds) and later calls copy it from there in seconds.  CACHEDIR defaults
# to $BERTH_TOP_BUILDDIR/tests/image/cache, or ./tests/image/cache (run from
# the build tree); concurrent builders serialise on a flock(1) lock.
# --no-cache ignores (and replaces) a cached layout.  The cache is never
# refreshed from the archive by itself: delete it to get newer packages.
#
# Needs: root, debootstrap, GNU tar, gzip, sha256sum, dpkg, jq and perl (for
# check-layout.sh), flock; the network to deb.debian.org.  When debootstrap
# is not installed or we are not root, the script fails, unless
# BERTH_ALLOW_SKIP_DEBIAN=1 is set: then it exits 77 (automake's "skipped").
#
# Environment: BERTH_DEBIAN_MIRROR (default http://deb.debian.org/debian;
# must be a Debian archive), BERTH_TOP_BUILDDIR, BERTH_ALLOW_SKIP_DEBIAN.
set -eu

PROG=build-debian-image.sh
BUILDER_VERSION=1
SUITE=bookworm
VARIANT=minbase
MIRROR=${BERTH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/image/oci-lib.sh
. "$here/oci-lib.sh"

usage() {
    sed -n '2,/^set -eu$/{/^set -eu$/d;s/^# \{0,1\}//;p;}' "$0"
}

log() {
    printf '%s: %s\n' "$PROG" "$*" >&2
}

# skip_or_die MESSAGE: exit 77 when skipping is allowed, else fail.
skip_or_die() {
    if [ "${BERTH_ALLOW_SKIP_DEBIAN:-0}" = 1 ]; then
        log "SKIP: $*"
        exit 77
    fi
    oci_die "$* (set BERTH_ALLOW_SKIP_DEBIAN=1 to skip instead)"
}

force=0
nocache=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    --force)
        force=1
        shift
        ;;
    --no-cache)
        nocache=1
        shift
        ;;
    --)
        shift
        break
        ;;
    -*) oci_die "unknown option '$1' (see --help)" ;;
    *) break ;;
    esac
done
[ $# -eq 1 ] || [ $# -eq 2 ] || oci_die "usage: $PROG [--force] [--no-cache] OUTDIR [CACHEDIR] (see --help)"
out=$1
cachedir=${2:-${BERTH_TOP_BUILDDIR:-$(pwd)}/tests/image/cache}

oci_need tar gzip sha256sum dpkg flock
tar --version 2>/dev/null | head -n1 | grep -q 'GNU tar' || oci_die "GNU tar is needed (for --sort=name)"
arch=$(oci_arch)
key=debian-$SUITE-$VARIANT-$(dpkg --print-architecture)-v$BUILDER_VERSION
mkdir -p "$cachedir"
cachedir=$(cd "$cachedir" && pwd)
entry=$cachedir/$key

umask 022
work=
created_out=
# unmount_below DIR: unmount whatever is mounted at or below DIR, deepest
# first.  debootstrap mounts proc and sys in the target, and in containers
# may bind-mount the host's /dev/null etc. into it: if it fails half way
# they may still be there, and rm -rf must never walk into them.
unmount_below() {
    [ -d "$1" ] || return 0
    _d=$(cd "$1" && pwd -P)
    awk -v d="$_d" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo |
        sort -r | while read -r _m; do
        umount "$_m" 2>/dev/null || umount -l "$_m" || true
    done
}
cleanup() {
    if [ -n "$work" ]; then
        unmount_below "$work"
        rm -rf --one-file-system "$work"
    fi
    [ -z "$created_out" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Hold the cache lock for the whole run: one builder per cache directory.
exec 9>"$cachedir/.lock"
flock 9

if [ "$nocache" = 1 ] || [ ! -f "$entry/digest" ]; then
    [ "$(id -u)" = 0 ] || skip_or_die "debootstrap needs root"
    command -v debootstrap >/dev/null 2>&1 ||
        skip_or_die "debootstrap is not installed (apt-get install debootstrap; tests/run-all.sh does)"
    rm -rf "$entry"
    work=$(mktemp -d "$cachedir/work.XXXXXX")
    root=$work/root
    start=$(date +%s)
    log "debootstrap --variant=$VARIANT $SUITE from $MIRROR (about 2 minutes)"
    debootstrap --variant="$VARIANT" "$SUITE" "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
        tail -n 30 "$work/debootstrap.log" >&2
        oci_die "debootstrap failed (full log above was $work/debootstrap.log)"
    }
    unmount_below "$root"

    log "stripping what berth's extractor refuses"
    # Devices and the rest of debootstrap's /dev.
    rm -rf --one-file-system "${root:?}/dev"
    mkdir -m 0755 "$root/dev"
    find "$root" -xdev \( -type b -o -type c -o -type p -o -type s \) -print -delete |
        sed "s|^$root|  removed special file |" >&2
    # setuid/setgid bits (files and directories).
    find "$root" -xdev ! -type l -perm /6000 -print -exec chmod u-s,g-s {} + |
        sed "s|^$root|  cleared setuid/setgid on |" >&2
    # Extended attributes (file capabilities are security.capability).
    if command -v getfattr >/dev/null 2>&1 && command -v setfattr >/dev/null 2>&1; then
        (cd "$root" && getfattr -R -P -m - --absolute-names . 2>/dev/null) |
            awk '/^# file: /{f=substr($0, 9); next} /^[^#].*/{ print f "\t" $0 }' |
            while IFS='	' read -r f a; do
                printf '  removed xattr %s from %s\n' "$a" "${f#.}" >&2
                setfattr -h -x "$a" "$root/$f"
            done
    fi
    # apt caches and lists, as the official images do.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin
    find "$root/var/lib/apt/lists" -mindepth 1 -maxdepth 1 ! -name partial ! -name lock -exec rm -rf {} +

    log "packing the layer"
    oci_tar "$root" "$work/layer.tar" keep
    unpacked=$(oci_size "$work/layer.tar")
    entries=$(tar -tf "$work/layer.tar" | wc -l)
    rm -rf --one-file-system "$root"
    oci_write_layout "$work/layout" "$arch" /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        /bin/bash "$work/layer.tar" >"$work/digest"
    "$here/check-layout.sh" --quiet "$work/layout"
    end=$(date +%s)
    printf 'built %s in %s s: %s entries, %s bytes uncompressed, %s bytes of blobs\n' \
        "$(cat "$work/digest")" "$((end - start))" "$entries" "$unpacked" \
        "$(du -sb "$work/layout/blobs" | cut -f1)" >"$work/info"
    mkdir "$entry"
    mv "$work/layout" "$entry/layout"
    mv "$work/info" "$entry/info"
    mv "$work/digest" "$entry/digest" # last: its presence marks a complete entry
    log "cached in $entry: $(cat "$entry/info")"
else
    log "using the cached layout $entry ($(cat "$entry/info" 2>/dev/null || echo no info))"
fi

oci_prepare_outdir "$out" "$force"
created_out=1
cp -R "$entry/layout/." "$out/"
if command -v umoci >/dev/null 2>&1; then
    umoci stat --image "$out:latest" >/dev/null || oci_die "umoci stat refuses $out"
fi
if command -v skopeo >/dev/null 2>&1; then
    skopeo inspect "oci:$out:latest" >/dev/null || oci_die "skopeo inspect refuses $out"
fi
created_out=
cat "$entry/digest"
