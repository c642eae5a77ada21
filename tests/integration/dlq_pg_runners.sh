#!/usr/bin/env bash
# `qrel dlq` on the PostgreSQL job runners, against a real PostgreSQL and the real releases from
# npm (tests/peers/pg_queues: pg-boss 12.38.0, graphile-worker 0.18.0, Node 22), with dead jobs
# made by each runner's own worker (tests/peers/pg_queues/dlq_drive.mjs, one Node process for
# both, kept running so that it also runs what qrel replays):
#   pg-boss queue billing (dead_letter billing_dlq): the copies waiting there; queue solo (no
#   dead_letter, policy exclusive): its failed jobs; graphile-worker queue mail: its jobs whose
#   attempts reached max_attempts. A work table marks the orders whose work was done.
#   inspect: counts per class exact against SQL over the runners' tables; deliveries, dead_since;
#   inspect and a dry run leave the job tables and the work table identical (md5 of the rows);
#   replay --yes moves exactly the not-done jobs, SIGKILLed after 2 moves (billing, mail) and run
#   again; the real workers then complete each not-done job exactly once, none lost, none twice;
#   each job put back carries the stamp qrel-replayed: 1, and one that dies again keeps it;
#   a second replay moves nothing;
#   pg-boss's uniqueness: a failed job whose singletonKey a live twin holds (policy exclusive) is
#   left dead with that reason, never duplicated.
# pg-boss 9.0.3, 10.4.2 and 11.1.2 (schemas pgboss9, pgboss10, pgboss11, workers in the same Node
# process): queues plainN (failed jobs) and, for 10 and 11, billN's copies in billN_dlq: inspect
# exact against SQL, inspect and dry runs change nothing, replay moves exactly the not-done ones
# (9p3 refused: its twin holds singletonKey k9), each release's worker runs each once, stamped, and
# a second replay moves nothing. (The kill proof is 12's: 9 to 11 move through the same code.)
# Every qrel command runs as a PostgreSQL role holding exactly the grants docs/dlq.md lists
# (qrel_dlq_inspect for inspect and the dry runs, qrel_dlq_replay for the replays).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

npm_peers_install pg_queues "pg-boss, graphile-worker and Node 22, about 45 s" --prefer-offline
start_postgres P
psql_do "CREATE TABLE work (order_id text PRIMARY KEY, done_at timestamptz);
         CREATE TABLE runs (order_id text, runner text)"

(cd "$PEERS" && exec "$NODE" --no-warnings dlq_drive.mjs "postgresql://postgres@127.0.0.1:$P/postgres" \
  "$T/drive.ready") >"$T/drive.out" 2>&1 &
PIDS+=("$!")
DRIVER=$!
ready() { [ -s "$T/drive.ready" ] || { kill -0 "$DRIVER" 2>/dev/null || { cat "$T/drive.out" >&2; exit 1; }; false; }; }
wait_for 90 "the runners' workers to fail every job" ready || { cat "$T/drive.out" >&2; exit 1; }

# ---- the roles: exactly the grants of docs/dlq.md ---------------------------------------------
# As docs/dlq.md creates them, BYPASSRLS given only below (after the refusal without it).
psql_do "CREATE ROLE qrel_dlq_inspect LOGIN;
  GRANT USAGE ON SCHEMA pgboss, graphile_worker, pgboss9, pgboss10, pgboss11 TO qrel_dlq_inspect;
  GRANT SELECT ON pgboss9.job, pgboss10.queue, pgboss10.job, pgboss11.queue, pgboss11.job TO qrel_dlq_inspect;
  GRANT SELECT ON pgboss.queue, pgboss.job, graphile_worker._private_jobs,
    graphile_worker._private_job_queues, work TO qrel_dlq_inspect;
  CREATE ROLE qrel_dlq_replay LOGIN IN ROLE qrel_dlq_inspect;
  GRANT INSERT, UPDATE, DELETE ON pgboss.job TO qrel_dlq_replay;
  GRANT UPDATE ON graphile_worker._private_jobs TO qrel_dlq_replay;
  GRANT UPDATE ON pgboss9.job TO qrel_dlq_replay;
  GRANT INSERT, UPDATE, DELETE ON pgboss10.job, pgboss11.job TO qrel_dlq_replay"
config() { # FILE ROLE
  cat > "$1" <<YML
sources:
$(pg_source jobs "$P" "$2")
    queues:
      - preset: pg_boss
        queues: [billing, solo]
      - preset: graphile_worker
        queues: [mail]
      - {preset: pg_boss, schema: pgboss9, queues: [plain9]}
      - {preset: pg_boss, schema: pgboss10, queues: [plain10, bill10]}
      - {preset: pg_boss, schema: pgboss11, queues: [plain11, bill11]}
dead_letters:
YML
  for q in billing solo mail $LEGACY; do
    printf '  - {source: jobs, queue: %s, id_field: order,\n' "$q" >> "$1"
    printf '     work_table: {source: jobs, table: work, id_column: order_id, done_column: done_at}}\n' >> "$1"
  done
}
LEGACY="plain9 plain10 bill10 plain11 bill11"
config "$T/inspect.yml" qrel_dlq_inspect
config "$T/replay.yml" qrel_dlq_replay
DLQ() { "$QREL" dlq "$@" 2>>"$T/dlq.err"; }

# Refused at load, with where and why: an id_field of the job that is not id or key; a queue no
# job runner's entry watches.
sed 's/queue: solo, id_field: order/queue: solo, id_field: "job:name"/' "$T/inspect.yml" > "$T/bad-id.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/bad-id.yml" --source=jobs --queue=solo > /dev/null 2> "$T/bad-id.err" || rc=$?
expect_eq "id_field job:name: exit 2" "$rc" 2
expect_cmd "... refused with file:line:col and the forms there are" grep -qF \
  "bad-id.yml:19:43: id_field: want job:id (the job's id) or job:key (its uniqueness key) after \"job:\"" "$T/bad-id.err"
sed 's/queue: mail,/queue: post,/' "$T/inspect.yml" > "$T/bad-queue.yml"
rc=0
"$QREL" dlq inspect --config.file="$T/bad-queue.yml" --source=jobs --queue=post > /dev/null 2> "$T/bad-queue.err" || rc=$?
expect_eq "a queue no entry watches: exit 2" "$rc" 2
expect_cmd "... refused naming it" grep -qF \
  'queue: no job runner'\''s entry of queues of source "jobs" watches queue "post"' "$T/bad-queue.err"

# graphile-worker enables row level security on its tables with no policy: without BYPASSRLS the
# role would read no job at all, which qrel refuses rather than report an empty queue.
rc=0
"$QREL" dlq inspect --config.file="$T/inspect.yml" --source=jobs --queue=mail > /dev/null 2> "$T/rls.err" || rc=$?
expect_eq "graphile-worker without BYPASSRLS: inspect refused (exit 1)" "$rc" 1
expect_cmd "... saying row level security hides its jobs" grep -qF \
  'row level security hides every row of _private_jobs, _private_job_queues in schema "graphile_worker" from this role' "$T/rls.err"
# The scrape as that role says so too (up 0, reason auth), rather than serve empty queues, and
# --config.check fails as the scrape does.
rc=0
"$QREL" scrape --config.file="$T/inspect.yml" > "$T/rls.prom" 2> "$T/rls-scrape.err" || rc=$?
expect_eq "... a scrape as that role: exit 1, collector down" \
  "$rc $(mval "$T/rls.prom" qrel_collector_up 'source="jobs"')" "1 0"
expect_cmd "... its log names row level security" grep -qF \
  'row level security hides every row of _private_jobs, _private_job_queues in schema "graphile_worker"' "$T/rls-scrape.err"
rc=0
"$EXPORTER" --config.file="$T/inspect.yml" --config.check > "$T/rls-check.out" 2>&1 || rc=$?
expect_eq "... and --config.check fails as the scrape does (exit 1)" "$rc" 1
expect_cmd "... naming it" grep -qF 'row level security hides every row of _private_jobs' "$T/rls-check.out"
psql_do "ALTER ROLE qrel_dlq_inspect BYPASSRLS; ALTER ROLE qrel_dlq_replay BYPASSRLS"

# The dead jobs of each queue as the runners keep them: id and order.
DEAD_billing="SELECT id::text AS id, data->>'order' AS o FROM pgboss.job WHERE name = 'billing_dlq' AND source_name = 'billing' AND state < 'active'"
DEAD_solo="SELECT id::text AS id, data->>'order' AS o FROM pgboss.job WHERE name = 'solo' AND state = 'failed'"
DEAD_mail="SELECT j.id::text AS id, j.payload->>'order' AS o FROM graphile_worker._private_jobs j
  JOIN graphile_worker._private_job_queues q ON q.id = j.job_queue_id WHERE q.queue_name = 'mail' AND j.attempts >= j.max_attempts AND j.locked_at IS NULL"
dead() { local v="DEAD_$1"; echo "${!v}"; }
classes_sql() { # Q: "done not_done unknown" by SQL
  psql_val "SELECT count(*) FILTER (WHERE w.done_at IS NOT NULL) || ' ' || count(*) FILTER (WHERE d.o IS NOT NULL AND w.done_at IS NULL)
            || ' ' || count(*) FILTER (WHERE d.o IS NULL) FROM ($(dead "$1")) d LEFT JOIN work w ON w.order_id = d.o"
}
not_done_ids() { # Q: the ids of its not-done dead jobs, sorted
  psql_val "SELECT d.id FROM ($(dead "$1")) d LEFT JOIN work w ON w.order_id = d.o WHERE d.o IS NOT NULL AND w.done_at IS NULL ORDER BY 1"
}
tables_md5() {
  psql_val "SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM pgboss.job t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM graphile_worker._private_jobs t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM work t)"
}

# ---- inspect and dry run: exact, and changing nothing -----------------------------------------
before=$(tables_md5)
declare -A WANT=([billing]="2 7 1" [solo]="0 2 0" [mail]="1 5 0")
declare -A DLQNAME=([billing]=billing_dlq [solo]=failed [mail]=failed)
declare -A NOT_DONE
for q in billing solo mail; do
  NOT_DONE[$q]=$(not_done_ids "$q")
  rc=0
  DLQ inspect --config.file="$T/inspect.yml" --source=jobs --queue="$q" --format=json > "$T/inspect-$q.json" || rc=$?
  expect_eq "inspect $q: exit 0" "$rc" 0
  expect_eq "inspect $q: done not_done unknown = SQL over the runner's tables ($(classes_sql "$q"))" \
    "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/inspect-$q.json")" "$(classes_sql "$q")"
  expect_eq "... = what the workers made" "$(classes_sql "$q")" "${WANT[$q]}"
  expect_eq "inspect $q: dead-letter queue, origin, deliveries, dead_since, nothing read changes" \
    "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.deliveries.min) \(.deliveries.max) \(.dead_since.oldest != null) \(.read_effect)"' "$T/inspect-$q.json")" \
    "${DLQNAME[$q]} $q 1 1 true null"
  rc=0
  DLQ replay --config.file="$T/inspect.yml" --source=jobs --queue="$q" --format=json > "$T/dry-$q.json" || rc=$?
  expect_eq "dry run $q: exit 0, would move exactly the not-done jobs" \
    "$rc $(jq -r '.replay.would_move[].message_id' "$T/dry-$q.json" | sort | paste -sd' ')" \
    "0 $(paste -sd' ' <<<"${NOT_DONE[$q]}")"
done
expect_eq "inspect and the dry runs left pgboss.job, graphile_worker._private_jobs and work identical" \
  "$(tables_md5)" "$before"

# ---- replay, SIGKILLed after 2 moves, then again ----------------------------------------------
# killed_replay Q: a paced replay of Q (one move a second, so that a loaded machine still sees 2
# moved well before the end) killed once 2 jobs left the dead ones, then a rerun; the
# moves of both runs together are exactly Q's not-done jobs.
killed_replay() {
  local q=$1 n got rc=0 kpid
  n=$(grep -c . <<<"${NOT_DONE[$q]}")
  "$QREL" dlq replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --rate=1/s \
    --format=json > "$T/killed-$q.json" 2>>"$T/dlq.err" &
  kpid=$!
  PIDS+=("$kpid")
  two_moved() { [ "$(psql_val "SELECT count(*) FROM ($(dead "$q")) d WHERE d.id IN ($(sed "s/.*/'&'/" <<<"${NOT_DONE[$q]}" | paste -sd,))")" -le $((n - 2)) ]; }
  expect_cmd "$q: the paced replay moves 2 jobs" wait_for -i 0.02 20 "2 jobs of $q moved" two_moved
  kill -KILL "$kpid"
  wait "$kpid" 2>/dev/null || true
  got=$((n - $(psql_val "SELECT count(*) FROM ($(dead "$q")) d WHERE d.id IN ($(sed "s/.*/'&'/" <<<"${NOT_DONE[$q]}" | paste -sd,))")))
  expect_cmd "$q: killed before the end ($got of $n moved)" test "$got" -lt "$n"
  DLQ replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --format=json > "$T/rerun-$q.json" || rc=$?
  expect_eq "$q: the rerun: exit 0, moved the rest" "$rc $(jq '.replay.moved | length' "$T/rerun-$q.json")" "0 $((n - got))"
  # (b9 and g6 die again as soon as they run: graphile-worker keeps g6's id, so it is left out)
  expect_eq "$q: none of the moved left among the dead ones" \
    "$(psql_val "SELECT count(*) FROM ($(dead "$q")) d WHERE d.o NOT IN ('b9', 'g6') AND d.id IN ($(sed "s/.*/'&'/" <<<"${NOT_DONE[$q]}" | paste -sd,))")" 0
}
killed_replay billing
killed_replay mail

# The workers run what came back: each fail job completes once, each "again" job dies again.
settled() {
  [ "$(psql_val "SELECT count(*) FROM runs")" -ge 10 ] &&
  [ "$(psql_val "SELECT count(*) FROM pgboss.job WHERE name = 'billing' AND state IN ('created', 'retry', 'active')")" = 0 ] &&
  [ "$(psql_val "SELECT count(*) FROM pgboss.job WHERE name = 'billing_dlq' AND data->>'order' = 'b9'")" = 1 ] &&
  [ "$(psql_val "SELECT count(*) FROM graphile_worker._private_jobs j WHERE j.payload->>'order' = 'g6' AND j.attempts >= j.max_attempts AND j.locked_at IS NULL")" = 1 ]
}
expect_cmd "the workers ran every replayed job" wait_for 60 "the replayed jobs to run" settled
expect_eq "each not-done job ran exactly once, by its runner (none lost, none twice)" \
  "$(psql_val "SELECT string_agg(order_id || ':' || runner || ':' || n, ' ' ORDER BY order_id) FROM (SELECT order_id, runner, count(*) AS n FROM runs GROUP BY 1, 2) r")" \
  "b1:pg-boss:1 b2:pg-boss:1 b3:pg-boss:1 b4:pg-boss:1 b5:pg-boss:1 b6:pg-boss:1 g1:graphile-worker:1 g2:graphile-worker:1 g3:graphile-worker:1 g4:graphile-worker:1"
expect_eq "pg-boss: every job put back carried the stamp qrel-replayed: 1 (the worker completes only stamped ones)" \
  "$(psql_val "SELECT count(*) FILTER (WHERE data->>'qrel-replayed' = '1') || ' ' || count(*) FROM pgboss.job WHERE name = 'billing' AND state = 'completed'")" "6 6"
expect_eq "pg-boss: b9 died again and its new dead-letter copy keeps qrel-replayed: 1; the done ones unstamped" \
  "$(psql_val "SELECT string_agg(COALESCE(data->>'order', '-') || '=' || COALESCE(data->>'qrel-replayed', 'none'), ' ' ORDER BY data->>'order') FROM ($DEAD_billing) d JOIN pgboss.job j ON j.id::text = d.id")" \
  "b7=none b8=none b9=1 -=none"
expect_eq "graphile-worker: g6 died again with qrel-replayed: 1 in its payload; g5 (done) unstamped" \
  "$(psql_val "SELECT string_agg(j.payload->>'order' || '=' || COALESCE(j.payload->>'qrel-replayed', 'none'), ' ' ORDER BY j.payload->>'order') FROM ($DEAD_mail) d JOIN graphile_worker._private_jobs j ON j.id::text = d.id")" \
  "g5=none g6=1"

# ---- uniqueness: pg-boss refuses s1 back while its twin holds singletonKey k1 ----------------
rc=0
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=solo --yes --format=json > "$T/solo.json" || rc=$?
s1=$(psql_val "SELECT id FROM ($DEAD_solo) d WHERE o = 's1'")
s2=$(psql_val "SELECT id FROM pgboss.job WHERE name = 'solo' AND data->>'order' = 's2'")
expect_eq "solo: exit 1, s2 moved, s1 failed" \
  "$rc $(jq -r '[.replay.moved[].message_id] + ["/"] + [.replay.failed[].message_id] | join(" ")' "$T/solo.json")" "1 $s2 / $s1"
expect_cmd "... because its twin holds singletonKey k1 under the exclusive policy" \
  bash -c "jq -r '.replay.failed[0].error' '$T/solo.json' | grep -qF 'holds singletonKey \"k1\" under the queue'\''s exclusive policy; left dead, not duplicated'"
expect_eq "... s1 still failed, k1 held by s1 and its twin only" \
  "$(psql_val "SELECT string_agg(data->>'order' || ':' || state, ' ' ORDER BY data->>'order') FROM pgboss.job WHERE name = 'solo' AND singleton_key = 'k1'")" \
  "s1:failed twin:created"
s2_again() { [ "$(psql_val "SELECT state || ':' || (data->>'qrel-replayed') FROM pgboss.job WHERE id = '$s2'")" = "failed:1" ]; }
expect_cmd "s2 died again in its own queue, stamped qrel-replayed: 1" wait_for 30 "s2 to fail again" s2_again

# ---- a second replay moves nothing -------------------------------------------------------------
for q in billing mail solo; do
  rc=0
  DLQ replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --format=json > "$T/again-$q.json" || rc=$?
  want=0
  [ "$q" = solo ] && want=1 # s1 is refused again
  expect_eq "second replay of $q: exit $want, moved nothing" "$rc $(jq '.replay.moved | length' "$T/again-$q.json")" "$want 0"
done

# ---- a job someone else takes while the replay waits for its row: "gone", not moved twice ----
# A session deletes the job without an order from billing_dlq and holds its transaction open; the
# replay's move waits for the row lock (seen in pg_stat_activity, no sleep), then finds it gone.
bx=$(psql_val "SELECT id FROM ($DEAD_billing) d WHERE o IS NULL")
mkfifo "$T/other.sql"
psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$P" -U postgres -d postgres < "$T/other.sql" > "$T/other.out" 2>&1 &
PIDS+=("$!")
OTHER=$!
exec 7> "$T/other.sql"
echo "BEGIN; DELETE FROM pgboss.job WHERE name = 'billing_dlq' AND id = '$bx';" >&7
held() { [ "$(psql_val "SELECT count(*) FROM pg_locks WHERE locktype = 'transactionid' AND mode = 'ExclusiveLock' AND pid IN (SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction')")" -ge 1 ]; }
wait_for 10 "the other session to hold its delete" held
DLQ replay --config.file="$T/replay.yml" --source=jobs --queue=billing --only=unknown --yes --format=json > "$T/gone.json" &
RPID=$!
PIDS+=("$RPID")
waiting() { [ "$(psql_val "SELECT count(*) FROM pg_stat_activity WHERE usename = 'qrel_dlq_replay' AND wait_event_type = 'Lock'")" = 1 ]; }
expect_cmd "the replay's move waits for the row the other session holds" wait_for 10 "the replay to wait on the row" waiting
echo "COMMIT;" >&7
exec 7>&-
wait "$OTHER" 2>/dev/null || true
rc=0
wait "$RPID" || rc=$?
expect_eq "then: exit 0, the job gone, nothing moved" \
  "$rc $(jq -r '[.replay.gone[].message_id] | join(" ")' "$T/gone.json") $(jq '.replay.moved | length' "$T/gone.json")" "0 $bx 0"
expect_eq "... and no job without an order put back on billing" \
  "$(psql_val "SELECT count(*) FROM pgboss.job WHERE name = 'billing' AND data->>'order' IS NULL AND state <> 'failed'")" 0

# ---- pg-boss 9, 10 and 11 ---------------------------------------------------------------------
DEAD_plain9="SELECT id::text AS id, data->>'order' AS o FROM pgboss9.job WHERE name = 'plain9' AND state IN ('failed', 'expired')"
for v in 10 11; do
  declare "DEAD_plain$v=SELECT id::text AS id, data->>'order' AS o FROM pgboss$v.job WHERE name = 'plain$v' AND state = 'failed'"
  declare "DEAD_bill$v=SELECT id::text AS id, data->>'order' AS o FROM pgboss$v.job WHERE name = 'bill${v}_dlq' AND state < 'active'"
done
legacy_md5() {
  psql_val "SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM pgboss9.job t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM pgboss10.job t) || ' ' ||
    (SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM pgboss11.job t)"
}
before=$(legacy_md5)
WANT=([plain9]="1 2 0" [plain10]="1 1 0" [bill10]="1 2 0" [plain11]="1 1 0" [bill11]="1 2 0")
# deliveries: retry_count + 1; a 10 copy carries the original's retry_limit (+ 1), an 11 one nothing
declare -A SEEN=([plain9]="failed 1 1" [plain10]="failed 1 1" [bill10]="bill10_dlq 1 1"
  [plain11]="failed 1 1" [bill11]="bill11_dlq null null")
for q in $LEGACY; do
  NOT_DONE[$q]=$(not_done_ids "$q")
  rc=0
  DLQ inspect --config.file="$T/inspect.yml" --source=jobs --queue="$q" --format=json > "$T/inspect-$q.json" || rc=$?
  sql=$(classes_sql "$q")
  expect_eq "inspect $q: exit 0, done not_done unknown = SQL ($sql) = what the workers made" \
    "$rc $(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/inspect-$q.json") $sql" \
    "0 ${WANT[$q]} ${WANT[$q]}"
  expect_eq "inspect $q: dead-letter queue, deliveries, dead_since, nothing read changes" \
    "$(jq -r '"\(.dead_letter_queue) \(.deliveries.min) \(.deliveries.max) \(.dead_since.oldest != null) \(.read_effect)"' "$T/inspect-$q.json")" \
    "${SEEN[$q]} true null"
  rc=0
  DLQ replay --config.file="$T/inspect.yml" --source=jobs --queue="$q" --format=json > "$T/dry-$q.json" || rc=$?
  expect_eq "dry run $q: exit 0, would move exactly the not-done jobs" \
    "$rc $(jq -r '.replay.would_move[].message_id' "$T/dry-$q.json" | sort | paste -sd' ')" \
    "0 $(paste -sd' ' <<<"${NOT_DONE[$q]}")"
done
expect_eq "pg-boss 9-11: inspect and the dry runs left every job table identical" "$(legacy_md5)" "$before"

p3=$(psql_val "SELECT id FROM ($DEAD_plain9) d WHERE o = '9p3'")
for q in $LEGACY; do
  rc=0
  DLQ replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --format=json > "$T/replay-$q.json" || rc=$?
  want=$(grep -v "^$p3\$" <<<"${NOT_DONE[$q]}" | paste -sd' ')
  if [ "$q" = plain9 ]; then
    expect_eq "replay plain9: exit 1, moved 9p1, 9p3 failed" \
      "$rc $(jq -r '[.replay.moved[].message_id] + ["/"] + [.replay.failed[].message_id] | join(" ")' "$T/replay-$q.json")" "1 $want / $p3"
    expect_cmd "... because twin9 holds singletonKey k9 (pg-boss 9's unique index)" bash -c \
      "jq -r '.replay.failed[0].error' '$T/replay-$q.json' | grep -qF 'holds its singletonKey slot (singletonKey \"k9\"), which pg-boss 9'\''s unique index gives one job; left dead, not duplicated'"
  else
    expect_eq "replay $q: exit 0, moved exactly the not-done jobs" \
      "$rc $(jq -r '.replay.moved[].message_id' "$T/replay-$q.json" | sort | paste -sd' ')" "0 $want"
  fi
done
legacy_ran() { [ "$(psql_val "SELECT count(*) FROM runs WHERE runner LIKE 'pg-boss-%'")" -ge 7 ]; }
expect_cmd "each release's worker ran the replayed jobs" wait_for 60 "the replayed pg-boss 9-11 jobs to run" legacy_ran
expect_eq "each not-done job ran exactly once, by its release (9p3 not at all)" \
  "$(psql_val "SELECT string_agg(order_id || ':' || runner || ':' || n, ' ' ORDER BY order_id) FROM (SELECT order_id, runner, count(*) AS n FROM runs WHERE runner LIKE 'pg-boss-%' GROUP BY 1, 2) r")" \
  "10b1:pg-boss-10:1 10b2:pg-boss-10:1 10p1:pg-boss-10:1 11b1:pg-boss-11:1 11b2:pg-boss-11:1 11p1:pg-boss-11:1 9p1:pg-boss-9:1"
expect_eq "the completed jobs carry qrel-replayed: 1 in data (9, 10, 11)" \
  "$(psql_val "SELECT string_agg(c, ' ' ORDER BY c) FROM (SELECT count(*) FILTER (WHERE data->>'qrel-replayed' = '1') || '/' || count(*) AS c FROM pgboss9.job WHERE state = 'completed'
    UNION ALL SELECT count(*) FILTER (WHERE data->>'qrel-replayed' = '1') || '/' || count(*) FROM pgboss10.job WHERE state = 'completed'
    UNION ALL SELECT count(*) FILTER (WHERE data->>'qrel-replayed' = '1') || '/' || count(*) FROM pgboss11.job WHERE state = 'completed') x")" \
  "1/1 3/3 3/3"
expect_eq "9p3 still failed beside its twin; the copies' dead-letter queues empty of not-done ones" \
  "$(psql_val "SELECT (SELECT string_agg(data->>'order' || ':' || state, ' ' ORDER BY data->>'order') FROM pgboss9.job WHERE singletonkey = 'k9')
    || ' ' || (SELECT string_agg(data->>'order', ' ' ORDER BY data->>'order') FROM pgboss10.job WHERE name = 'bill10_dlq')
    || ' ' || (SELECT string_agg(data->>'order', ' ' ORDER BY data->>'order') FROM pgboss11.job WHERE name = 'bill11_dlq')")" \
  "9p3:failed twin9:created 10b3 11b3"
for q in $LEGACY; do
  rc=0
  DLQ replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --format=json > "$T/again-$q.json" || rc=$?
  want=0
  [ "$q" = plain9 ] && want=1 # 9p3 is refused again
  expect_eq "second replay of $q: exit $want, moved nothing" "$rc $(jq '.replay.moved | length' "$T/again-$q.json")" "$want 0"
done

finish
