# Shared by .ci/google-clients and .ci/google-suite (sourced, from the
# repository's root): the pinned Python venv, and starting and stopping
# `cellar serve` and Google's emulator on free loopback ports.

venv=target/ci-python
if ! [ -x "$venv/bin/python" ]; then
    python3 -m venv "$venv" || {
        # Debian's python3 ships venv separately.
        apt-get install -y -q python3-venv >/dev/null
        python3 -m venv "$venv"
    }
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r crates/cellardb-server/tests/python/requirements.txt

cargo build --quiet -p cellar
work=$(mktemp -d)
server=""
emulator_pid=""
stop() {
    if [ -n "$server" ]; then
        kill -TERM "$server" 2>/dev/null || true
        wait "$server" || true
        server=""
    fi
}
stop_emulator() {
    if [ -n "$emulator_pid" ]; then
        kill "$emulator_pid" 2>/dev/null || true
        wait "$emulator_pid" 2>/dev/null || true
        emulator_pid=""
    fi
}
trap 'stop; stop_emulator; rm -rf "$work"' EXIT

# Waits for a server's start line in file $1 and prints the address the
# sed expression $2 takes from it.
address_in() {
    local found
    for _ in $(seq 300); do
        found=$(sed -n "$2" "$1")
        [ -n "$found" ] && echo "$found" && return 0
        sleep 0.1
    done
    echo "CI: no server started: $(cat "$1")" >&2
    return 1
}

# Starts `cellar serve` over directory $1 on a free loopback port, its own
# instance projects/p/instances/i; sets $server and $addr.
start() {
    target/debug/cellar serve --dir "$1" --listen 127.0.0.1:0 --instance projects/p/instances/i >"$work/out" &
    server=$!
    addr=$(address_in "$work/out" 's/.*BIGTABLE_EMULATOR_HOST=\(.*\))$/\1/p')
}

# Starts Google's emulator on a free loopback port; sets $emulator.
start_emulator() {
    local bin
    bin=$(gcloud info --format='value(installation.sdk_root)')/platform/bigtable-emulator/cbtemulator
    "$bin" --host=127.0.0.1 --port=0 >"$work/emulator-out" 2>&1 &
    emulator_pid=$!
    emulator=$(address_in "$work/emulator-out" 's/.*running on \(.*\)$/\1/p')
}
