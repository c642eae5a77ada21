#!/usr/bin/env bash
# rabbitmq.sh: what exporting N RabbitMQ queues costs the broker, qrel against the raw fetches.
#
# Starts its own RabbitMQ node (management + prometheus plugins) on free loopback ports, creates
# N queues (the shape: every Kth with a dead-letter exchange, --dlq-every; the others break
# no_dead_letter_queue; "--dlq-every 10,1" measures a second shape on the same queues, every
# queue with one: the other nine in ten get it by a policy, since a queue's arguments cannot
# change), and for each N and shape measures, in one run and on the same node: the raw
# `GET /api/queues?columns=…` that qrel's refresh makes (curl), the same with totals only (qrel's
# depth request without the plugin), the plugin's /metrics/per-object,
# /metrics/detailed?family=queue_coarse_metrics (depth) and family=queue_metrics (the only family
# with the head timestamp) (curl), the floor of a cached scrape (qrel's own depth request, family
# queue_coarse_metrics, fetched --floor-fetches times on one kept-alive connection, uncompressed
# and discarded; beside it the request of a scrape that also reads the consumer counts, both
# families, and queue_consumer_count alone), and qrel_exporter scraped --scrapes times --spacing s
# apart, with and without the plugin (with it, consumers_interval keeps Prometheus' cadence of
# consumer reads: 1 in 4 scrapes for 60 s at 15 s). Per row: scrape time, body bytes,
# exporter peak RSS, qrel's own memory (own_kib: RssAnon; heap_kib: heap and stacks alone), the
# audit series, the broker's CPU per scrape (beam utime+stime, idle CPU taken off) and qrel's own
# CPU per cached scrape. Prints a table and a verdict on the 10,000-queue goal; a missed goal is
# reported, not an error. See bench/README.md.
#
# Needs: bash, curl, awk, python3, rabbitmq-server 3.10 (Debian), a built qrel_exporter.
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/rabbitmq.sh [--sizes "1000 10000"] [--dlq-every K[,1]] [--interval S] [--scrapes N]
                         [--spacing S] [--fetches N] [--floor-fetches N]
                         [--metadata-interval DURATION] [--consumers-interval S] [--qrel PATH]

  --sizes "LIST"               queue counts, ascending (default "1000 10000")
  --dlq-every K                the shape: every Kth queue has a dead-letter exchange, the others
                               break no_dead_letter_queue (default 10; 1: every queue has one)
  --dlq-every K,1              both shapes on the same queues, one after the other: first every
                               Kth (queue arguments), then every queue (the others by a policy
                               with the same exchange and routing key; one node, one declare)
  --interval S                 Prometheus' scrape interval the long-run verdict assumes (default 15)
  --scrapes N                  qrel scrapes per row, the first of which refreshes (default 5)
  --spacing S                  seconds from one qrel scrape's start to the next (default 3.5: not
                               a multiple of the broker's 5 s stats emission, so that the cached
                               scrapes meet it at different phases)
  --fetches N                  measured raw fetches per curl row (default 3)
  --floor-fetches N            fetches of the floor row, on one connection (default 15)
  --metadata-interval DURATION qrel's metadata_interval (default: not set, i.e. qrel's automatic
                               interval, max(60 s, 200 x the last refresh's duration))
  --consumers-interval S       qrel's consumers_interval the long-run verdict assumes, in seconds
                               (default 60, qrel's default); the run sets consumers_interval to
                               S x spacing / interval, so that as many of its scrapes read the
                               consumer counts as of Prometheus' (1 in 4 by default)
  --qrel PATH                  qrel_exporter (default: $QREL_BUILD_DIR/qrel_exporter, else
                               build/qrel_exporter in this checkout)
  -h, --help                   this text

With BENCH_RESULTS=FILE set, one result row per shape is appended to FILE (bench/all.sh sets it).
EOF
}

SIZES="1000 10000"
DLQ_EVERY=10
INTERVAL=15
SCRAPES=5
SPACING=3.5
FETCHES=3
FLOOR_FETCHES=15
META_INTERVAL=auto
CONS_INTERVAL=60
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../tests/lib/rabbitmq.sh
. "$SRC_DIR/tests/lib/rabbitmq.sh"
GOAL_N=10000

parse_options "--sizes:SIZES --dlq-every:DLQ_EVERY --interval:INTERVAL --scrapes:SCRAPES --spacing:SPACING --fetches:FETCHES \
  --floor-fetches:FLOOR_FETCHES --metadata-interval:META_INTERVAL --consumers-interval:CONS_INTERVAL --qrel:QREL_BIN" "$@"
# SHAPES: the --dlq-every values in order; the first is declared by queue arguments, a second
# (only 1) is set by a policy on those queues
IFS=, read -ra SHAPES <<<"$DLQ_EVERY"
[ "${#SHAPES[@]}" -ge 1 ] && [ "${#SHAPES[@]}" -le 2 ] || die "--dlq-every: K or K,1"
need_num --dlq-every "${SHAPES[0]}"
[ "${SHAPES[0]}" -ge 1 ] || die "--dlq-every: K is at least 1"
if [ "${#SHAPES[@]}" = 2 ]; then
  [ "${SHAPES[1]}" = 1 ] && [ "${SHAPES[0]}" != 1 ] ||
    die "--dlq-every: a second shape can only be 1 (every queue, by a policy), after a K above 1"
fi
K_DECLARED=${SHAPES[0]}
need_num --interval "$INTERVAL"
need_num --scrapes "$SCRAPES"
[ "$SCRAPES" -ge 2 ] || die "--scrapes: at least 2 (the first one refreshes)"
[[ "$SPACING" =~ ^[0-9]+([.][0-9]+)?$ ]] || die "--spacing: a number of seconds"
need_num --fetches "$FETCHES"
need_num --floor-fetches "$FLOOR_FETCHES"
need_num --consumers-interval "$CONS_INTERVAL"
[ "$CONS_INTERVAL" -ge "$INTERVAL" ] || die "--consumers-interval: at least --interval (a read on every scrape is 0s: measured as the both-families floor)"
# the run's consumers_interval: as many of its scrapes read the counts as of Prometheus' scrapes
RUN_CONS_INTERVAL=$(awk -v c="$CONS_INTERVAL" -v s="$SPACING" -v i="$INTERVAL" 'BEGIN { printf "%.0fms", c * s / i * 1000 }')
ascending_sizes --sizes "$SIZES" " (queues are only added)"
need_tools curl awk python3
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || die "rabbitmq-server not found (apt-get install rabbitmq-server)"
[ -x "$QREL_BIN" ] || die "$QREL_BIN not found: build first or pass --qrel"

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
chmod 755 "$T"
EXP_PID=
cleanup() {
  local rc=$?
  set +e
  if [ -n "$EXP_PID" ]; then kill "$EXP_PID" 2>/dev/null; wait "$EXP_PID" 2>/dev/null; fi
  rabbit_stop_all
  [ "$rc" -ne 0 ] && [ -f "$T/exporter.log" ] && tail -15 "$T/exporter.log" >&2
  rm -rf "$T"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
progress() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# phase NAME: ends the phase running (its length into PHASES) and starts NAME ("" ends the last)
PHASES=()
PHASE=
PHASE_T0=
phase() {
  local now
  now=$(date +%s.%N)
  [ -n "$PHASE" ] && PHASES+=("$PHASE $(awk -v a="$PHASE_T0" -v b="$now" 'BEGIN { printf "%.0f", b - a }') s")
  PHASE=$1
  PHASE_T0=$now
  [ -z "$1" ] || progress "$1"
}

TCK=$(getconf CLK_TCK)
declare -A RES
ROWS=(api_queues api_totals per_object detailed_coarse detailed_queue depth_floor qrel_plugin qrel_mgmt)

phase "starting RabbitMQ"
RABBIT_STATS_INTERVAL_MS=5000 rabbit_start "$T/rabbit"
BEAM=$(cat "$T/rabbit/rabbit.pid")
API=http://127.0.0.1:$RABBIT_MGMT/api
PROM=http://127.0.0.1:$RABBIT_PROM
# qrel's depth request with the plugin (collectors/rabbitmq/rabbitmq.c, fetch_prom_depth): the
# depth family alone, and with the consumer counts once per consumers_interval
DEPTH_URL="$PROM/metrics/detailed?family=queue_coarse_metrics"
BOTH_URL="$DEPTH_URL&family=queue_consumer_count"
COLS="name,vhost,messages,messages_ready,messages_unacknowledged,head_message_timestamp,arguments,effective_policy_definition,message_stats.redeliver"
echo guest > "$T/pass"

beam_ticks() { cpu_ticks "$BEAM"; }
now_s() { date +%s.%N; }

# idle_rate: the broker's CPU ticks per second while nobody asks it anything (stats emission)
idle_rate() {
  local c0 c1 t0 t1
  c0=$(beam_ticks); t0=$(now_s); sleep 10; c1=$(beam_ticks); t1=$(now_s)
  awk -v c=$((c1 - c0)) -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", c / (b - a) }'
}

create_queues() { # create_queues FROM TO: scale.FROM .. scale.TO-1, by definitions import
  python3 - "$1" "$2" "$K_DECLARED" > "$T/defs.json" <<'PY'
import json, sys
a, b, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
q = [{"name": f"scale.{i}", "vhost": "/", "durable": False, "auto_delete": False,
      "arguments": ({"x-dead-letter-exchange": "scale.dlx", "x-dead-letter-routing-key": "dead"} if i % k == 0 else {})}
     for i in range(a, b)]
if a == 0:
    q.append({"name": "scale.dlq", "vhost": "/", "durable": False, "auto_delete": False, "arguments": {}})
print(json.dumps({"queues": q,
  "exchanges": [{"name": "scale.dlx", "vhost": "/", "type": "direct", "durable": True, "auto_delete": False, "internal": False, "arguments": {}}],
  "bindings": [{"source": "scale.dlx", "vhost": "/", "destination": "scale.dlq", "destination_type": "queue", "routing_key": "dead", "arguments": {}}]}))
PY
  curl -fsS -u guest:guest -H 'content-type: application/json' -X POST "$API/definitions" \
    --data-binary @"$T/defs.json" --max-time 600 > /dev/null
}

# The policy of the shape "every queue" (--dlq-every K,1): the dead-letter exchange and routing
# key the Kth queues have as arguments, for every scale.N queue (not scale.dlq). Where a queue has
# both, its argument wins (RabbitMQ; qrel reads them the same way, docs/kinds/rabbitmq.md), and
# both name the same exchange and key.
POLICY_URL="$API/policies/%2F/bench-dlx"
POLICY='{"pattern": "^scale\\.[0-9]+$", "apply-to": "queues", "priority": 0, "definition": {"dead-letter-exchange": "scale.dlx", "dead-letter-routing-key": "dead"}}'

queues_by_policy() { # queues_by_policy WANT: WANT queues have the policy's dead-letter exchange (sets got)
  # not disable_stats=true: that listing leaves effective_policy_definition out
  got=$(curl -fsS -u guest:guest "$API/queues?columns=name,effective_policy_definition" |
    grep -o '"dead-letter-exchange"' | wc -l || true)
  [ "$got" = "$1" ]
}

# set_shape N K: the queues' dead-lettering as shape K: K_DECLARED is the queue arguments alone
# (the policy deleted); 1 adds the policy. Waits until /api/queues shows it on all N (or none):
# each look is a listing of every queue with its stats, so none when no policy was ever set.
POLICY_SET=0
set_shape() {
  local n=$1 k=$2 want
  if [ "$k" = "$K_DECLARED" ]; then
    [ "$POLICY_SET" = 1 ] || return 0
    curl -fsS -u guest:guest -X DELETE -o /dev/null "$POLICY_URL"
    POLICY_SET=0
    want=0
  else
    POLICY_SET=1
    curl -fsS -u guest:guest -H 'content-type: application/json' -X PUT -o /dev/null \
      --data-binary "$POLICY" "$POLICY_URL"
    want=$n
  fi
  wait_for -i 1 120 "the policy on $want queues" queues_by_policy "$want" ||
    die "the shape every $k: $got queues have the policy, want $want"
}

queues_with_stats() { # queues_with_stats N: at least N queues have stats (sets got)
  got=$(curl -fsS -u guest:guest "$API/queues?columns=messages&disable_stats=true&enable_queue_totals=true" | grep -o '"messages"' | wc -l)
  [ "$got" -ge "$1" ]
}

# wait_stats N: until /api/queues shows N+1 queues with stats
wait_stats() {
  local want=$(($1 + 1)) got
  wait_for -i 1 120 "$want queues with stats" queues_with_stats "$want" && return 0
  die "only $got of $want queues have stats after 120 s"
}

# curl_row N ROW URL [curl args]: FETCHES fetches, one at a time; median time, bytes, broker CPU
curl_row() {
  local n=$1 row=$2 url=$3 i c0 c1 t0 t1 tot=0 dur=0 out
  shift 3
  : > "$T/times"
  for i in $(seq 1 "$FETCHES"); do
    c0=$(beam_ticks); t0=$(now_s)
    out=$(curl -fsS -o /dev/null -w '%{time_total} %{size_download}' --max-time 300 "$@" "$url")
    t1=$(now_s); c1=$(beam_ticks)
    echo "${out% *}" >> "$T/times"
    RES[$n,$row,bytes]=${out#* }
    tot=$((tot + c1 - c0))
    dur=$(awk -v d="$dur" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", d + b - a }')
  done
  RES[$n,$row,median]=$(median < "$T/times")
  RES[$n,$row,req]=1
  RES[$n,$row,cpu]=$(awk -v c="$tot" -v d="$dur" -v i="$IDLE" -v k="$FETCHES" -v t="$TCK" \
    'BEGIN { x = (c - i * d) * 1000 / t / k; printf "%.0f", (x > 0 ? x : 0) }')
}

# floor_row N: the floor of a cached scrape with the plugin: qrel's depth request (the depth
# family alone), the only request such a scrape makes, fetched FLOOR_FETCHES times by one curl on
# one kept-alive connection, uncompressed as qrel asks for it, the body discarded. Its median is
# what the broker takes to answer and the wire to carry it; the rest of a cached scrape is qrel's.
# Beside it, for the note: the same with gzip (what qrel asked for before), the request of a
# scrape that reads the consumer counts too (both families) and queue_consumer_count alone (what
# qrel_queue_consumers' family costs), a third as many fetches each.
floor_row() {
  local n=$1 i c0 c1 t0 t1 args=() fam k=$(((FLOOR_FETCHES + 2) / 3))
  for ((i = 0; i < FLOOR_FETCHES; i++)); do args+=(-o /dev/null "$DEPTH_URL"); done
  c0=$(beam_ticks); t0=$(now_s)
  curl -fsS -H 'Accept-Encoding: identity' --max-time 600 -w '%{time_total} %{size_download} %{num_connects}\n' "${args[@]}" > "$T/floor"
  t1=$(now_s); c1=$(beam_ticks)
  local c_floor=$((c1 - c0)) t_floor0=$t0 t_floor1=$t1
  curl -fsS --compressed --max-time 600 -w '%{time_total}\n' "${args[@]:0:$((3 * k))}" > "$T/floor_gzip"
  RES[$n,depth_floor,gzip]=$(median < "$T/floor_gzip")
  for fam in both queue_consumer_count; do
    args=()
    for ((i = 0; i < k; i++)); do
      args+=(-o /dev/null "$([ "$fam" = both ] && echo "$BOTH_URL" || echo "$PROM/metrics/detailed?family=$fam")")
    done
    c0=$(beam_ticks); t0=$(now_s)
    RES[$n,floor_$fam,median]=$(curl -fsS -H 'Accept-Encoding: identity' --max-time 600 -w '%{time_total}\n' "${args[@]}" | median)
    t1=$(now_s); c1=$(beam_ticks)
    RES[$n,floor_$fam,cpu]=$(awk -v c=$((c1 - c0)) -v a="$t0" -v b="$t1" -v i="$IDLE" -v k="$k" -v t="$TCK" \
      'BEGIN { x = (c - i * (b - a)) * 1000 / t / k; printf "%.0f", (x > 0 ? x : 0) }')
  done
  [ "$(wc -l < "$T/floor")" = "$FLOOR_FETCHES" ] || die "depth_floor at $n queues: $(wc -l < "$T/floor") of $FLOOR_FETCHES fetches"
  RES[$n,depth_floor,median]=$(cut -d' ' -f1 "$T/floor" | median)
  RES[$n,depth_floor,bytes]=$(curl -fsS -o /dev/null -w '%{size_download}' "$DEPTH_URL")
  RES[$n,depth_floor,conns]=$(awk '{ s += $3 } END { print s }' "$T/floor")
  RES[$n,depth_floor,req]="1 x $FLOOR_FETCHES"
  RES[$n,depth_floor,cpu]=$(awk -v c="$c_floor" -v a="$t_floor0" -v b="$t_floor1" -v i="$IDLE" -v k="$FLOOR_FETCHES" -v t="$TCK" \
    'BEGIN { x = (c - i * (b - a)) * 1000 / t / k; printf "%.0f", (x > 0 ? x : 0) }')
}

# qrel_row N ROW PLUGIN(0|1): qrel_exporter scraped SCRAPES times, SPACING s from start to start
# (the first scrape refreshes the slow part; later ones refresh it when metadata_interval has
# passed; with the plugin, RUN_CONS_INTERVAL makes 1 in CONS_INTERVAL/INTERVAL of them read the
# consumer counts too, which the exporter's debug log says scrape by scrape). The spacing is not Prometheus' interval: the broker's CPU is taken per scrape, so the
# long-run verdict needs only the interval it assumes (INTERVAL), not a minute of waiting.
qrel_row() {
  local n=$1 row=$2 plugin=$3 k c0 c1 q0 q1 t1 start out addr
  {
    echo "global: {timeout: 120s}"
    echo "sources:"
    echo "  - name: bench"
    echo "    kind: rabbitmq"
    echo "    url: http://127.0.0.1:$RABBIT_MGMT"
    [ "$plugin" = 1 ] && echo "    prometheus_url: $PROM"
    echo "    username: guest"
    echo "    password_file: $T/pass"
    echo "    consumer_timeout: 30m"
    [ "$META_INTERVAL" != auto ] && echo "    metadata_interval: $META_INTERVAL"
    [ "$plugin" = 1 ] && echo "    consumers_interval: $RUN_CONS_INTERVAL"
  } > "$T/qrel.yml"
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 --log.level=debug 2>> "$T/exporter.log" &
  EXP_PID=$!
  ADDR=
  wait_for 5 "qrel_exporter to log its listening address" listening || true
  addr=$ADDR
  [ -n "$addr" ] || die "qrel_exporter did not start"
  : > "$T/times"
  : > "$T/cpus"
  : > "$T/qcpus"
  : > "$T/reads"
  RES[$n,$row,own]=0
  RES[$n,$row,heap]=0
  k=$SCRAPES
  for i in $(seq 1 "$k"); do
    start=$(now_s)
    c0=$(beam_ticks)
    q0=$(cpu_ticks "$EXP_PID")
    out=$(curl -fsS -o "$T/body.txt" -w '%{time_total} %{size_download}' --max-time 130 \
      -H 'X-Prometheus-Scrape-Timeout-Seconds: 120' "http://$addr/metrics")
    q1=$(cpu_ticks "$EXP_PID")
    c1=$(beam_ticks)
    t1=$(now_s)
    echo $(((q1 - q0) * 1000 / TCK)) >> "$T/qcpus"
    # the broker's CPU in this scrape, less what it spends idle in as long (stats emission)
    awk -v c=$((c1 - c0)) -v a="$start" -v b="$t1" -v i="$IDLE" -v t="$TCK" \
      'BEGIN { x = (c - i * (b - a)) * 1000 / t; printf "%.1f\n", (x > 0 ? x : 0) }' >> "$T/cpus"
    echo "${out% *}" >> "$T/times"
    # what read the consumer counts in this scrape: plugin (the depth request asked both
    # families), refresh (the slow part's /api/queues), no (served the last), management
    sed -nE 's/.*msg="rabbitmq collection done" .* consumers_read=([a-z]+) .*/\1/p' "$T/exporter.log" | tail -1 >> "$T/reads"
    RES[$n,$row,bytes]=${out#* }
    grep -Eq '^qrel_collector_up\{source="bench",kind="rabbitmq"\} 1$' "$T/body.txt" ||
      die "$row at $n queues: scrape $i not up: $(grep -m1 'collection failed' "$T/exporter.log" || true)"
    read -r own heap < <(mem_settled_kib "$EXP_PID")
    [ "$own" -gt "${RES[$n,$row,own]}" ] && RES[$n,$row,own]=$own
    [ "$heap" -gt "${RES[$n,$row,heap]}" ] && RES[$n,$row,heap]=$heap
    [ "$i" = 1 ] && RES[$n,$row,first]=${out% *}
    [ "$i" -lt "$k" ] && sleep "$(awk -v s="$start" -v e="$(now_s)" -v iv="$SPACING" 'BEGIN { x = iv - (e - s); print (x > 0 ? x : 0) }')"
  done
  RES[$n,$row,reported]=$(grep -c '^qrel_queue_messages{source="bench".*state="ready"' "$T/body.txt" || true)
  RES[$n,$row,audit]="$(grep -c '^qrel_audit_failed{' "$T/body.txt" || true)/$(sed -nE 's/^qrel_audit_failed_queues\{.*rule="no_dead_letter_queue".*\} ([0-9]+)$/\1/p' "$T/body.txt")"
  [ "$(wc -l < "$T/reads")" = "$k" ] || die "$row at $n queues: $(wc -l < "$T/reads") of $k scrapes in the debug log"
  RES[$n,$row,median]=$(tail -n +2 "$T/times" | median)
  # refresh_cpu: the first scrape (it makes the refresh, whose /api/queues gives the consumer
  # counts too); depth_cpu: the median of the others that asked for the depth family alone
  # (served the consumer counts read before); cons_cpu and cons_s: the median of those that also
  # read the counts (both families); cpu: the average over a minute of INTERVAL-s scrapes of which
  # the first refreshes and 1 in CONS_INTERVAL/INTERVAL reads the counts (the refresh is one of
  # those reads), as Prometheus would scrape
  RES[$n,$row,refresh_cpu]=$(head -1 "$T/cpus")
  paste -d' ' "$T/times" "$T/cpus" "$T/reads" | tail -n +2 > "$T/cached"
  RES[$n,$row,depth_cpu]=$(awk '$3 != "plugin" { print $2 }' "$T/cached" | median)
  RES[$n,$row,cons_cpu]=$(awk '$3 == "plugin" { print $2 }' "$T/cached" | median)
  RES[$n,$row,cons_s]=$(awk '$3 == "plugin" { print $1 }' "$T/cached" | median)
  RES[$n,$row,cons_n]=$(awk '$3 == "plugin"' "$T/cached" | wc -l)
  if [ "${RES[$n,$row,cons_n]}" = 0 ]; then RES[$n,$row,cons_cpu]=; RES[$n,$row,cons_s]=; fi
  RES[$n,$row,cpu]=$(awk -v r="${RES[$n,$row,refresh_cpu]}" -v d="${RES[$n,$row,depth_cpu]}" -v c="${RES[$n,$row,cons_cpu]:-}" \
    -v iv="$INTERVAL" -v ci="$([ "$plugin" = 1 ] && echo "$CONS_INTERVAL" || echo 0)" 'BEGIN {
    k = int(60 / iv); if (k < 1) k = 1
    j = (ci > 0 && c != "" ? int(60 / ci + 0.5) - 1 : 0); if (j < 0) j = 0; if (j > k - 1) j = k - 1
    printf "%.0f", (r + j * c + (k - 1 - j) * d) / k }')
  # qrel's own CPU (all threads: the collection, the audit and the body) in a cached scrape
  RES[$n,$row,qrel_cpu]=$(tail -n +2 "$T/qcpus" | median)
  RES[$n,$row,rss]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$n,$row,peak_own]=$(peak_own_kib "$EXP_PID")
  RES[$n,$row,req]=$(if [ "$plugin" = 1 ]; then echo "1 (+refresh)"; else echo "1"; fi)
  kill "$EXP_PID"; wait "$EXP_PID" 2>/dev/null || true; EXP_PID=
}

# Each N and shape is a case, c = N/K, the key of its figures in RES. The queues are declared once
# per N (by arguments, the first shape); a second shape only sets the policy, so both shapes
# measure the same queues, the same dead-letter mapping and the same node.
CASES=()
have=0
for n in "${SIZE_LIST[@]}"; do
  phase "N=$n: creating queues $have..$((n - 1))"
  t0=$(now_s)
  create_queues "$have" "$n"
  RES[$n,create_s]=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }')
  have=$n
  for k in "${SHAPES[@]}"; do
    c=$n/$k
    CASES+=("$c")
    if [ "${#SHAPES[@]}" -gt 1 ]; then
      phase "N=$n, every $k: the dead-letter exchange $([ "$k" = "$K_DECLARED" ] && echo "by arguments alone" || echo "by policy on the others")"
      set_shape "$n" "$k"
    fi
    phase "N=$n, every $k: waiting for their stats"
    wait_stats "$n"
    phase "N=$n, every $k: measuring the idle broker"
    IDLE=$(idle_rate)
    RES[$c,idle]=$IDLE
    phase "N=$n, every $k: raw fetches"
    curl_row "$c" api_queues "$API/queues?columns=$COLS" -u guest:guest
    curl_row "$c" api_totals "$API/queues?columns=name,vhost,messages,messages_ready,messages_unacknowledged&disable_stats=true&enable_queue_totals=true" -u guest:guest
    curl_row "$c" per_object "$PROM/metrics/per-object"
    curl_row "$c" detailed_coarse "$PROM/metrics/detailed?family=queue_coarse_metrics"
    curl_row "$c" detailed_queue "$PROM/metrics/detailed?family=queue_metrics"
    phase "N=$n, every $k: the floor, qrel's depth request $FLOOR_FETCHES times on one connection, and its families"
    floor_row "$c"
    phase "N=$n, every $k: qrel with the plugin, $SCRAPES scrapes $SPACING s apart"
    qrel_row "$c" qrel_plugin 1
    phase "N=$n, every $k: qrel without the plugin"
    qrel_row "$c" qrel_mgmt 0
  done
done
phase ""

# shape_name K: the shape's name in the result rows
shape_name() { if [ "$1" = 1 ]; then echo "every queue with a DLQ"; else echo "1 in $1 with a DLQ"; fi; }

# ---- table ----
echo "# qrel rabbitmq benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
echo "# $(qrel_version "$QREL_BIN"); rabbitmq-server $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo '?') (collect_statistics_interval 5000)"
echo "# shape (every): N queues, 1 in ${K_DECLARED} declared with a dead-letter exchange to one dead-letter queue (+1 queue); any others break no_dead_letter_queue"
[ "${#SHAPES[@]}" = 1 ] ||
  echo "#   every 1: the same queues, the others given the same exchange and routing key by a policy (pattern ^scale\\.[0-9]+\$)"
echo "# qrel: ${SCRAPES} scrapes ${SPACING} s apart (the verdict assumes Prometheus' ${INTERVAL} s), metadata_interval ${META_INTERVAL}, consumers_interval ${RUN_CONS_INTERVAL} (for ${CONS_INTERVAL} s at ${INTERVAL} s); raw fetches: ${FETCHES} each"
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
fmtrow='%-7s %-5s %-16s %-13s %9s %9s %9s %8s %8s %8s %8s %11s %11s %10s %9s %12s\n'
# shellcheck disable=SC2059
printf "$fmtrow" queues every row requests median_s first_s body_kib rss_mib own_kib heap_kib peak_own broker_ms/scr refresh_ms depth_ms qrel_cpu audit_series
for c in "${CASES[@]}"; do
  for row in "${ROWS[@]}"; do
    # shellcheck disable=SC2059
    printf "$fmtrow" "${c%/*}" "${c#*/}" "$row" "${RES[$c,$row,req]:-1}" "$(fmt "${RES[$c,$row,median]:-}" '%.4f')" \
      "$(fmt "${RES[$c,$row,first]:-}" '%.3f')" \
      "$(awk -v b="${RES[$c,$row,bytes]:-0}" 'BEGIN { printf "%.0f", b / 1024 }')" \
      "${RES[$c,$row,rss]:--}" "${RES[$c,$row,own]:--}" "${RES[$c,$row,heap]:--}" "${RES[$c,$row,peak_own]:--}" "${RES[$c,$row,cpu]}" \
      "$(fmt "${RES[$c,$row,refresh_cpu]:-}" '%.0f')" "$(fmt "${RES[$c,$row,depth_cpu]:-}" '%.0f')" \
      "$(fmt "${RES[$c,$row,qrel_cpu]:-}" '%.0f')" "${RES[$c,$row,audit]:--}"
  done
done
echo "# every: the shape, every Kth queue with a dead-letter exchange"
echo "# median_s: qrel rows leave out the first scrape (it makes the first refresh; first_s shows it)"
echo "# own_kib: qrel's anonymous resident memory (RssAnon: heap, arenas, stacks and the libraries' private pages), the largest after any scrape (once freed)"
echo "# heap_kib: of it, the heap, arenas and stacks alone (smaps), the largest after any scrape (once freed): issue 14's goal is <= 2048"
echo "# peak_own: at least this much RssAnon at the peak, inside a scrape (VmHWM less RssFile and RssShmem)"
echo "# audit_series: qrel_audit_failed series / qrel_audit_failed_queues{rule=\"no_dead_letter_queue\"}"
echo "# detailed_queue: family=queue_metrics, the only one with rabbitmq_detailed_queue_head_message_timestamp"
echo "# broker_ms/scr: beam utime+stime per fetch or scrape, less the idle broker's CPU over the same time;"
echo "#   qrel rows: the average over a minute of ${INTERVAL} s scrapes of which the first refreshes the slow part"
echo "#   and, with the plugin, 1 in $((CONS_INTERVAL / INTERVAL)) reads the consumer counts (consumers_interval ${CONS_INTERVAL} s; the refresh is one such read);"
echo "#   refresh_ms: that first scrape; depth_ms: median of the others that asked for the depth family alone"
echo "# median_s of qrel_plugin: every cached scrape, those that read the consumer counts (1 in $((CONS_INTERVAL / INTERVAL))) included: see the notes"
echo "# depth_floor: the floor of a cached scrape with the plugin: qrel's depth request, family queue_coarse_metrics"
echo "#   ($FLOOR_FETCHES fetches on one kept-alive connection, uncompressed as qrel asks for it, the body discarded)"
echo "# phases: $(IFS=';'; echo "${PHASES[*]}" | sed 's/;/; /g')"
echo "# qrel_cpu: qrel_exporter's own CPU ms (utime+stime, all threads) per cached scrape, median (10 ms ticks)"
for c in "${CASES[@]}"; do
  n=${c%/*}
  awk -v n="$n" -v k="${c#*/}" -v q="${RES[$c,qrel_plugin,median]}" -v f="${RES[$c,depth_floor,median]}" -v c="${RES[$c,qrel_plugin,qrel_cpu]}" \
    -v b="${RES[$c,depth_floor,cpu]}" -v kc="${RES[$c,depth_floor,conns]}" -v z="${RES[$c,depth_floor,gzip]}" 'BEGIN {
    printf "# N=%d, every %d: the cached scrape with the plugin %.4f s = the floor %.4f s (broker CPU %d ms a fetch; %d connection(s) for all fetches; %.4f s with gzip) + %.4f s; qrel'"'"'s own CPU %d ms a scrape: %.2fx the floor\n", n, k, q, f, b, kc, z, q - f, c, (f > 0 ? q / f : 0) }'
  echo "# N=$n, every ${c#*/}: a scrape that reads the consumer counts asks both families: $(fmt "${RES[$c,floor_both,median]}" %.4f) s (broker CPU ${RES[$c,floor_both,cpu]} ms a fetch); queue_consumer_count alone $(fmt "${RES[$c,floor_queue_consumer_count,median]}" %.4f) s (${RES[$c,floor_queue_consumer_count,cpu]} ms; the plugin copies every queue's whole queue_metrics row for it)"
  echo "# N=$n, every ${c#*/}: qrel's scrapes that read the consumer counts: ${RES[$c,qrel_plugin,cons_n]} of $((SCRAPES - 1)) cached, median $(fmt "${RES[$c,qrel_plugin,cons_s]:-}" %.4f) s, broker CPU $(fmt "${RES[$c,qrel_plugin,cons_cpu]:-}" %.0f) ms (the others $(fmt "${RES[$c,qrel_plugin,depth_cpu]:-}" %.0f) ms)"
  echo "# N=$n, every ${c#*/}: queues created in ${RES[$n,create_s]} s (definitions import, once for every shape); idle broker $(awk -v i="${RES[$c,idle]}" -v t="$TCK" 'BEGIN { printf "%.0f", i * 1000 / t }') ms CPU/s; qrel reported ${RES[$c,qrel_plugin,reported]} / ${RES[$c,qrel_mgmt,reported]} queues (want $((n + 1)))"
done

# ---- verdict ----
# The long-run cost of a scrape: depth every time, plus the refresh once per metadata_interval.
# One verdict and one result row per shape, at 10,000 queues or the largest N.
g=$GOAL_N
note=""
if [ -z "${RES[$g/${SHAPES[0]},qrel_plugin,median]:-}" ]; then g=${SIZE_LIST[-1]}; note=" (10000 not measured: largest N instead)"; fi
for k in "${SHAPES[@]}"; do
  c=$g/$k
  if [ "$META_INTERVAL" = auto ]; then # what qrel chose: max(60 s, 200 x the refresh's duration)
    mi_s=$(awk -v f="${RES[$c,qrel_plugin,first]}" 'BEGIN { x = 200 * f; print (x > 60 ? x : 60) }')
  else
    mi_s=$(awk -v d="$META_INTERVAL" 'BEGIN { u = substr(d, length(d)); v = d + 0
      if (d ~ /ms$/) v = v / 1000; else if (u == "m") v *= 60; else if (u == "h") v *= 3600; print v }')
  fi
  awk -v n="$g" -v sh="$(shape_name "$k")" -v note="$note" -v t="${RES[$c,qrel_plugin,median]}" -v w="${RES[$c,qrel_plugin,cpu]}" \
    -v r="${RES[$c,qrel_plugin,refresh_cpu]}" -v d="${RES[$c,qrel_plugin,depth_cpu]}" \
    -v cc="${RES[$c,qrel_plugin,cons_cpu]:-}" -v cs="${RES[$c,qrel_plugin,cons_s]:-}" -v ci="$CONS_INTERVAL" \
    -v full="${RES[$c,api_queues,cpu]}" -v iv="$INTERVAL" -v mi="$mi_s" \
    -v tm="${RES[$c,qrel_mgmt,median]}" -v dm="${RES[$c,qrel_mgmt,depth_cpu]}" \
    -v hp="${RES[$c,qrel_plugin,heap]}" -v hm="${RES[$c,qrel_mgmt,heap]}" -v fl="${RES[$c,depth_floor,median]}" \
    -v vfile="$T/verdict" 'BEGIN {
    per = (mi > iv ? iv / mi : 1)             # refreshes per scrape
    fc = (ci > iv ? iv / ci : 1)              # consumer reads per scrape, the refreshes among them
    xc = (cc != "" && fc > per ? (cc - d) * (fc - per) : 0) # the reads by the plugin, over depth alone
    am = d + r * per + xc                     # long-run broker ms per scrape
    ok1 = (t <= 0.20); okw = (w <= 0.10 * full); oka = (am <= 0.10 * full)
    printf "verdict at %d queues, %s%s, qrel with the plugin: scrape %.3f s (goal <= 0.20: %s; %.2fx the floor of %.3f s); broker CPU per scrape over a minute of %d s scrapes %.0f ms = %.3f of one /api/queues fetch (%.0f ms; goal <= 0.10: %s); long-run with metadata_interval %g s: %.0f ms = %.3f (%s): %s\n",
      n, sh, note, t, ok1 ? "met" : "missed", (fl > 0 ? t / fl : 0), fl, iv, w, w / full, full, okw ? "met" : "missed", mi, am, am / full, oka ? "met" : "missed",
      (ok1 && oka) ? "MET" : "NOT MET"
    need = (0.10 * full > d ? r * iv / (0.10 * full - d) : -1)
    for (m = 60; m <= 600; m *= 5)
      printf "  long-run with metadata_interval %d s: %.0f ms per scrape = %.3f of the fetch\n", m, d + r * iv / m, (d + r * iv / m) / full
    if (need > 0) printf "  the 0.10 goal holds in the long run from metadata_interval >= %.0f s (refresh %.0f ms, cached scrape %.0f ms)\n", need, r, d
    if (cs != "") printf "  scrapes that also read the consumer counts (1 in %.0f at consumers_interval %d s): %.3f s, %.0f ms broker CPU; in the long run %.0f ms per scrape\n", 1 / fc, ci, cs, cc, xc
    printf "  without the plugin: %.3f s per cached scrape, %.0f ms broker CPU (%.3f of the fetch)\n", tm, dm, dm / full
    printf "  heap + stacks after a scrape: %d KiB with the plugin, %d KiB without (goal <= 2048: %s)\n", hp, hm, (hp <= 2048 && hm <= 2048) ? "met" : "missed"
    m = ""
    if (!ok1) m = m sprintf("; scrape %.3f s (goal <= 0.20; the floor %.3f s)", t, fl)
    if (!oka) m = m sprintf("; long-run broker CPU %.3f of the fetch (goal <= 0.10)", am / full)
    if (hp > 2048 || hm > 2048) m = m sprintf("; heap + stacks %d / %d KiB (goal <= 2048)", hp, hm)
    print (m == "" ? "met" : "missed: " substr(m, 3)) > vfile
    printf("long-run broker CPU %.0f ms = %.3f of the fetch (consumer counts read on 1 in %.0f scrapes: %s s, %s ms of broker CPU each, median)\n", am, am / full, 1 / fc, (cs == "" ? "-" : sprintf("%.4f", cs)), (cc == "" ? "-" : sprintf("%.0f", cc))) > (vfile ".note")
  }'
  shape=$(shape_name "$k")
  audit=${RES[$c,qrel_plugin,audit]:-/}
  if [ -z "${audit#*/}" ]; then audit="no audit finding"; else audit="${audit%/*} audit series for ${audit#*/} findings"; fi
  bench_result shape="$shape" size="$g queues" stat=median qrel_s="$(fmt "${RES[$c,qrel_plugin,median]}" %.4f)" \
    floor_s="$(fmt "${RES[$c,depth_floor,median]}" %.4f)" x_floor="$(ratio "${RES[$c,qrel_plugin,median]}" "${RES[$c,depth_floor,median]}")" \
    peer="GET /api/queues" peer_s="$(fmt "${RES[$c,api_queues,median]}" %.4f)" heap="${RES[$c,qrel_plugin,heap]} KiB" \
    broker_ms="${RES[$c,qrel_plugin,cpu]}" \
    goal="with the plugin: scrape <= 0.20 s, long-run broker CPU <= 0.10 of one /api/queues fetch; heap + stacks <= 2048 KiB" \
    verdict="$(cat "$T/verdict")" note="$(cat "$T/verdict.note"); qrel's own CPU ${RES[$c,qrel_plugin,qrel_cpu]} ms a cached scrape; $audit$(
      [ "$k" = "$K_DECLARED" ] || echo "; 1 in $K_DECLARED by queue arguments, the others by a policy")"
done
