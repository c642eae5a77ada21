#!/usr/bin/env bash
# A real Prometheus (Debian's 2.42) scrapes qrel_exporter: it negotiates OpenMetrics and gzip,
# honours the scrape-timeout header, and the series arrive with their labels intact.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis RP
redis-cli -p "$RP" XGROUP CREATE orders workers 0 MKSTREAM >/dev/null
for i in 1 2 3; do redis-cli -p "$RP" XADD orders '*' n "$i" >/dev/null; done
redis-cli -p "$RP" XREADGROUP GROUP workers c COUNT 1 STREAMS orders '>' >/dev/null
cat > "$T/qrel.yml" <<YML
sources:
$(redis_source cache "$RP")
    streams: [{name: orders, claim_min_idle: 30s}]
YML
start_exporter "$T/qrel.yml"

mkdir -p "$T/prom"
cat > "$T/prom/prometheus.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: qrel
    static_configs: [{targets: ['$ADDR']}]
YML
start_prometheus PP "$T/prom/prometheus.yml"

query() { curl -fsS "http://127.0.0.1:$PP/api/v1/query" --data-urlencode "query=$1" | jq -r '.data.result[0].value[1] // empty'; }
# The first scrape comes 5-6 s after start (the scrape manager's tick): poll, don't sleep.
up=""
up_is_1() {
  up=$(query 'up{job="qrel"}' 2>/dev/null || true)
  [ "$up" = 1 ]
}
wait_for -i 0.1 40 "Prometheus to scrape the exporter (up 1)" up_is_1 || true
expect_eq "Prometheus sees the exporter up" "$up" 1
expect_eq "ready messages via Prometheus" "$(query 'qrel_queue_messages{source="cache",queue="orders",group="workers",state="ready"}')" 2
expect_eq "in-flight messages via Prometheus" "$(query 'qrel_queue_messages{state="in_flight"}')" 1
expect_eq "collector up via Prometheus" "$(query 'qrel_collector_up{source="cache",kind="redis_stream"}')" 1
expect_eq "a counter keeps its _total name" "$(query 'qrel_collector_errors_total{source="cache",reason="timeout"}')" 0
health=$(curl -fsS "http://127.0.0.1:$PP/api/v1/targets" | jq -r '.data.activeTargets[0].lastError')
expect_eq "scrape error reported by Prometheus" "$health" ""
# The UI paths the demo prints (scripts/lib/prometheus_ui.sh) are the ones this Prometheus serves:
# Debian's 2.42 has no React UI and answers 404 at /alerts, so they are asked, not assumed.
# shellcheck source=../../scripts/lib/prometheus_ui.sh
. "$QREL_SOURCE_DIR/scripts/lib/prometheus_ui.sh"
code() { curl -s -o /dev/null -w '%{http_code}' "$1"; }
ui=$(prometheus_ui_prefix "http://127.0.0.1:$PP") || ui=none
expect_cmd "the Prometheus UI prefix is found (\"$ui\")" test "$ui" != none
expect_eq "its alerts page answers" "$(code "http://127.0.0.1:$PP$ui/alerts")" 200
expect_eq "its graph link answers" "$(code "$(prometheus_graph_url "http://127.0.0.1:$PP" "$ui" 'qrel_collector_up{source="cache"}')")" 200
expect_cmd "a server without the UI (the exporter) is not taken for one" \
  sh -c "! (. '$QREL_SOURCE_DIR/scripts/lib/prometheus_ui.sh'; prometheus_ui_prefix 'http://$ADDR')"
finish
