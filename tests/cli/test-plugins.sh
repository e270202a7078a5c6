#!/bin/sh
# berthctl plugins list against the fixture plugins: the good ones "ok",
# every bad one "refused:" with its reason.
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"

: "${BERTH_TEST_PLUGIN_DIR:?}"
D=$BERTH_TEST_PLUGIN_DIR
# The ABI this build provides (plugin.h); the fixtures are built for it, or
# one minor above it (fixture-newer-minor).
MINOR=$(sed -n 's/^#define BERTH_PLUGIN_ABI_MINOR \([0-9][0-9]*\)$/\1/p' "$BERTH_TOP_SRCDIR/include/berth/plugin.h")
[ -n "$MINOR" ] || fail "no BERTH_PLUGIN_ABI_MINOR in plugin.h"
NEWER=$((MINOR + 1))

run 1 "$BERTHCTL" plugins list --plugin-dir "$D"
stdout_has "NAME"

line() { grep -E "^$1 " "$TMP/stdout" || grep -F "/$1.so " "$TMP/stdout" || fail "no line for $1"; }
ok() {
    line "$1" | grep -qE " ok$" || fail "$1 is not ok: $(line "$1")"
}
refused() {
    line "$1" | grep -qF "refused: " || fail "$1 not refused: $(line "$1")"
    line "$1" | grep -qF "$2" || fail "$1 refused without '$2': $(line "$1")"
}
ok fixture-good
ok fixture-image-source
ok fixture-evidence-store
ok fixture-evidence-v10 # built for ABI 1.0: the ops appended in 1.1 are optional
ok fixture-containment
ok fixture-init-fail # listing never calls init
ok fixture-nodelete  # stays mapped; every plugin listed after it must still be itself
ok fixture-runtime-1-0 # an older minor: its ops table is the 1.0 one
refused fixture-newer-minor "built for plugin ABI 1.$NEWER; this berth provides ABI 1.$MINOR"
refused fixture-other-major "built for plugin ABI 2.0"
refused fixture-short-descriptor "descriptor is"
refused fixture-null-op "required runtime operation start() is NULL"
refused fixture-no-entry "does not export berth_plugin_entry()"
refused fixture-world-writable "which is writable by group or others"
refused fixture-data-entry "berth_plugin_entry is not a function"
refused fixture-symlink "symbolic link"
line fixture-good | grep -qE "^fixture-good +runtime +1\\.2\\.3 +1\\.$MINOR " || fail "columns: $(line fixture-good)"
line fixture-evidence-v10 | grep -qE '^fixture-evidence-v10 +evidence-store +1\.2\.3 +1\.0 ' ||
    fail "columns: $(line fixture-evidence-v10)"
line fixture-runtime-1-0 | grep -qE '^fixture-runtime-1-0 +runtime +1\.2\.3 +1\.0 ' ||
    fail "columns: $(line fixture-runtime-1-0)"
# A newer minor only appends, so its identity is still shown.
line fixture-newer-minor | grep -qE "^fixture-newer-minor +runtime +1\\.2\\.3 +1\\.$NEWER " ||
    fail "columns: $(line fixture-newer-minor)"
# Another major is not read beyond its version.
line fixture-other-major | grep -qE '^- +- +- +2\.0 ' || fail "columns: $(line fixture-other-major)"

# JSON: canonical, one object per plugin.
run 1 "$BERTHCTL" plugins list --plugin-dir "$D" --json
printf '%s' "$(cat "$TMP/stdout")" >"$TMP/list.json" # without the final newline
"$BERTHCTL" canon --check "$TMP/list.json" || fail "--json output is not canonical JSON"
stdout_has '"kind":"runtime","name":"fixture-good","path":"'"$D"'/fixture-good.so","sha256":"sha256:'
stdout_has '"name":"fixture-null-op","path":"'"$D"'/fixture-null-op.so","reason":"required runtime operation start() is NULL"'

# A directory holding only good plugins lists with exit 0; a relative
# --plugin-dir works.
mkdir "$TMP/plugins"
cp "$D/fixture-good.so" "$D/fixture-containment.so" "$TMP/plugins/"
(cd "$TMP" && "$BERTHCTL" plugins list --plugin-dir plugins >"$TMP/out") || fail "clean directory did not exit 0"
grep -c ' ok$' "$TMP/out" | grep -qx 2 || fail "expected two ok plugins: $(cat "$TMP/out")"

# The in-tree evidence store (when configured) lists as a plugin of this ABI
# evidence-store plugin.
if [ -e "${BERTH_EVIDENCE_PLUGIN_DIR:?}/evidence-sqlite.so" ]; then
    mkdir "$TMP/evidence"
    cp "$BERTH_EVIDENCE_PLUGIN_DIR/evidence-sqlite.so" "$TMP/evidence/"
    run 0 "$BERTHCTL" plugins list --plugin-dir "$TMP/evidence"
    grep -qE "^evidence-sqlite +evidence-store +[0-9.]+ +1\\.$MINOR +.*/evidence-sqlite\\.so +ok\$" "$TMP/stdout" ||
        fail "evidence-sqlite is not listed ok: $(cat "$TMP/stdout")"
fi

# A file name that is not UTF-8 is listed (lossily in JSON), not an error.
cp "$D/fixture-good.so" "$TMP/plugins/$(printf 'odd\377').so"
run 1 "$BERTHCTL" plugins list --plugin-dir "$TMP/plugins" --json
stdout_has '/odd'"$(printf '\357\277\275')"'.so","reason":"plugin \"fixture-good\" must be installed as fixture-good.so"'
rm "$TMP/plugins/$(printf 'odd\377').so"

# An empty directory is fine; a missing one is an error.
mkdir "$TMP/empty"
run 0 "$BERTHCTL" plugins list --plugin-dir "$TMP/empty"
run 1 "$BERTHCTL" plugins list --plugin-dir "$TMP/missing"
stderr_has "No such file or directory"
run 2 "$BERTHCTL" plugins
run 2 "$BERTHCTL" plugins frob
run 0 "$BERTHCTL" plugins --help
stdout_has "Usage: berthctl plugins list"
