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

services=(ingest orchestrator notifier simulators)
stopping=0
stop() {
    ((stopping)) && return
    stopping=1
    echo "dev-stack: stopping"
    [ -n "${summary_pid:-}" ] && kill "$summary_pid" 2>/dev/null
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

# The provider simulators (APNs over TLS with a self-signed certificate, FCM, SMTP, SMS) and the keys the notifier signs
# with, made once by openssl. Any HERALD_* provider variable set in the environment wins (a real provider).
keys="$run_dir/keys"
mkdir -p "$keys"
[ -s "$keys/apns.p8" ] || openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null |
    openssl pkcs8 -topk8 -nocrypt -out "$keys/apns.p8"
if [ ! -s "$keys/fcm-service-account.json" ]; then
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$keys/fcm.pem" 2>/dev/null
    python3 - "$keys/fcm.pem" "$keys/fcm-service-account.json" "${SIMULATORS_PORT:-9100}" <<'PY'
import json, sys
key = open(sys.argv[1]).read()
json.dump({"type": "service_account", "project_id": "demo-fcm", "private_key_id": "dev-key-1", "private_key": key,
           "client_email": "herald@demo-fcm.iam.gserviceaccount.com",
           "token_uri": f"http://127.0.0.1:{sys.argv[3]}/token"}, open(sys.argv[2], "w"), indent=2)
PY
fi
rm -f "$keys/simulators-ca.pem"
sim_port="${SIMULATORS_PORT:-9100}"
start simulators "$bin/herald-simulators" --http-port "$sim_port" --apns-port "$((sim_port + 1))" \
    --smtp-port "$((sim_port + 25))" --apns-certificate-file "$keys/simulators-ca.pem"
for _ in $(seq 100); do [ -s "$keys/simulators-ca.pem" ] && break; sleep 0.1; done
sim="127.0.0.1:$sim_port"
export HERALD_APNS_KEY_FILE="${HERALD_APNS_KEY_FILE:-$keys/apns.p8}" HERALD_APNS_KEY_ID="${HERALD_APNS_KEY_ID:-DEVKEY0001}" \
    HERALD_APNS_TEAM_ID="${HERALD_APNS_TEAM_ID:-DEVTEAM001}" \
    HERALD_APNS_URL="${HERALD_APNS_URL:-https://127.0.0.1:$((sim_port + 1))}" \
    HERALD_APNS_SANDBOX_URL="${HERALD_APNS_SANDBOX_URL:-https://127.0.0.1:$((sim_port + 1))}" \
    HERALD_PROVIDER_CA_FILE="${HERALD_PROVIDER_CA_FILE:-$keys/simulators-ca.pem}" \
    HERALD_FCM_SERVICE_ACCOUNT_FILE="${HERALD_FCM_SERVICE_ACCOUNT_FILE:-$keys/fcm-service-account.json}" \
    HERALD_FCM_URL="${HERALD_FCM_URL:-http://$sim}" \
    HERALD_SMTP_URL="${HERALD_SMTP_URL:-smtp://127.0.0.1:$((sim_port + 25))}" HERALD_SMTP_STARTTLS="${HERALD_SMTP_STARTTLS:-off}" \
    HERALD_EMAIL_FROM="${HERALD_EMAIL_FROM:-Herald demo <demo@herald.localhost>}" \
    HERALD_UNSUBSCRIBE_SECRET="${HERALD_UNSUBSCRIBE_SECRET:-dev-stack-unsubscribe-secret}" \
    HERALD_SMS_URL="${HERALD_SMS_URL:-http://$sim/2010-04-01/Accounts/ACdev/Messages.json}" \
    HERALD_SMS_ACCOUNT="${HERALD_SMS_ACCOUNT:-ACdev}" HERALD_SMS_TOKEN="${HERALD_SMS_TOKEN:-dev-sms-token}" \
    HERALD_SMS_FROM="${HERALD_SMS_FROM:-+15550000000}" \
    HERALD_PUBLIC_URL="${HERALD_PUBLIC_URL:-http://127.0.0.1:${NOTIFIER_PORT:-8082}}"
HERALD_HTTP_PORT="${NOTIFIER_PORT:-8082}" HERALD_DATA_DIR="$run_dir/data/notifier" \
    HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" start notifier "$bin/herald-notifier"

cat <<INFO
dev-stack: Kafka at $KAFKA_BOOTSTRAP_SERVERS (also in $run_dir/bootstrap)
dev-stack: ingest http://127.0.0.1:${INGEST_PORT:-8080}  orchestrator http://127.0.0.1:${ORCHESTRATOR_PORT:-8081}  notifier http://127.0.0.1:${NOTIFIER_PORT:-8082}
dev-stack: provider simulators http://$sim (what they received: curl $sim/_sim/received/apns, …/fcm, …/smtp, …/sms)
dev-stack: try  kcat -b \$(cat $run_dir/bootstrap) -L   or   curl 127.0.0.1:${INGEST_PORT:-8080}/health   — Ctrl-C stops everything
INFO

# The demo feed (DEMO_FEED=0 turns it off), once the ingest answers.
if [ "${DEMO_FEED:-1}" != 0 ]; then
    for _ in $(seq 100); do curl -sf "127.0.0.1:${INGEST_PORT:-8080}/health" >/dev/null && break; sleep 0.2; done
    bash scripts/demo-feed.sh "${DEMO_USERS:-20}" 2 2>&1 | sed 's/^/[demo-feed]    /' &
fi

# One line every 15 s: what was ingested, decided and delivered (SUMMARY=0 turns it off).
summary() {
    local counts delivered
    counts="$("$bin/herald" topics --bootstrap "$KAFKA_BOOTSTRAP_SERVERS" 2>/dev/null |
        awk '$1 ~ /^herald\./ { n[$1] = $3 } END { printf "ingested %d · sends push %d email %d sms %d · reports %d · dead letters %d",
            n["herald.ingest"], n["herald.sends.push"], n["herald.sends.email"], n["herald.sends.sms"], n["herald.deliveries"], n["herald.dlq"] }')"
    delivered=""
    for provider in apns fcm smtp sms; do
        delivered+=" $provider $(curl -sf "$sim/_sim/received/$provider" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["count"])' 2>/dev/null || echo ?)"
    done
    echo "[summary]      $counts · providers got$delivered"
}
if [ "${SUMMARY:-1}" != 0 ]; then
    (sleep 10; while :; do summary; sleep 15; done) &
    summary_pid=$!
    echo "dev-stack: a summary line every 15 s; look deeper with  $bin/herald tail herald.deliveries --follow  ·  $bin/herald lag"
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
