#!/usr/bin/env bash
# The `queues` section (pg_jobs presets) against jobs stamped ahead of the database's now() by a
# host whose clock runs fast (issue 14), on the schema fixtures of tests/fixtures/postgres/queues:
# only the columns each runner stamps with the host's clock count (graphile-worker's locked_at
# with useNodeTime, River's finalized_at, Oban's attempted/completed/discarded_at, GoodJob's
# created/performed/finished_at, Solid Queue's job created_at and failed created_at), never a
# scheduled time; pg-boss and Que stamp with now() and export none. Three scrapes: jobs scheduled
# ahead only (0 rows ahead everywhere); then finished jobs ahead (counted, and every other figure
# of every queue as before: they are in no window); then pending and dead jobs ahead (counted; the
# counts of their states grow by them, no age or hold moves), with River's count stopped at the
# cap of 1,000. The database runs with a non-UTC TimeZone: Rails and Ecto columns are UTC.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

FIX=$QREL_SOURCE_DIR/tests/fixtures/postgres/queues
start_postgres P
psql_do "ALTER DATABASE postgres SET timezone = 'America/New_York'"
for f in graphile_worker pg_boss river oban que good_job solid_queue; do
  psql_do < "$FIX/$f.sql" >/dev/null
done

# Scene 1: every queue has jobs scheduled ahead (intended, not skew) beside jobs of the past.
psql_do <<'SQL' >/dev/null
INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('send');
INSERT INTO graphile_worker._private_job_queues (queue_name) VALUES ('mail');
INSERT INTO graphile_worker._private_jobs (task_id, job_queue_id, run_at, created_at, locked_at) VALUES
  (1, 1, now() - interval '50 s', now() - interval '60 s', NULL),
  (1, 1, now() + interval '1 h', now() - interval '30 s', NULL),
  (1, 1, now() - interval '90 s', now() - interval '100 s', now() - interval '40 s');

INSERT INTO pgboss.queue (name) VALUES ('billing');
INSERT INTO pgboss.job (name, state, start_after, created_on, expire_in) VALUES
  ('billing', 'created', now() + interval '1 h', now() - interval '20 s', interval '15 min'),
  ('billing', 'created', now() - interval '5 s', now() - interval '50 s', interval '15 min');

INSERT INTO river_job (kind, queue, state, attempt, created_at, attempted_at, scheduled_at, finalized_at) VALUES
  ('k', 'default', 'available', 0, now() - interval '60 s', NULL, now(), NULL),
  ('k', 'default', 'running', 1, now() - interval '100 s', now() - interval '15 s', now(), NULL),
  ('k', 'default', 'scheduled', 0, now() - interval '30 s', NULL, now() + interval '1 h', NULL),
  ('k', 'default', 'retryable', 1, now() - interval '40 s', now() - interval '35 s', now() + interval '10 min', NULL),
  ('k', 'default', 'discarded', 25, now() - interval '2000 s', now() - interval '1000 s', now(), now() - interval '1000 s'),
  ('k', 'default', 'completed', 1, now() - interval '60 s', now() - interval '12 s', now(), now() - interval '10 s'),
  ('k', 'default', 'completed', 1, now() - interval '60 s', now() - interval '25 s', now(), now() - interval '20 s');

INSERT INTO oban_jobs (worker, queue, state, attempt, inserted_at, scheduled_at, attempted_at, completed_at, discarded_at) VALUES
  ('W', 'events', 'available', 0, timezone('UTC', now()) - interval '45 s', timezone('UTC', now()), NULL, NULL, NULL),
  ('W', 'events', 'scheduled', 0, timezone('UTC', now()) - interval '20 s', timezone('UTC', now()) + interval '1 h', NULL, NULL, NULL),
  ('W', 'events', 'executing', 1, timezone('UTC', now()) - interval '20 s', timezone('UTC', now()), timezone('UTC', now()) - interval '8 s', NULL, NULL),
  ('W', 'events', 'discarded', 20, timezone('UTC', now()) - interval '900 s', timezone('UTC', now()), timezone('UTC', now()) - interval '310 s', NULL, timezone('UTC', now()) - interval '300 s'),
  ('W', 'events', 'completed', 1, timezone('UTC', now()) - interval '60 s', timezone('UTC', now()), timezone('UTC', now()) - interval '23 s', timezone('UTC', now()) - interval '20 s', NULL);

INSERT INTO que_jobs (job_class, queue, run_at, job_schema_version) VALUES
  ('J', 'mailers', now() - interval '30 s', 2), ('J', 'mailers', now() + interval '1 h', 2);

INSERT INTO good_jobs (queue_name, scheduled_at, performed_at, finished_at, error, created_at, updated_at, executions_count) VALUES
  ('gj', timezone('UTC', now()) - interval '5 s', NULL, NULL, NULL, timezone('UTC', now()) - interval '25 s', timezone('UTC', now()), 0),
  ('gj', timezone('UTC', now()) + interval '1 h', NULL, NULL, NULL, timezone('UTC', now()) - interval '30 s', timezone('UTC', now()), 0),
  ('gj', timezone('UTC', now()) - interval '40 s', timezone('UTC', now()) - interval '12 s', NULL, NULL, timezone('UTC', now()) - interval '40 s', timezone('UTC', now()), 1),
  ('gj', timezone('UTC', now()) - interval '300 s', timezone('UTC', now()) - interval '250 s', timezone('UTC', now()) - interval '200 s', 'boom', timezone('UTC', now()) - interval '300 s', timezone('UTC', now()), 3),
  ('gj', timezone('UTC', now()) - interval '40 s', timezone('UTC', now()) - interval '30 s', timezone('UTC', now()) - interval '25 s', NULL, timezone('UTC', now()) - interval '40 s', timezone('UTC', now()), 1);

INSERT INTO solid_queue_jobs (id, queue_name, class_name, created_at, updated_at)
SELECT id, 'sq', 'J', timezone('UTC', now()) - secs * interval '1 s', timezone('UTC', now())
FROM (VALUES (1, 33), (2, 70), (3, 10), (4, 900)) AS v (id, secs);
INSERT INTO solid_queue_ready_executions (job_id, queue_name, created_at) VALUES (1, 'sq', timezone('UTC', now()));
INSERT INTO solid_queue_claimed_executions (job_id, created_at) VALUES (2, timezone('UTC', now()) - interval '21 s');
INSERT INTO solid_queue_scheduled_executions (job_id, queue_name, scheduled_at, created_at) VALUES (3, 'sq', timezone('UTC', now()) + interval '1 h', timezone('UTC', now()));
INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES (4, 'boom', timezone('UTC', now()) - interval '400 s');
SQL

cat > "$T/qrel.yml" <<YML
sources:
$(pg_source jobs "$P")
    queues:
      - preset: graphile_worker
      - preset: pg_boss
      - preset: river
        job_timeout: 1m
      - preset: oban
      - preset: que
      - preset: good_job
        job_timeout: 10m
      - preset: solid_queue
YML

# qscrape N: scrape into $T/mN.txt; the wall time it started at goes to $T/tN.
qscrape() {
  date +%s.%N > "$T/t$1"
  "$QREL" scrape --config.file="$T/qrel.yml" > "$T/m$1.txt" 2> "$T/scrape$1.err" ||
    { cat "$T/scrape$1.err" >&2; exit 1; }
  expect_metric "$T/m$1.txt" 1 qrel_collector_up 'source="jobs"' 'kind="postgres"'
}
# ahead FILE GRAPHILE RIVER OBAN GOOD_JOB SOLID_QUEUE: the rows ahead of each preset's queue;
# none exported for pg-boss and Que, whose every column is the database's now().
ahead() {
  local f=$1 q n=2
  for q in mail default events gj sq; do
    expect_metric "$f" "${!n}" qrel_future_stamped_rows "kind=\"pg_jobs\",queue=\"$q\""
    n=$((n + 1))
  done
  expect_absent "$f" qrel_future_stamped_rows 'queue="billing"'
  expect_absent "$f" qrel_future_stamped_rows 'queue="mailers"'
}
# same_figures WHAT A B [NAME=DELTA...]: every pg_jobs sample of scrape B is the one of scrape A
# but the rows ahead and the named samples, which must have grown by DELTA; no sample appears or
# goes. Ages and margins move only as far as the time between the two scrapes (dt, from their
# start times, plus 1 s for the statements' own time) explains: an age grows by 0 to dt + 1 s; a
# margin divides by a hold that grew the same way, so it may only thin, and not below
# A * h / (h + dt + 1) for the shortest hold of the fixture (h = 8 s, Oban's executing job). A
# counted row ahead moves them far more: the rows of scene 2 took 200 s each.
same_figures() {
  local what=$1 a=$2 b=$3; shift 3
  local na=${a##*/m} nb=${b##*/m} dt # $T/mN.txt -> N: the start time is in $T/tN
  dt=$(awk 'NR == 1 { a = $1 } NR == 2 { print $1 - a + 1 }' "$T/t${na%.txt}" "$T/t${nb%.txt}")
  expect_cmd "$what" awk -v deltas="$*" -v dt="$dt" '
    BEGIN { n = split(deltas, d, " ")
            for (i = 1; i <= n; i++) { e = match(d[i], /=[^=]*$/); want[substr(d[i], 1, e - 1)] = substr(d[i], e + 1) } }
    !/kind="pg_jobs"/ || /^qrel_future_stamped_rows/ { next }
    FNR == NR { v[$1] = $2; next }
    !($1 in v) { print "new: " $1; bad = 1; next }
    { g = $2 - v[$1]; w = ($1 in want) ? want[$1] : 0; seen[$1] = 1
      if ($1 ~ /age_seconds/) off = g < -0.5 || g > dt + 0.5
      else if ($1 ~ /margin_ratio/) off = $2 > v[$1] * 1.01 || $2 < v[$1] * 8 / (8 + dt)
      else off = g != w
      if (off) { print $1 ": " v[$1] " -> " $2 " (" dt " s apart)"; bad = 1 } }
    END { for (k in v) if (!(k in seen)) { print "gone: " k; bad = 1 }; exit bad }' "$a" "$b"
}

qscrape 1
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m1.txt'"
ahead "$T/m1.txt" 0 0 0 0 0 # scheduled ahead: intended, not counted

# Scene 2: finished jobs stamped ahead by fast hosts (River's and Oban's completion times, GoodJob's
# finish), slow ones (200 s each), so that counting them would move every quantile.
psql_do <<'SQL' >/dev/null
INSERT INTO river_job (kind, queue, state, attempt, created_at, attempted_at, scheduled_at, finalized_at)
SELECT 'k', 'default', 'completed', 1, now() - interval '60 s', now() + g * interval '1 min' - interval '200 s',
       now(), now() + g * interval '1 min'
FROM generate_series(1, 5) g;
INSERT INTO oban_jobs (worker, queue, state, attempt, inserted_at, scheduled_at, attempted_at, completed_at) VALUES
  ('W', 'events', 'completed', 1, timezone('UTC', now()) - interval '60 s', timezone('UTC', now()),
   timezone('UTC', now()) + interval '1 h' - interval '200 s', timezone('UTC', now()) + interval '1 h');
INSERT INTO good_jobs (queue_name, scheduled_at, performed_at, finished_at, error, created_at, updated_at, executions_count) VALUES
  ('gj', timezone('UTC', now()) - interval '60 s', timezone('UTC', now()) + interval '10 min' - interval '200 s',
   timezone('UTC', now()) + interval '10 min', NULL, timezone('UTC', now()) - interval '60 s', timezone('UTC', now()), 1);
SQL
qscrape 2
ahead "$T/m2.txt" 0 5 1 1 0
same_figures "finished jobs ahead: every other figure as before" "$T/m1.txt" "$T/m2.txt"
expect_metric "$T/m2.txt" 3.5 qrel_handler_duration_seconds 'queue="default"' 'quantile="0.5"'

# Scene 3: pending and dead jobs stamped ahead: a graphile-worker lock taken by a node with
# useNodeTime, an Oban job attempted and one discarded, a River job discarded, a GoodJob job
# enqueued (its scheduled_at is its created_at: delayed) and one performed, a Solid Queue job
# enqueued alone and a failed execution; and River's 1,500 completed ahead, over the cap.
psql_do <<'SQL' >/dev/null
INSERT INTO graphile_worker._private_jobs (task_id, job_queue_id, run_at, created_at, locked_at) VALUES
  (1, 1, now() - interval '20 s', now() - interval '20 s', now() + interval '10 min');
INSERT INTO river_job (kind, queue, state, attempt, created_at, attempted_at, scheduled_at, finalized_at) VALUES
  ('k', 'default', 'discarded', 25, now() - interval '70 s', now() - interval '60 s', now(), now() + interval '10 min');
INSERT INTO oban_jobs (worker, queue, state, attempt, inserted_at, scheduled_at, attempted_at, discarded_at) VALUES
  ('W', 'events', 'executing', 1, timezone('UTC', now()) - interval '5 s', timezone('UTC', now()), timezone('UTC', now()) + interval '10 min', NULL),
  ('W', 'events', 'discarded', 20, timezone('UTC', now()) - interval '50 s', timezone('UTC', now()), timezone('UTC', now()) - interval '40 s', timezone('UTC', now()) + interval '10 min');
INSERT INTO good_jobs (queue_name, scheduled_at, performed_at, finished_at, error, created_at, updated_at, executions_count) VALUES
  ('gj', timezone('UTC', now()) + interval '10 min', NULL, NULL, NULL, timezone('UTC', now()) + interval '10 min', timezone('UTC', now()) + interval '10 min', 0),
  ('gj', timezone('UTC', now()) - interval '20 s', timezone('UTC', now()) + interval '10 min', NULL, NULL, timezone('UTC', now()) - interval '20 s', timezone('UTC', now()), 1);
INSERT INTO solid_queue_jobs (id, queue_name, class_name, created_at, updated_at) VALUES
  (5, 'sq', 'J', timezone('UTC', now()) + interval '10 min', timezone('UTC', now()) + interval '10 min'),
  (6, 'sq', 'J', timezone('UTC', now()) - interval '50 s', timezone('UTC', now()));
INSERT INTO solid_queue_ready_executions (job_id, queue_name, created_at) VALUES (5, 'sq', timezone('UTC', now()));
INSERT INTO solid_queue_failed_executions (job_id, error, created_at) VALUES (6, 'boom', timezone('UTC', now()) + interval '10 min');
SQL
qscrape 3
ahead "$T/m3.txt" 1 6 3 3 2
# the labels of each queue's samples, as qrel writes them
l='source="jobs",kind="pg_jobs",queue='
g="${l}\"mail\"" r="${l}\"default\"" o="${l}\"events\"" j="${l}\"gj\"" s="${l}\"sq\""
same_figures "pending and dead jobs ahead: their states' counts grow, no age or hold moves" \
  "$T/m1.txt" "$T/m3.txt" "qrel_queue_messages{$g,state=\"in_flight\"}=1" \
  "qrel_dead_letter_messages{$r,dead_letter_queue=\"discarded\"}=1" \
  "qrel_queue_messages{$o,state=\"in_flight\"}=1" "qrel_dead_letter_messages{$o,dead_letter_queue=\"discarded\"}=1" \
  "qrel_queue_messages{$j,state=\"delayed\"}=1" "qrel_queue_messages{$j,state=\"in_flight\"}=1" \
  "qrel_queue_messages{$s,state=\"ready\"}=1" "qrel_dead_letter_messages{$s,dead_letter_queue=\"failed\"}=1"

psql_do "INSERT INTO river_job (kind, queue, state, attempt, created_at, attempted_at, scheduled_at, finalized_at)
  SELECT 'k', 'default', 'completed', 1, now(), now() + interval '1 min', now(), now() + interval '2 min'
  FROM generate_series(1, 1500)" >/dev/null
expect_eq "River's jobs finalized ahead" "$(psql_val "SELECT count(*) FROM river_job WHERE finalized_at > now()")" 1506
qscrape 4
expect_metric "$T/m4.txt" 1000 qrel_future_stamped_rows "$r" # the cap
same_figures "1,500 more ahead: no other figure moves" "$T/m3.txt" "$T/m4.txt"

finish
