#!/bin/sh
# check-layout.sh -- validate an OCI image layout the way berth's tests need.
#
# Usage: check-layout.sh [--quiet] LAYOUT
#
# Checks, and exits 1 with a message naming the first problem otherwise:
#   - LAYOUT/oci-layout says imageLayoutVersion "1.0.0"; index.json is an
#     image index (schemaVersion 2) listing at least one manifest;
#   - every file in blobs/sha256/ is named by 64 lowercase hex digits that
#     are the SHA-256 of its content;
#   - every manifest the index lists (nested indexes are not supported here)
#     is present with the descriptor's size and media type, schemaVersion 2;
#   - its config is present with the right size, is an image config with
#     rootfs.type "layers" and as many rootfs.diff_ids as there are layers;
#   - every layer is present with the right size, is a tar or tar+gzip OCI
#     layer, and its uncompressed tar hashes to the matching diff_id;
#   - every layer tar holds nothing berth's extractor refuses: no PAX global
#     header, no xattr/ACL records, no device node, FIFO, socket or sparse
#     entry, no setuid/setgid bit, no absolute or ".." name.
# On success prints "LAYOUT: ok (M manifests, L layers, B blobs)" unless
# --quiet.
#
# Needs: jq (JSON), perl (Debian's perl-base is essential: the tar header
# walk), gzip, sha256sum.
set -eu

PROG=check-layout.sh
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/image/oci-lib.sh
. "$here/oci-lib.sh"

usage() {
    sed -n '2,/^set -eu$/{/^set -eu$/d;s/^# \{0,1\}//;p;}' "$0"
}

quiet=0
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    -q | --quiet)
        quiet=1
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
[ $# -eq 1 ] || oci_die "usage: $PROG [--quiet] LAYOUT (see --help)"
L=$1
oci_need jq perl gzip sha256sum

bad() {
    printf '%s: %s: %s\n' "$PROG" "$L" "$*" >&2
    exit 1
}

# jqf FILTER FILE: jq -r, failing clearly on invalid JSON.
jqf() {
    jq -er "$1" "$2" 2>/dev/null || bad "$(basename "$2"): no valid '$1'"
}

# The tar header walk: reads an uncompressed tar on stdin, prints the first
# problem and exits 1, or exits 0.  Parses the 512-byte ustar headers
# itself (GNU tar's listing hides PAX global headers and PAX records).
# shellcheck disable=SC2016 # perl code, not shell
TARWALK='
use strict;
my ($blk, $n, $pending) = ("", 0, undef);
sub num { my $f = shift;
    if (ord(substr($f,0,1)) & 0x80) { my $v = 0; $v = $v*256 + ord($_) for split //, substr($f,1); return $v; }
    $f =~ s/[\0 ]+$//; $f =~ s/^[\0 ]+//; return $f eq "" ? 0 : oct($f); }
sub bad { print STDERR "entry $n (", shift, "): ", shift, "\n"; exit 1; }
sub readn { my $want = shift; my $buf = "";
    while (length($buf) < $want) { my $r = read(STDIN, my $b, $want - length($buf)); die "read: $!" unless defined $r;
        bad("end", "truncated archive") if $r == 0; $buf .= $b; } return $buf; }
while (1) {
    $blk = readn(512);
    last if $blk eq "\0" x 512;
    $n++;
    my $name = unpack("Z100", substr($blk, 0, 100));
    my $prefix = unpack("Z155", substr($blk, 345, 155));
    $name = "$prefix/$name" if substr($blk, 257, 5) eq "ustar" && $prefix ne "";
    my $mode = num(substr($blk, 100, 8));
    my $size = num(substr($blk, 124, 12));
    my $type = substr($blk, 156, 1);
    my $data = $size > 0 ? readn(int(($size + 511) / 512) * 512) : "";
    if ($type eq "g") { bad($name, "PAX global header (berth refuses: pax-global)"); }
    if ($type eq "x") {
        my ($rec, $p) = (substr($data, 0, $size), 0);
        while ($p < length($rec)) {
            my $sp = index($rec, " ", $p);
            bad($name, "malformed PAX record") if $sp < 0;
            my $len = substr($rec, $p, $sp - $p);
            bad($name, "malformed PAX record") unless $len =~ /^\d+$/ && $len > 0;
            my $r = substr($rec, $sp + 1, $len - ($sp - $p) - 2);
            my ($key, $v) = split /=/, $r, 2;
            bad($name, "PAX record $key (berth refuses: xattr)") if $key =~ /^(SCHILY\.xattr\.|LIBARCHIVE\.xattr\.|SCHILY\.acl\.|RHT\.security\.)/;
            bad($name, "PAX record $key (berth refuses: sparse-file)") if $key =~ /^GNU\.sparse\./;
            $pending = $v if $key eq "path";
            $p += $len;
        }
        next;
    }
    if ($type eq "L") { $pending = unpack("Z*", $data); next; }
    next if $type eq "K";
    $name = $pending if defined $pending; $pending = undef;
    bad($name, "device node (berth refuses: device-node)") if $type eq "3" || $type eq "4";
    bad($name, "FIFO (berth refuses: fifo)") if $type eq "6";
    bad($name, "GNU sparse entry (berth refuses: sparse-file)") if $type eq "S";
    bad($name, sprintf("mode %o has setuid/setgid (berth refuses: setuid)", $mode)) if $mode & 06000;
    bad($name, "absolute name (berth refuses: absolute-path)") if $name =~ m{^/};
    bad($name, "\"..\" component (berth refuses: path-traversal)") if $name =~ m{(^|/)\.\.(/|$)};
    bad($name, "unknown entry type \"$type\"") unless $type =~ /^[0-7\0]$/;
}
exit 0;
'

[ -d "$L" ] || bad "not a directory"
[ -f "$L/oci-layout" ] || bad "no oci-layout file"
[ "$(jqf .imageLayoutVersion "$L/oci-layout")" = 1.0.0 ] || bad "oci-layout: imageLayoutVersion is not 1.0.0"
[ -f "$L/index.json" ] || bad "no index.json"
[ "$(jqf .schemaVersion "$L/index.json")" = 2 ] || bad "index.json: schemaVersion is not 2"
[ -d "$L/blobs/sha256" ] || bad "no blobs/sha256 directory"

# Every blob is named by its digest.
nblobs=0
for b in "$L"/blobs/sha256/*; do
    [ -e "$b" ] || continue
    h=$(basename "$b")
    printf '%s\n' "$h" | grep -Eqx '[0-9a-f]{64}' || bad "blobs/sha256/$h: not a SHA-256 hex name"
    [ -f "$b" ] || bad "blobs/sha256/$h: not a regular file"
    [ "$(oci_sha256 "$b")" = "$h" ] || bad "blobs/sha256/$h: content does not hash to its name"
    nblobs=$((nblobs + 1))
done

# blob_for DESC_JSON WHAT: check the descriptor's blob is present with its
# size; print its path.
blob_for() {
    _d=$(printf '%s' "$1" | jq -r .digest)
    _s=$(printf '%s' "$1" | jq -r .size)
    case $_d in
    sha256:*) ;;
    *) bad "$2: digest '$_d' is not sha256" ;;
    esac
    _p=$L/blobs/sha256/${_d#sha256:}
    [ -f "$_p" ] || bad "$2: blob $_d is missing"
    [ "$(oci_size "$_p")" = "$_s" ] || bad "$2: blob $_d is $(oci_size "$_p") bytes, descriptor says $_s"
    printf '%s\n' "$_p"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/berth-checklayout-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

nman=$(jqf '.manifests | length' "$L/index.json")
[ "$nman" -ge 1 ] || bad "index.json lists no manifest"
nlayers=0
i=0
while [ "$i" -lt "$nman" ]; do
    desc=$(jq -c ".manifests[$i]" "$L/index.json")
    what="index.json manifests[$i]"
    mt=$(printf '%s' "$desc" | jq -r .mediaType)
    [ "$mt" = application/vnd.oci.image.manifest.v1+json ] ||
        bad "$what: media type '$mt' (only image manifests are checked; nested indexes are not supported)"
    m=$(blob_for "$desc" "$what")
    [ "$(jqf .schemaVersion "$m")" = 2 ] || bad "$what: manifest schemaVersion is not 2"
    mmt=$(jq -r '.mediaType // empty' "$m")
    [ -z "$mmt" ] || [ "$mmt" = "$mt" ] || bad "$what: manifest says media type '$mmt'"

    cdesc=$(jq -c .config "$m")
    [ "$(printf '%s' "$cdesc" | jq -r .mediaType)" = application/vnd.oci.image.config.v1+json ] ||
        bad "$what: config media type is not application/vnd.oci.image.config.v1+json"
    c=$(blob_for "$cdesc" "$what config")
    [ "$(jqf .rootfs.type "$c")" = layers ] || bad "$what: config rootfs.type is not \"layers\""
    nl=$(jqf '.layers | length' "$m")
    nd=$(jqf '.rootfs.diff_ids | length' "$c")
    [ "$nl" = "$nd" ] || bad "$what: $nl layers but $nd diff_ids"

    j=0
    while [ "$j" -lt "$nl" ]; do
        ldesc=$(jq -c ".layers[$j]" "$m")
        lwhat="$what layers[$j]"
        lp=$(blob_for "$ldesc" "$lwhat")
        lmt=$(printf '%s' "$ldesc" | jq -r .mediaType)
        case $lmt in
        application/vnd.oci.image.layer.v1.tar+gzip) gzip -dc <"$lp" >"$tmp/layer.tar" || bad "$lwhat: not gzip" ;;
        application/vnd.oci.image.layer.v1.tar) cp "$lp" "$tmp/layer.tar" ;;
        *) bad "$lwhat: unsupported media type '$lmt'" ;;
        esac
        want=$(jq -r ".rootfs.diff_ids[$j]" "$c")
        got=sha256:$(oci_sha256 "$tmp/layer.tar")
        [ "$got" = "$want" ] || bad "$lwhat: uncompressed tar is $got, diff_ids[$j] says $want"
        msg=$(perl -e "$TARWALK" <"$tmp/layer.tar" 2>&1) || bad "$lwhat: $msg"
        rm -f "$tmp/layer.tar"
        j=$((j + 1))
        nlayers=$((nlayers + 1))
    done
    i=$((i + 1))
done

[ "$quiet" = 1 ] || printf '%s: ok (%s manifests, %s layers, %s blobs)\n' "$L" "$nman" "$nlayers" "$nblobs"
