#!/usr/bin/env bash
# The shared HTTP client's TLS options (collectors/common/http.c), through a real kind (nats) and an
# https peer whose certificates this test makes: the server is verified against tls_config.ca_file
# and refused without it, insecure_skip_verify is honoured only when asked (and logged), a client
# certificate is sent when the server requires one, and a plain-http URL to the https port fails.
# Every failure is up 0 with its reason while the other sources still report.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

# ---- a CA, a server certificate for 127.0.0.1, a client certificate ----
tls() { openssl "$@" >/dev/null 2>&1; }
tls req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=qrel test CA" \
  -keyout "$T/ca.key" -out "$T/ca.pem"
tls req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$T/server.key" -out "$T/server.csr"
printf 'subjectAltName=IP:127.0.0.1,DNS:broker.qrel.test\n' > "$T/san.ext"
tls x509 -req -in "$T/server.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
  -extfile "$T/san.ext" -out "$T/server.pem"
tls req -newkey rsa:2048 -nodes -subj "/CN=qrel" -keyout "$T/client.key" -out "$T/client.csr"
tls x509 -req -in "$T/client.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
  -out "$T/client.pem"
# the client key again, encrypted with a password (PKCS#8, AES-256) given by key_password_file
printf 'client-key-pw\n' > "$T/key.pw"
printf 'not-the-pw\n' > "$T/wrong.pw"
tls pkcs8 -topk8 -v2 aes-256-cbc -in "$T/client.key" -out "$T/client-enc.key" -passout "file:$T/key.pw"
expect_cmd "test certificates made" test -s "$T/client.pem"
expect_cmd "the encrypted client key is encrypted" grep -q 'ENCRYPTED PRIVATE KEY' "$T/client-enc.key"

# The monitoring endpoint's answer: a /jsz document recorded from nats-server 2.9.10.
printf '{"GET /jsz": {"body_file": "%s"}}\n' "$QREL_SOURCE_DIR/tests/fixtures/nats/jsz-2.9.10.json" \
  > "$T/routes.json"
start_http_stub HTTPS routes --routes "$T/routes.json" --tls-cert "$T/server.pem" --tls-key "$T/server.key"
start_http_stub MTLS routes --routes "$T/routes.json" --tls-cert "$T/server.pem" --tls-key "$T/server.key" \
  --tls-client-ca "$T/ca.pem"

cat > "$T/qrel.yml" <<YML
sources:
$(nats_source verified "https://127.0.0.1:$HTTPS")
    tls_config: {ca_file: $T/ca.pem}
$(nats_source unverified "https://127.0.0.1:$HTTPS")
    timeout: 3s
$(nats_source insecure "https://127.0.0.1:$HTTPS")
    tls_config: {insecure_skip_verify: true}
$(nats_source plain "http://127.0.0.1:$HTTPS")
    timeout: 3s
$(nats_source mtls-nocert "https://127.0.0.1:$MTLS")
    timeout: 3s
    tls_config: {ca_file: $T/ca.pem}
$(nats_source mtls "https://127.0.0.1:$MTLS")
    tls_config: {ca_file: $T/ca.pem, cert_file: $T/client.pem, key_file: $T/client.key}
$(nats_source mtls-encrypted "https://127.0.0.1:$MTLS")
    tls_config: {ca_file: $T/ca.pem, cert_file: $T/client.pem, key_file: $T/client-enc.key, key_password_file: $T/key.pw}
$(nats_source named "https://127.0.0.1:$HTTPS")
    tls_config: {ca_file: $T/ca.pem, server_name: broker.qrel.test}
$(nats_source misnamed "https://127.0.0.1:$HTTPS")
    timeout: 3s
    tls_config: {ca_file: $T/ca.pem, server_name: other.qrel.test}
YML
start_exporter "$T/qrel.yml"
scrape "$T/m.txt"

expect_metric "$T/m.txt" 1 qrel_collector_up 'source="verified"'
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="insecure"'
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="mtls"'
# an encrypted client key, opened with key_password_file
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="mtls-encrypted"'
# server_name: the certificate is verified against that name, not the URL's host
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="named"'
expect_metric "$T/m.txt" 0 qrel_collector_up 'source="misnamed"'
expect_metric "$T/m.txt" 1 qrel_collector_errors_total 'source="misnamed"' 'reason="connect"'
expect_cmd "the key password is in no log line" bash -c "! grep -q 'client-key-pw' '$T/exporter.log'"
# the recorded document's consumer, read over TLS
expect_cmd "series of the recorded stream read over https" grep -q "qrel_queue_messages{source=\"verified\",kind=\"nats\"" "$T/m.txt"
# plain http to the https port: this peer resets the connection (a web server may answer 400)
for f in unverified:connect mtls-nocert:connect plain:connect; do
  expect_metric "$T/m.txt" 0 qrel_collector_up "source=\"${f%%:*}\""
  expect_metric "$T/m.txt" 1 qrel_collector_errors_total "source=\"${f%%:*}\"" "reason=\"${f#*:}\""
done
expect_cmd "an unknown CA is named as the cause" \
  grep -qE 'source=unverified .*(certificate|SSL)' "$T/exporter.log"
expect_cmd "insecure_skip_verify is logged as a warning" \
  grep -q 'level=warn msg="TLS certificate verification is off (insecure_skip_verify)" source=insecure' "$T/exporter.log"
expect_cmd "no warning for the verified source" bash -c "! grep -q 'verification is off.*source=verified' '$T/exporter.log'"

# ---- config errors: file:line:col and what was expected ----
cat > "$T/bad.yml" <<YML
sources:
$(nats_source half "https://127.0.0.1:$HTTPS")
    tls_config: {cert_file: $T/client.pem}
YML
expect_cmd "cert_file without key_file is refused" \
  bash -c "'$EXPORTER' --config.file='$T/bad.yml' --config.check 2>&1 | grep -q 'bad.yml:5:.*tls_config: want both cert_file and key_file, or neither'"
# --config.check loads the files as a scrape would: a missing CA and a wrong key password fail it
cat > "$T/bad.yml" <<YML
sources:
$(nats_source noca "https://127.0.0.1:$HTTPS")
    tls_config:
      ca_file: $T/missing-ca.pem
YML
expect_cmd "a missing ca_file fails --config.check" \
  bash -c "'$EXPORTER' --config.file='$T/bad.yml' --config.check 2>&1 | grep -q 'bad.yml:6:.*tls_config: ca_file: cannot read'"
cat > "$T/bad.yml" <<YML
sources:
$(nats_source wrongpw "https://127.0.0.1:$MTLS")
    tls_config:
      cert_file: $T/client.pem
      key_file: $T/client-enc.key
      key_password_file: $T/wrong.pw
YML
rc=0; "$EXPORTER" --config.file="$T/bad.yml" --config.check > "$T/wrongpw.out" 2>&1 || rc=$?
expect_cmd "a wrong key password exits non-zero" test "$rc" -ne 0
expect_cmd "a wrong key password fails --config.check at key_file" \
  grep -q 'bad.yml:7:.*tls_config: key_file: cannot load the certificate and key' "$T/wrongpw.out"
expect_cmd "the wrong password is not in the message" bash -c "! grep -q 'not-the-pw' '$T/wrongpw.out'"
finish
