#!/usr/bin/env bash
# A demo feed for the dev stack: users sign up (server API) with an email and a phone number, install the iOS or the
# Android app (notifications allowed, a push token), add to cart, sometimes buy (the `order-confirmed` push of
# config/example), some become VIP (the `vip` segment: the `vip-welcome` email) and some log in with a code (the
# `login-code` SMS, through the campaign API). Watch with
#   .build/debug/herald tail herald.deliveries --follow
# Usage: scripts/demo-feed.sh [USERS] [SECONDS_BETWEEN_USERS]
set -uo pipefail
users="${1:-20}"
pause="${2:-2}"
ingest="http://127.0.0.1:${INGEST_PORT:-8080}"
rest=(-H "Authorization: Bearer rest_demo_0123456789abcdef" -H "Content-Type: application/json")
ios=(-H "X-Api-Key: live_demo_ios_0123456789" -H "Content-Type: application/json")
android=(-H "X-Api-Key: live_demo_android_0123456789" -H "Content-Type: application/json")
names=(Paul Anna Zoe Marc Lea Hugo Ines Tom Emma Noah)
languages=(en fr de en fr)

post() { curl -s -o /dev/null -w '%{http_code}' -X POST "$@"; }

for i in $(seq 1 "$users"); do
    user="user$i"
    name="${names[$((i % ${#names[@]}))]}"
    language="${languages[$((i % ${#languages[@]}))]}"
    plan=$([ $((i % 3)) -eq 0 ] && echo gold || echo free)
    price=$((i * 7 % 120))
    phone="+336$(printf '%08d' $((12340000 + i)))"
    # Even users have the Android app (FCM), odd ones the iOS app (APNs).
    if [ $((i % 2)) -eq 0 ]; then app=("${android[@]}"); else app=("${ios[@]}"); fi
    a=$(post "$ingest/v1/profiles/update" "${rest[@]}" -d @- <<JSON
[{"identifiers":{"custom_id":"$user"},"attributes":{"first_name":"$name","\$language":"$language","\$email_address":"$user@example.com","\$email_marketing":"subscribed","\$phone_number":"$phone","plan":"$plan"}}]
JSON
)
    b=$(post "$ingest/v1/app/events" "${app[@]}" -d @- <<JSON
{"installation_id":"install-$i","custom_id":"$user","events":[{"name":"app_open"},{"name":"add_to_cart","attributes":{"product":"item-$i","price":$price}}]}
JSON
)
    # The app's installation: notifications allowed, and the APNs token (64 hex digits) the device registered.
    token="$(printf '%s' "$user" | sha256sum | cut -c1-64)"  # APNs: 64 hex digits; FCM takes any string
    c=$(post "$ingest/v1/app/installation" "${app[@]}" \
        -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"notification_permission\":\"allowed\",\"timezone\":\"Europe/Paris\"}")
    d=$(post "$ingest/v1/app/push-token" "${app[@]}" \
        -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"token\":\"$token\",\"environment\":\"production\"}")
    echo "demo-feed: $user ($plan, $language) update $a, events $b, installation $c, token $d"
    if [ $((i % 3)) -eq 0 ]; then
        code=$(printf '%04d' $((i * 1379 % 10000)))
        e=$(post "$ingest/v1/campaigns/trigger" "${rest[@]}" \
            -d "{\"campaign_id\":\"login-code\",\"recipients\":[{\"custom_id\":\"$user\",\"trigger_properties\":{\"code\":\"$code\"}}]}")
        echo "demo-feed: $user asked for a login code ($e)"
    fi
    if [ $((i % 2)) -eq 1 ] || [ $((i % 4)) -eq 0 ]; then
        c=$(post "$ingest/v1/app/events" "${app[@]}" -d "{\"installation_id\":\"install-$i\",\"custom_id\":\"$user\",\"events\":[{\"name\":\"purchased\",\"attributes\":{\"price\":$price}}]}")
        echo "demo-feed: $user purchased ($c)"
    fi
    sleep "$pause"
done
