#!/usr/bin/env bash
# The beanstalkd collector against a real beanstalkd (Debian's), driven by its Ruby client
# (beaneater, from Debian) as producers and workers use it: jobs ready, one held by a live worker,
# one delayed, one buried by a worker that gave up, one whose worker overran its TTR (a timeout:
# the job is ready again). Every series is asserted exactly (ages within the time the test took);
# a named tube that does not exist reads as empty; round trips per scrape are 3 whatever the
# number of tubes; a scrape sends no command that changes a job (the server's cmd-* counters);
# `qrel check` names the buried job and the tube no worker watches. Faults: down (connect), silent (timeout, within the source
# timeout), garbage (protocol), a body over max_response_bytes (limit), each while a healthy
# source still reports; bad configs fail --config.check with file:line:col.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

JOBS="ruby $QREL_SOURCE_DIR/tests/peers/beanstalkd/jobs.rb"

start_beanstalkd BP
B=127.0.0.1:$BP
t0=$(date +%s)
$JOBS "$B" put emails 4 60
$JOBS "$B" put_delayed emails 3600
$JOBS "$B" bury emails
$JOBS "$B" hold emails 60 "$T/held" &
PIDS+=("$!")
$JOBS "$B" put short 1 1
# Flow: a worker completes (deletes) 3 jobs of flow and buries the fourth.
$JOBS "$B" put flow 4 60
$JOBS "$B" work flow 3
$JOBS "$B" bury flow
# The holder keeps the 1 s TTR job until the server has counted its timeout, polling over its own
# connection, which is what makes beanstalkd 1.12 check the deadline (jobs.rb says why); about
# 1.1 s on a quiet machine, 30 s only counts when the server never counts it.
$JOBS "$B" overrun short 30 || not_ok "the server counted the overrun's timeout within 30 s"
for _ in $(seq 1 200); do [ -s "$T/held" ] && break; sleep 0.05; done
[ -s "$T/held" ] || not_ok "the holding worker reserved a job"

cat > "$T/all.yml" <<EOF
sources:
  - name: tubes
    kind: beanstalkd
    address: $B
EOF
stats_before=$($JOBS "$B" stats)
$QREL scrape --config.file="$T/all.yml" --log.level=debug > "$T/all.prom" 2> "$T/all.log"
stats_after=$($JOBS "$B" stats)
elapsed=$(( $(date +%s) - t0 + 1 ))

expect_metric "$T/all.prom" 1 qrel_collector_up 'source="tubes"'
expect_metric "$T/all.prom" 2 qrel_queue_messages 'queue="emails"' 'state="ready"'
expect_metric "$T/all.prom" 1 qrel_queue_messages 'queue="emails"' 'state="in_flight"'
expect_metric "$T/all.prom" 1 qrel_queue_messages 'queue="emails"' 'state="delayed"'
expect_metric "$T/all.prom" 1 qrel_dead_letter_messages 'queue="emails"' 'dead_letter_queue="buried"'
expect_metric "$T/all.prom" 60 qrel_lease_timeout_seconds 'queue="emails"'
expect_between "emails oldest ready age" \
  "$(mval "$T/all.prom" qrel_queue_oldest_message_age_seconds 'queue="emails"')" 0 "$elapsed"
expect_between "emails oldest buried age" \
  "$(mval "$T/all.prom" qrel_dead_letter_oldest_age_seconds 'queue="emails"')" 0 "$elapsed"
# The overrun job timed out and is ready again; its TTR of 1 s is the tube's lease.
expect_metric "$T/all.prom" 1 qrel_queue_messages 'queue="short"' 'state="ready"'
expect_metric "$T/all.prom" 0 qrel_queue_messages 'queue="short"' 'state="in_flight"'
expect_metric "$T/all.prom" 0 qrel_dead_letter_messages 'queue="short"'
expect_metric "$T/all.prom" 1 qrel_lease_timeout_seconds 'queue="short"'
expect_absent "$T/all.prom" qrel_dead_letter_oldest_age_seconds 'queue="short"'
expect_metric "$T/all.prom" "$(awk '$1 == "job_timeouts" { print $2 }' <<<"$stats_after")" \
  qrel_lease_expiries_total 'kind="beanstalkd"'
expect_eq "the server counted the overrun's one timeout" \
  "$(awk '$1 == "job_timeouts" { print $2 }' <<<"$stats_after")" 1
expect_metric "$T/all.prom" 0 qrel_queue_messages 'queue="default"' 'state="ready"'
expect_absent "$T/all.prom" qrel_queue_oldest_message_age_seconds 'queue="default"'
# Consumers: the connections watching each tube, as stats-tube counts them (the holding worker
# watches emails only; the overrun's worker has gone; default, which every connection watches,
# has none), and qrel check calls short's ready job unconsumed.
tube_watching() { $JOBS "$B" tube_stats "$1" | awk '$1 == "current_watching" { print $2 }'; }
expect_eq "stats-tube: emails watched by 1, short by 0" "$(tube_watching emails) $(tube_watching short)" "1 0"
expect_metric "$T/all.prom" 1 qrel_queue_consumers 'queue="emails"'
expect_metric "$T/all.prom" 0 qrel_queue_consumers 'queue="short"'
expect_absent "$T/all.prom" qrel_queue_consumers 'queue="default"'
$QREL check --config.file="$T/all.yml" > "$T/all_check.txt" 2>&1 || true
expect_eq "qrel check: short has a ready job and no worker" \
  "$(grep '\[backlog_without_consumer\]$' "$T/all_check.txt")" \
  "WARNING tubes short: 1 message ready and no consumer: nothing takes them, so the backlog only grows and ages; start workers that watch this tube (watch, then reserve), or stop putting jobs into it [backlog_without_consumer]"
# Consumed: the tube's cmd-delete of stats-tube, the jobs its workers deleted.
tube_stat() { $JOBS "$B" tube_stats "$1" | awk -v k="$2" '$1 == k { print $2 }'; }
expect_eq "stats-tube flow: cmd-delete" "$(tube_stat flow cmd_delete)" 3
expect_metric "$T/all.prom" 3 qrel_messages_consumed_total 'queue="flow"'
expect_metric "$T/all.prom" "$(tube_stat emails cmd_delete)" qrel_messages_consumed_total 'queue="emails"'
expect_metric "$T/all.prom" 0 qrel_messages_consumed_total 'queue="emails"'
expect_absent "$T/all.prom" qrel_messages_dead_lettered_total # beanstalkd counts no buries per tube
expect_eq "round trips for 4 tubes" \
  "$(sed -nE 's/.*beanstalkd collection done.* round_trips=([0-9]+).*/\1/p' "$T/all.log")" 4

# Read-only: no command that changes a job or a tube was counted by the server during the scrape.
for c in cmd_put cmd_reserve cmd_reserve_with_timeout cmd_delete cmd_release cmd_bury cmd_kick \
  cmd_touch cmd_watch cmd_ignore cmd_pause_tube total_jobs; do
  expect_eq "server $c unchanged by a scrape" \
    "$(awk -v k="$c" '$1 == k { print $2 }' <<<"$stats_after")" \
    "$(awk -v k="$c" '$1 == k { print $2 }' <<<"$stats_before")"
done

# exclude: list-tubes finds emails, short, flow and default; short is left out (and counted), the
# others are not.
cat > "$T/excl.yml" <<EOF
sources:
  - name: tubes
    kind: beanstalkd
    address: $B
    exclude: ["sh*"]
EOF
$QREL scrape --config.file="$T/excl.yml" > "$T/excl.prom"
expect_absent "$T/excl.prom" qrel_queue_messages 'queue="short"'
expect_metric "$T/excl.prom" 2 qrel_queue_messages 'queue="emails"' 'state="ready"'
expect_metric "$T/excl.prom" 0 qrel_queue_messages 'queue="default"' 'state="ready"'
expect_metric "$T/excl.prom" 1 qrel_excluded_objects 'object="tube"'
expect_absent "$T/all.prom" qrel_excluded_objects

# Named tubes: one that does not exist (beanstalkd drops empty tubes) reads as empty.
cat > "$T/named.yml" <<EOF
sources:
  - name: tubes
    kind: beanstalkd
    address: $B
    tubes: [emails, never-used]
EOF
$QREL scrape --config.file="$T/named.yml" > "$T/named.prom"
expect_metric "$T/named.prom" 2 qrel_queue_messages 'queue="emails"' 'state="ready"'
expect_metric "$T/named.prom" 0 qrel_queue_messages 'queue="never-used"' 'state="ready"'
expect_metric "$T/named.prom" 0 qrel_dead_letter_messages 'queue="never-used"'
expect_absent "$T/named.prom" qrel_queue_messages 'queue="default"'

# qrel check: the buried job is a dead letter (CRITICAL, exit 2).
expect_exit "qrel check exit status with a buried job" 2 "$T/check.txt" $QREL check --config.file="$T/named.yml"
if grep -q '^CRITICAL tubes emails: dead-letter queue buried holds 1 message.*\[dead_letter_queue_not_empty\]$' "$T/check.txt"; then
  ok "qrel check names the buried job of emails"
else
  not_ok "qrel check names the buried job of emails: $(cat "$T/check.txt")"
fi

# Round trips do not grow with tubes: 40 more tubes, still 4.
$JOBS "$B" spread t 40
$QREL scrape --config.file="$T/all.yml" --log.level=debug > "$T/many.prom" 2> "$T/many.log"
expect_eq "round trips for 44 tubes" \
  "$(sed -nE 's/.*beanstalkd collection done.* round_trips=([0-9]+).*/\1/p' "$T/many.log")" 4
expect_metric "$T/many.prom" 1 qrel_queue_messages 'queue="t40"' 'state="ready"'

# Faults, each beside the healthy source.
fault_ports
$JOBS "$B" put big 1 60 4096

# Every tube (44, and a 4,096-byte job peeked at the head of big) read through the fault proxy,
# which cuts every reply into 1- and 7-byte pieces: status lines cut from their bodies, CRLFs cut
# in two. The series must be those read directly (ages are measured a moment apart).
expect_same_via_proxy "$T/all.yml" tubes "$B"
cat > "$T/faults.yml" <<EOF
sources:
  - name: healthy
    kind: beanstalkd
    address: $B
    tubes: [emails]
$(fault_sources beanstalkd)
  - name: capped
    kind: beanstalkd
    address: $B
    tubes: [big]
    max_response_bytes: 1024
EOF
fault_scrape "$T/faults.yml" "$T/faults.prom"
expect_metric "$T/faults.prom" 2 qrel_queue_messages 'source="healthy"' 'queue="emails"' 'state="ready"'
expect_fault_reasons "$T/faults.prom" down:connect silent:timeout garbage:protocol capped:limit
stop_exporter

# Bad configuration: file:line:col and what was expected, exit 1.
badcheck "address without host" 'bad.yml:4:14: address: want "host:port", got ":11300"' \
  "sources:
  - name: b
    kind: beanstalkd
    address: :11300"
badcheck "tube name with a space" 'bad.yml:5:13: tubes: want a beanstalkd tube name' \
  "sources:
  - name: b
    kind: beanstalkd
    address: 127.0.0.1
    tubes: [a b, c]"
badcheck "misspelt key" 'bad.yml:5:5: unknown key "tube" in source "b" (known keys:' \
  "sources:
  - name: b
    kind: beanstalkd
    address: 127.0.0.1
    tube: [a]"
badcheck "missing address" 'missing required key "address"' \
  "sources:
  - name: b
    kind: beanstalkd"

finish
