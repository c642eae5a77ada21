#!/usr/bin/env bash
# job_queues.sh: the Redis job-framework kinds (rq, sidekiq, celery, bullmq, Bull through kind
# bullmq, laravel) at 10,000 queues each (sidekiq 30,000, celery 25,000, laravel 15,000: their
# scrape per queue is the cheapest, and the goal is read where the floor takes at least 50 ms),
# beside the floor and the
# peer, in two workload shapes:
#   shallow  every queue holds 1 ready job;
#   deep     every queue holds 20 ready jobs.
# The jobs are made by each framework's own client, in its own batches (RQ's enqueue_many,
# Sidekiq's push_bulk, Celery's apply_async from four producer processes whose publishes go out
# 1,000 to a pipeline, BullMQ's and Bull's addBulk, Laravel's
# Queue::bulk), never written by hand; the time each setup took is printed.
#
# For each kind and shape it takes turns between qrel as users run it, a running qrel_exporter
# (its connection kept between scrapes, its heap warm), and the floor run the same way: the very
# commands qrel sent, captured with MONITOR during one scrape, replayed as one pipeline by a
# running bench/pipe_floor.c on its one open connection (a hiredis reader that only counts the
# replies: tighter than `redis-cli --pipe`, whose own start and closing ECHO outweigh the
# commands). qrel's figure is the exporter's own qrel_collector_duration_seconds (every round trip
# and the parsing; 1 ms resolution). It prints the median and fastest of each side, their ratio
# of medians (the goal is at most 1.5, read at a size where the floor takes at least 50 ms), the
# median of 3 `qrel scrape` runs (a fresh process: the method before, kept so that the change
# shows), the commands per scrape, Redis' own CPU per qrel scrape (used_cpu_user + used_cpu_sys
# of INFO cpu around each; the goal: at most the peer's), and the peer: prometheus-redis-exporter
# reading the queue lengths with --check-keys (depth only; no lease, age or dead-letter figures),
# its median scrape time and Redis' CPU per peer scrape. And qrel's memory: the exporter's
# largest RssAnon (own) and heap + stacks (heap, the 2 MiB goal's figure) read after each turn.
# Each phase's length goes to the progress lines. A missed goal is reported, not an error. See
# bench/README.md.
#
# Needs: redis-server, redis-cli, python3-rq, ruby-sidekiq, python3-celery, php-laravel-framework
# with php-redis, npm (BullMQ and Bull on Node 22 from npm, as tests/integration/bullmq.sh installs
# them), prometheus-redis-exporter, curl, libhiredis-dev, and a built qrel (build/qrel, or
# QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/job_queues.sh [--queues N] [--scrapes N] [--peer-scrapes N] [--kinds "LIST"]

  --queues N        queues of every kind (default: sidekiq 30000, celery 25000, the others
                    10000)
  --scrapes N       measured turns of qrel and the floor (default 11, after 2 unmeasured)
  --peer-scrapes N  measured scrapes of the peer, by far the slowest side (default 3)
  --kinds LIST      kinds to measure (default "rq sidekiq celery bullmq bull laravel"; bull is
                    Bull 4, which kind bullmq reads)
EOF
  usage_end
}

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/bench/lib.sh"
QUEUES_OPT='' # --queues; QUEUES is the kind's count (queues_of) while it is measured
SCRAPES=11
PEER_SCRAPES=3
KINDS="rq sidekiq celery bullmq bull laravel"
parse_options "--queues:QUEUES_OPT --scrapes:SCRAPES --peer-scrapes:PEER_SCRAPES --kinds:KINDS" "$@"
[ -z "$QUEUES_OPT" ] || need_num --queues "$QUEUES_OPT"
need_num --scrapes "$SCRAPES"
need_num --peer-scrapes "$PEER_SCRAPES"
for kind in $KINDS; do
  case $kind in rq | sidekiq | celery | bullmq | bull | laravel) ;; *) die "--kinds: no kind \"$kind\"" ;; esac
done
need_tools redis-server redis-cli prometheus-redis-exporter curl pkg-config cc
BUILD=${QREL_BUILD_DIR:-$root/build}
QREL=$BUILD/qrel
[ -x "$QREL" ] || die "build qrel first ($QREL)"
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

# redis_cpu_ms: Redis' own CPU so far (used_cpu_user + used_cpu_sys of INFO cpu), in ms. It holds
# the server's background ticks too (hz 10), small beside a scrape of tens of thousands of commands.
redis_cpu_ms() {
  R INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ { s += $2 } END { printf "%.3f\n", s * 1000 }'
}

# queues_of KIND: how many queues KIND gets: --queues, else its own default. Sidekiq (LLEN and
# LINDEX a queue) and Celery (four LLENs) ask Redis so little per queue that at 10,000 queues a
# scrape took 30 to 50 ms, under the 50 ms the goal is read at; each gets enough queues for well
# over 80 ms. Laravel's floor took 43-44 ms at 10,000 (quiet, 0834d28): 15,000 puts it near
# 65 ms. The others stay at 10,000.
queues_of() {
  if [ -n "$QUEUES_OPT" ]; then
    echo "$QUEUES_OPT"
    return
  fi
  case $1 in sidekiq) echo 30000 ;; celery) echo 25000 ;; laravel) echo 15000 ;; *) echo 10000 ;; esac
}

# ---- BullMQ and Bull from npm, installed once into the build dir (the test's own pinned lock)
bullmq_peers() {
  QREL_SOURCE_DIR=$root QREL_BUILD_DIR=$BUILD \
    npm_peers_install bullmq "BullMQ, Bull and Node 22, about a minute" >&2
  BULL_DIR=$PEERS
}

# populate KIND DEPTH: QUEUES (the kind's queues_of) queues q0 ... of DEPTH ready jobs each,
# through the framework's own client, in its own batches: one pipeline or transaction per queue,
# and for the Node clients 100 queues in flight at a time on one connection (ioredis pipelines
# what is in flight).
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
      # Celery publishes one message a call, with no batch API: four producer processes, each
      # with its own connection, split the queues between them. kombu's Redis channel sends each
      # message with an LPUSH of its own, on a client it makes per call: a round trip a message.
      # The channel is given one redis-py pipeline as that client instead, sent every 1,000
      # commands. The messages are still Celery's own, built by apply_async; only their sending
      # is batched (a message took about a quarter of the producer's CPU it took before).
      (cd "$root/tests/peers/celery" && REDIS_URL=$URL $PY - "$QUEUES" "$depth" <<'PY'
import multiprocessing
import sys
import tasks
n, depth = int(sys.argv[1]), int(sys.argv[2])
def fill(part):
    with tasks.app.producer_or_acquire() as producer:
        channel = producer.channel
        batch = channel.client.pipeline(transaction=False)
        channel._create_client = lambda asynchronous=False: batch
        for i in range(part, n, 4):
            for _ in range(depth):
                tasks.ok.apply_async(queue="q%d" % i, producer=producer)
            if len(batch) >= 1000:
                batch.execute()
        batch.execute()
with multiprocessing.Pool(4) as pool:
    pool.map(fill, range(4))
PY
      ) ;;
    bullmq)
      bullmq_peers
      # BullMQ's Queue reuses a connection it is given: one for every queue.
      (cd "$BULL_DIR" && "$NODE" --input-type=module -e '
        import { Queue } from "bullmq";
        import IORedis from "ioredis";
        const [port, n, depth] = process.argv.slice(1).map(Number);
        const connection = new IORedis({ host: "127.0.0.1", port, maxRetriesPerRequest: null });
        connection.setMaxListeners(0); // each queue listens on it: 100 at once is no leak
        const jobs = Array.from({ length: depth }, () => ({ name: "job", data: {} }));
        for (let i = 0; i < n; i += 100) {
          await Promise.all(Array.from({ length: Math.min(100, n - i) }, async (_, k) => {
            const q = new Queue(`q${i + k}`, { connection });
            await q.addBulk(jobs);
            await q.close();
          }));
        }
        await connection.quit();
        process.exit(0);
      ' "$PORT" "$QUEUES" "$depth") ;;
    bull)
      bullmq_peers
      # Bull 4 (npm bull, as tests/peers/bullmq/bull4.mjs drives it): Queue#addBulk, every queue's
      # commands on one client its createClient option hands out (its docs' way to share one).
      (cd "$BULL_DIR" && "$NODE" --input-type=module -e '
        import Bull from "bull";
        import IORedis from "ioredis";
        const [port, n, depth] = process.argv.slice(1).map(Number);
        const client = new IORedis({ host: "127.0.0.1", port });
        client.setMaxListeners(0); // each queue listens on it: 100 at once is no leak
        const createClient = (type) => type === "client" ? client
          : new IORedis({ host: "127.0.0.1", port, maxRetriesPerRequest: null, enableReadyCheck: false });
        const jobs = Array.from({ length: depth }, () => ({ data: {} }));
        for (let i = 0; i < n; i += 100) {
          await Promise.all(Array.from({ length: Math.min(100, n - i) }, async (_, k) => {
            const q = new Bull(`q${i + k}`, { createClient });
            await q.addBulk(jobs);
            await q.close();
          }));
        }
        await client.quit();
        process.exit(0);
      ' "$PORT" "$QUEUES" "$depth") ;;
    laravel)
      # Laravel's own Queue::bulk (RedisQueue: a queue's pushes as one pipelined transaction).
      REDIS_PORT=$PORT REDIS_PASSWORD='' RETRY_AFTER=90 LARAVEL_DIR=$T \
        php "$root/tests/peers/laravel/jobs.php" bulk q "$QUEUES" "$depth" ;;
  esac
}

# config KIND: the qrel source. RQ and Sidekiq find their queues (rq:queues, queues); Celery,
# BullMQ, Bull and Laravel are told them, as their pages advise at this size (else a SCAN of the
# whole keyspace on every scrape).
config() {
  local kind=$1 names
  names=$(seq 0 $((QUEUES - 1)) | sed 's/^/q/' | paste -sd, -)
  {
    echo "sources:"
    echo "  - name: bench"
    echo "    kind: $([ "$kind" = bull ] && echo bullmq || echo "$kind")"
    echo "    address: 127.0.0.1:$PORT"
    echo "    timeout: 60s" # the benchmark times collections: the default 10 s must not end one
    case $kind in celery | bullmq | bull | laravel) echo "    queues: [$names]" ;; esac
  } > "$T/$kind.yml"
}

# capture KIND: the commands of one scrape, from MONITOR, as a redis-cli --pipe file. MONITOR's
# output lags behind the server at tens of thousands of commands, so the capture waits for two
# markers of its own (ECHO) to come through it, one before the scrape and one after: everything
# between them is the scrape's.
capture() {
  local kind=$1
  redis-cli -p "$PORT" MONITOR > "$T/monitor.txt" & # not through R(): $! must be redis-cli itself
  local mon=$!
  marked() { R ECHO "qrel-bench-$1" >/dev/null; grep -q "\"qrel-bench-$1\"" "$T/monitor.txt"; }
  wait_for -i 0.1 60 "MONITOR to show the start marker" marked start || die "MONITOR showed nothing"
  "$QREL" scrape --config.file="$T/$kind.yml" >/dev/null
  wait_for -i 0.2 300 "MONITOR to show the end marker" marked end || die "MONITOR lost the scrape's end"
  kill "$mon" 2>/dev/null || true
  wait "$mon" 2>/dev/null || true
  $PY "$SRC_DIR/bench/monitor_resp.py" "$T/monitor.txt" "$T/floor.cmds"
}

# peer_keys KIND: redis_exporter's --check-keys pattern for the queue lists of KIND
peer_keys() {
  case $1 in
    rq) echo 'rq:queue:*' ;;
    sidekiq) echo 'queue:*' ;;
    celery) echo 'q*' ;;
    bullmq | bull) echo 'bull:*:wait' ;;
    laravel) echo 'laravel_database_queues:*' ;;
  esac
}

ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }

# exporter_start KIND: a qrel_exporter serving KIND's source, as users run it (the connection
# kept between scrapes, the heap warm); sets QPID and ADDR.
exporter_start() {
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$T/$1.yml" --web.listen-address=127.0.0.1:0 2>> "$T/exporter.log" &
  QPID=$!
  PIDS+=("$QPID")
  wait_for 5 "qrel_exporter to log its listening address" listening || die "qrel_exporter did not start"
}

# qrel_turn: one scrape of the running exporter; appends its collection time
# (qrel_collector_duration_seconds: 1 ms resolution, as the scheduler reads its monotonic clock in
# ms) to $T/q.txt and Redis' CPU over it to $T/qcpu.txt, and checks the source was up.
qrel_turn() {
  local c0
  c0=$(redis_cpu_ms)
  curl -fsS -o "$T/one.prom" "http://$ADDR/metrics" || die "scraping qrel_exporter failed"
  awk -v a="$c0" -v b="$(redis_cpu_ms)" 'BEGIN { printf "%.3f\n", b - a }' >> "$T/qcpu.txt"
  grep -q '^qrel_collector_up{.*} 1$' "$T/one.prom" || die "qrel's source was not up: $(tail -3 "$T/exporter.log")"
  awk '/^qrel_collector_duration_seconds\{/ { print $NF }' "$T/one.prom" >> "$T/q.txt"
}

# floor_turn: one run of the floor on its open connection (the coprocess FL); appends its time to
# $T/f.txt.
floor_turn() {
  local t
  echo >&"${FL[1]}"
  read -r t <&"${FL[0]}" || die "bench/pipe_floor stopped"
  echo "$t" >> "$T/f.txt"
}

measure() { # measure KIND SHAPE SETUP_S
  local kind=$1 shape=$2 setup=$3 cmds i qrel qmin floor fmin pid addr own heap x
  local verdict broker peer peer_broker c0 once omin t0 fl_in
  t0=$SECONDS
  cmds=$(capture "$kind")
  progress "  captured $cmds commands in $((SECONDS - t0)) s"
  # The earlier method, for the note: `qrel scrape`, a fresh process each time (it connects and
  # warms its heap before it collects), 3 runs.
  : > "$T/once.txt"
  for ((i = 0; i < 3; i++)); do
    "$QREL" scrape --config.file="$T/$kind.yml" | awk '/^qrel_collector_duration_seconds\{/ { print $NF }' >> "$T/once.txt"
  done
  once=$(median < "$T/once.txt")
  omin=$(sort -g "$T/once.txt" | head -1)
  # qrel as users run it, and the floor the same way: a running exporter and a running floor,
  # each on its open connection, taking turns (qrel, floor, qrel, floor ...) so that both meet
  # the same machine; 2 unmeasured turns first. Memory is read after each measured turn: after the
  # floor's run, by when the exporter has long freed the scrape (mem_kib, not mem_settled_kib,
  # whose 0.1 s waits cost more than the turns).
  t0=$SECONDS
  exporter_start "$kind"
  coproc FL { "$FLOOR" "$PORT" "$T/floor.cmds" 0; }
  : > "$T/q.txt"; : > "$T/f.txt"; : > "$T/qcpu.txt"; : > "$T/mem.txt"
  for ((i = 0; i < 2; i++)); do qrel_turn; floor_turn; done
  : > "$T/q.txt"; : > "$T/f.txt"; : > "$T/qcpu.txt"
  for ((i = 0; i < SCRAPES; i++)); do
    qrel_turn
    floor_turn
    mem_kib "$QPID" >> "$T/mem.txt"
  done
  fl_in=${FL[1]}
  exec {fl_in}>&- # the floor's stdin closed: it stops
  wait "$FL_PID" 2>/dev/null || true
  kill "$QPID" 2>/dev/null || true
  wait "$QPID" 2>/dev/null || true
  [ "$(wc -l < "$T/q.txt")" = "$SCRAPES" ] || die "$kind $shape: a qrel scrape reported no collection time"
  [ "$(wc -l < "$T/f.txt")" = "$SCRAPES" ] || die "$kind $shape: a floor run gave no time"
  broker=$(awk '{ s += $1 } END { printf "%.1f", s / NR }' "$T/qcpu.txt")
  qrel=$(median < "$T/q.txt")
  qmin=$(sort -g "$T/q.txt" | head -1)
  floor=$(median < "$T/f.txt")
  fmin=$(sort -g "$T/f.txt" | head -1)
  own=$(col_max 1 "$T/mem.txt")
  heap=$(col_max 2 "$T/mem.txt")
  progress "  $SCRAPES turns of qrel and the floor in $((SECONDS - t0)) s"
  # The peer: redis_exporter reading the queue lists' lengths, and Redis' CPU over its scrapes.
  # It opens a new connection to Redis for every scrape, so a first scrape has nothing to warm
  # that later ones keep: no unmeasured scrape, only a wait for its port.
  t0=$SECONDS
  : > "$T/p.txt"
  addr=127.0.0.1:$(free_port)
  prometheus-redis-exporter --redis.addr="redis://127.0.0.1:$PORT" --web.listen-address="$addr" \
    --check-keys="$(peer_keys "$kind")" >"$T/re.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  wait_for 10 "redis_exporter to listen on $addr" curl -fs -o /dev/null "http://$addr/" ||
    die "redis_exporter did not start: $(tail -3 "$T/re.log")"
  c0=$(redis_cpu_ms)
  for ((i = 0; i < PEER_SCRAPES; i++)); do
    curl -fsS -o /dev/null -w '%{time_total}\n' "http://$addr/metrics" >> "$T/p.txt"
  done
  peer_broker=$(awk -v a="$c0" -v b="$(redis_cpu_ms)" -v n="$PEER_SCRAPES" 'BEGIN { printf "%.1f", (b - a) / n }')
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  peer=$(median < "$T/p.txt")
  progress "  $PEER_SCRAPES peer scrapes in $((SECONDS - t0)) s"
  printf '| %-8s | %-7s | %7s | %9s | %9s | %9s | %9s | %5s | %11s | %8s | %9s | %10s | %9s | %7s | %8s |\n' \
    "$kind" "$shape" "$setup s" "$(ms "$qrel")" "$(ms "$qmin")" "$(ms "$floor")" "$(ms "$fmin")" \
    "$(ratio "$qrel" "$floor")" "$(ms "$once")" "$cmds" "$broker ms" "$(ms "$peer")" "$peer_broker ms" "$own" \
    "$heap $([ "$heap" -le 2048 ] && echo met || echo missed)"
  # The result row: the medians of the turns, as the ratio's goal reads them.
  x=$(ratio "$qrel" "$floor")
  # The 50 ms bound is on the floor's median, the least the reads cost: it says whether the size
  # is large enough for the ratio to mean something (1 ms resolution, fixed costs), whatever qrel
  # takes; read on qrel's median, a faster qrel would have made the size too small.
  verdict=$(awk -v x="$x" -v f="$floor" -v h="$heap" -v b="$broker" -v pb="$peer_broker" 'BEGIN { m = ""
    if (f < 0.05) m = m "; floor median " sprintf("%.1f", f * 1000) " ms, below the 50 ms the goal is read at (raise --queues)"
    if (x == "-" || x > 1.5) m = m "; " x "x the floor (goal <= 1.5)"
    if (b > pb) m = m "; Redis CPU " b " ms a scrape, the peer " pb " ms (goal: at most the peer)"
    if (h > 2048) m = m "; heap + stacks " h " KiB (goal <= 2048)"
    print (m == "" ? "met" : "missed: " substr(m, 3)) }')
  bench_result shape="$kind $shape" size="$QUEUES queues" stat=median qrel_s="$(fmt "$qrel" %.4f)" \
    floor_s="$(fmt "$floor" %.4f)" x_floor="$x" peer="redis_exporter --check-keys" peer_s="$(fmt "$peer" %.4f)" \
    heap="$heap KiB" broker_ms="$broker" \
    goal="<= 1.5x the floor (medians of $SCRAPES turns, a running exporter) at a floor of >= 50 ms, Redis CPU a scrape <= the peer's, heap + stacks <= 2048 KiB" \
    verdict="$verdict" \
    note="$cmds commands per scrape; fastest turns: qrel $(ms "$qmin"), floor $(ms "$fmin"), $(ratio "$qmin" "$fmin")x; qrel scrape (a fresh process) median $(ms "$once"), fastest $(ms "$omin") of 3; Redis CPU $peer_broker ms a peer scrape; setup $setup s"
}

echo "# qrel job_queues benchmark, $BENCH_DATE, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$QREL")"
echo "# queues per kind: $(for k in $KINDS; do printf '%s %s, ' "$k" "$(queues_of "$k")"; done)$SCRAPES runs of qrel and the floor, $PEER_SCRAPES of the peer; redis-server $(redis-server --version | sed -nE 's/.*v=([^ ]+).*/\1/p')"
echo "| kind     | shape   | setup   | qrel med  | qrel min  | floor med | floor min | ratio | qrel scrape | commands | Redis CPU | peer med   | peer CPU  | own_kib | heap_kib |"
echo "|----------|---------|---------|-----------|-----------|-----------|-----------|-------|-------------|----------|-----------|------------|-----------|---------|----------|"
t_all=$SECONDS
for kind in $KINDS; do
  QUEUES=$(queues_of "$kind") # what populate, config and measure read
  config "$kind"
  for shape in shallow deep; do
    progress "$kind, $shape: making $QUEUES queues through the framework's client"
    t0=$SECONDS
    populate "$kind" "$([ "$shape" = shallow ] && echo 1 || echo 20)"
    progress "  made in $((SECONDS - t0)) s"
    measure "$kind" "$shape" "$((SECONDS - t0))"
  done
done
echo "# every kind and shape in $((SECONDS - t_all)) s (setup included)"
