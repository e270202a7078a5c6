#!/bin/sh
# build-busybox-image.sh -- a small, reproducible OCI image layout for tests,
# made from the host's static busybox (Debian package busybox-static).
#
# Usage: build-busybox-image.sh [--layers 1|2] [--force] OUTDIR
#
# Writes an OCI image layout (oci-layout, index.json, blobs/sha256/) into
# OUTDIR, which must not exist or be empty (--force replaces an existing OCI
# layout), with one manifest tagged "latest" for linux on this host's
# architecture (dpkg --print-architecture, mapped to the OCI name), and
# prints the manifest digest "sha256:<hex>" on standard output.
#
# Layer 1 (always) holds:
#   bin/busybox                 the host's /bin/busybox (static), 0755
#   bin/<applet> -> busybox     symlinks for the applets in APPLETS below
#   etc/passwd, etc/group       root (0) and nobody/nogroup (65534)
#   etc/os-release              names this as berth's test busybox image
#   etc/motd                    a file for layer 2 to remove
#   tmp (1777), workspace, inputs, proc, dev, sys (0755)   empty directories
# With --layers 2 a second layer is added that whites out etc/motd (an
# empty regular file etc/.wh.motd, per the image-spec layer section) and
# adds etc/layer2 ("berth test image layer 2").  Layer 1 is the same blob in
# both variants.
#
# Reproducible: the same busybox binary and this script give byte-identical
# layouts (hence the same manifest digest), whoever runs it, whatever the
# umask or clock: every mode is set explicitly, the tar is GNU tar with
# sorted names, mtime 0 and owner 0:0 (see oci_tar in oci-lib.sh), gzip runs
# with -n, and the JSON is written by printf in a fixed order.  Nothing in
# the tar is refused by berth's extractor: no PAX global header, no xattrs,
# no setuid/setgid bit, no device node (dev/ is an empty directory).
#
# Needs: /bin/busybox from busybox-static (apt-get install busybox-static),
# GNU tar, gzip, sha256sum, dpkg.  No network.  Runs as root or not.
#
# Environment: BUSYBOX (default /bin/busybox) to use another static busybox;
# TMPDIR for the scratch tree.
set -eu

PROG=build-busybox-image.sh
BUILDER_VERSION=1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/image/oci-lib.sh
. "$here/oci-lib.sh"

# The applets linked into bin/.  Each must exist in the busybox used.
APPLETS="awk basename cat chmod chown cp cut date dd df dirname du echo env
expr false find grep gunzip gzip head hostname id kill ln ls mkdir mktemp
mount mv nproc od printf ps pwd readlink realpath rm rmdir sed seq sh sha256sum
sleep sort stat tail tar tee test touch tr true umount uname uniq wc which
xargs yes"

usage() {
    sed -n '2,/^set -eu$/{/^set -eu$/d;s/^# \{0,1\}//;p;}' "$0"
}

layers=1
force=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    --layers)
        [ $# -ge 2 ] || oci_die "--layers needs a value (1 or 2)"
        layers=$2
        shift 2
        ;;
    --layers=*)
        layers=${1#--layers=}
        shift
        ;;
    --force)
        force=1
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
[ $# -eq 1 ] || oci_die "usage: $PROG [--layers 1|2] [--force] OUTDIR (see --help)"
case $layers in 1 | 2) ;; *) oci_die "--layers must be 1 or 2, not '$layers'" ;; esac
out=$1

oci_need tar gzip sha256sum dpkg
tar --version 2>/dev/null | head -n1 | grep -q 'GNU tar' || oci_die "GNU tar is needed (for --sort=name)"

# The busybox must be the static one: the image has no libc.
if [ -n "${BUSYBOX:-}" ]; then
    bb=$BUSYBOX
else
    bb=/bin/busybox
    st=$(dpkg-query -W -f '${db:Status-Status}' busybox-static 2>/dev/null || true)
    [ "$st" = installed ] ||
        oci_die "the Debian package busybox-static is not installed (apt-get install busybox-static; tests/run-all.sh does)"
fi
if [ ! -f "$bb" ] || [ ! -x "$bb" ]; then
    oci_die "$bb is not an executable file (install busybox-static)"
fi
have=$("$bb" --list) || oci_die "$bb --list failed"
for a in $APPLETS; do
    printf '%s\n' "$have" | grep -qx "$a" || oci_die "$bb has no '$a' applet"
done
arch=$(oci_arch)

umask 022
work=$(mktemp -d "${TMPDIR:-/tmp}/berth-bbimage-XXXXXX")
created_out=
cleanup() {
    rm -rf "$work"
    # A half-written layout is worse than none.
    [ -z "$created_out" ] || rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# --- layer 1: the busybox root filesystem ----------------------------------
r=$work/root1
mkdir -p "$r/bin" "$r/etc" "$r/tmp" "$r/workspace" "$r/inputs" "$r/proc" "$r/dev" "$r/sys"
cp "$bb" "$r/bin/busybox"
for a in $APPLETS; do
    ln -s busybox "$r/bin/$a"
done
cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$r/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF
bbver=$("$bb" 2>&1 | head -n1 | sed -n 's/^BusyBox v\([^ ]*\).*/\1/p')
cat >"$r/etc/os-release" <<EOF
PRETTY_NAME="berth test busybox image"
NAME="berth-test-busybox"
ID=berth-test-busybox
VERSION_ID=$BUILDER_VERSION
BUSYBOX_VERSION=${bbver:-unknown}
HOME_URL="https://berth.invalid/"
EOF
printf 'berth test image: this file is removed by layer 2\n' >"$r/etc/motd"
# Explicit modes: the result must not depend on the caller's umask or on
# the mode of the host's busybox.
find "$r" -type d -exec chmod 0755 {} +
find "$r" -type f -exec chmod 0644 {} +
chmod 0755 "$r/bin/busybox"
chmod 1777 "$r/tmp"
oci_tar "$r" "$work/layer1.tar"
set -- "$work/layer1.tar"

# --- layer 2 (optional): a whiteout of a layer-1 file, and a new file ------
if [ "$layers" = 2 ]; then
    r2=$work/root2
    mkdir -p "$r2/etc"
    : >"$r2/etc/.wh.motd"
    printf 'berth test image layer 2\n' >"$r2/etc/layer2"
    chmod 0755 "$r2/etc"
    chmod 0644 "$r2/etc/.wh.motd" "$r2/etc/layer2"
    oci_tar "$r2" "$work/layer2.tar"
    set -- "$@" "$work/layer2.tar"
fi

oci_prepare_outdir "$out" "$force"
created_out=1
digest=$(oci_write_layout "$out" "$arch" /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh "$@")
created_out=
printf '%s\n' "$digest"
