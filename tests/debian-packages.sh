# shellcheck shell=sh
# debian-packages.sh -- the Debian 12 packages berth needs, listed once
# (sourced, POSIX sh).  ./quickstart installs the build and run packages;
# tests/run-all.sh (which .ci/run runs) installs all three lists.  A test
# that needs a tool names its package with require_tool
# (tests/require-tool.sh); tests/build/test-packages.sh checks that every
# package named there is listed here.
#
#   BERTH_BUILD_PACKAGES  building berth: autotools, gcc, the libraries (zlib for
#                         the gzip framing check), Check
#   BERTH_RUN_PACKAGES    running jobs: the runtimes, the busybox test image,
#                         and the tools the quickstart itself uses
#   BERTH_TEST_PACKAGES   only the tests: the sanitizer and fuzzing
#                         toolchain, the image builders and checkers (umoci,
#                         skopeo, debootstrap, attr; bsdtar from
#                         libarchive-tools for foreign layers), openssl as an
#                         independent TLS peer, xz for the dist tarball,
#                         passwd for the unprivileged distcheck, systemd for
#                         the unit checks, systemd-container (nspawn) to boot
#                         a real systemd for containment-systemd's tests,
#                         groff for the man page lint, and
#                         util-linux (flock; Essential, so always there);
#                         sqlite3 for the benchmarks that read the journal,
#                         binutils (readelf) for the shim's library check

# shellcheck disable=SC2034 # used by the scripts that source this file
BERTH_BUILD_PACKAGES="autoconf automake libtool make pkg-config gcc libc6-dev
libjansson-dev libsodium-dev libsqlite3-dev libssl-dev libsystemd-dev check
libevent-dev libcurl4-openssl-dev libarchive-dev zlib1g-dev"
BERTH_RUN_PACKAGES="runsc crun busybox-static jq curl procps"
BERTH_TEST_PACKAGES="clang libclang-rt-14-dev llvm openssl xz-utils passwd systemd systemd-container
umoci skopeo debootstrap attr groff-base util-linux libarchive-tools sqlite3 binutils"

# berth_missing_packages PACKAGE...: print the PACKAGEs that dpkg does not
# have installed, on one line separated by spaces (an empty line when none
# is missing).  Returns 1, printing nothing, without dpkg-query (not Debian).
berth_missing_packages() {
    command -v dpkg-query >/dev/null 2>&1 || return 1
    _bmp_missing=
    for _bmp_p in "$@"; do
        _bmp_st=$(dpkg-query -W -f '${db:Status-Status}' "$_bmp_p" 2>/dev/null || :)
        [ "$_bmp_st" = installed ] || _bmp_missing="$_bmp_missing $_bmp_p"
    done
    printf '%s\n' "${_bmp_missing# }"
}

# berth_install_packages PACKAGE...: "apt-get update", then "apt-get install
# -y --no-install-recommends PACKAGE..." without questions
# (DEBIAN_FRONTEND=noninteractive); needs root and Debian's archive.  Both
# commands print to standard output and error.  Returns 1 when one fails,
# naming it on standard error.
berth_install_packages() {
    DEBIAN_FRONTEND=noninteractive
    export DEBIAN_FRONTEND
    apt-get update || { echo "apt-get update failed" >&2; return 1; }
    apt-get install -y --no-install-recommends "$@" || { echo "apt-get install $* failed" >&2; return 1; }
}
