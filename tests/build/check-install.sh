#!/bin/sh
# check-install.sh -- what "make install DESTDIR=..." puts where, exactly.
#
# Usage: tests/build/check-install.sh DESTDIR PREFIX
#
# Compares every file and symlink under DESTDIR/PREFIX with the list below
# (a file missing or one nobody listed fails), and checks that nothing was
# installed outside PREFIX, that programs and plugins are executable and
# nothing is writable by group or others, that berth-plugin.pc names the
# plugin directory that was installed, and that the binaries export only
# what is meant: libberth is linked into each program and plugin and never
# installed, so no program exports a berth_ symbol or needs a libberth
# object, and each plugin exports exactly berth_plugin_entry (nm -D,
# readelf -d from binutils).  tests/run-all.sh runs it after a
# default (prefix /usr/local) build.
set -eu

[ $# -eq 2 ] || { echo "usage: $0 DESTDIR PREFIX" >&2; exit 2; }
dest=$1
prefix=$2
root=$dest$prefix
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
[ -d "$root" ] || fail "$root does not exist: was make install DESTDIR=$dest run?"

expected='bin/berthctl
include/berth/cleanup.h
include/berth/error.h
include/berth/file.h
include/berth/log.h
include/berth/plugin.h
include/berth/version.h
lib/berth/plugins/containment-systemd.la
lib/berth/plugins/containment-systemd.so
lib/berth/plugins/evidence-sqlite.la
lib/berth/plugins/evidence-sqlite.so
lib/berth/plugins/image-oci-local.la
lib/berth/plugins/image-oci-local.so
lib/berth/plugins/runtime-oci.la
lib/berth/plugins/runtime-oci.so
lib/pkgconfig/berth-plugin.pc
lib/systemd/system/berth-job@.service
lib/systemd/system/berth-worker.service
lib/systemd/system/berthd.service
lib/tmpfiles.d/berth.conf
libexec/berth/berth-contained
libexec/berth/berth-oci-shim
libexec/berth/berthctl-full
libexec/berth/berth-slot-init
libexec/berth/berth-probe
sbin/berth-worker
sbin/berthd
share/berth/examples/backends.json
share/berth/examples/berthd.json
share/berth/examples/client.json
share/berth/examples/job-sandbox-facts.json
share/berth/examples/policy.json
share/berth/examples/pools/ci.json
share/berth/examples/pools/default.json
share/berth/examples/pools/graders.json
share/doc/berth/berthd.md
share/doc/berth/containment.md
share/doc/berth/evidence.md
share/doc/berth/evidence-sqlite.md
share/doc/berth/images.md
share/doc/berth/runtime-oci.md
share/doc/berth/warm-slots.md
share/doc/berth/workers.md
share/man/man1/berthctl.1
share/man/man5/berthd.json.5
share/man/man7/berth-plugin.7
share/man/man8/berth-worker.8
share/man/man8/berthd.8'

actual=$(cd "$root" && find . \( -type f -o -type l \) | sed 's|^\./||' | LC_ALL=C sort)
expected=$(printf '%s\n' "$expected" | LC_ALL=C sort)
if [ "$actual" != "$expected" ]; then
    printf '%s\n' "$expected" >"${TMPDIR:-/tmp}/berth-install.expected.$$"
    printf '%s\n' "$actual" >"${TMPDIR:-/tmp}/berth-install.actual.$$"
    diff -u "${TMPDIR:-/tmp}/berth-install.expected.$$" "${TMPDIR:-/tmp}/berth-install.actual.$$" >&2 || :
    rm -f "${TMPDIR:-/tmp}/berth-install.expected.$$" "${TMPDIR:-/tmp}/berth-install.actual.$$"
    fail "the installed files differ from the list (- expected, + installed)"
fi

# Nothing outside the prefix.
outside=$(cd "$dest" && find . \( -type f -o -type l \) | sed 's|^\.||' | grep -v "^$prefix/" || :)
[ -z "$outside" ] || fail "installed outside $prefix: $outside"

for f in bin/berthctl libexec/berth/berthctl-full sbin/berthd sbin/berth-worker libexec/berth/berth-oci-shim libexec/berth/berth-slot-init \
    libexec/berth/berth-probe libexec/berth/berth-contained lib/berth/plugins/runtime-oci.so lib/berth/plugins/image-oci-local.so \
    lib/berth/plugins/evidence-sqlite.so lib/berth/plugins/containment-systemd.so; do
    [ -x "$root/$f" ] || fail "$f is not executable"
done
writable=$(find "$root" -perm /022 ! -type l)
[ -z "$writable" ] || fail "writable by group or others: $writable"

pc() { PKG_CONFIG_PATH=$root/lib/pkgconfig PKG_CONFIG_LIBDIR=$root/lib/pkgconfig pkg-config "$@" berth-plugin; }
[ "$(pc --variable=plugindir)" = "$prefix/lib/berth/plugins" ] ||
    fail "berth-plugin.pc: plugindir is $(pc --variable=plugindir), not $prefix/lib/berth/plugins"
pc --cflags | grep -q -- "-I$prefix/include" || fail "berth-plugin.pc: cflags $(pc --cflags) lack -I$prefix/include"
grep -q "^ExecStart=$prefix/sbin/berthd " "$root/lib/systemd/system/berthd.service" ||
    fail "berthd.service does not run $prefix/sbin/berthd"
grep -qx "ExecStart=$prefix/sbin/berth-worker run --config=/etc/berth-worker/worker.json" \
    "$root/lib/systemd/system/berth-worker.service" || fail "berth-worker.service does not run $prefix/sbin/berth-worker"
grep -qx "ExecStart=$prefix/libexec/berth/berth-contained %i" "$root/lib/systemd/system/berth-job@.service" ||
    fail "berth-job@.service does not run $prefix/libexec/berth/berth-contained"
# Exports: the dynamic symbol table of each installed ELF object, defined
# symbols only.
for f in bin/berthctl libexec/berth/berthctl-full sbin/berthd sbin/berth-worker libexec/berth/berth-oci-shim libexec/berth/berth-slot-init \
    libexec/berth/berth-probe libexec/berth/berth-contained lib/berth/plugins/runtime-oci.so lib/berth/plugins/image-oci-local.so \
    lib/berth/plugins/evidence-sqlite.so lib/berth/plugins/containment-systemd.so; do
    if readelf -d "$root/$f" 2>/dev/null | grep -q 'NEEDED.*libberth'; then
        fail "$f needs a shared libberth: $(readelf -d "$root/$f" | grep NEEDED | grep libberth)"
    fi
    exported=$(nm -D --defined-only "$root/$f" 2>/dev/null | awk '$2 ~ /^[TDBRVW]$/ && $3 ~ /^berth_/ {print $3}' | LC_ALL=C sort)
    case $f in
    *.so) [ "$exported" = berth_plugin_entry ] ||
        fail "$f exports [$(echo $exported)], not exactly berth_plugin_entry" ;;
    *) [ -z "$exported" ] || fail "$f exports libberth symbols: $(echo $exported)" ;;
    esac
done
for f in "$root"/lib/berth/plugins/*.so; do
    all_exports=$(nm -D --defined-only "$f" | awk '$2 ~ /^[TDBRVWiu]$/ {print $3}')
    [ "$all_exports" = berth_plugin_entry ] || fail "${f#"$root"/} exports more than berth_plugin_entry: $(echo $all_exports)"
done

echo "install check: $(printf '%s\n' "$actual" | wc -l) files under $prefix, as listed"
