# test-image-debian.sh -- import and stage a realistic image: a Debian
# bookworm minbase root filesystem (debootstrap, from Debian's archive)
# packed into an OCI layout by tests/image/build-debian-image.sh.
#
# BERTH_DEBIAN_LAYOUT may name a finished layout (tests/run-all.sh builds it
# once per CI run, as root, and passes it to every build); otherwise the
# layout is built here (cached in the build tree), which needs root and
# debootstrap: without them the test is skipped (77), and tests/run-all.sh
# checks that it did pass in CI.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

LAYOUT=${BERTH_DEBIAN_LAYOUT:-}
if [ -z "$LAYOUT" ]; then
    st=0
    BERTH_ALLOW_SKIP_DEBIAN=1 "$BERTH_TOP_SRCDIR/tests/image/build-debian-image.sh" "$TMP/debian" \
        >"$TMP/deb.digest" 2>"$TMP/deb.err" || st=$?
    if [ "$st" = 77 ]; then
        echo "SKIP: $(tail -n1 "$TMP/deb.err")"
        exit 77
    fi
    [ "$st" = 0 ] || fail "building the Debian image failed: $(tail -n 20 "$TMP/deb.err")"
    LAYOUT=$TMP/debian
fi
[ -f "$LAYOUT/index.json" ] || fail "$LAYOUT is not an OCI layout"

run 0 "$BERTHCTL" image import "$LAYOUT" --store "$TMP/store"
DIGEST=$(cat "$TMP/stdout")
case "$DIGEST" in sha256:*) ;; *) fail "import printed '$DIGEST'" ;; esac
run 0 "$BERTHCTL" image stage "$DIGEST" --store "$TMP/store" --out "$TMP/root"
stderr_has "staged in $TMP/root"

R=$TMP/root
grep -q '^12\.' "$R/etc/debian_version" || fail "etc/debian_version is $(cat "$R/etc/debian_version" 2>/dev/null)"
[ -f "$R/usr/bin/dpkg" ] && [ -x "$R/usr/bin/dpkg" ] || fail "usr/bin/dpkg is missing"
[ "$(readlink "$R/bin")" = usr/bin ] || fail "bin is not the merged-/usr symlink: $(readlink "$R/bin")"
[ -z "$(find "$R" -perm /6000 -print -quit)" ] || fail "a setuid/setgid file was staged"
[ -z "$(find "$R" \( -type b -o -type c -o -type p -o -type s \) -print -quit)" ] || fail "a special file was staged"

# The staged tree holds exactly the paths of the layer, no more and no fewer.
LAYER=$(grep -o '"digest":"sha256:[0-9a-f]*"' "$LAYOUT/blobs/sha256/${DIGEST#sha256:}" |
    sed -n 2p | cut -d'"' -f4)
[ -n "$LAYER" ] || fail "could not find the layer of $DIGEST"
tar -tzf "$LAYOUT/blobs/sha256/${LAYER#sha256:}" | sed -e 's|^\./||' -e 's|/$||' | grep -v '^\.\?$' | sort -u \
    >"$TMP/layer.list"
(cd "$R" && find . -mindepth 1 | sed 's|^\./||' | sort) >"$TMP/staged.list"
cmp -s "$TMP/layer.list" "$TMP/staged.list" ||
    fail "the staged tree differs from the layer: $(diff "$TMP/layer.list" "$TMP/staged.list" | head -n 10)"
[ "$(wc -l <"$TMP/staged.list")" -gt 3000 ] || fail "only $(wc -l <"$TMP/staged.list") paths were staged"

# As root, the staged Debian runs its own dpkg (chroot, outside any sandbox).
if [ "$(id -u)" = 0 ]; then
    chroot "$R" /usr/bin/dpkg --version >"$TMP/dpkg.out" 2>&1 || fail "dpkg in the staged root failed: $(cat "$TMP/dpkg.out")"
    grep -q "Debian 'dpkg'" "$TMP/dpkg.out" || fail "dpkg printed: $(cat "$TMP/dpkg.out")"
fi
