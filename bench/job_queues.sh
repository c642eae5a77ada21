#!/usr/bin/env bash
# job_queues.sh: the Redis job-framework kinds (rq, sidekiq, celery, bullmq) at 1,000 queues,
# beside the floor and the peer, in two workload shapes:
#   shallow  every queue holds 1 ready job;
#   deep     every queue holds 20 ready jobs.
# The jobs are made by each framework's own client (RQ's enqueue_many, Sidekiq's push_bulk,
# Celery's apply_async, BullMQ's addBulk), never written by hand.
#
# For each kind and shape it prints the median and fastest collection time of `qrel scrape` (the
# qrel_collector_duration_seconds it reports: connect, every round trip and parsing, without the
# process start), the floor (the very commands qrel sent, captured with MONITOR during one scrape,
# replayed as one pipeline over an open connection by bench/pipe_floor.c, a hiredis reader that
# only counts the replies: tighter than `redis-cli --pipe`, whose own start and closing ECHO
# outweigh the commands at this size), the ratio of the fastest runs (the goal is at most 2), the
# commands per
# scrape, and the peer: prometheus-redis-exporter
# reading the queue lengths with --check-keys (depth only; no lease, age or dead-letter figures),
# its median scrape time. And qrel's memory: a qrel_exporter on the same source, the largest
# RssAnon (own) and heap + stacks (heap, the 2 MiB goal's figure) after each of 3 scrapes. A
# missed goal is reported, not an error. See bench/README.md.
#
# Needs: redis-server, redis-cli, python3-rq, ruby-sidekiq, python3-celery, npm (BullMQ on Node 22
# from npm, as tests/integration/bullmq.sh installs it), prometheus-redis-exporter, curl, and a
# built qrel (build/qrel, or QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/job_queues.sh [--queues N] [--scrapes N] [--kinds "rq sidekiq celery bullmq"]

  --queues N     queues per kind (default 1000)
  --scrapes N    measured runs of each side (default 11)
  --kinds LIST   kinds to measure (default "rq sidekiq celery bullmq")

With BENCH_RESULTS=FILE set, one result row per shape is appended to FILE (bench/all.sh sets it).
EOF
}

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/bench/lib.sh"
QUEUES=1000
SCRAPES=11
KINDS="rq sidekiq celery bullmq"
parse_options "--queues:QUEUES --scrapes:SCRAPES --kinds:KINDS" "$@"
BUILD=${QREL_BUILD_DIR:-$root/build}
QREL=$BUILD/qrel
[ -x "$QREL" ] || { echo "job_queues.sh: build qrel first ($QREL)" >&2; exit 1; }
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
FLOOR=$T/pipe_floor
read -ra HIREDIS <<<"$(pkg-config --cflags --libs hiredis)"
cc -O2 -o "$FLOOR" "$root/bench/pipe_floor.c" "${HIREDIS[@]}"
cleanup() {
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
progress() { printf '%s\n' "$*" >&2; }

PORT=''
start_redis PORT
R() { redis-cli -p "$PORT" "$@"; }
URL=redis://127.0.0.1:$PORT/0

# ---- BullMQ from npm, installed once into the build dir (the test's own pinned lock)
bullmq_peers() {
  QREL_SOURCE_DIR=$root QREL_BUILD_DIR=$BUILD \
    npm_peers_install bullmq "BullMQ and Node 22, about a minute" >&2
  BULL_DIR=$PEERS
}

# populate KIND DEPTH: QUEUES queues of DEPTH ready jobs each, through the framework's client.
populate() {
  local kind=$1 depth=$2
  R FLUSHALL >/dev/null
  case $kind in
    rq)
      (cd "$root/tests/peers/rq" && $PY - "$URL" "$QUEUES" "$depth" <<'PY'
import sys
from redis import Redis
from rq import Queue
conn = Redis.from_url(sys.argv[1])
for i in range(int(sys.argv[2])):
    q = Queue("q%d" % i, connection=conn)
    q.enqueue_many([Queue.prepare_data("rqjobs.ok") for _ in range(int(sys.argv[3]))])
PY
      ) ;;
    sidekiq)
      REDIS_URL=$URL ruby -e '
        require ARGV[0]
        ARGV[1].to_i.times { |i| Sidekiq::Client.push_bulk("class" => OkJob, "queue" => "q#{i}", "args" => Array.new(ARGV[2].to_i) { [] }) }
      ' "$root/tests/peers/sidekiq/jobs.rb" "$QUEUES" "$depth" 2>/dev/null ;;
    celery)
      (cd "$root/tests/peers/celery" && REDIS_URL=$URL $PY - "$QUEUES" "$depth" <<'PY'
import sys
import tasks
with tasks.app.producer_or_acquire() as producer:
    for i in range(int(sys.argv[1])):
        for _ in range(int(sys.argv[2])):
            tasks.ok.apply_async(queue="q%d" % i, producer=producer)
PY
      ) ;;
    bullmq)
      bullmq_peers
      (cd "$BULL_DIR" && "$NODE" --input-type=module -e '
        import { Queue } from "bullmq";
        const [port, n, depth] = process.argv.slice(1).map(Number);
        const connection = { host: "127.0.0.1", port };
        for (let i = 0; i < n; i++) {
          const q = new Queue(`q${i}`, { connection });
          await q.addBulk(Array.from({ length: depth }, () => ({ name: "job", data: {} })));
          await q.close();
        }
        process.exit(0);
      ' "$PORT" "$QUEUES" "$depth") ;;
  esac
}

# config KIND: the qrel source. RQ and Sidekiq find their queues (rq:queues, queues); Celery and
# BullMQ are told them, as their pages advise at this size.
config() {
  local kind=$1 names
  names=$(seq 0 $((QUEUES - 1)) | sed 's/^/q/' | paste -sd, -)
  {
    echo "sources:"
    echo "  - name: bench"
    echo "    kind: $kind"
    echo "    address: 127.0.0.1:$PORT"
    case $kind in celery | bullmq) echo "    queues: [$names]" ;; esac
  } > "$T/$kind.yml"
}

# capture KIND: the commands of one scrape, from MONITOR, as a redis-cli --pipe file.
capture() {
  local kind=$1
  redis-cli -p "$PORT" MONITOR > "$T/monitor.txt" & # not through R(): $! must be redis-cli itself
  local mon=$!
  sleep 0.3
  "$QREL" scrape --config.file="$T/$kind.yml" >/dev/null
  sleep 0.3
  kill "$mon" 2>/dev/null || true
  wait "$mon" 2>/dev/null || true
  $PY - "$T/monitor.txt" "$T/floor.cmds" <<'PY'
import re, sys
out = open(sys.argv[2], "wb")
n = 0
for line in open(sys.argv[1], encoding="latin-1"):
    m = re.match(r'^\d+\.\d+ \[\d+ [^\]]+\] (.*)$', line.rstrip("\n"))
    if not m:
        continue
    args = [bytes(a, "latin-1").decode("unicode_escape").encode("latin-1")
            for a in re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))]
    if not args or args[0].upper() in (b"MONITOR", b"AUTH"):
        continue
    out.write(b"*%d\r\n" % len(args))
    for a in args:
        out.write(b"$%d\r\n%s\r\n" % (len(a), a))
    n += 1
print(n)
PY
}

measure() { # measure KIND SHAPE
  local kind=$1 shape=$2 cmds i qrel qmin floor floor_med peer pmin keys pid addr own heap x verdict
  cmds=$(capture "$kind")
  : > "$T/q.txt"; : > "$T/p.txt"
  for ((i = 0; i < SCRAPES + 2; i++)); do
    "$QREL" scrape --config.file="$T/$kind.yml" |
      awk '/^qrel_collector_duration_seconds\{/ { print $NF }' > "$T/one.txt"
    [ "$i" -ge 2 ] && cat "$T/one.txt" >> "$T/q.txt"
  done
  qrel=$(median < "$T/q.txt")
  qmin=$(sort -g "$T/q.txt" | head -1)
  # The floor: the same commands as one pipeline on an open connection (bench/pipe_floor.c).
  read -r floor floor_med _ < <("$FLOOR" "$PORT" "$T/floor.cmds" "$SCRAPES")
  # The peer: redis_exporter reading the queue lists' lengths.
  case $kind in
    rq) keys='rq:queue:*' ;; sidekiq) keys='queue:*' ;; celery) keys='q*' ;; bullmq) keys='bull:*:wait' ;;
  esac
  addr=127.0.0.1:$(free_port)
  prometheus-redis-exporter --redis.addr="redis://127.0.0.1:$PORT" --web.listen-address="$addr" \
    --check-keys="$keys" >"$T/re.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 100); do curl -fsS "http://$addr/metrics" -o /dev/null 2>/dev/null && break; sleep 0.05; done
  for ((i = 0; i < SCRAPES; i++)); do
    curl -fsS -o /dev/null -w '%{time_total}\n' "http://$addr/metrics" >> "$T/p.txt"
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  peer=$(median < "$T/p.txt")
  pmin=$(sort -g "$T/p.txt" | head -1)
  read -r own heap < <(exporter_mem "$T/$kind.yml" 3)
  printf '| %-8s | %-7s | %9s | %9s | %15s | %5s | %8s | %9s | %7s | %8s |\n' "$kind" "$shape" \
    "$(awk -v q="$qrel" 'BEGIN { printf "%.1f ms", q * 1000 }')" \
    "$(awk -v q="$qmin" 'BEGIN { printf "%.1f ms", q * 1000 }')" \
    "$(awk -v f="$floor" -v m="$floor_med" 'BEGIN { printf "%.1f (%.1f) ms", f * 1000, m * 1000 }')" \
    "$(awk -v q="$qmin" -v f="$floor" 'BEGIN { if (f > 0) printf "%.2f", q / f; else print "-" }')" \
    "$cmds" "$(awk -v p="$peer" 'BEGIN { printf "%.1f ms", p * 1000 }')" "$own" \
    "$heap $([ "$heap" -le 2048 ] && echo met || echo missed)"
  # The result row: the fastest runs of each side, as the ratio's goal reads them.
  x=$(ratio "$qmin" "$floor")
  verdict=$(awk -v x="$x" -v h="$heap" 'BEGIN { m = ""
    if (x == "-" || x > 2) m = m "; " x "x the floor (goal <= 2)"
    if (h > 2048) m = m "; heap + stacks " h " KiB (goal <= 2048)"
    print (m == "" ? "met" : "missed: " substr(m, 3)) }')
  bench_result shape="$kind $shape" size="$QUEUES queues" stat=fastest qrel_s="$(fmt "$qmin" %.4f)" \
    floor_s="$(fmt "$floor" %.4f)" x_floor="$x" peer="redis_exporter --check-keys" peer_s="$(fmt "$pmin" %.4f)" \
    heap="$heap KiB" goal="<= 2x the floor (fastest runs), heap + stacks <= 2048 KiB" verdict="$verdict" \
    note="$cmds commands per scrape; peer median $(awk -v p="$peer" 'BEGIN { printf "%.1f ms", p * 1000 }')"
}

echo "# qrel job_queues benchmark, $BENCH_DATE, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$QREL")"
echo "# $QUEUES queues per kind, $SCRAPES runs each side; redis-server $(redis-server --version | sed -nE 's/.*v=([^ ]+).*/\1/p')"
echo "| kind     | shape   | qrel med  | qrel min  | floor min (med) | ratio | commands | peer med  | own_kib | heap_kib |"
echo "|----------|---------|-----------|-----------|-----------------|-------|----------|-----------|---------|----------|"
for kind in $KINDS; do
  config "$kind"
  for shape in shallow deep; do
    progress "$kind, $shape: making $QUEUES queues through the framework's client"
    populate "$kind" "$([ "$shape" = shallow ] && echo 1 || echo 20)"
    measure "$kind" "$shape"
  done
done
