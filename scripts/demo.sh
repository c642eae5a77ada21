#!/usr/bin/env bash
# The README's first command: installs what is missing, builds qrel, starts a throwaway
# redis-server with a small at-least-once workload (demo/workload.sh) and qrel_exporter watching
# it, prints the URLs to open, and stops everything it started on Ctrl-C.
# QREL_DEMO_PORT sets the exporter's port (default 19318).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "==> 1/4 dependencies"
bash scripts/deps.sh
echo "==> 2/4 build"
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
echo "    built build/qrel_exporter and build/qrel"

D=$(mktemp -d "${TMPDIR:-/tmp}/qrel-demo.XXXXXX")
pids=()
redis_port=""
stop() {
  echo
  echo "==> stopping the demo"
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [ -n "$redis_port" ] && redis-cli -p "$redis_port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$D"
  echo "    done"
}
trap stop EXIT
trap 'exit 130' INT TERM

echo "==> 3/4 redis-server and the workload"
redis_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 26379)
redis-server --bind 127.0.0.1 --port "$redis_port" --daemonize yes --dir "$D" \
  --logfile "$D/redis.log" --save '' --appendonly no >/dev/null
until redis-cli -p "$redis_port" ping 2>/dev/null | grep -q PONG; do sleep 0.05; done
echo "    redis-server on 127.0.0.1:$redis_port (data in $D)"
bash demo/workload.sh "$redis_port" > "$D/workload.log" 2>&1 &
pids+=($!)

cat > "$D/qrel.yml" <<YML
sources:
  - name: demo
    kind: redis_stream
    address: 127.0.0.1:$redis_port
    streams:
      - name: orders
        claim_min_idle: 3s
        max_deliveries: 3
        dead_letter_stream: orders.dlq
YML

echo "==> 4/4 qrel_exporter"
port=${QREL_DEMO_PORT:-19318}
build/qrel_exporter --config.file="$D/qrel.yml" --web.listen-address="127.0.0.1:$port" \
  2> "$D/exporter.log" &
pids+=($!)
for _ in $(seq 1 50); do grep -qs 'msg=listening' "$D/exporter.log" && break; sleep 0.1; done
if ! grep -q 'msg=listening' "$D/exporter.log"; then
  cat "$D/exporter.log" >&2
  echo "qrel_exporter did not start (is port $port taken? set QREL_DEMO_PORT)" >&2
  exit 1
fi
cat <<TXT

qrel is running on a demo workload. Open:
  http://127.0.0.1:$port/          landing page: sources and their health
  http://127.0.0.1:$port/metrics   the metrics Prometheus would scrape

Things to watch (the provider turns slow for 20 s every minute, from second 40):
  curl -s 127.0.0.1:$port/metrics | grep -E 'qrel_(lease_margin_ratio|messages_redelivered|dead_letter_messages|queue_messages)'
  - qrel_lease_margin_ratio falls below 1 while handlers outlive the 3 s lease,
  - qrel_messages_redelivered climbs, and qrel_dead_letter_messages fills with work that was done.
The configuration is $D/qrel.yml; logs are in $D. Press Ctrl-C to stop everything.
TXT
wait "${pids[@]}"
