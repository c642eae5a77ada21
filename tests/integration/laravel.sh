#!/usr/bin/env bash
# The laravel collector against a real Redis, with Laravel itself (Debian's php-laravel-framework
# 8.83 on php-redis): Queue::push and Queue::later, and TWO workers running Laravel's own
# Illuminate\Queue\Worker (what artisan queue:work runs) with retry_after 2 s and a job that runs
# until the test lets it go. The lease trap, live: the first worker's lease runs out, the second
# worker's poll moves the job back and runs it again while the first still runs it; once both are
# busy, nobody polls, and the second lease runs out in the reserved set. Every series is asserted
# against redis-cli reads of the same keys; the expired lease shows while the handlers still run,
# the margin below 1; `qrel check` names a worker timeout (job_timeout) and a job's own timeout at
# or above retry_after; --config.check reads the server; hostile entries are skipped and counted;
# the exporter scrapes as a Redis ACL user allowed only the documented read-only commands; faults
# give up 0 with their reason; no password appears in any output; bad configs fail --config.check.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

JOBS=$QREL_SOURCE_DIR/tests/peers/laravel/jobs.php
secret="lv-$RANDOM-secret"
# The minimal ACL of docs/kinds/laravel.md: read-only commands, read-only keys.
redis_jobs_start '%R~laravel_database_queues:*' +time +scan +llen +lindex +zcard +zcount +zrange
export REDIS_PORT=$RP REDIS_PASSWORD=$secret RETRY_AFTER=2 LARAVEL_DIR=$T/jobs
mkdir -p "$LARAVEL_DIR"
client() { php "$JOBS" "$@"; }
K=laravel_database_queues # Laravel's default prefix, then queues:<name>
now() { R TIME | head -1; }

scene_start
client push emails
client push emails
client later emails 3600
client push orders 30 # the job's own $timeout: 30 s, past retry_after
for w in w1 w2; do
  # Killed at the end; the timeout bounds them should the test stop early.
  timeout -s KILL 120 php "$JOBS" work orders "$w" > "$T/$w.log" 2>&1 &
  PIDS+=("$!")
done
expect_cmd "a worker runs the job" wait_for 60 "attempt 1" test -e "$LARAVEL_DIR/started.1"
expect_cmd "the lease ran out and the other worker runs the same job again" \
  wait_for 60 "attempt 2" test -e "$LARAVEL_DIR/started.2"
# Both workers are busy now: nobody polls, so the second lease runs out in the reserved set.
lease_out() { [ "$(R ZCOUNT "$K:orders:reserved" -inf "$(now)")" = 1 ]; }
expect_cmd "the second lease ran out under its running handler" \
  wait_for 60 "an expired entry in the reserved set" lease_out
score=$(R ZRANGE "$K:orders:reserved" 0 0 WITHSCORES | tail -1)
t1=$(now)
job_scrape "$T/lv.yml" jobs laravel "retry_after: 2s"
t2=$(($(now) + 1))
expect_eq "neither run has ended" "$(find "$LARAVEL_DIR" -name 'done.*' | wc -l)" 0
expect_states "$P" orders ready="$(R LLEN "$K:orders")" in_flight="$(R ZCARD "$K:orders:reserved")" \
  delayed="$(R ZCARD "$K:orders:delayed")"
expect_states "$P" orders ready=0 in_flight=1 delayed=0
expect_states "$P" emails ready="$(R LLEN "$K:emails")" in_flight=0 \
  delayed="$(R ZCARD "$K:emails:delayed")"
expect_states "$P" emails ready=2 delayed=1
expect_metric "$P" 1 qrel_lease_expired_messages 'queue="orders"'
expect_metric "$P" 0 qrel_lease_expired_messages 'queue="emails"'
expect_metric "$P" 1 qrel_messages_redelivered 'queue="orders"'
expect_metric "$P" 0 qrel_messages_redelivered 'queue="emails"'
expect_metric "$P" 2 qrel_lease_timeout_seconds 'queue="orders"'
expect_metric "$P" 30 qrel_handler_timeout_seconds 'queue="orders"'
expect_absent "$P" qrel_handler_timeout_seconds 'queue="emails"'
# Held since the pop, the score less retry_after: now - (score - 2), read between t1 and t2.
hold=$(mval "$P" qrel_lease_oldest_age_seconds 'queue="orders"')
expect_between "the hold of orders" "$hold" $((t1 - score + 2)) $((t2 - score + 2))
expect_eq "the margin of orders, retry_after over the hold, is below 1" "$(mval "$P" \
  qrel_lease_margin_ratio 'queue="orders"' | awk '{ print ($1 > 0 && $1 < 1) ? "yes" : $1 }')" yes
expect_eq "the margin is 2 / hold" "$(mval "$P" qrel_lease_margin_ratio 'queue="orders"' |
  awk -v h="$hold" '{ d = $1 - 2 / h; print (d < 1e-9 && d > -1e-9) ? "yes" : $1 " vs 2/" h }')" yes
expect_recent "$P" emails qrel_queue_oldest_message_age_seconds
expect_eq "round trips: TIME and one SCAN page, then the queues" "$(round_trips laravel "$T/lv.log")" 2
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces) and TLS.
job_same_via_proxy "$T/lv.yml" jobs

# qrel check: the margin, the job's own timeout (orders), and with job_timeout the workers'
# --timeout at or above retry_after (emails); without job_timeout, emails has no timeout finding.
expect_check "$T/lv.yml" 2 "a lease run out under its handler" "the margin of orders" \
  '^CRITICAL jobs orders: lease 2s, longest hold now .* → margin 0\..*\[lease_margin_below_1\]$' \
  "the job timeout of orders" \
  '^CRITICAL jobs orders: handler timeout 30s, lease 2s: a job running longer than the lease.*queue:work --timeout shorter than the connection.s retry_after.*\[handler_timeout_not_below_lease\]$'
expect_eq "no timeout finding on emails without job_timeout" \
  "$(grep -c '^CRITICAL jobs emails: handler timeout' "$T/check.txt")" 0
job_config "$T/lvt.yml" jobs laravel "retry_after: 2s" "job_timeout: 5s"
expect_check "$T/lvt.yml" 2 "job_timeout 5s against retry_after 2s" "the worker timeout of emails" \
  '^CRITICAL jobs emails: handler timeout 5s, lease 2s: .*\[handler_timeout_not_below_lease\]$'
# --config.check reads the server: fine as qrel, refused with the wrong password.
expect_exit "--config.check live" 0 "$T/cc.out" "$EXPORTER" --config.file="$T/lv.yml" --config.check
sed "s|$T/reader.pass|$T/wrong.pass|" "$T/lv.yml" > "$T/lvw.yml"
expect_exit "--config.check with a wrong password" 1 "$T/ccw.out" "$EXPORTER" \
  --config.file="$T/lvw.yml" --config.check
expect_line "--config.check names the refusal" 'jobs' "$T/ccw.out"

# Let the job go: both runs end; Laravel ran it twice (or more: the first worker to finish may
# take the expired lease again).
touch "$LARAVEL_DIR/release"
expect_cmd "both runs ended" wait_for 60 "done.1 and done.2" \
  test -e "$LARAVEL_DIR/done.1" -a -e "$LARAVEL_DIR/done.2"
for p in "${PIDS[@]: -2}"; do kill "$p" 2>/dev/null || true; done

# Hostile entries no Laravel writes (written by hand: that is the point): skipped and counted, the
# source stays up, the counts stand.
R RPUSH "$K:hostile" 'not json' > /dev/null
R ZADD "$K:hostile:reserved" 5 '{"attempts":1}' > /dev/null
"$QREL" scrape --config.file="$T/lv.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="jobs"'
expect_states "$T/hostile.prom" hostile ready=1 in_flight=1
expect_states "$T/hostile.prom" emails ready=2 delayed=1
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile"' 'reason="not_json"'
expect_metric "$T/hostile.prom" 1 qrel_skipped_entries 'queue="hostile"' 'reason="bad_timestamp"'
expect_absent "$T/hostile.prom" qrel_lease_oldest_age_seconds 'queue="hostile"'

# exclude: a queue Laravel made itself (its list and its notify list) is found without the key;
# with exclude ["scr*"] no key of it is read, and it is counted once, not once per key.
client push scratch
expect_excluded laravel scratch "scr*"
expect_states "$T/incl.prom" scratch ready=1
expect_states "$T/excl.prom" emails ready=2 delayed=1

# Round trips do not grow with queues: 30 more queues, still TIME and one SCAN page, then one.
client spread q 30
expect_flat_round_trips laravel "$T/lv.yml" 33 2 ready

# Named queues: one Laravel never saw reads as empty; other queues are not read.
expect_named_queues laravel

# Faults, each beside the healthy source.
job_faults_config laravel "queues: [emails]"
job_faults_check "$T/lv.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key laravel "retry_after not a duration" 'bad.yml:5:18: retry_after: want a duration' \
  "retry_after: 90"
bad_job_key laravel "cluster" 'the laravel kind does not read a Redis Cluster yet' "cluster: true"

finish
