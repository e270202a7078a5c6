# shellcheck shell=sh
# oci-lib.sh -- helpers shared by the test-image builders (sourced, POSIX sh).
#
# Turns directory trees into reproducible layer tars and assembles an OCI
# image layout (image-spec "image-layout.md") around them:
#
#   OUTDIR/oci-layout            {"imageLayoutVersion":"1.0.0"}
#   OUTDIR/index.json            one manifest, ref.name "latest", platform
#   OUTDIR/blobs/sha256/<hex>    config, manifest and gzip'ed layers
#
# JSON is written with printf, compact (no spaces, no trailing newline),
# members in a fixed order, so the same inputs always give the same bytes
# and therefore the same digests.  Nothing here needs jq or python; every
# string we write is either a constant or a digest/number/architecture name
# that never needs JSON escaping (oci_json_str checks that).
#
# The sourcing script sets PROG (its name, for messages) before sourcing.

: "${PROG:=oci-lib}"

oci_die() {
    printf '%s: %s\n' "$PROG" "$*" >&2
    exit 1
}

oci_need() {
    for _n in "$@"; do
        command -v "$_n" >/dev/null 2>&1 || oci_die "'$_n' is not installed (tests/debian-packages.sh lists the packages the tests need)"
    done
}

# oci_json_check S...: refuse any S that would need JSON escaping (we only
# ever write plain ASCII).  Call it directly, not inside $(...), so that the
# refusal stops the script.
oci_json_check() {
    for _s in "$@"; do
        case $_s in
        *[!A-Za-z0-9._:/=+@,\ -]*) oci_die "refusing to write '$_s' as JSON (needs escaping)" ;;
        esac
    done
}

# oci_json_str S: S (already checked) as a JSON string.
oci_json_str() {
    printf '"%s"' "$1"
}

# oci_arch: this host's architecture as an OCI platform name, from dpkg.
# (Debian and Go names agree for amd64, arm64, s390x, riscv64; the others
# are mapped.  No "variant" is written: berth refuses platform variants.)
oci_arch() {
    _a=$(dpkg --print-architecture 2>/dev/null) || oci_die "dpkg --print-architecture failed (not a Debian system?)"
    case $_a in
    amd64 | arm64 | s390x | riscv64) printf '%s\n' "$_a" ;;
    i386) echo 386 ;;
    armhf | armel) echo arm ;;
    ppc64el) echo ppc64le ;;
    mips64el) echo mips64le ;;
    *) oci_die "no OCI name known for Debian architecture '$_a'" ;;
    esac
}

# oci_sha256 FILE: the hex SHA-256 of FILE.
oci_sha256() {
    sha256sum "$1" | cut -d' ' -f1
}

# oci_size FILE: the size of FILE in bytes.
oci_size() {
    wc -c <"$1" | tr -d ' '
}

# oci_tar ROOT OUT [MODE]: write the tree ROOT as a tar OUT.
#
# Entry names are relative ("bin/busybox", no "./" prefix and no entry for
# the root itself): we name the top-level entries ourselves, in C-locale
# order, and --sort=name orders everything below them.  atime/ctime are
# dropped from PAX records, and PAX extended headers (only written for what
# ustar cannot hold, e.g. names over 255 bytes) get a stable name instead of
# one containing the process id.  GNU tar writes no PAX *global* header and
# no xattrs unless asked (--xattrs, --acls, --selinux: we say --no-* to be
# sure), and no sparse entries without --sparse: berth refuses all of those.
# Hard links are kept; with sorted names the first occurrence (the regular
# file) always comes before the links to it.
#
# MODE "reproducible" (default): every entry 0:0 with mtime 0, so the same
# tree gives the same bytes.  MODE "keep": the tree's numeric uids/gids and
# whole-second mtimes (the PAX mtime record, written for sub-second times,
# is dropped so that ordinary entries need no extended header at all).
oci_tar() {
    _root=$1
    _out=$2
    _mode=${3:-reproducible}
    set -- --sort=name --numeric-owner --format=posix --no-xattrs --no-acls --no-selinux
    case $_mode in
    reproducible)
        set -- "$@" --owner=0 --group=0 --mtime=@0 \
            --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime
        ;;
    keep)
        set -- "$@" --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime,delete=mtime
        ;;
    *) oci_die "oci_tar: unknown mode '$_mode'" ;;
    esac
    # The top-level names, sorted bytewise; none of ours contain newlines.
    # shellcheck disable=SC2012
    _top=$(cd "$_root" && LC_ALL=C ls -A | LC_ALL=C sort)
    [ -n "$_top" ] || oci_die "nothing to archive in $_root"
    # shellcheck disable=SC2086 # the names are ours: no spaces or globs
    (cd "$_root" && LC_ALL=C tar "$@" -cf - $_top) >"$_out" ||
        oci_die "tar of $_root failed"
}

# oci_blob_put LAYOUT FILE: move FILE into LAYOUT's blob store under its
# digest; prints the hex digest.
oci_blob_put() {
    _h=$(oci_sha256 "$2")
    mv -f "$2" "$1/blobs/sha256/$_h"
    chmod 0644 "$1/blobs/sha256/$_h"
    printf '%s\n' "$_h"
}

# oci_descriptor MEDIATYPE HEX SIZE: a compact descriptor object.
oci_descriptor() {
    printf '{"mediaType":%s,"digest":"sha256:%s","size":%s}' "$(oci_json_str "$1")" "$2" "$3"
}

# oci_write_layout LAYOUT ARCH PATHVAR CMD LAYERTAR...: gzip each
# (uncompressed) layer tar, in order, and write config, manifest, index.json
# and oci-layout into LAYOUT (an empty or new directory).  CMD is a single
# program path for config.Cmd.  The layer tars are consumed (removed).
# Prints the manifest digest "sha256:<hex>".
oci_write_layout() {
    _l=$1
    _arch=$2
    _path=$3
    _cmd=$4
    shift 4
    oci_json_check "$_arch" "PATH=$_path" "$_cmd"
    mkdir -p "$_l/blobs/sha256"
    chmod 0755 "$_l" "$_l/blobs" "$_l/blobs/sha256"
    _diffids=
    _layers=
    for _t in "$@"; do
        _diff=$(oci_sha256 "$_t")
        # -n: no name or timestamp in the gzip header; -9 for stable output.
        gzip -n -9 -c <"$_t" >"$_t.gz" || oci_die "gzip of $_t failed"
        rm -f "$_t"
        _gsize=$(oci_size "$_t.gz")
        _ghex=$(oci_blob_put "$_l" "$_t.gz")
        _diffids="$_diffids${_diffids:+,}\"sha256:$_diff\""
        _layers="$_layers${_layers:+,}$(oci_descriptor application/vnd.oci.image.layer.v1.tar+gzip "$_ghex" "$_gsize")"
    done

    # Image config: the fields berth reads, nothing time- or host-dependent.
    printf '{"created":"1970-01-01T00:00:00Z","architecture":%s,"os":"linux","config":{"Env":[%s],"Cmd":[%s],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
        "$(oci_json_str "$_arch")" "$(oci_json_str "PATH=$_path")" "$(oci_json_str "$_cmd")" "$_diffids" \
        >"$_l/config.tmp"
    _csize=$(oci_size "$_l/config.tmp")
    _chex=$(oci_blob_put "$_l" "$_l/config.tmp")

    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":%s,"layers":[%s]}' \
        "$(oci_descriptor application/vnd.oci.image.config.v1+json "$_chex" "$_csize")" "$_layers" \
        >"$_l/manifest.tmp"
    _msize=$(oci_size "$_l/manifest.tmp")
    _mhex=$(oci_blob_put "$_l" "$_l/manifest.tmp")

    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":%s,"os":"linux"},"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
        "$_mhex" "$_msize" "$(oci_json_str "$_arch")" >"$_l/index.json"
    printf '{"imageLayoutVersion":"1.0.0"}' >"$_l/oci-layout"
    chmod 0644 "$_l/index.json" "$_l/oci-layout"
    printf 'sha256:%s\n' "$_mhex"
}

# oci_prepare_outdir DIR FORCE: make DIR ready to receive a layout.  DIR must
# not exist or be empty; with FORCE=1 an existing OCI layout there (it has
# an oci-layout file) is removed first.  Anything else is left alone.
oci_prepare_outdir() {
    if [ -e "$1" ] && [ -n "$(ls -A "$1" 2>/dev/null)" ]; then
        if [ "$2" = 1 ] && [ -f "$1/oci-layout" ]; then
            rm -rf "$1"
        else
            oci_die "$1 exists and is not empty (use --force to replace an existing OCI layout)"
        fi
    fi
    mkdir -p "$1"
}
