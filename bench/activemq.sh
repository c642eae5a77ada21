#!/usr/bin/env bash
# activemq.sh: kind activemq on many queues of an ActiveMQ Classic broker, beside the floor, in
# two workload shapes:
#   shallow  every queue holds 1 ready message; ActiveMQ.DLQ is empty;
#   deep     every queue holds 20 ready messages and has had 2 dead-lettered by the broker into
#            the shared ActiveMQ.DLQ, so a scrape also browses it (browse() answers at most the
#            queue's maxBrowsePageSize, 400 by default, of the 2 x queues dead letters).
# The broker is the integration test's (tests/peers/activemq: Debian's ActiveMQ 5.17 jars,
# Jolokia's own request handler at /api/jolokia behind basic auth), started afresh for each shape.
# The queues are made and filled by a JMS client over OpenWire (AmqPeer fill: sends, and a
# transacted consumer whose RedeliveryPolicy gives each dead letter up at its first rollback),
# never by writing the broker's files; the time each setup took is printed, and the broker's own
# QueueSizes are checked against the shape before anything is measured.
#
# For each shape it prints the median and fastest collection time of `qrel scrape` (the
# qrel_collector_duration_seconds it reports: connect, the one bulk POST, and parsing, without
# the process start); the floor: the very request body qrel sent in one scrape (recorded by a
# relay between qrel and Jolokia), POSTed twice by one curl on one connection with the replies
# discarded, the second transfer (on the kept-alive connection) timed, fastest and median; qrel's
# scrapes and the floor's runs take turns, so that both meet the same load; the ratio of the
# fastest runs (the goal is at most 1.5, read at a size where a scrape takes at least 50 ms); the
# reply's size; and the broker's own CPU (utime + stime of the java process's /proc/PID/stat)
# per qrel scrape and per floor request. There is no peer: Debian 12 packages no ActiveMQ exporter (and no JMX
# exporter). And qrel's memory: a qrel_exporter on the same broker, the largest RssAnon (own) and
# heap + stacks (heap, the 2 MiB goal's figure) after each of 3 scrapes. A missed goal is
# reported, not an error. See bench/README.md.
#
# Needs: java and javac (openjdk-17-jdk-headless), Debian's activemq and libjolokia-core-java
# jars (tests/lib/servers.sh, AMQ_JARS), python3, curl, and a built qrel (build/qrel and
# build/qrel_exporter, or QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/activemq.sh [--queues N] [--scrapes N]

  --queues N    queues (default 2000)
  --scrapes N   measured runs of qrel and of the floor (default 11)
EOF
  usage_end
}

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/bench/lib.sh"
QUEUES=2000
SCRAPES=11
parse_options "--queues:QUEUES --scrapes:SCRAPES" "$@"
need_num --queues "$QUEUES"
need_num --scrapes "$SCRAPES"
need_tools java javac python3 curl
QREL=$QREL_BUILD_DIR/qrel
[ -x "$QREL" ] || die "build qrel first ($QREL)"
export QREL_SOURCE_DIR=$root # for amq_peer_build (tests/lib/servers.sh)
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
cleanup() {
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
progress() { printf '%s\n' "$*" >&2; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
# ticks_ms TICKS RUNS: clock ticks as ms per run
ticks_ms() { awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1000 / hz / n }'; }

# The per-queue messages of each shape: ready, dead-lettered.
shape_msgs() { case $1 in shallow) echo "1 0" ;; deep) echo "20 2" ;; esac; }

PASS=bench-$RANDOM$RANDOM
printf '%s\n' "$PASS" > "$T/amq.pass"
chmod 600 "$T/amq.pass"

# jolokia_sizes: "QUEUES READY DEAD" as the broker itself counts them: the bench.* queues, the
# sum of their QueueSize, and ActiveMQ.DLQ's QueueSize (0 when it does not exist), from one
# Jolokia read by pattern.
jolokia_sizes() {
  curl -fsS -u "admin:$PASS" -H 'Content-Type: application/json' --data-binary \
    '{"type":"read","mbean":"org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=*","attribute":["Name","QueueSize"]}' \
    "http://127.0.0.1:$JP/api/jolokia/" | python3 -c '
import json, sys
v = json.load(sys.stdin)["value"].values()
bench = [q["QueueSize"] for q in v if q["Name"].startswith("bench.")]
dlq = sum(q["QueueSize"] for q in v if q["Name"] == "ActiveMQ.DLQ")
print(len(bench), sum(bench), dlq)'
}

# capture: the request body of one qrel scrape, recorded by a relay between qrel and Jolokia
# (relay_scrape of bench/lib.sh), into $T/floor.json; prints its size in bytes.
capture() {
  relay_scrape "$JP" "$T/bench.yml" "$T/relay.raw"
  # one request: its headers, then Content-Length bytes of body
  python3 - "$T/relay.raw" "$T/floor.json" <<'PY'
import re, sys
raw = open(sys.argv[1], "rb").read()
head, _, rest = raw.partition(b"\r\n\r\n")
n = int(re.search(rb"(?im)^content-length:\s*(\d+)", head).group(1))
assert head.startswith(b"POST ") and len(rest) == n, "want one POST with its whole body"
open(sys.argv[2], "wb").write(rest)
print(n)
PY
}

# floor_once: the recorded body POSTed twice by one curl on one kept-alive connection, each
# reply discarded; appends the second transfer's time (the connection open, as a kept one is) to
# $T/floor.times and "CONNECTIONS REPLY_BYTES" of the run to $T/floor.conns.
floor_once() {
  curl -sS -u "admin:$PASS" -H 'Content-Type: application/json' --data-binary "@$T/floor.json" \
    -w '%{time_total} %{num_connects} %{size_download}\n' \
    -o /dev/null "http://127.0.0.1:$JP/api/jolokia/" -o /dev/null "http://127.0.0.1:$JP/api/jolokia/" > "$T/floor.txt"
  tail -1 "$T/floor.txt" | awk '{ print $1 }' >> "$T/floor.times"
  awk '{ c += $2; b = $3 } END { print c, b }' "$T/floor.txt" >> "$T/floor.conns"
}

measure() { # measure SHAPE SETUP_S
  local shape=$1 setup=$2 body i qrel qmin floor floor_med reply c0 c1 c2 qt ft broker floor_broker
  local own heap x verdict queues
  body=$(capture)
  # Unmeasured: the broker's JIT warmed by the same request, from qrel and from the floor.
  for ((i = 0; i < 2; i++)); do "$QREL" scrape --config.file="$T/bench.yml" >/dev/null 2>&1; done
  : > "$T/floor.times"
  floor_once
  # Measured: a qrel scrape, then a floor run, in turns, so that both meet the same machine; the
  # broker's CPU read around each.
  : > "$T/q.txt"
  : > "$T/floor.times"
  : > "$T/floor.conns"
  qt=0 ft=0
  for ((i = 0; i < SCRAPES; i++)); do
    c0=$(cpu_ticks "$APID")
    "$QREL" scrape --config.file="$T/bench.yml" > "$T/one.prom" 2> "$T/one.log"
    c1=$(cpu_ticks "$APID")
    floor_once
    c2=$(cpu_ticks "$APID")
    qt=$((qt + c1 - c0)) ft=$((ft + c2 - c1))
    awk '/^qrel_collector_duration_seconds\{/ { print $NF }' "$T/one.prom" >> "$T/q.txt"
  done
  broker=$(ticks_ms "$qt" "$SCRAPES")
  floor_broker=$(ticks_ms "$ft" $((2 * SCRAPES)))
  [ "$(wc -l < "$T/q.txt")" = "$SCRAPES" ] || die "$shape: a qrel scrape reported no collection time"
  grep -q '^qrel_collector_up{.*} 1$' "$T/one.prom" || die "$shape: qrel was not up: $(tail -3 "$T/one.log")"
  queues=$(grep -c '^qrel_queue_messages{.*queue="bench\.[0-9]*".*state="ready"' "$T/one.prom" || true)
  [ "$queues" = "$QUEUES" ] || die "$shape: qrel reported $queues queues, want $QUEUES"
  qrel=$(median < "$T/q.txt")
  qmin=$(sort -g "$T/q.txt" | head -1)
  floor=$(sort -g "$T/floor.times" | head -1)
  floor_med=$(median < "$T/floor.times")
  reply=$(tail -1 "$T/floor.conns" | awk '{ print $2 }')
  awk '$1 != 1 { bad = 1 } END { exit bad }' "$T/floor.conns" ||
    progress "$shape: a floor run's curl opened more than one connection (its times then include a connect)"
  read -r own heap < <(exporter_mem "$T/bench.yml" 3)
  printf '| %-7s | %6s | %9s | %9s | %17s | %5s | %8s | %9s | %9s | %10s | %7s | %8s |\n' \
    "$shape" "$setup s" "$(ms "$qrel")" "$(ms "$qmin")" \
    "$(awk -v f="$floor" -v m="$floor_med" 'BEGIN { printf "%.1f (%.1f) ms", f * 1000, m * 1000 }')" \
    "$(ratio "$qmin" "$floor")" "$body B" "$reply B" "$broker ms" "$floor_broker ms" "$own" \
    "$heap $([ "$heap" -le 2048 ] && echo met || echo missed)"
  x=$(ratio "$qmin" "$floor")
  verdict=$(awk -v x="$x" -v q="$qmin" -v h="$heap" 'BEGIN { m = ""
    if (q < 0.05) m = m "; scrape " sprintf("%.1f", q * 1000) " ms, below the 50 ms the goal is read at (raise --queues)"
    if (x == "-" || x > 1.5) m = m "; " x "x the floor (goal <= 1.5)"
    if (h > 2048) m = m "; heap + stacks " h " KiB (goal <= 2048)"
    print (m == "" ? "met" : "missed: " substr(m, 3)) }')
  bench_result shape="$shape" size="$QUEUES queues" stat=fastest qrel_s="$(fmt "$qmin" %.4f)" \
    floor_s="$(fmt "$floor" %.4f)" x_floor="$x" heap="$heap KiB" broker_ms="$broker" \
    goal="<= 1.5x the floor (fastest runs) at >= 50 ms, heap + stacks <= 2048 KiB" verdict="$verdict" \
    note="one bulk POST of $body bytes a scrape, a reply of $reply bytes; broker CPU $floor_broker ms a floor request; setup $setup s"
}

echo "# qrel activemq benchmark, $BENCH_DATE, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$QREL")"
echo "# $QUEUES queues, $SCRAPES runs of qrel and the floor; ActiveMQ $(dpkg-query -W -f '${Version}' libactivemq-java 2>/dev/null || echo '?'), Jolokia through tests/peers/activemq"
echo "| shape   | setup  | qrel med  | qrel min  | floor min (med)   | ratio | request  | reply     | qrel: CPU | floor: CPU | own_kib | heap_kib |"
echo "|---------|--------|-----------|-----------|-------------------|-------|----------|-----------|-----------|------------|---------|----------|"
t_all=$SECONDS
for shape in shallow deep; do
  read -r ready dead < <(shape_msgs "$shape")
  progress "$shape: starting the broker"
  OW='' JP=''
  start_activemq OW JP admin "$PASS" || die "the ActiveMQ broker did not start"
  APID=${PIDS[-1]}
  # A minute's timeout: the benchmark times the collections; the default 10 s must not end one,
  # the relayed one least of all.
  printf 'sources:\n  - name: bench\n    kind: activemq\n    jolokia_url: http://127.0.0.1:%s/api/jolokia\n    username: admin\n    password_file: %s\n    timeout: 60s\n' \
    "$JP" "$T/amq.pass" > "$T/bench.yml"
  progress "$shape: filling $QUEUES queues through OpenWire ($ready ready, $dead dead-lettered each)"
  t0=$SECONDS
  java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer fill "$OW" "$QUEUES" "$ready" "$dead" \
    > "$T/fill.log" 2>&1 || die "filling the queues failed: $(tail -3 "$T/fill.log")"
  want="$QUEUES $((QUEUES * ready)) $((QUEUES * dead))"
  got=$(jolokia_sizes)
  [ "$got" = "$want" ] || die "$shape: the broker counts \"$got\" (queues, ready, dead letters), want \"$want\""
  measure "$shape" "$((SECONDS - t0))"
  kill "$APID" 2>/dev/null || true
  wait "$APID" 2>/dev/null || true
done
echo "# both shapes in $((SECONDS - t_all)) s (setup included)"
