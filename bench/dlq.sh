#!/usr/bin/env bash
# dlq.sh: `qrel dlq` at scale (issue 28, goal 4): inspect and replay of N dead letters on a Redis
# stream, classified against a PostgreSQL work table of ROWS rows.
#
# The work table is the demo's claim table (confirmation_claims: order_id bigint primary key,
# claimed_at, sent_at), ROWS rows, every even order sent (done), every odd one claimed and never
# sent (not done). Two origin streams, each with its consumer group and N dead letters made as the
# demo's mailer dead-letters an entry (demo/consumer.c): the orders are published to the stream,
# delivered to the group, and each is then added to the dead-letter stream with its id, order,
# deliveries and reason, and acknowledged. The two shapes:
#   done      the N dead letters' orders are even, spread over the whole table: every one done;
#             inspect, then a replay's dry run (which reads and classifies all, moves nothing);
#   not_done  their orders are odd: none done; inspect, then replay --yes, which moves all N.
# Per run it takes qrel's time, CPU and peak RSS (GNU time), its largest heap + stacks (sampled
# every 20 ms: a lower bound; flat across --dead-letters sizes, since a run holds one page of
# 1,000), the SQL statements qrel sent (pg_stat_statements, by qrel's own role: one work-table
# lookup a page) and the Redis commands (INFO commandstats) and Redis CPU (INFO cpu). The same
# 20 ms samples of Redis' XDEL count (one a moved entry) and CPU time the move phase of replay --yes alone (from the
# first sample with a move to the first with all N): qrel's moves a second there, and Redis' busy
# share (its CPU seconds per second of the phase: 1.0 is a core kept busy). The floor is Redis's
# own write rate for the same writes: per dead letter the XADD of its fields and stamp to the
# origin and the XDEL from the dead-letter stream, all N pairs pipelined by bench/pipe_floor.c
# on a copy of the not_done streams. See bench/README.md for the method and the results.
#
# Needs: bash, redis-server, redis-cli, PostgreSQL with pg_stat_statements (initdb, pg_ctl, psql),
# jq, awk, cc, pkg-config and hiredis (for bench/pipe_floor.c), GNU time (/usr/bin/time), and a
# built qrel (build/qrel, or QREL_BUILD_DIR, or --qrel PATH).
set -euo pipefail
export LC_ALL=C

usage() {
  cat <<'EOF'
Usage: bench/dlq.sh [--dead-letters N] [--rows N] [--qrel PATH]

  --dead-letters N  dead letters per shape (default 100000; at most 1000000, the most a
                    dead_letters entry's max_entries reads)
  --rows N          rows of the work table (default 10000000; at least 2 per dead letter)
  --qrel PATH       the qrel binary (qrel dlq)
  -h, --help        this text
EOF
  usage_end
}

N=100000
ROWS=10000000
SRC_DIR=$(cd "$(dirname "$0")/.." && pwd)
QREL_CLI=""

# shellcheck source=lib.sh
. "$SRC_DIR/bench/lib.sh"
parse_options "--dead-letters:N --rows:ROWS --qrel:QREL_CLI" "$@"
need_num --dead-letters "$N"
need_num --rows "$ROWS"
[ "$N" -le 1000000 ] || die "--dead-letters: at most 1000000 (max_entries' bound)"
[ "$ROWS" -ge $((2 * N)) ] || die "--rows: want at least twice --dead-letters"

export QREL_SOURCE_DIR=$SRC_DIR
# shellcheck source=../tests/lib/common.sh
. "$SRC_DIR/tests/lib/common.sh"
# Appended to the cluster's postgresql.conf by start_postgres.
PG_CONF=$T/pg-extra.conf
printf '%s\n' "shared_preload_libraries = 'pg_stat_statements'" "pg_stat_statements.max = 1000" >"$PG_CONF"
[ -n "$QREL_CLI" ] && QREL=$QREL_CLI
[ -x "$QREL" ] || die "no qrel at $QREL (build first, or --qrel PATH)"
need_tools redis-server redis-cli jq cc pkg-config /usr/bin/time
[ -x "$PGBIN/initdb" ] || die "PostgreSQL's initdb not found (PGBIN)"
say() { echo "dlq.sh: $*" >&2; }

FLOOR_BIN=$T/pipe_floor
read -ra HIREDIS <<<"$(pkg-config --cflags --libs hiredis)"
cc -O2 -o "$FLOOR_BIN" "$SRC_DIR/bench/pipe_floor.c" "${HIREDIS[@]}" || die "cannot build bench/pipe_floor.c"

# --- servers and the work table ----------------------------------------------------------------
say "starting redis-server and PostgreSQL"
start_redis RP
start_postgres PGP
R() { redis-cli -p "$RP" "$@"; }
t0=$SECONDS
say "filling the work table: $ROWS rows"
psql_do "CREATE EXTENSION pg_stat_statements;
  CREATE ROLE qrel LOGIN;
  CREATE TABLE confirmation_claims (order_id bigint PRIMARY KEY, claimed_at timestamptz NOT NULL,
                                    sent_at timestamptz);
  INSERT INTO confirmation_claims
    SELECT i, now() - interval '2 hours', CASE WHEN i % 2 = 0 THEN now() - interval '1 hour' END
    FROM generate_series(1, $ROWS) AS i;
  GRANT SELECT ON confirmation_claims TO qrel;" >/dev/null
psql_do "VACUUM ANALYZE confirmation_claims" >/dev/null
FILL_TABLE_S=$((SECONDS - t0))

# --- dead letters ------------------------------------------------------------------------------
# resp: each line of stdin, its words split on spaces, as one RESP command (what pipe_floor and
# redis-cli --pipe read).
resp() {
  awk '{ printf "*%d\r\n", NF; for (j = 1; j <= NF; j++) printf "$%d\r\n%s\r\n", length($j), $j }'
}
STRIDE=$((ROWS / N))
[ $((STRIDE % 2)) -eq 0 ] || STRIDE=$((STRIDE - 1)) # even, so that the parity of each order is the shape's
BASE_MS=$(($(date +%s%3N) - 3600000)) # published an hour ago,
DEAD_MS=$((BASE_MS + 1800000))        # dead-lettered half an hour ago
# dead_letters STREAM FIRST: N orders FIRST, FIRST + STRIDE, ... published to STREAM (group
# mailer), delivered, and dead-lettered into STREAM.dlq as demo/consumer.c does it (XADD of id,
# order, deliveries, reason; XACK). Ids are given, so that the floor can name them.
dead_letters() {
  awk -v s="$1" -v first="$2" -v stride="$STRIDE" -v n="$N" -v b="$BASE_MS" -v d="$DEAD_MS" 'BEGIN {
    print "XGROUP CREATE " s " mailer $ MKSTREAM"
    for (i = 1; i <= n; i++) print "XADD " s " " b "-" i " order " (first + (i - 1) * stride) " email c" i "@example.com"
    for (i = 1; i <= n; i += 1000) print "XREADGROUP GROUP mailer c1 COUNT 1000 STREAMS " s " >"
    for (i = 1; i <= n; i++) {
      print "XADD " s ".dlq " d "-" i " id " b "-" i " order " (first + (i - 1) * stride) " deliveries 3 reason max_deliveries"
      print "XACK " s " mailer " b "-" i
    }
  }' | resp | R --pipe >/dev/null
  [ "$(R XLEN "$1.dlq")" -eq "$N" ] || die "$1.dlq: want $N dead letters, got $(R XLEN "$1.dlq")"
  [ "$(R XPENDING "$1" mailer | head -1)" -eq 0 ] || die "$1: dead letters left pending"
}
say "dead-lettering $N orders per shape (and a copy for the floor)"
dead_letters orders-done "$STRIDE"
dead_letters orders-open $((STRIDE + 1))
dead_letters floor $((STRIDE + 1))

# A generous timeout: the lookup of every id runs inside each source's own deadline.
cat >"$T/qrel.yml" <<YML
global: {timeout: 60s}
sources:
$(redis_source shop-redis "$RP")
    max_response_bytes: $((N * 400 > 67108864 ? N * 400 : 67108864))
    streams:
      - {name: orders-done, dead_letter_stream: "{stream}.dlq"}
      - {name: orders-open, dead_letter_stream: "{stream}.dlq"}
$(pg_source shop-db "$PGP" qrel)
    claim_tables:
      - {table: confirmation_claims, id_column: order_id, claimed_at_column: claimed_at, done_at_column: sent_at, in_flight_window: 2m}
dead_letters:
YML
for q in orders-done orders-open; do
  printf '  - {source: shop-redis, queue: %s, id_field: order, max_entries: %d, work_table: {source: shop-db, table: confirmation_claims, id_column: order_id, done_column: sent_at}}\n' \
    "$q" "$N" >>"$T/qrel.yml"
done
"$EXPORTER" --config.file="$T/qrel.yml" --config.check >/dev/null || die "the generated configuration is invalid"

# --- measuring ---------------------------------------------------------------------------------
redis_cpu_s() {
  R INFO cpu | tr -d '\r' | awk -F: '$1 == "used_cpu_user" || $1 == "used_cpu_sys" { s += $2 } END { printf "%.6f\n", s }'
}
# redis_calls: commands Redis ran since CONFIG RESETSTAT, but for this script's own INFO and the reset.
redis_calls() {
  R INFO commandstats | tr -d '\r' |
    awk -F'[:,=]' '/^cmdstat_/ && $1 != "cmdstat_config|resetstat" && $1 != "cmdstat_info" { s += $3 } END { print s + 0 }'
}
# redis_evals: EVAL calls since CONFIG RESETSTAT: a replay's windows of moves (one script moves up
# to 64 entries) and its release of the replay lock.
redis_evals() {
  R INFO commandstats | tr -d '\r' | awk -F'[:,=]' '$1 == "cmdstat_eval" { n = $3 } END { print n + 0 }'
}
# pg_calls [LIKE]: statements qrel's role ran since the reset (those whose text is LIKE, when given).
pg_calls() {
  psql_val "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
            WHERE userid = 'qrel'::regrole AND query LIKE '${1:-%}'"
}

# cmd_ms CMD: the milliseconds Redis spent in CMD since CONFIG RESETSTAT (INFO commandstats'
# usec: the commands a script runs count in its EVAL's too, so EVAL is the whole of a window).
cmd_ms() {
  R INFO commandstats | tr -d '\r' |
    awk -F'[:,=]' -v c="cmdstat_$1" '$1 == c { u = $5 } END { printf "%.1f\n", u / 1000 }'
}
# pg_ms LIKE: PostgreSQL's execution milliseconds of qrel's statements LIKE it since the reset.
pg_ms() {
  psql_val "SELECT round(coalesce(sum(total_exec_time), 0)::numeric, 1) FROM pg_stat_statements
            WHERE userid = 'qrel'::regrole AND query LIKE '$1'"
}

# pg_blocks LIKE: the shared buffers (hit and read) of qrel's statements LIKE it since the reset:
# a count of the lookups' work that the machine's load does not change.
pg_blocks() {
  psql_val "SELECT coalesce(sum(shared_blks_hit + shared_blks_read), 0) FROM pg_stat_statements
            WHERE userid = 'qrel'::regrole AND query LIKE '$1'"
}

# moves_cpu: "XDEL-calls Redis-CPU-seconds" now, from one INFO of both sections: each moved
# entry's XDEL (in the window's script) counts it, whatever the entries a script moves
moves_cpu() {
  R INFO cpu commandstats | tr -d '\r' | awk -F'[:,=]' '$1 == "cmdstat_xdel" { n = $3 }
    $1 == "used_cpu_user" || $1 == "used_cpu_sys" { c += $2 } END { printf "%d %.6f\n", n, c }'
}
# run_qrel NAME ARGS...: one `qrel dlq ARGS --format=json` into $T/NAME.json, measured. Sets
# WALL_S, CPU_S, RSS_KIB, HEAP_KIB, SQL (statements), LOOKUPS (work-table statements),
# RCMDS (Redis commands), EVALS (of them EVAL: the windows of moves), RCPU_S (Redis CPU), and
# from the samples of $T/NAME.moves ("seconds XDELs Redis-CPU" every 20 ms) the move phase's MOVE_S,
# MOVES_PER_S and BUSY (Redis CPU / MOVE_S), "-" when no move was seen.
run_qrel() {
  local name=$1 tpid pid="" t_start rc=0 rc0
  shift
  psql_val "SELECT pg_stat_statements_reset()" >/dev/null
  R CONFIG RESETSTAT >/dev/null
  rc0=$(redis_cpu_s)
  : >"$T/$name.heap"
  : >"$T/$name.moves"
  t_start=$(date +%s.%N)
  /usr/bin/time -f '%U %S %M' -o "$T/$name.time" "$QREL" dlq "$@" --config.file="$T/qrel.yml" \
    --source=shop-redis --format=json --timeout=120s >"$T/$name.json" 2>"$T/$name.err" &
  tpid=$!
  while [ -d "/proc/$tpid" ]; do
    [ -n "$pid" ] || pid=$(awk '{ print $1 }' "/proc/$tpid/task/$tpid/children" 2>/dev/null || true)
    [ -z "$pid" ] || heap_kib "$pid" >>"$T/$name.heap" 2>/dev/null || true
    echo "$(date +%s.%N) $(moves_cpu)" >>"$T/$name.moves"
    sleep 0.02
  done
  wait "$tpid" || rc=$?
  WALL_S=$(awk -v a="$t_start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')
  [ "$rc" -eq 0 ] || die "qrel dlq $* failed (exit $rc): $(cat "$T/$name.err")"
  read -r u s RSS_KIB <"$T/$name.time"
  CPU_S=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
  HEAP_KIB=$(col_max 1 "$T/$name.heap")
  SQL=$(pg_calls)
  LOOKUPS=$(pg_calls '%unnest%')
  RCPU_S=$(awk -v a="$rc0" -v b="$(redis_cpu_s)" 'BEGIN { printf "%.3f", b - a }')
  RCMDS=$(redis_calls)
  EVALS=$(redis_evals)
  # Where a page's wall time goes, in ms a page: Redis' XRANGE, PostgreSQL's work-table
  # statement, qrel's own CPU, Redis' windows of moves (EVAL); the rest is round trips and waits.
  local pages=$(((N + 999) / 1000))
  SPLIT=$(awk -v p="$pages" -v w="$WALL_S" -v x="$(cmd_ms xrange)" -v l="$(pg_ms '%unnest%')" \
    -v q="$CPU_S" -v m="$(cmd_ms eval)" -v b="$(pg_blocks '%unnest%')" 'BEGIN {
      printf "a page of 1,000: wall %.1f ms = Redis XRANGE %.1f + PG lookup %.1f (%d buffers) + qrel CPU %.1f + Redis moves %.1f + waits %.1f",
        w * 1000 / p, x / p, l / p, b / p, q * 1000 / p, m / p, (w * 1000 - x - l - q * 1000 - m) / p }')
  read -r MOVE_S MOVES_PER_S BUSY < <(awk -v n="$N" '
    $2 > 0 && t1 == "" { t1 = $1; e1 = $2; c1 = $3 }
    t1 != "" && !done { t2 = $1; e2 = $2; c2 = $3; done = $2 >= n }
    END { if (t1 == "" || t2 <= t1) print "- - -"; else printf "%.3f %.0f %.2f\n", t2 - t1, (e2 - e1) / (t2 - t1), (c2 - c1) / (t2 - t1) }' "$T/$name.moves")
}

printf '# qrel dlq benchmark, %s, %s cores\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(nproc)"
printf '# %s; redis-server %s; PostgreSQL %s\n' "$(qrel_version "$QREL")" \
  "$(redis-server --version | sed -E 's/.*v=([^ ]+).*/\1/')" "$("$PGBIN/postgres" --version | awk '{ print $3 }')"
printf '# %d dead letters per shape on a Redis stream; work table of %d rows (filled in %d s), max_entries %d\n' \
  "$N" "$ROWS" "$FILL_TABLE_S" "$N"
printf '# one run of each command, --format=json; load average at start: %s\n\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
ROW='%-9s %-16s %9s %7s %9s %9s %8s %8s %9s %9s %10s %9s %10s %6s\n'
# shellcheck disable=SC2059 # the format is the table's
printf "$ROW" shape command time_s cpu_s rss_kib heap_kib sql lookups redis_cmds redis_cpu_s moved_per_s \
  move_s moves_per_s busy

# row SHAPE COMMAND MOVED: one line of the table from the last run_qrel
row() {
  # shellcheck disable=SC2059
  printf "$ROW" "$1" "$2" "$WALL_S" "$CPU_S" "$RSS_KIB" "$HEAP_KIB" "$SQL" "$LOOKUPS" "$RCMDS" "$RCPU_S" \
    "$([ "$3" -gt 0 ] && awk -v n="$3" -v t="$WALL_S" 'BEGIN { printf "%.0f", n / t }' || echo -)" \
    "$([ "$3" -gt 0 ] && echo "$MOVE_S" || echo -)" "$([ "$3" -gt 0 ] && echo "$MOVES_PER_S" || echo -)" \
    "$([ "$3" -gt 0 ] && echo "$BUSY" || echo -)"
}
# expect WHAT GOT WANT: the run did what it must, or the benchmark stops
expect() { [ "$2" = "$3" ] || die "$1: want $3, got $2"; }

for shape in "done" not_done; do
  q=orders-done
  [ "$shape" = "done" ] || q=orders-open
  say "$shape: inspect"
  run_qrel "$shape-inspect" inspect --queue="$q"
  expect "$shape: inspect's read, done, not_done, unknown" \
    "$(jq -r '"\(.read) \(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/$shape-inspect.json")" \
    "$N $([ "$shape" = "done" ] && echo "$N 0" || echo "0 $N") 0"
  row "$shape" inspect 0
  echo "#   inspect, $SPLIT"
  i_wall=$WALL_S i_rss=$RSS_KIB i_heap=$HEAP_KIB i_sql=$SQL i_lookups=$LOOKUPS
  if [ "$shape" = "done" ]; then
    say "$shape: replay, dry run"
    run_qrel "$shape-replay" replay --queue="$q"
    expect "$shape: the dry run's chosen" "$(jq -r .replay.chosen "$T/$shape-replay.json")" 0
    row "$shape" "replay (dry run)" 0
    echo "#   replay (dry run), $SPLIT"
    moved=0
  else
    say "$shape: replay --yes"
    run_qrel "$shape-replay" replay --queue="$q" --yes
    moved=$(jq -r '.replay.moved | length' "$T/$shape-replay.json")
    expect "$shape: moved" "$moved" "$N"
    expect "$shape: $q.dlq after the replay" "$(R XLEN "$q.dlq")" 0
    expect "$shape: $q after the replay" "$(R XLEN "$q")" $((2 * N))
    row "$shape" "replay --yes" "$moved"
    echo "#   replay --yes, $SPLIT"
    # What the batching claim rests on: every statement qrel's role ran in the replay, with its calls.
    psql_val "SELECT calls, left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements
              WHERE userid = 'qrel'::regrole ORDER BY calls DESC, query" | sed 's/^/#   SQL of the replay: /'
  fi
  r_split=$SPLIT r_wall=$WALL_S r_rcpu=$RCPU_S r_evals=$EVALS r_cmds=$RCMDS r_busy=$BUSY r_mps=$MOVES_PER_S
  heap=$(printf '%s\n' "$i_heap" "$HEAP_KIB" | sort -n | tail -1)
  rss=$(printf '%s\n' "$i_rss" "$RSS_KIB" | sort -n | tail -1)
  floor_s="" floor_note=""
  if [ "$shape" = not_done ]; then
    # The floor: the replay's writes, pipelined on the copy (its fields, the stamp a first replay
    # adds, then the XDEL), on one open connection.
    awk -v n="$N" -v b="$BASE_MS" -v d="$DEAD_MS" -v first=$((STRIDE + 1)) -v stride="$STRIDE" 'BEGIN {
      for (i = 1; i <= n; i++) {
        print "XADD floor NOMKSTREAM * id " b "-" i " order " (first + (i - 1) * stride) " deliveries 3 reason max_deliveries qrel-replayed 1"
        print "XDEL floor.dlq " d "-" i
      }
    }' | resp >"$T/floor.resp"
    rc0=$(redis_cpu_s)
    read -r floor_s _ _ < <("$FLOOR_BIN" "$RP" "$T/floor.resp" 1)
    f_rcpu=$(awk -v a="$rc0" -v b="$(redis_cpu_s)" 'BEGIN { printf "%.3f", b - a }')
    expect "floor: floor.dlq after the floor" "$(R XLEN floor.dlq)" 0
    printf '# floor: %d XADD + XDEL pairs pipelined: %.3f s, %.0f moves/s, Redis CPU %s s\n' "$N" "$floor_s" \
      "$(awk -v n="$N" -v t="$floor_s" 'BEGIN { print n / t }')" "$f_rcpu"
    floor_note="; floor $(awk -v n="$N" -v t="$floor_s" 'BEGIN { printf "%.0f", n / t }') writes/s; move phase $r_mps moves/s, Redis busy $r_busy of it"
    printf '# move phase of replay --yes: %s moves/s (qrel), Redis busy %s of the phase; floor %.0f writes/s\n' \
      "$r_mps" "$r_busy" "$(awk -v n="$N" -v t="$floor_s" 'BEGIN { print n / t }')"
  fi
  misses=()
  pages=$(((N + 999) / 1000))
  [ "$i_lookups" -le "$pages" ] && [ "$LOOKUPS" -le "$pages" ] ||
    misses+=("$i_lookups work-table statements for inspect, $LOOKUPS for replay (goal: one a page, $pages)")
  [ "$heap" -le 16384 ] || misses+=("heap + stacks $heap KiB (goal: one page's, <= 16384 KiB)")
  if [ -n "$floor_s" ] && awk -v b="$r_busy" 'BEGIN { exit !(b == "-" || b < 0.8) }'; then
    misses+=("Redis busy $r_busy of the move phase (goal >= 0.8: the broker, not qrel, sets the pace)")
  fi
  verdict=met
  [ ${#misses[@]} -eq 0 ] || verdict="missed: $(printf '%s; ' "${misses[@]}" | sed 's/; $//')"
  bench_result shape="$shape" size="$N dead letters, $ROWS rows" stat=once qrel_s="$r_wall" \
    floor_s="$(fmt "$floor_s" %.4f)" x_floor="$(ratio "$r_wall" "$floor_s")" heap="$heap KiB" \
    broker_ms="$(awk -v s="$r_rcpu" 'BEGIN { printf "%.0f", s * 1000 }')" \
    goal="one work-table statement a page; heap + stacks <= 16 MiB at any size; Redis busy >= 0.8 of the replay's move phase" verdict="$verdict" \
    note="qrel: the $([ "$shape" = "done" ] && echo "dry run" || echo "replay --yes"); inspect $i_wall s; peak RSS $rss KiB; SQL statements $i_sql + $SQL (work-table $i_lookups + $LOOKUPS); moved $moved$([ "$moved" -gt 0 ] && echo " at $(awk -v n="$moved" -v t="$r_wall" 'BEGIN { printf "%.0f", n / t }')/s")$floor_note; Redis commands $r_cmds$([ "$moved" -gt 0 ] && awk -v c="$r_cmds" -v n="$moved" 'BEGIN { printf " (%.2f a moved entry)", c / n }'), of them EVAL $r_evals (one per window of up to 64 moves, and the lock's release); $r_split"
done
printf '\n# load average at the end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
