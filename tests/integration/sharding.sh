#!/usr/bin/env bash
# Sharding on Prometheus itself: two exporter replicas with the same configuration, two real
# Prometheus servers (Debian's 2.42) that discover the sources through /sd (http_sd) and keep
# their share with `hashmod` on the `source` label. Each Prometheus reads /sd of its own replica
# (a replica per shard, as docs/sharding.md describes), so every source is probed by exactly one
# Prometheus through exactly one exporter. Then shard 1 goes away (its Prometheus and its
# replica stop) and shard 0 is reconfigured for one shard and reloaded: the sources shard 1 had
# are scraped by shard 0 from then on. Prometheus keeps its last http_sd list when the endpoint
# fails, so a shard leaving is a configuration change, not something discovery notices alone.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

NSRC=8
start_redis RP
{
  echo "sources:"
  for i in $(seq 0 $((NSRC - 1))); do
    redis-cli -p "$RP" XGROUP CREATE "q$i" workers 0 MKSTREAM >/dev/null
    redis-cli -p "$RP" XADD "q$i" '*' n "$i" >/dev/null
    printf '  - name: src%d\n    kind: redis_stream\n    address: 127.0.0.1:%s\n    streams: [{name: q%d}]\n' \
      "$i" "$RP" "$i"
  done
} > "$T/qrel.yml"

# exporter N: a replica on a free port, its address in EXP_N.
exporter() {
  local n=$1 addr="" pid
  # Made before the exporter starts: the loop below may read it before the shell that runs the
  # exporter has opened it (a missing file failed the test under set -e in a loaded ASan run).
  : >"$T/exporter$n.log"
  "$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 \
    2>"$T/exporter$n.log" &
  pid=$!
  PIDS+=("$pid")
  printf -v "EXP_PID_$n" '%s' "$pid"
  for _ in $(seq 1 600); do # up to 30 s: an ASan build on a loaded machine starts slowly
    addr=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter$n.log")
    [ -n "$addr" ] && break
    sleep 0.05
  done
  [ -n "$addr" ] || { cat "$T/exporter$n.log" >&2; return 1; }
  printf -v "EXP_$n" '%s' "$addr"
}
exporter 0
exporter 1

# /sd itself: one target group per source, the replica's own address, /probe with the source.
curl -fsS -D "$T/sd.h" "http://$EXP_0/sd" -o "$T/sd.json"
expect_cmd "/sd is JSON" grep -qi '^Content-Type: application/json' "$T/sd.h"
expect_eq "/sd lists every source" "$(jq length "$T/sd.json")" "$NSRC"
expect_eq "targets: the replica's own address" "$(jq -r '[.[].targets[]] | unique | join(",")' "$T/sd.json")" "$EXP_0"
expect_eq "labels of src3" \
  "$(jq -c '.[] | select(.labels.source == "src3") | .labels' "$T/sd.json")" \
  '{"__metrics_path__":"/probe","__param_target":"src3","source":"src3","kind":"redis_stream"}'
expect_eq "/sd rejects POST" "$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://$EXP_0/sd")" 405

# Advertised address: the flag as given; a wildcard is refused at start.
: >"$T/exporter-adv.log"
"$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 \
  --web.advertise-address=qrel.example:19318 2>"$T/exporter-adv.log" &
adv_pid=$!
PIDS+=("$adv_pid")
adv=""
for _ in $(seq 1 600); do
  adv=$(sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$T/exporter-adv.log")
  [ -n "$adv" ] && break
  sleep 0.05
done
expect_eq "--web.advertise-address is listed" \
  "$(curl -fsS "http://$adv/sd" | jq -r '.[0].targets[0]')" "qrel.example:19318"
kill "$adv_pid"
"$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 \
  --web.advertise-address=0.0.0.0:19318 2>"$T/exporter-bad.log" && rc=0 || rc=$?
expect_eq "a wildcard advertise address is a usage error" "$rc" 2
expect_cmd "and says why" grep -qF 'want host:port as Prometheus reaches this exporter' "$T/exporter-bad.log"
# A host that is not a DNS name or an address (here invalid UTF-8) would make /sd invalid JSON.
"$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 \
  --web.advertise-address=$'\xff\xfe:19318' 2>"$T/exporter-bad.log" && rc=0 || rc=$?
expect_eq "an advertise host of invalid UTF-8 is a usage error" "$rc" 2

# prom_config SHARD COUNT EXPORTER: shard SHARD of COUNT, discovering through EXPORTER's /sd.
prom_config() {
  cat <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}
scrape_configs:
  - job_name: qrel
    honor_labels: true
    http_sd_configs: [{url: 'http://$3/sd', refresh_interval: 1s}]
    relabel_configs:
      - {source_labels: [source], modulus: $2, target_label: __tmp_shard, action: hashmod}
      - {source_labels: [__tmp_shard], regex: '$1', action: keep}
YML
}
# prometheus_start N: Prometheus shard N on a free port (PP_N), discovering through replica N.
prometheus_start() {
  local n=$1 port exp
  port=$(free_port)
  exp=EXP_$n
  mkdir -p "$T/prom$n"
  prom_config "$n" 2 "${!exp}" > "$T/prom$n/prometheus.yml"
  prometheus --config.file="$T/prom$n/prometheus.yml" --storage.tsdb.path="$T/prom$n/data" \
    --web.listen-address="127.0.0.1:$port" > "$T/prometheus$n.log" 2>&1 &
  PIDS+=($!)
  printf -v "PROM_PID_$n" '%s' "$!"
  printf -v "PP_$n" '%s' "$port"
}
prometheus_start 0
prometheus_start 1

# sources PORT QUERY: the sorted `source` values of QUERY's result on that Prometheus.
sources() {
  curl -fsS "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2" \
    | jq -r '[.data.result[].metric.source] | sort | join(" ")'
}
# The union of both shards' up==1 sources must reach all of them (first scrape: 5-6 s).
all=$(seq 0 $((NSRC - 1)) | sed 's/^/src/' | sort | paste -sd' ')
s0="" s1=""
for _ in $(seq 1 150); do
  s0=$(sources "$PP_0" 'up{job="qrel"} == 1' 2>/dev/null || true)
  s1=$(sources "$PP_1" 'up{job="qrel"} == 1' 2>/dev/null || true)
  [ "$(printf '%s %s' "$s0" "$s1" | tr ' ' '\n' | grep -c .)" -ge "$NSRC" ] && break
  sleep 0.2
done
echo "shard 0: $s0; shard 1: $s1"
expect_eq "the two shards together scrape every source" \
  "$(printf '%s\n%s\n' "$s0" "$s1" | tr ' ' '\n' | grep . | sort | paste -sd' ')" "$all"
expect_eq "no source is scraped by both" \
  "$(printf '%s\n%s\n' "$s0" "$s1" | tr ' ' '\n' | grep . | sort | uniq -d | paste -sd' ')" ""
expect_cmd "shard 0 has some sources" test -n "$s0"
expect_cmd "shard 1 has some sources" test -n "$s1"
# Each target is one source through /probe: its series carry that source only, with no
# exported_ duplicates of the labels /sd set (honor_labels).
expect_eq "shard 0 stores qrel_collector_up for its sources only" \
  "$(sources "$PP_0" 'qrel_collector_up == 1')" "$s0"
expect_eq "shard 1 stores queue depth for its sources only" \
  "$(sources "$PP_1" 'qrel_queue_messages{state="ready"} == 1')" "$s1"
expect_eq "no exported_source label" \
  "$(curl -fsS "http://127.0.0.1:$PP_0/api/v1/query" --data-urlencode 'query=count(qrel_collector_up{exported_source!=""}) or vector(0)' | jq -r '.data.result[0].value[1]')" 0
targets=$(curl -fsS "http://127.0.0.1:$PP_1/api/v1/targets" | jq -r '[.data.activeTargets[].scrapeUrl] | sort | .[0]')
expect_cmd "shard 1 probes through its own replica: $targets" \
  bash -c "[[ '$targets' == http://$EXP_1/probe?target=src* ]]"

# Shard 1 goes away: its Prometheus and its replica stop; shard 0 becomes the only shard.
kill "$PROM_PID_1" "$EXP_PID_1"
prom_config 0 1 "$EXP_0" > "$T/prom0/prometheus.yml"
kill -HUP "$PROM_PID_0"
moved=""
for _ in $(seq 1 150); do
  # Scraped since the reload: a fresh timestamp within the last 2 s for every source.
  moved=$(sources "$PP_0" 'up{job="qrel"} == 1 and timestamp(up{job="qrel"}) > time() - 2')
  [ "$moved" = "$all" ] && break
  sleep 0.2
done
expect_eq "after the reload shard 0 scrapes every source" "$moved" "$all"
first=${s1%% *}
expect_eq "$first moved from shard 1 to shard 0 (qrel_collector_up)" \
  "$(curl -fsS "http://127.0.0.1:$PP_0/api/v1/query" --data-urlencode "query=qrel_collector_up{source=\"$first\"}" | jq -r '.data.result[0].value[1]')" 1
expect_cmd "shard 0 logged the reload" grep -q 'Completed loading of configuration file' "$T/prometheus0.log"
finish
