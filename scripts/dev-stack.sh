#!/usr/bin/env bash
# Runs Herald on one machine: the embedded Kafka-protocol broker, the three services and the provider simulators, and
# feeds them the demo scenario. The screen shows `herald status` (what was ingested, decided, delivered), redrawn every
# few seconds; each process logs to .run/logs/NAME.log. LOGS=1 shows the logs here too, prefixed with the name
# (LOG_FORMAT=json: the raw JSON lines). Ctrl-C (or SIGTERM) stops everything gracefully.
set -uo pipefail
cd "$(dirname "$0")/.."

bin="$(swift build -c "${HERALD_BUILD:-debug}" --show-bin-path)"
bin="${bin#"$PWD"/}"  # relative: shorter in the hints
run_dir=".run"
log_format="${LOG_FORMAT:-console}"
show_logs="${LOGS:-0}"
mkdir -p "$run_dir/logs"
rm -f "$run_dir"/*.pid "$run_dir/bootstrap" "$run_dir"/logs/*.log
# The embedded broker keeps its data in memory: the services' state from an earlier run would point at offsets the new
# broker does not have. Start both fresh.
rm -rf "$run_dir/data"

# say LINE: a line of the dev stack's own, on the screen and in .run/logs/dev-stack.log.
say() { echo "dev-stack: $*" | tee -a "$run_dir/logs/dev-stack.log"; }

# start NAME COMMAND…: runs COMMAND with its output in .run/logs/NAME.log (with LOGS=1 also here, prefixed by [NAME]); its
# pid goes to .run/NAME.pid. The prefixer ignores INT and TERM, so it outlives the process and shows its last lines.
start() {
    local name="$1"; shift
    if [ "$show_logs" = 1 ]; then
        { "$@" 2>&1 & echo $! > "$run_dir/$name.pid"; wait $!; } |
            (trap '' INT TERM; tee -a "$run_dir/logs/$name.log" |
                while IFS= read -r line; do printf '%-14s %s\n' "[$name]" "$line"; done) &
    else
        "$@" > "$run_dir/logs/$name.log" 2>&1 &
        echo $! > "$run_dir/$name.pid"
    fi
    for _ in $(seq 50); do [ -s "$run_dir/$name.pid" ] && return; sleep 0.1; done
}

# stop_process NAME: SIGTERM, then wait up to 30 s for it to exit.
stop_process() {
    local pid
    pid="$(cat "$run_dir/$1.pid" 2>/dev/null)" || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
    say "$1 did not stop in 30 s; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

services=(ingest orchestrator notifier simulators)
stopping=0
stop() {
    ((stopping)) && return
    stopping=1
    [ -n "${status_pid:-}" ] && kill "$status_pid" 2>/dev/null
    [ -n "${feed_pid:-}" ] && kill "$feed_pid" 2>/dev/null
    echo
    say "stopping"
    # Services first (they finish their batch, leave their groups, flush), then the broker.
    for name in "${services[@]}"; do stop_process "$name" & done
    wait_for_services
    stop_process devbroker
    wait  # the prefixers, so that every last line is shown
    rm -f "$run_dir"/*.pid
    say "stopped; the logs stay in $run_dir/logs"
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
if [ ! -s "$run_dir/bootstrap" ]; then say "the broker did not start (see $run_dir/logs/devbroker.log)" >&2; stop; fi

export KAFKA_BOOTSTRAP_SERVERS="$(cat "$run_dir/bootstrap")"
# An idle fetch on the embedded broker is held for fetch.wait.max.ms (500 ms by default) even when records arrive
# meanwhile, and a new user's writes cross the broker two or three times (identity hops): 50 ms halves the demo's
# latency (measured: p50 3.4 s → 1.8 s for a burst of 50 new users). A real cluster answers as soon as records come.
export KAFKA_FETCH_WAIT_MAX_MS="${KAFKA_FETCH_WAIT_MAX_MS:-50}"
export HERALD_HTTP_HOST=127.0.0.1 HERALD_LOG_FORMAT="$log_format"
# The sample apps file's keys are published (config/apps.sample.json): the services start with them only when told
# that this is a trial on loopback.
allow_sample_keys="${HERALD_ALLOW_SAMPLE_KEYS:-true}"
# The demo feed writes every user's app requests, and syncs their in-app messages and cards, from this one address: no
# per-address rate limit here (it is 50 requests a second by default, for the keys that ship in apps). Each user's
# installation keeps its own limit.
HERALD_HTTP_PORT="${INGEST_PORT:-8080}" HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" \
    HERALD_ALLOW_SAMPLE_KEYS="$allow_sample_keys" \
    HERALD_RATE_LIMIT_PER_ADDRESS="${HERALD_RATE_LIMIT_PER_ADDRESS:-0}" start ingest "$bin/herald-ingest"
# Segments, campaigns and templates (config-as-code) go to herald.config before the orchestrator reads it.
config_dir="${HERALD_CONFIG_DIR:-config/example}"
if ! "$bin/herald" config apply "$config_dir" --bootstrap "$KAFKA_BOOTSTRAP_SERVERS" | sed 's/^/[config]       /'; then
    say "$config_dir is not valid (see above)" >&2
    stop
fi
HERALD_HTTP_PORT="${ORCHESTRATOR_PORT:-8081}" HERALD_DATA_DIR="$run_dir/data/orchestrator" \
    HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" HERALD_ALLOW_SAMPLE_KEYS="$allow_sample_keys" \
    HERALD_RATE_LIMIT_PER_ADDRESS="${HERALD_RATE_LIMIT_PER_ADDRESS:-0}" start orchestrator "$bin/herald-orchestrator"

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
# The webhook receiver (/hooks/<endpoint>, config/example/webhooks.yaml) checks signatures with the apps file's
# first webhook secret (none: it checks nothing).
webhook_secret="$(python3 -c 'import json,sys
for p in json.load(open(sys.argv[1])).get("projects", []):
    for w in p.get("webhooks", []): print(w["secrets"][0]); sys.exit()' "${HERALD_APPS_FILE:-config/apps.sample.json}" 2>/dev/null || true)"
start simulators "$bin/herald-simulators" --http-port "$sim_port" --apns-port "$((sim_port + 1))" \
    --smtp-port "$((sim_port + 25))" --apns-certificate-file "$keys/simulators-ca.pem" \
    ${webhook_secret:+--webhook-secret "$webhook_secret"}
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
    HERALD_PUBLIC_URL="${HERALD_PUBLIC_URL:-http://127.0.0.1:${NOTIFIER_PORT:-8082}}" \
    HERALD_ALLOW_PLAIN_HTTP="${HERALD_ALLOW_PLAIN_HTTP:-true}"
HERALD_HTTP_PORT="${NOTIFIER_PORT:-8082}" HERALD_DATA_DIR="$run_dir/data/notifier" \
    HERALD_APPS_FILE="${HERALD_APPS_FILE:-config/apps.sample.json}" HERALD_ALLOW_SAMPLE_KEYS="$allow_sample_keys" \
    start notifier "$bin/herald-notifier"

ingest_url="http://127.0.0.1:${INGEST_PORT:-8080}"
orchestrator_url="http://127.0.0.1:${ORCHESTRATOR_PORT:-8081}"
notifier_url="http://127.0.0.1:${NOTIFIER_PORT:-8082}"
say "Kafka at $KAFKA_BOOTSTRAP_SERVERS (also in $run_dir/bootstrap)"
say "ingest $ingest_url  orchestrator $orchestrator_url  notifier $notifier_url  provider simulators http://$sim"
[ "$show_logs" = 1 ] || say "logs in $run_dir/logs/ (LOGS=1 shows them here)"

# The demo feed (DEMO_FEED=0 turns it off), once the ingest answers: DEMO_USERS users of scripts/produce's scenario at
# DEMO_RATE requests/s.
if [ "${DEMO_FEED:-1}" != 0 ]; then
    for _ in $(seq 100); do curl -sf "$ingest_url/health" >/dev/null && break; sleep 0.2; done
    # …and once the orchestrator and the notifier have their partitions: writes sent before wait for the group to form,
    # which would show as seconds of latency.
    for _ in $(seq 150); do
        [ "$(grep -ls "partitions assigned" "$run_dir/logs/orchestrator.log" "$run_dir/logs/notifier.log" | wc -l)" = 2 ] && break
        sleep 0.2
    done
    say "demo feed: ${DEMO_USERS:-2000} users at ${DEMO_RATE:-150} requests/s (log: $run_dir/logs/demo-feed.log)"
    # Then, until stopped, the recipients open and click some of what the simulators received (--engage).
    python3 scripts/produce --generate "${DEMO_USERS:-2000}" --rate "${DEMO_RATE:-150}" --http "$ingest_url" \
        --orchestrator "$orchestrator_url" --engage "http://$sim" > "$run_dir/logs/demo-feed.log" 2>&1 &
    feed_pid=$!
fi

# The status board (SUMMARY=0 turns it off): redrawn in place on a terminal without LOGS=1, else printed every 15 s.
cli="$bin/herald"
[ "$(realpath .build/debug 2>/dev/null)" = "$(realpath "$bin")" ] && cli=.build/debug/herald
status_args=(status --ingest "$ingest_url" --orchestrator "$orchestrator_url" --notifier "$notifier_url"
    --hint "Look deeper:  $cli tail herald.deliveries --follow   $cli lag   $cli topics"
    --hint "              tail -f $run_dir/logs/notifier.log   curl -s $sim/_sim/received/apns   cat $run_dir/logs/demo-feed.log"
    --hint "The experiment: $cli campaign report demo welcome-offer --orchestrator $orchestrator_url"
    --hint "Ctrl-C stops everything.")
if [ "${SUMMARY:-1}" != 0 ]; then
    if [ -t 1 ] && [ "$show_logs" != 1 ]; then
        (sleep 3; exec "$bin/herald" "${status_args[@]}" --watch "${STATUS_INTERVAL:-5}" 2>/dev/null) &
    else
        (sleep 10; while :; do "$bin/herald" "${status_args[@]}" | sed 's/^/[status]       /'; sleep 15; done) &
    fi
    status_pid=$!
fi

# Until Ctrl-C, or until one process exits on its own (then stop the rest, showing the end of its log).
while :; do
    for name in devbroker "${services[@]}"; do
        if ! kill -0 "$(cat "$run_dir/$name.pid" 2>/dev/null || echo 0)" 2>/dev/null; then
            [ -n "${status_pid:-}" ] && kill "$status_pid" 2>/dev/null && status_pid=""
            say "$name exited; stopping the rest" >&2
            [ -f "$run_dir/logs/$name.log" ] && tail -n 20 "$run_dir/logs/$name.log" >&2
            stop
        fi
    done
    sleep 0.5 & wait $!
done
