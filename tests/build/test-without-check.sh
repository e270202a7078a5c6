#!/bin/sh
# test-without-check.sh -- a packager's build: berth configures, builds and
# installs with --disable-tests on a machine without Check, and "make check"
# then says why it cannot run instead of failing on a missing header.
#
# Usage: tests/build/test-without-check.sh TARBALL
#
# Check is hidden from configure by a pkg-config wrapper that answers "not
# found" for the module check and passes everything else to the real
# pkg-config.  The build happens in a temporary directory (removed after);
# tests/run-all.sh runs this once, on the dist tarball (a full build is too
# slow to repeat in every "make check").
set -eu

[ $# -eq 1 ] || { echo "usage: $0 TARBALL" >&2; exit 2; }
tarball=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/berth-nocheck-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

real_pkg_config=$(command -v pkg-config) || fail "pkg-config is not installed"
cat >"$tmp/pkg-config" <<EOF
#!/bin/sh
# Check is "not installed" here.
for a in "\$@"; do
    case \$a in
    check | check\ *) exit 1 ;;
    esac
done
exec '$real_pkg_config' "\$@"
EOF
chmod 0755 "$tmp/pkg-config"
PKG_CONFIG=$tmp/pkg-config "$tmp/pkg-config" --exists check && fail "the wrapper does not hide Check"

tar -xJf "$tarball" -C "$tmp"
src=$(echo "$tmp"/berth-*/)
cd "$src"

# Without --disable-tests, configure refuses and names the way out.
if PKG_CONFIG=$tmp/pkg-config ./configure >"$tmp/conf1.log" 2>&1; then
    fail "configure succeeded without Check and without --disable-tests"
fi
grep -q 'configure --disable-tests to build without it' "$tmp/conf1.log" ||
    { tail -n 5 "$tmp/conf1.log" >&2; fail "configure's refusal does not name --disable-tests"; }

PKG_CONFIG=$tmp/pkg-config ./configure --disable-tests --prefix=/usr >"$tmp/conf2.log" 2>&1 ||
    { tail -n 20 "$tmp/conf2.log" >&2; fail "configure --disable-tests failed without Check"; }
grep -q '^  test suite: *no$' "$tmp/conf2.log" || fail "configure's summary does not say the tests are off"
make -j"${JOBS:-2}" >"$tmp/make.log" 2>&1 || { tail -n 30 "$tmp/make.log" >&2; fail "make failed with --disable-tests"; }
make install DESTDIR="$tmp/dest" >"$tmp/install.log" 2>&1 || { tail -n 30 "$tmp/install.log" >&2; fail "make install failed"; }
[ -x "$tmp/dest/usr/sbin/berthd" ] && [ -x "$tmp/dest/usr/bin/berthctl" ] &&
    [ -f "$tmp/dest/usr/lib/berth/plugins/runtime-oci.so" ] || fail "make install did not install berthd, berthctl and the plugins"
"$tmp/dest/usr/bin/berthctl" --version >/dev/null || fail "the installed berthctl does not run"

if make check >"$tmp/check.log" 2>&1; then
    fail "make check succeeded although the tests were disabled"
fi
grep -q 'configured with --disable-tests' "$tmp/check.log" ||
    { tail -n 10 "$tmp/check.log" >&2; fail "make check did not say that the tests are disabled"; }
echo "without Check: configure --disable-tests, make and make install work; make check says why it cannot run"
