#!/bin/sh
# The TLS material of deploy/compose.cluster.yaml: a certificate authority, and for each broker a key and a
# certificate for its name (kafka-1, kafka-2, kafka-3, and localhost), bundled as the PKCS12 keystore Kafka reads.
#   KAFKA_KEYSTORE_PASSWORD=... deploy/kafka/make-certs.sh DIR
# DIR then holds ca.crt (what Herald's services trust: KAFKA_SSL_CA_LOCATION), ca.key (keep it away from the
# brokers), and kafka-N.p12 (each broker's keystore, protected by KAFKA_KEYSTORE_PASSWORD). Certificates last
# 825 days; run the script again (same CA) to renew the brokers'. Checked by make test (KafkaClusterTests): each
# certificate verifies against the CA for its broker's name, and a TLS server made from each keystore is accepted by
# a client that trusts only ca.crt.
set -eu
dir=${1:?usage: KAFKA_KEYSTORE_PASSWORD=... make-certs.sh DIR}
: "${KAFKA_KEYSTORE_PASSWORD:?set KAFKA_KEYSTORE_PASSWORD (6 characters or more): it protects the brokers' keystores}"
if [ "${#KAFKA_KEYSTORE_PASSWORD}" -lt 6 ]; then
    echo "make-certs.sh: KAFKA_KEYSTORE_PASSWORD is 6 characters or more (Java's keystores refuse shorter)" >&2
    exit 2
fi
brokers=${KAFKA_BROKERS:-"kafka-1 kafka-2 kafka-3"}
mkdir -p "$dir"
umask 077
if [ ! -f "$dir/ca.key" ]; then
    openssl req -x509 -new -nodes -newkey rsa:3072 -sha256 -days 3650 -subj "/CN=Herald Kafka CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
fi
for broker in $brokers; do
    openssl req -new -nodes -newkey rsa:3072 -sha256 -subj "/CN=$broker" -keyout "$dir/$broker.key" -out "$dir/$broker.csr" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:%s,DNS:localhost\n' \
        "$broker" > "$dir/$broker.ext"
    openssl x509 -req -sha256 -days 825 -in "$dir/$broker.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
        -extfile "$dir/$broker.ext" -out "$dir/$broker.crt" 2>/dev/null
    openssl pkcs12 -export -name "$broker" -inkey "$dir/$broker.key" -in "$dir/$broker.crt" -certfile "$dir/ca.crt" \
        -passout env:KAFKA_KEYSTORE_PASSWORD -out "$dir/$broker.p12"
    rm -f "$dir/$broker.csr" "$dir/$broker.ext" "$dir/$broker.key"
done
# The brokers run as another user than the one running this script: they read their keystores, not the CA's key.
chmod 644 "$dir/ca.crt" "$dir"/*.p12
echo "make-certs.sh: $dir/ca.crt and a keystore per broker ($brokers)"
