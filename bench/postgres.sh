#!/usr/bin/env bash
# postgres.sh: qrel_exporter on dedup, claim and outbox tables of 100k, 1M and 10M rows, in two
# workload shapes, against prometheus-postgres-exporter running the reference queries, the same
# queries as qrel's in an open psql session (the floor) and in prometheus-sql-exporter.
#
# Starts its own PostgreSQL cluster (trust auth, loopback, socket in a temp dir), fills the three
# tables for each size and shape with one generate_series INSERT each, and measures side by side:
#   - the queries qrel sends (read from the server's statement log while qrel scrapes), timed
#     with \timing in one open psql session, interleaved with qrel's scrapes;
#   - qrel_exporter's scrape time, its CPU, peak RSS, own memory (own_kib) and heap + stacks
#     (heap_kib), the database time per scrape (pg_stat_statements) and whether every value was
#     computed during the scrape;
#   - prometheus-postgres-exporter running the reference queries (the same figures, each window
#     bounded by now(), written plainly) on every scrape: scrape time, CPU, RSS, database time;
#   - prometheus-sql-exporter running qrel's queries on its interval: scrape time, RSS and how
#     old its values are when they are served;
#   - a fresh connection + the same queries (reconnect cost, with pgbench -C), for reference.
# Shapes: "past", rows spread over the last day up to now(); "future", the same rows shifted so
# that the newest 15 minutes lie ahead of now() (writers with fast clocks, issue 14).
# Prints a table and a verdict per shape on the 10M-row goals; a missed goal is reported, not an
# error. See bench/README.md for the method.
#
# Needs: bash, PostgreSQL 15 server binaries (initdb, pg_ctl, pgbench; from pg_config --bindir),
# psql, the pg_stat_statements module (postgresql-contrib; optional), curl, awk, python3,
# prometheus-sql-exporter, prometheus-postgres-exporter, runuser when run as root, and a built
# qrel_exporter.
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/postgres.sh [--sizes "100000 1000000 10000000"] [--shapes "past future"]
                         [--scrapes N] [--warmup N]
                         [--reconnects N] [--sql-exporter-interval SECONDS]
                         [--qrel PATH] [--sql-exporter PATH] [--pg-bin DIR]

  --sizes "LIST"        rows per table, ascending (default "100000 1000000 10000000")
  --shapes "LIST"       workload shapes (default "past future"): past, the newest row stamped
                        now; future, the newest 15 minutes of rows stamped ahead of now()
  --scrapes N           measured scrapes per exporter per size, and measured psql rounds
                        (default 15)
  --warmup N            unmeasured rounds and scrapes first (default 5)
  --reconnects N        fresh-connection runs per size (default 5)
  --sql-exporter-interval S
                        prometheus-sql-exporter's job interval in seconds (default 15); its
                        measured scrapes are spread over one interval
  --qrel PATH           qrel_exporter binary (default: $QREL_BUILD_DIR/qrel_exporter, else
                        build/qrel_exporter in this checkout)
  --sql-exporter PATH   prometheus-sql-exporter binary (default: from PATH)
  --pg-bin DIR          PostgreSQL server binaries (default: pg_config --bindir)
  -h, --help            this text
EOF
  usage_end
}

SIZES="100000 1000000 10000000"
SCRAPES=15
WARMUP=5
RECONNECTS=5
SQLE_INTERVAL=15
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
SQLE_BIN=prometheus-sql-exporter
PGEXP_BIN=prometheus-postgres-exporter
PG_BIN=
GOAL_N=10000000
SPAN_S=86400          # the rows' timestamps are spread evenly over the last day
AHEAD_S=900           # shape "future": how far ahead of now() the newest row lies
SHAPES="past future"


parse_options "--sizes:SIZES --shapes:SHAPES --scrapes:SCRAPES --warmup:WARMUP --reconnects:RECONNECTS \
  --sql-exporter-interval:SQLE_INTERVAL --qrel:QREL_BIN --sql-exporter:SQLE_BIN --pg-bin:PG_BIN" "$@"
need_num --scrapes "$SCRAPES"
need_num --warmup "$WARMUP"
need_num --reconnects "$RECONNECTS"
need_num --sql-exporter-interval "$SQLE_INTERVAL"
ascending_sizes --sizes "$SIZES"
read -ra SHAPE_LIST <<<"$SHAPES"
[ ${#SHAPE_LIST[@]} -gt 0 ] || die "--shapes: want past, future or both"
for sh in "${SHAPE_LIST[@]}"; do
  case $sh in past|future) ;; *) die "--shapes: want past and/or future, got \"$sh\"" ;; esac
done
need_tools psql curl awk python3
if [ -z "$PG_BIN" ]; then
  PG_BIN=$(pg_config --bindir 2>/dev/null || true)
fi
if [ ! -x "$PG_BIN/initdb" ] || [ ! -x "$PG_BIN/pg_ctl" ]; then
  die "initdb/pg_ctl/pgbench not found in \"$PG_BIN\" (apt-get install postgresql-15, or pass --pg-bin)"
fi
command -v "$SQLE_BIN" >/dev/null || die "$SQLE_BIN not found (apt-get install prometheus-sql-exporter)"
command -v "$PGEXP_BIN" >/dev/null || die "$PGEXP_BIN not found (apt-get install prometheus-postgres-exporter)"
[ -x "$QREL_BIN" ] || die "$QREL_BIN not found or not executable: build first (cmake -S . -B build && cmake --build build) or pass --qrel"
# psql from the server's directory when it is there: Debian's psql in PATH is a Perl wrapper that
# takes tens of milliseconds to start
PSQL=psql
[ ! -x "$PG_BIN/psql" ] || PSQL=$PG_BIN/psql
# shellcheck disable=SC2034 # the server programs tests/lib/servers.sh runs
PGBIN=$PG_BIN
if [ "$(id -u)" -eq 0 ]; then
  command -v runuser >/dev/null || die "runuser not found (initdb refuses to run as root)"
  id postgres >/dev/null 2>&1 || die "no postgres user to run the server as (initdb refuses root)"
fi

# ---- temp dir, processes, cleanup ----

T=$(mktemp -d "${TMPDIR:-/tmp}/qrel-pgbench.XXXXXX")
chmod 755 "$T"          # the server runs as postgres and must reach its directory and socket
PGD=$T/pg
PG_PORT=
EXP_PID=
PGEXP_PID=
PGEXP_ADDR=
export PGSSLMODE=disable PGCONNECT_TIMEOUT=10

cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then
    [ -s "$T/exporter.log" ] && { echo "--- last lines of the exporter's log:" >&2; tail -15 "$T/exporter.log" >&2; }
    [ -s "$PGD/server.log" ] && { echo "--- last lines of server.log:" >&2; tail -15 "$PGD/server.log" >&2; }
  fi
  local pid
  for pid in "$EXP_PID" "$PGEXP_PID"; do
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PG_STOP_MODE=immediate servers_stop
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'echo "postgres.sh: line $LINENO failed: $BASH_COMMAND" >&2' ERR

progress() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }


# psql as the superuser / as ROLE, over TCP like the exporters
pq() { "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d bench "$@"; }
pq_as() { local role=$1; shift; "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U "$role" -d bench "$@"; }

# ---- numbers ----

minimum() { sort -g | head -1; }

# rss_split PID: "anon A MiB, file F MiB" now (file: mapped libraries and the binary)
rss_split() {
  awk '$1 == "RssAnon:" { a = $2 } $1 == "RssFile:" { f = $2 } $1 == "RssShmem:" { s = $2 }
       END { printf "anonymous %.1f MiB, files (libraries, binary) %.1f MiB, shmem %.1f MiB", a / 1024, f / 1024, s / 1024 }' "/proc/$1/status"
}

TCK=$(getconf CLK_TCK)
declare -A RES   # RES[N,row,metric]

# ---- the statement log reader: bench/pglog.py ----

logtool() { python3 "$SRC_DIR/bench/pglog.py" "$@"; }
LOG_JSON= # set by start_pg
log_offset() { if [ -f "$LOG_JSON" ]; then stat -c %s "$LOG_JSON"; else echo 0; fi; }
# the logging collector writes through a pipe: give it a moment before reading the file
log_settle() { sleep 0.3; }

# ---- the cluster ----

PGSS=1
start_pg() {
  # Loading speed (the data is thrown away), the statement log, and no autovacuum (the script
  # vacuums and analyzes each load itself, and nothing writes while it measures, so autovacuum
  # could only disturb the timings); the rest is PostgreSQL's defaults (tests/lib/servers.sh sets
  # the address, port, socket directory and fsync = off). pg_stat_statements is tried first;
  # without it the log gives the database time.
  cat > "$T/postgresql.conf" <<CONF
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 8GB
shared_buffers = 512MB
maintenance_work_mem = 512MB
logging_collector = on
log_destination = 'stderr,jsonlog'
log_directory = 'log'
log_filename = 'server.log'
log_rotation_size = 0
log_timezone = 'UTC'
log_min_duration_statement = 0
log_checkpoints = off
autovacuum = off
CONF
  if [ "$PGSS" = 1 ]; then
    printf '%s\n' "shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.track_planning = on" \
      >> "$T/postgresql.conf"
  fi
  if ! PG_CONF=$T/postgresql.conf start_postgres PG_PORT; then
    if [ "$PGSS" = 1 ]; then
      progress "the server did not start with pg_stat_statements: trying without it (database time from the log)"
      PGSS=0
      start_pg
      return
    fi
    die "the PostgreSQL server did not start"
  fi
  PGD=$PG_DIR
  LOG_JSON=$PGD/data/log/server.json
}

setup_db() {
  # The `C` collation, not the cluster's C.UTF-8: PostgreSQL compares text in a libc collation
  # other than C through strcoll and without abbreviated keys, and handled_messages' primary key
  # sorts 10M text ids (2M rows, loaded machine: its build 4.0 -> 2.7 s). The ids are ASCII, which
  # both collations order byte by byte: the same index, the same data; nothing measured sorts text.
  "$PSQL" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
    -c "CREATE DATABASE bench TEMPLATE template0 LC_COLLATE 'C'"
  # one role per reader, so the server's statistics and log tell them apart
  pq <<'SQL'
CREATE ROLE qrel LOGIN;
CREATE ROLE sql_exporter LOGIN;
CREATE ROLE postgres_exporter LOGIN;
CREATE ROLE bench_raw LOGIN;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO qrel, sql_exporter, postgres_exporter, bench_raw;
SQL
  if [ "$PGSS" = 1 ]; then
    pq -c 'CREATE EXTENSION pg_stat_statements'
  fi
}

# ---- the tables ----

# load SHAPE:N: the three tables with N rows each, loaded in parallel (one transaction per table:
# with wal_level = minimal the rows of a table created in the same transaction skip the WAL).
# Row i (1 = newest) is at T0 - (i-1) * SPAN/N seconds; T0 is now in the shape "past", and
# 15 minutes ahead of now in the shape "future" (writers whose clocks run 15 minutes fast, issue
# 14: the newest 15/1440 of the rows lie ahead, 3x the rows of a 5-minute window).
load_tables() {
  local key=$1 n=${1#*:} shape=${1%%:*} t0 pids=() tbl start
  case $shape in
    past) t0=$(date -u '+%Y-%m-%d %H:%M:%S.%6N+00') ;;
    future) t0=$(date -u -d "+$AHEAD_S seconds" '+%Y-%m-%d %H:%M:%S.%6N+00') ;;
  esac
  cat > "$T/load_dedup.sql" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS handled_messages;
CREATE TABLE handled_messages (
  message_id text NOT NULL,
  handled_at timestamptz NOT NULL,
  duplicate_count integer NOT NULL DEFAULT 0);
INSERT INTO handled_messages (message_id, handled_at, duplicate_count)
  SELECT 'm-' || i, :'t0'::timestamptz - (i - 1) * (:span::float8 / :n) * interval '1 second',
         (i % 100 = 0)::int
  FROM generate_series(1, :n) AS i;
ALTER TABLE handled_messages ADD PRIMARY KEY (message_id);
CREATE INDEX handled_messages_handled_at ON handled_messages (handled_at);
CREATE INDEX handled_messages_duplicates ON handled_messages (duplicate_count) WHERE duplicate_count > 0;
SQL
  cat > "$T/load_claims.sql" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS claims;
CREATE TABLE claims (
  order_id bigint NOT NULL,
  claimed_at timestamptz NOT NULL,
  done_at timestamptz);
INSERT INTO claims (order_id, claimed_at, done_at)
  SELECT i, t,
         CASE WHEN i % 10000 = 0 OR (i % 10 = 0 AND t > :'t0'::timestamptz - interval '60 seconds')
              THEN NULL ELSE t + (i % 1000) * interval '1 millisecond' END
  FROM (SELECT i, :'t0'::timestamptz - (i - 1) * (:span::float8 / :n) * interval '1 second' AS t
        FROM generate_series(1, :n) AS i) AS s;
ALTER TABLE claims ADD PRIMARY KEY (order_id);
CREATE INDEX claims_claimed_at ON claims (claimed_at);
CREATE INDEX claims_open ON claims (claimed_at) WHERE done_at IS NULL;
CREATE INDEX claims_done_at ON claims (done_at);
SQL
  cat > "$T/load_outbox.sql" <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS outbox;
CREATE TABLE outbox (
  id bigint NOT NULL,
  created_at timestamptz NOT NULL,
  published_at timestamptz,
  payload jsonb NOT NULL);
INSERT INTO outbox (id, created_at, published_at, payload)
  SELECT i, t, CASE WHEN i % 10000 = 0 THEN NULL ELSE t + interval '50 milliseconds' END,
         jsonb_build_object('order_id', i, 'event', 'confirmed')
  FROM (SELECT i, :'t0'::timestamptz - (i - 1) * (:span::float8 / :n) * interval '1 second' AS t
        FROM generate_series(1, :n) AS i) AS s;
ALTER TABLE outbox ADD PRIMARY KEY (id);
CREATE INDEX outbox_unpublished ON outbox (created_at) WHERE published_at IS NULL;
SQL
  start=$SECONDS
  for tbl in dedup claims outbox; do
    ( pq -1 -v n="$n" -v span="$SPAN_S" -v t0="$t0" -f "$T/load_$tbl.sql" &&
      progress "  $tbl: $n rows loaded and indexed after $((SECONDS - start)) s" ) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "loading $n rows failed"; done
  # VACUUM only once every load has committed, and ANALYZE after all of them: while another
  # transaction is open (a load, or the ANALYZE half of a VACUUM ANALYZE next door) vacuum cannot
  # mark the pages all-visible, and the index-only scans would visit the heap after all. Plain
  # VACUUMs do not hold each other back.
  pids=()
  for tbl in handled_messages claims outbox; do
    pq -c "VACUUM $tbl" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || die "VACUUM after loading $n rows failed"; done
  pq -c 'ANALYZE handled_messages, claims, outbox'
  # any other transaction that was open meanwhile (another session's) has the same effect: vacuum
  # again, one table after the other, until the pages are all-visible
  for _ in 1 2 3; do
    RES[$key,allvis]=$(pq -At -c "SELECT round(100.0 * sum(relallvisible) / greatest(sum(relpages), 1), 1) FROM pg_class WHERE oid IN ('handled_messages'::regclass, 'claims'::regclass, 'outbox'::regclass)")
    awk -v a="${RES[$key,allvis]}" 'BEGIN { exit !(a < 99) }' || break
    progress "  only ${RES[$key,allvis]} % of the pages are all-visible: VACUUM again"
    sleep 1
    pq -c 'VACUUM handled_messages' -c 'VACUUM claims' -c 'VACUUM outbox'
  done
  progress "  vacuumed and analyzed after $((SECONDS - start)) s"
  RES[$key,load_s]=$((SECONDS - start))
  RES[$key,mib]=$(pq -At -c "SELECT round(sum(pg_total_relation_size(c))/1048576.0) FROM unnest(ARRAY['handled_messages','claims','outbox']::regclass[]) c")

}

# ---- qrel ----

start_qrel() {
  cat > "$T/qrel.yml" <<YML
global:
  timeout: 30s
sources:
  - name: bench
    kind: postgres
    host: 127.0.0.1
    port: $PG_PORT
    user: qrel
    dbname: bench
    sslmode: disable
    dedup_tables:
      - table: handled_messages
        id_column: message_id
        handled_at_column: handled_at
        duplicates_column: duplicate_count
        window: 5m
    claim_tables:
      - table: claims
        id_column: order_id
        claimed_at_column: claimed_at
        done_at_column: done_at
        in_flight_window: 2m
        lease_timeout: 30s
        max_deliveries: 3
        window: 5m
    outboxes:
      - table: outbox
        created_at_column: created_at
        published_at_column: published_at
YML
  : > "$T/exporter.log"
  "$QREL_BIN" --config.file="$T/qrel.yml" --web.listen-address=127.0.0.1:0 2>>"$T/exporter.log" &
  EXP_PID=$!
  ADDR=
  wait_for 5 "qrel_exporter to log its listening address" listening_or_gone || true
  [ -n "$ADDR" ] || die "qrel_exporter did not start"
}

stop_exporter() {
  if [ -n "$EXP_PID" ]; then
    kill "$EXP_PID" 2>/dev/null || true
    wait "$EXP_PID" 2>/dev/null || true
  fi
  EXP_PID=
}

# scrape once into FILE; prints curl's time_total
scrape_to() {
  local out=$1
  curl -s --max-time 120 -o "$out" -w '%{time_total}' -H 'X-Prometheus-Scrape-Timeout-Seconds: 30' \
    "http://$ADDR/metrics" || { echo "scrape of $ADDR failed" >&2; return 1; }
}

listening_or_gone() { listening || ! kill -0 "$EXP_PID" 2>/dev/null; }

qrel_up() { grep -Eq '^qrel_collector_up\{[^}]*source="bench"[^}]*\} 1$' "$1"; }

# qrel_value FILE FAMILY LABEL-MATCH...: the first sample of FAMILY whose labels contain all
# the given key="value" strings
qrel_value() {
  local file=$1 fam=$2; shift 2
  awk -v fam="$fam" -v want="$*" '
    index($0, fam "{") == 1 {
      n = split(want, w, " "); ok = 1
      for (i = 1; i <= n; i++) if (index($0, w[i]) == 0) ok = 0
      if (ok) { print $NF; exit }
    }' "$file"
}

# pgss_snapshot ROLE...: "ROLE calls ms" per role (plan + execution time)
pgss_snapshot() {
  local roles
  roles=$(printf "'%s'," "$@"); roles=${roles%,}
  pq -At -F' ' -c "SELECT r.rolname, coalesce(sum(s.calls), 0), round(coalesce(sum(s.total_exec_time + s.total_plan_time), 0)::numeric, 3)
                   FROM pg_roles r LEFT JOIN pg_stat_statements s ON s.userid = r.oid AND s.dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
                   WHERE r.rolname IN ($roles) GROUP BY 1"
}

# exporter_figures KEY WHO PID TIMES OWN CPU0 CPU1: an exporter's row from its measured scrapes:
# the scrape times (a file, one a line), the RssAnon read after each (a file), its CPU ticks
# before and after (files), and its peak and current memory now
exporter_figures() {
  local key=$1 who=$2 pid=$3 c0 c1
  c0=$(<"$6"); c1=$(<"$7")
  RES[$key,$who,scrapes]=$SCRAPES
  RES[$key,$who,median]=$(median < "$4")
  RES[$key,$who,min]=$(minimum < "$4")
  RES[$key,$who,cpu_ms]=$(awk -v d=$((c1 - c0)) -v k="$SCRAPES" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$key,$who,rss_mib]=$(awk -v k="$(hwm_kib "$pid")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$key,$who,rss_split]=$(rss_split "$pid")
  RES[$key,$who,own_kib]=$(col_max 1 "$5")
  RES[$key,$who,heap_kib]=$(col_max 2 "$5")
}

# The measurement of the psql session and qrel, interleaved in one psql session: each round runs
# the queries (\timing) and then, through \!, one qrel scrape. Both see the table at the same
# moment (the windows move with the clock) and never run at the same time.
write_helpers() {
  cat > "$T/scrape.sh" <<'SH'
#!/usr/bin/env bash
# scrape.sh PHASE I: one scrape of qrel and one of postgres_exporter, qrel first in odd rounds
# (ADDR, EXP_PID, PGEXP_ADDR, PGEXP_PID, T and BENCH_LIB from the environment)
export LC_ALL=C
# shellcheck source=lib.sh
. "$BENCH_LIB" # mem_kib
qrel() {
  s=$EPOCHREALTIME
  t=$(curl -s --max-time 120 -o "$T/body.$1.$2" -w '%{time_total} %{time_starttransfer}' \
    -H 'X-Prometheus-Scrape-Timeout-Seconds: 30' "http://$ADDR/metrics") || t=nan
  e=$EPOCHREALTIME
  echo "$s $e $t" >> "$T/scrapes.$1"
  mem_kib "$EXP_PID" >> "$T/own.$1"
}
pgexp() {
  t=$(curl -s --max-time 120 -o "$T/pgexp_body.$1.$2" -w '%{time_total}' "http://$PGEXP_ADDR/metrics") || t=nan
  echo "$t" >> "$T/pgexp_times.$1"
  mem_kib "$PGEXP_PID" >> "$T/pgexp_own.$1"
}
if [ $(($2 % 2)) = 1 ]; then qrel "$@"; pgexp "$@"; else pgexp "$@"; qrel "$@"; fi
SH
  cat > "$T/mark.sh" <<'SH'
#!/usr/bin/env bash
# mark.sh start|end: around the measured rounds (PSQL, PG_PORT, EXP_PID, PGEXP_PID, PGSS, T from
# the environment)
export LC_ALL=C
psql_su() { "$PSQL" -X -q -At -F' ' -h 127.0.0.1 -p "$PG_PORT" -U postgres -d bench "$@"; }
ticks() { local stat rest f; stat=$(<"/proc/$1/stat"); rest=${stat##*) }; read -ra f <<<"$rest"; echo $((f[11] + f[12])); }
ticks "$EXP_PID" > "$T/cpu.$1"
ticks "$PGEXP_PID" > "$T/pgexp_cpu.$1"
if [ -f "$T/pg/log/server.json" ]; then stat -c %s "$T/pg/log/server.json"; else echo 0; fi > "$T/logoff.$1"
if [ "$1" = start ] && [ "$PGSS" = 1 ]; then psql_su -c 'SELECT pg_stat_statements_reset()' >/dev/null; fi
SH
}

run_session_and_qrel() {
  local key=$1 n=${1#*:} i q k stmts other total up=0 vals
  start_qrel
  progress "  qrel listening on $ADDR; warming up"
  : > "$T/warm.txt"
  for ((i = 0; i < WARMUP; i++)); do scrape_to "$T/body.txt" >> "$T/warm.txt"; echo >> "$T/warm.txt"; done
  qrel_up "$T/body.txt" || { grep -E '^qrel_collector_(up|errors)' "$T/body.txt" >&2 || true; tail -5 "$T/exporter.log" >&2;
    die "qrel reports the postgres source as down"; }

  # What qrel sends: one scrape with the statement log read around it.
  local off
  off=$(log_offset)
  scrape_to "$T/body.txt" >/dev/null
  log_settle
  rm -rf "$T/q"; mkdir -p "$T/q"
  read -r stmts other total < <(logtool capture "$LOG_JSON" "$off" qrel "$T/q")
  [ "$stmts" -gt 0 ] || die "no statement of qrel's in the server log during a scrape"
  RES[$key,stmts]=$stmts
  RES[$key,other]=$other
  cat "$T"/q/q*.sql > "$T/queries.sql"
  if [ "$n" = "${SIZE_LIST[0]}" ] || [ ! -f "$T/queries.first" ]; then cp "$T/queries.sql" "$T/queries.first"; fi
  progress "  qrel sends $stmts queries per scrape (+$other SET/other statements of $total)"

  # the interleaved rounds
  rm -f "$T"/scrapes.* "$T"/own.* "$T"/body.w.* "$T"/body.m.* "$T"/pgexp_*
  {
    printf '%s\n' '\timing on' '\o /dev/null'
    for ((i = 1; i <= WARMUP + SCRAPES; i++)); do
      if [ "$i" -le "$WARMUP" ]; then k=w; else k=m; fi
      if [ "$i" -eq $((WARMUP + 1)) ]; then printf '%s\n' "\\! bash '$T/mark.sh' start"; fi
      printf '%s\n' "\\echo ROUND $k $i"
      for q in "$T"/q/q*.sql; do cat "$q"; done
      printf '%s\n' '\echo END' "\\! bash '$T/scrape.sh' $k $i"
    done
    printf '%s\n' "\\! bash '$T/mark.sh' end"
  } > "$T/rounds.psql"
  progress "  $WARMUP + $SCRAPES rounds: the queries in one psql session, then a qrel scrape"
  BENCH_LIB=$SRC_DIR/bench/lib.sh
  export ADDR T PG_PORT EXP_PID PGSS PSQL PGEXP_ADDR PGEXP_PID BENCH_LIB # for scrape.sh and mark.sh (psql's \!)
  pq_as bench_raw -f "$T/rounds.psql" > "$T/rounds.out"
  log_settle

  # psql: per round, the sum of the \timing lines
  awk '
    /^ROUND / { ph = $2; r = $3; s = 0; cnt = 0; next }
    /^Time: / { s += $2; cnt++; next }
    /^END$/ { if (ph == "m") printf "%.6f %d\n", s / 1000, cnt }' "$T/rounds.out" > "$T/raw.txt"
  [ "$(wc -l < "$T/raw.txt")" -eq "$SCRAPES" ] || die "psql rounds: want $SCRAPES measured rounds in its output, see $T/rounds.out"
  awk -v want="$stmts" '$2 != want { bad = 1 } END { exit bad }' "$T/raw.txt" ||
    die "psql rounds: a round did not time all $stmts queries"
  # and per statement: where the time goes
  awk '
    /^ROUND / { ph = $2; j = 0; next }
    /^Time: / { j++; if (ph == "m") print j, $2 / 1000 }' "$T/rounds.out" > "$T/perq.txt"
  RES[$key,perq]=$(for ((i = 1; i <= stmts; i++)); do
      printf '%sq%d %s' "$([ "$i" -gt 1 ] && echo ', ')" "$i" "$(awk -v j="$i" '$1 == j { print $2 }' "$T/perq.txt" | median | awk '{ printf "%.4f", $1 }')"
    done)
  RES[$key,psql,scrapes]=$SCRAPES
  RES[$key,psql,median]=$(awk '{ print $1 }' "$T/raw.txt" | median)
  RES[$key,psql,min]=$(awk '{ print $1 }' "$T/raw.txt" | minimum)

  # qrel
  awk '{ print $3 }' "$T/scrapes.m" > "$T/times.txt"
  exporter_figures "$key" qrel "$EXP_PID" "$T/times.txt" "$T/own.m" "$T/cpu.start" "$T/cpu.end"
  : > "$T/collect.txt"
  for ((i = WARMUP + 1; i <= WARMUP + SCRAPES; i++)); do
    if qrel_up "$T/body.m.$i"; then up=$((up + 1)); fi
    awk '/^qrel_collector_duration_seconds\{/ && /source="bench"/ { print $NF; exit }' "$T/body.m.$i" >> "$T/collect.txt"
  done
  RES[$key,qrel,up]="$up/$SCRAPES"
  RES[$key,qrel,collect]=$(median < "$T/collect.txt")
  RES[$key,qrel,ttfb]=$(awk '{ print $4 }' "$T/scrapes.m" | median)
  RES[$key,qrel,bytes]=$(wc -c < "$T/body.m.$((WARMUP + SCRAPES))")
  # what qrel saw in the last scrape
  local last=$T/body.m.$((WARMUP + SCRAPES))
  vals="outbox pending $(qrel_value "$last" qrel_outbox_pending_messages 'queue="outbox"')"
  vals+=" (want $((n / 10000)))"
  vals+=", claims stale $(qrel_value "$last" qrel_claims 'queue="claims"' 'state="stale"')"
  vals+=" (want $((n / 10000)) + the in-flight ones that aged past 2m since loading)"
  vals+=", in_flight $(qrel_value "$last" qrel_claims 'queue="claims"' 'state="in_flight"')"
  vals+=", dedup handled $(qrel_value "$last" qrel_dedup_handled_messages 'queue="handled_messages"')"
  vals+=", claims done $(qrel_value "$last" qrel_claims 'queue="claims"' 'state="done"')"
  vals+=", claims p99 $(qrel_value "$last" qrel_handler_duration_seconds 'queue="claims"' 'quantile="0.99"')"
  vals+=", rows ahead of now(): dedup $(qrel_value "$last" qrel_future_stamped_rows 'queue="handled_messages"')"
  vals+=" claims $(qrel_value "$last" qrel_future_stamped_rows 'queue="claims"')"
  vals+=" outbox $(qrel_value "$last" qrel_future_stamped_rows 'queue="outbox"')"
  RES[$key,qrel,seen]=$vals

  # database time and statements per scrape / round
  local off0 off1 snap calls ms
  off0=$(<"$T/logoff.start"); off1=$(<"$T/logoff.end")
  if [ "$PGSS" = 1 ]; then
    snap=$(pgss_snapshot qrel bench_raw postgres_exporter)
    read -r _ calls ms < <(grep '^qrel ' <<<"$snap")
    RES[$key,qrel,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,qrel,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    read -r _ calls ms < <(grep '^postgres_exporter ' <<<"$snap")
    RES[$key,pgexp,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,pgexp,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    read -r _ calls ms < <(grep '^bench_raw ' <<<"$snap")
    RES[$key,psql,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,psql,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
  fi
  # the same from the log (parse + bind + execute durations), always: a cross-check
  read -r calls ms < <(logtool dbtime "$LOG_JSON" "$off0" qrel)
  RES[$key,qrel,log_db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
  if [ "$PGSS" = 0 ]; then
    RES[$key,qrel,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,qrel,db_ms]=${RES[$key,qrel,log_db_ms]}
    read -r calls ms < <(logtool dbtime "$LOG_JSON" "$off0" postgres_exporter)
    RES[$key,pgexp,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,pgexp,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    read -r calls ms < <(logtool dbtime "$LOG_JSON" "$off0" bench_raw)
    RES[$key,psql,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
    RES[$key,psql,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
  fi
  : "$off1"
  # how old the values were: were all statements run inside each scrape?
  local med mx fresh
  read -r med mx fresh < <(logtool ages "$LOG_JSON" "$off0" qrel "$T/q/keys.json" "$T/scrapes.m")
  RES[$key,qrel,age_med]=$med
  RES[$key,qrel,age_max]=$mx
  RES[$key,qrel,fresh]="$fresh/$SCRAPES"
  RES[$key,psql,up]="-"; RES[$key,psql,fresh]="-"
  stop_exporter
}

# ---- prometheus-sql-exporter ----

# Its config: one job on our interval, one query per statement qrel sends. sql_exporter maps
# columns by name, and qrel's statements may repeat one (f.q[1], f.q[2]: all "q"), so each is
# wrapped as SELECT * FROM (<statement>) AS qrel(<unique names>): the same plan, columns it can
# tell apart. Text columns become labels, the others values. Names come from psql's \gdesc.
write_sqle_config() {
  local q i=0 cols names labels values
  rm -f "$T"/q/w*.sql
  for q in "$T"/q/q*.sql; do
    i=$((i + 1))
    cols=$( { sed 's/;[[:space:]]*$//' "$q"; echo '\gdesc'; } | pq_as sql_exporter -At -F'|' -f - )
    # unique names: a repeated name gets _2, _3, ...
    names=$(awk -F'|' '{ n = $1; c[n]++; if (c[n] > 1 || dup[n]) n = n "_" c[n]; print n "|" $2 }' <<<"$cols")
    {
      echo 'SELECT * FROM ('
      sed 's/;[[:space:]]*$//' "$q"
      printf ') AS qrel (%s);\n' "$(awk -F'|' '{ gsub(/"/, "\"\"", $1); printf "%s\"%s\"", (NR > 1 ? ", " : ""), $1 }' <<<"$names")"
    } > "$T/q/w$(printf %02d "$i").sql"
    printf '%s\n' "$names" > "$T/q/w$(printf %02d "$i").cols"
  done
  logtool keys "$T/q/keys_sqle.json" "$T"/q/w*.sql
  i=0
  {
    echo "jobs:"
    echo "  - name: bench"
    echo "    interval: ${SQLE_INTERVAL}s"
    echo "    connections:"
    echo "      - 'postgres://sql_exporter@127.0.0.1:$PG_PORT/bench?sslmode=disable'"
    echo "    queries:"
    for q in "$T"/q/w*.sql; do
      i=$((i + 1))
      labels=$(awk -F'|' '$2 == "text" || $2 ~ /^character/ { printf "          - \"%s\"\n", $1 }' "${q%.sql}.cols")
      values=$(awk -F'|' '!($2 == "text" || $2 ~ /^character/) { printf "          - \"%s\"\n", $1 }' "${q%.sql}.cols")
      echo "      - name: \"q$i\""
      echo "        help: \"qrel statement $i\""
      if [ -n "$labels" ]; then echo "        labels:"; echo "$labels"; fi
      echo "        values:"
      echo "$values"
      echo "        allow_zero_rows: true"
      echo "        query: |"
      sed 's/^/          /' "$q"
    done
  } > "$T/sqle.yml"
}

sqle_ran() { # true once the queries have run (ok=1), or the exporter has exited
  if curl -s --max-time 5 -o "$T/body.txt" "http://$ADDR/metrics" 2>/dev/null &&
    grep -q '^sql_exporter_last_scrape_failed' "$T/body.txt"; then ok=1; return 0; fi
  ! kill -0 "$EXP_PID" 2>/dev/null
}

run_sqle() {
  local key=$1 n=${1#*:} i s e t c0 c1 up=0 off0 snap calls ms ok
  write_sqle_config
  : > "$T/exporter.log"
  ADDR=127.0.0.1:$(free_port)
  off0=$(log_offset)
  "$SQLE_BIN" -config.file="$T/sqle.yml" -web.listen-address="$ADDR" >>"$T/exporter.log" 2>&1 &
  EXP_PID=$!
  # wait for its first run of the job (the failure gauge appears when the queries have run)
  ok=0
  wait_for -i 0.1 60 "prometheus-sql-exporter to run its queries" sqle_ran || true
  [ "$ok" = 1 ] || die "prometheus-sql-exporter did not start or never ran its queries"
  for ((i = 0; i < WARMUP; i++)); do scrape_to "$T/body.txt" >/dev/null; done
  progress "  sql_exporter: $SCRAPES scrapes spread over its ${SQLE_INTERVAL} s interval"
  c0=$(cpu_ticks "$EXP_PID")
  [ "$PGSS" = 0 ] || pq -c 'SELECT pg_stat_statements_reset()' >/dev/null
  local off1
  off1=$(log_offset)
  : > "$T/scrapes.sqle"
  : > "$T/times.txt"
  local gap
  gap=$(awk -v i="$SQLE_INTERVAL" -v k="$SCRAPES" 'BEGIN { printf "%.3f", i / k }')
  for ((i = 0; i < SCRAPES; i++)); do
    s=$EPOCHREALTIME
    t=$(scrape_to "$T/body.txt")
    e=$EPOCHREALTIME
    echo "$s $e $t" >> "$T/scrapes.sqle"
    echo "$t" >> "$T/times.txt"
    if grep -q '^sql_exporter_last_scrape_failed' "$T/body.txt" &&
       ! grep -Eq '^sql_exporter_last_scrape_failed\{.*\} 1$' "$T/body.txt"; then up=$((up + 1)); fi
    sleep "$gap"
  done
  c1=$(cpu_ticks "$EXP_PID")
  log_settle
  RES[$key,sqle,scrapes]=$SCRAPES
  RES[$key,sqle,median]=$(median < "$T/times.txt")
  RES[$key,sqle,min]=$(minimum < "$T/times.txt")
  RES[$key,sqle,cpu_ms]=$(awk -v d=$((c1 - c0)) -v k="$SCRAPES" -v t="$TCK" 'BEGIN { printf "%.1f", d * 1000 / t / k }')
  RES[$key,sqle,rss_mib]=$(awk -v k="$(hwm_kib "$EXP_PID")" 'BEGIN { printf "%.1f", k / 1024 }')
  RES[$key,sqle,rss_split]=$(rss_split "$EXP_PID")
  RES[$key,sqle,up]="$up/$SCRAPES"
  RES[$key,sqle,bytes]=$(wc -c < "$T/body.txt")
  if [ "$PGSS" = 1 ]; then
    snap=$(pgss_snapshot sql_exporter)
    read -r _ calls ms <<<"$snap"
  else
    read -r calls ms < <(logtool dbtime "$LOG_JSON" "$off1" sql_exporter)
  fi
  RES[$key,sqle,stmts]=$(awk -v c="$calls" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
  RES[$key,sqle,db_ms]=$(awk -v c="$ms" -v k="$SCRAPES" 'BEGIN { printf "%.1f", c / k }')
  local med mx fresh
  read -r med mx fresh < <(logtool ages "$LOG_JSON" "$off0" sql_exporter "$T/q/keys_sqle.json" "$T/scrapes.sqle")
  RES[$key,sqle,age_med]=$med
  RES[$key,sqle,age_max]=$mx
  RES[$key,sqle,fresh]="$fresh/$SCRAPES"
  # it logs JSON; a value it cannot read as a number (a NULL) is an error line, and that series
  # is left out of its answer
  RES[$key,sqle,errors]=$(grep -Ec '"level":"(error|warn)"' "$T/exporter.log" || true)
  grep -E '"level":"(error|warn)"' "$T/exporter.log" > "$T/sqle.errors.$key" || true
  stop_exporter
}

# ---- prometheus-postgres-exporter with the reference queries ----

# The reference: the figures qrel exports, each window bounded by now() as the definitions say,
# written the plain way (one statement per table, a scalar percentile_cont per quantile, no count
# of the rows ahead), in postgres_exporter's --extend.query-path format. Its own collectors are
# turned off so that it runs these and nothing else.
write_pgexp_queries() {
  cat > "$T/pgexp.yml" <<'YML'
ref_dedup:
  query: |
    SELECT (SELECT count(*) FROM handled_messages
            WHERE handled_at >= now() - interval '5 min' AND handled_at <= now())::float8 AS handled,
           (SELECT coalesce(sum(duplicate_count), 0) FROM handled_messages WHERE duplicate_count > 0)::float8 AS duplicates,
           (SELECT extract(epoch FROM now() - min(handled_at)) FROM handled_messages)::float8 AS window_seconds
  metrics:
    - handled: {usage: GAUGE, description: "handled within 5 min, up to now()"}
    - duplicates: {usage: GAUGE, description: "duplicates over the table"}
    - window_seconds: {usage: GAUGE, description: "age of the oldest row"}
ref_claims:
  query: |
    SELECT o.in_flight, o.stale, o.oldest_age, f.done, f.p50, f.p90, f.p99, f.p100
    FROM (SELECT count(*) FILTER (WHERE claimed_at >= now() - interval '2 min' AND claimed_at <= now())::float8 AS in_flight,
                 count(*) FILTER (WHERE claimed_at < now() - interval '2 min')::float8 AS stale,
                 coalesce(extract(epoch FROM now() - min(claimed_at) FILTER (WHERE claimed_at >= now() - interval '2 min' AND claimed_at <= now())), 0)::float8 AS oldest_age
          FROM claims WHERE done_at IS NULL) AS o,
         (SELECT count(*)::float8 AS done,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM done_at - claimed_at))::float8 AS p50,
                 percentile_cont(0.9) WITHIN GROUP (ORDER BY extract(epoch FROM done_at - claimed_at))::float8 AS p90,
                 percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM done_at - claimed_at))::float8 AS p99,
                 max(extract(epoch FROM done_at - claimed_at))::float8 AS p100
          FROM claims WHERE done_at >= now() - interval '5 min' AND done_at <= now()) AS f
  metrics:
    - in_flight: {usage: GAUGE, description: "open claims within 2 min, up to now()"}
    - stale: {usage: GAUGE, description: "open claims before that"}
    - oldest_age: {usage: GAUGE, description: "oldest in-flight hold"}
    - done: {usage: GAUGE, description: "claims done within 5 min, up to now()"}
    - p50: {usage: GAUGE, description: "handler p50"}
    - p90: {usage: GAUGE, description: "handler p90"}
    - p99: {usage: GAUGE, description: "handler p99"}
    - p100: {usage: GAUGE, description: "handler max"}
ref_outbox:
  query: |
    SELECT count(*)::float8 AS pending,
           coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_age
    FROM outbox WHERE published_at IS NULL
  metrics:
    - pending: {usage: GAUGE, description: "unpublished rows"}
    - oldest_age: {usage: GAUGE, description: "age of the oldest unpublished row"}
YML
}

pgexp_ready() { # true once it answers with the reference series, or has exited
  if curl -s --max-time 10 -o "$T/body.txt" "http://$PGEXP_ADDR/metrics" 2>/dev/null &&
    grep -q '^ref_claims_done' "$T/body.txt"; then ok=1; return 0; fi
  ! kill -0 "$PGEXP_PID" 2>/dev/null
}

# Started before the rounds and scraped in each, right before or after qrel (scrape.sh), so that
# both see the same tables and the same load on a shared machine.
start_pgexp() {
  local i ok
  write_pgexp_queries
  : > "$T/pgexp.log"
  PGEXP_ADDR=127.0.0.1:$(free_port)
  DATA_SOURCE_NAME="postgresql://postgres_exporter@127.0.0.1:$PG_PORT/bench?sslmode=disable" \
    "$PGEXP_BIN" --web.listen-address="$PGEXP_ADDR" --extend.query-path="$T/pgexp.yml" \
    --disable-default-metrics --disable-settings-metrics --no-collector.database \
    --no-collector.bgwriter >>"$T/pgexp.log" 2>&1 &
  PGEXP_PID=$!
  ok=0
  wait_for -i 0.1 60 "prometheus-postgres-exporter to answer" pgexp_ready || true
  [ "$ok" = 1 ] || { tail -5 "$T/pgexp.log" >&2; die "prometheus-postgres-exporter did not start or never ran the reference queries"; }
}

# its figures from the rounds (the database time is taken with qrel's, in run_session_and_qrel)
collect_pgexp() {
  local key=$1 i up=0 b
  for ((i = WARMUP + 1; i <= WARMUP + SCRAPES; i++)); do
    b=$T/pgexp_body.m.$i
    if grep -q '^ref_claims_done' "$b" && grep -Eq '^pg_up 1$' "$b"; then up=$((up + 1)); fi
  done
  exporter_figures "$key" pgexp "$PGEXP_PID" "$T/pgexp_times.m" "$T/pgexp_own.m" \
    "$T/pgexp_cpu.start" "$T/pgexp_cpu.end"
  RES[$key,pgexp,up]="$up/$SCRAPES"
  # every scrape runs the queries (no cache_seconds): its values are as fresh as qrel's
  RES[$key,pgexp,age_med]=-; RES[$key,pgexp,age_max]=-; RES[$key,pgexp,fresh]=-
  b=$T/pgexp_body.m.$((WARMUP + SCRAPES))
  RES[$key,pgexp,seen]="outbox pending $(awk '/^ref_outbox_pending/ { print $NF }' "$b"), claims stale $(awk '/^ref_claims_stale/ { print $NF }' "$b"), in_flight $(awk '/^ref_claims_in_flight/ { print $NF }' "$b"), dedup handled $(awk '/^ref_dedup_handled/ { print $NF }' "$b"), claims done $(awk '/^ref_claims_done/ { print $NF }' "$b"), claims p99 $(awk '/^ref_claims_p99/ { print $NF }' "$b")"
  kill "$PGEXP_PID" 2>/dev/null || true
  wait "$PGEXP_PID" 2>/dev/null || true
  PGEXP_PID=
}

# ---- a fresh connection each time ----

# pgbench -C: every transaction (the queries, one after the other) on a new connection, so a new
# server backend with cold caches; one transaction per run, its latency includes the connection.
run_reconnect() {
  local key=$1 n=${1#*:} i out
  : > "$T/reconnect.txt"
  : > "$T/connect.txt"
  for ((i = 0; i < RECONNECTS; i++)); do
    out=$("$PG_BIN/pgbench" -n -C -t 1 -f "$T/queries.sql" -h 127.0.0.1 -p "$PG_PORT" -U bench_raw bench 2>&1) ||
      { echo "$out" >&2; die "pgbench failed"; }
    sed -nE 's/^latency average = ([0-9.]+) ms$/\1/p' <<<"$out" | awk '{ printf "%.6f\n", $1 / 1000 }' >> "$T/reconnect.txt"
    sed -nE 's/^average connection time = ([0-9.]+) ms$/\1/p' <<<"$out" | awk '{ printf "%.6f\n", $1 / 1000 }' >> "$T/connect.txt"
  done
  [ "$(wc -l < "$T/reconnect.txt")" -eq "$RECONNECTS" ] || die "pgbench: no latency in its output: $out"
  RES[$key,reconnect,scrapes]=$RECONNECTS
  RES[$key,reconnect,median]=$(median < "$T/reconnect.txt")
  RES[$key,reconnect,min]=$(minimum < "$T/reconnect.txt")
  RES[$key,connect,median]=$(median < "$T/connect.txt")
}

# ---- run ----

QREL_VERSION=$(qrel_version "$QREL_BIN")
SQLE_VERSION=$(dpkg-query -W -f '${Version}' prometheus-sql-exporter 2>/dev/null || "$SQLE_BIN" -version 2>&1 | head -1 || true)
PGEXP_VERSION=$(dpkg-query -W -f '${Version}' prometheus-postgres-exporter 2>/dev/null || true)
write_helpers
progress "starting PostgreSQL ($PG_BIN)"
start_pg
setup_db
PG_VERSION=$(pq -At -c 'SHOW server_version')

echo "# qrel postgres benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores"
echo "# ${QREL_VERSION:-qrel_exporter ?}; prometheus-sql-exporter ${SQLE_VERSION:-?}; prometheus-postgres-exporter ${PGEXP_VERSION:-?}; PostgreSQL $PG_VERSION"
echo "# load average at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews the times)"
echo "# warm-up $WARMUP; measured $SCRAPES scrapes / psql rounds, $RECONNECTS reconnects;" \
  "database time from $([ "$PGSS" = 1 ] && echo pg_stat_statements || echo 'the server log')"
echo "# shapes: past = rows spread evenly over the day up to now(); future = the same, shifted so that the newest $((AHEAD_S / 60)) minutes lie ahead of now()"

KEYS=()
START=$SECONDS
for n in "${SIZE_LIST[@]}"; do
  for shape in "${SHAPE_LIST[@]}"; do
    key=$shape:$n
    KEYS+=("$key")
    progress "$key: loading the three tables"
    load_tables "$key"
    progress "$key: loaded in ${RES[$key,load_s]} s (${RES[$key,mib]} MiB with indexes)"
    progress "$key: psql session, qrel and prometheus-postgres-exporter with the reference queries"
    t0=$SECONDS
    start_pgexp
    run_session_and_qrel "$key"
    collect_pgexp "$key"
    progress "  psql round median $(fmt "${RES[$key,psql,median]}" %.4f) s; qrel scrape median $(fmt "${RES[$key,qrel,median]}" %.4f) s, up ${RES[$key,qrel,up]}; postgres_exporter $(fmt "${RES[$key,pgexp,median]}" %.4f) s; $((SECONDS - t0)) s in all"
    progress "$key: prometheus-sql-exporter"
    t0=$SECONDS
    run_sqle "$key"
    progress "  sql_exporter scrape median $(fmt "${RES[$key,sqle,median]}" %.4f) s, values up to $(fmt "${RES[$key,sqle,age_max]}" %.1f) s old; $((SECONDS - t0)) s in all"
    progress "$key: fresh connections"
    t0=$SECONDS
    run_reconnect "$key"
    progress "  reconnect + queries median $(fmt "${RES[$key,reconnect,median]}" %.4f) s; $((SECONDS - t0)) s in all"
  done
done
progress "done in $((SECONDS - START)) s"
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---- table ----

row() {
  printf '%-16s %-18s %5s %9s %8s %10s %8s %8s %8s %9s %9s %9s %9s %7s %7s\n' "$@"
}
echo
row shape:rows what runs median_s min_s cpu_ms/scr rss_mib own_kib heap_kib db_ms/scr stmts/scr age_med_s age_max_s fresh up
for key in "${KEYS[@]}"; do
  row "$key" "psql session" "${RES[$key,psql,scrapes]}" "$(fmt "${RES[$key,psql,median]}" %.4f)" \
    "$(fmt "${RES[$key,psql,min]}" %.4f)" - - - - "${RES[$key,psql,db_ms]:--}" "${RES[$key,psql,stmts]:--}" - - - -
  row "$key" "reconnect" "${RES[$key,reconnect,scrapes]}" "$(fmt "${RES[$key,reconnect,median]}" %.4f)" \
    "$(fmt "${RES[$key,reconnect,min]}" %.4f)" - - - - - - - - - -
  for who in qrel pgexp sqle; do
    row "$key" "$(case $who in qrel) echo qrel ;; pgexp) echo postgres_exporter ;; sqle) echo sql_exporter ;; esac)" \
      "${RES[$key,$who,scrapes]}" "$(fmt "${RES[$key,$who,median]}" %.4f)" \
      "$(fmt "${RES[$key,$who,min]}" %.4f)" "${RES[$key,$who,cpu_ms]}" "${RES[$key,$who,rss_mib]}" \
      "${RES[$key,$who,own_kib]:--}" "${RES[$key,$who,heap_kib]:--}" "${RES[$key,$who,db_ms]:--}" "${RES[$key,$who,stmts]:--}" \
      "$(fmt "${RES[$key,$who,age_med]}" %.4f)" "$(fmt "${RES[$key,$who,age_max]}" %.4f)" \
      "${RES[$key,$who,fresh]}" "${RES[$key,$who,up]}"
  done
done
echo "# psql session: the queries qrel sends, one round per qrel scrape in one open session (TCP),"
printf '%s\n' "#   median_s = median over rounds of the summed \\timing; reconnect: pgbench -C, a new connection (new backend) and the same queries"
echo "# postgres_exporter: the reference queries (each window bounded by now(), no count of the rows ahead), its own collectors off"
echo "# sql_exporter: qrel's own statements on its ${SQLE_INTERVAL} s job interval"
echo "# own_kib: the largest RssAnon (heap, arenas, stacks and the libraries' private pages) after a measured scrape;"
echo "#   heap_kib: the largest heap + stacks alone (smaps: anonymous pages outside file mappings), the 2 MiB goal's figure;"
echo "#   rss_mib: peak RSS (VmHWM)"
echo "# db_ms/scr, stmts/scr: server time (plan + execution) and statements per scrape (psql: per round),"
echo "#   from $([ "$PGSS" = 1 ] && echo pg_stat_statements || echo 'the statement log')"
echo "# age_*_s: scrape end minus the start of the oldest statement run behind the served values;"
echo "#   fresh: scrapes whose values were all computed inside the scrape"
for key in "${KEYS[@]}"; do
  echo "# $key: load ${RES[$key,load_s]} s, ${RES[$key,mib]} MiB, ${RES[$key,allvis]} % of the heap pages all-visible; qrel sends ${RES[$key,stmts]} queries per scrape" \
    "(+${RES[$key,other]} SET/other); qrel_collector_duration_seconds median $(fmt "${RES[$key,qrel,collect]}" %.4f) s," \
    "first byte of the scrape after $(fmt "${RES[$key,qrel,ttfb]}" %.4f) s;" \
    "qrel db time from the log $(fmt "${RES[$key,qrel,log_db_ms]}" %.1f) ms/scrape;" \
    "of a reconnect, the connection alone $(fmt "${RES[$key,connect,median]}" %.4f) s"
  echo "# $key: psql median per statement, s: ${RES[$key,perq]} (q1 dedup_table, q2 claim_table, q3 outbox)"
  echo "# $key: qrel saw: ${RES[$key,qrel,seen]}"
  echo "# $key: postgres_exporter saw: ${RES[$key,pgexp,seen]}"
  echo "# $key: resident at the end: qrel ${RES[$key,qrel,rss_split]}; postgres_exporter ${RES[$key,pgexp,rss_split]}; sql_exporter ${RES[$key,sqle,rss_split]}"
  if [ "${RES[$key,sqle,errors]:-0}" != 0 ]; then
    echo "# $key: sql_exporter logged ${RES[$key,sqle,errors]} errors, e.g.: $(grep -E '"level":"(error|warn)"' "$T/sqle.errors.$key" | head -1 | sed -nE 's/.*"err":"([^"]*)".*/\1/p')"
  fi
done
echo "# the queries qrel sent (${KEYS[-1]}), as run in psql and by sql_exporter:"
sed 's/^/#   /' "$T/queries.sql"
echo "# load average at the end: $LOAD_END"

# ---- verdict ----

g=$GOAL_N
note=""
if [ -z "${RES[past:$g,qrel,median]:-}" ] && [ -z "${RES[future:$g,qrel,median]:-}" ]; then
  g=${SIZE_LIST[-1]}
  note=" (measured at N=$g: $GOAL_N was not in --sizes)"
fi
for shape in "${SHAPE_LIST[@]}"; do
  k=$shape:$g
  awk -v q="${RES[$k,qrel,median]}" -v p="${RES[$k,psql,median]}" -v r="${RES[$k,pgexp,median]}" \
      -v rss="${RES[$k,qrel,rss_mib]}" -v own="${RES[$k,qrel,heap_kib]}" \
      -v prss="${RES[$k,pgexp,rss_mib]}" -v srss="${RES[$k,sqle,rss_mib]}" \
      -v fresh="${RES[$k,qrel,fresh]}" -v up="${RES[$k,qrel,up]}" -v k="$k" -v note="$note" -v vfile="$T/verdict" \
      -v qmin="${RES[$k,qrel,min]}" -v rmin="${RES[$k,pgexp,min]}" 'BEGIN {
    split(fresh, f, "/"); split(up, u, "/")
    ratio = (r > 0) ? q / r : 0
    r_ok = (ratio <= 1.1); f_ok = (f[1] == f[2]); o_ok = (own <= 2048)
    m_ok = (rss < prss && rss < srss); u_ok = (u[1] == u[2])
    m = ""
    if (!r_ok) m = m sprintf("; %.2fx postgres_exporter (goal <= 1.1)", ratio)
    if (!f_ok) m = m sprintf("; values computed inside the scrape in %s scrapes (goal all)", fresh)
    if (!o_ok) m = m sprintf("; heap + stacks %d KiB (goal <= 2048)", own)
    if (!m_ok) m = m sprintf("; RSS %.1f MiB, not below every peer", rss)
    if (!u_ok) m = m "; qrel collector not up in every scrape"
    print ((r_ok && f_ok && o_ok && m_ok && u_ok) ? sprintf("met: %.2fx postgres_exporter", ratio) : "missed: " substr(m, 3)) > vfile
    printf "verdict %s%s: qrel scrape %.2fx postgres_exporter with the reference queries (goal <= 1.1: %s; %.2fx the open-session floor), values computed inside the scrape in %s scrapes (goal all: %s), heap + stacks %d KiB (goal <= 2048: %s), RSS %.1f MiB vs postgres_exporter %.1f, sql_exporter %.1f (goal below every peer: %s)%s: %s\n",
      k, note, ratio, r_ok ? "met" : "missed", (p > 0) ? q / p : 0, fresh, f_ok ? "met" : "missed", own, o_ok ? "met" : "missed",
      rss, prss, srss, m_ok ? "met" : "missed",
      u_ok ? "" : ", qrel collector NOT up in every scrape", (r_ok && f_ok && o_ok && m_ok && u_ok) ? "MET" : "NOT MET"
    printf "  (on the fastest scrapes instead of the medians: %.2fx)\n", (rmin > 0) ? qmin / rmin : 0
  }'
  bench_result shape="$shape" size="$g rows" stat=median qrel_s="$(fmt "${RES[$k,qrel,median]}" %.4f)" \
    floor_s="$(fmt "${RES[$k,psql,median]}" %.4f)" x_floor="$(ratio "${RES[$k,qrel,median]}" "${RES[$k,psql,median]}")" \
    peer=postgres_exporter peer_s="$(fmt "${RES[$k,pgexp,median]}" %.4f)" heap="${RES[$k,qrel,heap_kib]} KiB" \
    broker_ms="${RES[$k,qrel,db_ms]:--}" \
    goal="<= 1.1x postgres_exporter, values computed inside the scrape, heap + stacks <= 2048 KiB, RSS below every peer" \
    verdict="$(cat "$T/verdict")"
done
