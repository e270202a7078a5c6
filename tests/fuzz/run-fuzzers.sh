#!/bin/sh
# run-fuzzers.sh BUILD_FUZZ_DIR SEED_CORPUS_DIR
#
# Runs each libFuzzer target for $FUZZ_SECONDS seconds (default 60) on a
# scratch copy of its seed corpus, so the checked-in seeds never change.
# Exits non-zero on the first crash, leak or timeout; the reproducer is kept
# in the scratch directory, whose path is printed.
set -eu
build=$1
seeds=$2
seconds=${FUZZ_SECONDS:-60}
work=$(mktemp -d "${TMPDIR:-/tmp}/berth-fuzz-XXXXXX")

for target in canon pool audit extract http upload outputs; do
    if [ ! -x "$build/fuzz-$target" ]; then
        echo "fuzz-$target: not built (its plugin is disabled), skipped"
        continue
    fi
    mkdir -p "$work/$target/corpus" "$work/$target/artifacts"
    cp "$seeds/$target"/* "$work/$target/corpus/"
    echo "fuzz-$target: $seconds s from $(ls "$seeds/$target" | wc -l) seeds (scratch: $work/$target)"
    "$build/fuzz-$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$work/$target/artifacts/" "$work/$target/corpus"
done
rm -rf "$work"
