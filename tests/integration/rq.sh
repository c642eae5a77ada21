#!/usr/bin/env bash
# The rq collector against a real Redis, with RQ itself (Debian's python3-rq) enqueueing jobs and
# `rq worker` running them: a job failed for good (the FailedJobRegistry), a job failed with a
# retry left (scheduled again an hour later), a job held by a live worker past nothing yet
# (timeout 100 s, so that RQ does not stop it and take the jobs behind it before the test ends on
# a loaded machine), jobs ready behind it, a job scheduled ahead and one deferred on it. Every
# series is asserted exactly (ages within the time the test took, the margin equal to the timeout
# over the hold). qrel_queue_consumers is RQ's own Worker.all(queue=...): a second worker is
# counted on its queues while it lives and not once it stopped (TERM). The exporter scrapes as a
# Redis ACL user allowed only the documented read-only commands on rq:* keys, so any other
# command would fail the scrape. Round trips are 3 whatever the number of queues; `qrel check`
# names the failed job; faults (down, wrong password, silent, garbage) give up 0 with their
# reason while a healthy source reports, and no password appears in any output; bad configs fail
# --config.check with file:line:col.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

PY=/usr/bin/python3 # Debian's python3-rq imports only there
RQPEER=$QREL_SOURCE_DIR/tests/peers/rq
# The minimal ACL of docs/kinds/rq.md.
secret="rq-$RANDOM-secret"
redis_jobs_start '~rq:*' +time +smembers +llen +zcard +lindex +zrange +zrevrange +hmget
U="redis://:$secret@127.0.0.1:$RP"
enqueue() { (cd "$RQPEER" && $PY rqjobs.py "$U" "$@"); }
# wait_workers QUEUE WANT: until RQ's own count of QUEUE's workers is WANT.
wait_workers() {
  local got
  for _ in $(seq 1 300); do
    got=$(enqueue workers "$1")
    [ "$got" = "$2" ] && return 0
    sleep 0.1
  done
  not_ok "RQ's workers of $1: $got, want $2"
}

scene_start
enqueue enqueue emails boom
enqueue enqueue emails boom --retry 1 --interval 3600
(cd "$RQPEER" && timeout 60 rq worker -u "$U" --burst emails >"$T/burst.log" 2>&1)
enqueue enqueue emails hang 300 --timeout 100
# Killed below once it has served; the timeout bounds it should the test stop early (a TERM makes
# RQ wait for the running job).
(cd "$RQPEER" && exec timeout -s KILL 120 rq worker -u "$U" emails >"$T/worker.log" 2>&1) &
WORKER=$!
PIDS+=("$WORKER")
for _ in $(seq 1 200); do [ "$(R ZCARD rq:wip:emails)" = 1 ] && break; sleep 0.05; done
expect_eq "the worker holds the hanging job" "$(R ZCARD rq:wip:emails)" 1
enqueue enqueue emails ok
enqueue enqueue emails ok
enqueue enqueue emails ok --in 3600
enqueue depend emails

job_scrape "$T/rq.yml" jobs rq
# delayed: the retry an hour away, the job an hour away, the parent of the deferred job, the
# deferred job
expect_states "$P" emails ready=2 in_flight=1 delayed=4
expect_metric "$P" 1 qrel_dead_letter_messages 'queue="emails"' 'dead_letter_queue="failed"'
expect_metric "$P" 100 qrel_lease_timeout_seconds 'queue="emails"'
expect_recent "$P" emails qrel_lease_oldest_age_seconds # the running job's hold
hold=$(mval "$P" qrel_lease_oldest_age_seconds 'queue="emails"')
margin=$(mval "$P" qrel_lease_margin_ratio 'queue="emails"')
expect_between "margin x hold (the job's timeout)" "$(awk -v m="$margin" -v h="$hold" 'BEGIN { print m * h }')" 99.99 100.01
expect_recent "$P" emails qrel_queue_oldest_message_age_seconds \
  qrel_dead_letter_oldest_age_seconds qrel_dead_letter_newest_age_seconds
expect_eq "round trips for 1 queue" "$(round_trips rq "$T/rq.log")" 3
# The one live worker of emails (the burst worker registered its death), as RQ counts it.
expect_eq "RQ's workers of emails" "$(enqueue workers emails)" 1
expect_metric "$P" 1 qrel_queue_consumers 'queue="emails"'
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces).
job_same_via_proxy "$T/rq.yml" jobs

# qrel check: the failed job is a dead letter (CRITICAL, exit 2).
expect_check "$T/rq.yml" 2 "a failed job" "the failed job of emails" \
  '^CRITICAL jobs emails: dead-letter queue failed holds 1 message.*\[dead_letter_queue_not_empty\]$'

# Hostile job hashes no RQ writes (by hand: that is the point), in queues of their own: a head
# job enqueued at -5, one whose enqueued_at is no time, a running job with a timeout "soon" and
# one started in 2100. Each is skipped and counted by reason; the source stays up and every other
# figure is what it was.
R SADD rq:queues rq:queue:hostile_a rq:queue:hostile_b >/dev/null
R RPUSH rq:queue:hostile_a hostile-1 >/dev/null
R HSET rq:job:hostile-1 enqueued_at 1969-12-31T23:59:55Z >/dev/null
R RPUSH rq:queue:hostile_b hostile-2 >/dev/null
R HSET rq:job:hostile-2 enqueued_at yesterday >/dev/null
R ZADD rq:wip:hostile_a 1 hostile-3 1 hostile-4 >/dev/null
R HSET rq:job:hostile-3 started_at 2026-01-01T00:00:00Z timeout soon >/dev/null
R HSET rq:job:hostile-4 started_at 2100-01-01T00:00:00Z >/dev/null
# and a worker hash without its queues field, which RQ reads as a worker of no queue
R SADD rq:workers rq:worker:hostile >/dev/null
R HSET rq:worker:hostile pid 1 >/dev/null
$QREL scrape --config.file="$T/rq.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="jobs"'
expect_states "$T/hostile.prom" emails ready=2 in_flight=1 delayed=4
expect_metric "$T/hostile.prom" 1 qrel_dead_letter_messages 'queue="emails"'
expect_metric "$T/hostile.prom" 100 qrel_lease_timeout_seconds 'queue="emails"'
expect_recent "$T/hostile.prom" emails qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds
expect_states "$T/hostile.prom" hostile_a ready=1 in_flight=2
expect_metric "$T/hostile.prom" 2 qrel_skipped_entries 'queue="hostile_a"' 'reason="bad_timestamp"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_a"' 'reason="bad_value"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_b"' 'reason="bad_timestamp"'
expect_absent "$T/hostile.prom" qrel_queue_oldest_message_age_seconds 'queue="hostile_a"'
expect_absent "$T/hostile.prom" qrel_lease_oldest_age_seconds 'queue="hostile_a"'
expect_metric "$T/hostile.prom" 1 qrel_queue_consumers 'queue="emails"'
expect_metric "$T/hostile.prom" 0 qrel_queue_consumers 'queue="hostile_a"'
R DEL rq:queue:hostile_a rq:queue:hostile_b rq:wip:hostile_a rq:job:hostile-1 rq:job:hostile-2 \
  rq:job:hostile-3 rq:job:hostile-4 >/dev/null
R SREM rq:queues rq:queue:hostile_a rq:queue:hostile_b >/dev/null
R DEL rq:worker:hostile >/dev/null
R SREM rq:workers rq:worker:hostile >/dev/null

# exclude: a queue RQ made itself, with a job failed for good (its failed registry) and one
# ready, is read without the key; with exclude ["scr*"] it is neither read nor exported, and the
# queues are those of the read without it less scratch.
enqueue enqueue scratch boom
(cd "$RQPEER" && timeout 60 rq worker -u "$U" --burst scratch >"$T/burst2.log" 2>&1)
enqueue enqueue scratch ok
expect_excluded rq scratch "scr*"
expect_metric "$T/incl.prom" 1 qrel_queue_messages 'queue="scratch"' 'state="ready"'
expect_metric "$T/incl.prom" 1 qrel_dead_letter_messages 'queue="scratch"'
expect_states "$T/excl.prom" emails ready=2 in_flight=1 delayed=4

# Round trips do not grow with queues: 30 more queues with a job each, still 3.
enqueue spread q 30
expect_flat_round_trips rq "$T/rq.yml" 32 3 delayed

# Named queues: one RQ never saw reads as empty.
expect_named_queues rq

# A second worker, listening on q1 and q2 (a job each scheduled ahead, none ready): a consumer of
# both while it lives, of neither once it stopped (TERM: an idle worker's register_death takes it
# out of rq:workers); the first worker still serves emails, and no worker q3.
# --foreground: without it timeout passes a TERM on twice (to the worker, then to its process
# group), and RQ takes a second signal for a cold shutdown, which can cut its register_death short
# and leave the worker counted (seen once in CI: "Warm shut down requested", "Cold shut down").
(cd "$RQPEER" && exec timeout --foreground -s KILL 120 rq worker -u "$U" q1 q2 >"$T/worker2.log" 2>&1) &
SECOND=$!
PIDS+=("$SECOND")
wait_workers q1 1
expect_eq "RQ's workers of q2" "$(enqueue workers q2)" 1
$QREL scrape --config.file="$T/rq.yml" > "$T/two.prom"
expect_metric "$T/two.prom" 1 qrel_queue_consumers 'queue="q1"'
expect_metric "$T/two.prom" 1 qrel_queue_consumers 'queue="q2"'
expect_metric "$T/two.prom" 0 qrel_queue_consumers 'queue="q3"'
expect_metric "$T/two.prom" 1 qrel_queue_consumers 'queue="emails"'
kill -TERM "$SECOND" # timeout passes it on to the worker, once
wait_workers q1 0
$QREL scrape --config.file="$T/rq.yml" > "$T/gone.prom"
expect_metric "$T/gone.prom" 0 qrel_queue_consumers 'queue="q1"'
expect_metric "$T/gone.prom" 0 qrel_queue_consumers 'queue="q2"'
expect_metric "$T/gone.prom" 1 qrel_queue_consumers 'queue="emails"'
kill -9 "$WORKER" 2>/dev/null || true
pkill -9 -f "rq worker -u redis://:$secret@127.0.0.1:$RP" 2>/dev/null || true

# Faults, each beside the healthy source.
job_faults_config rq "queues: [emails]"
job_faults_check "$T/rq.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key rq "misspelt key" 'bad.yml:5:5: unknown key "queue" in source "r" (known keys:' \
  "queue: [a]"
bad_job_key rq "username without password" 'bad.yml:5:15: username: needs password_file or password_env' \
  "username: qrel"
bad_job_key rq "empty queue list" 'bad.yml:5:13: queues: want at least one queue' \
  "queues: []"
bad_job_key rq "exclude with queues" \
  'bad.yml:6:14: exclude: only without queues (it leaves out queues found in the rq:queues set)' \
  "queues: [a]
    exclude: [b]"
bad_job_key rq "timeout not a duration" 'bad.yml:5:22: default_timeout: want a duration' \
  "default_timeout: 180"

finish
