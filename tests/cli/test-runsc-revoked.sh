# test-runsc-revoked.sh -- a revocation sweep on real runsc (gVisor) through
# the real berthd and runtime-oci: a principal whose fingerprint is removed
# from the host policy while its job sleeps in a real sandbox has the job
# cancelled within two reconcile intervals; the sandbox is stopped and the
# signed result says "cancelled", reason "revoked" (broker.h, "Sweeps").
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/oci-lib.sh" # skips (77) unless root

INTERVAL_NS=1000000000
oci_install runsc
edit_config ".reconcile_interval_ns = $INTERVAL_NS"
start_berthd

bb_job nap 'sleep 300'
submit nap
NAP=$RUN_ID
wait_state dev nap running

FP=$(der_fingerprint "$INST/tls/client-dev.pem")
cp "$INST/policy.json" "$TMP/policy.saved"
t0=$(date +%s%N)
set_policy "s/$FP/2222222222222222222222222222222222222222222222222222222222222222/"
until grep -q "job nap run $NAP of dev: reaping -> cancelled" "$TMP/berthd.log"; do
    [ $(($(date +%s%N) - t0)) -le $((2 * INTERVAL_NS)) ] ||
        fail "the revoked job was not cancelled within two reconcile intervals: $(cat "$TMP/berthd.log")"
    sleep 0.05
done
grep -q "job nap run $NAP of dev no longer qualifies (revoked)" "$TMP/berthd.log" || fail "no reason logged"
# Nothing of the sandbox runs on (and its shim is gone soon after).
sandbox_gone "$NAP"

cp "$TMP/policy.saved" "$INST/policy.json.new" && mv "$INST/policy.json.new" "$INST/policy.json"
api dev GET /v1/jobs/nap/result
expect_status 200
cp "$TMP/body" "$TMP/nap.result"
run 0 "$BERTHCTL" result verify "$TMP/nap.result" --pubkey "$INST/keys/receipt.pub" --job "$TMP/nap.job.json" \
    --receipt "$TMP/nap.receipt.json"
stdout_has "status cancelled, "
stdout_has ", reason revoked, "
stop_berthd
