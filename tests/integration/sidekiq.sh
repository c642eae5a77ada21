#!/usr/bin/env bash
# The sidekiq collector against a real Redis, with Sidekiq itself (Debian's ruby-sidekiq 6.4)
# enqueueing jobs and a `sidekiq` process running them: a job given up at once (the dead set), a
# job failed and retried an hour later (the retry set), a job held by a live worker, jobs ready
# behind it and one scheduled ahead. Every series is asserted exactly (ages within the time the
# test took). Then the worker is killed with SIGKILL: Sidekiq has no lease, and the job it held is
# counted as orphaned once its heartbeat is older than stale_after. qrel_queue_consumers counts
# the processes fetching from a queue as Sidekiq's own ProcessSet lists them: a second process is
# counted while it beats, not once quiet (TSTP), not once stopped (TERM), and the killed worker not
# once its heartbeat is older than stale_after. The exporter scrapes as a Redis
# ACL user allowed only the documented read-only commands. Round trips are 2 whatever the number
# of queues; `qrel check` names the dead job and the orphaned one; faults (down, wrong password,
# silent, garbage, a job larger than max_response_bytes) give up 0 with their reason while a
# healthy source reports; no password appears in any output; bad configs fail --config.check
# with file:line:col.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

JOBS=$QREL_SOURCE_DIR/tests/peers/sidekiq/jobs.rb
secret="sk-$RANDOM-secret"
# The minimal ACL of docs/kinds/sidekiq.md: read-only commands, read-only keys.
redis_jobs_start '%R~*' +time +smembers +zcard +zrange +llen +lindex +hget +hgetall
export REDIS_URL="redis://:$secret@127.0.0.1:$RP"
client() { ruby "$JOBS" "$@" 2>/dev/null; }
wait_redis() { # wait_redis WHAT WANT CMD...: polls a Redis reply (for the setup only)
  local what=$1 want=$2; shift 2
  for _ in $(seq 1 300); do [ "$(R "$@")" = "$want" ] && return 0; sleep 0.05; done
  not_ok "$what: $(R "$@"), want $want"
}
# wait_processes QUEUE WANT: until Sidekiq's own figure (jobs.rb processes QUEUE 6) is WANT.
wait_processes() {
  local got
  for _ in $(seq 1 300); do
    got=$(client processes "$1" 6)
    [ "$got" = "$2" ] && return 0
    sleep 0.1
  done
  not_ok "Sidekiq's processes of $1: $got, want $2"
}

scene_start
client push emails DeadJob
client push emails RetryJob
# Killed below with SIGKILL: that is the crash this test is about; the timeout bounds it should
# the test stop early.
timeout -s KILL 120 sidekiq -r "$JOBS" -q emails -c 1 >"$T/sidekiq.log" 2>&1 &
WORKER=$!
PIDS+=("$WORKER")
wait_redis "the dead set" 1 ZCARD dead
wait_redis "the retry set" 1 ZCARD retry
client push emails HangJob 300
for _ in $(seq 1 300); do
  p=$(R SMEMBERS processes | head -1)
  [ -n "$p" ] && [ "$(R HLEN "$p:workers")" = 1 ] && break
  sleep 0.05
done
client push emails OkJob
client push emails OkJob
client push_in 3600 emails OkJob

job_scrape "$T/sk.yml" jobs sidekiq "stale_after: 6s"
expect_states "$P" emails ready=2 in_flight=1 delayed=2
expect_metric "$P" 1 qrel_messages_redelivered 'queue="emails"'
expect_metric "$P" 1 qrel_dead_letter_messages 'queue="emails"' 'dead_letter_queue="dead"'
expect_metric "$P" 0 qrel_lease_orphaned_messages 'queue="emails"'
expect_recent "$P" emails qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds \
  qrel_dead_letter_oldest_age_seconds qrel_dead_letter_newest_age_seconds
expect_absent "$P" qrel_lease_margin_ratio 'queue="emails"'
expect_eq "round trips for 1 queue" "$(round_trips sidekiq "$T/sk.log")" 2
# The one process fetching from emails, as Sidekiq lists it.
expect_eq "Sidekiq's processes of emails" "$(client processes emails 6)" "serving=1 listed=1"
expect_metric "$P" 1 qrel_queue_consumers 'queue="emails"'
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces).
job_same_via_proxy "$T/sk.yml" jobs

# A second process, fetching from audit only (named in the config: no job of it was ever pushed):
# a consumer of audit while it beats; none once quiet (TSTP: it fetches no more jobs, and says so
# at its next heartbeat), none once stopped (TERM: it leaves the processes set).
job_config "$T/two.yml" jobs sidekiq "stale_after: 6s" "queues: [emails, audit]"
timeout -s KILL 120 sidekiq -r "$JOBS" -q audit -c 1 >"$T/sidekiq2.log" 2>&1 &
SECOND=$!
PIDS+=("$SECOND")
wait_processes audit "serving=1 listed=1"
$QREL scrape --config.file="$T/two.yml" > "$T/two.prom"
expect_metric "$T/two.prom" 1 qrel_queue_consumers 'queue="audit"'
expect_metric "$T/two.prom" 1 qrel_queue_consumers 'queue="emails"'
pkill -TSTP -P "$SECOND" # sidekiq renames its process: found as timeout's child
wait_processes audit "serving=0 listed=1"
$QREL scrape --config.file="$T/two.yml" > "$T/quiet.prom"
expect_metric "$T/quiet.prom" 0 qrel_queue_consumers 'queue="audit"'
expect_metric "$T/quiet.prom" 1 qrel_queue_consumers 'queue="emails"'
pkill -TERM -P "$SECOND"
wait_processes audit "serving=0 listed=0"
$QREL scrape --config.file="$T/two.yml" > "$T/gone.prom"
expect_metric "$T/gone.prom" 0 qrel_queue_consumers 'queue="audit"'
expect_metric "$T/gone.prom" 1 qrel_queue_consumers 'queue="emails"'

# The worker dies holding the job: no lease gives it back. Once its heartbeat is older than
# stale_after (and before Sidekiq's 60 s expiry drops its keys), the job is orphaned.
pkill -9 -P "$WORKER" 2>/dev/null || true # sidekiq renames its process: found as timeout's child
kill -9 "$WORKER" 2>/dev/null || true
sleep 7
$QREL scrape --config.file="$T/sk.yml" > "$T/orphan.prom"
expect_metric "$T/orphan.prom" 1 qrel_lease_orphaned_messages 'queue="emails"'
expect_states "$T/orphan.prom" emails in_flight=1
# Its heartbeat is older than stale_after: no consumer, though Sidekiq lists it until its keys
# expire (60 s after the last beat).
expect_eq "Sidekiq's processes of emails" "$(client processes emails 6)" "serving=0 listed=1"
expect_metric "$T/orphan.prom" 0 qrel_queue_consumers 'queue="emails"'
expect_check "$T/sk.yml" 2 "a dead and an orphaned job" "the dead job of emails" \
  '^CRITICAL jobs emails: dead-letter queue dead holds 1 message.*\[dead_letter_queue_not_empty\]$' \
  "the orphaned job of emails" \
  '^CRITICAL jobs emails: 1 message held by a consumer that stopped sending heartbeats.*\[orphaned_messages\]$'

# Hostile entries no Sidekiq writes (written by hand: that is the point), each in a queue of its
# own, the schedule set and the dead process's work hash: each is skipped and counted by reason,
# the source stays up, and every other figure is what it was.
deep() { printf '%*s' "$1" '' | tr ' ' '['; printf '%*s' "$1" '' | tr ' ' ']'; }
R SADD queues hostile_a hostile_b hostile_c hostile_d >/dev/null
R RPUSH queue:hostile_a 'not json' >/dev/null
R RPUSH queue:hostile_b '{"queue":"hostile_b","enqueued_at":NaN}' >/dev/null
R RPUSH queue:hostile_c "$(deep 3000)" >/dev/null
R RPUSH queue:hostile_d '{"queue":"hostile_d","enqueued_at":-5}' >/dev/null
R ZADD schedule 1 '{"class":"OkJob","args":[]}' >/dev/null
R HSET "$p:workers" hostile 'not json' >/dev/null
$QREL scrape --config.file="$T/sk.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="jobs"'
expect_states "$T/hostile.prom" emails ready=2 in_flight=1 delayed=2
expect_metric "$T/hostile.prom" 1 qrel_messages_redelivered 'queue="emails"'
expect_metric "$T/hostile.prom" 1 qrel_dead_letter_messages 'queue="emails"'
expect_metric "$T/hostile.prom" 1 qrel_lease_orphaned_messages 'queue="emails"'
for q in hostile_a hostile_b hostile_c hostile_d; do expect_states "$T/hostile.prom" "$q" ready=1; done
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_a"' 'reason="not_json"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_b"' 'reason="not_json"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_c"' 'reason="too_deep"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile_d"' 'reason="bad_timestamp"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue=""' 'reason="missing_field"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue=""' 'reason="not_json"'
expect_absent "$T/hostile.prom" qrel_skipped_entries 'queue="emails"'
expect_absent "$T/hostile.prom" qrel_queue_oldest_message_age_seconds 'queue="hostile_d"'
expect_check "$T/sk.yml" 2 "skipped entries beside the dead job" "the skipped head job" \
  '^WARNING jobs hostile_a: 1 unreadable item skipped (not JSON, .*\[skipped_entries\]$'
R DEL queue:hostile_a queue:hostile_b queue:hostile_c queue:hostile_d >/dev/null
R SREM queues hostile_a hostile_b hostile_c hostile_d >/dev/null
R ZREMRANGEBYSCORE schedule 1 1 >/dev/null
R HDEL "$p:workers" hostile >/dev/null

# A heartbeat that is no number says neither alive nor stopped: the dead process's job is still
# in flight but not orphaned (no false alarm), and the beat is a skipped bad_timestamp entry.
beat=$(R HGET "$p" beat)
R HSET "$p" beat soon >/dev/null
$QREL scrape --config.file="$T/sk.yml" > "$T/beat.prom"
expect_states "$T/beat.prom" emails in_flight=1
expect_metric "$T/beat.prom" 0 qrel_lease_orphaned_messages 'queue="emails"'
expect_metric "$T/beat.prom" 1 qrel_skipped_entries 'queue=""' 'reason="bad_timestamp"'
# Alive or not, nobody can tell: no count of the queue it names, rather than a 0 or a 1.
expect_absent "$T/beat.prom" qrel_queue_consumers 'queue="emails"'
R HSET "$p" beat "$beat" >/dev/null

# exclude: a queue Sidekiq made itself, with a job ready and one in the schedule set (shared by
# every queue), is read without the key; with exclude ["scr*"] its list is not read, its job in
# the set is passed over, it is counted once, and the queues are those without it less scratch.
client push scratch OkJob
client push_in 3600 scratch OkJob
expect_excluded sidekiq scratch "scr*"
expect_states "$T/incl.prom" scratch ready=1 delayed=1
expect_states "$T/excl.prom" emails ready=2 in_flight=1 delayed=2
expect_metric "$T/excl.prom" 1 qrel_dead_letter_messages 'queue="emails"'

# Round trips do not grow with queues: 30 more queues, still 2.
client spread q 30
expect_flat_round_trips sidekiq "$T/sk.yml" 32 2 ready

# Named queues: one Sidekiq never saw reads as empty; jobs of other queues are not counted.
expect_named_queues sidekiq

# Faults, each beside the healthy source.
client push big OkJob "$(head -c 6000 /dev/zero | tr '\0' x)"
job_faults_config sidekiq "queues: [emails]"
job_source capped sidekiq "queues: [big]" "max_response_bytes: 4096" >> "$T/faults.yml"
job_faults_check "$T/sk.log" capped:limit

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key sidekiq "misspelt key" 'bad.yml:5:5: unknown key "namespaces" in source "s" (known keys:' \
  "namespaces: app"
bad_job_key sidekiq "exclude with queues" \
  'bad.yml:6:14: exclude: only without queues (it leaves out queues found in the queues set' \
  "queues: [a]
    exclude: [b]"
bad_job_key sidekiq "stale_after not a duration" 'bad.yml:5:18: stale_after: want a duration' \
  "stale_after: 20"

finish
