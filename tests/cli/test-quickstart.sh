#!/bin/sh
# The quickstart's refusals before it does anything (tests/run-all.sh runs the
# whole quickstart, twice, as root): usage errors, and every --workdir that
# another user could have prepared or that the quickstart did not make, and a
# second quickstart on a work directory in use.  The script is run from a
# stand-in source tree, so that a check that wrongly passed would stop at the
# build step (no autogen.sh there) instead of building or installing.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: the quickstart runs as root only"
    exit 77
fi
id nobody >/dev/null 2>&1 || fail "the user nobody is needed"
require_tool flock util-linux

T=$TMP/tree
mkdir -p "$T/src/berthctl" "$T/tests"
: >"$T/configure.ac"
cp "$BERTH_TOP_SRCDIR/quickstart" "$T/quickstart"
cp "$BERTH_TOP_SRCDIR/tests/debian-packages.sh" "$T/tests/"
QS() { "$T/quickstart" --no-packages --prefix "$TMP/prefix" --port 1 "$@"; }
# refused STATUS MESSAGE ARGS...: refused with STATUS and MESSAGE, no step started.
refused() {
    local st=$1 msg=$2
    shift 2
    run "$st" QS "$@"
    stderr_has "$msg"
    grep -q '^\[ 1/12\]' "$TMP/stdout" && fail "a step started for: $*"
    return 0
}

refused 2 "--workdir must be an absolute path" --workdir rel/dir
for w in / // /. "$TMP/.." "$TMP/./w" "$TMP//w"; do
    refused 2 "--workdir must be a plain absolute path below /" --workdir "$w"
done
refused 2 "--port takes a number from 1 to 65535" --port 0
refused 2 "unknown argument '--bogus'" --bogus

# A shared directory is never taken over (it is not root's 0700, and would
# have been chmodded and emptied of *.json).
mkdir -m 1777 "$TMP/shared"
chmod 1777 "$TMP/shared"
printf '{}' >"$TMP/shared/keep.json"
refused 1 "$TMP/shared exists and is not a directory of root's with mode 0700" --workdir "$TMP/shared"
[ "$(stat -c %a "$TMP/shared")" = 1777 ] && [ -f "$TMP/shared/keep.json" ] || fail "the shared directory was changed"
# Another user's directory, or a symlink (both could lead root's writes elsewhere).
mkdir -m 0700 "$TMP/theirs"
chown nobody "$TMP/theirs"
refused 1 "$TMP/theirs exists and is not a directory of root's" --workdir "$TMP/theirs"
mkdir -m 0700 "$TMP/real"
ln -s "$TMP/real" "$TMP/link"
refused 1 "$TMP/link is a symbolic link" --workdir "$TMP/link"
[ -z "$(ls -A "$TMP/real")" ] || fail "something was written through the symlink"
# A directory above it that another user owns, or anyone may write (not sticky).
mkdir -m 0755 "$TMP/up-theirs"
chown nobody "$TMP/up-theirs"
refused 1 "$TMP/up-theirs (above --workdir) must be a directory owned by root" --workdir "$TMP/up-theirs/w"
mkdir -m 0777 "$TMP/up-open"
chmod 0777 "$TMP/up-open"
refused 1 "$TMP/up-open (above --workdir) must be a directory owned by root" --workdir "$TMP/up-open/w"
[ ! -e "$TMP/up-open/w" ] || fail "the work directory was created below a directory anyone may write"
# Root's own 0700 directory that the quickstart did not make, and is not empty.
mkdir -m 0700 "$TMP/mine"
: >"$TMP/mine/notes.txt"
refused 1 "is not empty and was not made by the quickstart" --workdir "$TMP/mine"
[ "$(ls -A "$TMP/mine")" = notes.txt ] || fail "the quickstart wrote into a directory it did not make"

# A work directory in use by another quickstart (its lock held).
mkdir -m 0700 "$TMP/busy"
: >"$TMP/busy/.berth-quickstart"
flock "$TMP/busy/lock" sleep 60 &
holder=$!
for i in $(seq 100); do
    flock -n "$TMP/busy/lock" true || break
    sleep 0.05
done
refused 1 "another quickstart is using $TMP/busy" --workdir "$TMP/busy"
kill "$holder"
wait "$holder" 2>/dev/null || :

# A new work directory passes every check: the quickstart starts, and stops
# at the stand-in tree's build step, naming it and its log.
run 1 QS --workdir "$TMP/fresh"
grep -q '^\[ 2/12\] build' "$TMP/stdout" || fail "the build step did not start: $(cat "$TMP/stdout")"
stderr_has "step 2/12 (build) failed"
stderr_has "the full log is $TMP/fresh/quickstart.log"
[ "$(stat -c %U:%a "$TMP/fresh")" = root:700 ] || fail "the work directory is not root's 0700"
[ -f "$TMP/fresh/.berth-quickstart" ] || fail "the work directory has no marker"
# ... and the next run accepts the directory it made.
run 1 QS --workdir "$TMP/fresh"
stderr_has "step 2/12 (build) failed"
