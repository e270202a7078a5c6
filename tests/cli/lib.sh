# lib.sh -- helpers for the berthctl command-line tests (sourced, POSIX sh).
#
# Every test runs the berthctl in the build tree ($BERTHCTL, set by
# AM_TESTS_ENVIRONMENT) in a private temporary directory removed on exit.

set -eu

: "${BERTHCTL:?BERTHCTL must point at the built berthctl}"
# shellcheck source=tests/require-tool.sh
. "${BERTH_TOP_SRCDIR:?}/tests/require-tool.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/berth-cli-XXXXXX")
# remove_tmp: rm -rf $TMP.  berthd's root cache seals its entries 0500
# (docs/images.md): without root, removing them needs their write bits back.
remove_tmp() {
    [ "$(id -u)" = 0 ] || chmod -R u+w "$TMP" 2>/dev/null || :
    rm -rf "$TMP"
}
trap remove_tmp EXIT
# Under bash, a test that set -e stops without a fail() message still says
# where: the line of the top-level command (or function call) that failed.
if [ -n "${BASH_VERSION:-}" ]; then
    trap '_err_st=$?; case $- in *e*) printf "FAIL: %s: line %s exited %s (set -e)\n" "$0" "$LINENO" "$_err_st" >&2 ;; esac' ERR
fi
chmod 0755 "$TMP"

fail() {
    printf 'FAIL: %s\n' "$*" >&2
    if [ -s "$TMP/stderr" ]; then
        printf -- '--- stderr:\n' >&2
        cat "$TMP/stderr" >&2
    fi
    exit 1
}

# run WANT_STATUS CMD...: run CMD, keep stdout/stderr in $TMP, check status.
run() {
    _run_want=$1
    shift
    set +e
    "$@" >"$TMP/stdout" 2>"$TMP/stderr"
    _run_got=$?
    set -e
    [ "$_run_got" = "$_run_want" ] || fail "$* exited $_run_got, expected $_run_want"
}

# run_stdin WANT_STATUS FILE CMD...: as run, with FILE on standard input.
run_stdin() {
    _run_want=$1
    _run_input=$2
    shift 2
    set +e
    "$@" <"$_run_input" >"$TMP/stdout" 2>"$TMP/stderr"
    _run_got=$?
    set -e
    [ "$_run_got" = "$_run_want" ] || fail "$* < $_run_input exited $_run_got, expected $_run_want"
}

# stdout_is TEXT: standard output is exactly TEXT (no trailing newline added).
stdout_is() {
    printf '%s' "$1" >"$TMP/expected"
    cmp -s "$TMP/expected" "$TMP/stdout" || fail "stdout is '$(cat "$TMP/stdout")', expected '$1'"
}

# stderr_has TEXT: standard error contains TEXT (fixed string).
stderr_has() {
    grep -qF -- "$1" "$TMP/stderr" || fail "stderr lacks '$1': $(cat "$TMP/stderr")"
}

# stdout_has TEXT: standard output contains TEXT (fixed string).
stdout_has() {
    grep -qF -- "$1" "$TMP/stdout" || fail "stdout lacks '$1': $(cat "$TMP/stdout")"
}

# der_fingerprint CERT: the SHA-256 of CERT's DER, as a host policy lists it.
der_fingerprint() { openssl x509 -in "$1" -outform DER | sha256sum | cut -d' ' -f1; }

# issue_client_cert OUT CN CA: a P-256 client certificate (clientAuth) for
# CN signed by the CA CA.pem/CA.key, written to OUT.pem and OUT.key.
issue_client_cert() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" \
        -subj "/CN=$2" 2>/dev/null || fail "openssl req for $2 failed"
    printf 'extendedKeyUsage=clientAuth\n' >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -CAcreateserial -out "$1.pem" -days 2 \
        -extfile "$1.ext" 2>/dev/null || fail "openssl x509 for $2 failed"
    rm -f "$1.csr" "$1.ext"
}

# stderr_one_line: exactly one line of diagnostics.
stderr_one_line() {
    n=$(wc -l <"$TMP/stderr")
    [ "$n" -eq 1 ] || fail "expected one line on stderr, got $n"
}
