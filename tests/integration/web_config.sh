#!/usr/bin/env bash
# --web.config.file: TLS with a self-signed certificate and bcrypt basic auth on every path;
# a bad web config stops the exporter with file:line:col and never quotes a hash.
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

finish
