#!/usr/bin/env bash
# alerts/examples/alertmanager.yml, as Alertmanager itself reads it (Debian's
# prometheus-alertmanager): amtool check-config accepts it; amtool config routes test sends each
# severity to its receiver; and a real Alertmanager on loopback, given qrel's alerts through its
# API, inhibits the milder of each layered pair only when the inhibition's `equal` labels match:
# a margin below 1 hides the same queue's "below 2", not another queue's; a dead exporter hides
# its own collectors' alerts, not another exporter's.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

example=$QREL_SOURCE_DIR/alerts/examples/alertmanager.yml
for tool in amtool prometheus-alertmanager; do
  command -v "$tool" >/dev/null || { echo "$tool missing (Debian package prometheus-alertmanager; scripts/deps.sh)" >&2; exit 1; }
done

if amtool check-config "$example" >"$T/check.out" 2>&1; then
  ok "amtool check-config accepts alerts/examples/alertmanager.yml"
else
  not_ok "amtool check-config: $(cat "$T/check.out")"
fi
# The check really reads the file: an inhibition naming an unknown key is refused.
sed 's/^inhibit_rules:/inhibit_rules:\n  - no_such_key: 1/' "$example" >"$T/broken.yml"
expect_exit "amtool check-config refuses a broken copy" 1 "$T/broken.out" amtool check-config "$T/broken.yml"

# route SEVERITY: the receiver a qrel alert of that severity goes to.
route() {
  amtool config routes test --config.file="$example" alertname=QrelDeadLetterQueueNotEmpty \
    source=shop queue=orders severity="$1"
}
expect_eq "critical goes to the pager" "$(route critical)" pager
expect_eq "warning goes to tickets" "$(route warning)" tickets
expect_eq "info goes nowhere" "$(route info)" blackhole
expect_eq "an alert without a severity goes to tickets" \
  "$(amtool config routes test --config.file="$example" alertname=QrelX)" tickets

# ---- a real Alertmanager -----------------------------------------------------------------------
# The receivers' addresses become a closed loopback port: nothing leaves this machine.
closed=$(free_port)
sed -E "s#url: http://[a-z.]+/alertmanager#url: http://127.0.0.1:$closed/alertmanager#" "$example" >"$T/am.yml"
expect_cmd "the test's copy points every receiver at loopback" \
  test "$(grep -c "127.0.0.1:$closed" "$T/am.yml")" -eq "$(grep -c 'url:' "$example")"
AM=$(free_port)
CLUSTER=$(free_port)
prometheus-alertmanager --config.file="$T/am.yml" --storage.path="$T/am-data" \
  --web.listen-address="127.0.0.1:$AM" --cluster.listen-address="127.0.0.1:$CLUSTER" \
  >"$T/alertmanager.log" 2>&1 &
PIDS+=("$!")
wait_for -i 0.1 60 "Alertmanager on port $AM to be ready" curl -fs -o /dev/null "http://127.0.0.1:$AM/-/ready"

# Alerts as Prometheus sends them (each with its labels; endsAt an hour away so none resolves).
ends=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
alert() { # alert NAME SEVERITY LABEL=VALUE...: one alert object
  local name=$1 sev=$2 kv
  shift 2
  printf '{"labels":{"alertname":"%s","severity":"%s","job":"qrel"' "$name" "$sev"
  for kv in "$@"; do printf ',"%s":"%s"' "${kv%%=*}" "${kv#*=}"; done
  printf '},"endsAt":"%s"}' "$ends"
}
{
  printf '['
  alert QrelLeaseMarginCritical critical instance=a:19318 source=shop queue=orders; printf ,
  alert QrelLeaseMarginLow warning instance=a:19318 source=shop queue=orders; printf ,
  alert QrelLeaseMarginLow warning instance=a:19318 source=shop queue=invoices; printf ,
  alert QrelExporterDown critical instance=a:19318; printf ,
  alert QrelCollectorStale warning instance=a:19318 source=shop; printf ,
  alert QrelCollectorStale warning instance=b:19318 source=shop
  printf ']'
} >"$T/alerts.json"
curl -fsS -H 'Content-Type: application/json' --data @"$T/alerts.json" \
  "http://127.0.0.1:$AM/api/v2/alerts" >/dev/null

# status: the alerts Alertmanager holds now, into status.json.
status() { curl -fsS "http://127.0.0.1:$AM/api/v2/alerts" >"$T/status.json"; }
inhibited() { # inhibited NAME INSTANCE QUEUE: its state, "suppressed" or "active" ("" while not there)
  jq -r --arg n "$1" --arg i "$2" --arg q "$3" '.[] | select(.labels.alertname == $n
    and .labels.instance == $i and (.labels.queue // "") == $q) | .status.state' "$T/status.json"
}
# The inhibitor learns of the source alerts asynchronously: wait until it has seen both.
settled() {
  status && [ "$(inhibited QrelLeaseMarginLow a:19318 orders)" = suppressed ] &&
    [ "$(inhibited QrelCollectorStale a:19318 "")" = suppressed ]
}
wait_for 30 "Alertmanager to inhibit the layered alerts" settled || cat "$T/status.json" >&2
expect_eq "margin below 2 of orders: inhibited by its margin below 1" \
  "$(inhibited QrelLeaseMarginLow a:19318 orders)" suppressed
expect_eq "margin below 2 of invoices: not inhibited (another queue)" \
  "$(inhibited QrelLeaseMarginLow a:19318 invoices)" active
expect_eq "the critical margin itself: active" "$(inhibited QrelLeaseMarginCritical a:19318 orders)" active
expect_eq "a stale collector of the dead exporter: inhibited" \
  "$(inhibited QrelCollectorStale a:19318 "")" suppressed
expect_eq "a stale collector of another exporter: not inhibited" \
  "$(inhibited QrelCollectorStale b:19318 "")" active
expect_eq "the inhibitor is QrelLeaseMarginCritical's alert" \
  "$(jq -r '.[] | select(.labels.alertname == "QrelLeaseMarginCritical") | .fingerprint' "$T/status.json")" \
  "$(jq -r '.[] | select(.labels.alertname == "QrelLeaseMarginLow" and .labels.queue == "orders")
    | .status.inhibitedBy[0]' "$T/status.json")"

finish
