#!/usr/bin/env bash
# redis_streams.sh: qrel_exporter against its floor and prometheus-redis-exporter on the same Redis
# streams.
#
# Starts its own redis-server on a free loopback port and measures two workload shapes in one run.
# Shape "small": N streams (each with one consumer group, 3 pending entries and 2 not yet
# delivered; every 10th stream has one entry delivered twice), for each N of --sizes. Shape
# "deep" (issue 14): --deep-streams streams of 300 entries, one group with 60 pending entries, 10
# of them stale (idle 120 s) and delivered 3 times.
#
# For each workload it takes turns, as bench/job_queues.sh does, between qrel as users run it (one
# qrel_exporter, started for the workload so that its peak RSS is that workload's, its connection
# kept between scrapes, its heap warm) and the floor run the same way: the very commands one qrel
# scrape sent, captured with MONITOR, replayed as one pipeline by a running bench/pipe_floor.c on
# its one open connection. So the floor makes exactly qrel's reads, whatever qrel asks. qrel's
# figure is the exporter's own qrel_collector_duration_seconds (its round trips and parsing; 1 ms
# resolution); the goal (<= 1.5x) is on the medians of the turns, the fastest of each side printed
# beside them. Around every turn it reads Redis' CPU (INFO cpu), so each side's cost to the server
# is printed too, and the commands of the captured scrape by name with Redis' own microseconds per
# call. prometheus-redis-exporter is scraped after the turns (a fresh process: it reconnects every
# scrape), for its scrape time and RSS beside qrel's. Prints a table per shape and a verdict on
# each shape's goal; a missed goal is reported, not an error. See bench/README.md for the method.
#
# Needs: bash, redis-server, redis-cli, curl, awk, python3, cc with libhiredis-dev,
# prometheus-redis-exporter, and a built qrel_exporter (build/qrel_exporter by default, or --qrel
# PATH, or QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'USAGE'
Usage: bench/redis_streams.sh [--sizes "100 1000 10000"] [--deep-streams N] [--scrapes N]
                              [--warmup N] [--slow-scrapes N] [--qrel PATH]
                              [--redis-exporter PATH] [--tls yes]

  --sizes "LIST"        small-shape stream counts to measure, ascending (default "100 1000 10000")
  --deep-streams N      streams of the deep-pending shape (default 10000; 0 leaves it out)
  --scrapes N           measured turns of qrel and the floor per workload, and scrapes of
                        redis_exporter (default 11)
  --warmup N            unmeasured turns first (default 2; redis_exporter: none)
  --slow-scrapes N      redis_exporter's scrapes when its first one took over 1 s (default 5;
                        never more than --scrapes)
  --qrel PATH           qrel_exporter binary (default: $QREL_BUILD_DIR/qrel_exporter, else
                        build/qrel_exporter in this checkout)
  --redis-exporter PATH prometheus-redis-exporter binary (default: from PATH)
  --tls yes             also measure qrel over TLS (issue 23): Redis gets a TLS port (certificates
                        made with openssl, EC P-256), and the row qrel_tls reads the same streams
                        through it, in turns with the same (plaintext) floor; the verdict adds its
                        ratio to plaintext qrel (goal <= 1.2x, the connection kept across scrapes)
  -h, --help            this text
USAGE
  usage_end
}

SIZES="100 1000 10000"
DEEP_N=10000
SCRAPES=11
WARMUP=2
SLOW_SCRAPES=5
TLS=no
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
RE_BIN=prometheus-redis-exporter
GOAL_N=10000
STREAM_PREFIX="bench:"
DEEP_PREFIX="deep:"
PREFIX=$STREAM_PREFIX  # the streams of the shape being measured
PEND=3                 # pending entries per group in that shape


parse_options "--sizes:SIZES --deep-streams:DEEP_N --scrapes:SCRAPES --warmup:WARMUP \
  --slow-scrapes:SLOW_SCRAPES --qrel:QREL_BIN --redis-exporter:RE_BIN --tls:TLS" "$@"
[[ $DEEP_N =~ ^(0|[1-9][0-9]*)$ ]] || die "--deep-streams: want a number, got \"$DEEP_N\""
need_num --scrapes "$SCRAPES"
case $TLS in yes | no) ;; *) die "--tls: want yes or no, got \"$TLS\"" ;; esac
# The exporters measured, in the table's order; the qrel ones take turns with the floor.
EXPORTERS=(qrel redis_exporter)
[ "$TLS" = no ] || EXPORTERS=(qrel qrel_tls redis_exporter)
[[ $WARMUP =~ ^(0|[1-9][0-9]*)$ ]] || die "--warmup: want a number, got \"$WARMUP\""
need_num --slow-scrapes "$SLOW_SCRAPES"
[ "$SLOW_SCRAPES" -le "$SCRAPES" ] || SLOW_SCRAPES=$SCRAPES
ascending_sizes --sizes "$SIZES" " (streams are only added)"
need_tools redis-server redis-cli curl awk python3 pkg-config cc
command -v "$RE_BIN" >/dev/null || die "$RE_BIN not found (apt-get install prometheus-redis-exporter)"
[ -x "$QREL_BIN" ] || die "$QREL_BIN not found or not executable: build first (cmake -S . -B build && cmake --build build) or pass --qrel"

# ---- temp dir, processes, cleanup ----

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
REDIS_PORT=
EXP_PID=
FL_PID=

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$T/exporter.log" "$T/redis-$REDIS_PORT/redis.log"; do
      [ -s "$f" ] && { echo "--- last lines of $(basename "$f"):" >&2; tail -15 "$f" >&2; }
    done
  fi
  for pid in "$EXP_PID" "$FL_PID"; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "redis_streams.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

progress() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

# ---- numbers ----

# redis_cpu_s: Redis's own user+sys CPU seconds so far (with the server's background ticks, hz
# 10: small beside a scrape of thousands of commands)
redis_cpu_s() {
  rcli INFO cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.6f\n", s }'
}

# redis_mix: the commands since the last CONFIG RESETSTAT by name, most frequent first, each with
# Redis' own microseconds per call ("xpending 10000 (9.1 us), ..."), and their total in the file
# $T/mix.calls; the script's own commands (CONFIG RESETSTAT, INFO, MONITOR and the ECHO markers)
# left out.
redis_mix() {
  rcli INFO commandstats | tr -d '\r' | awk -F'[:,=]' -v calls="$T/mix.calls" '
    /^cmdstat_/ {
      name = substr($1, 9)
      if (name == "config|resetstat" || name == "info" || name == "monitor" || name == "echo") next
      print $3, name, $7; s += $3
    }
    END { print s + 0 > calls }' |
    sort -rg | awk '{ printf "%s%s %s (%.1f us)", (NR > 1 ? ", " : ""), $2, $1, $3 } END { print "" }'
}

TCK=$(getconf CLK_TCK)
declare -A RES   # RES[N,exporter,metric]

# ---- Redis and the workload ----


# All entry ids are chosen here rather than with `*`, so that the XCLAIMs can name them: entry k
# of every stream is BASE_MS-k (BASE_MS = when the script started), which is what `*` would give
# entries added in the same millisecond.
BASE_MS=$(( $(date +%s%N) / 1000000 ))

# populate FROM TO: streams bench:FROM .. bench:TO-1. Per stream: 5 entries, group g1 from the
# start, c1 reads 3 (pending, delivery count 1) and 2 stay undelivered (lag 2); on every 10th
# stream c2 takes over entry 1 with a plain XCLAIM (delivery count 2; JUSTID would not count).
populate() {
  local from=$1 to=$2 out
  awk -v from="$from" -v to="$to" -v b="$BASE_MS" -v p="$STREAM_PREFIX" 'BEGIN {
    for (i = from; i < to; i++) {
      k = p i
      for (e = 1; e <= 5; e++) printf "XADD %s %s-%d f v\r\n", k, b, e
      printf "XGROUP CREATE %s g1 0\r\n", k
      printf "XREADGROUP GROUP g1 c1 COUNT 3 STREAMS %s >\r\n", k
      if (i % 10 == 0) printf "XCLAIM %s g1 c2 0 %s-1\r\n", k, b
    }
  }' > "$T/populate.cmds"
  out=$(rcli --pipe < "$T/populate.cmds" 2>&1)
  case $out in
    *"errors: 0,"*) ;;
    *) die "populating streams $from..$to failed: $out" ;;
  esac
}

# populate_deep N: the deep-pending shape (issue 14), streams deep:0 .. deep:N-1. Per stream: 300
# entries (ids BASE_MS-1 .. -300), group g1 from the start, c1 reads 60 (pending, delivery count
# 1), 240 stay undelivered; c2 takes the first 10 over with XCLAIM IDLE 120000 RETRYCOUNT 3: held
# past the 30 s lease for two minutes, delivered 3 times.
# The 300 XADDs of a stream are one EVAL of a loop that makes them (the same XADD calls, run by
# Redis itself): 3M XADDs sent one a command were most of the fill, Redis parsing and answering
# each (1,000 streams on 2 loaded cores, 2026-12-06: 4.9 s sent one by one, 2.9 s by EVAL).
populate_deep() {
  awk -v n="$1" -v b="$BASE_MS" -v p="$DEEP_PREFIX" 'BEGIN {
    add = "\"for e = 1, 300 do redis.call(\x27XADD\x27, KEYS[1], ARGV[1] .. \x27-\x27 .. e, \x27f\x27, \x27v\x27) end\""
    for (i = 0; i < n; i++) {
      k = p i
      printf "EVAL %s 1 %s %s\r\n", add, k, b
      printf "XGROUP CREATE %s g1 0\r\nXREADGROUP GROUP g1 c1 COUNT 60 STREAMS %s >\r\n", k, k
      printf "XCLAIM %s g1 c2 0", k
      for (e = 1; e <= 10; e++) printf " %s-%d", b, e
      printf " IDLE 120000 RETRYCOUNT 3\r\n"
    }
  }' > "$T/populate.cmds"
  local out
  out=$(rcli --pipe < "$T/populate.cmds" 2>&1)
  case $out in
    *"errors: 0,"*) ;;
    *) die "populating the deep shape failed: $out" ;;
  esac
}

# ---- qrel and the floor, in turns ----

# scrape_once CURL_ARGS...: one scrape of $ADDR into $T/body.txt; prints curl's time_total.
scrape_once() {
  local t
  t=$(curl -s --max-time 120 -o "$T/body.txt" -w '%{time_total}' "$@" "http://$ADDR/metrics") \
    || { echo "scrape of $ADDR failed" >&2; return 1; }
  echo "$t"
}

# up_check EXPORTER FILE: the scrape shows the Redis side as working
up_check() {
  case $1 in
    qrel*) grep -Eq '^qrel_collector_up\{[^}]*source="bench"[^}]*\} 1$' "$2" ;;
    redis_exporter) grep -Eq '^redis_up 1$' "$2" ;;
  esac
}

# coverage EXPORTER FILE: "groups with $PEND pending / streams with a redelivered entry" as the
# exporter reports them ("-" where it has no such series)
coverage() {
  case $1 in
    qrel*)
      awk -v pend="$PEND" '
        /^qrel_queue_messages\{/ && /source="bench"/ && /group="g1"/ && /state="in_flight"/ && $NF == pend { g++ }
        /^qrel_messages_redelivered\{/ && /source="bench"/ && $NF >= 1 { r++ }
        END { printf "%d/%d\n", g, r }' "$2" ;;
    redis_exporter)
      awk -v pend="$PEND" '
        /^redis_stream_group_messages_pending\{/ && /group="g1"/ && $NF == pend { g++ }
        END { printf "%d/-\n", g }' "$2" ;;
  esac
}

# qrel_start NAME: a qrel_exporter reading the streams of the shape (NAME qrel_tls: through the
# TLS port); sets EXP_PID and ADDR.
QHDR=(-H 'X-Prometheus-Scrape-Timeout-Seconds: 30')
qrel_start() {
  local port=$REDIS_PORT tls=''
  if [ "$1" = qrel_tls ]; then
    port=$REDIS_TLS_PORT
    tls="    tls_config: {ca_file: \"$T/tls/ca.crt\"}"
  fi
  cat > "$T/qrel.yml" <<YML
global:
  timeout: 30s
sources:
  - name: bench
    kind: redis_stream
    address: 127.0.0.1:$port
$tls
    max_streams: 20000
    streams:
      - pattern: "${PREFIX}*"
        claim_min_idle: 30s
        max_deliveries: 3
YML
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 2>>"$T/exporter.log" &
  EXP_PID=$!
  ADDR=
  wait_for 5 "qrel_exporter to log its listening address" listening || die "$1 did not start: $(tail -3 "$T/exporter.log")"
}

# capture: the commands of one scrape of the running qrel_exporter, from MONITOR, into
# $T/floor.resp (RESP arrays, as pipe_floor reads them); prints how many. MONITOR's output lags
# behind the server at tens of thousands of commands, so the capture waits for two markers of its
# own (ECHO) to come through it, one before the scrape and one after: everything between them is
# the scrape's. The scrape's commands by name are read from INFO commandstats around it
# (RES[key,qrel,mix], RES[key,qrel,cmds]): what Redis counted, beside what MONITOR showed.
capture() {
  local key=$1 mon n
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" MONITOR > "$T/monitor.txt" & # not through rcli: $! must be redis-cli itself
  mon=$!
  marked() { rcli ECHO "qrel-bench-$1" >/dev/null; grep -q "\"qrel-bench-$1\"" "$T/monitor.txt"; }
  wait_for -i 0.1 60 "MONITOR to show the start marker" marked start || die "MONITOR showed nothing"
  rcli CONFIG RESETSTAT >/dev/null
  scrape_once "${QHDR[@]}" >/dev/null
  RES[$key,qrel,mix]=$(redis_mix)
  RES[$key,qrel,cmds]=$(cat "$T/mix.calls")
  wait_for -i 0.2 300 "MONITOR to show the end marker" marked end || die "MONITOR lost the scrape's end"
  kill "$mon" 2>/dev/null || true
  wait "$mon" 2>/dev/null || true
  n=$(python3 "$SRC_DIR/bench/monitor_resp.py" "$T/monitor.txt" "$T/floor.resp" CONFIG INFO)
  [ "$n" -gt 0 ] || die "MONITOR showed none of the scrape's commands"
  RES[$key,floor,cmds]=$n
}

# qrel_turn: one scrape of the running exporter; appends its collection time
# (qrel_collector_duration_seconds) to $T/q.txt, Redis' CPU over it (ms) to $T/qcpu.txt and the
# scrape's own time (curl) to $T/qscrape.txt; counts the scrapes whose source was up.
qrel_turn() {
  local c0 t
  c0=$(redis_cpu_s)
  t=$(scrape_once "${QHDR[@]}")
  awk -v a="$c0" -v b="$(redis_cpu_s)" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >> "$T/qcpu.txt"
  echo "$t" >> "$T/qscrape.txt"
  if up_check qrel "$T/body.txt"; then UP_OK=$((UP_OK + 1)); fi
  awk '/^qrel_collector_duration_seconds\{/ && /source="bench"/ { print $NF; exit }' "$T/body.txt" >> "$T/q.txt"
}

# floor_turn: one run of the floor on its open connection (the coprocess FL); appends its time to
# $T/f.txt and Redis' CPU over it (ms) to $T/fcpu.txt.
floor_turn() {
  local c0 t
  c0=$(redis_cpu_s)
  echo >&"${FL[1]}"
  read -r t <&"${FL[0]}" || die "bench/pipe_floor stopped"
  awk -v a="$c0" -v b="$(redis_cpu_s)" 'BEGIN { printf "%.3f\n", (b - a) * 1000 }' >> "$T/fcpu.txt"
  echo "$t" >> "$T/f.txt"
}

mean() { awk '{ s += $1 } END { printf "%.1f", NR ? s / NR : 0 }'; }

# run_turns KEY NAME: NAME (qrel or qrel_tls) and the floor in turns on the workload KEY; fills
# RES[KEY,NAME,*] and, for qrel, RES[KEY,floor,*]. The floor's commands are captured from qrel's
# scrape after the warm-up (qrel_tls reuses qrel's: the same reads).
run_turns() {
  local key=$1 name=$2 i c0 c1 t0=$SECONDS fl_in
  qrel_start "$name"
  UP_OK=0
  : > "$T/q.txt"; : > "$T/qcpu.txt"; : > "$T/qscrape.txt"
  scrape_once "${QHDR[@]}" >/dev/null # connected, heap grown
  [ "$name" != qrel ] || capture "$key"
  coproc FL { "$FLOOR_BIN" "$REDIS_PORT" "$T/floor.resp" 0; }
  : > "$T/f.txt"; : > "$T/fcpu.txt"; : > "$T/mem.txt"
  for ((i = 0; i < WARMUP; i++)); do qrel_turn; floor_turn; done
  : > "$T/q.txt"; : > "$T/qcpu.txt"; : > "$T/qscrape.txt"; : > "$T/f.txt"; : > "$T/fcpu.txt"
  UP_OK=0
  c0=$(cpu_ticks "$EXP_PID")
  for ((i = 0; i < SCRAPES; i++)); do
    qrel_turn
    floor_turn
    mem_kib "$EXP_PID" >> "$T/mem.txt"
  done
  c1=$(cpu_ticks "$EXP_PID")
  fl_in=${FL[1]}
  exec {fl_in}>&- # the floor's stdin closed: it stops
  wait "$FL_PID" 2>/dev/null || true
  FL_PID=
  [ "$(wc -l < "$T/q.txt")" = "$SCRAPES" ] || die "$name: a scrape reported no collection time"
  [ "$(wc -l < "$T/f.txt")" = "$SCRAPES" ] || die "$name: a floor run gave no time"
  RES[$key,$name,scrapes]=$SCRAPES
  RES[$key,$name,median]=$(median < "$T/q.txt")
  RES[$key,$name,min]=$(sort -g "$T/q.txt" | head -1)
  RES[$key,$name,scrape]=$(median < "$T/qscrape.txt")
  RES[$key,$name,rcpu_ms]=$(mean < "$T/qcpu.txt")
  RES[$key,$name,cpu_ms]=$(awk -v d=$((c1 - c0)) -v k="$SCRAPES" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$key,$name,rss_mib]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$key,$name,own_mib]=$(awk -v k="$(col_max 1 "$T/mem.txt")" 'BEGIN { printf "%.2f", k / 1024 }')
  RES[$key,$name,heap_mib]=$(awk -v k="$(col_max 2 "$T/mem.txt")" 'BEGIN { printf "%.2f", k / 1024 }')
  RES[$key,$name,up]="$UP_OK/$SCRAPES"
  RES[$key,$name,cover]=$(coverage "$name" "$T/body.txt")
  RES[$key,$name,bytes]=$(wc -c < "$T/body.txt")
  [ "$name" = qrel ] || RES[$key,$name,cmds]=${RES[$key,qrel,cmds]}
  # the floor's figures, from its turns beside this exporter's (qrel's, the row's)
  if [ "$name" = qrel ]; then
    RES[$key,floor,scrapes]=$SCRAPES
    RES[$key,floor,median]=$(median < "$T/f.txt")
    RES[$key,floor,min]=$(sort -g "$T/f.txt" | head -1)
    RES[$key,floor,rcpu_ms]=$(mean < "$T/fcpu.txt")
  fi
  if [ "$UP_OK" -ne "$SCRAPES" ]; then
    progress "  WARNING: $name reported Redis as down in $((SCRAPES - UP_OK)) of $SCRAPES scrapes"
  fi
  kill "$EXP_PID" 2>/dev/null || true
  wait "$EXP_PID" 2>/dev/null || true
  EXP_PID=
  progress "  $name: $SCRAPES turns with the floor in $((SECONDS - t0)) s"
}

# run_peer KEY: prometheus-redis-exporter, a fresh process, scraped alone; fills
# RES[KEY,redis_exporter,*]. It opens a new connection to Redis on every scrape, so it keeps
# nothing warm from one to the next: no unmeasured scrape; the first one measured picks how many
# more (--slow-scrapes when it took over 1 s: each is seconds long at 10,000 streams).
run_peer() {
  local key=$1 name=redis_exporter i c0 c1 rc0 rc1 count t0=$SECONDS
  : > "$T/exporter.log"
  ADDR=127.0.0.1:$(free_port)
  "$RE_BIN" --redis.addr="redis://127.0.0.1:$REDIS_PORT" --web.listen-address="$ADDR" \
    --check-streams="${PREFIX}*" 2>>"$T/exporter.log" &
  EXP_PID=$!
  # its "/" is enough: its /metrics would be one more scrape of seconds
  wait_for 10 "$name to answer on $ADDR" curl -s -o /dev/null "http://$ADDR/" || die "$name did not start: $(tail -3 "$T/exporter.log")"
  rc0=$(redis_cpu_s)
  rcli CONFIG RESETSTAT >/dev/null
  c0=$(cpu_ticks "$EXP_PID")
  UP_OK=0
  : > "$T/times.txt"
  count=$SCRAPES
  for ((i = 0; i < count; i++)); do
    scrape_once >> "$T/times.txt"
    if up_check "$name" "$T/body.txt"; then UP_OK=$((UP_OK + 1)); fi
    if [ "$i" = 0 ] && awk -v m="$(cat "$T/times.txt")" 'BEGIN { exit !(m > 1.0) }'; then count=$SLOW_SCRAPES; fi
  done
  c1=$(cpu_ticks "$EXP_PID")
  RES[$key,$name,mix]=$(redis_mix | sed -E 's/ \([0-9.]+ us\)//g')
  rc1=$(redis_cpu_s)
  RES[$key,$name,scrapes]=$count
  RES[$key,$name,scrape]=$(median < "$T/times.txt")
  RES[$key,$name,min]=$(sort -g "$T/times.txt" | head -1)
  RES[$key,$name,cpu_ms]=$(awk -v d=$((c1 - c0)) -v k="$count" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$key,$name,rss_mib]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$key,$name,cmds]=$(awk -v c="$(cat "$T/mix.calls")" -v k="$count" 'BEGIN { printf "%.0f", c / k }')
  RES[$key,$name,rcpu_ms]=$(awk -v a="$rc0" -v b="$rc1" -v k="$count" 'BEGIN { printf "%.1f", (b - a) * 1000 / k }')
  RES[$key,$name,up]="$UP_OK/$count"
  RES[$key,$name,cover]=$(coverage "$name" "$T/body.txt")
  RES[$key,$name,bytes]=$(wc -c < "$T/body.txt")
  kill "$EXP_PID" 2>/dev/null || true
  wait "$EXP_PID" 2>/dev/null || true
  EXP_PID=
  progress "  $name: $count scrapes in $((SECONDS - t0)) s"
}

# measure KEY: every exporter on the workload in Redis now
measure() {
  local key=$1 name
  for name in "${EXPORTERS[@]}"; do
    progress "$key: $name"
    case $name in
      qrel*) run_turns "$key" "$name" ;;
      redis_exporter) run_peer "$key" ;;
    esac
  done
  progress "  $key: qrel median $(fmt "${RES[$key,qrel,median]}" %.3f) s, floor $(fmt "${RES[$key,floor,median]}" %.3f) s: $(ratio "${RES[$key,qrel,median]}" "${RES[$key,floor,median]}")x"
}

# ---- run ----

QREL_VERSION=$(qrel_version "$QREL_BIN")
RE_VERSION=$("$RE_BIN" --version 2>&1 | sed -nE 's/.*msg="Redis Metrics Exporter ([^ ]+).*/\1/p' | head -1 || true)
FLOOR_BIN=$T/pipe_floor
read -ra HIREDIS <<<"$(pkg-config --cflags --libs hiredis)"
cc -O2 -o "$FLOOR_BIN" "$SRC_DIR/bench/pipe_floor.c" "${HIREDIS[@]}" || die "cannot build bench/pipe_floor.c"
if [ "$TLS" = yes ]; then
  need_tools openssl
  # A CA and a server certificate for 127.0.0.1, as tests/lib/redis_tls.sh makes them.
  mkdir -p "$T/tls"
  (
    cd "$T/tls"
    for k in ca server; do openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$k.key"; done
    openssl req -x509 -key ca.key -out ca.crt -days 2 -subj /CN=qrel-bench-ca
    openssl req -new -key server.key -subj /CN=127.0.0.1 -out server.csr
    printf 'subjectAltName=IP:127.0.0.1\n' > san.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile san.ext -out server.crt
  ) 2>/dev/null || die "cannot make the TLS certificates"
  REDIS_TLS_PORT=$(free_port)
  start_redis REDIS_PORT --tls-port "$REDIS_TLS_PORT" --tls-cert-file "$T/tls/server.crt" \
    --tls-key-file "$T/tls/server.key" --tls-ca-cert-file "$T/tls/ca.crt" --tls-auth-clients no \
    || die "redis-server did not start"
else
  start_redis REDIS_PORT || die "redis-server did not start"
fi
REDIS_VERSION=$(rcli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')

echo "# qrel redis_streams benchmark, $BENCH_DATE, $(nproc) cores"
echo "# ${QREL_VERSION:-qrel_exporter ?}; prometheus-redis-exporter ${RE_VERSION:-?}; redis-server $REDIS_VERSION"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "# qrel and the floor: $WARMUP unmeasured turns, then $SCRAPES measured; redis_exporter: $SCRAPES scrapes (or $SLOW_SCRAPES when its first took over 1 s)"

START=$SECONDS
have=0
for n in "${SIZE_LIST[@]}"; do
  progress "N=$n: creating streams $have..$((n - 1))"
  t0=$SECONDS
  populate "$have" "$n"
  progress "  created in $((SECONDS - t0)) s"
  have=$n
  got=$(rcli DBSIZE)
  [ "$got" -eq "$n" ] || die "want $n keys after populating, DBSIZE says $got"
  measure "$n"
done
if [ "$DEEP_N" -gt 0 ]; then
  # The deep shape alone in the keyspace: the small shape's streams would lengthen qrel's SCAN.
  rcli FLUSHALL >/dev/null
  progress "deep shape: creating $DEEP_N streams of 300 entries, 60 pending each"
  t0=$SECONDS
  populate_deep "$DEEP_N"
  progress "  created in $((SECONDS - t0)) s"
  PREFIX=$DEEP_PREFIX
  PEND=60
  measure deep
fi
progress "done in $((SECONDS - START)) s"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- table ----

ROW='%-7s %-15s %6s %9s %8s %9s %10s %8s %8s %8s %10s %10s %7s %8s %9s\n'
# rows KEY LABEL: the qrel, redis_exporter and floor rows of one workload
rows() {
  local k=$1 label=$2 name q
  for name in "${EXPORTERS[@]}"; do
    q=-
    [[ $name != qrel* ]] || q=yes
    # shellcheck disable=SC2059 # the format is the table's
    printf "$ROW" "$label" "$name" \
      "${RES[$k,$name,scrapes]}" "$( [ "$q" = yes ] && fmt "${RES[$k,$name,median]}" %.4f || echo -)" \
      "$(fmt "${RES[$k,$name,min]}" %.4f)" "$(fmt "${RES[$k,$name,scrape]}" %.4f)" "${RES[$k,$name,cpu_ms]}" \
      "${RES[$k,$name,rss_mib]}" "$( [ "$q" = yes ] && echo "${RES[$k,$name,own_mib]}" || echo -)" \
      "$( [ "$q" = yes ] && echo "${RES[$k,$name,heap_mib]}" || echo -)" \
      "${RES[$k,$name,cmds]}" "${RES[$k,$name,rcpu_ms]}" \
      "${RES[$k,$name,up]}" "${RES[$k,$name,cover]%%/*}" \
      "$(awk -v b="${RES[$k,$name,bytes]}" 'BEGIN { printf "%.0f", b / 1024 }')"
  done
  # shellcheck disable=SC2059
  printf "$ROW" "$label" "floor" \
    "${RES[$k,floor,scrapes]}" "$(fmt "${RES[$k,floor,median]}" %.4f)" \
    "$(fmt "${RES[$k,floor,min]}" %.4f)" - - - - - \
    "${RES[$k,floor,cmds]}" "${RES[$k,floor,rcpu_ms]}" - - -
}
# shellcheck disable=SC2059
header() { printf "$ROW" streams exporter turns collect_s min_s scrape_s cpu_ms/scr rss_mib own_mib heap_mib redis_cmds redis_cpu up "$1" body_kib; }

echo
echo "## shape small: N streams x 5 entries, group g1 with 3 pending (delivered once) and 2 undelivered;"
echo "##   every 10th stream has 1 of its pending entries delivered twice"
header "g1 pend=3"
for n in "${SIZE_LIST[@]}"; do rows "$n" "$n"; done
if [ "$DEEP_N" -gt 0 ]; then
  echo
  echo "## shape deep: $DEEP_N streams x 300 entries, group g1 with 60 pending (10 of them held 120 s,"
  echo "##   past the 30 s lease, and delivered 3 times) and 240 undelivered"
  header "pend=60"
  rows deep "$DEEP_N"
fi
echo "# turns: measured turns (redis_exporter: scrapes); collect_s: median of qrel's own"
echo "#   qrel_collector_duration_seconds (its reads and parsing, 1 ms resolution) over the turns,"
echo "#   floor: median of pipe_floor's runs of the commands qrel's scrape sent, captured with MONITOR,"
echo "#   on its open connection; min_s: the fastest of them (redis_exporter: its fastest scrape)"
echo "# scrape_s: median scrape as curl saw it (the collection, then writing and sending the body)"
echo "# cpu_ms/scr: exporter utime+stime per scrape (resolution $((1000 / TCK)) ms over all measured scrapes);"
echo "# rss_mib: peak RSS (VmHWM); own_mib: qrel's largest RssAnon (heap, arenas, stacks and the libraries'"
echo "#   private pages) after a turn; heap_mib: its largest heap + stacks alone (smaps), the 2 MiB goal's figure"
echo "# redis_cmds: per scrape (qrel: INFO commandstats around the captured scrape; floor: the commands captured)"
echo "# redis_cpu: Redis used_cpu_user+sys ms per scrape (qrel, floor: the mean over the turns, read around each)"
echo "# pend: groups reported with that many pending entries"
echo "# (redis_exporter has no delivery-count series: it cannot show the redelivered entries)"
for k in "${SIZE_LIST[@]}" $([ "$DEEP_N" -gt 0 ] && echo deep); do
  label="small N=$k"
  [ "$k" != deep ] || label="deep N=$DEEP_N"
  echo "# $label: qrel streams with a redelivered entry: ${RES[$k,qrel,cover]##*/}" \
    "(want $([ "$k" = deep ] && echo "$DEEP_N" || echo $(( (k + 9) / 10 ))))"
  echo "# $label: qrel's scrape, by INFO commandstats (Redis' usec_per_call): ${RES[$k,qrel,mix]}"
  echo "# $label: redis_exporter per scrape (INFO not shown): ${RES[$k,redis_exporter,mix]}"
done
echo "# load average at the end: $LOAD_END (the benchmark itself keeps about one core busy)"

# ---- verdict ----

# verdict KEY WHAT SHAPE SIZE: the goal on one workload: <= 1.5x the floor (medians of the turns;
# issue 28 retired round 1's ">= 10x redis_exporter", which lay below the floor itself: the
# speed-up, scrape against scrape, is still printed), <= 0.20 of redis_exporter's peak RSS, qrel's
# heap + stacks <= 2 MiB, and qrel up in every scrape; then the workload's result row
# (bench_result).
verdict() {
  local k=$1
  awk -v q="${RES[$k,qrel,median]}" -v qs="${RES[$k,qrel,scrape]}" -v r="${RES[$k,redis_exporter,scrape]}" \
      -v qm="${RES[$k,qrel,rss_mib]}" -v rm="${RES[$k,redis_exporter,rss_mib]}" -v own="${RES[$k,qrel,heap_mib]}" \
      -v f="${RES[$k,floor,median]}" -v up="${RES[$k,qrel,up]}" -v what="$2" -v vfile="$T/verdict" \
      -v qmin="${RES[$k,qrel,min]}" -v fmin="${RES[$k,floor,min]}" 'BEGIN {
    split(up, u, "/")
    speed = (qs > 0) ? r / qs : 0
    rss = (rm > 0) ? qm / rm : 0
    fl = (f > 0) ? q / f : 0
    ok = (rss <= 0.2 && fl <= 1.5 && own <= 2 && u[1] == u[2])
    m = ""
    if (rss > 0.2) m = m sprintf("; RSS %.2f of its (goal <= 0.20)", rss)
    if (fl > 1.5) m = m sprintf("; %.2fx the floor (goal <= 1.5)", fl)
    if (own > 2) m = m sprintf("; heap + stacks %.2f MiB (goal <= 2)", own)
    if (u[1] != u[2]) m = m "; qrel collector not up in every scrape"
    print (ok ? "met" : "missed: " substr(m, 3)) > vfile
    printf "verdict, %s: %.2fx the floor (medians of the turns; goal <= 1.5: %s), RSS %.2f of redis_exporter'"'"'s (goal <= 0.20: %s), heap + stacks %.2f MiB (goal <= 2: %s)%s: %s\n",
      what, fl, (fl <= 1.5) ? "met" : "missed", rss, (rss <= 0.2) ? "met" : "missed",
      own, (own <= 2) ? "met" : "missed",
      (u[1] == u[2]) ? "" : ", qrel collector NOT up in every scrape", ok ? "MET" : "NOT MET"
    printf "  (fastest turns: qrel %.4f s, floor %.4f s, %.2fx; a qrel scrape %.1fx faster than redis_exporter'"'"'s, medians)\n",
      qmin, fmin, (fmin > 0) ? qmin / fmin : 0, speed
  }'
  bench_result shape="$3" size="$4 streams" stat=median qrel_s="$(fmt "${RES[$k,qrel,median]}" %.4f)" \
    floor_s="$(fmt "${RES[$k,floor,median]}" %.4f)" x_floor="$(ratio "${RES[$k,qrel,median]}" "${RES[$k,floor,median]}")" \
    peer=redis_exporter peer_s="$(fmt "${RES[$k,redis_exporter,scrape]}" %.4f)" heap="${RES[$k,qrel,heap_mib]} MiB" \
    broker_ms="${RES[$k,qrel,rcpu_ms]}" \
    goal="<= 1.5x the floor (medians of $SCRAPES turns, a running exporter), <= 0.20 of redis_exporter's RSS, heap + stacks <= 2 MiB" \
    verdict="$(cat "$T/verdict")" \
    note="${RES[$k,qrel,cmds]} commands a scrape, the floor the same ${RES[$k,floor,cmds]}; fastest turns: qrel $(fmt "${RES[$k,qrel,min]}" %.4f) s, floor $(fmt "${RES[$k,floor,min]}" %.4f) s, $(ratio "${RES[$k,qrel,min]}" "${RES[$k,floor,min]}")x; Redis CPU a floor run ${RES[$k,floor,rcpu_ms]} ms; qrel's scrape (curl) $(fmt "${RES[$k,qrel,scrape]}" %.4f) s"
}

g=$GOAL_N
note=""
if [ -z "${RES[$g,qrel,median]:-}" ]; then
  g=${SIZE_LIST[-1]}
  note=" (measured at N=$g: $GOAL_N was not in --sizes)"
fi
verdict "$g" "shape small at $g streams$note" small "$g"
if [ "$DEEP_N" -gt 0 ]; then
  verdict deep "shape deep at $DEEP_N streams x 60 pending" deep "$DEEP_N"
fi
# --tls yes: qrel over TLS against qrel in plaintext on the same workload (goal <= 1.2x: the
# connection and its TLS session are kept across scrapes, so a scrape pays encryption only).
tls_verdict() { # KEY WHAT
  [ "$TLS" = yes ] || return 0
  awk -v t="${RES[$1,qrel_tls,median]}" -v p="${RES[$1,qrel,median]}" -v up="${RES[$1,qrel_tls,up]}" -v what="$2" 'BEGIN {
    split(up, u, "/")
    r = (p > 0) ? t / p : 0
    printf "verdict, %s over TLS: %.2fx the plaintext median (goal <= 1.2: %s)%s\n", what, r,
      (r <= 1.2) ? "met" : "missed", (u[1] == u[2]) ? "" : ", qrel_tls NOT up in every scrape"
  }'
}
tls_verdict "$g" "shape small at $g streams"
if [ "$DEEP_N" -gt 0 ]; then tls_verdict deep "shape deep at $DEEP_N streams"; fi
