#!/usr/bin/env bash
# profile_rabbitmq.sh: the instructions of qrel_exporter's cached RabbitMQ scrape, by callgrind,
# for each shape of bench/rabbitmq.sh (every Kth queue with a dead-letter exchange).
#
# Counts, not times: the machine is shared, and callgrind's instruction count of a scrape is the
# same from run to run whatever else runs. Per shape: a fresh RabbitMQ node with N queues (the
# workload of bench/rabbitmq.sh), qrel_exporter under callgrind with instrumentation off, one
# scrape that refreshes the slow part, then --scrapes scrapes served from the cache with
# instrumentation on. Prints the instructions per cached scrape and the functions that cost most
# (inclusive), and keeps callgrind's output in --out for callgrind_annotate.
#
# Needs: valgrind (callgrind_control, callgrind_annotate), rabbitmq-server, curl, python3.
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/profile_rabbitmq.sh [--queues N] [--dlq-every "10 1"] [--scrapes N] [--top N]
                                 [--out DIR] [--qrel PATH]

  --queues N          queues per shape (default 2000)
  --dlq-every "LIST"  the shapes: every Kth queue has a dead-letter exchange (default "10 1")
  --scrapes N         cached scrapes counted per shape (default 3)
  --top N             functions listed per shape (default 25)
  --out DIR           where callgrind.out.K is kept (default: a temp dir, removed at exit)
  --qrel PATH         qrel_exporter (default: build/qrel_exporter in this checkout)
EOF
}

QUEUES=2000
SHAPES="10 1"
SCRAPES=3
TOP=25
OUT=
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=../tests/lib/rabbitmq.sh
. "$SRC_DIR/tests/lib/rabbitmq.sh"
parse_options "--queues:QUEUES --dlq-every:SHAPES --scrapes:SCRAPES --top:TOP --out:OUT --qrel:QREL_BIN" "$@"
need_num --queues "$QUEUES"
need_num --scrapes "$SCRAPES"
need_num --top "$TOP"
need_tools valgrind callgrind_control callgrind_annotate curl python3
[ -x "$QREL_BIN" ] || die "$QREL_BIN not found: build first or pass --qrel"

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-profile.XXXXXX")
chmod 755 "$T"
[ -n "$OUT" ] || OUT=$T
mkdir -p "$OUT"
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
echo guest > "$T/pass"

scrape() { curl -fsS -o "$T/body.txt" --max-time 600 -H 'X-Prometheus-Scrape-Timeout-Seconds: 500' "http://$ADDR/metrics"; }

for k in $SHAPES; do
  need_num --dlq-every "$k"
  rabbit_start "$T/rabbit.$k"
  api=http://127.0.0.1:$RABBIT_MGMT/api
  # bench/rabbitmq.sh's queues: scale.I, every Kth dead-lettering to scale.dlq through scale.dlx
  python3 - "$QUEUES" "$k" > "$T/defs.json" <<'PY'
import json, sys
n, k = int(sys.argv[1]), int(sys.argv[2])
q = [{"name": f"scale.{i}", "vhost": "/", "durable": False, "auto_delete": False,
      "arguments": ({"x-dead-letter-exchange": "scale.dlx", "x-dead-letter-routing-key": "dead"} if i % k == 0 else {})}
     for i in range(n)]
q.append({"name": "scale.dlq", "vhost": "/", "durable": False, "auto_delete": False, "arguments": {}})
print(json.dumps({"queues": q,
  "exchanges": [{"name": "scale.dlx", "vhost": "/", "type": "direct", "durable": True, "auto_delete": False, "internal": False, "arguments": {}}],
  "bindings": [{"source": "scale.dlx", "vhost": "/", "destination": "scale.dlq", "destination_type": "queue", "routing_key": "dead", "arguments": {}}]}))
PY
  curl -fsS -u guest:guest -H 'content-type: application/json' -X POST "$api/definitions" \
    --data-binary @"$T/defs.json" --max-time 600 > /dev/null
  with_stats() {
    [ "$(curl -fsS "http://127.0.0.1:$RABBIT_PROM/metrics/detailed?family=queue_coarse_metrics" |
      grep -c '^rabbitmq_detailed_queue_messages_ready{')" -ge $((QUEUES + 1)) ]
  }
  wait_for -i 1 120 "$((QUEUES + 1)) queues in the plugin's metrics" with_stats
  cat > "$T/qrel.yml" <<EOF
global: {timeout: 500s}
sources:
  - name: bench
    kind: rabbitmq
    url: http://127.0.0.1:$RABBIT_MGMT
    prometheus_url: http://127.0.0.1:$RABBIT_PROM
    username: guest
    password_file: $T/pass
    consumer_timeout: 30m
    metadata_interval: 1h
EOF
  : > "$T/exporter.log"
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.out.$k" \
    "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 2>> "$T/exporter.log" &
  EXP_PID=$!
  wait_for 120 "qrel_exporter to log its listening address" listening
  scrape # the refresh, not counted
  callgrind_control -i on "$EXP_PID" > /dev/null
  for _ in $(seq 1 "$SCRAPES"); do scrape; done
  callgrind_control -i off "$EXP_PID" > /dev/null
  callgrind_control -d "$EXP_PID" > /dev/null
  kill "$EXP_PID"
  wait "$EXP_PID" 2>/dev/null || true
  EXP_PID=
  rabbit_stop "$T/rabbit.$k"
  samples=$(grep -c '^qrel_' "$T/body.txt" || true)
  # the dump on request holds the counted part only (callgrind adds .1 to its name); the file
  # written at exit holds nothing counted
  f=$OUT/callgrind.out.$k.1
  ir=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
  echo "# shape 1 in $k with a dead-letter exchange, $QUEUES queues: $samples qrel_ lines in a scrape; $ir instructions in $SCRAPES cached scrapes, $((ir / SCRAPES)) a scrape ($f)"
  callgrind_annotate --inclusive=yes "$f" 2>/dev/null | awk -v n="$TOP" '/^ *[0-9,]+ / && c++ < n'
done
