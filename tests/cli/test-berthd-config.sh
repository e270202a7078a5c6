# test-berthd-config.sh -- berthd refuses unsafe or malformed configuration
# with one clear line, before opening the journal or the listener.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
. "${BERTH_TOP_SRCDIR:?}/tests/cli/lib.sh"
. "$BERTH_TOP_SRCDIR/tests/cli/berthd-lib.sh"

make_install
CONF=$INST/berthd.json

run 0 "$BERTHD" --help
stdout_has "Usage: berthd --config=FILE"
run 0 "$BERTHD" --version
stdout_has "berthd "
run 2 "$BERTHD"
stderr_has "--config=FILE is required"
run 2 "$BERTHD" --config "$CONF" extra
stderr_has "unexpected argument extra"

run 0 "$BERTHD" --config "$CONF" --check
stdout_has "is usable (1 backends)"
[ ! -e "$INST/state/journal.db" ] || fail "--check opened the journal"

# check_refused WHAT: berthd --check fails (exit 1) and says WHAT.
check_refused() {
    run 1 "$BERTHD" --config "$CONF" --check
    stderr_has "$1"
}

# An unknown member, a duplicate key, a relative path, a bad port.
cp "$CONF" "$TMP/conf.saved"
sed -i '1s|^{$|{ "debug": true,|' "$CONF"
check_refused 'config: unknown member "debug"'
cp "$TMP/conf.saved" "$CONF"
sed -i '1s|^{$|{ "broker_name": "twice",|' "$CONF"
check_refused 'duplicate'
cp "$TMP/conf.saved" "$CONF"
sed -i "s|\"policy\": *\"[^\"]*\"|\"policy\": \"policy.json\"|" "$CONF"
check_refused 'config.policy must be an absolute path'
cp "$TMP/conf.saved" "$CONF"
sed -i 's|"port": *[0-9]*|"port": 70000|' "$CONF"
check_refused 'config.listen.port'
cp "$TMP/conf.saved" "$CONF"
# More active jobs than the journal may retain, also against the default
# max_retained_jobs (10,000), which used to pass.
sed -i '1s|^{$|{ "journal": {"max_active_jobs": 20000},|' "$CONF"
check_refused 'config.journal.max_retained_jobs (10000, the default) must not be below max_active_jobs (20000)'
cp "$TMP/conf.saved" "$CONF"
sed -i '1s|^{$|{ "journal": {"max_active_jobs": 20000, "max_retained_jobs": 20000},|' "$CONF"
run 0 "$BERTHD" --config "$CONF" --check
cp "$TMP/conf.saved" "$CONF"

# The configuration itself must not be writable by others.
chmod 0666 "$CONF"
check_refused "$CONF"
chmod 0600 "$CONF"

# Secrets readable by others, or behind a symlink, are refused.
chmod 0644 "$INST/keys/receipt.key"
check_refused "receipt_key"
chmod 0600 "$INST/keys/receipt.key"
chmod 0640 "$INST/tls/server.key"
check_refused "tls"
chmod 0600 "$INST/tls/server.key"
mv "$INST/keys/audit.key" "$INST/keys/audit.real"
ln -s audit.real "$INST/keys/audit.key"
check_refused "audit_key"
rm "$INST/keys/audit.key"
mv "$INST/keys/audit.real" "$INST/keys/audit.key"

# A malformed policy refuses to start; a missing one starts and denies.
cp "$INST/policy.json" "$TMP/policy.saved"
printf '{"schema_version": 1}' >"$INST/policy.json"
check_refused "the host policy is unusable"
rm "$INST/policy.json"
run 0 "$BERTHD" --config "$CONF" --check
cp "$TMP/policy.saved" "$INST/policy.json"
# Refused by --check exactly when requests would be denied for it: the
# policy must be mode 0600 (0400 used to pass --check, then deny everything).
chmod 0400 "$INST/policy.json"
check_refused "the host policy is unusable"
stderr_has "has mode 0400"
chmod 0600 "$INST/policy.json"
run 0 "$BERTHD" --config "$CONF" --check

# A plugin name the loader could never load is refused when parsing
# (upper case and "_" or "." used to pass until the load).
sed -i 's|"plugin": *"runtime-script"|"plugin": "Runtime_Script"|' "$CONF"
check_refused 'config.backends.script.plugin must be a plugin name such as runtime-oci (1 to 63 of [a-z0-9-]'
cp "$TMP/conf.saved" "$CONF"
sed -i 's|"plugin": *"runtime-script"|"plugin": "runtime.script"|' "$CONF"
check_refused 'plugin must be a plugin name'
cp "$TMP/conf.saved" "$CONF"
# A backend name is one a pool's backend_allowlist can list: berthd used to
# accept upper case and a leading "." or "-", names no pool (and no
# "berthctl dev-init --backend") accepts.
for name in Script .script -script; do
    sed -i 's|"script": *{|"'"$name"'": {|' "$CONF"
    check_refused 'config.backends: a backend name must be 1 to 63 of [a-z0-9._-], starting with a letter or digit'
    cp "$TMP/conf.saved" "$CONF"
done
sed -i 's|"script": *{|"script.2_b-c": {|' "$CONF"
run 0 "$BERTHD" --config "$CONF" --check
cp "$TMP/conf.saved" "$CONF"
# A missing plugin, or one whose pin does not match.
sed -i 's|"plugin": *"runtime-script"|"plugin": "runtime-nothing"|' "$CONF"
check_refused "backend script: plugin runtime-nothing"
cp "$TMP/conf.saved" "$CONF"
sed -i 's|"plugin": *"runtime-script",|"plugin": "runtime-script", "sha256": "sha256:0000000000000000000000000000000000000000000000000000000000000000",|' "$CONF"
check_refused "backend script"
cp "$TMP/conf.saved" "$CONF"

# A state directory others can enter is refused at startup, and by --check.
chmod 0755 "$INST/state"
run 1 "$BERTHD" --config "$CONF"
stderr_has "must be a directory owned by uid"
check_refused "must be a directory owned by uid"
chmod 0700 "$INST/state"
# --check accepts a state directory that does not exist yet (the first start
# makes it) and refuses one that is a file.
mv "$INST/state" "$INST/state.saved"
run 0 "$BERTHD" --config "$CONF" --check
[ ! -e "$INST/state" ] || fail "--check created the state directory"
: >"$INST/state"
check_refused "must be a directory owned by uid"
rm "$INST/state"
mv "$INST/state.saved" "$INST/state"

# A second berthd on the same state directory: the journal lock refuses it.
start_berthd
run 1 "$BERTHD" --config "$CONF"
stderr_has "journal"
stop_berthd
