# test-qualify.sh -- live qualification on real runsc and crun: berthctl qualify
# runs every probe in real sandboxes and records a signed qualification that
# verifies offline; berthd offers only qualified backends to placement
# ([runsc, crun] places on crun while runsc is unqualified, on runsc once it
# is; [runsc] alone is refused with no_backend); a failed probe records
# nothing; a running berthd's journal is refused.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root
: "${BERTH_PROBE:?}"

oci_install runsc crun
add_pool gvisor runsc
# Qualification is required again (oci_install switched it off).
edit_config '.backends[] |= del(.require_qualification)'

qualify() { run "$1" "$BERTHCTL" qualify "$2" --berthd-config "$INST/berthd.json" --probe "$BERTH_PROBE" "${@:3}"; }

# Usage errors.
run 2 "$BERTHCTL" qualify
qualify 2 nosuch
stderr_has 'has no backend "nosuch"'
qualify 2 crun --validity-days 0
stderr_has "--validity-days takes whole days from 1 to 365"

# A probe program that cannot run in the sandbox (dynamically linked, and the
# probe rootfs holds nothing else): every inside probe fails, nothing is recorded.
run 1 "$BERTHCTL" qualify crun --berthd-config "$INST/berthd.json" --probe /usr/bin/true --out "$TMP/none.json"
grep -Eq "^  FAIL +rootfs-read-only " "$TMP/stdout" || fail "the rootfs probe did not fail: $(cat "$TMP/stdout")"
stderr_has "backend crun is NOT qualified: a probe failed; the failure is recorded"
[ ! -e "$TMP/none.json" ] || fail "a failed qualification was written out"
# The probe program decides the verdict: it must be trusted like the runtime.
cp "$BERTH_PROBE" "$TMP/open-probe"
chmod 0777 "$TMP/open-probe"
run 1 "$BERTHCTL" qualify crun --berthd-config "$INST/berthd.json" --probe "$TMP/open-probe"
stderr_has "probe: $TMP/open-probe has mode 0777, which is writable by group or others"
# ... and so must the directories above it.
mkdir -m 0775 "$TMP/group-writable"
chmod 0775 "$TMP/group-writable"
cp "$BERTH_PROBE" "$TMP/group-writable/berth-probe"
run 1 "$BERTHCTL" qualify crun --berthd-config "$INST/berthd.json" --probe "$TMP/group-writable/berth-probe"
stderr_has "$TMP/group-writable (above $TMP/group-writable/berth-probe) has mode 0775"

# crun qualifies: every probe passes, the record verifies with the broker key.
qualify 0 crun --out "$TMP/q-crun.json"
for p in rootfs-read-only identity scratch-limit network pids-limit descendant-reaped \
    cancel-kills-descendants output-limit deadline inputs-read-only outputs-limit; do
    grep -Eq "^  pass +$p " "$TMP/stdout" || fail "probe $p did not pass: $(cat "$TMP/stdout")"
done
grep -q "holds the staged bytes; writing, creating beside it and in /inputs, removing and renaming failed" \
    "$TMP/stdout" || fail "inputs-read-only: $(grep inputs-read-only "$TMP/stdout")"
grep -Eq "outputs-limit +ENOSPC after [0-9]+ of 1048576 bytes; the declared output was captured exactly" \
    "$TMP/stdout" || fail "outputs-limit: $(grep outputs-limit "$TMP/stdout")"
# crun's processes are visible on the host: the cancel probe saw the job's
# child before cancelling (it looks for the token that job's argv carries).
grep -q "cancelled; the job and its child (seen on the host before the cancel) are gone" "$TMP/stdout" ||
    fail "the cancel probe never saw the job's child: $(grep cancel-kills "$TMP/stdout")"
stdout_has "backend crun qualified: q"
run 0 "$BERTHCTL" qualification verify "$TMP/q-crun.json" --pubkey "$INST/keys/receipt.pub"
stdout_has "11 of 14 probes passed, 3 not applicable"
stdout_has "on kernel $(uname -r)"
[ "$(jq -r .qualification.runtime.sha256 "$TMP/q-crun.json")" = "sha256:$(sha256sum </usr/bin/crun | cut -d' ' -f1)" ] ||
    fail "the record does not name crun's digest"
# Tampering breaks it.
jq '.qualification.expires_at = "9999999999999999999"' "$TMP/q-crun.json" >"$TMP/q-bad.json"
run 3 "$BERTHCTL" qualification verify "$TMP/q-bad.json" --pubkey "$INST/keys/receipt.pub"
stderr_has "does NOT verify"

# berthd: runsc is unqualified, so [runsc, crun] places on crun; [runsc] is refused.
start_berthd
run 0 CLIENT capabilities --json
jq -e '.backends.runsc.qualification == "unqualified"' "$TMP/stdout" >/dev/null ||
    fail "runsc should be unqualified: $(cat "$TMP/stdout")"
jq -e '.backends.crun.qualification.id | startswith("q")' "$TMP/stdout" >/dev/null ||
    fail "crun should be qualified: $(cat "$TMP/stdout")"
bb_job first 'echo placed'
submit first
[ "$(placed first)" = crun ] || fail "with runsc unqualified the job went to $(placed first)"
finish first
[ "$(cat "$TMP/first.out/stdout")" = placed ] || fail "first: $(cat "$TMP/first.out/result.json")"
POOL=gvisor bb_job only-runsc 'true'
run 1 CLIENT submit "$TMP/only-runsc.job.json"
stderr_has "no_backend"
# The journal is berthd's while it runs.
qualify 1 runsc
stderr_has "is berthd running? stop it first"
stop_berthd
run 0 "$BERTHCTL" --journal "$INST/state/journal.db" audit export --out "$TMP/audit.jsonl"
grep '"pool.placed"' "$TMP/audit.jsonl" | grep -q '{"backend":"runsc","kept":false,"reason":"unqualified"}' ||
    fail "selector_inputs do not say why runsc was passed over: $(grep pool.placed "$TMP/audit.jsonl")"

# Once runsc is qualified, the same pool places on runsc.
qualify 0 runsc --validity-days 1
for p in inputs-read-only outputs-limit; do
    grep -Eq "^  pass +$p " "$TMP/stdout" || fail "runsc: probe $p did not pass: $(cat "$TMP/stdout")"
done
# Without a containment its three probes do not apply (test-berthd-contained-oci.sh runs them).
for p in containment-payload containment-supervisor-lost containment-drain; do
    grep -Eq "^  not_applicable +$p +the backend has no containment" "$TMP/stdout" ||
        fail "runsc: probe $p: $(cat "$TMP/stdout")"
done
start_berthd
bb_job second 'uname -r'
submit second
[ "$(placed second)" = runsc ] || fail "with runsc qualified the job went to $(placed second)"
finish second
[ "$(cat "$TMP/second.out/stdout")" = 4.4.0 ] || fail "second did not run in gVisor: $(cat "$TMP/second.out/stdout")"
stop_berthd

# A different runtime binary ends the qualification: the pin moves to a copy
# with another digest, and runsc is unqualified again.
cp /usr/bin/runsc "$TMP/runsc-copy"
printf '\0' >>"$TMP/runsc-copy"
chmod 0755 "$TMP/runsc-copy"
edit_config '.backends.runsc.config.runtime = $pin' --argjson pin "$(pin_json "$TMP/runsc-copy")"
start_berthd
run 0 CLIENT capabilities --json
jq -e '.backends.runsc.qualification == "unqualified"' "$TMP/stdout" >/dev/null ||
    fail "a new runtime binary kept the old qualification: $(cat "$TMP/stdout")"
stop_berthd

# berthd qualifies a backend itself at startup when configured, and only when
# it has no current qualification.
edit_config '.probe = $p | .backends.runsc.qualify_at_startup = true' --arg p "$BERTH_PROBE"
BERTHD_START_TRIES=2400 start_berthd
grep -q "backend runsc: no current qualification: running the live probes" "$TMP/berthd.log" ||
    fail "berthd did not probe runsc: $(cat "$TMP/berthd.log")"
grep -q "backend runsc: probe deadline: pass" "$TMP/berthd.log" || fail "the deadline probe did not pass"
grep -q "backend runsc: qualified (q[0-9a-f]*), recorded in the journal" "$TMP/berthd.log" ||
    fail "berthd did not record runsc's qualification: $(cat "$TMP/berthd.log")"
run 0 CLIENT capabilities --json
jq -e '.backends.runsc.qualification.id | startswith("q")' "$TMP/stdout" >/dev/null ||
    fail "runsc is not qualified after startup qualification: $(cat "$TMP/stdout")"
stop_berthd
start_berthd
grep -q "backend runsc: qualified (q" "$TMP/berthd.log" || fail "the recorded qualification was not found again"
grep -q "running the live probes" "$TMP/berthd.log" && fail "berthd probed again although runsc was qualified"
stop_berthd

# qualified BACKEND yes|no: what berthd says of BACKEND's qualification.
qualified() {
    start_berthd
    run 0 CLIENT capabilities --json
    stop_berthd
    if jq -e ".backends.$1.qualification.id | startswith(\"q\")" "$TMP/stdout" >/dev/null 2>&1; then
        [ "$2" = yes ] || fail "$1 is still qualified: $3"
    else
        [ "$2" = no ] || fail "$1 is not qualified: $3"
    fi
}
# A changed configuration is another configuration; the old one qualifies again.
qualified crun yes "before any change"
edit_config '.backends.crun.config.uid = 65533'
qualified crun no "after its uid changed"
edit_config 'del(.backends.crun.config.uid)'
qualified crun yes "with its qualified configuration back"
# A failed re-run ends the qualification.
qualify 1 crun --probe /usr/bin/true
qualified crun no "after a failed re-run"
