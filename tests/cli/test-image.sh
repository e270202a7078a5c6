# test-image.sh -- berthctl image import / inspect / stage on real OCI image
# layouts built at test time from busybox-static (tests/image/).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
require_tool /bin/busybox busybox-static
require_tool skopeo skopeo

IMG=$BERTH_TOP_SRCDIR/tests/image
STORE=$TMP/store

# refused CODE: the last command exited 1 with exactly one line "refused: CODE: ...".
refused() {
    stderr_one_line
    grep -q "^refused: $1: " "$TMP/stderr" || fail "expected refused: $1, got: $(cat "$TMP/stderr")"
}

# nothing_at PATH: a failed stage left nothing behind.
nothing_at() {
    [ ! -e "$1" ] || fail "$1 was left behind: $(ls -la "$1")"
}

"$IMG/build-busybox-image.sh" "$TMP/bb" >"$TMP/bb.digest" 2>"$TMP/build.err" ||
    fail "building the busybox image failed: $(cat "$TMP/build.err")"
DIGEST=$(tail -n1 "$TMP/bb.digest")
"$IMG/build-busybox-image.sh" --layers 2 "$TMP/bb2" >"$TMP/bb2.digest" 2>"$TMP/build.err" ||
    fail "building the two-layer image failed: $(cat "$TMP/build.err")"
DIGEST2=$(tail -n1 "$TMP/bb2.digest")

# --- import -----------------------------------------------------------------------
run 0 "$BERTHCTL" image --help
stdout_has "Usage: berthctl image import OCI_LAYOUT_DIR[:REF]"
run 0 "$BERTHCTL" image import "$TMP/bb:latest" --store "$STORE"
stdout_is "$DIGEST
"
stderr_has "3 blobs"
stderr_has "3 new"
# The store: 0700 directories, 0400 single-link blobs named by their hash.
[ "$(stat -c %a "$STORE")" = 700 ] || fail "store mode $(stat -c %a "$STORE")"
[ "$(stat -c %a "$STORE/blobs/sha256")" = 700 ] || fail "blobs/sha256 mode"
for f in "$STORE"/blobs/sha256/*; do
    [ "$(stat -c '%a %h' "$f")" = "400 1" ] || fail "$f is $(stat -c '%a %h' "$f")"
    [ "sha256:$(sha256sum <"$f" | cut -d' ' -f1)" = "sha256:$(basename "$f")" ] || fail "$f does not hash to its name"
done
# Idempotent: the same image again verifies and adds nothing; without :REF too.
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$STORE"
stdout_is "$DIGEST
"
stderr_has "0 new"
# The two-layer image shares its first layer.
run 0 "$BERTHCTL" image import "$TMP/bb2:latest" --store "$STORE"
stdout_is "$DIGEST2
"
stderr_has "4 blobs"
stderr_has "3 new"
# A layout written by skopeo (copied locally, no network) imports the same;
# the same image recompressed with zstd is refused.
skopeo copy --quiet "oci:$TMP/bb:latest" "oci:$TMP/sk:copied" || fail "skopeo copy failed"
run 0 "$BERTHCTL" image import "$TMP/sk:copied" --store "$STORE"
stdout_is "$DIGEST
"
skopeo copy --quiet --dest-compress-format zstd "oci:$TMP/bb:latest" "oci:$TMP/skz:z" || fail "skopeo copy (zstd) failed"
run 1 "$BERTHCTL" image import "$TMP/skz:z" --store "$STORE"
stderr_has "media-type:"
stderr_has "zstd"
# Unknown ref, not a layout.
run 1 "$BERTHCTL" image import "$TMP/bb:nope" --store "$STORE"
stderr_has "invalid-index"
run 1 "$BERTHCTL" image import "$TMP" --store "$STORE"
stderr_has "invalid-layout"
# A layout blob that does not hash to its name is refused and not stored.
cp -r "$TMP/bb" "$TMP/bad"
LAYER=$(find "$TMP/bad/blobs/sha256" -type f -size +100k | head -n1)
printf 'X' | dd of="$LAYER" bs=1 seek=1000 conv=notrunc status=none
run 1 "$BERTHCTL" image import "$TMP/bad" --store "$TMP/store-bad"
stderr_has "digest-mismatch"
[ -z "$(ls "$TMP/store-bad/blobs/sha256/$(basename "$LAYER")" 2>/dev/null)" ] || fail "a corrupt layer was stored"
# A stored blob of the same name with other content: blob-conflict, never overwritten.
mkdir -m 0700 "$TMP/store-c" "$TMP/store-c/blobs" "$TMP/store-c/blobs/sha256"
printf 'forged' >"$TMP/store-c/blobs/sha256/$(basename "$LAYER")"
chmod 0400 "$TMP/store-c/blobs/sha256/$(basename "$LAYER")"
run 1 "$BERTHCTL" image import "$TMP/bb" --store "$TMP/store-c"
stderr_has "blob-conflict"
[ "$(cat "$TMP/store-c/blobs/sha256/$(basename "$LAYER")")" = forged ] || fail "a stored blob was overwritten"
run 2 "$BERTHCTL" image import "$TMP/bb" --store relative/dir
stderr_has "--store must be an absolute path"
run 2 "$BERTHCTL" image frob x
stderr_has 'unknown subcommand "frob"'
run 2 "$BERTHCTL" image inspect sha256:abc --store "$STORE"
stderr_has 'not "sha256:abc"'
# The default store's parents are made as needed (mkdir -p).
run 0 "$BERTHCTL" image import "$TMP/bb" --store "$TMP/new/parents/store"
[ "$(stat -c %a "$TMP/new/parents/store")" = 700 ] || fail "a new store is not 0700"

# --- inspect ----------------------------------------------------------------------
run 0 "$BERTHCTL" image inspect "$DIGEST" --store "$STORE"
stdout_has "\"digest\": \"$DIGEST\""
stdout_has '"os": "linux"'
stdout_has '"media_type": "application/vnd.oci.image.layer.v1.tar+gzip"'
run 1 "$BERTHCTL" image inspect sha256:0000000000000000000000000000000000000000000000000000000000000000 --store "$STORE"
stderr_has "blob-missing"

# --- stage ------------------------------------------------------------------------
run 0 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/root"
stderr_has "staged in $TMP/root"
[ "$(stat -c %a "$TMP/root")" = 700 ] || fail "the staged root is mode $(stat -c %a "$TMP/root")"
[ -f "$TMP/root/bin/busybox" ] && [ -x "$TMP/root/bin/busybox" ] || fail "bin/busybox is missing or not executable"
[ "$(readlink "$TMP/root/bin/sh")" = busybox ] || fail "bin/sh is $(readlink "$TMP/root/bin/sh")"
grep -q "berth" "$TMP/root/etc/os-release" || fail "etc/os-release is wrong"
[ -d "$TMP/root/tmp" ] && [ "$(stat -c %a "$TMP/root/tmp")" = 1777 ] || fail "tmp is not a 1777 directory (the sticky bit is kept on directories)"
# What the stage built runs (the real busybox, outside any sandbox).
[ "$("$TMP/root/bin/busybox" echo staged)" = staged ] || fail "the staged busybox does not run"
# A second stage into an existing directory is refused before anything is read.
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/root"
stderr_has "File exists"
# Whiteouts across layers: etc/motd of layer 1 is gone, layer 2's file is there.
[ -e "$TMP/root/etc/motd" ] || fail "the one-layer image has no etc/motd"
run 0 "$BERTHCTL" image stage "$DIGEST2" --store "$STORE" --out "$TMP/root2"
[ ! -e "$TMP/root2/etc/motd" ] || fail "the whiteout did not remove etc/motd"
[ ! -e "$TMP/root2/etc/.wh.motd" ] || fail "the whiteout file itself was created"
[ -e "$TMP/root2/etc/layer2" ] || fail "layer 2's file is missing"

# Budgets: each refusal names its code and leaves no directory.
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/r1" --max-entries 20
refused entry-budget
nothing_at "$TMP/r1"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/r2" --max-expanded-bytes 100000
refused expanded-budget
nothing_at "$TMP/r2"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/r3" --max-compressed-bytes 1000
refused compressed-budget
nothing_at "$TMP/r3"
run 1 "$BERTHCTL" image stage "$DIGEST2" --store "$STORE" --out "$TMP/r4" --max-layers 1
refused layer-budget
nothing_at "$TMP/r4"
run 2 "$BERTHCTL" image stage "$DIGEST" --store "$STORE" --out "$TMP/r5" --max-entries 0
nothing_at "$TMP/r5"
run 1 "$BERTHCTL" image stage sha256:0000000000000000000000000000000000000000000000000000000000000000 \
    --store "$STORE" --out "$TMP/r6"
refused blob-missing
nothing_at "$TMP/r6"

# A layer changed in the store after import: digest-mismatch, nothing staged.
cp -a "$STORE" "$TMP/store-t"
chmod 0600 "$TMP/store-t/blobs/sha256/$(basename "$LAYER")"
printf 'X' | dd of="$TMP/store-t/blobs/sha256/$(basename "$LAYER")" bs=1 seek=1000 conv=notrunc status=none
chmod 0400 "$TMP/store-t/blobs/sha256/$(basename "$LAYER")"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store-t" --out "$TMP/r7"
refused digest-mismatch
nothing_at "$TMP/r7"
# A store others can enter, or one reached through a symlink: refused the same way.
chmod 0755 "$TMP/store-t"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store-t" --out "$TMP/r9"
refused unsafe-store
nothing_at "$TMP/r9"
chmod 0700 "$TMP/store-t"
ln -s "$STORE" "$TMP/store-link"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store-link" --out "$TMP/r10"
refused unsafe-store
nothing_at "$TMP/r10"
# A layout whose blob is a symlink is no layout to import from.
cp -r "$TMP/bb" "$TMP/linked"
L2=$TMP/linked/blobs/sha256/$(basename "$LAYER")
mv "$L2" "$TMP/moved-blob"
ln -s "$TMP/moved-blob" "$L2"
run 1 "$BERTHCTL" image import "$TMP/linked" --store "$TMP/store-l"
stderr_has "invalid-layout"
# A layout blob with a second hard link (another name could change it while
# it is read): refused the same way, and nothing is imported.
cp -r "$TMP/bb" "$TMP/hardlinked"
ln "$TMP/hardlinked/blobs/sha256/$(basename "$LAYER")" "$TMP/hardlinked/extra-name"
run 1 "$BERTHCTL" image import "$TMP/hardlinked" --store "$TMP/store-h"
stderr_has "invalid-layout"
stderr_has "more than one link"
[ ! -e "$TMP/store-h/blobs/sha256/$(basename "$LAYER")" ] || fail "a hard-linked layer blob was imported"
# A blob with other permissions: unsafe-store.
chmod 0644 "$TMP/store-t/blobs/sha256/$(basename "$LAYER")"
run 1 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store-t" --out "$TMP/r8"
refused unsafe-store
nothing_at "$TMP/r8"
