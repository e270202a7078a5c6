# shellcheck shell=sh
# require-tool.sh -- require_tool, for the tests that need a tool beyond
# the build's (sourced, POSIX sh; tests/cli/lib.sh sources it).
#
# require_tool TOOL PACKAGE: return when TOOL is there (a command on PATH,
# or, when TOOL starts with "/", an executable file at that path).
# Otherwise end the test: plain "make check" skips it (exit 77, "SKIP: TOOL
# is not installed (apt-get install PACKAGE)"); with BERTH_REQUIRE_TOOLS=1,
# which tests/run-all.sh sets because there every suite must run, it fails
# (exit 1).  PACKAGE is the Debian package with TOOL; it must be listed in
# tests/debian-packages.sh (tests/build/test-packages.sh checks).
require_tool() {
    case $1 in
    /*) [ -x "$1" ] && return 0 ;;
    *) command -v "$1" >/dev/null 2>&1 && return 0 ;;
    esac
    if [ "${BERTH_REQUIRE_TOOLS:-0}" = 1 ]; then
        printf 'FAIL: %s is not installed (apt-get install %s; tests/run-all.sh does as root)\n' "$1" "$2" >&2
        exit 1
    fi
    printf 'SKIP: %s is not installed (apt-get install %s)\n' "$1" "$2"
    exit 77
}
