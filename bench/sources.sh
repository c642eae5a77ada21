#!/usr/bin/env bash
# sources.sh: 1,000 sources in one qrel_exporter, with the collection pool and without it.
#
# Starts a few redis-servers and PostgreSQL clusters on loopback (tests/lib/common.sh), one
# source per stream or database connection, and scrapes /metrics in two workload shapes:
#   healthy  every server answers;
#   hanging  one Redis server holding every 10th source is stopped (SIGSTOP): its sources'
#            connections are accepted by the kernel and never answered, so each of those
#            collections runs until its deadline.
# Each shape runs with --collector.concurrency equal to the number of sources (every source on
# its own thread at once: the behaviour before the pool) and with the default pool size. Prints
# per run: the first scrape, the median of the measured ones, sources up, peak and final thread
# count, peak RSS, RssAnon and heap + stacks after the last scrape (once freed), peak and final
# open file descriptors, and the connections the servers accepted during the measured scrapes (0
# when every source keeps its connection). Also per run (issue 28, goal 5) the start-up: from exec
# to the first served /metrics, the port polled; and at the default pool a reload at N sources:
# POST /-/reload (--web.enable-lifecycle; it answers once the new configuration serves) while
# scrapes run back to back, with the scrapes in flight during it against the median before, and
# the first scrape after it (a reload makes new collectors: every source connects again). See
# bench/README.md for the method and the results.
#
# Needs: bash, redis-server, redis-cli, PostgreSQL (initdb, pg_ctl, psql), curl, awk, python3,
# and a built qrel_exporter (build/qrel_exporter, or QREL_BUILD_DIR, or --qrel PATH).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/sources.sh [--sources N] [--redis N] [--postgres N] [--pg-sources N]
                        [--pool N] [--scrapes N] [--timeout S] [--qrel PATH]

  --sources N      sources in the exporter (default 1000); every 10th is on the Redis server
                   that the "hanging" shape stops
  --redis N        healthy redis-servers (default 4), plus one for the hanging sources
  --postgres N     PostgreSQL clusters (default 2)
  --pg-sources N   of the healthy sources, how many are PostgreSQL ones (default 200)
  --pool N         the pooled run's --collector.concurrency (default 64, the exporter's default)
  --scrapes N      measured scrapes per run after the first (default 5)
  --timeout S      X-Prometheus-Scrape-Timeout-Seconds of every scrape (default 10, Prometheus'
                   default scrape_timeout)
  --qrel PATH      qrel_exporter binary
  -h, --help       this text

The table goes to stdout, progress lines to stderr.
With BENCH_RESULTS=FILE set, one result row per shape is appended to FILE (bench/all.sh sets it).
EOF
}

NSRC=1000
NREDIS=4
NPG=2
NPGSRC=200
POOL=64
SCRAPES=5
TIMEOUT=10
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
QREL_BIN=""

# shellcheck source=lib.sh
. "$SRC_DIR/bench/lib.sh"
parse_options "--sources:NSRC --redis:NREDIS --postgres:NPG --pg-sources:NPGSRC --pool:POOL --scrapes:SCRAPES \
  --timeout:TIMEOUT --qrel:QREL_BIN" "$@"
for v in "--sources $NSRC" "--redis $NREDIS" "--postgres $NPG" "--pg-sources $NPGSRC" \
  "--pool $POOL" "--scrapes $SCRAPES" "--timeout $TIMEOUT"; do
  need_num ${v% *} "${v#* }"
done
[ "$NPGSRC" -lt $((NSRC - NSRC / 10)) ] || die "--pg-sources: want fewer than the healthy sources"

export QREL_SOURCE_DIR=$SRC_DIR
# shellcheck source=../tests/lib/common.sh
. "$SRC_DIR/tests/lib/common.sh"
[ -n "$QREL_BIN" ] && EXPORTER=$QREL_BIN
[ -x "$EXPORTER" ] || die "no qrel_exporter at $EXPORTER (build first, or --qrel PATH)"
for tool in redis-server redis-cli curl python3; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
[ -x "$PGBIN/initdb" ] || die "PostgreSQL's initdb not found (PGBIN)"
say() { echo "sources.sh: $*" >&2; }

# --- servers -----------------------------------------------------------------------------------
say "starting $NREDIS+1 redis-servers and $NPG PostgreSQL clusters"
REDIS=()
for _ in $(seq 1 "$NREDIS"); do
  start_redis p
  REDIS+=("$p")
done
start_redis STUCK
PG=()
per_pg=$(((NPGSRC + NPG - 1) / NPG))
for _ in $(seq 1 "$NPG"); do
  start_postgres p
  # One backend per source on this cluster, plus room for psql and the checks.
  psql_do "ALTER SYSTEM SET max_connections = $((per_pg + 20))" >/dev/null
  as_postgres "$PGBIN/pg_ctl" -D "$T/pg-$p/data" -w -t 30 restart >/dev/null
  psql_do "CREATE TABLE bench_jobs (state text NOT NULL);
           INSERT INTO bench_jobs SELECT (ARRAY['ready','running','done'])[1 + i % 3]
           FROM generate_series(1, 30) i;" >/dev/null
  PG+=("$p")
done

# Source i: every 10th on STUCK, then the PostgreSQL ones, the rest spread over the Redis servers.
{
  echo "global: {timeout: 10s}"
  echo "sources:"
  pg_left=$NPGSRC
  for i in $(seq 0 $((NSRC - 1))); do
    if [ $((i % 10)) -eq 9 ]; then
      port=$STUCK
    elif [ "$pg_left" -gt 0 ] && [ $((i % 5)) -eq 0 ]; then
      pg_left=$((pg_left - 1))
      port=${PG[$((pg_left % NPG))]}
      printf '  - name: s%d\n    kind: postgres\n    host: 127.0.0.1\n    port: %s\n    user: postgres\n    dbname: postgres\n' "$i" "$port"
      printf '    queries: [{name: jobs, sql: "SELECT state, count(*) AS n FROM bench_jobs GROUP BY state", labels: [state], metrics: [{name: bench_jobs, type: gauge, help: Jobs by state., value_column: n}]}]\n'
      continue
    else
      port=${REDIS[$((i % NREDIS))]}
    fi
    printf '  - name: s%d\n    kind: redis_stream\n    address: 127.0.0.1:%s\n    streams: [{name: "q:%d"}]\n' "$i" "$port" "$i"
    echo "XGROUP CREATE q:$i g1 0 MKSTREAM" >>"$T/fill-$port.txt"
    echo "XADD q:$i * n 1" >>"$T/fill-$port.txt"
    echo "XADD q:$i * n 2" >>"$T/fill-$port.txt"
    echo "XREADGROUP GROUP g1 c1 COUNT 1 STREAMS q:$i >" >>"$T/fill-$port.txt"
  done
} >"$T/qrel.yml"
[ "$pg_left" -eq 0 ] || die "could not place every PostgreSQL source (use fewer --pg-sources)"
for f in "$T"/fill-*.txt; do
  port=${f##*/fill-}
  redis-cli -p "${port%.txt}" <"$f" >/dev/null
done
"$EXPORTER" --config.file="$T/qrel.yml" --config.check >/dev/null || die "the generated configuration is invalid"

# --- measuring ---------------------------------------------------------------------------------
# redis_accepted: connections all the Redis servers have accepted so far (INFO stats).
redis_accepted() {
  local sum=0 p n
  for p in "${REDIS[@]}"; do
    n=$(redis-cli -p "$p" INFO stats | tr -d '\r' | awk -F: '$1 == "total_connections_received" { print $2 }')
    sum=$((sum + n))
  done
  echo "$sum"
}
# pg_started_since EPOCH: qrel backends started after EPOCH, over all clusters.
pg_started_since() {
  local sum=0 p n
  for p in "${PG[@]}"; do
    n=$(PG_PORT=$p psql_val "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'qrel' AND backend_start > to_timestamp($1)")
    sum=$((sum + n))
  done
  echo "$sum"
}
# sampler PID OUT: every 20 ms, "threads fds" of PID into OUT, until PID or the sampler is gone.
sampler() {
  local pid=$1 out=$2 th
  while [ -d "/proc/$pid" ]; do
    th=$(awk '$1 == "Threads:" { print $2 }' "/proc/$pid/status" 2>/dev/null) || break
    echo "$th $(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)" >>"$out"
    sleep 0.02
  done
}
# scrape_once OUT: one /metrics scrape into OUT; prints "seconds up".
scrape_once() {
  local t
  t=$(curl -fsS -o "$1" -w '%{time_total}' -H "X-Prometheus-Scrape-Timeout-Seconds: $TIMEOUT" \
    --max-time $((TIMEOUT + 5)) "http://$ADDR/metrics") || return 1
  echo "$t $(grep -c '^qrel_collector_up{.*} 1$' "$1" || true)"
}

# reload_during OUT: POST /-/reload (it answers once the new configuration serves) while scrapes
# run back to back in the background, each logged to OUT as "start end seconds". Sets RELOAD_S
# (the POST's time), DURING ("n max": the scrapes in flight at any moment of the reload, and the
# slowest of them) and AFTER_S (the first scrape started after it, in which every source of the
# new configuration connects again). Waits for scrapes to be logged, not for a time.
reload_during() {
  local out=$1 loop r0 r1 a s
  : >"$out"
  rm -f "$T/stop-loop"
  (
    while [ ! -e "$T/stop-loop" ]; do
      a=$(date +%s.%N)
      read -r s _ < <(scrape_once "$T/r.txt") || s=nan
      echo "$a $(date +%s.%N) $s" >>"$out"
    done
  ) &
  loop=$!
  wait_for -i 0.02 $((2 * TIMEOUT + 10)) "a scrape before the reload" test -s "$out" || die "no scrape before the reload"
  r0=$(date +%s.%N)
  RELOAD_S=$(curl -fsS -o /dev/null -w '%{time_total}' -X POST "http://$ADDR/-/reload") || die "POST /-/reload failed"
  r1=$(date +%s.%N)
  wait_for -i 0.02 $((3 * TIMEOUT + 20)) "a scrape started after the reload" \
    awk -v r="$r1" '$1 > r { n++ } END { exit !n }' "$out" || die "no scrape after the reload"
  touch "$T/stop-loop"
  wait "$loop"
  DURING=$(awk -v a="$r0" -v b="$r1" '$1 < b && $2 > a { n++; if ($3 > m) m = $3 } END { printf "%d %s", n, (n ? m : "-") }' "$out")
  AFTER_S=$(awk -v r="$r1" '$1 > r { print $3; exit }' "$out")
  grep -q 'msg="configuration reloaded"\|msg=configuration reloaded' "$T/exporter.log" || die "no \"configuration reloaded\" log line"
}

printf '# qrel sources benchmark, %s, %s cores\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)"
printf '# %s; redis-server %s; PostgreSQL %s\n' "$(qrel_version "$EXPORTER")" \
  "$(redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/')" "$("$PGBIN/postgres" --version | awk '{ print $3 }')"
printf '# %d sources: %d redis_stream on %d servers, %d postgres on %d clusters, %d redis_stream on the server the hanging shape stops\n' \
  "$NSRC" $((NSRC - NSRC / 10 - NPGSRC)) "$NREDIS" "$NPGSRC" "$NPG" $((NSRC / 10))
printf '# each scrape: GET /metrics with X-Prometheus-Scrape-Timeout-Seconds: %s, back to back; %d measured after the first\n' "$TIMEOUT" "$SCRAPES"
printf '# load average at start: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
ROW='%-8s %-12s %8s %8s %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %9s\n'
# shellcheck disable=SC2059 # the format is the table's
printf "$ROW" shape concurrency first_s first_up median_s max_s up thr_peak thr_end rss_mib own_kib \
  heap_kib fd_peak fd_end new_conns

for shape in healthy hanging; do
  if [ "$shape" = hanging ]; then
    kill -STOP "$(cat "$T/redis-$STUCK/redis.pid")"
  fi
  pooled=0 # the second run of the shape is the pooled one, even when --pool equals --sources
  for conc in "$NSRC" "$POOL"; do
    say "$shape, --collector.concurrency=$conc"
    : >"$T/exporter.log"
    # Start-up: from exec to the first served /metrics, the port polled (a refused connection
    # returns at once) on an address given up front, so nothing waits for the log.
    port=$(free_port)
    ADDR=127.0.0.1:$port
    t_exec=$(date +%s.%N)
    "$EXPORTER" --config.file="$T/qrel.yml" --web.listen-address="$ADDR" --log.level=info \
      --collector.concurrency="$conc" --web.enable-lifecycle 2>>"$T/exporter.log" &
    EXPORTER_PID=$!
    PIDS+=("$EXPORTER_PID")
    samples=$T/samples-$shape-$conc.txt
    : >"$samples"
    sampler "$EXPORTER_PID" "$samples" &
    sampler_pid=$!
    first_s="" first_up=0
    while [ -z "$first_s" ]; do
      # An exporter that exited stays a zombie (State Z) until waited for.
      awk '$1 == "State:" && $2 != "Z" { ok = 1 } END { exit !ok }' "/proc/$EXPORTER_PID/status" 2>/dev/null ||
        die "qrel_exporter did not start: $(cat "$T/exporter.log")"
      if ! read -r first_s first_up < <(scrape_once "$T/first.txt" 2>/dev/null); then
        first_s=""
        sleep 0.01
      fi
    done
    startup_s=$(awk -v a="$t_exec" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
    r0=$(redis_accepted)
    t0=$(date +%s.%N)
    times=()
    ups=()
    for _ in $(seq 1 "$SCRAPES"); do
      read -r s u < <(scrape_once "$T/m.txt")
      times+=("$s")
      ups+=("$u")
    done
    # Less the connection of redis_accepted's own redis-cli to each server.
    new=$(($(redis_accepted) - r0 - NREDIS + $(pg_started_since "$t0")))
    thr_end=$(awk '$1 == "Threads:" { print $2 }' "/proc/$EXPORTER_PID/status")
    fd_end=$(find "/proc/$EXPORTER_PID/fd" -mindepth 1 -maxdepth 1 | wc -l)
    rss=$(hwm_kib "$EXPORTER_PID")
    read -r own heap < <(mem_settled_kib "$EXPORTER_PID")
    kill "$sampler_pid" 2>/dev/null || true
    wait "$sampler_pid" 2>/dev/null || true
    reload_note="" reload_line=""
    if [ "$pooled" = 1 ]; then # the reload, at the exporter's default pool only
      reload_during "$T/reload-$shape.txt"
      read -r n_during max_during <<<"$DURING"
      reload_line=$(printf '#   %s %s: reload %s s; %s scrapes in flight during it (slowest %s s; median before %s s); first scrape after it %s s' \
        "$shape" "$conc" "$(fmt "$RELOAD_S" %.3f)" "$n_during" "$(fmt "$max_during" %.3f)" \
        "$(fmt "$(printf '%s\n' "${times[@]}" | median)" %.3f)" "$(fmt "$AFTER_S" %.3f)")
      reload_note="; reload $(fmt "$RELOAD_S" %.3f) s, scrapes during it $n_during (slowest $(fmt "$max_during" %.3f) s), first after it $(fmt "$AFTER_S" %.3f) s"
    fi
    kill "$EXPORTER_PID"
    wait "$EXPORTER_PID" 2>/dev/null || true
    thr_peak=$(awk '$1 > m { m = $1 } END { print m + 0 }' "$samples")
    fd_peak=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$samples")
    med=$(printf '%s\n' "${times[@]}" | median)
    max=$(printf '%s\n' "${times[@]}" | sort -g | tail -1)
    upm=$(printf '%s\n' "${ups[@]}" | median)
    # shellcheck disable=SC2059
    printf "$ROW" "$shape" "$conc" \
      "$(fmt "$first_s" %.3f)" "$first_up" "$(fmt "$med" %.3f)" "$(fmt "$max" %.3f)" \
      "$(fmt "$upm" %.0f)" "$thr_peak" "$thr_end" "$(fmt "$rss" '%.1f' | awk '{ printf "%.1f", $1 / 1024 }')" \
      "$own" "$heap" "$fd_peak" "$fd_end" "$new"
    printf '#   %s %s: measured scrapes (s/up): %s\n' "$shape" "$conc" \
      "$(paste -d/ <(printf '%s\n' "${times[@]}" | xargs printf '%.3f\n') <(printf '%s\n' "${ups[@]}") | paste -sd' ')"
    nsl=$(grep -c 'collection not started before the deadline' "$T/exporter.log" || true)
    printf '#   %s %s: "not started" log lines: %s\n' "$shape" "$conc" "$nsl"
    printf '#   %s %s: start-up (exec to the first served scrape) %s s\n' "$shape" "$conc" "$startup_s"
    [ -z "$reload_line" ] || echo "$reload_line"
    if [ "$pooled" = 0 ]; then # a thread per source: what the pooled run's row compares with
      one_med=$med one_thr=$thr_peak one_rss=$rss one_startup=$startup_s pooled=1
    else
      bench_result shape="$shape" size="$NSRC sources" stat=median qrel_s="$(fmt "$med" %.3f)" \
        peer="a thread per source" peer_s="$(fmt "$one_med" %.3f)" heap="$heap KiB" \
        note="pool of $conc: up $(fmt "$upm" %.0f), first scrape $first_up up; start-up $startup_s s ($one_startup); threads $thr_peak ($one_thr); RSS $(awk -v k="$rss" 'BEGIN { printf "%.1f", k / 1024 }') MiB ($(awk -v k="$one_rss" 'BEGIN { printf "%.1f", k / 1024 }'))$reload_note"
    fi
  done
  if [ "$shape" = hanging ]; then
    kill -CONT "$(cat "$T/redis-$STUCK/redis.pid")"
  fi
done
printf '\n# load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
