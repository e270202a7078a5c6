#!/bin/sh
# The man pages (man/*.in, generated into the build tree): groff must format
# each without a warning (but "can't break line", which depends on the length
# of the substituted install paths), no @placeholder@ may survive the build, and
# the pages must agree with what they describe -- every berthctl verb has its
# own subsection, every option the programs' --help prints is documented, and
# the member tags of berthd.json(5) and of the client configuration in
# berthctl(1) are exactly the member lists of the parsers in the source
# (read from the C arrays, so neither side can drift unnoticed).
set -eu

: "${BERTH_TOP_SRCDIR:?}" "${BERTH_TOP_BUILDDIR:?}" "${BERTHCTL:?}" "${BERTHD:?}" "${BERTH_WORKER:?}"
. "$BERTH_TOP_SRCDIR/tests/require-tool.sh"
require_tool groff groff-base
require_tool tbl groff-base
TMP=$(mktemp -d "${TMPDIR:-/tmp}/berth-man-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() {
    printf 'FAIL: %s\n' "$*" >&2
    failures=$((failures + 1))
}

PAGES="berthctl.1 berthd.json.5 berth-plugin.7 berthd.8 berth-worker.8"
MAN="$BERTH_TOP_BUILDDIR/man"
SRC="$BERTH_TOP_SRCDIR"

# --- helpers ----------------------------------------------------------------

# roff_text FILE: the page with \- as -, font escapes and \& removed.
roff_text() {
    sed -e 's/\\-/-/g' -e 's/\\f[BIRPC]//g' -e 's/\\f(CW//g' -e 's/\\&//g' "$1"
}

# c_array FILE NAME: the string literals of "NAME[] = { ... };" in FILE (the
# first such array; NAME must be the whole identifier).
c_array() {
    awk -v name="$2" '
        !on && $0 ~ ("(^|[^A-Za-z0-9_])" name "\\[\\] = \\{") { on = 1 }
        on {
            line = $0
            while (match(line, /"[^"]*"/)) {
                print substr(line, RSTART + 1, RLENGTH - 2)
                line = substr(line, RSTART + RLENGTH)
            }
            if (line ~ /};/ || $0 ~ /};/) exit
        }' "$1"
}

# section PAGE KIND TITLE: the text, as roff_text shows it, directly inside
# ".SH TITLE" (KIND SH: up to the next .SH or .SS) or inside ".SS TITLE"
# (KIND SS: up to the next .SS or .SH).
section() {
    roff_text "$1" | awk -v kind="$2" -v title="$3" '
        function heading(s) { sub(/^\.S[HS][ \t]+/, "", s); gsub(/"/, "", s); return s }
        /^\.SH([ \t]|$)/ { inside = (kind == "SH" && heading($0) == title); next }
        /^\.SS([ \t]|$)/ { inside = (kind == "SS" && heading($0) == title); next }
        inside'
}

# tag_lines PAGE KIND TITLE: the whole tag line of every .TP in that scope.
tag_lines() {
    section "$1" "$2" "$3" | awk 'tag { tag = 0; print; next } /^\.TP/ { tag = 1 }'
}

# tags PAGE KIND TITLE: the first word of every .TP tag in that scope.
tags() {
    tag_lines "$1" "$2" "$3" | awk '{ sub(/^\.[A-Za-z]+[ \t]*/, ""); gsub(/"/, ""); print $1 }'
}

# options FILE: the options a --help text documents: --long ones anywhere
# and -x ones at the start of an option line.
options() {
    { grep -oE -- '(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*' "$1" | sed 's/^[^-]*//'
      grep -oE -- '^ +-[A-Za-z],' "$1" | tr -d ' ,'; } | sort -u
}

# verb_options FILE VERB: "OWNER OPTION" for every option of a berthctl
# help text; OWNER is the verb a line runs ("berthctl OWNER ...") or VERB.
verb_options() {
    awk -v verb="$2" -v verbs="$(tr '\n' ' ' <"$TMP/verbs")" '
        BEGIN { n = split(verbs, v, " "); for (i = 1; i <= n; i++) known[v[i]] = 1 }
        {
            owner = verb
            if (match($0, /berthctl [a-z-]+/)) {
                w = substr($0, RSTART + 9, RLENGTH - 9)
                if (w in known) owner = w
            }
            line = $0
            if (match(line, /^ +-[A-Za-z],/)) print owner, substr(line, RSTART + RLENGTH - 3, 2)
            while (match(line, /(^|[^A-Za-z0-9-])--[a-z][a-z0-9-]*/)) {
                o = substr(line, RSTART, RLENGTH); sub(/^[^-]*/, "", o); print owner, o
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$1" | sort -u
}

# mentions TEXT_FILE OPTION: OPTION occurs in TEXT_FILE as a whole word.
mentions() {
    grep -Eq -- "(^|[^A-Za-z0-9-])$2([^A-Za-z0-9-]|\$)" "$1"
}

# same_set WHAT EXPECTED_FILE FOUND_FILE: report the differences both ways.
same_set() {
    sort -u "$2" >"$2.s"
    sort -u "$3" >"$3.s"
    if [ ! -s "$2.s" ]; then
        fail "$1: found nothing to check against (the source was reorganised?)"
        return
    fi
    comm -23 "$2.s" "$3.s" | while read -r m; do
        printf 'FAIL: %s: "%s" is not documented\n' "$1" "$m" >&2
        echo x >>"$TMP/set-failures"
    done
    comm -13 "$2.s" "$3.s" | while read -r m; do
        printf 'FAIL: %s: "%s" is documented but not accepted by the code\n' "$1" "$m" >&2
        echo x >>"$TMP/set-failures"
    done
}

# prefixed PREFIX: read names on stdin, print PREFIX.name.
prefixed() { sed "s/^/$1/"; }

# --- every page: generated, formatted without warnings ----------------------

for page in $PAGES; do
    p="$MAN/$page"
    if [ ! -f "$p" ]; then
        fail "the build did not generate man/$page"
        continue
    fi
    name=${page%.*}
    section=${page##*.}
    upper=$(printf '%s' "$name" | tr '[:lower:]' '[:upper:]')
    grep -q "^\.TH $upper $section " "$p" || fail "$page: its .TH line does not name $upper $section"
    if grep -n '@[A-Za-z_]*@' "$p" >"$TMP/out"; then
        fail "$page: placeholders left unsubstituted: $(tr '\n' ' ' <"$TMP/out")"
    fi
    if grep -n '[[:space:]]$' "$SRC/man/$page.in" >"$TMP/out"; then
        fail "man/$page.in: trailing whitespace on lines $(cut -d: -f1 "$TMP/out" | tr '\n' ' ')"
    fi
    # -ww: every warning category but "break" (-Wbreak); -t: run tbl first,
    # as man(1) does for pages that start with '\" t.  Whether a line can be
    # broken depends on the length of the installation paths substituted into
    # the page (make distcheck's are long), not on the page itself.
    LC_ALL=C.UTF-8 groff -t -man -Tutf8 -ww -Wbreak -z "$p" >"$TMP/out" 2>&1 || fail "$page: groff failed"
    if [ -s "$TMP/out" ]; then
        fail "$page: groff warns:"
        cat "$TMP/out" >&2
    fi
    for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
        grep -Eq "^\.SH \"?$s\"?\$" "$p" || fail "$page: no $s section"
    done
done

# --- berthctl(1): the verbs and options of the built berthctl ---------------

page="$MAN/berthctl.1"
if [ -f "$page" ]; then
    "$BERTHCTL" --help >"$TMP/help"
    sed -n '/^Verbs:/,/^$/p' "$TMP/help" | awk 'NR > 1 && NF { print $1 }' >"$TMP/verbs"
    roff_text "$page" | awk '
        /^\.SH/ { inside = ($0 ~ /^\.SH COMMANDS/); next }
        inside && /^\.SS/ { sub(/^\.SS[ \t]+/, ""); gsub(/"/, ""); print }' >"$TMP/subsections"
    same_set "berthctl.1 COMMANDS subsections vs the verbs of berthctl --help" "$TMP/verbs" "$TMP/subsections"

    # Every option a verb's --help prints is documented in that verb's
    # subsection, or in GLOBAL OPTIONS.  Verbs that share one help text
    # (submit, wait, ...; receipt, result, qualification) are checked as a
    # group: the option must be in one of their subsections.
    section "$page" SH "GLOBAL OPTIONS" >"$TMP/global"
    while read -r verb; do
        "$BERTHCTL" "$verb" --help >"$TMP/help.$verb" 2>&1 || true
        printf '%s %s\n' "$(cksum <"$TMP/help.$verb" | cut -d' ' -f1)" "$verb"
    done <"$TMP/verbs" >"$TMP/groups"
    while read -r sum verb; do
        : >"$TMP/group-text"
        for other in $(awk -v s="$sum" '$1 == s { print $2 }' "$TMP/groups"); do
            section "$page" SS "$other" >>"$TMP/group-text"
        done
        # An example line that runs another verb ("berthctl image import
        # ... --store DIR") shows that verb's option: check it there.
        verb_options "$TMP/help.$verb" "$verb" >"$TMP/options"
        while read -r owner opt; do
            if [ "$owner" != "$verb" ]; then
                section "$page" SS "$owner" >"$TMP/owner-text"
                mentions "$TMP/owner-text" "$opt" || mentions "$TMP/global" "$opt" ||
                    fail "berthctl.1: $opt (used with $owner in berthctl $verb --help) is not documented under $owner"
                continue
            fi
            mentions "$TMP/group-text" "$opt" || mentions "$TMP/global" "$opt" ||
                fail "berthctl.1: $opt (from berthctl $verb --help) is not documented under $verb or GLOBAL OPTIONS"
        done <"$TMP/options"
    done <"$TMP/groups"
    options "$TMP/help" >"$TMP/options"
    while read -r opt; do
        mentions "$TMP/global" "$opt" || fail "berthctl.1: $opt (from berthctl --help) is not in GLOBAL OPTIONS"
    done <"$TMP/options"

    # The client configuration (src/client/https.c).
    c_array "$SRC/src/client/https.c" config_members >"$TMP/expected"
    tags "$page" SH "CLIENT CONFIGURATION" >"$TMP/found"
    same_set "berthctl.1 CLIENT CONFIGURATION" "$TMP/expected" "$TMP/found"
fi

# --- berthd(8): every option of the built berthd ----------------------------

# page_options PAGE PROGRAM: the OPTIONS section of PAGE documents exactly
# the options PROGRAM --help prints.
page_options() {
    "$2" --help >"$TMP/help"
    options "$TMP/help" >"$TMP/expected"
    tag_lines "$MAN/$1" SH OPTIONS | grep -oE -- '(^|[^A-Za-z0-9-])--?[A-Za-z][a-z0-9-]*' |
        sed 's/^[^-]*//' >"$TMP/found"
    same_set "$1 OPTIONS vs $(basename "$2") --help" "$TMP/expected" "$TMP/found"
}

page="$MAN/berthd.8"
if [ -f "$page" ]; then
    page_options berthd.8 "$BERTHD"
    for sig in SIGTERM SIGINT SIGHUP; do
        grep -q "$sig" "$page" || fail "berthd.8: $sig is not described"
    done
fi

# --- berth-worker(8): every option, and the configuration's members --------

page="$MAN/berth-worker.8"
if [ -f "$page" ]; then
    page_options berth-worker.8 "$BERTH_WORKER"
    c_array "$SRC/src/worker/config.c" members >"$TMP/expected"
    tags "$page" SH CONFIGURATION >"$TMP/found"
    same_set "berth-worker.8 CONFIGURATION vs src/worker/config.c" "$TMP/expected" "$TMP/found"
fi

# --- berthd.json(5): the member lists of the parsers ------------------------

page="$MAN/berthd.json.5"
if [ -f "$page" ]; then
    cfg="$SRC/src/lib/config/berthd-config.c"
    check() { # WHAT KIND TITLE: compare tags with $TMP/expected
        tags "$page" "$2" "$3" >"$TMP/found"
        same_set "berthd.json.5 $1" "$TMP/expected" "$TMP/found"
    }
    c_array "$cfg" top_members >"$TMP/expected"
    check "MEMBERS vs top_members" SH MEMBERS
    for obj in listen tls journal http retention; do
        c_array "$cfg" "${obj}_members" | prefixed "$obj." >"$TMP/expected"
        check "$obj vs ${obj}_members" SS "$obj"
    done
    { c_array "$cfg" warm_members | prefixed "warm."
      c_array "$cfg" warm_target_members | prefixed "warm.pools.POOL[]."; } >"$TMP/expected"
    check "warm vs warm_members and warm_target_members" SS warm
    c_array "$cfg" backend_members | prefixed "backends.NAME." >"$TMP/expected"
    check "backends vs backend_members" SS backends
    { c_array "$cfg" plugin_members | prefixed "images."
      c_array "$SRC/plugins/image-oci-local/image-oci-local.c" members; } >"$TMP/expected"
    check "images vs plugin_members and image-oci-local's members" SS images
    if [ -f "$SRC/plugins/evidence-sqlite/evidence-sqlite.c" ]; then
        { c_array "$cfg" plugin_members | prefixed "evidence."
          c_array "$SRC/plugins/evidence-sqlite/evidence-sqlite.c" members; } >"$TMP/expected"
        check "evidence vs plugin_members and evidence-sqlite's members" SS evidence
    fi
    c_array "$SRC/src/lib/job/policy.c" quota_members >"$TMP/expected"
    check "Evidence quota vs quota_members" SS "Evidence quota"
    { c_array "$SRC/plugins/runtime-oci/ocicfg.c" members
      c_array "$SRC/plugins/runtime-oci/ocicfg.c" runtime_members | prefixed "runtime."; } >"$TMP/expected"
    check "RUNTIME-OCI BACKENDS vs runtime-oci's members" SH "RUNTIME-OCI BACKENDS"
    c_array "$SRC/src/lib/job/policy.c" policy_members >"$TMP/expected"
    check "Policy document vs policy_members" SS "Policy document"
    c_array "$SRC/src/lib/job/policy.c" subject_members >"$TMP/expected"
    check "Subjects vs subject_members" SS Subjects
    c_array "$SRC/src/lib/job/job.c" limit_members >"$TMP/expected"
    check "Limits vs limit_members" SS Limits
fi

if [ -f "$TMP/set-failures" ]; then
    failures=$((failures + $(wc -l <"$TMP/set-failures")))
fi
if [ "$failures" -ne 0 ]; then
    echo "$failures problem(s) in the man pages" >&2
    exit 1
fi
echo "man pages: $PAGES: lint clean and in agreement with the code"
