#!/usr/bin/env bash
# The bullmq collector against a real Redis, with BullMQ itself (from npm, pinned in
# tests/peers/bullmq/package-lock.json, on Node 22 from npm) producing with Queue.add and
# processing with Worker: a job failed for good (the failed set), a job failed and retried an
# hour later (delayed), a job held by a live worker, jobs waiting behind it and one delayed ahead.
# Beside it a Bull 4 queue (npm bull 4.16.5: Queue#add with delay and priority, Queue#process
# holding a job, a job failed for good), found without `queues:` by its job counter, its figures
# Bull's own getJobCounts(); qrel_source_queues counts both queues, and is 0 (with a qrel check
# warning) for a source whose prefix matches nothing.
# Every series is asserted exactly (ages within the time the test took). Then a worker blocks its
# event loop past its lock and another worker's stalled check moves the job back: the running
# exporter counts the `stalled` event as a lease expiry. qrel_queue_consumers is BullMQ's (and
# Bull's) own getWorkers() count, from CLIENT LIST; qrel_messages_consumed_total and
# qrel_messages_dead_lettered_total are the counts of BullMQ's and Bull's getMetrics(), kept only
# by workers with the metrics option: two Workers complete four jobs and fail one for good, then
# stop, and the counts stay while the consumers go to 0. The exporter scrapes as a Redis ACL user
# allowed only the documented read-only commands; round trips are 3 whatever the number of
# queues; `qrel check` names the failed job; faults (down, wrong password, silent, garbage) give up
# 0 with their reason while a healthy source reports; no password appears in any output; bad
# configs fail --config.check with file:line:col.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"
# shellcheck source=../lib/redis_jobs.sh
. "$QREL_SOURCE_DIR/tests/lib/redis_jobs.sh"

# ---- the peers: BullMQ 6.7.0 and ioredis 6.0.0 on Node 22 from npm, installed once into the
# build dir (like the SQS emulator)
npm_peers_install bullmq "BullMQ 6.7.0, ioredis 6.0.0 and Node 22, about a minute"

secret="bq-$RANDOM-secret"
# The minimal ACL of docs/kinds/bullmq.md.
redis_jobs_start '%R~bull:*' +time +scan +llen +zcard +lindex +lrange +zrange +zrevrange +xrange +xrevrange +hmget '+client|list'
bull() { (cd "$PEERS" && exec "$NODE" bull.mjs "$RP" "$secret" "$@"); }
# For `bull_bg ... &`: the background subshell becomes node itself, so $! is node's pid and the
# cleanup's kill reaches it (a subshell around it would be killed and leave node running).
bull_bg() { cd "$PEERS" && exec "$NODE" bull.mjs "$RP" "$secret" "$@"; }

scene_start
bull_bg setup > "$T/setup.log" 2>&1 &
PIDS+=("$!")
# Beside it, a Bull 4 queue (npm bull 4.16.5, bull4.mjs), which has no `meta` key.
(cd "$PEERS" && exec "$NODE" bull4.mjs "$RP" "$secret" setup legacy) > "$T/bull4.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 600); do grep -q '^ready$' "$T/setup.log" && break; sleep 0.05; done
expect_eq "BullMQ set the scene" "$(tail -1 "$T/setup.log")" ready
for _ in $(seq 1 600); do grep -q '^ready$' "$T/bull4.log" && break; sleep 0.05; done
expect_eq "Bull 4 set the scene" "$(tail -1 "$T/bull4.log")" ready

job_scrape "$T/bq.yml" bull bullmq
# Bull 4, found without `queues:` (by its job counter `id`): the figures are Bull's own
# getJobCounts(); its two prioritized jobs, in `wait` and in the `priority` set, count once.
bull4=$(sed -n 's/^counts legacy //p' "$T/bull4.log")
expect_eq "Bull's own counts" "$bull4" "ready=4 in_flight=1 delayed=1 failed=1 priority=2"
expect_states "$P" legacy ready=4 in_flight=1 delayed=1
expect_metric "$P" 1 qrel_dead_letter_messages 'queue="legacy"' 'dead_letter_queue="failed"'
expect_recent "$P" legacy qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds \
  qrel_dead_letter_oldest_age_seconds qrel_dead_letter_newest_age_seconds
# qrel_source_queues: the queues the source found and exported, BullMQ's email and Bull's legacy.
expect_metric "$P" 2 qrel_source_queues 'source="bull"'
expect_states "$P" email ready=2 in_flight=1 delayed=2
expect_metric "$P" 1 qrel_dead_letter_messages 'queue="email"' 'dead_letter_queue="failed"'
expect_metric "$P" 30 qrel_lease_timeout_seconds 'queue="email"'
expect_metric "$P" 0 qrel_lease_expiries_total 'queue="email"'
expect_metric "$P" 0 qrel_messages_redelivered 'queue="email"'
expect_recent "$P" email qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds \
  qrel_dead_letter_oldest_age_seconds qrel_dead_letter_newest_age_seconds
expect_absent "$P" qrel_lease_margin_ratio 'queue="email"'
expect_eq "round trips for 2 queues (discovered)" "$(round_trips bullmq "$T/bq.log")" 3
# Consumers: the one Worker of email and Bull's Queue#process of legacy, as each counts them.
expect_eq "BullMQ's workers of email" "$(bull workers email)" 1
expect_metric "$P" 1 qrel_queue_consumers 'queue="email"'
expect_eq "Bull's own flow figures" "$(sed -n 's/^flow legacy //p' "$T/bull4.log")" \
  "completed=0 failed=1 workers=1"
expect_metric "$P" 1 qrel_queue_consumers 'queue="legacy"'
# Flow: Bull 4 with the metrics option counted its job failed for good. No job completed, so
# there is no metrics:completed hash (getMetrics reads its absence as 0, which qrel cannot tell
# from metrics being off): no series. email's Worker runs without the option: no counts at all.
expect_metric "$P" 1 qrel_messages_dead_lettered_total 'queue="legacy"'
expect_absent "$P" qrel_messages_consumed_total 'queue="legacy"'
expect_absent "$P" qrel_messages_consumed_total 'queue="email"'
expect_absent "$P" qrel_messages_dead_lettered_total 'queue="email"'
# The same scene read through the fault proxy (replies cut into 1- and 7-byte pieces).
job_same_via_proxy "$T/bq.yml" bull

expect_check "$T/bq.yml" 2 "a failed job" "the failed job of email" \
  '^CRITICAL bull email: dead-letter queue failed holds 1 message.*\[dead_letter_queue_not_empty\]$'

# A source whose discovery matches nothing (a prefix no queue has) is up with no queue series:
# qrel_source_queues 0 says so, and qrel check warns (exit 1).
job_config "$T/none.yml" none bullmq "prefix: nothing"
"$QREL" scrape --config.file="$T/none.yml" > "$T/none.prom"
expect_metric "$T/none.prom" 1 qrel_collector_up 'source="none"'
expect_metric "$T/none.prom" 0 qrel_source_queues 'source="none"'
expect_check "$T/none.yml" 1 "a source that watches nothing" "the source that watches nothing" \
  '^WARNING none "": source none watches nothing: its discovery/pattern matched no queue.*\[source_watches_nothing\]$'

# Hostile job hashes no BullMQ writes (by hand: that is the point), in a queue of its own: an
# active job processed at -5 ms (which once gave a lease age of 1.8e9 s) and a waiting one whose
# timestamp is NaN. Each is skipped and counted; the source stays up, and every other figure is
# what it was.
R HSET bull:hostile:meta opts.maxLenEvents 10000 >/dev/null
R RPUSH bull:hostile:active h1 >/dev/null
R HSET bull:hostile:h1 timestamp 1700000000000 processedOn -5 attemptsMade 0 >/dev/null
R RPUSH bull:hostile:wait h2 >/dev/null
R HSET bull:hostile:h2 timestamp NaN >/dev/null
$QREL scrape --config.file="$T/bq.yml" > "$T/hostile.prom"
expect_metric "$T/hostile.prom" 1 qrel_collector_up 'source="bull"'
expect_states "$T/hostile.prom" email ready=2 in_flight=1 delayed=2
expect_metric "$T/hostile.prom" 1 qrel_dead_letter_messages 'queue="email"'
expect_recent "$T/hostile.prom" email qrel_lease_oldest_age_seconds qrel_queue_oldest_message_age_seconds
expect_states "$T/hostile.prom" hostile ready=1 in_flight=1
expect_absent "$T/hostile.prom" qrel_lease_oldest_age_seconds 'queue="hostile"'
expect_absent "$T/hostile.prom" qrel_queue_oldest_message_age_seconds 'queue="hostile"'
expect_metric "$T/hostile.prom" 2 qrel_skipped_entries 'queue="hostile"' 'reason="bad_timestamp"'
R DEL bull:hostile:meta bull:hostile:active bull:hostile:h1 bull:hostile:wait bull:hostile:h2 >/dev/null

# A stall: the running exporter reads the events since its previous scrape.
job_config "$T/stall.yml" bull bullmq "queues: [email, cpu]"
start_exporter "$T/stall.yml"
scrape "$T/before.prom"
expect_metric "$T/before.prom" 0 qrel_lease_expiries_total 'queue="cpu"'
bull_bg stall cpu > "$T/stall.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 200); do [ "$(R LLEN bull:cpu:active)" = 1 ] && break; sleep 0.05; done
bull_bg checker cpu > "$T/checker.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 200); do R XRANGE bull:cpu:events - + | grep -qx stalled && break; sleep 0.05; done
scrape "$T/after.prom"
expect_metric "$T/after.prom" 1 qrel_lease_expiries_total 'queue="cpu"'
expect_metric "$T/after.prom" 0 qrel_lease_expiries_total 'queue="email"'
scrape "$T/again.prom"
expect_metric "$T/again.prom" 1 qrel_lease_expiries_total 'queue="cpu"'
stop_exporter

# Flow and consumers: two Workers of ledger with the metrics option (one named billing) complete
# four jobs, one after a failed attempt (a retry, no dead letter), and fail one for good; qrel's
# figures are BullMQ's own getMetrics() and getWorkersCount(). Once the workers' process ends and
# BullMQ counts no worker, the consumers are 0 and the counters stay.
bull_bg flow ledger > "$T/flow.log" 2>&1 &
FLOW=$!
PIDS+=("$FLOW")
for _ in $(seq 1 600); do grep -q '^ready$' "$T/flow.log" && break; sleep 0.05; done
expect_eq "BullMQ's own flow figures" "$(sed -n 's/^flow ledger //p' "$T/flow.log")" \
  "completed=4 failed=1 workers=2"
job_config "$T/flow.yml" bull bullmq "queues: [ledger]"
$QREL scrape --config.file="$T/flow.yml" > "$T/flow.prom"
expect_metric "$T/flow.prom" 2 qrel_queue_consumers 'queue="ledger"'
expect_metric "$T/flow.prom" 4 qrel_messages_consumed_total 'queue="ledger"'
expect_metric "$T/flow.prom" 1 qrel_messages_dead_lettered_total 'queue="ledger"'
expect_metric "$T/flow.prom" 1 qrel_dead_letter_messages 'queue="ledger"'
kill "$FLOW"
for _ in $(seq 1 100); do [ "$(bull workers ledger)" = 0 ] && break; sleep 0.1; done
expect_eq "BullMQ's workers of ledger once they stopped" "$(bull workers ledger)" 0
$QREL scrape --config.file="$T/flow.yml" > "$T/stopped.prom"
expect_metric "$T/stopped.prom" 0 qrel_queue_consumers 'queue="ledger"'
expect_metric "$T/stopped.prom" 4 qrel_messages_consumed_total 'queue="ledger"'
expect_metric "$T/stopped.prom" 1 qrel_messages_dead_lettered_total 'queue="ledger"'
# A user made from the ACL list before CLIENT LIST joined it: the scrape fails with reason auth,
# naming the command; count_workers: false sends no CLIENT LIST: up, no consumers, the rest read.
R ACL SETUSER qrel '-client|list' >/dev/null
rc=0; $QREL scrape --config.file="$T/flow.yml" > "$T/noperm.prom" 2> "$T/noperm.log" || rc=$?
expect_eq "qrel scrape's exit status with the source down" "$rc" 1
expect_metric "$T/noperm.prom" 0 qrel_collector_up 'source="bull"'
expect_metric "$T/noperm.prom" 1 qrel_collector_errors_total 'source="bull"' 'reason="auth"'
expect_line "the refusal names the command" "CLIENT: permission denied: NOPERM .*'client|list'" "$T/noperm.log"
job_config "$T/nolist.yml" bull bullmq "queues: [ledger]" "count_workers: false"
$QREL scrape --config.file="$T/nolist.yml" > "$T/nolist.prom"
expect_metric "$T/nolist.prom" 1 qrel_collector_up 'source="bull"'
expect_absent "$T/nolist.prom" qrel_queue_consumers 'queue="ledger"'
expect_metric "$T/nolist.prom" 4 qrel_messages_consumed_total 'queue="ledger"'
R ACL SETUSER qrel '+client|list' >/dev/null

# exclude: a queue BullMQ made itself (Queue.add, one waiting job) is read without the key; with
# exclude ["scratch*"] no key of it is read, and the queues are those without it less scratch1.
bull spread scratch 1
expect_excluded bullmq scratch1 "scratch*"
expect_states "$T/incl.prom" scratch1 ready=1
expect_states "$T/excl.prom" email ready=2 in_flight=1 delayed=2

# Round trips do not grow with queues: 30 more queues, still 3.
bull spread q 30
expect_flat_round_trips bullmq "$T/bq.yml" 33 3 ready

# Faults, each beside the healthy source.
job_faults_config bullmq "queues: [email]"
job_faults_check "$T/bq.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key bullmq "misspelt key" 'bad.yml:5:5: unknown key "lockDuration" in source "b" (known keys:' \
  "lockDuration: 30000"
bad_job_key bullmq "exclude with queues" \
  'bad.yml:6:14: exclude: only without queues (it leaves out queues found in SCAN <prefix>:*:meta and <prefix>:*:id)' \
  "queues: [a]
    exclude: [b]"
bad_job_key bullmq "empty prefix" 'bad.yml:5:13: prefix: want a non-empty string' \
  "prefix: ''"

finish
