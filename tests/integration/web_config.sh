#!/usr/bin/env bash
# --web.config.file: TLS with a self-signed certificate and bcrypt basic auth on every path;
# a bad web config stops the exporter with file:line:col and never quotes a hash. Client
# certificates (client_auth_type, client_ca_file), the certificate read again when its files
# change, several --web.listen-address, and --web.systemd-socket under systemd-socket-activate.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
orders_config "$T/qrel.yml"
hash=$(tls_fixture)
cat > "$T/web.yml" <<YML
tls_server_config:
  cert_file: server.crt
  key_file: server.key
basic_auth_users:
  prometheus: '$hash'
YML
start_exporter "$T/qrel.yml" --web.config.file="$T/web.yml"
url="https://$ADDR"
code() { curl -s -o /dev/null -w '%{http_code}' --cacert "$T/server.crt" "$@"; }
expect_eq "HTTPS with the right password" "$(code -u prometheus:s3cret-scrape "$url/metrics")" 200
expect_eq "HTTPS with a wrong password" "$(code -u prometheus:nope "$url/metrics")" 401
expect_eq "HTTPS with no credentials" "$(code "$url/-/healthy")" 401
expect_eq "unknown user" "$(code -u someone:s3cret-scrape "$url/metrics")" 401
expect_eq "/sd with no credentials" "$(code "$url/sd")" 401
expect_eq "/sd with the right password" "$(code -u prometheus:s3cret-scrape "$url/sd")" 200
expect_eq "plain HTTP is refused" "$(curl -s -o /dev/null -w '%{http_code}' "http://$ADDR/metrics")" 000
expect_cmd "WWW-Authenticate asks for Basic" bash -c \
  "curl -s -D - -o /dev/null --cacert '$T/server.crt' '$url/metrics' | grep -qi '^WWW-Authenticate: Basic realm=\"qrel\"'"
curl -fsS --cacert "$T/server.crt" -u prometheus:s3cret-scrape "$url/metrics" -o "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"'
stop_exporter

printf 'basic_auth_users:\n  prometheus: plaintext-password\n' > "$T/bad.yml"
"$EXPORTER" --config.file="$T/qrel.yml" --web.config.file="$T/bad.yml" \
  --web.listen-address=127.0.0.1:0 2> "$T/bad.log" && rc=0 || rc=$?
expect_eq "a bad web config exits" "$rc" 1
expect_cmd "the error names file:line:col" grep -qF "$T/bad.yml:2:15: basic_auth_users: prometheus: want a bcrypt hash" "$T/bad.log"
if grep -q plaintext-password "$T/bad.log"; then not_ok "the bad value is quoted"; else ok "the bad value is not quoted"; fi

# Client certificates: a CA and a client it signed, and a stranger's self-signed client.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=qrel-test-ca \
  -keyout "$T/ca.key" -out "$T/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=prometheus -keyout "$T/client.key" \
  -out "$T/client.csr" 2>/dev/null
openssl x509 -req -in "$T/client.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
  -days 2 -out "$T/client.crt" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=stranger \
  -keyout "$T/stranger.key" -out "$T/stranger.crt" 2>/dev/null
mtls_config() { # mtls_config TYPE: a web config with that client_auth_type and the CA
  printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n' > "$T/web.yml"
  printf '  client_auth_type: %s\n' "$1" >> "$T/web.yml"
  [ "$1" = RequireAnyClientCert ] || printf '  client_ca_file: ca.crt\n' >> "$T/web.yml"
}
as() { # as none|client|stranger: the status of /metrics with that client certificate
  local c=()
  [ "$1" = none ] || c=(--cert "$T/$1.crt" --key "$T/$1.key")
  code "${c[@]}" "https://$ADDR/metrics"
}
for type in RequireAndVerifyClientCert RequireAnyClientCert VerifyClientCertIfGiven; do
  mtls_config "$type"
  start_exporter "$T/qrel.yml" --web.config.file="$T/web.yml"
  case $type in
    RequireAndVerifyClientCert) want=(000 200 000) ;;
    VerifyClientCertIfGiven) want=(200 200 000) ;;
    RequireAnyClientCert) want=(000 200 200) ;;
  esac
  expect_eq "$type: no client certificate" "$(as none)" "${want[0]}"
  expect_eq "$type: a certificate the CA signed" "$(as client)" "${want[1]}"
  expect_eq "$type: a stranger's certificate" "$(as stranger)" "${want[2]}"
  [ "$type" = VerifyClientCertIfGiven ] || stop_exporter
done
curl -fsS --cacert "$T/server.crt" --cert "$T/client.crt" --key "$T/client.key" \
  "https://$ADDR/metrics" -o "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"'

# Rotation with the VerifyClientCertIfGiven exporter still running: a new pair moved into place
# reaches new connections; then a certificate with a key of another pair keeps the pair in use.
served() { # the SHA-256 fingerprint of the certificate a new connection gets
  openssl s_client -connect "$ADDR" </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256
}
fp() { openssl x509 -noout -fingerprint -sha256 -in "$1"; }
serves() { [ "$(served)" = "$1" ]; }
expect_eq "the first certificate is served" "$(served)" "$(fp "$T/server.crt")"
mkdir -p "$T/new"
for n in 2 3; do
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1 $n" \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$T/new/s$n.key" -out "$T/new/s$n.crt" 2>/dev/null
done
cp "$T/new/s2.key" "$T/new/k.tmp" && mv "$T/new/k.tmp" "$T/server.key"
cp "$T/new/s2.crt" "$T/new/c.tmp" && mv "$T/new/c.tmp" "$T/server.crt"
new=$(fp "$T/new/s2.crt")
expect_cmd "a new connection gets the new certificate without a restart" \
  wait_for -i 0.2 30 "the new certificate" serves "$new"
# client_ca_file is watched too: a client of a second CA is refused until the bundle that holds
# both CAs (as during a CA rotation) is moved into place, then served without a restart.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=qrel-test-ca-2 \
  -keyout "$T/ca2.key" -out "$T/ca2.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj /CN=prometheus-2 -keyout "$T/client2.key" \
  -out "$T/client2.csr" 2>/dev/null
openssl x509 -req -in "$T/client2.csr" -CA "$T/ca2.crt" -CAkey "$T/ca2.key" -CAcreateserial \
  -days 2 -out "$T/client2.crt" 2>/dev/null
expect_eq "a client of the second CA is refused before the rotation" "$(as client2)" 000
cat "$T/ca.crt" "$T/ca2.crt" > "$T/new/ca.tmp" && mv "$T/new/ca.tmp" "$T/ca.crt"
served_client2() { [ "$(as client2)" = 200 ]; }
expect_cmd "after the CA bundle changes, a client of the second CA is served without a restart" \
  wait_for -i 0.2 30 "the second CA's client served" served_client2
expect_eq "a client of the first CA is still served" "$(as client)" 200
expect_eq "a stranger is still refused" "$(as stranger)" 000
expect_cmd "the reload is logged" grep -q 'msg="TLS certificate, key and client CAs read again"' "$T/exporter.log"
refused() { # a new connection (which makes the exporter look at the files) and the log line
  served >/dev/null
  [ "$(grep -c 'do not load' "$T/exporter.log" || true)" -gt "$before" ]
}
before=$(grep -c 'do not load' "$T/exporter.log" || true)
cp "$T/new/s3.crt" "$T/new/c.tmp" && mv "$T/new/c.tmp" "$T/server.crt" # s2's key stays
expect_cmd "a certificate that does not match the key is refused and logged" \
  wait_for -i 0.2 30 "the refusal in the log" refused
expect_eq "the pair in use is kept" "$(served)" "$new"
expect_eq "a client still gets an answer" "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$T/new/s2.crt" "https://$ADDR/metrics")" 200
stop_exporter

printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: RequireAndVerify\n' > "$T/bad.yml"
"$EXPORTER" --config.file="$T/qrel.yml" --web.config.file="$T/bad.yml" 2> "$T/bad.log" && rc=0 || rc=$?
expect_eq "a bad client_auth_type exits" "$rc" 1
expect_cmd "its error names the place" grep -qF "$T/bad.yml:4:21: client_auth_type: want NoClientCert" "$T/bad.log"
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n' > "$T/bad.yml"
"$EXPORTER" --config.file="$T/qrel.yml" --web.config.file="$T/bad.yml" 2> "$T/bad.log" && rc=0 || rc=$?
expect_cmd "a verifying policy without client_ca_file is refused" grep -qF "needs client_ca_file" "$T/bad.log"

# Two listen addresses, IPv4 and IPv6 loopback: both answer, /sd advertises the first.
start_exporter "$T/qrel.yml" --web.listen-address='[::1]:0'
IFS=, read -r v4 v6 <<< "$ADDR"
expect_eq "the first listen address answers" "$(curl -s -o /dev/null -w '%{http_code}' "http://$v4/metrics")" 200
expect_eq "the second listen address answers" "$(curl -gs -o /dev/null -w '%{http_code}' "http://$v6/metrics")" 200
expect_cmd "/sd advertises the first" bash -c "curl -gs 'http://$v6/sd' | grep -qF '\"$v4\"'"
stop_exporter

# Socket activation: systemd-socket-activate listens and execs the exporter with the socket.
port=$(free_port)
systemd-socket-activate -l "127.0.0.1:$port" "$EXPORTER" --config.file="$T/qrel.yml" \
  --web.systemd-socket 2> "$T/exporter.log" &
EXPORTER_PID=$!
PIDS+=("$EXPORTER_PID")
wait_for 30 "systemd-socket-activate to listen" port_open "$port"
curl -fsS -m 30 "http://127.0.0.1:$port/metrics" -o "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"'
# The log line comes after the daemon starts serving, so it is waited for, not read once.
expect_cmd "the exporter serves the socket it was passed" wait_for 30 "the listening line" \
  grep -qE "msg=listening address=127.0.0.1:$port " "$T/exporter.log"
stop_exporter
"$EXPORTER" --config.file="$T/qrel.yml" --web.systemd-socket 2> "$T/bad.log" && rc=0 || rc=$?
expect_eq "--web.systemd-socket without a socket exits" "$rc" 1
expect_cmd "and says why" grep -qF "no socket passed" "$T/bad.log"

finish
