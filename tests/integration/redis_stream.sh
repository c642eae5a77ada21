#!/usr/bin/env bash
# The redis_stream collector against a real redis-server: a known workload (entries with known
# ages, pending entries with known delivery counts and idle times set by XCLAIM, dead-letter
# streams) gives exactly the expected series; nil lag after XDEL leaves `ready` out; binary and
# quoted key names are escaped; only read-only commands are sent; round trips per scrape do not
# grow with the number of streams.
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

start_redis_tls RP RP_TLS
R() { redis-cli -p "$RP" "$@"; }

# Flow (before the clock is read, as the ages below are measured from it): a consumer of group
# mailer reads with XREADGROUP one entry at a time and acknowledges each with XACK, the poison
# ones after moving them to flow.dlq (XADD, then XACK, as a consumer dead-letters); then a second
# consumer takes one entry and holds it. qrel_messages_consumed_total is the group's entries-read
# - pending of XINFO GROUPS: 7 acknowledged, the dead-lettered ones included.
R XGROUP CREATE flow mailer 0 MKSTREAM >/dev/null
for job in 1 2 poison 4 5 poison 7 8; do R XADD flow '*' job "$job" >/dev/null; done
stream_worker() { # stream_worker COUNT: take and acknowledge COUNT entries of flow as consumer w1
  local n out id job
  for n in $(seq 1 "$1"); do
    out=$(R XREADGROUP GROUP mailer w1 COUNT 1 STREAMS flow '>')
    id=$(sed -n 2p <<<"$out") job=$(sed -n 4p <<<"$out")
    expect_cmd "flow: entry $n of $1 delivered" test -n "$id"
    [ "$job" != poison ] || R XADD flow.dlq '*' job "$job" origin "$id" >/dev/null
    expect_eq "XACK of flow entry $n" "$(R XACK flow mailer "$id")" 1
  done
}
stream_worker 7
R XREADGROUP GROUP mailer w2 COUNT 1 STREAMS flow '>' >/dev/null     # held, not acknowledged
flow_group() { R XINFO GROUPS flow | tr -d '\r' | awk -v k="$1" 'p { print; exit } $0 == k { p = 1 }'; }
expect_eq "flow: XINFO GROUPS entries-read" "$(flow_group entries-read)" 8
expect_eq "flow: XINFO GROUPS pending" "$(flow_group pending)" 1

# Server time in ms: entry ids below are placed at known ages relative to it.
redis_clock R

R XGROUP CREATE orders workers 0 MKSTREAM >/dev/null
for age in 300 240 180 120 60 30; do R XADD orders "$(stream_id "$age")" age "$age" >/dev/null; done
R XREADGROUP GROUP workers c1 COUNT 4 STREAMS orders '>' >/dev/null   # 300,240,180,120 pending
R XACK orders workers "$(stream_id 180)" >/dev/null                           # 3 pending, 2 undelivered
# Known delivery counts and idle times (what a lease expiry and XAUTOCLAIM would leave behind).
R XCLAIM orders workers c2 0 "$(stream_id 300)" IDLE 45000 RETRYCOUNT 3 >/dev/null
R XCLAIM orders workers c2 0 "$(stream_id 240)" IDLE 10000 RETRYCOUNT 2 >/dev/null
R XGROUP CREATE orders audit '$' >/dev/null                           # filtered out below
R XADD orders.dlq "$(stream_id 200)" why expired >/dev/null

# A pattern with a per-stream dead-letter template; events:a.dlq must not become a queue itself.
for s in a b; do
  R XGROUP CREATE "events:$s" g 0 MKSTREAM >/dev/null
  R XADD "events:$s" "$(stream_id 20)" n 1 >/dev/null
done
R XADD events:a.dlq "$(stream_id 100)" n 1 >/dev/null
R XADD events:a.dlq "$(stream_id 50)" n 2 >/dev/null

# lag becomes nil after XDEL of an entry the group has not read.
R XGROUP CREATE trimmed g 0 MKSTREAM >/dev/null
R XADD trimmed "$(stream_id 9)" n 1 >/dev/null
R XADD trimmed "$(stream_id 8)" n 2 >/dev/null
R XADD trimmed "$(stream_id 7)" n 3 >/dev/null
R XREADGROUP GROUP g c COUNT 1 STREAMS trimmed '>' >/dev/null
R XDEL trimmed "$(stream_id 7)" >/dev/null

# Ids chosen by the writer (XADD with an explicit id): 1-1 is 1970 by its id. No age is made of
# such an id (it would say 56 years and page); each refused id is a skipped bad_timestamp entry.
R XGROUP CREATE handset g 0 MKSTREAM >/dev/null
R XADD handset 1-1 n 1 >/dev/null
R XADD handset 1-2 n 2 >/dev/null
R XREADGROUP GROUP g c COUNT 1 STREAMS handset '>' >/dev/null       # 1-1 pending, 1-2 undelivered
R XADD handset.dlq 1-1 n 1 >/dev/null

# Key names that need escaping: a quote, a backslash, a newline and an invalid UTF-8 byte.
R XGROUP CREATE "$(printf 'odd"na\\me\nx\377')" g 0 MKSTREAM >/dev/null

cat > "$T/qrel.yml" <<YML
sources:
$(redis_source cache "$RP")
    streams:
      - name: orders
        groups: [workers]
        claim_min_idle: 30s
        max_deliveries: 3
        dead_letter_stream: orders.dlq
      - pattern: "events:*"
        dead_letter_stream: "{stream}.dlq"
      - name: trimmed
      - pattern: "odd*"
      - name: handset
        dead_letter_stream: handset.dlq
      - name: flow
        dead_letter_stream: flow.dlq
YML

"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="cache"' 'kind="redis_stream"'

o='queue="orders",group="workers"'
expect_metric "$T/m.txt" 2 qrel_queue_messages "$o" 'state="ready"'
expect_metric "$T/m.txt" 3 qrel_queue_messages "$o" 'state="in_flight"'
expect_metric "$T/m.txt" 2 qrel_messages_redelivered "$o"
expect_metric "$T/m.txt" 30 qrel_lease_timeout_seconds "$o"
expect_metric "$T/m.txt" 3 qrel_max_deliveries "$o"
expect_metric "$T/m.txt" 90 qrel_retry_horizon_seconds "$o"
# Ages are measured against the server clock a moment later: allow the seconds the test took.
expect_between "oldest message age (pending entry at -300 s)" \
  "$(mval "$T/m.txt" qrel_queue_oldest_message_age_seconds "$o")" 300 310
expect_between "consumer lag (first undelivered entry at -60 s)" \
  "$(mval "$T/m.txt" qrel_consumer_lag_seconds "$o")" 60 70
expect_between "lease oldest age (idle set to 45 s)" \
  "$(mval "$T/m.txt" qrel_lease_oldest_age_seconds "$o")" 45 55
expect_between "lease margin (30 s / 45 s)" \
  "$(mval "$T/m.txt" qrel_lease_margin_ratio "$o")" 0.54 0.667
expect_absent "$T/m.txt" qrel_queue_messages 'queue="orders",group="audit"'
# Consumed: entries-read - pending of the same XINFO GROUPS reply (orders: 4 delivered, 3 pending).
expect_metric "$T/m.txt" 1 qrel_messages_consumed_total "$o"
expect_metric "$T/m.txt" $(($(flow_group entries-read) - $(flow_group pending))) \
  qrel_messages_consumed_total 'queue="flow",group="mailer"'
expect_metric "$T/m.txt" 7 qrel_messages_consumed_total 'queue="flow",group="mailer"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_messages 'queue="flow",dead_letter_queue="flow.dlq"'
expect_metric "$T/m.txt" 0 qrel_messages_consumed_total 'queue="trimmed",group="g"'
expect_absent "$T/m.txt" qrel_messages_dead_lettered_total # Redis counts no dead-letter moves
expect_metric "$T/m.txt" 1 qrel_dead_letter_messages 'queue="orders",dead_letter_queue="orders.dlq"'
expect_between "DLQ oldest age" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="orders",dead_letter_queue="orders.dlq"')" 200 210
expect_between "DLQ newest age (its only entry)" \
  "$(mval "$T/m.txt" qrel_dead_letter_newest_age_seconds 'queue="orders",dead_letter_queue="orders.dlq"')" 200 210

expect_metric "$T/m.txt" 1 qrel_queue_messages 'queue="events:a",group="g"' 'state="ready"'
expect_metric "$T/m.txt" 0 qrel_queue_messages 'queue="events:a",group="g"' 'state="in_flight"'
expect_metric "$T/m.txt" 0 qrel_lease_oldest_age_seconds 'queue="events:a",group="g"'
expect_absent "$T/m.txt" qrel_lease_margin_ratio 'queue="events:a"'
expect_absent "$T/m.txt" qrel_lease_timeout_seconds 'queue="events:a"'
expect_metric "$T/m.txt" 2 qrel_dead_letter_messages 'queue="events:a",dead_letter_queue="events:a.dlq"'
expect_between "events:a DLQ oldest age" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="events:a",dead_letter_queue="events:a.dlq"')" 100 110
expect_between "events:a DLQ newest age (entries at -100 s and -50 s)" \
  "$(mval "$T/m.txt" qrel_dead_letter_newest_age_seconds 'queue="events:a",dead_letter_queue="events:a.dlq"')" 50 60
expect_metric "$T/m.txt" 0 qrel_dead_letter_messages 'queue="events:b",dead_letter_queue="events:b.dlq"'
expect_absent "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="events:b"'
expect_absent "$T/m.txt" qrel_dead_letter_newest_age_seconds 'queue="events:b"'
expect_absent "$T/m.txt" qrel_queue_messages 'queue="events:a.dlq"'
expect_absent "$T/m.txt" qrel_excluded_objects # no exclude key: no series

# exclude on a pattern: events:b, which the read above has, is left out and counted; events:a stays.
cat > "$T/excl.yml" <<YML
sources:
$(redis_source cache "$RP")
    streams: [{pattern: "events:*", exclude: ["*:b"], dead_letter_stream: "{stream}.dlq"}]
YML
"$QREL" scrape --config.file="$T/excl.yml" > "$T/excl.txt"
expect_metric "$T/excl.txt" 1 qrel_queue_messages 'queue="events:a",group="g"' 'state="ready"'
expect_absent "$T/excl.txt" qrel_queue_messages 'queue="events:b"'
expect_absent "$T/excl.txt" qrel_dead_letter_messages 'queue="events:b"'
expect_metric "$T/excl.txt" 1 qrel_excluded_objects 'object="stream"'

expect_absent "$T/m.txt" qrel_queue_messages 'queue="trimmed",group="g"' 'state="ready"'
expect_metric "$T/m.txt" 1 qrel_queue_messages 'queue="trimmed",group="g"' 'state="in_flight"'

odd='queue="odd\"na\\me\nx'$'\xef\xbf\xbd''"'
expect_metric "$T/m.txt" 0 qrel_queue_messages "$odd" 'state="ready"'

# The stream of hand-chosen ids: still up, its counts read, no age of it (none over a day), its
# refused ids counted (the pending 1-1 and the undelivered 1-2; the dead-letter stream's 1-1, the
# oldest and newest entry at once, on the dead-letter stream), and no other stream's.
h='queue="handset",group="g"'
expect_metric "$T/m.txt" 1 qrel_queue_messages "$h" 'state="in_flight"'
expect_metric "$T/m.txt" 1 qrel_queue_messages "$h" 'state="ready"'
expect_absent "$T/m.txt" qrel_queue_oldest_message_age_seconds "$h"
expect_absent "$T/m.txt" qrel_consumer_lag_seconds "$h"
expect_metric "$T/m.txt" 1 qrel_dead_letter_messages 'queue="handset",dead_letter_queue="handset.dlq"'
expect_absent "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="handset"'
expect_absent "$T/m.txt" qrel_dead_letter_newest_age_seconds 'queue="handset"'
expect_eq "age series of handset over a day" "$(awk '/^qrel_[a-z_]*(age|lag)_seconds\{.*queue="handset/ && $NF > 86400' "$T/m.txt")" ""
expect_metric "$T/m.txt" 2 qrel_skipped_entries 'queue="handset"' 'reason="bad_timestamp"'
expect_metric "$T/m.txt" 1 qrel_skipped_entries 'queue="handset.dlq"' 'reason="bad_timestamp"'
expect_eq "skipped entries series (handset's two only)" "$(grep -c '^qrel_skipped_entries' "$T/m.txt" || true)" 2
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"

# The same workload read through the fault proxy, which cuts every reply into 1- and 7-byte pieces:
# the series must be the same (ages are measured a moment apart: their values are not compared).
expect_same_via_proxy "$T/qrel.yml" cache "127.0.0.1:$RP"
# And over the TLS port of the same Redis (issue 23): the same series.
expect_same_via_tls "$T/qrel.yml" cache "127.0.0.1:$RP" "$RP_TLS"

# The monitoring user of docs/kinds/redis_stream.md is enough for every command sent.
R ACL SETUSER qrel on '>acl-pw-7f3e' '%R~*' '+xinfo|groups' '+xinfo|consumers' +xpending +xrange +xrevrange +xlen +scan +time >/dev/null
sed 's/^    address: .*/&\n    username: qrel\n    password_env: QREL_TEST_REDIS_PW/' "$T/qrel.yml" > "$T/acl.yml"
QREL_TEST_REDIS_PW=acl-pw-7f3e "$QREL" scrape --config.file="$T/acl.yml" > "$T/acl.txt" 2> "$T/acl.log" || true
expect_metric "$T/acl.txt" 1 qrel_collector_up 'source="cache"' 'kind="redis_stream"'
expect_eq "series as the documented ACL user" \
  "$(grep -c '^qrel_' "$T/acl.txt")" "$(grep -c '^qrel_' "$T/m.txt")"
expect_cmd "ACL user's password appears nowhere" bash -c "! grep -q acl-pw-7f3e '$T/acl.txt' '$T/acl.log'"

# Read-only and pipelined: count commands by name with INFO commandstats around one scrape.
for i in $(seq 1 40); do
  R XGROUP CREATE "rt:$i" g 0 MKSTREAM >/dev/null
  R XADD "rt:$i" '*' n 1 >/dev/null
  R XADD "rt:$i" '*' n 2 >/dev/null
  R XREADGROUP GROUP g c COUNT 1 STREAMS "rt:$i" '>' >/dev/null
done
round_trips() { # round_trips MAX_STREAMS [DLQ]: scrape rt:* capped at MAX and print round_trips from the log
  local dlq=""
  [ -z "${2:-}" ] || dlq=", dead_letter_stream: \"$2\""
  cat > "$T/rt.yml" <<YML
sources:
$(redis_source rt "$RP")
    max_streams: $1
    streams: [{pattern: "rt:*"$dlq}]
YML
  "$QREL" scrape --config.file="$T/rt.yml" --log.level=debug > "$T/rt.txt" 2> "$T/rt.log"
  sed -nE 's/.*msg="redis collection done".* round_trips=([0-9]+).*/\1/p' "$T/rt.log" | tail -1
}
R CONFIG RESETSTAT >/dev/null
rt40=$(round_trips 40)
R INFO commandstats | tr -d '\r' > "$T/stats.txt"
rt10=$(round_trips 10)
expect_eq "streams collected with max_streams 40" "$(grep -c '^qrel_queue_messages{.*state="in_flight"' "$T/rt.txt" || true)" 10
expect_cmd "round trips reported" test -n "$rt40"
expect_eq "round trips for 40 streams equal those for 10" "$rt40" "$rt10"
calls() { sed -nE "s/^cmdstat_$1:calls=([0-9]+),.*/\1/p" "$T/stats.txt"; }
expect_eq "XINFO GROUPS calls for 40 streams" "$(calls 'xinfo\|groups')" 40
expect_eq "XPENDING calls (one per group with pending entries)" "$(calls xpending)" 40
expect_eq "XRANGE calls (one per group with undelivered entries)" "$(calls xrange)" 40
used=$(sed -nE 's/^cmdstat_([^:]+):.*/\1/p' "$T/stats.txt" | grep -vE '^(config\|resetstat|info)$' | sort | tr '\n' ' ')
expect_eq "commands used (read-only)" "$used" "scan time xinfo|consumers xinfo|groups xpending xrange "

# Dead-letter streams (missing here: XLEN 0, XRANGE and XREVRANGE empty) ride the same pipeline.
R CONFIG RESETSTAT >/dev/null
rtdlq=$(round_trips 40 '{stream}.dlq')
R INFO commandstats | tr -d '\r' > "$T/stats.txt"
expect_eq "round trips with dead-letter streams" "$rtdlq" "$rt40"
expect_eq "XREVRANGE calls (one per dead-letter stream)" "$(calls xrevrange)" 40
expect_eq "XLEN calls (one per dead-letter stream)" "$(calls xlen)" 40
expect_eq "no newest age for missing dead-letter streams" \
  "$(grep -c '^qrel_dead_letter_newest_age_seconds' "$T/rt.txt" || true)" 0

finish
