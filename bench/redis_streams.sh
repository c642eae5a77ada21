#!/usr/bin/env bash
# redis_streams.sh: qrel_exporter against prometheus-redis-exporter on the same Redis streams.
#
# Starts its own redis-server on a free loopback port and measures two workload shapes in one run.
# Shape "small": N streams (each with one consumer group, 3 pending entries and 2 not yet
# delivered; every 10th stream has one entry delivered twice), for each N of --sizes. Shape
# "deep" (issue 14): --deep-streams streams of 300 entries, one group with 60 pending entries, 10
# of them stale (idle 120 s) and delivered 3 times. For each, scrapes each exporter (a fresh
# process each time, so its peak RSS belongs to that workload): median scrape time, exporter CPU
# per scrape, peak RSS (and qrel's RssAnon and heap + stacks), Redis commands and Redis CPU per scrape.
# The floor row is what the same reliability reads cost when a client sends them all in one
# pipeline (`redis-cli --pipe` for the small shape, bench/pipe_floor.c for the deep one). Prints a
# table per shape and a verdict on each shape's goal; a missed goal is reported, not an error. See
# bench/README.md for the method.
#
# Needs: bash, redis-server, redis-cli, curl, awk, prometheus-redis-exporter, and a built
# qrel_exporter (build/qrel_exporter by default, or --qrel PATH, or QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/redis_streams.sh [--sizes "100 1000 10000"] [--deep-streams N] [--scrapes N]
                              [--warmup N] [--slow-scrapes N] [--qrel PATH]
                              [--redis-exporter PATH] [--tls yes]

  --sizes "LIST"        small-shape stream counts to measure, ascending (default "100 1000 10000")
  --deep-streams N      streams of the deep-pending shape (default 10000; 0 leaves it out)
  --scrapes N           measured scrapes per exporter per size (default 15)
  --warmup N            warm-up scrapes before measuring (default 5; redis_exporter: 1)
  --slow-scrapes N      measured scrapes when an exporter's warm-up median is above 1 s
                        (default 7; never more than --scrapes)
  --qrel PATH           qrel_exporter binary (default: $QREL_BUILD_DIR/qrel_exporter, else
                        build/qrel_exporter in this checkout)
  --redis-exporter PATH prometheus-redis-exporter binary (default: from PATH)
  --tls yes             also measure qrel over TLS (issue 23): Redis gets a TLS port (certificates
                        made with openssl, EC P-256), and the row qrel_tls reads the same streams
                        through it beside the plaintext qrel row; the verdict adds its ratio to
                        plaintext (goal <= 1.2x, the connection kept across scrapes)
  -h, --help            this text
EOF
  usage_end
}

SIZES="100 1000 10000"
DEEP_N=10000
SCRAPES=15
WARMUP=5
SLOW_SCRAPES=7
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
# The exporters measured, in the table's order.
EXPORTERS=(qrel redis_exporter)
[ "$TLS" = no ] || EXPORTERS=(qrel qrel_tls redis_exporter)
need_num --warmup "$WARMUP"
need_num --slow-scrapes "$SLOW_SCRAPES"
[ "$SLOW_SCRAPES" -le "$SCRAPES" ] || SLOW_SCRAPES=$SCRAPES
ascending_sizes --sizes "$SIZES" " (streams are only added)"
need_tools redis-server redis-cli curl awk
command -v "$RE_BIN" >/dev/null || die "$RE_BIN not found (apt-get install prometheus-redis-exporter)"
[ -x "$QREL_BIN" ] || die "$QREL_BIN not found or not executable: build first (cmake -S . -B build && cmake --build build) or pass --qrel"

# ---- temp dir, processes, cleanup ----

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
REDIS_PORT=
EXP_PID=

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    for f in "$T/exporter.log" "$T/redis-$REDIS_PORT/redis.log"; do
      [ -s "$f" ] && { echo "--- last lines of $(basename "$f"):" >&2; tail -15 "$f" >&2; }
    done
  fi
  if [ -n "$EXP_PID" ]; then
    kill "$EXP_PID" 2>/dev/null || true
    wait "$EXP_PID" 2>/dev/null || true
  fi
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "redis_streams.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

progress() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" "$@"; }

# ---- numbers ----

# redis_cpu_s: Redis's own user+sys CPU seconds so far
redis_cpu_s() {
  rcli INFO cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.6f\n", s }'
}

# redis_calls [EXCLUDE_RE]: total calls in INFO commandstats, minus the commands matching
# EXCLUDE_RE and the CONFIG RESETSTAT this script sent (the INFO that reads the stats is not
# counted in its own reply).
redis_calls() {
  rcli INFO commandstats | tr -d '\r' | awk -v excl="${1:-^$}" -F'[:,=]' '
    /^cmdstat_/ {
      name = substr($1, 9)
      if (name == "config|resetstat" || name ~ excl) next
      s += $3
    }
    END { print s + 0 }'
}

# redis_mix SCRAPES: the commands per scrape by name, most frequent first ("xinfo|groups 1000, ...")
redis_mix() {
  rcli INFO commandstats | tr -d '\r' | awk -v k="$1" -F'[:,=]' '
    /^cmdstat_/ { name = substr($1, 9); if (name != "config|resetstat" && name != "info") print $3 / k, name }' |
    sort -rg | awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, ($1 == int($1) ? $1 : sprintf("%.1f", $1)) } END { print "" }'
}

TCK=$(getconf CLK_TCK)
declare -A RES   # RES[N,exporter,metric]

# ---- Redis and the workload ----


# All entry ids are chosen here rather than with `*`, so the XCLAIM and the floor's XRANGE can
# name them: entry k of every stream is BASE_MS-k (BASE_MS = when the script started), which is
# what `*` would give five entries added in the same millisecond.
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

# floor_cmds N: the reads qrel makes for N streams of this workload, as one pipeline: TIME, then
# per stream XINFO GROUPS, and per group the extended XPENDING (qrel's default pending_scan_limit
# of 1000) and the first undelivered entry after last-delivered-id (BASE_MS-3 here). No SCAN: the
# floor knows the stream names.
floor_cmds() {
  awk -v n="$1" -v b="$BASE_MS" -v p="$STREAM_PREFIX" 'BEGIN {
    printf "TIME\r\n"
    for (i = 0; i < n; i++) {
      k = p i
      printf "XINFO GROUPS %s\r\n", k
      printf "XPENDING %s g1 - + 1000\r\n", k
      printf "XRANGE %s (%s-3 + COUNT 1\r\n", k, b
    }
  }'
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

# floor_deep_cmds N: qrel's reads of the deep shape as RESP arrays for bench/pipe_floor.c: TIME,
# then per stream XINFO GROUPS, the extended XPENDING (pending_scan_limit 1000: all 60 entries)
# and the first entry after last-delivered-id (BASE_MS-60).
floor_deep_cmds() {
  awk -v n="$1" -v b="$BASE_MS" -v p="$DEEP_PREFIX" '
    function cmd(s,   a, m, j) {
      m = split(s, a, " "); printf "*%d\r\n", m
      for (j = 1; j <= m; j++) printf "$%d\r\n%s\r\n", length(a[j]), a[j]
    }
    BEGIN {
      cmd("TIME")
      for (i = 0; i < n; i++) {
        k = p i
        cmd("XINFO GROUPS " k); cmd("XPENDING " k " g1 - + 1000"); cmd("XRANGE " k " (" b "-60 + COUNT 1")
      }
    }'
}

# ---- one exporter at one size ----

# scrape_once CURL_ARGS...: one scrape of $ADDR into $T/body.txt; prints curl's time_total.
UP_OK=0
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

# run_exporter N NAME: start NAME, warm up, measure, stop; fills RES[N,NAME,*]
run_exporter() {
  local n=$1 name=$2 hdr=() i c0 c1 rc0 rc1 calls med wmed count t0=$SECONDS
  : > "$T/exporter.log"
  case $name in
    qrel | qrel_tls)
      local port=$REDIS_PORT tls=''
      if [ "$name" = qrel_tls ]; then
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
      "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 2>>"$T/exporter.log" &
      EXP_PID=$!
      ADDR=
      wait_for 5 "qrel_exporter to log its listening address" listening || true
      hdr=(-H 'X-Prometheus-Scrape-Timeout-Seconds: 30')
      ;;
    redis_exporter)
      ADDR=127.0.0.1:$(free_port)
      "$RE_BIN" --redis.addr="redis://127.0.0.1:$REDIS_PORT" --web.listen-address="$ADDR" \
        --check-streams="${PREFIX}*" 2>>"$T/exporter.log" &
      EXP_PID=$!
      wait_for 5 "$name to answer on $ADDR" curl -s -o /dev/null "http://$ADDR/" || true
      ;;
  esac
  # qrel answers its landing page only once it can; redis_exporter's "/" above is enough: its
  # /metrics would be one more scrape of seconds.
  if [ -z "$ADDR" ] || ! curl -s -o /dev/null "http://$ADDR/$([ "$name" = redis_exporter ] || echo metrics)" --max-time 120; then
    cat "$T/exporter.log" >&2
    die "$name did not start"
  fi

  # redis_exporter opens a new connection to Redis on every scrape, so it keeps nothing warm from
  # one to the next: one warm-up scrape (which picks the count to measure) instead of $WARMUP,
  # each of them seconds long at 10,000 streams.
  local warmup=$WARMUP
  [ "$name" != redis_exporter ] || warmup=1
  : > "$T/warm.txt"
  for ((i = 0; i < warmup; i++)); do scrape_once "${hdr[@]}" >> "$T/warm.txt"; done
  wmed=$(median < "$T/warm.txt")
  count=$SCRAPES
  if awk -v m="$wmed" 'BEGIN { exit !(m > 1.0) }'; then count=$SLOW_SCRAPES; fi
  progress "  $name: started and warmed up in $((SECONDS - t0)) s (warm-up median $(fmt "$wmed" %.3f) s), measuring $count scrapes"

  rc0=$(redis_cpu_s)
  rcli CONFIG RESETSTAT >/dev/null
  c0=$(cpu_ticks "$EXP_PID")
  : > "$T/times.txt"
  : > "$T/collect.txt"
  UP_OK=0
  : > "$T/own.txt"
  for ((i = 0; i < count; i++)); do
    scrape_once "${hdr[@]}" >> "$T/times.txt"
    mem_kib "$EXP_PID" >> "$T/own.txt"
    if up_check "$name" "$T/body.txt"; then UP_OK=$((UP_OK + 1)); fi
    if [[ $name == qrel* ]]; then
      # the collector's own time (Redis reads and building the series), the rest is serving
      awk '/^qrel_collector_duration_seconds\{/ && /source="bench"/ { print $NF; exit }' "$T/body.txt" >> "$T/collect.txt"
    fi
  done
  c1=$(cpu_ticks "$EXP_PID")
  calls=$(redis_calls)
  RES[$n,$name,mix]=$(redis_mix "$count")
  rc1=$(redis_cpu_s)
  med=$(median < "$T/times.txt")

  RES[$n,$name,scrapes]=$count
  RES[$n,$name,median]=$med
  RES[$n,$name,min]=$(sort -g "$T/times.txt" | head -1)
  RES[$n,$name,collect]=$(median < "$T/collect.txt")
  RES[$n,$name,cpu_ms]=$(awk -v d=$((c1 - c0)) -v k="$count" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$n,$name,rss_mib]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$n,$name,own_mib]=$(awk -v k="$(col_max 1 "$T/own.txt")" 'BEGIN { printf "%.2f", k / 1024 }')
  RES[$n,$name,heap_mib]=$(awk -v k="$(col_max 2 "$T/own.txt")" 'BEGIN { printf "%.2f", k / 1024 }')
  RES[$n,$name,cmds]=$(awk -v c="$calls" -v k="$count" 'BEGIN { printf "%.0f", c / k }')
  RES[$n,$name,rcpu_ms]=$(awk -v a="$rc0" -v b="$rc1" -v k="$count" 'BEGIN { printf "%.1f", (b - a) * 1000 / k }')
  RES[$n,$name,up]="$UP_OK/$count"
  RES[$n,$name,cover]=$(coverage "$name" "$T/body.txt")
  RES[$n,$name,bytes]=$(wc -c < "$T/body.txt")
  if [ "$UP_OK" -ne "$count" ]; then
    progress "  WARNING: $name reported Redis as down in $((count - UP_OK)) of $count scrapes"
  fi

  kill "$EXP_PID" 2>/dev/null || true
  wait "$EXP_PID" 2>/dev/null || true
  EXP_PID=
}

# run_floor N: the pipelined reads, timed around redis-cli --pipe. Each measured run is paired
# with a run that pipes only TIME: its median (redis-cli's start, connect and closing ECHO) is
# taken off, so the floor is what the reads themselves cost.
pipe_time() {
  local t0 t1 out
  t0=$EPOCHREALTIME
  out=$(rcli --pipe < "$1" 2>&1)
  t1=$EPOCHREALTIME
  case $out in
    *"errors: 0,"*) ;;
    *) die "pipeline $1 failed: $out" ;;
  esac
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f\n", b - a }'
}

run_floor() {
  local n=$1 i calls rc0 rc1 runs full empty
  floor_cmds "$n" > "$T/floor.cmds"
  printf 'TIME\r\n' > "$T/empty.cmds"
  runs=$SCRAPES
  for ((i = 0; i < WARMUP; i++)); do pipe_time "$T/floor.cmds" >/dev/null; done
  : > "$T/times.txt"
  : > "$T/empty.txt"
  rc0=$(redis_cpu_s)
  rcli CONFIG RESETSTAT >/dev/null
  for ((i = 0; i < runs; i++)); do
    pipe_time "$T/floor.cmds" >> "$T/times.txt"
    pipe_time "$T/empty.cmds" >> "$T/empty.txt"
  done
  # redis-cli --pipe ends each run with an ECHO of its own to know the last reply has come; the
  # empty runs sent one TIME each.
  calls=$(( $(redis_calls '^echo$') - runs ))
  rc1=$(redis_cpu_s)
  full=$(median < "$T/times.txt")
  empty=$(median < "$T/empty.txt")
  RES[$n,floor,scrapes]=$runs
  RES[$n,floor,raw]=$full
  RES[$n,floor,overhead]=$empty
  RES[$n,floor,median]=$(awk -v a="$full" -v b="$empty" 'BEGIN { d = a - b; printf "%.6f", (d > 0 ? d : 0) }')
  RES[$n,floor,min]=$(awk -v a="$(sort -g "$T/times.txt" | head -1)" -v b="$(sort -g "$T/empty.txt" | head -1)" \
    'BEGIN { d = a - b; printf "%.6f", (d > 0 ? d : 0) }')
  RES[$n,floor,cmds]=$(awk -v c="$calls" -v k="$runs" 'BEGIN { printf "%.0f", c / k }')
  RES[$n,floor,rcpu_ms]=$(awk -v a="$rc0" -v b="$rc1" -v k="$runs" 'BEGIN { printf "%.1f", (b - a) * 1000 / k }')
}

# run_floor_deep KEY N: the deep shape's reads through bench/pipe_floor.c, one open connection,
# $SCRAPES runs after $WARMUP. redis-cli --pipe is not used here: with 30 MB of replies its
# timing is its own (27-40 s against pipe_floor's 2 s for the same file, measured on this
# machine), not Redis's.
run_floor_deep() {
  local key=$1 out rc0 rc1 calls
  floor_deep_cmds "$2" > "$T/floor_deep.resp"
  "$FLOOR_BIN" "$REDIS_PORT" "$T/floor_deep.resp" "$WARMUP" >/dev/null
  rc0=$(redis_cpu_s)
  rcli CONFIG RESETSTAT >/dev/null
  out=$("$FLOOR_BIN" "$REDIS_PORT" "$T/floor_deep.resp" "$SCRAPES")
  calls=$(redis_calls)
  rc1=$(redis_cpu_s)
  read -r RES[$key,floor,min] RES[$key,floor,median] _ <<<"$out"
  RES[$key,floor,scrapes]=$SCRAPES
  RES[$key,floor,cmds]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.0f", c / k }')
  RES[$key,floor,rcpu_ms]=$(awk -v a="$rc0" -v b="$rc1" -v k="$SCRAPES" 'BEGIN { printf "%.1f", (b - a) * 1000 / k }')
}

# ---- run ----

QREL_VERSION=$(qrel_version "$QREL_BIN")
RE_VERSION=$("$RE_BIN" --version 2>&1 | sed -nE 's/.*msg="Redis Metrics Exporter ([^ ]+).*/\1/p' | head -1 || true)
if [ "$DEEP_N" -gt 0 ]; then
  FLOOR_BIN=$T/pipe_floor
  read -ra HIREDIS <<<"$(pkg-config --cflags --libs hiredis)"
  cc -O2 -o "$FLOOR_BIN" "$SRC_DIR/bench/pipe_floor.c" "${HIREDIS[@]}" || die "cannot build bench/pipe_floor.c"
fi
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

echo "# qrel redis_streams benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
echo "# ${QREL_VERSION:-qrel_exporter ?}; prometheus-redis-exporter ${RE_VERSION:-?}; redis-server $REDIS_VERSION"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "# warm-up $WARMUP scrapes (redis_exporter 1: it reconnects every scrape); measured $SCRAPES (or $SLOW_SCRAPES when the warm-up median is above 1 s)"

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
  for name in "${EXPORTERS[@]}"; do
    progress "N=$n: $name"
    t0=$SECONDS
    run_exporter "$n" "$name"
    progress "  $name: median $(fmt "${RES[$n,$name,median]}" %.3f) s, up ${RES[$n,$name,up]}; $((SECONDS - t0)) s in all"
  done
  progress "N=$n: floor (redis-cli --pipe)"
  t0=$SECONDS
  run_floor "$n"
  progress "  floor: median $(fmt "${RES[$n,floor,median]}" %.3f) s; $((SECONDS - t0)) s in all"
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
  for name in "${EXPORTERS[@]}"; do
    progress "deep: $name"
    t0=$SECONDS
    run_exporter deep "$name"
    progress "  $name: median $(fmt "${RES[deep,$name,median]}" %.3f) s, up ${RES[deep,$name,up]}; $((SECONDS - t0)) s in all"
  done
  progress "deep: floor (bench/pipe_floor.c)"
  t0=$SECONDS
  run_floor_deep deep "$DEEP_N"
  progress "  floor: median $(fmt "${RES[deep,floor,median]}" %.3f) s; $((SECONDS - t0)) s in all"
fi
progress "done in $((SECONDS - START)) s"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- table ----

ROW='%-7s %-15s %7s %9s %8s %10s %8s %8s %8s %10s %10s %7s %8s %9s\n'
# rows KEY LABEL: the qrel, redis_exporter and floor rows of one workload
rows() {
  local k=$1 label=$2 name
  for name in "${EXPORTERS[@]}"; do
    # shellcheck disable=SC2059 # the format is the table's
    printf "$ROW" "$label" "$name" \
      "${RES[$k,$name,scrapes]}" "$(fmt "${RES[$k,$name,median]}" %.4f)" \
      "$(fmt "${RES[$k,$name,min]}" %.4f)" "${RES[$k,$name,cpu_ms]}" \
      "${RES[$k,$name,rss_mib]}" "$( [[ $name == qrel* ]] && echo "${RES[$k,$name,own_mib]}" || echo -)" \
      "$( [[ $name == qrel* ]] && echo "${RES[$k,$name,heap_mib]}" || echo -)" \
      "${RES[$k,$name,cmds]}" "${RES[$k,$name,rcpu_ms]}" \
      "${RES[$k,$name,up]}" "${RES[$k,$name,cover]%%/*}" \
      "$(awk -v b="${RES[$k,$name,bytes]}" 'BEGIN { printf "%.0f", b / 1024 }')"
  done
  # shellcheck disable=SC2059
  printf "$ROW" "$label" "floor" \
    "${RES[$k,floor,scrapes]}" "$(fmt "${RES[$k,floor,median]}" %.4f)" \
    "$(fmt "${RES[$k,floor,min]}" %.4f)" - - - - \
    "${RES[$k,floor,cmds]}" "${RES[$k,floor,rcpu_ms]}" - - -
}
# shellcheck disable=SC2059
header() { printf "$ROW" streams exporter scrapes median_s min_s cpu_ms/scr rss_mib own_mib heap_mib redis_cmds redis_cpu up "$1" body_kib; }

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
echo "# min_s: fastest measured scrape (less moved by other work on the machine than the median)"
echo "# cpu_ms/scr: exporter utime+stime per scrape (resolution $((1000 / TCK)) ms over all measured scrapes);"
echo "# rss_mib: peak RSS (VmHWM); own_mib: qrel's largest RssAnon (heap, arenas, stacks and the libraries'"
echo "#   private pages) after a scrape; heap_mib: its largest heap + stacks alone (smaps), the 2 MiB goal's figure"
echo "# redis_cpu: Redis used_cpu_user+sys ms per scrape; pend: groups reported with that many pending entries"
echo "# (redis_exporter has no delivery-count series: it cannot show the redelivered entries)"
for n in "${SIZE_LIST[@]}"; do
  echo "# small N=$n: floor $(fmt "${RES[$n,floor,raw]}" %.4f) s with redis-cli's own $(fmt "${RES[$n,floor,overhead]}" %.4f) s" \
    "taken off; qrel streams with a redelivered entry: ${RES[$n,qrel,cover]##*/} (want $(( (n + 9) / 10 )));" \
    "qrel_collector_duration_seconds median $(fmt "${RES[$n,qrel,collect]}" %.4f) s"
done
if [ "$DEEP_N" -gt 0 ]; then
  echo "# deep N=$DEEP_N: floor by bench/pipe_floor.c on an open connection; qrel streams with a redelivered" \
    "entry: ${RES[deep,qrel,cover]##*/} (want $DEEP_N); qrel_collector_duration_seconds median $(fmt "${RES[deep,qrel,collect]}" %.4f) s"
fi

for n in "${SIZE_LIST[@]}"; do
  for name in "${EXPORTERS[@]}"; do
    echo "# small N=$n: $name per scrape (INFO not shown): ${RES[$n,$name,mix]}"
  done
done
if [ "$DEEP_N" -gt 0 ]; then
  for name in "${EXPORTERS[@]}"; do
    echo "# deep N=$DEEP_N: $name per scrape (INFO not shown): ${RES[deep,$name,mix]}"
  done
fi
echo "# load average at the end: $LOAD_END (the benchmark itself keeps about one core busy)"

# ---- verdict ----

# verdict KEY WHAT SHAPE SIZE: the goal on one workload: <= 1.5x the pipelined floor (median; issue
# 28 retired round 1's ">= 10x redis_exporter", which lay below the floor itself: the speed-up is
# still printed), <= 0.20 of redis_exporter's peak RSS, qrel's heap + stacks <= 2 MiB, and qrel up
# in every scrape; then the workload's result row (bench_result).
verdict() {
  local k=$1
  awk -v q="${RES[$k,qrel,median]}" -v r="${RES[$k,redis_exporter,median]}" \
      -v qm="${RES[$k,qrel,rss_mib]}" -v rm="${RES[$k,redis_exporter,rss_mib]}" -v own="${RES[$k,qrel,heap_mib]}" \
      -v f="${RES[$k,floor,median]}" -v up="${RES[$k,qrel,up]}" -v what="$2" -v vfile="$T/verdict" \
      -v qmin="${RES[$k,qrel,min]}" -v rmin="${RES[$k,redis_exporter,min]}" -v fmin="${RES[$k,floor,min]}" 'BEGIN {
    split(up, u, "/")
    speed = (q > 0) ? r / q : 0
    rss = (rm > 0) ? qm / rm : 0
    fl = (f > 0) ? q / f : 0
    ok = (rss <= 0.2 && fl <= 1.5 && own <= 2 && u[1] == u[2])
    m = ""
    if (rss > 0.2) m = m sprintf("; RSS %.2f of its (goal <= 0.20)", rss)
    if (fl > 1.5) m = m sprintf("; %.2fx the floor (goal <= 1.5)", fl)
    if (own > 2) m = m sprintf("; heap + stacks %.2f MiB (goal <= 2)", own)
    if (u[1] != u[2]) m = m "; qrel collector not up in every scrape"
    print (ok ? "met" : "missed: " substr(m, 3)) > vfile
    printf "verdict, %s: qrel %.1fx faster than redis_exporter, RSS %.2f of its (goal <= 0.20: %s), %.2fx the pipelined floor (goal <= 1.5: %s), heap + stacks %.2f MiB (goal <= 2: %s)%s: %s\n",
      what, speed, rss, (rss <= 0.2) ? "met" : "missed",
      fl, (fl <= 1.5) ? "met" : "missed", own, (own <= 2) ? "met" : "missed",
      (u[1] == u[2]) ? "" : ", qrel collector NOT up in every scrape", ok ? "MET" : "NOT MET"
    printf "  (on the fastest scrapes instead of the medians: %.1fx faster, %.2fx the floor)\n",
      (qmin > 0) ? rmin / qmin : 0, (fmin > 0) ? qmin / fmin : 0
  }'
  bench_result shape="$3" size="$4 streams" stat=median qrel_s="$(fmt "${RES[$k,qrel,median]}" %.4f)" \
    floor_s="$(fmt "${RES[$k,floor,median]}" %.4f)" x_floor="$(ratio "${RES[$k,qrel,median]}" "${RES[$k,floor,median]}")" \
    peer=redis_exporter peer_s="$(fmt "${RES[$k,redis_exporter,median]}" %.4f)" heap="${RES[$k,qrel,heap_mib]} MiB" \
    broker_ms="${RES[$k,qrel,rcpu_ms]}" \
    goal="<= 1.5x the floor, <= 0.20 of redis_exporter's RSS, heap + stacks <= 2 MiB" verdict="$(cat "$T/verdict")"
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
