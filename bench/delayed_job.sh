#!/usr/bin/env bash
# delayed_job.sh: the delayed_job preset of kind postgres on a large delayed_jobs table, beside
# the floor and prometheus-postgres-exporter, in two workload shapes:
#   failed  ROWS jobs over 10 queues, 90 % failed for good and kept (destroy_failed_jobs false:
#           failed_at set), 8 % ready, 2 % waiting to retry (attempts > 0, run_at ahead): the
#           table of a deployment that keeps its failures (finished jobs are deleted by
#           delayed_job, so they are no rows);
#   busy    ROWS jobs over 1,000 queues: 40 % ready, 20 % locked by a worker (in flight), 10 %
#           locked longer ago than max_run_time (an expired lease, ready again), 20 % scheduled
#           ahead, 10 % failed.
# In both, a tenth of the ready, in-flight and scheduled jobs are one failure from the end.
# The table is made by delayed_job_active_record's own generator template run through Active
# Record (as tests/peers/delayed_job/drive.rb makes it); its rows are inserted in bulk with one
# INSERT ... SELECT generate_series per shape, in the columns and the values delayed_job writes
# (UTC timestamps, a YAML handler, locked_by "host:NAME pid:N"): enqueueing a million jobs
# through Delayed::Job.enqueue would take the benchmark's whole budget. Each shape runs on a fresh
# table; the time each setup took is printed.
#
# For each shape, in rounds that take turns (one psql session runs qrel's statements, then through
# \! one scrape of qrel and one of the peer), it prints the median and fastest collection time of
# a running qrel_exporter (qrel_collector_duration_seconds of each scrape: the source keeps its
# connection, as the floor's psql does); the floor: the very statements qrel ran in one scrape
# (read from the server's statement log with their parameters put back in, bench/pglog.py), timed
# by psql (\timing, the sum of a round's statements), fastest and median round; the ratio of the
# fastest runs (the goal is at most 1.5, read at a size where a scrape takes at least 50 ms);
# PostgreSQL's own plan + execution time per qrel scrape (pg_stat_statements) as the broker's
# cost; and the peer, prometheus-postgres-exporter running one equivalent query (the figures of
# qrel's statement: per queue the counts by state, retrying, last-try and failed jobs, the ages
# of the oldest pending, failed and held job, and the rows stamped ahead, --extend.query-path):
# its fastest and median scrape and its database time. The peer's query runs in parallel where
# the planner allows (qrel's is serial), so its pg_stat_statements time is its leader's wall
# time, not what it costs the server: both are also given as PostgreSQL's CPU per scrape, every
# process of the cluster around each scrape (the workers included), to 10 ms ticks. qrel's
# memory: the largest RssAnon (own) and heap + stacks (heap, the 2 MiB goal's figure) after each
# measured scrape. qrel's counts are checked against SQL's
# over the table with delayed_job's ready_to_run predicate. A missed goal is reported, not an
# error. See bench/README.md.
#
# Needs: PostgreSQL 15 (server binaries from pg_config --bindir, psql, postgresql-contrib for
# pg_stat_statements), ruby with ruby-delayed-job-active-record, ruby-activerecord and ruby-pg,
# prometheus-postgres-exporter, python3, curl, and a built qrel_exporter (build/, or
# QREL_BUILD_DIR).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/delayed_job.sh [--rows N] [--scrapes N] [--warmup N]

  --rows N      jobs in delayed_jobs, each shape (default 1000000)
  --scrapes N   measured scrapes of qrel and of the peer, and measured psql rounds (default 7)
  --warmup N    unmeasured scrapes and rounds first (default 2)
EOF
  usage_end
}

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib.sh
. "$root/bench/lib.sh"
ROWS=1000000
SCRAPES=7
WARMUP=2
parse_options "--rows:ROWS --scrapes:SCRAPES --warmup:WARMUP" "$@"
need_num --rows "$ROWS"
need_num --scrapes "$SCRAPES"
need_num --warmup "$WARMUP"
need_tools ruby python3 curl psql pg_config prometheus-postgres-exporter
ruby -e 'require "active_record"; require "delayed_job"; require "delayed_job_active_record"; require "pg"' 2>/dev/null ||
  die "delayed_job missing (ruby-delayed-job, ruby-delayed-job-active-record, ruby-activerecord, ruby-pg)"
[ -x "$QREL_BIN" ] || die "build qrel_exporter first ($QREL_BIN)"
export QREL_SOURCE_DIR=$root
T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-bench.XXXXXX")
[ "$(id -u)" -ne 0 ] || chmod 755 "$T" # the server runs as postgres and writes its log under $T
EXP_PID='' PGEXP_PID=''
cleanup() {
  for pid in "$EXP_PID" "$PGEXP_PID"; do [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; done
  servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
progress() { printf '%s\n' "$*" >&2; }
ms() { awk -v s="$1" 'BEGIN { printf "%.1f ms", s * 1000 }'; }
per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.1f", a / n }'; }
MAX_RUN_TIME=4h      # the preset's default, and the peer's lease
MAX_ATTEMPTS=25      # the preset's default

# ---- the server ----

# The statement log qrel's statements are read from, pg_stat_statements for the database time,
# no autovacuum (each load is vacuumed and analyzed here, and nothing writes while measuring).
cat > "$T/postgresql.conf" <<CONF
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track_planning = on
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 4GB
shared_buffers = 256MB
maintenance_work_mem = 256MB
logging_collector = on
log_destination = 'stderr,jsonlog'
log_directory = 'log'
log_filename = 'server.log'
log_timezone = 'UTC'
log_min_duration_statement = 0
autovacuum = off
CONF
PG_CONF=$T/postgresql.conf start_postgres PGP || die "PostgreSQL did not start (with pg_stat_statements)"
LOG_JSON=$PG_DIR/data/log/server.json
pq() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGP" -U postgres -d bench "$@"; }
psql -X -q -h 127.0.0.1 -p "$PGP" -U postgres -d postgres -c 'CREATE DATABASE bench'
# one role per reader, so the statistics and the log tell them apart
pq <<'SQL'
CREATE EXTENSION pg_stat_statements;
CREATE ROLE qrel LOGIN;
CREATE ROLE bench_raw LOGIN;
CREATE ROLE postgres_exporter LOGIN;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO qrel, bench_raw, postgres_exporter;
SQL
log_offset() { if [ -f "$LOG_JSON" ]; then stat -c %s "$LOG_JSON"; else echo 0; fi; }
log_settle() { sleep 0.3; } # the logging collector writes through a pipe

# make_table: delayed_jobs as `rails generate delayed_job:active_record` makes it: the gem's
# migration template rendered and run by Active Record (tests/peers/delayed_job/drive.rb).
make_table() {
  pq -c 'SET client_min_messages = warning; DROP TABLE IF EXISTS delayed_jobs'
  ruby - "$PGP" <<'RUBY'
require "erb"
require "active_record"
require "delayed_job"
require "delayed_job_active_record"
ActiveRecord::Base.establish_connection(adapter: "postgresql", host: "127.0.0.1", port: ARGV[0].to_i,
                                        username: "postgres", database: "bench")
ActiveRecord::Migration.verbose = false
gem_dir = Gem::Specification.find_by_name("delayed_job_active_record").gem_dir
template = File.join(gem_dir, "lib/generators/delayed_job/templates/migration.rb")
migration_version = "[#{ActiveRecord::Migration.current_version}]"
eval(ERB.new(File.read(template)).result(binding)) # rubocop:disable Security/Eval
CreateDelayedJobs.up
RUBY
}

# fill SHAPE: ROWS jobs of the shape, in one INSERT. Job i's class is i mod 100 (0..99): the
# shape's split is by that class; n is now() in UTC (Rails' timestamp columns).
fill() {
  local queues case_sql
  case $1 in
    failed)
      queues=10
      # 0-89 failed for good (25 attempts), 90-97 ready, 98-99 retrying an hour ahead
      case_sql="CASE WHEN c < 90 THEN 'x' WHEN c < 98 THEN 'r' ELSE 'y' END" ;;
    busy)
      queues=1000
      # 0-39 ready, 40-59 locked (in flight), 60-69 locked 5 h ago (lease expired), 70-89
      # scheduled ahead, 90-99 failed
      case_sql="CASE WHEN c < 40 THEN 'r' WHEN c < 60 THEN 'i' WHEN c < 70 THEN 'e' WHEN c < 90 THEN 'd' ELSE 'x' END" ;;
  esac
  pq <<SQL
INSERT INTO delayed_jobs (priority, attempts, handler, last_error, run_at, locked_at, failed_at,
                          locked_by, queue, created_at, updated_at)
SELECT 0,
       CASE WHEN s = 'x' THEN $MAX_ATTEMPTS WHEN s = 'y' THEN 1 + i % 3
            WHEN i % 10 = 0 THEN $MAX_ATTEMPTS - 1 ELSE 0 END,
       E'--- !ruby/object:BenchJob\\nid: ' || i || E'\\n',
       CASE WHEN s IN ('x', 'y') THEN 'RuntimeError: bench failure' END,
       CASE WHEN s IN ('d', 'y') THEN n + interval '1 hour' ELSE n - (i % 3600) * interval '1 second' END,
       CASE WHEN s = 'i' THEN n - (i % 600) * interval '1 second' WHEN s = 'e' THEN n - interval '5 hours' END,
       CASE WHEN s = 'x' THEN n - (i % 86400) * interval '1 second' END,
       CASE WHEN s IN ('i', 'e') THEN 'host:worker' || i % 8 || ' pid:' || (1000 + i % 8) END,
       'q' || i % $queues,
       n - interval '1 day' + (i % 86400) * interval '1 second',
       n - (i % 3600) * interval '1 second'
FROM (SELECT i, i % 100 AS c, now() AT TIME ZONE 'UTC' AS n FROM generate_series(1, $ROWS) AS i) AS g,
     LATERAL (SELECT $case_sql AS s) AS k;
VACUUM ANALYZE delayed_jobs;
SQL
}

# sql_totals: "READY IN_FLIGHT DELAYED FAILED" over the table by delayed_job's own ready_to_run
# (run_at passed, failed_at NULL, unlocked or locked longer ago than max_run_time)
sql_totals() {
  pq -At -F' ' -c "SELECT count(*) FILTER (WHERE failed_at IS NULL AND run_at <= n AND (locked_at IS NULL OR locked_at < n - lease)),
    count(*) FILTER (WHERE failed_at IS NULL AND locked_at >= n - lease),
    count(*) FILTER (WHERE failed_at IS NULL AND run_at > n AND (locked_at IS NULL OR locked_at < n - lease)),
    count(*) FILTER (WHERE failed_at IS NOT NULL)
    FROM delayed_jobs, (SELECT now() AT TIME ZONE 'UTC' AS n, interval '$MAX_RUN_TIME' AS lease) AS t"
}

# qrel_totals FILE: the same four figures from a scrape, summed over the queues
qrel_totals() {
  awk '/^qrel_queue_messages\{/ && /kind="pg_jobs"/ {
      for (s in w) if (index($0, "state=\"" s "\"")) n[s] += $NF }
    /^qrel_dead_letter_messages\{/ && /dead_letter_queue="failed"/ { x += $NF }
    BEGIN { w["ready"]; w["in_flight"]; w["delayed"] }
    END { printf "%d %d %d %d\n", n["ready"], n["in_flight"], n["delayed"], x }' "$1"
}

# pgss ROLE: "calls ms" of ROLE's statements since the last reset (plan + execution time)
pgss() {
  pq -At -F' ' -c "SELECT coalesce(sum(s.calls), 0), round(coalesce(sum(s.total_exec_time + s.total_plan_time), 0)::numeric, 3)
    FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid WHERE r.rolname = '$1'"
}
pgss_reset() { pq -At -c 'SELECT pg_stat_statements_reset()' >/dev/null; }

# ---- the exporters ----

# start_qrel: a qrel_exporter on the delayed_job table as role qrel; sets EXP_PID and ADDR.
start_qrel() {
  cat > "$T/qrel.yml" <<YML
sources:
  - name: bench
    kind: postgres
    host: 127.0.0.1
    port: $PGP
    user: qrel
    dbname: bench
    sslmode: disable
    timeout: 60s
    queues:
      - preset: delayed_job
YML
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 2>> "$T/exporter.log" &
  EXP_PID=$!
  wait_for 5 "qrel_exporter to log its listening address" listening || die "qrel_exporter did not start"
}
stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# The peer's one query: per queue the figures of qrel's statement (ready by delayed_job's
# ready_to_run, in flight, delayed, retrying, on their last try, failed; the age of the oldest
# pending job not scheduled ahead, of the oldest failed one and of the oldest lock within
# max_run_time; the rows a host stamped ahead, uncapped), over the whole table on each scrape,
# as an operator would write it for postgres_exporter.
cat > "$T/pgexp.yml" <<YML
delayed_jobs:
  query: |
    SELECT coalesce(queue, '(none)') AS queue,
      count(*) FILTER (WHERE failed_at IS NULL AND run_at <= n AND (locked_at IS NULL OR locked_at < n - lease))::float8 AS ready,
      count(*) FILTER (WHERE failed_at IS NULL AND locked_at >= n - lease)::float8 AS in_flight,
      count(*) FILTER (WHERE failed_at IS NULL AND run_at > n AND (locked_at IS NULL OR locked_at < n - lease))::float8 AS delayed,
      count(*) FILTER (WHERE failed_at IS NULL AND attempts > 0)::float8 AS retrying,
      count(*) FILTER (WHERE failed_at IS NULL AND attempts >= $MAX_ATTEMPTS - 1)::float8 AS last_try,
      count(*) FILTER (WHERE failed_at IS NOT NULL)::float8 AS failed,
      coalesce(extract(epoch FROM n - min(created_at) FILTER (WHERE failed_at IS NULL AND (run_at <= n OR locked_at >= n - lease))), 0)::float8 AS oldest_seconds,
      coalesce(extract(epoch FROM n - min(failed_at)), 0)::float8 AS oldest_failed_seconds,
      coalesce(extract(epoch FROM n - min(locked_at) FILTER (WHERE failed_at IS NULL AND locked_at >= n - lease)), 0)::float8 AS oldest_lock_seconds,
      count(*) FILTER (WHERE locked_at > n OR failed_at > n OR created_at > n)::float8 AS stamped_ahead
    FROM delayed_jobs, (SELECT now() AT TIME ZONE 'UTC' AS n, interval '$MAX_RUN_TIME' AS lease) AS t
    GROUP BY 1, n
  metrics:
    - queue: {usage: LABEL, description: "the job's queue"}
    - ready: {usage: GAUGE, description: "jobs delayed_job would reserve now"}
    - in_flight: {usage: GAUGE, description: "jobs locked within max_run_time"}
    - delayed: {usage: GAUGE, description: "jobs scheduled ahead"}
    - retrying: {usage: GAUGE, description: "pending jobs that failed before"}
    - last_try: {usage: GAUGE, description: "pending jobs one failure from the end"}
    - failed: {usage: GAUGE, description: "jobs failed for good"}
    - oldest_seconds: {usage: GAUGE, description: "age of the oldest ready or running job"}
    - oldest_failed_seconds: {usage: GAUGE, description: "age of the oldest failure"}
    - oldest_lock_seconds: {usage: GAUGE, description: "age of the oldest lock within max_run_time"}
    - stamped_ahead: {usage: GAUGE, description: "rows stamped after now by a host's clock"}
YML
PGEXP_ADDR=127.0.0.1:$(free_port)
pgexp_ready() { # true once it answers with the query's series, or has exited
  { curl -fs --max-time 60 -o "$T/peer.prom" "http://$PGEXP_ADDR/metrics" && grep -q '^delayed_jobs_ready{' "$T/peer.prom"; } ||
    ! kill -0 "$PGEXP_PID" 2>/dev/null
}
start_pgexp() {
  : > "$T/pgexp.log"
  DATA_SOURCE_NAME="postgresql://postgres_exporter@127.0.0.1:$PGP/bench?sslmode=disable" \
    prometheus-postgres-exporter --web.listen-address="$PGEXP_ADDR" --extend.query-path="$T/pgexp.yml" \
    --disable-default-metrics --disable-settings-metrics --no-collector.database \
    --no-collector.bgwriter >> "$T/pgexp.log" 2>&1 &
  PGEXP_PID=$!
  wait_for -i 0.2 60 "prometheus-postgres-exporter to run its query" pgexp_ready || true
  kill -0 "$PGEXP_PID" 2>/dev/null || die "prometheus-postgres-exporter did not start: $(tail -3 "$T/pgexp.log")"
}

# ---- one shape ----

measure() { # measure SHAPE SETUP_S
  local shape=$1 setup=$2 i off stmts other total want got qrel qmin db_ms calls floor floor_med
  local peer peer_med peer_db floor_db own heap x verdict k q_cpu peer_cpu
  start_qrel
  for ((i = 0; i < WARMUP; i++)); do curl -fsS -o "$T/body.prom" "http://$ADDR/metrics"; done
  grep -q '^qrel_collector_up{.*source="bench".*} 1$' "$T/body.prom" ||
    die "$shape: qrel reports the source as down: $(tail -3 "$T/exporter.log")"
  # What qrel runs: one scrape with the statement log read around it.
  off=$(log_offset)
  curl -fsS -o "$T/body.prom" "http://$ADDR/metrics"
  log_settle
  rm -rf "$T/q" && mkdir -p "$T/q"
  read -r stmts other total < <(python3 "$root/bench/pglog.py" capture "$LOG_JSON" "$off" qrel "$T/q")
  [ "$stmts" -gt 0 ] || die "$shape: no statement of qrel's in the server log during a scrape"
  want=$(sql_totals)
  got=$(qrel_totals "$T/body.prom")
  [ "$got" = "$want" ] || die "$shape: qrel counts \"$got\" (ready in_flight delayed failed), SQL over the table \"$want\""
  progress "$shape: qrel runs $stmts statements a scrape (+$other SET and such, of $total); its counts equal SQL's: $want"

  # The rounds, in one psql session as bench_raw: each runs the statements (the floor, \timing)
  # and then, through \!, one scrape of qrel and one of the peer (qrel first in odd rounds), so
  # that all three meet the table and the machine alike. The database time of each role is taken
  # over the measured rounds (pg_stat_statements, reset as they start).
  start_pgexp
  cat > "$T/turn.sh" <<'SH'
#!/usr/bin/env bash
# turn.sh PHASE I: one scrape of qrel and one of the peer (ADDR, EXP_PID, PGEXP_ADDR, PG_PM, T
# and BENCH_LIB from the environment); measured (PHASE m): their times, PostgreSQL's CPU during
# each, and qrel's memory after it
export LC_ALL=C
# shellcheck source=lib.sh
. "$BENCH_LIB" # mem_settled_kib
# pg_cpu: the CPU ticks the cluster has used: the postmaster's own and those of the children it
# reaped (a parallel query's workers exit after it), and those of its live children (the
# backends, qrel's and the peer's connections among them, kept between scrapes)
pg_cpu() {
  cat /proc/[0-9]*/stat 2>/dev/null |
    awk -v pm="$PG_PM" '{ pid = $1; sub(/^.*\) /, "")
      if (pid == pm) n += $12 + $13 + $14 + $15; else if ($2 == pm) n += $12 + $13 }
      END { print n + 0 }'
}
# cpu_ms BEFORE AFTER: the ticks between as ms
cpu_ms() { awk -v a="$1" -v b="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN { print (b - a) * 1000 / hz }'; }
q() {
  local c0
  c0=$(pg_cpu)
  curl -fsS -o "$T/body.prom" "http://$ADDR/metrics" || echo "qrel's scrape failed" >&2
  [ "$1" = m ] || return 0
  cpu_ms "$c0" "$(pg_cpu)" >> "$T/q_cpu.txt"
  awk '/^qrel_collector_duration_seconds\{/ && /source="bench"/ { print $NF }' "$T/body.prom" >> "$T/q.txt"
  mem_settled_kib "$EXP_PID" >> "$T/mem.txt"
}
p() {
  local c0
  c0=$(pg_cpu)
  t=$(curl -fsS -o "$T/peer.prom" -w '%{time_total}' "http://$PGEXP_ADDR/metrics") || echo "the peer's scrape failed" >&2
  [ "$1" = m ] || return 0
  cpu_ms "$c0" "$(pg_cpu)" >> "$T/peer_cpu.txt"
  echo "$t" >> "$T/peer.txt"
}
if [ $(($2 % 2)) = 1 ]; then q "$1"; p "$1"; else p "$1"; q "$1"; fi
SH
  : > "$T/q.txt"
  : > "$T/mem.txt"
  : > "$T/peer.txt"
  : > "$T/q_cpu.txt"
  : > "$T/peer_cpu.txt"
  {
    printf '%s\n' '\timing on' '\o /dev/null'
    for ((i = 1; i <= WARMUP + SCRAPES; i++)); do
      k=$([ "$i" -le "$WARMUP" ] && echo w || echo m)
      [ "$i" -ne $((WARMUP + 1)) ] || printf '\\! psql -X -q -h 127.0.0.1 -p %s -U postgres -d bench -c "SELECT pg_stat_statements_reset()" > /dev/null\n' "$PGP"
      printf '\\echo ROUND %s\n' "$k"
      cat "$T"/q/q*.sql
      printf '%s\n' '\echo END' "\\! bash '$T/turn.sh' $k $i"
    done
  } > "$T/rounds.psql"
  BENCH_LIB=$root/bench/lib.sh
  PG_PM=$(head -1 "$PG_DIR/data/postmaster.pid")
  export ADDR EXP_PID PGEXP_ADDR PG_PM T BENCH_LIB # for turn.sh (psql's \!)
  progress "$shape: $WARMUP + $SCRAPES rounds: the statements in one psql session, then a scrape of qrel and of the peer"
  psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PGP" -U bench_raw -d bench -f "$T/rounds.psql" > "$T/rounds.out"
  read -r calls db_ms < <(pgss qrel)
  read -r _ peer_db < <(pgss postgres_exporter)
  read -r _ floor_db < <(pgss bench_raw)
  stop_pid "$EXP_PID"
  stop_pid "$PGEXP_PID"
  EXP_PID='' PGEXP_PID=''
  awk -v want="$stmts" '/^ROUND / { ph = $2; s = 0; k = 0; next } /^Time: / { s += $2; k++; next }
    /^END$/ { if (k != want) exit 1; if (ph == "m") printf "%.6f\n", s / 1000 }' "$T/rounds.out" > "$T/floor.txt" ||
    die "$shape: a psql round did not time all $stmts statements"
  [ "$(wc -l < "$T/floor.txt")" = "$SCRAPES" ] || die "$shape: want $SCRAPES measured psql rounds"
  [ "$(wc -l < "$T/q.txt")" = "$SCRAPES" ] || die "$shape: a qrel scrape reported no collection time"
  [ "$(wc -l < "$T/peer.txt")" = "$SCRAPES" ] || die "$shape: a scrape of the peer failed"
  [ "$(wc -l < "$T/q_cpu.txt")" = "$SCRAPES" ] && [ "$(wc -l < "$T/peer_cpu.txt")" = "$SCRAPES" ] ||
    die "$shape: PostgreSQL's CPU was not read around every measured scrape"
  # the mean, not the median: each reading is whole ticks
  q_cpu=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$T/q_cpu.txt")
  peer_cpu=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$T/peer_cpu.txt")
  grep -q '^delayed_jobs_ready{' "$T/peer.prom" || die "$shape: prometheus-postgres-exporter gave no delayed_jobs series: $(tail -3 "$T/pgexp.log")"
  qrel=$(median < "$T/q.txt")
  qmin=$(sort -g "$T/q.txt" | head -1)
  own=$(col_max 1 "$T/mem.txt")
  heap=$(col_max 2 "$T/mem.txt")
  floor=$(sort -g "$T/floor.txt" | head -1)
  floor_med=$(median < "$T/floor.txt")
  peer=$(sort -g "$T/peer.txt" | head -1)
  peer_med=$(median < "$T/peer.txt")

  x=$(ratio "$qmin" "$floor")
  printf '| %-6s | %6s | %9s | %9s | %17s | %5s | %10s | %8s | %7s | %17s | %10s | %9s | %7s | %8s |\n' \
    "$shape" "$setup s" "$(ms "$qrel")" "$(ms "$qmin")" \
    "$(awk -v f="$floor" -v m="$floor_med" 'BEGIN { printf "%.1f (%.1f) ms", f * 1000, m * 1000 }')" "$x" \
    "$(per "$calls" "$SCRAPES")" "$(per "$db_ms" "$SCRAPES") ms" "$q_cpu ms" \
    "$(awk -v f="$peer" -v m="$peer_med" 'BEGIN { printf "%.1f (%.1f) ms", f * 1000, m * 1000 }')" \
    "$(per "$peer_db" "$SCRAPES") ms" "$peer_cpu ms" "$own" "$heap $([ "$heap" -le 2048 ] && echo met || echo missed)"
  verdict=$(awk -v x="$x" -v q="$qmin" -v h="$heap" 'BEGIN { m = ""
    if (q < 0.05) m = m "; scrape " sprintf("%.1f", q * 1000) " ms, below the 50 ms the goal is read at (raise --rows)"
    if (x == "-" || x > 1.5) m = m "; " x "x the floor (goal <= 1.5)"
    if (h > 2048) m = m "; heap + stacks " h " KiB (goal <= 2048)"
    print (m == "" ? "met" : "missed: " substr(m, 3)) }')
  bench_result shape="$shape" size="$ROWS rows" stat=fastest qrel_s="$(fmt "$qmin" %.4f)" \
    floor_s="$(fmt "$floor" %.4f)" x_floor="$x" peer=postgres_exporter peer_s="$(fmt "$peer" %.4f)" \
    heap="$heap KiB" broker_ms="$(per "$db_ms" "$SCRAPES")" \
    goal="<= 1.5x the floor (fastest runs) at >= 50 ms, heap + stacks <= 2048 KiB" verdict="$verdict" \
    note="$(per "$calls" "$SCRAPES") statements a scrape; the floor's database time $(per "$floor_db" "$SCRAPES") ms a round; peer median $(ms "$peer_med"), its database time $(per "$peer_db" "$SCRAPES") ms a scrape (its leader's wall time; qrel's statement is serial); PostgreSQL's CPU a scrape (every process of the cluster, workers included): qrel $q_cpu ms, peer $peer_cpu ms; setup $setup s"
}

echo "# qrel delayed_job benchmark, $BENCH_DATE, $(nproc) cores, load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(qrel_version "$QREL_BIN")"
echo "# $ROWS jobs a shape, $WARMUP + $SCRAPES scrapes and rounds; PostgreSQL $(pq -At -c 'SHOW server_version'), delayed_job_active_record $(ruby -e 'print Gem::Specification.find_by_name("delayed_job_active_record").version'), prometheus-postgres-exporter $(dpkg-query -W -f '${Version}' prometheus-postgres-exporter 2>/dev/null || echo '?')"
echo "| shape  | setup  | qrel med  | qrel min  | floor min (med)   | ratio | statements | DB time  | DB CPU  | peer min (med)    | peer: DB   | peer: CPU | own_kib | heap_kib |"
echo "|--------|--------|-----------|-----------|-------------------|-------|------------|----------|---------|-------------------|------------|-----------|---------|----------|"
t_all=$SECONDS
for shape in failed busy; do
  progress "$shape: delayed_jobs by delayed_job's migration, $ROWS rows inserted in bulk"
  t0=$SECONDS
  make_table
  fill "$shape"
  measure "$shape" "$((SECONDS - t0))"
done
echo "# both shapes in $((SECONDS - t_all)) s (setup included)"
