#!/usr/bin/env bash
# The `queues` section's delayed_job preset against delayed_job itself: Debian's ruby-delayed-job
# 4.1.9 with ruby-delayed-job-active-record 4.1.6 on Active Record 6.1 and ruby-pg
# (tests/peers/delayed_job/drive.rb). The delayed_jobs table is made by the gem's own generator
# template; jobs are enqueued with Delayed::Job.enqueue and run by Delayed::Worker#work_off: ready
# and scheduled jobs, a job failed for good and kept (destroy_failed_jobs? false), one retrying,
# one failed once that delayed_job will destroy (destroy_failed_jobs? true), one held by a worker
# thread in a handler that does not return, one held by a worker on a host whose clock runs 10 min
# fast (its locked_at ahead of now(): counted as a row ahead), one without a queue. One scrape
# must give every count exactly as SQL over delayed_jobs gives it with delayed_job's own
# ready_to_run predicate, and the lease (max_run_time), max deliveries (max_attempts) and hold.
# A max_run_time shorter than the hold makes the held job an expired lease, ready again as
# delayed_job's reserve sees it. Failed jobs destroyed: seen on the queue that keeps none while a
# job is one failure from the end, declared with destroy_failed_jobs: true, and named by qrel
# check; then delayed_job really destroys the doomed job and nothing of it is left.
# --config.check passes, and fails naming the table and the entry's file:line:col when the table
# is missing. qrel's session runs in America/New_York, so Rails' UTC `timestamp` columns must be
# read as UTC.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

DRIVE=$QREL_SOURCE_DIR/tests/peers/delayed_job/drive.rb
ruby -e 'require "delayed_job"; require "delayed_job_active_record"; require "pg"' 2>/dev/null \
  || { echo "delayed_job missing (Debian packages ruby-delayed-job, ruby-delayed-job-active-record, ruby-activerecord, ruby-pg: scripts/deps.sh)" >&2; exit 1; }

start_postgres P
# Rails keeps UTC in `timestamp` columns; qrel's session runs in another zone and must read them
# as UTC all the same (Active Record sets its own sessions to UTC).
psql_do "ALTER DATABASE postgres SET timezone = 'America/New_York'"
ruby "$DRIVE" "$P" "$T/ready" "$T/go" > "$T/drive.out" 2>&1 &
DRIVER=$!
PIDS+=("$DRIVER")
driver_at() { # driver_at FILE: the driver wrote FILE (and is still running)
  [ -s "$1" ] && return 0
  kill -0 "$DRIVER" 2>/dev/null || { cat "$T/drive.out" >&2; exit 1; }
  return 1
}
wait_for 90 "delayed_job's driver to reach its state" driver_at "$T/ready"

# config FILE [LINE...]: a source with one delayed_job entry, each LINE one more key of it.
config() {
  local f=$1; shift
  { echo "sources:"; pg_source live "$P"; echo "    queues:"; echo "      - preset: delayed_job"
    [ $# -eq 0 ] || printf '        %s\n' "$@"; } > "$f"
}
config "$T/qrel.yml" "max_attempts: 2"
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.err" || { cat "$T/scrape.err" >&2; exit 1; }
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="live"' 'kind="postgres"'
expect_eq "the queues reported" \
  "$(grep -o '[{,]queue="[^"]*"' "$T/m.txt" | cut -c2- | sort -u | tr '\n' ' ')" \
  'queue="(none)" queue="billing" queue="doomed" queue="fast" queue="mail" queue="slow" '

# What delayed_job's own reserve would do, in SQL over its table (Rails keeps UTC in timestamp
# columns): ready_to_run is run_at passed and unlocked or locked longer ago than max_run_time,
# and failed_at NULL. One line per queue: ready in_flight delayed retrying failed.
sql_counts() { # sql_counts MAX_RUN_TIME
  psql_val "SELECT COALESCE(queue, '(none)'), count(*) FILTER (WHERE failed_at IS NULL AND run_at <= n AND (locked_at IS NULL OR locked_at < n - lease)), count(*) FILTER (WHERE failed_at IS NULL AND locked_at >= n - lease), count(*) FILTER (WHERE failed_at IS NULL AND run_at > n AND (locked_at IS NULL OR locked_at < n - lease)), count(*) FILTER (WHERE failed_at IS NULL AND attempts > 0), count(*) FILTER (WHERE failed_at IS NOT NULL) FROM delayed_jobs, (SELECT now() AT TIME ZONE 'UTC' AS n, interval '$1' AS lease) AS t GROUP BY 1 ORDER BY 1" | tr '|' ' '
}
qrel_counts() { # qrel_counts FILE: the same figures from a scrape
  local q l
  for q in '(none)' billing doomed fast mail slow; do
    l="kind=\"pg_jobs\",queue=\"$q\""
    echo "$q $(mval "$1" qrel_queue_messages "$l" 'state="ready"') $(mval "$1" qrel_queue_messages "$l" 'state="in_flight"') $(mval "$1" qrel_queue_messages "$l" 'state="delayed"') $(mval "$1" qrel_messages_redelivered "$l") $(mval "$1" qrel_dead_letter_messages "$l" 'dead_letter_queue="failed"')"
  done
}
WANT="(none) 1 0 0 0 0
billing 0 0 1 1 1
doomed 1 0 0 1 0
fast 0 1 0 0 0
mail 3 0 2 0 0
slow 0 1 0 0 0"
expect_eq "the counts by SQL over delayed_jobs (delayed_job's ready_to_run, max_run_time 4 h)" "$(sql_counts '4 hours')" "$WANT"
expect_eq "qrel's counts (ready in_flight delayed retrying failed per queue)" "$(qrel_counts "$T/m.txt")" "$WANT"

for q in '(none)' billing doomed fast mail slow; do
  l="kind=\"pg_jobs\",queue=\"$q\""
  expect_metric "$T/m.txt" 14400 qrel_lease_timeout_seconds "$l"
  expect_metric "$T/m.txt" 2 qrel_max_deliveries "$l"
  # the fast host's lock lies ahead of now(): counted, and read as held 0 s
  expect_metric "$T/m.txt" "$([ "$q" = fast ] && echo 1 || echo 0)" qrel_future_stamped_rows "$l"
  # 12 series each, 13 with a margin (the queues that hold a job): nothing unexpected
  expect_eq "number of series of queue $q" "$(grep -vE '^qrel_audit_' "$T/m.txt" | grep -cF "$l")" \
    "$(case $q in slow | fast) echo 13 ;; *) echo 12 ;; esac)"
done
expect_eq "locked_at ahead of now() by SQL" "$(psql_val "SELECT string_agg(queue, ',') FROM delayed_jobs WHERE locked_at > now() AT TIME ZONE 'UTC'")" fast
expect_metric "$T/m.txt" 0 qrel_lease_oldest_age_seconds 'queue="fast"'
expect_between "the oldest hold, from locked_at" "$(mval "$T/m.txt" qrel_lease_oldest_age_seconds 'queue="slow"')" 0.000001 120
expect_metric "$T/m.txt" 0 qrel_lease_oldest_age_seconds 'queue="mail"'
expect_between "the margin, max_run_time over the hold" "$(mval "$T/m.txt" qrel_lease_margin_ratio 'queue="slow"')" 120 1e12
expect_between "the oldest ready job's age, from created_at" "$(mval "$T/m.txt" qrel_queue_oldest_message_age_seconds 'queue="mail"')" 0.000001 120
expect_between "the failed job's age, from failed_at" "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="billing"')" 0.000001 120
# doomed keeps no failed job while its job is one failure from the end; billing keeps its own
expect_eq "failed jobs not kept (seen) per queue" \
  "$(for q in '(none)' billing doomed fast mail slow; do mval "$T/m.txt" qrel_dead_letters_not_kept "queue=\"$q\""; done | tr '\n' ' ')" '0 0 1 0 0 0 '
expect_exit "qrel check (exit status: billing's failed job is critical)" 2 "$T/check.txt" "$QREL" check --config.file="$T/qrel.yml"
expect_line "qrel check names doomed's failed jobs destroyed, what is lost and the fix" \
  '^WARNING live doomed: jobs that fail for good are deleted, not kept as dead letters: .*Delayed::Worker.destroy_failed_jobs = false.*\[dead_letters_not_kept\]$' "$T/check.txt"
expect_eq "qrel check: no other queue has it" "$(grep -c 'dead_letters_not_kept' "$T/check.txt")" 1

# A max_run_time shorter than the hold: the lock has expired, and delayed_job's reserve would hand
# the job out again while its handler still runs: ready, not in flight. Declared kept: no finding.
config "$T/short.yml" "max_attempts: 2" "max_run_time: 1ms" "destroy_failed_jobs: false"
"$QREL" scrape --config.file="$T/short.yml" > "$T/short.txt" 2> "$T/scrape.err" || { cat "$T/scrape.err" >&2; exit 1; }
expect_eq "an expired lock by SQL (max_run_time 1 ms): the held job is ready" "$(sql_counts '1 millisecond' | grep '^slow')" "slow 1 0 0 0 0"
expect_eq "qrel's counts with max_run_time 1ms" "$(qrel_counts "$T/short.txt" | grep '^slow')" "slow 1 0 0 0 0"
expect_metric "$T/short.txt" 0.001 qrel_lease_timeout_seconds 'queue="slow"'
expect_eq "failed jobs declared kept: none flagged" "$(grep -c '^qrel_dead_letters_not_kept{.* 1$' "$T/short.txt")" 0

# Declared destroyed: every queue is flagged, and qrel check says so for each.
config "$T/destroy.yml" "destroy_failed_jobs: true"
expect_exit "qrel check with destroy_failed_jobs: true (exit status)" 2 "$T/check-d.txt" "$QREL" check --config.file="$T/destroy.yml"
expect_eq "qrel check: every queue's failed jobs destroyed" "$(grep -c '^WARNING live .*\[dead_letters_not_kept\]$' "$T/check-d.txt")" 6

# delayed_job now runs the doomed job to its end: destroyed, its row and last_error gone, and no
# failed row anywhere says it existed.
touch "$T/go"
wait_for 60 "the doomed job's last run" driver_at "$T/ready.2"
expect_eq "the doomed job's rows after its last failure" "$(cat "$T/ready.2")" 0
expect_eq "failed rows in delayed_jobs" "$(psql_val "SELECT count(*) FROM delayed_jobs WHERE failed_at IS NOT NULL")" 1

# --config.check: passes; a missing table fails, naming it and the entry's place in the file.
expect_exit "--config.check (exit status)" 0 "$T/check-ok.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
config "$T/missing.yml" "schema: nowhere"
expect_exit "--config.check with the table missing (exit status)" 1 "$T/check-missing.out" "$EXPORTER" --config.file="$T/missing.yml" --config.check
expect_cmd "--config.check names the preset, the table and the entry's file:line:col" grep -qF \
  "queues preset \"delayed_job\" (schema \"nowhere\"): table \"nowhere.delayed_jobs\" does not exist (the entry at $T/missing.yml:9:9)" \
  "$T/check-missing.out"

# qrel dlq does not read delayed_job's failed rows (delayed_job has no retry of its own to replay
# them by): a dead_letters entry on its queue is refused at load, saying so, not read as another
# runner's table.
cp "$T/qrel.yml" "$T/dlq.yml"
printf 'dead_letters:\n  - {source: live, queue: billing, id_field: job:id,\n     work_table: {source: live, table: delayed_jobs, id_column: id, done_column: failed_at}}\n' >> "$T/dlq.yml"
expect_exit "qrel dlq inspect on a delayed_job queue (exit status: a configuration error)" 2 "$T/dlq.out" \
  "$QREL" dlq inspect --config.file="$T/dlq.yml" --source=live --queue=billing
expect_cmd "it is refused at load, naming delayed_job" grep -qF 'not pgmq or delayed_job' "$T/dlq.out"
finish
