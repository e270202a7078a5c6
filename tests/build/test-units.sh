#!/bin/sh
# The shipped systemd unit and tmpfiles snippet, checked by systemd's own
# tools: the unit as the build generated it, pointed at the built berthd.
set -eu

: "${BERTH_TOP_BUILDDIR:?}" "${BERTHD:?}"
. "${BERTH_TOP_SRCDIR:?}/tests/require-tool.sh"
require_tool systemd-analyze systemd
require_tool systemd-tmpfiles systemd
TMP=$(mktemp -d "${TMPDIR:-/tmp}/berth-units-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail() { printf 'FAIL: %s\n' "$*" >&2; cat "$TMP/out" >&2 2>/dev/null || true; exit 1; }

unit="$BERTH_TOP_BUILDDIR/conf/berthd.service"
[ -f "$unit" ] || fail "the build did not generate conf/berthd.service"
grep -q '^Type=notify$' "$unit" || fail "berthd.service must be Type=notify (berthd sends READY=1)"
grep -q '^StateDirectory=berth$' "$unit" || fail "berthd.service lacks StateDirectory=berth"
grep -q '^ProtectSystem=strict$' "$unit" || fail "berthd.service lacks ProtectSystem=strict"
grep -q '^NoNewPrivileges=yes$' "$unit" || fail "berthd.service lacks NoNewPrivileges=yes"
grep -q '@[a-z]*@' "$unit" && fail "berthd.service has unsubstituted @variables@"

# systemd-analyze checks syntax, known directives and that ExecStart exists.
# The man pages Documentation= names are not installed yet (--man=no); they
# must be among the pages this build made.
check_documentation() { # UNIT
    for page in $(sed -n 's/^Documentation=//p' "$1"); do
        case $page in
        man:*)
            name=${page#man:}
            f="$BERTH_TOP_BUILDDIR/man/${name%(*}.$(printf '%s' "$name" | sed 's/.*(\(.*\))/\1/')"
            [ -s "$f" ] || fail "Documentation=$page of $1 names no page this build made ($f)"
            ;;
        esac
    done
}
check_documentation "$unit"
sed "s|^\(ExecStart[A-Za-z]*=\)[^ ]*berthd|\1$BERTHD|" "$unit" >"$TMP/berthd.service"
systemd-analyze verify --man=no "$TMP/berthd.service" >"$TMP/out" 2>&1 || fail "systemd-analyze verify failed"
if grep -v "^$" "$TMP/out" | grep -q .; then
    fail "systemd-analyze verify complained"
fi

# The remote worker's unit, pointed at the built berth-worker.
worker="$BERTH_TOP_BUILDDIR/conf/berth-worker.service"
[ -f "$worker" ] || fail "the build did not generate conf/berth-worker.service"
grep -q '@[a-z]*@' "$worker" && fail "berth-worker.service has unsubstituted @variables@"
for want in '^Type=exec$' '^StateDirectory=berth-worker$' '^ProtectSystem=strict$' '^NoNewPrivileges=yes$' \
    '^ExecStart=.*/berth-worker run --config=/etc/berth-worker/worker.json$'; do
    grep -q "$want" "$worker" || fail "berth-worker.service lacks $want"
done
check_documentation "$worker"
sed "s|^ExecStart=[^ ]*berth-worker|ExecStart=${BERTH_WORKER:?}|" "$worker" >"$TMP/berth-worker.service"
systemd-analyze verify --man=no "$TMP/berth-worker.service" >"$TMP/out" 2>&1 ||
    fail "systemd-analyze verify failed on berth-worker.service"
if grep -v "^$" "$TMP/out" | grep -q .; then
    fail "systemd-analyze verify complained about berth-worker.service"
fi

# The job template, as an instance of it, pointed at the built launcher.
job="$BERTH_TOP_BUILDDIR/conf/berth-job@.service"
if [ -n "${BERTH_CONTAINED:-}" ] && [ -f "$job" ]; then
    grep -q '@[a-z]*@' "$job" && fail "berth-job@.service has unsubstituted @variables@"
    for want in '^Type=exec$' '^KillMode=control-group$' '^Delegate=yes$' '^Restart=no$' \
        '^StandardOutput=null$' '^StandardError=null$' '^LoadCredential=berth-launch:/run/berth/contained/%i.json$'; do
        grep -q "$want" "$job" || fail "berth-job@.service lacks $want"
    done
    sed "s|^ExecStart=[^ ]*|ExecStart=$BERTH_CONTAINED|" "$job" >"$TMP/berth-job@check.service"
    systemd-analyze verify --man=no "$TMP/berth-job@check.service" >"$TMP/out" 2>&1 ||
        fail "systemd-analyze verify failed on berth-job@.service"
    if grep -v "^$" "$TMP/out" | grep -q .; then
        fail "systemd-analyze verify complained about berth-job@.service"
    fi
fi

# tmpfiles: the snippet parses and creates the directories 0700 (as root
# they belong to root; otherwise to the caller, who cannot chown).
conf="$BERTH_TOP_BUILDDIR/conf/berth.conf"
if [ "$(id -u)" != 0 ]; then
    sed "s/ root root / - - /" "$conf" >"$TMP/berth.conf"
    conf="$TMP/berth.conf"
fi
systemd-tmpfiles --root="$TMP/root" --create "$conf" >"$TMP/out" 2>&1 || fail "systemd-tmpfiles rejected conf/berth.conf"
for d in var/lib/berth etc/berth; do
    [ -d "$TMP/root/$d" ] || fail "tmpfiles did not create /$d"
    [ "$(stat -c %a "$TMP/root/$d")" = 700 ] || fail "/$d is not created 0700"
done
