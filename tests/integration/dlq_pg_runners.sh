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
  GRANT USAGE ON SCHEMA pgboss, graphile_worker TO qrel_dlq_inspect;
  GRANT SELECT ON pgboss.queue, pgboss.job, graphile_worker._private_jobs,
    graphile_worker._private_job_queues, work TO qrel_dlq_inspect;
  CREATE ROLE qrel_dlq_replay LOGIN IN ROLE qrel_dlq_inspect;
  GRANT INSERT, UPDATE, DELETE ON pgboss.job TO qrel_dlq_replay;
  GRANT UPDATE ON graphile_worker._private_jobs TO qrel_dlq_replay"
config() { # FILE ROLE
  cat > "$1" <<YML
sources:
$(pg_source jobs "$P" "$2")
    queues:
      - preset: pg_boss
        queues: [billing, solo]
      - preset: graphile_worker
        queues: [mail]
dead_letters:
YML
  for q in billing solo mail; do
    printf '  - {source: jobs, queue: %s, id_field: order,\n' "$q" >> "$1"
    printf '     work_table: {source: jobs, table: work, id_column: order_id, done_column: done_at}}\n' >> "$1"
  done
}
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
  "bad-id.yml:16:43: id_field: want job:id (the job's id) or job:key (its uniqueness key) after \"job:\"" "$T/bad-id.err"
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
# killed_replay Q: a paced replay of Q killed once 2 jobs left the dead ones, then a rerun; the
# moves of both runs together are exactly Q's not-done jobs.
killed_replay() {
  local q=$1 n got rc=0 kpid
  n=$(grep -c . <<<"${NOT_DONE[$q]}")
  "$QREL" dlq replay --config.file="$T/replay.yml" --source=jobs --queue="$q" --yes --rate=2/s \
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

finish
