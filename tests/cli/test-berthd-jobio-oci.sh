# test-berthd-jobio-oci.sh -- jobs with inputs and outputs on real runsc
# (gVisor) and real crun through the real berthd, runtime-oci and the
# evidence-sqlite store: on each runtime a job reads an uploaded input
# (bind-mounted read-only: writing it fails inside the job) and writes a
# declared output, the signed result lists its digest and collect verifies
# it; a symlinked output is output_invalid with its id.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

OCI_EVIDENCE=1 oci_install runsc crun
add_pool on-runsc runsc
add_pool on-crun crun
start_berthd
sha() { printf 'sha256:%s' "$(sha256sum "$1" | cut -d' ' -f1)"; }

printf 'one\ntwo\nthree\nfour\n' >"$TMP/data.txt"
run 0 CLIENT evidence put "$TMP/data.txt" --media-type text/plain
REF=$(cat "$TMP/stdout")

# io_job ID POOL SCRIPT: a busybox job with the input at /inputs/data.txt and the output "report".
io_job() {
    jq -n --arg id "$1" --arg pool "$2" --arg img "$DIGEST" --arg s "$3" --argjson ref "$REF" \
        '{schema_version: 1, id: $id, pool: $pool, image: $img, argv: ["/bin/sh", "-c", $s],
          inputs: [{path: "/inputs/data.txt", ref: $ref}],
          outputs: [{id: "report", path: "/tmp/outputs/report.json", media_type: "application/json", max_bytes: 4096}],
          limits: {cpu_millis: 1000, memory_bytes: 268435456, pids: 64, scratch_bytes: 16777216,
                   wall_time_ns: 60000000000, output_bytes: 65536, artifact_bytes: 65536}}' >"$TMP/$1.job.json"
}

COUNT='n=$(wc -l < /inputs/data.txt); printf "{\"lines\":%d}" "$n" > /tmp/outputs/report.json
if echo x 2>/dev/null > /inputs/data.txt; then echo INPUT-WRITABLE; else echo input-read-only; fi'
for rt in runsc crun; do
    io_job "count-$rt" "on-$rt" "$COUNT"
    submit "count-$rt"
    [ "$(placed "count-$rt")" = "$rt" ] || fail "count-$rt was placed on $(placed "count-$rt")"
    finish "count-$rt"
    [ "$(result "count-$rt" .status)" = exited ] || fail "$rt: $(jq -c .result "$TMP/count-$rt.out/result.json")"
    [ "$(cat "$TMP/count-$rt.out/stdout")" = input-read-only ] ||
        fail "$rt: writing the input: $(cat "$TMP/count-$rt.out/stdout")"
    [ "$(cat "$TMP/count-$rt.out/outputs/report")" = '{"lines":4}' ] ||
        fail "$rt: the report is $(cat "$TMP/count-$rt.out/outputs/report")"
    [ "$(result "count-$rt" '.outputs[0].digest')" = "$(sha "$TMP/count-$rt.out/outputs/report")" ] ||
        fail "$rt: the result lists $(result "count-$rt" .outputs)"
    run 0 "$BERTHCTL" result verify "$TMP/count-$rt.out/result.json" --pubkey "$INST/keys/receipt.pub" \
        --job "$TMP/count-$rt.job.json" --outputs "$TMP/count-$rt.out/outputs"

    io_job "link-$rt" "on-$rt" 'ln -s /etc/passwd /tmp/outputs/report.json'
    submit "link-$rt"
    finish "link-$rt"
    [ "$(result "link-$rt" .reason)" = output_invalid ] || fail "$rt: $(jq -c .result "$TMP/link-$rt.out/result.json")"
    [ "$(result "link-$rt" .output_error.problem)" = symlink ] || fail "$rt: $(result "link-$rt" .output_error)"
    [ "$(result "link-$rt" .output_error.id)" = report ] || fail "$rt: $(result "link-$rt" .output_error)"
done
# Staged inputs are gone once the jobs were reaped.
wait_empty "$INST/state/inputs"
stop_berthd
echo ok
