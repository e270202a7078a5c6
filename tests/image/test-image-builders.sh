#!/bin/sh
# The test-image builders: build-busybox-image.sh is reproducible and makes
# a valid OCI layout with the promised content, in one and two layers, and
# check-layout.sh accepts it and catches corruption.  (The Debian builder is
# slow and network-bound: the tests that use its image run it.)
#
# Needs the Debian packages busybox-static, jq, umoci and skopeo
# (tests/run-all.sh installs them); skips naming the one missing.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

IMG=$BERTH_TOP_SRCDIR/tests/image
BUILD=$IMG/build-busybox-image.sh
CHECK=$IMG/check-layout.sh

require_tool jq jq
require_tool umoci umoci
require_tool skopeo skopeo
require_tool /bin/busybox busybox-static
# skopeo wants a writable home for its per-user configuration.
HOME=$TMP/home
mkdir -p "$HOME"
export HOME

# blob LAYOUT DIGEST: the path of a blob.
blob() {
    printf '%s/blobs/sha256/%s\n' "$1" "${2#sha256:}"
}
# manifest LAYOUT: the path of the manifest index.json lists first.
manifest() {
    blob "$1" "$(jq -r '.manifests[0].digest' "$1/index.json")"
}
# layer LAYOUT N: the path of the Nth (0-based) layer blob.
layer() {
    blob "$1" "$(jq -r ".layers[$2].digest" "$(manifest "$1")")"
}

# --help and usage errors.
for s in build-busybox-image.sh build-debian-image.sh check-layout.sh; do
    run 0 "$IMG/$s" --help
    stdout_has "Usage: $s"
done
run 1 "$BUILD"
stderr_has "usage:"
run 1 "$BUILD" --layers 3 "$TMP/x"
stderr_has "--layers must be 1 or 2"

# Reproducible: twice the same digest, byte-identical layouts, whatever the
# umask; the digest is the one index.json names.
run 0 "$BUILD" "$TMP/a"
grep -Eqx 'sha256:[0-9a-f]{64}' "$TMP/stdout" || fail "digest not printed: $(cat "$TMP/stdout")"
da=$(cat "$TMP/stdout")
run 0 sh -c "umask 077 && exec '$BUILD' '$TMP/b'"
db=$(cat "$TMP/stdout")
[ "$da" = "$db" ] || fail "two builds differ: $da vs $db"
diff -r "$TMP/a" "$TMP/b" >/dev/null || fail "two builds are not byte-identical"
[ "$(jq -r '.manifests[0].digest' "$TMP/a/index.json")" = "$da" ] || fail "index.json does not name $da"

# A non-empty OUTDIR is refused and left alone; --force replaces a layout.
run 1 "$BUILD" "$TMP/a"
stderr_has "exists and is not empty"
[ -f "$TMP/a/oci-layout" ] || fail "a refused build damaged the existing layout"
run 0 "$BUILD" --force "$TMP/a"
stdout_is "$da
"

# Valid for our checker, umoci and skopeo.
run 0 "$CHECK" "$TMP/a"
stdout_has "ok (1 manifests, 1 layers, 3 blobs)"
run 0 umoci stat --image "$TMP/a:latest"
run 0 skopeo inspect "oci:$TMP/a:latest"
[ "$(jq -r .Digest "$TMP/stdout")" = "$da" ] || fail "skopeo sees digest $(jq -r .Digest "$TMP/stdout")"
[ "$(jq -r '.Layers | length' "$TMP/stdout")" = 1 ] || fail "skopeo sees $(jq -r '.Layers | length' "$TMP/stdout") layers"

# The JSON says what it should.
case $(dpkg --print-architecture) in
amd64) arch=amd64 ;;
arm64) arch=arm64 ;;
*) arch=$(jq -r '.manifests[0].platform.architecture' "$TMP/a/index.json") ;;
esac
idx=$TMP/a/index.json
[ "$(jq -r '.mediaType' "$idx")" = application/vnd.oci.image.index.v1+json ] || fail "index media type"
[ "$(jq -r '.manifests | length' "$idx")" = 1 ] || fail "index lists more than one manifest"
[ "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$idx")" = latest ] || fail "ref.name"
[ "$(jq -r '.manifests[0].platform | "\(.os)/\(.architecture)"' "$idx")" = "linux/$arch" ] || fail "index platform"
m=$(manifest "$TMP/a")
[ "$(jq -r '"\(.schemaVersion) \(.mediaType) \(.config.mediaType) \(.layers[0].mediaType)"' "$m")" = \
    "2 application/vnd.oci.image.manifest.v1+json application/vnd.oci.image.config.v1+json application/vnd.oci.image.layer.v1.tar+gzip" ] ||
    fail "manifest media types: $(cat "$m")"
c=$(blob "$TMP/a" "$(jq -r .config.digest "$m")")
[ "$(jq -r '"\(.os) \(.architecture) \(.created) \(.rootfs.type)"' "$c")" = "linux $arch 1970-01-01T00:00:00Z layers" ] ||
    fail "config: $(cat "$c")"
jq -r '.config.Env[]' "$c" | grep -q '^PATH=.*/bin' || fail "config has no PATH"
[ "$(jq -r '.rootfs.diff_ids[0]' "$c")" = "sha256:$(gzip -dc <"$(layer "$TMP/a" 0)" | sha256sum | cut -d' ' -f1)" ] ||
    fail "diff_id is not the sha256 of the uncompressed layer"

# Layer content.
l0=$(layer "$TMP/a" 0)
tar -tvzf "$l0" >"$TMP/list"
tar -tzf "$l0" >"$TMP/names"
grep -qx 'bin/busybox' "$TMP/names" || fail "no bin/busybox"
grep -Eq '^-rwxr-xr-x 0/0 .* bin/busybox$' "$TMP/list" || fail "bin/busybox is not a 0755 regular file owned by 0/0"
for a in sh ls cat echo id uname mount wc sort head tail sleep true false env mkdir rm touch printf grep sed awk dd stat ps; do
    grep -Eq "^l.* bin/$a -> busybox\$" "$TMP/list" || fail "bin/$a is not a symlink to busybox"
done
for d in tmp workspace inputs proc dev sys; do
    grep -Eq "^d.* $d/\$" "$TMP/list" || fail "no directory $d/"
done
grep -Eq '^drwxrwxrwt .* tmp/$' "$TMP/list" || fail "tmp/ is not 1777"
! grep -Eq ' (dev|proc|sys)/.' "$TMP/list" || fail "dev/, proc/ or sys/ is not empty"
! cut -c1-10 "$TMP/list" | grep -q '[sS]' || fail "an entry has a setuid/setgid bit"
! cut -c1 "$TMP/list" | grep -q '[cbp]' || fail "an entry is a device node or FIFO"
! awk '{print $2}' "$TMP/list" | grep -vqx '0/0' || fail "an entry is not owned by 0/0"
! grep -Eq '^(/|\./)' "$TMP/names" || fail "an entry name is absolute or starts with ./"
[ "$(sort "$TMP/names" | uniq -d)" = "" ] || fail "duplicate entries"

# The files, extracted (no chroot needed: busybox is static).
mkdir "$TMP/root"
tar -xzf "$l0" -C "$TMP/root"
grep -qx 'root:x:0:0:root:/root:/bin/sh' "$TMP/root/etc/passwd" || fail "etc/passwd has no root"
grep -q '^nobody:x:65534:65534:' "$TMP/root/etc/passwd" || fail "etc/passwd has no nobody"
grep -q '^nogroup:x:65534:' "$TMP/root/etc/group" || fail "etc/group has no nogroup"
grep -q '^ID=berth-test-busybox$' "$TMP/root/etc/os-release" || fail "etc/os-release"
run 0 "$TMP/root/bin/sh" -c 'echo hello from the image'
stdout_is "hello from the image
"
cmp -s /bin/busybox "$TMP/root/bin/busybox" || fail "bin/busybox is not the host's busybox"

# Two layers: layer 1 is the same blob; layer 2 whites out etc/motd.
run 0 "$BUILD" --layers 2 "$TMP/two"
d2=$(cat "$TMP/stdout")
[ "$d2" != "$da" ] || fail "the two-layer image has the one-layer digest"
run 0 "$BUILD" --layers=2 "$TMP/two-again"
stdout_is "$d2
"
run 0 "$CHECK" "$TMP/two"
stdout_has "ok (1 manifests, 2 layers, 4 blobs)"
run 0 umoci stat --image "$TMP/two:latest"
run 0 skopeo inspect "oci:$TMP/two:latest"
[ "$(jq -r '.Layers | length' "$TMP/stdout")" = 2 ] || fail "skopeo does not see two layers"
[ "$(layer "$TMP/two" 0 | xargs basename)" = "$(basename "$l0")" ] || fail "layer 1 differs between the variants"
grep -qx 'etc/motd' "$TMP/names" || fail "layer 1 has no etc/motd"
tar -tvzf "$(layer "$TMP/two" 1)" >"$TMP/list2"
grep -Eq '^-rw-r--r-- 0/0 +0 .* etc/\.wh\.motd$' "$TMP/list2" || fail "layer 2 has no empty whiteout etc/.wh.motd"
grep -Eq '^-rw-r--r-- 0/0 .* etc/layer2$' "$TMP/list2" || fail "layer 2 does not add etc/layer2"

# check-layout.sh catches corruption.
cp -R "$TMP/a" "$TMP/bad1"
printf 'x' >>"$(layer "$TMP/bad1" 0)"
run 1 "$CHECK" "$TMP/bad1"
stderr_has "content does not hash to its name"

cp -R "$TMP/a" "$TMP/bad2"
rm "$(layer "$TMP/bad2" 0)"
run 1 "$CHECK" "$TMP/bad2"
stderr_has "is missing"

cp -R "$TMP/a" "$TMP/bad3"
msize=$(jq -r '.manifests[0].size' "$TMP/bad3/index.json")
sed "s/\"size\":$msize,/\"size\":$((msize + 1)),/" "$TMP/a/index.json" >"$TMP/bad3/index.json"
run 1 "$CHECK" "$TMP/bad3"
stderr_has "descriptor says $((msize + 1))"

# A layout whose config names the wrong diff_id (every blob correctly
# named, so only the diff_id check can catch it).
mkdir -p "$TMP/bad4/blobs/sha256"
cp "$TMP/a/oci-layout" "$TMP/bad4/"
cp "$l0" "$TMP/bad4/blobs/sha256/"
printf '{"architecture":"%s","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%064d"]}}' "$arch" 0 >"$TMP/cfg"
ch=$(sha256sum "$TMP/cfg" | cut -d' ' -f1)
cp "$TMP/cfg" "$TMP/bad4/blobs/sha256/$ch"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "$ch" "$(wc -c <"$TMP/cfg")" "$(jq -c '.layers[0]' "$m")" >"$TMP/man"
mh=$(sha256sum "$TMP/man" | cut -d' ' -f1)
cp "$TMP/man" "$TMP/bad4/blobs/sha256/$mh"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s}]}' \
    "$mh" "$(wc -c <"$TMP/man")" >"$TMP/bad4/index.json"
run 1 "$CHECK" "$TMP/bad4"
stderr_has "diff_ids[0] says sha256:000000"

# A layer with a setuid file is refused with berth's reason code.
mkdir -p "$TMP/suid/bin"
cp "$TMP/root/bin/busybox" "$TMP/suid/bin/su"
chmod 4755 "$TMP/suid/bin/su"
(cd "$TMP/suid" && tar --format=posix --owner=0 --group=0 -czf "$TMP/suid.tgz" bin)
rm -rf "$TMP/bad5" && cp -R "$TMP/bad4" "$TMP/bad5"
lh=$(sha256sum "$TMP/suid.tgz" | cut -d' ' -f1)
cp "$TMP/suid.tgz" "$TMP/bad5/blobs/sha256/$lh"
printf '{"architecture":"%s","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$arch" "$(gzip -dc <"$TMP/suid.tgz" | sha256sum | cut -d' ' -f1)" >"$TMP/cfg"
ch=$(sha256sum "$TMP/cfg" | cut -d' ' -f1)
cp "$TMP/cfg" "$TMP/bad5/blobs/sha256/$ch"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:%s","size":%s}]}' \
    "$ch" "$(wc -c <"$TMP/cfg")" "$lh" "$(wc -c <"$TMP/suid.tgz")" >"$TMP/man"
mh=$(sha256sum "$TMP/man" | cut -d' ' -f1)
cp "$TMP/man" "$TMP/bad5/blobs/sha256/$mh"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s}]}' \
    "$mh" "$(wc -c <"$TMP/man")" >"$TMP/bad5/index.json"
run 1 "$CHECK" "$TMP/bad5"
stderr_has "berth refuses: setuid"

exit 0
