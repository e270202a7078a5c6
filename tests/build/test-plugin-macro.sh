#!/bin/sh
# The BERTH_PLUGIN configure macro (m4/berth_plugin.m4), exercised for real:
# a throwaway configure.ac declares three plugins -- one whose dependency
# exists (jansson), one whose pkg-config module does not, one vetoed by its
# extra check -- and configure is run with each kind of switch.
set -eu

: "${BERTH_TOP_SRCDIR:?}"
. "$BERTH_TOP_SRCDIR/tests/require-tool.sh"
require_tool aclocal automake
require_tool autoconf autoconf
require_tool pkg-config pkg-config

TMP=$(mktemp -d "${TMPDIR:-/tmp}/berth-m4-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; [ -f "$TMP/p/out" ] && cat "$TMP/p/out" >&2; exit 1; }

mkdir -p "$TMP/p/m4"
cp "$BERTH_TOP_SRCDIR/m4/berth_plugin.m4" "$TMP/p/m4/"
cat >"$TMP/p/configure.ac" <<'AC'
AC_INIT([macro-test], [1])
AC_CONFIG_MACRO_DIR([m4])
PKG_PROG_PKG_CONFIG
BERTH_PLUGIN([alpha], [Alpha], [jansson])
BERTH_PLUGIN([beta-two], [Beta], [berth-no-such-module-for-tests])
BERTH_PLUGIN([gamma], [Gamma], [], [berth_plugin_missing="the gamma tool"])
AC_CONFIG_FILES([result])
AC_OUTPUT
AS_ECHO(["states alpha=$berth_plugin_alpha beta=$berth_plugin_beta_two gamma=$berth_plugin_gamma"])
BERTH_PLUGIN_SUMMARY
AC
printf '@BERTH_PLUGIN_ALPHA_TRUE@alpha-built\n@BERTH_PLUGIN_BETA_TWO_TRUE@beta-built\n' >"$TMP/p/result.in"
(cd "$TMP/p" && aclocal -I m4 && autoconf) >"$TMP/autoconf.log" 2>&1 || { cat "$TMP/autoconf.log" >&2; fail "autoconf"; }

conf() {
    want=$1
    shift
    set +e
    (cd "$TMP/p" && ./configure "$@") >"$TMP/p/out" 2>&1
    got=$?
    set -e
    [ "$got" = "$want" ] || fail "./configure $* exited $got, expected $want"
}
has() { grep -qF -- "$1" "$TMP/p/out" || fail "configure output lacks '$1'"; }
result_has() { grep -qx -- "$1" "$TMP/p/result" || fail "result lacks '$1': $(cat "$TMP/p/result")"; }

# Default: on when the dependencies are found, off (with the reason) when not.
conf 0
has "states alpha=yes beta=no gamma=no"
has "checking whether to build the beta-two plugin... no (missing pkg-config modules: berth-no-such-module-for-tests)"
has "gamma                  no (missing the gamma tool)"
has "alpha                  yes"
result_has "alpha-built"
result_has "#beta-built"

# --disable-X turns a buildable plugin off and says so.
conf 0 --disable-alpha
has "states alpha=no"
has "alpha                  no (disabled by --disable-alpha)"
result_has "#alpha-built"

# --enable-X with the dependency present builds it.
conf 0 --enable-alpha
has "states alpha=yes"

# --enable-X with a missing dependency is a configure error naming it.
conf 1 --enable-beta-two
has "--enable-beta-two was given but the Beta plugin needs pkg-config modules: berth-no-such-module-for-tests"
conf 1 --enable-gamma
has "--enable-gamma was given but the Gamma plugin needs the gamma tool"

# Nonsense values are refused.
conf 1 --enable-alpha=maybe
has "--enable-alpha takes yes or no, not 'maybe'"
echo "PASS: BERTH_PLUGIN"
