#!/usr/bin/env bash
# The rabbitmq collector against HTTP peers that misbehave (tests/lib/http_stub.py): HTTP 500,
# 401, 403, a peer that hangs, closes, sends garbage or a truncated body, malformed JSON, a value
# of the wrong type, a body over max_response_bytes, and a plugin endpoint that answers HTML. Each
# source fails alone with its reason (counter and log line) within its timeout, while a healthy
# source in the same exporter (a stub serving replies recorded from RabbitMQ 3.10.8) still
# reports, and the password never shows. Also: the slow part failing on its very first refresh
# fails the scrape even though the plugin answered (nothing cached to serve yet).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

secret="rabbit-pass-$$-7731"
printf '%s\n' "$secret" > "$T/pass"

# Recorded from RabbitMQ 3.10.8 (the integration test's topology, trimmed).
cat > "$T/queues.json" <<'JSON'
[{"arguments":{"x-dead-letter-exchange":"orders.dlx","x-dead-letter-routing-key":"orders"},"effective_policy_definition":{},"head_message_timestamp":null,"message_stats":{"redeliver":3},"messages":2,"messages_ready":0,"messages_unacknowledged":2,"name":"orders","vhost":"/"},
 {"arguments":{},"effective_policy_definition":[],"head_message_timestamp":null,"message_stats":[],"messages":2,"messages_ready":2,"messages_unacknowledged":0,"name":"orders.dlq","vhost":"/"}]
JSON
cat > "$T/exchange.json" <<'JSON'
{"name":"orders.dlx","type":"direct"}
JSON
cat > "$T/bindings.json" <<'JSON'
[{"source":"orders.dlx","vhost":"/","destination":"orders.dlq","destination_type":"queue","routing_key":"orders","arguments":{},"properties_key":"orders"}]
JSON
cat > "$T/coarse.txt" <<'TXT'
# TYPE rabbitmq_detailed_queue_messages_ready gauge
rabbitmq_detailed_queue_messages_ready{vhost="/",queue="orders"} 0
rabbitmq_detailed_queue_messages_ready{vhost="/",queue="orders.dlq"} 2
# TYPE rabbitmq_detailed_queue_messages_unacked gauge
rabbitmq_detailed_queue_messages_unacked{vhost="/",queue="orders"} 2
rabbitmq_detailed_queue_messages_unacked{vhost="/",queue="orders.dlq"} 0
TXT
cat > "$T/routes.json" <<JSON
{"GET /api/queues": {"status": 200, "body_file": "$T/queues.json"},
 "GET /api/exchanges/%2F/orders.dlx": {"status": 200, "body_file": "$T/exchange.json"},
 "GET /api/exchanges/%2F/orders.dlx/bindings/source": {"status": 200, "body_file": "$T/bindings.json"},
 "GET /metrics/detailed": {"status": 200, "body_file": "$T/coarse.txt", "content_type": "text/plain; version=0.0.4"}}
JSON
cat > "$T/routes-nometa.json" <<JSON
{"GET /metrics/detailed": {"status": 200, "body_file": "$T/coarse.txt", "content_type": "text/plain; version=0.0.4"},
 "GET /api/queues": {"status": 500, "body": "{\"error\":\"internal\"}"}}
JSON
start_http_stub GOOD routes --routes "$T/routes.json" --log "$T/good.log"
start_http_stub NOMETA routes --routes "$T/routes-nometa.json"
start_http_stub H500 ok --status 500 --body-text '{"error":"internal"}'
start_http_stub H401 ok --status 401 --body-text '{"error":"not_authorised"}'
start_http_stub H403 ok --status 403 --body-text '{"error":"not_authorised"}'
start_http_stub HANG hang
start_http_stub CLOSE close
start_http_stub GARBAGE garbage
start_http_stub TRUNC truncated
start_http_stub MALFORMED ok --body-text '[{"name":"orders","vhost":"/","messages":'
start_http_stub WRONG ok --body-text '[{"name":"orders","vhost":"/","messages":"two"}]'
start_http_stub HUGE huge --size 2000000
start_http_stub HTML ok --status 200 --content-type text/html --body-text '<html><body>plugin page</body></html>'
DOWN=$(free_port)

source_yaml() { # source_yaml NAME URL [PROMETHEUS_URL]
  printf '  - name: %s\n    kind: rabbitmq\n    url: http://127.0.0.1:%s\n    username: qrel\n    password_file: %s\n    timeout: 2s\n    max_response_bytes: 1000000\n' \
    "$1" "$2" "$T/pass"
  [ -n "${3:-}" ] && printf '    prometheus_url: http://127.0.0.1:%s\n' "$3"
  return 0
}
{
  echo "sources:"
  source_yaml healthy "$GOOD"
  source_yaml healthy_plugin "$GOOD" "$GOOD"
  source_yaml nometa "$NOMETA" "$NOMETA"
  for f in down:$DOWN h500:$H500 h401:$H401 h403:$H403 hang:$HANG close:$CLOSE garbage:$GARBAGE \
    truncated:$TRUNC malformed:$MALFORMED wrongtype:$WRONG huge:$HUGE; do
    source_yaml "${f%%:*}" "${f#*:}"
  done
  source_yaml plugin_html "$GOOD" "$HTML"
  source_yaml plugin_down "$GOOD" "$DOWN"
} > "$T/faults.yml"

start_exporter "$T/faults.yml"
expect_scrape_ms "scrape time with a hanging peer (timeout 2 s), ms" "$T/f.txt" 1900 5000
for s in healthy healthy_plugin; do
  expect_metric "$T/f.txt" 1 qrel_collector_up "source=\"$s\""
  expect_metric "$T/f.txt" 2 qrel_queue_messages "source=\"$s\"" 'queue="orders",vhost="/"' 'state="in_flight"'
  expect_metric "$T/f.txt" 3 qrel_redeliveries_total "source=\"$s\"" 'queue="orders",vhost="/"'
  expect_metric "$T/f.txt" 2 qrel_dead_letter_messages "source=\"$s\"" 'queue="orders",vhost="/"' 'dead_letter_queue="orders.dlq"'
done
auth=$("$QREL_PYTHON" -c 'import json,sys
print(sorted({json.loads(l)["headers"].get("Authorization", "") for l in open(sys.argv[1]) if json.loads(l)["path"].startswith("/api/")}))' "$T/good.log")
expect_eq "basic auth sent with every management API request" "$auth" "['Basic $(printf 'qrel:%s' "$secret" | base64)']"
expect_eq "no credentials sent to the plugin" \
  "$("$QREL_PYTHON" -c 'import json,sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["path"] == "/metrics/detailed" and "Authorization" in json.loads(l)["headers"]))' "$T/good.log")" 0
expect_eq "requests are all GET" "$("$QREL_PYTHON" -c 'import json,sys
print(sorted({json.loads(l)["method"] for l in open(sys.argv[1])}))' "$T/good.log")" "['GET']"

expect_http_faults "$T/f.txt" rabbitmq nometa:query close:connect garbage:protocol \
  plugin_html:protocol plugin_down:connect
expect_cmd "the type error names the JSON path" \
  grep -q 'GET /api/queues: \$\[0\].messages: want a number, got a string' "$T/exporter.log"
expect_cmd "the plugin's HTML is refused naming the line" \
  grep -q 'GET /metrics/detailed: line 1: want a metric name, a comment or an empty line' "$T/exporter.log"
expect_cmd "the cap is named" grep -q 'larger than 1000000 bytes' "$T/exporter.log"
stop_exporter
if grep -rqF "$secret" "$T"/*.log "$T/f.txt"; then not_ok "the password appears in a log or the metrics"; else ok "the password appears nowhere"; fi

finish
