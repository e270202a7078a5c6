#!/bin/bash
# test-packages.sh -- the test suite's own set-up (tests/debian-packages.sh,
# tests/require-tool.sh), on a simulated machine: dpkg-query and apt-get are
# stand-ins first on PATH (nothing is installed or removed for real), and
# tools are hidden from PATH by a directory of links to everything else.
#
#   - every Debian package a test names (require_tool, "apt-get install X")
#     is in the lists tests/run-all.sh installs;
#   - tests/run-all.sh --packages-only: as root, on a machine with nothing
#     installed, runs "apt-get update" and then "apt-get install -y
#     --no-install-recommends" with every listed package, noninteractive;
#     with two missing, installs just those two; with none, runs no apt-get;
#     stops when apt-get fails; as another user, installs nothing and names
#     what is missing;
#   - ./quickstart's packages step installs what it needs from the same
#     lists (root only: the quickstart runs as root);
#   - a suite whose tool is hidden skips (77) naming the package, and fails
#     with BERTH_REQUIRE_TOOLS=1 (tests/run-all.sh's setting).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/debian-packages.sh"
SRC=$BERTH_TOP_SRCDIR
# One line, one space apart (the lists span lines).
# shellcheck disable=SC2086,SC2116
ALL=$(echo $BERTH_BUILD_PACKAGES $BERTH_RUN_PACKAGES $BERTH_TEST_PACKAGES)

# --- every package a test names is listed -----------------------------------
named=$(grep -rhoIE --include='*.sh' --include='*.c' "(require_tool [^ ]+|apt-get install) [a-z][a-z0-9.+-]*" \
    "$SRC/tests" | awk '{print $NF}' | sort -u)
[ "$(echo "$named" | wc -w)" -ge 10 ] || fail "found only these packages named by the tests: $named"
for p in $named; do
    case " $ALL " in *" $p "*) ;; *) fail "a test names the Debian package $p, which tests/debian-packages.sh does not list" ;; esac
done

# --- stand-ins for dpkg-query and apt-get ------------------------------------
STUB=$TMP/stub
mkdir "$STUB"
# dpkg-query -W -f FORMAT PACKAGE: "not-installed" for the packages in
# $FAKE_MISSING ("all": every package), else "installed".
cat >"$STUB/dpkg-query" <<'EOF'
#!/bin/sh
for p; do :; done
case " $FAKE_MISSING " in *" $p "* | *" all "*) printf not-installed ;; *) printf installed ;; esac
EOF
# apt-get ARGS: logged with DEBIAN_FRONTEND; "install" exits $FAKE_INSTALL_STATUS.
cat >"$STUB/apt-get" <<'EOF'
#!/bin/sh
printf '%s|%s\n' "${DEBIAN_FRONTEND:-}" "$*" >>"$APT_LOG"
[ "$1" != install ] || exit "${FAKE_INSTALL_STATUS:-0}"
EOF
chmod 0755 "$STUB"/*
APT_LOG=$TMP/apt.log
: >"$APT_LOG"
chmod 0666 "$APT_LOG"
export APT_LOG
[ "$(PATH=$STUB:$PATH command -v apt-get)" = "$STUB/apt-get" ] || fail "the apt-get stand-in is not first on PATH"
[ "$(PATH=$STUB:$PATH command -v dpkg-query)" = "$STUB/dpkg-query" ] || fail "the dpkg-query stand-in is not first on PATH"

# run_all WANT MISSING [ENV=VALUE...]: tests/run-all.sh --packages-only with MISSING not installed.
run_all() {
    local want=$1 missing=$2
    shift 2
    : >"$APT_LOG"
    run "$want" env PATH="$STUB:$PATH" FAKE_MISSING="$missing" "$@" "$SRC/tests/run-all.sh" --packages-only
}
# apt_log_is LINE...: apt-get ran exactly so ("FRONTEND|ARGS").
apt_log_is() {
    printf '%s\n' "$@" | sed '/^$/d' >"$TMP/apt.want"
    cmp -s "$TMP/apt.want" "$APT_LOG" || fail "apt-get ran as: $(cat "$APT_LOG"), expected: $(cat "$TMP/apt.want")"
}

if [ "$(id -u)" = 0 ]; then
    # A fresh machine: nothing installed, everything installed in one go.
    run_all 0 all
    stdout_has "installing: $ALL"
    apt_log_is "noninteractive|update" "noninteractive|install -y --no-install-recommends $ALL"
    # Two missing (one the quickstart needs, one only the tests): just those.
    run_all 0 "umoci crun"
    stdout_has "installing: crun umoci"
    apt_log_is "noninteractive|update" "noninteractive|install -y --no-install-recommends crun umoci"
    run_all 0 ""
    stdout_has "all installed"
    apt_log_is ""
    run_all 1 skopeo FAKE_INSTALL_STATUS=100
    stderr_has "apt-get install skopeo failed"
    # Another user installs nothing; it names what is missing.
    if setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$SRC/tests/run-all.sh" 2>/dev/null; then
        run_all 1 "jq umoci" setpriv --reuid=65534 --regid=65534 --clear-groups
        stderr_has "missing Debian packages: jq umoci"
        stderr_has "run it as root (it installs them), or: apt-get install jq umoci"
        apt_log_is ""
    else
        echo "nobody cannot read $SRC: the unprivileged refusal is checked by the unprivileged distcheck"
    fi

    # The quickstart's packages step, in a stand-in source tree (its build
    # step then fails: no autogen.sh): only the build and run packages.
    T=$TMP/tree
    mkdir -p "$T/src/berthctl" "$T/tests"
    : >"$T/configure.ac"
    cp "$SRC/quickstart" "$T/quickstart"
    cp "$SRC/tests/debian-packages.sh" "$T/tests/"
    : >"$APT_LOG"
    run 1 env PATH="$STUB:$PATH" FAKE_MISSING="umoci crun libsodium-dev" \
        "$T/quickstart" --prefix "$TMP/prefix" --workdir "$TMP/qs" --port 1
    apt_log_is "noninteractive|update" "noninteractive|install -y --no-install-recommends libsodium-dev crun"
    grep -q '^\[ 2/[0-9]*\] build' "$TMP/stdout" || fail "the quickstart did not go on to its build step: $(cat "$TMP/stdout")"
    run 0 "$T/quickstart" --list-packages
    # shellcheck disable=SC2086,SC2116
    stdout_is "$(echo $BERTH_BUILD_PACKAGES $BERTH_RUN_PACKAGES)
"
else
    run_all 1 "jq umoci"
    stderr_has "missing Debian packages: jq umoci"
    stderr_has "run it as root (it installs them), or: apt-get install jq umoci"
    apt_log_is ""
fi

# --- a hidden tool: SKIP naming the package, FAIL under run-all --------------
# A directory of links to every command on PATH (the first of each name).
FARM=$TMP/path
mkdir "$FARM"
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    for f in "$d"/*; do
        [ -x "$f" ] && [ ! -d "$f" ] && [ ! -e "$FARM/${f##*/}" ] && ln -s "$f" "$FARM/${f##*/}"
    done
done
if [ ! -x "$FARM/bash" ] || [ ! -x "$FARM/sh" ]; then fail "no shells in $FARM"; fi

# hidden SCRIPT TOOL PACKAGE [root]: SCRIPT without TOOL on PATH skips
# naming PACKAGE, and fails under BERTH_REQUIRE_TOOLS=1 (a root-only SCRIPT
# run by another user skips for that first; one that needs another tool
# this machine really lacks skips naming that one).
hidden() {
    local script=$1 tool=$2 pkg=$3 other
    rm -f "$FARM/$tool"
    [ "$(PATH=$FARM command -v "$tool" || :)" = "" ] || fail "$tool is still on the PATH"
    run 77 env PATH="$FARM" BERTH_REQUIRE_TOOLS=0 /bin/sh "$SRC/$script"
    other=$(sed -n 's/^SKIP: \([^ ]*\) is not installed (apt-get install .*/\1/p' "$TMP/stdout")
    if [ "${4:-}" = root ] && [ "$(id -u)" != 0 ]; then
        echo "ok $script skips for root: $(cat "$TMP/stdout")"
    elif [ -n "$other" ] && [ "$other" != "$tool" ] && ! command -v "$other" >/dev/null && [ ! -x "$other" ]; then
        echo "ok $script skips for $other, not installed here: $(cat "$TMP/stdout")"
    else
        stdout_has "SKIP: $tool is not installed (apt-get install $pkg)"
        run 1 env PATH="$FARM" BERTH_REQUIRE_TOOLS=1 /bin/sh "$SRC/$script"
        stderr_has "FAIL: $tool is not installed (apt-get install $pkg"
        echo "ok $script without $tool: skips naming $pkg, fails under tests/run-all.sh"
    fi
    ln -s "$(command -v "$tool")" "$FARM/$tool" 2>/dev/null || :
}
hidden tests/cli/test-examples.sh jq jq
hidden tests/cli/test-keygen.sh openssl openssl
hidden tests/cli/test-devinit.sh curl curl
hidden tests/cli/test-berthd.sh curl curl
hidden tests/cli/test-policy.sh jq jq
hidden tests/cli/test-image.sh skopeo skopeo
hidden tests/image/test-image-builders.sh umoci umoci
hidden tests/build/test-manpages.sh tbl groff-base
hidden tests/build/test-units.sh systemd-tmpfiles systemd
hidden tests/build/test-plugin-macro.sh aclocal automake
hidden tests/cli/test-quickstart.sh flock util-linux root
hidden tests/cli/test-bundle-runtimes.sh crun crun root
hidden tests/cli/test-runtime-oci.sh runsc runsc root
hidden tests/cli/test-qualify.sh crun crun root
echo "PASS: packages named, installed when missing, tools required"
