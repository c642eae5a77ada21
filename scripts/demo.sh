#!/usr/bin/env bash
# The README's first command: the worked incident of the design notes, replayed on real servers.
# Installs what is missing, builds qrel and the demo workload, and starts in a temp dir, on free
# loopback ports: redis-server and PostgreSQL, the workload (orders through an outbox to a Redis
# stream, a mailer with a dedup table and claim-before-send in PostgreSQL, whose email provider
# turns slow 30 s after start for 3 minutes), qrel_exporter with demo/qrel-demo.yml, and Prometheus with qrel's alert
# rules. Prints the URLs and the workload's phases as they happen; Ctrl-C stops everything it
# started and removes the temp dir.
# QREL_DEMO_PORT and QREL_DEMO_PROMETHEUS_PORT fix the two HTTP ports (default: free ones);
# extra arguments go to the workload (scripts/demo.sh --incident-at 10s; see
# build/qrel_demo_workload --help).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "==> 1/5 dependencies"
bash scripts/deps.sh
echo "==> 2/5 build"
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target qrel_exporter qrel_demo_workload >/dev/null
echo "    built build/qrel_exporter and build/qrel_demo_workload"

D=$(mktemp -d "${TMPDIR:-/tmp}/qrel-demo.XXXXXX")
chmod 755 "$D" # PostgreSQL runs as the postgres user when we are root
pids=()
pg_data=""
stop() {
  trap '' INT TERM # a second Ctrl-C must not cut the clean-up short
  echo
  echo "==> stopping the demo"
  # The workload first, so that it does not see its servers go away.
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -f "$D/redis/redis.pid" ]; then
    kill "$(cat "$D/redis/redis.pid")" 2>/dev/null || true
    for _ in $(seq 1 100); do [ -f "$D/redis/redis.pid" ] || break; sleep 0.02; done
  fi
  if [ -n "$pg_data" ] && [ -f "$pg_data/postmaster.pid" ]; then
    as_postgres "$PGBIN/pg_ctl" -D "$pg_data" -m fast -w -t 10 stop >/dev/null 2>&1 || true
  fi
  rm -rf "$D"
  echo "    done"
}
trap stop EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# initdb and pg_ctl refuse to run as root: as root they run as the postgres user.
as_postgres() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
# wait_until SECONDS WHAT CMD...: polls CMD until it succeeds, or says WHAT failed and exits.
wait_until() {
  local tries=$(($1 * 20)) what=$2
  shift 2
  for _ in $(seq 1 "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "demo: $what did not start; its log:" >&2
  return 1
}

echo "==> 3/5 redis-server and PostgreSQL"
mkdir -p "$D/redis"
redis_port=$(free_port)
redis-server --bind 127.0.0.1 --port "$redis_port" --daemonize yes --pidfile "$D/redis/redis.pid" \
  --dir "$D/redis" --logfile "$D/redis/redis.log" --save '' --appendonly no >/dev/null
wait_until 5 redis-server redis-cli -p "$redis_port" ping || { tail "$D/redis/redis.log" >&2; exit 1; }
echo "    redis-server on 127.0.0.1:$redis_port"

PGBIN=$(dirname "$(command -v initdb 2>/dev/null || true)")
[ -x "$PGBIN/initdb" ] || PGBIN=$(pg_config --bindir)
pg_port=$(free_port)
mkdir -p "$D/pg"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$D/pg"
as_postgres "$PGBIN/initdb" -D "$D/pg/data" -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8 \
  >"$D/pg/initdb.log" 2>&1 || { cat "$D/pg/initdb.log" >&2; exit 1; }
pg_data=$D/pg/data
as_postgres "$PGBIN/pg_ctl" -D "$pg_data" -l "$D/pg/server.log" -w -t 30 \
  -o "-c listen_addresses=127.0.0.1 -p $pg_port -k $D/pg -c fsync=off" start >/dev/null \
  || { cat "$D/pg/server.log" >&2; exit 1; }
echo "    PostgreSQL on 127.0.0.1:$pg_port (user postgres, database postgres)"

echo "==> 4/5 the workload and qrel_exporter"
build/qrel_demo_workload --redis "127.0.0.1:$redis_port" \
  --postgres "host=127.0.0.1 port=$pg_port user=postgres dbname=postgres" --report-every 30s "$@" \
  >"$D/workload.log" 2>&1 &
workload_pid=$!
pids+=("$workload_pid")
wait_until 5 "the workload" grep -q 'phase=normal' "$D/workload.log" || { cat "$D/workload.log" >&2; exit 1; }

sed -e "s/\${REDIS_PORT}/$redis_port/" -e "s/\${PG_PORT}/$pg_port/" demo/qrel-demo.yml >"$D/qrel.yml"
build/qrel_exporter --config.file="$D/qrel.yml" --web.listen-address="127.0.0.1:${QREL_DEMO_PORT:-0}" \
  2>"$D/exporter.log" &
pids+=($!)
exporter_address() { sed -nE 's/.*msg=listening address=([^ ]+).*/\1/p' "$D/exporter.log" | tail -1; }
wait_until 5 qrel_exporter grep -q 'msg=listening' "$D/exporter.log" || { cat "$D/exporter.log" >&2; exit 1; }
exporter=$(exporter_address)
echo "    qrel_exporter on $exporter"

echo "==> 5/5 Prometheus"
prom_port=${QREL_DEMO_PROMETHEUS_PORT:-$(free_port)}
mkdir -p "$D/prom"
sed "s/\${EXPORTER_ADDRESS}/$exporter/" demo/prometheus.yml >"$D/prom/prometheus.yml"
ln -s "$root/alerts" "$D/prom/alerts" # rule_files: alerts/*.yml, relative to the config file
compgen -G "alerts/*.yml" >/dev/null || echo "    (no alerts/*.yml in this checkout: Prometheus runs without rules)"
prometheus --config.file="$D/prom/prometheus.yml" --storage.tsdb.path="$D/prom/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$D/prometheus.log" 2>&1 &
pids+=($!)
wait_until 10 Prometheus curl -fs "http://127.0.0.1:$prom_port/-/ready" || { tail "$D/prometheus.log" >&2; exit 1; }
echo "    Prometheus on 127.0.0.1:$prom_port"

prom=http://127.0.0.1:$prom_port
# The UI's paths as this Prometheus serves them (Debian's: /classic/alerts, /classic/graph).
# shellcheck source=lib/prometheus_ui.sh
. scripts/lib/prometheus_ui.sh
ui=$(prometheus_ui_prefix "$prom") || {
  echo "    (this Prometheus answers neither /alerts nor /classic/alerts: links below may not open)"
  ui=""
}
graph() { prometheus_graph_url "$prom" "$ui" "$1"; } # graph EXPR: the last 15 minutes of EXPR
cat <<TXT

The incident demo is running: a shop's orders go through an outbox in PostgreSQL to the Redis
stream "orders"; the mailer (group "mailer") holds each entry on a 3 s lease (XAUTOCLAIM
min-idle), dead-letters it to "orders.dlq" after 3 deliveries, records each delivery in the
dedup table handled_orders, and sends the email with claim-before-send in confirmation_claims.
The email provider answers in about 24 ms; 30 s after start it turns slow for 3 minutes,
answering in 6.5-8 s (and still succeeding)${*:+ - or as your flags say: $*}.
Leases expire under running handlers, orders are redelivered, and the DLQ fills with orders
whose email was sent, once each.

  qrel landing page    http://$exporter/
  qrel metrics         http://$exporter/metrics
  Prometheus alerts    $prom$ui/alerts
  lease margin         $(graph 'qrel_lease_margin_ratio')
  dead letters         $(graph 'qrel_dead_letter_messages')
  redelivered          $(graph 'qrel_messages_redelivered')

What to expect once the provider turns slow:
  - qrel_lease_margin_ratio falls below 1 within seconds (the claim table's: about 0.4),
  - qrel_messages_redelivered climbs, and qrel_dead_letter_messages grows from ~10 s on,
  - on the alerts page QrelLeaseMarginCritical and QrelDeadLetterQueueNotEmpty turn pending at
    once and fire after their 'for:' (2 and 5 minutes).
Start or end the incident yourself:  redis-cli -p $redis_port SET qrel-demo:phase incident
  (or normal; DEL qrel-demo:phase returns to the schedule).
Files and logs: $D (removed on exit). Press Ctrl-C to stop everything.

TXT
# The workload's phase changes and status lines as they happen (tail ends with the workload).
tail -n +1 -F --pid="$workload_pid" "$D/workload.log" 2>/dev/null \
  | grep --line-buffered -E 'phase=|status|redis|postgres' &
wait "$workload_pid" || true # until Ctrl-C (or the workload's --duration)
