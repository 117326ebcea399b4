#!/usr/bin/env bash
# A demo feed for the dev stack: users sign up (server API), open the app, add to cart, sometimes buy, and some become
# VIP (which enters the `vip` segment and triggers the `vip-welcome` email of config/example). Watch the sends with
#   kcat -b $(cat .run/bootstrap) -C -t herald.sends.email -t herald.sends.push -f '%t %k %s\n'
# Usage: scripts/demo-feed.sh [USERS] [SECONDS_BETWEEN_USERS]
set -uo pipefail
users="${1:-20}"
pause="${2:-2}"
ingest="http://127.0.0.1:${INGEST_PORT:-8080}"
rest=(-H "Authorization: Bearer rest_demo_0123456789abcdef" -H "Content-Type: application/json")
app=(-H "X-Api-Key: live_demo_ios_0123456789" -H "Content-Type: application/json")
names=(Paul Anna Zoe Marc Lea Hugo Ines Tom Emma Noah)
languages=(en fr de en fr)

post() { curl -s -o /dev/null -w '%{http_code}' -X POST "$@"; }

for i in $(seq 1 "$users"); do
    user="user$i"
    name="${names[$((i % ${#names[@]}))]}"
    language="${languages[$((i % ${#languages[@]}))]}"
    plan=$([ $((i % 3)) -eq 0 ] && echo gold || echo free)
    price=$((i * 7 % 120))
    a=$(post "$ingest/v1/profiles/update" "${rest[@]}" -d @- <<JSON
[{"identifiers":{"custom_id":"$user"},"attributes":{"first_name":"$name","\$language":"$language","\$email_address":"$user@example.com","\$email_marketing":"subscribed","plan":"$plan"}}]
JSON
)
    b=$(post "$ingest/v1/app/events" "${app[@]}" -d @- <<JSON
{"installation_id":"install-$i","custom_id":"$user","events":[{"name":"app_open"},{"name":"add_to_cart","attributes":{"product":"item-$i","price":$price}}]}
JSON
)
    # The app's installation: notifications allowed, and the APNs token (64 hex digits) the device registered.
    token="$(printf '%s' "$user" | sha256sum | cut -c1-64)"
    c=$(post "$ingest/v1/app/installation" "${app[@]}" \
        -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"notification_permission\":\"allowed\",\"timezone\":\"Europe/Paris\"}")
    d=$(post "$ingest/v1/app/push-token" "${app[@]}" \
        -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"token\":\"$token\",\"environment\":\"production\"}")
    echo "demo-feed: $user ($plan, $language) update $a, events $b, installation $c, token $d"
    if [ $((i % 4)) -eq 0 ]; then
        c=$(post "$ingest/v1/app/events" "${app[@]}" -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"events\":[{\"name\":\"purchased\",\"attributes\":{\"price\":$price}}]}")
        echo "demo-feed: $user purchased ($c)"
    fi
    sleep "$pause"
done
