#!/usr/bin/env bash
# The `queues` section of kind: postgres against a real PostgreSQL: every preset's schema is
# loaded from tests/fixtures/postgres/queues (written from each runner's documented layout), jobs are
# put in every state with known ages, attempts and locks, and one `qrel scrape` must give exactly
# the expected series per preset: counts by state, oldest ages to the second, redeliveries, dead
# jobs, max deliveries and the lease, and no series where the runner records nothing (the pgmq
# archive is not a dead-letter queue). Rails and Ecto timestamps are UTC without a time zone, so
# the database runs with a non-UTC TimeZone to prove they are read as UTC. Also: a held Que
# advisory lock counts as in flight (one in another database does not); pg-boss 9's layout is
# detected beside pg-boss 10's; the queues filter (a listed queue without jobs gives zeros);
# --config.check passing and naming a missing table; promtool on the output. Then `qrel dlq` on
# River, Oban, Que, GoodJob and Solid Queue: inspect's classes equal SQL, inspect and a dry run
# change no row (md5), a replay moves exactly the not-done jobs back to the state the runner's own
# retry leaves, stamped qrel-replayed: 1 (read back once the job dies again), a second moves none. The real runners
# (pg-boss 9-12, graphile-worker), driven through their own APIs, are postgres_queues_live.sh.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

FIX=$QREL_SOURCE_DIR/tests/fixtures/postgres/queues
start_postgres P
psql_do "ALTER DATABASE postgres SET timezone = 'America/New_York'"

for f in pgmq graphile_worker pg_boss pg_boss_9 river oban que good_job solid_queue; do
  psql_do < "$FIX/$f.sql" >/dev/null
done

# The ages below are read against the moment the rows were written: their slack is the time
# from the first row written to the scrape's end, measured, not a guess that a loaded machine
# can outrun.
rows_written_ms=$(now_ms)
psql_do <<'SQL' >/dev/null
-- pgmq: orders has two ready (one read 3 times), two in flight (read, vt ahead), one delayed
-- (never read, vt ahead); empty has nothing; ignored is left out by the filter.
SELECT pgmq.pgmq_fixture_queue('orders');
SELECT pgmq.pgmq_fixture_queue('empty');
SELECT pgmq.pgmq_fixture_queue('ignored');
INSERT INTO pgmq.q_orders (enqueued_at, vt, read_ct) VALUES
  (now() - interval '300 s', now() - interval '10 s', 0),
  (now() - interval '200 s', now() + interval '20 s', 2),
  (now() - interval '100 s', now() + interval '5 s', 1),
  (now() - interval '50 s', now() + interval '600 s', 0),
  (now() - interval '400 s', now() - interval '1 s', 3);
INSERT INTO pgmq.a_orders (msg_id, enqueued_at, vt, read_ct) VALUES (99, now() - interval '900 s', now(), 1);
INSERT INTO pgmq.q_ignored (vt) VALUES (now());

-- graphile-worker: queue mail, and a job without a queue.
INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('send');
INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES ('mail');
INSERT INTO graphile_worker._private_jobs (task_id, job_queue_id, run_at, attempts, max_attempts, created_at, updated_at, locked_at) VALUES
  (1, NULL, now() - interval '5 s', 0, 25, now() - interval '120 s', now(), NULL),
  (1, 1, now() - interval '300 s', 2, 25, now() - interval '300 s', now(), now() - interval '40 s'),
  (1, 1, now() + interval '60 s', 1, 25, now() - interval '200 s', now(), NULL),
  (1, 1, now() - interval '100 s', 5, 5, now() - interval '250 s', now() - interval '90 s', NULL),
  (1, 1, now() - interval '5 h', 1, 25, now() - interval '6 h', now(), now() - interval '5 h'),
  (1, 1, now(), 0, 25, now() - interval '30 s', now(), NULL);

-- pg-boss: billing (watched) and reports (filtered out); every job's queue has its queue row
-- (pg-boss's foreign key), with no retry settings (so no retry horizon).
INSERT INTO pgboss.queue (name) VALUES ('billing'), ('reports');
INSERT INTO pgboss.job (name, state, start_after, created_on, retry_count, retry_limit, started_on, expire_in, completed_on) VALUES
  ('billing', 'created', now() - interval '1 s', now() - interval '50 s', 0, 2, NULL, interval '15 min', NULL),
  ('billing', 'retry', now() + interval '30 s', now() - interval '60 s', 1, 2, NULL, interval '15 min', NULL),
  ('billing', 'active', now() - interval '80 s', now() - interval '80 s', 0, 2, now() - interval '70 s', interval '2 min', NULL),
  ('billing', 'failed', now() - interval '900 s', now() - interval '900 s', 2, 2, now() - interval '600 s', interval '15 min', now() - interval '500 s'),
  ('billing', 'completed', now() - interval '900 s', now() - interval '9000 s', 0, 2, now() - interval '600 s', interval '15 min', now() - interval '500 s'),
  ('billing', 'created', now() - interval '1 s', now() - interval '10 s', 0, 4, NULL, interval '15 min', NULL),
  ('reports', 'created', now(), now() - interval '5000 s', 0, 2, NULL, interval '15 min', NULL);

-- pg-boss 9 (schema pgboss9): billing9, with an expired and a failed job, and an internal
-- completion job that is not the application's.
INSERT INTO pgboss9.job (name, state, createdon, startedon, completedon) VALUES
  ('billing9', 'created', now() - interval '33 s', NULL, NULL),
  ('billing9', 'active', now() - interval '50 s', now() - interval '11 s', NULL),
  ('billing9', 'expired', now() - interval '700 s', now() - interval '650 s', now() - interval '600 s'),
  ('billing9', 'failed', now() - interval '200 s', now() - interval '150 s', now() - interval '100 s'),
  ('__state__completed__billing9', 'created', now() - interval '9000 s', NULL, NULL);

-- River: queue default.
INSERT INTO river_job (kind, queue, state, attempt, max_attempts, created_at, attempted_at, scheduled_at, finalized_at) VALUES
  ('k', 'default', 'available', 0, 10, now() - interval '60 s', NULL, now(), NULL),
  ('k', 'default', 'running', 2, 25, now() - interval '100 s', now() - interval '15 s', now(), NULL),
  ('k', 'default', 'retryable', 1, 25, now() - interval '30 s', now() - interval '20 s', now() + interval '1 min', NULL),
  ('k', 'default', 'scheduled', 0, 25, now() - interval '30 s', NULL, now() + interval '1 h', NULL),
  ('k', 'default', 'discarded', 25, 25, now() - interval '2000 s', now() - interval '1000 s', now(), now() - interval '1000 s'),
  ('k', 'default', 'completed', 1, 25, now() - interval '5000 s', now() - interval '10 s', now(), now() - interval '5 s'),
  -- finished within the 5 min window after 2 s; one after 50 s but 10 min ago (out of the
  -- window); one stamped an hour ahead (clock skew: not in a window bounded by now())
  ('k', 'default', 'completed', 1, 25, now() - interval '60 s', now() - interval '12 s', now(), now() - interval '10 s'),
  ('k', 'default', 'completed', 1, 25, now() - interval '900 s', now() - interval '650 s', now(), now() - interval '600 s'),
  ('k', 'default', 'completed', 1, 25, now(), now() + interval '3500 s', now(), now() + interval '3600 s');

-- Oban: queue events; timestamps in UTC without a zone.
INSERT INTO oban_jobs (worker, queue, state, attempt, inserted_at, scheduled_at, attempted_at, discarded_at, cancelled_at) VALUES
  ('W', 'events', 'available', 0, timezone('UTC', now()) - interval '45 s', timezone('UTC', now()), NULL, NULL, NULL),
  ('W', 'events', 'executing', 1, timezone('UTC', now()) - interval '20 s', timezone('UTC', now()), timezone('UTC', now()) - interval '8 s', NULL, NULL),
  ('W', 'events', 'scheduled', 0, timezone('UTC', now()) - interval '5000 s', timezone('UTC', now()) + interval '1 h', NULL, NULL, NULL),
  ('W', 'events', 'discarded', 20, timezone('UTC', now()) - interval '900 s', timezone('UTC', now()), timezone('UTC', now()) - interval '310 s', timezone('UTC', now()) - interval '300 s', NULL),
  ('W', 'events', 'cancelled', 1, timezone('UTC', now()) - interval '9000 s', timezone('UTC', now()), NULL, NULL, timezone('UTC', now())),
  ('W', 'events', 'suspended', 0, timezone('UTC', now()) - interval '7000 s', timezone('UTC', now()), NULL, NULL, NULL);
-- Oban: finished within the window after 3 s and 1 s, and one stamped in the future.
INSERT INTO oban_jobs (worker, queue, state, attempt, inserted_at, attempted_at, completed_at) VALUES
  ('W', 'events', 'completed', 1, timezone('UTC', now()) - interval '60 s', timezone('UTC', now()) - interval '23 s', timezone('UTC', now()) - interval '20 s'),
  ('W', 'events', 'completed', 1, timezone('UTC', now()) - interval '60 s', timezone('UTC', now()) - interval '31 s', timezone('UTC', now()) - interval '30 s'),
  ('W', 'events', 'completed', 1, timezone('UTC', now()), timezone('UTC', now()) + interval '3000 s', timezone('UTC', now()) + interval '3600 s');

-- Que: queue mailers; job 2 gets locked by a worker session below.
INSERT INTO que_jobs (id, job_class, queue, run_at, error_count, expired_at, finished_at, job_schema_version) VALUES
  (1, 'J', 'mailers', now() - interval '30 s', 0, NULL, NULL, 2),
  (2, 'J', 'mailers', now() - interval '90 s', 0, NULL, NULL, 2),
  (3, 'J', 'mailers', now() + interval '100 s', 0, NULL, NULL, 2),
  (4, 'J', 'mailers', now() - interval '10 s', 2, NULL, NULL, 2),
  (5, 'J', 'mailers', now() - interval '800 s', 15, now() - interval '700 s', NULL, 2),
  (6, 'J', 'mailers', now() - interval '9000 s', 0, NULL, now(), 2);

-- GoodJob: queue gj.
INSERT INTO good_jobs (queue_name, scheduled_at, performed_at, finished_at, error, created_at, updated_at, executions_count) VALUES
  ('gj', timezone('UTC', now()) - interval '5 s', NULL, NULL, NULL, timezone('UTC', now()) - interval '25 s', timezone('UTC', now()), 0),
  ('gj', timezone('UTC', now()) - interval '40 s', timezone('UTC', now()) - interval '12 s', NULL, NULL, timezone('UTC', now()) - interval '40 s', timezone('UTC', now()), 2),
  ('gj', timezone('UTC', now()) + interval '1 h', NULL, NULL, NULL, timezone('UTC', now()) - interval '3000 s', timezone('UTC', now()), 0),
  ('gj', timezone('UTC', now()) - interval '300 s', timezone('UTC', now()) - interval '250 s', timezone('UTC', now()) - interval '200 s', 'boom', timezone('UTC', now()) - interval '300 s', timezone('UTC', now()), 3),
  ('gj', timezone('UTC', now()) - interval '9000 s', timezone('UTC', now()) - interval '9000 s', timezone('UTC', now()) - interval '8000 s', NULL, timezone('UTC', now()) - interval '9000 s', timezone('UTC', now()), 1),
  ('gj', timezone('UTC', now()) - interval '40 s', timezone('UTC', now()) - interval '30 s', timezone('UTC', now()) - interval '25 s', NULL, timezone('UTC', now()) - interval '40 s', timezone('UTC', now()), 1);

-- Solid Queue: queue sq, one job per execution table.
INSERT INTO solid_queue_jobs (id, queue_name, class_name, created_at, updated_at) VALUES
  (1, 'sq', 'J', timezone('UTC', now()) - interval '33 s', timezone('UTC', now())),
  (2, 'sq', 'J', timezone('UTC', now()) - interval '70 s', timezone('UTC', now())),
  (3, 'sq', 'J', timezone('UTC', now()) - interval '5000 s', timezone('UTC', now())),
  (4, 'sq', 'J', timezone('UTC', now()) - interval '5000 s', timezone('UTC', now())),
  (5, 'sq', 'J', timezone('UTC', now()) - interval '900 s', timezone('UTC', now()));
INSERT INTO solid_queue_ready_executions (job_id, queue_name, created_at) VALUES (1, 'sq', timezone('UTC', now()));
INSERT INTO solid_queue_claimed_executions (job_id, created_at) VALUES (2, timezone('UTC', now()) - interval '21 s');
INSERT INTO solid_queue_scheduled_executions (job_id, queue_name, scheduled_at, created_at) VALUES (3, 'sq', timezone('UTC', now()) + interval '1 h', timezone('UTC', now()));
INSERT INTO solid_queue_blocked_executions (job_id, queue_name, concurrency_key, expires_at, created_at) VALUES (4, 'sq', 'k', timezone('UTC', now()) + interval '1 h', timezone('UTC', now()));
INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES (5, 'boom', timezone('UTC', now()) - interval '400 s');
SQL

# A Que worker holds job 2 by a session advisory lock for as long as the scrape takes; a lock on
# the number 1 in another database of the cluster is not about this que_jobs table.
psql_do "CREATE DATABASE other" >/dev/null
LOCKERS=()
for lock in postgres:2 other:1; do
  psql -X -q -h 127.0.0.1 -p "$P" -U postgres -d "${lock%:*}" \
    -c "SELECT pg_advisory_lock(${lock#*:}::bigint), pg_sleep(120)" >/dev/null 2>&1 &
  LOCKERS+=($!)
  PIDS+=($!)
done
two_locks() { [ "$(psql_val "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted")" = 2 ]; }
wait_for 15 "the two advisory locks to be granted" two_locks || true

cat > "$T/qrel.yml" <<YML
sources:
$(pg_source jobs "$P")
    queues:
      - preset: pgmq
        queues: [orders, empty]
        visibility_timeout: 30s
        max_deliveries: 3
      - preset: graphile_worker
      - preset: pg_boss
        queues: [billing, idle]
      - preset: pg_boss
        schema: pgboss9
      - preset: river
        job_timeout: 1m
      - preset: oban
      - preset: que
        max_deliveries: 16
      - preset: good_job
        job_timeout: 10m
      - preset: solid_queue
YML

"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.err" || { cat "$T/scrape.err" >&2; exit 1; }
age_slack=$((($(now_ms) - rows_written_ms) / 1000 + 2))
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="jobs"' 'kind="postgres"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# age FILE NAME LOW [labels...]: an age of LOW s when the rows were written, read up to
# $age_slack s later.
age() {
  local file=$1 name=$2 lo=$3; shift 3
  expect_between "$name{$*}" "$(mval "$file" "$name" "$@")" "$lo" "$((lo + age_slack))"
}

# check_dead FILE LABELS DLQ COUNT OLDEST [MAX]: COUNT dead letters in DLQ, the oldest OLDEST s old
# (age); with MAX, a job is given up after MAX deliveries.
check_dead() {
  expect_metric "$1" "$4" qrel_dead_letter_messages "$2" "dead_letter_queue=\"$3\""
  age "$1" qrel_dead_letter_oldest_age_seconds "$5" "$2"
  [ $# -lt 6 ] || expect_metric "$1" "$6" qrel_max_deliveries "$2"
}

# check_lease FILE LABELS TIMEOUT HOLD: a lease timeout of TIMEOUT s, the oldest hold HOLD s (age).
check_lease() {
  expect_metric "$1" "$3" qrel_lease_timeout_seconds "$2"
  age "$1" qrel_lease_oldest_age_seconds "$4" "$2"
}

# check_queue FILE KIND QUEUE READY IN_FLIGHT DELAYED OLDEST REDELIVERED
check_queue() {
  local f=$1 q="kind=\"$2\",queue=\"$3\""
  expect_metric "$f" "$4" qrel_queue_messages "$q" 'state="ready"'
  expect_metric "$f" "$5" qrel_queue_messages "$q" 'state="in_flight"'
  expect_metric "$f" "$6" qrel_queue_messages "$q" 'state="delayed"'
  age "$f" qrel_queue_oldest_message_age_seconds "$7" "$q"
  if [ "$8" = - ]; then expect_absent "$f" qrel_messages_redelivered "$q"
  else expect_metric "$f" "$8" qrel_messages_redelivered "$q"; fi
}

# --- pgmq
check_queue "$T/m.txt" pgmq orders 2 2 1 400 2
o='kind="pgmq",queue="orders"'
expect_metric "$T/m.txt" 3 qrel_max_deliveries "$o"
check_lease "$T/m.txt" "$o" 30 25
expect_absent "$T/m.txt" qrel_dead_letter_messages "$o"
check_queue "$T/m.txt" pgmq empty 0 0 0 0 0
expect_metric "$T/m.txt" 0 qrel_lease_oldest_age_seconds 'queue="empty"'
expect_absent "$T/m.txt" qrel_queue_messages 'queue="ignored"'

# --- graphile-worker (the job locked 5 h ago is past the 4 h lock lifetime: ready again)
check_queue "$T/m.txt" pg_jobs mail 2 1 1 21600 1
o='kind="pg_jobs",queue="mail"'
check_dead "$T/m.txt" "$o" failed 1 90 25
check_lease "$T/m.txt" "$o" 14400 40
check_queue "$T/m.txt" pg_jobs '(none)' 1 0 0 120 0

# --- pg-boss (min expire_in over pending jobs; reports filtered out)
check_queue "$T/m.txt" pg_jobs billing 2 1 1 80 1
o='kind="pg_jobs",queue="billing"'
check_dead "$T/m.txt" "$o" failed 1 500 5
check_lease "$T/m.txt" "$o" 120 70
expect_absent "$T/m.txt" qrel_queue_messages 'queue="reports"'
check_queue "$T/m.txt" pg_jobs idle 0 0 0 0 0 # listed, no job at all: zeros, not absence
expect_metric "$T/m.txt" 0 qrel_dead_letter_messages 'queue="idle"'

# --- pg-boss 9 (detected by its column names; expired and failed are both dead)
check_queue "$T/m.txt" pg_jobs billing9 1 1 0 50 0
o='kind="pg_jobs",queue="billing9"'
check_dead "$T/m.txt" "$o" failed 2 600 1
check_lease "$T/m.txt" "$o" 900 11
expect_absent "$T/m.txt" qrel_queue_messages 'queue="__state__completed__billing9"'

# approx FILE WANT NAME labels...: a figure computed in floating point, to 1e-9.
approx() {
  local f=$1 want=$2 name=$3; shift 3
  local got; got=$(mval "$f" "$name" "$@")
  expect_cmd "$name{$*} = $want (got $got)" awk -v g="$got" -v w="$want" \
    'BEGIN { d = g - w; exit !(g != "" && d < 1e-9 && d > -1e-9) }'
}
# quantiles FILE QUEUE P50 P90 P99 MAX: the handler quantiles of the finished jobs in the window.
quantiles() {
  local f=$1 q="kind=\"pg_jobs\",queue=\"$2\""
  approx "$f" "$3" qrel_handler_duration_seconds "$q" 'quantile="0.5"'
  approx "$f" "$4" qrel_handler_duration_seconds "$q" 'quantile="0.9"'
  approx "$f" "$5" qrel_handler_duration_seconds "$q" 'quantile="0.99"'
  approx "$f" "$6" qrel_handler_duration_seconds "$q" 'quantile="1"'
}
# margin FILE QUEUE LEASE: lease / max(p99, hold), from the same scrape's values (the hold moves).
margin() {
  local f=$1 q="kind=\"pg_jobs\",queue=\"$2\"" hold p99 got
  hold=$(mval "$f" qrel_lease_oldest_age_seconds "$q")
  p99=$(mval "$f" qrel_handler_duration_seconds "$q" 'quantile="0.99"')
  got=$(mval "$f" qrel_lease_margin_ratio "$q")
  expect_cmd "qrel_lease_margin_ratio{$q} = $3 / max(p99 $p99, hold $hold) (got $got)" \
    awk -v m="$got" -v l="$3" -v p="$p99" -v h="$hold" \
    'BEGIN { w = p > h ? p : h; exit !(m > 0 && (m - l / w) / m < 1e-9 && (l / w - m) / m < 1e-9) }'
}

# --- River (finished in the window after 5 s and 2 s; the 15 s hold, longer than the p99, gives
# the margin 60 / 15)
check_queue "$T/m.txt" pg_jobs default 1 1 2 100 1
o='kind="pg_jobs",queue="default"'
quantiles "$T/m.txt" default 3.5 4.7 4.97 5
margin "$T/m.txt" default 60
# River's default retry policy: 25 deliveries x the 60 s job_timeout + 1.1 x sum of n^4 for the
# 24 retries (1,763,020 s, jitter at its upper bound)
approx "$T/m.txt" 1940822 qrel_retry_horizon_seconds "$o"
check_dead "$T/m.txt" "$o" discarded 1 1000 25
check_lease "$T/m.txt" "$o" 60 15

# --- Oban (no lease declared: no lease timeout, no margin; a suspended job waits)
check_queue "$T/m.txt" pg_jobs events 1 1 2 45 0
o='kind="pg_jobs",queue="events"'
quantiles "$T/m.txt" events 2 2.8 2.98 3
expect_absent "$T/m.txt" qrel_lease_margin_ratio "$o"
expect_absent "$T/m.txt" qrel_retry_horizon_seconds "$o" # no job_timeout: no horizon
check_dead "$T/m.txt" "$o" discarded 1 300 20
age "$T/m.txt" qrel_lease_oldest_age_seconds 8 "$o"
expect_absent "$T/m.txt" qrel_lease_timeout_seconds "$o"

# --- Que (in flight by its advisory lock; no hold time, no max attempts in the table)
check_queue "$T/m.txt" pg_jobs mailers 2 1 1 90 1
o='kind="pg_jobs",queue="mailers"'
check_dead "$T/m.txt" "$o" expired 1 700 16
expect_absent "$T/m.txt" qrel_lease_oldest_age_seconds "$o"

# --- GoodJob (one job finished without error in the window, after 5 s: margin 600 / 12 s hold)
check_queue "$T/m.txt" pg_jobs gj 1 1 1 40 1
o='kind="pg_jobs",queue="gj"'
quantiles "$T/m.txt" gj 5 5 5 5
margin "$T/m.txt" gj 600
check_dead "$T/m.txt" "$o" discarded 1 200
check_lease "$T/m.txt" "$o" 600 12
expect_absent "$T/m.txt" qrel_max_deliveries "$o"

# --- Solid Queue (no attempt count: no redelivered series)
check_queue "$T/m.txt" pg_jobs sq 1 1 2 70 -
o='kind="pg_jobs",queue="sq"'
check_dead "$T/m.txt" "$o" failed 1 400
age "$T/m.txt" qrel_lease_oldest_age_seconds 21 "$o"

# --- rows ahead of now(): River's and Oban's completion an hour ahead above, none elsewhere;
# none exported where the runner stamps with now() (pg-boss, Que) or for pgmq
for q in default:1 events:1 mail:0 gj:0 sq:0; do
  expect_metric "$T/m.txt" "${q#*:}" qrel_future_stamped_rows "kind=\"pg_jobs\",queue=\"${q%:*}\""
done
for q in billing billing9 mailers orders; do
  expect_absent "$T/m.txt" qrel_future_stamped_rows "queue=\"$q\""
done

kill "${LOCKERS[@]}" 2>/dev/null || true

# --- qrel dlq on River, Oban, Que, GoodJob and Solid Queue (schema fixtures, no live runner): per
# runner a done and a not-done dead job beside the one above (no order id: unknown), made dead as
# the runner leaves them; Solid Queue by job:id, with job 7 carrying a concurrency key.
psql_do <<'SQL' >/dev/null
CREATE TABLE dlq_work (id text PRIMARY KEY);
INSERT INTO dlq_work VALUES ('r1'), ('o1'), ('q1'), ('g1'), ('6');
INSERT INTO river_job (kind, queue, state, attempt, max_attempts, attempted_at, finalized_at, args) VALUES
  ('k', 'default', 'discarded', 3, 3, now() - interval '70 s', now() - interval '60 s', '{"order": "r1"}'),
  ('k', 'default', 'discarded', 3, 3, now() - interval '70 s', now() - interval '60 s', '{"order": "r2"}');
INSERT INTO oban_jobs (worker, queue, state, attempt, max_attempts, attempted_at, discarded_at, args) VALUES
  ('W', 'events', 'discarded', 3, 3, timezone('UTC', now()) - interval '70 s', timezone('UTC', now()) - interval '60 s', '{"order": "o1"}'),
  ('W', 'events', 'discarded', 3, 3, timezone('UTC', now()) - interval '70 s', timezone('UTC', now()) - interval '60 s', '{"order": "o2"}');
INSERT INTO que_jobs (id, job_class, queue, run_at, error_count, expired_at, args, job_schema_version) VALUES
  (7, 'J', 'mailers', now() - interval '100 s', 15, now() - interval '60 s', '["q1"]', 2),
  (8, 'J', 'mailers', now() - interval '100 s', 15, now() - interval '60 s', '["q2"]', 2);
INSERT INTO good_jobs (queue_name, scheduled_at, performed_at, finished_at, error, created_at, updated_at, executions_count, serialized_params) VALUES
  ('gj', timezone('UTC', now()) - interval '100 s', timezone('UTC', now()) - interval '70 s', timezone('UTC', now()) - interval '60 s', 'boom', timezone('UTC', now()) - interval '100 s', timezone('UTC', now()), 3, '{"job_class": "J", "arguments": ["g1"], "executions": 3}'),
  ('gj', timezone('UTC', now()) - interval '100 s', timezone('UTC', now()) - interval '70 s', timezone('UTC', now()) - interval '60 s', 'boom', timezone('UTC', now()) - interval '100 s', timezone('UTC', now()), 3, '{"job_class": "J", "arguments": ["g2"], "executions": 3}');
INSERT INTO solid_queue_jobs (id, queue_name, class_name, concurrency_key, created_at, updated_at) VALUES
  (6, 'sq', 'J', NULL, timezone('UTC', now()), timezone('UTC', now())),
  (7, 'sq', 'J', 'k7', timezone('UTC', now()), timezone('UTC', now()));
INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES
  (6, 'boom', timezone('UTC', now()) - interval '60 s'), (7, 'boom', timezone('UTC', now()) - interval '60 s');
SQL
cat > "$T/dlq.yml" <<YML
sources:
$(pg_source jobs "$P")
    queues:
      - {preset: river, queues: [default]}
      - {preset: oban, queues: [events]}
      - {preset: que, queues: [mailers]}
      - {preset: good_job, queues: [gj]}
      - {preset: solid_queue, queues: [sq]}
dead_letters:
YML
for e in default:order events:order mailers:0 gj:arguments.0 sq:job:id; do
  printf '  - {source: jobs, queue: %s, id_field: "%s", work_table: {source: jobs, table: dlq_work, id_column: id}}\n' \
    "${e%%:*}" "${e#*:}" >> "$T/dlq.yml"
done
# The dead jobs of each queue as the runner keeps them: id and work id.
declare -A DEAD=(
  [default]="SELECT id::text AS id, args->>'order' AS o FROM river_job WHERE queue = 'default' AND state = 'discarded'"
  [events]="SELECT id::text AS id, args->>'order' AS o FROM oban_jobs WHERE queue = 'events' AND state = 'discarded'"
  [mailers]="SELECT id::text AS id, args->>0 AS o FROM que_jobs WHERE queue = 'mailers' AND expired_at IS NOT NULL AND finished_at IS NULL"
  [gj]="SELECT id::text AS id, serialized_params #>> '{arguments,0}' AS o FROM good_jobs WHERE queue_name = 'gj' AND finished_at IS NOT NULL AND error IS NOT NULL"
  [sq]="SELECT j.id::text AS id, j.id::text AS o FROM solid_queue_failed_executions f JOIN solid_queue_jobs j ON j.id = f.job_id WHERE j.queue_name = 'sq'")
dclasses() { # Q: "done not_done unknown" by SQL
  psql_val "SELECT count(*) FILTER (WHERE w.id IS NOT NULL) || ' ' || count(*) FILTER (WHERE d.o IS NOT NULL AND w.id IS NULL)
            || ' ' || count(*) FILTER (WHERE d.o IS NULL) FROM (${DEAD[$1]}) d LEFT JOIN dlq_work w ON w.id = d.o"
}
dnot_done() { # Q: the ids of its not-done dead jobs, sorted
  psql_val "SELECT d.id FROM (${DEAD[$1]}) d LEFT JOIN dlq_work w ON w.id = d.o WHERE d.o IS NOT NULL AND w.id IS NULL ORDER BY 1" | paste -sd' '
}
runners_md5() {
  psql_val "SELECT md5(string_agg(t, '|' ORDER BY t)) FROM (SELECT r::text AS t FROM river_job r UNION ALL SELECT o::text FROM oban_jobs o
    UNION ALL SELECT q::text FROM que_jobs q UNION ALL SELECT g::text FROM good_jobs g UNION ALL SELECT f::text FROM solid_queue_failed_executions f
    UNION ALL SELECT e::text FROM solid_queue_ready_executions e UNION ALL SELECT s::text FROM solid_queue_jobs s) x"
}
declare -A DWANT=([default]="1 1 1" [events]="1 1 1" [mailers]="1 1 1" [gj]="1 1 1" [sq]="1 2 0")
declare -A DNOT
before=$(runners_md5)
for q in default events mailers gj sq; do
  DNOT[$q]=$(dnot_done "$q")
  "$QREL" dlq inspect --config.file="$T/dlq.yml" --source=jobs --queue="$q" --format=json > "$T/di-$q.json" 2>>"$T/dlq.err" ||
    { cat "$T/dlq.err" >&2; exit 1; }
  expect_eq "dlq inspect $q: done not_done unknown = SQL over the runner's tables" \
    "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown)"' "$T/di-$q.json")" "$(dclasses "$q")"
  expect_eq "... = the rows made" "$(dclasses "$q")" "${DWANT[$q]}"
  "$QREL" dlq replay --config.file="$T/dlq.yml" --source=jobs --queue="$q" --format=json > "$T/dd-$q.json" 2>>"$T/dlq.err" || true
  expect_eq "dlq dry run $q: would move exactly the not-done jobs" \
    "$(jq -r '.replay.would_move[].message_id' "$T/dd-$q.json" | sort | paste -sd' ')" "${DNOT[$q]}"
done
expect_eq "dlq inspect and the dry runs changed no runner's row" "$(runners_md5)" "$before"
expect_eq "dlq inspect: Solid Queue keeps no stamp (replays unknown), the others read 0" \
  "$(jq -r '.replays.unknown' "$T/di-sq.json") $(jq -r '.replays.never' "$T/di-default.json")" "3 3"

for q in default events mailers gj sq; do
  rc=0
  "$QREL" dlq replay --config.file="$T/dlq.yml" --source=jobs --queue="$q" --yes --format=json > "$T/dr-$q.json" 2>>"$T/dlq.err" || rc=$?
  want="0 ${DNOT[$q]}"
  [ "$q" = sq ] && want="1 5" # job 7's concurrency key: left failed
  expect_eq "dlq replay $q: moved exactly the not-done jobs" \
    "$rc $(jq -r '.replay.moved[].message_id' "$T/dr-$q.json" | sort | paste -sd' ')" "$want"
  left="1 0 1"
  [ "$q" = sq ] && left="1 1 0"
  expect_eq "... the done and unknown ones still dead" "$(dclasses "$q")" "$left"
done
expect_cmd "Solid Queue: job 7 refused for its concurrency key" grep -qF \
  'job 7 has a concurrency key' "$T/dr-sq.json"
# Back as each runner's own retry leaves it, the stamp qrel-replayed: 1 in its JSON.
expect_eq "River r2: available now, finalized_at cleared, one attempt more, stamped" \
  "$(psql_val "SELECT state || ' ' || (scheduled_at <= now()) || ' ' || (finalized_at IS NULL) || ' ' || max_attempts || ' ' || (args->>'qrel-replayed') FROM river_job WHERE args->>'order' = 'r2'")" \
  "available true true 4 1"
expect_eq "Oban o2: available, max_attempts attempt + 1, discarded_at cleared, stamped" \
  "$(psql_val "SELECT state || ' ' || (scheduled_at <= timezone('UTC', now())) || ' ' || (discarded_at IS NULL) || ' ' || max_attempts || ' ' || (args->>'qrel-replayed') FROM oban_jobs WHERE args->>'order' = 'o2'")" \
  "available true true 4 1"
expect_eq "Que q2: expired_at cleared, run_at now, error_count kept, args unchanged, data stamped" \
  "$(psql_val "SELECT (expired_at IS NULL) || ' ' || (run_at <= now()) || ' ' || error_count || ' ' || args::text || ' ' || (data->>'qrel-replayed') FROM que_jobs WHERE id = 8")" \
  'true true 15 ["q2"] 1'
expect_eq "GoodJob g2: unfinished, not performed, scheduled now, executions_count kept, error_event retried, Active Job's executions + 1, stamped" \
  "$(psql_val "SELECT (finished_at IS NULL) || ' ' || (performed_at IS NULL) || ' ' || (scheduled_at <= timezone('UTC', now())) || ' ' || executions_count || ' ' || error_event || ' ' || (serialized_params->>'executions') || ' ' || (serialized_params->>'qrel-replayed') FROM good_jobs WHERE serialized_params #>> '{arguments,0}' = 'g2'")" \
  "true true true 3 3 4 1"
expect_eq "Solid Queue: job 5 ready (its failed execution gone), job 7 still failed, not ready" \
  "$(psql_val "SELECT string_agg(job_id || ':' || t, ' ' ORDER BY job_id, t) FROM (SELECT job_id, 'ready' AS t FROM solid_queue_ready_executions WHERE job_id IN (5, 7) UNION ALL SELECT job_id, 'failed' FROM solid_queue_failed_executions WHERE job_id IN (5, 7)) x")" \
  "5:ready 7:failed"
for q in default events mailers gj sq; do
  rc=0
  "$QREL" dlq replay --config.file="$T/dlq.yml" --source=jobs --queue="$q" --yes --format=json > "$T/dr2-$q.json" 2>>"$T/dlq.err" || rc=$?
  want=0
  [ "$q" = sq ] && want=1
  expect_eq "second dlq replay $q: moved nothing" "$rc $(jq '.replay.moved | length' "$T/dr2-$q.json")" "$want 0"
done
# Each runner fails the job again (as it would: the row back to its dead state, its JSON kept):
# qrel reads the stamp, replayed once.
psql_do "UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE args->>'order' = 'r2';
  UPDATE oban_jobs SET state = 'discarded', discarded_at = timezone('UTC', now()) WHERE args->>'order' = 'o2';
  UPDATE que_jobs SET expired_at = now() WHERE id = 8;
  UPDATE good_jobs SET finished_at = timezone('UTC', now()), performed_at = timezone('UTC', now()) WHERE serialized_params #>> '{arguments,0}' = 'g2'" >/dev/null
# (GoodJob's first dead job has no serialized_params: its replays are unknown)
for q in default:0 events:0 mailers:0 gj:1; do
  "$QREL" dlq inspect --config.file="$T/dlq.yml" --source=jobs --queue="${q%:*}" --format=json > "$T/di2-${q%:*}.json" 2>>"$T/dlq.err" || true
  expect_eq "dlq inspect ${q%:*} after it died again: replays never once unknown" \
    "$(jq -r '"\(.replays.never) \(.replays.once) \(.replays.unknown)"' "$T/di2-${q%:*}.json")" "$((2 - ${q#*:})) 1 ${q#*:}"
done

# --config.check: passes here; names source, preset and table when a schema is wrong.
expect_exit "--config.check exit status with every preset's tables present" 0 "$T/check-ok.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
sed -i 's/- preset: river/- preset: river\n        schema: nowhere/' "$T/qrel.yml"
expect_exit "--config.check exit status with a missing table" 1 "$T/check.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
expect_cmd "--config.check names source, preset and table" grep -qF \
  "postgres \"jobs\" 127.0.0.1:$P/postgres: queues preset \"river\" (schema \"nowhere\"): table \"nowhere.river_job\" does not exist" \
  "$T/check.out"

finish
