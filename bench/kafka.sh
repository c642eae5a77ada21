#!/usr/bin/env bash
# kafka.sh: qrel_exporter on many Kafka partitions and consumer groups, on librdkafka's mock
# cluster (tests/peers/kafka_mock: no real broker can be installed here), against the floor: the
# same requests sent through librdkafka by bench/kafka_floor.c.
#
# The workload: TOPICS topics of PARTS partitions each (1,000 partitions by default) on BROKERS
# mock brokers, RECORDS records per partition an hour old; GROUPS consumer groups, group i
# consuming topic i mod TOPICS. Two shapes, each on a fresh cluster:
#   lag        every group has committed RECORDS - 10 on every partition: 10 messages of lag
#              everywhere, so lag in seconds needs the record at each committed offset;
#   caught-up  every group has committed RECORDS: no lag, no record to read.
# For each shape it measures qrel's scrape time (median and fastest of SCRAPES), its CPU, peak
# RSS and own memory (own_kib: RssAnon; heap_kib: heap, arenas and stacks alone), the Kafka requests per scrape by type
# (from librdkafka's protocol log, in a second exporter with debug on, so that the logging does
# not slow the timed one), and the floor's time and requests for the same work. No Kafka exporter
# is packaged by Debian 12 (Burrow 1.2 is a lag checker with its own HTTP API that reads
# __consumer_offsets and needs ZooKeeper, neither of which the mock serves), so there is no peer.
#
# Needs: bash, curl, awk, cc and librdkafka-dev, a built qrel_exporter and tests/kafka_mock.
set -euo pipefail
export LC_ALL=C

TOPICS=100
PARTS=10
GROUPS_N=200
BROKERS=3
RECORDS=100
SCRAPES=15
WARMUP=3
SHAPES="lag caught-up"
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
QREL_BUILD_DIR=${QREL_BUILD_DIR:-$SRC_DIR/build}
# shellcheck source=lib.sh
. "$SRC_DIR/bench/lib.sh"

usage() {
  cat <<'EOF'
Usage: bench/kafka.sh [--topics N] [--partitions N] [--groups N] [--brokers N] [--records N]
                      [--scrapes N] [--warmup N] [--shapes "lag caught-up"]

  --topics N       topics (default 100)
  --partitions N   partitions per topic (default 10)
  --groups N       consumer groups, group i on topic i mod topics (default 200)
  --brokers N      mock brokers, at most 8 (default 3)
  --records N      records per partition, at least 11 (default 100)
  --scrapes N      measured scrapes and floor runs per shape (default 15)
  --warmup N       unmeasured scrapes first (default 3)
  --shapes "LIST"  lag and/or caught-up (default both)

Needs build/qrel_exporter and build/tests/kafka_mock (QREL_BUILD_DIR to use another build).
The table goes to stdout, progress to stderr.
With BENCH_RESULTS=FILE set, one result row per shape is appended to FILE (bench/all.sh sets it).
EOF
}

parse_options "--topics:TOPICS --partitions:PARTS --groups:GROUPS_N --brokers:BROKERS --records:RECORDS \
  --scrapes:SCRAPES --warmup:WARMUP --shapes:SHAPES" "$@"
for v in TOPICS PARTS GROUPS_N BROKERS RECORDS SCRAPES WARMUP; do need_num "$v" "${!v}"; done
[ "$BROKERS" -le 8 ] || die "--brokers: at most 8"
[ "$RECORDS" -ge 11 ] || die "--records: at least 11 (the lag shape commits 10 short of the end)"
read -ra SHAPE_LIST <<<"$SHAPES"
for s in "${SHAPE_LIST[@]}"; do case $s in lag|caught-up) ;; *) die "--shapes: lag or caught-up, got \"$s\"" ;; esac; done
EXPORTER=$QREL_BUILD_DIR/qrel_exporter
MOCK=$QREL_BUILD_DIR/tests/kafka_mock
[ -x "$EXPORTER" ] || die "$EXPORTER not found: build first"
[ -x "$MOCK" ] || die "$MOCK not found: build first"

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-kafkabench.XXXXXX")
PIDS=()
EXP_PID=
cleanup() {
  [ -z "$EXP_PID" ] || { kill "$EXP_PID" 2>/dev/null || true; wait "$EXP_PID" 2>/dev/null || true; }
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
progress() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

FLOOR=$T/kafka_floor
cc -O2 -o "$FLOOR" "$SRC_DIR/bench/kafka_floor.c" -lrdkafka -lpthread || die "cannot build bench/kafka_floor.c"
TCK=$(getconf CLK_TCK)
declare -A RES

# mock_args SHAPE: kafka_mock's arguments for the workload (one commit per group: its -c run)
mock_args() {
  local shape=$1 t p g committed first
  first=$(( ($(date +%s) - 3600) * 1000 ))
  committed=$RECORDS
  [ "$shape" = lag ] && committed=$((RECORDS - 10))
  for ((t = 0; t < TOPICS; t++)); do
    echo "-t"; echo "t$t:$PARTS"
    for ((p = 0; p < PARTS; p++)); do echo "-m"; echo "t$t:$p:$RECORDS:$first:1000"; done
  done
  for ((g = 0; g < GROUPS_N; g++)); do
    for ((p = 0; p < PARTS; p++)); do echo "-c"; echo "g$g:t$((g % TOPICS)):$p:$committed"; done
  done
}

write_config() { # write_config FILE DEBUG(0|1)
  {
    echo "global:"
    echo "  timeout: 30s"
    echo "sources:"
    echo "  - name: bench"
    echo "    kind: kafka"
    echo "    bootstrap_servers: $BOOTSTRAP"
    echo "    max_lag_fetches: 100000"
    [ "$2" = 0 ] || printf '    librdkafka:\n      debug: protocol\n'
    echo "    groups:"
    for ((g = 0; g < GROUPS_N; g++)); do echo "      - {name: g$g, topics: [t$((g % TOPICS))]}"; done
  } > "$1"
}

start_qrel() { # start_qrel CONFIG LEVEL
  : > "$T/exporter.log"
  "$EXPORTER" --config.file="$1" --web.listen-address=127.0.0.1:0 --log.level="$2" 2>>"$T/exporter.log" &
  EXP_PID=$!
  wait_for 30 "qrel_exporter to listen" listening || die "qrel_exporter did not start"
}
stop_qrel() { kill "$EXP_PID" 2>/dev/null || true; wait "$EXP_PID" 2>/dev/null || true; EXP_PID=; }
scrape_to() { curl -s --max-time 60 -o "$1" -w '%{time_total}' -H 'X-Prometheus-Scrape-Timeout-Seconds: 30' "http://$ADDR/metrics"; }
up() { grep -Eq '^qrel_collector_up\{[^}]*source="bench"[^}]*\} 1$' "$1"; }

for shape in "${SHAPE_LIST[@]}"; do
  progress "$shape: starting the mock cluster ($BROKERS brokers, $TOPICS x $PARTS partitions, $GROUPS_N groups)"
  mapfile -t args < <(mock_args "$shape")
  t0=$SECONDS
  KAFKA_MOCK_BROKERS=$BROKERS start_kafka_mock BOOTSTRAP "${args[@]}"
  progress "$shape: ready after $((SECONDS - t0)) s"
  for ((g = 0; g < GROUPS_N; g++)); do echo "g$g t$((g % TOPICS))"; done > "$T/groups.txt"

  # timed scrapes, debug off
  write_config "$T/qrel.yml" 0
  start_qrel "$T/qrel.yml" info
  for ((i = 0; i < WARMUP; i++)); do scrape_to "$T/body.txt" >/dev/null; done
  up "$T/body.txt" || { grep -E '^qrel_collector_(up|errors)' "$T/body.txt" >&2 || true; tail -5 "$T/exporter.log" >&2; die "$shape: qrel reports the source as down"; }
  : > "$T/times"; : > "$T/own"; n_up=0
  c0=$(cpu_ticks "$EXP_PID")
  for ((i = 0; i < SCRAPES; i++)); do
    scrape_to "$T/body.txt" >> "$T/times"; echo >> "$T/times"
    mem_settled_kib "$EXP_PID" >> "$T/own"
    if up "$T/body.txt"; then n_up=$((n_up + 1)); fi
  done
  c1=$(cpu_ticks "$EXP_PID")
  RES[$shape,median]=$(median < "$T/times")
  RES[$shape,min]=$(sort -g "$T/times" | head -1)
  RES[$shape,cpu]=$(awk -v d=$((c1 - c0)) -v k="$SCRAPES" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$shape,rss]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$shape,own]=$(col_max 1 "$T/own")
  RES[$shape,heap]=$(col_max 2 "$T/own")
  RES[$shape,peak_own]=$(peak_own_kib "$EXP_PID")
  RES[$shape,up]="$n_up/$SCRAPES"
  RES[$shape,lag]=$(awk '/^qrel_queue_messages\{/ { s += $NF } END { printf "%d", s }' "$T/body.txt")
  RES[$shape,lag_s]=$(awk '/^qrel_consumer_lag_seconds\{/ { if ($NF > m) m = $NF; n++ } END { printf "%d series, max %.0f s", n, m }' "$T/body.txt")
  RES[$shape,bytes]=$(wc -c < "$T/body.txt")
  stop_qrel
  progress "$shape: qrel median $(fmt "${RES[$shape,median]}" %.4f) s, up ${RES[$shape,up]}"

  # requests per scrape, debug on (librdkafka's protocol log)
  write_config "$T/qrel-debug.yml" 1
  start_qrel "$T/qrel-debug.yml" debug
  for ((i = 0; i < WARMUP; i++)); do scrape_to "$T/body.txt" >/dev/null; done
  off=$(stat -c %s "$T/exporter.log")
  for ((i = 0; i < 3; i++)); do scrape_to "$T/body.txt" >/dev/null; done
  sleep 0.5
  RES[$shape,reqs]=$(tail -c +$((off + 1)) "$T/exporter.log" | grep -o 'Sent [A-Za-z]*Request' | sort | uniq -c |
    awk '{ sub(/Request$/, "", $3); printf "%s %.1f ", $3, $1 / 3; t += $1 } END { printf "total %.1f", t / 3 }')
  stop_qrel
  progress "$shape: qrel requests per scrape: ${RES[$shape,reqs]}"

  # the floor
  read -r _ fmin _ fmed _ _ _ parts _ reads < <("$FLOOR" "$BOOTSTRAP" "$T/groups.txt" "$SCRAPES" | tee "$T/floor.out" | head -1)
  RES[$shape,fmed]=$fmed; RES[$shape,fmin]=$fmin; RES[$shape,parts]=$parts; RES[$shape,reads]=$reads
  RES[$shape,freqs]=$(sed -n 's/^requests per run: //p' "$T/floor.out")
  progress "$shape: floor median $(fmt "$fmed" %.4f) s; ${RES[$shape,freqs]}"
  servers_stop
  # shellcheck disable=SC2034 # servers_stop (tests/lib/servers.sh) reads it
  PIDS=()
done

echo "# qrel kafka benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$EXPORTER"); librdkafka $(dpkg-query -W -f '${Version}' librdkafka1 2>/dev/null || echo '?') (qrel, the floor and the mock cluster)"
echo "# workload: $TOPICS topics x $PARTS partitions on $BROKERS mock brokers, $RECORDS records each; $GROUPS_N groups, group i on topic i mod $TOPICS;"
echo "#   lag: every group 10 messages behind on every partition; caught-up: every group at the end"
printf '%-10s %-6s %9s %9s %10s %8s %8s %8s %8s %s\n' shape who median_s min_s cpu_ms/scr rss_mib own_kib heap_kib peak_own requests/scrape
for shape in "${SHAPE_LIST[@]}"; do
  printf '%-10s %-6s %9s %9s %10s %8s %8s %8s %8s %s\n' "$shape" qrel "$(fmt "${RES[$shape,median]}" %.4f)" \
    "$(fmt "${RES[$shape,min]}" %.4f)" "${RES[$shape,cpu]}" "${RES[$shape,rss]}" "${RES[$shape,own]}" "${RES[$shape,heap]}" \
    "${RES[$shape,peak_own]}" "${RES[$shape,reqs]}"
  printf '%-10s %-6s %9s %9s %10s %8s %8s %8s %8s %s\n' "$shape" floor "$(fmt "${RES[$shape,fmed]}" %.4f)" \
    "$(fmt "${RES[$shape,fmin]}" %.4f)" - - - - - "${RES[$shape,freqs]}"
done
for shape in "${SHAPE_LIST[@]}"; do
  echo "# $shape: qrel up ${RES[$shape,up]}; lag in messages summed over the groups ${RES[$shape,lag]}; qrel_consumer_lag_seconds ${RES[$shape,lag_s]}; body ${RES[$shape,bytes]} bytes; the floor saw ${RES[$shape,parts]} partitions and read ${RES[$shape,reads]} lagging records"
  awk -v q="${RES[$shape,median]}" -v f="${RES[$shape,fmed]}" -v s="$shape" -v heap="${RES[$shape,heap]}" \
    'BEGIN { printf "# %s: qrel scrape %.2fx the floor; heap + stacks %d KiB (goal <= 2048: %s)\n", s, (f > 0) ? q / f : 0, heap, heap <= 2048 ? "met" : "missed" }'
  verdict=met
  [ "${RES[$shape,heap]}" -le 2048 ] || verdict="missed: heap + stacks ${RES[$shape,heap]} KiB"
  bench_result shape="$shape" size="$((TOPICS * PARTS)) partitions, $GROUPS_N groups" stat=median \
    qrel_s="$(fmt "${RES[$shape,median]}" %.4f)" floor_s="$(fmt "${RES[$shape,fmed]}" %.4f)" \
    x_floor="$(ratio "${RES[$shape,median]}" "${RES[$shape,fmed]}")" heap="${RES[$shape,heap]} KiB" \
    goal="heap + stacks <= 2048 KiB" verdict="$verdict" \
    note="requests per scrape ${RES[$shape,reqs]##*total } (floor ${RES[$shape,freqs]##*total })"
done
