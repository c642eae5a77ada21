#!/usr/bin/env bash
# The activemq collector against a real ActiveMQ 5.17.2 broker (Debian's jars) with Jolokia at
# /api/jolokia behind basic auth (tests/peers/activemq): a JMS client sends 5 orders and 4
# emails, dead-letters 2 orders and 1 email by the broker's own mechanism (its RedeliveryPolicy,
# maximumRedeliveries 2, gives up and the broker moves them to ActiveMQ.DLQ), puts one message
# straight into ActiveMQ.DLQ (it names no queue: skipped and counted) and holds the 3
# orders left unacknowledged. qrel's figures equal the broker's own Jolokia reads; orders has the
# broker-side ack lease (abortSlowAckConsumerStrategy, 120 s), emails none (a qrel check warning,
# no_broker_lease). The same endpoint read
# through the fault proxy gives the same series; a broker that is down, a wrong password and a
# reply that is no JSON give up 0 with their reason; --config.check reads the broker live.
# qrel dlq against a PostgreSQL work table: inspect's counts equal SQL's, inspect, a dry run and
# the exporter's join leave the DLQ as it was, replay (retryMessage) moves exactly the not-done
# ones, a JMS consumer receives one with body and property intact, a second replay moves nothing;
# a paced replay SIGKILLed after 2 moves leaves each message on its queue or dead, once, and its
# rerun moves the rest (a JMS consumer then receives all 6). qrel_queue_consumers equals the
# broker's ConsumerCount (the workload's consumer on orders, none on emails: backlog_without_consumer).
# shellcheck source=../lib/common.sh
. "$(dirname "$0")/../lib/common.sh"

secret='amq-s3cr3t-7731'
printf '%s\n' "$secret" > "$T/amq.pass"
printf 'wrong-password\n' > "$T/wrong.pass"
chmod 600 "$T/amq.pass" "$T/wrong.pass"
start_activemq OPENWIRE JP admin "$secret"
activemq_workload "$OPENWIRE"
URL="http://127.0.0.1:$JP/api/jolokia"

# The broker's own figures, read through Jolokia as an operator would (curl, not qrel).
jolokia() { # jolokia QUEUE ATTRIBUTE
  curl -fsS -u "admin:$secret" \
    "$URL/read/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=$1/$2" \
    | "$QREL_PYTHON" -c 'import json,sys; print(json.load(sys.stdin)["value"])'
}
expect_eq "the broker: orders QueueSize / InFlightCount" "$(jolokia orders QueueSize) $(jolokia orders InFlightCount)" "3 3"
expect_eq "the broker: emails QueueSize / InFlightCount" "$(jolokia emails QueueSize) $(jolokia emails InFlightCount)" "3 0"
expect_eq "the broker: ActiveMQ.DLQ QueueSize" "$(jolokia ActiveMQ.DLQ QueueSize)" 4
# ConsumerCount: the workload's JMS consumer holding orders, none on emails. Read before the 120 s
# of orders' abortSlowAckConsumerStrategy end, as InFlightCount is (it then aborts that consumer).
expect_eq "the broker: orders / emails ConsumerCount" "$(jolokia orders ConsumerCount) $(jolokia emails ConsumerCount)" "1 0"

amq_source() { # amq_source NAME PASSWORD_FILE [URL]
  printf '  - name: %s\n    kind: activemq\n    jolokia_url: %s\n    username: admin\n    password_file: %s\n' \
    "$1" "${3:-$URL}" "$2"
}
cat > "$T/qrel.yml" <<YML
sources:
$(amq_source amq "$T/amq.pass")
YML
"$QREL" scrape --config.file="$T/qrel.yml" > "$T/m.txt" 2> "$T/scrape.log"
expect_metric "$T/m.txt" 1 qrel_collector_up 'source="amq"' 'kind="activemq"'
expect_metric "$T/m.txt" 0 qrel_queue_messages 'queue="orders"' 'state="ready"'
expect_metric "$T/m.txt" 3 qrel_queue_messages 'queue="orders"' 'state="in_flight"'
expect_metric "$T/m.txt" 3 qrel_queue_messages 'queue="emails"' 'state="ready"'
expect_metric "$T/m.txt" 0 qrel_queue_messages 'queue="emails"' 'state="in_flight"'
expect_absent "$T/m.txt" qrel_queue_messages 'queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 1 qrel_queue_consumers 'queue="orders"'
expect_metric "$T/m.txt" 0 qrel_queue_consumers 'queue="emails"'
expect_absent "$T/m.txt" qrel_queue_consumers 'queue="ActiveMQ.DLQ"'
# No flow counters: DequeueCount counts expired and dead-lettered messages with the consumed
# (orders: 2 dequeued, both dead-lettered, none consumed), so it is no consumed count.
expect_eq "the broker: orders DequeueCount counts its 2 dead letters" "$(jolokia orders DequeueCount)" 2
expect_absent "$T/m.txt" qrel_messages_consumed_total
expect_absent "$T/m.txt" qrel_messages_dead_lettered_total
expect_metric "$T/m.txt" 2 qrel_dead_letter_messages 'queue="orders",dead_letter_queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 1 qrel_dead_letter_messages 'queue="emails",dead_letter_queue="ActiveMQ.DLQ"'
expect_metric "$T/m.txt" 3 qrel_max_deliveries 'queue="orders"' # maximumRedeliveries 2, plus the first
expect_metric "$T/m.txt" 3 qrel_max_deliveries 'queue="emails"'
expect_metric "$T/m.txt" 120 qrel_lease_timeout_seconds 'queue="orders"'
expect_absent "$T/m.txt" qrel_lease_timeout_seconds 'queue="emails"'
expect_between "dead-letter oldest age of orders, s" \
  "$(mval "$T/m.txt" qrel_dead_letter_oldest_age_seconds 'queue="orders"')" 0 120
expect_metric "$T/m.txt" 2 qrel_source_queues 'source="amq"'
# The message sent straight to ActiveMQ.DLQ names no queue: skipped and counted, the source up.
expect_metric "$T/m.txt" 1 qrel_skipped_entries 'queue=""' 'reason="missing_field"'
expect_cmd "promtool check metrics" bash -c "promtool check metrics < '$T/m.txt'"
# qrel check: emails has no broker-side lease (a warning), orders has one; both hold dead letters.
rc=0
"$QREL" check --config.file="$T/qrel.yml" > "$T/check.txt" 2>&1 || rc=$?
expect_eq "qrel check: dead letters are critical (exit 2)" "$rc" 2
expect_eq "no_broker_lease: emails only" "$(grep '\[no_broker_lease\]$' "$T/check.txt" | cut -d: -f1)" \
  "WARNING amq emails"
expect_eq "backlog_without_consumer: emails only (3 ready, ConsumerCount 0)" \
  "$(grep '\[backlog_without_consumer\]$' "$T/check.txt" | cut -d: -f1)" "WARNING amq emails"
expect_cmd "it names the strategy to set" grep -qF 'give the queue'"'"'s destination policy an abortSlowAckConsumerStrategy' "$T/check.txt"
# The bulk reply cut into 1- and 7-byte pieces by the fault proxy gives the same series.
expect_same_via_proxy "$T/qrel.yml" amq "127.0.0.1:$JP"

# A browse limit of 2: the other two dead letters are counted under queue "" and the log says so.
cat > "$T/limit.yml" <<YML
sources:
$(amq_source lim "$T/amq.pass")
    dead_letter_browse_limit: 2
    queues: ["ord*"]
YML
"$QREL" scrape --config.file="$T/limit.yml" > "$T/lim.txt" 2> "$T/lim.log"
expect_metric "$T/lim.txt" 2 qrel_dead_letter_messages 'queue="orders"'
expect_metric "$T/lim.txt" 2 qrel_dead_letter_messages 'queue="",dead_letter_queue="ActiveMQ.DLQ"'
expect_absent "$T/lim.txt" qrel_queue_messages 'queue="emails"'
expect_cmd "the log counts the unread dead letters" grep -q 'unread=2 messages=4' "$T/lim.log"

# Faults: a broker that is down, a wrong password (Jolokia's 401), a reply that is no JSON.
start_http_stub GARBAGE ok --body-text '[{"status":200,"value":'
DOWN=$(free_port)
cat > "$T/faults.yml" <<YML
sources:
$(amq_source down "$T/amq.pass" "http://127.0.0.1:$DOWN/api/jolokia")
$(amq_source h401 "$T/wrong.pass")
$(amq_source malformed "$T/amq.pass" "http://127.0.0.1:$GARBAGE/api/jolokia")
    timeout: 5s
YML
"$QREL" scrape --config.file="$T/faults.yml" > "$T/f.txt" 2> "$T/f.log" || true
for want in down:connect h401:auth malformed:protocol; do
  s=${want%%:*} r=${want#*:}
  expect_metric "$T/f.txt" 0 qrel_collector_up "source=\"$s\""
  expect_metric "$T/f.txt" 1 qrel_collector_errors_total "source=\"$s\"" "reason=\"$r\""
done
if grep -rqF "$secret" "$T"/*.log "$T"/*.txt "$T"/*.out; then not_ok "the password appears in a log or the metrics"; else ok "the password appears nowhere"; fi

# --config.check collects once from the live broker: the real one passes, a wrong password fails.
expect_exit "--config.check against the live broker" 0 "$T/check.out" "$EXPORTER" --config.file="$T/qrel.yml" --config.check
cat > "$T/bad.yml" <<YML
sources:
$(amq_source bad "$T/wrong.pass")
YML
expect_exit "--config.check with a wrong password" 1 "$T/badcheck.out" "$EXPORTER" --config.file="$T/bad.yml" --config.check

# ---- qrel dlq: inspect, a dry run and replays on the same broker, a work table in PostgreSQL ----
# The dead letters carry their work id in the JMS property order_id: orders-0 and orders-1
# (queue orders), emails-0 (emails). orders-0's work was done, orders-1's and emails-0's not.
start_postgres PGP
psql_do "CREATE TABLE work (order_id text PRIMARY KEY, done_at timestamptz);
  INSERT INTO work VALUES ('orders-0', now()), ('orders-1', NULL), ('orders-2', now());"
cat > "$T/dlq.yml" <<YML
sources:
$(amq_source amq "$T/amq.pass")
$(pg_source shop "$PGP")
    dedup_tables: [{table: work, id_column: order_id, handled_at_column: done_at}]
dead_letters:
  - source: amq
    queue: orders
    id_field: property:order_id
    work_table: {source: shop, table: work, id_column: order_id, done_column: done_at}
  - source: amq
    queue: emails
    id_field: property:order_id
    work_table: {source: shop, table: work, id_column: order_id, done_column: done_at}
YML
DLQ() { "$QREL" dlq "$@" --config.file="$T/dlq.yml" --source=amq --format=json 2>>"$T/dlq.err"; }
dlq_state() { # the DLQ's QueueSize and its message ids, sorted, as Jolokia's browse() gives them
  echo "$(jolokia ActiveMQ.DLQ QueueSize) $(jolokia orders QueueSize) $(jolokia emails QueueSize)"
  curl -fsS -u "admin:$secret" "$URL/exec/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=ActiveMQ.DLQ/browse()" \
    | "$QREL_PYTHON" -c 'import json,sys; print(sorted(m["JMSMessageID"] for m in json.load(sys.stdin)["value"]))'
}
dlq_state > "$T/dlq.before"
DLQ inspect --queue=orders > "$T/inspect.json"
expect_eq "inspect orders: done not_done unknown read total = SQL's split over the work table" \
  "$(jq -r '"\(.classes.done) \(.classes.not_done) \(.classes.unknown) \(.read) \(.total)"' "$T/inspect.json")" \
  "$(psql_val "SELECT count(done_at), count(*) - count(done_at) FROM work WHERE order_id IN ('orders-0', 'orders-1')" | tr '|' ' ') 0 2 2"
expect_eq "... the dead-letter queue, the origin, no read effect" \
  "$(jq -r '"\(.dead_letter_queue) \(.origin) \(.read_effect)"' "$T/inspect.json")" "ActiveMQ.DLQ orders null"
expect_eq "... deliveries from dlqDeliveryFailureCause's Delivery[3]" \
  "$(jq -r '"\(.deliveries.min) \(.deliveries.max) \(.deliveries.unknown)"' "$T/inspect.json")" "3 3 0"
DLQ replay --queue=orders > "$T/dry.json"
expect_eq "a dry run of orders would move orders-1 alone" \
  "$(jq -r '[.replay.would_move[].work_id] | join(",")' "$T/dry.json")" orders-1
# The exporter's join reads the same way (a browse changes nothing) and classifies alike.
"$QREL" scrape --config.file="$T/dlq.yml" > "$T/join.txt" 2> "$T/join.log"
for w in done:1 not_done:1 unknown:0; do
  expect_metric "$T/join.txt" "${w#*:}" qrel_dead_letter_classified_messages 'queue="orders",dead_letter_queue="ActiveMQ.DLQ"' "work=\"${w%%:*}\""
done
dlq_state > "$T/dlq.after"
expect_cmd "inspect, a dry run and a scrape's join change nothing (QueueSizes, dead letters' ids)" cmp -s "$T/dlq.before" "$T/dlq.after"
DLQ replay --queue=orders --yes > "$T/replay1.json"
DLQ replay --queue=emails --yes > "$T/replay2.json"
expect_eq "replay orders, then emails: each moves its one not_done dead letter" \
  "$(jq -r '[.replay.moved[].work_id] | join(",")' "$T/replay1.json" "$T/replay2.json" | paste -sd' ')" "orders-1 emails-0"
dlq_state > "$T/dlq.replayed"
expect_eq "the broker: ActiveMQ.DLQ, orders, emails QueueSize after (4 3 3 before)" \
  "$(head -1 "$T/dlq.replayed")" "2 4 4"
DLQ replay --queue=orders --yes > "$T/replay3.json"
expect_eq "a second replay of orders moves nothing, skips the done one" \
  "$(jq -r '"\(.replay.moved | length) \(.replay.chosen) \(.classes.done)"' "$T/replay3.json")" "0 0 1"
java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer receive "$OPENWIRE" emails 4 > "$T/emails.got" 2> "$T/emails.err"
expect_eq "a JMS consumer of emails receives the replayed email with its body and order_id" \
  "$(grep -c '^emails 0|emails-0$' "$T/emails.got")" 1

# ---- a replay SIGKILLed part way, then run again: nothing lost, nothing twice ------------------
# refunds-0 … refunds-4 dead-lettered by the broker, refunds-5 left ready on refunds; none done.
java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer deadletter "$OPENWIRE" refunds 5 2> "$T/refunds.err"
psql_do "INSERT INTO work SELECT 'refunds-' || i, NULL FROM generate_series(0, 5) i;"
cat > "$T/refunds.yml" <<YML
sources:
$(amq_source amq "$T/amq.pass")
$(pg_source shop "$PGP")
    dedup_tables: [{table: work, id_column: order_id, handled_at_column: done_at}]
dead_letters:
  - source: amq
    queue: refunds
    id_field: property:order_id
    work_table: {source: shop, table: work, id_column: order_id, done_column: done_at}
YML
refund_ids() { # the order_ids of QUEUE's messages (a browse, changing nothing); with a 2nd
  # argument only those dead-lettered from it
  curl -fsS -u "admin:$secret" "$URL/exec/org.apache.activemq:type=Broker,brokerName=localhost,destinationType=Queue,destinationName=$1/browse()" \
    | "$QREL_PYTHON" -c 'import json,sys
for m in json.load(sys.stdin)["value"]:
    if len(sys.argv) < 2 or m.get("OriginalDestination") == "queue://" + sys.argv[1]:
        print(m["StringProperties"]["order_id"])' ${2:+"$2"}
}
all_refunds() { (refund_ids refunds; refund_ids ActiveMQ.DLQ refunds) | sort | paste -sd' '; }
expect_eq "refunds: 1 ready, 5 dead, each once" "$(jolokia refunds QueueSize) $(all_refunds)" \
  "1 refunds-0 refunds-1 refunds-2 refunds-3 refunds-4 refunds-5"
"$QREL" dlq replay --config.file="$T/refunds.yml" --source=amq --queue=refunds --yes --rate=1/s \
  > "$T/rkilled.json" 2>> "$T/dlq.err" &
kpid=$!
PIDS+=("$kpid")
two_moved() { [ "$(jolokia refunds QueueSize)" -ge 3 ]; }
expect_cmd "the paced replay moves 2 dead letters" wait_for -i 0.05 30 "refunds QueueSize 3" two_moved
kill -KILL "$kpid"; wait "$kpid" 2>/dev/null || true
moved=$(($(jolokia refunds QueueSize) - 1))
expect_between "dead letters moved when SIGKILL came" "$moved" 2 4
expect_eq "killed: every refund on refunds or dead, exactly once" "$(all_refunds)" \
  "refunds-0 refunds-1 refunds-2 refunds-3 refunds-4 refunds-5"
expect_eq "... the broker's QueueSizes agree (refunds + its dead letters = 6)" \
  "$(($(jolokia refunds QueueSize) + $(refund_ids ActiveMQ.DLQ refunds | wc -l)))" 6
rc=0
"$QREL" dlq replay --config.file="$T/refunds.yml" --source=amq --queue=refunds --yes --format=json \
  > "$T/rrerun.json" 2>> "$T/dlq.err" || rc=$?
expect_eq "the rerun: exit 0, moved the other $((5 - moved))" "$rc $(jq '.replay.moved | length' "$T/rrerun.json")" "0 $((5 - moved))"
expect_eq "every refund on refunds exactly once, none dead" \
  "$(jolokia refunds QueueSize) $(refund_ids refunds | sort | paste -sd' ') $(refund_ids ActiveMQ.DLQ refunds | wc -l)" \
  "6 refunds-0 refunds-1 refunds-2 refunds-3 refunds-4 refunds-5 0"
java -Xshare:auto -XX:TieredStopAtLevel=1 -cp "$AMQ_CP" AmqPeer receive "$OPENWIRE" refunds 6 > "$T/refunds.got" 2>> "$T/refunds.err"
expect_eq "a JMS consumer of refunds receives all 6, each once" \
  "$(cut -d'|' -f2 "$T/refunds.got" | sort | paste -sd' ')" "refunds-0 refunds-1 refunds-2 refunds-3 refunds-4 refunds-5"

finish
