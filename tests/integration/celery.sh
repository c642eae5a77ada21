#!/usr/bin/env bash
# The celery collector against a real Redis, with Celery itself (Debian's python3-celery 5.2 on
# kombu's Redis transport) sending tasks and a `celery worker` running them with acks_late: a task
# held unacknowledged by the running worker, a task with a countdown beyond the visibility timeout
# (taken at once and held until its ETA: Celery's duplicate trap), tasks ready behind them, one of
# them at a priority (kombu's priority sub-list). Every series is asserted exactly (the hold within
# the time the test took, the margin equal to the visibility timeout over the hold). The exporter
# scrapes as a Redis ACL user allowed only the documented read-only commands; a scrape is one round
# trip; `qrel check` names the ETA trap; faults (down, wrong password, silent, garbage) give up 0
# with their reason while a healthy source reports; no password appears in any output; bad
# configs fail --config.check with file:line:col.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

PY=/usr/bin/python3 # Debian's python3-celery imports only there
PEER=$QREL_SOURCE_DIR/tests/peers/celery
secret="ce-$RANDOM-secret"
# The minimal ACL of docs/kinds/celery.md.
redis_jobs_start '%R~*' +time +zrange +hgetall +llen
export REDIS_URL="redis://:$secret@127.0.0.1:$RP/0" VISIBILITY_TIMEOUT=600
send() { (cd "$PEER" && $PY tasks.py "$@"); }

scene_start
send ok --countdown 3600
send hang 300
(cd "$PEER" && exec timeout -s KILL 120 $PY -m celery -A tasks worker -P solo -c 1 \
  --without-heartbeat --without-gossip --without-mingle -l warning >"$T/worker.log" 2>&1) &
WORKER=$!
PIDS+=("$WORKER")
for _ in $(seq 1 400); do [ "$(R HLEN unacked)" = 2 ] && break; sleep 0.05; done
expect_eq "the worker holds the running task and the ETA task" "$(R HLEN unacked)" 2
send ok
(cd "$PEER" && $PY -c 'import tasks; tasks.ok.apply_async(priority=5)')

job_scrape "$T/ce.yml" tasks celery "visibility_timeout: 10m"
expect_states "$P" celery ready=2 in_flight=2
expect_metric "$P" 600 qrel_lease_timeout_seconds 'queue="celery"'
expect_metric "$P" 1 qrel_lease_eta_beyond_messages 'queue="celery"'
expect_metric "$P" 0 qrel_messages_redelivered 'queue="celery"'
# A worker runs, yet Celery keeps no registry of workers in Redis: no consumers, and no flow
# counters (docs/kinds/celery.md), never a made-up 0.
expect_absent "$P" qrel_queue_consumers
expect_absent "$P" qrel_messages_consumed_total
expect_absent "$P" qrel_messages_dead_lettered_total
expect_recent "$P" celery qrel_lease_oldest_age_seconds # the oldest unacknowledged task's hold
hold=$(mval "$P" qrel_lease_oldest_age_seconds 'queue="celery"')
margin=$(mval "$P" qrel_lease_margin_ratio 'queue="celery"')
expect_between "margin x hold (the visibility timeout)" \
  "$(awk -v m="$margin" -v h="$hold" 'BEGIN { print m * h }')" 599.99 600.01
expect_absent "$P" qrel_dead_letter_messages 'queue="celery"'
expect_eq "round trips" "$(round_trips celery "$T/ce.log")" 1
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces).
job_same_via_proxy "$T/ce.yml" tasks

# qrel check: the ETA trap is a warning (exit 1), nothing critical.
expect_check "$T/ce.yml" 1 "an ETA beyond the lease" "the ETA trap" \
  '^WARNING tasks celery: 1 message held until an ETA or countdown beyond the lease 10m: .*\[eta_beyond_lease\]$'
# With a visibility timeout longer than the countdown the trap is gone.
sed 's/visibility_timeout: 10m/visibility_timeout: 2h/' "$T/ce.yml" > "$T/long.yml"
$QREL scrape --config.file="$T/long.yml" > "$T/long.prom"
expect_metric "$T/long.prom" 0 qrel_lease_eta_beyond_messages 'queue="celery"'

# A queue no task was sent to reads as empty.
job_config "$T/two.yml" tasks celery "queues: [celery, reports]"
debug_scrape "$T/two.yml" "$T/two"
expect_states "$T/two.prom" celery ready=2
expect_states "$T/two.prom" reports ready=0 in_flight=0
expect_metric "$T/two.prom" 3600 qrel_lease_timeout_seconds 'queue="reports"'
expect_eq "round trips for two queues" "$(round_trips celery "$T/two.log")" 1
pkill -9 -P "$WORKER" 2>/dev/null || true
kill -9 "$WORKER" 2>/dev/null || true

# Hostile entries no kombu writes (by hand: that is the point), once the worker is gone so it
# restores none of them: a non-JSON unacked entry, one nested 3,000 deep, and a well-formed one
# delivered at -5 (its index score). The first two are skipped and counted, the third is in
# flight without a hold of 1.8e9 s; the source stays up and every other figure is what it was.
deep() { printf '%*s' "$1" '' | tr ' ' '['; printf '%*s' "$1" '' | tr ' ' ']'; }
R HSET unacked hostile-1 'not json' hostile-2 "$(deep 3000)" \
  hostile-3 '[{"headers":{}}, "", "celery"]' >/dev/null
R ZADD unacked_index -5 hostile-3 >/dev/null
$QREL scrape --config.file="$T/ce.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="tasks"'
expect_states "$T/hostile.prom" celery ready=2 in_flight=3
expect_metric "$T/hostile.prom" 1 qrel_lease_eta_beyond_messages 'queue="celery"'
expect_metric "$T/hostile.prom" 0 qrel_messages_redelivered 'queue="celery"'
expect_recent "$T/hostile.prom" celery qrel_lease_oldest_age_seconds
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue=""' 'reason="not_json"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue=""' 'reason="too_deep"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="celery"' 'reason="bad_timestamp"'
expect_check "$T/ce.yml" 1 "skipped entries and the ETA trap" "the skipped entries" \
  '^WARNING tasks "": 2 unreadable items skipped (not JSON, .*\[skipped_entries\]$'

# Faults, each beside the healthy source.
job_faults_config celery
job_faults_check "$T/ce.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key celery "misspelt key" 'bad.yml:5:5: unknown key "visibility" in source "c" (known keys:' \
  "visibility: 1h"
bad_job_key celery "visibility_timeout of 0" 'bad.yml:5:25: visibility_timeout: want a duration above 0' \
  "visibility_timeout: 0s"

finish
