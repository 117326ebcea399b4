#!/usr/bin/env bash
# Runs Herald on one machine: the embedded Kafka-protocol broker and the three services, in the foreground with
# prefixed logs. Ctrl-C (or SIGTERM) stops them all gracefully. LOG_FORMAT=json shows the raw JSON lines.
set -uo pipefail
cd "$(dirname "$0")/.."

bin="$(swift build --show-bin-path)"
run_dir=".run"
log_format="${LOG_FORMAT:-console}"
mkdir -p "$run_dir"
rm -f "$run_dir"/*.pid "$run_dir/bootstrap"
# The embedded broker keeps its data in memory: the services' state from an earlier run would point at offsets the new
# broker does not have. Start both fresh.
rm -rf "$run_dir/data"

# start NAME COMMAND…: runs COMMAND with its output prefixed by [NAME]; its pid goes to .run/NAME.pid.
# The prefixer ignores INT and TERM, so it outlives the process and shows its last lines.
start() {
    local name="$1"; shift
    { "$@" 2>&1 & echo $! > "$run_dir/$name.pid"; wait $!; } |
        (trap '' INT TERM; while IFS= read -r line; do printf '%-14s %s\n' "[$name]" "$line"; done) &
    for _ in $(seq 50); do [ -s "$run_dir/$name.pid" ] && return; sleep 0.1; done
}

# stop_process NAME: SIGTERM, then wait up to 30 s for it to exit.
stop_process() {
    local pid
    pid="$(cat "$run_dir/$1.pid" 2>/dev/null)" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    echo "dev-stack: $1 did not stop in 30 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

services=(ingest orchestrator notifier)
stopping=0
stop() {
    ((stopping)) && return
    stopping=1
    echo "dev-stack: stopping"
    # Services first (they finish their batch, leave their groups, flush), then the broker.
    for name in "${services[@]}"; do stop_process "$name" & done
    wait_for_services
    stop_process devbroker
    wait  # the prefixers, so that every last line is shown
    rm -f "$run_dir"/*.pid
    exit 0
}
wait_for_services() {
    for name in "${services[@]}"; do
        local pid; pid="$(cat "$run_dir/$name.pid" 2>/dev/null)" || continue
        while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
    done
}
trap stop INT TERM

# The broker runs in its own session: Ctrl-C reaches the services, which leave their groups while the broker is still
# there; the broker is stopped last.
start devbroker setsid "$bin/herald-devbroker" --bootstrap-file "$run_dir/bootstrap" --log-format "$log_format"
for _ in $(seq 100); do [ -s "$run_dir/bootstrap" ] && break; sleep 0.1; done
if [ ! -s "$run_dir/bootstrap" ]; then echo "dev-stack: the broker did not start" >&2; stop; fi

export KAFKA_BOOTSTRAP_SERVERS="$(cat "$run_dir/bootstrap")"
export HERALD_HTTP_HOST=127.0.0.1 HERALD_LOG_FORMAT="$log_format"
HERALD_HTTP_PORT="${INGEST_PORT:-8080}" HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" \
    start ingest "$bin/herald-ingest"
# Segments, campaigns and templates (config-as-code) go to herald.config before the orchestrator reads it.
config_dir="${HERALD_CONFIG_DIR:-config/example}"
if ! "$bin/herald" config apply "$config_dir" --bootstrap "$KAFKA_BOOTSTRAP_SERVERS" | sed 's/^/[config]       /'; then
    echo "dev-stack: $config_dir is not valid (see above)" >&2
    stop
fi
HERALD_HTTP_PORT="${ORCHESTRATOR_PORT:-8081}" HERALD_DATA_DIR="$run_dir/data/orchestrator" \
    start orchestrator "$bin/herald-orchestrator"
HERALD_HTTP_PORT="${NOTIFIER_PORT:-8082}" HERALD_DATA_DIR="$run_dir/data/notifier" \
    HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" start notifier "$bin/herald-notifier"

cat <<INFO
dev-stack: Kafka at $KAFKA_BOOTSTRAP_SERVERS (also in $run_dir/bootstrap)
dev-stack: ingest http://127.0.0.1:${INGEST_PORT:-8080}  orchestrator http://127.0.0.1:${ORCHESTRATOR_PORT:-8081}  notifier http://127.0.0.1:${NOTIFIER_PORT:-8082}
dev-stack: try  kcat -b \$(cat $run_dir/bootstrap) -L   or   curl 127.0.0.1:${INGEST_PORT:-8080}/health   — Ctrl-C stops everything
INFO

# The demo feed (DEMO_FEED=0 turns it off), once the ingest answers.
if [ "${DEMO_FEED:-1}" != 0 ]; then
    for _ in $(seq 100); do curl -sf "127.0.0.1:${INGEST_PORT:-8080}/health" >/dev/null && break; sleep 0.2; done
    bash scripts/demo-feed.sh "${DEMO_USERS:-20}" 2 2>&1 | sed 's/^/[demo-feed]    /' &
fi

# Until Ctrl-C, or until one process exits on its own (then stop the rest).
while :; do
    for name in devbroker "${services[@]}"; do
        if ! kill -0 "$(cat "$run_dir/$name.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
            echo "dev-stack: $name exited; stopping the rest" >&2
            stop
        fi
    done
    sleep 0.5 & wait $!
done
